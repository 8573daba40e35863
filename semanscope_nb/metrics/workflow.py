"""The paper's two-stage diagnostic workflow (App. A.6) as one small report object.

Stage 1 reads the cosine SA with its null-aware verdict.  Stage 2 (run when some
dataset is below "great" or indistinguishable from chance) reads the Euclidean
spreads: their absolute magnitude band (> 50 poor normalisation, < 1 possible
collapse, 1-20 healthy), the variance of the Euclidean inter spread across the
datasets given (> 3x inconsistent, < 2x stable), and the cosine inter/intra ratio
(> 1: translations are farther apart than random words, active language
separation).  Artefact notes (surface identity, degenerate vectors) are carried
over, and one recommendation sentence closes the report.

Layer: metrics.  Reads :class:`semanscope_nb.metrics.affinity.SAResult` only.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0); e = rng.normal(size=(60, 8))
>>> good = snb.semantic_affinity({"en": e, "de": e + 0.2 * rng.normal(size=e.shape)}, n_boot=100)
>>> noise = snb.semantic_affinity({"en": e, "de": rng.normal(size=e.shape)}, n_boot=100)
>>> report = diagnostic_report({"DS1": good, "DS2": noise})
>>> report.stage2_needed, list(report.stage1.dataset)
(True, ['DS1', 'DS2'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.results import Estimate, Interval, Result


def magnitude_band(value: float) -> str:
    """The paper's band of a Euclidean spread magnitude.

    >>> magnitude_band(0.1), magnitude_band(7.0), magnitude_band(80.0)
    ('near-zero (< 1): possible collapse', 'moderate (1-20): healthy', 'high (> 50): poor normalisation')
    """
    if not math.isfinite(value):
        return "undefined"
    if value > 50:
        return "high (> 50): poor normalisation"
    if value < 1:
        return "near-zero (< 1): possible collapse"
    if value <= 20:
        return "moderate (1-20): healthy"
    return "elevated (20-50)"


def variance_label(ratio: float) -> str:
    """The paper's reading of the max/min ratio of a spread across datasets."""
    if not math.isfinite(ratio):
        return "undefined (one dataset)"
    if ratio > 3:
        return "high variance (> 3x across datasets): inconsistent embedding quality"
    if ratio < 2:
        return "low variance (< 2x across datasets): stable embeddings"
    return "moderate variance (2-3x across datasets)"


@dataclass(frozen=True)
class DiagnosticReport(Result):
    """Stage 1 verdicts, Stage 2 magnitudes and cross-dataset variance, artefact notes, a recommendation.

    The main score is the lowest cosine SA over the datasets (the weakest one decides the recommendation).
    """

    kind = "diagnostic-report"
    main_score_name = "lowest_sa"

    stage1: pd.DataFrame
    stage2: pd.DataFrame
    stage2_needed: bool
    cross_dataset_ratio: float
    cross_dataset_variance: str
    notes: list[str] = field(default_factory=list)
    recommendation: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def lowest_sa(self) -> float:
        """The lowest cosine SA over the datasets (NaN when none is defined)."""
        sa = self.stage1["sa"].dropna() if "sa" in self.stage1 else ()
        return float(sa.min()) if len(sa) else math.nan

    def estimates(self) -> dict[str, Estimate]:
        """Each dataset's cosine SA with its bootstrap std and interval (Stage 1)."""
        return {r["dataset"]: Estimate(r["sa"], r.get("sem", math.nan), Interval(r["ci_low"], r["ci_high"]))
                for r in self.stage1.to_dict("records")}

    def to_text(self) -> str:
        """Plain text, as `semanscope sa --report` prints it."""
        lines = ["Stage 1 (cosine SA, null-aware verdict)"]
        for r in self.stage1.itertuples():
            lines.append(f"  {r.dataset}: {r.verdict}")
        if self.stage2_needed:
            lines.append("Stage 2 (Euclidean spreads)")
            for r in self.stage2.itertuples():
                lines.append(
                    f"  {r.dataset}: inter {r.inter_euclidean:.3g}, intra {r.intra_euclidean:.3g} -> {r.magnitude_band}; "
                    f"cosine inter/intra {r.cosine_inter_intra:.2f}"
                    + (" (translations farther apart than random words: active language separation)" if r.cosine_inter_intra > 1 else "")
                )
            lines.append(f"  across datasets: Euclidean inter max/min = {self.cross_dataset_ratio:.2f} -> {self.cross_dataset_variance}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"Recommendation: {self.recommendation}")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return "\n\n".join(["```", self.to_text(), "```"])


def diagnostic_report(results: Mapping[str, SAResult]) -> DiagnosticReport:
    """Run the App. A.6 workflow over one model's results on one or more datasets (name -> result)."""
    if not results:
        raise ValueError("diagnostic_report needs at least one result (dataset name -> SAResult)")
    stage1, stage2, notes = [], [], []
    for name, r in results.items():
        tier = getattr(r, "tier", r.thresholds.classify(r.cosine.sa))
        sa_text = f"{r.cosine.sa:.3f}" if math.isfinite(r.cosine.sa) else "n/a"  # an undefined SA is marked, never "nan"
        verdict = getattr(r, "verdict", None) or f"{tier} (SA {sa_text})"
        stage1.append({"dataset": name, "sa": r.cosine.sa, "ci_low": r.cosine.ci[0], "ci_high": r.cosine.ci[1],
                       "tier": tier, "paper_tier": getattr(r, "paper_tier", tier), "verdict": verdict, "sem": r.cosine.sem})
        stage2.append({"dataset": name, "inter_euclidean": r.euclidean.inter, "intra_euclidean": r.euclidean.intra,
                       "magnitude_band": magnitude_band(max(r.euclidean.inter, r.euclidean.intra)),
                       "cosine_inter_intra": r.cosine.inter_intra_ratio})
        notes += [f"{name}: {n}" for n in r.diagnostics.notes]
    s1, s2 = pd.DataFrame(stage1), pd.DataFrame(stage2)
    needed = bool((~s1.tier.isin(["great"])).any())
    inter = s2.inter_euclidean[s2.inter_euclidean > 0]
    ratio = float(inter.max() / inter.min()) if len(inter) > 1 else math.nan
    chance = s1.dataset[s1.tier.isin(["chance", "below chance"])].tolist()
    # a verdict without a tier (too few concepts left, not above the surface-form baseline, too rough to call) does not
    # establish alignment above chance: the recommendation never says "above chance" where the verdict does not
    no_tier = s1[~s1.tier.isin(["great", "good", "non-aligned", "chance", "below chance"])]
    if chance:
        rec = (f"Do not use this model for cross-lingual matching on {', '.join(chance)}: its SA there cannot be told "
               "apart from its own chance level (or lies below it).")
    elif len(no_tier):
        rec = ("No tier on " + ", ".join(f"{d} ({t})" for d, t in zip(no_tier.dataset, no_tier.tier))
               + ": the verdict there does not show alignment above chance; read it before using this model there.")
    elif not needed:
        rec = "Deploy with confidence: every dataset is in the great tier and clearly above chance."
    elif (s2.cosine_inter_intra > 1).any():
        rec = "Alignment is partial: translations sit farther apart than random words somewhere; inspect the PHATE map by language."
    else:
        rec = "Task-dependent suitability: above chance but below the great tier; check the weakest language pairs."
    return DiagnosticReport(s1, s2, needed, ratio, variance_label(ratio), notes, rec)
