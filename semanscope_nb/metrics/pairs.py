"""Semantic Affinity of every language pair, each with its interval and its own chance level.

One aggregate can hide failing pairs: a "good" model may have a dozen language
pairs below their chance level.  :func:`pair_affinity` answers the paper's
diagnostic question "which language pairs fail" directly.

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.chance` and
:mod:`semanscope_nb.metrics.artefacts`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> rng = np.random.default_rng(0); eye = sp.identity(80, format="csr"); e = rng.normal(size=(80, 8))
>>> aw = AlignedWords(("en", "de", "xx"), (e, e + 0.2 * rng.normal(size=e.shape), rng.normal(size=e.shape)),
...                   (eye, eye, eye), tuple(map(str, range(80))))
>>> pairs = pair_affinity(aw, n_boot=200, seed=0)
>>> pairs.table.set_index(["language_a", "language_b"]).verdict.to_dict()
{('en', 'de'): 'great', ('en', 'xx'): 'chance', ('de', 'xx'): 'chance'}
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from semanscope_nb.metrics.affinity import DEFAULT_TIERS, AlignedWords, TierThresholds
from semanscope_nb.metrics.artefacts import subset_languages
from semanscope_nb.metrics.chance import null_aware_bootstrap, null_aware_tier
from semanscope_nb.results import Estimate, Interval, Result


@dataclass(frozen=True)
class PairAffinity(Result):
    """SA per language pair: ``table`` holds one row per pair (SA, interval, chance level, gap, verdict).

    Intervals sit in the table as ``ci_low`` / ``ci_high`` (SA) and ``delta_low`` /
    ``delta_high`` (the gap), with their bootstrap std in ``sem`` / ``delta_sem``;
    :meth:`estimates` gives them as :class:`~semanscope_nb.results.Estimate` values.
    """

    kind = "pair-sa"
    main_score_name = "lowest_sa"

    table: pd.DataFrame
    n_boot: int
    seed: int | None
    confidence: float
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def lowest_sa(self) -> float:
        """The SA of the worst-aligned pair (the main score: a model is as good as its weakest pair)."""
        return float(self.table["sa"].min()) if len(self.table) else math.nan

    def __len__(self) -> int:
        return len(self.table)

    def estimates(self) -> dict[str, Estimate]:
        """``"a-b"`` -> the pair's SA, ``"a-b.delta"`` -> its gap to chance (value, bootstrap std, interval)."""
        out = {}
        nan = math.nan
        for r in self.table.to_dict("records"):
            pair = f"{r['language_a']}-{r['language_b']}"
            out[pair] = Estimate(r["sa"], r.get("sem", nan), Interval(r["ci_low"], r["ci_high"]))
            out[f"{pair}.delta"] = Estimate(r["delta"], r.get("delta_sem", nan), Interval(r["delta_low"], r["delta_high"]))
        return out


def pair_affinity(
    aw: AlignedWords,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    should_stop: Any = None,
) -> PairAffinity:
    """One row per language pair: SA and interval, its chance level, the gap and its interval, the verdict.

    ``should_stop`` (see :mod:`semanscope_nb.models.cancel`) is asked between bootstrap batches.
    """
    rows = []
    for a, b in itertools.combinations(aw.languages, 2):
        s = null_aware_bootstrap(subset_languages(aw, (a, b)), n_boot=n_boot, seed=seed, confidence=confidence,
                                 should_stop=should_stop)
        paper = thresholds.classify(s.sa.value)
        rows.append({
            "language_a": a, "language_b": b,
            "sa": s.sa.value, "ci_low": s.sa.ci[0], "ci_high": s.sa.ci[1],
            "sa_null": s.sa_null.value, "delta": s.delta.value, "delta_low": s.delta.ci[0], "delta_high": s.delta.ci[1],
            "corrected": s.corrected.value, "paper_tier": paper, "verdict": null_aware_tier(paper, s.delta.ci),
            "sem": s.sa.sem, "delta_sem": s.delta.sem,
        })
    return PairAffinity(pd.DataFrame(rows), n_boot=n_boot, seed=seed, confidence=confidence)
