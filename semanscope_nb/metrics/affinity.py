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

import math
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.provenance import json_ready

TIER_LABELS = ("great", "good", "non-aligned")


def affinity_ratio(intra: Any, inter: Any) -> Any:
    """Semantic Affinity: ``D_intra / (D_intra + D_inter)`` (paper eq. 3; arrays broadcast)."""
    return intra / (intra + inter)


@dataclass(frozen=True)
class TierThresholds:
    """SA tier cut-offs: ``sa >= great`` -> great, ``sa >= good`` -> good, else non-aligned.

    >>> TierThresholds().classify(0.55)
    'good'
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
        return "great" if sa >= self.great else "good" if sa >= self.good else "non-aligned"


DEFAULT_TIERS = TierThresholds()


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DistanceScores:
    """SA and its parts under one distance (cosine or Euclidean)."""

    sa: float
    intra: float
    inter: float
    sem: float  # std of the bootstrap distribution (the paper's "+-")
    ci: tuple[float, float]
    boot_mean: float

    @property
    def inter_intra_ratio(self) -> float:
        """D_inter / D_intra: > 1 means translations are farther apart than random words."""
        return self.inter / self.intra if self.intra else math.inf


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
class SAResult:
    """Semantic Affinity of one embedding space on one set of concepts."""

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

    @property
    def tier(self) -> str:
        """Tier of the cosine SA under this result's thresholds."""
        return self.thresholds.classify(self.cosine.sa)

    def with_thresholds(self, thresholds: TierThresholds) -> "SAResult":
        """The same scores classified with other tier thresholds (nothing is recomputed)."""
        return replace(self, thresholds=thresholds)

    def with_provenance(self, **extra: Any) -> "SAResult":
        """A copy whose provenance also holds ``extra``."""
        return replace(self, provenance={**self.provenance, **extra})

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
            "intra_cosine": self.cosine.intra,
            "inter_cosine": self.cosine.inter,
            "intra_euclidean": self.euclidean.intra,
            "inter_euclidean": self.euclidean.inter,
            "n_concepts": self.n_concepts,
            "collapsed": self.diagnostics.collapsed,
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
        }
        return json_ready(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SAResult":
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        def scores(x: Mapping[str, Any]) -> DistanceScores:
            return DistanceScores(
                sa=num(x["sa"]), intra=num(x["intra"]), inter=num(x["inter"]), sem=num(x["sem"]),
                ci=(num(x["ci"][0]), num(x["ci"][1])), boot_mean=num(x["boot_mean"]),
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
        )

    def to_frame(self) -> pd.DataFrame:
        """One-row DataFrame of :meth:`summary` plus languages and provenance keys."""
        row = {"languages": ",".join(self.languages), **self.summary()}
        for key in ("model", "dataset"):
            if key in self.provenance:
                row[key] = self.provenance[key]
        return pd.DataFrame([row])


# --------------------------------------------------------------------------- preparation


@dataclass(frozen=True)
class AlignedWords:
    """Unique word vectors per language plus which rows (concepts) hold which words.

    ``incidence[l]`` is an (R x n_l) 0/1 sparse matrix: row r holds word k of
    language l as one of its alternatives.  Arrays without alternatives use the
    identity (one word per row).
    """

    languages: tuple[str, ...]
    vectors: tuple[np.ndarray, ...]
    incidence: tuple[sp.csr_matrix, ...]
    labels: tuple[str, ...]
    groups: tuple[str | None, ...] | None = None
    words: tuple[tuple[str, ...], ...] | None = None

    @property
    def n_rows(self) -> int:
        return self.incidence[0].shape[0]


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for a in range(0, n, size):
        yield a, min(n, a + size)


def _rowsq(x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, x)


def _check_vectors(languages: Sequence[str], vectors: Sequence[np.ndarray], words=None) -> None:
    dims = {lang: (v.shape[1] if v.ndim == 2 else None) for lang, v in zip(languages, vectors)}
    for lang, v in zip(languages, vectors):
        if v.ndim != 2:
            raise EmbeddingError(f"embeddings['{lang}'] must be a 2-D array (rows x dims), got shape {v.shape}")
        if v.shape[0] == 0:
            raise EmbeddingError(f"embeddings['{lang}'] is empty (0 rows)")
    if len(set(dims.values())) > 1:
        raise EmbeddingError(f"mixed embedding dimensions across languages: {dims}")
    for k, (lang, v) in enumerate(zip(languages, vectors)):
        bad_rows = np.flatnonzero(~np.isfinite(v).all(axis=1))
        if bad_rows.size:
            what = [words[k][i] for i in bad_rows[:5]] if words is not None else bad_rows[:5].tolist()
            raise EmbeddingError(
                f"embeddings['{lang}'] has NaN or inf values in {bad_rows.size} row(s), e.g. {what}"
            )


class _Spreads:
    """Per-row inter sums and weighted intra spreads of an :class:`AlignedWords`.

    Holds no copy of the embeddings beyond per-word norms; vectors are read in
    blocks of ``block`` rows, so memory stays O(block x dims).
    """

    def __init__(self, aw: AlignedWords, *, block: int = 8192, stack_limit: int = 4_000_000) -> None:
        self.aw = aw
        self.L = len(aw.languages)
        self.K = self.L * (self.L - 1) / 2
        self.block = block
        self.R = aw.n_rows
        d = aw.vectors[0].shape[1]
        total = sum(v.shape[0] for v in aw.vectors)
        centre = np.zeros(d)
        for v in aw.vectors:
            for a, b in _chunks(v.shape[0], block):
                centre += np.asarray(v[a:b], dtype=np.float64).sum(axis=0)
        self.centre = centre / total  # Euclidean sums are translation-invariant; centring avoids cancellation
        self.norms, self.sqn_c = [], []
        for v in aw.vectors:
            n = np.empty(v.shape[0])
            q = np.empty(v.shape[0])
            for a, b in _chunks(v.shape[0], block):
                x = np.asarray(v[a:b], dtype=np.float64)
                n[a:b] = np.sqrt(_rowsq(x))
                xc = x - self.centre
                q[a:b] = _rowsq(xc)
            self.norms.append(n)
            self.sqn_c.append(q)
        self.identity = [
            inc.shape[0] == inc.shape[1] and inc.nnz == inc.shape[0] and (inc.indices == np.arange(inc.shape[0])).all()
            for inc in aw.incidence
        ]
        self.alternatives = np.stack([np.diff(inc.indptr) for inc in aw.incidence])  # (L, R)
        self.tuples = self.alternatives.prod(axis=0).astype(np.float64)  # T_r
        # intra weights: word k gets sum_r c_r A[r,k] / colsum_k
        self.word_weight_map = []
        for inc, ident in zip(aw.incidence, self.identity):
            if ident:
                self.word_weight_map.append(None)
            else:
                colsum = np.asarray(inc.sum(axis=0)).ravel()
                self.word_weight_map.append(sp.csr_matrix(inc.multiply(1.0 / colsum[None, :])))
        # Small vocabularies (the bootstrap case): keep [unit | centred] per language, built in place, so
        # each resample batch costs one matrix product per language; large ones stream in blocks.
        self.stacked: list[np.ndarray | None] = []
        for lang, v in enumerate(aw.vectors):
            if v.shape[0] * d <= stack_limit:
                x = np.asarray(v, dtype=np.float64)
                m = np.empty((x.shape[0], 2 * d))
                np.divide(x, self.norms[lang][:, None], out=m[:, :d])
                np.subtract(x, self.centre, out=m[:, d:])
                self.stacked.append(m)
            else:
                self.stacked.append(None)
        self.row_cos, self.row_euc = self._row_sums()

    # -- rows -----------------------------------------------------------------
    def _unit(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx, : self.centre.size]
        x = np.asarray(self.aw.vectors[lang][idx], dtype=np.float64)
        return x / self.norms[lang][idx, None]

    def _centred(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx, self.centre.size :]
        return np.asarray(self.aw.vectors[lang][idx], dtype=np.float64) - self.centre

    def _row_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Sum over each row's expanded tuples of the tuple's cosine / RMS-Euclidean distance."""
        R, L, K = self.R, self.L, self.K
        row_cos = np.empty(R)
        for a, b in _chunks(R, self.block):
            total = 0.0
            sq_each = np.zeros(b - a)
            for lang in range(L):
                inc = self.aw.incidence[lang][a:b]
                if self.identity[lang]:
                    ubar = self._unit(lang, slice(a, b))
                else:
                    cols = np.unique(inc.indices)
                    mean_rows = sp.diags(1.0 / np.diff(inc.indptr)) @ inc[:, cols]
                    ubar = mean_rows @ self._unit(lang, cols)
                total = total + ubar
                sq_each += _rowsq(ubar)
            pair_dots = (_rowsq(total) - sq_each) / 2.0  # sum_{l<m} ubar_l . ubar_m
            row_cos[a:b] = self.tuples[a:b] * (1.0 - pair_dots / K)
        return row_cos, self._row_euclid()

    def _row_euclid(self) -> np.ndarray:
        R, L = self.R, self.L
        out = np.zeros(R)
        first_word = [inc.indices[inc.indptr[:-1]] for inc in self.aw.incidence]
        single = np.flatnonzero(self.tuples == 1)
        for a, b in _chunks(single.size, self.block):
            rows = single[a:b]
            if all(self.identity) and single.size == R:  # one word per row everywhere: contiguous slices
                out[a:b] = self._tuple_rms([slice(a, b)] * L)
            else:
                out[rows] = self._tuple_rms([w[rows] for w in first_word])
        for r in np.flatnonzero(self.tuples > 1):  # loop over rows only; tuples in blocks
            alts = [inc.indices[inc.indptr[r] : inc.indptr[r + 1]] for inc in self.aw.incidence]
            shape = tuple(len(x) for x in alts)
            for a, b in _chunks(int(self.tuples[r]), self.block):
                pos = np.unravel_index(np.arange(a, b), shape)
                out[r] += self._tuple_rms([alts[lang][pos[lang]] for lang in range(L)]).sum()
        return out

    def _tuple_rms(self, word_idx: list[np.ndarray]) -> np.ndarray:
        """sqrt(mean over language pairs of ||e_i - e_j||^2) for each tuple."""
        total = 0.0
        sumsq = 0.0
        for lang, idx in enumerate(word_idx):
            total = total + self._centred(lang, idx)
            sumsq = sumsq + self.sqn_c[lang][idx]
        pair_sq = self.L * sumsq - _rowsq(total)  # sum_{i<j} ||e_i - e_j||^2
        return np.sqrt(np.maximum(pair_sq, 0.0) / self.K)

    # -- spreads for row weights ------------------------------------------------
    def spreads(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Cosine/Euclidean intra and inter spreads for row-count vectors ``counts`` (B x R)."""
        counts = np.asarray(counts, dtype=np.float64)
        B = counts.shape[0]
        tuples = counts @ self.tuples
        inter_cos = (counts @ self.row_cos) / tuples
        inter_euc = (counts @ self.row_euc) / tuples
        intra_cos = np.zeros(B)
        intra_euc = np.zeros(B)
        d = self.centre.size
        for lang in range(self.L):
            wmap = self.word_weight_map[lang]
            W = counts if wmap is None else np.asarray((wmap.T @ counts.T).T)
            n = W.shape[1]
            if self.stacked[lang] is not None:
                both = W @ self.stacked[lang]
                s_unit, s_cent = both[:, :d], both[:, d:]
            else:
                s_unit = np.zeros((B, d))
                s_cent = np.zeros((B, d))
                for a, b in _chunks(n, self.block):
                    x = np.asarray(self.aw.vectors[lang][a:b], dtype=np.float64)
                    Wb = W[:, a:b]
                    s_unit += Wb @ (x / self.norms[lang][a:b, None])
                    s_cent += Wb @ (x - self.centre)
            w_tot = W.sum(axis=1)
            pairs = w_tot**2 - _rowsq(W)  # sum_{a != b} w_a w_b
            intra_cos += (w_tot**2 - _rowsq(s_unit)) / pairs
            msq = 2.0 * (w_tot * (W @ self.sqn_c[lang]) - _rowsq(s_cent)) / pairs
            intra_euc += np.sqrt(np.maximum(msq, 0.0))
        return {
            "intra_cos": intra_cos / self.L,
            "inter_cos": inter_cos,
            "intra_euc": intra_euc / self.L,
            "inter_euc": inter_euc,
        }


# --------------------------------------------------------------------------- public API


def _rows_to_counts(idx: np.ndarray, n_rows: int) -> np.ndarray:
    """Bootstrap index matrix (B x R) -> row-count matrix (B x R)."""
    idx = np.atleast_2d(np.asarray(idx, dtype=np.int64))
    B = idx.shape[0]
    flat = (idx + n_rows * np.arange(B)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n_rows).reshape(B, n_rows).astype(np.float64)


def _diagnose(
    spreads: _Spreads, aw: AlignedWords, zero: dict[str, int], dropped: list[str], eu_intra: float, cos_ci: tuple[float, float]
) -> Diagnostics:
    r_max = 0.0
    for lang, v in enumerate(aw.vectors):
        r_max = max(r_max, float(np.sqrt(spreads.sqn_c[lang].max())))
    collapsed = 2 * r_max < 1e-6
    if not collapsed and r_max < 1e-6:  # ambiguous band: compute the diameter exactly
        from scipy.spatial.distance import pdist

        allv = np.vstack([np.asarray(v, dtype=np.float64) for v in aw.vectors])
        collapsed = bool(pdist(allv).max() < 1e-6)
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
        notes.append("embeddings collapsed: max pairwise distance < 1e-6; SA is meaningless")
    if dropped:
        notes.append(f"{len(dropped)} concept(s) dropped because a word embedded to the zero vector")
    if cos_ci[0] <= 0.5 <= cos_ci[1]:
        notes.append(
            "the cosine SA interval contains 0.5, the chance level: translations are no closer than random "
            "word pairs (a seeded random-vector model scores 0.50)"
        )
    return Diagnostics(
        collapsed=bool(collapsed),
        max_distance_from_centre=r_max,
        mean_norm=mean_norm,
        zero_vectors=zero,
        dropped_concepts=dropped,
        magnitude_band=band,
        notes=notes,
    )


def _drop_zero_rows(aw: AlignedWords, on_zero: str) -> tuple[AlignedWords, dict[str, int], list[str]]:
    zero = {}
    bad_rows = np.zeros(aw.n_rows, dtype=bool)
    for k, (lang, v, inc) in enumerate(zip(aw.languages, aw.vectors, aw.incidence)):
        z = np.flatnonzero(~np.any(np.asarray(v) != 0, axis=1))
        zero[lang] = int(z.size)
        if z.size:
            if on_zero == "error":
                what = [aw.words[k][i] for i in z[:5]] if aw.words else z[:5].tolist()
                raise EmbeddingError(
                    f"language '{lang}': {z.size} all-zero vector(s) (cosine undefined; e.g. out-of-vocabulary "
                    f"words): {what}. Pass on_zero='drop' to drop the concepts that hold them."
                )
            bad_rows |= np.asarray(inc[:, z].sum(axis=1)).ravel() > 0
    if not bad_rows.any():
        return aw, zero, []
    keep = np.flatnonzero(~bad_rows)
    dropped = [aw.labels[r] for r in np.flatnonzero(bad_rows)]
    if keep.size < 2:
        raise EmbeddingError(f"only {keep.size} concept(s) left after dropping zero vectors; need at least 2")
    vectors, incidence, words = [], [], []
    for k, (v, inc) in enumerate(zip(aw.vectors, aw.incidence)):
        sub = inc[keep]
        used = np.flatnonzero(np.asarray(sub.sum(axis=0)).ravel() > 0)
        vectors.append(np.asarray(v)[used])
        incidence.append(sp.csr_matrix(sub[:, used]))
        if aw.words:
            words.append(tuple(aw.words[k][i] for i in used))
    reduced = AlignedWords(
        languages=aw.languages,
        vectors=tuple(vectors),
        incidence=tuple(incidence),
        labels=tuple(aw.labels[r] for r in keep),
        groups=None if aw.groups is None else tuple(aw.groups[r] for r in keep),
        words=tuple(words) if aw.words else None,
    )
    return reduced, zero, dropped


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
) -> SAResult:
    """SA of aligned word vectors with alternatives (see :class:`AlignedWords`)."""
    if len(aw.languages) < 2:
        raise EmbeddingError(f"need at least two languages, got {list(aw.languages)}")
    if len(set(aw.languages)) != len(aw.languages):
        raise EmbeddingError(f"languages repeated: {list(aw.languages)}")
    if n_boot < 0 or int(n_boot) != n_boot:
        raise ValueError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    for lang, inc in zip(aw.languages, aw.incidence):
        if inc.shape[0] != aw.n_rows:
            raise EmbeddingError(f"language '{lang}' has {inc.shape[0]} rows, expected {aw.n_rows}")
        empty = np.flatnonzero(np.diff(inc.indptr) == 0)
        if empty.size:
            raise EmbeddingError(f"language '{lang}': rows {empty[:5].tolist()} hold no word")
    _check_vectors(aw.languages, aw.vectors, aw.words)
    aw, zero, dropped = _drop_zero_rows(aw, on_zero)
    R = aw.n_rows
    if R < 2:
        raise EmbeddingError(f"need at least 2 concept rows, got {R}")
    spreads = _Spreads(aw, block=block)
    point = spreads.spreads(np.ones((1, R)))
    cos = (float(point["intra_cos"][0]), float(point["inter_cos"][0]))
    euc = (float(point["intra_euc"][0]), float(point["inter_euc"][0]))
    sa_cos, sa_euc = affinity_ratio(*cos), affinity_ratio(*euc)

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        s = spreads.spreads(_rows_to_counts(idx, R))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.stack([affinity_ratio(s["intra_cos"], s["inter_cos"]), affinity_ratio(s["intra_euc"], s["inter_euc"])])

    boot = {"cos": (math.nan, math.nan, (math.nan, math.nan)), "euc": (math.nan, math.nan, (math.nan, math.nan))}
    if n_boot:
        if R < 3:
            raise EmbeddingError(f"bootstrap needs at least 3 concept rows, got {R} (or pass n_boot=0)")
        if batch is None:
            batch = int(max(1, min(n_boot, 32_000_000 // (R + 2 * spreads.centre.size))))
        import scipy.stats  # here, not at import time: it costs ~0.6 s of package start-up
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
            res = scipy.stats.bootstrap(
                (np.arange(R),),
                statistic,
                n_resamples=int(n_boot),
                batch=batch,
                vectorized=True,
                confidence_level=confidence,
                method=method,
                rng=np.random.default_rng(seed),
            )
        dist = res.bootstrap_distribution
        for k, key in enumerate(("cos", "euc")):
            d = dist[k][np.isfinite(dist[k])]
            sd = float(np.std(d, ddof=1)) if d.size > 1 else math.nan
            lo, hi = float(res.confidence_interval.low[k]), float(res.confidence_interval.high[k])
            if sd == 0.0:  # degenerate (e.g. identical translations): the interval is the point
                lo = hi = float(d[0])
            boot[key] = (float(d.mean()) if d.size else math.nan, sd, (lo, hi))
    diag = _diagnose(spreads, aw, zero, dropped, euc[0], boot["cos"][2])
    return SAResult(
        cosine=DistanceScores(sa_cos, cos[0], cos[1], boot["cos"][1], boot["cos"][2], boot["cos"][0]),
        euclidean=DistanceScores(sa_euc, euc[0], euc[1], boot["euc"][1], boot["euc"][2], boot["euc"][0]),
        thresholds=thresholds,
        languages=aw.languages,
        n_concepts=R,
        n_tuples=int(spreads.tuples.sum()),
        n_words={lang: int(v.shape[0]) for lang, v in zip(aw.languages, aw.vectors)},
        n_boot=int(n_boot),
        seed=seed,
        confidence=confidence,
        concept_labels=list(aw.labels),
        concept_inter_cosine=spreads.row_cos / spreads.tuples,
        concept_inter_euclidean=spreads.row_euc / spreads.tuples,
        diagnostics=diag,
        provenance={
            "parameters": {
                "n_boot": int(n_boot),
                "seed": seed,
                "confidence": confidence,
                "method": method,
                "on_zero": on_zero,
                "thresholds": asdict(thresholds),
            }
        },
        concept_groups=None if aw.groups is None else list(aw.groups),
    )


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
) -> SAResult:
    """Semantic Affinity of ``embeddings``: language -> (concepts x dims) array, row i = concept i.

    Every row is one word (no alternatives; use :func:`semanscope_nb.dataset_affinity`
    for datasets with ``|`` alternatives).  The bootstrap resamples concept rows
    ``n_boot`` times with ``seed``; ``.cosine.sem`` is the bootstrap standard
    deviation and ``.cosine.ci`` the ``confidence`` percentile interval.

    >>> import numpy as np, semanscope_nb as snb
    >>> e = np.random.default_rng(1).normal(size=(30, 8))
    >>> snb.semantic_affinity({"en": e, "de": e}, n_boot=0).cosine.sa
    1.0
    """
    if not isinstance(embeddings, Mapping):
        raise TypeError("embeddings must map language -> array, e.g. {'en': E_en, 'zh': E_zh}")
    languages = tuple(embeddings)
    if len(languages) < 2:
        raise EmbeddingError(f"need at least two languages, got {list(languages)}")
    vectors = []
    for lang in languages:
        v = embeddings[lang]
        arr = v if isinstance(v, np.ndarray) and v.dtype in (np.float32, np.float64) else np.asarray(v, dtype=np.float64)
        vectors.append(arr)
    _check_vectors(languages, vectors)
    counts = {lang: v.shape[0] for lang, v in zip(languages, vectors)}
    if len(set(counts.values())) > 1:
        raise EmbeddingError(f"languages have different numbers of concept rows: {counts}")
    R = vectors[0].shape[0]
    if labels is not None and len(labels) != R:
        raise ValueError(f"labels has {len(labels)} entries, expected {R}")
    eye = sp.identity(R, format="csr", dtype=np.float64)
    aw = AlignedWords(
        languages=languages,
        vectors=tuple(vectors),
        incidence=tuple(eye for _ in languages),
        labels=tuple(labels) if labels is not None else tuple(str(i) for i in range(R)),
    )
    return affinity_of_words(
        aw, n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, batch=batch, method=method, on_zero=on_zero
    )
