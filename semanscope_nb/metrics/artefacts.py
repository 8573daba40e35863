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

import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import scipy.sparse as sp

from semanscope_nb.metrics.spreads import AlignedWords


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


def _row_keys(aw: AlignedWords) -> list[list[set[str]]]:
    """Per language, per row: the surface keys of the row's alternatives."""
    per_lang = []
    for lang, words, inc in zip(aw.languages, aw.words, aw.incidence):
        A = sp.csr_matrix(inc)
        keys = [surface_key(w, lang) for w in words]
        per_lang.append([{keys[k] for k in A.indices[A.indptr[r]:A.indptr[r + 1]]} for r in range(aw.n_rows)])
    return per_lang


def identical_string_rows(aw: AlignedWords) -> np.ndarray:
    """Boolean per concept row: some alternative is the same surface string in two of the languages (:func:`surface_key`).

    Vectorised: every (row, key) occurrence of every language, deduplicated within
    the language, and a row is marked when one (row, key) pair occurs in two languages.
    """
    out = np.zeros(aw.n_rows, dtype=bool)
    if aw.words is None:
        return out
    import pandas as pd  # hashing of (row, key) pairs: pandas' duplicated() instead of a Python loop over rows

    frames = []
    for lang, words, inc in zip(aw.languages, aw.words, aw.incidence):
        A = sp.coo_matrix(inc)
        keys = np.array([surface_key(w, lang) for w in words], dtype=object)
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


def _hash_salt(dims: int) -> np.ndarray:
    """The fixed odd int64 weights of the exact-bits row hash (seeded: the same on every run)."""
    return np.random.default_rng(0x5EED).integers(1, 2**62, size=dims, dtype=np.int64) | 1


_ROW_BLOCK = 2048  # rows converted at a time (int64 hash words, float64 projections): temporaries of about 1 MB at 512 dims


def _bits(unit: np.ndarray) -> np.ndarray:
    """The rows' bit patterns as integers of the same width (a view: float32 -> int32, float64 -> int64)."""
    return np.ascontiguousarray(unit).view(np.int32 if unit.dtype.itemsize == 4 else np.int64)


def _exact_groups(unit: np.ndarray) -> np.ndarray:
    """Label rows by their exact bits (equal labels = bit-identical rows), via a linear hash confirmed row by row."""
    n = unit.shape[0]
    bits = _bits(unit)
    salt = _hash_salt(unit.shape[1])
    hashes = np.empty(n, dtype=np.int64)
    with np.errstate(over="ignore"):
        for a in range(0, n, _ROW_BLOCK):  # int64 in blocks: float32 data is never widened as a whole
            hashes[a:a + _ROW_BLOCK] = bits[a:a + _ROW_BLOCK].astype(np.int64, copy=False) @ salt
    order = np.argsort(hashes)  # members of a bucket are re-sorted below
    labels = np.arange(n)
    sorted_h = hashes[order]
    starts = np.flatnonzero(np.r_[True, sorted_h[1:] != sorted_h[:-1]])
    sizes = np.diff(np.r_[starts, n])
    for a, size in zip(starts[sizes > 1], sizes[sizes > 1]):
        members = np.sort(order[a:a + size])
        _, first, inverse = np.unique(bits[members], axis=0, return_index=True, return_inverse=True)
        labels[members] = members[first[inverse.ravel()]]  # a collision is not a group: confirmed bit by bit
    return labels


def _unit_rows_native(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit rows, zero-row mask) in the vectors' own float type (float32 stays float32: no float64 copy).

    Each row is first divided by its largest absolute coordinate (so no square
    overflows or underflows), then by its norm.  Zero rows come out as zeros.
    """
    x = np.asarray(v)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    peak = np.maximum(x.max(axis=1), -x.min(axis=1))  # the largest |coordinate| without an |x| temporary
    zero = ~(peak > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = x / np.where(zero, 1, peak)[:, None].astype(x.dtype)
        norm = np.sqrt(np.einsum("ij,ij->i", unit, unit))
        unit /= np.where(zero, 1, norm)[:, None].astype(x.dtype)
    unit[zero] = 0.0
    unit += 0.0  # -0.0 -> 0.0: equal values, equal bits
    return unit, zero


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
        if zero[members[0]]:
            labels[members] = members[0]
            continue
        unit = _unit_of(v, None, members) + 0.0  # -0.0 -> 0.0
        _, first, inverse = np.unique(unit.view(np.int64), axis=0, return_index=True, return_inverse=True)
        labels[members] = members[first[inverse.ravel()]]
    return labels


def degenerate_vector_groups(aw: AlignedWords, *, tol: float = 1e-6) -> dict[str, list[tuple[str, ...]]]:
    """Per language, groups of >= 2 distinct words whose unit vectors agree to ``tol`` (max abs difference).

    The near-tie rule of :mod:`semanscope_nb.metrics.ties`: two unit vectors are tied when
    every coordinate differs by at most ``tol``, and a group is a connected component of
    that relation -- never a rounding grid, whose cell borders would split two vectors
    that differ in the last bit (an encoder moves a vector by a few float32 ulps with the
    batch it was encoded in; the default ``tol`` is well above that).  Any number of
    groups is found (a tokenizer maps ``<unk>``, ``<unk><unk>`` ... to different vectors).
    All-zero vectors form their own group.  The unit rows are projected on four fixed
    random directions ``r`` in one streamed pass (blocks of :data:`_ROW_BLOCK` rows
    widened to float64 and dropped: no float64 copy of float32 vectors, no unit copy
    at all); rows with identical projections whose unit vectors are bit-identical are
    merged first; the remaining rows -- two rows that agree to ``tol`` lie within
    ``tol * |r|_1`` on each direction -- are sorted along the first, and only rows that
    close on all four are compared coordinate by coordinate.

    >>> eye = sp.identity(4, format="csr")
    >>> v = np.array([[1, 0], [1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    >>> aw = AlignedWords(("en", "de"), (v, v[[3, 2, 1, 0]]), (eye, eye), tuple("abcd"), words=(tuple("wxyz"), tuple("pqrs")))
    >>> degenerate_vector_groups(aw)
    {'en': [('w', 'x')], 'de': [('r', 's')]}
    """
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    from scipy.sparse.csgraph import connected_components

    out: dict[str, list[tuple[str, ...]]] = {}
    for lang, v, words in zip(aw.languages, aw.vectors, aw.words or [None] * len(aw.languages)):
        v = np.asarray(v)
        n = v.shape[0]
        if n < 2:
            continue
        R = np.random.default_rng(0x5EED).standard_normal((v.shape[1], 4))
        R /= np.linalg.norm(R, axis=0)
        proj, norms = _unit_projections(v, R)  # one streamed pass: no unit copy of the vectors is kept
        zero = norms == 0
        labels = _exact_groups_by_projection(v, proj, zero)
        reps = np.flatnonzero(labels == np.arange(n))
        proj = proj[reps]
        # two unit rows within tol differ by <= tol * |r|_1 on each direction, + the projections' float64 rounding
        width = tol * np.abs(R).sum(axis=0) + 16 * np.finfo(np.float64).eps * v.shape[1]
        order = np.argsort(proj[:, 0])  # any order of equal projections: the window test below is symmetric
        ps = proj[order, 0]
        rest = proj[order, 1:]
        span = np.zeros(reps.size, dtype=np.int64)  # later rows within the window of each row
        open_ = np.flatnonzero(np.diff(ps) <= width[0])  # rows whose next neighbour is in the window (usually few)
        span[open_] = np.searchsorted(ps, ps[open_] + width[0], side="right") - open_ - 1
        pairs_a, pairs_b = [], []
        start = 0
        cum = np.cumsum(span)
        while start < reps.size and cum[-1] > 0:  # candidate pairs in chunks of about _PAIR_BLOCK
            base = cum[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(cum, base + _PAIR_BLOCK, side="right")))
            i = np.repeat(np.arange(start, stop), span[start:stop])
            if i.size:
                j = i + 1 + (np.arange(i.size) - np.repeat(cum[start:stop] - span[start:stop] - base, span[start:stop]))
                near = (np.abs(rest[i] - rest[j]) <= width[1:]).all(axis=1)  # cheap: 3 numbers per pair
                i, j = i[near], j[near]
                a_rows, b_rows = reps[order[i]], reps[order[j]]
                close = _unit_max_diff(v, norms, a_rows, b_rows) <= tol
                pairs_a.append(a_rows[close])
                pairs_b.append(b_rows[close])
            start = stop
        comp = labels  # bit-identical rows share their lowest row index as label
        if pairs_a and sum(p.size for p in pairs_a):  # near pairs join whole exact groups: components over the few rows involved
            ea, eb = np.concatenate(pairs_a), np.concatenate(pairs_b)
            nodes, inv = np.unique(np.r_[ea, eb], return_inverse=True)
            graph = sp.csr_matrix((np.ones(ea.size, dtype=np.int8), (inv[:ea.size], inv[ea.size:])), shape=(nodes.size,) * 2)
            _, sub = connected_components(graph, directed=False)
            root = np.full(sub.max() + 1, n)
            np.minimum.at(root, sub, nodes)  # each component named by its lowest representative
            relabel = np.arange(n)
            relabel[nodes] = root[sub]
            comp = relabel[labels]
        groups = []
        sizes = np.bincount(comp, minlength=n)
        multi = np.flatnonzero(sizes[comp] > 1)  # rows of groups with >= 2 members, grouped by label
        multi = multi[np.argsort(comp[multi], kind="stable")]
        for members in np.split(multi, np.flatnonzero(np.diff(comp[multi])) + 1) if multi.size else []:
            names = tuple(words[i] for i in members) if words is not None else tuple(str(i) for i in members)
            if len({_norm(nm) for nm in names}) > 1:
                groups.append(names)
        if groups:
            out[lang] = sorted(groups, key=len, reverse=True)
    return out


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
    )


def subset_languages(aw: AlignedWords, languages: tuple[str, ...]) -> AlignedWords:
    """The same concepts in fewer languages."""
    idx = [aw.languages.index(lang) for lang in languages]
    return AlignedWords(
        languages=tuple(languages),
        vectors=tuple(aw.vectors[i] for i in idx),
        incidence=tuple(aw.incidence[i] for i in idx),
        labels=aw.labels,
        groups=aw.groups,
        words=None if aw.words is None else tuple(aw.words[i] for i in idx),
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
    return AlignedWords(aw.languages, tuple(vectors), aw.incidence, aw.labels, aw.groups, aw.words)


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


def find_artefacts(aw: AlignedWords, *, tol: float = 1e-6, unknown_words: Mapping[str, Any] | None = None) -> Artefacts:
    """Identical strings across languages, unknown-token words and degenerate vectors, with the rows they touch.

    ``unknown_words``: language -> the words the model's tokenizer maps to unknown
    tokens only (:meth:`~semanscope_nb.models.encoders.Encoder.unknown_token_words`);
    their concepts are excluded whether or not their vectors form a group.

    >>> eye = sp.identity(3, format="csr"); v = np.eye(3)
    >>> aw = AlignedWords(("en", "de"), (v, v[[1, 0, 2]]), (eye, eye), ("a", "b", "c"), words=(("House", "dog", "x"), ("house", "Hund", "y")))
    >>> art = find_artefacts(aw, unknown_words={"de": ["Hund"]})
    >>> art.identical_rows.tolist(), art.unknown_rows.tolist()     # House = house after case folding
    ([True, False, False], [False, True, False])
    """
    identical = identical_string_rows(aw)
    degenerate = degenerate_vector_groups(aw, tol=tol)
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
