"""Model versus model on the same concepts: paired bootstrap, paired permutation test, Holm, rank bands.

**The compared quantity is the verdict's** (:attr:`~semanscope_nb.metrics.affinity.SAResult.verdict_scores`):
the artefact-free, chance-corrected score ``SA - chance level`` (the gap ``delta``), each
model's SA minus *its own* chance level (:mod:`~semanscope_nb.metrics.chance`) on the
concepts left after artefact exclusion.  A paired comparison needs one set of
concepts, so a concept excluded in *any* compared model's data (an identical string
across languages, a degenerate vector of one model) is excluded for *all* models, and
a note says how many.  The raw all-concept SA stays beside it (column ``sa``);
``score="sa"`` compares the raw SA instead (no exclusion, no chance correction).

Two 95% intervals that overlap do not mean two models tie, and separate
intervals do not mean they differ: the scores share their concepts, so the
comparison must be *paired*.

* **Paired bootstrap.**  Every model's SA is computed on the very same
  resampled concepts (one multinomial count vector per resample, shared); the
  interval of the difference comes from those paired differences.
* **Paired permutation test.**  SA is a ratio of sums over concepts, not a mean,
  so the test runs on each concept's jackknife pseudo-value
  ``R * SA - (R - 1) * SA_without_r`` (the concept's share of the score):
  under "no difference" the sign of each concept's paired difference is
  exchangeable, and the sign-flip test gives a p-value (two-sided, +1 corrected).
* **Many models.**  p-values across all pairs are Holm-adjusted
  (:func:`statsmodels.stats.multitest.multipletests`, a well-kept
  implementation); rank bands group models that do not differ significantly
  from the best model of their band (greedy from the top).

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.affinity` and
:mod:`semanscope_nb.metrics.chance`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> rng = np.random.default_rng(0); eye = sp.identity(120, format="csr"); e = rng.normal(size=(120, 16))
>>> good = AlignedWords(("en", "de"), (e, e + 0.3 * rng.normal(size=e.shape)), (eye, eye), tuple(map(str, range(120))))
>>> bad = AlignedWords(("en", "de"), (e, rng.normal(size=e.shape)), (eye, eye), good.labels)
>>> c = compare_models({"good": good, "bad": bad}, n_boot=200, n_perm=200, seed=0)
>>> row = c.pairs.iloc[0]
>>> row.model_a, row.model_b, bool(row.significant), c.bands, c.score_label
('good', 'bad', True, [['good'], ['bad']], 'SA − chance (artefact-free)')
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Any, Literal, Mapping

import numpy as np
import pandas as pd

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.metrics.artefacts import find_artefacts, subset_rows, zero_vectors
from semanscope_nb.metrics.chance import (
    check_count,
    check_seed,
    NullParts,
    null_aware_statistics,
    percentile_interval,
    point_holding_estimate,
    resample_counts,
)
from semanscope_nb.metrics.degenerate import MIN_BOOT_CONCEPTS, collapsed_note, require_concepts
from semanscope_nb.metrics.spreads import AlignedWords, Spreads, affinity_ratio
from semanscope_nb.metrics.row_order import canonical_rows
from semanscope_nb.metrics.affinity import sa_percentile_estimate

#: what each ``score`` of :func:`compare_models` compares, as labelled in tables, charts and the CLI
SCORE_LABELS = {"delta": "SA − chance (artefact-free)", "sa": "SA (raw, all concepts)"}


def _sa_of_counts(spreads: Spreads, counts: np.ndarray) -> np.ndarray:
    s = spreads.spreads(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return affinity_ratio(s["intra_cos"], s["inter_cos"])


def _jackknife(stat: Any, R: int, *, batch: int = 256) -> np.ndarray:
    """``R * stat(all) - (R - 1) * stat(without r)`` for every row r; ``stat`` maps (B x R) counts to B values."""
    full = float(stat(np.ones((1, R)))[0])
    out = np.empty(R)
    for a in range(0, R, batch):
        b = min(R, a + batch)
        counts = np.ones((b - a, R))
        counts[np.arange(b - a), np.arange(a, b)] = 0.0
        out[a:b] = R * full - (R - 1) * stat(counts)
    return out


def jackknife_pseudo_values(spreads: Spreads, *, batch: int = 256, parts: NullParts | None = None) -> np.ndarray:
    """``R * S - (R - 1) * S_without_r`` for every concept row r: S the cosine SA, or with ``parts`` SA minus its chance level."""
    if parts is None:
        return _jackknife(lambda c: _sa_of_counts(spreads, c), spreads.R, batch=batch)
    return _jackknife(lambda c: null_aware_statistics(spreads, parts, c)["delta"], spreads.R, batch=batch)


def sign_flip_test(differences: np.ndarray, *, n_perm: int, seed: int | None) -> float:
    """Two-sided paired permutation (sign-flip) p-value of the mean of ``differences``."""
    d = np.asarray(differences, dtype=np.float64)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    while done < n_perm:
        b = min(1024, n_perm - done)
        signs = rng.choice((-1.0, 1.0), size=(b, d.size))
        hits += int(np.sum(np.abs(signs @ d) / d.size >= observed - 1e-15))
        done += b
    return (1 + hits) / (1 + n_perm)


_PAIR_COLUMNS = ["model_a", "model_b", "score_a", "score_b", "diff", "ci_low", "ci_high", "p_value", "sem", "sa_a", "sa_b",
                 "p_holm", "significant"]


@dataclass(frozen=True)
class ModelComparison(Result):
    """Pairwise paired comparisons of several models on the same concepts.

    ``scores``: model, score (the compared quantity, :attr:`score_label`), ci_low,
    ci_high, sem (its interval and bootstrap std), band, sa (the raw all-concept
    SA, beside it), sa_judged and sa_null (SA and chance level on the judged
    concepts), n_concepts (judged), note.  ``pairs``: model_a, model_b, score_a,
    score_b, diff (of the score), ci_low, ci_high, p_value, sem, sa_a, sa_b (raw),
    p_holm, significant.
    """

    kind = "comparison"
    main_score_name = "best_score"

    scores: pd.DataFrame
    pairs: pd.DataFrame
    bands: list[list[str]]
    n_boot: int
    n_perm: int
    seed: int | None
    confidence: float
    alpha: float
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    score: str = "delta"  # the compared quantity: "delta" (the verdict's) or "sa" (raw)
    excluded_concepts: int = 0  # concepts left out for every model (artefacts in any model's data)

    @property
    def score_label(self) -> str:
        """What the scores and differences are, for a reader (e.g. 'SA − chance (artefact-free)')."""
        return SCORE_LABELS.get(self.score, self.score)

    @property
    def best_score(self) -> float:
        """The compared score of the first model of the first band (the main score)."""
        return float(self.scores["score"].iloc[0]) if len(self.scores) else float("nan")

    @property
    def best_sa(self) -> float:
        """The raw all-concept SA of the first model of the first band."""
        return float(self.scores["sa"].iloc[0]) if len(self.scores) else float("nan")

    def estimates(self) -> dict[str, Estimate]:
        """Each model's compared score (by name) and each paired difference (``"a - b"``): value, bootstrap std, interval."""
        out = {}
        for r in self.scores.to_dict("records"):
            out[r["model"]] = Estimate(r["score"], r.get("sem", math.nan), Interval(r["ci_low"], r["ci_high"]))
        for r in self.pairs.to_dict("records"):
            out[f"{r['model_a']} - {r['model_b']}"] = Estimate(r["diff"], r.get("sem", math.nan), Interval(r["ci_low"], r["ci_high"]))
        return out

    def band_of(self, model: str) -> int:
        """1-based rank band of ``model`` (KeyError for a model without a score, e.g. collapsed vectors)."""
        for i, band in enumerate(self.bands, 1):
            if model in band:
                return i
        raise KeyError(model)


def compare_models(
    models: Mapping[str, AlignedWords],
    *,
    n_boot: int = 1000,
    n_perm: int = 10000,
    seed: int | None = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
    batch: int | None = None,
    score: Literal["delta", "sa"] = "delta",
    unknown_words: Mapping[str, Mapping[str, Any]] | None = None,
    on_zero: Literal["error", "drop"] = "error",
) -> ModelComparison:
    """Paired bootstrap and permutation comparison of two or more models on the same concepts.

    ``score="delta"`` (default) compares the verdict's quantity: SA minus its chance
    level on the concepts that are artefact-free in *every* model's data (see the
    module docstring); ``score="sa"`` the raw cosine SA of all concepts.  The raw SA
    is in ``scores.sa`` and ``pairs.sa_a`` / ``sa_b`` either way.

    Refusals (:mod:`semanscope_nb.metrics.degenerate`): fewer than 3 concepts
    (before or after exclusion) raise :class:`~semanscope_nb.errors.EmbeddingError`;
    a model whose vectors are collapsed gets a NaN score, no band and a note, and
    is left out of the pairs.  ``unknown_words``: model -> (language -> the words its tokenizer maps to unknown
    tokens only); their concepts are artefacts of that model's data, as in its verdict.  ``on_zero``: a word
    with an all-zero vector (cosine undefined) raises ('error', as
    :func:`~semanscope_nb.metrics.affinity.affinity_of_words`), or ('drop', the tasks' choice) the concepts holding
    one in any model's data are dropped for every model before the resamples are drawn, as each verdict drops its
    own (:func:`~semanscope_nb.metrics.artefacts.zero_vectors`).
    """
    names = list(models)
    _check_comparison(models, names, n_boot=n_boot, n_perm=n_perm, seed=seed, alpha=alpha, confidence=confidence, score=score)
    notes: list[str] = []
    models = _without_zero_vectors(models, on_zero=on_zero, notes=notes)
    first = models[names[0]]
    full = {n: Spreads(models[n]) for n in names}
    raw_sa = {n: _sa_or_nan(full[n], first.n_rows) for n in names}
    collapsed = {n for n in names if math.isnan(raw_sa[n])}  # no SA at all: set aside before the exclusion
    keep = np.ones(first.n_rows, dtype=bool)
    if score == "delta":  # one set of concepts for every model: an artefact in any model's data excludes the concept
        keep = _concepts_clean_in_every_model({n: models[n] for n in names if n not in collapsed}, first.n_rows, notes,
                                              unknown_words=unknown_words or {})
    judged = {n: subset_rows(models[n], keep) if not keep.all() else models[n] for n in names}
    R = int(keep.sum())
    spreads = {n: Spreads(judged[n]) if not keep.all() else full[n] for n in names}
    point_parts = {n: spreads[n].spreads(np.ones((1, R)), scaled=True) for n in names}
    undefined = {n: collapsed_note(point_parts[n]["intra_cos"][0], point_parts[n]["inter_cos"][0]) for n in names}
    for n, why in undefined.items():
        if why:
            notes.append(f"{n}: {why}; it gets no score and no band")
    defined = [n for n in names if not undefined[n]]
    parts = {n: NullParts(judged[n], spreads[n]) for n in defined}

    def stats(n: str, counts: np.ndarray) -> dict[str, np.ndarray]:
        return null_aware_statistics(spreads[n], parts[n], counts)

    point = {n: stats(n, np.ones((1, R))) for n in defined}
    value = {n: float(point[n][score][0]) for n in defined}
    dist: dict[str, list[np.ndarray]] = {n: [] for n in defined}
    # the verdict's resamples: drawn over all concepts, a left-out concept weighing 0 (RowSubset's rule), so a model's
    # score has the bootstrap distribution, and so the interval, of its verdict when the left-out concepts agree
    for counts in resample_counts(first.n_rows, n_boot, seed=seed, batch=batch, order=canonical_rows(first)):
        judged_counts = counts if keep.all() else counts[:, keep]
        for n in defined:
            dist[n].append(stats(n, judged_counts)[score])
    boot = {n: np.concatenate(dist[n]) for n in defined}
    # each concept's pseudo-value in canonical order (metrics.row_order): the sign flips are drawn over slots, so the
    # same concepts in another row order get the same p-values
    slots = canonical_rows(judged[names[0]])
    pseudo = {n: _jackknife(lambda c, n=n: stats(n, c)[score], R)[slots] for n in defined}
    order = sorted(defined, key=lambda n: -value[n])
    pairs = _paired_differences(order, value, boot, pseudo, raw_sa, confidence=confidence, n_perm=n_perm, seed=seed,
                                alpha=alpha)
    bands = rank_bands(order, pairs)
    band_index = {m: i for i, band in enumerate(bands, 1) for m in band}
    nan = math.nan
    scores = pd.DataFrame([
        {"model": n, "score": value[n], **_score_interval(score, value[n], boot[n], confidence), "band": band_index[n],
         "sa": raw_sa[n], "sa_judged": float(point[n]["sa"][0]),
         "sa_null": float(point[n]["sa_null"][0]), "n_concepts": R, "note": ""} if n in boot else
        {"model": n, "score": nan, "ci_low": nan, "ci_high": nan, "sem": nan, "band": None, "sa": raw_sa[n],
         "sa_judged": nan, "sa_null": nan, "n_concepts": R, "note": undefined[n]}
        for n in order + [n for n in names if undefined[n]]])
    notes += _interval_and_test_disagreements(scores, pairs)
    return ModelComparison(scores, pairs, bands, int(n_boot), int(n_perm), seed, confidence, alpha, notes,
                           score=score, excluded_concepts=int((~keep).sum()))


def _without_zero_vectors(models: Mapping[str, AlignedWords], *, on_zero: str, notes: list[str]
                          ) -> Mapping[str, AlignedWords]:
    """The models without the concepts that hold an all-zero vector in any model's data (a note says how many)."""
    zero = np.zeros(next(iter(models.values())).n_rows, dtype=bool)
    for name, aw in models.items():
        zero |= zero_vectors(aw, on_zero=on_zero, model=name).rows
    if not zero.any():
        return models
    require_concepts(int((~zero).sum()), minimum=MIN_BOOT_CONCEPTS,
                     what=f"compare_models (after dropping {int(zero.sum())} concepts holding all-zero vectors)")
    notes.append(f"{int(zero.sum())} of {zero.size} concepts dropped for every model before resampling: they hold an "
                 "all-zero vector (cosine undefined) in some model's data")
    return {name: subset_rows(aw, ~zero) for name, aw in models.items()}


def _score_interval(score: str, value: float, boot: np.ndarray, confidence: float) -> dict[str, float]:
    """ci_low, ci_high and sem of one model's score by the rule of the number it is: the verdict's gap
    (:func:`~semanscope_nb.metrics.chance.point_holding_estimate`, as ``SAResult.verdict_scores.delta``) or the raw
    SA (:func:`~semanscope_nb.metrics.affinity.sa_percentile_estimate`, as ``SAResult.cosine``)."""
    est = (point_holding_estimate(value, boot, confidence=confidence) if score == "delta"
           else sa_percentile_estimate(value, boot, confidence=confidence))
    return {"ci_low": est.ci[0], "ci_high": est.ci[1], "sem": est.sem}


def _check_comparison(models: Mapping[str, AlignedWords], names: list[str], *, n_boot: int, n_perm: int,
                      seed: int | None, alpha: float, confidence: float, score: str) -> None:
    """Raise on a bad option, on models scored on different concepts or languages, or on too few concepts."""
    if len(names) < 2:
        raise ValueError(f"compare_models needs at least two models, got {names}")
    check_count("n_boot", n_boot, minimum=2)
    check_count("n_perm", n_perm, minimum=1)
    check_seed(seed)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if score not in SCORE_LABELS:
        raise ValueError(f"score must be one of {tuple(SCORE_LABELS)}, got {score!r}")
    first = models[names[0]]
    for name in names[1:]:
        aw = models[name]
        if tuple(aw.labels) != tuple(first.labels) or tuple(aw.languages) != tuple(first.languages):
            raise ValueError(
                f"models '{names[0]}' and '{name}' were not scored on the same concepts and languages "
                "(a paired comparison needs identical concept rows)"
            )
    require_concepts(first.n_rows, minimum=MIN_BOOT_CONCEPTS, what="compare_models")


def _concepts_clean_in_every_model(models: Mapping[str, AlignedWords], n_rows: int, notes: list[str], *,
                                   unknown_words: Mapping[str, Mapping[str, Any]]) -> np.ndarray:
    """The concepts no model's data marks as an artefact (:func:`find_artefacts`); a note names what was left out."""
    found = {n: find_artefacts(aw, unknown_words=unknown_words.get(n)).excluded_rows for n, aw in models.items()}
    keep = np.ones(n_rows, dtype=bool)
    for rows in found.values():
        keep &= ~rows
    if not keep.all():
        who = ", ".join(f"{n} ({int(m.sum())})" for n, m in found.items() if m.any())
        notes.append(
            f"{int((~keep).sum())} of {n_rows} concepts excluded for all models: they hold an identical string "
            f"across languages, a word some model's tokenizer maps to unknown tokens only, or a degenerate vector in "
            f"some model's data (concepts per model: {who}); every score "
            f"is SA minus its chance level on the {int(keep.sum())} concepts left"
        )
    require_concepts(int(keep.sum()), minimum=MIN_BOOT_CONCEPTS,
                     what=f"compare_models (after excluding {int((~keep).sum())} artefact concepts)")
    return keep


def _paired_differences(order: list[str], value: Mapping[str, float], boot: Mapping[str, np.ndarray],
                        pseudo: Mapping[str, np.ndarray], raw_sa: Mapping[str, float], *, confidence: float, n_perm: int,
                        seed: int | None, alpha: float) -> pd.DataFrame:
    """One row per model pair (best first): difference, its bootstrap interval, sign-flip p and Holm-adjusted p."""
    from statsmodels.stats.multitest import multipletests

    rows = []
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            diff = boot[a] - boot[b]
            lo, hi = percentile_interval(diff, confidence)
            rows.append({
                "model_a": a, "model_b": b, "score_a": value[a], "score_b": value[b], "diff": value[a] - value[b],
                "ci_low": lo, "ci_high": hi,
                "p_value": sign_flip_test(pseudo[a] - pseudo[b], n_perm=n_perm, seed=seed), "sem": _bootstrap_sd(diff),
                "sa_a": raw_sa[a], "sa_b": raw_sa[b],
            })
    pairs = pd.DataFrame(rows, columns=_PAIR_COLUMNS[:-2])
    pairs["p_holm"] = multipletests(pairs["p_value"].to_numpy(), alpha=alpha, method="holm")[1] if len(pairs) else []
    pairs["significant"] = pairs["p_holm"] < alpha
    return pairs


def _interval_and_test_disagreements(scores: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    """Notes for pairs whose intervals overlap yet differ significantly, or are apart yet do not."""
    notes = []
    by_model = scores.set_index("model")
    for _, r in pairs.iterrows():
        ci_a = by_model.loc[r.model_a, ["ci_low", "ci_high"]]
        ci_b = by_model.loc[r.model_b, ["ci_low", "ci_high"]]
        overlap = ci_a.ci_low <= ci_b.ci_high and ci_b.ci_low <= ci_a.ci_high
        if overlap and r.significant:
            notes.append(f"{r.model_a} vs {r.model_b}: the intervals overlap, yet the paired test finds a difference")
        elif not overlap and not r.significant:
            notes.append(f"{r.model_a} vs {r.model_b}: the intervals are apart, yet the paired test finds no significant difference")
    return notes


def _sa_or_nan(spreads: Spreads, R: int) -> float:
    """The raw cosine SA of all concepts, NaN when it is undefined (collapsed vectors)."""
    s = spreads.spreads(np.ones((1, R)), scaled=True)
    if collapsed_note(s["intra_cos"][0], s["inter_cos"][0]):
        return math.nan
    return float(affinity_ratio(s["intra_cos"][0], s["inter_cos"][0]))


def _bootstrap_sd(values: np.ndarray) -> float:
    """The std (ddof=1) of the finite bootstrap values: the paper's "+-"."""
    v = values[np.isfinite(values)]
    return float(np.std(v, ddof=1)) if v.size > 1 else math.nan


def rank_bands(order: list[str], pairs: pd.DataFrame) -> list[list[str]]:
    """Greedy bands from the top: a band holds its best model and every next model not significantly worse than it.

    >>> p = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"], "significant": [False, True, True]})
    >>> rank_bands(["a", "b", "c"], p)
    [['a', 'b'], ['c']]
    """
    sig = {(r.model_a, r.model_b): bool(r.significant) for r in pairs.itertuples()}
    sig.update({(b, a): s for (a, b), s in list(sig.items())})
    bands: list[list[str]] = []
    for m in order:
        if bands and not sig.get((bands[-1][0], m), True):
            bands[-1].append(m)
        else:
            bands.append([m])
    return bands

