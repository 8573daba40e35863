"""Fixed, colour-blind-safe colours: one colour per language code, one per verdict tier.

Language colours never depend on which languages a map shows: each code has
its place in :data:`LANGUAGE_ORDER`, and that place picks its colour from
:data:`LANGUAGE_PALETTE` (Okabe-Ito without black, then Tableau's colour-blind
10), so adding German to a map never recolours English.  A code outside the
order gets a colour from a hash of the code: stable across runs and machines
(BLAKE2, not Python's salted ``hash``).  Beyond the first seven languages some
colours are close relatives (two blues, two oranges); pass ``shape_by="language"``
to :func:`semanscope_nb.plots.maps.alignment_map` when a map holds many languages.

Tier colours (:data:`TIER_COLOURS`) avoid red/green pairs: blues for aligned
tiers, orange for non-aligned, reddish purple for "below chance" and a neutral
grey of its own for "chance".  Every chart uses this one mapping.

Layer: plots.  Imports nothing from the package.

Example
-------
>>> from semanscope_nb.plots.palette import language_colours, TIER_COLOURS
>>> language_colours(["en", "zh"])["en"] == language_colours(["de", "en", "zh"])["en"]
True
>>> TIER_COLOURS["chance"]
'#8c8c8c'
"""

from __future__ import annotations

import hashlib
from typing import Iterable

#: Okabe & Ito (2008) without black (invisible on a dark background).
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442")
#: Tableau's colour-blind 10, its most distinct members first.
TABLEAU_CB10 = ("#595959", "#A2C8EC", "#FFBC79", "#ABABAB", "#006BA4", "#FF800E", "#5F9ED1", "#C85200", "#898989", "#CFCFCF")
LANGUAGE_PALETTE = OKABE_ITO + TABLEAU_CB10

#: The fixed global order of language codes: the i-th code takes ``LANGUAGE_PALETTE[i]``.
#: Append new codes at the end only; never reorder (that would recolour existing maps).
LANGUAGE_ORDER = ("en", "zh", "de", "fr", "es", "ja", "ko", "ru", "ar", "hi", "pt", "it", "nl", "tr", "pl", "vi", "th")

#: Verdict tiers, in display order, and their colours (colour-blind safe, no red/green pair).
TIER_ORDER = [
    "great", "good", "non-aligned", "not above surface form", "chance", "below chance", "undetermined", "insufficient", "undefined",
]
TIER_COLOURS = {
    "great": "#0072b2",  # blue
    "good": "#56b4e9",  # sky blue
    "non-aligned": "#e69f00",  # orange
    "chance": "#8c8c8c",  # neutral grey: indistinguishable from shuffled translations
    "below chance": "#cc79a7",  # reddish purple: translations farther apart than random pairs
    "undetermined": "#f0e442",  # yellow: a score, but too few resamples or concepts to call (metrics.degenerate)
    "insufficient": "#b3b3b3",  # mid grey: too few concepts left once the artefacts are excluded (no tier)
    "not above surface form": "#d55e00",  # vermillion: above chance, but not above the character n-gram baseline
    "undefined": "#d9d9d9",  # light grey: no score
}
CHANCE_COLOUR = "#4d4d4d"  # the chance-level rule / tick and its label


def language_colour(code: str) -> str:
    """The fixed colour of one language code (hash-based for codes outside :data:`LANGUAGE_ORDER`).

    >>> language_colour("en"), language_colour("xx") == language_colour("xx")
    ('#0072B2', True)
    """
    if code in LANGUAGE_ORDER:
        i = LANGUAGE_ORDER.index(code)
        if i < len(LANGUAGE_PALETTE):
            return LANGUAGE_PALETTE[i]
    digest = hashlib.blake2b(str(code).encode("utf-8"), digest_size=4).digest()
    return LANGUAGE_PALETTE[int.from_bytes(digest, "big") % len(LANGUAGE_PALETTE)]


def language_colours(languages: Iterable[str]) -> dict[str, str]:
    """Language code -> colour, in the order given (duplicates dropped)."""
    return {code: language_colour(code) for code in dict.fromkeys(languages)}


def tier_colour(tier: str) -> str:
    """The colour of a tier name (unknown names get the 'undefined' grey)."""
    return TIER_COLOURS.get(tier, TIER_COLOURS["undefined"])
