"""Which model for my languages?  One model-selection report: :func:`model_report` -> :class:`ModelReport`.

Every measurement the toolkit has, side by side, for each language set the user
asks about, each through :func:`~semanscope_nb.runs.tasks.run_task` (so every
number is the one the task computes, with its provenance):

* **verdict** -- ``sa`` on each word dataset: SA, its chance level and gap with
  intervals, the null-aware tier, the artefact notes (read from the public
  :class:`~semanscope_nb.metrics.affinity.SAResult` accessors).
* **pair matrix** -- ``pair-sa``: which language pairs fail.
* **retrieval** -- ``retrieval`` on Tatoeba (``xxx-eng`` files) and on SIB-200
  sentences aligned by id, both directions: accuracy@k, F1@k, MRR, intervals.
* **signal vs noise** -- cosines of true translation pairs against random
  pairs (a seeded derangement): the KS test (``scipy.stats.ks_2samp``), Cohen's
  d and the AUC (``P(true > random)``, Mann-Whitney U / n^2), with bootstrap
  intervals, as an Altair chart.
* **miss taxonomy** -- every forward retrieval miss is classified, in this
  order (the first rule that holds wins):

  - ``surface``: the predicted target shares a word with the query (a ``\\w+``
    token of two or more characters, case-folded) or, for CJK text, a character
    bigram; an identical string is the plainest case;
  - ``near semantic``: cosine(predicted target, gold target) is at or above
    ``near_threshold``: the 95th percentile of the cosines of random target pairs
    under the same model on the same corpus (a cosine threshold calibrated to
    the model, since raw cosines are not comparable across models: mE5 puts
    unrelated sentences at 0.8);
  - ``topic``: the predicted and the gold sentence have the same SIB-200 topic
    label (only on SIB-200 sentences; Tatoeba has no labels, so there a miss that
    is neither surface nor near is ``far``, and the report says so);
  - ``far``: anything else.

  Five examples per class are kept.
* **kNN classification** -- ``knn`` on SIB-200 (train memory, test split):
  macro F1 against the majority and the seeded random baselines.
* **CSC overlap** -- ``csc`` on the bundled sentences of each language CSC supports.
* **contextual similarity (BCWS)** -- for a set holding en and zh, each model with
  contextual token states (:func:`token_state_models`: the NumPy port of
  multilingual-e5-small, all-minilm-l6-v2, ``st:`` folders) is scored on a seeded
  sample of ``bcws_pairs`` BCWS pairs (:func:`bcws_sample`, Chinese in Simplified
  script as the sweep of notebook 07 uses it): Spearman's rho of the target words'
  contextual cosines against the human scores, with its bootstrap interval
  (:func:`~semanscope_nb.metrics.word_similarity.contextual_word_similarity`), beside
  the annotators' leave-one-out agreement on the same pairs (the human upper bound).
  A model without token states gets a ``missing`` row naming what would fill it.
* **comparison across models** -- ``comparison`` for SA (paired bootstrap,
  sign-flip test on jackknife pseudo-values, Holm, rank bands); for retrieval
  (per-query reciprocal rank) and kNN (per-item correctness) the same paired
  sign-flip test with Holm and the same greedy rank bands
  (:func:`~semanscope_nb.metrics.compare.rank_bands`).  A band row's ``score`` is
  the quantity its bands rank, with that quantity's interval: for SA the
  verdict's gap (SA − chance on the artefact-free concepts, the comparison's
  score), never the raw SA beside another number's interval.
* **recommendation** -- one sentence per language set, by this rule
  (:data:`RECOMMENDATION_RULE`): candidates are the models other than
  ``random-null`` whose null-aware tier on the first dataset is above chance;
  take the best SA rank band on the first dataset that holds a candidate; if it
  holds one candidate, recommend it; otherwise prefer fewer dimensions, then
  the faster encoder (encode time measured on this machine by the run that first needed it, kept in
  ``<work_dir>/costs``; times within a factor
  :data:`TIME_TIE_FACTOR` tie), then the smaller package on disk (within
  :data:`SIZE_TIE_SHARE` tie).  Candidates still level after that are a tie,
  and the sentence says tie.  No candidate: no recommendation.

A section whose data is missing says so and names what would fill it
(``missing``); models or languages left out are in ``skipped`` with the reason.
Every number sits in :meth:`ModelReport.numbers` with its interval and
provenance (model id and version, dataset and its SHA-256, parameters, package
version); the HTML (:meth:`ModelReport.to_html`) and the CSV / JSON beside it
are rendered from that one table.

Resuming: vectors come through the embedding cache, and each finished step is
written at once, atomically, as a job file ``<work_dir>/jobs/<step>__<key>.json``
(key: hash of the step, the model's cache key, the dataset's SHA-256 and the
parameters); a rerun reads them back instead of recomputing.

Example
-------
>>> import tempfile, semanscope_nb as snb
>>> r = snb.model_report(["random-null", "tfidf-char"], languages=["en", "zh"], datasets=["edge-cases"], n_boot=200,
...                      tatoeba=False, sib200=False, csc=False, work_dir=tempfile.mkdtemp(), progress=False)
>>> r.recommendation(("en", "zh"))["recommended"] != "random-null", r.verdicts.set_index("model").loc["random-null", "tier"]
(True, 'chance')
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from semanscope_nb.data.concept_key import item_key, key_order
from semanscope_nb.data.datasets import fit_corpus
from semanscope_nb.metrics.affinity import TIER_LABELS
from semanscope_nb.metrics.classification import test_row_keys
from semanscope_nb.errors import ArgumentError, DatasetError, JobFileWarning, SemanscopeError
from semanscope_nb.provenance import (
    atomic_write_json,
    json_ready,
    package_info,
    path_inside,
    regular_file,
    safe_name,
    utc_now,
)
from semanscope_nb.results import Result
from semanscope_nb.runs.report_html import number_id, report_numbers, save_report  # noqa: F401  (re-exported)
from semanscope_nb.settings import settings

NULL_MODEL = "random-null"
#: encode times within this factor of the fastest count as equal
TIME_TIE_FACTOR = 1.25
#: package sizes within this share of the smallest count as equal
SIZE_TIE_SHARE = 0.10
#: quantile of random target-target cosines above which a wrong prediction is "near" the gold
NEAR_QUANTILE = 0.95
MISS_CLASSES = ("surface", "near semantic", "topic", "far")
RECOMMENDATION_RULE = (
    "Candidates: every model except random-null whose null-aware tier on the first dataset is above chance "
    "(a paper tier: great, good or non-aligned). "
    "Take the best SA rank band (paired test, Holm) on the first dataset holding a candidate. One candidate: "
    "recommended. Several: fewer dimensions first, then the faster encoder (encode time measured on this machine, kept for resumed runs; "
    f"times within a factor {TIME_TIE_FACTOR} tie), then the smaller package on disk (within {SIZE_TIE_SHARE:.0%} tie); "
    "candidates still level are a tie. No candidate: no recommendation."
)
REPORT_VERSION = "2"  # 2: the report's own draws follow the items' canonical order (data.concept_key)
#: the columns of the contextual-similarity (BCWS) table
CONTEXTUAL_COLUMNS = ["language_set", "dataset", "model", "token_encoder", "rho", "rho_low", "rho_high", "human_rho",
                      "human_rho_low", "human_rho_high", "n_pairs", "layers"]
DEFAULT_DATASETS = ("conceptual-space", "cultural-nuance")


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True)
class ModelReport(Result):
    """The model-selection report: one table per section, the recommendation, what was skipped and why.

    ``main_score``: the SA (first dataset) of the model recommended for the first
    language set; NaN when that set ends in a tie or has no recommendation.
    """

    kind = "model-report"
    main_score_name = "recommended_sa"

    models: tuple[str, ...]
    language_sets: tuple[tuple[str, ...], ...]
    datasets: tuple[str, ...]
    verdicts: pd.DataFrame
    pairs: pd.DataFrame
    retrieval: pd.DataFrame
    signal: pd.DataFrame
    cosines: pd.DataFrame
    misses: pd.DataFrame
    miss_counts: pd.DataFrame
    knn: pd.DataFrame
    csc: pd.DataFrame
    comparisons: pd.DataFrame
    bands: pd.DataFrame
    costs: pd.DataFrame
    recommendations: pd.DataFrame
    missing: pd.DataFrame
    skipped: pd.DataFrame
    dataset_info: pd.DataFrame
    contextual: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CONTEXTUAL_COLUMNS))
    parameters: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def recommended_sa(self) -> float:
        if not len(self.recommendations):
            return math.nan
        first = self.recommendations.iloc[0]
        if first["tie"] or not first["recommended"]:
            return math.nan
        v = self.verdicts[(self.verdicts.language_set == first["language_set"]) & (self.verdicts.dataset == self.datasets[0])
                          & (self.verdicts.model == first["recommended"])]
        return float(v["sa"].iloc[0]) if len(v) else math.nan

    def recommendation(self, languages: Sequence[str]) -> dict[str, Any]:
        """The recommendation row of a language set (``recommended``, ``tie``, ``tied``, ``sentence``)."""
        key = _set_label(languages)
        rows = self.recommendations[self.recommendations.language_set == key]
        if rows.empty:
            raise ArgumentError(f"no language set {key!r} in this report; it has {', '.join(map(_set_label, self.language_sets))}")
        return rows.iloc[0].to_dict()

    def summary(self) -> dict[str, Any]:
        return {"main_score": self.main_score, "models": ", ".join(self.models),
                "recommendations": " | ".join(self.recommendations["sentence"].tolist())}

    def numbers(self) -> pd.DataFrame:
        """Every number of the report, one row each: id, section, value, interval and provenance."""
        return report_numbers(self)

    def to_html(self, path: str | os.PathLike, *, title: str | None = None) -> dict[str, str]:
        """Write the self-contained HTML and, beside it, ``<stem>-numbers.csv`` / ``.json``; returns the paths."""
        return save_report(self, path, title=title)


def _set_label(languages: Sequence[str]) -> str:
    return "-".join(languages)


# --------------------------------------------------------------------------- small pure pieces


_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def surface_overlap(query: str, predicted: str) -> bool:
    """Whether ``predicted`` shares a word (``\\w+``, 2+ characters, case-folded) or a CJK character bigram with ``query``.

    >>> surface_overlap("Tokyo is big.", "東京 Tokyo"), surface_overlap("I eat rice.", "我吃米饭。"), surface_overlap("东京很大", "东京塔")
    (True, False, True)
    """
    def words(s: str) -> set[str]:
        return {w for w in _WORD.findall(s.casefold()) if len(w) >= 2 and not _CJK.search(w)}

    def bigrams(s: str) -> set[str]:
        return {s[i:i + 2] for i in range(len(s) - 1) if _CJK.match(s[i]) and _CJK.match(s[i + 1])}

    if query.strip() and query.strip() == predicted.strip():
        return True
    return bool(words(query) & words(predicted)) or bool(bigrams(query) & bigrams(predicted))


def derangement(n: int, *, seed: int) -> np.ndarray:
    """A seeded permutation of ``range(n)`` with no fixed point (n >= 2): the random pairing of the noise panel.

    >>> p = derangement(10, seed=0); bool((p != np.arange(10)).all()), sorted(p.tolist()) == list(range(10))
    (True, True)
    """
    if n < 2:
        raise ArgumentError(f"a random pairing needs at least 2 rows, got {n}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    fixed = np.flatnonzero(perm == np.arange(n))
    for i in fixed:  # swap each fixed point with its neighbour (the swap cannot create a new fixed point)
        j = (i + 1) % n
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of row i of ``a`` with row i of ``b`` (zero vectors give 0)."""
    return np.einsum("ij,ij->i", _unit(a), _unit(b))


def signal_vs_noise(source: np.ndarray, target: np.ndarray, *, n_boot: int, seed: int, confidence: float = 0.95,
                    order: np.ndarray | None = None) -> dict[str, Any]:
    """True-pair vs random-pair cosines: KS test, Cohen's d and AUC with paired bootstrap percentile intervals.

    Row i of ``source`` translates row i of ``target``; the random pairs are
    (i, derangement(i)).  AUC = P(true > random) + P(tie) / 2 (Mann-Whitney U / n^2).
    ``order``: the pairs' canonical order (:func:`~semanscope_nb.data.concept_key.key_order`); the rows are taken
    in it, so the random pairing and the resamples are the same whatever the corpus order ("true" and "random"
    come back in it).  None: as given.

    >>> rng = np.random.default_rng(0); x = rng.normal(size=(200, 16))
    >>> s = signal_vs_noise(x, x + 0.1 * rng.normal(size=x.shape), n_boot=50, seed=0)
    >>> s["auc"] > 0.99, s["ks_p"] < 1e-6
    (True, True)
    """
    import scipy.stats

    if order is not None:
        source, target = np.asarray(source)[order], np.asarray(target)[order]
    true = row_cosines(source, target)
    perm = derangement(len(true), seed=seed)
    rand = row_cosines(source, target[perm])
    ks = scipy.stats.ks_2samp(true, rand)

    def d_of(t: np.ndarray, r: np.ndarray, axis: int = -1) -> np.ndarray:
        pooled = np.sqrt((np.var(t, axis=axis, ddof=1) + np.var(r, axis=axis, ddof=1)) / 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.mean(t, axis=axis) - np.mean(r, axis=axis)) / pooled

    def auc_of(t: np.ndarray, r: np.ndarray, axis: int = -1) -> np.ndarray:
        u = scipy.stats.mannwhitneyu(t, r, axis=axis, alternative="two-sided").statistic
        return u / (t.shape[axis] * r.shape[axis])

    out: dict[str, Any] = {"n": len(true), "true_mean": float(true.mean()), "random_mean": float(rand.mean()),
                           "ks_stat": float(ks.statistic), "ks_p": float(ks.pvalue), "cohen_d": float(d_of(true, rand)),
                           "auc": float(auc_of(true, rand)), "true": true, "random": rand}
    for name, fn in (("cohen_d", d_of), ("auc", auc_of), ("true_mean", lambda t, r, axis=-1: np.mean(t, axis=axis)),
                     ("random_mean", lambda t, r, axis=-1: np.mean(r, axis=axis))):
        if n_boot and len(true) > 2:
            res = scipy.stats.bootstrap((true, rand), fn, paired=True, vectorized=True, n_resamples=int(n_boot),
                                        confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
            out[f"{name}_low"], out[f"{name}_high"] = float(res.confidence_interval.low), float(res.confidence_interval.high)
        else:
            out[f"{name}_low"] = out[f"{name}_high"] = math.nan
    return out


def classify_misses(
    queries: Sequence[str],
    targets: Sequence[str],
    predictions: np.ndarray,
    target_vectors: np.ndarray,
    *,
    near_threshold: float,
    labels: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per miss (query i whose top-1 target is not target i), classified surface / near semantic / topic / far.

    ``targets[i]`` is query i's gold; ``predictions[i]`` its top-1 target index;
    ``labels``: topic labels of the targets (None: no topic class, as on Tatoeba).

    >>> v = np.eye(3)
    >>> classify_misses(["Tokyo", "dog", "cat"], ["东京", "狗", "猫"], np.array([0, 2, 2]), v, near_threshold=0.9)[["query", "predicted", "class"]].values.tolist()
    [['dog', '猫', 'far']]
    """
    predictions = np.asarray(predictions, dtype=np.int64)
    unit = _unit(target_vectors)
    rows = []
    for i, p in enumerate(predictions):
        if p == i:
            continue
        cos = float(unit[p] @ unit[i])
        if surface_overlap(queries[i], targets[p]):
            cls = "surface"
        elif cos >= near_threshold:
            cls = "near semantic"
        elif labels is not None and labels[p] == labels[i]:
            cls = "topic"
        else:
            cls = "far"
        rows.append({"index": i, "query": queries[i], "predicted": targets[p], "gold": targets[i], "cos_predicted_gold": cos,
                     "class": cls})
    return pd.DataFrame(rows, columns=["index", "query", "predicted", "gold", "cos_predicted_gold", "class"])


def near_threshold_of(target_vectors: np.ndarray, *, seed: int, quantile: float = NEAR_QUANTILE,
                      order: np.ndarray | None = None) -> float:
    """The ``quantile`` of cosines between random (deranged) pairs of target sentences: the "near semantic" threshold
    (the rows taken in ``order``, their canonical order, when given)."""
    if order is not None:
        target_vectors = np.asarray(target_vectors)[order]
    perm = derangement(len(target_vectors), seed=seed + 1)
    return float(np.quantile(row_cosines(target_vectors, target_vectors[perm]), quantile))


def paired_model_test(
    per_item: Mapping[str, np.ndarray], *, n_boot: int, n_perm: int, seed: int, confidence: float = 0.95, alpha: float = 0.05,
    order: np.ndarray | None = None,
) -> tuple[pd.DataFrame, list[list[str]]]:
    """Paired comparison of models scored item by item (higher = better): mean difference, interval, sign-flip p, Holm, bands.

    ``order``: the items' canonical order; the resamples and sign flips are drawn over it (None: as given).

    >>> pairs, bands = paired_model_test({"a": np.ones(30), "b": np.zeros(30)}, n_boot=100, n_perm=200, seed=0)
    >>> bool(pairs.significant.iloc[0]), bands
    (True, [['a'], ['b']])
    """
    from statsmodels.stats.multitest import multipletests  # Holm, as the SA comparison uses

    from semanscope_nb.metrics.compare import rank_bands, sign_flip_test

    if order is not None:
        per_item = {m: np.asarray(v)[order] for m, v in per_item.items()}
    names = list(per_item)
    point = {m: float(np.mean(v)) for m, v in per_item.items()}
    order = sorted(names, key=lambda m: -point[m])
    n = len(next(iter(per_item.values())))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(int(n_boot), n)) if n_boot else None
    rows = []
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            diff = np.asarray(per_item[a], dtype=np.float64) - np.asarray(per_item[b], dtype=np.float64)
            if idx is not None:
                boot = diff[idx].mean(axis=1)
                lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
            else:
                lo = hi = math.nan
            rows.append({"model_a": a, "model_b": b, "score_a": point[a], "score_b": point[b], "diff": float(diff.mean()),
                         "ci_low": float(lo), "ci_high": float(hi), "p_value": sign_flip_test(diff, n_perm=n_perm, seed=seed)})
    pairs = pd.DataFrame(rows, columns=["model_a", "model_b", "score_a", "score_b", "diff", "ci_low", "ci_high", "p_value"])
    if len(pairs):
        pairs["p_holm"] = multipletests(pairs["p_value"].to_numpy(), alpha=alpha, method="holm")[1]
        pairs["significant"] = pairs["p_holm"] < alpha
    else:
        pairs["p_holm"], pairs["significant"] = [], []
    return pairs, rank_bands(order, pairs)


def recommend(
    candidates_tier: Mapping[str, str],
    bands: Sequence[Sequence[str]],
    costs: Mapping[str, Mapping[str, float]],
    *,
    languages: Sequence[str],
) -> dict[str, Any]:
    """Apply :data:`RECOMMENDATION_RULE`: ``candidates_tier`` model -> null-aware tier; ``bands`` best first; ``costs``
    model -> {dims, encode_seconds, size_mb}.

    >>> recommend({"a": "great", "b": "good", "random-null": "chance"}, [["a", "b"], ["random-null"]],
    ...           {"a": {"dims": 512, "encode_seconds": 1.0, "size_mb": 30}, "b": {"dims": 384, "encode_seconds": 9.0, "size_mb": 90}},
    ...           languages=["en", "zh"])["recommended"]
    'b'
    """
    label = ", ".join(languages)
    # above chance is a paper tier: a verdict with no tier (insufficient, not above surface form, undetermined) does not
    # show it, so such a model is no candidate -- the recommendation never claims more than the verdict
    ok = [m for m in candidates_tier if m != NULL_MODEL and candidates_tier[m] in TIER_LABELS]
    top: list[str] = []
    for band in bands:
        top = [m for m in band if m in ok]
        if top:
            break
    steps: list[str] = []
    if not top:
        return {"recommended": "", "tie": False, "tied": [], "steps": steps,
                "sentence": f"For {label}: no recommendation: no model's SA is above its chance level (random-null is never recommended)."}
    remaining = list(top)
    if len(remaining) > 1:
        steps.append(f"rank band tie: {', '.join(remaining)}")
        for what, key, tied in (("dimensions", "dims", lambda v, best: v == best),
                                ("encode time", "encode_seconds", lambda v, best: v <= best * TIME_TIE_FACTOR),
                                ("size on disk", "size_mb", lambda v, best: v <= best * (1 + SIZE_TIE_SHARE) + 1e-9)):
            vals = {m: float(costs.get(m, {}).get(key, math.nan)) for m in remaining}
            if any(math.isnan(v) for v in vals.values()):
                steps.append(f"{what}: unknown for {', '.join(m for m, v in vals.items() if math.isnan(v))}, not used")
                continue
            best = min(vals.values())
            keep = [m for m in remaining if tied(vals[m], best)]
            if len(keep) < len(remaining):
                steps.append(f"{what}: {', '.join(f'{m} {vals[m]:.4g}' for m in remaining)} -> {', '.join(keep)}")
            remaining = keep
            if len(remaining) == 1:
                break
    if len(remaining) == 1:
        why = "alone in the best SA rank band" if len(top) == 1 else "in the best SA rank band with " + ", ".join(
            m for m in top if m != remaining[0]) + ", and cheaper (" + "; ".join(steps[1:]) + ")"
        return {"recommended": remaining[0], "tie": False, "tied": [], "steps": steps,
                "sentence": f"For {label}: use {remaining[0]} ({why})."}
    return {"recommended": "", "tie": True, "tied": remaining, "steps": steps,
            "sentence": f"For {label}: tie between {', '.join(remaining)}: same SA rank band and no cost difference by the rule."}


def package_size_mb(model: str) -> float:
    """Megabytes of the installed files of the model's package (``ModelInfo.package``); 0 for a model with no package."""
    from importlib import metadata

    from semanscope_nb.models.registry import get_model_info

    info = get_model_info(model)
    if not info.package:
        return 0.0
    try:
        dist = metadata.distribution(info.package)
    except metadata.PackageNotFoundError:
        return math.nan
    total = 0
    for f in dist.files or ():
        try:
            total += os.path.getsize(dist.locate_file(f))
        except OSError:
            continue
    return total / 1e6


# --------------------------------------------------------------------------- job files


#: what :meth:`_Jobs.read` gives for a job file that holds nothing to reuse
_MISSING = object()


class _Jobs:
    """Finished steps as JSON files under ``<work_dir>/jobs`` (atomic writes; a rerun reads them back)."""

    def __init__(self, work_dir: Path, force: bool) -> None:
        self.folder = work_dir / "jobs"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.force = force
        self.reused = 0
        self.computed = 0

    def path(self, step: str, key_parts: Mapping[str, Any]) -> Path:
        return path_inside(self.folder, f"{safe_name(step)}__{self.stamp(step, key_parts)['key']}.json")

    @staticmethod
    def stamp(step: str, key_parts: Mapping[str, Any]) -> dict[str, str]:
        """What a job file says it holds: its step and the hash of its inputs (checked when read back)."""
        from semanscope_nb.runs.tasks import list_tasks, get_task

        task = get_task(step).version if step in list_tasks() else None  # a task's job: its version too (a new draw rule
        # or formula in the task recomputes the report's stored job, as it does the grid's)
        blob = json.dumps(json_ready({**key_parts, "step": step, "version": REPORT_VERSION, "task_version": task}),
                          sort_keys=True, ensure_ascii=False)
        return {"step": step, "key": hashlib.sha256(blob.encode()).hexdigest()[:16]}

    def read(self, p: Path, stamp: Mapping[str, str], what: str) -> Any:
        """The ``what`` part of job file ``p`` when it holds the job ``stamp``; :data:`_MISSING` when it is missing,
        damaged or another job's (copied over it: recomputed, with a :class:`JobFileWarning`).  An unreadable file
        is an ``OSError`` (a temporary condition), never damage."""
        if self.force or not p.exists():
            return _MISSING
        try:
            rec = json.loads(regular_file(p).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            warnings.warn(f"{p.name}: damaged job file ({type(exc).__name__}); computed again", JobFileWarning, stacklevel=3)
            return _MISSING
        if not isinstance(rec, dict) or "job" not in rec:
            return _MISSING  # written before job files named their job: computed again
        if rec.get("job") != dict(stamp) or what not in rec:
            warnings.warn(f"{p.name}: holds another job ({rec.get('job')!r:.120}); computed again", JobFileWarning, stacklevel=3)
            return _MISSING
        return rec[what]

    def result(self, step: str, key_parts: Mapping[str, Any], compute) -> Result:
        p, stamp = self.path(step, key_parts), self.stamp(step, key_parts)
        body = self.read(p, stamp, "result")
        if body is not _MISSING:
            try:
                r = Result.from_saved(body, source=p.name)
                self.reused += 1
                return r
            except DatasetError as exc:
                warnings.warn(f"{exc}; computed again", JobFileWarning, stacklevel=2)
        r = compute()
        atomic_write_json(p, {"job": stamp, "result": r.saved_dict()})
        self.computed += 1
        return r

    def record(self, step: str, key_parts: Mapping[str, Any], compute) -> dict:
        p, stamp = self.path(step, key_parts), self.stamp(step, key_parts)
        rec = self.read(p, stamp, "record")
        if rec is not _MISSING:  # any JSON value a step records (a dict, a list of rows)
            self.reused += 1
            return rec
        rec = json_ready(compute())
        atomic_write_json(p, {"job": stamp, "record": rec})
        self.computed += 1
        return rec


# --------------------------------------------------------------------------- the report


def _language_sets(languages: Any) -> list[tuple[str, ...]]:
    from semanscope_nb.data.languages import language_code

    if isinstance(languages, str):
        languages = [x for x in languages.split(",") if x.strip()]
    if not languages:
        raise ArgumentError("languages: give at least two language codes, e.g. languages=['en', 'zh', 'ja']")
    sets = [languages] if all(isinstance(x, str) for x in languages) else list(languages)
    out = []
    for s in sets:
        codes = []
        for x in s:
            code = language_code(str(x).strip())
            if code is None:
                raise ArgumentError(f"languages: unknown language {x!r} (use ISO codes such as en, zh, ja)")
            codes.append(code)
        codes = list(dict.fromkeys(codes))
        if len(codes) < 2:
            raise ArgumentError(f"languages: a language set needs two or more languages, got {list(s)}")
        out.append(tuple(codes))
    return out


def _check_models(models: Any) -> tuple[list[str], dict[str, str]]:
    from semanscope_nb.models.registry import get_model_info
    from semanscope_nb.runs.grid import resolve_models

    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    if not models:
        raise ArgumentError("models: give at least one model id (semanscope models lists them)")
    ids, skipped = resolve_models(list(models))
    ok = []
    for m in ids:
        info = get_model_info(m)  # an unknown id fails here with suggestions
        why = info.missing_access()
        if why is not None:
            skipped[m] = why
        else:
            ok.append(m)
    if not ok:
        raise ArgumentError(f"models: none of {list(models)} can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return ok, skipped


def _encode_seconds(model: str, texts: Sequence[str], language: str) -> tuple[float, int]:
    """Seconds per 1000 texts to encode ``texts`` (the model loaded and warmed first; the cache is not used), and the dimensions."""
    from semanscope_nb.models.registry import load_model

    enc = load_model(model).prepare(list(texts))  # a corpus-fitted baseline (TF-IDF) fits on the probe
    enc.encode(list(texts[:2]), language=language)  # load weights outside the timing
    t = time.perf_counter()
    vecs = enc.encode(list(texts), language=language)
    return (time.perf_counter() - t) * 1000.0 / max(1, len(texts)), int(vecs.shape[1])


def _model_key(model: str, ds: Any) -> tuple[str, str]:
    """(cache key, version) of ``model`` prepared for ``ds``'s texts: what a job is keyed by, with no weights loaded."""
    from semanscope_nb.models.registry import load_model

    enc = load_model(model).prepare(fit_corpus(ds))
    return enc.cache_key, enc.version


def _pair_order(corpus: Any) -> np.ndarray:
    """A parallel corpus's sentence pairs in canonical order (keyed by both sentences, as the retrieval bootstrap)."""
    return key_order([item_key(s, t) for s, t in zip(corpus.source_texts, corpus.target_texts)])


def _signal_and_misses(emb: Any, corpus: Any, fwd: Any, labels: Sequence[str] | None, *, n_boot: int, seed: int,
                       confidence: float) -> dict[str, Any]:
    """The signal-vs-noise numbers (and a seeded sample of 300 cosines per kind for the chart) and the miss taxonomy."""
    src = emb.matrix(corpus.source_language, list(corpus.source_texts))
    tgt = emb.matrix(corpus.target_language, list(corpus.target_texts))
    order = _pair_order(corpus)
    sig = signal_vs_noise(src, tgt, n_boot=n_boot, seed=seed, confidence=confidence, order=order)
    pick = np.sort(np.random.default_rng(seed).choice(len(sig["true"]), size=min(300, len(sig["true"])), replace=False))
    cosines = [{"pairs": kind, "cosine": float(c)} for kind in ("true", "random") for c in sig[kind][pick]]
    thr = near_threshold_of(tgt, seed=seed, order=order)
    mis = classify_misses(list(corpus.source_texts), list(corpus.target_texts), fwd.predictions, tgt, near_threshold=thr, labels=labels)
    n_q = len(corpus)
    counts, examples = [], []
    for cls in MISS_CLASSES:
        part = mis[mis["class"] == cls]
        if cls == "topic" and labels is None:
            counts.append({"class": "topic (no labels)", "n": None, "share": None, "share_low": None, "share_high": None,
                           "near_threshold": thr})
            continue
        lo, hi = _wilson(len(part), n_q, confidence)
        counts.append({"class": cls, "n": len(part), "share": len(part) / n_q, "share_low": lo, "share_high": hi, "near_threshold": thr})
        examples.extend(part.head(5).to_dict("records"))
    return {"signal": {k: v for k, v in sig.items() if k not in ("true", "random")}, "cosines": cosines, "counts": counts,
            "examples": examples}


#: the columns of each table of the report, in order (the rows are collected by the steps below)
_COLUMNS: dict[str, list[str]] = {
    "verdicts": ["language_set", "dataset", "model", "sa", "sa_low", "sa_high", "sa_judged", "sa_judged_low", "sa_judged_high",
                 "chance", "chance_low", "chance_high", "gap", "gap_low", "gap_high", "tier", "paper_tier", "verdict", "artefacts",
                 "n_concepts"],
    "pairs": ["language_set", "dataset", "model", "pair", "language_a", "language_b", "sa", "sa_low", "sa_high", "chance", "gap",
              "gap_low", "gap_high", "verdict"],
    "retrieval": ["language_set", "corpus", "model", "direction", "measure", "value", "value_low", "value_high", "n_queries"],
    "signal": ["language_set", "corpus", "model", "n", "true_mean", "true_mean_low", "true_mean_high", "random_mean", "random_mean_low",
               "random_mean_high", "ks_stat", "ks_p", "cohen_d", "cohen_d_low", "cohen_d_high", "auc", "auc_low", "auc_high"],
    "cosines": ["language_set", "corpus", "model", "pairs", "cosine"],
    "misses": ["language_set", "corpus", "model", "direction", "index", "query", "predicted", "gold", "cos_predicted_gold", "class"],
    "miss_counts": ["language_set", "corpus", "model", "direction", "class", "n", "share", "share_low", "share_high", "near_threshold"],
    "knn": ["language_set", "language", "dataset", "model", "k", "macro_f1", "macro_f1_low", "macro_f1_high", "accuracy",
            "accuracy_low", "accuracy_high", "majority_macro_f1", "random_macro_f1", "n_test"],
    "csc": ["language_set", "language", "corpus", "model", "overlap", "overlap_low", "overlap_high", "n_sentences"],
    "contextual": CONTEXTUAL_COLUMNS,
    "comparisons": ["language_set", "measurement", "model_a", "model_b", "diff", "diff_low", "diff_high", "p_value", "p_holm",
                    "significant"],
    "bands": ["language_set", "measurement", "model", "score", "score_low", "score_high", "band"],
    "costs": ["model", "display_name", "dims", "encode_seconds", "size_mb", "measured"],
    "recommendations": ["language_set", "recommended", "tie", "tied", "sentence", "steps", "rule", "dataset"],
    "missing": ["language_set", "section", "what", "would_fill"],
    "skipped": ["what", "language_set", "reason"],
    "dataset_info": ["dataset", "kind", "sha256", "source"],
}


@dataclass
class _Run:
    """What every step of one report shares: the options, the job files, the cache, the progress bar and the rows."""

    model_ids: list[str]
    words: list[Any]
    jobs: _Jobs
    cache_arg: Any
    n_boot: int
    seed: int
    confidence: float
    n_perm: int
    ks: tuple[int, ...]
    csc_sentences: int
    bcws_pairs: int
    bar: Any = None
    rows: dict[str, list[dict]] = field(default_factory=lambda: {name: [] for name in _COLUMNS})
    versions: dict[str, str] = field(default_factory=dict)
    datasets_seen: dict[str, str] = field(default_factory=dict)

    @property
    def boot(self) -> dict[str, Any]:
        """The resampling options every task takes."""
        return {"n_boot": self.n_boot, "seed": self.seed, "confidence": self.confidence}

    def tick(self, what: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(what[:80])
            self.bar.update(1)

    def note_dataset(self, name: str, sha: str, source: str, kind: str) -> None:
        """Record a dataset and its SHA-256 once (provenance of every number read from it)."""
        if name not in self.datasets_seen:
            from semanscope_nb.provenance import shareable_source

            self.datasets_seen[name] = sha
            self.rows["dataset_info"].append({"dataset": name, "kind": kind, "sha256": sha, "source": shareable_source(source)})

    def model_key(self, model: str, ds: Any) -> str:
        """The model's cache key for ``ds`` (its version recorded for the provenance)."""
        key, self.versions[model] = _model_key(model, ds)
        return key

    def embedder(self, ds: Any) -> Any:
        """Embed ``ds`` under a model once, only when a step has to be computed (a resumed step needs no vectors)."""
        from semanscope_nb.models.embedded import embed

        box: dict[str, Any] = {}

        def get(m: str) -> Any:
            if m not in box:
                box[m] = embed(ds, m, cache=self.cache_arg, progress=False)
            return box[m]
        return get


# --------------------------------------------------------------------------- checking the inputs


def _check_numbers(n_boot: Any, seed: Any) -> tuple[int, int]:
    """``n_boot`` and ``seed`` (``settings`` when None), checked."""
    n_boot = settings.n_boot if n_boot is None else n_boot
    seed = settings.seed if seed is None else seed
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0:
        raise ArgumentError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"seed must be an integer, got {seed!r}")
    return n_boot, seed


def _word_datasets(datasets: Sequence[Any] | None, sets: list[tuple[str, ...]]) -> tuple[list[Any], list[dict]]:
    """The word datasets (the first must hold every language of every set) and the (dataset, set) pairs skipped."""
    from semanscope_nb.data.datasets import as_dataset
    from semanscope_nb.data.words import WordDataset

    given = list(datasets) if datasets is not None else None
    words: list[WordDataset] = []
    for d in (given if given is not None else list(DEFAULT_DATASETS)):
        try:
            ds = as_dataset(d)
        except SemanscopeError:
            if given is not None:
                raise
            continue
        if not isinstance(ds, WordDataset):
            raise ArgumentError(f"datasets: {getattr(ds, 'name', d)!r} is not a word dataset (pass parallel corpora as parallel=)")
        words.append(ds)
    if not words:
        raise ArgumentError("datasets: no word dataset could be read")
    skipped = []
    for s in sets:
        for ds in words:
            absent = [x for x in s if x not in ds.languages]
            if absent and ds is words[0]:
                raise ArgumentError(f"languages: {absent} not in dataset '{ds.name}' (it has {', '.join(ds.languages)}); "
                                    "pass a dataset holding every language (datasets=[...]) or other languages")
            if absent:
                skipped.append({"what": f"dataset {ds.name}", "language_set": _set_label(s), "reason": f"has no column for {absent}"})
    return words, skipped


def _switch_and_language_skips(model_ids: list[str], sets: list[tuple[str, ...]], switches: Mapping[str, bool]) -> list[dict]:
    """Sections the caller switched off, and models whose registry entry does not list a language."""
    from semanscope_nb.models.registry import unsupported_languages

    out = [{"what": what, "language_set": "", "reason": f"{arg}=False"} for what, arg in
           (("Tatoeba", "tatoeba"), ("SIB-200", "sib200"), ("CSC", "csc"), ("BCWS", "contextual")) if not switches[arg]]
    all_langs = sorted({x for s in sets for x in s})
    for m in model_ids:
        bad = unsupported_languages(m, all_langs)
        if bad:
            out.append({"what": f"model {m}", "language_set": "", "reason": f"its registry entry does not list {bad}: scored anyway, "
                        "read its numbers there as out-of-domain"})
    return out


# --------------------------------------------------------------------------- planning (nothing embedded yet)


def _available_sentence_data(*, tatoeba: bool, sib200: bool) -> tuple[set[str], set[str]]:
    """ISO codes with a Tatoeba file and with a SIB-200 folder in the shared data (empty when switched off)."""
    from semanscope_nb.data import bitext as bt

    tatoeba_have: set[str] = set()
    if tatoeba:
        try:
            tatoeba_have = {bt.TATOEBA_CODES.get(c, c) for c in bt.tatoeba_languages()}
        except OSError:
            tatoeba_have = set()
    sib_have = {bt.SIB200_CODES.get(c, c) for c in bt.sib200_languages()} if sib200 else set()
    return tatoeba_have, sib_have


def _plan_parallel(s: tuple[str, ...], *, tatoeba_have: set[str], sib_have: set[str], tatoeba: bool, sib200: bool,
                   parallel: Sequence[Any], max_sentences: int | None, missing: list[dict]) -> list[tuple[str, Any, Any]]:
    """(kind, loader, labels loader) of each parallel corpus of set ``s``; what is missing goes to ``missing``."""
    from semanscope_nb.data import bitext as bt

    label = _set_label(s)
    corp: list[tuple[str, Any, Any]] = []
    if "en" not in s:
        missing.append({"language_set": label, "section": "retrieval", "what": "no English in the set",
                        "would_fill": "Tatoeba and SIB-200 pair every language with English here; add en, or pass parallel=[ParallelCorpus(...)]"})
    for x in ([x for x in s if x != "en"] if "en" in s else []):
        if tatoeba and x in tatoeba_have:
            corp.append(("tatoeba", lambda x=x: bt.read_tatoeba(x, limit=max_sentences), None))
        elif tatoeba:
            code = {v: k for k, v in bt.TATOEBA_CODES.items()}.get(x, x)
            missing.append({"language_set": label, "section": "retrieval", "what": f"no Tatoeba file for {x}-en",
                            "would_fill": f"tatoeba.{code}-eng.{code} and tatoeba.{code}-eng.eng in <shared data>/tatoeba"})
        if sib200 and x in sib_have and "en" in sib_have:
            corp.append(("sib200", lambda x=x: bt.sib200_parallel(x, "eng_Latn", split="test"),
                         lambda x=x: bt.read_sib200(x, "test").labels))
        elif sib200:
            code = {v: k for k, v in bt.SIB200_CODES.items()}.get(x, f"<{x} FLORES code>")
            missing.append({"language_set": label, "section": "retrieval / miss taxonomy (SIB-200)", "what": f"no SIB-200 folder for {x}",
                            "would_fill": f"<shared data>/sib-200/{code}/{{train,dev,test}}.tsv"})
    corp.extend(("user", lambda pc=pc: pc, None) for pc in parallel if pc.source_language in s and pc.target_language in s)
    for a, b in [(a, b) for i, a in enumerate(s) for b in s[i + 1:] if "en" not in (a, b)]:
        if not any(pc.source_language in (a, b) and pc.target_language in (a, b) for pc in parallel):
            missing.append({"language_set": label, "section": "retrieval", "what": f"no parallel corpus for {a}-{b}",
                            "would_fill": f"a {a}-{b} ParallelCorpus passed as parallel=[...] (Tatoeba and SIB-200 here pair with English)"})
    return corp


def _plan_knn(s: tuple[str, ...], *, sib_have: set[str], sib200: bool, missing: list[dict]) -> list[str]:
    """The languages of ``s`` with SIB-200 train and test splits (kNN classification)."""
    from semanscope_nb.data import bitext as bt

    out = []
    for x in (s if sib200 else ()):
        if x in sib_have:
            out.append(x)
        else:
            code = {v: k for k, v in bt.SIB200_CODES.items()}.get(x, f"<{x} FLORES code>")
            missing.append({"language_set": _set_label(s), "section": "kNN classification", "what": f"no SIB-200 folder for {x}",
                            "would_fill": f"<shared data>/sib-200/{code}/train.tsv and test.tsv"})
    return out


def _plan_csc(s: tuple[str, ...], *, csc: bool, missing: list[dict]) -> list[str]:
    """The bundled sentence corpora of the languages of ``s`` that CSC supports."""
    from semanscope_nb.data.sentences import list_sentence_corpora
    from semanscope_nb.metrics.csc.languages import supported_languages

    label, supported, out = _set_label(s), set(supported_languages()), []
    for x in (s if csc else ()):
        if x not in supported:
            missing.append({"language_set": label, "section": "CSC", "what": f"CSC has no negation / fuzz rules for {x}",
                            "would_fill": f"register_language_rules('{x}', ...) and a one-sentence-per-line {x} corpus"})
        elif f"csc-everyday-{x}" in list_sentence_corpora():
            out.append(f"csc-everyday-{x}")
        else:
            missing.append({"language_set": label, "section": "CSC", "what": f"no bundled {x} sentences",
                            "would_fill": f"data/csc-everyday-{x}.txt (one sentence per line), or ESS questions in {x}"})
    return out


def token_state_models(models: Sequence[str]) -> dict[str, str]:
    """model -> why it has no contextual token states, for those of ``models`` without a token-level backend.

    A model with token states is one :func:`~semanscope_nb.models.tokens.load_token_encoder`
    knows (nothing is loaded here): the NumPy port of multilingual-e5-small, all-minilm-l6-v2,
    ``st:`` / ``hf:`` names and model folders.

    >>> token_state_models(["multilingual-e5-small", "random-null"])
    {'random-null': "no token-level backend (load_token_encoder knows no 'random-null')"}
    """
    from semanscope_nb.errors import ModelLoadError, UnknownModelError
    from semanscope_nb.models.tokens import load_token_encoder

    out = {}
    for m in models:
        try:
            load_token_encoder(m)
        except UnknownModelError:
            out[m] = f"no token-level backend (load_token_encoder knows no {m!r})"
        except ModelLoadError as exc:
            out[m] = f"its token-level backend cannot load here: {exc}"
    return out


def _plan_contextual(s: tuple[str, ...], model_ids: list[str], *, contextual: bool, missing: list[dict]) -> list[str]:
    """The models scored on BCWS (en-zh word similarity in context) for set ``s``: those with token states."""
    from semanscope_nb.data.word_similarity import contextual_data_dir

    if not contextual or "en" not in s or "zh" not in s:
        return []
    label, section = _set_label(s), "contextual similarity (BCWS)"
    try:
        have_file = (contextual_data_dir() / "bcws.txt").is_file()
    except OSError:
        have_file = False
    if not have_file:
        missing.append({"language_set": label, "section": section, "what": "no BCWS file",
                        "would_fill": "<shared data>/contextual/bcws.txt (BCWS, Chi and Chen 2018; set SEMANSCOPE_SHARED_DATA)"})
        return []
    without = token_state_models(model_ids)
    for m, why in without.items():
        missing.append({"language_set": label, "section": section, "what": f"{m}: {why}",
                        "would_fill": "a model with token states in models=[...]: multilingual-e5-small (NumPy port, offline), "
                                      "all-minilm-l6-v2 (English only) or 'st:<model folder>'"})
    return [m for m in model_ids if m not in without]


def _plan(sets: list[tuple[str, ...]], model_ids: list[str], *, tatoeba: bool, sib200: bool, csc: bool, contextual: bool,
          parallel: Sequence[Any], max_sentences: int | None) -> tuple[dict[tuple[str, ...], dict[str, list]], list[dict]]:
    """Per language set: the parallel corpora, kNN languages, CSC corpora and BCWS models; and what is missing."""
    tatoeba_have, sib_have = _available_sentence_data(tatoeba=tatoeba, sib200=sib200)
    missing: list[dict] = []
    plan = {}
    for s in sets:
        plan[s] = {"corpora": _plan_parallel(s, tatoeba_have=tatoeba_have, sib_have=sib_have, tatoeba=tatoeba, sib200=sib200,
                                             parallel=parallel, max_sentences=max_sentences, missing=missing),
                   "knn": _plan_knn(s, sib_have=sib_have, sib200=sib200, missing=missing),
                   "csc": _plan_csc(s, csc=csc, missing=missing),
                   "bcws": _plan_contextual(s, model_ids, contextual=contextual, missing=missing)}
    return plan, missing


def _count_steps(n_models: int, n_words: int, plan: Mapping[Any, Mapping[str, list]]) -> int:
    """The steps the progress bar counts: cost probes, then per set SA, pairs, comparison and each section."""
    n = n_models
    for p in plan.values():
        n += n_words * (2 * n_models + (1 if n_models > 1 else 0))
        n += (len(p["corpora"]) + len(p["knn"]) + len(p["csc"])) * n_models + len(p["bcws"])
    return n


# --------------------------------------------------------------------------- the steps


def _measured_cost(run: _Run, model: str, probe: list[str], language: str) -> dict[str, Any]:
    """(dims, encode seconds per 1000 texts, when measured) of ``model`` on ``probe``: measured once, then read back.

    Kept in ``<work_dir>/costs`` (not a job: the measurement is of this machine, and a resumed report
    must not load every model only to time it again); ``force`` measures again.
    """
    from semanscope_nb.models.registry import load_model

    blob = json.dumps({"model": load_model(model).cache_key, "probe": probe, "language": language, "version": REPORT_VERSION},
                      sort_keys=True, ensure_ascii=False)
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    path = path_inside(run.jobs.folder.parent / "costs", f"{safe_name(model)}__{key}.json")
    keep_file = False
    if path.exists() and not run.jobs.force:
        try:
            rec = json.loads(regular_file(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            pass  # removed since: measured
        except OSError:  # cannot be read now (a lock, permissions, a folder): measured again, the file left as it is
            keep_file = True
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # a damaged record is measured again (and replaced)
            warnings.warn(f"{path.name}: damaged cost record ({type(exc).__name__}); measured again", JobFileWarning, stacklevel=3)
        else:
            why = _cost_record_problem(rec, model, key)
            if why is None:
                return {"dims": int(rec["dims"]), "encode_seconds": float(rec["encode_seconds"]), "measured": rec["measured"]}
            if why:  # "": a record written before records named their model (measured again, as old job files are)
                warnings.warn(f"{path.name}: {why}; measured again", JobFileWarning, stacklevel=3)
    secs, dims = _encode_seconds(model, probe, language)
    rec = {"model": model, "key": key, "dims": dims, "encode_seconds": secs, "measured": utc_now()}
    if not keep_file:
        atomic_write_json(path, rec)
    return {k: rec[k] for k in ("dims", "encode_seconds", "measured")}


def _cost_record_problem(rec: Any, model: str, key: str) -> str | None:
    """Why the cost record ``rec`` read back is not ``model``'s measurement under ``key`` (None: it is; "": a record of
    an earlier version, which named no model).  Dimensions must be a positive integer, seconds a finite number >= 0,
    the time of measurement an ISO date."""
    import datetime as _dt

    from semanscope_nb.metrics.options import is_whole

    if not isinstance(rec, dict):
        return f"damaged cost record (a JSON {type(rec).__name__}, not an object)"
    dims, secs, when = rec.get("dims"), rec.get("encode_seconds"), rec.get("measured")
    if not is_whole(dims) or dims < 1:
        return f"damaged cost record (dims {dims!r:.40} is not a positive integer)"
    if isinstance(secs, bool) or not isinstance(secs, (int, float)) or not math.isfinite(secs) or secs < 0:
        return f"damaged cost record (encode_seconds {secs!r:.40} is not a finite number >= 0)"
    try:
        _dt.datetime.fromisoformat(when)
    except (TypeError, ValueError):
        return f"damaged cost record (measured {when!r:.40} is not a date)"
    if "model" not in rec and "key" not in rec:
        return ""
    if rec.get("model") != model or rec.get("key") != key:
        return f"holds another measurement (model {rec.get('model')!r:.80}, key {rec.get('key')!r:.40})"
    return None


def _measure_costs(run: _Run) -> None:
    """Dimensions, encode time (measured on this machine on the first dataset's first 200 words) and package size of each model."""
    from semanscope_nb.models.registry import get_model_info

    first = run.words[0]
    probe = list(first.words(first.languages[0]))[:200]
    for m in run.model_ids:
        rec = _measured_cost(run, m, probe, first.languages[0])
        run.rows["costs"].append({"model": m, "dims": rec["dims"], "encode_seconds": rec["encode_seconds"], "size_mb": package_size_mb(m),
                                  "display_name": get_model_info(m).display_name, "measured": rec["measured"]})
        run.tick(f"{m}: encode time")


def _verdict_row(label: str, dataset: str, model: str, sa: Any) -> dict[str, Any]:
    """The verdict row of one SA result: SA, judged SA, chance and gap with intervals, tiers and artefact notes."""
    v = sa.verdict_scores
    notes = list(sa.diagnostics.notes)
    if sa.excluded_concepts:
        notes.insert(0, "left out of the verdict: " + ", ".join(f"{n} {k}" for k, n in sa.excluded_concepts.items()))

    def est(e: Any) -> tuple[float, float, float]:
        return (e.value, e.ci[0], e.ci[1]) if v else (math.nan, math.nan, math.nan)

    (sj, sj_lo, sj_hi), (ch, ch_lo, ch_hi), (gap, gap_lo, gap_hi) = (est(v.sa if v else None), est(v.sa_null if v else None),
                                                                     est(v.delta if v else None))
    return {"language_set": label, "dataset": dataset, "model": model, "sa": sa.sa_cosine, "sa_low": sa.cosine.ci[0],
            "sa_high": sa.cosine.ci[1], "sa_judged": sj, "sa_judged_low": sj_lo, "sa_judged_high": sj_hi, "chance": ch,
            "chance_low": ch_lo, "chance_high": ch_hi, "gap": gap, "gap_low": gap_lo, "gap_high": gap_hi, "tier": sa.tier,
            "paper_tier": sa.paper_tier, "verdict": sa.verdict, "artefacts": "; ".join(notes), "n_concepts": sa.n_concepts}


def _pair_rows(label: str, dataset: str, model: str, pa: Any) -> list[dict[str, Any]]:
    """The pair-matrix rows of one per-pair SA result."""
    return [{"language_set": label, "dataset": dataset, "model": model, "pair": f"{r['language_a']}-{r['language_b']}",
             "language_a": r["language_a"], "language_b": r["language_b"], "sa": r["sa"], "sa_low": r["ci_low"],
             "sa_high": r["ci_high"], "chance": r["sa_null"], "gap": r["delta"], "gap_low": r["delta_low"],
             "gap_high": r["delta_high"], "verdict": r["verdict"]} for r in pa.table.to_dict("records")]


def _sa_comparison(run: _Run, s: tuple[str, ...], sub: Any, keys: Mapping[str, str], emb_of: Any) -> Any:
    """The paired SA comparison of every model on one dataset (paired bootstrap, sign-flip, Holm, rank bands)."""
    from semanscope_nb.runs.tasks import run_task

    label = _set_label(s)
    keyc = {"models": [keys[m] for m in run.model_ids], "dataset": sub.sha256, "languages": list(s), "n_boot": run.n_boot,
            "seed": run.seed, "n_perm": run.n_perm, "confidence": run.confidence}
    cmp = run.jobs.result("comparison", keyc, lambda: run_task(
        "comparison", [emb_of(m) for m in run.model_ids], n_perm=run.n_perm, **run.boot))
    run.tick(f"{label} {sub.name}: comparison")
    meas = f"SA ({sub.name})"
    for r in cmp.pairs.to_dict("records"):
        run.rows["comparisons"].append({"language_set": label, "measurement": meas, "model_a": r["model_a"], "model_b": r["model_b"],
                                        "diff": r["diff"], "diff_low": r["ci_low"], "diff_high": r["ci_high"], "p_value": r["p_value"],
                                        "p_holm": r["p_holm"], "significant": bool(r["significant"])})
    # a band's score is the quantity the bands rank (the comparison's score: the verdict's SA − chance on the
    # artefact-free concepts) with its own interval; the raw SA stays in the verdict table
    for r in cmp.scores.to_dict("records"):
        run.rows["bands"].append({"language_set": label, "measurement": meas, "model": r["model"], "score": r["score"],
                                  "score_low": r["ci_low"], "score_high": r["ci_high"], "band": int(r["band"])})
    return cmp


def _word_dataset_step(run: _Run, s: tuple[str, ...], ds: Any) -> tuple[dict[str, dict], Any]:
    """SA verdict and pair matrix of every model on one word dataset, then the SA comparison; (verdict rows, comparison)."""
    from semanscope_nb.runs.tasks import run_task

    label = _set_label(s)
    sub = ds.select(list(s))
    run.note_dataset(sub.name, sub.sha256, sub.source, "words")
    emb_of = run.embedder(sub)
    keys, rows = {}, {}
    for m in run.model_ids:
        keys[m] = run.model_key(m, sub)
        keyp = {"model": keys[m], "dataset": sub.sha256, "languages": list(s), **run.boot}
        sa = run.jobs.result("sa", keyp, lambda m=m: run_task("sa", emb_of(m), **run.boot))
        run.tick(f"{m} {label} {sub.name}: SA")
        pa = run.jobs.result("pair-sa", keyp, lambda m=m: run_task("pair-sa", emb_of(m), **run.boot))
        run.tick(f"{m} {label} {sub.name}: pairs")
        rows[m] = _verdict_row(label, sub.name, m, sa)
        run.rows["verdicts"].append(rows[m])
        run.rows["pairs"].extend(_pair_rows(label, sub.name, m, pa))
    if len(run.model_ids) > 1:
        return rows, _sa_comparison(run, s, sub, keys, emb_of)
    meas = f"SA ({sub.name})"
    run.rows["bands"].extend({"language_set": label, "measurement": meas, "model": m, "score": rows[m]["gap"],
                              "score_low": rows[m]["gap_low"], "score_high": rows[m]["gap_high"], "band": 1}
                             for m in run.model_ids)
    return rows, None


def _word_datasets_step(run: _Run, s: tuple[str, ...]) -> tuple[dict[str, dict], Any]:
    """Verdicts, pair matrices and SA comparisons on every word dataset holding the set; those of the first dataset."""
    first_sa: dict[str, dict] = {}
    first_cmp = None
    for ds in run.words:
        if any(x not in ds.languages for x in s):
            continue
        rows, cmp = _word_dataset_step(run, s, ds)
        if ds is run.words[0]:
            first_sa, first_cmp = rows, cmp
    return first_sa, first_cmp


def _retrieval_rows(label: str, corpus: str, model: str, fwd: Any) -> list[dict[str, Any]]:
    """Accuracy@k, F1@k and MRR with intervals, both directions (precision and recall are left to the result)."""
    return [{"language_set": label, "corpus": corpus, "model": model, "direction": r.direction, "measure": name, "value": e.value,
             "value_low": e.ci[0], "value_high": e.ci[1], "n_queries": r.n_queries}
            for r in (fwd, fwd.reverse) if r is not None
            for name, e in r.estimates().items() if name not in ("precision", "recall")]


def _signal_rows(run: _Run, label: str, corpus: str, model: str, direction: str, post: Mapping[str, Any]) -> None:
    """Add the signal-vs-noise numbers, the chart's cosines, the miss counts and examples of one model on one corpus."""
    run.rows["signal"].append({"language_set": label, "corpus": corpus, "model": model, **post["signal"]})
    run.rows["cosines"].extend({"language_set": label, "corpus": corpus, "model": model, **c} for c in post["cosines"])
    for c in post["counts"]:
        run.rows["miss_counts"].append({"language_set": label, "corpus": corpus, "model": model, "direction": direction,
                                        **{k: (math.nan if v is None else v) for k, v in c.items()}})
    run.rows["misses"].extend({"language_set": label, "corpus": corpus, "model": model, "direction": direction, **r}
                              for r in post["examples"])


def _parallel_step(run: _Run, label: str, spec: tuple[str, Any, Any], ks: Sequence[int]) -> None:
    """Retrieval, signal vs noise and the miss taxonomy of every model on one parallel corpus, then the paired MRR test."""
    from semanscope_nb.runs.tasks import run_task

    _, load, labels_of = spec
    corpus = load()
    run.note_dataset(corpus.name, corpus.sha256, corpus.source, "parallel")
    labels = list(labels_of()) if labels_of is not None else None
    emb_of = run.embedder(corpus)
    per_query: dict[str, np.ndarray] = {}
    ks_here = [k for k in ks if k <= len(corpus)] or [1]  # a small corpus of the user's: only the k it allows
    direction = ""
    for m in run.model_ids:
        keyp = {"model": run.model_key(m, corpus), "dataset": corpus.sha256, "n": len(corpus), "n_boot": run.n_boot,
                "seed": run.seed, "ks": ks_here, "confidence": run.confidence}
        ret = run.jobs.result("retrieval", keyp, lambda m=m: run_task("retrieval", emb_of(m), ks=ks_here, **run.boot))
        (direction, fwd), = ret.pairs.items()
        run.rows["retrieval"].extend(_retrieval_rows(label, corpus.name, m, fwd))
        per_query[m] = 1.0 / np.asarray(fwd.ranks, dtype=np.float64)
        post = run.jobs.record("signal-misses", {**keyp, "labels": labels is not None}, lambda m=m, fwd=fwd: _signal_and_misses(
            emb_of(m), corpus, fwd, labels, **run.boot))
        _signal_rows(run, label, corpus.name, m, fwd.direction, post)
        run.tick(f"{m} {corpus.name}: retrieval")
    if len(per_query) > 1:
        pairs_t, bands_t = paired_model_test(per_query, n_perm=run.n_perm, order=_pair_order(corpus), **run.boot)
        _add_comparison(run.rows["comparisons"], run.rows["bands"], label, f"retrieval MRR ({corpus.name}, {direction})", per_query,
                        pairs_t, bands_t)


def _knn_row(label: str, language: str, dataset: str, model: str, kr: Any, f1_interval: Sequence[Any]) -> dict[str, Any]:
    """The kNN row: macro F1 (with its bootstrap interval) and accuracy at the first k, beside the two baselines."""
    k0 = kr.ks[0]
    lo, hi = f1_interval
    return {"language_set": label, "language": language, "dataset": dataset, "model": model, "k": k0,
            "macro_f1": kr.macro_f1[k0], "macro_f1_low": _f(lo), "macro_f1_high": _f(hi), "accuracy": kr.accuracy[k0],
            "accuracy_low": kr.intervals[f"knn@{k0}"][0], "accuracy_high": kr.intervals[f"knn@{k0}"][1],
            "majority_macro_f1": kr.baselines.get("majority", {}).get("macro_f1", math.nan),
            "random_macro_f1": kr.random_baseline.get("macro_f1", math.nan), "n_test": kr.n_test}


def _knn_step(run: _Run, label: str, language: str, ks: Sequence[int]) -> None:
    """kNN classification of every model on one language's SIB-200 splits, then the paired accuracy test."""
    from semanscope_nb.data import bitext as bt
    from semanscope_nb.runs.tasks import run_task

    splits = bt.LabelledSplits(bt.read_sib200(language, "train"), bt.read_sib200(language, "test"))
    run.note_dataset(splits.name, splits.sha256, splits.source, "labelled")
    emb_of = run.embedder(splits)
    test_order = key_order(test_row_keys(splits.test.texts, splits.test.labels))  # the kNN task's own key rule
    correct: dict[str, np.ndarray] = {}
    for m in run.model_ids:
        keyp = {"model": run.model_key(m, splits), "dataset": splits.sha256, "n_boot": run.n_boot, "seed": run.seed, "ks": list(ks),
                "confidence": run.confidence}
        kr = run.jobs.result("knn", keyp, lambda m=m: run_task("knn", emb_of(m), ks=list(ks), logistic=False, **run.boot))
        k0 = kr.ks[0]
        f1_ci = run.jobs.record("knn-macro-f1", keyp, lambda kr=kr, k0=k0: _macro_f1_interval(
            kr, f"knn@{k0}", order=test_order, **run.boot))
        run.rows["knn"].append(_knn_row(label, language, splits.name, m, kr, f1_ci))
        correct[m] = (np.asarray(kr.predictions[f"knn@{k0}"]) == np.asarray(kr.test_labels)).astype(np.float64)
        run.tick(f"{m} {splits.name}: kNN")
    if len(correct) > 1:
        pairs_k, bands_k = paired_model_test(correct, n_perm=run.n_perm, order=test_order, **run.boot)
        _add_comparison(run.rows["comparisons"], run.rows["bands"], label, f"kNN accuracy ({splits.name})", correct, pairs_k, bands_k)


def _csc_step(run: _Run, label: str, name: str) -> None:
    """CSC overlap (with its interval) of every model on one bundled sentence corpus."""
    from semanscope_nb.data.sentences import load_sentence_corpus
    from semanscope_nb.runs.tasks import run_task

    corpus = load_sentence_corpus(name)
    run.note_dataset(name, corpus.sha256, corpus.source, "sentences")
    for m in run.model_ids:
        keyp = {"model": run.model_key(m, corpus), "dataset": corpus.sha256, "n_boot": run.n_boot, "seed": run.seed,
                "n": run.csc_sentences, "confidence": run.confidence}
        cr = run.jobs.result("csc", keyp, lambda m=m: run_task("csc", corpus, m, cache=run.cache_arg, progress=False,
                                                             max_sentences=run.csc_sentences, **run.boot))
        est = cr.estimates().get("overlap")
        run.rows["csc"].append({"language_set": label, "language": corpus.language, "corpus": name, "model": m, "overlap": cr.overlap,
                                "overlap_low": est.ci[0] if est else math.nan, "overlap_high": est.ci[1] if est else math.nan,
                                "n_sentences": cr.n_sentences})
        run.tick(f"{m} {name}: CSC")


def bcws_sample(n_pairs: int, *, seed: int, path: str | os.PathLike | None = None) -> Any:
    """The BCWS pairs the report scores: a seeded sample of ``n_pairs`` (file order kept), Chinese in Simplified script.

    As :func:`~semanscope_nb.runs.word_similarity.word_similarity_sweep` does by default, the Chinese side
    is converted with OpenCC ``t2s`` (spans kept exact); sampling first converts only the pairs scored.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "bcws.txt"
    >>> _ = p.write_text("".join(f"n n\\n我們<說>話{i}\\nwe <talk> {i}\\n" + "5 " * 11 + "5.0\\n" for i in range(5)), encoding="utf-8")
    >>> s = bcws_sample(3, seed=0, path=p); len(s), s.targets1[0], s.name
    (3, '说', 'bcws-t2s')
    """
    from semanscope_nb.data.word_similarity import read_bcws

    return read_bcws(path).sample(int(n_pairs), seed=seed).converted("t2s")


def _bcws_score(run: _Run, pairs: Any, model: str) -> Any:
    """BCWS Spearman rho (bootstrap interval over pairs) of ``model``'s contextual target vectors."""
    from semanscope_nb.metrics.word_similarity import contextual_word_similarity
    from semanscope_nb.models.tokens import load_token_encoder
    from semanscope_nb.runs.word_similarity import encode_targets

    enc = load_token_encoder(model)
    V1, V2 = encode_targets(pairs, enc, cache=run.cache_arg)
    prov = {"dataset": pairs.name, "data_sha256": pairs.sha256, "n_pairs_in_data": len(pairs), "context": True, "layers": "mean",
            "encoders": {"zh": {"model": enc.model_id, "version": str(enc.version)}}}
    return contextual_word_similarity(V1, V2, pairs.scores, languages=(pairs.language1, pairs.language2), provenance=prov,
                                      keys=pairs.pair_keys(), **run.boot)


def _contextual_step(run: _Run, label: str, models: Sequence[str]) -> None:
    """BCWS (en-zh word similarity in context) of each model with token states, beside the human upper bound."""
    from semanscope_nb.metrics.word_similarity import annotator_agreement
    from semanscope_nb.models.tokens import load_token_encoder

    if not models:
        return
    pairs = bcws_sample(run.bcws_pairs, seed=run.seed)
    run.note_dataset(pairs.name, pairs.sha256, pairs.source, "contextual pairs")
    base = {"dataset": pairs.sha256, "n": run.bcws_pairs, "script": "t2s", **run.boot}
    human = run.jobs.result("bcws-human", base, lambda: annotator_agreement(pairs.annotators, keys=pairs.pair_keys(), **run.boot))
    for m in models:
        enc = load_token_encoder(m)  # nothing loads until a vector has to be computed
        sc = run.jobs.result("bcws", {**base, "model": enc.cache_key}, lambda m=m: _bcws_score(run, pairs, m))
        run.rows["contextual"].append({
            "language_set": label, "dataset": pairs.name, "model": m, "token_encoder": f"{enc.model_id} {enc.version}",
            "rho": sc.rho, "rho_low": sc.ci.low, "rho_high": sc.ci.high, "human_rho": human.rho, "human_rho_low": human.ci.low,
            "human_rho_high": human.ci.high, "n_pairs": sc.n_pairs, "layers": "mean of layers 1..n, mean of the word's subwords"})
        run.tick(f"{m} {pairs.name}: BCWS")


def _recommend_step(run: _Run, s: tuple[str, ...], first_sa: Mapping[str, dict], first_cmp: Any) -> None:
    """The recommendation of one language set, by :data:`RECOMMENDATION_RULE`, from the first dataset's verdicts and bands."""
    tiers = {m: first_sa[m]["tier"] for m in first_sa}
    bands = first_cmp.bands if first_cmp is not None else [[m] for m in sorted(first_sa, key=lambda m: -first_sa[m]["sa"])]
    cost_map = {r["model"]: r for r in run.rows["costs"]}
    rec = recommend(tiers, bands, cost_map, languages=s)
    run.rows["recommendations"].append({"language_set": _set_label(s), "recommended": rec["recommended"], "tie": rec["tie"],
                                        "tied": ", ".join(rec["tied"]), "sentence": rec["sentence"], "steps": "; ".join(rec["steps"]),
                                        "rule": RECOMMENDATION_RULE, "dataset": run.words[0].name})


def _language_set_step(run: _Run, s: tuple[str, ...], plan: Mapping[str, list], ks: Sequence[int]) -> None:
    """Every section of one language set, in the report's order, then its recommendation."""
    label = _set_label(s)
    first_sa, first_cmp = _word_datasets_step(run, s)
    for spec in plan["corpora"]:
        _parallel_step(run, label, spec, ks)
    for x in plan["knn"]:
        _knn_step(run, label, x, ks)
    for name in plan["csc"]:
        _csc_step(run, label, name)
    _contextual_step(run, label, plan["bcws"])
    _recommend_step(run, s, first_sa, first_cmp)


def _assemble(run: _Run, sets: list[tuple[str, ...]], params: dict[str, Any], seconds: float) -> ModelReport:
    """The :class:`ModelReport` of the collected rows, with its provenance."""
    provenance = {"created": utc_now(), "packages": package_info(), "semanscope_nb": package_info().get("semanscope_nb", ""),
                  "model_versions": run.versions, "datasets": run.datasets_seen, "parameters": params,
                  "report_version": REPORT_VERSION, "seconds": seconds, "jobs_reused": run.jobs.reused,
                  "jobs_computed": run.jobs.computed}
    tables = {name: _frame(run.rows[name], cols) for name, cols in _COLUMNS.items()}
    return ModelReport(models=tuple(run.model_ids), language_sets=tuple(sets), datasets=tuple(d.name for d in run.words),
                       parameters=params, provenance=provenance, **tables)


def _check_work_dir(work_dir: Any) -> Path:
    """The report's work folder (default ``settings.cache_dir / "reports"``), refused before any work when it, a folder
    above it or its ``jobs`` / ``costs`` folder is a file (an ArgumentError naming ``work_dir``)."""
    from semanscope_nb.runs.grid import check_out_folder

    work = check_out_folder("work_dir", work_dir) if work_dir is not None else Path(settings.cache_dir) / "reports"
    for sub in ("jobs", "costs"):
        check_out_folder("work_dir", work / sub)
    return work


def model_report(
    models: Sequence[str] | str, *, languages: Sequence[str] | Sequence[Sequence[str]] | str, datasets: Sequence[Any] | None = None,
    n_boot: int | None = None, seed: int | None = None, progress: bool = True, confidence: float = 0.95, n_perm: int = 2000,
    tatoeba: bool = True, sib200: bool = True, csc: bool = True, contextual: bool = True, parallel: Sequence[Any] = (),
    max_sentences: int | None = 1000, csc_sentences: int = 40, bcws_pairs: int = 100, ks: Sequence[int] = (1, 5, 10),
    work_dir: str | os.PathLike | None = None, cache: Any = None, force: bool = False,
) -> ModelReport:
    """Run every measurement for ``models`` on each language set and return the :class:`ModelReport`.

    ``languages``: one set (``["en", "zh", "ja"]`` or ``"en,zh,ja"``) or several
    (``[["en", "zh"], ["en", "ja"]]``).  ``datasets``: word datasets (bundled
    names, CSV paths or values; default :data:`DEFAULT_DATASETS`, those holding the
    languages); the first is the one the recommendation reads.  ``parallel``:
    the user's own :class:`~semanscope_nb.data.bitext.ParallelCorpus` values, scored
    like Tatoeba.  ``tatoeba`` / ``sib200`` / ``csc`` / ``contextual``: whether to read
    the shared data for those sections (``contextual``: BCWS, for a set holding en and zh
    and the models with token states).  ``max_sentences``: pairs kept per Tatoeba file;
    ``csc_sentences``: sentences sampled for CSC; ``bcws_pairs``: BCWS pairs scored (a
    seeded sample; each pair encodes two sentences with the token model, so this sets the
    section's cost).  ``work_dir``: where the job files go (default
    ``settings.cache_dir / "reports"``); ``force``: recompute.  ``n_boot`` / ``seed``
    default to ``settings``.  One progress bar counts the steps.
    """
    t_start = time.perf_counter()
    n_boot, seed = _check_numbers(n_boot, seed)
    work = _check_work_dir(work_dir)
    if isinstance(bcws_pairs, bool) or not isinstance(bcws_pairs, int) or bcws_pairs < 3:
        raise ArgumentError(f"bcws_pairs must be an integer of at least 3 (a rank correlation), got {bcws_pairs!r}")
    sets = _language_sets(languages)
    model_ids, skipped_models = _check_models(models)
    words, skipped_data = _word_datasets(datasets, sets)
    plan, missing = _plan(sets, model_ids, tatoeba=tatoeba, sib200=sib200, csc=csc, contextual=contextual, parallel=parallel,
                          max_sentences=max_sentences)
    skipped = ([{"what": f"model {m}", "language_set": "", "reason": why} for m, why in skipped_models.items()] + skipped_data
               + _switch_and_language_skips(model_ids, sets, {"tatoeba": tatoeba, "sib200": sib200, "csc": csc,
                                                               "contextual": contextual}))
    params = {"n_boot": n_boot, "seed": seed, "confidence": confidence, "n_perm": n_perm, "ks": list(ks),
              "max_sentences": max_sentences, "csc_sentences": csc_sentences, "bcws_pairs": bcws_pairs, "near_quantile": NEAR_QUANTILE}
    cache_arg, own_cache = _cache_argument(cache)
    run = _Run(model_ids, words, _Jobs(work, force),
               cache_arg, n_boot, seed, confidence, n_perm, tuple(ks), csc_sentences, bcws_pairs)
    run.rows["missing"], run.rows["skipped"] = missing, skipped
    run.bar = _progress_bar(progress, _count_steps(len(model_ids), len(words), plan))
    try:
        _measure_costs(run)
        for s in sets:
            _language_set_step(run, s, plan[s], ks)
    finally:
        if run.bar is not None:
            run.bar.close()
        if own_cache is not None:
            own_cache.close()
    return _assemble(run, sets, params, time.perf_counter() - t_start)


def _cache_argument(cache: Any) -> tuple[Any, Any]:
    """(the cache the steps use, the cache this report opened and must close): None opens the default cache."""
    from semanscope_nb.models.cache import EmbeddingCache

    if cache is None:
        own = EmbeddingCache(None)
        return own, own
    return (False if cache is False else cache), None


def _progress_bar(progress: bool, n_steps: int) -> Any:
    """One tqdm bar over the report's steps (None: no bar)."""
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=n_steps, desc="model report", unit="step")


def _f(x: Any) -> float:
    """A float, NaN for None / NaN read back from a JSON job file."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n (statsmodels' proportion_confint, method 'wilson')."""
    from statsmodels.stats.proportion import proportion_confint

    if n == 0:
        return math.nan, math.nan
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    return float(lo), float(hi)


def _macro_f1_interval(kr: Any, method: str, *, n_boot: int, seed: int, confidence: float,
                       order: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of the macro F1 of ``method``'s predictions (test items resampled).

    Vectorised over resamples: per class, true positives, predicted and gold counts are weighted sums
    of the resample counts; F1 = 2 TP / (pred + gold), 0 when both are 0 (sklearn's ``zero_division=0``),
    averaged over ``kr.classes`` as ``f1_score(..., labels=classes, average="macro")`` does.
    """
    if not n_boot:
        return math.nan, math.nan
    y = np.asarray(kr.test_labels).astype(str)
    p = np.asarray(kr.predictions[method]).astype(str)
    if order is not None:  # the test items drawn in canonical order
        y, p = y[order], p[order]
    n = len(y)
    rng = np.random.default_rng(seed)
    counts = np.zeros((int(n_boot), n))
    idx = rng.integers(0, n, size=(int(n_boot), n))
    np.add.at(counts, (np.repeat(np.arange(int(n_boot)), n), idx.ravel()), 1.0)
    f1s = []
    for c in sorted(set(kr.classes)):
        gold, pred = (y == c).astype(float), (p == c).astype(float)
        tp, g, q = counts @ (gold * pred), counts @ gold, counts @ pred
        with np.errstate(invalid="ignore", divide="ignore"):
            f1s.append(np.where(g + q > 0, 2 * tp / (g + q), 0.0))
    vals = np.mean(f1s, axis=0)
    lo, hi = np.quantile(vals, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def _add_comparison(cmp_rows: list, band_rows: list, label: str, meas: str, per_item: Mapping[str, np.ndarray],
                    pairs: pd.DataFrame, bands: list[list[str]]) -> None:
    for r in pairs.to_dict("records"):
        cmp_rows.append({"language_set": label, "measurement": meas, "model_a": r["model_a"], "model_b": r["model_b"], "diff": r["diff"],
                         "diff_low": r["ci_low"], "diff_high": r["ci_high"], "p_value": r["p_value"], "p_holm": r["p_holm"],
                         "significant": bool(r["significant"])})
    band_of = {m: i for i, b in enumerate(bands, 1) for m in b}
    for m, v in per_item.items():
        band_rows.append({"language_set": label, "measurement": meas, "model": m, "score": float(np.mean(v)), "score_low": math.nan,
                          "score_high": math.nan, "band": band_of[m]})



__all__ = [
    "CONTEXTUAL_COLUMNS",
    "RECOMMENDATION_RULE",
    "ModelReport",
    "bcws_sample",
    "classify_misses",
    "model_report",
    "paired_model_test",
    "recommend",
    "report_numbers",
    "save_report",
    "signal_vs_noise",
    "surface_overlap",
    "token_state_models",
]
