"""Chance level of Semantic Affinity: the null of shuffled translations, and a null-aware bootstrap.

The question a verdict must answer first is not "is SA above 0.5?" but "are
translations closer than *this model's* random pairings of *these* words?".
Shuffling the translation pairing independently per language keeps every
language's words (so ``D_intra`` is unchanged) and destroys the translation
link, so the expected SA under that shuffle is the model- and dataset-specific
chance level.

Closed form (cosine).  With unit vectors, row r of language l holding the mean
alternative vector ``ubar_lr`` of its ``n_lr`` alternatives, the paper's
tuple-weighted inter distance is ``sum_r T_r (1 - mean_{l<m} ubar_lr . ubar_mr) /
sum_r T_r`` with ``T_r = prod_l n_lr``.  Under independent uniform shuffles the
rows of different languages are independent and uniform, so (ratio of the two
expectations)::

    E[D_inter] = 1 - mean_{l<m} a_l . a_m,   a_l = sum_r sum_{k in r} u_k / sum_r n_lr

-- ``a_l`` is the mean unit vector over all of language l's word occurrences.
With one word per row this is exact (the issue's ``1 - mean(u_l).mean(u_m)``);
with alternatives it is the ratio of expectations, which the permutation test
checks.  ``sa_null = D_intra / (D_intra + E[D_inter])``.

Closed form (Euclidean).  The tuple spread is ``sqrt(Q)`` with ``Q`` the mean
squared distance over language pairs; ``E[Q] = mean_{l<m} (s_l + s_m - 2 mu_l .
mu_m)`` with ``s_l`` the occurrence-mean squared norm and ``mu_l`` the occurrence
mean (both after removing a common centre).  ``sqrt(E[Q])`` is an upper bound of
``E[sqrt(Q)]`` (Jensen), so the Euclidean null SA it gives is a lower bound, tight
for unit vectors; for vectors that are not unit norm (wordllama) it is loose, and
the Euclidean chance level is the mean over seeded shuffles instead
(:func:`euclidean_chance_by_permutation`).  The verdict uses the cosine SA.

Intervals (:func:`point_holding_interval`) are bias-corrected percentile intervals
that always hold their point estimate.  The verdict's tier labels, its effect-size
floor :data:`MIN_CORRECTED` and the surface-form null (:func:`surface_null`) live
here too.

Layer: metrics.  Imports numpy, scipy and :mod:`semanscope_nb.metrics.affinity`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> from semanscope_nb.metrics.chance import chance_level, permutation_test
>>> rng = np.random.default_rng(0)
>>> eye = sp.identity(200, format="csr")
>>> aw = AlignedWords(("en", "de"), (rng.normal(size=(200, 16)), rng.normal(size=(200, 16))), (eye, eye), tuple(map(str, range(200))))
>>> round(chance_level(aw).sa_null_cosine, 2)
0.5
>>> permutation_test(aw, n_perm=200, seed=0).p_value > 0.05   # random vectors: no evidence of alignment
True
"""

from __future__ import annotations

import collections.abc
import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from semanscope_nb.memo import Memo
from semanscope_nb.metrics import options
from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.metrics.spreads import AlignedWords, RowSubset, Spreads, affinity_ratio, beside, drop_side_job, unit_rows
from semanscope_nb.models.cancel import check_stop
from semanscope_nb.metrics.surface_store import SurfaceStore
from semanscope_nb.metrics.row_order import canonical_rows, is_identity, slot_of_row
from semanscope_nb.metrics.ties import reaches

#: resamples held in memory at once when ``batch`` is not given (counts are float64, B x R)
DEFAULT_MAX_BATCH_BYTES = 64 * 2**20


# --------------------------------------------------------------------------- resampling


def resample_counts(n_rows: int, n_boot: int, *, seed: int | None, batch: int | None = None,
                    order: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """Bootstrap resamples as row-count vectors (B x R, float64), ``batch`` rows at a time: the one draw rule.

    A resample of R rows with replacement is R uniform row indices; only how often
    each row was drawn matters, so each resample is handed out as its count vector
    (a multinomial(R, 1/R) vector, the same distribution as ``rng.multinomial``)
    and the B x R index matrix is never kept.  The rule: resample b is the R draws
    ``default_rng(seed).integers(0, R, size=R)`` that follow resample b - 1's, counted per
    row (one ``np.bincount`` per batch over ``index + R * resample``) -- about a fifth of
    numpy's ``multinomial`` draw, which loops over the rows with a binomial each.  The
    generator's stream does not depend on how it is cut, so the same ``seed`` gives the
    same resamples whatever ``batch`` is, and several statistics (two models, SA and its
    null, the verdict's subsets, the pair matrix) are computed on the very same resampled
    concepts.  Every bootstrap over rows in the package draws through this function.

    ``order``: the rows in canonical order (:func:`~semanscope_nb.metrics.row_order.canonical_rows`); the draws are
    then made over its slots and slot ``s``'s count goes to row ``order[s]``, so the same concepts in another row
    order get the same resamples (None: slot ``s`` is row ``s``).

    The resamples depend on nothing but ``(seed, n_rows)``, so those of a complete pass are kept between calls (every
    model scored on the same concepts with the same seed draws them again; :data:`RESAMPLE_MEMO_BYTES`, as small
    integers: a count fits a byte but for a resample that draws one row 256 times): a later pass of at most as many
    resamples hands out fresh float64 copies of them, cut at the same batch boundaries -- the same arrays, so the same
    products to the bit (a pass of fewer than :data:`RESAMPLE_MEMO_MIN` counts is always drawn).

    >>> sum(c.shape[0] for c in resample_counts(10, 25, seed=0, batch=7)), next(resample_counts(10, 3, seed=0)).sum(axis=1)
    (25, array([10., 10., 10.]))
    >>> idx = np.random.default_rng(0).integers(0, 10, size=10)   # resample 0, drawn by hand
    >>> bool((np.bincount(idx, minlength=10) == next(resample_counts(10, 1, seed=0))[0]).all())
    True
    """
    check_count("n_boot", n_boot, minimum=1)
    check_count("n_rows", n_rows, minimum=1)
    check_seed(seed)
    if batch is None:
        batch = max(1, DEFAULT_MAX_BATCH_BYTES // (8 * n_rows))
    check_count("batch", batch, minimum=1)
    slot = None
    if order is not None:
        order = np.asarray(order)
        if order.shape != (n_rows,):
            raise ValueError(f"order must hold the {n_rows} rows once each, got shape {order.shape}")
        slot = None if is_identity(order) else slot_of_row(order)  # row r's count is slot slot[r]'s
    if slot is not None:  # the same draws over the slots, each handed out with its columns in row order
        slots = resample_counts(n_rows, n_boot, seed=seed, batch=batch)
        try:
            for counts in slots:
                yield counts.take(slot, axis=1)
        finally:  # a caller that stops early: the draw ahead ends now, not when the generator is collected
            slots.close()
        return
    # (a pass of fewer than RESAMPLE_MEMO_MIN counts is drawn every time: drawing it costs about what copying would)
    key = None if seed is None or n_boot * n_rows < RESAMPLE_MEMO_MIN else (int(seed), int(n_rows))
    kept = _RESAMPLES.get(key) if key is not None else None
    if kept is not None and kept.shape[0] >= n_boot:  # a complete earlier pass: its resamples, no draw
        for a in range(0, n_boot, batch):
            yield kept[a : min(a + batch, n_boot)].astype(np.float64)
        return
    # this pass's resamples as small integers, to keep when it completes (None: too large, or a count beyond a byte)
    small: list[np.ndarray] | None = [] if key is not None and n_boot * n_rows <= RESAMPLE_MEMO_BYTES // 4 else None
    rng = np.random.default_rng(seed)
    # the next batch is drawn on a free CPU while the caller works on this one (spreads.beside; the same generator,
    # still one batch after the other, so the same draws), when its arrays are small beside the caller's own work
    ahead = n_boot > batch and 3 * 8 * batch * n_rows <= PREFETCH_DRAW_BYTES
    pending = None
    try:
        for a in range(0, n_boot, batch):
            counts = pending.result() if pending is not None else _drawn_counts(rng, min(batch, n_boot - a), n_rows)
            pending = None
            if ahead and a + batch < n_boot:  # None when there is no free CPU: drawn here at the next step
                pending = beside(_drawn_counts, rng, min(batch, n_boot - a - batch), n_rows, only_if_free=True)
            if small is not None and counts.max() <= 255:
                small.append(counts.astype(np.uint8))  # a copy taken before the caller has the counts
            elif small is not None:
                small = None
            yield counts
    finally:  # a caller that stops early: a draw under way ends before the generator is let go
        drop_side_job(pending)
    if small is not None:  # the pass completed: its resamples kept for the next one
        drawn = np.concatenate(small)
        drawn.flags.writeable = False
        _RESAMPLES.put(key, drawn)


#: bytes of resample counts kept between calls (:func:`resample_counts`, one byte per count); a pass is kept when it
#: takes at most a quarter of it (1000 resamples of 349 concepts: 349 kB), so the bootstrap's own memory stays as it was
RESAMPLE_MEMO_BYTES = 8 * 2**20
#: ... and when it holds at least this many counts (below, a draw costs under 0.1 ms: nothing to save)
RESAMPLE_MEMO_MIN = 2**16
_RESAMPLES = Memo(RESAMPLE_MEMO_BYTES, sizeof=lambda drawn: drawn.nbytes)  # (seed, n_rows) -> (n_boot x n_rows) uint8


#: largest draw (bytes of its three B x R arrays) that :func:`resample_counts` makes ahead on a free CPU: within the
#: 10% headroom that Spreads.bootstrap_batch leaves of the smallest budget (MIN_BOOTSTRAP_BUDGET, 32 MiB)
PREFETCH_DRAW_BYTES = 2 * 2**20


def _drawn_counts(rng: np.random.Generator, b: int, n_rows: int) -> np.ndarray:
    """The next ``b`` resamples of ``rng`` as count rows (:func:`resample_counts`' rule)."""
    idx = rng.integers(0, n_rows, size=(b, n_rows))
    idx += np.arange(0, b * n_rows, n_rows)[:, None]  # resample k's rows counted in bins k R .. k R + R - 1
    drawn = np.bincount(idx.ravel(), minlength=b * n_rows)
    del idx  # the peak stays at three B x R arrays (Spreads.bytes_per_resample): this, its float copy, the last batch
    counts = drawn.reshape(b, n_rows).astype(np.float64)
    del drawn
    return counts


def check_count(name: str, value: object, *, minimum: int) -> None:
    """:func:`~semanscope_nb.metrics.options.check_count`, with resample and permutation counts capped at
    :data:`~semanscope_nb.metrics.options.MAX_RESAMPLES`."""
    options.check_count(name, value, minimum=minimum, maximum=options.MAX_RESAMPLES if name in ("n_boot", "n_perm") else None)


def check_seed(seed: object) -> None:
    """:func:`~semanscope_nb.metrics.options.check_seed` (None allowed: fresh entropy)."""
    options.check_seed(seed, allow_none=True)


def percentile_interval(values: np.ndarray, confidence: float) -> Interval:
    """The equal-tailed percentile interval of finite ``values``.

    >>> percentile_interval(np.arange(5.0), 0.5)
    Interval(low=1.0, high=3.0)
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Interval(math.nan, math.nan)
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(v, [a, 1.0 - a])
    return Interval(float(lo), float(hi))


def percentile_intervals(dist: np.ndarray, confidence: float) -> Interval:
    """The equal-tailed percentile interval of each row of ``dist`` (NaN ignored): an Interval of two arrays.

    ``low[k]`` and ``high[k]`` are row k's quantiles ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` (NumPy's default linear interpolation, as
    :func:`percentile_interval` and scipy's percentile bootstrap use); a row with
    no finite value gives NaN.

    >>> ci = percentile_intervals(np.array([np.arange(5.0), np.full(5, np.nan)]), 0.5)
    >>> ci.low.tolist(), ci.high.tolist()
    ([1.0, nan], [3.0, nan])
    """
    import warnings

    a = (1.0 - confidence) / 2.0
    dist = np.asarray(dist, dtype=np.float64)
    if np.isfinite(dist).all():  # the same quantiles; nanquantile loops over the rows in Python
        q = np.quantile(dist, [a, 1.0 - a], axis=1)
        return Interval(q[0], q[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN row: NaN, not a warning
        q = np.nanquantile(dist, [a, 1.0 - a], axis=1)
    return Interval(q[0], q[1])


# --------------------------------------------------------------------------- the null


class NullParts:
    """Per-language occurrence sums that give the closed-form null for any row weights (counts).

    The sums ``V @ [unit | centred]`` and ``V @ q`` (occurrence weights ``V =
    counts @ A``) come from the spreads' own passes over the vectors
    (:meth:`~semanscope_nb.metrics.spreads.Spreads.occurrence_parts`): all-ones
    counts use the sums of its construction pass, and the count matrix the
    spreads were last evaluated on reuses that call's products (with one word
    per row the occurrence weights are the intra weights; otherwise both are
    formed in the same pass), so on the bootstrap's resamples the chance level
    reads no vector again.  Other counts stream the vectors once, in blocks, so
    memory stays O(block x dims) whatever the number of concepts.
    """

    def __init__(self, aw: AlignedWords, spreads: Spreads) -> None:
        self.aw, self.spreads = aw, spreads
        self.L = len(aw.languages)
        self.K = self.L * (self.L - 1) / 2
        self.n_alt = [a.astype(np.float64) for a in spreads.alternatives]  # (R,): alternatives per row
        spreads.track_occurrences = True

    def inter(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected cosine inter distance and sqrt(E[Q]) (Euclidean, scaled units) under shuffling, per count row."""
        counts = np.asarray(counts, dtype=np.float64)
        parts = self.spreads.occurrence_parts(counts)  # working units (see Spreads)
        return null_inter(self.spreads, parts, [counts @ a for a in self.n_alt])


def null_inter(spreads: Spreads, parts: list[tuple[np.ndarray, np.ndarray]], occurrences: list[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray]:
    """The closed-form null (module docstring) from per-language occurrence parts ``(V @ [unit | centred], V @ q)``.

    ``occurrences[l]``: the occurrences drawn in language l per resample (``counts @ n_alt``).
    Returns the expected cosine inter distance and sqrt(E[Q]) (Euclidean, units of the spreads' scale).
    """
    from semanscope_nb.metrics.spreads import SparseSums, rowdot  # row dot products (np.vecdot where available)

    L, d = len(parts), spreads.d  # the languages of parts: all the spreads', or a pair's (RowSubset languages)
    K = L * (L - 1) / 2
    inv = [1.0 / n for n in occurrences]  # a_l = (V_l @ unit) / n_l, mu_l = (V_l @ centred) / n_l
    s_sum = sum(sq * i for (_, sq), i in zip(parts, inv))
    if L <= 3:  # sum_{l<m} a_l . a_m pair by pair: at most 3 row-dot products, no B x 2d temporaries
        parts = [(b.dense() if isinstance(b, SparseSums) else b, sq) for b, sq in parts]
        pair_dots_u = pair_dots_c = 0.0
        for l in range(L):
            for m in range(l + 1, L):
                (bl, _), (bm, _) = parts[l], parts[m]
                w = inv[l] * inv[m]
                pair_dots_u = pair_dots_u + rowdot(bl[:, :d], bm[:, :d]) * w
                pair_dots_c = pair_dots_c + rowdot(bl[:, d:], bm[:, d:]) * w
    elif not any(isinstance(both, SparseSums) for both, _ in parts):  # dense: the same identity, fewer passes
        pair_dots_u, pair_dots_c = _dense_pair_dots([both for both, _ in parts], inv, d)
    else:  # (||sum_l a_l||^2 - sum_l ||a_l||^2) / 2: L + 1 row-dot products instead of L (L - 1) / 2
        total = 0.0  # sum over languages of [a_l | mu_l]
        sq_u = 0.0
        sq_c = 0.0
        sparse = [isinstance(both, SparseSums) for both, _ in parts]
        total_t = np.zeros((2 * d, inv[0].shape[0])) if any(sparse) else None  # the sparse languages' sum, transposed
        off_w, off_c = [], []  # ... and the weights and centre of their -(V 1) c off their own columns
        for (both, _), i, is_sparse in zip(parts, inv, sparse):
            if is_sparse:  # its own columns only (SparseSums), the off-column centres of all of them at once below
                means = both.times(i)
                means.add_to(total_t)
                u2, c2 = means.squares()
                off_w.append(means.w1)
                off_c.append(spreads.off_column_centre(both.lang))
            else:
                means = both * i[:, None]
                total = total + means
                u2, c2 = rowdot(means[:, :d], means[:, :d]), rowdot(means[:, d:], means[:, d:])
            sq_u = sq_u + u2
            sq_c = sq_c + c2
        if total_t is not None:  # sum_l -(V_l 1 / n_l) c_off_l: one (d x L) @ (L x B) product
            total_t[d:] -= np.stack(off_c, axis=1) @ np.stack(off_w)
        if total_t is not None and not isinstance(total, np.ndarray):  # every language sparse: squares down the columns
            tot_u = np.einsum("ij,ij->j", total_t[:d], total_t[:d])
            tot_c = np.einsum("ij,ij->j", total_t[d:], total_t[d:])
        else:
            if total_t is not None:
                total = total + total_t.T
            tot_u, tot_c = rowdot(total[:, :d], total[:, :d]), rowdot(total[:, d:], total[:, d:])
        pair_dots_u = (tot_u - sq_u) / 2.0  # sum_{l<m} a_l . a_m
        pair_dots_c = (tot_c - sq_c) / 2.0
    inter_cos = 1.0 - pair_dots_u / K
    # sum_{l<m} (s_l + s_m) = (L - 1) sum_l s_l
    expected_q = ((L - 1) * s_sum - 2.0 * pair_dots_c) / K
    inter_euc = np.sqrt(np.maximum(expected_q, 0.0))
    return inter_cos, spreads.working_to_scaled(inter_euc)


def _dense_pair_dots(both: list[np.ndarray], inv: list[np.ndarray], d: int) -> tuple[np.ndarray, np.ndarray]:
    """``sum_{l<m} a_l . a_m`` of the unit and of the centred halves per row, ``a_l = both[l] * inv[l]`` (B x 2d each).

    As ``(||sum_l a_l||^2 - sum_l ||a_l||^2) / 2``, with the squares taken on ``both`` and scaled by ``inv^2`` (a
    per-row number), and, when every language has the same occurrence count per resample (one word per row in each,
    or the same alternatives), the sum taken unscaled and scaled once: a sum into one buffer and two row-dot products
    per language, not the scaled copy, a new sum array and two row-dot products of the copy (half the time at 481
    concepts x 6 languages).  The same sums up to the rounding of the scaling (a few ulps of each term; held in
    ``tests/test_fused_verdict.py``).

    >>> rng = np.random.default_rng(0); b = [rng.normal(size=(3, 4)) for _ in range(4)]; inv = [np.full(3, 0.5)] * 4
    >>> u, c = _dense_pair_dots(b, inv, 2)
    >>> a = [x * 0.5 for x in b]
    >>> want = sum(a[l][:, :2] @ a[m][:, :2].T for l in range(4) for m in range(l + 1, 4)).diagonal()
    >>> bool(np.allclose(u, want, rtol=1e-12))
    True
    """
    from semanscope_nb.metrics.spreads import rowdot

    # (a resample without occurrences, inv infinite: scaled first, as the general rule does, so its NaNs are the same)
    same = bool(np.isfinite(inv[0]).all()) and all(i is inv[0] or np.array_equal(i, inv[0]) for i in inv[1:])
    total = np.empty((inv[0].shape[0], 2 * d))
    scaled = None if same else np.empty_like(total)
    sq_u = sq_c = 0.0
    for l, b in enumerate(both):
        u2, c2 = rowdot(b[:, :d], b[:, :d]), rowdot(b[:, d:], b[:, d:])
        if not same:  # a_l itself, in a buffer of its own
            b = np.multiply(b, inv[l][:, None], out=scaled)
            w = inv[l] * inv[l]
            u2, c2 = u2 * w, c2 * w
        if l == 0:
            total[...] = b
        else:
            total += b
        sq_u, sq_c = sq_u + u2, sq_c + c2
    tot_u, tot_c = rowdot(total[:, :d], total[:, :d]), rowdot(total[:, d:], total[:, d:])
    if same:
        w = inv[0] * inv[0]
        return (tot_u - sq_u) * w / 2.0, (tot_c - sq_c) * w / 2.0
    return (tot_u - sq_u) / 2.0, (tot_c - sq_c) / 2.0


@dataclass(frozen=True)
class ChanceLevel(Result):
    """The closed-form chance level of one embedding space on one set of concepts."""

    kind = "chance-level"
    main_score_name = "sa_null_cosine"

    sa_null_cosine: float
    sa_null_euclidean: float  # closed-form lower bound (Jensen) for unit vectors, else by permutation (so the inter below)
    inter_null_cosine: float
    inter_null_euclidean: float
    provenance: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # why the chance level is undefined (collapsed vectors)


#: vectors whose norms all lie within this of 1 are unit vectors: the Euclidean chance level keeps its closed form there
UNIT_NORM_TOL = 1e-3
#: permutations of the Euclidean chance level for vectors that are not unit norm (at most: see the next two)
EUCLIDEAN_CHANCE_PERMUTATIONS = 100
#: standard error at which the Euclidean chance level stops drawing re-pairings: 2e-5 SA units, a 25th of the
#: half-unit of SA's third decimal (the SA of one re-pairing varies by about 3.6e-5 at 20,000 concepts, 2e-3 at 500)
EUCLIDEAN_CHANCE_SE = 2e-5
#: re-pairings drawn per step of that rule (and before its first test)
EUCLIDEAN_CHANCE_STEP = 8
#: bytes of re-pairing indices drawn and computed in one go (whole steps; at least one): at a few hundred concepts all
#: ``n_perm`` at once instead of a call per step (the same re-pairings, the same stopping step)
EUCLIDEAN_CHANCE_CHUNK_BYTES = 4 * 2**20


def is_unit_norm(aw: AlignedWords, *, tol: float = UNIT_NORM_TOL, norms: Sequence[np.ndarray] | None = None) -> bool:
    """Whether every word vector has norm 1 to ``tol`` (then the closed-form Euclidean chance bound is tight).

    ``norms``: each language's word norms when already known (a :class:`Spreads`' ``norms``, in the vectors' units:
    the same rule as :func:`unit_rows`), so the vectors are not read again.

    >>> import scipy.sparse as sp
    >>> eye = sp.identity(2, format="csr")
    >>> aw = AlignedWords(("en", "de"), (np.eye(2), 2 * np.eye(2)), (eye, eye), ("a", "b"))
    >>> is_unit_norm(aw), is_unit_norm(aw, norms=Spreads(aw).norms)
    (False, False)
    """
    if norms is None:
        norms = [unit_rows(np.asarray(v))[1] for v in aw.vectors]
    return all(bool(np.all(np.abs(np.asarray(n) - 1.0) <= tol)) for n in norms)


def euclidean_chance_by_permutation(aw: AlignedWords, *, n_perm: int = EUCLIDEAN_CHANCE_PERMUTATIONS,
                                    seed: int | None = 0, spreads: Spreads | None = None,
                                    precision: float | None = EUCLIDEAN_CHANCE_SE) -> tuple[float, float]:
    """(expected Euclidean SA, expected Euclidean inter spread) over at most ``n_perm`` shuffles of the translation pairing.

    The permutation estimate of the Euclidean chance level, for vectors that are not
    unit norm: there the closed-form ``sqrt(E[Q])`` (a Jensen bound) is loose
    (wordllama's off by up to 0.015).  Each permutation keeps the first language in
    place and re-pairs every other language's rows by ``rng.permutation(R)`` (drawn
    in language order from ``default_rng(seed)``); the paper's Euclidean spreads of
    the re-paired concepts are computed exactly (alternatives expand to their tuples), from one
    :class:`~semanscope_nb.metrics.spreads.Spreads` of ``aw`` (``spreads``: reuse one; a re-pairing
    changes only the inter spread's tuples, so nothing per word is computed again).

    **How many.**  Re-pairings are drawn :data:`EUCLIDEAN_CHANCE_STEP` at a time, in the
    seeded order above (so the first ``k`` are the same whatever ``n_perm``); after each
    step the standard error of the mean SA, ``sd(SA of the re-pairings) / sqrt(k)``, is
    compared with ``precision`` (:data:`EUCLIDEAN_CHANCE_SE`) and drawing stops once it is
    at or below it, else at ``n_perm``.  The SA of one re-pairing varies less the more
    concepts there are, so large data sets stop after a step or two while a few hundred
    concepts use all ``n_perm`` (their estimate is unchanged).  ``precision=None``:
    always ``n_perm``.

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(60, format="csr")
    >>> aw = AlignedWords(("en", "de"), (3 * rng.normal(size=(60, 8)), rng.normal(size=(60, 8))), (eye, eye), tuple(map(str, range(60))))
    >>> sa, inter = euclidean_chance_by_permutation(aw, n_perm=20, seed=0)
    >>> 0.0 < sa < 1.0 and inter > 0
    True
    """
    sas, inters = _euclidean_chance_draws(aw, n_perm=n_perm, seed=seed, spreads=spreads, precision=precision)
    return float(sas.mean()), float(inters.mean())


def _euclidean_chance_draws(aw: AlignedWords, *, n_perm: int, seed: int | None, spreads: Spreads | None,
                            precision: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(SA, inter spread) of each re-pairing drawn by :func:`euclidean_chance_by_permutation`'s rule."""
    check_count("n_perm", n_perm, minimum=1)
    check_seed(seed)
    if precision is not None and not precision > 0:
        raise ValueError(f"precision must be > 0 or None, got {precision!r}")
    R = aw.n_rows
    L = len(aw.languages)
    spreads = spreads if spreads is not None else Spreads(aw)  # built once: a re-pairing changes only the inter tuples
    intra = spreads.spreads(np.ones((1, R)), scaled=True)["intra_euc"][0]
    step = n_perm if precision is None else EUCLIDEAN_CHANCE_STEP
    # several steps drawn and computed in one go (at most EUCLIDEAN_CHANCE_CHUNK_BYTES of re-pairings): the generator's
    # stream does not depend on how its draws are cut and each re-pairing's inter spread is its own row, so the
    # re-pairings and their SAs are those of step-by-step drawing; the stopping rule is read at the same step ends
    fit = EUCLIDEAN_CHANCE_CHUNK_BYTES // (8 * L * R)
    chunk = step if precision is None else n_perm if fit >= n_perm else max(step, fit // step * step)
    sas, inters = [], []
    drawn = 0
    order = canonical_rows(aw)  # the draws re-pair slots; slot s is row order[s] (metrics.row_order)
    in_place = is_identity(order)  # (then slot s is row s: nothing to map)
    # (m, L, R): the first language in place, the others each rng.permutation(R) in turn, draw by draw (as permutation_test)
    for others in seeded_repairings(seed, n_perm=n_perm, n_lanes=L - 1, R=R, chunk=chunk):  # (the gate's first ones)
        m = others.shape[0]
        pairings = np.empty((m, L, R), dtype=np.intp)
        pairings[:, 0] = order
        pairings[:, 1:] = others if in_place else order.take(others)
        inter = spreads.repaired_inters_euclidean(pairings)  # (m, L, R): re-pairing i is pairings[i]
        sa = affinity_ratio(intra, inter)
        inter = np.ldexp(inter, spreads.exponent)
        if precision is not None:
            so_far = np.concatenate([*sas, sa])
            for end in range(drawn + step, min(drawn + m, n_perm - 1) + 1, step):  # each step's end before n_perm
                if end > 1 and so_far[:end].std(ddof=1) / math.sqrt(end) <= precision:
                    sas.append(sa[: end - drawn])
                    inters.append(inter[: end - drawn])
                    return np.concatenate(sas), np.concatenate(inters)
        sas.append(sa)
        inters.append(inter)
        drawn += m
    return np.concatenate(sas), np.concatenate(inters)


def chance_level(aw: AlignedWords, *, spreads: Spreads | None = None, n_perm: int = EUCLIDEAN_CHANCE_PERMUTATIONS,
                 seed: int | None = 0) -> ChanceLevel:
    """Expected SA when translation pairings are shuffled independently per language.

    Cosine: the closed form of the module docstring.  Euclidean SA: the closed-form
    bound for unit vectors (:func:`is_unit_norm`, where it is tight), else the mean
    over ``n_perm`` seeded shuffles (:func:`euclidean_chance_by_permutation`), and
    ``inter_null_euclidean`` likewise (the closed-form ``sqrt(E[Q])`` on the sphere).

    Fewer than 2 concepts raise :class:`~semanscope_nb.errors.EmbeddingError`; collapsed
    vectors give NaN with a ``note`` (the rules of :mod:`semanscope_nb.metrics.degenerate`).
    """
    from semanscope_nb.metrics.degenerate import MIN_CONCEPTS, collapsed_note, require_concepts

    require_concepts(aw.n_rows, minimum=MIN_CONCEPTS, what="chance_level")
    spreads = spreads if spreads is not None else Spreads(aw)
    ones = np.ones((1, aw.n_rows))
    point = spreads.spreads(ones, scaled=True)
    note = collapsed_note(point["intra_cos"][0], point["inter_cos"][0])
    if note is not None:
        return ChanceLevel(math.nan, math.nan, math.nan, math.nan, note=note)
    inter_cos, inter_euc = NullParts(aw, spreads).inter(ones)
    sa_euc = float(affinity_ratio(point["intra_euc"][0], inter_euc[0]))
    inter_euc_units = float(np.ldexp(inter_euc[0], spreads.exponent))
    if not is_unit_norm(aw):  # the closed form is a loose bound off the unit sphere: both by permutation
        sa_euc, inter_euc_units = euclidean_chance_by_permutation(aw, n_perm=n_perm, seed=seed, spreads=spreads)
    return ChanceLevel(
        sa_null_cosine=float(affinity_ratio(point["intra_cos"][0], inter_cos[0])),
        sa_null_euclidean=sa_euc,
        inter_null_cosine=float(inter_cos[0]),
        inter_null_euclidean=inter_euc_units,
    )


# --------------------------------------------------------------------------- permutation test


@dataclass(frozen=True)
class PermutationTest(Result):
    """Seeded permutation test of the cosine SA against shuffled translation pairings."""

    kind = "permutation"
    main_score_name = "p_value"

    sa: float
    null_mean: float
    null_sd: float
    p_value: float  # one-sided: P(SA_shuffled >= SA); exact, or with the +1 correction (see permutation_test)
    z: float
    n_perm: int
    seed: int | None
    provenance: dict[str, Any] = field(default_factory=dict)
    exact: bool = False  # every re-pairing was enumerated (n_perm is then their number)
    note: str = ""  # why the test is undefined (collapsed vectors)


def _row_means(aw: AlignedWords) -> tuple[list[np.ndarray], list[np.ndarray]]:
    means, n_alt = [], []
    for v, inc in zip(aw.vectors, aw.incidence):
        unit = unit_rows(np.asarray(v, dtype=np.float64))[0]
        A = sp.csr_matrix(inc, dtype=np.float64)
        n = np.diff(A.indptr).astype(np.float64)
        one_each = A.shape[0] == A.shape[1] and bool((n == 1).all()) and bool((A.indices == np.arange(A.shape[0])).all())
        means.append(unit if one_each else np.asarray(A @ unit) / n[:, None])  # row r holds word r: its mean is itself
        n_alt.append(n)
    return means, n_alt


def shuffled_inter_cosine(row_means: list[np.ndarray], n_alt: list[np.ndarray], perms: list[np.ndarray]) -> float:
    """The paper's tuple-weighted cosine inter distance after re-pairing language l's rows by ``perms[l]``."""
    L = len(row_means)
    K = L * (L - 1) / 2
    total = 0.0
    sq = 0.0
    tuples = 1.0
    for k in range(L):
        u = row_means[k][perms[k]]
        total = total + u
        sq = sq + np.einsum("ij,ij->i", u, u)
        tuples = tuples * n_alt[k][perms[k]]
    pair_dots = (np.einsum("ij,ij->i", total, total) - sq) / 2.0
    return float(np.sum(tuples * (1.0 - pair_dots / K)) / np.sum(tuples))


#: Re-pairings :func:`permutation_test` draws and evaluates at a time (Monte Carlo, through the Gram matrices): the
#: same draws and inter distances as all at once.  64 x 349 concepts is 180 KB of indices; at 349 x 2 x 512 with
#: 1000 re-pairings, 64 gave semantic_affinity 930 page faults and 52.3 ms CPU, 256: 1,345 and 54.0 ms, all at once
#: (1000): 2,690 and 56.2 ms (one BLAS thread, 2026-11-27)
PERMUTATION_CHUNK = 64
#: Bytes of all the language pairs' Gram matrices up to which :func:`permutation_test` keeps :data:`PERMUTATION_CHUNK`:
#: they then stay in a core's cache from one chunk to the next.  Beyond it every chunk reads each matrix back from
#: memory for a few gathers per cache line, so the chunks grow to :data:`PERMUTATION_CHUNK_BYTES` of indices (the same
#: draws and inter distances, see :func:`repairing_chunk`).
PERMUTATION_HOT_GRAM_BYTES = 2 * 2**20
#: Bytes of one (re-pairings x R) index array of a chunk when the Gram matrices do not stay in cache: 2 MB, 837
#: re-pairings of 313 concepts (a chunk's draws are L - 1 such arrays, its gathers four more: 18 MB at 6 languages,
#: beside 11.7 MB of Gram matrices).  The gathers of USE's artefact-free conceptual-space concepts (313 x 6 languages, 15
#: Gram matrices of 784 KB), 1000 re-pairings, one BLAS thread, load 8 on 2 cores: 271 ms in chunks of 64, 124 ms in
#: chunks of 512, 110 ms in one chunk (2026-11-27)
PERMUTATION_CHUNK_BYTES = 2 * 2**20


def repairing_chunk(R: int, L: int) -> int:
    """Re-pairings :func:`permutation_test` draws and gathers at a time for ``R`` concepts in ``L`` languages.

    :data:`PERMUTATION_CHUNK` while the ``L (L - 1) / 2`` Gram matrices (R x R, float64) fit
    :data:`PERMUTATION_HOT_GRAM_BYTES`, else as many as :data:`PERMUTATION_CHUNK_BYTES` of indices hold (at least
    :data:`PERMUTATION_CHUNK`).  Only the speed depends on it: the stream of draws does not depend on how it is cut,
    and each re-pairing's inter distance is its own row's arithmetic.

    >>> repairing_chunk(349, 2), repairing_chunk(313, 6), repairing_chunk(100_000, 3)
    (64, 837, 64)
    """
    if 8 * R * R * L * (L - 1) // 2 <= PERMUTATION_HOT_GRAM_BYTES:
        return PERMUTATION_CHUNK
    return max(PERMUTATION_CHUNK, PERMUTATION_CHUNK_BYTES // (8 * R))
#: Largest total size (bytes) of the language-pair Gram matrices of row means that
#: :func:`permutation_test` holds; beyond it, each re-pairing is computed from the vectors.
PERMUTATION_GRAM_BYTES = 256 * 2**20


def shuffled_inter_cosines(row_means: list[np.ndarray], n_alt: list[np.ndarray], perms: list[np.ndarray], *,
                           grams: dict[tuple[int, int], np.ndarray] | None = None) -> np.ndarray:
    """:func:`shuffled_inter_cosine` for a batch of re-pairings at once (``perms[l]`` is ``P x R``, or ``R`` for all alike).

    Every row-mean dot product of a language pair is taken once, in one Gram matrix
    ``M_k M_l^T`` (R x R; ``grams``: the ones :func:`row_mean_grams` gave, reused across
    batches); a re-pairing is then a gather from it, O(R) instead of O(R d).  When every
    row holds one word in every language the tuple weights are all 1 and are not gathered.
    Used when the Gram matrices fit :data:`PERMUTATION_GRAM_BYTES`.

    >>> rng = np.random.default_rng(0); m = [rng.normal(size=(5, 3)) for _ in range(3)]; n = [np.ones(5)] * 3
    >>> perms = [np.tile(np.arange(5), (2, 1)), np.array([np.arange(5), [1, 0, 2, 3, 4]]), np.tile(np.arange(5), (2, 1))]
    >>> one = [shuffled_inter_cosine(m, n, [p[i] for p in perms]) for i in range(2)]
    >>> bool(np.allclose(shuffled_inter_cosines(m, n, perms), one, rtol=1e-12))
    True
    """
    L = len(row_means)
    K = L * (L - 1) / 2
    grams = row_mean_grams(row_means) if grams is None else grams
    shape = np.broadcast_shapes(*(np.shape(p) for p in perms))
    R = row_means[0].shape[0]
    pair_dots = None
    flat = np.empty(shape, dtype=np.intp)
    # G[i, j] is G.ravel()[i R + j]: one gather of precomputed offsets; each language's row offsets i R are formed once,
    # not once per pair (the first language's, a single row of R, for every re-pairing alike)
    for k in range(L - 1):
        offsets = np.multiply(perms[k], R, dtype=np.intp)
        for m in range(k + 1, L):
            np.add(offsets, perms[m], out=flat)
            dots = grams[k, m].ravel().take(flat)
            pair_dots = dots if pair_dots is None else np.add(pair_dots, dots, out=pair_dots)
    if all(bool((a == 1.0).all()) for a in n_alt):  # one word per row everywhere: every tuple weighs 1
        return 1.0 - pair_dots.sum(axis=-1) / (K * shape[-1])
    tuples = np.ones(shape)
    for k in range(L):
        tuples *= n_alt[k][perms[k]]
    return np.sum(tuples * (1.0 - pair_dots / K), axis=-1) / np.sum(tuples, axis=-1)


#: bytes of seeded re-pairings kept in memory between calls (:func:`seeded_repairings`); one entry at most a quarter
#: of it (1000 re-pairings of 349 concepts in two languages: 2.8 MB), so the drawn indices of a few data sets stay
REPAIRING_MEMO_BYTES = 32 * 2**20
_REPAIRINGS = Memo(REPAIRING_MEMO_BYTES, sizeof=lambda kept: kept[0].nbytes)  # (seed, lanes, R) -> (drawn, state after)


def seeded_repairings(seed: int | None, *, n_perm: int, n_lanes: int, R: int, chunk: int) -> Iterator[np.ndarray]:
    """The first ``n_perm`` re-pairings of ``default_rng(seed)`` by :func:`_drawn_repairings`' rule, ``chunk`` at a time
    (read-only (m, n_lanes, R) index arrays), the drawn ones kept between calls.

    The re-pairings depend on nothing but ``(seed, n_lanes, R)``: the Euclidean chance level's (its first up to
    :data:`EUCLIDEAN_CHANCE_PERMUTATIONS`) are the first of the permutation gate's, and every model scored on the same
    concepts with the same seed draws the same ones.  Those drawn by an earlier call are handed out again; beyond them
    the generator goes on from the state it had after them (its ``bit_generator.state``, the buffered half of a 32-bit
    draw included), so the stream is the one of a single generator whatever was kept: the same draws, the same
    p-values.  Kept in :data:`REPAIRING_MEMO_BYTES` (not kept: ``seed`` None, or a draw above a quarter of it).
    NumPy's Fisher-Yates (``Generator.permuted``, ``shuffle``) costs ~13 ns per index, five times ``integers``, and
    no other array type draws faster (an int32 or int16 lane takes numpy's generic swap, measured slower).

    >>> a = np.concatenate(list(seeded_repairings(3, n_perm=10, n_lanes=2, R=6, chunk=4)))
    >>> b = np.concatenate(list(seeded_repairings(3, n_perm=25, n_lanes=2, R=6, chunk=7)))   # 10 kept, 15 drawn on
    >>> rng = np.random.default_rng(3)
    >>> loop = np.array([[rng.permutation(6) for _ in range(2)] for _ in range(25)])
    >>> bool((a == loop[:10]).all() and (b == loop).all()), a.shape
    (True, (10, 2, 6))
    >>> next(seeded_repairings(3, n_perm=5, n_lanes=2, R=6, chunk=5)).flags.writeable   # the kept draws: read-only
    False
    """
    key = None if seed is None else (int(seed), int(n_lanes), int(R))
    kept = _REPAIRINGS.get(key) if key is not None else None
    held = kept[0] if kept is not None else np.empty((0, n_lanes, R), dtype=np.intp)
    for a in range(0, min(n_perm, held.shape[0]), chunk):  # views of the kept draws
        yield held[a : min(a + chunk, n_perm)]
    if n_perm <= held.shape[0]:
        return
    rng = np.random.default_rng(seed)
    if kept is not None:
        rng.bit_generator.state = kept[1]  # where the kept draws left the generator
    keep = key is not None and 8 * n_lanes * R * n_perm <= REPAIRING_MEMO_BYTES // 4
    fresh: list[np.ndarray] = []
    try:
        for block in _drawn_repairings(rng, n_perm=n_perm - held.shape[0], n_lanes=n_lanes, R=R, chunk=chunk):
            block.flags.writeable = False  # handed out and kept: nobody writes into the kept draws
            if keep:
                fresh.append(block)
            yield block
    finally:  # also when the caller stops early (the Euclidean chance level's rule): the blocks drawn so far are kept
        if fresh:
            # the draws already yielded, the generator's state right after them (_drawn_repairings draws a block, then
            # yields it); the longer of two concurrent callers' draws stays (either is the same stream's start)
            now = _REPAIRINGS.get(key)
            drawn = np.concatenate([held, *fresh])
            if now is None or now[0].shape[0] < drawn.shape[0]:
                drawn.flags.writeable = False
                _REPAIRINGS.put(key, (drawn, rng.bit_generator.state))


def _drawn_repairings(rng: np.random.Generator, *, n_perm: int, n_lanes: int, R: int, chunk: int) -> Iterator[np.ndarray]:
    """:func:`permutation_test`'s re-pairings, ``chunk`` at a time: (m, n_lanes, R) index arrays, lane by lane
    ``rng.permutation(R)`` in turn (one ``Generator.permuted`` call per chunk: the same draws as one call for all)."""
    identity = np.arange(R)
    for start in range(0, n_perm, chunk):
        m = min(chunk, n_perm - start)
        block = np.empty((m, n_lanes, R), dtype=np.intp)  # (draws, languages after the first, R)
        lanes = block.reshape(-1, R)
        lanes[...] = identity  # every lane starts as arange(R) (a broadcast copy: np.tile's repeat is slower)
        # each lane shuffled in turn in place, in one call: NumPy's Generator.permuted runs on every lane the Fisher-Yates
        # draws of rng.shuffle, which are those of rng.permutation(R) (tests/test_chance.py draws them one by one)
        rng.permuted(lanes, axis=1, out=lanes)
        yield block


def row_mean_grams(row_means: list[np.ndarray]) -> dict[tuple[int, int], np.ndarray]:
    """``M_k @ M_l.T`` for every language pair k < l (the dot products :func:`shuffled_inter_cosines` gathers).

    >>> g = row_mean_grams([np.eye(2), np.ones((2, 2))]); g[0, 1].tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    from semanscope_nb.metrics.spreads import SPARSE_DENSITY, SPARSE_MIN_DIMS

    L = len(row_means)
    # TF-IDF row means (under SPARSE_DENSITY non-zero): scipy's sparse product sums only the non-zero terms (the same
    # dot products, another order of the same additions); a dense (R x d) @ (d x R) here spent R^2 d on zeros
    held = [sp.csr_matrix(M) if M.ndim == 2 and M.shape[1] >= SPARSE_MIN_DIMS
            and np.count_nonzero(M) <= SPARSE_DENSITY * M.size else None for M in row_means]
    return {(k, m): (held[k] @ held[m].T).toarray() if held[k] is not None and held[m] is not None
            else row_means[k] @ row_means[m].T for k in range(L) for m in range(k + 1, L)}


def unit_grams_from_centred(spreads: Spreads) -> tuple[dict[tuple[int, int], np.ndarray], float] | None:
    """The permutation test's unit Gram matrices from the centred ones the spreads hold for the Euclidean chance
    level, with the bound of their extra rounding (:meth:`Spreads.unit_grams_from_centred`), or None.

    Taken only for vectors off the unit sphere: there the verdict makes the centred matrices anyway; on the sphere
    the direct unit product costs the same and rounds less.

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(40, format="csr")
    >>> x = [v / np.linalg.norm(v, axis=1, keepdims=True) * rng.uniform(1, 2, size=(40, 1))   # norms 1 to 2
    ...      for v in (rng.normal(size=(40, 8)), rng.normal(size=(40, 8)))]
    >>> aw = AlignedWords(("en", "de"), tuple(x), (eye, eye), tuple(map(str, range(40))))
    >>> grams, extra = unit_grams_from_centred(Spreads(aw))
    >>> u = [unit_rows(v)[0] for v in aw.vectors]
    >>> bool(np.allclose(grams[0, 1], u[0] @ u[1].T, rtol=0, atol=1e-13)), extra < 1e-13
    (True, True)
    """
    if is_unit_norm(spreads.aw, norms=spreads.norms):
        return None
    return spreads.unit_grams_from_centred()


def n_repairings(n_rows: int, n_languages: int) -> float:
    """How many distinct re-pairings the permutation test can draw: ``(R!)^(L-1)`` (the first language stays).

    >>> n_repairings(3, 2), n_repairings(2, 3), n_repairings(120, 6)
    (6.0, 4.0, inf)
    """
    n = int(n_rows)
    if n > 170 or math.lgamma(n + 1) * (n_languages - 1) > 709:  # (R!)^(L-1) beyond a float (e^709.78), e.g. 120 concepts x 6 languages
        return math.inf
    return float(math.factorial(n)) ** (n_languages - 1)


def permutation_test(aw: AlignedWords, *, n_perm: int = 1000, seed: int | None = 0, spreads: Spreads | None = None,
                     point: tuple[float, float] | None = None) -> PermutationTest:
    """Shuffle each language's rows independently ``n_perm`` times; where does the observed SA fall?

    The first language stays in place (only relative pairings matter).  ``D_intra``
    does not change under the shuffle, so only the inter distance is recomputed,
    and a re-pairing counts as "SA at least the observed" when its inter distance
    is at most the observed one plus the near-tie tolerance
    (:func:`~semanscope_nb.metrics.degenerate.sa_tie_tolerance`), so ties are never
    lost to the last bit.

    * **Exact** when there are at most ``n_perm`` re-pairings (``(R!)^(L-1)``, e.g.
      2 concepts in 2 languages: 2): every one is enumerated, the observed pairing
      included, and ``p = #{re-pairings with SA >= observed} / #re-pairings`` (2 concepts
      -> at least 0.5; 3 -> at least 1/6); ``exact`` is True.
    * **Monte Carlo** otherwise: ``p = (1 + #{draws >= observed}) / (1 + n_perm)``, the
      +1 convention counting the observed pairing as one draw (Phipson & Smyth 2010),
      so p is never 0.

    Fewer than 2 concepts raise :class:`~semanscope_nb.errors.EmbeddingError`;
    collapsed vectors (every cosine distance zero to rounding) give NaN with a
    ``note`` (:mod:`semanscope_nb.metrics.degenerate`).

    ``spreads``: a :class:`~semanscope_nb.metrics.spreads.Spreads` of ``aw`` to read the
    observed spreads from; ``point``: those (intra, inter) cosine spreads themselves, when
    known (the verdict's artefact-free concepts: from the full set's spreads by
    :class:`~semanscope_nb.metrics.spreads.RowSubset`, no second ``Spreads``).
    """
    import itertools

    from semanscope_nb.metrics.degenerate import MIN_CONCEPTS, collapsed_note, require_concepts, sa_tie_tolerance

    check_count("n_perm", n_perm, minimum=1)
    check_seed(seed)
    require_concepts(aw.n_rows, minimum=MIN_CONCEPTS, what="permutation_test")
    derived = None  # the unit Gram matrices from the spreads' centred ones (unit_grams_from_centred), with their bound
    if point is not None:  # (intra, inter) cosine spreads of aw already known (a RowSubset of a larger set's Spreads)
        intra, inter = float(point[0]), float(point[1])
    else:
        derived = (unit_grams_from_centred(spreads) if spreads is not None and spreads.aw is aw and aw.n_rows > 8
                   else None)
        spreads = spreads if spreads is not None else Spreads(aw)
        at_ones = spreads.spreads(np.ones((1, aw.n_rows)), scaled=True)
        intra, inter = float(at_ones["intra_cos"][0]), float(at_ones["inter_cos"][0])
    note = collapsed_note(intra, inter)
    if note is not None:
        nan = math.nan
        return PermutationTest(sa=nan, null_mean=nan, null_sd=nan, p_value=nan, z=nan, n_perm=int(n_perm), seed=seed, note=note)
    sa = float(affinity_ratio(intra, inter))
    R = aw.n_rows
    tol = sa_tie_tolerance(aw.vectors, n_rows=R)
    if derived is not None:  # one word per row: the row means are the unit rows, only their count is read
        means, n_alt = [np.empty((R, 0))] * len(aw.vectors), [np.ones(R)] * len(aw.vectors)
        tol += derived[1]  # their own rounding, beyond a direct product's (counted by sa_tie_tolerance)
    else:
        means, n_alt = _row_means(aw)
    order = canonical_rows(aw)  # the re-pairings are drawn over slots: the rows in canonical order (metrics.row_order)
    if not is_identity(order):  # so the same concepts in another row order get the same re-pairings, the same p
        if derived is not None:
            derived = ({key: g[np.ix_(order, order)] for key, g in derived[0].items()}, derived[1])
        else:
            means, n_alt = [m[order] for m in means], [n[order] for n in n_alt]
    identity = np.arange(R)
    L = len(means)
    total = n_repairings(R, L)
    exact = total <= n_perm
    use_grams = R * R * 8 * L * (L - 1) / 2 <= PERMUTATION_GRAM_BYTES or derived is not None
    gram_job = None
    chunks: Iterator[np.ndarray]
    if exact:  # every re-pairing, the observed one included
        combos = itertools.product(itertools.permutations(range(R)), repeat=L - 1)
        others = np.array([[p for p in c] for c in combos], dtype=np.intp).reshape(-1, L - 1, R)
        chunks = iter([others])
    else:  # the generator's draws in a fixed order (draw by draw, language by language): the same seed, the same p
        # the Gram matrices meanwhile, on a free core (or the spreads' centred ones, made for the Euclidean chance level)
        gram_job = None if not use_grams or derived is not None else beside(row_mean_grams, means)
        # drawn repairing_chunk(R, L) re-pairings at a time (the generator's stream does not depend on how its draws are
        # cut; each re-pairing's inter distance is its own row): the index, offset and gathered arrays stay a few
        # hundred KB (while the Gram matrices stay in cache), instead of three (n_perm x R) arrays made and returned to
        # the system on every call
        # (seeded_repairings: those an earlier call drew -- the Euclidean chance level's, another model's -- not drawn again)
        chunks = seeded_repairings(seed, n_perm=n_perm, n_lanes=L - 1, R=R, chunk=repairing_chunk(R, L) if use_grams else n_perm)
    if use_grams:  # one Gram matrix per language pair, then gathers
        first = next(chunks)  # (drawn while a Gram job runs beside)
        grams = (derived[0] if derived is not None else gram_job.result() if gram_job is not None
                 else row_mean_grams(means))  # for the observed pairing and every chunk
        observed = float(shuffled_inter_cosines(means, n_alt, [identity[None, :]] * L, grams=grams)[0])  # the same arithmetic
        batch = max(1, int(PERMUTATION_GRAM_BYTES // (8 * R)))
        inters = np.concatenate([shuffled_inter_cosines(means, n_alt, [identity] + [part[i:i + batch, k] for k in range(L - 1)],
                                                        grams=grams)
                                 for part in itertools.chain([first], chunks) for i in range(0, part.shape[0], batch)])
    else:
        others = next(chunks)  # one chunk of every draw (exact, or drawn per re-pairing below: no Gram matrices)
        observed = shuffled_inter_cosine(means, n_alt, [identity] * L)
        inters = np.array([shuffled_inter_cosine(means, n_alt, [identity, *others[i]]) for i in range(others.shape[0])])
    null = affinity_ratio(intra, inters)
    hits = int(np.sum(inters <= observed + tol))  # SA_shuffled >= SA, within the near-tie rule
    n = inters.size
    sd = float(null.std(ddof=1)) if n > 1 else math.nan
    return PermutationTest(
        sa=sa,
        null_mean=float(null.mean()),
        null_sd=sd,
        p_value=float(hits / n) if exact else float((1 + hits) / (1 + n)),
        z=float((sa - null.mean()) / sd) if sd and math.isfinite(sd) else math.nan,
        n_perm=int(n),
        seed=seed,
        exact=bool(exact),
    )


# --------------------------------------------------------------------------- null-aware bootstrap


def point_holding_interval(point: float, dist: np.ndarray, confidence: float) -> Interval:
    """A bias-corrected percentile interval of ``dist`` that always holds ``point``.

    Efron's bias-corrected percentile (BC, the BCa interval without its acceleration,
    which needs a jackknife): with ``z0`` the normal quantile of the share of resamples
    below the point estimate (ties count half) and ``z`` that of ``(1 + confidence) / 2``,
    the interval runs between the quantiles ``Phi(2 z0 - z)`` and ``Phi(2 z0 + z)`` of the
    resamples.  A distribution centred on the point (``z0 = 0``) gives the percentile
    interval; a shifted one (a ratio statistic on few concepts, a chance level whose
    resamples duplicate words) is moved back towards the point.  BC holds the point
    exactly when the point lies inside the central percentile interval, so where it does
    not (a point outside nearly all resamples) the interval is extended to the point:
    it never excludes its own estimate.  NaN resamples are ignored.

    >>> d = np.linspace(0.528, 0.583, 1001)          # every resample above the point 0.520
    >>> ci = point_holding_interval(0.520, d, 0.95)
    >>> ci.low <= 0.520 <= ci.high
    True
    >>> round(point_holding_interval(0.0, np.linspace(-1, 1, 2001), 0.95).high, 2)   # centred: the percentile interval
    0.95
    """
    from statistics import NormalDist  # the standard library's normal quantiles (no scipy import on this path)

    d = np.asarray(dist, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Interval(math.nan, math.nan)
    if not math.isfinite(point):
        return percentile_interval(d, confidence)
    n = d.size
    share = (np.count_nonzero(d < point) + 0.5 * np.count_nonzero(d == point)) / n
    share = min(max(share, 0.5 / n), 1.0 - 0.5 / n)  # a finite z0 even when the point lies outside every resample
    norm = NormalDist()
    z0 = norm.inv_cdf(share)
    z = norm.inv_cdf((1.0 + confidence) / 2.0)
    lo, hi = np.quantile(d, [norm.cdf(2.0 * z0 - z), norm.cdf(2.0 * z0 + z)])
    return Interval(float(min(lo, point)), float(max(hi, point)))


def point_holding_estimate(point: float, dist: np.ndarray, *, confidence: float) -> Estimate:
    """The verdict's estimate of one statistic from its bootstrap values: the point, the std of the finite values
    (ddof 1) and :func:`point_holding_interval` (the point itself when the values do not vary).

    Every table that shows the verdict's gap with an interval (the verdict, :func:`~semanscope_nb.metrics.compare.compare_models`'
    scores, the pair matrix) uses this rule, so one model's gap has one interval on every path.

    >>> e = point_holding_estimate(0.1, np.linspace(0.05, 0.15, 201), confidence=0.9)
    >>> round(e.ci.low, 4), round(e.ci.high, 4), round(e.sem, 4)
    (0.055, 0.145, 0.0291)
    """
    return _estimate(point, np.asarray(dist, dtype=np.float64), confidence)


def _estimate(point: float, dist: np.ndarray, confidence: float) -> Estimate:
    d = dist[np.isfinite(dist)]
    sem = float(np.std(d, ddof=1)) if d.size > 1 else math.nan
    ci = point_holding_interval(point, d, confidence) if d.size else Interval(math.nan, math.nan)
    if d.size and sem == 0.0:
        ci = Interval(float(point), float(point))
    return Estimate(float(point), sem, ci)


@dataclass(frozen=True)
class NullAwareScores(Result):
    """Cosine SA beside its chance level, the gap and the chance-corrected score, each an :class:`Estimate`.

    The main score is the gap ``delta`` (SA minus its chance level), the number the verdict rests on.
    """

    kind = "null-aware"
    main_score_name = "delta"

    sa: Estimate
    sa_null: Estimate
    delta: Estimate  # sa - sa_null
    corrected: Estimate  # (sa - sa_null) / (1 - sa_null)
    sa_null_euclidean: float
    n_boot: int
    tier_flip_rate: float = float("nan")  # share of resamples whose paper tier differs from the point estimate's
    provenance: dict[str, Any] = field(default_factory=dict)


def null_aware_statistics(spreads: Spreads, parts: NullParts, counts: np.ndarray) -> dict[str, np.ndarray]:
    """SA (cosine and Euclidean), the cosine null, delta and the corrected score for each row-count vector (B x R)."""
    s = spreads.spreads(counts, scaled=True)
    return _null_aware(s, *parts.inter(counts))


def subset_statistics(subset: RowSubset, counts: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`null_aware_statistics` of the concepts ``subset.keep`` on full-set ``counts`` (the left-out ones weigh 0).

    Reads the products the spreads made for ``counts`` (call :func:`null_aware_statistics`
    on the same counts first, else they are computed) and adds the subset's correction
    (:class:`~semanscope_nb.metrics.spreads.RowSubset`): the same numbers as
    ``null_aware_statistics(Spreads(subset_rows(aw, keep)), ..., counts[:, keep])``.

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(40, format="csr")
    >>> aw = AlignedWords(("en", "de"), (rng.normal(size=(40, 8)), rng.normal(size=(40, 8))), (eye, eye), tuple(map(str, range(40))))
    >>> spreads = Spreads(aw); parts = NullParts(aw, spreads); keep = np.arange(40) >= 5
    >>> counts = next(resample_counts(40, 3, seed=0))
    >>> full = null_aware_statistics(spreads, parts, counts)
    >>> sub = subset_statistics(RowSubset(spreads, keep), counts)
    >>> from semanscope_nb.metrics.artefacts import subset_rows
    >>> alone = subset_rows(aw, keep); s2 = Spreads(alone)
    >>> bool(np.allclose(sub["sa"], null_aware_statistics(s2, NullParts(alone, s2), counts[:, keep])["sa"], rtol=1e-12))
    True
    """
    return _subset_statistics_and_spreads(subset, counts)[0]


def _subset_statistics_and_spreads(subset: RowSubset, counts: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(:func:`subset_statistics`, the subset's spreads they come from (:meth:`Spreads.from_parts`))."""
    spreads = subset.spreads
    counts = np.asarray(counts, dtype=np.float64)
    spreads.track_occurrences = True
    stats, intra, occ = subset.parts(counts, spreads.intra_parts(counts), spreads.occurrence_parts(counts))
    s = spreads.from_parts(stats, intra, scaled=True)
    return _null_aware(s, *null_inter(spreads, occ, [counts @ a for a in subset.n_alt])), s


def statistics_from_parts(spreads: Spreads, row_sums: np.ndarray, intra: list[tuple], occurrence: list[tuple],
                          occurrences: list[np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`null_aware_statistics` from parts already computed: per-row inter sums weighed (B x 3), and per language
    the intra parts and occurrence parts of :class:`Spreads` with its occurrence counts (any subset of its languages).

    What a language pair's statistics need from a pass over all languages (:mod:`semanscope_nb.metrics.pairs`).

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(30, format="csr")
    >>> aw = AlignedWords(("en", "de"), (rng.normal(size=(30, 4)), rng.normal(size=(30, 4))), (eye, eye), tuple(map(str, range(30))))
    >>> s = Spreads(aw); parts = NullParts(aw, s); ones = np.ones((1, 30))
    >>> rows = np.stack([s.tuples, s.row_cos, s.row_euc_scaled], axis=1)   # per-row inter sums
    >>> got = statistics_from_parts(s, ones @ rows, s.intra_parts(ones), s.occurrence_parts(ones), [ones.sum(axis=1)] * 2)
    >>> bool(np.isclose(got["sa"][0], null_aware_statistics(s, parts, ones)["sa"][0], rtol=1e-14))
    True
    """
    return _null_aware(spreads.from_parts(row_sums, intra, scaled=True), *null_inter(spreads, occurrence, occurrences))


def _null_aware(s: dict[str, np.ndarray], inter_null_cos: np.ndarray, inter_null_euc: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        sa = affinity_ratio(s["intra_cos"], s["inter_cos"])
        null = affinity_ratio(s["intra_cos"], inter_null_cos)
        return {
            "sa": sa, "sa_null": null, "delta": sa - null, "corrected": (sa - null) / (1.0 - null),
            "sa_euclidean": affinity_ratio(s["intra_euc"], s["inter_euc"]),
            "sa_null_euclidean": affinity_ratio(s["intra_euc"], inter_null_euc),
        }


_NULL_KEYS = ("sa", "sa_null", "delta", "corrected")


def null_aware_scores(point: dict[str, np.ndarray], dists: dict[str, list[np.ndarray]] | None, *, n_boot: int,
                      confidence: float, distributions: dict[str, np.ndarray] | None = None) -> NullAwareScores:
    """The :class:`NullAwareScores` (point-holding intervals) of statistics gathered over a bootstrap pass.

    ``point``: the statistics of all-ones counts; ``dists``: per key the list of each batch's values (None: no bootstrap).

    >>> pt = {k: np.array([0.6]) for k in ("sa", "sa_null", "delta", "corrected", "sa_null_euclidean")}
    >>> null_aware_scores(pt, None, n_boot=0, confidence=0.95).sa.value
    0.6
    """
    return _scores(point, dists, n_boot=n_boot, confidence=confidence, thresholds=None, distributions=distributions)


def _scores(point: dict[str, np.ndarray], dists: dict[str, list[np.ndarray]] | None, *, n_boot: int, confidence: float,
            thresholds: Any, distributions: dict[str, np.ndarray] | None) -> NullAwareScores:
    """The :class:`NullAwareScores` of one set of concepts from its point statistics and bootstrap distributions."""
    flip = math.nan
    if n_boot and dists is not None:
        full = {k: np.concatenate(v) for k, v in dists.items()}
        if distributions is not None:
            distributions.update(full)
        est = {k: _estimate(point[k][0], full[k], confidence) for k in _NULL_KEYS}
        if thresholds is not None:
            flip = _flip_rate(thresholds, float(point["sa"][0]), full["sa"])
    else:
        est = {k: Estimate(float(point[k][0]), math.nan, Interval(math.nan, math.nan)) for k in _NULL_KEYS}
    # the closed-form bound (tight for unit vectors); affinity_of_words and chance_level replace it by the
    # permutation estimate off the unit sphere (euclidean_chance_by_permutation), which rebuilds the spreads per shuffle
    return NullAwareScores(**est, sa_null_euclidean=float(point["sa_null_euclidean"][0]), n_boot=int(n_boot), tier_flip_rate=flip)


def tier_flip_rate(thresholds: Any, point: float, values: np.ndarray) -> float:
    """Share of the bootstrap SA ``values`` whose paper tier under ``thresholds`` differs from that of ``point``.

    >>> from semanscope_nb.metrics.affinity import TierThresholds
    >>> tier_flip_rate(TierThresholds(), 0.62, np.array([0.55, 0.61, 0.65, 0.7]))
    0.25
    """
    return _flip_rate(thresholds, float(point), np.asarray(values))


def _flip_rate(thresholds: Any, point: float, values: np.ndarray) -> float:
    """Share of ``values`` whose tier (``thresholds.classify``) differs from ``point``'s.

    :class:`~semanscope_nb.metrics.affinity.TierThresholds`' rule (great >= great, good >= good,
    else non-aligned; not finite: undefined) is applied to the whole array at once; any other
    ``thresholds`` object is asked value by value.
    """
    base = thresholds.classify(point)
    kind = type(thresholds)  # named, not imported: metrics.affinity imports this module
    if (kind.__module__, kind.__qualname__) != ("semanscope_nb.metrics.affinity", "TierThresholds"):  # a subclass may classify otherwise
        return float(np.mean([thresholds.classify(float(v)) != base for v in values]))
    v = np.asarray(values, dtype=np.float64)
    labels = np.select([~np.isfinite(v), reaches(v, thresholds.great), reaches(v, thresholds.good)],
                       ["undefined", "great", "good"], "non-aligned")  # classify's near-tie rule (metrics.ties)
    return float(np.mean(labels != base))


def null_aware_bootstrap(
    aw: AlignedWords,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    batch: int | None = None,
    spreads: Spreads | None = None,
    thresholds: Any = None,
    distributions: dict[str, np.ndarray] | None = None,
    should_stop: Any = None,
) -> NullAwareScores:
    """Bootstrap over concept rows of SA, its chance level, the gap and the chance-corrected score.

    Every statistic is computed on the same resampled rows (multinomial counts from
    ``seed``).  ``thresholds`` (a :class:`~semanscope_nb.TierThresholds`): also report
    how often the paper's tier flips across resamples.  ``distributions``: a dict
    that receives the bootstrap distributions (keys of :func:`null_aware_statistics`).
    ``batch`` (resamples held at once) defaults to ``spreads.bootstrap_batch(n_boot)``, which keeps
    the extra memory within half the embeddings' size.  ``should_stop`` (a callable, see
    :mod:`semanscope_nb.models.cancel`) is asked before each batch of resamples; when it says
    stop, :class:`~semanscope_nb.errors.Cancelled` is raised.  :func:`verdict_bootstrap` gives
    this and the artefact-free scores and the surface comparison from the same pass.
    """
    return verdict_bootstrap(aw, n_boot=n_boot, seed=seed, confidence=confidence, batch=batch, spreads=spreads,
                             thresholds=thresholds, distributions=distributions, should_stop=should_stop).full


@dataclass(frozen=True)
class VerdictPass:
    """Every verdict statistic of one bootstrap pass (:func:`verdict_bootstrap`); a part of a result, not a result."""

    full: NullAwareScores
    #: the scores on the concepts ``keep`` (None when every concept is kept)
    subset: NullAwareScores | None = None
    #: the model against the surface baseline on the kept concepts the baseline can embed (None when not asked)
    surface: "SurfaceComparison | None" = None
    #: why there is no surface comparison although one was asked (too few comparable concepts)
    surface_note: str = ""
    #: the cosine (intra, inter) spreads of the concepts ``keep`` at the point (None when every concept is kept): what
    #: the verdict's permutation test of those concepts reads (``metrics.affinity._gate_point``), taken once
    subset_point: tuple[float, float] | None = None


def _surface_rows(model: AlignedWords, surface: AlignedWords, keep: np.ndarray | None) -> np.ndarray:
    """The concepts both sides are compared on: ``keep``, without rows where the baseline has a zero vector (>= 3 of them)."""
    if tuple(model.languages) != tuple(surface.languages) or model.n_rows != surface.n_rows:
        raise ValueError(f"surface_null: the model ({list(model.languages)}, {model.n_rows} concepts) and the baseline "
                         f"({list(surface.languages)}, {surface.n_rows} concepts) must hold the same concepts")
    rows = np.ones(model.n_rows, dtype=bool) if keep is None else np.asarray(keep, dtype=bool).copy()
    if rows.shape != (model.n_rows,):
        raise ValueError(f"keep must be a boolean per concept ({model.n_rows}), got shape {rows.shape}")
    for v, inc in zip(surface.vectors, surface.incidence):
        z = np.flatnonzero(~np.any(np.asarray(v) != 0, axis=1))
        if z.size:
            rows &= ~(np.asarray(sp.csr_matrix(inc)[:, z].sum(axis=1)).ravel() > 0)
    if rows.sum() < 3:
        raise ValueError(f"surface_null: {int(rows.sum())} concepts to compare, need at least 3")
    return rows


#: the baseline's statistics of recent calls (point corrected score, bootstrap distribution), by what determines them:
#: a benchmark scores every model against the same baseline on the same concepts and resamples
_SURFACE_DONE = Memo(32)
#: and on disk (``settings.cache_dir / "surface-null"``), so a fresh process's first verdict reads them too
_SURFACE_STORE = SurfaceStore()


def _known_surface(key: bytes, n_boot: int, *, n_rows: int | None = None) -> tuple | None:
    """The baseline's (point corrected score, bootstrap distribution) under ``key``: in memory, else on disk, else None.

    A stored distribution that is not ``n_boot`` long (None for ``n_boot=0``) is not this key's: ignored (recomputed).
    ``n_rows``: the value must also hold the compared concepts, ``n_rows`` booleans (keys of :class:`BaselineVectors`).
    """
    known = _SURFACE_DONE.get(key)
    if known is None and _disk_store_on():
        known = _SURFACE_STORE.get(key)
        if known is not None:
            dist = known[1]
            fits = dist is None if not n_boot else dist is not None and dist.shape == (n_boot,)
            if n_rows is not None:
                fits = fits and len(known) == 3 and known[2].shape == (n_rows,) and int(known[2].sum()) >= 3
            known = _SURFACE_DONE.put(key, known) if fits else None
    return known


def _keep_surface(key: bytes, value: tuple[Any, np.ndarray | None]) -> None:
    _SURFACE_DONE.put(key, value)
    if _disk_store_on():
        _SURFACE_STORE.put(key, value)


def _disk_store_on() -> bool:
    """``settings.surface_store`` (``SEMANSCOPE_SURFACE_STORE``): False keeps the baseline's statistics in memory only."""
    from semanscope_nb.settings import settings

    return bool(settings.surface_store)


def _words_digest(aw: AlignedWords) -> "hashlib._Hash":
    """A digest of the vectors and incidence of ``aw`` (what its statistics depend on)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(tuple(aw.languages)).encode())
    for v, inc in zip(aw.vectors, aw.incidence):
        v = np.ascontiguousarray(v)
        h.update(f"{v.dtype.str}{v.shape}".encode())
        flat = v.reshape(-1)
        mask = flat != 0  # (NaN counts as non-zero, -0.0 as zero: as np.flatnonzero)
        if 4 * int(np.count_nonzero(mask)) < flat.size:  # mostly zeros (TF-IDF): where the others are and their values
            h.update(b"nz-bits")  # their positions as a bit mask: a third of the time of np.flatnonzero's indices
            h.update(np.packbits(mask).tobytes())
            h.update(flat[mask].tobytes())
        else:
            h.update(memoryview(v).cast("B"))
        inc = sp.csr_matrix(inc)
        for part in (inc.indptr, inc.indices, inc.data):
            h.update(np.ascontiguousarray(part).tobytes())
    return h


class BaselineVectors(collections.abc.Sequence):
    """The surface baseline's word vectors per language, read on first use, and ``identity``: what determines them.

    A caller that knows what determines the baseline's vectors -- the task library: the
    baseline encoder's cache key (model id, version, parameters, the fitted IDF corpus),
    the data set's content and languages, how the vectors were read -- passes the
    baseline as ``AlignedWords(languages, BaselineVectors(...), incidence, labels, ...)``.
    :func:`verdict_bootstrap` then looks the baseline's statistics up by ``identity``
    (with the concepts the model keeps, the seed and ``n_boot``) and calls ``load`` only
    on a miss: a fresh process whose store holds them reads no baseline vector.
    ``dims``: the baseline's dimension; a model whose vectors all have that dimension
    might be the baseline itself, so its words are compared with the loaded ones as
    for any baseline.  Safe from any thread (``load`` runs once).

    >>> v = BaselineVectors(b"what determines them", lambda: (np.eye(3), np.eye(3)), n_languages=2, dims=3)
    >>> v.loaded, len(v), v[1].shape, v.loaded
    (False, 2, (3, 3), True)
    """

    def __init__(self, identity: bytes, load: Any, *, n_languages: int, dims: int | None) -> None:
        self.identity = bytes(identity)
        self.n_languages = int(n_languages)
        self.dims = dims
        self._load = load
        self._vectors: tuple[np.ndarray, ...] | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the vectors were read."""
        return self._vectors is not None

    def _all(self) -> tuple[np.ndarray, ...]:
        if self._vectors is None:
            with self._lock:
                if self._vectors is None:
                    vectors = tuple(self._load())
                    if len(vectors) != self.n_languages:
                        raise ValueError(f"BaselineVectors: {len(vectors)} languages read, {self.n_languages} expected")
                    self._vectors, self._load = vectors, None
        return self._vectors

    def __len__(self) -> int:
        return self.n_languages

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._all())


def _identity_key(model: AlignedWords, surface: AlignedWords, keep: np.ndarray | None, *, seed: int | None,
                  n_boot: int) -> bytes | None:
    """The key of the baseline's statistics by what determines its vectors (:class:`BaselineVectors`), without them.

    None -- the vectors' digest is the key (:func:`_surface_key`) -- for any other baseline, a random seed, a model
    whose vectors might be the baseline's (every language of the baseline's dimension) or concepts that do not match.
    """
    lazy = surface.vectors
    if not isinstance(lazy, BaselineVectors) or seed is None or lazy.dims is None:
        return None
    if tuple(model.languages) != tuple(surface.languages) or model.n_rows != surface.n_rows:
        return None  # the compute path says what is wrong
    if all(np.ndim(v) == 2 and np.shape(v)[1] == lazy.dims for v in model.vectors):
        return None
    R = model.n_rows
    rows = np.ones(R, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if rows.shape != (R,):
        return None
    h = hashlib.blake2b(digest_size=20)
    h.update(b"baseline-identity|")
    h.update(lazy.identity)
    h.update(np.packbits(rows).tobytes())
    h.update(canonical_rows(model).astype("<i8").tobytes())  # the order the resamples are drawn in (metrics.row_order)
    h.update(f"|{seed}|{n_boot}|{R}|{int(rows.sum())}".encode())
    return h.digest()


def _surface_key(surface: AlignedWords, rows: np.ndarray, *, seed: int | None, n_boot: int, R: int,
                 order: np.ndarray) -> bytes | None:
    """What the baseline's statistics depend on: its words, the compared rows and the resamples (None: a random seed);
    ``order``: the concepts' canonical order the resamples are drawn in (:mod:`~semanscope_nb.metrics.row_order`)."""
    if seed is None:
        return None
    h = _words_digest(surface)
    h.update(np.packbits(rows).tobytes())
    h.update(np.asarray(order).astype("<i8").tobytes())
    h.update(f"|{seed}|{n_boot}|{R}|{int(rows.sum())}".encode())
    return h.digest()


def _same_words(a: AlignedWords, b: AlignedWords) -> bool:
    """Whether ``a`` and ``b`` hold the same vectors and incidence (the model is the surface baseline itself)."""
    if a is b:
        return True
    if tuple(a.languages) != tuple(b.languages):
        return False
    for va, vb, ia, ib in zip(a.vectors, b.vectors, a.incidence, b.incidence):
        if va.shape != vb.shape or ia.shape != ib.shape or (ia != ib).nnz or not np.array_equal(va, vb):
            return False
    return True


class SurfaceSide:
    """The surface baseline's side of the verdict's paired comparison: the compared concepts, its point and resamples.

    One rule for every path that compares a model with the surface-form baseline (:func:`verdict_bootstrap`, the
    pair matrix of :mod:`semanscope_nb.metrics.pairs`): the concepts compared are ``keep`` without the rows where
    the baseline has a zero vector (at least 3, else ``rows`` is None and ``note`` says why); the baseline's
    chance-corrected score is computed on the same multinomial counts of those concepts (``counts[:, rows]`` of the
    draws over all ``model.n_rows`` concepts), or read from the statistics an earlier call kept (in memory and in
    :class:`~semanscope_nb.metrics.surface_store.SurfaceStore`, by what determines them); when the model *is* the
    baseline, its own scores are the baseline's.  The caller computes the model's side on the same counts and
    passes it to :meth:`comparison`, which keeps the baseline's statistics for later calls.

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(40, format="csr"); labels = tuple(map(str, range(40)))
    >>> e = rng.normal(size=(40, 8))
    >>> model = AlignedWords(("en", "de"), (e, e + 0.3 * rng.normal(size=e.shape)), (eye, eye), labels)
    >>> spelling = AlignedWords(("en", "de"), (e, rng.normal(size=e.shape)), (eye, eye), labels)
    >>> side = SurfaceSide(model, spelling, None, seed=None, n_boot=0)
    >>> int(side.rows.sum()), side.note
    (40, '')
    """

    def __init__(self, model: AlignedWords, surface: AlignedWords, keep: np.ndarray | None, *, seed: int | None,
                 n_boot: int) -> None:
        R = model.n_rows
        self.n_boot = int(n_boot)
        self.rows: np.ndarray | None = None
        self.note = ""
        self._known: tuple | None = None  # (point, distribution) of an earlier call
        self._own = False  # the model is the baseline
        self._spreads: Spreads | None = None
        self._parts: NullParts | None = None
        self._dists: list[np.ndarray] = []
        # a baseline that says what determines its vectors (BaselineVectors): its statistics -- and the compared
        # concepts -- by that identity, read before (and then instead of) its vectors
        self._id_key = _identity_key(model, surface, keep, seed=seed, n_boot=n_boot)
        self._key: bytes | None = None
        by_id = _known_surface(self._id_key, n_boot, n_rows=R) if self._id_key is not None else None
        try:
            rows = by_id[2] if by_id is not None else _surface_rows(model, surface, keep)
        except ValueError as exc:
            if "need at least" not in str(exc):
                raise
            self.note = str(exc)
            return
        from semanscope_nb.metrics.artefacts import subset_rows

        self.rows = rows
        if by_id is not None:  # an earlier call's statistics on these concepts (never the model's own words: dims)
            self._known, self._id_key = by_id[:2], None
        elif _same_words(model, surface):  # the model is the baseline: its own statistics on the rows, not a second pass
            self._own, self._id_key = True, None
        else:
            # a BaselineVectors baseline is kept by its identity alone (its vectors' digest would cost a read of them)
            key = (_surface_key(surface, rows, seed=seed, n_boot=n_boot, R=R, order=canonical_rows(model))
                   if self._id_key is None else None)
            known = _known_surface(key, n_boot) if key is not None else None
            if known is not None:  # the same baseline, concepts and resamples as an earlier call (another model)
                self._known, self._id_key = known, None
            else:
                s_aw = subset_rows(surface, rows) if not rows.all() else surface
                self._spreads = Spreads(s_aw)
                self._parts = NullParts(s_aw, self._spreads)
                self._key = key

    def add(self, counts: np.ndarray, *, batch: int) -> None:
        """The baseline's corrected score on one batch of the verdict's counts (B x all concepts), when not known."""
        if self._spreads is None or self.rows is None:
            return
        s_batch = min(batch, self._spreads.bootstrap_batch(self.n_boot))  # the baseline's own memory budget
        for a in range(0, counts.shape[0], s_batch):
            self._dists.append(null_aware_statistics(self._spreads, self._parts, counts[a:a + s_batch, self.rows])["corrected"])

    def comparison(self, model_point: float, model_distribution: np.ndarray | None, *, confidence: float,
                   baseline: str = "tfidf-char") -> "SurfaceComparison":
        """The model (its corrected score on the compared concepts: point, resamples) against the baseline."""
        if self.rows is None:
            raise ValueError(f"no surface-form comparison: {self.note}")
        dm = model_distribution if self.n_boot else None
        if self._spreads is not None:
            theirs = null_aware_statistics(self._spreads, self._parts, np.ones((1, int(self.rows.sum()))))["corrected"][0]
            ds = np.concatenate(self._dists) if self.n_boot else None
            if self._key is not None:
                _keep_surface(self._key, (theirs, ds))
            if self._id_key is not None:  # with the compared concepts: a later hit reads no baseline vector
                _keep_surface(self._id_key, (theirs, ds, self.rows))
        elif self._own:
            theirs, ds = model_point, dm
        else:
            theirs, ds = self._known
        return _surface_comparison((model_point, theirs), dm, ds, n_concepts=int(self.rows.sum()), n_boot=self.n_boot,
                                   confidence=confidence, baseline=baseline)


def verdict_bootstrap(
    aw: AlignedWords,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    batch: int | None = None,
    spreads: Spreads | None = None,
    thresholds: Any = None,
    keep: np.ndarray | None = None,
    surface: AlignedWords | None = None,
    baseline: str = "tfidf-char",
    distributions: dict[str, np.ndarray] | None = None,
    subset_distributions: dict[str, np.ndarray] | None = None,
    should_stop: Any = None,
) -> VerdictPass:
    """SA, chance level, gap and corrected score of all concepts, of the concepts ``keep`` and against ``surface``: one pass.

    One multinomial draw over all R concepts per resample (``seed``), one product per
    batch with the vectors; the concepts ``keep`` leaves out weigh 0 in those same counts
    (:class:`~semanscope_nb.metrics.spreads.RowSubset`: the subset's statistics are the
    full set's plus a correction on the words of left-out rows), and the surface baseline
    (:func:`surface_null`) is scored on the same counts of the concepts it is compared on.
    The baseline is bootstrapped at most once per (baseline words, compared concepts,
    ``seed``, ``n_boot``) in a process: a benchmark compares every model with it on the
    same concepts, so later calls read the statistics of the first (kept for the 32 most
    recent, and on disk by :class:`~semanscope_nb.metrics.surface_store.SurfaceStore`, so a
    fresh process reads them too; a baseline of :class:`BaselineVectors` is looked up by what determines its
    vectors, so a hit reads none of them); when the model *is* the baseline (the same vectors), its own statistics are
    the baseline's.  ``distributions`` / ``subset_distributions`` receive the bootstrap distributions of all
    concepts and of ``keep``'s.  Each statistic equals its separate computation given
    the same counts (``tests/test_fused_verdict.py``).

    >>> import scipy.sparse as sp
    >>> rng = np.random.default_rng(0); eye = sp.identity(60, format="csr")
    >>> en = rng.normal(size=(60, 8))
    >>> aw = AlignedWords(("en", "de"), (en, en + 0.5 * rng.normal(size=(60, 8))), (eye, eye), tuple(map(str, range(60))))
    >>> v = verdict_bootstrap(aw, n_boot=100, seed=0, keep=np.arange(60) >= 6)
    >>> v.full.delta.value > 0.1, v.subset.delta.ci[0] > 0
    (True, True)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    spreads = spreads if spreads is not None else Spreads(aw)
    parts = NullParts(aw, spreads)
    R = aw.n_rows
    keep = None if keep is None else np.asarray(keep, dtype=bool)
    subset = RowSubset(spreads, keep) if keep is not None and not keep.all() else None
    side: SurfaceSide | None = None  # the baseline's side of the paired comparison (metrics.chance.SurfaceSide)
    model_rows: RowSubset | None = None  # the model on the compared concepts (None: all of them)
    note = ""
    if surface is not None:
        side = SurfaceSide(aw, surface, keep, seed=seed, n_boot=n_boot)
        note = side.note
        if side.rows is None:
            side = None
        else:
            same = subset is not None and np.array_equal(side.rows, keep)
            model_rows = subset if same else (RowSubset(spreads, side.rows) if not side.rows.all() else None)

    def model_on(rows_subset: RowSubset | None, full: dict, sub: dict | None, counts: np.ndarray) -> dict:
        if rows_subset is None:
            return full
        return sub if rows_subset is subset else subset_statistics(rows_subset, counts)

    ones = np.ones((1, R))
    point = null_aware_statistics(spreads, parts, ones)
    point_sub, subset_point = None, None
    if subset is not None:
        point_sub, at_ones = _subset_statistics_and_spreads(subset, ones)
        subset_point = (float(at_ones["intra_cos"][0]), float(at_ones["inter_cos"][0]))
    mine = model_on(model_rows, point, point_sub, ones)["corrected"][0] if side is not None else math.nan
    dists: dict[str, list[np.ndarray]] | None = None
    dists_sub: dict[str, list[np.ndarray]] | None = None
    dists_mine: list[np.ndarray] = []  # the model's corrected score on the compared concepts
    if n_boot:
        dists, dists_sub = {}, ({} if subset is not None else None)
        if batch is None:  # bound the peak beside the embeddings (resamples do not depend on the batch size)
            batch = spreads.bootstrap_batch(n_boot)
        for counts in resample_counts(R, n_boot, seed=seed, batch=batch, order=canonical_rows(aw)):
            check_stop(should_stop, "bootstrap")
            full = null_aware_statistics(spreads, parts, counts)
            for k, v in full.items():
                dists.setdefault(k, []).append(v)
            sub = None
            if subset is not None:
                sub = subset_statistics(subset, counts)
                for k, v in sub.items():
                    dists_sub.setdefault(k, []).append(v)
            if side is not None:
                dists_mine.append(model_on(model_rows, full, sub, counts)["corrected"])
                side.add(counts, batch=batch)
    kw = {"n_boot": n_boot, "confidence": confidence, "thresholds": thresholds}
    full_scores = _scores(point, dists, distributions=distributions, **kw)
    sub_scores = _scores(point_sub, dists_sub, distributions=subset_distributions, **kw) if subset is not None else None
    surface_scores = None
    if side is not None:
        surface_scores = side.comparison(mine, np.concatenate(dists_mine) if n_boot else None, confidence=confidence,
                                         baseline=baseline)
    return VerdictPass(full=full_scores, subset=sub_scores, surface=surface_scores, surface_note=note,
                       subset_point=subset_point)


# --------------------------------------------------------------------------- verdict

CHANCE_TIER = "chance"
BELOW_CHANCE_TIER = "below chance"
#: no tier: too few concepts are left once the artefacts are excluded (or none at all)
INSUFFICIENT_TIER = "insufficient"
#: above its chance level, but not above the surface-form baseline (character n-gram TF-IDF) on the same concepts
SURFACE_TIER = "not above surface form"
#: the labels that are not one of the paper's tiers (no "above chance" claim)
NO_TIER_LABELS = (CHANCE_TIER, BELOW_CHANCE_TIER, INSUFFICIENT_TIER, SURFACE_TIER)
MIN_CORRECTED = 0.02
"""The effect-size floor: an above-chance tier needs the chance-corrected score ``(SA - chance) / (1 - chance)`` >= this.

An interval above 0 says the gap is not noise; it does not say the gap matters.
0.02 is an SA gap of about 0.01 at a chance level of 0.5: a tenth of the width of
the paper's "good" band (0.50-0.60) and the size of what identical strings alone
give random vectors on the bundled datasets (corrected 0.01-0.02).  The offline
models that do align words score 0.07 (wordllama) to 0.5 (USE).  A smaller
corrected score gets no above-chance tier, however narrow its interval
(the verdict says "not meaningfully above chance").  ``bench/bench_verdict_calibration.py``
measures the false-positive rate of the rule on random data.
"""


def null_aware_tier(paper_tier: str, delta_ci: tuple[float, float], *, corrected: float | None = None,
                    min_corrected: float = MIN_CORRECTED) -> str:
    """The verdict tier: 'chance' when the gap's interval contains 0, 'below chance' when it lies below 0.

    With ``corrected`` (the point chance-corrected score), an interval above 0 earns
    ``paper_tier`` only when ``corrected`` reaches ``min_corrected`` (:data:`MIN_CORRECTED`, the
    effect-size floor; :func:`~semanscope_nb.metrics.ties.reaches`, the rule of the tier thresholds: a value tied
    with the floor within :data:`~semanscope_nb.metrics.ties.THRESHOLD_TOLERANCE` reaches it, so the verdict, the
    pair matrix and the pooled model means, which compute the score by other groupings of the same sums, decide
    alike); otherwise the tier is 'chance' (not meaningfully above chance).

    >>> null_aware_tier("great", (-0.01, 0.02)), null_aware_tier("good", (0.03, 0.08)), null_aware_tier("non-aligned", (-0.2, -0.1))
    ('chance', 'good', 'below chance')
    >>> null_aware_tier("good", (0.00007, 0.0007), corrected=0.0008)   # a real but negligible gap
    'chance'
    """
    lo, hi = delta_ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return paper_tier
    if lo <= 0.0 <= hi:
        return CHANCE_TIER
    if hi < 0.0:
        return BELOW_CHANCE_TIER
    if corrected is not None and not reaches(corrected, min_corrected):  # the tier thresholds' near-tie rule; NaN fails
        return CHANCE_TIER
    return paper_tier


#: the verdict's gate: the bootstrap and the permutation test both say the gap is above 0
ABOVE_CHANCE = "above chance"
#: the gap's bootstrap interval lies above 0 but the permutation p-value does not reach the one-sided level
UNCONFIRMED_BY_PERMUTATION = "unconfirmed by permutation"


def above_chance_gate(delta_ci: tuple[float, float], *, p_value: float | None, confidence: float = 0.95) -> str:
    """The verdict's "above chance" decision: the bootstrap interval *and* the permutation p-value must agree.

    The percentile bootstrap of the gap is liberal on few concepts: on random vectors
    its lower end lies above 0 more often than the nominal one-sided ``(1 - confidence) / 2``
    (``bench/bench_verdict_calibration.py`` measures it).  The seeded permutation test
    (:func:`permutation_test`) gives a valid p-value at any number of shuffles
    (exact, or ``(1 + hits) / (1 + n_perm)``), so the gate requires both:

    * :data:`BELOW_CHANCE_TIER` when the interval lies below 0, :data:`CHANCE_TIER`
      when it holds 0 (the bootstrap alone decides these: the permutation test cannot
      raise a verdict);
    * otherwise :data:`ABOVE_CHANCE` when ``p_value < (1 - confidence) / 2``, else
      :data:`UNCONFIRMED_BY_PERMUTATION` (a NaN p, from collapsed vectors, fails too).

    ``p_value=None`` (no test was run: a result built by hand, or read from a file
    written before this rule) leaves the interval alone to decide; a non-finite
    interval (no bootstrap) is passed on as :data:`ABOVE_CHANCE`, and callers refuse
    it first (:data:`~semanscope_nb.metrics.degenerate.MIN_VERDICT_BOOT`).

    >>> above_chance_gate((0.01, 0.05), p_value=0.001), above_chance_gate((0.01, 0.05), p_value=0.04)
    ('above chance', 'unconfirmed by permutation')
    >>> above_chance_gate((-0.01, 0.05), p_value=0.001), above_chance_gate((-0.05, -0.01), p_value=None)
    ('chance', 'below chance')
    """
    gate = null_aware_tier(ABOVE_CHANCE, delta_ci)
    if gate != ABOVE_CHANCE or p_value is None:
        return gate
    level = (1.0 - confidence) / 2.0
    return ABOVE_CHANCE if p_value < level else UNCONFIRMED_BY_PERMUTATION  # NaN < level is False


def straddle_note(sa_ci: tuple[float, float], thresholds: dict[str, float], labels: tuple[str, ...] = ("great", "good", "non-aligned")) -> str | None:
    """A sentence when a tier threshold lies inside the SA interval, e.g. 'good or great: the interval straddles 0.60'.

    >>> straddle_note((0.57, 0.63), {"great": 0.6, "good": 0.5})
    'good or great: the interval straddles 0.60'
    >>> straddle_note((0.61, 0.63), {"great": 0.6, "good": 0.5}) is None
    True
    """
    lo, hi = sa_ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    notes = []
    for upper, lower, cut in ((labels[0], labels[1], thresholds["great"]), (labels[1], labels[2], thresholds["good"])):
        if not reaches(lo, cut) and reaches(hi, cut):  # both tiers in the interval, by classify's near-tie rule
            notes.append(f"{lower} or {upper}: the interval straddles {cut:.2f}")
    return "; ".join(notes) or None


# --------------------------------------------------------------------------- the surface-form null


def above_surface(difference: float, *, low: float = math.nan) -> bool:
    """The surface-form gate: a difference of chance-corrected scores (model minus the surface baseline) whose
    interval lies above 0 (``low > 0``; not read when ``low`` is NaN: no bootstrap, or a pooled mean without one)
    and that reaches :data:`MIN_CORRECTED` (:func:`~semanscope_nb.metrics.ties.reaches`, the near-tie rule of every
    fixed threshold).  :attr:`SurfaceComparison.above` and the pooled model means both decide by it.

    >>> above_surface(0.05, low=0.01), above_surface(0.05, low=-0.01), above_surface(0.0), above_surface(0.03)
    (True, False, False, True)
    """
    interval_ok = low > 0.0 if math.isfinite(low) else True
    return bool(interval_ok and reaches(difference, MIN_CORRECTED))


@dataclass(frozen=True)
class SurfaceComparison(Result):
    """A model against the surface-form baseline on the same concepts: the paired difference of chance-corrected scores.

    ``difference`` = model's corrected score minus the baseline's, both on the same
    multinomial resamples of the same concepts (a paired bootstrap).  The model is
    *above surface form* when the difference's interval lies above 0 and the
    difference reaches :data:`MIN_CORRECTED` (the effect-size floor of the verdict).
    """

    kind = "surface-null"
    main_score_name = "difference"

    model_corrected: Estimate
    surface_corrected: Estimate
    difference: Estimate
    n_concepts: int
    n_boot: int
    baseline: str = "tfidf-char"
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def above(self) -> bool:
        """Whether the model beats the surface baseline (interval above 0 and a difference >= MIN_CORRECTED).

        Without a bootstrap (``n_boot=0``) only the point difference is read.
        """
        return above_surface(self.difference.value, low=self.difference.ci[0])

    def sentence(self) -> str:
        """One clause for a reader, e.g. 'above the surface-form baseline (...)'."""
        d = self.difference
        nums = (f"chance-corrected score {self.model_corrected.value:.3f} vs {self.surface_corrected.value:.3f} for "
                f"{self.baseline}, difference {d.value:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}] on {self.n_concepts} concepts")
        if self.above:
            return f"above the surface-form baseline ({nums})"
        return (f"a baseline that sees only spelling (character n-grams, {self.baseline}) does as well on the same "
                f"concepts ({nums}), so the alignment may come from shared spelling rather than meaning")


def surface_null(
    model: AlignedWords,
    surface: AlignedWords,
    *,
    keep: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    batch: int | None = None,
    baseline: str = "tfidf-char",
    model_distribution: np.ndarray | None = None,
) -> SurfaceComparison:
    """The model's chance-corrected score against the surface-form baseline's on the same concepts (paired bootstrap).

    ``model`` and ``surface`` hold the same concepts (rows) in the same languages,
    embedded by the model and by the surface baseline (character n-gram TF-IDF, the
    'tfidf-char' encoder).  ``keep`` restricts both to some concepts (the verdict
    passes the artefact-free ones); rows where the baseline has a zero vector (no
    n-gram) are left out of both.  Both scores are computed on the same ``n_boot``
    multinomial resamples drawn from ``seed`` over *all* the model's concepts, the
    left-out ones weighing 0 (the rule of :class:`~semanscope_nb.metrics.spreads.RowSubset`,
    so these are the verdict's resamples; the difference's interval is paired).
    ``model_distribution``: the model's corrected score on those very resamples (the
    artefact-free ``"corrected"`` distribution of :func:`verdict_bootstrap` with the same
    ``keep``, seed and ``n_boot``), which spares recomputing it; ignored when rows had to be dropped.

    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> eye = sp.identity(80, format="csr"); labels = tuple(map(str, range(80)))
    >>> en = rng.normal(size=(80, 16))
    >>> good = AlignedWords(("en", "de"), (en, en + 0.3 * rng.normal(size=en.shape)), (eye, eye), labels)
    >>> spelling = AlignedWords(("en", "de"), (en, en + 3.0 * rng.normal(size=en.shape)), (eye, eye), labels)
    >>> c = surface_null(good, spelling, n_boot=200, seed=0)
    >>> c.above, c.difference.value > 0.3
    (True, True)
    """
    from semanscope_nb.metrics.artefacts import subset_rows

    rows = _surface_rows(model, surface, keep)
    given = np.ones(model.n_rows, bool) if keep is None else np.asarray(keep, bool)
    reuse = (model_distribution is not None and n_boot and bool(np.all(rows == given))
             and np.asarray(model_distribution).shape == (n_boot,))
    m_spreads = Spreads(model)
    m_parts = NullParts(model, m_spreads)
    m_rows = RowSubset(m_spreads, rows) if not rows.all() else None
    s_aw = subset_rows(surface, rows) if not rows.all() else surface
    s_spreads = Spreads(s_aw)
    s_parts = NullParts(s_aw, s_spreads)

    def model_corrected(counts: np.ndarray) -> np.ndarray:
        full = null_aware_statistics(m_spreads, m_parts, counts)
        return (subset_statistics(m_rows, counts) if m_rows is not None else full)["corrected"]

    point = (model_corrected(np.ones((1, model.n_rows)))[0],
             null_aware_statistics(s_spreads, s_parts, np.ones((1, int(rows.sum()))))["corrected"][0])
    dm = ds = None
    if n_boot:
        if batch is None:
            batch = min(m_spreads.bootstrap_batch(n_boot), s_spreads.bootstrap_batch(n_boot))
        dists: list[list[np.ndarray]] = [[], []]
        for counts in resample_counts(model.n_rows, n_boot, seed=seed, batch=batch, order=canonical_rows(model)):
            if not reuse:  # else the model's side on these resamples is already known
                dists[0].append(model_corrected(counts))
            dists[1].append(null_aware_statistics(s_spreads, s_parts, counts[:, rows])["corrected"])
        dm = np.asarray(model_distribution, dtype=np.float64) if reuse else np.concatenate(dists[0])
        ds = np.concatenate(dists[1])
    return _surface_comparison(point, dm, ds, n_concepts=int(rows.sum()), n_boot=n_boot, confidence=confidence,
                               baseline=baseline)


def _surface_comparison(point: tuple[float, float], dm: np.ndarray | None, ds: np.ndarray | None, *, n_concepts: int,
                        n_boot: int, confidence: float, baseline: str) -> SurfaceComparison:
    if n_boot and dm is not None and ds is not None:
        est = [_estimate(point[0], dm, confidence), _estimate(point[1], ds, confidence),
               _estimate(point[0] - point[1], dm - ds, confidence)]
    else:
        nan_ci = Interval(math.nan, math.nan)
        est = [Estimate(float(point[0]), math.nan, nan_ci), Estimate(float(point[1]), math.nan, nan_ci),
               Estimate(float(point[0] - point[1]), math.nan, nan_ci)]
    return SurfaceComparison(model_corrected=est[0], surface_corrected=est[1], difference=est[2], n_concepts=int(n_concepts),
                             n_boot=int(n_boot), baseline=baseline)
