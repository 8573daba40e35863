"""Token-level sense retrieval whose gold is a *sense*, not a word (paper 001's BTSR, section 4), scored beside
its no-context baseline.

A query is a source token in context; the candidates are target tokens in other contexts; ``gold[q, c]``
says which candidates carry the query's sense.  The pool is built so that word identity cannot solve
the task (the same target word in another sense, the query word's other translation): the baseline,
which replaces every token by its word's average vector, then ties gold with those distractors.

**Ties (the one near-tie rule).** Scores within ``tol`` of the best gold's score are tied with it -- in
:func:`sense_retrieval_scores` the cosine's tolerance of :mod:`semanscope_nb.metrics.ties`
(:func:`~semanscope_nb.metrics.ties.dot_tolerance` of the vectors' dimension and precision: float32 token
vectors move by that much with their batch, so a closer tie is no decision) -- and tied candidates are taken
in random order: a query's hit@K is its *expected* value over those orders,
``1 - C(b, m) / C(b + g, m)`` with ``a`` candidates strictly above, ``b`` tied non-gold, ``g`` tied gold and
``m = K - a`` (0 when ``m <= 0``).  No index order decides a tie, so the baseline is neither helped nor
hurt by where the gold happens to sit in the pool.

Example
-------
>>> import numpy as np
>>> Q = np.array([[1.0, 0.0]]); C = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
>>> expected_hits(Q @ C.T, np.array([[True, False, False]]), ks=(1, 2)).tolist()   # gold tied with one other
[[0.5, 1.0]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.metrics.ties import dot_tolerance, working_dtype
from semanscope_nb.results import Interval, Result
from semanscope_nb.settings import resolve

__all__ = ["TIE_TOLERANCE", "SenseRetrievalScore", "expected_hits", "sense_retrieval_scores"]

#: :func:`expected_hits`'s default: cosines closer than this to the best gold's cosine are ties (float64 arithmetic);
#: :func:`sense_retrieval_scores` uses the tolerance of its vectors' precision instead (module docstring)
TIE_TOLERANCE = 1e-9


def expected_hits(scores: Any, gold: Any, *, ks: Sequence[int] = (1, 5), tol: float = TIE_TOLERANCE) -> np.ndarray:
    """(queries x len(ks)) expected hit@K under a random order of tied candidates (see the module docstring).

    A query without any gold scores 0.

    >>> expected_hits([[0.9, 0.5, 0.9, 0.9]], [[False, True, True, False]], ks=(1, 3)).round(4).tolist()
    [[0.3333, 1.0]]
    """
    S = np.asarray(scores, dtype=np.float64)
    G = np.asarray(gold, dtype=bool)
    if S.ndim != 2 or S.shape != G.shape:
        raise ArgumentError(f"scores and gold must be (queries x candidates) of one shape, got {S.shape} and {G.shape}")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1:
        raise ArgumentError(f"ks must be positive integers, got {ks!r}")
    best = np.where(G, S, -np.inf).max(axis=1, initial=-np.inf)
    above = ((S > best[:, None] + tol) & ~G).sum(axis=1)
    tied = np.abs(S - best[:, None]) <= tol
    b = (tied & ~G).sum(axis=1)
    g = (tied & G).sum(axis=1)
    out = np.zeros((len(S), len(ks)))
    for q in range(len(S)):
        if not np.isfinite(best[q]):
            continue
        for j, k in enumerate(ks):
            m = k - int(above[q])
            if m <= 0:
                continue
            bq, gq = int(b[q]), int(g[q])
            out[q, j] = 1.0 if m > bq else 1.0 - math.comb(bq, m) / math.comb(bq + gq, m)
    return out


def _cosines(Q: np.ndarray, C: np.ndarray) -> np.ndarray:
    for name, M in (("query vectors", Q), ("candidate vectors", C)):
        if M.ndim != 2:
            raise EmbeddingError(f"{name} must be a matrix, got shape {M.shape}")
        bad = np.flatnonzero(~np.isfinite(M).all(axis=1))
        if len(bad):
            raise EmbeddingError(f"{name}: row {bad[0]} holds NaN/inf ({len(bad)} such rows)")
    if Q.shape[1] != C.shape[1]:
        raise EmbeddingError(f"query vectors have {Q.shape[1]} dimensions but candidates have {C.shape[1]}")
    nq, nc = np.linalg.norm(Q, axis=1, keepdims=True), np.linalg.norm(C, axis=1, keepdims=True)
    return (Q / np.where(nq > 0, nq, 1.0)) @ (C / np.where(nc > 0, nc, 1.0)).T


@dataclass(frozen=True)
class SenseRetrievalScore(Result):
    """P@K of contextual vectors and of the no-context baseline on the same queries and pool, and their paired
    difference; every interval is a percentile bootstrap over queries (one set of resamples for all three)."""

    kind = "sense-retrieval"
    main_score_name = "p_at_1"

    accuracy: dict[int, float]
    interval: dict[int, Interval]
    baseline_accuracy: dict[int, float]
    baseline_interval: dict[int, Interval]
    difference: dict[int, float]
    difference_interval: dict[int, Interval]
    n_queries: int
    pool_size: int
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def p_at_1(self) -> float:
        """P@1 (NaN when K = 1 was not asked for: a P@5 is never shown under the name P@1)."""
        return float(self.accuracy.get(1, math.nan))

    def beats_baseline(self, k: int = 1) -> bool:
        """Whether the whole interval of (contextual - baseline) P@k lies above 0."""
        return bool(self.difference_interval[k].low > 0)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"main_score": self.p_at_1, "n_queries": self.n_queries, "pool_size": self.pool_size}
        for k in sorted(self.accuracy):
            out[f"P@{k}"] = self.accuracy[k]
            out[f"P@{k} baseline"] = self.baseline_accuracy[k]
            out[f"P@{k} difference"] = self.difference[k]
            out[f"P@{k} difference low"], out[f"P@{k} difference high"] = self.difference_interval[k]
        return out


def sense_retrieval_scores(
    queries: Any, candidates: Any, gold: Any, *, baseline_queries: Any, baseline_candidates: Any,
    ks: Sequence[int] = (1, 5), n_boot: int | None = None, seed: int = 0, confidence: float = 0.95,
    provenance: Mapping[str, Any] | None = None, vector_dtype: Any = None,
) -> SenseRetrievalScore:
    """P@K by cosine for contextual (``queries``, ``candidates``) and no-context (``baseline_*``) vectors of the
    same tokens, with ``gold`` (queries x candidates, bool) defining sense; ties per :func:`expected_hits`
    within :func:`~semanscope_nb.metrics.ties.dot_tolerance` of the dimension and the vectors' precision
    (``vector_dtype``; None: the coarser of the arrays' own dtypes -- pass ``np.float32`` for encoder
    vectors that were widened to float64 on the way).

    >>> import numpy as np
    >>> Q = np.array([[1.0, 0.1], [0.1, 1.0]]); C = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> same = np.array([[1.0, 1.0], [1.0, 1.0]])          # the baseline: one vector for the whole word
    >>> r = sense_retrieval_scores(Q, C, np.eye(2, dtype=bool), baseline_queries=same[:2], baseline_candidates=same,
    ...                            ks=(1,), n_boot=0)
    >>> r.accuracy, r.baseline_accuracy, r.pool_size
    ({1: 1.0}, {1: 0.5}, 2)
    """
    n_boot = resolve(n_boot, "n_boot")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ArgumentError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"seed must be an integer, got {seed!r}")
    if not 0 < confidence < 1:
        raise ArgumentError(f"confidence must be in (0, 1), got {confidence!r}")
    Q, C = np.asarray(queries, dtype=np.float64), np.asarray(candidates, dtype=np.float64)
    BQ, BC = np.asarray(baseline_queries, dtype=np.float64), np.asarray(baseline_candidates, dtype=np.float64)
    G = np.asarray(gold, dtype=bool)
    if G.shape != (len(Q), len(C)) or BQ.shape[0] != len(Q) or BC.shape[0] != len(C):
        raise ArgumentError(f"gold must be (queries x candidates) = ({len(Q)}, {len(C)}) and the baseline vectors "
                            f"one row per query / candidate; got gold {G.shape}, baseline {BQ.shape[0]} x {BC.shape[0]}")
    if not len(Q):
        raise ArgumentError("no queries")
    ks = tuple(sorted({int(k) for k in ks}))
    if max(ks) > len(C):
        raise ArgumentError(f"ks={ks}: the largest K exceeds the candidate pool ({len(C)})")
    if vector_dtype is None:
        vector_dtype = working_dtype(*(np.asarray(x).dtype for x in (queries, candidates, baseline_queries,
                                                                      baseline_candidates)))
    tol = dot_tolerance(Q.shape[1], working_dtype(vector_dtype))
    hits = expected_hits(_cosines(Q, C), G, ks=ks, tol=tol)
    base = expected_hits(_cosines(BQ, BC), G, ks=ks, tol=tol)
    acc = {k: float(hits[:, j].mean()) for j, k in enumerate(ks)}
    bacc = {k: float(base[:, j].mean()) for j, k in enumerate(ks)}
    diff = {k: acc[k] - bacc[k] for k in ks}
    empty = {k: Interval.empty() for k in ks}
    ci, bci, dci = dict(empty), dict(empty), dict(empty)
    if n_boot:
        from semanscope_nb.metrics.chance import resample_counts  # the package's one draw rule for resamples

        n = len(Q)
        parts = [(c @ hits / n, c @ base / n) for c in resample_counts(n, int(n_boot), seed=int(seed))]  # resample weights
        m, bm = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
        for j, k in enumerate(ks):
            ci[k] = Interval(*map(float, np.percentile(m[:, j], q)))
            bci[k] = Interval(*map(float, np.percentile(bm[:, j], q)))
            dci[k] = Interval(*map(float, np.percentile(m[:, j] - bm[:, j], q)))
    prov = {"ks": list(ks), "n_boot": int(n_boot), "seed": int(seed), "confidence": confidence,
            "ties": f"expected hit@K over random orders of candidates within {tol:.3g} of the best gold",
            "tie_tolerance": tol,
            **dict(provenance or {})}
    return SenseRetrievalScore(acc, ci, bacc, bci, diff, dci, len(Q), len(C), prov)
