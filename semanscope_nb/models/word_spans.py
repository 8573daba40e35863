"""Word spans of a text: whitespace words with punctuation stripped, Chinese through jieba, Japanese through
fugashi + unidic-lite (MeCab); in a mixed-script text each run follows its own script's rule.

Layer: models.

>>> word_spans("Hello, world! It's 5 o'clock.")
[(0, 5), (7, 12), (14, 18), (19, 20), (21, 28)]
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import Any

from semanscope_nb.errors import ModelLoadError

Span = tuple[int, int]


# ------------------------------------------------------------------------------------------------
# word spans
# ------------------------------------------------------------------------------------------------
_CHINESE = {"zh", "zho", "chi", "cmn", "yue", "wuu"}
_JAPANESE = {"ja", "jpn"}
_seg_lock = threading.Lock()
_mecab: Any = None


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _lang_base(language: str | None) -> str | None:
    return None if language is None else str(language).lower().replace("_", "-").split("-")[0]


def _jieba_segments(text: str) -> list[Span]:
    # jieba: well kept (the reference Chinese segmenter), pure Python, and its dictionary ships inside
    # the wheel, so it segments offline with no download; it caches the parsed dictionary in the temp dir.
    try:
        import jieba
    except ImportError as exc:
        raise ModelLoadError("Chinese word spans need jieba: pip install jieba (or pass spans=)") from exc
    with _seg_lock:
        if not jieba.dt.initialized:
            jieba.setLogLevel(logging.WARNING)  # its first load logs to stderr otherwise
        return [(s, e) for _, s, e in jieba.tokenize(text)]


def _mecab_segments(text: str) -> list[Span]:
    # fugashi (MeCab) + unidic-lite: both wheels, dictionary included, so Japanese segments offline too.
    global _mecab
    try:
        import fugashi
    except ImportError as exc:
        raise ModelLoadError("Japanese word spans need fugashi + unidic-lite: pip install fugashi unidic-lite "
                             "(or pass spans=)") from exc
    with _seg_lock:
        if _mecab is None:
            try:
                _mecab = fugashi.Tagger()
            except RuntimeError as exc:
                raise ModelLoadError("fugashi found no dictionary: pip install unidic-lite") from exc
        out: list[Span] = []
        pos = 0
        for node in _mecab(text):
            surface = node.surface
            if not surface:
                continue
            start = text.find(surface, pos)
            if start < 0:  # MeCab changed the surface (should not happen): skip it rather than guess
                continue
            out.append((start, start + len(surface)))
            pos = start + len(surface)
        return out


#: runs of the scripts written without spaces between words (Han, kana, CJK punctuation and full-width
#: forms): segmented by jieba or MeCab; every other run of non-space characters is one word
_CJK_RUN = re.compile("[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31c0-\u31ff\u3200-\u4dbf\u4e00-\u9fff"
                      "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]+")
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")


def _script_segments(text: str, base: str | None) -> list[Span]:
    """Each script by its own rule: CJK runs by the segmenter, everything else split at whitespace.

    A CJK run goes to MeCab when the language is Japanese or the run holds kana, else to jieba.
    """
    out: list[Span] = []
    for word in re.finditer(r"\S+", text):
        pos, end = word.start(), word.end()
        for run in _CJK_RUN.finditer(text, pos, end):
            if run.start() > pos:
                out.append((pos, run.start()))
            piece = run.group()
            use_mecab = base in _JAPANESE or (base not in _CHINESE and _KANA.search(piece) is not None)
            out.extend((run.start() + a, run.start() + b) for a, b in (_mecab_segments if use_mecab else _jieba_segments)(piece))
            pos = run.end()
        if pos < end:
            out.append((pos, end))
    return out


def word_spans(text: str, language: str | None = None, *, punctuation: str = "strip") -> list[Span]:
    """Character spans ``(start, end)`` of the words of ``text``.

    Each script follows its own rule: runs of Han, kana and CJK punctuation are segmented (``language``
    ``"ja"``, or kana in a run of a text in any language but Chinese: fugashi/MeCab with unidic-lite;
    otherwise jieba), and every other run of non-space characters (Latin, Cyrillic, Hangul, digits ...)
    is one word, so a Russian word in a Chinese text stays whole.  ``punctuation="strip"`` trims leading and
    trailing Unicode punctuation (category P*) off each word and drops words made only of it (inner
    punctuation stays: ``it's``, ``e-mail``, ``U.S`` from ``U.S.``); ``"keep"`` keeps segments as they are.

    >>> word_spans("(yes) no", punctuation="keep"), word_spans("(yes) no")
    ([(0, 5), (6, 8)], [(1, 4), (6, 8)])
    >>> text = "Hello 世界 Привет"
    >>> [text[a:b] for a, b in word_spans(text, "zh")]
    ['Hello', '世界', 'Привет']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if punctuation not in ("strip", "keep"):
        raise ValueError(f"punctuation must be 'strip' or 'keep', got {punctuation!r}")
    raw = _script_segments(text, _lang_base(language))
    out: list[Span] = []
    for s, e in raw:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if punctuation == "strip":
            while s < e and _is_punct(text[s]):
                s += 1
            while e > s and _is_punct(text[e - 1]):
                e -= 1
        if s < e:
            out.append((s, e))
    return out
