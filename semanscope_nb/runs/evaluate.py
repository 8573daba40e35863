"""Dataset-level Semantic Affinity (the ``sa`` task), SA leaderboards, and the SA benchmark on the one grid engine.

Example
-------
>>> import semanscope_nb as snb
>>> r = snb.dataset_affinity("edge-cases", "random-null", languages=["en", "zh"], n_boot=200)
>>> r.provenance["model"], r.tier
('random-null', 'chance')
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.data.catalog import list_folder_datasets  # noqa: F401  (moved to the data layer; old imports still work)
from semanscope_nb.data.words import (
    WordDataset,
)
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    AlignedWords,
    SAResult,
    TierThresholds,
)
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.embedded import Embedded, embed
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.models.registry import (
    get_model_info,
    load_model,
)
from semanscope_nb.runs.grid import GridResult, run_grid


def prepare_encoder(model: str | Encoder, dataset: WordDataset) -> Encoder:
    """Deprecated: ``load_model(model).prepare(dataset.fit_corpus())`` (see :func:`semanscope_nb.embed`)."""
    return load_model(model).prepare(dataset.fit_corpus())


def aligned_words(dataset: WordDataset, vectors: dict[str, dict[str, np.ndarray]]) -> AlignedWords:
    """Deprecated: ``runs.task_library.aligned_words(embedded)``; unique-word vectors and row incidence per language."""
    vecs, incs, words = [], [], []
    for lang in dataset.languages:
        uniq = dataset.words(lang)
        pos = {w: i for i, w in enumerate(uniq)}
        cells = dataset.column(lang)
        r_idx = np.repeat(np.arange(len(cells)), [len(c) for c in cells])
        c_idx = np.fromiter((pos[w] for c in cells for w in c), dtype=np.int64, count=r_idx.size)
        incs.append(sp.csr_matrix((np.ones(r_idx.size), (r_idx, c_idx)), shape=(len(cells), len(uniq))))
        vecs.append(np.stack([vectors[lang][w] for w in uniq]))
        words.append(tuple(uniq))
    labels = tuple(" / ".join(cell[0] for cell in row[:2]) for row in dataset.rows)
    return AlignedWords(dataset.languages, tuple(vecs), tuple(incs), labels, dataset.groups, tuple(words),
                        dataset.concept_keys)


def embed_dataset(
    dataset: WordDataset, model: str | Encoder, *, cache: EmbeddingCache | None | Literal[False] = None, progress: bool | None = None
) -> tuple[dict[str, dict[str, np.ndarray]], Encoder, dict[str, Any]]:
    """Deprecated: use :func:`semanscope_nb.embed`, which returns an :class:`~semanscope_nb.models.embedded.Embedded`.

    Returns (language -> text -> vector, the prepared encoder, what the cache did).
    """
    emb = embed(dataset, model, cache=cache, progress=progress)
    return {lang: dict(v) for lang, v in emb.vectors.items()}, emb.encoder, dict(emb.stats)


def dataset_affinity(
    dataset: WordDataset | str | os.PathLike | Embedded,
    model: str | Encoder | None = None,
    *,
    languages: Sequence[str] | None = None,
    cache: EmbeddingCache | None | Literal[False] = None,
    n_boot: int | None = None,
    seed: int | None = None,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    on_zero: Literal["error", "drop"] = "drop",
    progress: bool | None = None,
    surface_null: bool = True,
) -> SAResult:
    """SA of ``model`` on ``dataset`` (bundled name, CSV path, :class:`WordDataset` or :class:`Embedded`): the ``sa`` task.

    Each ``|`` alternative is embedded on its own, through the per-text cache
    (``cache=None``: the default cache; ``False``: no cache).  Concepts holding
    a word that embeds to the zero vector are dropped and listed in
    ``result.diagnostics`` (``on_zero="error"`` raises instead).  ``model``
    defaults to ``settings.default_model``, ``n_boot`` and ``seed`` to
    ``settings.n_boot`` / ``settings.seed``.  The result carries its
    provenance: model id/version/options, dataset hash, parameters, package
    versions.  ``surface_null`` (default True): also embed the dataset with the
    surface-form baseline 'tfidf-char' (cheap) and say whether the model beats it
    on the same concepts (``result.surface``; a model that does not gets the tier
    'not above surface form').
    """
    from semanscope_nb.runs.tasks import run_task

    return run_task("sa", dataset, model, languages=languages, cache=cache, progress=progress, n_boot=n_boot, seed=seed,
                    confidence=confidence, thresholds=thresholds, on_zero=on_zero, surface_null=surface_null)


# --------------------------------------------------------------------------- leaderboards and the benchmark


def leaderboard(results: Mapping[tuple[str, str], SAResult]) -> pd.DataFrame:
    """One row per (model, dataset) of SA results, models ordered by their mean cosine SA."""
    rows = []
    for (model, dataset), r in results.items():
        info = get_model_info(model)
        rows.append({"model": model, "display_name": info.display_name, "dataset": dataset,
                     "languages": ",".join(r.languages), **r.summary()})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    order = df.groupby("model")["sa_cosine"].mean().sort_values(ascending=False, kind="stable").index
    df["model"] = pd.Categorical(df["model"], categories=list(order), ordered=True)
    df = df.sort_values(["model", "dataset"], kind="stable").reset_index(drop=True)
    df["model"] = df["model"].astype(str)
    return df


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _num(x: Any) -> str:
    """``x`` to 3 decimals; an undefined number (NaN, inf, missing) is marked ``n/a``, never printed ``nan``."""
    return f"{float(x):.3f}" if _finite(x) else "n/a"


def format_leaderboard(table: pd.DataFrame) -> str:
    """A plain-text leaderboard: model, dataset, the verdict's score, raw SA, chance level, SA Euclidean, verdict tier.

    The score column is the verdict's quantity, ``SA − chance`` on the artefact-free
    concepts (``delta`` with its interval; ``n`` concepts left out when any were),
    ranked best first within each dataset; the raw all-concept SA with its SEM and
    95% CI stays beside it.
    """
    if table.empty:
        return "(no results)"
    header = (f"{'model':<24} {'dataset':<20} {'SA − chance (artefact-free)':<28} {'SA cos ± SEM':<16} {'95% CI':<17} "
              f"{'chance':<7} {'SA euc':<7} tier (paper's)")
    lines = [header, "-" * len(header)]
    nan = float("nan")
    t = table
    if "delta" in t and "dataset" in t:  # best first by the verdict's quantity, datasets in their order
        rank = {d: i for i, d in enumerate(dict.fromkeys(t["dataset"]))}
        t = t.assign(_d=t["dataset"].map(rank), _s=-pd.to_numeric(t["delta"], errors="coerce")).sort_values(
            ["_d", "_s"], kind="stable", na_position="last")
    for r in t.itertuples():
        chance = getattr(r, "sa_null", nan)
        paper = getattr(r, "paper_tier", r.tier)
        d, lo, hi = (float(getattr(r, k, nan)) for k in ("delta", "delta_low", "delta_high"))
        excl = int(getattr(r, "excluded_concepts", 0) or 0) if pd.notna(getattr(r, "excluded_concepts", 0)) else 0
        score = (f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" if math.isfinite(lo) and math.isfinite(hi) else f"{d:+.3f}") \
            if math.isfinite(d) else "n/a"
        score += f" -{excl}" if excl else ""
        sa = f"{_num(r.sa_cosine)} ± {_num(r.sem_cosine)}" if _finite(r.sa_cosine) else "n/a"
        ci = f"[{_num(r.ci_low)}, {_num(r.ci_high)}]" if _finite(r.ci_low) and _finite(r.ci_high) else "n/a"
        lines.append(
            f"{r.model:<24} {r.dataset:<20} {score:<28} {sa}    {ci}  {_num(chance)}   {_num(r.sa_euclidean)}   {r.tier}"
            + (f" ({paper})" if paper != r.tier else "")
        )
    if "excluded_concepts" in table and (pd.to_numeric(table["excluded_concepts"], errors="coerce").fillna(0) > 0).any():
        lines.append("(-n: n artefact concepts (identical strings, degenerate vectors) left out of SA − chance)")
    return "\n".join(lines)


def run_benchmark(
    models: Sequence[str] | None = None,
    datasets: Sequence[str | os.PathLike | WordDataset] | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    thresholds: TierThresholds = DEFAULT_TIERS,
    cache: EmbeddingCache | None = None,
    out_dir: str | os.PathLike | None = "results",
    max_concepts: int | None = None,
    force: bool = False,
    progress: bool | None = None,
    on_job: Callable[[str, str, str, str], None] | None = None,
) -> GridResult:
    """Score every model's SA on every dataset: ``run_grid(tasks=["sa"], backend="serial")``.

    Defaults: every offline registry model whose packages are installed, every
    bundled dataset.  Each job is written to ``out_dir/runs/`` as soon as it
    finishes, so an interrupted run resumes where it stopped (``force=True``
    recomputes).  A failing job is recorded in ``failures`` and the rest of
    the grid still runs.  A preset name in ``models`` (``"paper"``) expands to
    its models; those that need hub weights or an API key this machine lacks
    are listed in ``skipped`` with the reason.
    """
    params = {"sa": {"n_boot": n_boot, "seed": seed, "thresholds": thresholds}}
    return run_grid(models, datasets, ["sa"], languages=languages, max_concepts=max_concepts, params=params, backend="serial",
                    cache=cache, out_dir=out_dir, force=force, progress=progress, on_job=on_job)


#: the old name of the benchmark's result: the one grid engine's :class:`GridResult`
BenchmarkResult = GridResult
