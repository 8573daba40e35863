"""Dataset-level statistics behind a verdict: per-pair SA, permutation test, model-vs-model, the two-stage report.

Each function embeds through the cache (nothing already embedded is encoded
again) and calls the pure functions of :mod:`semanscope_nb.metrics.chance`,
:mod:`~semanscope_nb.metrics.pairs`, :mod:`~semanscope_nb.metrics.compare` and
:mod:`~semanscope_nb.metrics.workflow`.

Layer: runs.  Imports the metrics, models and data layers and :mod:`semanscope_nb.runs.evaluate`.

Example
-------
>>> import semanscope_nb as snb
>>> pairs = snb.language_pairs("edge-cases", "random-null", languages=["en", "de", "zh"], n_boot=200, n_perm=200, cache=False)
>>> sorted(set(pairs.table.verdict))
['chance']
"""

from __future__ import annotations

import os
from typing import Literal, Mapping, Sequence

import pandas as pd

from semanscope_nb.data.words import WordDataset
from semanscope_nb.metrics.affinity import DEFAULT_TIERS, TierThresholds
from semanscope_nb.metrics.chance import PermutationTest
from semanscope_nb.metrics.compare import ModelComparison
from semanscope_nb.metrics.pairs import PairAffinity
from semanscope_nb.metrics.workflow import DiagnosticReport, diagnostic_report
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.embedded import Embedded
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.models.registry import LanguageSupportWarning, unsupported_languages, warn_unsupported  # noqa: F401  (re-exported)
from semanscope_nb.data.datasets import as_dataset
from semanscope_nb.runs.evaluate import dataset_affinity
from semanscope_nb.runs.tasks import run_task

Cache = EmbeddingCache | None | Literal[False]


def language_pairs(
    dataset: WordDataset | str | os.PathLike | Embedded,
    model: str | Encoder | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    cache: Cache = None,
    n_perm: int | None = None,
    alpha: float = 0.05,
    surface_null: bool = True,
) -> PairAffinity:
    """SA of ``model`` for every language pair of ``dataset``, each with its own chance level (the ``pair-sa`` task).

    Each pair is judged on its own artefact-free concepts, with a permutation p-value
    (``n_perm``; None: the ``pair-sa`` task's default, ``n_boot`` for two languages as the verdict's own test,
    else ``max(n_boot, 2000)``) under Benjamini-Hochberg control of the false discovery rate
    (``alpha``) across pairs: :func:`semanscope_nb.metrics.pairs.pair_affinity`.  ``surface_null`` (default True,
    as :func:`~semanscope_nb.runs.evaluate.dataset_affinity`): each pair is also compared with the surface-form
    baseline of its two languages, and one that does not beat it is 'not above surface form'.
    """
    return run_task("pair-sa", dataset, model, languages=languages, cache=cache, progress=False, n_boot=n_boot, seed=seed,
                    confidence=confidence, thresholds=thresholds, n_perm=n_perm, alpha=alpha, surface_null=surface_null)


def dataset_permutation_test(
    dataset: WordDataset | str | os.PathLike | Embedded,
    model: str | Encoder | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_perm: int = 1000,
    seed: int | None = None,
    cache: Cache = None,
) -> PermutationTest:
    """Where ``model``'s cosine SA on ``dataset`` falls among ``n_perm`` shuffled translation pairings (the ``permutation`` task)."""
    return run_task("permutation", dataset, model, languages=languages, cache=cache, progress=False, n_perm=n_perm, seed=seed)


def compare_on_dataset(
    dataset: WordDataset | str | os.PathLike | Sequence[Embedded],
    models: Sequence[str | Encoder] | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_boot: int | None = None,
    n_perm: int = 10000,
    seed: int | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    cache: Cache = None,
) -> ModelComparison:
    """Paired comparison of several models on the same concepts of one dataset (the ``comparison`` task)."""
    return run_task("comparison", dataset, models, languages=languages, cache=cache, progress=False, n_boot=n_boot,
                    n_perm=n_perm, seed=seed, confidence=confidence, alpha=alpha)


def with_rank_bands(table: pd.DataFrame, comparisons: Mapping[str, ModelComparison]) -> pd.DataFrame:
    """A leaderboard table with a ``band`` column: models in one band do not differ significantly on that dataset."""
    out = table.copy()
    bands = {(ds, row.model): row.band for ds, c in comparisons.items() for row in c.scores.itertuples()}
    out["band"] = [bands.get((d, m)) for d, m in zip(out["dataset"], out["model"])]
    return out


def two_stage_report(
    datasets: Sequence[WordDataset | str | os.PathLike],
    model: str | Encoder | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
    cache: Cache = None,
) -> DiagnosticReport:
    """The paper's App. A.6 workflow for one model (``None``: ``settings.default_model``) over several datasets."""
    results = {}
    for d in datasets:
        ds = as_dataset(d, languages=languages)
        results[ds.name] = dataset_affinity(ds, model, n_boot=n_boot, seed=seed, cache=cache, progress=False)
    return diagnostic_report(results)
