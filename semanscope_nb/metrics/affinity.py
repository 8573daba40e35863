"""Semantic Affinity (paper 000, section 3 and Appendix A), vectorised, with bootstrap.

For L languages and concept rows (each cell may hold several alternative words):

* ``D_intra`` = mean over languages of the mean cosine distance ``1 - cos`` over
  all unordered pairs of that language's unique words.
* ``D_inter`` = mean over expanded translation tuples (the Cartesian product of
  a row's alternatives) of the mean cosine distance over the K = L(L-1)/2
  language pairs.
* ``SA = D_intra / (D_intra + D_inter)`` (:func:`affinity_ratio`).  The
  Euclidean variant uses the RMS instead of the mean inside each language and
  inside each tuple (Appendix A.1).

No pair is ever enumerated.  For unit vectors u_1..u_n with weights w,
``sum_{a != b} w_a w_b (1 - u_a.u_b) = W^2 - ||sum w_a u_a||^2`` (W = sum w), and
the mean over a Cartesian product of alternatives of ``u_l . u_m`` is the dot
product of the two languages' mean alternative vectors.  The Euclidean inter
spread needs a square root per tuple, so tuples are enumerated in blocks.

Bootstrap (Appendix A.3): concept rows are resampled with replacement by
:func:`scipy.stats.bootstrap` (vectorised, ``batch`` bounds memory).  A resample
is a vector of row counts c.  A drawn row brings all its expanded tuples into the
inter mean (weight c_r) and its words into the intra mean: word k gets weight
``sum_r c_r A[r,k] / (rows containing k)``, so with c = 1 every unique word has
weight 1 and the resample statistic equals the point estimate.  The intra mean
for weights w is the weighted mean over pairs of *distinct* words,
``sum_{a != b} w_a w_b d_ab / sum_{a != b} w_a w_b`` -- copies of one word are not
paired with themselves, so duplicates do not drag the spread towards zero.

Numbers are right or refused:

* Magnitudes: unit vectors come from each row divided by a power of two near its
  largest coordinate, and Euclidean sums from the vectors divided by one global
  power of two (both exact), so vectors scaled by 1e160 or 1e-200 give the
  same SA and CI as the rescaled vectors (no square of a raw coordinate).
* Collapse: a space whose largest pairwise distance is below 1e-6 (App. A.6)
  is flagged ``diagnostics.collapsed`` with a note; an SA whose distances are
  all zero to rounding (``D_intra + D_inter`` below 1e-12, e.g. identical
  vectors) is undefined and reported as NaN with a note, never a crash.
* Intervals lie in [0, 1] and contain the point estimate, or
  ``DistanceScores.note`` (also in ``diagnostics.notes``) says why not.
  ``method="BCa"`` runs scipy's BCa with the vectorised statistic (its
  jackknife leaves one concept row out).
* A row whose ``|`` alternatives expand to more than
  :data:`MAX_TUPLES_PER_ROW` translation tuples (the Cartesian product the
  Euclidean inter spread enumerates) is refused before any work, naming the
  concept and the count (``max_tuples_per_row`` overrides the limit).

The verdict (:attr:`SAResult.tier`, :attr:`SAResult.verdict`) -- exclusion can only lower it:

1. The concepts that fake alignment (identical strings after the surface
   normalisation of :mod:`~semanscope_nb.metrics.artefacts`, words the tokenizer
   maps to unknown tokens only, distinct words sharing one vector) are excluded.
   No concept left: no tier, and the verdict says so.  Fewer than
   :data:`MIN_JUDGED_SHARE` of the concepts left: 'insufficient', no tier.
2. "Above chance" is decided on the concepts left (the artefact-free scores,
   :attr:`SAResult.verdict_scores`): the interval of SA minus its chance level
   lies above 0, the seeded permutation test of those concepts
   (:attr:`SAResult.permutation`, ``n_perm = n_boot``, the bootstrap's seed) gives a
   one-sided p below ``(1 - confidence) / 2`` (the bootstrap alone is liberal;
   :func:`~semanscope_nb.metrics.chance.above_chance_gate`), *and* the
   chance-corrected score reaches :data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`
   (else 'chance'; 'below chance' when the interval lies below 0).
3. With a surface-form null (:attr:`SAResult.surface`, on by default in
   ``dataset_affinity``), a model that does not beat the character n-gram TF-IDF
   baseline on the same concepts is 'not above surface form'.
4. Otherwise the tier is the *lower* of the paper's tier of the SA on all concepts
   and on the concepts left; when they differ the verdict names both ("good on
   all concepts; leaving out the 126 degenerate-vector concepts would give great").

Every verdict statistic comes from one pass over the same multinomial resamples
(:func:`~semanscope_nb.metrics.chance.verdict_bootstrap`): the SA, its chance level, gap
and corrected score on all concepts, the same on the artefact-free concepts -- a left-out
concept weighs 0 in the full set's counts, it is not resampled a second time
(:class:`~semanscope_nb.metrics.spreads.RowSubset` states the rule) -- and the surface-form
baseline on the same counts of the concepts it is compared on.

:attr:`SAResult.verdict_scores` (a :class:`~semanscope_nb.metrics.chance.NullAwareScores`:
``sa``, ``sa_null``, ``delta``, ``corrected``) is the one quantity comparisons,
pair maps, legends and leaderboards read: the artefact-free, chance-corrected
gap.  It is None when there is none (an undefined SA, or no concept left).

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> en = rng.normal(size=(50, 16)); zh = en + 0.3 * rng.normal(size=(50, 16))
>>> r = snb.semantic_affinity({"en": en, "zh": zh}, n_boot=200, seed=0)
>>> r.tier, round(r.cosine.sa, 3) > 0.6
('great', True)
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.errors import ArgumentError, DatasetError, EmbeddingError
from semanscope_nb.metrics.artefacts import (
    find_artefacts,
    language_centred,
    language_centred_cosines,
    ZeroVectors,
    subset_rows,
    zero_vectors,
)
from semanscope_nb.models.cancel import check_stop
from semanscope_nb.metrics.chance import (
    BELOW_CHANCE_TIER,
    CHANCE_TIER,
    INSUFFICIENT_TIER,
    MIN_CORRECTED,
    SURFACE_TIER,
    UNCONFIRMED_BY_PERMUTATION,
    NullAwareScores,
    PermutationTest,
    SurfaceComparison,
    above_chance_gate,
    check_count,
    euclidean_chance_by_permutation,
    is_unit_norm,
    null_aware_tier,
    tier_flip_rate,
    percentile_intervals,
    permutation_test,
    straddle_note,
    verdict_bootstrap,
)
from semanscope_nb.metrics.degenerate import (
    MIN_BOOT_CONCEPTS,
    MIN_CONCEPTS,
    MIN_VERDICT_BOOT,
    UNDETERMINED_TIER,
    require_concepts,
    rough_interval_note,
    too_few_to_test,
)
from semanscope_nb.metrics.spreads import (  # noqa: F401  (AlignedWords, Spreads, rows_to_counts and the SA formula are re-exported)
    AlignedWords,
    RowSubset,
    check_vectors,
    row_chunks,
    rows_to_counts,
    Spreads,
    affinity_ratio,
    beside,
    block_product_workers,
    drop_side_job,
    on_small_space_blas,
)
from semanscope_nb.metrics.options import check_confidence, check_n_boot, check_seed, is_whole
from semanscope_nb.metrics.ties import reaches
from semanscope_nb.metrics.row_order import canonical_rows
from semanscope_nb.provenance import json_ready

TIER_LABELS = ("great", "good", "non-aligned")
_TIER_RANK = {"great": 2, "good": 1, "non-aligned": 0, "undefined": -1}
MAX_TUPLES_PER_ROW = 100_000
"""Largest number of translation tuples one concept row may expand to (product of its alternatives per language).

The Euclidean inter spread enumerates every tuple (about 0.1-0.3 s per 100,000
tuples); the paper's own files stay below 130.  Pass ``max_tuples_per_row`` to
override it (None: no limit).
"""
MIN_JUDGED_SHARE = 0.5
"""The least share of concepts that must be left once artefacts are excluded for a verdict to give a tier.

The concepts left are chosen by the model's own failures (the words its tokenizer
knows, the strings that differ), so below half of the dataset the score speaks for
a minority the model picked, not for the dataset: an English-only model keeps the
Chinese words it can spell, and those are the loanwords and Latin-script ones.  Half
is the point where the judged concepts are still the majority of the list a user
chose; below it the verdict is 'insufficient' (no tier), and with none left it
says so and gives no tier either (it never falls back to all concepts).
"""
COLLAPSE_DISTANCE = 1e-6  # paper App. A.6: max pairwise embedding distance below this = collapsed
ROUNDING_FLOOR = 1e-12  # D_intra + D_inter below this (cosine; Euclidean in units of the largest coordinate) = zero
BOOT_METHODS = {"percentile": "percentile", "basic": "basic", "bca": "BCa"}


@dataclass(frozen=True)
class TierThresholds:
    """SA tier cut-offs: ``sa >= great`` -> great, ``sa >= good`` -> good, else non-aligned.

    "``>=``" is the near-tie rule of :mod:`~semanscope_nb.metrics.ties` for a fixed
    threshold (:func:`~semanscope_nb.metrics.ties.reaches`): an SA within
    :data:`~semanscope_nb.metrics.ties.THRESHOLD_TOLERANCE` below a cut-off is tied
    with it and reaches it, so an SA exactly on a boundary gets one tier on every path
    (the pair matrix, the verdict, the legend), whatever its last bits.

    >>> TierThresholds().classify(0.55), TierThresholds().classify(0.6 - 1e-16), TierThresholds().classify(0.59)
    ('good', 'great', 'good')
    """

    great: float = 0.60
    good: float = 0.50

    def __post_init__(self) -> None:
        for name in ("great", "good"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ValueError(f"TierThresholds.{name} must be a number in [0, 1], got {value!r}")
        if self.great < self.good:
            raise ValueError(f"TierThresholds: great ({self.great}) must be >= good ({self.good})")

    def classify(self, sa: float) -> str:
        """The tier label of one SA value ('great', 'good' or 'non-aligned')."""
        if not math.isfinite(sa):
            return "undefined"
        return "great" if reaches(sa, self.great) else "good" if reaches(sa, self.good) else "non-aligned"

    def verdict_tier(self, sa: float, sa_judged: float) -> str:
        """The paper tier a verdict gives once it is above chance: the *lower* of the tiers of the SA on all concepts
        (``sa``) and on the concepts left once artefacts are excluded (``sa_judged``), so exclusion can only lower it.

        The one rule for :attr:`SAResult.tier`, the pair matrix's verdict and a one-dataset model mean.

        >>> TierThresholds().verdict_tier(0.64, 0.57), TierThresholds().verdict_tier(0.55, 0.7)
        ('good', 'good')
        """
        return min((self.classify(sa), self.classify(sa_judged)), key=_TIER_RANK.__getitem__)

    @classmethod
    def of(cls, value: Any) -> "TierThresholds":
        """Thresholds from themselves, a ``{"great", "good"}`` mapping (a saved result's, a JSON ``--param``) or a
        ``(great, good)`` pair; anything else is a ValueError naming the forms.

        >>> TierThresholds.of({"great": 0.7, "good": 0.5}) == TierThresholds.of((0.7, 0.5)) == TierThresholds(0.7, 0.5)
        True
        """
        if isinstance(value, TierThresholds):
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"great", "good"})
            if unknown:
                raise ValueError(f"thresholds: unknown key(s) {unknown}; use 'great' and 'good'")
            return cls(**value)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(great=value[0], good=value[1])
        raise ValueError(f"thresholds must be a TierThresholds, a {{'great', 'good'}} dict or a (great, good) pair, got {value!r}")


DEFAULT_TIERS = TierThresholds()


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DistanceScores:
    """SA and its parts under one distance (cosine or Euclidean); a part of :class:`SAResult`, not a result itself."""

    sa: float
    intra: float
    inter: float
    sem: float  # std of the bootstrap distribution (the paper's "+-")
    ci: Interval
    boot_mean: float
    note: str = ""  # why the SA is undefined, or why the interval is not in [0, 1] / misses the point estimate

    def __post_init__(self) -> None:
        object.__setattr__(self, "ci", Interval.of(self.ci))

    @property
    def inter_intra_ratio(self) -> float:
        """D_inter / D_intra: > 1 means translations are farther apart than random words."""
        return self.inter / self.intra if self.intra else math.inf

    @property
    def estimate(self) -> Estimate:
        """The SA with its bootstrap standard error and interval."""
        return Estimate(self.sa, self.sem, self.ci)


@dataclass(frozen=True)
class Diagnostics:
    """Appendix A.6 / C.5 checks of one embedding space."""

    collapsed: bool  # max pairwise Euclidean distance < 1e-6
    max_distance_from_centre: float
    mean_norm: dict[str, float]
    zero_vectors: dict[str, int]
    dropped_concepts: list[str]
    magnitude_band: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SAResult(Result):
    """Semantic Affinity of one embedding space on one set of concepts."""

    kind = "sa"
    main_score_name = "sa_cosine"

    cosine: DistanceScores
    euclidean: DistanceScores
    thresholds: TierThresholds
    languages: tuple[str, ...]
    n_concepts: int
    n_tuples: int
    n_words: dict[str, int]
    n_boot: int
    seed: int
    confidence: float
    concept_labels: list[str]
    concept_inter_cosine: np.ndarray
    concept_inter_euclidean: np.ndarray
    diagnostics: Diagnostics
    provenance: dict[str, Any] = field(default_factory=dict)
    concept_groups: list[str | None] | None = None
    #: the cosine SA beside its model- and dataset-specific chance level (None when undefined)
    chance: NullAwareScores | None = None
    #: the same with concepts that fake alignment left out (identical strings, degenerate vectors)
    chance_excluding: NullAwareScores | None = None
    #: reason -> number of concepts left out of ``chance_excluding``
    excluded_concepts: dict[str, int] = field(default_factory=dict)
    #: the cosine SA after removing each language's mean vector (a diagnostic of language offsets)
    language_centred_sa: float = math.nan
    #: the model against the surface-form baseline (character n-gram TF-IDF) on the judged concepts, when computed
    surface: SurfaceComparison | None = None
    #: the permutation test of the judged concepts (run when the gap's interval lies above 0; None otherwise)
    permutation: PermutationTest | None = None

    @property
    def sa_cosine(self) -> float:
        """The cosine SA (paper 000's headline number, the main score)."""
        return self.cosine.sa

    def estimates(self) -> dict[str, Estimate]:
        """SA under both distances, then the chance level, gap and corrected score (all concepts, and without artefacts)."""
        out = {"sa_cosine": self.cosine.estimate, "sa_euclidean": self.euclidean.estimate}
        for prefix, scores in (("chance", self.chance), ("chance_excluding", self.chance_excluding)):
            if scores is not None:
                out.update({f"{prefix}.{k}": e for k, e in scores.estimates().items()})
        return out

    @property
    def paper_tier(self) -> str:
        """The paper's tier of the cosine SA under this result's thresholds (no chance correction)."""
        return self.thresholds.classify(self.cosine.sa)

    @property
    def verdict_scores(self) -> NullAwareScores | None:
        """The one quantity verdicts, comparisons and maps read: the artefact-free scores (``delta``: SA minus chance).

        The scores on the concepts left once artefacts are excluded, or on all
        concepts when none is an artefact.  None when there is no such quantity: the
        SA is undefined, or no concept is left once the artefacts are excluded
        (then :attr:`tier` is 'insufficient').  With fewer than
        :data:`MIN_JUDGED_SHARE` of the concepts left the scores are still given
        (on that minority) but :attr:`tier` is 'insufficient'.
        """
        if self.excluded_concepts and self.chance_excluding is None:
            return None  # artefacts were found and nothing (or too little to score) is left: never fall back to all concepts
        return self.chance_excluding if self.chance_excluding is not None else self.chance

    @property
    def judged_concepts(self) -> int:
        """How many concepts the verdict rests on (all of them when none was excluded)."""
        return self.n_concepts - sum(self.excluded_concepts.values())

    @property
    def verdict_basis(self) -> str:
        """Which concepts :attr:`verdict_scores` are computed on, in words (legends and tables label their numbers with it)."""
        if not self.excluded_concepts:
            return f"all {self.n_concepts} concepts"
        left_out = " and ".join(f"{n} {reason}" for reason, n in self.excluded_concepts.items())
        return f"{self.judged_concepts} of {self.n_concepts} concepts, without {left_out}"

    @property
    def judged_share(self) -> float:
        """The share of the concepts the verdict rests on."""
        return self.judged_concepts / self.n_concepts if self.n_concepts else math.nan

    @property
    def artefact_free_paper_tier(self) -> str:
        """The paper's tier of the SA on the concepts left once artefacts are excluded (``paper_tier`` when none is)."""
        v = self.verdict_scores
        return self.thresholds.classify(v.sa.value) if v is not None else "undefined"

    def _decision(self) -> tuple[str, str]:
        """(tier, why): the rule of the module docstring, in one place for :attr:`tier` and :attr:`verdict`."""
        if self.chance is None:
            return self.paper_tier, "undefined"
        v = self.verdict_scores
        if self.excluded_concepts:
            if self.judged_concepts <= 0:
                return INSUFFICIENT_TIER, "none-left"
            if v is None:
                return INSUFFICIENT_TIER, "unscorable"
            if self.judged_concepts < MIN_JUDGED_SHARE * self.n_concepts:
                return INSUFFICIENT_TIER, "minority"
        assert v is not None
        if self.n_boot < MIN_VERDICT_BOOT:  # no interval, or one too rough to call (metrics.degenerate)
            return UNDETERMINED_TIER, "rough"
        if self._too_few_to_test():  # no re-pairing test could reach the verdict's level (metrics.degenerate)
            return UNDETERMINED_TIER, "few"
        p_value = self.permutation.p_value if self.permutation is not None else None
        gate = above_chance_gate(v.delta.ci, p_value=p_value, confidence=self.confidence)
        if gate in (CHANCE_TIER, BELOW_CHANCE_TIER):
            return gate, gate
        if gate == UNCONFIRMED_BY_PERMUTATION:
            return CHANCE_TIER, "unconfirmed"
        gate = null_aware_tier("", v.delta.ci)
        if gate == "" and null_aware_tier("", v.delta.ci, corrected=v.corrected.value) == CHANCE_TIER:
            return CHANCE_TIER, "negligible"
        if self.surface is not None and not self.surface.above:
            return SURFACE_TIER, "surface"
        return self.thresholds.verdict_tier(self.cosine.sa, v.sa.value), "tier"

    @property
    def tier(self) -> str:
        """The verdict tier: 'chance', 'below chance', 'insufficient', 'not above surface form', or a paper tier.

        The rule is in the module docstring: above-chance is decided on the
        artefact-free concepts (with the effect-size floor
        :data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`), and the tier is the
        lower of the paper's tiers with and without the artefacts, so excluding
        concepts can lower a verdict but never raise it.  The paper's label of the
        SA on all concepts stays available as :attr:`paper_tier`.
        """
        return self._decision()[0]

    def _too_few_to_test(self) -> str | None:
        return too_few_to_test(self.judged_concepts, len(self.languages), confidence=self.confidence)

    @property
    def verdict(self) -> str:
        """One sentence a careful reader can sign: tier, SA with interval, chance level, gap, and caveats."""
        if self.chance is None:
            sa = f"{self.cosine.sa:.3f}" if math.isfinite(self.cosine.sa) else "n/a"  # marked, never printed "nan"
            return f"{self.paper_tier} (SA {sa}; no chance level: the SA is undefined)"
        tier, why = self._decision()
        left_out = " and ".join(f"{n} {reason}" for reason, n in self.excluded_concepts.items())
        n, judged = self.n_concepts, self.judged_concepts
        if why == "none-left":
            return (f"no tier: every one of the {n} concepts is an artefact ({left_out}), so nothing is left to judge "
                    f"(SA with them: {self.cosine.sa:.3f}, which any model, random vectors included, can reach)")
        v = self.verdict_scores
        if why == "unscorable":
            return (f"insufficient: the {judged} of {n} concepts left once the {left_out} concepts are excluded "
                    f"cannot be scored (a language keeps fewer than 2 distinct words); no tier "
                    f"(SA on all concepts: {self.cosine.sa:.3f})")
        assert v is not None
        pct = f"{self.confidence:.0%}"
        scores = (f"SA {v.sa.value:.3f} [{v.sa.ci[0]:.3f}, {v.sa.ci[1]:.3f}], chance level {v.sa_null.value:.3f}, "
                  f"gap {v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}] ({pct})")
        if why == "minority":
            return (f"insufficient: only {judged} of {n} concepts ({judged / n:.0%}) are left once the {left_out} "
                    f"concepts are excluded, fewer than the {MIN_JUDGED_SHARE:.0%} a verdict needs, so no tier: the "
                    f"concepts left are the ones the model did not collapse or copy (on them: {scores}; "
                    f"SA on all concepts: {self.cosine.sa:.3f}, {self.paper_tier} by the paper's thresholds)")
        what = {
            CHANCE_TIER: "indistinguishable from chance",
            BELOW_CHANCE_TIER: "below chance",
            "negligible": "not meaningfully above chance",
            "unconfirmed": "indistinguishable from chance",
            "surface": "above chance but not above surface form",
        }.get(why, tier)
        text = f"{what}: {scores}"
        if why in ("rough", "few"):
            note = rough_interval_note(self.n_boot) if why == "rough" else self._too_few_to_test()
            text = f"{note} (paper's tier: {self.paper_tier}); {scores}"
        if why == "negligible":
            text += (f"; the chance-corrected score {v.corrected.value:.4f} is below the minimum {MIN_CORRECTED:g} a "
                     "tier needs: the gap is real but too small to matter")
        if why == "unconfirmed" and self.permutation is not None:
            pt = self.permutation
            text += (f"; the bootstrap interval lies above 0 but the permutation test does not confirm it (one-sided "
                     f"p = {pt.p_value:.3g}, not below {(1 - self.confidence) / 2:g}; {pt.n_perm} "
                     f"{'re-pairings, exact' if pt.exact else 'seeded re-pairings'}): on these concepts the bootstrap "
                     "is liberal")
        if why == "surface" and self.surface is not None:
            text += f"; {self.surface.sentence()}"
        if self.chance_excluding is not None:
            text += f"; judged without the {left_out} concepts (SA with them: {self.cosine.sa:.3f})"
            if why == "tier" and self.paper_tier != self.artefact_free_paper_tier:
                if tier == self.paper_tier:
                    text += (f"; {self.paper_tier} on all concepts; leaving out the {left_out} concepts would give "
                             f"{self.artefact_free_paper_tier}, which exclusion may not earn")
                else:
                    text += (f"; {self.paper_tier} on all concepts only thanks to the {left_out} concepts: "
                             f"{self.artefact_free_paper_tier} without them")
        if why == "tier" and self.surface is not None:
            text += f"; {self.surface.sentence()}"
        straddle = straddle_note(v.sa.ci, asdict(self.thresholds)) if why == "tier" else None
        if straddle:
            text += f"; {straddle}"
        return text

    def bootstrap_sa_values(self) -> dict[str, list[float]]:
        """The bootstrap SA values the tier flip rates were counted on (``"all"`` concepts, ``"judged"`` ones), kept in
        memory only (a result read from a file has none: ``{}``); :meth:`with_bootstrap_sa_values` puts them back, so
        a store that keeps them beside :meth:`to_dict` gives :meth:`with_thresholds` what a fresh result gives.

        >>> import numpy as np, semanscope_nb as snb
        >>> e = np.random.default_rng(0).normal(size=(30, 8))
        >>> r = snb.semantic_affinity({"en": e, "de": e + 0.5}, n_boot=50, seed=0)
        >>> len(r.bootstrap_sa_values()["all"]), SAResult.from_dict(r.to_dict()).bootstrap_sa_values()
        (50, {})
        """
        samples = getattr(self, "_flip_samples", (None, None))
        return {k: np.asarray(v, dtype=np.float64).tolist() for k, v in zip(("all", "judged"), samples) if v is not None}

    def with_bootstrap_sa_values(self, values: Mapping[str, Sequence[float]]) -> "SAResult":
        """This result holding ``values`` (from :meth:`bootstrap_sa_values`) as its bootstrap SA values (in memory)."""
        out = replace(self)
        samples = tuple(np.asarray(values[k], dtype=np.float64) if values.get(k) is not None else None
                        for k in ("all", "judged"))
        object.__setattr__(out, "_flip_samples", samples)
        return out

    def with_thresholds(self, thresholds: TierThresholds) -> "SAResult":
        """The same scores classified with other tier thresholds (nothing is recomputed).

        Tier, paper tier and verdict are then those of the same scores computed with ``thresholds``, and so is
        ``provenance["parameters"]["thresholds"]``.  The one number that needs the bootstrap resamples, the share of
        them whose paper tier differs from the point's (``tier_flip_rate``, and the note quoting it), is recounted
        on the resamples the result was computed from (kept in memory); a result read back from a file has none, so
        there it becomes NaN and the note loses that clause rather than state the share under the old thresholds.

        >>> import numpy as np, semanscope_nb as snb
        >>> e = np.random.default_rng(0).normal(size=(30, 8))
        >>> r = snb.semantic_affinity({"en": e, "de": e + 0.5}, n_boot=200, seed=0)
        >>> T = TierThresholds(great=0.9)
        >>> r.with_thresholds(T).chance.tier_flip_rate == snb.semantic_affinity({"en": e, "de": e + 0.5}, n_boot=200,
        ...                                                                     seed=0, thresholds=T).chance.tier_flip_rate
        True
        >>> back = SAResult.from_dict(r.to_dict()).with_thresholds(T)
        >>> back.provenance["parameters"]["thresholds"]["great"], back.chance.tier_flip_rate
        (0.9, nan)
        """
        if thresholds == self.thresholds:
            return self
        params = self.provenance.get("parameters")
        provenance = ({**self.provenance, "parameters": {**params, "thresholds": asdict(thresholds)}}
                      if isinstance(params, Mapping) and "thresholds" in params else self.provenance)

        samples = getattr(self, "_flip_samples", (None, None))

        def unflipped(scores: NullAwareScores | None, values: np.ndarray | None) -> NullAwareScores | None:
            if scores is None:
                return None
            flip = tier_flip_rate(thresholds, scores.sa.value, values) if values is not None else math.nan
            return replace(scores, tier_flip_rate=flip)

        chance = unflipped(self.chance, samples[0])
        chance_excluding = unflipped(self.chance_excluding, samples[1])
        basis = chance_excluding or chance
        flip = basis.tier_flip_rate if basis is not None else math.nan

        def without_flip(note: str) -> str:
            return _FLIP_CLAUSE.sub(_flip_clause(flip), note)

        out = replace(
            self, thresholds=thresholds, provenance=provenance, chance=chance, chance_excluding=chance_excluding,
            cosine=self.cosine if without_flip(self.cosine.note) == self.cosine.note  # the same object when unchanged
            else replace(self.cosine, note=without_flip(self.cosine.note)),
            diagnostics=self.diagnostics if [without_flip(n) for n in self.diagnostics.notes] == self.diagnostics.notes
            else replace(self.diagnostics, notes=[without_flip(n) for n in self.diagnostics.notes]),
        )
        object.__setattr__(out, "_flip_samples", samples)
        return out

    def concepts_frame(self) -> pd.DataFrame:
        """Per-concept inter distances, worst-aligned (largest cosine distance) first."""
        df = pd.DataFrame(
            {
                "concept": self.concept_labels,
                "group": self.concept_groups if self.concept_groups is not None else [None] * self.n_concepts,
                "inter_cosine": self.concept_inter_cosine,
                "inter_euclidean": self.concept_inter_euclidean,
            }
        )
        return df.sort_values("inter_cosine", ascending=False, kind="stable").reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """The flat numbers a leaderboard row shows."""
        return {
            "sa_cosine": self.cosine.sa,
            "sem_cosine": self.cosine.sem,
            "ci_low": self.cosine.ci[0],
            "ci_high": self.cosine.ci[1],
            "sa_euclidean": self.euclidean.sa,
            "sem_euclidean": self.euclidean.sem,
            "tier": self.tier,
            "paper_tier": self.paper_tier,
            **self._chance_summary(),
            "intra_cosine": self.cosine.intra,
            "inter_cosine": self.cosine.inter,
            "intra_euclidean": self.euclidean.intra,
            "inter_euclidean": self.euclidean.inter,
            "n_concepts": self.n_concepts,
            "collapsed": self.diagnostics.collapsed,
        }

    def _chance_summary(self) -> dict[str, Any]:
        v = self.verdict_scores
        nan = math.nan
        return {
            "sa_null": v.sa_null.value if v else nan,
            "delta": v.delta.value if v else nan,
            "delta_low": v.delta.ci[0] if v else nan,
            "delta_high": v.delta.ci[1] if v else nan,
            "corrected": v.corrected.value if v else nan,
            "sa_verdict_basis": v.sa.value if v else nan,
            "excluded_concepts": sum(self.excluded_concepts.values()),
            "judged_concepts": self.judged_concepts,
            "surface_difference": self.surface.difference.value if self.surface is not None else nan,
            "verdict": self.verdict,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (round-trips through :meth:`from_dict`)."""
        d = {
            "cosine": asdict(self.cosine),
            "euclidean": asdict(self.euclidean),
            "thresholds": asdict(self.thresholds),
            "tier": self.tier,
            "languages": list(self.languages),
            "n_concepts": self.n_concepts,
            "n_tuples": self.n_tuples,
            "n_words": self.n_words,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "confidence": self.confidence,
            "concept_labels": list(self.concept_labels),
            "concept_groups": self.concept_groups,
            "concept_inter_cosine": self.concept_inter_cosine.tolist(),
            "concept_inter_euclidean": self.concept_inter_euclidean.tolist(),
            "diagnostics": asdict(self.diagnostics),
            "provenance": self.provenance,
            "paper_tier": self.paper_tier,
            "verdict": self.verdict,
            "chance": self.chance.to_dict() if self.chance is not None else None,
            "chance_excluding": self.chance_excluding.to_dict() if self.chance_excluding is not None else None,
            "excluded_concepts": dict(self.excluded_concepts),
            "language_centred_sa": self.language_centred_sa,
            "surface": self.surface.to_dict() if self.surface is not None else None,
            "permutation": self.permutation.to_dict() if self.permutation is not None else None,
        }
        return json_ready(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SAResult":
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        def scores(x: Mapping[str, Any]) -> DistanceScores:
            return DistanceScores(
                sa=num(x["sa"]), intra=num(x["intra"]), inter=num(x["inter"]), sem=num(x["sem"]),
                ci=Interval.of(x["ci"]), boot_mean=num(x["boot_mean"]), note=str(x.get("note") or ""),
            )

        return cls(
            cosine=scores(d["cosine"]),
            euclidean=scores(d["euclidean"]),
            thresholds=TierThresholds(**d["thresholds"]),
            languages=tuple(d["languages"]),
            n_concepts=d["n_concepts"],
            n_tuples=d["n_tuples"],
            n_words=dict(d["n_words"]),
            n_boot=d["n_boot"],
            seed=d["seed"],
            confidence=d["confidence"],
            concept_labels=list(d["concept_labels"]),
            concept_inter_cosine=np.array([num(v) for v in d["concept_inter_cosine"]]),
            concept_inter_euclidean=np.array([num(v) for v in d["concept_inter_euclidean"]]),
            diagnostics=Diagnostics(**d["diagnostics"]),
            provenance=dict(d.get("provenance", {})),
            concept_groups=d.get("concept_groups"),
            chance=NullAwareScores.from_dict(d["chance"]) if d.get("chance") else None,
            chance_excluding=NullAwareScores.from_dict(d["chance_excluding"]) if d.get("chance_excluding") else None,
            excluded_concepts=dict(d.get("excluded_concepts") or {}),
            language_centred_sa=num(d.get("language_centred_sa")),
            surface=SurfaceComparison.from_dict(d["surface"]) if d.get("surface") else None,
            permutation=PermutationTest.from_dict(d["permutation"]) if d.get("permutation") else None,
        )

    def to_frame(self) -> pd.DataFrame:
        """One-row DataFrame of :meth:`summary` plus languages and provenance keys."""
        row = {"languages": ",".join(self.languages), **self.summary()}
        for key in ("model", "dataset"):
            if key in self.provenance:
                row[key] = self.provenance[key]
        return pd.DataFrame([row])


# --------------------------------------------------------------------------- public API


def _max_pairwise_distance(spreads: Spreads, aw: AlignedWords) -> float:
    """The largest distance between any two vectors (exact, in blocks; used only for nearly collapsed spaces)."""
    from scipy.spatial.distance import cdist

    allv = np.vstack([spreads.scaled_units(v) for v in aw.vectors])
    best = 0.0
    for a, b in row_chunks(allv.shape[0], 2048):
        best = max(best, float(cdist(allv[a:b], allv).max()))
    return best * spreads.scale


def _diagnose(
    spreads: Spreads,
    aw: AlignedWords,
    zero: dict[str, int],
    dropped: list[str],
    eu_intra: float,
    cos_ci: Interval,
    extra_notes: Sequence[str] = (),
) -> Diagnostics:
    r_max_scaled = 0.0
    for lang in range(len(aw.vectors)):
        r_max_scaled = max(r_max_scaled, float(np.sqrt(spreads.sqn_c[lang].max())))
    r_max = r_max_scaled * spreads.scale
    collapsed = 2 * r_max < COLLAPSE_DISTANCE
    if not collapsed and r_max < COLLAPSE_DISTANCE:  # ambiguous band: compute the diameter exactly
        collapsed = _max_pairwise_distance(spreads, aw) < COLLAPSE_DISTANCE
    mean_norm = {lang: float(n.mean()) for lang, n in zip(aw.languages, spreads.norms)}
    notes = []
    if all(abs(m - 1.0) < 1e-3 for m in mean_norm.values()):
        band = "unit-normalised (Euclidean spreads bounded by 2; magnitude heuristics do not apply)"
    elif eu_intra > 50:
        band = "high (> 50): poor normalisation"
    elif eu_intra < 1:
        band = "near-zero (< 1): possible collapse"
    elif eu_intra <= 20:
        band = "moderate (1-20): healthy"
    else:
        band = "elevated (20-50)"
    if collapsed:
        notes.append(
            f"embeddings collapsed: the largest pairwise distance is below {COLLAPSE_DISTANCE:g} (paper App. A.6 "
            f"check; largest distance from the centre {r_max:.3g}); the SA describes a degenerate space"
        )
    if dropped:
        notes.append(f"{len(dropped)} concept(s) dropped because a word embedded to the zero vector")
    notes.extend(extra_notes)
    return Diagnostics(
        collapsed=bool(collapsed),
        max_distance_from_centre=r_max,
        mean_norm=mean_norm,
        zero_vectors=zero,
        dropped_concepts=dropped,
        magnitude_band=band,
        notes=notes,
    )


def _drop_zero_rows(aw: AlignedWords, found: ZeroVectors) -> tuple[AlignedWords, dict[str, int], list[str]]:
    """(``aw`` without the concepts holding an all-zero vector, zero vectors per language, the dropped labels)."""
    zero, bad_rows = found.counts(aw.languages), found.rows
    if not bad_rows.any():
        return aw, zero, []
    keep = np.flatnonzero(~bad_rows)
    dropped = [aw.labels[r] for r in np.flatnonzero(bad_rows)]
    if keep.size < 2:
        raise EmbeddingError(f"only {keep.size} concept(s) left after dropping zero vectors; need at least 2")
    return subset_rows(aw, ~bad_rows), zero, dropped


def _check_options(
    *,
    n_boot: Any,
    seed: Any,
    confidence: Any,
    thresholds: Any,
    batch: Any,
    method: Any,
    on_zero: Any,
    block: Any = 8192,
    max_tuples_per_row: Any = MAX_TUPLES_PER_ROW,
) -> tuple[int, int, float, str]:
    """Validate the SA options before any work; returns (n_boot, seed, confidence, canonical method)."""
    n_boot, seed, confidence = check_n_boot(n_boot), check_seed(seed), check_confidence(confidence)
    if not isinstance(thresholds, TierThresholds):
        raise ArgumentError(f"thresholds must be a TierThresholds, got {type(thresholds).__name__}")
    if batch is not None and (not is_whole(batch) or batch < 1):
        raise ArgumentError(f"batch must be None or a positive integer (resamples per vectorised call), got {batch!r}")
    if not isinstance(method, str) or method.lower() not in BOOT_METHODS:
        raise ArgumentError(f"method must be 'percentile', 'basic' or 'BCa', got {method!r}")
    if on_zero not in ("error", "drop"):
        raise ArgumentError(f"on_zero must be 'error' or 'drop', got {on_zero!r}")
    if not is_whole(block) or block < 1:
        raise ArgumentError(f"block must be a positive integer (rows read at a time), got {block!r}")
    if max_tuples_per_row is not None and (not is_whole(max_tuples_per_row) or max_tuples_per_row < 1):
        raise ArgumentError(f"max_tuples_per_row must be None or a positive integer, got {max_tuples_per_row!r}")
    return int(n_boot), int(seed), float(confidence), BOOT_METHODS[method.lower()]


def _check_tuple_counts(
    alternatives: np.ndarray, languages: Sequence[str], labels: Sequence[str] | None, max_tuples_per_row: int | None
) -> float:
    """Refuse rows expanding to more than ``max_tuples_per_row`` tuples; ``alternatives`` is (L x R)."""
    tuples = np.asarray(alternatives, dtype=np.float64).prod(axis=0)  # float: exact below 2**53, never wraps
    if max_tuples_per_row is not None:
        bad = np.flatnonzero(tuples > max_tuples_per_row)
        if bad.size:
            r = int(bad[np.argmax(tuples[bad])])
            label = labels[r] if labels is not None else str(r)
            per_lang = " x ".join(str(int(n)) for n in np.asarray(alternatives)[:, r])
            more = f"; {bad.size} rows exceed it" if bad.size > 1 else ""
            raise DatasetError(
                f"concept '{label}' (row {r}) expands to {tuples[r]:,.0f} translation tuples ({per_lang} alternatives "
                f"in {', '.join(languages)}), more than MAX_TUPLES_PER_ROW = {max_tuples_per_row:,}{more}: the "
                "Euclidean inter spread enumerates every tuple of the Cartesian product of a row's '|' alternatives. "
                "Trim the row's alternatives, or pass max_tuples_per_row=None (or a larger limit) to accept the cost."
            )
    return float(tuples.sum())


def check_row_tuples(
    rows: Sequence[Sequence[Sequence[str]]],
    *,
    languages: Sequence[str],
    labels: Sequence[str] | None = None,
    max_tuples_per_row: int | None = MAX_TUPLES_PER_ROW,
) -> float:
    """Refuse concept rows whose ``|`` alternatives expand to too many tuples, before anything is embedded.

    ``rows[r][l]`` holds language l's alternatives of concept r (a dataset's
    rows).  A row expands to the product of its alternative counts (the paper's
    Cartesian product); more than ``max_tuples_per_row`` (default
    :data:`MAX_TUPLES_PER_ROW`) raises :class:`~semanscope_nb.errors.DatasetError`
    naming the concept and the count.  Returns the total number of tuples.

    >>> check_row_tuples([[["water"], ["水", "水分"]], [["fire"], ["火"]]], languages=["en", "zh"])
    3.0
    """
    counts = np.array([[len(cell) for cell in row] for row in rows], dtype=np.float64).reshape(len(rows), len(languages))
    return _check_tuple_counts(counts.T, languages, labels, max_tuples_per_row)


def _sa_or_nan(intra: np.ndarray, inter: np.ndarray, floor: float) -> np.ndarray:
    """SA, or NaN where ``intra + inter`` is zero to rounding (undefined) or a spread is undefined."""
    total = intra + inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > floor, intra / np.where(total > floor, total, 1.0), np.nan)


def _interval(
    dist: np.ndarray, point: float, ci: Interval, method: str, confidence: float, metric: str
) -> tuple[float, float, Interval, list[str]]:
    """(bootstrap mean, std, interval, notes) of one statistic: in [0, 1], containing the point, or a note says why not.

    ``dist``: its bootstrap distribution; ``ci``: the interval ``method`` gave for it.
    """
    notes: list[str] = []
    finite = dist[np.isfinite(dist)]
    B = dist.size
    if finite.size < 2:
        return (math.nan, math.nan, Interval(math.nan, math.nan), [
            f"{metric}: only {finite.size} of {B} bootstrap resamples have a defined SA; no interval"
        ])
    mean, sd = float(finite.mean()), float(np.std(finite, ddof=1))
    lo, hi = float(ci.low), float(ci.high)
    used = method
    if finite.size < B or not (math.isfinite(lo) and math.isfinite(hi)):
        if finite.size < B:
            notes.append(
                f"{metric}: {B - finite.size} of {B} bootstrap resamples have an undefined SA (they drew a single "
                "word in some language, or only identical vectors) and were left out"
            )
        if method == "BCa":
            used = "percentile"
            notes.append(
                f"{metric}: no BCa interval (it needs every resample and every leave-one-concept-out jackknife "
                "value defined); the percentile interval of the defined resamples is shown"
            )
        a = (1.0 - confidence) / 2.0
        q_lo, q_hi = (float(q) for q in np.quantile(finite, [a, 1.0 - a]))
        lo, hi = (2 * point - q_hi, 2 * point - q_lo) if used == "basic" else (q_lo, q_hi)
    if sd == 0.0:  # degenerate (e.g. identical translations): the interval is the point
        lo = hi = float(finite[0])
    if lo < 0.0 or hi > 1.0:
        notes.append(f"{metric}: the {used} interval [{lo:.4g}, {hi:.4g}] left [0, 1], the range of SA; clipped")
        lo, hi = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    if not lo - 1e-12 <= point <= hi + 1e-12:
        notes.append(
            f"{metric}: the {confidence:.0%} {used} interval [{lo:.4g}, {hi:.4g}] does not contain the point "
            f"estimate {point:.4g}: the bootstrap distribution is shifted (few concepts, or a skewed ratio)"
            + ("; method='BCa' corrects for this bias" if method != "BCa" else "")
        )
    return mean, sd, Interval(lo, hi), notes


def sa_percentile_estimate(point: float, dist: np.ndarray, *, confidence: float) -> Estimate:
    """An SA's bootstrap estimate by the rule of :attr:`SAResult.cosine` (percentile interval, ``method="percentile"``).

    The percentile interval of the finite resamples (:func:`~semanscope_nb.metrics.chance.percentile_intervals`),
    clipped to [0, 1], the point itself when they do not vary; the std is over the finite resamples (ddof 1).
    Every table that shows "an SA and its interval" (the pair matrix's ``ci_low`` / ``ci_high``) uses this, so
    the pair of two languages shows the interval :func:`semantic_affinity` of those two languages gives.

    >>> e = sa_percentile_estimate(0.6, np.linspace(0.55, 0.65, 201), confidence=0.9)
    >>> round(e.ci.low, 4), round(e.ci.high, 4), e.value
    (0.555, 0.645, 0.6)
    """
    dist = np.asarray(dist, dtype=np.float64)
    ci = percentile_intervals(dist[None, :], confidence)
    _, sd, interval, _ = _interval(dist, float(point), Interval(float(ci.low[0]), float(ci.high[0])), "percentile",
                                   confidence, "cosine")
    return Estimate(float(point), sd, interval)


def _flip_clause(flip: float) -> str:
    """The small-sample note's clause quoting the tier flip rate ("" when there is none); :data:`_FLIP_CLAUSE` finds it."""
    return f"; the paper's tier flips in {flip:.0%} of bootstrap resamples" if math.isfinite(flip) else ""


_FLIP_CLAUSE = re.compile(r"; the paper's tier flips in [0-9]+% of bootstrap resamples")  # what _flip_clause writes
SMALL_SAMPLE = 50  # fewer concepts than this: intervals are rough (a note says so)
LANGUAGE_CENTRED_AUTO_WORDS = 100_000  # language_centred=None computes the diagnostic up to this many words


def language_centred_diagnostic(aw: AlignedWords, language_centred: bool | None) -> bool:
    """Whether to compute the language-centred SA (``None``: for up to :data:`LANGUAGE_CENTRED_AUTO_WORDS` words)."""
    if language_centred is None:
        return sum(v.shape[0] for v in aw.vectors) <= LANGUAGE_CENTRED_AUTO_WORDS
    return bool(language_centred)


def _language_centred_sa(aw: AlignedWords, *, block: int) -> float:
    sparse = language_centred_cosines(aw)  # sparse words (TF-IDF): the same spreads without dense centred rows
    if sparse is not None:
        return float(_sa_or_nan(np.array([sparse[0]]), np.array([sparse[1]]), ROUNDING_FLOOR)[0])
    centred = language_centred(aw)
    if any(not np.any(v) for v in centred.vectors) or any((~np.any(v, axis=1)).any() for v in centred.vectors):
        return math.nan  # a word at its language's mean has no direction: the diagnostic is undefined
    with np.errstate(all="ignore"):
        point = Spreads.point_cosines(centred.vectors, centred.incidence)  # no second Spreads for one point
        if point is not None:
            return float(_sa_or_nan(np.array([point[0]]), np.array([point[1]]), ROUNDING_FLOOR)[0])
        s = Spreads(centred, block=block, stack_limit=0).spreads(np.ones((1, aw.n_rows)), scaled=True)  # a point: no rows kept
        return float(_sa_or_nan(s["intra_cos"], s["inter_cos"], ROUNDING_FLOOR)[0])


def _artefact_exclusion(
    aw: AlignedWords, *, unknown_words: Mapping[str, Any] | None = None, norms: Sequence[np.ndarray] | None = None,
) -> tuple[dict[str, int], list[str], np.ndarray, bool]:
    """The concepts that fake alignment: how many are left out (by reason), notes, kept rows, whether the rest is scorable.

    Each excluded row is counted once, under the first of its reasons in the order
    identical-string, unknown-token, degenerate-vector.  When nothing (or nothing
    scorable: fewer than 3 concepts, or a language with fewer than 2 distinct words)
    is left, the verdict gives no tier; it never falls back to all concepts.
    """
    keep_all = np.ones(aw.n_rows, dtype=bool)
    art = find_artefacts(aw, unknown_words=unknown_words, norms=norms)  # norms: the Spreads' (no second pass)
    notes = art.notes()
    if not art.excluded_rows.any():
        return {}, notes, keep_all, False
    excluded = {}
    taken = np.zeros(aw.n_rows, dtype=bool)
    for reason, rows in (("identical-string", art.identical_rows), ("unknown-token", art.unknown_rows),
                         ("degenerate-vector", art.degenerate_rows)):
        mine = rows & ~taken
        if mine.any():
            excluded[reason] = int(mine.sum())
        taken |= mine
    keep = ~art.excluded_rows
    if not keep.any():
        notes.append(f"every one of the {aw.n_rows} concepts is an artefact: no verdict (no tier)")
        return excluded, notes, keep, False
    words_left = [int((np.asarray(sp.csr_matrix(inc)[keep].sum(axis=0)).ravel() > 0).sum()) for inc in aw.incidence]
    if keep.sum() < 3 or any(n < 2 for n in words_left):
        notes.append(f"only {int(keep.sum())} concept(s) remain without the artefacts, too few to score: no tier")
        return excluded, notes, keep, False
    return excluded, notes, keep, True


def _matching_surface(surface: AlignedWords, aw: AlignedWords) -> AlignedWords:
    """Check that ``surface`` holds the same concepts (rows and labels) in the same languages as ``aw``."""
    if not isinstance(surface, AlignedWords):
        raise TypeError(f"surface must be the AlignedWords of the surface baseline, got {type(surface).__name__}")
    if tuple(surface.languages) != tuple(aw.languages):
        raise EmbeddingError(f"surface: languages {list(surface.languages)} differ from the model's {list(aw.languages)}")
    if surface.n_rows != aw.n_rows or tuple(surface.labels) != tuple(aw.labels):
        raise EmbeddingError(f"surface: {surface.n_rows} concepts that are not the model's {aw.n_rows} (the same rows are needed)")
    return surface


@on_small_space_blas  # a small space's products run on SMALL_SPACE_BLAS_THREADS (metrics.spreads)
def affinity_of_words(
    aw: AlignedWords,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    batch: int | None = None,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
    on_zero: Literal["error", "drop"] = "error",
    block: int = 8192,
    max_tuples_per_row: int | None = MAX_TUPLES_PER_ROW,
    language_centred: bool | None = None,
    should_stop: Any = None,
    sem: Literal["bootstrap", "delta"] = "bootstrap",
    unknown_words: Mapping[str, Any] | None = None,
    surface: AlignedWords | None = None,
) -> SAResult:
    """SA of aligned word vectors with alternatives (see :class:`AlignedWords`), with its null-aware verdict.

    Beside the SA the result carries its chance level (:attr:`SAResult.chance`,
    see :mod:`semanscope_nb.metrics.chance`) on the same bootstrap resamples, the
    verdict without the concepts that fake alignment (identical strings across
    languages, degenerate vectors; :attr:`SAResult.chance_excluding`) and, when
    ``language_centred`` is True (None: for up to 100,000 words), the SA after
    removing each language's mean vector.

    Every option is checked before any work, and so is the size of each row's
    Cartesian product of alternatives (at most ``max_tuples_per_row``, default
    :data:`MAX_TUPLES_PER_ROW`; None = no limit).  ``n_boot=0``: no bootstrap;
    otherwise at least 2.  ``method``: 'percentile', 'basic' or 'BCa'.
    ``should_stop`` (a callable, see :mod:`semanscope_nb.models.cancel`) is asked
    between bootstrap batches; when it says stop, :class:`~semanscope_nb.errors.Cancelled` is raised.
    ``sem="delta"``: ``.sem`` is the original tool's delta-method ± instead of
    the bootstrap std (:mod:`semanscope_nb.metrics.paper_sem`; not a sampling error).

    ``unknown_words``: language -> the words the model's tokenizer maps to unknown
    tokens only (from :meth:`~semanscope_nb.models.encoders.Encoder.unknown_token_words`);
    their concepts are excluded as 'unknown-token'.  ``surface``: the same concepts
    embedded by the surface-form baseline (character n-gram TF-IDF): the result then
    carries :attr:`SAResult.surface` (:func:`~semanscope_nb.metrics.chance.surface_null`
    on the judged concepts) and a model that does not beat it gets the tier 'not
    above surface form'.  The verdict's rule is in the module docstring.
    """
    if sem not in ("bootstrap", "delta"):
        raise ValueError(f"sem must be 'bootstrap' (the bootstrap std) or 'delta' (the original tool's ±), got {sem!r}")
    n_boot, seed, confidence, method = _check_options(
        n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, batch=batch, method=method,
        on_zero=on_zero, block=block, max_tuples_per_row=max_tuples_per_row,
    )
    _check_aligned(aw, max_tuples_per_row=max_tuples_per_row)
    aw, zero, dropped, surface = _scorable_words(aw, surface, on_zero=on_zero, n_boot=n_boot)
    R = aw.n_rows
    # the language-centred SA reads nothing of the verdict, not even the spreads: beside it when a second thread is
    # free (spreads.beside), started first so that it runs while the spreads are built
    centred_job = (beside(functools.partial(_language_centred_sa, aw, block=block))
                   if language_centred_diagnostic(aw, language_centred) else None)
    try:
        spreads = Spreads(aw, block=block)
    except BaseException:
        drop_side_job(centred_job)  # it ends before the caller's BLAS pin is lifted
        raise
    point = _point_scores(spreads)
    v = _verdict(aw, spreads, point, n_boot=n_boot, seed=seed, confidence=confidence, batch=batch, thresholds=thresholds,
                 unknown_words=unknown_words, surface=surface, should_stop=should_stop)
    boot = _sa_intervals(spreads, point, v.dists, n_boot=n_boot, seed=seed, confidence=confidence, batch=batch,
                         method=method, should_stop=should_stop, percentile_ready=v.chance is not None)
    if v.chance is not None and R < SMALL_SAMPLE:
        flip = (v.chance_excluding or v.chance).tier_flip_rate  # the scores the verdict rests on
        point.notes["cos"].append(
            f"only {R} concepts (fewer than {SMALL_SAMPLE}): intervals are rough; method='BCa' corrects for bias and skew"
            + _flip_clause(flip)
        )
    centred_sa = centred_job.result() if centred_job is not None else math.nan
    permutation = _permutation_gate(aw, spreads, v, n_boot=n_boot, seed=seed, should_stop=should_stop)
    diag = _diagnose(spreads, aw, zero, dropped, point.euc[0], boot["cos"][2],
                     extra_notes=point.notes["cos"] + point.notes["euc"] + v.artefact_notes)
    result = _sa_result(aw, spreads, point, boot, v, diag, thresholds=thresholds, n_boot=n_boot, seed=seed,
                        confidence=confidence, parameters={"n_boot": n_boot, "seed": seed, "confidence": confidence,
                                                           "method": method, "on_zero": on_zero,
                                                           "thresholds": asdict(thresholds)},
                        centred_sa=centred_sa, permutation=permutation)
    if sem == "delta":  # the original tool's error propagation (its own module)
        from semanscope_nb.metrics.paper_sem import with_delta_method_sem

        result = with_delta_method_sem(result, aw)
    # the bootstrap SA values the tier flip rates came from, kept in memory only (not a field: never written), so
    # with_thresholds gives the flip rate the same resamples give under other thresholds
    object.__setattr__(result, "_flip_samples", (v.dists.get("sa"), v.dists_free.get("sa")))
    return result


def _check_aligned(aw: AlignedWords, *, max_tuples_per_row: int | None) -> None:
    """Two or more distinct languages, one incidence row per concept, a word in every row, a vector per word column."""
    if len(aw.languages) < 2:
        raise EmbeddingError(f"need at least two languages, got {list(aw.languages)}")
    if len(set(aw.languages)) != len(aw.languages):
        raise EmbeddingError(f"languages repeated: {list(aw.languages)}")
    for lang, inc, v in zip(aw.languages, aw.incidence, aw.vectors):
        if inc.shape[0] != aw.n_rows:
            raise EmbeddingError(f"language '{lang}' has {inc.shape[0]} rows, expected {aw.n_rows}")
        empty = np.flatnonzero(np.diff(inc.indptr) == 0)
        if empty.size:
            raise EmbeddingError(f"language '{lang}': rows {empty[:5].tolist()} hold no word")
        if getattr(v, "ndim", 0) == 2 and inc.shape[1] != v.shape[0]:
            raise EmbeddingError(f"language '{lang}': the incidence has {inc.shape[1]} word columns but there are {v.shape[0]} vectors")
    _check_tuple_counts(np.stack([np.diff(inc.indptr) for inc in aw.incidence]), aw.languages, aw.labels, max_tuples_per_row)
    check_vectors(aw.languages, aw.vectors, aw.words)


def _scorable_words(aw: AlignedWords, surface: AlignedWords | None, *, on_zero: str, n_boot: int
                    ) -> tuple[AlignedWords, Any, Any, AlignedWords | None]:
    """(words without zero-vector concepts, what was dropped (counts, notes), the surface baseline on the same concepts).

    Enough concepts (and two distinct words per language) for SA, and for its bootstrap, or an error.
    """
    if surface is not None:
        surface = _matching_surface(surface, aw)
    found = zero_vectors(aw, on_zero=on_zero)  # the one rule (metrics.artefacts): raises for on_zero='error'
    aw, zero, dropped = _drop_zero_rows(aw, found)
    if surface is not None and found.rows.any():  # the concepts dropped for a zero vector leave the baseline too
        surface = subset_rows(surface, ~found.rows)
    R = aw.n_rows
    require_concepts(R, minimum=MIN_CONCEPTS, what="semantic_affinity")  # one rule for every statistic (metrics.degenerate)
    for k, (lang, v) in enumerate(zip(aw.languages, aw.vectors)):
        if v.shape[0] < 2:
            word = f" ({aw.words[k][0]!r})" if aw.words else ""
            raise EmbeddingError(
                f"language '{lang}' has only 1 unique word{word} across {R} concepts: its intra spread (the mean "
                "distance over pairs of distinct words) is undefined, so SA is too; it needs at least 2 distinct words"
            )
    if n_boot:
        require_concepts(R, minimum=MIN_BOOT_CONCEPTS, what="semantic_affinity's bootstrap")
    return aw, zero, dropped, surface


@dataclass
class _PointScores:
    """SA of all concepts: the cosine spreads, the Euclidean ones (scaled and in the vectors' units), SA, notes."""

    cos: tuple[float, float]
    euc_scaled: tuple[float, float]
    euc: tuple[float, float]
    sa: dict[str, float]
    notes: dict[str, list[str]]

    @property
    def defined(self) -> list[str]:
        return [key for key in ("cos", "euc") if not math.isnan(self.sa[key])]


def _point_scores(spreads: Spreads) -> _PointScores:
    point = spreads.spreads(np.ones((1, spreads.aw.n_rows)), scaled=True)
    cos = (float(point["intra_cos"][0]), float(point["inter_cos"][0]))
    euc_s = (float(point["intra_euc"][0]), float(point["inter_euc"][0]))
    with np.errstate(over="ignore"):
        euc = (math.ldexp(euc_s[0], spreads.exponent), math.ldexp(euc_s[1], spreads.exponent))
    sa = {
        "cos": float(_sa_or_nan(np.array(cos[0]), np.array(cos[1]), ROUNDING_FLOOR)),
        "euc": float(_sa_or_nan(np.array(euc_s[0]), np.array(euc_s[1]), ROUNDING_FLOOR)),
    }
    notes: dict[str, list[str]] = {"cos": [], "euc": []}
    if math.isnan(sa["cos"]):
        notes["cos"].append(
            f"cosine SA undefined: every cosine distance is zero to rounding (D_intra + D_inter = {cos[0] + cos[1]:.2g}; "
            "all vectors point the same way); reported as NaN"
        )
    if math.isnan(sa["euc"]):
        notes["euc"].append(
            f"euclidean SA undefined: every distance is zero to rounding (D_intra + D_inter = {euc[0] + euc[1]:.2g}, "
            f"below {ROUNDING_FLOOR:g} x the largest coordinate; the vectors are identical); reported as NaN"
        )
    return _PointScores(cos, euc_s, euc, sa, notes)


@dataclass
class _Verdict:
    """What the verdict pass gave: chance levels (all concepts, artefact-free), surface comparison, distributions."""

    chance: Any = None
    chance_excluding: Any = None
    surface: Any = None
    dists: dict[str, np.ndarray] = field(default_factory=dict)
    dists_free: dict[str, np.ndarray] = field(default_factory=dict)  # the artefact-free concepts' (when any left out)
    excluded: dict[str, Any] = field(default_factory=dict)
    artefact_notes: list[str] = field(default_factory=list)
    kept: np.ndarray | None = None
    permutation_job: Any = None  # the permutation gate's test, started beside the bootstrap on a free CPU (or None)
    kept_point: tuple[float, float] | None = None  # the kept concepts' cosine (intra, inter) at the point, when some left out


def _verdict(aw: AlignedWords, spreads: Spreads, point: _PointScores, *, n_boot: int, seed: int, confidence: float,
             batch: int | None, thresholds: TierThresholds, unknown_words: Mapping[str, Any] | None,
             surface: AlignedWords | None, should_stop: Any) -> _Verdict:
    """Every verdict statistic from one pass over the same multinomial resamples (when the cosine SA is defined)."""
    v = _Verdict(kept=np.ones(aw.n_rows, dtype=bool))
    euclidean_job = None  # off the unit sphere the closed-form Euclidean chance bound is loose: the mean over seeded
    # shuffles (up to LANGUAGE_CENTRED_AUTO_WORDS words, like the other diagnostic; beyond, the bound stays); it needs
    # only the spreads, so it runs beside the bootstrap when a second thread is free (spreads.beside), else now
    if "cos" in point.defined and not is_unit_norm(aw, norms=spreads.norms) and language_centred_diagnostic(aw, None):
        euclidean_job = beside(functools.partial(euclidean_chance_by_permutation, aw, seed=seed, spreads=spreads))
    if "cos" in point.defined:
        v.excluded, v.artefact_notes, v.kept, scorable = _artefact_exclusion(aw, unknown_words=unknown_words,
                                                                             norms=spreads.norms)
        judged = scorable or not v.excluded  # the verdict has scores to stand on: the surface null is asked
        if judged and n_boot >= MIN_VERDICT_BOOT and block_product_workers() > 1:
            # the gate's test needs only the judged concepts: on a free CPU it runs beside the bootstrap, and is read
            # only if the interval says above chance (_permutation_gate).  The judged concepts' point is taken here:
            # RowSubset may split the spreads' joint product, which the bootstrap reads, so never from the other thread
            kept = v.kept if v.excluded else None
            v.permutation_job = beside(functools.partial(_gate_test, aw, spreads, kept, n_boot=n_boot, seed=seed,
                                                         point=None if kept is None else _gate_point(spreads, kept)),
                                       only_if_free=True)
        one = verdict_bootstrap(aw, n_boot=n_boot, seed=seed, confidence=confidence, batch=batch, spreads=spreads,
                                thresholds=thresholds, keep=v.kept if scorable else None,
                                surface=surface if judged else None, distributions=v.dists,
                                subset_distributions=v.dists_free, should_stop=should_stop)
        v.chance, v.chance_excluding, v.surface, v.kept_point = one.full, one.subset, one.surface, one.subset_point
        if v.chance_excluding is not None:
            v.artefact_notes.append(
                f"the verdict uses the {int(v.kept.sum())} concepts without artefacts: SA {v.chance_excluding.sa.value:.3f} "
                f"(all concepts: {v.chance.sa.value:.3f}), chance level {v.chance_excluding.sa_null.value:.3f}"
            )
        if one.surface_note:
            point.notes["cos"].append(f"no surface-form comparison: {one.surface_note}")
    if euclidean_job is not None and v.chance is not None:
        v.chance = replace(v.chance, sa_null_euclidean=euclidean_job.result()[0])
    basis = v.chance_excluding if v.excluded else v.chance
    if basis is not None and null_aware_tier("", basis.delta.ci) == CHANCE_TIER:
        v.artefact_notes.append(
            f"the cosine SA cannot be told apart from this model's chance level {basis.sa_null.value:.3f} on these "
            f"words (the interval of SA minus chance, [{basis.delta.ci[0]:+.3f}, {basis.delta.ci[1]:+.3f}], contains 0)"
        )
    elif basis is not None and null_aware_tier("", basis.delta.ci) == BELOW_CHANCE_TIER:
        v.artefact_notes.append(
            f"the cosine SA lies below this model's chance level {basis.sa_null.value:.3f}: translations are farther "
            "apart than shuffled pairings (language separation)"
        )
    return v


def _sa_intervals(spreads: Spreads, point: _PointScores, dists: Mapping[str, np.ndarray], *, n_boot: int, seed: int,
                  confidence: float, batch: int | None, method: str, should_stop: Any, percentile_ready: bool
                  ) -> dict[str, tuple]:
    """key -> (bootstrap mean, sd, interval) of the cosine and Euclidean SA; NaN where undefined or not resampled.

    Percentile intervals read the verdict pass's resamples; 'basic' and 'BCa' go through ``scipy.stats.bootstrap``.
    """
    nan_boot = (math.nan, math.nan, Interval(math.nan, math.nan))
    boot = {"cos": nan_boot, "euc": nan_boot}
    defined, names = point.defined, {"cos": "cosine", "euc": "euclidean"}
    if n_boot and defined and method == "percentile" and percentile_ready:
        # the same resamples give the SA intervals: no index arrays (B x R) are ever built
        dist = np.stack([dists["sa"], dists["sa_euclidean"]])
        cis = percentile_intervals(dist, confidence)
        low, high = cis.low, cis.high
    elif n_boot and defined:
        dist, low, high = _scipy_bootstrap(spreads, n_boot=n_boot, seed=seed, confidence=confidence, batch=batch,
                                           method=method, should_stop=should_stop)
    else:
        if n_boot:
            point.notes["cos"].append("no bootstrap: both SAs are undefined")
        return boot
    for k, key in enumerate(("cos", "euc")):
        if key in defined:
            mean, sd, ci, extra = _interval(dist[k], point.sa[key], Interval(low[k], high[k]), method, confidence, names[key])
            boot[key] = (mean, sd, ci)
            point.notes[key].extend(extra)
    return boot


def _scipy_bootstrap(spreads: Spreads, *, n_boot: int, seed: int, confidence: float, batch: int | None, method: str,
                     should_stop: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distribution (2, B), lower ends, upper ends) of the cosine and Euclidean SA from ``scipy.stats.bootstrap``."""
    R = spreads.aw.n_rows

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        """SA (cosine, Euclidean) of each resample: shape (2,) for one index vector, (2, B) for B of them."""
        idx = np.asarray(idx)
        s = spreads.spreads(rows_to_counts(idx, R), scaled=True)
        out = np.stack([
            _sa_or_nan(s["intra_cos"], s["inter_cos"], ROUNDING_FLOOR),
            _sa_or_nan(s["intra_euc"], s["inter_euc"], ROUNDING_FLOOR),
        ])
        return out[:, 0] if idx.ndim == 1 else out

    check_stop(should_stop, "bootstrap")  # scipy's bootstrap runs as one call: asked before it starts
    if batch is None:
        batch = int(max(1, min(n_boot, 32_000_000 // (R + 2 * spreads.centre.size))))
    import scipy.stats  # here, not at import time: it costs ~0.6 s of package start-up
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        # resampled over the concepts in canonical order (metrics.row_order): the data are the rows, slot by slot
        res = scipy.stats.bootstrap((canonical_rows(spreads.aw),), statistic, n_resamples=n_boot, batch=batch, vectorized=True,
                                    confidence_level=confidence, method=method, rng=np.random.default_rng(seed))
    return np.asarray(res.bootstrap_distribution), res.confidence_interval.low, res.confidence_interval.high


def _permutation_gate(aw: AlignedWords, spreads: Spreads, v: _Verdict, *, n_boot: int, seed: int, should_stop: Any) -> Any:
    """The verdict's second gate (metrics.chance.above_chance_gate): the permutation test of the judged concepts.

    n_perm = n_boot (p down to 1 / (n_boot + 1)) from the bootstrap's seed; only asked when the interval says above.
    """
    basis = v.chance_excluding if v.excluded else v.chance
    if basis is None or n_boot < MIN_VERDICT_BOOT or not basis.delta.ci[0] > 0:
        drop_side_job(v.permutation_job)  # started beside the bootstrap but not asked: it ends under the caller's pin
        return None
    check_stop(should_stop, "permutation test")
    if v.permutation_job is not None:  # started beside the bootstrap: the same test on the same concepts
        return v.permutation_job.result()
    kept = v.kept if v.excluded else None  # (the bootstrap's point of the kept concepts: _gate_point's, not a second one)
    return _gate_test(aw, spreads, kept, n_boot=n_boot, seed=seed, point=v.kept_point if kept is not None else None)


def judged_permutation_test(aw: AlignedWords, *, n_perm: int = 1000, seed: int | None = 0,
                            unknown_words: Mapping[str, Any] | None = None, on_zero: str = "drop") -> PermutationTest:
    """The verdict's permutation test on its own: the seeded re-pairings of the concepts the verdict judges.

    As :func:`affinity_of_words` does: concepts with a zero vector are dropped (``on_zero``), then the artefacts
    (identical strings, words of unknown tokens only, degenerate vectors) are left out, and
    :func:`~semanscope_nb.metrics.chance.permutation_test` runs on the rest.  With ``n_perm = n_boot`` and the
    bootstrap's seed this is :attr:`SAResult.permutation` (the gate's test, when the verdict asks it), so the
    ``permutation`` task, :func:`~semanscope_nb.runs.dataset_permutation_test` and the verdict give one p-value.
    On all concepts, identical strings (one vector for any model, random vectors included) would make random
    vectors look aligned.  When the verdict has no judged concepts to score, the test is undefined (NaN, with a
    ``note``).  The excluded counts are in ``provenance["excluded_concepts"]``.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> en, de = rng.normal(size=(30, 8)), rng.normal(size=(30, 8))
    >>> eye = sp.identity(30, format="csr")
    >>> aw = AlignedWords(("en", "de"), (en, de), (eye, eye), tuple(f"c{r}" for r in range(30)))
    >>> t = judged_permutation_test(aw, n_perm=200, seed=0)
    >>> bool(t.p_value > 0.05), t.provenance["excluded_concepts"]
    (True, {})
    """
    check_count("n_perm", n_perm, minimum=1)  # before any work (permutation_test checks it again, as it must alone)
    found = zero_vectors(aw, on_zero=on_zero)  # the verdict's rule for zero vectors (affinity_of_words)
    aw, _, _ = _drop_zero_rows(aw, found)
    spreads = Spreads(aw)
    excluded, notes, kept, scorable = _artefact_exclusion(aw, unknown_words=unknown_words, norms=spreads.norms)
    if excluded and not scorable:
        return PermutationTest(sa=math.nan, null_mean=math.nan, null_sd=math.nan, p_value=math.nan, z=math.nan,
                               n_perm=int(n_perm), seed=seed, note=notes[-1] if notes else "no judged concepts",
                               provenance={"excluded_concepts": excluded})
    test = _gate_test(aw, spreads, kept if excluded else None, n_boot=n_perm, seed=seed)
    return test.with_provenance(excluded_concepts=excluded)


def _gate_point(spreads: Spreads, kept: np.ndarray) -> tuple[float, float]:
    """The judged concepts' point spreads (cosine intra, inter) from the full set's (RowSubset: their weights 0), not a
    second Spreads."""
    ones = np.ones((1, spreads.aw.n_rows))
    stats, intra, _ = RowSubset(spreads, kept).parts(ones, spreads.intra_parts(ones), None)
    at_ones = spreads.from_parts(stats, intra, scaled=True)
    return float(at_ones["intra_cos"][0]), float(at_ones["inter_cos"][0])


def _gate_test(aw: AlignedWords, spreads: Spreads, kept: np.ndarray | None, *, n_boot: int, seed: int,
               point: tuple[float, float] | None = None) -> Any:
    """The permutation test of the judged concepts: all of them, or ``kept`` when artefacts were left out (``point``:
    their :func:`_gate_point`, when already taken)."""
    if kept is None:
        return permutation_test(aw, n_perm=n_boot, seed=seed, spreads=spreads)
    point = _gate_point(spreads, kept) if point is None else point
    return permutation_test(subset_rows(aw, kept), n_perm=n_boot, seed=seed, point=point)


def _sa_result(aw: AlignedWords, spreads: Spreads, point: _PointScores, boot: Mapping[str, tuple], v: _Verdict, diag: Any,
               *, thresholds: TierThresholds, n_boot: int, seed: int, confidence: float, parameters: dict[str, Any],
               centred_sa: float, permutation: Any) -> SAResult:
    with np.errstate(over="ignore"):
        inter_euc_rows = spreads.row_euc / spreads.tuples
    cos, euc, sa, notes = point.cos, point.euc, point.sa, point.notes
    return SAResult(
        cosine=DistanceScores(sa["cos"], cos[0], cos[1], boot["cos"][1], boot["cos"][2], boot["cos"][0], "; ".join(notes["cos"])),
        euclidean=DistanceScores(sa["euc"], euc[0], euc[1], boot["euc"][1], boot["euc"][2], boot["euc"][0], "; ".join(notes["euc"])),
        thresholds=thresholds,
        languages=aw.languages,
        n_concepts=aw.n_rows,
        n_tuples=int(spreads.tuples.sum()),
        n_words={lang: int(w.shape[0]) for lang, w in zip(aw.languages, aw.vectors)},
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        concept_labels=list(aw.labels),
        concept_inter_cosine=spreads.row_cos / spreads.tuples,
        concept_inter_euclidean=inter_euc_rows,
        diagnostics=diag,
        provenance={"parameters": parameters},
        concept_groups=None if aw.groups is None else list(aw.groups),
        chance=v.chance,
        chance_excluding=v.chance_excluding,
        excluded_concepts=v.excluded,
        language_centred_sa=centred_sa,
        surface=v.surface,
        permutation=permutation,
    )


def _real_vectors(language: str, vectors: Any) -> np.ndarray:
    """``vectors`` of ``language`` as a float64 ndarray; text, ragged rows or complex numbers are an EmbeddingError
    naming the language (numpy would raise its own ValueError, or drop an imaginary part with only a warning)."""
    try:
        arr = np.asarray(vectors)
        if arr.dtype.kind == "O":  # numbers held as objects: converted (text among them raises below)
            arr = arr.astype(np.float64)
        real = arr.dtype.kind in "biuf"
        if real:
            arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:  # ragged rows
        raise EmbeddingError(f"embeddings['{language}'] is not an array of numbers with one row per concept "
                             f"({type(vectors).__name__}: {exc})") from None
    if arr.dtype.kind == "c":
        raise EmbeddingError(f"embeddings['{language}'] holds complex numbers; SA needs real vectors")
    if not real:  # text, objects
        raise EmbeddingError(f"embeddings['{language}'] is not an array of numbers with one row per concept "
                             f"(its values are of dtype {arr.dtype})")
    return arr


def semantic_affinity(
    embeddings: Mapping[str, Any],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    batch: int | None = None,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
    on_zero: Literal["error", "drop"] = "error",
    labels: Sequence[str] | None = None,
    sem: Literal["bootstrap", "delta"] = "bootstrap",
) -> SAResult:
    """Semantic Affinity of ``embeddings``: language -> (concepts x dims) array, row i = concept i.

    An array may be dense (NumPy, lists) or a SciPy sparse matrix (a TF-IDF model's output): the same vectors
    give the same result either way.

    Every row is one word (no alternatives; use :func:`semanscope_nb.dataset_affinity`
    for datasets with ``|`` alternatives).  The bootstrap resamples concept rows
    ``n_boot`` times with ``seed`` (``n_boot=0``: none); ``.cosine.sem`` is the
    bootstrap standard deviation and ``.cosine.ci`` the ``confidence`` interval
    (``method``: 'percentile', 'basic' or 'BCa'); ``sem="delta"`` puts the
    original Semanscope tool's delta-method ± there instead (see
    :mod:`~semanscope_nb.metrics.paper_sem`: it holds a between-language term
    that is not sampling noise).  Any magnitude gives the same
    SA as the rescaled vectors; identical vectors give a NaN SA, flagged.

    >>> import numpy as np, semanscope_nb as snb
    >>> e = np.random.default_rng(1).normal(size=(30, 8))
    >>> snb.semantic_affinity({"en": e, "de": e}, n_boot=0).cosine.sa
    1.0
    """
    _check_options(
        n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, batch=batch, method=method, on_zero=on_zero
    )
    if not isinstance(embeddings, Mapping):
        raise ArgumentError(f"embeddings must map language -> array, e.g. {{'en': E_en, 'zh': E_zh}}, got "
                            f"{type(embeddings).__name__}")
    languages = tuple(embeddings)
    if len(languages) < 2:
        raise EmbeddingError(f"need at least two languages, got {list(languages)}")
    vectors = []
    for lang in languages:
        v = embeddings[lang]
        if sp.issparse(v):  # a sparse model's output (scikit-learn's TF-IDF): the same vectors, the same SA as dense
            v = v.toarray()
        # a plain ndarray as given; anything else (lists, np.matrix, whose rows stay 2-D) as a float64 ndarray
        arr = v if type(v) is np.ndarray and v.dtype in (np.float32, np.float64) else _real_vectors(lang, v)
        vectors.append(arr)
    check_vectors(languages, vectors)
    counts = {lang: v.shape[0] for lang, v in zip(languages, vectors)}
    if len(set(counts.values())) > 1:
        raise EmbeddingError(f"languages have different numbers of concept rows: {counts}")
    R = vectors[0].shape[0]
    if labels is not None and len(labels) != R:
        raise ArgumentError(f"labels has {len(labels)} entries, expected {R}")
    eye = sp.identity(R, format="csr", dtype=np.float64)
    aw = AlignedWords(
        languages=languages,
        vectors=tuple(vectors),
        incidence=tuple(eye for _ in languages),
        labels=tuple(labels) if labels is not None else tuple(str(i) for i in range(R)),
    )
    return affinity_of_words(
        aw, n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, batch=batch, method=method, on_zero=on_zero,
        sem=sem,
    )
