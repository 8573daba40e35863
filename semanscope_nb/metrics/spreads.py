"""The parts of Semantic Affinity: D_intra, D_inter and their ratio, vectorised for any row weights.

:func:`affinity_ratio` is the SA formula (paper eq. 3).  :class:`AlignedWords`
holds unique word vectors per language and which concept rows hold them (``|``
alternatives).  :class:`Spreads` turns them into cosine and Euclidean intra and
inter spreads for any row-count vectors (the point estimate is all ones; a
bootstrap resample is a count vector), without enumerating pairs; see
:mod:`semanscope_nb.metrics.affinity` for the algebra.

Speed and memory: construction reads each block of vectors twice (the largest
coordinate and the centre, then one fused pass for norms, squared centred
norms, the per-row inter sums and the point estimate's sums), converting
float32 blocks once into a reused float64 buffer; every product is float64.
A batch of resample counts streams the vectors once (one matrix product per
block), and the chance level reuses those products.  :meth:`Spreads.bootstrap_batch`
sizes batches from a memory budget relative to the embeddings
(:func:`bootstrap_budget`).

Layer: metrics (its lowest room).  Imports numpy, scipy and :mod:`semanscope_nb.errors`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> e = np.eye(3); eye = sp.identity(3, format="csr")
>>> aw = AlignedWords(("en", "de"), (e, e), (eye, eye), ("a", "b", "c"))
>>> s = Spreads(aw).spreads(np.ones((1, 3)))
>>> float(affinity_ratio(s["intra_cos"][0], s["inter_cos"][0]))
1.0
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from semanscope_nb.machine import free_cpus
from semanscope_nb.errors import EmbeddingError


def affinity_ratio(intra: Any, inter: Any) -> Any:
    """Semantic Affinity: ``D_intra / (D_intra + D_inter)`` (paper eq. 3; arrays broadcast)."""
    return intra / (intra + inter)


def intra_cosine(w_tot: Any, w_sq: Any, sum_sq: Any) -> Any:
    """Paper eq. 3's cosine D_intra of one language: the mean ``1 - cos`` over pairs of distinct words.

    With word weights ``w`` (a word drawn twice counts twice), ``W = sum w``, ``sum w^2`` and
    ``||sum w u||^2`` (``u`` the unit words) it is ``(W^2 - ||sum w u||^2) / (W^2 - sum w^2)``;
    one word only (``W^2 = sum w^2``) gives NaN, undefined.

    >>> u = np.eye(3)  # three orthogonal words: every pair at cosine distance 1
    >>> float(intra_cosine(3.0, 3.0, float(np.sum(u.sum(axis=0) ** 2))))
    1.0
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.maximum(w_tot**2 - sum_sq, 0.0) / (w_tot**2 - w_sq)


def inter_cosine(pair_dots: Any, n_pairs: float) -> Any:
    """Paper eq. 3's cosine distance of one aligned tuple: ``1 - `` its mean cosine over the ``n_pairs`` language pairs.

    ``pair_dots``: the sum over language pairs of the unit vectors' dot products (or of the rows' mean unit vectors').

    >>> float(inter_cosine(np.float64(0.5), 1.0))
    0.5
    """
    return np.maximum(1.0 - pair_dots / n_pairs, 0.0)  # a distance is >= 0


@dataclass(frozen=True)
class AlignedWords:
    """Unique word vectors per language plus which rows (concepts) hold which words.

    ``incidence[l]`` is an (R x n_l) 0/1 sparse matrix: row r holds word k of
    language l as one of its alternatives.  Arrays without alternatives use the
    identity (one word per row).  ``concept_keys``: what each concept is, the order
    random draws over concepts are made in (:mod:`semanscope_nb.metrics.row_order`;
    None: from ``words``, else ``labels``).
    """

    languages: tuple[str, ...]
    vectors: tuple[np.ndarray, ...]
    incidence: tuple[sp.csr_matrix, ...]
    labels: tuple[str, ...]
    groups: tuple[str | None, ...] | None = None
    words: tuple[tuple[str, ...], ...] | None = None
    concept_keys: tuple[str, ...] | None = None

    @property
    def n_rows(self) -> int:
        return self.incidence[0].shape[0]


#: bytes of one float64 working block: ``STREAM_BLOCK_BYTES // (8 * dims)`` rows (``block`` caps it too)
STREAM_BLOCK_BYTES = 2 * 2**20
#: bytes of the side-by-side [unit | centred] rows of the streamed languages that one resample batch multiplies at once
BOOT_BLOCK_BYTES = 8 * 2**20
#: the bootstrap's memory (count matrices, per-batch temporaries, the spreads' own arrays) as a share of the embeddings' bytes
BOOTSTRAP_MEMORY_FRACTION = 0.5
#: ... but at least this much, so a small data set still draws its resamples in a few batches
MIN_BOOTSTRAP_BUDGET = 32 * 2**20
#: a language whose vectors hold at most this share of non-zero coordinates (TF-IDF: about 0.4%) has its resample
#: products taken as sparse products (:meth:`Spreads._sparse_products`) instead of dense ones over the zeros
SPARSE_DENSITY = 1 / 32
#: ... looked for only from this many dimensions on (dense models below it are never counted)
SPARSE_MIN_DIMS = 1024

#: sparse vectors of at most this many words in all (every language) are replaced by their coordinates in an
#: orthonormal basis of the words' span (:func:`reduced_words`): then ``words`` dims, not thousands.  The QR that
#: gives them costs ``2 D N^2``; beyond about 500 words it costs more than the sparse route's resamples save
REDUCE_MAX_WORDS = 512

#: numbers the Gram matrices of the centred words of every language pair may hold (the Euclidean chance level's re-pairings)
GRAM_LIMIT = 8_000_000
#: Largest float64 copy of the centred words (bytes) that the Euclidean chance level's re-pairings
#: hold for their duration beyond the Gram limit (else each re-pairing centres its blocks again).
CENTRED_HOLD_BYTES = 512 * 2**20

#: BLAS threads for the verdict of a small space (:func:`small_space_blas`): its products are small -- the
#: bootstrap's (batch x R) @ (R x 2dL), Gram matrices of R x R -- and on the 2-core reference machine, shared with
#: other work, a threaded BLAS call of that size cost more CPU and wall time than it saved: ``semantic_affinity``
#: at 349 x 2 x 512 with 1000 resamples took 157 ms CPU / 298 ms wall with the default two threads and 83 / 163 ms
#: pinned to one (load average 7; bench/README.md, "Verdict statistics from one pass").  None: the BLAS default.
#: Pinned, the numbers also never depend on the machine's thread setting.
SMALL_SPACE_BLAS_THREADS: int | None = 1
#: ... a space is small when its vectors hold at most this many numbers in all (beyond, products are large enough
#: for threads to pay, and the default stays)
SMALL_SPACE_NUMBERS = 4_000_000
_blas_lock = threading.Lock()
_blas_pins = 0  # small_space_blas blocks running now, in any thread
_blas_limiter: Any = None  # the outermost block's threadpoolctl limiter (it restores the limits found on entry)
_blas_controller: tuple[int, Any] | None = None  # (len(sys.modules) when made, the threadpoolctl controller), see _pinned_blas


def small_space_blas(aw: AlignedWords) -> Any:
    """A context in which BLAS runs on :data:`SMALL_SPACE_BLAS_THREADS` threads when ``aw`` is a small space.

    threadpoolctl (a scikit-learn dependency) sets the limit for the process while the block runs, as the
    NumPy token port does for its small products; outside a small space, or with the setting None, nothing
    changes.  Blocks may nest and run in several threads at once (JupyterLab's subshells): the first to enter
    sets the limit and the last to leave restores what the first found, under one lock.

    >>> import scipy.sparse as sp
    >>> e = np.eye(3); eye = sp.identity(3, format="csr")
    >>> with small_space_blas(AlignedWords(("en", "de"), (e, e), (eye, eye), ("a", "b", "c"))):
    ...     float((e @ e).sum())
    3.0
    """
    vectors = getattr(aw, "vectors", None)  # not aligned words: the caller's own check names the problem
    numbers = sum(int(np.prod(np.shape(v))) for v in vectors) if isinstance(vectors, (tuple, list)) else math.inf
    if SMALL_SPACE_BLAS_THREADS is None or numbers > SMALL_SPACE_NUMBERS:
        return contextlib.nullcontext()
    return _pinned_blas(SMALL_SPACE_BLAS_THREADS)


@contextlib.contextmanager
def _pinned_blas(threads: int) -> Iterator[None]:
    global _blas_pins, _blas_limiter, _blas_found, _blas_pinned_to, _blas_controller
    with _blas_lock:
        if _blas_pins == 0:
            try:
                from threadpoolctl import ThreadpoolController

                # a controller finds the BLAS libraries loaded when it is made (0.4-2 ms: it walks every shared
                # library); a BLAS loaded since (scipy's own OpenBLAS comes with a later import) would stay unpinned.
                # A library arrives with an import, so the one made last is kept while no module was imported since
                # (sys.modules, a dict, only grows by imports); it reads the threads live at each limit()
                if _blas_controller is None or _blas_controller[0] != len(sys.modules):
                    _blas_controller = (len(sys.modules), ThreadpoolController())
                controller = _blas_controller[1]
                found = [lib.num_threads for lib in controller.lib_controllers if lib.user_api == "blas"]
                _blas_limiter = controller.limit(limits=threads, user_api="blas")
                _blas_found, _blas_pinned_to = max(found, default=1), threads
            except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
                _blas_limiter = None
        _blas_pins += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_pins -= 1
            if _blas_pins == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
                _blas_found = _blas_pinned_to = 1


_blas_found = 1  # BLAS threads the outermost pinned block found on entry (what the process would use unpinned)
_blas_pinned_to = 1  # ... and what it pinned them to
_block_pool: Any = None  # (thread pool, its size): runs column blocks of a pinned product side by side (made on first use)
_block_pool_lock = threading.Lock()
_gram_lock = threading.Lock()  # Spreads._centred_gram: one thread makes the Gram matrices, another waits for them


def _free_cpus() -> int:
    """:func:`semanscope_nb.machine.free_cpus` (one name here, so that a test can set it), this process's side jobs
    running right now (:func:`beside`) not held against it: they are this call's own work, not another program's.
    (Counted as busy, a running gate test or chance level kept the bootstrap's product on one thread on an otherwise
    idle machine.)"""
    return free_cpus(own=_side_jobs_running())


_side_jobs = 0  # jobs started by beside() that are running now
_side_jobs_lock = threading.Lock()


def _side_jobs_running() -> int:
    """How many jobs started by :func:`beside` are running right now.

    >>> _side_jobs_running()
    0
    """
    with _side_jobs_lock:
        return _side_jobs


def _counted(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, counted in :func:`_side_jobs_running` while it runs."""
    global _side_jobs
    with _side_jobs_lock:
        _side_jobs += 1
    try:
        return fn(*args)
    finally:
        with _side_jobs_lock:
            _side_jobs -= 1


def block_product_workers() -> int:
    """Threads :func:`column_block_product` runs its blocks on (and whether :func:`beside` has a second thread).

    While a small space's verdict pins BLAS to one thread: at most the threads BLAS had before (a process set to one
    BLAS thread keeps one), and only as many as there are free CPUs beside this one right now -- on a machine whose
    cores are all busy a second thread only waits for one, and each hand-over then costs a scheduling delay (at load
    average 4 on 2 cores the threaded blocks took longer than one thread).  Outside a pin, 1: BLAS threads its own
    calls.  The count never changes a result: each block is the same single-threaded BLAS call on any thread.

    >>> block_product_workers()
    1
    """
    with _blas_lock:
        if _blas_pins == 0 or _blas_pinned_to != 1 or _blas_found <= 1:
            return 1
        found = int(_blas_found)
    return max(1, min(found, 1 + _free_cpus()))


class _Done:
    """The result of a call already made (what :func:`beside` hands back when there is no second thread to run it)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self, timeout: float | None = None) -> Any:
        return self._value

    def cancel(self) -> bool:
        return False  # already done, as a finished future


#: threads of the shared pool: a product's blocks and up to three jobs started by :func:`beside` (the pool starts a
#: thread only when a task finds none idle)
_POOL_THREADS = 4
_POOL_PREFIX = "semanscope-blocks"


def _pool(workers: int) -> Any:
    """The shared thread pool with at least ``workers`` threads (made or widened on first need)."""
    global _block_pool
    with _block_pool_lock:
        if _block_pool is None or _block_pool[1] < workers:
            from concurrent.futures import ThreadPoolExecutor  # the standard library's thread pool

            _block_pool = (ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_POOL_PREFIX), workers)
        return _block_pool[0]


def beside(fn: Any, *args: Any, only_if_free: bool = False) -> Any:
    """Start ``fn(*args)`` on a second thread while :func:`block_product_workers` says there is one (a pinned small
    space with a free CPU), else call it now; ``.result()`` gives its value (or raises its error).

    For work the caller does not need yet (a Gram matrix while the permutation draws are shuffled, a diagnostic
    while the bootstrap runs): the same calls on either thread, so the same bits.  ``only_if_free``: None instead of
    calling now when there is no second thread (work that may turn out unneeded is done only on a CPU that would
    otherwise idle).  Called from one of the pool's own threads, it calls now: a job never waits for the pool.

    >>> beside(sum, [1, 2, 3]).result(), beside(sum, [1], only_if_free=True)   # not in a pinned block: no second thread
    (6, None)
    """
    if block_product_workers() > 1 and not threading.current_thread().name.startswith(_POOL_PREFIX):
        return _pool(_POOL_THREADS).submit(_counted, fn, *args)
    return None if only_if_free else _Done(fn(*args))


def drop_side_job(job: Any) -> None:
    """Let go of a job started by :func:`beside` (or None) whose result is not needed: cancelled when it has not
    started, else waited for, its error ignored -- so it ends before the caller goes on (under the caller's BLAS pin).

    >>> drop_side_job(beside(sum, [1, 2])), drop_side_job(None)
    (None, None)
    """
    if job is not None and not job.cancel():
        with contextlib.suppress(Exception):
            job.result()


def column_block_product(W: np.ndarray, M: np.ndarray, width: int, *, out: np.ndarray | None = None) -> np.ndarray:
    """``W @ M`` as one product per block of ``width`` columns of ``M``, the blocks run side by side on
    :func:`block_product_workers` threads.

    Why: the bootstrap's one large product of a small space, ``counts @ [unit | centred]`` of every language,
    runs while BLAS is pinned to one thread (:func:`small_space_blas`: a threaded BLAS busy-waits between its many
    small calls on a loaded machine).  Split by language (``width`` = 2d) it runs on the cores the process had
    without BLAS's own threads: a Python thread per block waits without spinning, and NumPy's matmul releases the
    GIL.  Each block is the same single-threaded BLAS call whichever thread runs it, so the bits do not depend on
    the number of threads (a test holds them equal to a serial run).  Outside a pinned block it is one product,
    ``W @ M``, which BLAS threads itself.  ``out``: a (rows of W x columns of M) float64 array to write into (the
    same values).

    >>> W, M = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    >>> bool((column_block_product(W, M, 2) == W @ M).all())
    True
    """
    with _blas_lock:
        pinned = _blas_pins > 0 and _blas_pinned_to == 1
    if not pinned:  # BLAS threads its own call: one product (blocks would pack W once per block: 10% slower at 5000 rows)
        return W @ M if out is None else np.matmul(W, M, out=out)
    n = M.shape[1]
    starts = list(range(0, n, width))
    out = np.empty((W.shape[0], n), dtype=np.result_type(W, M)) if out is None else out
    nested = threading.current_thread().name.startswith(_POOL_PREFIX)  # a job of the pool: never wait for the pool
    workers = 1 if nested else min(block_product_workers(), len(starts))

    if workers <= 1:
        for a in starts:
            np.matmul(W, M[:, a : a + width], out=out[:, a : a + width])
        return out
    # the blocks are claimed in turn from one shared iterator (next() on a list iterator is atomic under the GIL): a
    # helper thread that starts late -- its CPU taken by a side job of beside() or another process -- claims fewer
    # blocks, and the calling thread does the rest instead of waiting for it.  Who runs a block never changes its bits.
    claims = iter(starts)

    def run() -> None:
        for a in claims:
            np.matmul(W, M[:, a : a + width], out=out[:, a : a + width])

    pool = _pool(max(workers - 1, _POOL_THREADS))
    others = [pool.submit(run) for _ in range(workers - 1)]
    run()  # the calling thread claims blocks too
    for f in others:
        f.result()
    return out


def on_small_space_blas(fn: Any) -> Any:
    """Decorate a function of aligned words (its first argument) to run inside :func:`small_space_blas`.

    >>> import scipy.sparse as sp
    >>> @on_small_space_blas
    ... def n_words(aw): return sum(v.shape[0] for v in aw.vectors)
    >>> e = np.eye(3); eye = sp.identity(3, format="csr")
    >>> n_words(AlignedWords(("en", "de"), (e, e), (eye, eye), ("a", "b", "c")))
    6
    """
    import functools

    @functools.wraps(fn)
    def run(aw: Any, *args: Any, **kwargs: Any) -> Any:
        with small_space_blas(aw):
            return fn(aw, *args, **kwargs)

    return run


_RAW_EXPONENT = 400  # largest |coordinate| within 2**-400 .. 2**400: work in the vectors' own units (no scaling pass)
_TINY_SQ = 2.0**-900  # rows with a squared norm below this (or not finite) are normalised with per-row scaling
_NORMAL = np.finfo(np.float64).tiny
_KAPPA = 64.0  # squared centred norms from raw dot products only while ||x||^2 + ||c||^2 <= _KAPPA * ||x - c||^2


def row_chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for a in range(0, n, size):
        yield a, min(n, a + size)


def rowdot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise dot products (``y`` may be one vector).

    ``np.vecdot`` (NumPy >= 2) for rows of embedding length; long rows (count
    matrices) go through einsum, which never wakes BLAS threads per row.
    """
    if _VECDOT is not None and x.shape[-1] <= 4096:
        return _VECDOT(x, y)
    return np.einsum("ij,ij->i", x, y) if y.ndim == 2 else np.einsum("ij,j->i", x, y)


def csr_of_dense(x: Any, *, dtype: Any = None) -> sp.csr_matrix:
    """The CSR form of a dense 2-d array (``dtype``: of the stored values; default the array's): ``sp.csr_matrix(x)``'s result.

    scipy builds it from the 2-d ``nonzero`` (row and column of every entry); here one flat
    ``flatnonzero`` of the ``!= 0`` mask and per-row counts give the same entries, in the same
    (canonical) order, several times faster on wide sparse rows (a TF-IDF word's 4096 hashed n-grams).
    Zeros of either sign are left out, NaNs kept, as scipy does.

    >>> x = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [-2.0, 0.0, np.nan]], dtype=np.float32)
    >>> m = csr_of_dense(x, dtype=np.float64)
    >>> m.dtype, m.indptr.tolist(), m.indices.tolist()
    (dtype('float64'), [0, 1, 1, 3], [1, 0, 2])
    >>> bool((m != sp.csr_matrix(x, dtype=np.float64)).nnz == 1)  # only NaN != NaN
    True
    """
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"csr_of_dense needs a 2-d array, got {x.ndim}-d")
    n, d = x.shape
    mask = x != 0
    flat = np.flatnonzero(mask)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
    data = x.reshape(-1)[flat]
    if dtype is not None:
        data = data.astype(dtype, copy=False)
    return sp.csr_matrix((data, flat % d if d else flat, indptr), shape=(n, d))


def _rowsq(x: np.ndarray) -> np.ndarray:
    return rowdot(x, x)


def _one_word_per_row(x: np.ndarray, incidence: Any) -> bool:
    """Whether ``incidence`` (None: one word per row) maps row r to word r alone, every entry 1, for the words ``x``."""
    if incidence is None:
        return True
    a = incidence if sp.issparse(incidence) else None
    if a is None or a.format != "csr" or a.shape != (x.shape[0], x.shape[0]) or a.nnz != x.shape[0]:
        return False
    return bool((np.diff(a.indptr) == 1).all() and (a.indices == np.arange(x.shape[0])).all() and (a.data == 1.0).all())


_VECDOT = getattr(np, "vecdot", None)  # numpy >= 2: a SIMD row-dot loop, about twice einsum's speed


def pow2_exponent(maxabs: Any) -> Any:
    """e with ``maxabs = m * 2**e``, 0.5 <= m < 1 (0 for 0): ``x / 2**e`` lies in (-1, 1) and is exact."""
    return np.frexp(maxabs)[1]


_NO_ROWS = np.zeros(0, dtype=np.intp)


def _abnormal(sq: np.ndarray) -> np.ndarray:
    """Rows whose squared norm is too small, too large or not finite for a direct ``x / ||x||``."""
    return np.flatnonzero(~((sq >= _TINY_SQ) & (sq < np.inf)))


def _unit_rows_scaled(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit vectors, norms) with each row first divided by a power of two near its largest coordinate."""
    e = pow2_exponent(np.abs(x).max(axis=1))
    xs = np.ldexp(x, -e[:, None])
    n = np.sqrt(_rowsq(xs))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return xs / n[:, None], np.ldexp(n, e)


def unit_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit vectors, norms) of the rows of ``x``, overflow- and underflow-safe.

    Rows whose squared norm lies in the normal range are divided by their norm
    directly; the others are divided by a power of two near their largest
    coordinate first (exact), so no raw coordinate of theirs is squared.  Both
    give the same bits unless a squared coordinate leaves the normal range.
    Zero rows give NaN units and norm 0.
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        sq = _rowsq(x)  # inf (overflow) or tiny rows take the scaled route below
        n = np.sqrt(sq)
        u = x / n[:, None]
    bad = _abnormal(sq)
    if bad.size:
        u[bad], n[bad] = _unit_rows_scaled(x[bad])
    return u, n


def check_vectors(languages: Sequence[str], vectors: Sequence[np.ndarray], words=None) -> None:
    dims = {lang: (v.shape[1] if v.ndim == 2 else None) for lang, v in zip(languages, vectors)}
    for lang, v in zip(languages, vectors):
        if v.ndim != 2:
            raise EmbeddingError(f"embeddings['{lang}'] must be a 2-D array (rows x dims), got shape {v.shape}")
        if v.shape[0] == 0:
            raise EmbeddingError(f"embeddings['{lang}'] is empty (0 rows)")
        if v.shape[1] == 0:
            raise EmbeddingError(f"embeddings['{lang}'] has 0 dimensions")
    if len(set(dims.values())) > 1:
        raise EmbeddingError(f"mixed embedding dimensions across languages: {dims}")
    for k, (lang, v) in enumerate(zip(languages, vectors)):
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                if np.isfinite(np.add.reduce(v, axis=None)):  # NaN and inf propagate (inf - inf is NaN): a finite sum
                    continue  # means finite values (an overflowing sum of finite ones falls through to the row check)
        bad_rows = np.flatnonzero(~np.isfinite(v).all(axis=1))
        if bad_rows.size:
            what = [words[k][i] for i in bad_rows[:5]] if words is not None else bad_rows[:5].tolist()
            raise EmbeddingError(
                f"embeddings['{lang}'] has NaN or inf values in {bad_rows.size} row(s), e.g. {what}"
            )


def bootstrap_budget(embedding_bytes: int, fraction: float = BOOTSTRAP_MEMORY_FRACTION) -> int:
    """Bytes the bootstrap may use beside the embeddings: ``fraction`` of their size, at least :data:`MIN_BOOTSTRAP_BUDGET`.

    >>> bootstrap_budget(230_400_000), bootstrap_budget(1000) == MIN_BOOTSTRAP_BUDGET
    (115200000, True)
    """
    return int(max(fraction * embedding_bytes, MIN_BOOTSTRAP_BUDGET))


def reduced_words(aw: AlignedWords, *, max_words: int | None = None) -> AlignedWords | None:
    """The same words with every vector replaced by its coordinates in an orthonormal basis of all the words' span.

    Every statistic of :class:`Spreads` (and so SA, its chance level, the Euclidean
    spreads, the language-centred SA) sees the vectors only through inner products:
    norms, cosines, distances, and the centre and language means, which lie in the
    span of the words.  For ``N`` words in all (every language together) in ``D``
    dims with ``N < D``, the ``N x N`` coordinates ``Y`` with ``Y Y^T = X X^T`` hold
    the same numbers up to rounding, and each resample then yields ``N``-dim sums,
    not ``D``-dim ones.  ``Y = R^T`` from the QR of ``X^T`` restricted to its
    non-zero columns (LAPACK's Householder QR, numpy.linalg.qr: backward stable
    column by column, so each word's norm and inner products move by a few units of
    rounding relative to the norms; ``tests/test_reduced_words.py`` holds the
    statistics to the full-dim ones).  A zero vector stays exactly zero.

    None when it does not pay: a language is not sparse (more than
    :data:`SPARSE_DENSITY` non-zero, or fewer than :data:`SPARSE_MIN_DIMS` dims), there
    are more than ``max_words`` words (default :data:`REDUCE_MAX_WORDS`), or the non-zero columns are fewer than twice the
    words (then the non-zero columns alone would do about as well).

    >>> rng = np.random.default_rng(0)
    >>> X = np.where(rng.random((12, 2048)) < 0.01, rng.random((12, 2048)), 0.0)
    >>> eye = sp.identity(6, format="csr")
    >>> aw = AlignedWords(("en", "de"), (X[:6], X[6:]), (eye, eye), tuple("abcdef"))
    >>> red = reduced_words(aw)
    >>> red.vectors[0].shape
    (6, 12)
    >>> bool(np.allclose(red.vectors[0] @ red.vectors[1].T, X[:6] @ X[6:].T, rtol=0, atol=1e-14))
    True
    """
    if not all(Spreads.takes_sparse_products(v, None) for v in aw.vectors):
        return None
    n_words = [v.shape[0] for v in aw.vectors]
    N = sum(n_words)
    if N > (REDUCE_MAX_WORDS if max_words is None else max_words):
        return None
    X = sp.vstack([csr_of_dense(v, dtype=np.float64) for v in aw.vectors], format="csr")
    used = np.unique(X.indices)
    if used.size < 2 * N:
        return None
    A = X[:, used].T.toarray()  # D' x N: columns are words
    with _pinned_blas(1):  # a small QR: a second thread's panels cost ten times the CPU on two busy cores
        Y = np.linalg.qr(A, mode="r").T  # N x N: X X^T = R^T R to rounding (A = Q R)
    cut = np.cumsum([0, *n_words])
    vectors = tuple(np.ascontiguousarray(Y[a:b]) for a, b in zip(cut[:-1], cut[1:]))
    return AlignedWords(aw.languages, vectors, aw.incidence, aw.labels, aw.groups, aw.words, aw.concept_keys)


class Spreads:
    """Per-row inter sums and weighted intra spreads of an :class:`AlignedWords`.

    Holds no copy of the embeddings beyond per-word norms and squared centred
    norms (plus ``[unit | centred]`` rows of languages with at most
    ``stack_limit`` numbers); vectors are read in blocks of at most ``block``
    rows and :data:`STREAM_BLOCK_BYTES` of float64 working space, so memory
    stays O(block x dims).

    Construction reads the vectors twice: once for the largest coordinate and
    the centre (exactly the mean, as before), then one fused pass per block of
    rows (all languages side by side) that converts float32 blocks once into a
    reused float64 buffer and gets norms, squared centred norms, the per-row
    inter sums and the point estimate's sums from row dot products and one small
    product -- unit and centred rows are formed only for small (stacked)
    languages and for blocks that fail a cancellation check (see :meth:`_block`).
    The point estimate (all counts 1) is then free; other count vectors stream
    the vectors once per call (one float64 matrix product per block, streamed
    one-word-per-row languages side by side).

    Magnitudes: Euclidean work runs on the vectors divided by ``scale`` (a power
    of two near the largest coordinate, so exact) -- or, when the largest
    coordinate lies within 2**-400 .. 2**400, in the vectors' own units, which
    gives the same numbers without the scaling pass; unit vectors come from
    :func:`unit_rows`'s rule.  ``centre``, ``norms``, ``row_euc`` and
    :meth:`spreads` are in the vectors' own units, ``sqn_c``, ``centre_scaled``
    and ``row_euc_scaled`` in units of ``scale``.

    Sparse vectors of few words (TF-IDF of a small data set) are first replaced by
    their exact reduced form (:func:`reduced_words`, unless ``reduce=False`` or
    ``sparse`` is given): ``aw``, ``d``, ``centre`` and the working units are then
    those of the reduced coordinates; every spread, norm and distance is the same
    to rounding.  Larger sparse spaces take their resample products as sparse
    products (``sparse``: force or forbid that route).

    The products of the most recent count matrix with occurrence weights (what
    :class:`~semanscope_nb.metrics.chance.NullParts` needs) are kept, keyed on
    the matrix's shape and a random projection of its content, so the chance
    level on the same resamples costs no second pass over the vectors.
    """

    def __init__(self, aw: AlignedWords, *, block: int = 8192, stack_limit: int = 4_000_000, sparse: bool | None = None,
                 reduce: bool = True) -> None:
        if reduce and sparse is None:  # sparse surface vectors of few words: their exact reduced form (reduced_words)
            aw = reduced_words(aw) or aw
        self.aw = aw
        self.L = len(aw.languages)
        self.K = self.L * (self.L - 1) / 2
        self.block = block
        self.R = aw.n_rows
        d = self.d = aw.vectors[0].shape[1]
        self.rows = max(1, min(block, STREAM_BLOCK_BYTES // (8 * d)))  # rows per working block
        self.identity = [
            inc.shape[0] == inc.shape[1] and inc.nnz == inc.shape[0] and (inc.indices == np.arange(inc.shape[0])).all()
            for inc in aw.incidence
        ]
        self.alternatives = np.stack([np.diff(inc.indptr) for inc in aw.incidence])  # (L, R)
        self.tuples = self.alternatives.astype(np.float64).prod(axis=0)  # T_r (float: no int64 wrap-around)
        # intra weights: word k gets sum_r c_r A[r,k] / colsum_k; occurrence weights (the null): sum_r c_r A[r,k]
        self.word_weight_map: list[sp.csr_matrix | None] = []
        self.occurrence_map: list[sp.csr_matrix | None] = []
        self.occurrences: list[np.ndarray | None] = []
        for inc, ident in zip(aw.incidence, self.identity):
            if ident:
                self.word_weight_map.append(None)
                self.occurrence_map.append(None)
                self.occurrences.append(None)
            else:
                A = sp.csr_matrix(inc, dtype=np.float64)
                colsum = np.asarray(A.sum(axis=0)).ravel()
                self.word_weight_map.append(sp.csr_matrix(A.multiply(1.0 / colsum[None, :])))
                self.occurrence_map.append(A)
                self.occurrences.append(colsum)
        self._csc: dict[tuple[str, int], sp.csc_matrix] = {}
        want_sparse = [self.takes_sparse_products(v, sparse) for v in aw.vectors]
        self.stacked: list[np.ndarray | None] = [
            np.empty((v.shape[0], 2 * d)) if v.shape[0] * d <= stack_limit and not ws else None
            for v, ws in zip(aw.vectors, want_sparse)
        ]
        # stacked one-word-per-row languages share their weights (the counts): their rows live side by side in one
        # array, so a batch of resamples multiplies them in one product (a wider product runs closer to peak)
        side = [lang for lang in range(self.L) if self.stacked[lang] is not None and self.identity[lang]]
        self._stack_joint: tuple[list[int], np.ndarray] | None = None
        if len(side) > 1:
            joint = np.empty((self.R, 2 * d * len(side)))
            for i, lang in enumerate(side):
                self.stacked[lang] = joint[:, 2 * d * i : 2 * d * (i + 1)]
            self._stack_joint = (side, joint)
        self._dot_ok = [True] * self.L  # every block of the language passed the cancellation check of _block
        self._scan()
        n_words = [v.shape[0] for v in aw.vectors]
        self.norms = [np.empty(n) for n in n_words]
        self._q = [np.empty(n) for n in n_words]  # squared centred norms, working units
        self._bad: list[np.ndarray] = []  # words whose unit vector is recomputed row by row when streamed
        # sums over the words of [1/n; 1; occ/n; occ] @ x and of q (all weights 1; occurrence weights)
        self._sums = [np.zeros((2 if occ is None else 4, d)) for occ in self.occurrences]
        bad: list[list[np.ndarray]] = [[] for _ in n_words]
        if all(self.identity):
            with np.errstate(divide="ignore", invalid="ignore"):  # zero rows: NaN units, as x / 0 gives
                row_cos, row_euc_w = self._fused_rows(bad)
        else:
            X, G, tmp = np.empty((self.rows, d)), np.ones((4, self.rows)), np.empty((self.rows, d))
            with np.errstate(divide="ignore", invalid="ignore"):
                for lang, n in enumerate(n_words):
                    for a, b in row_chunks(n, self.rows):
                        self._block(lang, a, b, X, G, tmp, bad[lang])
            row_cos, row_euc_w = None, None
        self._bad = [np.concatenate(b) if b else np.zeros(0, dtype=np.intp) for b in bad]
        # [unit | x]^T rows (working units) of the sparse languages; a zero or odd-norm row, or a block where
        # x.c is not small beside ||x - c||^2, leaves the language on the dense route
        sparse_ok = [ws and not self._bad[lang].size and self._dot_ok[lang] for lang, ws in enumerate(want_sparse)]
        #: per sparse language, its non-zero columns (where its resample sums live, :class:`SparseSums`), else None
        self.sparse_cols: list[np.ndarray | None] = [None] * self.L  # (set by _sparse_rows)
        self._sparse_words: list[tuple[sp.csr_matrix, sp.csr_matrix] | None] = [None] * self.L
        self.sparse: list[sp.csr_matrix | None] = [self._sparse_rows(lang) if ok else None for lang, ok in enumerate(sparse_ok)]
        # the centre (working units) off each sparse language's columns: there its centred sums are -(W 1) c
        self._centre_off: list[np.ndarray | None] = []
        self._centre_off_sq: list[float] = []
        for cols in self.sparse_cols:
            off = None
            if cols is not None:
                off = self._centre_w.copy()
                off[cols] = 0.0
            self._centre_off.append(off)
            self._centre_off_sq.append(0.0 if off is None else float(off @ off))
        c = self._centre_w
        self._point = [[np.concatenate([S[0], S[1] - n * c]), q.sum()] for S, q, n in zip(self._sums, self._q, n_words)]
        self._point_occ = [None if occ is None else [np.concatenate([S[2], S[3] - occ.sum() * c]), occ @ q]
                           for S, q, occ in zip(self._sums, self._q, self.occurrences)]
        shift = self._wexp - self.exponent
        self.sqn_c = [np.ldexp(q, 2 * shift) if shift else q for q in self._q]
        if row_cos is None:
            row_cos, row_euc_w = self._row_sums()
        self.row_cos = row_cos
        self.row_euc_scaled = np.ldexp(row_euc_w, shift) if shift else row_euc_w
        self._row_stack = np.stack([self.tuples, self.row_cos, self.row_euc_scaled], axis=1)
        with np.errstate(over="ignore"):
            self.row_euc = np.ldexp(self.row_euc_scaled, self.exponent)
        self._probe = np.random.default_rng(0x5EED).random(self.R)  # fingerprint of a count matrix
        self._occ_cache: tuple[tuple, np.ndarray, list] | None = None
        self._intra_cache: tuple[tuple, np.ndarray, list] | None = None  # the latest spreads() call's intra products
        self._prod_buf: np.ndarray | None = None  # the latest joint product's array (see _product_buffer)
        self._spare: dict[str, np.ndarray] = {}  # other arrays kept the same way, by slot (see _product_buffer)
        self._prod_lock = threading.Lock()
        self._split: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see split_rows
        self._kept_cache: tuple[tuple, np.ndarray, np.ndarray] | None = None
        # stacked languages with alternatives or shared words: their weights are counts @ map, so their products are
        # counts @ (map @ [unit | centred]): one product per kind of all of them, over the rows (see _folded)
        self._fold_limit = stack_limit
        self._fold: dict[str, tuple[list[int], np.ndarray, np.ndarray] | None] = {}
        self._split_keep: np.ndarray | None = None  # the kept rows of split_rows (the folded products split too)
        self._fold_split: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._fold_kept: dict[str, tuple[tuple, np.ndarray, np.ndarray]] = {}
        self.track_occurrences = False  # set by NullParts: spreads() then also keeps the occurrence products

    # -- construction -------------------------------------------------------------
    @staticmethod
    def takes_sparse_products(v: Any, sparse: bool | None) -> bool:
        """Whether to take ``v``'s resample products as sparse ones (``sparse=None``: at most :data:`SPARSE_DENSITY` non-zero)."""
        if sparse is not None:
            return bool(sparse)
        v = np.asarray(v)
        if v.ndim != 2 or v.shape[1] < SPARSE_MIN_DIMS or v.size == 0:
            return False
        head = v[: max(1, min(v.shape[0], 64))]  # a dense space shows itself in its first rows: count no further
        if np.count_nonzero(head) > SPARSE_DENSITY * head.size:
            return False
        return np.count_nonzero(v) <= SPARSE_DENSITY * v.size

    def _sparse_rows(self, lang: int) -> sp.csr_matrix:
        """``[unit | x]^T`` (2d x words, CSR, float64, working units) of a sparse language: the operand of its products.

        The unit entries are the same divisions by the stored norms as :meth:`_fill`'s (so the same numbers);
        centred rows are never formed (``W @ (x - c) = W @ x - (W 1) c``, see :meth:`_sparse_products`).
        """
        X = csr_of_dense(self.aw.vectors[lang], dtype=np.float64)  # float32 -> float64 is exact; no stored zero
        self.sparse_cols[lang] = np.unique(X.indices)
        if self._wexp:
            np.ldexp(X.data, -self._wexp, out=X.data)
        n = self.norms[lang]
        if self._wexp:
            n = np.ldexp(n, -self._wexp)
        U = X.copy()
        U.data /= np.repeat(n, np.diff(X.indptr))
        self._sparse_words[lang] = (U, X)  # unit and working-unit rows, all columns: the per-row sums (_row_sums)
        cols = self.sparse_cols[lang]  # the language's own non-zero columns: its sums are zero elsewhere
        return sp.hstack([U[:, cols], X[:, cols]], format="csr").T.tocsr()

    def _sparse_products(self, lang: int, W: np.ndarray) -> SparseSums:
        """``W @ [unit | centred]`` (B x 2d, working units) of a sparse language by sparse products, on its own columns.

        ``[unit | x]^T @ W^T`` costs one multiply-add per non-zero coordinate and resample (scipy's CSR kernels,
        single-threaded, so the same bits whatever the BLAS threads); the centred half is then ``W @ x - (W 1) c``.
        It differs from the dense ``W @ (x - c)`` by rounding only: the construction's cancellation check
        (``||x||^2 + ||c||^2 <= 64 ||x - c||^2`` for every word, else the dense route) bounds the terms it adds
        by ``sqrt(128)`` times those of the dense sum.  The sums are held on the language's own non-zero columns
        (:class:`SparseSums`): a TF-IDF language uses a third of the hashed n-gram columns or fewer.
        """
        return SparseSums.product(self, lang, self.sparse[lang], W)

    def _scan(self) -> None:
        """Largest coordinate (-> ``exponent``, working units) and the centre, in one read of the vectors."""
        d = self.d
        maxabs = 0.0
        raw_sum = np.zeros(d)  # blocks within the raw range, in the vectors' units
        scaled_sums: list[tuple[np.ndarray, int]] = []  # other blocks, each in its own power-of-two units
        total = 0
        lo, hi = math.ldexp(1.0, -_RAW_EXPONENT), math.ldexp(1.0, _RAW_EXPONENT)
        X = np.empty((self.rows, d))
        ones = np.ones(self.rows)
        for v in self.aw.vectors:
            total += v.shape[0]
            for a, b in row_chunks(v.shape[0], self.rows):
                x = v[a:b]
                m = max(float(np.max(x)), -float(np.min(x)))
                maxabs = max(maxabs, m)
                if lo <= m <= hi or m == 0.0:
                    if not (isinstance(x, np.ndarray) and x.dtype == np.float64):
                        np.copyto(X[: b - a], x)
                        x = X[: b - a]
                    raw_sum += ones[: b - a] @ x
                else:
                    e = int(pow2_exponent(m))
                    scaled_sums.append((np.ldexp(np.asarray(x, dtype=np.float64), -e).sum(axis=0), e))
        self.exponent = int(pow2_exponent(maxabs))
        self.scale = math.ldexp(1.0, self.exponent)
        E = self.exponent
        centre = np.ldexp(raw_sum, -E)
        for s, e in scaled_sums:
            centre += np.ldexp(s, e - E)
        # Euclidean sums are translation-invariant; centring avoids cancellation
        self.centre_scaled = centre / total
        self.centre = np.ldexp(self.centre_scaled, E)
        self._wexp = 0 if (lo <= maxabs <= hi or maxabs == 0.0) else E  # working units: 2**_wexp
        self._centre_w = np.ldexp(self.centre_scaled, E - self._wexp)
        self._cc = float(self._centre_w @ self._centre_w)

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        return np.empty((self.rows, self.d)), np.empty((self.rows, 2 * self.d))

    def _load(self, x: Any, X: np.ndarray | None) -> np.ndarray:
        """A block of vectors as float64 in working units (``X``: a reused buffer; no copy for raw float64)."""
        if self._wexp == 0 and isinstance(x, np.ndarray) and x.dtype == np.float64:
            return x
        if X is None or x.shape[0] > X.shape[0]:
            out = np.array(x, dtype=np.float64)
        else:
            out = X[: x.shape[0]]
            np.copyto(out, x)
        if self._wexp:
            np.ldexp(out, -self._wexp, out=out)
        return out

    def _block(self, lang: int, a: int, b: int, X: np.ndarray, G: np.ndarray, tmp: np.ndarray, bad: list) -> tuple:
        """The fused pass over words a:b of ``lang``: one conversion, then row dots and one small product.

        Records the norms and squared centred norms, adds to the point estimate's
        sums (and fills the stacked rows).  Unit and centred rows are never
        formed: ``sum_k u_k`` and ``sum_k x_k`` come from one product
        ``[1/n; 1] @ X`` (``G``: a (4 x rows) buffer), and ``||x - c||^2 = ||x||^2 -
        2 x.c + ||c||^2`` -- recomputed from the centred rows for a block where
        ``||x||^2 + ||c||^2`` exceeds ``_KAPPA`` times it (cancellation).  Returns
        (block in working units, squared norms, 1/norms (0 for rows normalised one
        by one), those rows, whether the dot-product route was accurate).
        """
        d, c, wexp = self.d, self._centre_w, self._wexp
        x_in = self.aw.vectors[lang][a:b]
        Xw = self._load(x_in, X)
        m = Xw.shape[0]
        sq = _rowsq(Xw)
        occ = self.occurrences[lang]
        G = G[: (2 if occ is None else 4), :m]
        n = np.sqrt(sq, out=self.norms[lang][a:b]) if wexp == 0 else np.sqrt(sq)
        inv = G[0]
        np.divide(1.0, n, out=inv)  # row 1 of G holds ones (set by the caller)
        rows = _abnormal(sq) if not (sq.min() >= _TINY_SQ and sq.max() < np.inf) else _NO_ROWS
        unit_bad = None
        if rows.size:  # from the input rows themselves: a tiny row may vanish in working units
            inv[rows] = 0.0
            unit_bad, raw_bad = _unit_rows_scaled(np.asarray(x_in[rows], dtype=np.float64))
            n[rows] = np.ldexp(raw_bad, -wexp) if wexp else raw_bad
        if occ is not None:
            np.multiply(occ[a:b], inv, out=G[2])
            G[3] = occ[a:b]
        S = G @ Xw  # sums of unit rows and of rows (and occurrence-weighted)
        if rows.size:
            S[0] += unit_bad.sum(axis=0)
            if occ is not None:
                S[2] += occ[a:b][rows] @ unit_bad
        self._sums[lang] += S
        if wexp:
            raw = np.ldexp(n, wexp)
            if rows.size:
                raw[rows] = raw_bad
            self.norms[lang][a:b] = raw
            # streamed unit rows divide by the stored norm: exact only for normal, finite norms
            odd = np.flatnonzero(~((raw >= _NORMAL) & (raw < np.inf)))
            flagged = np.union1d(rows, odd) if odd.size else rows
        else:
            flagged = rows
        if flagged.size:
            bad.append(flagged + a)
        xc = Xw @ c  # BLAS gemv: faster than a row-dot loop against one vector
        t = sq + self._cc
        ok = bool((xc / t).max() <= (1.0 - 1.0 / _KAPPA) / 2.0)  # ||x - c||^2 >= (||x||^2 + ||c||^2) / _KAPPA
        if not ok:
            self._dot_ok[lang] = False
        stacked = self.stacked[lang]
        if stacked is not None or not ok:
            C = stacked[a:b, d:] if stacked is not None else tmp[:m]
            np.subtract(Xw, c, out=C)
            q = _rowsq(C)
        else:
            q = t - 2.0 * xc
        if stacked is not None:
            np.multiply(Xw, inv[:, None], out=stacked[a:b, :d])
            if rows.size:
                stacked[a + rows, :d] = unit_bad
        self._q[lang][a:b] = q
        return Xw, sq, inv, rows, ok

    def _fused_rows(self, bad: list) -> tuple[np.ndarray, np.ndarray]:
        """One word per row in every language: norms, sums and the per-row inter sums in one pass.

        Per row, ``sum_{l<m} u_l . u_m = sum x_l . x_m / (n_l n_m)`` and
        ``sum_{l<m} ||x_l - x_m||^2 = (L - 1) sum_l ||x_l||^2 - 2 sum_{l<m} x_l . x_m``
        (translation-invariant; from the centred rows where a block failed the
        cancellation check).
        """
        R, L, K, d = self.R, self.L, self.K, self.d
        row_cos = np.empty(R)
        row_euc = np.empty(R)
        bufs = [np.empty((self.rows, d)) for _ in range(L)]
        Gs = [np.ones((4, self.rows)) for _ in range(L)]
        tmp = np.empty((self.rows, d))
        total = np.empty((self.rows, d))
        pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
        for a, b in row_chunks(R, self.rows):
            m = b - a
            blocks = [self._block(lang, a, b, bufs[lang], Gs[lang], tmp, bad[lang]) for lang in range(L)]
            dots = np.zeros(m)
            sxy = np.zeros(m)
            for i, j in pairs:
                xy = rowdot(blocks[i][0], blocks[j][0])
                sxy += xy
                xy *= blocks[i][2]
                xy *= blocks[j][2]
                dots += xy
            odd = np.unique(np.concatenate([blk[3] for blk in blocks])) if any(blk[3].size for blk in blocks) else _NO_ROWS
            if odd.size:  # rows normalised one by one: their dots from explicit unit vectors of the input rows
                units = [unit_rows(np.asarray(v[a:b][odd], dtype=np.float64))[0] for v in self.aw.vectors]
                dots[odd] = sum(rowdot(units[i], units[j]) for i, j in pairs)
            if all(blk[4] for blk in blocks):
                dist = (L - 1) * sum(blk[1] for blk in blocks) - 2.0 * sxy  # sum_{l<m} ||x_l - x_m||^2
            else:
                T = total[:m]
                T[:] = 0.0
                q_sum = np.zeros(m)
                for lang, blk in enumerate(blocks):
                    C = tmp[:m]
                    np.subtract(blk[0], self._centre_w, out=C)
                    T += C
                    q_sum += self._q[lang][a:b]
                dist = L * q_sum - _rowsq(T)  # the same sum, from the centred rows
            row_cos[a:b] = np.maximum(1.0 - dots / K, 0.0)  # a distance is >= 0
            row_euc[a:b] = np.sqrt(np.maximum(dist, 0.0) / K)
        return row_cos, row_euc

    # -- rows -----------------------------------------------------------------
    def scaled_units(self, x: Any) -> np.ndarray:
        """``x`` (vectors) in units of ``scale`` as float64: exact, a power of two."""
        return np.ldexp(np.asarray(x, dtype=np.float64), -self.exponent)

    def _fill(self, lang: int, idx: slice | np.ndarray, X: np.ndarray | None, out: np.ndarray | None) -> np.ndarray:
        """[unit | centred] rows (working units) of the words ``idx`` of ``lang``, from the stored norms."""
        d = self.d
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx]
        Xw = self._load(self.aw.vectors[lang][idx], X)
        m = Xw.shape[0]
        out = np.empty((m, 2 * d)) if out is None else out[:m]
        n = self.norms[lang][idx]
        if self._wexp:
            n = np.ldexp(n, -self._wexp)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(Xw, n[:, None], out=out[:, :d])
        bad = self._bad[lang]
        if bad.size:
            if isinstance(idx, slice):
                lo, hi = np.searchsorted(bad, [idx.start, idx.stop])
                rows = bad[lo:hi] - idx.start
            else:
                rows = np.flatnonzero(np.isin(idx, bad))
            if rows.size:
                picked = self.aw.vectors[lang][idx][rows] if isinstance(idx, slice) else self.aw.vectors[lang][idx[rows]]
                out[rows, :d] = _unit_rows_scaled(np.asarray(picked, dtype=np.float64))[0]
        np.subtract(Xw, self._centre_w, out=out[:, d:])
        return out

    def _unit(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        return self._fill(lang, idx, None, None)[:, : self.d]

    def _centred(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        """Centred vectors in working units (``2**_wexp``)."""
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx, self.d :]
        held = getattr(self, "_centred_held", None)
        if held is not None:  # the same element-wise arithmetic, done once (see repaired_inters_euclidean)
            return held[lang][idx]
        return self._load(self.aw.vectors[lang][idx], None) - self._centre_w

    def _row_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Sum over each row's expanded tuples of the tuple's cosine / RMS-Euclidean (working units) distance."""
        R, L, K = self.R, self.L, self.K
        row_cos = np.empty(R)
        every_sparse = all(w is not None for w in self._sparse_words)
        for a, b in row_chunks(R, self.block):
            total = 0.0
            sq_each = np.zeros(b - a)
            for lang in range(L):
                inc = self.aw.incidence[lang][a:b]
                if every_sparse:  # TF-IDF words: the same row means from the sparse unit rows (no dense d-wide fill)
                    U = self._sparse_words[lang][0]
                    ubar = U[a:b] if self.identity[lang] else sp.csr_matrix(sp.diags(1.0 / np.diff(inc.indptr)) @ inc @ U)
                    total = ubar if isinstance(total, float) else total + ubar
                    sq_each += np.asarray(ubar.multiply(ubar).sum(axis=1)).ravel()
                    continue
                if self.identity[lang]:
                    ubar = self._unit(lang, slice(a, b))
                else:
                    cols = np.unique(inc.indices)
                    mean_rows = sp.diags(1.0 / np.diff(inc.indptr)) @ inc[:, cols]
                    ubar = mean_rows @ self._unit(lang, cols)
                total = total + ubar
                sq_each += _rowsq(ubar)
            tot_sq = np.asarray(total.multiply(total).sum(axis=1)).ravel() if sp.issparse(total) else _rowsq(total)
            pair_dots = (tot_sq - sq_each) / 2.0  # sum_{l<m} ubar_l . ubar_m
            row_cos[a:b] = self.tuples[a:b] * inter_cosine(pair_dots, K)
        return row_cos, self._row_euclid()

    def _row_euclid(self, pairing: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Per row, the sum over its expanded tuples of the tuple's RMS distance (working units).

        ``pairing``: row r of language l is taken from the original row ``pairing[l][r]``
        (a re-pairing of the translations, as the Euclidean chance level draws); None: as given.
        """
        R, L = self.R, self.L
        rows_of = [np.arange(R) if pairing is None else np.asarray(pr) for pr in (pairing or [None] * L)]
        alts = [self.alternatives[lang][rows_of[lang]] for lang in range(L)]
        tuples = np.prod(np.stack(alts).astype(np.float64), axis=0)
        out = np.zeros(R)
        first_word = [inc.indices[inc.indptr[:-1]][rows_of[lang]] for lang, inc in enumerate(self.aw.incidence)]
        single = np.flatnonzero(tuples == 1)
        gram = self._centred_gram() if pairing is not None else None
        if gram is not None:  # re-pairings: each tuple's squared distances read from the words' centred Gram matrices
            w = [fw[single] for fw in first_word]
            pair_sq = np.zeros(single.size)
            for i in range(L):
                for j in range(i + 1, L):
                    pair_sq += self._q[i][w[i]] + self._q[j][w[j]] - 2.0 * gram[i, j][w[i], w[j]]
            out[single] = np.sqrt(np.maximum(pair_sq, 0.0) / self.K)
        else:
            for a, b in row_chunks(single.size, self.block):
                rows = single[a:b]
                out[rows] = self._tuple_rms([w[rows] for w in first_word])
        multi = np.flatnonzero(tuples > 1)
        if multi.size:  # rows with alternatives: every expanded tuple of all of them, a block of tuples at a time
            sizes = tuples[multi].astype(np.int64)
            ends = np.cumsum(sizes)
            step = max(self.rows, int(sizes.max()))  # tuples per block (at least one row's): STREAM_BLOCK_BYTES per language
            a = 0
            while a < multi.size:
                b = int(np.searchsorted(ends, (ends[a - 1] if a else 0) + step, side="right"))
                b = max(b, a + 1)
                rows = multi[a:b]
                n_t = sizes[a:b]
                row_of = np.repeat(np.arange(rows.size), n_t)  # block row of each tuple
                local = np.arange(int(n_t.sum())) - np.repeat(np.cumsum(n_t) - n_t, n_t)  # tuple number within its row
                words = [np.empty(0, dtype=np.intp)] * L
                for lang in reversed(range(L)):  # C order: the last language's alternative varies fastest
                    inc = self.aw.incidence[lang]
                    src = rows_of[lang][rows][row_of]
                    n_alt = alts[lang][rows][row_of]
                    words[lang] = inc.indices[inc.indptr[src] + local % n_alt]
                    local = local // n_alt
                out[rows] += np.bincount(row_of, weights=self._tuple_rms(words), minlength=rows.size)
                a = b
        return out

    def _centred_gram(self) -> dict[tuple[int, int], np.ndarray] | None:
        """``C_l @ C_m.T`` (centred words, working units) for every language pair, when they hold at most
        :data:`GRAM_LIMIT` numbers in all (else None): a re-pairing then costs O(R) per pair, not O(R d).

        Made once under a lock: the Euclidean chance level and the permutation test (which derives its unit Gram
        matrices from these, :func:`~semanscope_nb.metrics.chance.permutation_test`) may ask from two threads."""
        with _gram_lock:
            if getattr(self, "_gram", False) is False:
                n = [v.shape[0] for v in self.aw.vectors]
                size = sum(n[i] * n[j] for i in range(self.L) for j in range(i + 1, self.L))
                gram = None
                if size <= GRAM_LIMIT:
                    C = [self._centred(lang, slice(0, n[lang])) for lang in range(self.L)]
                    gram = {(i, j): C[i] @ C[j].T for i in range(self.L) for j in range(i + 1, self.L)}
                self._gram = gram
        return self._gram

    def repaired_inters_euclidean(self, pairings: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
        """:meth:`repaired_inter_euclidean` of each re-pairing (``pairings``: a sequence of per-language index arrays, or
        one (re-pairings, L, R) array); one word per row everywhere: all at once from the Gram matrices."""
        gram = self._centred_gram() if bool((self.tuples == 1).all()) else None
        if gram is None or not len(pairings):
            n = [v.shape[0] for v in self.aw.vectors]
            if len(pairings) > 1 and 8 * self.d * sum(n) <= CENTRED_HOLD_BYTES:  # centre every word once, not once per re-pairing
                self._centred_held = [None if self.stacked[lang] is not None
                                      else self._load(self.aw.vectors[lang], None) - self._centre_w for lang in range(self.L)]
            try:
                return np.array([self.repaired_inter_euclidean(list(p)) for p in pairings])  # (L, R) arrays: lists of rows
            finally:
                self._centred_held = None
        P = np.asarray(pairings)  # (re-pairings, L, R): row r of language l comes from row P[:, l, r]
        R = self.R
        in_order = np.arange(R)
        w: list[np.ndarray | None] = []  # each language's word per re-paired row; None: row r's own word r throughout
        for lang, inc in enumerate(self.aw.incidence):
            first_word = inc.indices[inc.indptr[:-1]]
            kept = inc.shape[1] == R and np.array_equal(first_word, in_order) and bool((P[:, lang] == in_order).all())
            w.append(None if kept else first_word[P[:, lang]])  # (the chance level keeps the first language in place)
        pair_sq = np.zeros(P[:, 0].shape)
        for i in range(self.L):
            for j in range(i + 1, self.L):
                # the same numbers as q_i[w_i] + q_j[w_j] - 2 G[w_i, w_j]: a language in place reads its q and G's rows
                # as they are (broadcast), and G's entries come by one flat gather (G[a, b] = G.ravel()[a n_j + b])
                # instead of a 2-d fancy index
                n_j = gram[i, j].shape[1]
                flat = (in_order if w[i] is None else w[i]) * n_j + (in_order if w[j] is None else w[j])
                q_i = self._q[i] if w[i] is None else self._q[i][w[i]]
                q_j = self._q[j] if w[j] is None else self._q[j][w[j]]
                pair_sq += q_i + q_j - 2.0 * gram[i, j].ravel().take(flat)
        row = np.sqrt(np.maximum(pair_sq, 0.0) / self.K)
        shift = self._wexp - self.exponent
        row = np.ldexp(row, shift) if shift else row
        return row.sum(axis=1) / float(self.R)

    def repaired_inter_euclidean(self, pairing: Sequence[np.ndarray]) -> float:
        """The Euclidean inter spread (units of ``scale``) after re-pairing language l's rows by ``pairing[l]``.

        The same arithmetic as the spreads of the re-paired :class:`AlignedWords` (the
        same tuples, centre and squared norms), without building them again: D_intra and
        everything per word do not change under a re-pairing.
        """
        alts = np.stack([self.alternatives[lang][np.asarray(pr)] for lang, pr in enumerate(pairing)]).astype(np.float64)
        row = self._row_euclid(pairing)
        shift = self._wexp - self.exponent
        row = np.ldexp(row, shift) if shift else row
        return float(row.sum() / alts.prod(axis=0).sum())

    def _tuple_rms(self, word_idx: list[np.ndarray]) -> np.ndarray:
        """sqrt(mean over language pairs of ||e_i - e_j||^2) for each tuple (working units)."""
        total = 0.0
        sumsq = 0.0
        if all(w is not None for w in self._sparse_words):  # TF-IDF words: sum_l (x_l - c) = (sum_l x_l) - L c
            xs = None
            for lang, idx in enumerate(word_idx):
                x = self._sparse_words[lang][1][idx]
                xs = x if xs is None else xs + x
                sumsq = sumsq + self._q[lang][idx]
            total = xs.toarray()
            total -= self.L * self._centre_w
        else:
            for lang, idx in enumerate(word_idx):
                total = total + self._centred(lang, idx)
                sumsq = sumsq + self._q[lang][idx]
        pair_sq = self.L * sumsq - _rowsq(total)  # sum_{i<j} ||e_i - e_j||^2
        return np.sqrt(np.maximum(pair_sq, 0.0) / self.K)

    # -- weighted sums for count vectors -------------------------------------------
    def _csc_of(self, kind: str, lang: int) -> sp.csc_matrix:
        key = (kind, lang)
        if key not in self._csc:
            A = self.word_weight_map[lang] if kind == "intra" else self.occurrence_map[lang]
            self._csc[key] = sp.csc_matrix(A)
        return self._csc[key]

    def _word_weights(self, counts: np.ndarray, kind: str, lang: int, a: int, b: int) -> np.ndarray:
        """``counts @ map[:, a:b]`` (B x (b - a)) without copying or transposing ``counts``."""
        A = self._csc_of(kind, lang)
        ptr = A.indptr[a : b + 1]
        lo = ptr[0]
        G = counts[:, A.indices[lo : ptr[-1]]]
        G *= A.data[lo : ptr[-1]]
        starts = ptr[:-1] - lo
        held = np.diff(ptr) > 0
        if held.all():
            return np.add.reduceat(G, starts, axis=1)
        out = np.zeros((counts.shape[0], b - a))
        if held.any():
            out[:, held] = np.add.reduceat(G, starts[held], axis=1)
        return out

    def fold_languages(self) -> list[int]:
        """The stacked languages with alternatives or shared words whose products are folded (:meth:`_folded`)."""
        langs = [lang for lang in range(self.L) if not self.identity[lang] and self.stacked[lang] is not None]
        # R x 2d per language and kind, held beside the stacked words: at most stack_limit numbers per kind
        return langs if self.R * 2 * self.d * len(langs) <= self._fold_limit else []

    def _folded(self, kind: str) -> tuple[list[int], np.ndarray, np.ndarray] | None:
        """(languages, ``map @ [unit | centred]`` side by side (R x 2d each), ``map @ q`` (R x languages)) for ``kind``.

        ``W @ X = (counts @ map) @ X = counts @ (map @ X)``: formed once (a sparse product), the products of every
        batch of resamples are then one dense product of the counts for all these languages, as the one-word-per-row
        languages' joint product, and it splits by rows like it (:meth:`split_rows`).  None when there are none.
        """
        if kind not in self._fold:
            langs = self.fold_languages()
            fold = None
            if langs:
                d2 = 2 * self.d
                F, Fq = np.empty((self.R, d2 * len(langs))), np.empty((self.R, len(langs)))
                for i, lang in enumerate(langs):
                    A = self.word_weight_map[lang] if kind == "intra" else self.occurrence_map[lang]
                    F[:, d2 * i : d2 * (i + 1)] = A @ self.stacked[lang]
                    Fq[:, i] = A @ self._q[lang]
                fold = (langs, F, Fq)
            self._fold[kind] = fold
        return self._fold[kind]

    def _occurrence_correction(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(rows, ``(A - M)[rows] @ [unit | centred]`` side by side, ``(A - M)[rows] @ q``) of the folded languages.

        Occurrence and intra weights differ only on words shared by rows (``A - M = A diag(1 - 1/colsum)``), so the
        occurrence products are the intra ones plus a product over the rows holding a shared word.  None when more
        than a quarter of the rows hold one (then the occurrence products are taken on their own) or nothing folds.
        """
        if "correction" not in self._fold:
            fold = self._folded("intra")
            corr = None
            if fold is not None:
                langs, d2 = fold[0], 2 * self.d
                diffs = [sp.csr_matrix(self.occurrence_map[lang] - self.word_weight_map[lang]) for lang in langs]
                for D in diffs:
                    D.eliminate_zeros()
                rows = np.flatnonzero(sum(np.diff(D.indptr) for D in diffs) > 0)
                if 4 * rows.size <= self.R:
                    C, Cq = np.empty((rows.size, d2 * len(langs))), np.empty((rows.size, len(langs)))
                    for i, (lang, D) in enumerate(zip(langs, diffs)):
                        C[:, d2 * i : d2 * (i + 1)] = D[rows] @ self.stacked[lang]
                        Cq[:, i] = D[rows] @ self._q[lang]
                    corr = (rows, C, Cq)
            self._fold["correction"] = corr
        return self._fold["correction"]

    def _folded_products(self, counts: np.ndarray, kinds: tuple[str, ...]) -> dict[int, dict[str, tuple]]:
        """Per folded language and kind ``(W @ [unit | centred], W @ q)`` for ``counts`` (:meth:`_folded`)."""
        out: dict[int, dict[str, tuple]] = {}
        d2 = 2 * self.d
        corr = self._occurrence_correction() if "intra" in kinds and "occ" in kinds else None
        prods: dict[str, np.ndarray] = {}
        for k in sorted(kinds, key=lambda k: k != "intra"):  # intra first: the occurrence products may build on it
            fold = self._folded("intra" if k == "occ" and corr is not None else k)  # (the occurrence map not formed)
            if fold is None:
                continue
            langs, F, Fq = fold
            if k == "occ" and corr is not None:  # the intra products plus the rows holding a shared word
                rows, C, Cq = corr
                G = counts[:, rows]
                prod = prods["intra"] + G @ C
                pq = counts @ self._folded("intra")[2] + G @ Cq
                if self._split_keep is not None:
                    kept_prod = self._fold_kept["intra"][2]
                    on = self._split_keep[rows]
                    self._fold_kept[k] = (*self._fingerprint(counts), kept_prod + G[:, on] @ C[on])
                for i, lang in enumerate(langs):
                    out[lang][k] = (prod[:, d2 * i : d2 * (i + 1)], pq[:, i])
                continue
            if self._split_keep is not None:  # kept rows + the rest: the subset's product is a part of this one
                keep = self._split_keep
                if k not in self._fold_split:
                    self._fold_split[k] = (np.ascontiguousarray(F[keep]), np.ascontiguousarray(F[~keep]))
                kept_rows, other_rows = self._fold_split[k]
                self._fold_kept.pop(k, None)  # as the joint split product (_weighted): the previous arrays when free
                shape = (counts.shape[0], F.shape[1])
                kept = column_block_product(counts[:, keep], kept_rows, d2, out=self._product_buffer(shape, f"fold-kept-{k}"))
                prod = column_block_product(counts[:, ~keep], other_rows, d2, out=self._product_buffer(shape, f"fold-{k}"))
                prod += kept  # the same bits as kept + rest
                self._fold_kept[k] = (*self._fingerprint(counts), kept)
                self._spare[f"fold-kept-{k}"], self._spare[f"fold-{k}"] = kept, prod
            else:
                prod = column_block_product(counts, F, d2)
            prods[k] = prod
            pq = counts @ Fq
            for i, lang in enumerate(langs):
                out.setdefault(lang, {})[k] = (prod[:, d2 * i : d2 * (i + 1)], pq[:, i])
        return out

    def kept_folded(self, counts: np.ndarray, kind: str) -> np.ndarray:
        """``counts[:, keep] @ (map @ [unit | centred])[keep]`` of the folded languages side by side (:meth:`split_rows`)."""
        cached = self._fold_kept.get(kind)
        if cached is not None:
            shape, probe, kept = cached
            fp = self._fingerprint(counts)
            if fp[0] == shape and np.array_equal(fp[1], probe):
                return kept
        keep = self._split_keep
        return counts[:, keep] @ self._folded(kind)[1][keep]

    def _weighted(self, counts: np.ndarray, kinds: tuple[str, ...]) -> dict[str, list[tuple]]:
        """Per kind and language: (w_tot, sum of squared weights, W @ [unit | centred], W @ q), working units (the first
        two None for the occurrence weights of a folded language: only its products are read).

        ``kind`` 'intra' weighs word k by ``sum_r c_r A[r,k] / colsum_k``, 'occ' by
        ``sum_r c_r A[r,k]``; both are the counts themselves for one word per row.
        Streamed languages with one word per row share their weights, so they are
        filled side by side and multiplied together: one product
        ``counts[:, a:b] @ [unit_1 | centred_1 | unit_2 | ...]`` per block of rows
        (wider products run closer to the machine's peak).
        """
        B, d = counts.shape[0], self.d
        res: dict[int, dict[str, tuple]] = {}
        own = (counts.sum(axis=1), _rowsq(counts)) if any(self.identity) else None  # shared by identity languages
        joint = [lang for lang in range(self.L) if self.identity[lang] and self.stacked[lang] is None and self.sparse[lang] is None]
        if joint:
            J, N = len(joint), 2 * d * len(joint)
            rows = self._boot_rows(J)
            buf, X, Q = np.empty((rows, N)), np.empty((rows, d)), np.empty((rows, J))
            acc, acc_q, tmp = np.zeros((B, N)), np.zeros((B, J)), np.empty((B, N))
            for a, b in row_chunks(self.R, rows):
                m = b - a
                for i, lang in enumerate(joint):
                    self._fill(lang, slice(a, b), X, buf[:m, 2 * d * i : 2 * d * (i + 1)])
                    Q[:m, i] = self._q[lang][a:b]
                Wb = counts[:, a:b]
                np.matmul(Wb, buf[:m], out=tmp)
                acc += tmp
                acc_q += Wb @ Q[:m]
            for i, lang in enumerate(joint):
                res[lang] = {"intra": (own[0], own[1], acc[:, 2 * d * i : 2 * d * (i + 1)], acc_q[:, i])}
        if self._stack_joint is not None:
            side, stack = self._stack_joint
            if self._split is not None:  # kept and left-out rows apart: the subset's product is a part of this one
                keep, kept_rows, other_rows = self._split
                width = 2 * d  # one block per language (column_block_product)
                self._kept_cache = None  # the previous batch's kept product: its array may be written over now
                shape = (B, stack.shape[1])
                # both into the previous batch's arrays when nothing else holds them (_product_buffer): the rest first,
                # then the kept rows' part added in place -- the same bits as kept + rest (addition commutes)
                kept = column_block_product(counts[:, keep], kept_rows, width, out=self._product_buffer(shape, "kept"))
                prod = column_block_product(counts[:, ~keep], other_rows, width, out=self._product_buffer(shape))
                prod += kept
                self._kept_cache = (*self._fingerprint(counts), kept)
                self._spare["kept"] = kept
                self._prod_buf = prod
            else:
                prod = column_block_product(counts, stack, 2 * d, out=self._product_buffer((B, stack.shape[1])))
                self._prod_buf = prod
            for i, lang in enumerate(side):
                res[lang] = {"intra": (own[0], own[1], prod[:, 2 * d * i : 2 * d * (i + 1)], counts @ self._q[lang])}
        folded = self._folded_products(counts, kinds)
        X = UC = None
        tmp = np.empty((B, 2 * d))
        for lang in range(self.L):
            if lang in res:
                continue
            ident = self.identity[lang]
            want = ("intra",) if ident else kinds  # identity: every kind has the same weights
            stacked = self.stacked[lang]
            r = res[lang] = {}
            if stacked is not None or self.sparse[lang] is not None:
                n_words = self.aw.vectors[lang].shape[0]
                for k in want:
                    if k == "occ" and lang in folded and k in folded[lang]:  # only the products of the occurrence
                        r[k] = (None, None, *folded[lang][k])  # weights are read (occurrence_parts): W not formed
                        continue
                    W = counts if ident else self._word_weights(counts, k, lang, 0, n_words)
                    tot, wsq = own if ident else (W.sum(axis=1), _rowsq(W))
                    if lang in folded and k in folded[lang]:
                        r[k] = (tot, wsq, *folded[lang][k])
                        continue
                    both = W @ stacked if stacked is not None else self._sparse_products(lang, W)
                    r[k] = (tot, wsq, both, W @ self._q[lang])
                continue
            if X is None:
                X, UC = self._buffers()
            acc_k = {k: [np.zeros(B), np.zeros(B), np.zeros((B, 2 * d)), np.zeros(B)] for k in want}
            for a, b in row_chunks(self.aw.vectors[lang].shape[0], self.rows):
                block = self._fill(lang, slice(a, b), X, UC)
                for k in want:
                    Wb = self._word_weights(counts, k, lang, a, b)
                    s = acc_k[k]
                    np.matmul(Wb, block, out=tmp)
                    s[2] += tmp
                    s[3] += Wb @ self._q[lang][a:b]
                    s[0] += Wb.sum(axis=1)
                    s[1] += _rowsq(Wb)
            for k in want:
                r[k] = tuple(acc_k[k])
        return {k: [res[lang]["intra"] if self.identity[lang] else res[lang][k] for lang in range(self.L)] for k in kinds}

    def _product_buffer(self, shape: tuple[int, int], slot: str = "joint") -> np.ndarray | None:
        """The previous batch's joint product array to write this batch's into, when it has ``shape`` and nothing
        outside this object still refers to it (no part of it handed out is alive: the reference count says so),
        else None (a new array).  Without it every batch made a fresh (B x 2dL) array: megabytes of new pages that
        the allocator hands back to the system between calls (page faults, system time).  ``slot``: another array
        kept the same way (``"kept"``: the kept rows' part of a split product, :meth:`split_rows`)."""
        with self._prod_lock:
            if slot == "joint":  # one taker at a time (a Spreads read from two threads)
                buf, self._prod_buf = self._prod_buf, None
            else:
                buf = self._spare.pop(slot, None)
        if buf is None or buf.shape != shape:
            return None
        # a live view (a part of an earlier batch) adds a reference beyond those of a local name, counted the same way
        # for a fresh local array (the interpreter's own references to a local differ between Python versions)
        alone = np.empty(0)
        return buf if sys.getrefcount(buf) <= sys.getrefcount(alone) else None

    def _boot_rows(self, languages: int) -> int:
        """Rows per block when ``languages`` streamed languages are filled side by side (:data:`BOOT_BLOCK_BYTES`)."""
        return max(1, min(self.block, self.R, BOOT_BLOCK_BYTES // (8 * (2 * self.d * languages + self.d + languages))))

    def _is_ones(self, counts: np.ndarray) -> bool:
        return counts.ndim == 2 and counts.shape[0] == 1 and bool((counts == 1.0).all())

    def _fingerprint(self, counts: np.ndarray) -> tuple[tuple, np.ndarray]:
        return counts.shape, counts @ self._probe

    def occurrence_parts(self, counts: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per language ``(V @ [unit | centred], V @ q)`` (working units) for occurrence weights ``V = counts @ A``.

        All-ones counts use the sums of the construction pass; the count matrix of
        the latest :meth:`spreads` call (when ``track_occurrences``) its kept products.
        """
        counts = np.asarray(counts, dtype=np.float64)
        if self._is_ones(counts):
            return [(p[0][None, :], np.array([p[1]])) if p is not None else (q[0][None, :], np.array([q[1]]))
                    for p, q in zip(self._point_occ, self._point)]
        if self._occ_cache is not None:
            shape, probe, parts = self._occ_cache
            fp = self._fingerprint(counts)
            if fp[0] == shape and np.array_equal(fp[1], probe):
                return parts
        return [(p[2], p[3]) for p in self._weighted(counts, ("occ",))["occ"]]

    # -- spreads for row weights ------------------------------------------------
    def spreads(self, counts: np.ndarray, *, scaled: bool = False) -> dict[str, np.ndarray]:
        """Cosine/Euclidean intra and inter spreads for row-count vectors ``counts`` (B x R).

        Euclidean values are in the vectors' units, or in units of ``scale``
        with ``scaled=True`` (what ratios should use: nothing can overflow).
        A resample whose words in one language are all one word has an
        undefined intra spread (NaN).
        """
        counts = np.asarray(counts, dtype=np.float64)
        if self._is_ones(counts):
            stats = self._row_stack.sum(axis=0)[None, :]
            parts = [(np.array([float(v.shape[0])]),) * 2 + (p[0][None, :], np.array([p[1]]))
                     for v, p in zip(self.aw.vectors, self._point)]
        else:
            stats = counts @ self._row_stack
            kinds = ("intra", "occ") if self.track_occurrences else ("intra",)
            self._intra_cache = None  # replaced below: the previous batch's products may then be written over
            if self.track_occurrences:
                self._occ_cache = None
            w = self._weighted(counts, kinds)
            parts = w["intra"]
            if self.track_occurrences:
                self._occ_cache = (*self._fingerprint(counts), [(p[2], p[3]) for p in w["occ"]])
            self._intra_cache = (*self._fingerprint(counts), parts)
        return self.from_parts(stats, parts, scaled=scaled)

    def split_rows(self, keep: np.ndarray) -> bool:
        """Take the joint product of the stacked one-word-per-row languages as kept rows + the rest (:class:`RowSubset`).

        The full set's product is then the sum of two, and the kept rows' part is the
        subset's product at no extra cost (:meth:`kept_product`).  False when there is no
        joint product to split.
        """
        keep = np.asarray(keep, dtype=bool)
        self._split_keep, self._fold_split, self._fold_kept = keep, {}, {}  # the folded products split likewise
        if self._stack_joint is None:
            return False
        stack = self._stack_joint[1]
        self._split = (keep, np.ascontiguousarray(stack[keep]), np.ascontiguousarray(stack[~keep]))
        self._kept_cache = None
        return True

    def kept_product(self, counts: np.ndarray) -> np.ndarray:
        """``counts[:, keep] @ stack[keep]`` of :meth:`split_rows` (the latest :meth:`spreads` call's, when it is for ``counts``)."""
        keep, kept_rows, _ = self._split
        if self._kept_cache is not None:
            shape, probe, kept = self._kept_cache
            fp = self._fingerprint(counts)
            if fp[0] == shape and np.array_equal(fp[1], probe):
                return kept
        return counts[:, keep] @ kept_rows

    def intra_parts(self, counts: np.ndarray) -> list[tuple]:
        """Per language ``(w_tot, sum of squared weights, W @ [unit | centred], W @ q)`` (working units) for ``counts``.

        The products of the latest :meth:`spreads` call when ``counts`` is its count matrix, else computed.
        """
        counts = np.asarray(counts, dtype=np.float64)
        if self._is_ones(counts):
            return [(np.array([float(v.shape[0])]),) * 2 + (p[0][None, :], np.array([p[1]]))
                    for v, p in zip(self.aw.vectors, self._point)]
        if self._intra_cache is not None:
            shape, probe, parts = self._intra_cache
            fp = self._fingerprint(counts)
            if fp[0] == shape and np.array_equal(fp[1], probe):
                return parts
        return self._weighted(counts, ("intra",))["intra"]

    def from_parts(self, stats: np.ndarray, parts: Sequence[tuple], *, scaled: bool = True) -> dict[str, np.ndarray]:
        """The spreads from the per-row inter sums ``stats`` (B x 3: tuples, cosine, Euclidean) and the intra ``parts``.

        The SA's parts in one place (paper eq. 3's D_intra and D_inter): the intra mean over
        pairs of distinct words is ``(W^2 - ||sum w u||^2) / (W^2 - sum w^2)`` per language
        (``2 (W sum w q - ||sum w c||^2) / (W^2 - sum w^2)`` squared distances for the
        Euclidean one, its root), the inter mean is tuple-weighted.  The intra spread is the mean over the
        languages of ``parts`` (all of them, or those of a language pair: :class:`RowSubset` ``languages``).
        """
        d = self.d
        L = len(parts)
        B = stats.shape[0]
        inter_cos = stats[:, 1] / stats[:, 0]
        inter_euc = stats[:, 2] / stats[:, 0]
        intra_cos = np.zeros(B)
        intra_euc = np.zeros(B)
        for w_tot, w_sq, both, s_q in parts:
            pairs = w_tot**2 - w_sq  # sum_{a != b} w_a w_b (0: one word only -> undefined)
            uu, cc = both.squares() if isinstance(both, SparseSums) else (_rowsq(both[:, :d]), _rowsq(both[:, d:]))
            intra_cos += intra_cosine(w_tot, w_sq, uu)
            with np.errstate(invalid="ignore", divide="ignore"):
                msq = 2.0 * (w_tot * s_q - cc) / pairs
            intra_euc += np.sqrt(np.maximum(msq, 0.0))  # NaN (undefined) stays NaN
        shift = self._wexp - self.exponent
        intra_euc = np.ldexp(intra_euc, shift) / L if shift else intra_euc / L
        if not scaled:
            with np.errstate(over="ignore"):
                intra_euc = np.ldexp(intra_euc, self.exponent)
                inter_euc = np.ldexp(inter_euc, self.exponent)
        return {
            "intra_cos": intra_cos / L,
            "inter_cos": inter_cos,
            "intra_euc": intra_euc,
            "inter_euc": inter_euc,
        }

    @staticmethod
    def point_cosines(vectors: Sequence[np.ndarray], incidence: Sequence[Any] | None = None) -> tuple[float, float] | None:
        """The cosine ``(D_intra, D_inter)`` at the point (every weight 1), straight from the vectors: what
        :meth:`spreads` gives for all-ones counts, without building a :class:`Spreads` (whose construction prepares
        every resample's products, for one point).

        ``incidence``: per language, rows x words 0/1 (alternatives, words shared by rows); None: one word per row.
        Per language :func:`intra_cosine` of its ``n`` words (``sum u = x^T (1 / ||x||)``, a matrix-vector product);
        a row's mean alternative unit vector is ``p = B u`` (``B`` the incidence with each row divided by its word
        count), the mean over the row's tuples of a language pair's cosine is ``p_k . p_l`` (the tuples are the
        alternatives' Cartesian product), and ``D_inter`` is the tuple-weighted mean over rows of
        :func:`inter_cosine` of ``sum_{k<l} p_k . p_l``.  None when a squared norm leaves float64's normal range (then
        the construction's per-row scaling is needed), a row holds no word or an incidence entry is not 1.

        >>> rng = np.random.default_rng(0); x = [rng.normal(size=(30, 8)) for _ in range(2)]
        >>> eye = sp.identity(30, format="csr")
        >>> at_ones = Spreads(AlignedWords(("en", "de"), tuple(x), (eye, eye), tuple(map(str, range(30))))).spreads(np.ones((1, 30)))
        >>> intra, inter = Spreads.point_cosines(x)
        >>> bool(np.isclose(intra, at_ones["intra_cos"][0], rtol=1e-13)), bool(np.isclose(inter, at_ones["inter_cos"][0], rtol=1e-13))
        (True, True)
        >>> inc = [sp.identity(4, format="csr")[[0, 1, 2, 3, 3]].T.tocsr(), sp.identity(4, format="csr")]  # row 3: two words
        >>> x = [rng.normal(size=(5, 4)), rng.normal(size=(4, 4))]
        >>> u = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in x]
        >>> loop_intra = np.mean([np.mean([1 - a @ b for i, a in enumerate(w) for j, b in enumerate(w) if i < j]) for w in u])
        >>> loop_inter = np.mean([1 - u[0][a] @ u[1][r] for r in range(4) for a in inc[0][r].indices])
        >>> bool(np.allclose(Spreads.point_cosines(x, inc), (loop_intra, loop_inter), rtol=1e-12))
        True
        """
        xs = [np.asarray(v, dtype=np.float64) for v in vectors]
        sq = [rowdot(x, x) for x in xs]
        if not all(bool(np.all((q >= 2.0**-900) & (q < np.inf))) for q in sq):  # the bound for a direct x / ||x||
            return None
        L = len(xs)
        invs = [1.0 / np.sqrt(q) for q in sq]
        if all(_one_word_per_row(x, None if incidence is None else incidence[lang]) for lang, x in enumerate(xs)):
            # one word per row in every language: p_k . p_l = (x_k . x_l) / (|x_k| |x_l|) row by row, one row-dot per
            # language pair -- no unit rows, sum of them or per-language squares formed (three R x d arrays per
            # language, each a fresh allocation).  It rounds less than (|sum p|^2 - sum |p|^2) / 2: each pair's dot
            # carries the row-dot's own rounding only, no cancellation of the squared norms (tests/test_language_centred.py)
            intra = sum(float(intra_cosine(float(x.shape[0]), float(x.shape[0]), float(np.square(inv @ x).sum())))
                        for x, inv in zip(xs, invs))
            dots = None
            for k in range(L):
                for m in range(k + 1, L):
                    xy = rowdot(xs[k], xs[m])
                    xy *= invs[k]
                    xy *= invs[m]
                    dots = xy if dots is None else np.add(dots, xy, out=dots)
            tuples = np.ones(dots.size)  # every tuple weighs 1: the tuple-weighted mean below, in the same arithmetic
            return intra / L, float(tuples @ inter_cosine(dots, L * (L - 1) / 2)) / float(tuples.sum())
        intra, total, own, tuples = 0.0, None, None, None
        for lang, (x, q) in enumerate(zip(xs, sq)):
            n = x.shape[0]
            inv = invs[lang]
            intra += float(intra_cosine(float(n), float(n), float(np.square(inv @ x).sum())))
            if incidence is None:
                p = x * inv[:, None]  # one word per row: the unit rows
                counts = np.ones(n)
            else:
                a = sp.csr_matrix(incidence[lang])
                counts = np.diff(a.indptr).astype(np.float64)
                if not (counts > 0).all() or not (a.data == 1.0).all():  # (an incidence of 0/1 entries, as aligned_words builds)
                    return None
                if (counts == 1.0).all():  # one word per row: the row's unit vector, gathered
                    p = x[a.indices]
                    p *= inv[a.indices][:, None]
                else:  # each row's mean alternative unit vector: B diag(1/||x||) x, one sparse product
                    b = sp.csr_matrix((inv[a.indices] / np.repeat(counts, np.diff(a.indptr)), a.indices, a.indptr),
                                      shape=a.shape)
                    p = np.asarray(b @ x)
            total = p if total is None else total + p
            own = rowdot(p, p) if own is None else own + rowdot(p, p)
            tuples = counts if tuples is None else tuples * counts
        dots = (rowdot(total, total) - own) / 2.0  # sum over language pairs of p_k . p_l
        return intra / L, float(tuples @ inter_cosine(dots, L * (L - 1) / 2)) / float(tuples.sum())

    def off_column_centre(self, lang: int) -> np.ndarray | None:
        """The centre (working units) zeroed on a sparse language's own columns, None for a dense language: a
        sparse language's centred sums are ``-(W 1) c`` off its columns (:class:`SparseSums` keeps only its own)."""
        return self._centre_off[lang]

    def working_to_scaled(self, values: Any) -> Any:
        """Euclidean values (a distance, not a square) from working units (``2**_wexp``) to units of ``scale``: exact."""
        shift = self._wexp - self.exponent
        return np.ldexp(values, shift) if shift else values

    def unit_grams_from_centred(self) -> tuple[dict[tuple[int, int], np.ndarray], float] | None:
        """The unit Gram matrices ``U_k U_m^T`` from the centred ones (:meth:`_centred_gram`, made for the Euclidean
        chance level's re-pairings), and the bound of their extra rounding; None where that route does not apply.

        With ``c`` the centre, ``x . y = (x - c).(y - c) + (x - c).c + (y - c).c + c.c``: one product of the centred
        rows and two of R x d with ``c`` give every pair's raw dot product, divided then by the two norms.  The sum's
        terms add up to at most ``(|x - c| + |c|)(|y - c| + |c|) <= (|x| + 2|c|)(|y| + 2|c|)``, so each cosine is
        within ``(1 + 2 r)^2 gamma_d + 6 u`` of the exact value (``r = |c| / min |x|``; a direct product of unit rows:
        ``gamma_d + 2 u``).  Taken only where that is small: one word per row, the vectors in float64's raw range
        (working units = the vectors'), no row normalised one by one and ``r <= 1/4``.  Whether it pays (vectors off
        the unit sphere) is the caller's decision: :func:`~semanscope_nb.metrics.chance.unit_grams_from_centred`.
        """
        from semanscope_nb.metrics.ties import unit_roundoff

        if self._wexp != 0 or not all(self.identity) or any(b.size for b in self._bad):
            return None
        min_norm = min(float(n.min()) for n in self.norms)
        if not (min_norm > 0 and math.isfinite(min_norm)) or 16.0 * self._cc > min_norm * min_norm:  # r <= 1/4
            return None
        centred = self._centred_gram()
        if centred is None:
            return None
        c, n = self._centre_w, self.R
        ccc = self._cc
        along = [self._centred(lang, slice(0, n)) @ c for lang in range(self.L)]  # (x - c).c per word
        inv = [1.0 / nrm for nrm in self.norms]
        grams = {}
        for (k, m), G in centred.items():
            U = G + along[k][:, None]
            U += along[m][None, :] + ccc
            U *= inv[k][:, None]
            U *= inv[m][None, :]
            grams[k, m] = U
        u = unit_roundoff(np.float64)
        gamma = self.d * u / (1.0 - self.d * u)
        r = math.sqrt(ccc) / min_norm
        return grams, (1.0 + 2.0 * r) ** 2 * gamma + 6.0 * u

    # -- memory of the bootstrap -------------------------------------------------
    def state_bytes(self) -> int:
        """Bytes of the arrays this object keeps, not counting stacked rows (kept only for small spaces)."""
        arrays = [*self.norms, *self._q, *self.sqn_c, *self._bad, self.alternatives, self.tuples, self.row_cos,
                  self.row_euc_scaled, self.row_euc, self._row_stack, self._probe]
        seen, total = set(), 0
        for a in arrays:
            if id(a) not in seen:
                seen.add(id(a))
                total += a.nbytes
        words = [m for pair in self._sparse_words if pair is not None for m in pair]
        for m in (*self.word_weight_map, *self.occurrence_map, *self.sparse, *words):
            if m is not None:
                total += m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
        total += sum(a.nbytes for a in (*self.sparse_cols, *self._centre_off) if a is not None)
        return total

    def bytes_per_resample(self) -> int:
        """Working bytes one resample adds to a batch (see :meth:`bootstrap_batch`)."""
        d, R = self.d, self.R
        # the float64 count row, the int64 draw it is converted from, and the previous batch's row (still
        # referenced by the caller's loop while the next batch is drawn)
        per = 24 * R
        extra = 0
        for lang, v in enumerate(self.aw.vectors):
            A = self.occurrence_map[lang]
            if A is None:
                continue
            if self.stacked[lang] is not None:  # gathered and reduced word weights for all words at once
                extra = max(extra, 8 * (A.nnz + v.shape[0]))
            else:  # ... for one block of words at a time
                per_block = np.add.reduceat(self.occurrences[lang], np.arange(0, v.shape[0], self.rows))
                extra = max(extra, 8 * (int(per_block.max()) + self.rows))
        # a sparse language's product: the transposed weights, the (2d x B) result and its transpose
        extra += max((8 * (v.shape[0] + 2 * S.shape[0]) for v, S in zip(self.aw.vectors, self.sparse) if S is not None), default=0)
        per += extra
        # [unit | centred] products (intra, occurrence, the previous batch's; a sparse language's on its own columns only)
        # and temporaries of the full width
        width = sum(2 * d if S is None else S.shape[0] for S in self.sparse)
        per += 8 * (3 * width + 2 * 2 * d)
        return per + 8 * 32  # per-resample scalars: spreads, null, statistics

    def bootstrap_batch(self, n_boot: int, *, budget_bytes: int | None = None) -> int:
        """Resamples per batch that keep the bootstrap's peak memory beside the embeddings within ``budget_bytes``.

        ``budget_bytes`` defaults to :func:`bootstrap_budget` of the embeddings' own
        size (:data:`BOOTSTRAP_MEMORY_FRACTION` of it).  The peak is modelled as this
        object's arrays, the streaming buffers and the null's per-row counts, plus
        ``batch x`` :meth:`bytes_per_resample` (the count matrices, the draw they
        are converted from, the per-resample products), with 10% headroom;
        ``bench/bench_sa.py`` checks it with tracemalloc.  Pass the result as
        ``batch`` (:func:`~semanscope_nb.metrics.chance.null_aware_bootstrap`,
        :func:`~semanscope_nb.metrics.affinity.affinity_of_words`); the resamples do
        not depend on the batch size.
        """
        if budget_bytes is None:
            budget_bytes = bootstrap_budget(sum(int(np.asarray(v).nbytes) for v in self.aw.vectors))
        fixed = self.state_bytes() + BOOT_BLOCK_BYTES + 8 * self.rows * 3 * self.d + 8 * (self.L + 1) * self.R
        room = 0.9 * budget_bytes - fixed
        return int(max(1, min(n_boot, room // self.bytes_per_resample())))


class SparseSums:
    """``W @ [unit | centred]`` of a sparse language (B x 2d, working units) held on the language's own columns.

    A TF-IDF language's vectors are zero off the columns ``cols`` its words use, so
    ``W @ unit`` is too, and ``W @ (x - c)`` there is ``-(W 1) c``: the resample sums
    need only ``data_t`` = the two halves on ``cols``, transposed as the sparse product
    gives them (2|cols| x B, so that adding them into a full-width total is a copy of
    rows), and the weights' totals ``w1`` = ``W 1``.  Squared norms add the off-column
    part ``(W 1)^2 ||c_off||^2`` (a sum of squares over disjoint columns: no
    cancellation); :meth:`dense` gives the full B x 2d array (the same numbers).  Sums
    add and subtract (:class:`RowSubset`'s corrections) and scale per resample.

    >>> X = np.zeros((3, 2048)); X[0, 5], X[1, 7], X[2, 5] = 1.0, 2.0, 3.0
    >>> eye = sp.identity(3, format="csr")
    >>> s = Spreads(AlignedWords(("en", "de"), (X, X[::-1].copy()), (eye, eye), tuple("abc")), sparse=True)
    >>> W = np.array([[1.0, 2.0, 0.0]])
    >>> part = s._sparse_products(0, W)
    >>> part.cols.tolist(), part.data_t.shape
    ([5, 7], (4, 1))
    >>> full = W @ np.hstack([X / np.linalg.norm(X, axis=1)[:, None], X - s.centre])
    >>> bool(np.allclose(part.dense(), full, rtol=0, atol=1e-15))
    True
    """

    __slots__ = ("spreads", "lang", "data_t", "w1")
    __array_ufunc__ = None  # ``array - sums``: numpy defers to __rsub__ (a full array), never loops over elements

    def __init__(self, spreads: Spreads, lang: int, data_t: np.ndarray, w1: np.ndarray) -> None:
        self.spreads, self.lang, self.data_t, self.w1 = spreads, lang, data_t, w1

    @classmethod
    def product(cls, spreads: Spreads, lang: int, S: sp.csr_matrix, W: np.ndarray) -> SparseSums:
        """``W @ [unit | x - c]`` from ``S`` = ``[unit | x]^T`` of some of the language's words on its columns (CSR)."""
        data_t = S @ np.ascontiguousarray(W.T)  # scipy's CSR kernel: single-threaded, the same order whatever the threads
        w1 = W.sum(axis=1)
        n = data_t.shape[0] // 2
        data_t[n:] -= np.multiply.outer(spreads._centre_w[spreads.sparse_cols[lang]], w1)
        return cls(spreads, lang, data_t, w1)

    @property
    def cols(self) -> np.ndarray:
        return self.spreads.sparse_cols[self.lang]

    @property
    def shape(self) -> tuple[int, int]:
        return self.data_t.shape[1], 2 * self.spreads.d

    def squares(self) -> tuple[np.ndarray, np.ndarray]:
        """(``||W @ unit||^2``, ``||W @ (x - c)||^2``) per resample."""
        n = self.data_t.shape[0] // 2
        u, c = self.data_t[:n], self.data_t[n:]
        return (np.einsum("ij,ij->j", u, u),
                np.einsum("ij,ij->j", c, c) + self.w1**2 * self.spreads._centre_off_sq[self.lang])

    def add_to(self, total_t: np.ndarray) -> None:
        """Add the sums into ``total_t`` (2d x B, transposed full width); the off-column ``-(W 1) c`` is the caller's."""
        d, cols, n = self.spreads.d, self.cols, self.data_t.shape[0] // 2
        total_t[cols] += self.data_t[:n]
        total_t[d + cols] += self.data_t[n:]

    def dense(self) -> np.ndarray:
        """The full B x 2d array."""
        d = self.spreads.d
        out_t = np.zeros((2 * d, self.data_t.shape[1]))
        out_t[d:] = np.multiply.outer(self.spreads._centre_off[self.lang], -self.w1)
        self.add_to(out_t)
        return np.ascontiguousarray(out_t.T)

    def times(self, f: np.ndarray) -> SparseSums:
        """The sums with resample b's weights multiplied by ``f[b]``."""
        return SparseSums(self.spreads, self.lang, self.data_t * f[None, :], self.w1 * f)

    def _same(self, other: Any) -> bool:
        if isinstance(other, SparseSums):
            if other.spreads is not self.spreads or other.lang != self.lang:
                raise TypeError("SparseSums add only to the sums of the same Spreads and language")
            return True
        return False

    def __add__(self, other: Any) -> Any:
        if self._same(other):
            return SparseSums(self.spreads, self.lang, self.data_t + other.data_t, self.w1 + other.w1)
        return self.dense() + other

    def __sub__(self, other: Any) -> Any:
        if self._same(other):
            return SparseSums(self.spreads, self.lang, self.data_t - other.data_t, self.w1 - other.w1)
        return self.dense() - other

    def __radd__(self, other: Any) -> Any:
        return other + self.dense()

    def __rsub__(self, other: Any) -> Any:
        return other - self.dense()


def rows_to_counts(idx: np.ndarray, n_rows: int) -> np.ndarray:
    """Bootstrap index matrix (B x R) -> row-count matrix (B x R)."""
    idx = np.atleast_2d(np.asarray(idx, dtype=np.int64))
    B = idx.shape[0]
    flat = (idx + n_rows * np.arange(B)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n_rows).reshape(B, n_rows).astype(np.float64)


class RowSubset:
    """The spreads of the concepts ``keep`` from a :class:`Spreads`' products on full-set counts: a left-out concept weighs 0.

    The rule: a resample of the subset is the full set's resample with the left-out
    concepts' counts set to zero (``counts * keep``), not a fresh draw over the kept
    concepts.  The kept rows' counts then total a Binomial(R, k/R) number, not k; SA is
    a ratio of weighted means, so the total cancels, and given that total the kept rows
    are a multinomial resample of the subset (``bench/bench_fused_verdict.py`` checks the
    interval's coverage against fresh draws).  The point estimate is all ones on the
    kept rows, the same as the subset's own.

    Every weight is linear in the counts, so the subset's products are the full set's
    plus a correction on few words: per language, ``T`` = words held by a left-out row
    (their weights change: a kept row's alternative shared with a left-out row is
    normalised over the kept rows only) and ``K`` = words still used.  With ``|T| <= |K|``
    ``W_sub @ X = W @ X + (counts @ (M_sub - M)[:, T]) @ X[T]``, else ``W_sub[:, K] @ X[K]``,
    at a cost of ``B x min(|T|, |K|) x 2d`` instead of a second pass over every word (the rows of
    those words formed a block at a time, as the spreads stream theirs); the
    occurrence weights of the chance level likewise.  The numbers equal those of
    ``Spreads(subset_rows(aw, keep)).spreads(counts[:, keep])`` to rounding (the
    subset is centred and scaled with the full set's centre and power of two, which
    Euclidean differences and ratios do not see); ``tests/test_fused_verdict.py`` holds
    them to 1e-12, replicate for replicate.  Stacked one-word-per-row languages go further:
    their joint product is taken as kept rows + the rest (:meth:`Spreads.split_rows`), so the
    subset's product is a part of the full set's at no extra cost.

    >>> e = np.eye(4); eye = sp.identity(4, format="csr")
    >>> s = Spreads(AlignedWords(("en", "de"), (e, e), (eye, eye), tuple("abcd")))
    >>> parts = RowSubset(s, np.array([True, True, True, False])).parts(np.ones((1, 4)), s.intra_parts(np.ones((1, 4))), None)
    >>> float(parts[0][0, 0]), parts[1][0][0]   # 3 kept concepts: 3 tuples, weight 3 in each language
    (3.0, array([3.]))
    """

    def __init__(self, spreads: Spreads, keep: np.ndarray, *, languages: Sequence[int] | None = None,
                 row_stack: np.ndarray | None = None) -> None:
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (spreads.R,):
            raise ValueError(f"keep must be a boolean per concept ({spreads.R}), got shape {keep.shape}")
        self.spreads, self.keep = spreads, keep
        #: the spreads' languages (indices) the subset holds: all, or e.g. a language pair's two, whose per-row
        #: inter sums ``row_stack`` (R x 3: tuples, cosine, Euclidean in units of the spreads' scale) are then given
        self.languages = list(range(spreads.L)) if languages is None else [int(x) for x in languages]
        if languages is not None and row_stack is None:
            raise ValueError("RowSubset: a subset of the languages needs their per-row inter sums (row_stack)")
        self.row_stack = (spreads._row_stack if row_stack is None else np.asarray(row_stack, dtype=np.float64)) * keep[:, None]
        self.n_alt = [spreads.alternatives[lang].astype(np.float64) * keep for lang in self.languages]
        self.langs: list[dict[str, Any]] = []
        kf = keep.astype(np.float64)
        joint = spreads._stack_joint[0] if spreads._stack_joint is not None else []
        foldable = spreads.fold_languages()
        if spreads._split_keep is None and (joint or foldable):
            spreads.split_rows(keep)
        same = spreads._split_keep is not None and np.array_equal(spreads._split_keep, keep)
        split = bool(joint) and same and spreads._split is not None
        for lang in self.languages:
            q = spreads._q[lang]
            if split and lang in joint:  # its product is a part of the full set's (Spreads.split_rows)
                i = joint.index(lang)
                self.langs.append({"identity": True, "split": slice(2 * spreads.d * i, 2 * spreads.d * (i + 1)),
                                   "q": kf * q})
                continue
            if spreads.identity[lang]:
                touched, used = np.flatnonzero(~keep), np.flatnonzero(keep)
                direct = used.size <= touched.size
                idx = used if direct else touched
                info = {"identity": True, "direct": direct, "idx": idx, "q": kf * q}
            else:
                A = spreads.occurrence_map[lang]  # R x n, float64 0/1
                A_keep = sp.csr_matrix(sp.diags(kf) @ A)
                colsum = np.asarray(A_keep.sum(axis=0)).ravel()
                with np.errstate(divide="ignore"):
                    inv = np.where(colsum > 0, 1.0 / np.where(colsum > 0, colsum, 1.0), 0.0)
                M_sub = sp.csr_matrix(A_keep @ sp.diags(inv))
                touched = np.flatnonzero(np.asarray((A - A_keep).sum(axis=0)).ravel() > 0)
                used = np.flatnonzero(colsum > 0)
                direct = used.size <= touched.size
                idx = used if direct else touched
                M = spreads.word_weight_map[lang]
                if same and lang in foldable:  # its products are kept-row parts of the full set's folded ones
                    i = foldable.index(lang)
                    # counts @ (M_sub @ X) = counts[:, keep] @ (M @ X)[keep] + counts @ ((M_sub - M)[kept rows] @ X):
                    # the correction lives on the kept rows sharing a word with a left-out row; occurrence weights
                    # on kept rows are the full set's (A_keep = A there)
                    D = sp.csr_matrix(sp.diags(kf) @ (M_sub - M))
                    D.eliminate_zeros()
                    rows_t = np.flatnonzero(np.diff(D.indptr) > 0)
                    self.langs.append({"identity": False, "fold": slice(2 * spreads.d * i, 2 * spreads.d * (i + 1)),
                                       "rows_t": rows_t, "corr": np.asarray(D[rows_t] @ spreads.stacked[lang]),
                                       "M_sub_T": sp.csr_matrix(M_sub.T), "tot": np.asarray(M_sub.sum(axis=1)).ravel(),
                                       "q": M_sub @ q, "occ_q": A_keep @ q})
                    continue
                intra_op = M_sub[:, idx] if direct else (M_sub - M)[:, idx]
                occ_op = A_keep[:, idx] if direct else (A_keep - A)[:, idx]
                info = {"identity": False, "direct": direct, "idx": idx, "M_sub_T": sp.csr_matrix(M_sub.T),
                        "intra_T": sp.csr_matrix(intra_op.T), "occ_T": sp.csr_matrix(occ_op.T),
                        "tot": np.asarray(M_sub.sum(axis=1)).ravel(), "q": M_sub @ q, "occ_q": A_keep @ q}
            if spreads.sparse[lang] is not None:  # the corrected words' [unit | x]^T columns: sparse products, not dense fills
                info["sparse_T"] = sp.csr_matrix(spreads.sparse[lang][:, idx])
            self.langs.append(info)

    def parts(self, counts: np.ndarray, full_intra: Sequence[tuple], full_occ: Sequence[tuple] | None
              ) -> tuple[np.ndarray, list[tuple], list[tuple] | None]:
        """(inter sums, intra parts, occurrence parts) of the subset for ``counts`` over all rows, from the full set's parts."""
        counts = np.asarray(counts, dtype=np.float64)
        stats = counts @ self.row_stack
        kept = counts * self.keep
        intra, occ = [], [] if full_occ is not None else None
        kept_prod = kept_fold = None
        for lang, info in zip(self.languages, self.langs):
            if "split" in info:
                if kept_prod is None:
                    kept_prod = self.spreads.kept_product(counts)
                both = kept_prod[:, info["split"]]
                s_q = counts @ info["q"]
                intra.append((kept.sum(axis=1), _rowsq(kept), both, s_q))
                if occ is not None:
                    occ.append((both, s_q))
                continue
            if "fold" in info:
                if kept_fold is None:  # the kept rows' folded products of both kinds, once per call
                    kept_fold = (self.spreads.kept_folded(counts, "intra"),
                                 self.spreads.kept_folded(counts, "occ") if occ is not None else None)
                both = kept_fold[0][:, info["fold"]]
                if info["rows_t"].size:
                    both = both + counts[:, info["rows_t"]] @ info["corr"]
                W = _sparse_times(info["M_sub_T"], counts)
                intra.append((counts @ info["tot"], _rowsq(W), both, counts @ info["q"]))
                if occ is not None:
                    occ.append((kept_fold[1][:, info["fold"]], counts @ info["occ_q"]))
                continue
            idx, direct = info["idx"], info["direct"]
            if info["identity"]:
                G = counts[:, idx]
                both = self._times_rows(lang, info, G) if direct else full_intra[lang][2] - self._times_rows(lang, info, G)
                s_q = counts @ info["q"]
                part = (kept.sum(axis=1), _rowsq(kept), both, s_q)
                intra.append(part)
                if occ is not None:
                    occ.append((both, s_q))
                continue
            W = _sparse_times(info["M_sub_T"], counts)
            G = _sparse_times(info["intra_T"], counts)
            both = self._times_rows(lang, info, G) if direct else full_intra[lang][2] + self._times_rows(lang, info, G)
            intra.append((counts @ info["tot"], _rowsq(W), both, counts @ info["q"]))
            if occ is not None:
                Go = _sparse_times(info["occ_T"], counts)
                occ.append((self._times_rows(lang, info, Go) if direct else full_occ[lang][0] + self._times_rows(lang, info, Go),
                            counts @ info["occ_q"]))
        return stats, intra, occ

    def _times_rows(self, lang: int, info: dict[str, Any], G: np.ndarray) -> np.ndarray:
        """``G @ [unit | centred][idx]`` of the language's corrected words, their rows formed a block at a time (never all kept)."""
        sp_, idx = self.spreads, info["idx"]
        S = info.get("sparse_T")
        if S is not None:  # as Spreads._sparse_products: [unit | x]^T @ G^T on the language's columns (SparseSums)
            return SparseSums.product(sp_, lang, S, G)
        out = np.zeros((G.shape[0], 2 * sp_.d))
        for a, b in row_chunks(idx.size, sp_.rows):
            out += G[:, a:b] @ sp_._fill(lang, idx[a:b], None, None)
        return out


def _sparse_times(op_T: sp.csr_matrix, counts: np.ndarray) -> np.ndarray:
    """``counts @ op`` (B x n) for a sparse ``op`` held transposed (n x R, CSR): scipy's kernel, no dense copy of ``op``."""
    return np.ascontiguousarray((op_T @ np.ascontiguousarray(counts.T)).T)
