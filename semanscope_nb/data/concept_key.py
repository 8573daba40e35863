"""What a concept is, as one string: the key random draws over concepts are ordered by.

:func:`concept_key` is the one rule; :class:`~semanscope_nb.data.words.WordDataset` keys
its rows with it when read (from every language column of the file) and
:mod:`semanscope_nb.metrics.row_order` orders concepts by it.

Layer: data.  Imports nothing of the package.
"""

from __future__ import annotations

from typing import Iterable, Mapping

#: separators inside a key (control characters, which the readers refuse in a word)
_LANGUAGES, _LANGUAGE, _ALTERNATIVES = "\x1f", "\x1e", "\x1d"


def concept_key(cells: Mapping[str, Iterable[str]]) -> str:
    """One concept's key: language code -> its alternatives, languages by code and alternatives sorted (code points).

    >>> concept_key({"en": ["water"], "de": ["Wasser"]}) == concept_key({"de": ("Wasser",), "en": ("water",)})
    True
    >>> concept_key({"en": ["bank", "shore"]}) == concept_key({"en": ["shore", "bank"]})
    True
    """
    return _LANGUAGES.join(f"{lang}{_LANGUAGE}{_ALTERNATIVES.join(sorted(set(words)))}"
                           for lang, words in sorted(cells.items()))
