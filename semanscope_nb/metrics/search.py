"""Exact top-k search over distance providers, one block of query rows at a time.

A :class:`DistanceProvider` serves the distances between queries and a corpus
one block of query rows at a time (smaller = closer).  Two come with the
package: :class:`EmbeddingDistances` (cosine or Euclidean between two embedding
arrays) and :class:`semanscope_nb.metrics.fusion.FusedDistances` (DistFuse).  A
block holds ``block x n_corpus`` values and nothing larger is ever allocated, so
a 50,000 x 50,000 search never builds the full matrix; with ``block=None`` the
block height keeps one block (counted as float64) under ``max_block_bytes``.

Ordering and ties: the one near-tie rule of :mod:`semanscope_nb.metrics.ties`.
Distances within a provider's ``tie_tolerance`` of each other count as tied
(``2 (d + 2) u`` for cosine: the bound on how far two BLAS blockings of one
dot product can differ), and tied candidates are ordered by corpus index,
lower first -- MTEB's convention.  A top-k list holds exactly k items: each
position takes the lowest index among the remaining candidates tied with the
best remaining distance.  The faiss path and the NumPy path take the same
decisions (faiss's candidates are re-ranked with the rule, with a few extra
fetched so that a tie across the k-th boundary is seen).

Magnitudes: no raw coordinate is squared.  Cosine rows are divided by a power
of two near their largest coordinate before normalising, and Euclidean vectors
by one such power of two before centring (both exact), so vectors scaled by
1e160 or 1e-200 rank exactly like the rescaled ones; Euclidean distances come
back in the vectors' own units.

Speed: cosine distances are computed in float32 by default (``dtype=None``;
Euclidean stays float64), and :func:`topk_search` hands plain cosine top-k to
faiss-cpu's exact flat inner-product search when faiss is installed (the
``retrieval`` extra): faiss is a well-kept library whose multi-threaded GEMM +
heap selection is what "BLAS speed" means here, and it is exact (no
approximation).  Its candidates are re-ordered by the tie rule above (a row
whose extra candidates are all still tied with the k-th is redone exactly).  ``backend="numpy"`` forces
the blocked NumPy path (DistFuse and Euclidean always use it).

Layer: metrics.  Imports numpy, :mod:`semanscope_nb.errors` and :mod:`semanscope_nb.metrics.ties`
(faiss lazily, if installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.metrics.ties import (
    dot_tolerance,
    euclidean_tolerance,
    first_best,
    order_row,
    topk_from_candidates,
    working_dtype,
)

Metric = Literal["cosine", "euclidean"]
METRICS = ("cosine", "euclidean")
DEFAULT_MAX_BLOCK_BYTES = 32 * 2**20  # per block of distances (counted as float64); peak is ~3x (index/bool temporaries)


# --------------------------------------------------------------------------- distance providers


class DistanceProvider:
    """Distances between ``n_queries`` queries and ``n_corpus`` corpus items, served by row blocks.

    Subclasses implement :meth:`block` (a fresh float array, float64 by default; smaller = closer) and :attr:`T`
    (the same distances with queries and corpus swapped).  ``tie_tolerance``: distances closer than
    this count as tied (:mod:`semanscope_nb.metrics.ties`); 0.0 (exact float ties only) unless the
    subclass knows its arithmetic.
    """

    n_queries: int
    n_corpus: int
    tie_tolerance: float = 0.0
    distance_bound: float | None = None  # an upper bound on |distance| over all pairs, when the subclass knows one

    def block(self, rows: slice) -> np.ndarray:  # pragma: no cover - abstract
        """Distances of queries ``rows`` to every corpus item: (rows x n_corpus) floats (a fresh array)."""
        raise NotImplementedError

    @property
    def T(self) -> "DistanceProvider":  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What these distances are (for provenance)."""
        return {"provider": type(self).__name__}

    def diagonal(self) -> np.ndarray:
        """Distances of query i to corpus item i (square providers); generic fallback: one blocked pass."""
        _check_square(self)
        out = np.empty(self.n_queries)
        rows = self.rows_per_block(None)
        for a in range(0, self.n_queries, rows):
            b = min(self.n_queries, a + rows)
            D = self.block(slice(a, b))
            out[a:b] = D[np.arange(b - a), np.arange(a, b)]
        return out

    def rows_per_block(self, block: int | None, max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES) -> int:
        """Block height: ``block`` if given, else as many rows as fit in ``max_block_bytes``."""
        if block is not None:
            if int(block) != block or block < 1:
                raise ValueError(f"block must be a positive integer, got {block!r}")
            return int(block)
        return int(max(1, min(self.n_queries, max_block_bytes // (8 * max(1, self.n_corpus)))))


def _check_square(p: "DistanceProvider") -> None:
    if p.n_queries != p.n_corpus:
        raise EmbeddingError(f"the diagonal needs as many queries as corpus items, got {p.n_queries} and {p.n_corpus}")


def _default_dtype(metric: str, dtype: Any) -> np.dtype:
    """float32 for cosine (unit vectors: ample for ranking, half the memory, twice the BLAS speed); float64 otherwise."""
    if dtype is None:
        return np.dtype(np.float32 if metric == "cosine" else np.float64)
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be np.float32, np.float64 or None, got {dtype!r}")
    return dt


def as_matrix(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise EmbeddingError(f"{name} must be a numeric (rows x dims) array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise EmbeddingError(f"{name} must be a 2-D array (rows x dims), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise EmbeddingError(f"{name} is empty (0 rows)")
    if arr.shape[1] == 0:
        raise EmbeddingError(f"{name} has 0 dimensions")
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
    if bad.size:
        raise EmbeddingError(f"{name} has NaN or inf values in {bad.size} row(s), e.g. rows {bad[:5].tolist()}")
    return arr


def _row_maxabs(x: np.ndarray, rows: int = 8192) -> np.ndarray:
    """Largest absolute coordinate of every row (float64), in row blocks (no full-size temporary)."""
    out = np.empty(x.shape[0])
    for a in range(0, x.shape[0], rows):
        out[a : a + rows] = np.abs(x[a : a + rows]).max(axis=1)
    return out


def check_names(names: Any) -> tuple[str, str]:
    """``names`` (what the two sides are called in messages and directions) as a pair of strings.

    >>> check_names(["en", "zh"])
    ('en', 'zh')
    """
    if (not isinstance(names, (tuple, list)) or len(names) != 2
            or not all(isinstance(n, str) and n for n in names)):
        raise ArgumentError(f"names must be a pair of non-empty strings, e.g. ('en', 'zh'), got {names!r}")
    return (names[0], names[1])


class EmbeddingDistances(DistanceProvider):
    """Cosine (``1 - cos``) or Euclidean distances between two embedding arrays.

    >>> import numpy as np
    >>> d = EmbeddingDistances(np.eye(3), np.eye(3))
    >>> d.block(slice(0, 1)).round(3).tolist()
    [[0.0, 1.0, 1.0]]
    """

    def __init__(
        self,
        queries: Any,
        corpus: Any,
        *,
        metric: Metric = "cosine",
        dtype: type | None = np.float64,
        names: tuple[str, str] = ("queries", "corpus"),
    ) -> None:
        names = check_names(names)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        dtype = _default_dtype(metric, dtype)  # None: float32 for cosine (what topk_search / bitext_retrieval use)
        q = as_matrix(queries, names[0])
        c = as_matrix(corpus, names[1])
        if q.shape[1] != c.shape[1]:
            raise EmbeddingError(
                f"{names[0]} has {q.shape[1]} dimensions but {names[1]} has {c.shape[1]}: the two must live in one "
                "space (a model's own output, or mapped into one, e.g. with semanscope_nb.procrustes)"
            )
        self.metric = metric
        self.names = names
        self.dtype = np.dtype(dtype)
        self.n_queries, self.n_corpus = q.shape[0], c.shape[0]
        self.dims = q.shape[1]
        self._exponent = 0  # Euclidean work runs on coordinates / 2**_exponent (exact); distances are scaled back
        # ties: u of the coarser of the inputs' and the working precision (float32 vectors carry float32 noise)
        tie_dtype = working_dtype(q.dtype, c.dtype, self.dtype)
        if metric == "cosine":
            self._q = self._unit(q, names[0])
            self._c = self._unit(c, names[1])
            self.tie_tolerance = dot_tolerance(self.dims, tie_dtype)
        else:
            # Scale by a power of two near the largest coordinate (exact), so no square overflows (1e160) or
            # underflows (1e-200).  Euclidean distance is translation-invariant: centring on the joint mean first
            # keeps ||q||^2 + ||c||^2 - 2 q.c from cancelling catastrophically for far-off-origin data.
            self._exponent = int(np.frexp(max(float(_row_maxabs(q).max()), float(_row_maxabs(c).max())))[1])
            if self.dtype != np.float64 and abs(self._exponent) > 100:
                raise EmbeddingError(
                    f"dtype={self.dtype} cannot hold Euclidean distances of vectors whose largest coordinate is about "
                    f"2**{self._exponent}; use dtype=np.float64"
                )
            qs = np.ldexp(np.asarray(q, dtype=np.float64), -self._exponent)
            cs = np.ldexp(np.asarray(c, dtype=np.float64), -self._exponent)
            # the inputs' own norms (before centring) bound how far their rounding moves a distance
            norm_sum = float(np.sqrt(np.einsum("ij,ij->i", qs, qs).max()) + np.sqrt(np.einsum("ij,ij->i", cs, cs).max()))
            centre = (qs.sum(axis=0) + cs.sum(axis=0)) / (q.shape[0] + c.shape[0])
            qs -= centre
            cs -= centre
            self._q = np.ascontiguousarray(qs, dtype=self.dtype)
            self._c = np.ascontiguousarray(cs, dtype=self.dtype)
            self._qsq = np.einsum("ij,ij->i", self._q, self._q, dtype=np.float64)
            self._csq = np.einsum("ij,ij->i", self._c, self._c, dtype=np.float64)
            scale_sq = float(self._qsq.max() + self._csq.max())
            tol = euclidean_tolerance(self.dims, self.dtype, scale_sq, input_dtype=tie_dtype, norm_sum=norm_sum)
            self.tie_tolerance = float(np.ldexp(tol, self._exponent))

    @property
    def distance_bound(self) -> float:  # type: ignore[override]
        """An upper bound on every distance: 2 for cosine; ``max |q| + max |c|`` (triangle inequality, on the centred
        rows, in the vectors' units) for Euclidean.

        >>> EmbeddingDistances(np.eye(2), np.eye(2)).distance_bound
        2.0
        """
        if self.metric == "cosine":
            return 2.0
        reach = float(np.sqrt(self._qsq.max())) + float(np.sqrt(self._csq.max()))
        return float(np.ldexp(reach, self._exponent))

    @property
    def working_queries(self) -> np.ndarray:
        """The queries as the distances use them: unit rows (cosine) or centred, scaled rows (Euclidean), working dtype."""
        return self._q

    def _unit(self, x: np.ndarray, name: str) -> np.ndarray:
        """Unit rows in the working dtype.

        Each row is divided by a power of two near its largest coordinate first
        (exact), so norms neither overflow (1e160) nor underflow (1e-200); for
        ordinary magnitudes the result is bit-identical to ``x / ||x||``.
        """
        e = np.frexp(_row_maxabs(x))[1]
        out = np.empty(x.shape, dtype=self.dtype)  # one copy in the working dtype, filled in row blocks
        for a in range(0, x.shape[0], 8192):
            out[a : a + 8192] = np.ldexp(np.asarray(x[a : a + 8192], dtype=np.float64), -e[a : a + 8192, None])
        norms = np.sqrt(np.einsum("ij,ij->i", out, out, dtype=np.float64))
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise EmbeddingError(
                f"{name}: {zero.size} all-zero vector(s) (cosine undefined), e.g. rows {zero[:5].tolist()}; "
                "drop them or use metric='euclidean'"
            )
        out /= norms[:, None].astype(self.dtype)
        return out

    def block(self, rows: slice) -> np.ndarray:
        dots = self._q[rows] @ self._c.T  # in self.dtype; every step below works in place on it
        if self.metric == "cosine":
            return np.subtract(1.0, dots, out=dots)
        dots *= -2.0
        dots += self._qsq[rows, None].astype(dots.dtype)
        dots += self._csq[None, :].astype(dots.dtype)
        np.maximum(dots, 0.0, out=dots)
        np.sqrt(dots, out=dots)
        return np.ldexp(dots, self._exponent, out=dots) if self._exponent else dots

    def diagonal(self) -> np.ndarray:
        """Distances of query i to corpus item i (square providers only), in this provider's dtype."""
        _check_square(self)
        out = np.empty(self.n_queries, dtype=self.dtype)
        for a in range(0, self.n_queries, 65536):
            q, c = self._q[a : a + 65536], self._c[a : a + 65536]
            if self.metric == "cosine":
                out[a : a + 65536] = 1.0 - np.einsum("ij,ij->i", q, c)
            else:
                d = np.sqrt(np.maximum(np.einsum("ij,ij->i", q - c, q - c, dtype=np.float64), 0.0))
                out[a : a + 65536] = np.ldexp(d, self._exponent) if self._exponent else d
        return out

    @property
    def T(self) -> "EmbeddingDistances":
        out = object.__new__(EmbeddingDistances)
        out.metric, out.dtype, out.dims, out._exponent = self.metric, self.dtype, self.dims, self._exponent
        out.tie_tolerance = self.tie_tolerance
        out.names = (self.names[1], self.names[0])
        out.n_queries, out.n_corpus = self.n_corpus, self.n_queries
        out._q, out._c = self._c, self._q
        if self.metric == "euclidean":
            out._qsq, out._csq = self._csq, self._qsq
        return out

    def describe(self) -> dict[str, Any]:
        return {"provider": "embeddings", "metric": self.metric, "dims": self.dims, "dtype": str(self.dtype),
                "tie_tolerance": self.tie_tolerance}


# --------------------------------------------------------------------------- blocked search


@dataclass(frozen=True)
class TopK:
    """The k nearest corpus items of every query, nearest first (near ties: lower index first, see :mod:`~semanscope_nb.metrics.ties`)."""

    indices: np.ndarray  # (n_queries, k) int64
    distances: np.ndarray  # (n_queries, k) float64


def check_k(k: int, n_corpus: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or int(k) != k or k < 1:
        raise ArgumentError(f"{name} must be a positive integer, got {k!r}")
    if k > n_corpus:
        raise ArgumentError(f"{name}={k} is larger than the corpus ({n_corpus} item{'s' if n_corpus != 1 else ''})")
    return int(k)


def _outward(x: np.ndarray, dtype: np.dtype, up: bool = True) -> np.ndarray:
    """``x`` in ``dtype``, rounded one step outwards, so a comparison against it keeps a superset."""
    x = np.asarray(x).astype(dtype)
    return np.nextafter(x, dtype.type(np.inf if up else -np.inf))


def topk_rows(D: np.ndarray, k: int, tol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of each row of ``D`` under the near-tie rule (:mod:`semanscope_nb.metrics.ties`).

    Fast path (``k`` well below the row length): the row is cut into chunks of
    64 columns; the k-th smallest chunk minimum ``tau`` bounds the k-th
    distance from above (k chunks each hold a value <= tau), so every top-k item,
    and every candidate tied with the k-th, satisfies ``D <= tau + tol``.  Only
    those few candidates are sorted.  That is two cheap vectorised passes instead
    of a per-row ``argpartition``.
    """
    n_rows, n = D.shape
    if k == 1:  # the lowest index among the distances tied with the row's minimum
        idx = first_best(D, tol)[:, None]
        return idx.astype(np.int64), np.take_along_axis(D, idx, axis=1).astype(np.float64)
    width = 64
    n_full = n // width
    if n_full >= 4 * k:
        mins = D[:, : n_full * width].reshape(n_rows, n_full, width).min(axis=2)
        if n_full * width < n:
            mins = np.concatenate([mins, D[:, n_full * width :].min(axis=1, keepdims=True)], axis=1)
        bound = np.partition(mins, k - 1, axis=1)[:, k - 1]
    else:
        bound = np.partition(D, k - 1, axis=1)[:, k - 1] if k < n else D.max(axis=1)
    cut = _outward(bound.astype(np.float64) + tol, D.dtype) if tol else bound
    r, cidx = np.nonzero(D <= cut[:, None])  # row-major: rows ascending, columns ascending within a row
    return topk_from_candidates(r, cidx, D[r, cidx], n_rows, k, tol)


def topk_search(
    queries: Any,
    corpus: Any = None,
    *,
    k: int = 10,
    metric: Metric = "cosine",
    block: int | None = None,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
    dtype: type | None = None,
    backend: Literal["auto", "faiss", "numpy"] = "auto",
) -> TopK:
    """The ``k`` nearest corpus rows of every query row, searched in blocks of query rows.

    ``queries`` and ``corpus`` are embedding arrays, or ``queries`` is a
    :class:`DistanceProvider` (then ``corpus`` is None).  Memory: one
    ``block x n_corpus`` float64 block at a time (``block=None``: as many rows
    as fit in ``max_block_bytes``); only the top ``k`` per row are kept.
    ``dtype=None``: float32 for cosine, float64 for Euclidean.  ``backend``:
    "auto" uses faiss (exact flat inner product) for float32 cosine embeddings
    when it is installed, else the blocked NumPy search; "faiss" requires it.
    Both backends follow the near-tie rule of :mod:`semanscope_nb.metrics.ties`
    (distances within the provider's ``tie_tolerance`` tie; the lower corpus
    index goes first, MTEB's convention) and take identical decisions.

    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> topk_search(x, x, k=2).indices.tolist()
    [[0, 2], [1, 2], [2, 0]]
    """
    if backend not in ("auto", "faiss", "numpy"):
        raise ValueError(f"backend must be 'auto', 'faiss' or 'numpy', got {backend!r}")
    provider = distance_provider(queries, corpus, metric=metric, dtype=dtype)
    k = check_k(k, provider.n_corpus)
    faiss_ok = (isinstance(provider, EmbeddingDistances) and provider.metric == "cosine"
                and provider.dtype == np.float32 and k < provider.n_corpus)
    if backend == "faiss" and not faiss_ok:
        raise ValueError("backend='faiss' needs cosine embeddings in float32 and k below the corpus size")
    if backend != "numpy" and faiss_ok:
        faiss = _faiss()
        if faiss is not None:
            return _faiss_topk(faiss, provider, k)
        if backend == "faiss":
            raise ImportError("backend='faiss' needs faiss-cpu: pip install 'semanscope_nb[retrieval]'")
    rows = provider.rows_per_block(block, max_block_bytes)
    indices = np.empty((provider.n_queries, k), dtype=np.int64)
    dists = np.empty((provider.n_queries, k), dtype=np.float64)
    tol = float(getattr(provider, "tie_tolerance", 0.0))
    for a in range(0, provider.n_queries, rows):
        b = min(provider.n_queries, a + rows)
        indices[a:b], dists[a:b] = topk_rows(provider.block(slice(a, b)), k, tol)
    return TopK(indices, dists)


def _faiss() -> Any:
    """The faiss module, or None when faiss-cpu is not installed."""
    try:
        import faiss  # faiss-cpu: exact multi-threaded flat search (GEMM + per-row heaps), well maintained by Meta
    except ImportError:
        return None
    return faiss


def _faiss_topk(faiss: Any, provider: "EmbeddingDistances", k: int) -> TopK:
    """Exact cosine top-k via faiss's flat inner-product search, re-ranked with the near-tie rule.

    faiss returns ``k + extra`` neighbours per row, sorted by similarity.  A row whose
    list holds a tied pair out of index order is re-ordered by the rule; a row whose last
    neighbour is still tied with the k-th may miss tied candidates, so it is redone exactly
    over the whole corpus (NumPy).  Decisions then equal the NumPy path's.
    """
    tol = float(provider.tie_tolerance)
    q = np.ascontiguousarray(provider._q, dtype=np.float32)
    c = np.ascontiguousarray(provider._c, dtype=np.float32)
    n = c.shape[0]
    kk = min(n, k + max(4, k // 4))
    sims, idx = faiss.knn(q, c, kk, metric=faiss.METRIC_INNER_PRODUCT)
    vals = -sims.astype(np.float64)  # smaller = better, as distances (1 - sim differs by a constant)
    idx = idx.astype(np.int64)
    reach = vals[:, 1:] <= vals[:, k - 1 : k] + tol  # only candidates within tol of the k-th can take a first-k place
    bad = (vals[:, 1:] < vals[:, :-1]) | (reach & (vals[:, 1:] - vals[:, :-1] <= tol) & (idx[:, 1:] < idx[:, :-1]))
    redo = np.flatnonzero(bad.any(axis=1)) if bad.size else np.empty(0, dtype=np.int64)
    short = np.flatnonzero(vals[:, kk - 1] <= vals[:, k - 1] + tol) if kk < n else np.empty(0, dtype=np.int64)
    out_i, out_v = idx[:, :k].copy(), vals[:, :k].copy()
    for r in redo:
        out_v[r], out_i[r] = order_row(vals[r], idx[r], k, tol)
    for r in short:  # every candidate tied with the k-th, from one exact pass over the corpus
        s_row = -(c @ q[r]).astype(np.float64)
        kth = np.partition(s_row, k - 1)[k - 1]
        cand = np.flatnonzero(s_row <= kth + tol)
        out_v[r], out_i[r] = order_row(s_row[cand], cand, k, tol)
    return TopK(out_i, 1.0 + out_v)


def distance_provider(queries: Any, corpus: Any, *, metric: Metric, dtype: type | None = None, names=("source", "target")) -> DistanceProvider:
    if isinstance(queries, DistanceProvider):
        if corpus is not None:
            raise TypeError("pass either a DistanceProvider alone, or two embedding arrays")
        return queries
    if corpus is None:
        raise TypeError("corpus (target) embeddings are missing")
    return EmbeddingDistances(queries, corpus, metric=metric, dtype=_default_dtype(metric, dtype), names=names)

