"""What the SA statistics refuse: one rule per degenerate case, applied by every statistic.

Every statistic of the verdict machinery -- :func:`~semanscope_nb.semantic_affinity`,
:func:`~semanscope_nb.metrics.chance.permutation_test`,
:func:`~semanscope_nb.metrics.chance.chance_level`,
:func:`~semanscope_nb.metrics.compare.compare_models` and
:func:`~semanscope_nb.metrics.pairs.pair_affinity` -- follows these rules:

=====================================  =======================================================================
case                                   answer
=====================================  =======================================================================
fewer than :data:`MIN_CONCEPTS` (2)    :class:`~semanscope_nb.errors.EmbeddingError` naming the statistic and
concept rows                           the count (no SA exists: a language needs two distinct words)
fewer than :data:`MIN_BOOT_CONCEPTS`   the same error from any statistic that bootstraps concepts (the SA
(3) rows and a bootstrap               interval, ``compare_models``, ``pair_affinity``); ``n_boot=0`` skips it
collapsed vectors (every cosine        NaN with a note (never a number, never a crash): the SA, the chance
distance zero to rounding)             level, the permutation p-value, the model's compared score, the pair
a permutation test with few concepts   exact: every re-pairing is enumerated when there are at most
                                       ``n_perm`` of them, ``p = #{re-pairings with SA >= observed} / #all``
                                       (the identity included), e.g. 2 concepts -> 0.5, 3 -> 1/6
ties between permuted and observed SA  counted as ">=" within the near-tie rule of
                                       :mod:`semanscope_nb.metrics.ties` (:func:`sa_tie_tolerance`)
fewer than :data:`MIN_VERDICT_BOOT`    the interval of SA minus chance is too rough to call: the verdict
(200) bootstrap resamples              tier is :data:`UNDETERMINED_TIER` with a note (``n_boot=0`` too)
so few concepts that no re-pairing     the verdict tier is :data:`UNDETERMINED_TIER` with a note: fewer than
test could reach the verdict's level   ``2 / (1 - confidence)`` re-pairings ``(R!)^(L-1)`` (40 at 95%: e.g. 3 or 4
                                       concepts in 2 languages), where the exact p cannot go below 2.5%
                                       (:func:`too_few_to_test`); the bootstrap interval is liberal there
=====================================  =======================================================================

Layer: metrics.  Imports :mod:`semanscope_nb.errors`, :mod:`~semanscope_nb.metrics.ties` and the spreads only.

Example
-------
>>> require_concepts(5, minimum=MIN_CONCEPTS, what="permutation_test")
>>> require_concepts(1, minimum=MIN_CONCEPTS, what="permutation_test")
Traceback (most recent call last):
...
semanscope_nb.errors.EmbeddingError: permutation_test needs at least 2 concept rows, got 1: SA compares distances between distinct words of a language and between translations, so one concept leaves nothing to compare
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.metrics.ties import dot_tolerance, unit_roundoff, working_dtype

#: fewer concept rows than this: every SA statistic raises (one concept gives no SA)
MIN_CONCEPTS = 2
#: fewer concept rows than this: every statistic that bootstraps concepts raises (n_boot=0 skips the bootstrap)
MIN_BOOT_CONCEPTS = 3
#: fewer bootstrap resamples than this: the interval of SA minus chance is too rough to base a tier on
MIN_VERDICT_BOOT = 200
#: the verdict tier when the interval is too rough (or absent) to tell the SA from its chance level
UNDETERMINED_TIER = "undetermined"
#: D_intra + D_inter (cosine) below this = every distance is zero to rounding (same as affinity.ROUNDING_FLOOR)
SA_ROUNDING_FLOOR = 1e-12

_WHY = {
    MIN_CONCEPTS: "SA compares distances between distinct words of a language and between translations, so one "
                  "concept leaves nothing to compare",
    MIN_BOOT_CONCEPTS: "a bootstrap over fewer concepts has almost no distinct resamples (or pass n_boot=0 for no interval)",
}


def require_concepts(n_rows: int, *, minimum: int, what: str) -> None:
    """Raise :class:`~semanscope_nb.errors.EmbeddingError` when ``n_rows < minimum``, naming ``what`` and the count.

    >>> require_concepts(3, minimum=MIN_BOOT_CONCEPTS, what="compare_models")
    """
    if n_rows < minimum:
        why = _WHY.get(minimum, "")
        raise EmbeddingError(f"{what} needs at least {minimum} concept rows, got {n_rows}" + (f": {why}" if why else ""))


def collapsed_note(intra_cos: float, inter_cos: float) -> str | None:
    """A note when the cosine SA is undefined (``D_intra + D_inter`` zero to rounding: collapsed vectors), else None.

    >>> collapsed_note(0.0, 1e-17)[:22]
    'cosine SA undefined: e'
    >>> collapsed_note(0.4, 0.5) is None
    True
    """
    total = float(intra_cos) + float(inter_cos)
    if math.isfinite(total) and total > SA_ROUNDING_FLOOR:
        return None
    return (f"cosine SA undefined: every cosine distance is zero to rounding (D_intra + D_inter = {total:.2g}; the "
            "vectors are collapsed onto one direction), so there is no SA, chance level or p-value; reported as NaN")


def sa_tie_tolerance(vectors: Any, *, n_rows: int = 1) -> float:
    """The near-tie tolerance of two computations of one cosine inter distance (a mean of ``1 - cos`` over rows).

    A mean of terms each within :func:`~semanscope_nb.metrics.ties.dot_tolerance` of
    its exact value is within that tolerance too; summing ``n_rows`` terms in [0, 2]
    in float64 in another order moves the mean by at most ``4 n_rows u64`` more
    (``gamma_n`` bound, as in :mod:`~semanscope_nb.metrics.ties`).  Two re-pairings
    whose inter distances differ by at most this are tied -- and since ``D_intra``
    is the same for every re-pairing, so are their SAs.  ``vectors``: the
    languages' arrays (the coarsest input precision decides).

    >>> f"{sa_tie_tolerance([np.zeros((2, 384), np.float32)]):.2e}"
    '4.60e-05'
    """
    vs = [np.asarray(v) for v in vectors]
    dims = max(int(v.shape[1]) for v in vs)
    return dot_tolerance(dims, working_dtype(*(v.dtype for v in vs))) + 4.0 * (int(n_rows) + 2) * unit_roundoff(np.float64)


def rough_interval_note(n_boot: int) -> str | None:
    """A note when ``n_boot`` is below :data:`MIN_VERDICT_BOOT` (the verdict is then :data:`UNDETERMINED_TIER`).

    >>> rough_interval_note(10)[:40]
    'only 10 bootstrap resamples (fewer than '
    >>> rough_interval_note(1000) is None
    True
    """
    if n_boot >= MIN_VERDICT_BOOT:
        return None
    if n_boot == 0:
        return (f"no bootstrap (n_boot=0): without an interval the SA cannot be told apart from its chance level, so "
                f"the verdict is '{UNDETERMINED_TIER}' (use n_boot >= {MIN_VERDICT_BOOT})")
    return (f"only {n_boot} bootstrap resamples (fewer than MIN_VERDICT_BOOT = {MIN_VERDICT_BOOT}): the interval of SA "
            f"minus chance is too rough to call, so the verdict is '{UNDETERMINED_TIER}'")


def too_few_to_test(n_rows: int, n_languages: int, *, confidence: float = 0.95) -> str | None:
    """A note when the exact permutation p of ``n_rows`` concepts cannot reach the one-sided level ``(1 - confidence) / 2``.

    There are ``(R!)^(L-1)`` re-pairings, so the smallest exact p is their inverse: 3 concepts in two
    languages give 1/6, 4 give 1/24 -- neither below 2.5%.  The verdict then gives no tier
    (:data:`UNDETERMINED_TIER`), whatever the bootstrap interval (liberal with so few concepts) says.

    >>> too_few_to_test(4, 2)[:36]
    'only 4 concepts in 2 languages: the '
    >>> too_few_to_test(5, 2) is None, too_few_to_test(3, 3) is None, too_few_to_test(4, 3) is None
    (True, False, True)
    """
    level = (1.0 - confidence) / 2.0
    n = int(n_rows)
    count = math.factorial(n) ** (n_languages - 1) if n <= 20 else math.inf
    if count * level >= 1.0:
        return None
    return (f"only {n} concepts in {n_languages} languages: the exact permutation p cannot go below 1/{count} = "
            f"{1 / count:.3g}, above the verdict's one-sided level {level:.3g}, so no tier can be given "
            f"('{UNDETERMINED_TIER}')")
