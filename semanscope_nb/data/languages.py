"""Language codes: a header or a user's language name to its ISO 639 code, and a code to its English name.

The project's own aliases (:data:`LANGUAGE_ALIASES`: the paper's ``english``,
its tool's ``enu`` / ``chn``, ``mandarin`` ...) come first; any other ISO 639
code, BCP 47 tag or whole language name is looked up in ``langcodes`` (a name
must match one of its names exactly: ``index`` or ``english;chinese`` is no
language).  :func:`header_language_code` reads a CSV header cell: the same, but
the column names of :data:`RESERVED_COLUMNS` (``id``, ``index``, ``no`` ...) are
never languages.

Layer: data.  Imports nothing of the package (``langcodes`` only).

Example
-------
>>> language_code("Chinese"), language_code("enu"), language_code("Georgian"), language_code("category")
('zh', 'en', 'ka', None)
>>> header_language_code("id"), header_language_code("indonesian"), language_code("id")
(None, 'id', 'id')
>>> language_name("de"), LANGUAGE_NAMES["zh"]
('German', 'Chinese')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping

# langcodes (and its CLDR name tables, about half a second to load) is imported on first use, not with the package

# Header names accepted for each language code (ISO 639-1).  The paper's files
# use full English names ("english", "chinese"); its tool used "enu"/"chn".
LANGUAGE_ALIASES: dict[str, tuple[str, ...]] = {
    "en": ("english", "enu", "eng"),
    "zh": ("chinese", "chn", "zho", "mandarin", "zh-cn", "zh_hans"),
    "de": ("german", "deu", "ger"),
    "fr": ("french", "fra", "fre"),
    "es": ("spanish", "spa", "esp"),
    "ja": ("japanese", "jpn", "jap"),
    "ru": ("russian", "rus"),
    "ko": ("korean", "kor"),
    "ar": ("arabic", "ara"),
    "it": ("italian", "ita"),
    "pt": ("portuguese", "por"),
    "nl": ("dutch", "nld"),
    "pl": ("polish", "pol"),
    "tr": ("turkish", "tur"),
    "th": ("thai", "tha"),
    "hi": ("hindi", "hin"),
    "sv": ("swedish", "swe"),
    "el": ("greek", "ell"),
    "he": ("hebrew", "heb"),
    "vi": ("vietnamese", "vie"),
    "id": ("indonesian", "ind"),
    "uk": ("ukrainian", "ukr"),
    "fa": ("persian", "fas", "farsi"),
}
_HEADER_TO_CODE = {alias: code for code, names in LANGUAGE_ALIASES.items() for alias in (code, *names)}
#: header names of a concept-group column (never read as a language)
GROUP_COLUMNS = ("category", "group", "domain", "concept_group")
#: header names of columns that are never languages in a Semanscope CSV: row numbers, keys and labels.  Some are
#: ISO 639 codes or language names (``id`` Indonesian, ``no`` Norwegian, ``nr`` South Ndebele, ``label`` the Label
#: language of Papua New Guinea) that a user may still name as a language
#: (:func:`language_code`), but a header cell so named is a row-number column (ignored, and listed in the report):
#: Indonesian is ``indonesian`` or ``ind`` in a header, Norwegian ``norwegian`` or ``nor``.
RESERVED_COLUMNS = ("id", "index", "idx", "row", "row_id", "no", "nr", "number", "concept_id", "key", "label")
_TAG = re.compile(r"[a-z]{2,3}([-_][a-z0-9]{2,8})*")


@functools.lru_cache(maxsize=1024)
def language_name(code: str) -> str:
    """The English name of a language code, from ``langcodes`` (any BCP 47 tag).

    >>> language_name("ka"), language_name("zh-TW")
    ('Georgian', 'Chinese (Taiwan)')
    """
    # langcodes (with language_data) carries the CLDR / IANA registry of every
    # ISO 639 code and its names in many languages: a maintained source instead
    # of a hand table, so Georgian, Armenian, ... need no edit here.
    import langcodes

    return langcodes.Language.get(code).display_name()


class _LanguageNames(Mapping[str, str]):
    """The English names of the codes of :data:`LANGUAGE_ALIASES`, looked up on first use (a read-only mapping)."""

    def __getitem__(self, code: str) -> str:
        if code not in LANGUAGE_ALIASES:
            raise KeyError(code)
        return language_name(code)

    def __iter__(self) -> Iterator[str]:
        return iter(LANGUAGE_ALIASES)

    def __len__(self) -> int:
        return len(LANGUAGE_ALIASES)

    def __repr__(self) -> str:
        return f"LANGUAGE_NAMES({dict(self)!r})"


#: English names of the codes above (more via :func:`language_name`)
LANGUAGE_NAMES: Mapping[str, str] = _LanguageNames()


@functools.lru_cache(maxsize=4096)
def _code_from_langcodes(key: str) -> str | None:
    if key in GROUP_COLUMNS:
        return None
    import langcodes

    if _TAG.fullmatch(key):  # an ISO 639 code or a BCP 47 tag: ka, kat, geo, hy-AM, zh_hant
        try:
            lang = langcodes.Language.get(key.replace("_", "-"))
        except (ValueError, LookupError):
            lang = None
        # three-letter words are accepted only when they are a code of a two-letter language (kat, hye),
        # so that a column named "tag" or "row" is not read as some rare language
        if lang is not None and lang.is_valid() and lang.language and (len(key) != 3 or len(lang.language) == 2):
            return lang.to_tag() if "-" in key or "_" in key else lang.language
    name = key.replace("_", " ")  # langcodes reads '-' in a name as a space (english-us); '_' likewise
    if not _is_language_name(name):  # langcodes.find also matches a prefix: 'index' (Da'a Kaili), 'english;chinese'
        return None
    try:  # a language name in English or in the language itself: Georgian, armenian, ქართული, francés
        found = langcodes.find(name)
    except (LookupError, UnicodeError, SystemError):  # binary junk breaks langcodes' name trie: not a language
        return None
    return found.to_tag()


@functools.lru_cache(maxsize=1)
def _name_table() -> object | None:
    """language_data's table of every language name (in any language) that ``langcodes.find`` looks names up in."""
    try:
        from language_data.names import load_trie
        from language_data.util import data_filename

        return load_trie(data_filename("trie/und/name_to_language.marisa"))
    except (ImportError, AttributeError, OSError, ValueError):  # another language_data layout: round-trip instead
        return None


def _is_language_name(key: str) -> bool:
    """True when ``key`` is, as a whole, the name of a language (what ``langcodes.find`` finds without a prefix match).

    ``langcodes.find`` returns the language of the longest name that starts ``key`` (``"index"`` -> Da'a Kaili,
    ``"english;chinese"`` -> English); a header names a language only when the whole cell is one of its names.
    """
    import langcodes

    try:
        from language_data.names import normalize_name  # what the table's names are normalised by (case, '-', '()')
    except ImportError:
        return False
    table = _name_table()
    try:
        lookup = normalize_name(key)
        if table is not None:
            return lookup in table  # type: ignore[operator]
        found = langcodes.find(key)  # no table: the name must round-trip (its English name or its autonym)
        return lookup in {normalize_name(found.display_name()), normalize_name(found.autonym())}
    except (LookupError, UnicodeError, SystemError):
        return False


def language_code(name: str) -> str | None:
    """Map a user-supplied language name to its ISO code, or None (a CSV header cell: :func:`header_language_code`).

    The project's own aliases (``enu``, ``chn``, ``mandarin`` ...) come first; any
    other ISO 639 code, BCP 47 tag or language name is looked up in ``langcodes``.
    A name must be a whole name of the language, in any language (``German``,
    ``deutsch``, ``francés``); a text that only starts with one (``english;chinese``,
    ``index``) is not a language.

    >>> language_code("Chinese"), language_code("de"), language_code("human")
    ('zh', 'de', None)
    >>> language_code("Georgian"), language_code("hy"), language_code("kat")
    ('ka', 'hy', 'ka')
    >>> language_code("index"), language_code("english;chinese")
    (None, None)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if not key:
        return None
    return _HEADER_TO_CODE.get(key) or _code_from_langcodes(key)


def header_language_code(header: str) -> str | None:
    """The language a CSV header cell names, or None: :func:`language_code`, but the column names of
    :data:`RESERVED_COLUMNS` (row numbers and keys: ``id``, ``index``, ``no`` ...) are never languages.

    Indonesian is ``indonesian`` or ``ind`` in a header (``id`` is a row-number column), Norwegian
    ``norwegian`` or ``nor`` (``no`` is one too).  A cell names a language only as a whole: an ISO 639 code,
    a BCP 47 tag (``zh-CN``, ``zh_Hant``) or a language name (``English``, ``deutsch``, ``ქართული``);
    ``index``, ``english;chinese`` and ``chinse`` are not languages.

    >>> header_language_code("English"), header_language_code("zh_Hant"), header_language_code("ind")
    ('en', 'zh-Hant', 'id')
    >>> header_language_code("id"), header_language_code("index"), header_language_code("english;chinese")
    (None, None, None)
    """
    if not isinstance(header, str):
        raise TypeError(f"header must be a string, got {type(header).__name__}")
    if header.strip().lower() in RESERVED_COLUMNS:
        return None
    return language_code(header)


#: what a language code the package does not know may look like: a BCP 47-style tag (letters, digits, '-', '_')
_UNKNOWN_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")


def checked_language_code(language: object, *, what: str = "language") -> str:
    """The code of a language a user names (``en``, ``English``, ``zh-Hant``); a tag the package does not know
    (``tok``) is kept as given, anything else (``../x``, ``<b>``, ``""``, ``None``) is an
    :class:`~semanscope_nb.errors.ArgumentError` naming ``what``.

    >>> checked_language_code("English"), checked_language_code("tok")
    ('en', 'tok')
    >>> checked_language_code("../x", what="word list key")
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.ArgumentError: word list key '../x' is not a language code or name (e.g. 'en', 'zh-Hant', 'English')
    """
    from semanscope_nb.errors import ArgumentError

    if not isinstance(language, str) or not language.strip():
        raise ArgumentError(f"{what} must be a language code such as 'en', got {language!r}")
    code = language_code(language)
    if code:
        return code
    tag = language.strip()
    if not _UNKNOWN_TAG.fullmatch(tag):
        raise ArgumentError(f"{what} {tag!r} is not a language code or name (e.g. 'en', 'zh-Hant', 'English')")
    return tag
