"""What a row is, as one string: the key random draws over rows are ordered by.

:func:`concept_key` is the one rule for a concept (a row of a word file);
:class:`~semanscope_nb.data.words.WordDataset` keys its rows with it when read (from
every language column of the file) and :mod:`semanscope_nb.metrics.row_order`
orders concepts by it.  :func:`item_key` keys any other row by its fields (a
sentence pair, a labelled text, a scored word pair), and :func:`key_order` is the
order of rows by their keys: the one order every seeded draw over rows is made in
(bootstrap resamples, subsamples, splits), so the same rows in another order of a
file get the same draws, the same intervals and the same subsample.

Layer: data.  Imports numpy, nothing of the package.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Mapping, Sequence

import numpy as np

#: separators inside a key (control characters, which the readers refuse in a word)
_LANGUAGES, _LANGUAGE, _ALTERNATIVES = "\x1f", "\x1e", "\x1d"
_FIELDS = "\x1c"  # between the fields of an item_key


def concept_key(cells: Mapping[str, Iterable[str]]) -> str:
    """One concept's key: language code -> its alternatives, languages by code and alternatives sorted (code points).

    >>> concept_key({"en": ["water"], "de": ["Wasser"]}) == concept_key({"de": ("Wasser",), "en": ("water",)})
    True
    >>> concept_key({"en": ["bank", "shore"]}) == concept_key({"en": ["shore", "bank"]})
    True
    """
    return _LANGUAGES.join(f"{lang}{_LANGUAGE}{_ALTERNATIVES.join(sorted(set(words)))}"
                           for lang, words in sorted(cells.items()))


def item_key(*fields: object) -> str:
    """A row's key from its fields (texts, labels, numbers as ``repr``), in the order given.

    >>> item_key("Hallo.", "Hello.") == item_key("Hallo.", "Hello.") != item_key("Hello.", "Hallo.")
    True
    """
    return _FIELDS.join(f if isinstance(f, str) else repr(f) for f in fields)


def key_order(keys: Sequence[str] | None, n: int | None = None) -> np.ndarray:
    """The rows in canonical order: ``order[s]`` is the row a seeded draw takes as slot ``s``.

    Rows are sorted by key, compared by code point (the same on every machine and locale); equal keys keep their
    order as given (a stable sort: equal keys are the same row's content, so which comes first changes nothing a
    statistic sees).  ``keys`` None: no keys known, the rows as given (``n`` of them).

    >>> key_order(["b", "a", "c", "a"]).tolist()
    [1, 3, 0, 2]
    >>> key_order(None, 3).tolist()
    [0, 1, 2]
    """
    if keys is None:
        if n is None:
            raise TypeError("key_order needs keys or n")
        return np.arange(int(n), dtype=np.int64)
    keys = list(keys)
    if n is not None and len(keys) != n:
        raise ValueError(f"key_order: {len(keys)} keys for {n} rows")
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def sampled_rows(keys: Sequence[str], n: int, *, seed: int) -> list[int]:
    """``n`` of the rows drawn without replacement by ``default_rng(seed)`` over their canonical order
    (:func:`key_order`), returned in row order: the same rows, by content, whatever order the file lists them in.

    >>> keys = ["d", "a", "c", "b", "e"]
    >>> picked = [keys[r] for r in sampled_rows(keys, 2, seed=0)]
    >>> shuffled = ["b", "e", "a", "d", "c"]
    >>> sorted(picked) == sorted(shuffled[r] for r in sampled_rows(shuffled, 2, seed=0))
    True
    """
    order = key_order(keys)
    slots = np.random.default_rng(seed).choice(order.size, size=int(n), replace=False)
    return np.sort(order[slots]).tolist()


def text_seed(text: str) -> int:
    """A 64-bit number of ``text`` alone (BLAKE2b), the same on every machine and run: with the user's seed it seeds
    the draws made for one text (its perturbations, its code-switched words), so a text's draws depend on neither its
    place in a list nor the other texts beside it.

    >>> text_seed("A red car.") == text_seed("A red car.") != text_seed("A red car!")
    True
    """
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
