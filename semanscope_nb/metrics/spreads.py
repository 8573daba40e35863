"""The parts of Semantic Affinity: D_intra, D_inter and their ratio, vectorised for any row weights.

:func:`affinity_ratio` is the SA formula (paper eq. 3).  :class:`AlignedWords`
holds unique word vectors per language and which concept rows hold them (``|``
alternatives).  :class:`_Spreads` turns them into cosine and Euclidean intra and
inter spreads for any row-count vectors (the point estimate is all ones; a
bootstrap resample is a count vector), without enumerating pairs; see
:mod:`semanscope_nb.metrics.affinity` for the algebra.

Layer: metrics (its lowest room).  Imports numpy, scipy and :mod:`semanscope_nb.errors`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> e = np.eye(3); eye = sp.identity(3, format="csr")
>>> aw = AlignedWords(("en", "de"), (e, e), (eye, eye), ("a", "b", "c"))
>>> s = _Spreads(aw).spreads(np.ones((1, 3)))
>>> float(affinity_ratio(s["intra_cos"][0], s["inter_cos"][0]))
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from semanscope_nb.errors import EmbeddingError


def affinity_ratio(intra: Any, inter: Any) -> Any:
    """Semantic Affinity: ``D_intra / (D_intra + D_inter)`` (paper eq. 3; arrays broadcast)."""
    return intra / (intra + inter)


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


def _rows_to_counts(idx: np.ndarray, n_rows: int) -> np.ndarray:
    """Bootstrap index matrix (B x R) -> row-count matrix (B x R)."""
    idx = np.atleast_2d(np.asarray(idx, dtype=np.int64))
    B = idx.shape[0]
    flat = (idx + n_rows * np.arange(B)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n_rows).reshape(B, n_rows).astype(np.float64)
