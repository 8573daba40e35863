"""Artefacts that fake alignment: identical strings across languages, degenerate vectors, language offsets.

* **Surface identity.**  A concept whose strings are identical in two languages
  (names, loanwords, digits, CJK characters shared by zh and ja) maps to the same
  point under *any* model, random vectors included, so it raises SA without any
  cross-lingual knowledge.  :func:`identical_string_rows` finds them.
* **Degenerate vectors.**  Distinct words of one language that share one vector
  (a tokenizer's unknown token, a truncation) make a language look tight.
  :func:`degenerate_vector_groups` finds groups of distinct words whose unit
  vectors agree to ``tol`` (the near-tie rule of :mod:`semanscope_nb.metrics.ties`:
  pairwise, never a rounding grid).
* **Language offset.**  :func:`language_centred` removes each language's mean
  vector, which separates a constant shift between languages from failed
  translation matching (SA rises after centring when the failure is a shift).

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.affinity` only.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords, unit_rows
>>> eye = sp.identity(3, format="csr")
>>> v = np.eye(3)
>>> aw = AlignedWords(("en", "de"), (v, v), (eye, eye), ("a", "b", "c"), words=(("Paris", "dog", "3"), ("Paris", "Hund", "3")))
>>> identical_string_rows(aw).tolist()
[True, False, True]
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.memo import Memo
from semanscope_nb.metrics.spreads import SPARSE_DENSITY, SPARSE_MIN_DIMS, AlignedWords, Spreads, csr_of_dense
from semanscope_nb.metrics.row_order import concept_keys


def _norm(word: str) -> str:
    return unicodedata.normalize("NFC", word).strip()


_OPENCC: dict[str, Any] = {}


def _to_simplified(text: str) -> str:
    """Traditional -> simplified Chinese through OpenCC's 't2s' tables, or the text unchanged when OpenCC is missing."""
    if "t2s" not in _OPENCC:
        try:  # opencc-python-reimplemented: OpenCC's own conversion tables in pure Python (no C build), a core dependency
            from opencc import OpenCC

            _OPENCC["t2s"] = OpenCC("t2s")
        except Exception:  # not installed: no folding (surface_key's docstring says so)
            _OPENCC["t2s"] = None
    cc = _OPENCC["t2s"]
    return cc.convert(text) if cc is not None else text


def _is_chinese(language: str | None) -> bool:
    return bool(language) and str(language).lower().replace("_", "-").split("-")[0] in ("zh", "cmn", "yue", "lzh", "wuu")


def surface_key(word: str, language: str | None = None) -> str:
    """The form two strings must share to count as the *same surface string* across languages.

    1. Unicode NFKC (full-width letters, ligatures and compatibility forms fold to
       their plain form), surrounding space stripped;
    2. case folding (``str.casefold``: German ``Haus`` = ``haus``, ``Straße`` = ``strasse``);
    3. accents stripped from Latin letters only (``café`` = ``cafe``; a combining mark
       on a Greek, Cyrillic, Devanagari ... letter is part of the spelling and stays);
    4. for Chinese (``language`` zh, zh-TW, ...), traditional characters folded to
       simplified with OpenCC's ``t2s`` tables (``電話`` = ``电话``), when the
       ``opencc-python-reimplemented`` package is installed (a core dependency).
       Japanese kanji are not folded (shinjitai are neither form); shared characters
       between zh and ja are reported by :func:`zh_ja_shared_character_rows`.

    >>> surface_key("Haus"), surface_key("Ｃａｆé"), surface_key("Straße")
    ('haus', 'cafe', 'strasse')
    >>> surface_key("電話", "zh-TW") == surface_key("电话", "zh")
    True
    """
    if word.isascii():  # NFKC and accents change nothing in ASCII: case folding is all (the common case, fast)
        return word.strip().lower()
    text = unicodedata.normalize("NFKC", word).strip().casefold()
    decomposed = unicodedata.normalize("NFD", text)
    out = []
    base_latin = False
    for ch in decomposed:
        if unicodedata.combining(ch):
            if base_latin:
                continue  # an accent on a Latin letter
        else:
            base_latin = "LATIN" in unicodedata.name(ch, "")
        out.append(ch)
    text = unicodedata.normalize("NFC", "".join(out))
    if _is_chinese(language):
        text = _to_simplified(text)
    return text


#: :func:`surface_key` remembered per (word, language): a benchmark checks the same words once per model
_surface_key_cached = functools.lru_cache(maxsize=2**16)(surface_key)


def _row_keys(aw: AlignedWords) -> list[list[set[str]]]:
    """Per language, per row: the surface keys of the row's alternatives."""
    per_lang = []
    for lang, words, inc in zip(aw.languages, aw.words, aw.incidence):
        A = sp.csr_matrix(inc)
        keys = [_surface_key_cached(w, lang) for w in words]
        per_lang.append([{keys[k] for k in A.indices[A.indptr[r]:A.indptr[r + 1]]} for r in range(aw.n_rows)])
    return per_lang


#: the word-only artefact rows (identical strings, zh-ja shared characters) of recent data sets: they depend on the
#: words and which rows hold them, not on the vectors, and a benchmark scores every model on each data set
_WORD_ROWS = Memo(64)


def _words_key(kind: str, aw: AlignedWords) -> tuple:
    """What the word-only rows depend on: the languages, the words and the incidence (as stored)."""
    shapes = []
    for inc in aw.incidence:
        A = sp.csr_matrix(inc)
        shapes.append((A.shape, A.indptr.tobytes(), A.indices.tobytes(), A.data.tobytes()))
    return (kind, tuple(aw.languages), aw.words, tuple(shapes))


def _word_rows(kind: str, aw: AlignedWords, compute: Callable[[AlignedWords], np.ndarray]) -> np.ndarray:
    """``compute(aw)``, kept per :func:`_words_key` (a copy is returned: callers may change it)."""
    if aw.words is None:
        return compute(aw)
    key = _words_key(kind, aw)
    kept = _WORD_ROWS.get(key)
    if kept is None:
        kept = _WORD_ROWS.put(key, compute(aw))
    return kept.copy()


def identical_string_rows(aw: AlignedWords) -> np.ndarray:
    """Boolean per concept row: some alternative is the same surface string in two of the languages (:func:`surface_key`).

    Vectorised: every (row, key) occurrence of every language, deduplicated within
    the language, and a row is marked when one (row, key) pair occurs in two languages.
    Kept per data set (words and incidence), so each model of a benchmark reads it from memory.
    """
    return _word_rows("identical", aw, _identical_string_rows)


def _identical_string_rows(aw: AlignedWords) -> np.ndarray:
    out = np.zeros(aw.n_rows, dtype=bool)
    if aw.words is None:
        return out
    import pandas as pd  # hashing of (row, key) pairs: pandas' duplicated() instead of a Python loop over rows

    frames = []
    for lang, words, inc in zip(aw.languages, aw.words, aw.incidence):
        A = sp.coo_matrix(inc)
        keys = np.array([_surface_key_cached(w, lang) for w in words], dtype=object)
        f = pd.DataFrame({"row": A.row.astype(np.int64), "key": keys[A.col]}).drop_duplicates()
        frames.append(f)
    both = pd.concat(frames, ignore_index=True)
    dup = both.duplicated(["row", "key"], keep=False).to_numpy()
    out[both["row"].to_numpy()[dup]] = True
    return out


def _han(text: str) -> set[str]:
    return {ch for ch in text if "CJK UNIFIED IDEOGRAPH" in unicodedata.name(ch, "") or "CJK COMPATIBILITY IDEOGRAPH" in unicodedata.name(ch, "")}


def zh_ja_shared_character_rows(aw: AlignedWords) -> np.ndarray:
    """Boolean per concept row: a Chinese and a Japanese alternative share a Han character (after :func:`surface_key`).

    Reported, not excluded: a shared character is the CJK form of a shared spelling
    (a cognate), which the surface-form null measures; only whole identical strings
    are excluded (:func:`identical_string_rows`).  For this report each kanji is
    folded with the same traditional -> simplified table as Chinese (a kanji that is
    a traditional form, 話, then meets its simplified 话; shinjitai stay as written).

    >>> eye = sp.identity(2, format="csr"); v = np.eye(2)
    >>> aw = AlignedWords(("zh", "ja"), (v, v), (eye, eye), ("a", "b"), words=(("電話", "水"), ("電話機", "みず")))
    >>> zh_ja_shared_character_rows(aw).tolist()
    [True, False]
    """
    return _word_rows("zh-ja", aw, _zh_ja_shared_character_rows)


def _zh_ja_shared_character_rows(aw: AlignedWords) -> np.ndarray:
    out = np.zeros(aw.n_rows, dtype=bool)
    if aw.words is None:
        return out
    zh = [k for k, lang in enumerate(aw.languages) if _is_chinese(lang)]
    ja = [k for k, lang in enumerate(aw.languages) if str(lang).lower().split("-")[0] in ("ja", "jpn")]
    if not zh or not ja:
        return out
    per_lang = _row_keys(aw)
    for r in range(aw.n_rows):
        zh_chars = set().union(*(_han(w) for k in zh for w in per_lang[k][r]))
        ja_chars = {_to_simplified(c) for k in ja for w in per_lang[k][r] for c in _han(w)}
        out[r] = bool(zh_chars & ja_chars)
    return out


_PAIR_BLOCK = 65536  # candidate pairs compared at a time (bounds the temporaries to a few MB)


_ROW_BLOCK = 2048  # rows converted at a time (int64 hash words, float64 projections): temporaries of about 1 MB at 512 dims


def _unit_projections(v: np.ndarray, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(projections of the unit rows on ``directions``, row norms), streaming the rows in float64 blocks.

    Each block of :data:`_ROW_BLOCK` rows is widened to float64 (a float32 square never
    overflows there; float64 rows are first divided by their largest coordinate), its
    norms and its projections taken, and dropped: the vectors are read once and never
    copied whole.  Zero rows get norm 0 and projections 0.
    """
    n = v.shape[0]
    proj = np.empty((n, directions.shape[1]))
    norms = np.empty(n)
    for a in range(0, n, _ROW_BLOCK):
        x = np.asarray(v[a:a + _ROW_BLOCK], dtype=np.float64)
        if v.dtype != np.float32:  # float64 (or wider) input: scale first, no square leaves the normal range
            peak = np.maximum(x.max(axis=1), -x.min(axis=1))
            x = x / np.where(peak > 0, peak, 1.0)[:, None]
        else:
            peak = np.ones(x.shape[0])
        nrm = np.sqrt(np.einsum("ij,ij->i", x, x))
        safe = np.where(nrm > 0, nrm, 1.0)
        proj[a:a + _ROW_BLOCK] = (x @ directions) / safe[:, None]
        norms[a:a + _ROW_BLOCK] = nrm * peak
    return proj, norms


def _unit_of(v: np.ndarray, norms: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The unit vectors of some rows, in float64 (zero rows stay zero)."""
    x = np.asarray(v[rows], dtype=np.float64)
    if v.dtype != np.float32:
        peak = np.maximum(x.max(axis=1), -x.min(axis=1))
        x = x / np.where(peak > 0, peak, 1.0)[:, None]
    nrm = np.sqrt(np.einsum("ij,ij->i", x, x))
    return x / np.where(nrm > 0, nrm, 1.0)[:, None]


def _unit_max_diff(v: np.ndarray, norms: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max |unit(v[a]) - unit(v[b])| per pair, in blocks of pairs."""
    out = np.empty(a.size)
    for k in range(0, a.size, _ROW_BLOCK):
        out[k:k + _ROW_BLOCK] = np.abs(_unit_of(v, norms, a[k:k + _ROW_BLOCK]) - _unit_of(v, norms, b[k:k + _ROW_BLOCK])).max(axis=1)
    return out


def _exact_groups_by_projection(v: np.ndarray, proj: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """Label rows whose unit vectors are bit-identical (and all zero rows together) by their lowest row index.

    Rows with equal bits have equal projections, so only rows sharing all their
    projections are candidates; their bits are then compared row by row (a shared
    projection is not a group).  The near-pair pass catches the rest.
    """
    n = v.shape[0]
    labels = np.arange(n)
    key = np.where(zero[:, None], 0.0, proj)
    order = np.lexsort(key.T[::-1])
    ks = key[order]
    same = np.all(ks[1:] == ks[:-1], axis=1)
    if not same.any():
        return labels
    starts = np.flatnonzero(np.r_[True, ~same])
    sizes = np.diff(np.r_[starts, n])
    for a, size in zip(starts[sizes > 1], sizes[sizes > 1]):
        members = np.sort(order[a:a + size])
        if zero[members].any():  # zero rows form their own group, whatever rows share their keys
            z = members[zero[members]]
            labels[z] = z[0]
            members = members[~zero[members]]
            if members.size < 2:
                continue
        unit = _unit_of(v, None, members) + 0.0  # -0.0 -> 0.0
        _, first, inverse = np.unique(unit.view(np.int64), axis=0, return_index=True, return_inverse=True)
        labels[members] = members[first[inverse.ravel()]]
    return labels


def _norm_bound(d: int, dtype: np.dtype) -> float:
    """Relative error bound of a row norm summed in ``dtype`` over ``d`` coordinates (see :func:`_row_norms`)."""
    u = float(np.finfo(dtype).eps) / 2
    gamma = d * u / (1 - d * u)
    return gamma * (1 + 2 * gamma) / 2 + 2.0**-50


def _row_norms(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(row norms in float64, zero-row mask, relative error bound of the norms) in one pass over the vectors.

    See :func:`_norms_and_columns`, which also copies out some columns in the same pass.
    """
    return _norms_and_columns(v, None)[:3]


_PASS_BYTES = 1 << 20  # rows read at a time by the norm pass that also copies key columns (about 1 MB)


def _norms_and_columns(v: np.ndarray, cols: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float, np.ndarray | None]:
    """(row norms in float64, zero-row mask, relative error bound of the norms, columns ``cols`` of the vectors).

    One pass over the vectors: with ``cols``, blocks of about 1 MB of rows are read once
    for their squared norms and their ``cols`` entries (``len(cols) x n``, widened to
    float64: the caller divides them by the norms in place) while the block is in
    cache, instead of a second strided pass.

    The squared norms are summed in the vectors' own precision (float32 stays float32:
    no float64 copy) -- a sum of ``d`` non-negative products, in any order, blocked or
    with FMA, is within ``gamma_d = d u / (1 - d u)`` of the exact sum (Higham, 2nd ed.,
    section 3.1; ``u`` the unit roundoff of the dtype) as long as nothing over- or
    underflows.  The square root then halves that error; widening to float64 and the
    float64 square root add ``2^-52``.  So each norm is within ``rel = gamma_d (1 + 2
    gamma_d) / 2 + 2^-50`` of its exact value.  Rows whose squared norm is not a safe
    normal number (zero, subnormal-sized, overflowing or not finite) are redone in
    float64 after dividing by their largest coordinate (no square leaves the range);
    their error is far below ``rel``.
    """
    x = np.asarray(v)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    info = np.finfo(x.dtype)
    rel = _norm_bound(x.shape[1], x.dtype)
    vecdot = np.vecdot if hasattr(np, "vecdot") else functools.partial(np.einsum, "ij,ij->i")
    picked = None
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if cols is None:
            sq = vecdot(x, x)  # one pass, native precision
        else:
            n = x.shape[0]
            sq, picked = np.empty(n, dtype=x.dtype), np.empty((len(cols), n))
            step = max(64, _PASS_BYTES // max(1, x.shape[1] * x.itemsize))
            for a in range(0, n, step):
                block = x[a:a + step]
                vecdot(block, block, out=sq[a:a + step])
                for j, c in enumerate(cols):
                    picked[j, a:a + step] = block[:, c]  # the block is in cache: no second pass over the vectors
    floor, ceiling = float(info.tiny) * 2.0**40, float(info.max) / 4  # far from under-/overflow
    norms = np.sqrt(sq, dtype=np.float64)  # float64 square roots of the native sums
    if sq.size and sq.min() >= floor and sq.max() <= ceiling:  # the usual case: two reductions (a NaN fails both)
        return norms, np.zeros(norms.size, dtype=bool), rel, picked
    safe = np.isfinite(sq) & (sq >= floor) & (sq <= ceiling)
    bad = np.flatnonzero(~safe)
    if bad.size:
        xb = np.asarray(x[bad], dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            peak = np.maximum(xb.max(axis=1), -xb.min(axis=1))
            scaled = xb / np.where(peak > 0, peak, 1.0)[:, None]
            norms[bad] = np.sqrt(np.einsum("ij,ij->i", scaled, scaled)) * peak
    zero = norms == 0
    return norms, zero, rel, picked


def _key_columns(v: np.ndarray, norms: np.ndarray | None, *, count: int = 4, sample: int = 256) -> np.ndarray | None:
    """The ``count`` coordinates whose unit values spread most on a sample of rows (widest first).

    The sample is 8 runs of ``sample / 8`` consecutive rows, evenly spread (repeated rows
    when ``n`` is small do not matter).

    Only the speed of the near-pair search depends on this choice, never its result:
    a coordinate is a projection with ``|r|_1 = 1`` (a random unit direction has
    ``|r|_1`` about ``0.8 sqrt(d)``, so its tie window is that much wider at the same
    spread).  Coordinates that are zero on more than 1% of the sample's non-zero rows (sparse vectors) are
    not used -- their ties at 0 would make every row a candidate; None when fewer than
    ``count`` remain.
    """
    n, d = v.shape
    run = max(1, min(n, sample) // 8)  # 8 runs of consecutive rows spread over the array: few pages to touch
    starts = np.linspace(0, n - run, 8).astype(np.int64)
    x = np.concatenate([v[a:a + run] for a in starts])
    nx = _row_norms(x)[0] if norms is None else np.concatenate([norms[a:a + run] for a in starts])
    live = nx > 0  # zero rows are merged as exact copies, whatever the keys
    if not live.any():
        return None
    if not live.all():
        x, nx = x[live], nx[live]
    with np.errstate(invalid="ignore", over="ignore"):
        # unit rows (float64: no overflow at any input scale); the sample is a fresh float64 copy already (concatenate,
        # or the boolean selection): divided in place, the same quotients without a second array
        own = x.dtype == np.float64 and x.base is None
        x = np.divide(x, nx[:, None], out=x if own else None, dtype=np.float64)
        mean = x.mean(axis=0)
        spread = np.nan_to_num(np.einsum("ij,ij->j", x, x) / x.shape[0] - mean * mean, nan=0.0)  # variance, no temporaries
    zeros = x == 0
    limit = 0.01 * x.shape[0]
    # a column holds at most all the sample's zeros: when those are few (dense vectors) every column is kept, the
    # same columns as the per-column count gives, without counting column by column
    dense = np.arange(d) if np.count_nonzero(zeros) <= limit else np.flatnonzero(np.count_nonzero(zeros, axis=0) <= limit)
    if dense.size < count:
        return None
    return dense[np.argsort(-spread[dense], kind="stable")[:count]]


def _compare_candidates(v: np.ndarray, norms: np.ndarray, heads: np.ndarray, first: np.ndarray, count: np.ndarray,
                        rows: np.ndarray, keys_of: Callable[[np.ndarray], np.ndarray], width: np.ndarray, rel: float,
                        tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs ``(heads[i], rows[first[i] + t])``, ``0 <= t < count[i]``, that agree to ``tol``.

    A candidate is kept when every key (``keys_of(row ids)``: one row of keys per id)
    passes ``|a_k - b_k| <= width_k + rel (|a_k| + |b_k|)`` (a few numbers per pair) and
    then its unit rows agree to ``tol`` coordinate by coordinate (:func:`_unit_max_diff`);
    candidates are expanded in chunks of about :data:`_PAIR_BLOCK`.
    """
    pairs_a, pairs_b = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    some = np.flatnonzero(count)
    heads, first, count = heads[some], first[some], count[some]
    cum = np.cumsum(count)
    start = 0
    while start < some.size:
        base = cum[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(cum, base + _PAIR_BLOCK, side="right")))
        c = count[start:stop]
        a_rows = np.repeat(heads[start:stop], c)
        if a_rows.size:
            j = np.repeat(first[start:stop], c) + (np.arange(a_rows.size) - np.repeat(cum[start:stop] - c - base, c))
            b_rows = rows[j]
            ka, kb = keys_of(a_rows), keys_of(b_rows)
            near = (np.abs(ka - kb) <= width + rel * (np.abs(ka) + np.abs(kb))).all(axis=1)
            a_rows, b_rows = a_rows[near], b_rows[near]
            close = _unit_max_diff(v, norms, a_rows, b_rows) <= tol
            pairs_a.append(a_rows[close])
            pairs_b.append(b_rows[close])
        start = stop
    return np.concatenate(pairs_a), np.concatenate(pairs_b)


def _near_pairs(v: np.ndarray, norms: np.ndarray, rows: np.ndarray, keys: np.ndarray, width: np.ndarray,
                tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of ``rows`` whose unit vectors agree to ``tol``, through a sort along the first of ``keys``.

    ``keys`` (one row per entry of ``rows``) are projections of the unit rows such that
    two rows within ``tol`` differ by at most ``width_k`` on key ``k``: after sorting along
    the first key, each row's candidates are the later rows within ``width_0``.
    """
    order = np.argsort(keys[:, 0])  # any order of equal keys: the window test below is symmetric
    ps = keys[order, 0]
    open_ = np.flatnonzero(np.diff(ps) <= width[0])  # rows whose next neighbour is in the window (usually few)
    span = np.searchsorted(ps, ps[open_] + width[0], side="right") - open_ - 1
    full = np.empty((v.shape[0], keys.shape[1]))
    full[rows] = keys
    ranked = rows[order]
    return _compare_candidates(v, norms, ranked[open_], open_ + 1, span, ranked, full.__getitem__, width, 0.0, tol)


_CELL_WIDTHS = 16  # a grid cell spans this many tie windows: few rows lie within a window of the next cell
_SLOT_BITS, _CELL_BITS = 22, 20  # at most 2^22 slots and 2^20 cells: a grid key stays an exact float64 integer


def _coordinate_grid(k0: np.ndarray, k1: np.ndarray, w0: float, w1: float, *, lo: tuple[float, float],
                     hi: tuple[float, float], scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(integer grid key per row, rows near the top of their cell, the key step of one cell) of two finite keys.

    ``k0`` and ``k1`` (float64) are overwritten -- the keys are returned in ``k1``'s
    memory -- and so is ``scratch`` (8-byte items, same size, if given): fresh n-sized
    temporaries cost page faults that take longer than the arithmetic.

    Two rows to be found differ by at most ``w0`` on ``k0`` and ``w1`` on ``k1`` (``lo``,
    ``hi``: the keys' smallest and largest values).  ``k0`` is cut into slots of width
    ``s0 = max(2 w0, (hi_0 - lo_0) 2^-22)`` and ``k1`` into cells of width
    ``cw = max(16 w1, (hi_1 - lo_1) 2^-20)``; the key is ``cell * step + slot`` with
    ``step`` a power of two above the largest slot + 1, so a key orders rows by cell,
    then slot.  With ``q = (k - lo) / width`` computed in float64 (``q <= 2^22``: within
    ``2^-30`` of its exact value), two such rows have ``q`` within ``1/2 + 2^-29`` on
    ``k0`` -- slots at most 1 apart -- and within ``1/16 + 2^-31`` on ``k1``: the same
    cell, or the next one for a row whose ``q`` lies within ``w1 / cw + 2^-26`` of its
    cell's top (``near_top``; ``q - floor(q)`` is exact).  So a row's partners have a key
    within 1 of its own, or, near the top, within 1 of its own + ``step``.
    """
    s0 = max(2 * w0, (hi[0] - lo[0]) * 2.0**-_SLOT_BITS)
    cw = max(_CELL_WIDTHS * w1, (hi[1] - lo[1]) * 2.0**-_CELL_BITS)
    slot = np.subtract(k0, lo[0], out=k0)
    slot /= s0
    np.floor(slot, out=slot)
    q = np.subtract(k1, lo[1], out=k1)
    q /= cw
    cell = np.floor(q, out=np.empty_like(q) if scratch is None else scratch.view(np.float64))
    q -= cell  # exact: q and floor(q) are within a factor 2 (or floor(q) = 0)
    near_top = q >= 1 - w1 / cw - 2.0**-26
    step = 1 << (int(slot.max()) + 1).bit_length()  # > the largest slot + 1: keys + 1 never reach the next cell
    cell *= step
    cell += slot  # < 2^44: exact in float64
    key = k1.view(np.int64)  # q is spent: its memory takes the integer keys
    np.copyto(key, cell, casting="unsafe")
    return key, near_top, step


@functools.lru_cache(maxsize=2)
def _positions(m: int) -> np.ndarray:
    """``np.arange(m)``, read-only, the last two sizes kept (the next language usually has as many words)."""
    out = np.arange(m)
    out.flags.writeable = False
    return out


def _sorted_keys(key: np.ndarray, *, scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions that sort ``key``, the sorted keys) for non-negative int64 keys (``key`` is sorted in place).

    When the keys leave room, each is packed with its position into one int64 and the
    packed values are sorted (a plain sort, about half the time of an argsort); the
    order among equal keys is then by position.  ``scratch`` (int64, same size) receives
    the positions.
    """
    m = key.size
    bits = max(1, (m - 1).bit_length())
    if int(key.max()) < 1 << (62 - bits):
        packed = np.left_shift(key, bits, out=key)
        packed |= _positions(m)
        packed.sort()
        pos = np.bitwise_and(packed, (1 << bits) - 1, out=scratch)
        packed >>= bits
        return pos, packed
    pos = np.argsort(key, kind="stable")
    return pos, key[pos]


def _equal_key_rows(rows: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
    """The ``rows`` (sharing a grid key) whose ``keys`` (one row of keys per row) all equal another's; None if none.

    Bit-identical unit rows have equal keys; rows that merely share a grid cell and
    slot (a few hundred among 200,000 random rows) are left to the pairwise search.
    """
    o = np.lexsort(keys.T[::-1])
    ko = keys[o]
    dup = (ko[1:] == ko[:-1]).all(axis=1)
    if not dup.any():
        return None
    twins = np.zeros(rows.size, dtype=bool)
    twins[o[1:][dup]] = True
    twins[o[:-1][dup]] = True
    return rows[twins]


def _near_ties_by_coordinates(v: np.ndarray, tol: float,
                              norms: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray] | None:
    """(exact-group labels or None when no row has a bit-identical twin, near pairs a, b) with four coordinates of the unit rows as keys.

    **Window.**  The norms come from one pass in the vectors' own precision
    (:func:`_row_norms`, relative error ``rel``); a key is a coordinate divided by its
    row's norm in float64, within ``r1 = rel / (1 - rel) + 2^-53`` (relative) of the
    exact unit coordinate, and the float64 unit rows of the final comparison
    (:func:`_unit_of`) are within ``r2`` (the same bound in float64).  Two rows whose
    float64 unit rows agree to ``tol`` thus have, on every key,
    ``|a - b| <= tol + e (|a| + |b|)`` with ``e = (r1 + r2) / (1 - r1)`` -- so at most
    ``w_k = tol + 2 e max|a_k|`` on key ``k`` (``w_0`` is taken a little wider,
    ``(tol + 2 e max|a_0|) / (1 - e) + 2^-48``).

    **Search.**  The first two keys are cut into an integer grid (:func:`_coordinate_grid`:
    slots of at least ``2 w_0`` on key 0, cells of at least 16 ``w_1`` on key 1): two
    rows within ``tol`` have slots at most 1 apart and the same or the next cell.  The
    rows are sorted once by grid key (:func:`_sorted_keys`, integers: no rounding at
    the window ends); a row's candidates are the later rows with a key at most 1 above
    its own, and, for a row near the top of its cell, the rows of the next cell within
    one slot.  Candidates are checked on all four keys, then coordinate by coordinate.
    Rows sharing a grid key are first merged when their unit rows are bit-identical
    (many copies of one vector cost no quadratic pair list).

    None (use :func:`_near_ties_by_directions`) when the coordinates are sparse, when
    more than an eighth of the rows share their grid key, or when more than 32
    candidates per row remain.  ``norms``: the rows' norms computed in float64
    (``Spreads.norms``): no pass over the vectors at all, ``rel`` the float64 bound.
    """
    n, d = v.shape
    if norms is None:
        cols = _key_columns(v, None)  # from a sample's own norms, so that the norm pass can copy the key columns
        if cols is None:
            return None
        norms, zero, rel, picked = _norms_and_columns(v, cols[:2])
    else:
        zero, rel = norms == 0, _norm_bound(d, np.float64)
        cols = _key_columns(v, norms)
        if cols is None:
            return None
        picked = np.take(v, cols[:2], axis=1).T  # one strided read for both grid keys (np.take: faster than fancy indexing)
    safe_norms = np.where(zero, 1.0, norms) if zero.any() else norms

    def keys_of(rows: np.ndarray) -> np.ndarray:
        return np.asarray(v[rows[:, None], cols], dtype=np.float64) / safe_norms[rows, None]  # 4 numbers per row

    u64 = float(np.finfo(np.float64).eps) / 2
    g64 = d * u64 / (1 - d * u64)
    r1 = rel / (1 - rel) + 2.0**-53
    r2 = (g64 * (1 + 2 * g64) / 2 + 2.0**-50) / (1 - g64) + 2.0**-53
    e = (r1 + r2) / (1 - r1)
    wide = picked.dtype == np.float64  # the norm pass's copies: divided in place (no fresh n-sized arrays)
    k0 = np.divide(picked[0], safe_norms, dtype=np.float64, out=picked[0] if wide else None)  # float32 widens exactly
    k1 = np.divide(picked[1], safe_norms, dtype=np.float64, out=picked[1] if wide else None)
    labels = None  # no exact group yet: every row its own label
    none = np.zeros(0, dtype=np.int64)
    lo, hi = (float(k0.min()), float(k1.min())), (float(k0.max()), float(k1.max()))
    ok = None
    if not np.isfinite(lo + hi).all():  # a row with a NaN coordinate is tied with nothing
        ok = np.flatnonzero(np.isfinite(k0) & np.isfinite(k1))
        k0, k1 = k0[ok], k1[ok]
        if k0.size < 2:
            return labels, none, none
        lo, hi = (float(k0.min()), float(k1.min())), (float(k0.max()), float(k1.max()))
    w0 = (tol + 2 * e * max(-lo[0], hi[0])) / (1 - e) + 2.0**-48
    w1 = tol + 2 * e * max(-lo[1], hi[1])
    scratch = np.empty(k0.size, dtype=np.int64)
    key, near_top, step = _coordinate_grid(k0, k1, w0, w1, lo=lo, hi=hi, scratch=scratch)  # k0, k1 are scratch now
    pos, ks = _sorted_keys(key, scratch=scratch)  # ks: k1's memory, pos: scratch
    rows = pos if ok is None else ok[pos]
    gaps = np.subtract(ks[1:], ks[:-1], out=k0.view(np.int64)[:-1])  # no fresh n-sized temporaries (page faults)
    open_ = np.flatnonzero(gaps <= 1)  # sorted rows whose next row is a candidate (usually few)
    same_key = open_[gaps[open_] == 0]
    if same_key.size:
        shared = rows[np.unique(np.r_[same_key, same_key + 1])]
        copies = _equal_key_rows(shared, keys_of(shared))
    else:
        copies = None
    if copies is not None:  # rows with equal grid keys and equal keys (rare): merge those with bit-identical unit rows
        copies = np.sort(copies)
        if copies.size > max(256, n // 8):  # mostly copies: the dense directions' pass handles them
            return None
        sub = _exact_groups_by_projection(np.asarray(v[copies]), keys_of(copies), zero[copies])
        if (sub != np.arange(copies.size)).any():  # only the lowest row of each exact group is searched further
            labels = np.arange(n)
            labels[copies] = copies[sub]
            rep = labels[rows] == rows
            pos, ks, rows = pos[rep], ks[rep], rows[rep]
            open_ = np.flatnonzero(np.diff(ks) <= 1)
    span = np.searchsorted(ks, ks[open_] + 1, side="right") - open_ - 1  # later rows of the same cell within one slot
    edge = np.flatnonzero(near_top[pos])
    first = np.searchsorted(ks, ks[edge] + (step - 1), side="left")  # rows of the next cell within one slot
    across = np.searchsorted(ks, ks[edge] + (step + 1), side="right") - first
    if int(span.sum()) + int(across.sum()) > 32 * n:
        return None
    width = np.full(cols.size, float(tol))
    same = _compare_candidates(v, norms, rows[open_], open_ + 1, span, rows, keys_of, width, e, tol)
    other = _compare_candidates(v, norms, rows[edge], first, across, rows, keys_of, width, e, tol)
    return labels, np.r_[same[0], other[0]], np.r_[same[1], other[1]]


def _near_ties_by_directions(v: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exact-group labels, near pairs a, b) with projections on four fixed random unit directions ``r``.

    The fallback for vectors whose coordinates tie a lot (sparse rows): a dense direction
    separates them, at the price of a float64 pass and a wider window -- two unit rows
    within ``tol`` lie within ``tol * |r|_1`` on each direction, plus the projections'
    float64 rounding.
    """
    R = np.random.default_rng(0x5EED).standard_normal((v.shape[1], 4))
    R /= np.linalg.norm(R, axis=0)
    proj, norms = _unit_projections(v, R)  # one streamed pass: no unit copy of the vectors is kept
    zero = norms == 0
    labels = _exact_groups_by_projection(v, proj, zero)
    reps = np.flatnonzero(labels == np.arange(v.shape[0]))
    width = tol * np.abs(R).sum(axis=0) + 16 * np.finfo(np.float64).eps * v.shape[1]
    return (labels, *_near_pairs(v, norms, reps, proj[reps], width, tol))


#: the sparse route needs every non-zero unit coordinate above this many ``tol`` (far above any rounding of a unit row)
_SUPPORT_MARGIN = 2.0


def _looks_sparse(v: np.ndarray) -> bool:
    """Whether ``v`` may be a sparse space (TF-IDF): wide, and its first 64 rows hold few non-zeros (a cheap look)."""
    if v.ndim != 2 or v.shape[1] < SPARSE_MIN_DIMS or v.shape[0] < 2:
        return False
    head = v[:64]
    return np.count_nonzero(head) <= SPARSE_DENSITY * head.size


def _near_ties_by_support(v: np.ndarray, tol: float) -> tuple[None, np.ndarray, np.ndarray] | None:
    """(None, near pairs a, b) of sparse rows, keyed by their non-zero pattern; None when the rule below does not hold.

    Two unit rows agree to ``tol`` only if every coordinate differs by at most ``tol``: a
    coordinate non-zero in one row and zero in the other differs by the non-zero's size.
    When every non-zero unit coordinate of every row exceeds ``2 tol`` (checked here from
    the CSR entries, computed well within that margin of :func:`_unit_of`'s numbers), two
    rows can agree only if they have the same non-zero columns.  So rows are grouped by
    their pattern (CSR indices, read straight from the sparse form: no dense pass, no
    projections), and only rows sharing one are compared, coordinate by coordinate by
    :func:`_unit_max_diff` -- the same test as the dense routes, hence the same groups.
    All-zero rows are one group.  None (use the dense routes) when the vectors are not
    sparse after all, hold a NaN or infinity, a row has a non-zero at or below ``2 tol``,
    or the shared patterns would give more than ``32 n`` candidate pairs.
    """
    n = v.shape[0]
    X = csr_of_dense(v)
    if X.nnz > SPARSE_DENSITY * v.size:
        return None
    data = np.abs(X.data.astype(np.float64))
    if not np.isfinite(data).all():
        return None
    counts = np.diff(X.indptr)
    live = np.flatnonzero(counts)
    if live.size:
        starts = X.indptr[live]
        peak = np.maximum.reduceat(data, starts)  # largest coordinate of each non-zero row: no square overflows
        scaled = data / np.repeat(peak, counts[live])
        norm = np.sqrt(np.add.reduceat(scaled * scaled, starts))  # >= 1: the peak's own square
        smallest = np.minimum.reduceat(scaled, starts) / norm
        if not (smallest > _SUPPORT_MARGIN * tol).all():
            return None
    # one key per pattern: the count and two sums of random 64-bit words of the columns (equal patterns, equal keys;
    # a collision only adds candidates, which the coordinate test below rejects)
    rng = np.random.default_rng(0x5EED)
    words = rng.integers(0, np.iinfo(np.int64).max, size=(2, v.shape[1]), dtype=np.int64, endpoint=True)
    h = np.zeros((2, n), dtype=np.int64)
    if live.size:
        with np.errstate(over="ignore"):
            for k in range(2):
                h[k, live] = np.add.reduceat(words[k][X.indices], X.indptr[live])  # wraps modulo 2^64
    order = np.lexsort((h[1], h[0], counts))
    same = (counts[order][1:] == counts[order][:-1]) & (h[0, order][1:] == h[0, order][:-1]) & (h[1, order][1:] == h[1, order][:-1])
    if not same.any():
        none = np.zeros(0, dtype=np.int64)
        return None, none, none
    starts_ = np.flatnonzero(np.r_[True, ~same])
    sizes = np.diff(np.r_[starts_, n])
    multi = sizes > 1
    starts_, sizes = starts_[multi], sizes[multi]
    zero_run = counts[order[starts_]] == 0
    pairs_a, pairs_b = [], []
    for a, size in zip(starts_[zero_run], sizes[zero_run]):  # all-zero rows: one group, joined to their lowest row
        members = np.sort(order[a:a + size])
        pairs_a.append(np.full(size - 1, members[0]))
        pairs_b.append(members[1:])
    starts_, sizes = starts_[~zero_run], sizes[~zero_run]
    if int((sizes * (sizes - 1) // 2).sum()) > 32 * n:
        return None
    cand_a, cand_b = [], []
    for a, size in zip(starts_, sizes):  # every pair of rows sharing a pattern
        i, j = np.triu_indices(int(size), k=1)
        members = np.sort(order[a:a + size])
        cand_a.append(members[i])
        cand_b.append(members[j])
    if cand_a:
        ca, cb = np.concatenate(cand_a), np.concatenate(cand_b)
        close = _unit_max_diff(v, None, ca, cb) <= tol
        pairs_a.append(ca[close])
        pairs_b.append(cb[close])
    none = np.zeros(0, dtype=np.int64)
    return None, np.concatenate([none, *pairs_a]).astype(np.int64), np.concatenate([none, *pairs_b]).astype(np.int64)


def degenerate_vector_groups(aw: AlignedWords, *, tol: float = 1e-6,
                             norms: Sequence[np.ndarray] | None = None) -> dict[str, list[tuple[str, ...]]]:
    """Per language, groups of >= 2 distinct words whose unit vectors agree to ``tol`` (max abs difference).

    The near-tie rule of :mod:`semanscope_nb.metrics.ties`: two unit vectors are tied when
    every coordinate differs by at most ``tol``, and a group is a connected component of
    that relation -- never a rounding grid, whose cell borders would split two vectors
    that differ in the last bit (an encoder moves a vector by a few float32 ulps with the
    batch it was encoded in; the default ``tol`` is well above that).  Any number of
    groups is found (a tokenizer maps ``<unk>``, ``<unk><unk>`` ... to different vectors).
    All-zero vectors form their own group.  The search reads the vectors once, in their
    own precision (float32 stays float32: no float64 copy, no unit copy): the row norms
    with a derived error bound, then four coordinates of the unit rows (the widest on a
    sample) serve as keys -- two rows that agree to ``tol`` differ by at most ``tol`` plus
    the norms' rounding on each -- sorted once on a grid of two of them
    (:func:`_near_ties_by_coordinates`); rows with bit-identical unit vectors are merged
    first, and only rows close on all four keys are compared coordinate by coordinate,
    in float64.  Sparse vectors (wide, at most ``SPARSE_DENSITY`` non-zero: TF-IDF) are
    grouped by their non-zero pattern read from the CSR form (:func:`_near_ties_by_support`:
    rows whose non-zeros all exceed ``2 tol`` can only agree when their patterns are equal);
    other mostly-zero vectors use four dense random directions (:func:`_near_ties_by_directions`).
    Every way, the groups are
    exactly those of the rule.  ``norms``: per language, the word vectors' norms
    computed in float64 -- what a :class:`~semanscope_nb.metrics.spreads.Spreads` of
    ``aw`` holds as ``.norms`` -- so the search reads only its key columns and candidate
    rows (the verdict passes the norms of the Spreads it builds anyway).

    >>> eye = sp.identity(4, format="csr")
    >>> v = np.array([[1, 0], [1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    >>> aw = AlignedWords(("en", "de"), (v, v[[3, 2, 1, 0]]), (eye, eye), tuple("abcd"), words=(tuple("wxyz"), tuple("pqrs")))
    >>> degenerate_vector_groups(aw)
    {'en': [('w', 'x')], 'de': [('r', 's')]}
    """
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    if norms is not None:
        norms = [np.asarray(nm, dtype=np.float64) for nm in norms]
        if len(norms) != len(aw.languages) or any(nm.shape != (np.shape(v)[0],) for nm, v in zip(norms, aw.vectors)):
            raise ValueError("norms must hold one float64 norm per word vector of each language "
                             f"({[np.shape(v)[0] for v in aw.vectors]}), got shapes {[nm.shape for nm in norms]}")
        if any((nm < 0).any() for nm in norms):
            raise ValueError("norms must be >= 0 (the norms of the word vectors)")
    none = np.zeros(0, dtype=np.int64)
    out: dict[str, list[tuple[str, ...]]] = {}
    for k, (lang, v, words) in enumerate(zip(aw.languages, aw.vectors, aw.words or [None] * len(aw.languages))):
        v = np.asarray(v)
        n = v.shape[0]
        if n < 2:
            continue
        near = _near_ties_by_support(v, tol) if _looks_sparse(v) else None  # sparse rows: keyed by their pattern
        if near is None:
            near = _near_ties_by_coordinates(v, tol, None if norms is None else norms[k])  # at most one pass, own precision
        if near is None:  # sparse or clustered coordinates: four dense random directions instead
            near = _near_ties_by_directions(v, tol)
        labels, pairs_a, pairs_b = near
        moved = none if labels is None else np.flatnonzero(labels != np.arange(n))  # rows merged into a lower twin
        ea, eb = np.r_[pairs_a, moved], np.r_[pairs_b, none if labels is None else labels[moved]]
        groups = []
        if ea.size:  # the tie graph over the few rows it touches: twins and near pairs, components by scipy
            from scipy.sparse.csgraph import connected_components  # 0.2 s to import: only when there is a tie

            nodes, inv = np.unique(np.r_[ea, eb], return_inverse=True)
            graph = sp.csr_matrix((np.ones(ea.size, dtype=np.int8), (inv[:ea.size], inv[ea.size:])), shape=(nodes.size,) * 2)
            _, comp = connected_components(graph, directed=False)
            by_comp = np.argsort(comp, kind="stable")  # each component's rows in row order; every one has >= 2
            parts = np.split(nodes[by_comp], np.flatnonzero(np.diff(comp[by_comp])) + 1)
            for members in sorted(parts, key=lambda m: int(m[0])):  # in order of their lowest row
                names = tuple(words[i] for i in members) if words is not None else tuple(str(i) for i in members)
                if len({_norm(nm) for nm in names}) > 1:
                    groups.append(names)
        if groups:
            out[lang] = sorted(groups, key=len, reverse=True)
    return out


@dataclass(frozen=True)
class ZeroVectors:
    """The words whose vector is all zeros (no direction: every cosine with them is undefined), per language.

    ``words``: language -> their word indices, ``language_rows``: language -> the concepts holding one there (both
    for the languages that have one); ``rows``: the concepts holding one in any language, the rows every
    statistic's ``on_zero="drop"`` drops.
    """

    words: dict[str, np.ndarray]
    language_rows: dict[str, np.ndarray]
    rows: np.ndarray

    def counts(self, languages: Sequence[str]) -> dict[str, int]:
        """language -> how many of its words are all-zero vectors (0 for the others)."""
        return {lang: int(self.words[lang].size) if lang in self.words else 0 for lang in languages}


def zero_vectors(aw: AlignedWords, *, on_zero: str = "drop", model: str | None = None) -> ZeroVectors:
    """The all-zero vectors of ``aw`` and the concepts that hold them: the one rule of the verdict
    (:func:`~semanscope_nb.metrics.affinity.affinity_of_words`), the pair matrix and the model comparison.

    ``on_zero="error"`` raises :class:`~semanscope_nb.errors.EmbeddingError` naming the language (and ``model``)
    and up to five of the words; ``"drop"`` returns them (the tasks' choice: those concepts are dropped).

    >>> import scipy.sparse as sp
    >>> v = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]); eye = sp.identity(3, format="csr")
    >>> z = zero_vectors(AlignedWords(("en", "de"), (v, np.eye(3, 2) + 1), (eye, eye), ("a", "b", "c")))
    >>> z.rows.tolist(), z.counts(("en", "de"))
    ([False, True, False], {'en': 1, 'de': 0})
    """
    if on_zero not in ("error", "drop"):
        raise ValueError(f"on_zero must be 'error' or 'drop', got {on_zero!r}")
    words: dict[str, np.ndarray] = {}
    language_rows: dict[str, np.ndarray] = {}
    rows = np.zeros(aw.n_rows, dtype=bool)
    for k, (lang, v, inc) in enumerate(zip(aw.languages, aw.vectors, aw.incidence)):
        z = np.flatnonzero(~np.any(np.asarray(v) != 0, axis=1))
        if not z.size:
            continue
        if on_zero == "error":
            what = [aw.words[k][i] for i in z[:5]] if aw.words else z[:5].tolist()
            whose = f"model '{model}', " if model else ""
            raise EmbeddingError(
                f"{whose}language '{lang}': {z.size} all-zero vector(s) (cosine undefined; e.g. out-of-vocabulary "
                f"words): {what}. Pass on_zero='drop' to drop the concepts that hold them."
            )
        words[lang] = z
        language_rows[lang] = np.asarray(sp.csr_matrix(inc)[:, z].sum(axis=1)).ravel() > 0
        rows |= language_rows[lang]
    return ZeroVectors(words, language_rows, rows)


def rows_with_words(aw: AlignedWords, language: str, words: set[str]) -> np.ndarray:
    """Boolean per concept row: the row holds one of ``words`` in ``language``."""
    k = aw.languages.index(language)
    vocab = aw.words[k] if aw.words is not None else tuple(str(i) for i in range(aw.vectors[k].shape[0]))
    cols = np.array([i for i, w in enumerate(vocab) if w in words], dtype=np.int64)
    if cols.size == 0:
        return np.zeros(aw.n_rows, dtype=bool)
    return np.asarray(sp.csr_matrix(aw.incidence[k])[:, cols].sum(axis=1)).ravel() > 0


def subset_rows(aw: AlignedWords, keep: np.ndarray) -> AlignedWords:
    """The concepts where ``keep`` is True (words no longer used are dropped)."""
    keep_idx = np.flatnonzero(np.asarray(keep, dtype=bool))
    keys = concept_keys(aw)  # (taken before the words go: a subset draws in the order of the whole)
    vectors, incidence, words = [], [], []
    for k, (v, inc) in enumerate(zip(aw.vectors, aw.incidence)):
        sub = sp.csr_matrix(inc)[keep_idx]
        used = np.flatnonzero(np.asarray(sub.sum(axis=0)).ravel() > 0)
        vectors.append(np.asarray(v)[used])
        incidence.append(sp.csr_matrix(sub[:, used]))
        if aw.words is not None:
            words.append(tuple(aw.words[k][i] for i in used))
    return AlignedWords(
        languages=aw.languages,
        vectors=tuple(vectors),
        incidence=tuple(incidence),
        labels=tuple(aw.labels[r] for r in keep_idx),
        groups=None if aw.groups is None else tuple(aw.groups[r] for r in keep_idx),
        words=tuple(words) if aw.words is not None else None,
        concept_keys=None if keys is None else tuple(keys[r] for r in keep_idx),  # the keys of all languages, kept
    )


def subset_languages(aw: AlignedWords, languages: tuple[str, ...]) -> AlignedWords:
    """The same concepts in fewer languages (keyed as in all of them: the same draws, :mod:`~semanscope_nb.metrics.row_order`)."""
    idx = [aw.languages.index(lang) for lang in languages]
    return AlignedWords(
        languages=tuple(languages),
        vectors=tuple(aw.vectors[i] for i in idx),
        incidence=tuple(aw.incidence[i] for i in idx),
        labels=aw.labels,
        groups=aw.groups,
        words=None if aw.words is None else tuple(aw.words[i] for i in idx),
        concept_keys=concept_keys(aw),
    )


def language_centred(aw: AlignedWords) -> AlignedWords:
    """Each language's mean word vector removed (a diagnostic: separates a language offset from mismatched translations)."""
    vectors = []
    for v in aw.vectors:
        x = np.asarray(v, dtype=np.float64)
        e = int(np.frexp(max(float(x.max()), -float(x.min())))[1]) if x.size else 0
        if -400 <= e <= 400:  # nothing can overflow or underflow: the same bits as the scaled route below
            vectors.append(x - x.mean(axis=0))
            continue
        xs = np.ldexp(x, -e)  # work in exact power-of-two units: no overflow at 1e300
        vectors.append(np.ldexp(xs - xs.mean(axis=0), e))
    return AlignedWords(aw.languages, tuple(vectors), aw.incidence, aw.labels, aw.groups, aw.words, aw.concept_keys)


#: the sparse route of :func:`language_centred_cosines` needs ``||x||^2 + ||m||^2 <= LANGUAGE_CENTRED_KAPPA ||x - m||^2``
#: for every word (``||x - m||^2`` taken as ``||x||^2 - 2 x.m + ||m||^2`` loses no more than that factor's bits)
LANGUAGE_CENTRED_KAPPA = 64.0


def language_centred_cosines(aw: AlignedWords) -> tuple[float, float] | None:
    """The cosine ``(D_intra, D_inter)`` of :func:`language_centred` words, from the sparse vectors and the means.

    TF-IDF words are sparse but their language-centred forms are dense, so the
    diagnostic's :class:`~semanscope_nb.metrics.spreads.Spreads` ran on dense
    4096-wide rows.  The same spreads follow from exact algebra on the sparse rows
    ``x`` and each language's mean ``m``: ``||x - m||^2 = ||x||^2 - 2 x.m + ||m||^2``;
    the sum of a language's unit vectors is ``X^T (1/r) - (sum 1/r) m`` (``r`` the
    centred norms), and ``D_intra`` of ``n`` words is ``1 - (||sum u||^2 - n) / (n (n - 1))``;
    a row's mean alternative unit vector is ``p - a m`` (``p = B diag(1/r) X``, ``a = B (1/r)``,
    ``B`` the row-normalised incidence), so its dot with another language's is
    ``p.p' - a' p.m' - a p'.m + a a' m.m'``, and ``D_inter`` is the tuple-weighted mean over
    rows of one minus the mean over language pairs.  Differs from the dense route by rounding
    (``tests/test_language_centred.py``).  None -- use the dense route -- unless every language
    is sparse (:meth:`Spreads.takes_sparse_products`), has at least two words, holds coordinates within
    ``2**-400 .. 2**400``, and every word passes :data:`LANGUAGE_CENTRED_KAPPA`'s cancellation
    check (a word at, or near, its language's mean fails it).

    >>> rng = np.random.default_rng(0)
    >>> X = np.where(rng.random((12, 2048)) < 0.01, rng.random((12, 2048)), 0.0)
    >>> eye = sp.identity(6, format="csr")
    >>> aw = AlignedWords(("en", "de"), (X[:6], X[6:]), (eye, eye), tuple("abcdef"))
    >>> intra, inter = language_centred_cosines(aw)
    >>> c = language_centred(aw).vectors
    >>> u = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in c]
    >>> dense_inter = float(np.mean(1 - np.sum(u[0] * u[1], axis=1)))
    >>> bool(np.isclose(inter, dense_inter, rtol=1e-12, atol=0))
    True
    """
    if not aw.vectors or len(aw.languages) < 2:
        return None
    lo, hi = 2.0**-400, 2.0**400
    per_language = []
    for v, inc in zip(aw.vectors, aw.incidence):
        if v.ndim != 2 or v.shape[0] < 2 or not Spreads.takes_sparse_products(v, None):
            return None
        X = csr_of_dense(v, dtype=np.float64)  # float32 -> float64 is exact
        if X.nnz == 0:
            return None
        top = float(np.abs(X.data).max())
        if not (lo <= top <= hi) or not np.isfinite(X.data).all():
            return None
        n = X.shape[0]
        m = np.asarray(X.sum(axis=0)).ravel() / n  # the language's mean word
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        xm = X @ m
        mm = float(m @ m)
        r2 = sq - 2.0 * xm + mm
        if not (sq + mm <= LANGUAGE_CENTRED_KAPPA * r2).all():
            return None
        inv_r = 1.0 / np.sqrt(r2)
        A = sp.csr_matrix(inc, dtype=np.float64)
        counts = np.diff(A.indptr).astype(np.float64)
        B = sp.diags(np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)) @ A
        P = sp.csr_matrix(B @ sp.diags(inv_r) @ X)  # R x D: each row's sum of alternative unit vectors, before centring
        per_language.append((X, m, mm, inv_r, P, B @ inv_r, counts, n))
    intra = []
    for X, m, _, inv_r, _, _, _, n in per_language:
        total = X.T @ inv_r - inv_r.sum() * m  # sum of the language's unit vectors (dense, D)
        intra.append(1.0 - (float(total @ total) - n) / (n * (n - 1)))
    L = len(per_language)
    n_rows = aw.n_rows
    tuples = np.prod([c for *_, c, _ in per_language], axis=0)
    pair_sum = np.zeros(n_rows)
    for i in range(L):
        _, m_i, _, _, P_i, a_i, _, _ = per_language[i]
        for j in range(i + 1, L):
            _, m_j, _, _, P_j, a_j, _, _ = per_language[j]
            pp = np.asarray(P_i.multiply(P_j).sum(axis=1)).ravel()
            dot = pp - a_j * (P_i @ m_j) - a_i * (P_j @ m_i) + a_i * a_j * float(m_i @ m_j)
            pair_sum += 1.0 - dot
    K = L * (L - 1) / 2
    if not tuples.sum() > 0:
        return None
    inter = float(tuples @ (pair_sum / K) / tuples.sum())
    return float(np.mean(intra)), inter


@dataclass(frozen=True)
class Artefacts:
    """What in a dataset x model can fake alignment, and which concept rows it touches."""

    identical_rows: np.ndarray = field(repr=False)
    degenerate: dict[str, list[tuple[str, ...]]]
    degenerate_rows: np.ndarray = field(repr=False)
    n_rows: int
    #: language -> the words the tokenizer maps to unknown tokens only (given by the caller)
    unknown: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unknown_rows: np.ndarray | None = field(default=None, repr=False)
    #: concepts whose Chinese and Japanese alternatives share a Han character (reported, not excluded)
    zh_ja_shared_rows: np.ndarray | None = field(default=None, repr=False)

    @property
    def surface_identity_share(self) -> float:
        return float(self.identical_rows.mean()) if self.n_rows else 0.0

    @property
    def excluded_rows(self) -> np.ndarray:
        out = self.identical_rows | self.degenerate_rows
        return out | self.unknown_rows if self.unknown_rows is not None else out

    def notes(self) -> list[str]:
        """Sentences naming each artefact found (empty when none)."""
        out = []
        n_id = int(self.identical_rows.sum())
        if n_id:
            out.append(
                f"surface identity: {n_id} of {self.n_rows} concepts ({100 * self.surface_identity_share:.1f}%) have the "
                "same string in two languages (after Unicode NFKC, case folding, Latin accent stripping and Chinese "
                "traditional-to-simplified folding); any model, random vectors included, maps those to one point"
            )
        for lang, words in self.unknown.items():
            if words:
                out.append(f"unknown tokens in '{lang}': the tokenizer maps {len(words)} word(s) to unknown tokens only, "
                           f"e.g. {', '.join(words[:4])}")
        for lang, groups in self.degenerate.items():
            n_words = sum(len(g) for g in groups)
            example = ", ".join(groups[0][:4])
            out.append(f"degenerate vectors in '{lang}': {n_words} distinct words share {len(groups)} vector(s), e.g. {example}")
        if self.zh_ja_shared_rows is not None and self.zh_ja_shared_rows.any():
            k = int(self.zh_ja_shared_rows.sum())
            out.append(f"zh-ja shared characters: {k} of {self.n_rows} concepts share a Han character between Chinese "
                       "and Japanese (a shared spelling, reported and not excluded; the surface-form null measures it)")
        return out


def find_artefacts(aw: AlignedWords, *, tol: float = 1e-6, unknown_words: Mapping[str, Any] | None = None,
                   norms: Sequence[np.ndarray] | None = None) -> Artefacts:
    """Identical strings across languages, unknown-token words and degenerate vectors, with the rows they touch.

    ``unknown_words``: language -> the words the model's tokenizer maps to unknown
    tokens only (:meth:`~semanscope_nb.models.encoders.Encoder.unknown_token_words`);
    their concepts are excluded whether or not their vectors form a group.  ``norms``:
    the word vectors' float64 norms, as :func:`degenerate_vector_groups` takes them.

    >>> eye = sp.identity(3, format="csr"); v = np.eye(3)
    >>> aw = AlignedWords(("en", "de"), (v, v[[1, 0, 2]]), (eye, eye), ("a", "b", "c"), words=(("House", "dog", "x"), ("house", "Hund", "y")))
    >>> art = find_artefacts(aw, unknown_words={"de": ["Hund"]})
    >>> art.identical_rows.tolist(), art.unknown_rows.tolist()     # House = house after case folding
    ([True, False, False], [False, True, False])
    """
    identical = identical_string_rows(aw)
    degenerate = degenerate_vector_groups(aw, tol=tol, norms=norms)
    deg_rows = np.zeros(aw.n_rows, dtype=bool)
    for lang, groups in degenerate.items():
        deg_rows |= rows_with_words(aw, lang, {w for g in groups for w in g})
    unknown: dict[str, tuple[str, ...]] = {}
    unk_rows = np.zeros(aw.n_rows, dtype=bool)
    for lang, words in (unknown_words or {}).items():
        if lang not in aw.languages:
            continue
        k = aw.languages.index(lang)
        have = set(aw.words[k]) if aw.words is not None else set()
        present = tuple(w for w in dict.fromkeys(words) if w in have)
        if present:
            unknown[lang] = present
            unk_rows |= rows_with_words(aw, lang, set(present))
    return Artefacts(identical_rows=identical, degenerate=degenerate, degenerate_rows=deg_rows, n_rows=aw.n_rows,
                     unknown=unknown, unknown_rows=unk_rows, zh_ja_shared_rows=zh_ja_shared_character_rows(aw))
