"""Readers for parallel sentence data: the Tatoeba test set and SIB-200 (FLORES-200 topics).

Both live outside the project (``shared_data_dir()/"tatoeba"`` and
``shared_data_dir()/"sib-200"``; pass ``folder=`` to read a copy elsewhere).

* Tatoeba (LASER/XTREME similarity-search test set): ``tatoeba.<xxx>-eng.<xxx>``
  and ``tatoeba.<xxx>-eng.eng``, 1000 lines each, line i of one translating line
  i of the other.  The English side differs per language pair.
* SIB-200: ``<lang>/{train,dev,test}.tsv`` with header ``index_id, category,
  text`` (701 / 99 / 204 rows, 7 topics), written by pandas ``to_csv(sep="\\t")``:
  a text holding a quote is quoted and its quotes doubled, and is read back so.
  ``index_id`` and the row order are the same in every language, so the splits
  are sentence-parallel too; pairing goes by ``index_id``, never by position.

What a reader skipped or noticed is in the corpus's ``report``.

Example
-------
>>> import semanscope_nb as snb
>>> c = snb.read_tatoeba("de", limit=3)  # doctest: +SKIP
>>> c.source_language, c.target_language, len(c)  # doctest: +SKIP
('de', 'en', 3)
"""

from __future__ import annotations

import hashlib
import operator
import os
import re
from collections.abc import Sequence
from typing import Any
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from semanscope_nb.data.catalog import shared_data_dir
from semanscope_nb.data.concept_key import item_key, sampled_rows
from semanscope_nb.data.csv_reader import CsvRows, is_blank_record, physical_lines, read_text_file
from semanscope_nb.errors import ArgumentError, DatasetError

#: Tatoeba three-letter codes <-> the ISO 639-1 codes the rest of the package uses
TATOEBA_CODES = {
    "deu": "de", "fra": "fr", "spa": "es", "nld": "nl", "ita": "it", "por": "pt", "eng": "en",
    "cmn": "zh", "jpn": "ja", "ara": "ar", "kor": "ko", "rus": "ru",
}
#: SIB-200 (FLORES-200) folder names <-> ISO 639-1 codes
SIB200_CODES = {
    "eng_Latn": "en", "deu_Latn": "de", "fra_Latn": "fr", "spa_Latn": "es", "nld_Latn": "nl", "zho_Hans": "zh",
    "zho_Hant": "zh-TW", "jpn_Jpan": "ja", "arb_Arab": "ar", "kor_Hang": "ko", "rus_Cyrl": "ru",
}
SIB200_SPLITS = ("train", "dev", "test")


def tatoeba_dir(folder: str | os.PathLike | None = None) -> Path:
    """The Tatoeba folder (``folder`` or ``shared_data_dir()/"tatoeba"``)."""
    return Path(folder) if folder is not None else shared_data_dir() / "tatoeba"


def sib200_dir(folder: str | os.PathLike | None = None) -> Path:
    """The SIB-200 folder (``folder`` or ``shared_data_dir()/"sib-200"``)."""
    return Path(folder) if folder is not None else shared_data_dir() / "sib-200"


@dataclass(frozen=True)
class ParallelCorpus:
    """Aligned sentence lists: ``source_texts[i]`` translates ``target_texts[i]``."""

    name: str
    source_language: str
    target_language: str
    source_texts: tuple[str, ...]
    target_texts: tuple[str, ...]
    source: str
    sha256: str
    ids: tuple[str, ...] | None = None
    report: tuple[str, ...] = field(default=(), compare=False)

    def __len__(self) -> int:
        return len(self.source_texts)

    def texts_by_language(self) -> dict[str, list[str]]:
        """Source and target sentences under their languages (what :func:`semanscope_nb.embed` embeds)."""
        out = {self.source_language: list(dict.fromkeys(self.source_texts))}
        out.setdefault(self.target_language, [])
        out[self.target_language] = list(dict.fromkeys([*out[self.target_language], *self.target_texts]))
        return out

    def head(self, n: int) -> "ParallelCorpus":
        """The first ``n`` pairs."""
        return replace(self, source_texts=self.source_texts[:n], target_texts=self.target_texts[:n],
                       ids=self.ids[:n] if self.ids else None)


def _read_lines(path: Path) -> tuple[list[str], str]:
    """Physical lines of a UTF-8 text file (ends stripped; split only at ``\\r``/``\\n``) and the file's SHA-256."""
    text, sha = read_text_file(path)
    return [ln.rstrip("\r\n") for ln in physical_lines(text)], sha


def _tatoeba_code(language: str) -> str:
    lang = language.strip()
    if lang in TATOEBA_CODES:
        return lang
    back = {iso: code for code, iso in TATOEBA_CODES.items()}
    if lang in back:
        return back[lang]
    raise DatasetError(f"unknown Tatoeba language '{language}'; known: {', '.join(sorted(TATOEBA_CODES))} (or ISO codes)")


def tatoeba_languages(folder: str | os.PathLike | None = None) -> list[str]:
    """Tatoeba codes with both files present in the folder."""
    d = tatoeba_dir(folder)
    out = []
    for p in sorted(d.glob("tatoeba.*-eng.eng")):
        code = p.name.split(".")[1].split("-")[0]
        if (d / f"tatoeba.{code}-eng.{code}").exists():
            out.append(code)
    return out


def read_tatoeba(language: str, *, folder: str | os.PathLike | None = None, limit: int | None = None) -> ParallelCorpus:
    """Read the Tatoeba test pairs of ``language`` (``deu`` or ``de``) -> English, aligned by line.

    Lines end only at ``\\r``/``\\n`` (a U+2028 inside a sentence does not
    shift the pairing).  Differing line counts or an empty line are errors
    naming the file and line; quotes are plain text (the files are not CSV).
    """
    code = _tatoeba_code(language)
    d = tatoeba_dir(folder)
    if not d.is_dir():
        raise DatasetError(f"Tatoeba folder '{d}' not found (set SEMANSCOPE_SHARED_DATA or pass folder=)")
    src_path, eng_path = d / f"tatoeba.{code}-eng.{code}", d / f"tatoeba.{code}-eng.eng"
    src, sha_s = _read_lines(src_path)
    eng, sha_e = _read_lines(eng_path)
    if len(src) != len(eng):
        raise DatasetError(f"Tatoeba files are misaligned: {src_path} has {len(src)} lines, {eng_path} has {len(eng)}")
    for path, lines in ((src_path, src), (eng_path, eng)):
        empty = [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
        if empty:
            raise DatasetError(f"{path}: line {empty[0]}: empty sentence ({len(empty)} empty line(s))")
    report = []
    if limit is not None:
        try:
            whole = not isinstance(limit, bool) and operator.index(limit) >= 1  # True is not one pair, 2.5 not a count
        except TypeError:
            whole = False
        if not whole:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        if limit < len(src):
            report.append(f"{src_path} | {eng_path}: first {limit} of {len(src)} pairs kept (limit={limit})")
        src, eng = src[:limit], eng[:limit]
    sha = hashlib.sha256(f"{sha_s}\0{sha_e}".encode()).hexdigest()
    return ParallelCorpus(f"tatoeba-{code}-eng", TATOEBA_CODES.get(code, code), "en", tuple(src), tuple(eng),
                          f"{src_path} | {eng_path}", sha, report=tuple(report))


@dataclass(frozen=True)
class LabelledTexts:
    """One SIB-200 split of one language: ids, topic labels and sentences, in file order."""

    language: str  # ISO code when known, else the folder name
    split: str
    ids: tuple[str, ...]
    labels: tuple[str, ...]
    texts: tuple[str, ...]
    source: str
    sha256: str
    report: tuple[str, ...] = field(default=(), compare=False)
    line_numbers: tuple[int, ...] = field(default=(), compare=False)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def name(self) -> str:
        return f"sib200-{self.language}-{self.split}"

    def texts_by_language(self) -> dict[str, list[str]]:
        """The split's texts under its language (what :func:`semanscope_nb.embed` embeds)."""
        return {self.language: list(dict.fromkeys(self.texts))}

    def _pick(self, keep: Sequence[int]) -> LabelledTexts:
        def pick(xs: Sequence) -> tuple:
            return tuple(xs[i] for i in keep)

        return replace(self, ids=pick(self.ids), labels=pick(self.labels), texts=pick(self.texts),
                       line_numbers=pick(self.line_numbers) if self.line_numbers else ())

    def head(self, n: int) -> "LabelledTexts":
        """The first ``n`` rows."""
        return self._pick(range(min(n, len(self))))

    def sample(self, n: int, *, seed: int = 0) -> "LabelledTexts":
        """``n`` rows drawn without replacement (seeded), kept in file order (the files are sorted by topic).

        Drawn over the rows in canonical order (:func:`~semanscope_nb.data.concept_key.sampled_rows`), keyed by
        id and topic: the same rows whatever order the file lists them in, and the same ids in every language
        of a split (a row's id names the same FLORES sentence in each).
        """
        if n >= len(self):
            return self
        return self._pick(sampled_rows([item_key(i, lab) for i, lab in zip(self.ids, self.labels)], n, seed=seed))


def limited_splits(train: "LabelledTexts", test: "LabelledTexts", *, max_train: int | None, max_test: int | None,
                   seed: int) -> tuple["LabelledTexts", "LabelledTexts", dict[str, Any]]:
    """(train, test, what was drawn): at most ``max_train`` / ``max_test`` rows, drawn at random (seeded, no strata).

    The one rule every SIB-200 path limits its splits by (the files are sorted
    by topic, so the first N rows are one or two topics): the train rows are
    :meth:`LabelledTexts.sample` with ``seed``, the test rows with ``seed + 1``;
    ``None`` keeps a split whole.  The third value goes into provenance.

    >>> tr = LabelledTexts("en", "train", ("1", "2", "3"), ("a", "a", "b"), ("x", "y", "z"), "<memory>", "s1")
    >>> a, b, info = limited_splits(tr, tr, max_train=2, max_test=None, seed=0)
    >>> len(a), len(b), info["train_seed"], info["test_seed"]
    (2, 3, 0, 1)
    """
    for name, n in (("max_train", max_train), ("max_test", max_test)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
            raise ValueError(f"{name} must be an integer >= 1 or None, got {n!r}")
    info = {"max_train": max_train, "max_test": max_test, "train_seed": int(seed), "test_seed": int(seed) + 1,
            "sampling": "uniform without replacement, kept in file order"}
    if max_train is not None:
        train = train.sample(int(max_train), seed=int(seed))
    if max_test is not None:
        test = test.sample(int(max_test), seed=int(seed) + 1)
    return train, test, info


@dataclass(frozen=True)
class LabelledSplits:
    """A labelled train split and a test split (kNN classification: the train rows are the memory).

    They may be in different languages (cross-lingual transfer: train en, test zh).

    >>> tr = LabelledTexts("en", "train", ("1", "2"), ("a", "b"), ("x", "y"), "<memory>", "s1")
    >>> te = LabelledTexts("zh", "test", ("3",), ("a",), ("z",), "<memory>", "s2")
    >>> LabelledSplits(tr, te).texts_by_language()
    {'en': ['x', 'y'], 'zh': ['z']}
    """

    train: LabelledTexts
    test: LabelledTexts

    @property
    def name(self) -> str:
        return self.test.name if self.train.language == self.test.language and self.train.split == "train" else \
            f"{self.train.name}->{self.test.name}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.train.sha256}\0{self.test.sha256}".encode()).hexdigest()

    @property
    def source(self) -> str:
        return f"{self.train.source} | {self.test.source}"

    @property
    def report(self) -> tuple[str, ...]:
        return (*self.train.report, *self.test.report)

    @property
    def labels(self) -> tuple[str, ...]:
        return (*self.train.labels, *self.test.labels)

    def __len__(self) -> int:
        return len(self.test)

    def texts_by_language(self) -> dict[str, list[str]]:
        """Train and test texts under their languages (one list when they share a language)."""
        out: dict[str, list[str]] = {}
        for part in (self.train, self.test):
            out[part.language] = list(dict.fromkeys([*out.get(part.language, []), *part.texts]))
        return out


def _sib_folder(language: str) -> str:
    if not isinstance(language, str):
        raise ArgumentError(f"SIB-200 language must be a code such as 'eng_Latn' or 'en', got {language!r}")
    lang = language.strip()
    if lang in SIB200_CODES:
        return lang
    back = {iso: code for code, iso in SIB200_CODES.items()}
    if lang in back:
        return back[lang]
    if not re.fullmatch(r"[A-Za-z]{2,8}(?:_[A-Za-z0-9]{2,8})?", lang):  # a folder name, never a path ('../x', 'a/b')
        raise ArgumentError(f"SIB-200 language {language!r} is not a FLORES code such as 'eng_Latn' or an ISO code such as 'en'")
    return lang  # any other FLORES code the user has on disk


def sib200_languages(folder: str | os.PathLike | None = None) -> list[str]:
    """SIB-200 language folders present (each with a train.tsv)."""
    d = sib200_dir(folder)
    return sorted(p.parent.name for p in d.glob("*/train.tsv"))


def read_sib200(language: str, split: str = "train", *, folder: str | os.PathLike | None = None) -> LabelledTexts:
    """Read ``<folder>/<language>/<split>.tsv`` (``language``: ``eng_Latn`` or ``en``).

    Quoted fields are unquoted as pandas wrote them (a quote inside a quoted
    field is doubled).  A missing column, a row without exactly three fields, an
    empty id/label/text, a repeated ``index_id`` or an unbalanced quote is an
    error naming file and (physical) line.  Skipped blank lines are in ``report``.
    """
    if split not in SIB200_SPLITS:
        raise ValueError(f"split must be one of {SIB200_SPLITS}, got {split!r}")
    code = _sib_folder(language)
    path = sib200_dir(folder) / code / f"{split}.tsv"
    if not path.exists():
        have = ", ".join(sib200_languages(folder)) or "none"
        raise DatasetError(f"{path}: file not found (SIB-200 languages present: {have}; set SEMANSCOPE_SHARED_DATA or pass folder=)")
    text, sha = read_text_file(path)
    rows = iter(CsvRows(path, text, delimiter="\t"))
    header = next(rows, None)
    want = ["index_id", "category", "text"]
    if header is None or [h.strip() for h in header.fields] != want:
        got = None if header is None else header.fields
        raise DatasetError(f"{path}: line {1 if header is None else header.line}: header must be {want}, got {got}")
    ids, labels, texts, lines = [], [], [], []
    first_line: dict[str, int] = {}
    blank: list[int] = []
    report: list[str] = []
    for row in rows:
        if is_blank_record(row.fields):
            blank.append(row.line)
            continue
        if len(row.fields) != 3:
            raise DatasetError(
                f"{path}: line {row.line}: {len(row.fields)} field(s), expected 3 (index_id, category, text); "
                "a text holding a tab must be quoted"
            )
        for col, val in zip(want, row.fields):
            if not val.strip():
                raise DatasetError(f"{path}: line {row.line}: empty '{col}'")
        idx = row.fields[0].strip()
        if idx in first_line:
            raise DatasetError(
                f"{path}: line {row.line}: index_id {idx} repeats line {first_line[idx]} "
                "(ids pair the languages, so each must be unique)"
            )
        first_line[idx] = row.line
        if row.end_line > row.line:
            report.append(f"{path}: lines {row.line}-{row.end_line}: one row (a quoted text holds a line break)")
        ids.append(idx)
        labels.append(row.fields[1].strip())
        texts.append(row.fields[2].strip())
        lines.append(row.line)
    if not texts:
        raise DatasetError(f"{path}: no rows after the header")
    if blank:
        report.insert(0, f"{path}: {len(blank)} blank line(s) skipped (lines {', '.join(map(str, blank[:20]))})")
    return LabelledTexts(SIB200_CODES.get(code, code), split, tuple(ids), tuple(labels), tuple(texts), str(path), sha,
                         tuple(report), tuple(lines))


def sib200_parallel(
    source_language: str, target_language: str = "eng_Latn", *, split: str = "test", folder: str | os.PathLike | None = None
) -> ParallelCorpus:
    """SIB-200 sentences of two languages aligned by ``index_id`` (a FLORES-200 bitext).

    Both files must hold the same ids (each once) with the same topic label;
    an id missing on either side or a label that differs is an error naming
    the files and lines, never a shorter or shifted pairing.
    """
    a = read_sib200(source_language, split, folder=folder)
    b = read_sib200(target_language, split, folder=folder)
    a_at = {i: k for k, i in enumerate(a.ids)}
    b_at = {i: k for k, i in enumerate(b.ids)}

    def where(c: LabelledTexts, ids: list[str], at: dict[str, int]) -> str:
        shown = ", ".join(f"{i} (line {c.line_numbers[at[i]]})" for i in ids[:5])
        return shown + (f", ... ({len(ids)} in all)" if len(ids) > 5 else "")

    only_a = [i for i in a.ids if i not in b_at]
    only_b = [i for i in b.ids if i not in a_at]
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"index_id(s) of {a.source} missing from {b.source}: {where(a, only_a, a_at)}")
        if only_b:
            parts.append(f"index_id(s) of {b.source} missing from {a.source}: {where(b, only_b, b_at)}")
        raise DatasetError("SIB-200 files do not pair up: " + "; ".join(parts))
    differ = [i for i in a.ids if a.labels[a_at[i]] != b.labels[b_at[i]]]
    if differ:
        i = differ[0]
        raise DatasetError(
            f"SIB-200 files disagree on {len(differ)} topic label(s): index_id {i} is '{a.labels[a_at[i]]}' on line "
            f"{a.line_numbers[a_at[i]]} of {a.source} but '{b.labels[b_at[i]]}' on line {b.line_numbers[b_at[i]]} of {b.source}"
        )
    return ParallelCorpus(
        f"sib200-{split}-{_sib_folder(source_language)}-{_sib_folder(target_language)}", a.language, b.language,
        a.texts, tuple(b.texts[b_at[i]] for i in a.ids), f"{a.source} | {b.source}",
        hashlib.sha256((a.sha256 + b.sha256).encode()).hexdigest(), ids=a.ids, report=a.report + b.report,
    )


# --------------------------------------------------------------------------- code-switched corpora (LinCE, PHINC)


@dataclass(frozen=True)
class TaggedSentences:
    """Token-level code-switched sentences with one language tag per token (LinCE style)."""

    name: str
    tokens: tuple[tuple[str, ...], ...]
    tags: tuple[tuple[str, ...], ...]
    source: str
    sha256: str
    report: tuple[str, ...] = field(default=(), compare=False)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def texts(self) -> tuple[str, ...]:
        """Sentences with their tokens joined by single spaces."""
        return tuple(" ".join(t) for t in self.tokens)

    def tag_counts(self) -> dict[str, int]:
        """How many tokens carry each language tag."""
        out: dict[str, int] = {}
        for sent in self.tags:
            for t in sent:
                out[t] = out.get(t, 0) + 1
        return dict(sorted(out.items()))

    def switch_points(self) -> tuple[int, ...]:
        """Per sentence: how often consecutive tokens of two different language tags (ignoring ``other_tags``) alternate."""
        out = []
        for sent in self.tags:
            langs = [t for t in sent if t.lower() not in _LINCE_NON_LANGUAGE]
            out.append(sum(1 for a, b in zip(langs, langs[1:]) if a != b))
        return tuple(out)


#: LinCE tags that are not a language (punctuation, named entities, mixed, ambiguous, unknown, foreign)
_LINCE_NON_LANGUAGE = {"other", "ne", "mixed", "ambiguous", "unk", "fw"}


def read_lince(path: str | os.PathLike, *, name: str | None = None) -> TaggedSentences:
    """Read a LinCE-style token-per-line file: ``token<TAB>language-tag`` lines, a blank line between sentences.

    Lines starting with ``# `` (e.g. ``# sent_enum = 12``) are comments.  A line
    without exactly two tab-separated fields (token and tag) is an error naming
    the file and line; so is an empty token or tag.  A LinCE test file has no
    tags (one field): it is refused, since code-switch statistics need them.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "dev.conll"
    >>> _ = p.write_text("# sent_enum = 0\\nI\\tlang1\\nlove\\tlang1\\ntacos\\tlang2\\n\\nok\\tlang1\\n", encoding="utf-8")
    >>> c = read_lince(p)
    >>> c.texts, c.switch_points()
    (('I love tacos', 'ok'), (1, 0))
    """
    p = Path(path)
    lines, sha = _read_lines(p)
    sentences: list[tuple[str, ...]] = []
    tags: list[tuple[str, ...]] = []
    cur_t: list[str] = []
    cur_g: list[str] = []
    report: list[str] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            if cur_t:
                sentences.append(tuple(cur_t))
                tags.append(tuple(cur_g))
                cur_t, cur_g = [], []
            continue
        if line.startswith("# ") or line == "#":
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DatasetError(f"{p}, line {no}: expected 'token<TAB>language-tag' (2 tab-separated fields), "
                               f"got {len(fields)} field(s): {line[:60]!r}")
        tok, tag = fields[0].strip(), fields[1].strip()
        if not tok or not tag:
            raise DatasetError(f"{p}, line {no}: empty {'token' if not tok else 'language tag'}")
        cur_t.append(tok)
        cur_g.append(tag)
    if cur_t:
        sentences.append(tuple(cur_t))
        tags.append(tuple(cur_g))
    if not sentences:
        raise DatasetError(f"{p}: no sentences (every line blank or a comment)")
    report.append(f"{len(sentences)} sentences, {sum(map(len, sentences))} tokens")
    return TaggedSentences(name or p.stem, tuple(sentences), tuple(tags), str(p), sha, tuple(report))


def read_phinc(
    path: str | os.PathLike,
    *,
    source_column: str | int = 0,
    target_column: str | int = 1,
    source_language: str = "hi-en",
    target_language: str = "en",
    name: str = "phinc",
) -> ParallelCorpus:
    """Read a PHINC-style CSV: a header row, then one (Hinglish sentence, English translation) pair per row.

    Columns are chosen by header name or position (default: the first two).
    Quoted cells may hold commas and line breaks.  An empty cell, a short row or
    an unknown column name is an error naming the file and line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "phinc.csv"
    >>> _ = p.write_text('Sentence,English_Translation\\nmain ghar ja raha hoon,I am going home\\n"haan, theek hai","yes, fine"\\n', encoding="utf-8")
    >>> c = read_phinc(p)
    >>> c.source_texts[1], c.target_texts[1], c.source_language
    ('haan, theek hai', 'yes, fine', 'hi-en')
    """
    p = Path(path)
    text, sha = read_text_file(p)
    rows = list(CsvRows(str(p), text, delimiter=","))
    if not rows:
        raise DatasetError(f"{p}: empty file (expected a header row and sentence pairs)")
    header = [h.strip() for h in rows[0].fields]

    def col(c: str | int, what: str) -> int:
        if isinstance(c, int):
            if not 0 <= c < len(header):
                raise DatasetError(f"{p}, line {rows[0].line}: {what}={c} but the header has {len(header)} column(s)")
            return c
        if c not in header:
            raise DatasetError(f"{p}, line {rows[0].line}: no column named {c!r} in the header {header}")
        return header.index(c)

    si, ti = col(source_column, "source_column"), col(target_column, "target_column")
    src: list[str] = []
    tgt: list[str] = []
    report: list[str] = []
    for r in rows[1:]:
        if is_blank_record(r.fields):
            continue
        if len(r.fields) <= max(si, ti):
            raise DatasetError(f"{p}, line {r.line}: {len(r.fields)} field(s), expected at least {max(si, ti) + 1}")
        s, t = r.fields[si].strip(), r.fields[ti].strip()
        if not s or not t:
            raise DatasetError(f"{p}, line {r.line}: empty {'sentence' if not s else 'translation'} cell")
        src.append(s)
        tgt.append(t)
    if not src:
        raise DatasetError(f"{p}: a header but no sentence pairs")
    report.append(f"{len(src)} sentence pairs")
    return ParallelCorpus(name, source_language, target_language, tuple(src), tuple(tgt), str(p), sha, None, tuple(report))
