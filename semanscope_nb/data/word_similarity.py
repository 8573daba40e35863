"""Word similarity in context: the BCWS (English-Chinese) and SCWS (English) readers of paper 001.

Both files live outside the project, in ``shared_data_dir()/"contextual"`` (pass ``path=`` to read a
copy elsewhere).  Each reader returns a :class:`ContextPairs`: for pair ``i``, sentence
``sentences1[i]`` with its target word at the character span ``spans1[i]``, the same for side 2, the
average human score ``scores[i]`` and (BCWS only) the 11 annotators' scores.

* **BCWS** (Chi and Chen 2018), 4 lines per instance: the two targets' POS tags; a Chinese sentence
  (Traditional script) with its target in ``<angle brackets>``; an English sentence with its target in
  ``<angle brackets>``; 11 scores (0-10) followed by their average (as printed: rounded to 2 decimals,
  checked to 0.005).  Side 1 is Chinese and side 2 English, in file order.  The brackets are removed from
  the sentence and the span points at the word they held; a bracket that opens no ``<word>`` group (the
  arrow in ``-> refer to``) is plain text.  :meth:`ContextPairs.converted` gives the Chinese side in
  Simplified script (OpenCC ``t2s``), spans kept exact.
* **SCWS** (Huang et al. 2012) as prepared by paper 001's first author: two lines per pair, each
  ``<whitespace-tokenised sentence> TAB <0-based target token index> TAB <average score 0-10>``; lines
  2k-1 and 2k form pair k and must carry the same score.  Tokens are separated by single spaces (the
  sentence is kept as written; the span points at token ``index``).

A malformed instance is a :class:`~semanscope_nb.errors.DatasetError` naming the file and line.

Example
-------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "scws.txt"
>>> _ = p.write_text("the bank of the river\\t1\\t7.5\\nthe bank lent money\\t1\\t7.5\\n", encoding="utf-8")
>>> d = read_scws(p)
>>> d.targets1, d.spans2, float(d.scores[0])
(('bank',), ((4, 8),), 7.5)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from semanscope_nb.data.catalog import shared_data_dir
from semanscope_nb.data.concept_key import item_key, sampled_rows
from semanscope_nb.data.csv_reader import physical_lines, read_text_file
from semanscope_nb.errors import DatasetError

__all__ = ["ContextPairs", "contextual_data_dir", "read_bcws", "read_scws"]

Span = tuple[int, int]
_TARGET = re.compile(r"<([^<>\r\n]+)>")  # one non-empty <word> group; a lone '<' or '>' is plain text
BCWS_ANNOTATORS = 11
_AVERAGE_TOLERANCE = 0.005 + 1e-9  # the file prints the average rounded to 2 decimals


def contextual_data_dir(folder: str | os.PathLike | None = None) -> Path:
    """The folder of ``bcws.txt`` and ``scws.txt`` (``folder`` or ``shared_data_dir()/"contextual"``).

    >>> contextual_data_dir("/tmp/x").name
    'x'
    """
    return Path(folder) if folder is not None else shared_data_dir() / "contextual"


@dataclass(frozen=True, eq=False)
class ContextPairs:
    """Pairs of target words in context with human similarity scores.

    Pair ``i``: ``sentences1[i][slice(*spans1[i])]`` is the first target (language ``language1``),
    the same for side 2; ``scores[i]`` the average human score; ``annotators`` the per-annotator
    scores (pairs x annotators; None when the file gives only the average); ``lines[i]`` the
    1-based line of the file where pair ``i`` starts; ``pos`` the POS tags of the two targets (BCWS).
    """

    name: str
    language1: str
    language2: str
    sentences1: tuple[str, ...]
    spans1: tuple[Span, ...]
    sentences2: tuple[str, ...]
    spans2: tuple[Span, ...]
    scores: np.ndarray
    annotators: np.ndarray | None
    lines: tuple[int, ...]
    source: str
    sha256: str
    pos: tuple[tuple[str, str], ...] | None = None
    report: tuple[str, ...] = field(default=())
    #: each pair's key as read from its file (:meth:`pair_keys`); kept by :meth:`subset` and :meth:`converted`
    item_keys: tuple[str, ...] | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def targets1(self) -> tuple[str, ...]:
        """The side-1 target words."""
        return tuple(s[a:b] for s, (a, b) in zip(self.sentences1, self.spans1))

    @property
    def targets2(self) -> tuple[str, ...]:
        """The side-2 target words."""
        return tuple(s[a:b] for s, (a, b) in zip(self.sentences2, self.spans2))

    @property
    def n_annotators(self) -> int:
        return 0 if self.annotators is None else int(self.annotators.shape[1])

    def head(self, n: int) -> ContextPairs:
        """The first ``n`` pairs."""
        return self.subset(range(min(int(n), len(self))))

    def subset(self, rows) -> ContextPairs:
        """The pairs at ``rows`` (in that order)."""
        rows = [int(r) for r in rows]

        def pick(xs):
            return None if xs is None else tuple(xs[r] for r in rows)

        return replace(self, sentences1=pick(self.sentences1), spans1=pick(self.spans1), sentences2=pick(self.sentences2),
                       spans2=pick(self.spans2), scores=self.scores[rows],
                       annotators=None if self.annotators is None else self.annotators[rows],
                       lines=pick(self.lines), pos=pick(self.pos), item_keys=tuple(self.pair_keys()[r] for r in rows))

    def sample(self, n: int, *, seed: int = 0) -> ContextPairs:
        """A seeded sample of ``n`` pairs (file order kept); all pairs when ``n >= len(self)``.

        Drawn over the pairs in canonical order (:func:`~semanscope_nb.data.concept_key.sampled_rows`, each pair
        keyed by its two sentences and target spans): the same pairs whatever order the file lists them in.
        """
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if n >= len(self):
            return self
        return self.subset(sampled_rows(self.pair_keys(), int(n), seed=seed))

    def pair_keys(self) -> list[str]:
        """Each pair's key (:func:`~semanscope_nb.data.concept_key.item_key` of its sentences and spans as read from
        the file): the order seeded draws over pairs are made in.  A script conversion (:meth:`converted`) keeps the
        keys, so sampling before or after converting picks the same pairs."""
        if self.item_keys is not None:
            return list(self.item_keys)
        return [item_key(s1, *sp1, s2, *sp2) for s1, sp1, s2, sp2 in zip(self.sentences1, self.spans1, self.sentences2, self.spans2)]

    def converted(self, config: str = "t2s") -> ContextPairs:
        """The Chinese side(s) converted with OpenCC (``"t2s"``: Traditional -> Simplified; ``"s2t"``: back).

        Each sentence is converted in three pieces (before, target, after) so the target's span stays
        exact even where a conversion changes a length.  Other languages are left as they are.
        """
        from opencc import OpenCC  # opencc-python-reimplemented: pure-Python OpenCC tables, no C build

        if config not in ("t2s", "s2t"):
            raise ValueError(f"config must be 't2s' or 's2t', got {config!r}")
        cc = OpenCC(config)

        def side(lang: str, sents: tuple[str, ...], spans: tuple[Span, ...]):
            if not lang.startswith("zh"):
                return sents, spans
            out_s, out_p = [], []
            for s, (a, b) in zip(sents, spans):
                pre, word, post = cc.convert(s[:a]), cc.convert(s[a:b]), cc.convert(s[b:])
                out_s.append(pre + word + post)
                out_p.append((len(pre), len(pre) + len(word)))
            return tuple(out_s), tuple(out_p)

        s1, p1 = side(self.language1, self.sentences1, self.spans1)
        s2, p2 = side(self.language2, self.sentences2, self.spans2)
        note = f"Chinese side converted with OpenCC {config} (opencc-python-reimplemented)"
        return replace(self, name=f"{self.name}-{config}", sentences1=s1, spans1=p1, sentences2=s2, spans2=p2,
                       item_keys=tuple(self.pair_keys()),
                       report=self.report + (note,))


def _target(path: Path, line_no: int, text: str, what: str) -> tuple[str, Span]:
    groups = list(_TARGET.finditer(text))
    if len(groups) != 1:
        raise DatasetError(f"{path}: line {line_no}: the {what} sentence must mark exactly one target as <word>, "
                           f"found {len(groups)} in {text[:80]!r}")
    m = groups[0]
    word = m.group(1)
    if not word.strip():
        raise DatasetError(f"{path}: line {line_no}: the {what} target <{word}> is blank")
    clean = text[:m.start()] + word + text[m.end():]
    return clean, (m.start(), m.start() + len(word))


def _lines(path: Path) -> tuple[list[str], str]:
    text, sha = read_text_file(path)
    lines = [ln.rstrip("\r\n") for ln in physical_lines(text)]
    while lines and not lines[-1].strip():  # trailing blank lines at the end of the file
        lines.pop()
    if not lines:
        raise DatasetError(f"{path}: the file is empty")
    return lines, sha


def _floats(path: Path, line_no: int, text: str, what: str) -> list[float]:
    out = []
    for col, tok in enumerate(text.split(), start=1):
        try:
            v = float(tok)
        except ValueError:
            raise DatasetError(f"{path}: line {line_no}: {what} field {col} is not a number: {tok!r}") from None
        if not np.isfinite(v) or not 0.0 <= v <= 10.0:
            raise DatasetError(f"{path}: line {line_no}: {what} field {col} = {tok} is outside 0..10")
        out.append(v)
    return out


def read_bcws(path: str | os.PathLike | None = None) -> ContextPairs:
    """Read BCWS (``bcws.txt``; default: ``contextual_data_dir()/"bcws.txt"``): Chinese-English pairs in context.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "bcws.txt"
    >>> _ = p.write_text("n n\\n我去<銀行>存錢。\\nThe <bank> lent money.\\n" + "8 " * 11 + "8.0\\n", encoding="utf-8")
    >>> d = read_bcws(p)
    >>> d.targets1, d.targets2, d.annotators.shape, d.language1
    (('銀行',), ('bank',), (1, 11), 'zh')
    """
    p = Path(path) if path is not None else contextual_data_dir() / "bcws.txt"
    if not p.exists():
        raise DatasetError(f"{p}: file not found (set SEMANSCOPE_SHARED_DATA or pass path=)")
    lines, sha = _lines(p)
    if len(lines) % 4:
        raise DatasetError(f"{p}: {len(lines)} lines is not a multiple of 4 (POS tags, Chinese sentence, English "
                           f"sentence, scores per instance): the last instance, from line {len(lines) - len(lines) % 4 + 1}, "
                           "is incomplete")
    s1, p1, s2, p2, scores, ann, starts, pos = [], [], [], [], [], [], [], []
    for k in range(0, len(lines), 4):
        tags, zh, en, sc = lines[k:k + 4]
        n = k + 1
        parts = tags.split()
        if len(parts) != 2 or _TARGET.search(tags):
            raise DatasetError(f"{p}: line {n}: expected the two targets' POS tags (e.g. 'n v'), got {tags!r}")
        z, zs = _target(p, n + 1, zh, "Chinese")
        e, es = _target(p, n + 2, en, "English")
        vals = _floats(p, n + 3, sc, "score")
        if len(vals) != BCWS_ANNOTATORS + 1:
            raise DatasetError(f"{p}: line {n + 3}: expected {BCWS_ANNOTATORS} annotator scores and their average "
                               f"({BCWS_ANNOTATORS + 1} numbers), got {len(vals)}")
        mean = float(np.mean(vals[:BCWS_ANNOTATORS]))
        if abs(mean - vals[-1]) > _AVERAGE_TOLERANCE:
            raise DatasetError(f"{p}: line {n + 3}: the last number {vals[-1]} is not the average of the "
                               f"{BCWS_ANNOTATORS} scores before it ({mean:.4f})")
        s1.append(z), p1.append(zs), s2.append(e), p2.append(es)
        scores.append(vals[-1]), ann.append(vals[:BCWS_ANNOTATORS]), starts.append(n), pos.append((parts[0], parts[1]))
    report = (f"{p}: {len(scores)} instances (4 lines each); Chinese side in Traditional script as published",)
    return ContextPairs("bcws", "zh", "en", tuple(s1), tuple(p1), tuple(s2), tuple(p2), np.asarray(scores, dtype=np.float64),
                        np.asarray(ann, dtype=np.float64), tuple(starts), str(p), sha, tuple(pos), report)


def _scws_side(path: Path, line_no: int, line: str) -> tuple[str, Span, float]:
    cols = line.split("\t")
    if len(cols) != 3:
        raise DatasetError(f"{path}: line {line_no}: expected 'sentence TAB target index TAB score' "
                           f"(3 tab-separated fields), got {len(cols)}")
    sentence, index, score = cols
    if not sentence.strip():
        raise DatasetError(f"{path}: line {line_no}: the sentence is empty")
    try:
        i = int(index)
    except ValueError:
        raise DatasetError(f"{path}: line {line_no}: field 2 (target index) is not an integer: {index!r}") from None
    tokens = sentence.split(" ")
    if not 0 <= i < len(tokens):
        raise DatasetError(f"{path}: line {line_no}: target index {i} is outside the sentence's {len(tokens)} tokens "
                           "(0-based)")
    if not tokens[i]:
        raise DatasetError(f"{path}: line {line_no}: token {i} is empty (two spaces in a row)")
    start = sum(len(t) + 1 for t in tokens[:i])
    values = _floats(path, line_no, score, "score")
    if len(values) != 1:
        raise DatasetError(f"{path}: line {line_no}: field 3 must be one score, got {score!r}")
    return sentence, (start, start + len(tokens[i])), values[0]


def read_scws(path: str | os.PathLike | None = None) -> ContextPairs:
    """Read SCWS (``scws.txt``; default: ``contextual_data_dir()/"scws.txt"``): English pairs in context.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scws.txt"
    >>> _ = p.write_text("a b c\\t2\\t3.0\\nd e\\t0\\t3.0\\n", encoding="utf-8")
    >>> read_scws(p).targets1 + read_scws(p).targets2
    ('c', 'd')
    """
    p = Path(path) if path is not None else contextual_data_dir() / "scws.txt"
    if not p.exists():
        raise DatasetError(f"{p}: file not found (set SEMANSCOPE_SHARED_DATA or pass path=)")
    lines, sha = _lines(p)
    if len(lines) % 2:
        raise DatasetError(f"{p}: {len(lines)} lines is odd: pairs take two lines each (line {len(lines)} has no partner)")
    s1, p1, s2, p2, scores, starts = [], [], [], [], [], []
    for k in range(0, len(lines), 2):
        a, sa, va = _scws_side(p, k + 1, lines[k])
        b, sb, vb = _scws_side(p, k + 2, lines[k + 1])
        if va != vb:
            raise DatasetError(f"{p}: lines {k + 1}-{k + 2}: the two lines of a pair carry different scores ({va} vs {vb})")
        s1.append(a), p1.append(sa), s2.append(b), p2.append(sb), scores.append(va), starts.append(k + 1)
    report = (f"{p}: {len(scores)} pairs (2 lines each)",)
    return ContextPairs("scws", "en", "en", tuple(s1), tuple(p1), tuple(s2), tuple(p2), np.asarray(scores, dtype=np.float64),
                        None, tuple(starts), str(p), sha, None, report)
