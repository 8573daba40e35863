"""The one near-tie rule for every decision taken on distances or similarities.

Floating-point scores are not exact: the same cosine computed by two BLAS
kernels (another CPU, another block height, another thread count, a GEMV
instead of a GEMM, faiss instead of NumPy) comes out different in the last
bits, and a text's vector moves by a few float32 ulps with the batch it was
encoded in.  A decision that rests on such a difference (which of two equally
close candidates is "nearest") would then change from machine to machine.  So
every decision in the metrics layer follows this rule:

**Rule.**  Two scores ``a`` and ``b`` of one query are *tied* when
``|a - b| <= tol``.  Candidate ``j`` *precedes* candidate ``g`` when ``j`` is
better by more than ``tol``, or when they are tied and ``j < g`` (the lower
index first: MTEB's convention for bitext mining, where we promise parity).

* **top-1 prediction**: the lowest index among the candidates tied with the
  best score (:func:`first_best`);
* **rank** of a gold item: 1 when it is the prediction, otherwise 1 + the
  number of candidates that precede it (so ``rank == 1`` exactly when the
  prediction is the gold);
* **top-k list**: built greedily, each position taking the lowest index among
  the remaining candidates tied with the best remaining score
  (:func:`order_row`).  It holds exactly k items in a deterministic order; when
  the "precedes" relation is transitive on the candidates (no chain of three
  or more tied candidates spreading over more than ``tol``) the list is sorted
  by it and item ``g`` sits at position ``rank(g)``;
* **groups** of near-equal values (degenerate vectors, the BUCC threshold):
  connected components of the "tied" relation;
* **a fixed threshold** (the paper's SA tiers, 0.5 and 0.6): a value tied with
  the threshold -- within :data:`THRESHOLD_TOLERANCE` below it -- *reaches* it
  (:func:`reaches`), so an SA that is exactly on a tier boundary in exact
  arithmetic gets the upper tier on every path, whichever side of the boundary
  its rounding fell on.

**Tolerance.**  For unit vectors ``x, y`` of dimension ``d`` a dot product
computed in any summation order, blocked or not, with or without FMA, is
within ``gamma_d * sum|x_i y_i| <= gamma_d`` of the exact value, where
``gamma_d = d u / (1 - d u)`` and ``u`` is the unit roundoff (Higham,
*Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 3.1;
``sum |x_i y_i| <= ||x|| ||y|| = 1`` by Cauchy-Schwarz).  Two computations of
the same score therefore differ by at most ``2 gamma_d``; the subtraction
``1 - cos`` and the normalisation add at most ``4 u``.  So

    ``tol = 2 (d + 2) u``    (:func:`dot_tolerance`)

relative to the scale of the summed terms (``||x|| ||y||``; 1 for cosine).
``u`` is that of the coarser of the input and the working precision: vectors
that arrive in float32 (every encoder's output) carry float32 rounding, and
their batch, BLAS kernel and thread count move them by a few float32 ulps,
so distances computed from them in float64 still cannot decide closer than
float32 allows.  Float32, d = 384: ``tol = 4.6e-5``; d = 512: ``6.1e-5``;
float64, d = 512: ``1.1e-13``.  Other scores carry their error through the
arithmetic (:func:`euclidean_tolerance`: the square root of the squared
distance's bound in the working precision, plus a linear term for coarser
inputs; :func:`csls_tolerance`,
:func:`margin_tolerance`, :func:`fused_tolerance`); a
:class:`~semanscope_nb.metrics.search.DistanceProvider` states its own as
``tie_tolerance`` (0.0 when unknown: exact float ties only).

A decision can still change across machines when two scores differ by almost
exactly ``tol`` (any rule with a threshold has a boundary); exact duplicates
and near ties well inside ``tol`` are decided by index everywhere, and
differences well above it by score everywhere.

Layer: metrics.  Imports NumPy only.

Example
-------
>>> import numpy as np
>>> tol = dot_tolerance(384, np.float32)
>>> f"{tol:.2e}"
'4.60e-05'
>>> D = np.array([[0.30, 0.30 + tol / 2, 0.10 + tol / 3, 0.10]])   # 2 and 3 tie; 0 and 1 tie
>>> first_best(D, tol).tolist()
[2]
>>> order_row(D[0], np.arange(4), k=4, tol=tol)[1].tolist()
[2, 3, 0, 1]
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = [
    "ColumnBest", "THRESHOLD_TOLERANCE", "ceil_to", "count_true", "csls_tolerance", "dot_tolerance", "euclidean_tolerance",
    "first_best", "floor_to", "fused_tolerance",
    "margin_tolerance", "order_row", "precedes", "reaches", "tie_groups", "topk_from_candidates", "unit_roundoff",
    "working_dtype",
]

THRESHOLD_TOLERANCE = 1e-9
"""How far below a fixed decision threshold a float64 ratio may fall and still be tied with it (:func:`reaches`).

Arithmetic: an SA is ``I / (I + X)`` of two mean cosine distances, each computed in
float64 from the closed form ``W^2 - ||sum w u||^2`` over n unit vectors of d
dimensions.  Two summation orders (the pair matrix's per-row sums, the full
spreads, another block height or BLAS kernel) each lie within ``gamma_{n+d} W^2``
of the exact value, so ``I`` and ``X`` of two paths differ by at most about
``4 (n + d) u`` and the ratio by at most ``8 (n + d) u / (I + X)``
(``|d SA / d I|, |d SA / d X| <= 1 / (I + X)``).  With ``u = 2**-53``,
``n + d <= 10**5`` and ``I + X >= 0.1`` (the most anisotropic offline model's
spreads sum to about 0.2) that is ``8.9e-10``: below ``1e-9``.  A difference that
small is far below any SA difference the paper reads (three decimals).
"""


def unit_roundoff(dtype: Any) -> float:
    """``u = eps / 2`` of a float dtype (2**-24 for float32, 2**-53 for float64).

    >>> unit_roundoff(np.float32) == 2.0 ** -24
    True
    """
    return float(np.finfo(np.dtype(dtype)).eps) / 2.0


def working_dtype(*dtypes: Any) -> np.dtype:
    """The coarsest float precision among ``dtypes`` (integers and others count as float64).

    >>> working_dtype(np.float64, np.float32), working_dtype(np.int64, np.float64)
    (dtype('float32'), dtype('float64'))
    """
    out = np.dtype(np.float64)
    for dt in dtypes:
        dt = np.dtype(dt)
        if np.issubdtype(dt, np.floating) and np.finfo(dt).eps > np.finfo(out).eps:
            out = dt
    return out


def dot_tolerance(dims: int, dtype: Any = np.float32) -> float:
    """``2 (d + 2) u``: how far two computations of one unit-vector dot product (or ``1 - cos``) may differ.

    Two summation orders of a d-term dot product each lie within ``gamma_d = d u / (1 - d u)``
    of the exact value (``sum |x_i y_i| <= 1`` for unit vectors), so they differ by at most
    ``2 gamma_d``; the normalisation and the subtraction ``1 - cos`` add ``4 u``.

    >>> f"{dot_tolerance(512, np.float32):.2e}", f"{dot_tolerance(512, np.float64):.2e}"
    ('6.13e-05', '1.14e-13')
    """
    d = int(dims)
    if d < 1:
        raise ValueError(f"dims must be a positive integer, got {dims!r}")
    u = unit_roundoff(dtype)
    return 2.0 * (d + 2) * u / max(1.0 - d * u, 0.5)


def euclidean_tolerance(dims: int, dtype: Any, scale_sq: float, *, input_dtype: Any = None, norm_sum: float = 0.0) -> float:
    """Tie tolerance of Euclidean distances ``sqrt(|q|^2 + |c|^2 - 2 q.c)`` computed in ``dtype``.

    Arithmetic: ``scale_sq`` bounds ``|q|^2 + |c|^2`` over every pair; the squared distance of
    two computations differs by at most ``2 (d + 6) u scale_sq`` (the dot product's ``gamma_d``,
    twice, plus the three roundings of the sum), and a square root turns an error ``e`` of the
    square into at most ``sqrt(e)`` (near zero; less elsewhere).  Inputs: when they arrive in a
    coarser precision than ``dtype`` (float32 vectors, float64 distances), every coordinate is
    allowed to move by ``(d + 2) u_in`` relative -- the allowance the cosine's tolerance gives its
    inputs -- which moves a distance by at most ``(d + 2) u_in (max |q| + max |c|)``
    (``norm_sum``): linear, no square root.  The tolerance is the sum of the two.

    >>> f"{euclidean_tolerance(9, np.float64, 50.0):.1e}"
    '4.1e-07'
    >>> f"{euclidean_tolerance(512, np.float64, 2.0, input_dtype=np.float32, norm_sum=2.0):.1e}"
    '6.2e-05'
    """
    d = int(dims)
    u = unit_roundoff(dtype)
    arithmetic = math.sqrt(2.0 * (d + 6) * u * max(float(scale_sq), 0.0) / max(1.0 - d * u, 0.5))
    u_in = unit_roundoff(working_dtype(dtype, input_dtype if input_dtype is not None else dtype))
    inputs = (d + 2) * u_in * float(norm_sum) if u_in > u else 0.0
    return arithmetic + inputs


def csls_tolerance(dims: int, dtype: Any = np.float32) -> float:
    """Tie tolerance of CSLS scores ``2 cos - r_q - r_c`` (each ``r`` a mean of ``knn`` cosines).

    ``2 cos`` carries twice the cosine's tolerance, ``r_c`` once (a mean of cosines is no less
    exact than a cosine); ``r_q`` is the same for every candidate of a query.  The three
    float32 operations on values up to 4 add ``12 u``.

    >>> csls_tolerance(384) > 3 * dot_tolerance(384)
    True
    """
    return 3.0 * dot_tolerance(dims, dtype) + 12.0 * unit_roundoff(dtype)


def margin_tolerance(cos_tolerance: float, min_denominator: float, dtype: Any = np.float32) -> float:
    """Tie tolerance of ratio margins ``cos(x, y) / den`` with ``den = (r_x + r_y) / 2 >= min_denominator > 0``.

    With ``t`` the cosine's tolerance (each ``r`` is a mean of cosines, no less exact),
    ``|d(c / den)| <= (t + |c / den| t) / den`` and ``|c / den| <= 1 / den``, plus a few
    roundings of the quotient.  A non-positive denominator (vectors whose nearest
    neighbours point away) makes margins meaningless: the tolerance is then infinite
    (every margin ties; the index decides).

    >>> f"{margin_tolerance(dot_tolerance(384), 0.5):.1e}"
    '2.8e-04'
    """
    if not min_denominator > 0:
        return math.inf
    den = float(min_denominator)
    return float(cos_tolerance) * (1.0 + 1.0 / den) / den + 4.0 * unit_roundoff(dtype) / den


def fused_tolerance(tolerances: Sequence[float], weights: Sequence[float], sds: Sequence[float], *,
                    deviation_bounds: Sequence[float | None] | None = None) -> float:
    """Tie tolerance of DistFuse ``sum_m w_m (D_m - mu_m) / sd_m``: each member's tolerance carried through.

    A member tie ``|D_m(a) - D_m(b)| <= t_m`` is a fused difference of at most ``w_m t_m / sd_m``;
    that sum is the tolerance, so a one-member ensemble (or copies of one member) ties exactly the
    candidates its member ties.  On top of it come the fusion's own float64 roundings: each fused
    value is computed in ``M + 2`` roundings (subtract, scale, divide, ``M - 1`` additions) of terms
    ``w_m |D_m - mu_m| / sd_m``, so two values differ by at most ``2 (M + 3) u sum_m w_m B_m / sd_m``
    beyond their exact difference, with ``B_m`` a bound on ``|D_m - mu_m|`` (``deviation_bounds``;
    for a z-score over N entries Samuelson's inequality gives ``B_m <= sd_m sqrt(N - 1)``).  A member
    whose bound is unknown (None, or ``deviation_bounds`` not given) gets ``w_m t_m / sd_m`` once more
    instead (the older, looser allowance).

    >>> fused_tolerance([1e-13, 2e-13], [1.0, 3.0], [0.1, 0.2])
    8e-12
    >>> f"{fused_tolerance([1e-13, 2e-13], [1.0, 3.0], [0.1, 0.2], deviation_bounds=[0.1 * 99, 0.2 * 99]):.3e}"  # 4e-12 carried
    '4.440e-12'
    """
    carried = [w * t / s for t, w, s in zip(tolerances, weights, sds)]
    bounds = list(deviation_bounds) if deviation_bounds is not None else [None] * len(carried)
    u = unit_roundoff(np.float64)
    n = len(carried)
    rounding = [c if b is None else 2.0 * (n + 3) * u * w * float(b) / s
                for c, b, w, s in zip(carried, bounds, weights, sds)]
    return float(sum(carried) + sum(rounding))


# --------------------------------------------------------------------------- decisions


def count_true(mask: np.ndarray, axis: int) -> np.ndarray:
    """``np.count_nonzero(mask, axis=axis)`` for a boolean array, as int64, summed as bytes (2-3x faster).

    >>> count_true(np.array([[True, False], [True, True]]), axis=0).tolist()
    [2, 1]
    """
    return np.add.reduce(mask.view(np.uint8), axis=axis, dtype=np.int32).astype(np.int64)


def floor_to(t: Any, dtype: Any) -> np.ndarray:
    """The largest value of ``dtype`` that is <= ``t`` (so ``D <= floor_to(t)`` iff ``D <= t`` for D in dtype).

    >>> float(floor_to(0.1, np.float32)) <= 0.1 < float(np.nextafter(floor_to(0.1, np.float32), np.float32(1)))
    True
    """
    t = np.asarray(t, dtype=np.float64)
    dt = np.dtype(dtype)
    x = t.astype(dt)
    return np.where(x.astype(np.float64) > t, np.nextafter(x, dt.type(-np.inf)), x)


def ceil_to(t: Any, dtype: Any) -> np.ndarray:
    """The smallest value of ``dtype`` that is >= ``t`` (so ``D < ceil_to(t)`` iff ``D < t`` for D in dtype).

    >>> float(np.nextafter(ceil_to(0.1, np.float32), np.float32(0))) < 0.1 <= float(ceil_to(0.1, np.float32))
    True
    """
    t = np.asarray(t, dtype=np.float64)
    dt = np.dtype(dtype)
    x = t.astype(dt)
    return np.where(x.astype(np.float64) < t, np.nextafter(x, dt.type(np.inf)), x)


def reaches(value: Any, threshold: float, *, tol: float = THRESHOLD_TOLERANCE) -> np.ndarray:
    """Does ``value`` reach ``threshold``: ``value >= threshold - tol`` (a value tied with the threshold reaches it).

    The one rule for a fixed threshold (the module docstring); NaN never reaches.

    >>> reaches(0.6 - 1e-16, 0.6).item(), reaches(0.6 - 1e-6, 0.6).item(), reaches(np.nan, 0.6).item()
    (True, False, False)
    """
    return np.asarray(value, dtype=np.float64) >= float(threshold) - tol


def precedes(a: Any, b: Any, index_a: Any, index_b: Any, tol: float, *, largest: bool = False) -> np.ndarray:
    """Does a candidate with score ``a`` and index ``index_a`` precede one with ``b``, ``index_b``?

    Better by more than ``tol``, or tied within ``tol`` and of lower index.  ``largest``:
    larger scores are better (similarities); default smaller (distances).

    >>> precedes(0.5, 0.5 + 1e-9, 3, 1, 1e-6).item(), precedes(0.5, 0.6, 3, 1, 1e-6).item()
    (False, True)
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    better = (a > b + tol) if largest else (a < b - tol)
    return better | ((np.abs(a - b) <= tol) & (np.asarray(index_a) < np.asarray(index_b)))


def first_best(D: np.ndarray, tol: float, *, axis: int = 1, largest: bool = False) -> np.ndarray:
    """The top-1 decision along ``axis``: the lowest index among entries tied with the best.

    >>> first_best(np.array([[0.2, 0.1 + 1e-9, 0.1]]), 1e-6).tolist()
    [1]
    >>> first_best(np.array([[0.2, 0.1 + 1e-9, 0.1]]), 0.0).tolist()
    [2]
    """
    D = np.asarray(D)
    if not tol:
        return np.argmax(D, axis=axis) if largest else np.argmin(D, axis=axis)  # the first of exact ties
    if largest:
        best = D.max(axis=axis, keepdims=True)
        mask = D >= ceil_to(best.astype(np.float64) - tol, D.dtype)
    else:
        best = D.min(axis=axis, keepdims=True)
        mask = D <= floor_to(best.astype(np.float64) + tol, D.dtype)
    return np.argmax(mask, axis=axis)


def order_row(values: Any, indices: Any, k: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` of one query's candidates under the rule (smaller value = better).

    ``values`` / ``indices``: candidates (any order) that include every candidate whose
    value is within ``tol`` of the k-th smallest.  Each position takes the lowest index among
    the remaining candidates tied with the best remaining value.  Returns (values, indices).

    >>> order_row([0.1, 0.1 + 1e-9, 0.5], [7, 2, 0], k=2, tol=1e-6)[1].tolist()
    [2, 7]
    """
    v = np.asarray(values, dtype=np.float64)
    ix = np.asarray(indices, dtype=np.int64)
    order = np.lexsort((ix, v))
    vals, idx = v[order].tolist(), ix[order].tolist()  # a handful of candidates: plain Python is the fast way
    k = min(int(k), len(vals))
    out_v: list[float] = []
    out_i: list[int] = []
    for _ in range(k):
        best = vals[0]  # the remaining candidates stay sorted by (value, index)
        pick, stop = 0, 1
        while stop < len(vals) and vals[stop] <= best + tol:
            if idx[stop] < idx[pick]:
                pick = stop
            stop += 1
        out_v.append(vals.pop(pick))
        out_i.append(idx.pop(pick))
    return np.array(out_v), np.array(out_i, dtype=np.int64)


def topk_from_candidates(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int, k: int,
                         tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of every row from candidate entries ``(rows, cols, vals)`` (smaller value = better).

    Every row must hold at least ``k`` candidates, and every entry within ``tol`` of its
    row's k-th smallest.  Rows whose candidates hold no tied pair out of index order are
    read off a (value, index) sort; the few others are ordered by :func:`order_row`.
    Returns ``(indices, values)`` as int64 / float64 arrays (n_rows x k).

    >>> r = np.array([0, 0, 0]); c = np.array([4, 1, 2]); v = np.array([0.2, 0.2 + 1e-9, 0.9])
    >>> topk_from_candidates(r, c, v, 1, 2, 1e-6)[0].tolist()
    [[1, 4]]
    """
    order = np.lexsort((cols, vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    starts = np.searchsorted(rows, np.arange(n_rows))
    ends = np.r_[starts[1:], rows.size]
    take = starts[:, None] + np.arange(k)[None, :]
    idx = cols[take].astype(np.int64)
    out = vals[take].astype(np.float64)
    if tol > 0 and rows.size > 1:
        # a tied adjacent pair out of index order among the candidates that can reach the first k places (within tol
        # of the row's k-th value): only there does the (value, index) sort differ from the rule's order
        reach = vals <= (out[:, k - 1] + tol)[rows]
        bad = (rows[1:] == rows[:-1]) & reach[1:] & (vals[1:] - vals[:-1] <= tol) & (cols[1:] < cols[:-1])
        if bad.any():
            for r in np.unique(rows[1:][bad]):
                s, e = starts[r], ends[r]
                keep = reach[s:e]  # the candidates that can reach the first k places
                out[r], idx[r] = order_row(vals[s:e][keep], cols[s:e][keep], k, tol)
    return idx, out


def tie_groups(values: Any, tol: float) -> np.ndarray:
    """Label each value with its tie group: connected components of ``|a - b| <= tol`` (labels in value order).

    >>> tie_groups([0.3, 0.1, 0.1 + 1e-9, 0.2], 1e-6).tolist()
    [2, 0, 0, 1]
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(v, kind="stable")
    s = v[order]
    labels = np.empty(v.size, dtype=np.int64)
    labels[order] = np.r_[0, np.cumsum(np.diff(s) > tol)] if v.size else np.empty(0, dtype=np.int64)
    return labels


class ColumnBest:
    """The top-1 decision of every column of a matrix served in row blocks (rows in increasing order).

    Keeps, per column, the running best and every row still tied with it, so the final
    answer is the lowest row index tied with the column's overall best -- the same as
    :func:`first_best` on the whole matrix with ``axis=0``.  Memory: about one entry per
    column plus the tied ones.

    >>> cb = ColumnBest(2, 1e-6)
    >>> cb.update(np.array([[0.5, 0.2]]), 0); cb.update(np.array([[0.1, 0.2 - 1e-9]]), 1)
    >>> cb.result().tolist()
    [1, 0]
    """

    def __init__(self, n_columns: int, tol: float, *, largest: bool = False) -> None:
        self.tol = float(tol)
        self.largest = largest
        self.best = np.full(n_columns, -np.inf if largest else np.inf)
        self._cols = np.empty(0, dtype=np.int64)
        self._rows = np.empty(0, dtype=np.int64)
        self._vals = np.empty(0)

    def update(self, block: np.ndarray, row_offset: int) -> None:
        """Feed the rows ``row_offset ...`` of the matrix (a 2-D block)."""
        # the cut is rounded outwards in the block's dtype (a superset); the exact test is in float64 below
        if self.largest:
            self.best = np.maximum(self.best, block.max(axis=0))
            cut = np.nextafter((self.best - self.tol).astype(block.dtype), block.dtype.type(-np.inf))
            flat = np.flatnonzero(block >= cut[None, :])  # 1-D: far faster than a 2-D nonzero
        else:
            self.best = np.minimum(self.best, block.min(axis=0))
            cut = np.nextafter((self.best + self.tol).astype(block.dtype), block.dtype.type(np.inf))
            flat = np.flatnonzero(block <= cut[None, :])
        r, c = np.divmod(flat, block.shape[1])
        v = block.ravel()[flat].astype(np.float64)
        cols = np.concatenate([self._cols, c])
        rows = np.concatenate([self._rows, r + row_offset])
        vals = np.concatenate([self._vals, v])
        keep = vals >= self.best[cols] - self.tol if self.largest else vals <= self.best[cols] + self.tol
        self._cols, self._rows, self._vals = cols[keep], rows[keep], vals[keep]

    def result(self, *, values: bool = False) -> Any:
        """Per column: the lowest row index tied with the column's best (and its value, if ``values``)."""
        out = np.full(self.best.size, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(out, self._cols, self._rows)
        if not values:
            return out
        val = np.full(self.best.size, np.nan)
        chosen = out[self._cols] == self._rows
        val[self._cols[chosen]] = self._vals[chosen]
        return out, val
