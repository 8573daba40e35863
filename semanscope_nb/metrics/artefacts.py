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
>>> from semanscope_nb.metrics.spreads import AlignedWords, _unit_rows
>>> eye = sp.identity(3, format="csr")
>>> v = np.eye(3)
>>> aw = AlignedWords(("en", "de"), (v, v), (eye, eye), ("a", "b", "c"), words=(("Paris", "dog", "3"), ("Paris", "Hund", "3")))
>>> identical_string_rows(aw).tolist()
[True, False, True]
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from semanscope_nb.metrics.spreads import AlignedWords, _unit_rows


def _norm(word: str) -> str:
    return unicodedata.normalize("NFC", word).strip()


def identical_string_rows(aw: AlignedWords) -> np.ndarray:
    """Boolean per concept row: some alternative is the identical string in two of the languages (NFC, stripped)."""
    if aw.words is None:
        return np.zeros(aw.n_rows, dtype=bool)
    per_lang = []
    for words, inc in zip(aw.words, aw.incidence):
        A = sp.csr_matrix(inc)
        per_lang.append([{_norm(words[k]) for k in A.indices[A.indptr[r]:A.indptr[r + 1]]} for r in range(aw.n_rows)])
    out = np.zeros(aw.n_rows, dtype=bool)
    for r in range(aw.n_rows):
        seen: set[str] = set()
        for sets in per_lang:
            if seen & sets[r]:
                out[r] = True
                break
            seen |= sets[r]
    return out


_PAIR_BLOCK = 65536  # candidate pairs compared at a time (bounds the temporaries to a few MB)


def _hash_salt(dims: int) -> np.ndarray:
    """The fixed odd int64 weights of the exact-bits row hash (seeded: the same on every run)."""
    return np.random.default_rng(0x5EED).integers(1, 2**62, size=dims, dtype=np.int64) | 1


def _exact_groups(unit: np.ndarray) -> np.ndarray:
    """Label rows by their exact bits (equal labels = bit-identical rows), via a linear hash confirmed row by row."""
    n = unit.shape[0]
    with np.errstate(over="ignore"):
        hashes = np.ascontiguousarray(unit).view(np.int64) @ _hash_salt(unit.shape[1])
    order = np.argsort(hashes)  # members of a bucket are re-sorted below
    labels = np.arange(n)
    sorted_h = hashes[order]
    starts = np.flatnonzero(np.r_[True, sorted_h[1:] != sorted_h[:-1]])
    sizes = np.diff(np.r_[starts, n])
    for a, size in zip(starts[sizes > 1], sizes[sizes > 1]):
        members = np.sort(order[a:a + size])
        _, first, inverse = np.unique(unit[members].view(np.int64), axis=0, return_index=True, return_inverse=True)
        labels[members] = members[first[inverse.ravel()]]  # a collision is not a group: confirmed bit by bit
    return labels


def degenerate_vector_groups(aw: AlignedWords, *, tol: float = 1e-6) -> dict[str, list[tuple[str, ...]]]:
    """Per language, groups of >= 2 distinct words whose unit vectors agree to ``tol`` (max abs difference).

    The near-tie rule of :mod:`semanscope_nb.metrics.ties`: two unit vectors are tied when
    every coordinate differs by at most ``tol``, and a group is a connected component of
    that relation -- never a rounding grid, whose cell borders would split two vectors
    that differ in the last bit (an encoder moves a vector by a few float32 ulps with the
    batch it was encoded in; the default ``tol`` is well above that).  All-zero vectors
    form their own group.  Bit-identical rows are merged first (an exact-bits hash); the
    remaining rows are projected on four fixed random directions ``r`` -- two rows that
    agree to ``tol`` lie within ``tol * |r|_1`` on each -- sorted along the first, and only
    rows that close on all four are compared coordinate by coordinate.
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
        unit, norms = _unit_rows(np.asarray(v, dtype=np.float64))  # overflow- and underflow-safe; a zero row is NaN
        unit[norms == 0] = 0.0  # zero rows agree with each other only (a unit vector has a coordinate >= 1/sqrt(d))
        unit += 0.0  # -0.0 -> 0.0: equal values, equal bits
        labels = _exact_groups(unit)
        reps = np.flatnonzero(labels == np.arange(n))
        R = np.random.default_rng(0x5EED).standard_normal((unit.shape[1], 4))
        R /= np.linalg.norm(R, axis=0)
        proj = (R.T @ unit.T).T[reps]  # four fixed directions (this GEMM shape is the fast one): sort along the first, filter along the others
        width = tol * np.abs(R).sum(axis=0) + 8 * np.finfo(np.float64).eps * unit.shape[1]  # + the projection's rounding
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
                close = np.abs(unit[a_rows] - unit[b_rows]).max(axis=1) <= tol
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
        e = int(np.frexp(np.abs(x).max())[1]) if x.size else 0  # work in exact power-of-two units: no overflow at 1e300
        xs = np.ldexp(x, -e)
        vectors.append(np.ldexp(xs - xs.mean(axis=0), e))
    return AlignedWords(aw.languages, tuple(vectors), aw.incidence, aw.labels, aw.groups, aw.words)


@dataclass(frozen=True)
class Artefacts:
    """What in a dataset x model can fake alignment, and which concept rows it touches."""

    identical_rows: np.ndarray = field(repr=False)
    degenerate: dict[str, list[tuple[str, ...]]]
    degenerate_rows: np.ndarray = field(repr=False)
    n_rows: int

    @property
    def surface_identity_share(self) -> float:
        return float(self.identical_rows.mean()) if self.n_rows else 0.0

    @property
    def excluded_rows(self) -> np.ndarray:
        return self.identical_rows | self.degenerate_rows

    def notes(self) -> list[str]:
        """Sentences naming each artefact found (empty when none)."""
        out = []
        n_id = int(self.identical_rows.sum())
        if n_id:
            out.append(
                f"surface identity: {n_id} of {self.n_rows} concepts ({100 * self.surface_identity_share:.1f}%) have an "
                "identical string in two languages; any model, random vectors included, maps those to one point"
            )
        for lang, groups in self.degenerate.items():
            n_words = sum(len(g) for g in groups)
            example = ", ".join(groups[0][:4])
            out.append(f"degenerate vectors in '{lang}': {n_words} distinct words share {len(groups)} vector(s), e.g. {example}")
        return out


def find_artefacts(aw: AlignedWords, *, tol: float = 1e-6) -> Artefacts:
    """Identical strings across languages and degenerate vectors within a language, with the rows they touch."""
    identical = identical_string_rows(aw)
    degenerate = degenerate_vector_groups(aw, tol=tol)
    deg_rows = np.zeros(aw.n_rows, dtype=bool)
    for lang, groups in degenerate.items():
        deg_rows |= rows_with_words(aw, lang, {w for g in groups for w in g})
    return Artefacts(identical_rows=identical, degenerate=degenerate, degenerate_rows=deg_rows, n_rows=aw.n_rows)
