"""Bitext retrieval (MINERS / MTEB style) and bilingual lexicon induction, memory-bounded.

Every search here runs on a :class:`DistanceProvider`: something that serves the
distances between queries and a corpus one block of query rows at a time
(smaller = closer).  Two come with the package: :class:`EmbeddingDistances`
(cosine or Euclidean between two embedding arrays) and
:class:`semanscope_nb.metrics.fusion.FusedDistances` (DistFuse).  A block holds
``block x n_corpus`` float64 values and nothing larger is ever allocated, so a
50,000 x 50,000 search never builds the 50,000 x 50,000 matrix; with
``block=None`` the block height is chosen so that one block (counted as
float64) stays under ``max_block_bytes`` (32 MB) whatever the corpus size.
Cosine distances are float32 by default (``dtype=None``; twice the BLAS speed),
Euclidean float64.  Every block is computed once and serves both directions
(:func:`diagonal_ranks`).

Ordering and ties: the one near-tie rule of :mod:`semanscope_nb.metrics.ties`.
Distances within the provider's ``tie_tolerance`` count as tied (cosine:
``2 (d + 2) u``, u of float32 for float32 vectors or blocks -- 4.6e-5 at
d = 384 -- the bound on how far two BLAS blockings of one dot product may
differ), and tied candidates go by corpus index, lower first: MTEB's
convention for bitext mining.  The top-1 prediction is the lowest index tied
with the nearest distance; the gold's rank is 1 when it is the prediction,
else ``1 + #(closer by more than the tolerance) + #(tied with a lower index)``;
so ``rank == 1`` exactly when the prediction is the gold.  The gold's distance
is read from the same block (the same matrix product) as its competitors', so
results do not depend on the block height, the thread count or the CPU's BLAS
kernels (tested under ``threadpoolctl`` limits 1 and 2 and block heights 1, 7
and dense).  Margin mining argmaxes and the BUCC threshold follow the same
rule with the margin's tolerance (:func:`~semanscope_nb.metrics.ties.margin_tolerance`).

Metrics (source row i translates target row i):

* ``accuracy[k]``: share of queries whose gold is within the top k (P@K of paper 001).
* ``mrr``: mean of 1 / rank over the full ranking (not truncated at 10).
* ``precision`` / ``recall`` / ``f1``: MTEB's bitext-mining convention at k = 1:
  scikit-learn ``precision_recall_fscore_support(gold, predicted,
  average="weighted", zero_division=0)`` with gold = row indices and predicted =
  top-1 indices.  Every gold label occurs once, so recall equals accuracy@1 and
  precision / F1 fall below it when several queries pick the same target
  (F1 of label i is ``2 / (1 + #queries that picked i)`` when query i is right).
  The main score is F1, as in MTEB.
* ``f1_at[k]``: MINERS F1@k (a query is a hit when its gold is in its top k,
  otherwise its top-1 prediction stands; then MTEB's weighted F1).
* Bootstrap percentile intervals over query rows (``scipy.stats.bootstrap``, seeded).

Margin-based mining (:func:`margin_mining`, :func:`bucc_mining`): the ratio
margin of Artetxe & Schwenk (2019), gold pairs hidden among seeded distractors
(:func:`bucc_pool`), precision / recall / F1 at the BUCC threshold (best F1 on
the gold, reported).

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> en = rng.normal(size=(200, 32)); de = en + 0.5 * rng.normal(size=(200, 32))
>>> r = snb.bitext_retrieval(en, de, n_boot=200, seed=0)
>>> r.accuracy[1] > 0.9, r.reverse.accuracy[1] > 0.9, r.f1 <= r.accuracy[1]
(True, True, True)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.data.concept_key import item_key, key_order
from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.metrics.search import (
    DEFAULT_MAX_BLOCK_BYTES,
    DistanceProvider,
    EmbeddingDistances,
    Metric,
    check_k,
    check_names,
    distance_provider,
)
from semanscope_nb.metrics.options import check_confidence, check_ks, check_n_boot, check_seed
from semanscope_nb.metrics.spreads import rows_to_counts
from semanscope_nb.metrics.ties import ColumnBest, ceil_to, count_true, first_best, floor_to, margin_tolerance, tie_groups
from semanscope_nb.models.embedding import embed_texts, load_encoder
from semanscope_nb.provenance import json_ready, shareable_report, shareable_source
from semanscope_nb.settings import resolve

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.metrics.fusion import DistFuse
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder


@dataclass(frozen=True)
class _Gold:
    """Gold corpus indices of each query (CSR: query q's golds are indices[indptr[q]:indptr[q+1]])."""

    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def diagonal(cls, n: int) -> "_Gold":
        return cls(np.arange(n + 1), np.arange(n))

    @property
    def one_to_one(self) -> bool:
        n = self.indptr.size - 1
        return bool(self.indices.size == n and np.array_equal(self.indices, np.arange(n)) and np.array_equal(self.indptr, np.arange(n + 1)))


def _near(D: np.ndarray, g: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``D``: the count of entries better than ``g`` by more than ``tol``, and of entries tied with it."""
    g = np.asarray(g, dtype=np.float64)
    lo, hi = ceil_to(g - tol, D.dtype), floor_to(g + tol, D.dtype)  # D < lo iff D < g - tol; D <= hi iff D <= g + tol
    lt = count_true(D < lo[:, None], axis=1)
    le = count_true(D <= hi[:, None], axis=1)
    return lt, le - lt


def gold_ranks(
    provider: DistanceProvider,
    gold: _Gold | None = None,
    *,
    block: int | None = None,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """(best rank of any gold item, top-1 prediction) for every query, in row blocks.

    ``gold=None``: query i's gold is corpus item i.  Ranks and predictions follow the
    near-tie rule (:mod:`semanscope_nb.metrics.ties`, tolerance ``provider.tie_tolerance``):
    the prediction is the lowest index tied with the nearest distance; a gold's rank is 1
    when it is the prediction, else 1 + the candidates that precede it (closer by more than
    the tolerance, or tied and of lower index: MTEB's convention).  Every gold distance is
    read from the same block as its competitors.

    >>> import numpy as np
    >>> from semanscope_nb.metrics.search import EmbeddingDistances
    >>> x = np.eye(3); y = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0]])  # targets 0 and 1 identical
    >>> [a.tolist() for a in gold_ranks(EmbeddingDistances(x, y))]
    [[1, 2, 1], [0, 0, 2]]
    """
    n_q, n_c = provider.n_queries, provider.n_corpus
    if gold is None:
        if n_q != n_c:
            raise EmbeddingError(f"source has {n_q} rows but target has {n_c}: row i must translate row i")
        gold = _Gold.diagonal(n_q)
    tol = float(getattr(provider, "tie_tolerance", 0.0))
    rows = provider.rows_per_block(block, max_block_bytes)
    ranks = np.empty(n_q, dtype=np.int64)
    preds = np.empty(n_q, dtype=np.int64)
    for a in range(0, n_q, rows):
        b = min(n_q, a + rows)
        D = provider.block(slice(a, b))
        preds[a:b] = first_best(D, tol)
        lo, hi = gold.indptr[a], gold.indptr[b]
        g = gold.indices[lo:hi]
        r_local = np.repeat(np.arange(b - a), np.diff(gold.indptr[a : b + 1]))
        best = np.full(b - a, np.iinfo(np.int64).max, dtype=np.int64)
        step = max(1, rows)
        for s in range(0, g.size, step):  # pairs in chunks: memory stays ~ one block
            rl, gg = r_local[s : s + step], g[s : s + step]
            Dr = D[rl]
            dg = Dr[np.arange(rl.size), gg]
            lt, near = _near(Dr, dg, tol)
            rank = 1 + lt
            for i in np.flatnonzero(near > 1):  # tied with other candidates: those of lower index precede
                rank[i] += int(np.count_nonzero(np.abs(Dr[i, : gg[i]].astype(np.float64) - float(dg[i])) <= tol))
            hit = gg == preds[a + rl]  # the prediction is rank 1, and only the prediction (module docstring of ties)
            rank = np.where(hit, 1, np.maximum(rank, 2))
            np.minimum.at(best, rl, rank)
        ranks[a:b] = best
    return ranks, preds


def diagonal_ranks(
    provider: DistanceProvider,
    *,
    block: int | None = None,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gold ranks and top-1 predictions of BOTH directions (gold of i is i), each block computed once.

    Returns ``(ranks, predictions, reverse_ranks, reverse_predictions)``, under the
    near-tie rule of :func:`gold_ranks` in both directions.  Forward ranks count along
    block rows, reverse ranks along block columns.  The gold distance of pair (i, i) is
    read from the block that holds row i -- the same matrix product as its competitors,
    never a separately computed diagonal (whose last bits differ, so that an exact copy
    of the gold could outrank it).  Reverse ranks need the gold of column j before row
    j's block is computed: :meth:`DistanceProvider.diagonal` serves as an estimate
    (within the tolerance of the block's value), entries whose decision the estimate
    cannot settle are kept and decided once row j's block has been computed.

    >>> import numpy as np
    >>> from semanscope_nb.metrics.search import EmbeddingDistances
    >>> x = np.eye(3); y = np.array([[1.0, 0, 0], [1.0, 0.1, 0], [0, 0, 1.0]])
    >>> [a.tolist() for a in diagonal_ranks(EmbeddingDistances(x, y))]
    [[1, 1, 1], [0, 1, 2], [1, 2, 1], [0, 0, 2]]
    """
    n = provider.n_queries
    if provider.n_corpus != n:
        raise EmbeddingError(f"source has {n} rows but target has {provider.n_corpus}: row i must translate row i")
    tol = float(getattr(provider, "tie_tolerance", 0.0))
    estimate = np.asarray(provider.diagonal(), dtype=np.float64)  # reverse direction only, see above
    # how far the block's own value may lie from the estimate: the tolerance (two computations of one
    # score), and at least a few ulps for providers that state no tolerance
    delta = np.full(n, tol) if tol > 0 else 16 * np.finfo(np.float32).eps * (np.abs(estimate) + 1.0)
    rows = provider.rows_per_block(block, max_block_bytes)
    ranks = np.empty(n, dtype=np.int64)
    preds = np.empty(n, dtype=np.int64)
    gold = np.full(n, np.nan)  # the block's own value of pair (j, j), filled as row j's block is computed
    rev_ranks = np.ones(n, dtype=np.int64)
    rev_best = ColumnBest(n, tol)
    pending: list[tuple[np.ndarray, np.ndarray]] = []  # (column, value) whose reverse decision waits for the gold
    for a in range(0, n, rows):
        b = min(n, a + rows)
        D = provider.block(slice(a, b))
        local = np.arange(b - a)
        g_row = D[local, a + local].astype(np.float64)
        gold[a:b] = g_row
        # forward: along rows
        preds[a:b] = first_best(D, tol)
        lt, near = _near(D, g_row, tol)
        r = 1 + lt
        for i in np.flatnonzero(near > 1):  # tied with other candidates: those of lower index precede
            r[i] += int(np.count_nonzero(np.abs(D[i, : a + i].astype(np.float64) - g_row[i]) <= tol))
        ranks[a:b] = np.where(preds[a:b] == a + local, 1, np.maximum(r, 2))
        # reverse: along columns
        rev_best.update(D, a)
        if a > 0:  # columns j < a: gold known, every row of this block has a higher index (ties do not precede)
            rev_ranks[:a] += count_true(D[:, :a] < ceil_to(gold[:a] - tol, D.dtype)[None, :], axis=0)
        # columns j in [a, b): gold in this block; rows i < j precede when tied too
        Dd = D[:, a:b].astype(np.float64)
        lower = local[:, None] < local[None, :]
        rev_ranks[a:b] += np.count_nonzero((Dd < g_row[None, :] - tol) | ((np.abs(Dd - g_row[None, :]) <= tol) & lower), axis=0)
        if b < n:  # columns j >= b: every row here has a lower index, so it precedes iff D <= gold + tol
            est, slack = estimate[b:], delta[b:]
            sure = floor_to(est - slack + tol, D.dtype)  # <= gold + tol, as |gold - estimate| <= slack
            maybe = ceil_to(est + slack + tol, D.dtype)  # >= gold + tol
            F = D[:, b:]
            below = F <= sure[None, :]
            rev_ranks[b:] += count_true(below, axis=0)
            band = np.flatnonzero((F <= maybe[None, :]) & ~below)
            if band.size:
                rr, cc = np.divmod(band, F.shape[1])
                pending.append((cc + b, F[rr, cc].astype(np.float64)))
    for cols, vals in pending:
        np.add.at(rev_ranks, cols, (vals <= gold[cols] + tol).astype(np.int64))
    rev_pred = rev_best.result()
    rev_ranks = np.where(rev_pred == np.arange(n), 1, np.maximum(rev_ranks, 2))
    return ranks, preds, rev_ranks, rev_pred


# --------------------------------------------------------------------------- metrics


def mteb_scores(predictions: np.ndarray, counts: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """MTEB bitext-mining precision / recall / F1 (weighted) for gold = row index.

    ``counts`` (B x n) weights rows (bootstrap resamples); None = every row once.
    Equals ``sklearn.metrics.precision_recall_fscore_support(idx, predictions[idx],
    average="weighted", zero_division=0)`` for a resample ``idx``.
    """
    predictions = np.asarray(predictions, dtype=np.int64)
    n = predictions.size
    counts = np.ones((1, n)) if counts is None else np.atleast_2d(np.asarray(counts, dtype=np.float64))
    hit = (predictions == np.arange(n)).astype(np.float64)
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), predictions)), shape=(n, n))
    pred_count = np.asarray((onehot.T @ counts.T).T)  # B x n: weighted number of queries that picked label L
    support = counts  # label L's support = weight of query L (gold of query L is L)
    tp = support * hit
    with np.errstate(invalid="ignore", divide="ignore"):
        precision_l = np.where(pred_count > 0, tp / pred_count, 0.0)
        f1_l = np.where(support + pred_count > 0, 2.0 * tp / (support + pred_count), 0.0)
    total = support.sum(axis=1)
    return {
        "precision": (support * precision_l).sum(axis=1) / total,
        "recall": (support * hit).sum(axis=1) / total,
        "f1": (support * f1_l).sum(axis=1) / total,
    }




def f1_at_k_predictions(ranks: np.ndarray, predictions: np.ndarray, k: int) -> np.ndarray:
    """MINERS F1@k predictions: the gold (row index) when its rank is <= k, else the top-1 prediction.

    >>> f1_at_k_predictions(np.array([1, 3, 7]), np.array([0, 2, 0]), 5).tolist()
    [0, 1, 0]
    """
    ranks = np.asarray(ranks)
    return np.where(ranks <= k, np.arange(ranks.size), np.asarray(predictions)).astype(np.int64)


def _stat_names(ks: Sequence[int], one_to_one: bool) -> list[str]:
    return ([f"accuracy@{k}" for k in ks] + ["mrr"]
            + (["precision", "recall", "f1"] + [f"f1@{k}" for k in ks] if one_to_one else []))


def _statistics(ranks: np.ndarray, preds: np.ndarray, ks: Sequence[int], one_to_one: bool, counts: np.ndarray) -> np.ndarray:
    """Every statistic for row-count vectors ``counts`` (B x n) -> (n_stats, B)."""
    total = counts.sum(axis=1)
    out = [counts @ (ranks <= k).astype(np.float64) / total for k in ks]
    out.append(counts @ (1.0 / ranks) / total)
    if one_to_one:
        m = mteb_scores(preds, counts)
        out += [m["precision"], m["recall"], m["f1"]]
        out += [mteb_scores(f1_at_k_predictions(ranks, preds, k), counts)["f1"] for k in ks]
    return np.stack(out)


def query_order(n: int, query_labels: Sequence[str] | None, corpus_labels: Sequence[str] | None,
                gold: "_Gold | None") -> np.ndarray:
    """The queries in canonical order (:func:`~semanscope_nb.data.concept_key.key_order`), the order the bootstrap
    resamples them in: keyed by the query's label and, when row i translates row i, its gold's label; the rows as
    given when there are no labels.

    >>> query_order(3, ["b", "a", "c"], ["y", "x", "z"], None).tolist()
    [1, 0, 2]
    """
    if query_labels is None or len(query_labels) != n:
        return key_order(None, n)
    if gold is None and corpus_labels is not None and len(corpus_labels) == n:
        return key_order([item_key(q, c) for q, c in zip(query_labels, corpus_labels)])
    return key_order([item_key(q) for q in query_labels])


def _bootstrap(
    ranks: np.ndarray, preds: np.ndarray, ks: Sequence[int], one_to_one: bool, *, n_boot: int, seed: int, confidence: float,
    order: np.ndarray | None = None,
) -> dict[str, tuple[float, float]]:
    """Percentile intervals of every statistic: ``scipy.stats.bootstrap`` over the queries, slot ``s`` of a resample
    being query ``order[s]`` (:func:`query_order`; None: the rows as given)."""
    names = _stat_names(ks, one_to_one)
    n = ranks.size
    if n_boot == 0 or n < 2:
        return {name: (math.nan, math.nan) for name in names}
    batch = int(max(1, min(n_boot, 4_000_000 // n)))

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        return _statistics(ranks, preds, ks, one_to_one, rows_to_counts(idx, n))

    import scipy.stats  # here, not at import time: it costs ~0.6 s of package start-up
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = scipy.stats.bootstrap(
            (np.arange(n) if order is None else np.asarray(order),), statistic, n_resamples=int(n_boot), batch=batch, vectorized=True,
            confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed),
        )
    out = {}
    for j, name in enumerate(names):
        lo, hi = float(res.confidence_interval.low[j]), float(res.confidence_interval.high[j])
        dist = res.bootstrap_distribution[j]
        if np.ptp(dist) == 0:  # degenerate (e.g. every query right): the interval is the point
            lo = hi = float(dist[0])
        out[name] = (lo, hi)
    return out


# --------------------------------------------------------------------------- result




def number_or_nan(x: Any) -> float:
    return math.nan if x is None else float(x)


@dataclass(frozen=True)
class BitextResult(Result):
    """Retrieval scores of one direction (queries -> corpus); ``reverse`` holds the other direction.

    ``accuracy[k]``: share of queries with a gold item in the top k; ``mrr``: mean
    reciprocal rank; ``precision`` / ``recall`` / ``f1``: MTEB convention at k = 1
    (None when a query may have several gold items, as in lexicon induction);
    ``intervals[name]``: bootstrap percentile interval; ``ranks`` and
    ``predictions``: per query (1-based rank of the best gold; top-1 corpus index).
    ``f1_at[k]``: MINERS F1@k -- MTEB's weighted F1 where a query counts as a hit
    (its prediction becomes the gold) when the gold is in its top k, otherwise its
    top-1 prediction stands; ``f1_at[1] == f1`` (empty for lexicon induction).
    """

    kind = "bitext"

    direction: str
    metric: str
    ks: tuple[int, ...]
    accuracy: dict[int, float]
    mrr: float
    precision: float | None
    recall: float | None
    f1: float | None
    ranks: np.ndarray
    predictions: np.ndarray
    intervals: dict[str, Interval]
    n_queries: int
    n_corpus: int
    n_boot: int
    seed: int
    confidence: float
    reverse: "BitextResult | None" = None
    provenance: dict[str, Any] = field(default_factory=dict)
    query_labels: tuple[str, ...] | None = None
    corpus_labels: tuple[str, ...] | None = None
    f1_at: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "intervals", {k: Interval.of(v) for k, v in self.intervals.items()})

    @property
    def main_score_name(self) -> str:  # type: ignore[override]  (per result: lexicon induction has no F1)
        """What :attr:`main_score` is, as :meth:`value` names it: ``f1`` (MTEB's), or ``accuracy@<first k>`` when a
        query may have several gold items (lexicon induction: no F1)."""
        return "f1" if self.f1 is not None else f"accuracy@{self.ks[0]}"

    @property
    def main_score(self) -> float:
        """MTEB's main score: F1 (accuracy at the first k when F1 is undefined); ``value(main_score_name)``."""
        return float(self.value(self.main_score_name))

    def value(self, name: str) -> float | None:
        """The point value of a statistic named as in :attr:`intervals` (``accuracy@5``, ``mrr``, ``f1``, ``f1@10``, ...)."""
        if name.startswith("accuracy@"):
            return self.accuracy[int(name.split("@")[1])]
        if name.startswith("f1@"):
            return self.f1_at[int(name.split("@")[1])]
        return getattr(self, name)

    def estimates(self) -> dict[str, Estimate]:
        """Every statistic with its bootstrap percentile interval (``sem``: NaN, the bootstrap keeps only the interval)."""
        names = [f"accuracy@{k}" for k in self.ks] + ["mrr"]
        names += [n for n in ("precision", "recall", "f1") if getattr(self, n) is not None] + [f"f1@{k}" for k in self.f1_at]
        return {n: Estimate(number_or_nan(self.value(n)), math.nan, self.intervals.get(n, Interval.empty())) for n in names}

    def summary(self) -> dict[str, Any]:
        """Flat numbers of this direction."""
        row: dict[str, Any] = {"direction": self.direction, "metric": self.metric, "n_queries": self.n_queries, "n_corpus": self.n_corpus}
        for k in self.ks:
            row[f"accuracy@{k}"] = self.accuracy[k]
            lo, hi = self.intervals.get(f"accuracy@{k}", (math.nan, math.nan))
            row[f"accuracy@{k}_ci_low"], row[f"accuracy@{k}_ci_high"] = lo, hi
        row["mrr"] = self.mrr
        for name in ("precision", "recall", "f1"):
            row[name] = getattr(self, name)
        for k, v in self.f1_at.items():
            row[f"f1@{k}"] = v
        if self.f1 is not None:
            row["f1_ci_low"], row["f1_ci_high"] = self.intervals.get("f1", (math.nan, math.nan))
        row["main_score"] = self.main_score
        return row

    def to_frame(self) -> pd.DataFrame:
        """One row per direction (this one, then the reverse), with the model id if known."""
        rows = [self.summary()] + ([self.reverse.summary()] if self.reverse is not None else [])
        df = pd.DataFrame(rows)
        if "model" in self.provenance:
            df.insert(0, "model", self.provenance["model"])
        return df

    def errors(self, n: int = 10) -> pd.DataFrame:
        """The ``n`` queries with the worst rank (labels when known)."""
        order = np.argsort(-self.ranks, kind="stable")[:n]
        ql = self.query_labels
        cl = self.corpus_labels
        return pd.DataFrame({
            "query": [ql[i] if ql else i for i in order],
            "rank": self.ranks[order],
            "predicted": [cl[self.predictions[i]] if cl else int(self.predictions[i]) for i in order],
        })

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (round-trips through :meth:`from_dict`)."""
        return json_ready({
            "direction": self.direction, "metric": self.metric, "ks": list(self.ks),
            "accuracy": {str(k): v for k, v in self.accuracy.items()}, "mrr": self.mrr,
            "precision": self.precision, "recall": self.recall, "f1": self.f1,
            "ranks": self.ranks, "predictions": self.predictions,
            "intervals": {k: list(v) for k, v in self.intervals.items()},
            "n_queries": self.n_queries, "n_corpus": self.n_corpus, "n_boot": self.n_boot, "seed": self.seed,
            "confidence": self.confidence,
            "reverse": self.reverse.to_dict() if self.reverse is not None else None,
            "provenance": self.provenance,
            "query_labels": list(self.query_labels) if self.query_labels is not None else None,
            "corpus_labels": list(self.corpus_labels) if self.corpus_labels is not None else None,
            "f1_at": {str(k): v for k, v in self.f1_at.items()},
        })

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BitextResult":
        def opt(x: Any) -> float | None:
            return None if x is None else float(x)

        return cls(
            direction=d["direction"], metric=d["metric"], ks=tuple(int(k) for k in d["ks"]),
            accuracy={int(k): number_or_nan(v) for k, v in d["accuracy"].items()}, mrr=number_or_nan(d["mrr"]),
            precision=opt(d["precision"]), recall=opt(d["recall"]), f1=opt(d["f1"]),
            ranks=np.asarray(d["ranks"], dtype=np.int64), predictions=np.asarray(d["predictions"], dtype=np.int64),
            intervals={k: Interval.of(v) for k, v in d["intervals"].items()},
            n_queries=int(d["n_queries"]), n_corpus=int(d["n_corpus"]), n_boot=int(d["n_boot"]), seed=int(d["seed"]),
            confidence=float(d["confidence"]),
            reverse=cls.from_dict(d["reverse"]) if d.get("reverse") else None,
            provenance=dict(d.get("provenance") or {}),
            query_labels=tuple(d["query_labels"]) if d.get("query_labels") is not None else None,
            corpus_labels=tuple(d["corpus_labels"]) if d.get("corpus_labels") is not None else None,
            f1_at={int(k): number_or_nan(v) for k, v in (d.get("f1_at") or {}).items()},
        )

    def with_provenance(self, **extra: Any) -> "BitextResult":
        from dataclasses import replace

        rev = self.reverse.with_provenance(**extra) if self.reverse is not None else None
        return replace(self, provenance={**self.provenance, **extra}, reverse=rev)


@dataclass(frozen=True)
class RetrievalSet(Result):
    """Retrieval over several language pairs: one :class:`BitextResult` per ``"src->tgt"`` pair, with their means.

    >>> import numpy as np
    >>> r = bitext_retrieval(np.eye(3), np.eye(3), ks=(1,), n_boot=0)
    >>> RetrievalSet({"en->de": r}).p_at_1
    1.0
    """

    kind = "retrieval"
    main_score_name = "p_at_1"

    pairs: dict[str, BitextResult]
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def p_at_1(self) -> float:
        """Mean accuracy@1 over the pairs, forward direction (NaN when a pair was not scored at k = 1: a P@5 is
        never shown under the name P@1; the retrieval task always scores k = 1)."""
        if not self.pairs or any(1 not in r.accuracy for r in self.pairs.values()):
            return math.nan
        return float(np.mean([r.accuracy[1] for r in self.pairs.values()]))

    def summary(self) -> dict[str, Any]:
        """Means over the pairs: P@k per k, MRR and the reverse P@1 (the grid's leaderboard row)."""
        rs = list(self.pairs.values())
        out: dict[str, Any] = {"n_pairs": len(rs)}
        if not rs:
            return out
        for k in rs[0].ks:
            out[f"p_at_{k}"] = float(np.mean([r.accuracy[k] for r in rs]))
        out["mrr"] = float(np.mean([r.mrr for r in rs]))
        rev = [r.reverse.accuracy[1] for r in rs if r.reverse is not None and 1 in r.reverse.accuracy]
        if rev:
            out["p_at_1_reverse"] = float(np.mean(rev))
        out["main_score"] = self.main_score
        return out

    def estimates(self) -> dict[str, Estimate]:
        """``"<pair>:<statistic>"`` -> each pair's estimates, forward direction (see :meth:`BitextResult.estimates`)."""
        return {f"{pair}:{name}": e for pair, r in self.pairs.items() for name, e in r.estimates().items()}

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": {k: r.to_dict() for k, r in self.pairs.items()}, "provenance": json_ready(self.provenance)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RetrievalSet":
        return cls({k: BitextResult.from_dict(v) for k, v in d["pairs"].items()}, dict(d.get("provenance") or {}))


def _check_ks(ks: Sequence[int], n_corpus: int) -> tuple[int, ...]:
    return tuple(check_k(k, n_corpus, name="k") for k in check_ks(ks))


def _check_labels(labels: Any, n_rows: int, name: str) -> None:
    """Refuse row labels that are not one per row (``.errors()`` and the bootstrap's row order read them by row)."""
    if labels is None:
        return
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__") or not hasattr(labels, "__iter__"):
        raise ArgumentError(f"{name} must be a list of labels, one per row ({n_rows}), got {type(labels).__name__}")
    if len(labels) != n_rows:
        raise ArgumentError(f"{name} has {len(labels)} labels but there are {n_rows} rows: give one label per row")


def _direction(
    provider: DistanceProvider, gold: _Gold | None, *, ks: Sequence[int], n_boot: int, seed: int, confidence: float,
    block: int | None, max_block_bytes: int, direction: str, metric: str,
    query_labels: Sequence[str] | None = None, corpus_labels: Sequence[str] | None = None,
    precomputed: tuple[np.ndarray, np.ndarray] | None = None,
) -> BitextResult:
    ks = _check_ks(ks, provider.n_corpus)
    _check_labels(query_labels, provider.n_queries, "query_labels")
    _check_labels(corpus_labels, provider.n_corpus, "corpus_labels")
    if precomputed is not None:
        ranks, preds = precomputed
    else:
        ranks, preds = gold_ranks(provider, gold, block=block, max_block_bytes=max_block_bytes)
    one_to_one = gold is None or gold.one_to_one
    point = _statistics(ranks, preds, ks, one_to_one, np.ones((1, ranks.size)))[:, 0]
    names = _stat_names(ks, one_to_one)
    val = dict(zip(names, map(float, point)))
    intervals = _bootstrap(ranks, preds, ks, one_to_one, n_boot=n_boot, seed=seed, confidence=confidence,
                           order=query_order(ranks.size, query_labels, corpus_labels, None if gold is None or gold.one_to_one else gold))
    return BitextResult(
        direction=direction, metric=metric, ks=ks, accuracy={k: val[f"accuracy@{k}"] for k in ks}, mrr=val["mrr"],
        precision=val.get("precision"), recall=val.get("recall"), f1=val.get("f1"),
        ranks=ranks, predictions=preds, intervals=intervals, n_queries=provider.n_queries, n_corpus=provider.n_corpus,
        n_boot=int(n_boot), seed=seed, confidence=confidence,
        query_labels=tuple(query_labels) if query_labels is not None else None,
        corpus_labels=tuple(corpus_labels) if corpus_labels is not None else None,
        f1_at={k: val[f"f1@{k}"] for k in ks} if one_to_one else {},
    )


def _check_boot(n_boot: int, confidence: float, seed: Any = 0) -> None:
    check_n_boot(n_boot)
    check_confidence(confidence)
    check_seed(seed)


def bitext_retrieval(
    source: Any,
    target: Any = None,
    *,
    ks: Sequence[int] = (1, 5, 10),
    metric: Metric = "cosine",
    n_boot: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    both_directions: bool = True,
    block: int | None = None,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
    source_labels: Sequence[str] | None = None,
    target_labels: Sequence[str] | None = None,
    names: tuple[str, str] = ("source", "target"),
    dtype: type | None = None,
) -> BitextResult:
    """Bitext retrieval between two aligned arrays: row i of ``source`` translates row i of ``target``.

    Returns source -> target scores with ``.reverse`` holding target -> source
    (the two differ; MINERS reports both).  ``source`` may instead be a square
    :class:`DistanceProvider` (e.g. a DistFuse ensemble's), with ``target=None``.
    Every block of distances is computed once and serves both directions
    (:func:`diagonal_ranks`); ``dtype=None`` is float32 for cosine, float64 for
    Euclidean.  ``f1_at[k]`` is MINERS's F1@k.

    >>> import numpy as np, semanscope_nb as snb
    >>> x = np.random.default_rng(1).normal(size=(50, 8))
    >>> r = snb.bitext_retrieval(x, x, n_boot=0)
    >>> r.accuracy[1], r.f1, r.reverse.mrr
    (1.0, 1.0, 1.0)
    """
    n_boot = resolve(n_boot, "n_boot")
    _check_boot(n_boot, confidence, seed)
    names = check_names(names)
    provider = distance_provider(source, target, metric=metric, names=names, dtype=dtype)
    if provider.n_queries != provider.n_corpus:
        raise EmbeddingError(
            f"{names[0]} has {provider.n_queries} rows but {names[1]} has {provider.n_corpus}: "
            "bitext retrieval needs aligned lists (row i translates row i)"
        )
    _check_labels(source_labels, provider.n_queries, "source_labels")
    _check_labels(target_labels, provider.n_corpus, "target_labels")
    metric_name = getattr(provider, "metric", metric)
    common = dict(ks=ks, n_boot=n_boot, seed=seed, confidence=confidence, block=block, max_block_bytes=max_block_bytes, metric=metric_name)
    rf, pf, rr, pr = diagonal_ranks(provider, block=block, max_block_bytes=max_block_bytes)
    fwd = _direction(provider, None, direction=f"{names[0]}->{names[1]}", query_labels=source_labels,
                     corpus_labels=target_labels, precomputed=(rf, pf), **common)
    rev = None
    if both_directions:
        rev = _direction(provider.T, None, direction=f"{names[1]}->{names[0]}", query_labels=target_labels,
                         corpus_labels=source_labels, precomputed=(rr, pr), **common)
    from dataclasses import replace

    params = {"ks": list(fwd.ks), "metric": metric_name, "n_boot": int(n_boot), "seed": seed, "confidence": confidence,
              "distances": provider.describe()}
    out = replace(fwd, reverse=rev, provenance={"parameters": params})
    return out





def text_distances(
    query_texts: Sequence[str],
    corpus_texts: Sequence[str],
    model: "str | Encoder | DistFuse | None" = None,
    *,
    query_language: str | None = None,
    corpus_language: str | None = None,
    metric: Metric = "cosine",
    cache: "EmbeddingCache | None | Literal[False]" = None,
    fit_texts: Sequence[str] | None = None,
) -> tuple[DistanceProvider, dict[str, Any]]:
    """The distance provider of ``model`` between two lists of texts, and the model's provenance.

    ``model`` is a registry id, an :class:`~semanscope_nb.Encoder` or a
    :class:`~semanscope_nb.metrics.fusion.DistFuse` ensemble (which brings its own metric).  ``fit_texts``: what a
    corpus-fitted model (TF-IDF) is fitted on (None: the two lists; a word dataset's
    :meth:`~semanscope_nb.data.words.WordDataset.fit_corpus`, as ``embed`` fits it).
    """
    from semanscope_nb.metrics.fusion import DistFuse

    if isinstance(model, DistFuse):
        provider = model.distances(query_texts, corpus_texts, query_language=query_language, corpus_language=corpus_language, cache=cache)
        return provider, model.provenance()
    encoder = load_encoder(model, list(dict.fromkeys([*query_texts, *corpus_texts])) if fit_texts is None else list(fit_texts))
    q = embed_texts(encoder, query_texts, language=query_language, cache=cache)
    c = embed_texts(encoder, corpus_texts, language=corpus_language, cache=cache)
    return EmbeddingDistances(q, c, metric=metric, dtype=None), {  # None: float32 for cosine
        "model": encoder.model_id, "model_version": encoder.version, "model_options": encoder.options,
    }


def hash_texts(*lists: Sequence[str]) -> str:
    h = hashlib.sha256()
    for lst in lists:
        h.update(json.dumps(list(lst), ensure_ascii=False).encode())
    return h.hexdigest()


def check_texts(texts: Sequence[str], name: str) -> list[str]:
    texts = list(texts)
    if not texts:
        raise EmbeddingError(f"{name} is empty (no texts)")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is {type(t).__name__}, expected str")
        if not t.strip():
            raise EmbeddingError(f"{name}[{i}] is an empty text")
    return texts


def text_retrieval(
    source_texts: Sequence[str],
    target_texts: Sequence[str],
    model: "str | Encoder | DistFuse | None" = None,
    *,
    source_language: str | None = None,
    target_language: str | None = None,
    ks: Sequence[int] = (1, 5, 10),
    metric: Metric = "cosine",
    n_boot: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    cache: "EmbeddingCache | None | Literal[False]" = None,
    block: int | None = None,
    name: str = "texts",
) -> BitextResult:
    """Bitext retrieval between two aligned text lists (sentences or words), embedded through the cache.

    ``source_language`` / ``target_language`` (ISO codes) matter for
    language-dependent models (aligned models).

    >>> import semanscope_nb as snb
    >>> r = snb.text_retrieval(["water", "fire", "tree"], ["水", "火", "树"], "random-null", ks=(1, 3), n_boot=0, cache=False)
    >>> r.n_queries, sorted(r.accuracy)
    (3, [1, 3])
    """
    n_boot = resolve(n_boot, "n_boot")
    src = check_texts(source_texts, "source_texts")
    tgt = check_texts(target_texts, "target_texts")
    if len(src) != len(tgt):
        raise EmbeddingError(f"source_texts has {len(src)} texts but target_texts has {len(tgt)}: row i must translate row i")
    provider, model_info = text_distances(
        src, tgt, model, query_language=source_language, corpus_language=target_language, metric=metric, cache=cache
    )
    names = (source_language or "source", target_language or "target")
    if names[0] == names[1]:
        names = (f"{names[0]}(source)", f"{names[1]}(target)")
    r = bitext_retrieval(provider, ks=ks, n_boot=n_boot, seed=seed, confidence=confidence, block=block,
                         source_labels=src, target_labels=tgt, names=names)
    from semanscope_nb.provenance import package_info, utc_now

    return r.with_provenance(**model_info, dataset=name, texts_sha256=hash_texts(src, tgt), n_texts=len(src),
                             languages=[source_language, target_language], packages=package_info(), created=utc_now())


def _word_pairs(
    data: "WordDataset | str | os.PathLike | Sequence[tuple[str, str]]", source: str | None, target: str | None
) -> tuple[list[tuple[str, str]], str, str | None, str | None, str]:
    from semanscope_nb.data.words import WordDataset, load_dataset

    if isinstance(data, (str, os.PathLike)):
        data = load_dataset(data)
    if isinstance(data, WordDataset):
        src = source or data.languages[0]
        tgt = target or next(lang for lang in data.languages if lang != src)
        ds = data.select([src, tgt])
        pairs = [(s, t) for row in ds.rows for s in row[0] for t in row[1]]
        return pairs, ds.name, ds.languages[0], ds.languages[1], ds.sha256
    pairs = [tuple(p) for p in data]
    for i, p in enumerate(pairs):
        if len(p) != 2 or not all(isinstance(w, str) and w.strip() for w in p):
            raise EmbeddingError(f"pairs[{i}] = {p!r} is not a (source word, target word) pair of non-empty strings")
    if not pairs:
        raise EmbeddingError("no word pairs given (empty list)")
    return pairs, "pairs", source, target, hash_texts([f"{s}\t{t}" for s, t in pairs])


def _gold_from_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[str], _Gold, _Gold]:
    src_words = list(dict.fromkeys(s for s, _ in pairs))
    tgt_words = list(dict.fromkeys(t for _, t in pairs))
    si = {w: i for i, w in enumerate(src_words)}
    ti = {w: i for i, w in enumerate(tgt_words)}
    edges = np.array(sorted({(si[s], ti[t]) for s, t in pairs}), dtype=np.int64)
    fwd = sp.csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(len(src_words), len(tgt_words)))
    rev = fwd.T.tocsr()
    fwd.sort_indices()
    rev.sort_indices()
    return src_words, tgt_words, _Gold(fwd.indptr.astype(np.int64), fwd.indices.astype(np.int64)), _Gold(rev.indptr.astype(np.int64), rev.indices.astype(np.int64))


def lexicon_induction(
    data: "WordDataset | str | os.PathLike | Sequence[tuple[str, str]]",
    model: "str | Encoder | DistFuse | None" = None,
    *,
    source: str | None = None,
    target: str | None = None,
    ks: Sequence[int] = (1, 5, 10),
    metric: Metric = "cosine",
    n_boot: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    cache: "EmbeddingCache | None | Literal[False]" = None,
    block: int | None = None,
) -> BitextResult:
    """Bilingual lexicon induction (paper 001's P@K, MUSE convention) on a word dataset or word pairs.

    Queries are the unique source words (every ``|`` alternative is a query);
    candidates are all unique target words.  A query hits at K when ANY of its
    gold translations -- every target alternative of every row holding the
    word -- is among its K nearest candidates (``accuracy[K]`` = P@K; the rank
    is that of the best-ranked gold).  With several golds per query MTEB's
    precision/recall/F1 are undefined (None).  ``.reverse`` is target -> source.

    >>> import semanscope_nb as snb
    >>> r = snb.lexicon_induction([("bank", "银行"), ("bank", "岸"), ("water", "水")], "random-null", source="en", target="zh", ks=(1,), n_boot=0, cache=False)
    >>> r.n_queries, r.n_corpus, r.reverse.n_queries
    (2, 3, 3)
    """
    n_boot = resolve(n_boot, "n_boot")
    _check_boot(n_boot, confidence, seed)
    if isinstance(data, (str, os.PathLike)):  # read here, so its fit corpus is known (below)
        from semanscope_nb.data.words import load_dataset

        data = load_dataset(data)
    pairs, name, src_lang, tgt_lang, sha = _word_pairs(data, source, target)
    src_words, tgt_words, gold_f, gold_r = _gold_from_pairs(pairs)
    # a word dataset's corpus-fitted model is the one embed() fits: on the whole dataset (the retrieval task's model)
    fit = data.fit_corpus() if hasattr(data, "fit_corpus") else None
    provider, model_info = text_distances(
        src_words, tgt_words, model, query_language=src_lang, corpus_language=tgt_lang, metric=metric, cache=cache,
        fit_texts=fit,
    )
    names = (src_lang or "source", tgt_lang or "target")
    metric_name = getattr(provider, "metric", metric)
    common = dict(n_boot=n_boot, seed=seed, confidence=confidence, block=block, max_block_bytes=DEFAULT_MAX_BLOCK_BYTES, metric=metric_name)
    fwd = _direction(provider, gold_f, ks=ks, direction=f"{names[0]}->{names[1]}", query_labels=src_words, corpus_labels=tgt_words, **common)
    rev = _direction(provider.T, gold_r, ks=ks, direction=f"{names[1]}->{names[0]}", query_labels=tgt_words, corpus_labels=src_words, **common)
    from dataclasses import replace

    from semanscope_nb.provenance import package_info, utc_now

    params = {"ks": list(fwd.ks), "metric": metric_name, "n_boot": int(n_boot), "seed": seed, "confidence": confidence,
              "task": "lexicon induction (hit = any gold translation in top k)", "distances": provider.describe()}
    out = replace(fwd, reverse=rev, provenance={"parameters": params})
    return out.with_provenance(**model_info, dataset=name, dataset_sha256=sha, n_pairs=len(pairs),
                               languages=[src_lang, tgt_lang], packages=package_info(), created=utc_now())


def tatoeba_retrieval(
    language: str,
    model: "str | Encoder | DistFuse | None" = None,
    *,
    folder: str | os.PathLike | None = None,
    limit: int | None = None,
    **kwargs: Any,
) -> BitextResult:
    """Bitext retrieval on the Tatoeba test set of ``language`` vs English (xxx -> eng, and reverse).

    ``language``: a Tatoeba code (``deu``) or ISO code (``de``); ``limit``: the first N pairs.
    Further keyword arguments go to :func:`text_retrieval`.
    """
    from semanscope_nb.data.bitext import read_tatoeba

    corpus = read_tatoeba(language, folder=folder, limit=limit)
    return text_retrieval(
        corpus.source_texts, corpus.target_texts, model, source_language=corpus.source_language,
        target_language=corpus.target_language, name=corpus.name, **kwargs,
    ).with_provenance(dataset_sha256=corpus.sha256, dataset_source=shareable_source(corpus.source),
                      reader_report=shareable_report(getattr(corpus, "report", ()), corpus.source))


def retrieval_frame(results: Mapping[str, BitextResult]) -> pd.DataFrame:
    """One row per (name, direction): accuracy@k, MRR, MTEB precision/recall/F1 and intervals."""
    frames = []
    for name, r in results.items():
        df = r.to_frame()
        df.insert(0, "name", name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# --------------------------------------------------------------------------- margin-based bitext mining (BUCC style)


def _unit32(x: Any, name: str) -> np.ndarray:
    """Unit rows in float32, with search.py's power-of-two magnitude safety."""
    x = np.asarray(x)
    return EmbeddingDistances(x, x[:1], metric="cosine", dtype=np.float32,
                              names=(name, name)).working_queries


def knn_mean_cosine(queries: Any, corpus: Any, *, k: int = 4) -> np.ndarray:
    """Mean cosine of every query to its ``k`` nearest corpus rows (the margin's neighbourhood term).

    >>> import numpy as np
    >>> knn_mean_cosine(np.eye(2), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), k=2).round(3).tolist()
    [0.854, 0.854]
    """
    from semanscope_nb.metrics.search import topk_search

    top = topk_search(queries, corpus, k=k, metric="cosine")
    return (1.0 - top.distances).mean(axis=1)


def ratio_margin(source: Any, target: Any, *, k: int = 4) -> np.ndarray:
    """The full ratio-margin matrix of Artetxe & Schwenk (2019) -- small inputs only (builds N x M).

    ``margin(x, y) = cos(x, y) / (mean_{z in NN_k(x)} cos(x, z) / 2 + mean_{z in NN_k(y)} cos(y, z) / 2)``
    where NN_k(x) are x's k nearest targets and NN_k(y) are y's k nearest sources.
    :func:`margin_mining` computes the same scores in blocks.

    >>> import numpy as np
    >>> m = ratio_margin(np.eye(3), np.eye(3), k=1)
    >>> m.diagonal().tolist()
    [1.0, 1.0, 1.0]
    """
    s = np.asarray(_unit32(source, "source"), dtype=np.float64)
    t = np.asarray(_unit32(target, "target"), dtype=np.float64)
    a = knn_mean_cosine(source, target, k=k)
    b = knn_mean_cosine(target, source, k=k)
    return (s @ t.T) / (a[:, None] / 2 + b[None, :] / 2)


def best_f1_threshold(scores: np.ndarray, correct: np.ndarray, n_gold: int) -> dict[str, float]:
    """BUCC's threshold choice: keep candidates with score >= t, with t maximising F1 against the gold.

    ``scores``/``correct``: the candidates' scores and whether each is a gold pair.
    Returns threshold, precision, recall, f1 and n_selected.

    >>> best_f1_threshold(np.array([0.9, 0.8, 0.7]), np.array([True, False, True]), 2)["f1"]
    0.8
    """
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    if n_gold < 1:
        raise ValueError(f"n_gold must be >= 1, got {n_gold}")
    if scores.size == 0:
        return {"threshold": math.nan, "precision": 0.0, "recall": 0.0, "f1": 0.0, "n_selected": 0}
    order = np.argsort(-scores, kind="stable")
    s, c = scores[order], correct[order]
    tp = np.cumsum(c)
    n_sel = np.arange(1, s.size + 1)
    last = np.r_[s[1:] != s[:-1], True]  # a threshold keeps every candidate tied at it
    tp, n_sel, s = tp[last], n_sel[last], s[last]
    prec, rec = tp / n_sel, tp / n_gold
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(prec + rec > 0, 2 * prec * rec / (prec + rec), 0.0)
    i = int(np.argmax(f1))
    return {"threshold": float(s[i]), "precision": float(prec[i]), "recall": float(rec[i]), "f1": float(f1[i]),
            "n_selected": int(n_sel[i])}


@dataclass(frozen=True)
class MiningResult(Result):
    """Margin-mined bitext pairs scored against hidden gold pairs (BUCC style).

    ``pairs``: (n, 2) mined (source index, target index), ``scores`` their margins;
    ``threshold`` is chosen as in BUCC (best F1 on the gold) and reported, with the
    precision / recall / F1 of the pairs scoring at or above it (no bootstrap: no interval).
    """

    kind = "mining"
    main_score_name = "f1"

    pairs: np.ndarray
    scores: np.ndarray
    gold: np.ndarray
    threshold: float
    precision: float
    recall: float
    f1: float
    n_selected: int
    k: int
    mode: str
    n_source: int
    n_target: int
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (round-trips through :meth:`from_dict`)."""
        return json_ready({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MiningResult":
        return cls(
            pairs=np.asarray(d["pairs"], dtype=np.int64).reshape(-1, 2), scores=np.asarray(d["scores"], dtype=np.float64),
            gold=np.asarray(d["gold"], dtype=np.int64).reshape(-1, 2), threshold=number_or_nan(d["threshold"]),
            precision=float(d["precision"]), recall=float(d["recall"]), f1=float(d["f1"]), n_selected=int(d["n_selected"]),
            k=int(d["k"]), mode=d["mode"], n_source=int(d["n_source"]), n_target=int(d["n_target"]),
            provenance=dict(d.get("provenance") or {}),
        )

    def summary(self) -> dict[str, Any]:
        """Flat numbers."""
        return {"mode": self.mode, "k": self.k, "n_source": self.n_source, "n_target": self.n_target,
                "n_gold": int(len(self.gold)), "n_candidates": int(len(self.pairs)), "threshold": self.threshold,
                "n_selected": self.n_selected, "precision": self.precision, "recall": self.recall, "f1": self.f1}


MINING_MODES = ("intersect", "forward", "backward", "union")


def margin_mining(
    source: Any,
    target: Any,
    gold: Any,
    *,
    k: int = 4,
    mode: Literal["intersect", "forward", "backward", "union"] = "intersect",
    block: int | None = None,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
) -> MiningResult:
    """Mine translation pairs by ratio margin and score them against ``gold`` (BUCC protocol).

    Each source takes its best target by margin (forward), each target its best
    source (backward); ``mode`` keeps the mutual pairs ("intersect", the
    default), one direction, or their union.  Candidates are then cut at the
    margin threshold with the best F1 on ``gold`` ((n, 2) source/target index
    pairs), as the BUCC shared task does; that threshold is reported.  Margins are
    computed exactly over all candidates, one float32 block of cosines at a time.  Near ties
    follow :mod:`semanscope_nb.metrics.ties` with the margin's tolerance
    (:func:`~semanscope_nb.metrics.ties.margin_tolerance`, in the provenance): the lowest
    index tied with the best margin is chosen, and tied margins fall on one side of the
    threshold together.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(30, 64)); y = np.vstack([x[:10] + 0.1 * rng.normal(size=(10, 64)), rng.normal(size=(20, 64))])
    >>> r = margin_mining(x, y, np.c_[np.arange(10), np.arange(10)], k=4)
    >>> r.f1, r.precision
    (1.0, 1.0)
    """
    if mode not in MINING_MODES:
        raise ValueError(f"mode must be one of {MINING_MODES}, got {mode!r}")
    fwd_d = EmbeddingDistances(source, target, metric="cosine", dtype=np.float32, names=("source", "target"))
    n_s, n_t = fwd_d.n_queries, fwd_d.n_corpus
    k = check_k(k, min(n_s, n_t))
    gold_arr = _checked_gold(gold, n_s, n_t)
    from semanscope_nb.metrics.search import topk_search

    a = (1.0 - topk_search(fwd_d, k=k).distances).mean(axis=1)
    b = (1.0 - topk_search(fwd_d.T, k=k).distances).mean(axis=1)
    half_b = (b / 2).astype(np.float32)
    # near ties of margins (module ties): the cosine's tolerance carried through the ratio
    tol = margin_tolerance(fwd_d.tie_tolerance, float(a.min() / 2 + b.min() / 2))
    rows = fwd_d.rows_per_block(block, max_block_bytes)
    f_best, f_arg = np.empty(n_s), np.empty(n_s, dtype=np.int64)
    col_best = ColumnBest(n_t, tol, largest=True)
    for s0 in range(0, n_s, rows):
        s1 = min(n_s, s0 + rows)
        M = 1.0 - fwd_d.block(slice(s0, s1))  # cosines, float32
        M /= (a[s0:s1, None] / 2).astype(np.float32) + half_b[None, :]
        f_arg[s0:s1] = first_best(M, tol, largest=True)  # the lowest target index tied with the best margin
        f_best[s0:s1] = M[np.arange(s1 - s0), f_arg[s0:s1]]
        col_best.update(M, s0)  # per target: the lowest source index tied with the best margin
    b_arg, b_best = col_best.result(values=True)
    cand = _mined_candidates(f_arg, f_best, b_arg, b_best, mode=mode)
    pairs = np.array(sorted(cand), dtype=np.int64).reshape(-1, 2)
    scores = np.array([cand[tuple(p)] for p in pairs.tolist()], dtype=np.float64)
    gold_set = {tuple(p) for p in gold_arr.tolist()}
    correct = np.array([tuple(p) in gold_set for p in pairs.tolist()], dtype=bool)
    # tied margins fall on one side of the threshold together: each tie group scored at its lowest margin
    groups = tie_groups(scores, tol) if scores.size else np.empty(0, dtype=np.int64)
    group_low = np.full(int(groups.max()) + 1 if groups.size else 0, np.inf)
    np.minimum.at(group_low, groups, scores)
    best = best_f1_threshold(group_low[groups], correct, len(gold_set))
    return MiningResult(
        pairs=pairs, scores=scores, gold=np.array(sorted(gold_set), dtype=np.int64).reshape(-1, 2),
        threshold=best["threshold"], precision=best["precision"], recall=best["recall"], f1=best["f1"],
        n_selected=best["n_selected"], k=k, mode=mode, n_source=n_s, n_target=n_t,
        provenance={"parameters": {"k": k, "mode": mode, "margin": "ratio (Artetxe & Schwenk 2019)",
                                   "threshold": "best F1 on the gold (BUCC)", "dtype": "float32",
                                   "tie_tolerance": tol}},
    )


def _checked_gold(gold: Any, n_s: int, n_t: int) -> np.ndarray:
    """``gold`` as an (n, 2) int64 array of (source, target) indices inside both sides."""
    gold_arr = np.asarray(gold, dtype=np.int64)
    if gold_arr.ndim != 2 or gold_arr.shape[1] != 2 or gold_arr.shape[0] == 0:
        raise ValueError(f"gold must be a non-empty (n, 2) array of (source index, target index) pairs, got shape {gold_arr.shape}")
    if gold_arr[:, 0].min() < 0 or gold_arr[:, 0].max() >= n_s or gold_arr[:, 1].min() < 0 or gold_arr[:, 1].max() >= n_t:
        raise ValueError(f"gold holds indices outside the source ({n_s} rows) or target ({n_t} rows)")
    return gold_arr


def _mined_candidates(f_arg: np.ndarray, f_best: np.ndarray, b_arg: np.ndarray, b_best: np.ndarray, *,
                      mode: str) -> dict[tuple[int, int], float]:
    """(source, target) -> margin of the candidate pairs: forward best, backward best, mutual ones, or both."""
    fwd_pairs = {(int(i), int(f_arg[i])): float(f_best[i]) for i in range(f_arg.size)}
    bwd_pairs = {(int(b_arg[j]), int(j)): float(b_best[j]) for j in range(b_arg.size)}
    if mode == "forward":
        return fwd_pairs
    if mode == "backward":
        return bwd_pairs
    if mode == "intersect":
        return {p: v for p, v in fwd_pairs.items() if p in bwd_pairs}
    return {**bwd_pairs, **fwd_pairs}


@dataclass(frozen=True)
class BuccPool:
    """Gold translation pairs hidden among distractors: pool index arrays into the original rows, and the gold."""

    source_rows: np.ndarray  # pool position -> original source row (gold or distractor)
    target_rows: np.ndarray
    gold: np.ndarray  # (n_gold, 2) pool positions (source, target)
    seed: int


def bucc_pool(n_pairs: int, *, n_gold: int, n_distractors: int, seed: int) -> BuccPool:
    """A BUCC-style pool over ``n_pairs`` aligned rows (row i translates row i), seeded.

    ``n_gold`` pairs are kept as gold; each side then gets ``n_distractors``
    further sentences whose translations are NOT in the other side's pool
    (source distractors and target distractors come from disjoint rows).  Both
    pools are shuffled.  Needs ``n_gold + 2 * n_distractors <= n_pairs``.

    >>> p = bucc_pool(100, n_gold=10, n_distractors=30, seed=0)
    >>> p.source_rows.size, p.target_rows.size, p.gold.shape
    (40, 40, (10, 2))
    """
    for name, v in (("n_pairs", n_pairs), ("n_gold", n_gold), ("n_distractors", n_distractors)):
        if isinstance(v, bool) or int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if n_gold < 1:
        raise ValueError("n_gold must be at least 1")
    if n_gold + 2 * n_distractors > n_pairs:
        raise ValueError(f"n_gold + 2 * n_distractors = {n_gold + 2 * n_distractors} exceeds the {n_pairs} available pairs")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_pairs)
    gold_rows = perm[:n_gold]
    src_rows = np.concatenate([gold_rows, perm[n_gold : n_gold + n_distractors]])
    tgt_rows = np.concatenate([gold_rows, perm[n_gold + n_distractors : n_gold + 2 * n_distractors]])
    src_rows, tgt_rows = src_rows[rng.permutation(src_rows.size)], tgt_rows[rng.permutation(tgt_rows.size)]
    s_pos = {int(r): i for i, r in enumerate(src_rows)}
    t_pos = {int(r): i for i, r in enumerate(tgt_rows)}
    gold = np.array(sorted((s_pos[int(r)], t_pos[int(r)]) for r in gold_rows), dtype=np.int64)
    return BuccPool(src_rows, tgt_rows, gold, int(seed))


def bucc_mining(
    source: Any,
    target: Any,
    *,
    n_gold: int,
    n_distractors: int,
    seed: int = 0,
    k: int = 4,
    mode: Literal["intersect", "forward", "backward", "union"] = "intersect",
) -> MiningResult:
    """BUCC-style mining on aligned embeddings: hide ``n_gold`` pairs among distractors, mine by margin, score.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 32)); y = x + 0.3 * rng.normal(size=(200, 32))
    >>> bucc_mining(x, y, n_gold=20, n_distractors=80, seed=0).f1 > 0.9
    True
    """
    src = np.asarray(source)
    tgt = np.asarray(target)
    if src.shape[0] != tgt.shape[0]:
        raise EmbeddingError(f"source has {src.shape[0]} rows but target has {tgt.shape[0]}: row i must translate row i")
    pool = bucc_pool(src.shape[0], n_gold=n_gold, n_distractors=n_distractors, seed=seed)
    r = margin_mining(src[pool.source_rows], tgt[pool.target_rows], pool.gold, k=k, mode=mode)
    from dataclasses import replace

    params = {**r.provenance["parameters"], "n_gold": int(n_gold), "n_distractors": int(n_distractors), "seed": int(seed)}
    return replace(r, provenance={"parameters": params, "pool_source_rows": pool.source_rows, "pool_target_rows": pool.target_rows})
