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

from semanscope_nb.errors import DatasetError, EmbeddingError
from semanscope_nb.provenance import json_ready

TIER_LABELS = ("great", "good", "non-aligned")
MAX_TUPLES_PER_ROW = 100_000
"""Largest number of translation tuples one concept row may expand to (product of its alternatives per language).

The Euclidean inter spread enumerates every tuple (about 0.1-0.3 s per 100,000
tuples); the paper's own files stay below 130.  Pass ``max_tuples_per_row`` to
override it (None: no limit).
"""
COLLAPSE_DISTANCE = 1e-6  # paper App. A.6: max pairwise embedding distance below this = collapsed
ROUNDING_FLOOR = 1e-12  # D_intra + D_inter below this (cosine; Euclidean in units of the largest coordinate) = zero
BOOT_METHODS = {"percentile": "percentile", "basic": "basic", "bca": "BCa"}


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
    note: str = ""  # why the SA is undefined, or why the interval is not in [0, 1] / misses the point estimate

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
                ci=(num(x["ci"][0]), num(x["ci"][1])), boot_mean=num(x["boot_mean"]), note=str(x.get("note") or ""),
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


def _pow2_exponent(maxabs: Any) -> Any:
    """e with ``maxabs = m * 2**e``, 0.5 <= m < 1 (0 for 0): ``x / 2**e`` lies in (-1, 1) and is exact."""
    return np.frexp(maxabs)[1]


def _unit_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit vectors, norms) of the rows of ``x``, overflow- and underflow-safe.

    Each row is divided by a power of two near its largest coordinate first
    (exact), so no raw coordinate is squared; for ordinary magnitudes the result
    is bit-identical to ``x / ||x||``.  Zero rows give NaN units and norm 0.
    """
    e = _pow2_exponent(np.abs(x).max(axis=1))
    xs = np.ldexp(x, -e[:, None])
    n = np.sqrt(_rowsq(xs))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return xs / n[:, None], np.ldexp(n, e)


def _check_vectors(languages: Sequence[str], vectors: Sequence[np.ndarray], words=None) -> None:
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

    Magnitudes: Euclidean work runs on the vectors divided by ``scale`` (a power
    of two near the largest coordinate, so exact), and unit vectors come from
    :func:`_unit_rows`; ``centre``, ``norms``, ``row_euc`` and :meth:`spreads`
    are in the vectors' own units, ``sqn_c`` and ``row_euc_scaled`` in units of
    ``scale``.
    """

    def __init__(self, aw: AlignedWords, *, block: int = 8192, stack_limit: int = 4_000_000) -> None:
        self.aw = aw
        self.L = len(aw.languages)
        self.K = self.L * (self.L - 1) / 2
        self.block = block
        self.R = aw.n_rows
        d = aw.vectors[0].shape[1]
        total = sum(v.shape[0] for v in aw.vectors)
        maxabs = 0.0
        for v in aw.vectors:
            for a, b in _chunks(v.shape[0], block):
                maxabs = max(maxabs, float(np.abs(np.asarray(v[a:b], dtype=np.float64)).max()))
        self.exponent = int(_pow2_exponent(maxabs))
        self.scale = math.ldexp(1.0, self.exponent)
        centre = np.zeros(d)
        for v in aw.vectors:
            for a, b in _chunks(v.shape[0], block):
                centre += self._scaled(v[a:b]).sum(axis=0)
        # Euclidean sums are translation-invariant; centring avoids cancellation
        self.centre_scaled = centre / total
        self.centre = np.ldexp(self.centre_scaled, self.exponent)
        self.norms, self.sqn_c = [], []
        for v in aw.vectors:
            n = np.empty(v.shape[0])
            q = np.empty(v.shape[0])
            for a, b in _chunks(v.shape[0], block):
                x = np.asarray(v[a:b], dtype=np.float64)
                n[a:b] = _unit_rows(x)[1]
                q[a:b] = _rowsq(self._scaled(x) - self.centre_scaled)
            self.norms.append(n)
            self.sqn_c.append(q)
        self.identity = [
            inc.shape[0] == inc.shape[1] and inc.nnz == inc.shape[0] and (inc.indices == np.arange(inc.shape[0])).all()
            for inc in aw.incidence
        ]
        self.alternatives = np.stack([np.diff(inc.indptr) for inc in aw.incidence])  # (L, R)
        self.tuples = self.alternatives.astype(np.float64).prod(axis=0)  # T_r (float: no int64 wrap-around)
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
                m[:, :d] = _unit_rows(x)[0]
                np.subtract(self._scaled(x), self.centre_scaled, out=m[:, d:])
                self.stacked.append(m)
            else:
                self.stacked.append(None)
        self.row_cos, self.row_euc_scaled = self._row_sums()
        with np.errstate(over="ignore"):
            self.row_euc = np.ldexp(self.row_euc_scaled, self.exponent)

    def _scaled(self, x: Any) -> np.ndarray:
        return np.ldexp(np.asarray(x, dtype=np.float64), -self.exponent)

    # -- rows -----------------------------------------------------------------
    def _unit(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx, : self.centre.size]
        return _unit_rows(np.asarray(self.aw.vectors[lang][idx], dtype=np.float64))[0]

    def _centred(self, lang: int, idx: np.ndarray | slice) -> np.ndarray:
        """Centred vectors in units of ``scale``."""
        if self.stacked[lang] is not None:
            return self.stacked[lang][idx, self.centre.size :]
        return self._scaled(self.aw.vectors[lang][idx]) - self.centre_scaled

    def _row_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Sum over each row's expanded tuples of the tuple's cosine / RMS-Euclidean (scaled) distance."""
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
            row_cos[a:b] = self.tuples[a:b] * np.maximum(1.0 - pair_dots / K, 0.0)  # a distance is >= 0
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
        """sqrt(mean over language pairs of ||e_i - e_j||^2) for each tuple (units of ``scale``)."""
        total = 0.0
        sumsq = 0.0
        for lang, idx in enumerate(word_idx):
            total = total + self._centred(lang, idx)
            sumsq = sumsq + self.sqn_c[lang][idx]
        pair_sq = self.L * sumsq - _rowsq(total)  # sum_{i<j} ||e_i - e_j||^2
        return np.sqrt(np.maximum(pair_sq, 0.0) / self.K)

    # -- spreads for row weights ------------------------------------------------
    def spreads(self, counts: np.ndarray, *, scaled: bool = False) -> dict[str, np.ndarray]:
        """Cosine/Euclidean intra and inter spreads for row-count vectors ``counts`` (B x R).

        Euclidean values are in the vectors' units, or in units of ``scale``
        with ``scaled=True`` (what ratios should use: nothing can overflow).
        A resample whose words in one language are all one word has an
        undefined intra spread (NaN).
        """
        counts = np.asarray(counts, dtype=np.float64)
        B = counts.shape[0]
        tuples = counts @ self.tuples
        inter_cos = (counts @ self.row_cos) / tuples
        inter_euc = (counts @ self.row_euc_scaled) / tuples
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
                    s_unit += Wb @ _unit_rows(x)[0]
                    s_cent += Wb @ (self._scaled(x) - self.centre_scaled)
            w_tot = W.sum(axis=1)
            pairs = w_tot**2 - _rowsq(W)  # sum_{a != b} w_a w_b (0: one word only -> undefined)
            with np.errstate(invalid="ignore", divide="ignore"):
                intra_cos += np.maximum(w_tot**2 - _rowsq(s_unit), 0.0) / pairs
                msq = 2.0 * (w_tot * (W @ self.sqn_c[lang]) - _rowsq(s_cent)) / pairs
            intra_euc += np.sqrt(np.maximum(msq, 0.0))  # NaN (undefined) stays NaN
        intra_euc = intra_euc / self.L
        if not scaled:
            with np.errstate(over="ignore"):
                intra_euc = np.ldexp(intra_euc, self.exponent)
                inter_euc = np.ldexp(inter_euc, self.exponent)
        return {
            "intra_cos": intra_cos / self.L,
            "inter_cos": inter_cos,
            "intra_euc": intra_euc,
            "inter_euc": inter_euc,
        }


# --------------------------------------------------------------------------- public API


def _rows_to_counts(idx: np.ndarray, n_rows: int) -> np.ndarray:
    """Bootstrap index matrix (B x R) -> row-count matrix (B x R)."""
    idx = np.atleast_2d(np.asarray(idx, dtype=np.int64))
    B = idx.shape[0]
    flat = (idx + n_rows * np.arange(B)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n_rows).reshape(B, n_rows).astype(np.float64)


def _max_pairwise_distance(spreads: _Spreads, aw: AlignedWords) -> float:
    """The largest distance between any two vectors (exact, in blocks; used only for nearly collapsed spaces)."""
    from scipy.spatial.distance import cdist

    allv = np.vstack([spreads._scaled(v) for v in aw.vectors])
    best = 0.0
    for a, b in _chunks(allv.shape[0], 2048):
        best = max(best, float(cdist(allv[a:b], allv).max()))
    return best * spreads.scale


def _diagnose(
    spreads: _Spreads,
    aw: AlignedWords,
    zero: dict[str, int],
    dropped: list[str],
    eu_intra: float,
    cos_ci: tuple[float, float],
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


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


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
    integral_float = isinstance(n_boot, (float, np.floating)) and math.isfinite(n_boot) and float(n_boot).is_integer()
    if not (_is_int(n_boot) or integral_float) or n_boot < 0 or n_boot == 1:
        raise ValueError(
            f"n_boot must be 0 (no bootstrap) or an integer >= 2 (bootstrap resamples; the standard error "
            f"needs two), got {n_boot!r}"
        )
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer (it seeds numpy's default_rng), got {seed!r}")
    if (
        isinstance(confidence, (bool, np.bool_))
        or not isinstance(confidence, (int, float, np.integer, np.floating))
        or not 0 < confidence < 1
    ):
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95, got {confidence!r}")
    if not isinstance(thresholds, TierThresholds):
        raise TypeError(f"thresholds must be a TierThresholds, got {type(thresholds).__name__}")
    if batch is not None and (not _is_int(batch) or batch < 1):
        raise ValueError(f"batch must be None or a positive integer (resamples per vectorised call), got {batch!r}")
    if not isinstance(method, str) or method.lower() not in BOOT_METHODS:
        raise ValueError(f"method must be 'percentile', 'basic' or 'BCa', got {method!r}")
    if on_zero not in ("error", "drop"):
        raise ValueError(f"on_zero must be 'error' or 'drop', got {on_zero!r}")
    if not _is_int(block) or block < 1:
        raise ValueError(f"block must be a positive integer (rows read at a time), got {block!r}")
    if max_tuples_per_row is not None and (not _is_int(max_tuples_per_row) or max_tuples_per_row < 1):
        raise ValueError(f"max_tuples_per_row must be None or a positive integer, got {max_tuples_per_row!r}")
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
    dist: np.ndarray, point: float, res: Any, k: int, method: str, confidence: float, metric: str
) -> tuple[float, float, tuple[float, float], list[str]]:
    """(bootstrap mean, std, interval, notes) of statistic ``k``: in [0, 1], containing the point, or a note says why not."""
    notes: list[str] = []
    finite = dist[np.isfinite(dist)]
    B = dist.size
    if finite.size < 2:
        return (math.nan, math.nan, (math.nan, math.nan), [
            f"{metric}: only {finite.size} of {B} bootstrap resamples have a defined SA; no interval"
        ])
    mean, sd = float(finite.mean()), float(np.std(finite, ddof=1))
    lo, hi = float(res.confidence_interval.low[k]), float(res.confidence_interval.high[k])
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
    return mean, sd, (lo, hi), notes


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
) -> SAResult:
    """SA of aligned word vectors with alternatives (see :class:`AlignedWords`).

    Every option is checked before any work, and so is the size of each row's
    Cartesian product of alternatives (at most ``max_tuples_per_row``, default
    :data:`MAX_TUPLES_PER_ROW`; None = no limit).  ``n_boot=0``: no bootstrap;
    otherwise at least 2.  ``method``: 'percentile', 'basic' or 'BCa'.
    """
    n_boot, seed, confidence, method = _check_options(
        n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, batch=batch, method=method,
        on_zero=on_zero, block=block, max_tuples_per_row=max_tuples_per_row,
    )
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
    _check_vectors(aw.languages, aw.vectors, aw.words)
    aw, zero, dropped = _drop_zero_rows(aw, on_zero)
    R = aw.n_rows
    if R < 2:
        raise EmbeddingError(f"need at least 2 concept rows, got {R}")
    for k, (lang, v) in enumerate(zip(aw.languages, aw.vectors)):
        if v.shape[0] < 2:
            word = f" ({aw.words[k][0]!r})" if aw.words else ""
            raise EmbeddingError(
                f"language '{lang}' has only 1 unique word{word} across {R} concepts: its intra spread (the mean "
                "distance over pairs of distinct words) is undefined, so SA is too; it needs at least 2 distinct words"
            )
    if n_boot and R < 3:
        raise EmbeddingError(f"bootstrap needs at least 3 concept rows, got {R} (or pass n_boot=0)")
    spreads = _Spreads(aw, block=block)
    point = spreads.spreads(np.ones((1, R)), scaled=True)
    cos = (float(point["intra_cos"][0]), float(point["inter_cos"][0]))
    euc_s = (float(point["intra_euc"][0]), float(point["inter_euc"][0]))
    with np.errstate(over="ignore"):
        euc = (math.ldexp(euc_s[0], spreads.exponent), math.ldexp(euc_s[1], spreads.exponent))
    sa = {
        "cos": float(_sa_or_nan(np.array(cos[0]), np.array(cos[1]), ROUNDING_FLOOR)),
        "euc": float(_sa_or_nan(np.array(euc_s[0]), np.array(euc_s[1]), ROUNDING_FLOOR)),
    }
    names = {"cos": "cosine", "euc": "euclidean"}
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

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        """SA (cosine, Euclidean) of each resample: shape (2,) for one index vector, (2, B) for B of them."""
        idx = np.asarray(idx)
        s = spreads.spreads(_rows_to_counts(idx, R), scaled=True)
        out = np.stack([
            _sa_or_nan(s["intra_cos"], s["inter_cos"], ROUNDING_FLOOR),
            _sa_or_nan(s["intra_euc"], s["inter_euc"], ROUNDING_FLOOR),
        ])
        return out[:, 0] if idx.ndim == 1 else out

    nan_boot = (math.nan, math.nan, (math.nan, math.nan))
    boot = {"cos": nan_boot, "euc": nan_boot}
    defined = [key for key in ("cos", "euc") if not math.isnan(sa[key])]
    if n_boot and defined:
        if batch is None:
            batch = int(max(1, min(n_boot, 32_000_000 // (R + 2 * spreads.centre.size))))
        import scipy.stats  # here, not at import time: it costs ~0.6 s of package start-up
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            res = scipy.stats.bootstrap(
                (np.arange(R),),
                statistic,
                n_resamples=n_boot,
                batch=batch,
                vectorized=True,
                confidence_level=confidence,
                method=method,
                rng=np.random.default_rng(seed),
            )
        dist = np.asarray(res.bootstrap_distribution)
        for k, key in enumerate(("cos", "euc")):
            if key not in defined:
                continue
            mean, sd, ci, extra = _interval(dist[k], sa[key], res, k, method, confidence, names[key])
            boot[key] = (mean, sd, ci)
            notes[key].extend(extra)
    elif n_boot:
        notes["cos"].append("no bootstrap: both SAs are undefined")
    with np.errstate(over="ignore"):
        inter_euc_rows = spreads.row_euc / spreads.tuples
    diag = _diagnose(spreads, aw, zero, dropped, euc[0], boot["cos"][2], extra_notes=notes["cos"] + notes["euc"])
    return SAResult(
        cosine=DistanceScores(sa["cos"], cos[0], cos[1], boot["cos"][1], boot["cos"][2], boot["cos"][0], "; ".join(notes["cos"])),
        euclidean=DistanceScores(sa["euc"], euc[0], euc[1], boot["euc"][1], boot["euc"][2], boot["euc"][0], "; ".join(notes["euc"])),
        thresholds=thresholds,
        languages=aw.languages,
        n_concepts=R,
        n_tuples=int(spreads.tuples.sum()),
        n_words={lang: int(v.shape[0]) for lang, v in zip(aw.languages, aw.vectors)},
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        concept_labels=list(aw.labels),
        concept_inter_cosine=spreads.row_cos / spreads.tuples,
        concept_inter_euclidean=inter_euc_rows,
        diagnostics=diag,
        provenance={
            "parameters": {
                "n_boot": n_boot,
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
    ``n_boot`` times with ``seed`` (``n_boot=0``: none); ``.cosine.sem`` is the
    bootstrap standard deviation and ``.cosine.ci`` the ``confidence`` interval
    (``method``: 'percentile', 'basic' or 'BCa').  Any magnitude gives the same
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
