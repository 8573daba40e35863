"""Sentence corpora for Concept Separation Curves: one-sentence-per-line files, the ESS questions, bundled sets.

A :class:`SentenceCorpus` is a named, single-language tuple of sentences with
the file it came from and that file's SHA-256 (for provenance).  Readers skip
what cannot be a sentence and say so in ``report``: blank lines (with their
line numbers), ``#`` comment lines, exact duplicates.  A corpus with no
sentence left is an error naming the file.

Example
-------
>>> import semanscope_nb as snb
>>> c = snb.load_sentence_corpus("csc-everyday-en")
>>> c.language, len(c) >= 150, c.sentences[0].endswith(".")
('en', True, True)
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence


from semanscope_nb.data.catalog import bundled_data_dir, shared_data_dir
from semanscope_nb.data.concept_key import item_key, sampled_rows
from semanscope_nb.data.csv_reader import CsvRows, is_blank_record, physical_lines, read_text_file
from semanscope_nb.data.languages import checked_language_code, language_code
from semanscope_nb.errors import DatasetError

#: The bundled CSC corpora (``data/<name>.txt``; the language is the name's suffix).
BUNDLED_SENTENCE_CORPORA = ("csc-skills-en", "csc-everyday-en", "csc-skills-de", "csc-everyday-de")


@dataclass(frozen=True)
class SentenceCorpus:
    """A named single-language list of sentences plus where it came from.

    >>> SentenceCorpus.from_sentences(["The train leaves at noon."], language="en").n_words()
    [5]
    """

    name: str
    language: str
    sentences: tuple[str, ...]
    source: str
    sha256: str
    report: tuple[str, ...] = field(default=(), compare=False)
    item_ids: tuple[str, ...] | None = field(default=None, compare=False)  # e.g. ESS item names, aligned with sentences

    def __post_init__(self) -> None:
        if not self.sentences:
            raise DatasetError(f"{self.source}: corpus '{self.name}' holds no sentences")
        if self.item_ids is not None and len(self.item_ids) != len(self.sentences):
            raise DatasetError(f"{self.source}: {len(self.item_ids)} item ids for {len(self.sentences)} sentences")

    def __len__(self) -> int:
        return len(self.sentences)

    def texts_by_language(self) -> dict[str, list[str]]:
        """The corpus's sentences under its language (what :func:`semanscope_nb.embed` embeds)."""
        return {self.language: list(dict.fromkeys(self.sentences))}

    @classmethod
    def from_sentences(
        cls, sentences: Iterable[str], *, language: str, name: str = "sentences", source: str | None = None
    ) -> "SentenceCorpus":
        """A corpus from an in-memory list (blank entries skipped and reported; index = list position)."""
        items = list(sentences)
        for i, s in enumerate(items):
            if not isinstance(s, str):
                raise DatasetError(f"{name}: sentences[{i}] is {type(s).__name__}, expected str")
        src = source or f"<list {name}>"
        kept, report = _clean(((i, s) for i, s in enumerate(items)), src, "item")
        sha = hashlib.sha256("\n".join(items).encode()).hexdigest()
        return cls(name, _code(language), tuple(s for _, s in kept), src, sha, tuple(report))

    def n_words(self) -> list[int]:
        """Whitespace word count of each sentence."""
        return [len(s.split()) for s in self.sentences]

    def filter_length(self, *, min_words: int | None = None, max_words: int | None = None) -> "SentenceCorpus":
        """Only sentences with ``min_words <= words <= max_words`` (the paper's length-filtered sets)."""
        keep = [i for i, n in enumerate(self.n_words()) if (min_words is None or n >= min_words) and (max_words is None or n <= max_words)]
        return self.subset(keep, suffix=f"len{min_words or 0}-{max_words if max_words is not None else 'inf'}")

    def sample(self, n: int | None, *, seed: int = 0) -> "SentenceCorpus":
        """A seeded random subset of ``n`` sentences in file order (all of them if ``n`` is None or >= len).

        Drawn over the sentences in canonical order (:func:`~semanscope_nb.data.concept_key.sampled_rows`),
        keyed by item id and sentence: the same sentences whatever order the file lists them in.
        """
        if n is None or n >= len(self):
            return self
        if n < 1:
            raise ValueError(f"sample size must be >= 1, got {n}")
        ids = self.item_ids if self.item_ids is not None else ("",) * len(self)
        keep = sampled_rows([item_key(i, s) for i, s in zip(ids, self.sentences)], n, seed=seed)
        return self.subset(keep, suffix=f"sample{n}-seed{seed}")

    def subset(self, indices: Sequence[int], *, suffix: str | None = None) -> "SentenceCorpus":
        idx = list(indices)
        if not idx:
            raise DatasetError(f"{self.source}: the selection left corpus '{self.name}' empty")
        return replace(
            self,
            name=f"{self.name}[{suffix}]" if suffix else self.name,
            sentences=tuple(self.sentences[i] for i in idx),
            item_ids=None if self.item_ids is None else tuple(self.item_ids[i] for i in idx),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sentences"] = list(self.sentences)
        d["report"] = list(self.report)
        d["item_ids"] = None if self.item_ids is None else list(self.item_ids)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SentenceCorpus":
        return cls(d["name"], d["language"], tuple(d["sentences"]), d["source"], d["sha256"], tuple(d.get("report", ())),
                   None if d.get("item_ids") is None else tuple(d["item_ids"]))


def _code(language: str) -> str:
    return checked_language_code(language)


def _clean(lines: Iterable[tuple[int, str]], source: str, unit: str, *, comment: str | None = None) -> tuple[list[tuple[int, str]], list[str]]:
    """Whitespace-normalised sentences; blank, comment and duplicate entries skipped and reported."""
    kept: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    blank: list[int] = []
    report: list[str] = []
    for no, raw in lines:
        text = " ".join(raw.split())
        if not text:
            blank.append(no)
            continue
        if comment and text.startswith(comment):
            continue
        if text in seen:
            report.append(f"{source}: {unit} {no}: duplicate of {unit} {seen[text]}; skipped")
            continue
        seen[text] = no
        kept.append((no, text))
    if blank:
        shown = ", ".join(map(str, blank[:10])) + (", ..." if len(blank) > 10 else "")
        report.insert(0, f"{source}: {len(blank)} empty {unit}(s) skipped ({unit}s {shown})")
    return kept, report


def read_sentences(
    path: str | os.PathLike, *, language: str, name: str | None = None, comment: str | None = "#"
) -> SentenceCorpus:
    """Read a UTF-8 file with one sentence per line.

    Blank lines and lines starting with ``comment`` are skipped (blank ones are
    listed in ``report``), as are exact duplicates (reported).  Lines end only
    at ``\\r``/``\\n``: a U+2028 or form feed inside a sentence does not split it.
    A one-word line is a valid sentence (it has one insertion point).  An
    empty file is an error.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.txt"
    >>> _ = p.write_text("# my sentences\\nThe train leaves at noon.\\n\\nRun.\\n", encoding="utf-8")
    >>> c = read_sentences(p, language="en")
    >>> c.sentences, c.report[0].endswith("(lines 3)")
    (('The train leaves at noon.', 'Run.'), True)
    """
    path = Path(path)
    text, sha = read_text_file(path)
    lines = ((i + 1, ln.rstrip("\r\n")) for i, ln in enumerate(physical_lines(text)))
    kept, report = _clean(lines, str(path), "line", comment=comment)
    if not kept:
        raise DatasetError(f"{path}: no sentences (the file is empty or holds only blank/comment lines)")
    return SentenceCorpus(name or path.stem, _code(language), tuple(s for _, s in kept), str(path), sha, tuple(report))


def ess_folder() -> Path:
    """Where the ESS questionnaire TSVs live: ``shared_data_dir() / "ess-mcsq"``."""
    return shared_data_dir() / "ess-mcsq"


def read_ess_questions(
    language: str = "en", *, folder: str | os.PathLike | None = None, path: str | os.PathLike | None = None
) -> SentenceCorpus:
    """The European Social Survey questions (rounds 1-6, MCSQ) as a corpus: ``study, item_name, text`` TSV.

    ``language`` picks ``ess_requests_unique_<language>.tsv`` in ``folder``
    (default :func:`ess_folder`); ``path`` reads one TSV directly (``.gz`` too).
    Item ids are ``<study>/<item_name>``; one item may hold several request
    segments, so an id may repeat (the shared files repeat 259 English and 291
    German ids), while a repeated text is skipped and reported.  A missing
    file, a missing column, a row with the wrong number of fields, an empty
    id or an unbalanced quote is an error naming file and (physical) line.

    >>> c = read_ess_questions("en")  # doctest: +SKIP
    >>> c.name, len(c)  # doctest: +SKIP
    ('ess-en', 1425)
    """
    code = _code(language)
    p = Path(path) if path is not None else Path(folder or ess_folder()) / f"ess_requests_unique_{code}.tsv"
    if not p.exists():
        raise DatasetError(f"{p}: ESS questions not found (set SEMANSCOPE_SHARED_DATA, or pass folder=/path=)")
    text, sha = read_text_file(p)
    rows = iter(CsvRows(p, text, delimiter="\t"))
    first = next(rows, None)
    if first is None:
        raise DatasetError(f"{p}: empty file (expected a header 'study, item_name, text')")
    header = [h.strip().lower() for h in first.fields]
    missing = [c for c in ("study", "item_name", "text") if c not in header]
    if missing:
        raise DatasetError(f"{p}: line {first.line}: missing column(s) {missing}; header is {first.fields}")
    js, ji, jt = (header.index(c) for c in ("study", "item_name", "text"))
    lines, ids, spans = [], {}, []
    for row in rows:
        fields = row.fields
        if is_blank_record(fields):
            lines.append((row.line, ""))
            continue
        if len(fields) != len(header):
            raise DatasetError(f"{p}: line {row.line}: {len(fields)} fields, the header has {len(header)} (tab-separated)")
        study, item = fields[js].strip(), fields[ji].strip()
        if not study or not item:
            raise DatasetError(f"{p}: line {row.line}: empty '{'study' if not study else 'item_name'}'")
        if row.end_line > row.line:
            spans.append(f"{p}: lines {row.line}-{row.end_line}: one question (a quoted text holds a line break)")
        lines.append((row.line, fields[jt]))
        ids[row.line] = f"{study}/{item}"
    kept, report = _clean(lines, str(p), "line")
    if not kept:
        raise DatasetError(f"{p}: no questions after the header")
    return SentenceCorpus(f"ess-{code}", code, tuple(s for _, s in kept), str(p), sha, tuple(report + spans),
                          tuple(ids[no] for no, _ in kept))


def list_sentence_corpora(folder: str | os.PathLike | None = None) -> list[str]:
    """Names of the bundled CSC corpora present in ``folder`` (default: the bundled data folder)."""
    root = Path(folder) if folder is not None else bundled_data_dir()
    return [n for n in BUNDLED_SENTENCE_CORPORA if (root / f"{n}.txt").exists()]


def load_sentence_corpus(name_or_path: str | os.PathLike, *, language: str | None = None) -> SentenceCorpus:
    """A bundled corpus by name (``csc-skills-en``...), ``ess-<lang>``, or any one-sentence-per-line file.

    The language of a bundled corpus or of a file named ``*-<lang>.txt`` comes
    from its name; otherwise pass ``language=``.
    """
    s = str(name_or_path)
    if s.startswith("ess-") and not Path(s).exists():
        return read_ess_questions(language or s[4:])
    p = Path(s)
    if not p.exists():
        candidate = bundled_data_dir() / f"{s}.txt"
        if not candidate.exists():
            raise DatasetError(
                f"unknown sentence corpus '{s}'; bundled: {', '.join(list_sentence_corpora()) or '(none found)'}; "
                "'ess-en' / 'ess-de' for the ESS questions; or a path to a one-sentence-per-line file"
            )
        p = candidate
    if language is None:
        suffix = p.stem.rsplit("-", 1)[-1]
        if language_code(suffix) is None:
            raise DatasetError(f"{p}: cannot tell the language from the file name; pass language=")
        language = suffix
    return read_sentences(p, language=language)
