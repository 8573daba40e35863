"""Word similarity in context (paper 001, 5.1 and Table 4): Spearman's rho between the cosine of two target
tokens' contextual vectors and the average human score, with a seeded bootstrap interval over pairs; and
the human upper bound, a leave-one-out inter-annotator rho.

* :func:`spearman_rho` -- rho of one or many samples at once (rows), ties given their average rank
  (``scipy.stats.rankdata``, vectorised along rows).
* :func:`contextual_word_similarity` -- rho for two matrices of target vectors (pair ``i`` = row ``i`` of
  each) and the scores, optionally after an :class:`~semanscope_nb.models.aligned.Alignment` (each side
  mapped as its language); the bootstrap resamples *pairs* (all resamples ranked in one call).  Cosines
  are ranked under the near-tie rule of :mod:`semanscope_nb.metrics.ties`: cosines within
  :func:`~semanscope_nb.metrics.ties.dot_tolerance` of the vectors' precision tie (groups of
  :func:`~semanscope_nb.metrics.ties.tie_groups`, at their average rank), so the many pairs whose cosine
  is 1 in exact arithmetic (one word on both sides, no context) tie on every path instead of being ranked
  by their last-bit rounding.
* :func:`annotator_agreement` -- each annotator's rho against the mean of the others, averaged (the upper
  bound a model can be expected to reach), with the same bootstrap over pairs.

Example
-------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> a = rng.normal(size=(60, 8)); b = a + rng.normal(scale=0.5, size=(60, 8))
>>> cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
>>> r = contextual_word_similarity(a, b, 10 * cos, n_boot=200)
>>> round(r.rho, 6), r.ci.contains(r.rho), r.n_pairs
(1.0, True, 60)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semanscope_nb.data.concept_key import key_order
from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.metrics.ties import dot_tolerance, tie_groups, working_dtype
from semanscope_nb.results import Interval, Result
from semanscope_nb.settings import resolve

__all__ = ["AnnotatorAgreement", "WordSimilarityScore", "annotator_agreement", "contextual_word_similarity",
           "paired_cosines", "spearman_rho"]


def _check_boot(n_boot: Any, seed: Any, confidence: Any) -> tuple[int, int, float]:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ArgumentError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"seed must be an integer, got {seed!r}")
    if not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ArgumentError(f"confidence must be in (0, 1), got {confidence!r}")
    return int(n_boot), int(seed), float(confidence)


def spearman_rho(x: Any, y: Any) -> np.ndarray | float:
    """Spearman's rho of ``x`` and ``y`` (1-D: one float; 2-D: one rho per row), ties at their average rank.

    A constant sample has no rank order: its rho is NaN.

    >>> spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]), spearman_rho([1, 2, 2, 3], [3, 2, 2, 1])
    (0.8, -1.0)
    """
    from scipy.stats import rankdata  # well kept; ranks every row at once with ties averaged

    X, Y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.shape != Y.shape:
        raise ArgumentError(f"x and y must have the same shape, got {X.shape} and {Y.shape}")
    one = X.ndim == 1
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    if X.ndim != 2 or X.shape[1] < 2:
        raise ArgumentError(f"need at least 2 values per sample, got shape {X.shape}")
    rx, ry = rankdata(X, axis=1), rankdata(Y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (rx * ry).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    return float(rho[0]) if one else rho


def _boot_rho(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int, confidence: float,
              block: int = 200, order: np.ndarray | None = None) -> tuple[Interval, float]:
    """Percentile interval and std of rho over ``n_boot`` resamples of the pairs (``block`` resamples per call); slot
    ``s`` of a resample is pair ``order[s]`` (the pairs' canonical order; None: as given)."""
    if not n_boot:
        return Interval.empty(), float("nan")
    rng = np.random.default_rng(seed)
    n = len(x)
    rhos = np.empty(n_boot)
    for a in range(0, n_boot, block):
        b = min(n_boot, a + block)
        idx = rng.integers(0, n, size=(b - a, n))
        if order is not None:
            idx = np.asarray(order)[idx]
        rhos[a:b] = spearman_rho(x[idx], y[idx])
    rhos = rhos[np.isfinite(rhos)]
    if not len(rhos):
        return Interval.empty(), float("nan")
    lo, hi = np.percentile(rhos, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return Interval(float(lo), float(hi)), float(rhos.std(ddof=1)) if len(rhos) > 1 else float("nan")


def paired_cosines(a: Any, b: Any) -> np.ndarray:
    """Cosine of row ``i`` of ``a`` with row ``i`` of ``b``; a NaN/inf or zero row is an error naming it.

    >>> paired_cosines([[1.0, 0.0], [1.0, 1.0]], [[0.0, 2.0], [2.0, 2.0]]).round(6).tolist()
    [0.0, 1.0]
    """
    A, B = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if A.ndim != 2 or A.shape != B.shape:
        raise EmbeddingError(f"the two sides must be matrices of one shape (pairs x dims), got {A.shape} and {B.shape}")
    for name, M in (("vectors1", A), ("vectors2", B)):
        bad = np.flatnonzero(~np.isfinite(M).all(axis=1))
        if len(bad):
            raise EmbeddingError(f"{name}: row {bad[0]} holds NaN/inf ({len(bad)} such rows): "
                                 "a target with no subword? check the span")
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    zero = np.flatnonzero((na == 0) | (nb == 0))
    if len(zero):
        raise EmbeddingError(f"pair {zero[0]} has a zero vector ({len(zero)} such pairs): its cosine is undefined")
    return (A * B).sum(axis=1) / (na * nb)


@dataclass(frozen=True)
class WordSimilarityScore(Result):
    """Spearman's rho of model cosines against human scores, with a percentile-bootstrap interval over pairs."""

    kind = "contextual-word-similarity"
    main_score_name = "rho"

    rho: float
    ci: Interval
    sem: float
    n_pairs: int
    cosines: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    provenance: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"main_score": self.rho, "rho": self.rho, "ci_low": self.ci.low, "ci_high": self.ci.high,
                "sem": self.sem, "n_pairs": self.n_pairs}


def contextual_word_similarity(
    vectors1: Any, vectors2: Any, scores: Any, *, alignment: Any = None, languages: tuple[str, str] | None = None,
    n_boot: int | None = None, seed: int = 0, confidence: float = 0.95, provenance: Mapping[str, Any] | None = None,
    keys: Sequence[str] | None = None,
) -> WordSimilarityScore:
    """Spearman's rho between ``cos(vectors1[i], vectors2[i])`` and ``scores[i]`` (paper 001, 5.1), bootstrapped.

    ``alignment`` (optional): each side is mapped into the shared space as its language
    (``languages = (language1, language2)``, required then) before the cosine.  The interval resamples
    pairs with ``seed`` (``n_boot=0``: none), over the pairs in the canonical order of ``keys`` (what each pair is,
    e.g. :meth:`~semanscope_nb.data.word_similarity.ContextPairs.pair_keys`; :func:`~semanscope_nb.data.concept_key.key_order`):
    the same pairs in another order get the same interval.  None: the pairs as given.

    >>> r = contextual_word_similarity([[1, 0], [1, 1], [0, 1]], [[1, 0.1], [1, 0], [1, 0]], [9, 5, 1], n_boot=0)
    >>> r.rho, r.n_pairs
    (1.0, 3)
    """
    n_boot = resolve(n_boot, "n_boot")
    n_boot, seed, confidence = _check_boot(n_boot, seed, confidence)
    in_dtype = working_dtype(np.asarray(vectors1).dtype, np.asarray(vectors2).dtype)  # float32 vectors: float32 ties
    A, B = np.asarray(vectors1, dtype=np.float64), np.asarray(vectors2, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if A.ndim != 2 or len(A) != len(s) or len(B) != len(s):
        raise ArgumentError(f"vectors1 ({A.shape}), vectors2 ({B.shape}) and scores ({s.shape}) need one row per pair")
    if not np.isfinite(s).all():
        raise ArgumentError(f"scores: entry {int(np.flatnonzero(~np.isfinite(s))[0])} is NaN/inf")
    if len(s) < 3:
        raise ArgumentError(f"need at least 3 pairs for a rank correlation, got {len(s)}")
    if keys is not None and len(keys) != len(s):
        raise ArgumentError(f"keys has {len(keys)} entries for {len(s)} pairs")
    mapped = None
    if alignment is not None:
        if languages is None or len(languages) != 2:
            raise ArgumentError("languages=(language1, language2) is required with alignment= (which side is which)")
        A, B = alignment.transform(A, languages[0]), alignment.transform(B, languages[1])
        mapped = {"source_language": alignment.source_language, "target_language": alignment.target_language,
                  "mim": bool(alignment.mim), "center": bool(alignment.center), "n_pairs": int(alignment.n_pairs),
                  "sha256": alignment.sha256[:16]}
    cos = paired_cosines(A, B)
    # the near-tie rule (module docstring): cosines are ranked by their tie group, so tied cosines share a rank
    tol = dot_tolerance(A.shape[1], in_dtype)
    ranked = tie_groups(cos, tol).astype(np.float64)
    rho = spearman_rho(ranked, s)
    order = None if keys is None else key_order([str(k) for k in keys])
    ci, sem = _boot_rho(ranked, s, n_boot, seed, confidence, order=order)
    prov = {"n_boot": n_boot, "seed": seed, "confidence": confidence, "alignment": mapped, "tie_tolerance": tol,
            "languages": list(languages) if languages else None, **dict(provenance or {})}
    return WordSimilarityScore(float(rho), ci, sem, len(s), cos, prov)


@dataclass(frozen=True)
class AnnotatorAgreement(Result):
    """Leave-one-out inter-annotator agreement: each annotator's rho against the mean of the others."""

    kind = "annotator-agreement"
    main_score_name = "rho"

    rho: float
    ci: Interval
    sem: float
    per_annotator: np.ndarray
    n_pairs: int
    n_annotators: int
    provenance: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"main_score": self.rho, "rho": self.rho, "ci_low": self.ci.low, "ci_high": self.ci.high,
                "sem": self.sem, "n_pairs": self.n_pairs, "n_annotators": self.n_annotators,
                "min_annotator": float(np.nanmin(self.per_annotator)), "max_annotator": float(np.nanmax(self.per_annotator))}


def _loo_rho(S: np.ndarray) -> np.ndarray:
    """(resamples x annotators) rho of each annotator vs the mean of the others; S is (resamples, pairs, annotators)."""
    k = S.shape[2]
    total = S.sum(axis=2, keepdims=True)
    # the near-tie rule: means equal to 9 decimals are ties (scores like 3.3 make total - S and a sum of the
    # others differ in the last bit, which would break true ties at random)
    others = np.round((total - S) / (k - 1), 9)
    # rows = (resample, annotator) samples over the pairs axis
    a = np.moveaxis(S, 2, 1).reshape(-1, S.shape[1])
    b = np.moveaxis(others, 2, 1).reshape(-1, S.shape[1])
    return spearman_rho(a, b).reshape(S.shape[0], k)


def annotator_agreement(annotators: Any, *, n_boot: int | None = None, seed: int = 0, confidence: float = 0.95,
                        provenance: Mapping[str, Any] | None = None,
                        keys: Sequence[str] | None = None) -> AnnotatorAgreement:
    """The human upper bound: mean over annotators of rho(annotator, mean of the other annotators).

    ``annotators`` is (pairs x annotators).  The interval resamples pairs (each resample recomputes every
    annotator's leave-one-out rho and averages them), over the pairs in the canonical order of ``keys``
    (:meth:`~semanscope_nb.data.word_similarity.ContextPairs.pair_keys`; None: as given).  Near-tie rule: the
    others' means are rounded to 9 decimals before ranking, so means that are equal in exact arithmetic tie.

    >>> a = annotator_agreement([[1, 1, 2], [2, 3, 3], [3, 2, 4], [4, 4, 5]], n_boot=0)
    >>> round(a.rho, 3), a.per_annotator.round(3).tolist()
    (0.899, [0.949, 0.8, 0.949])
    """
    n_boot = resolve(n_boot, "n_boot")
    n_boot, seed, confidence = _check_boot(n_boot, seed, confidence)
    S = np.asarray(annotators, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] < 2 or S.shape[0] < 3:
        raise ArgumentError(f"annotators must be (pairs x annotators) with >= 3 pairs and >= 2 annotators, got {S.shape}")
    if not np.isfinite(S).all():
        raise ArgumentError("annotators holds NaN/inf")
    if keys is not None and len(keys) != S.shape[0]:
        raise ArgumentError(f"keys has {len(keys)} entries for {S.shape[0]} pairs")
    order = None if keys is None else key_order([str(k) for k in keys])  # pairs resampled in canonical order
    per = _loo_rho(S[None])[0]
    ci, sem = Interval.empty(), float("nan")
    if n_boot:
        rng = np.random.default_rng(seed)
        means = np.empty(n_boot)
        step = max(1, 2_000_000 // S.size)  # resamples per block: ~2M values in memory at once
        for a in range(0, n_boot, step):
            b = min(n_boot, a + step)
            idx = rng.integers(0, S.shape[0], size=(b - a, S.shape[0]))
            if order is not None:
                idx = order[idx]
            means[a:b] = np.nanmean(_loo_rho(S[idx]), axis=1)
        lo, hi = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
        ci, sem = Interval(float(lo), float(hi)), float(means.std(ddof=1)) if n_boot > 1 else float("nan")
    prov = {"n_boot": n_boot, "seed": seed, "confidence": confidence,
            "method": "leave-one-out: each annotator vs the mean of the others, averaged", **dict(provenance or {})}
    return AnnotatorAgreement(float(np.nanmean(per)), ci, sem, per, int(S.shape[0]), int(S.shape[1]), prov)
