"""The canonical order of concepts: the order every random draw over concepts is made in.

A bootstrap resample draws concepts with replacement and a permutation test
re-pairs them; both draw *positions* from a seeded generator.  Had the positions
been the rows as a file lists them, the same concepts in another row order would
get other resamples and other re-pairings: another interval, another p-value, now
and then another tier -- one question, two answers.  So draws are made over the
concepts sorted by what they are, not by where they stand.

**The key of a concept** (:func:`~semanscope_nb.data.concept_key.concept_key`): its words in every language of the
data set it was read from -- languages by code, each cell's alternatives sorted --
as one string, compared by code point (the same on every machine and locale).  A
:class:`~semanscope_nb.data.words.WordDataset` computes it when read, from all of
the file's language columns, and keeps it through ``select`` and ``subset``, so
the pair matrix (all languages) and a pair's own verdict (two languages selected)
name a concept alike and draw the same resamples; so do the model comparison, the
verdicts beside it and the surface-form baseline (the key never reads a vector).
An :class:`~semanscope_nb.metrics.spreads.AlignedWords` carries the keys as
``concept_keys``; one built by hand without them takes its words (when given),
else its labels.

**Ties.** Concepts with equal keys are ordered by label (labels of digits only by
their number: the row numbers unlabelled arrays get keep their rows in place), then
as given (a stable sort).  Equal keys mean the same words in every language, so the same vectors:
swapping them changes nothing, except for an ``AlignedWords`` made by hand with
neither words nor distinct labels.

:func:`canonical_rows` gives the order; a draw puts slot ``s`` of a resample or a
re-pairing on row ``order[s]``.  Sums over concepts are still taken in the rows'
own order, so two row orders agree to rounding, not to the bit, and decisions go
through the package's near-tie rules (:mod:`semanscope_nb.metrics.ties`).

Layer: metrics.  Imports numpy, scipy and :mod:`semanscope_nb.data.concept_key` (the key's one rule).

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> eye = sp.identity(3, format="csr"); v = np.eye(3)
>>> aw = AlignedWords(("en", "de"), (v, v), (eye, eye), ("dog", "cat", "bird"))
>>> canonical_rows(aw).tolist()   # no words given: by label (bird, cat, dog)
[2, 1, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from semanscope_nb.data.concept_key import concept_key


def concept_keys(aw: Any) -> tuple[str, ...] | None:
    """The keys of ``aw``'s concepts: its ``concept_keys``, else made from its words (None when it has neither).

    >>> import scipy.sparse as sp
    >>> from semanscope_nb.metrics.spreads import AlignedWords
    >>> inc = sp.csr_matrix(np.array([[1, 1, 0], [0, 0, 1]]))   # row 0 holds two alternatives
    >>> aw = AlignedWords(("en",), (np.eye(3),), (inc,), ("bank", "tree"), words=(("shore", "bank", "tree"),))
    >>> concept_keys(aw) == (concept_key({"en": ["bank", "shore"]}), concept_key({"en": ["tree"]}))
    True
    """
    given = getattr(aw, "concept_keys", None)
    if given is not None:
        return tuple(given)
    if aw.words is None:
        return None
    per_language = []
    for words, inc in zip(aw.words, aw.incidence):
        inc = sp.csr_matrix(inc)
        per_language.append([[words[j] for j in inc.indices[inc.indptr[r]:inc.indptr[r + 1]]] for r in range(inc.shape[0])])
    return tuple(concept_key(dict(zip(aw.languages, cells))) for cells in zip(*per_language))


def _ranks(strings: Any) -> np.ndarray:
    """Each string's rank among the distinct strings, by code point (equal strings: equal ranks)."""
    arr = np.asarray(list(strings), dtype=str)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(arr, return_inverse=True)[1].astype(np.int64).ravel()


def _label_ranks(labels: Any) -> np.ndarray:
    """Each label's rank: labels of ASCII digits only by their number (before every other label), the others by code
    point -- so the row numbers ``"0" .. "R-1"`` that unlabelled arrays get stand in their own order."""
    labels = list(labels)
    number = [s.isascii() and s.isdigit() for s in labels]
    if not any(number):
        return _ranks(labels)
    by = sorted(range(len(labels)), key=lambda r: (0, int(labels[r]), labels[r]) if number[r] else (1, 0, labels[r]))
    return slot_of_row(np.array(by, dtype=np.int64))  # the rank of each label is its place in that order


def canonical_rows(aw: Any) -> np.ndarray:
    """The rows of ``aw`` in canonical order (the module's rule): ``order[s]`` is the row drawn as slot ``s``.

    >>> import scipy.sparse as sp
    >>> from semanscope_nb.metrics.spreads import AlignedWords
    >>> eye = sp.identity(3, format="csr"); v = np.eye(3)
    >>> aw = AlignedWords(("en", "de"), (v, v), (eye, eye), ("b", "a", "c"), words=(("b", "a", "c"), ("zwei", "eins", "drei")))
    >>> canonical_rows(aw).tolist()   # by the words, German first (de < en): drei, eins, zwei
    [2, 1, 0]
    """
    held = getattr(aw, "__dict__", {}).get("_canonical_rows")  # taken once per object (read by several statistics)
    if held is not None:
        return held
    keys = concept_keys(aw)
    labels = _label_ranks(aw.labels)
    if keys is None:
        order = np.argsort(labels, kind="stable")
    else:
        order = np.lexsort((labels, _ranks(keys)))  # the key first, the label for equal keys, then as given
    order.flags.writeable = False
    if hasattr(aw, "__dict__"):  # (AlignedWords is frozen, its fields never change: the order is kept beside them)
        object.__setattr__(aw, "_canonical_rows", order)
    return order


def slot_of_row(order: np.ndarray) -> np.ndarray:
    """The inverse of :func:`canonical_rows`' order: ``slot[r]`` is the slot row ``r`` is drawn as.

    >>> slot_of_row(np.array([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    slot = np.empty_like(order)
    slot[order] = np.arange(order.size, dtype=order.dtype)
    return slot


def is_identity(order: np.ndarray) -> bool:
    """Whether the rows already stand in canonical order (nothing to map).

    >>> is_identity(np.arange(4)), is_identity(np.array([1, 0]))
    (True, False)
    """
    return bool(np.array_equal(order, np.arange(order.size)))
