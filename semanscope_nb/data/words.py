"""Word datasets: the Semanscope CSV format, per-language word lists, bundled data.

A dataset is a table of concept rows; each row holds, for every language, one or
more alternative words (``bank|shore``).  The reader is strict about what would
silently change a score (misaligned rows, empty cells, bad encodings) and
reports what a user should know about (duplicates, ignored columns).

Example
-------
>>> import semanscope_nb as snb
>>> ds = snb.load_dataset("conceptual-space", languages=["en", "zh"])
>>> ds.languages
('en', 'zh')
"""

from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import io
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Literal, Mapping, Sequence

import langcodes
import pandas as pd

from semanscope_nb.errors import DatasetError

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
GROUP_COLUMNS = ("category", "group", "domain", "concept_group")
ALTERNATIVE_SEPARATOR = "|"
_TAG = re.compile(r"[a-z]{2,3}([-_][a-z0-9]{2,8})*")


def language_name(code: str) -> str:
    """The English name of a language code, from ``langcodes`` (any BCP 47 tag).

    >>> language_name("ka"), language_name("zh-TW")
    ('Georgian', 'Chinese (Taiwan)')
    """
    # langcodes (with language_data) carries the CLDR / IANA registry of every
    # ISO 639 code and its names in many languages: a maintained source instead
    # of a hand table, so Georgian, Armenian, ... need no edit here.
    return langcodes.Language.get(code).display_name()


#: English names of the codes above (more via :func:`language_name`)
LANGUAGE_NAMES: dict[str, str] = {code: language_name(code) for code in LANGUAGE_ALIASES}


@functools.lru_cache(maxsize=4096)
def _code_from_langcodes(key: str) -> str | None:
    if key in GROUP_COLUMNS:
        return None
    if _TAG.fullmatch(key):  # an ISO 639 code or a BCP 47 tag: ka, kat, geo, hy-AM, zh_hant
        try:
            lang = langcodes.Language.get(key.replace("_", "-"))
        except (ValueError, LookupError):
            lang = None
        # three-letter words are accepted only when they are a code of a two-letter language (kat, hye),
        # so that a column named "tag" or "row" is not read as some rare language
        if lang is not None and lang.is_valid() and lang.language and (len(key) != 3 or len(lang.language) == 2):
            return lang.to_tag() if "-" in key or "_" in key else lang.language
    try:  # a language name in English or in the language itself: Georgian, armenian, ქართული
        found = langcodes.find(key)
    except LookupError:
        return None
    return found.to_tag()


def language_code(name: str) -> str | None:
    """Map a header or user-supplied language name to its ISO code, or None.

    The project's own aliases (``enu``, ``chn``, ``mandarin`` ...) come first; any
    other ISO 639 code, BCP 47 tag or language name is looked up in ``langcodes``.

    >>> language_code("Chinese"), language_code("de"), language_code("human")
    ('zh', 'de', None)
    >>> language_code("Georgian"), language_code("hy"), language_code("kat")
    ('ka', 'hy', 'ka')
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if not key:
        return None
    return _HEADER_TO_CODE.get(key) or _code_from_langcodes(key)


@dataclass(frozen=True)
class WordDataset:
    """Concept rows aligned across languages.

    ``rows[r][k]`` is the tuple of alternatives of concept ``r`` in language
    ``languages[k]``.  ``groups`` holds the optional concept group (category)
    of each row; ``line_numbers`` the source line of each row (1-based).
    """

    name: str
    languages: tuple[str, ...]
    rows: tuple[tuple[tuple[str, ...], ...], ...]
    groups: tuple[str | None, ...] | None = None
    source: str = "<memory>"
    sha256: str = ""
    line_numbers: tuple[int, ...] = ()
    report: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.rows:
            raise DatasetError(f"{self.source}: dataset '{self.name}' has no concept rows")
        if len(self.languages) < 2:
            raise DatasetError(
                f"{self.source}: dataset '{self.name}' needs at least two languages, got {list(self.languages)}"
            )

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def concept_labels(self) -> list[str]:
        """A readable label per row: the first alternative of the first language."""
        return [row[0][0] for row in self.rows]

    def column(self, language: str) -> list[tuple[str, ...]]:
        """The cells of one language (alternatives as tuples)."""
        return [row[self._index(language)] for row in self.rows]

    def words(self, language: str) -> list[str]:
        """Unique words of one language, alternatives flattened, in first-seen order."""
        return list(dict.fromkeys(w for cell in self.column(language) for w in cell))

    def texts_by_language(self) -> dict[str, list[str]]:
        """Each language's unique words (what :func:`semanscope_nb.embed` embeds)."""
        return {lang: self.words(lang) for lang in self.languages}

    def all_texts(self) -> list[str]:
        """Every unique text across languages (what an encoder must embed)."""
        return list(dict.fromkeys(w for row in self.rows for cell in row for w in cell))

    def select(self, languages: Sequence[str]) -> "WordDataset":
        """A dataset restricted to ``languages`` (codes or names), in that order."""
        codes = [self._resolve(lang) for lang in languages]
        idx = [self.languages.index(c) for c in codes]
        return WordDataset(
            name=self.name,
            languages=tuple(codes),
            rows=tuple(tuple(row[i] for i in idx) for row in self.rows),
            groups=self.groups,
            source=self.source,
            sha256=self.sha256,
            line_numbers=self.line_numbers,
            report=self.report,
        )

    def subset(self, rows: Iterable[int]) -> "WordDataset":
        """A dataset with only the given row indices (e.g. a quick sample)."""
        keep = list(rows)
        return WordDataset(
            name=self.name,
            languages=self.languages,
            rows=tuple(self.rows[r] for r in keep),
            groups=None if self.groups is None else tuple(self.groups[r] for r in keep),
            source=self.source,
            sha256=self.sha256,
            line_numbers=tuple(self.line_numbers[r] for r in keep) if self.line_numbers else (),
            report=self.report,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per concept, one column per language (alternatives joined by ``|``)."""
        data = {lang: [ALTERNATIVE_SEPARATOR.join(c) for c in self.column(lang)] for lang in self.languages}
        if self.groups is not None:
            data["group"] = list(self.groups)
        return pd.DataFrame(data)

    def _resolve(self, language: str) -> str:
        code = language_code(language) or language
        if code not in self.languages:
            raise DatasetError(
                f"{self.source}: language '{language}' is not in dataset '{self.name}'; "
                f"available: {', '.join(self.languages)}"
            )
        return code

    def _index(self, language: str) -> int:
        return self.languages.index(self._resolve(language))


# --------------------------------------------------------------------------- readers

_GZIP_MAGIC = b"\x1f\x8b"


def _line_col(text: str, index: int, *, first_line: int = 1) -> tuple[int, int]:
    """Physical line and 1-based column of ``text[index]`` (lines end at ``\\r\\n``, ``\\r`` or ``\\n`` only).

    >>> _line_col("ab\\r\\ncd\\u2028e", 6)
    (2, 3)
    """
    before = text[:index]
    line = first_line + before.count("\n") + before.count("\r") - before.count("\r\n")
    return line, index - max(before.rfind("\n"), before.rfind("\r"))


def _physical_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ends, split only at ``\\r\\n``, ``\\r`` and ``\\n``.

    ``str.splitlines`` also splits at U+2028, U+2029, U+0085, ``\\v``, ``\\f`` and
    ``\\x1c``-``\\x1e``; a file's line numbers (and its rows) do not.

    >>> _physical_lines("a\\u2028b\\x0cc\\r\\nd\\re")
    ['a\\u2028b\\x0cc\\r\\n', 'd\\r', 'e']
    """
    return io.StringIO(text, newline="").readlines()


def _read_text(path: Path) -> tuple[str, str]:
    """Read a file as UTF-8 (BOM tolerated; ``.gz`` decompressed); return (text, sha256 of the file's bytes).

    A ``.gz`` file that is not gzip, a gzip file not named ``.gz``, bytes that
    are not UTF-8 and NUL characters are errors naming the file, line and column.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a folder, not a file") from None
    data = raw
    if path.name.lower().endswith(".gz"):
        if not raw.startswith(_GZIP_MAGIC):
            raise DatasetError(
                f"{path}: line 1, column 1: named .gz but not gzip-compressed (it starts with {raw[:8]!r}); "
                "compress it (gzip) or drop the .gz suffix"
            )
        try:
            data = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(f"{path}: damaged gzip file ({exc})") from None
    elif raw.startswith(_GZIP_MAGIC):
        raise DatasetError(
            f"{path}: line 1, column 1: gzip-compressed data in a file not named .gz; "
            f"rename it to {path.name}.gz or decompress it (gunzip)"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data[: exc.start].decode("utf-8", errors="replace"), exc.start)
        raise DatasetError(
            f"{path}: line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, column {col}); "
            "save the file as UTF-8"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _line_col(text, nul)
        raise DatasetError(f"{path}: line {line}, column {col}: NUL character (a binary or UTF-16 file?); save it as UTF-8 text")
    return text, hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class _Row:
    """One record of a delimited file: its fields and the physical lines it spans (1-based)."""

    line: int
    end_line: int
    fields: list[str]


def _quote_problem(text: str, *, first_line: int, delimiter: str) -> tuple[str, tuple[int, int], tuple[int, int] | None] | None:
    """Scan one record's raw text like the csv module (``"`` quoting, ``""`` escapes).

    Returns ``("unclosed", opened_at, None)`` when a quoted cell is still open
    at the end, ``("after", opened_at, bad_at)`` when text follows a closing
    quote, else None; positions are (physical line, column).

    >>> _quote_problem('a,"b\\nc', first_line=3, delimiter=",")
    ('unclosed', (3, 3), None)
    """
    state, opened, i, n = "field", 0, 0, len(text)
    while i < n:
        ch = text[i]
        end = ch == delimiter or ch in "\r\n"
        if state == "field":
            state, opened = ("quoted", i) if ch == '"' else ("field" if end else "plain", opened)
        elif state == "plain":
            state = "field" if end else "plain"
        elif state == "quoted":
            if ch == '"':
                if i + 1 < n and text[i + 1] == '"':
                    i += 1
                else:
                    state = "closed"
        elif end:
            state = "field"
        else:
            return "after", _line_col(text, opened, first_line=first_line), _line_col(text, i, first_line=first_line)
        i += 1
    if state == "quoted":
        return "unclosed", _line_col(text, opened, first_line=first_line), None
    return None


class _CsvRows:
    """Records of a delimited text with their physical line numbers.

    Rows are split only at ``\\r``/``\\n`` (a U+2028 or form feed inside a cell
    stays in the cell); a quoted cell may span lines, and every line counts.
    With ``comment``, a line that starts a record and whose first non-blank
    character is ``comment`` is skipped and its number kept in
    ``comment_lines`` (a line inside a quoted cell is never a comment).  csv
    errors become :class:`DatasetError` naming file, line and column.

    >>> rows = _CsvRows("f.csv", '# c\\na,"b\\nc"\\nd,e\\n', delimiter=",", comment="#")
    >>> [(r.line, r.end_line, r.fields) for r in rows], rows.comment_lines
    ([(2, 3, ['a', 'b\\nc']), (4, 4, ['d', 'e'])], [1])
    """

    def __init__(self, path: str | os.PathLike, text: str, *, delimiter: str, comment: str | None = None) -> None:
        self.path = path
        self.lines = _physical_lines(text)
        self.delimiter = delimiter
        self.comment = comment
        self.comment_lines: list[int] = []
        self._next = 0  # lines consumed so far
        self._start = 0  # first line of the record being read
        self._at_start = True

    def _source(self) -> Iterator[str]:
        while self._next < len(self.lines):
            line = self.lines[self._next]
            self._next += 1
            if self._at_start:
                if self.comment and line.lstrip(" \t").startswith(self.comment):
                    self.comment_lines.append(self._next)
                    continue
                self._at_start = False
                self._start = self._next
            yield line

    def __iter__(self) -> Iterator[_Row]:
        reader = csv.reader(self._source(), delimiter=self.delimiter, strict=True)
        while True:
            self._at_start = True
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise self._error(exc) from None
            yield _Row(self._start, self._next, fields)

    def _error(self, exc: csv.Error) -> DatasetError:
        raw = "".join(self.lines[self._start - 1 : self._next])
        problem = _quote_problem(raw, first_line=self._start, delimiter=self.delimiter)
        if "field larger than field limit" in str(exc):
            msg = (
                f"{self.path}: line {self._start}: a cell is longer than the CSV field limit "
                f"({csv.field_size_limit()} characters)"
            )
            if problem and problem[0] == "unclosed":
                ql, qc = problem[1]
                msg += f"; the quoted cell opened on line {ql}, column {qc} is still open on line {self._next}"
            return DatasetError(msg)
        if problem and problem[0] == "unclosed":
            ql, qc = problem[1]
            return DatasetError(
                f"{self.path}: line {ql}, column {qc}: unterminated quote: the quoted cell opened here is never closed "
                f"(it runs to the end of the file, line {self._next}); add the closing quote"
            )
        if problem and problem[0] == "after" and problem[2] is not None:
            (ql, qc), (bl, bc) = problem[1], problem[2]
            return DatasetError(
                f"{self.path}: line {bl}, column {bc}: text after the closing quote of the cell opened on line {ql}, "
                f"column {qc} (inside a quoted cell, write a quote character as two quotes)"
            )
        return DatasetError(f"{self.path}: line {self._next}: malformed delimited text ({exc})")


def _blank(fields: Sequence[str]) -> bool:
    return not fields or not any(f.strip() for f in fields)


def _split_cell(cell: str) -> tuple[tuple[str, ...], list[str]]:
    """The ``|`` alternatives of a cell (stripped, first-seen order) and notes on what was left out.

    >>> _split_cell(" bank | shore |bank| ")
    (('bank', 'shore'), ["empty alternative in 'bank | shore |bank|' ignored", "repeated alternative in 'bank | shore |bank|' kept once"])
    """
    parts = [p.strip() for p in cell.split(ALTERNATIVE_SEPARATOR)]
    words = [p for p in parts if p]
    unique = tuple(dict.fromkeys(words))
    notes = []
    if words and len(words) < len(parts):
        notes.append(f"empty alternative in {cell.strip()!r} ignored")
    if len(unique) < len(words):
        notes.append(f"repeated alternative in {cell.strip()!r} kept once")
    return unique, notes


def _line_list(lines: Sequence[int], limit: int = 20) -> str:
    return ", ".join(map(str, lines[:limit])) + (f", ... ({len(lines)} in all)" if len(lines) > limit else "")


def _finish(
    *,
    name: str,
    source: str,
    sha: str,
    languages: list[str],
    raw_rows: list[tuple[int, list[tuple[str, ...]], str | None]],
    report: list[str],
) -> WordDataset:
    """De-duplicate identical rows (reported) and note words shared by several rows."""
    seen: dict[tuple, int] = {}
    rows, groups, lines = [], [], []
    for line, cells, group in raw_rows:
        key = tuple(cells)
        if key in seen:
            report.append(f"{source}: line {line}: duplicate of line {seen[key]}; dropped")
            continue
        seen[key] = line
        rows.append(key)
        groups.append(group)
        lines.append(line)
    for k, lang in enumerate(languages):
        first: dict[str, int] = {}
        for line, row in zip(lines, rows):
            for word in row[k]:
                if word in first:
                    report.append(
                        f"{source}: line {line}: {lang} word '{word}' also on line {first[word]} "
                        "(embedded once; counted once in the intra spread)"
                    )
                else:
                    first[word] = line
    return WordDataset(
        name=name,
        languages=tuple(languages),
        rows=tuple(rows),
        groups=tuple(groups) if any(g is not None for g in groups) else None,
        source=source,
        sha256=sha,
        line_numbers=tuple(lines),
        report=tuple(report),
    )


def read_semanscope_csv(
    path: str | os.PathLike,
    *,
    languages: Sequence[str] | None = None,
    on_empty: Literal["error", "drop"] = "error",
    name: str | None = None,
) -> WordDataset:
    """Read a Semanscope CSV: header of language names, ``|`` alternatives, ``#`` comments.

    Columns may come in any order; columns that are not languages (``human``,
    ``difficulty``) are ignored, and ``category`` becomes the concept group.
    An empty cell in a language column is an error naming line and column
    (``on_empty="drop"`` drops the row and reports it instead).

    Comments follow the paper's tool, which reads these files with
    ``pandas.read_csv(comment="#")`` ("rows starting with '#' are treated as
    comments"), and its ICML-4 file comments rows out as ``#丨,vertical line,``:
    a line that starts a row and whose first non-blank character is ``#`` is
    a comment, so an unquoted first cell ``#1`` or ``#hashtag`` comments its
    line out; quote it (``"#1"``) to make it a word.  A ``#`` anywhere else is
    text.  Every skipped comment line is listed in ``report``.

    Rows end only at ``\\r``/``\\n``: U+2028, U+0085, form feeds and the other
    ``str.splitlines`` separators stay inside their cell.  A quoted cell may
    span lines (reported); line numbers are physical lines.  An unterminated
    quote, text after a closing quote and a cell over ``csv.field_size_limit``
    are errors naming file, line and column.  ``report`` also lists ignored
    columns, empty or repeated ``|`` alternatives, rows of empty cells and
    dropped duplicate rows.

    >>> import semanscope_nb as snb, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.csv"
    >>> _ = p.write_text("chinese,english,human\\n# comment\\n水,water,\\n日,sun|day,\\n", encoding="utf-8")
    >>> ds = snb.read_semanscope_csv(p)
    >>> ds.languages, ds.rows[1]
    (('zh', 'en'), (('日',), ('sun', 'day')))
    >>> ds.report[1].endswith("1 comment line(s) skipped (lines 2)")
    True
    """
    path = Path(path)
    text, sha = _read_text(path)
    records = _CsvRows(path, text, delimiter=",", comment="#")
    rows = iter(records)
    header = next((r for r in rows if not _blank(r.fields)), None)
    if header is None:
        raise DatasetError(f"{path}: empty file (no header row of language names)")
    columns = [h.strip() for h in header.fields]
    lang_cols = {j: code for j, h in enumerate(columns) if (code := language_code(h))}
    first_col: dict[str, int] = {}
    for j, code in lang_cols.items():
        if code in first_col:
            i = first_col[code]
            raise DatasetError(
                f"{path}: line {header.line}: columns '{columns[i]}' (column {i + 1}) and '{columns[j]}' "
                f"(column {j + 1}) are the same language ({code}); the language is repeated - keep one"
            )
        first_col[code] = j
    codes = list(lang_cols.values())
    group_col = next((j for j, h in enumerate(columns) if h.lower() in GROUP_COLUMNS), None)
    report = [
        f"{path}: column '{h}' is not a language; ignored"
        for j, h in enumerate(columns)
        if j not in lang_cols and j != group_col and h
    ]
    unnamed = [j for j, h in enumerate(columns) if not h]
    if languages is not None:
        wanted: list[str] = []
        for lang in languages:
            code = language_code(lang) or lang
            if code not in codes:
                raise DatasetError(
                    f"{path}: unknown language column '{lang}'; the file has: "
                    f"{', '.join(f'{columns[j]} ({c})' for j, c in lang_cols.items())}"
                )
            if code in wanted:
                raise DatasetError(f"{path}: languages={list(languages)} names language '{code}' twice")
            wanted.append(code)
    else:
        wanted = codes
    col_of = {c: j for j, c in lang_cols.items()}
    raw_rows: list[tuple[int, list[tuple[str, ...]], str | None]] = []
    notes: list[str] = []
    empty_rows: list[int] = []
    unnamed_data: list[int] = []
    for row in rows:
        fields = row.fields
        if _blank(fields):
            if fields and len(fields) > 1:
                empty_rows.append(row.line)
            continue
        if row.end_line > row.line:
            notes.append(f"{path}: lines {row.line}-{row.end_line}: one row (a quoted cell holds a line break)")
        if len(fields) < len(columns):
            fields = fields + [""] * (len(columns) - len(fields))
        elif len(fields) > len(columns) and any(f.strip() for f in fields[len(columns) :]):
            raise DatasetError(
                f"{path}: line {row.line}: {len(fields)} fields but the header has {len(columns)} "
                "(a cell with a comma must be quoted)"
            )
        if any(fields[j].strip() for j in unnamed):
            unnamed_data.append(row.line)
        cells = []
        for c in wanted:
            cell, cell_notes = _split_cell(fields[col_of[c]])
            cells.append(cell)
            notes.extend(f"{path}: line {row.line}: column {columns[col_of[c]]}: {n}" for n in cell_notes)
        empty = [columns[col_of[c]] for c, cell in zip(wanted, cells) if not cell]
        if empty:
            msg = f"{path}: line {row.line}: empty cell in column(s) {', '.join(empty)}"
            if on_empty == "error":
                raise DatasetError(msg + " (fill it in, or read with on_empty='drop')")
            notes.append(msg + "; row dropped")
            continue
        group = fields[group_col].strip() or None if group_col is not None else None
        raw_rows.append((row.line, cells, group))
    if records.comment_lines:
        report.append(f"{path}: {len(records.comment_lines)} comment line(s) skipped (lines {_line_list(records.comment_lines)})")
    if empty_rows:
        report.append(f"{path}: {len(empty_rows)} row(s) of empty cells skipped (lines {_line_list(empty_rows)})")
    if unnamed_data:
        cols = ", ".join(str(j + 1) for j in unnamed)
        report.append(
            f"{path}: column(s) {cols} have no header name; their values are ignored (lines {_line_list(unnamed_data)})"
        )
    report.extend(notes)
    if not raw_rows:
        raise DatasetError(f"{path}: no concept rows after the header (only comments or blank lines?)")
    return _finish(
        name=name or _dataset_name(path),
        source=str(path),
        sha=sha,
        languages=wanted,
        raw_rows=raw_rows,
        report=report,
    )


def read_word_lists(files: Mapping[str, str | os.PathLike], *, name: str = "word-lists") -> WordDataset:
    """Read one-word-per-line files, one per language; line i of each file is concept i.

    ``#`` lines (first non-blank character ``#``) are skipped in every file and
    listed in ``report``; the remaining entries must agree in number.  Entries
    may hold ``|`` alternatives.  Lines end only at ``\\r``/``\\n``.  An empty
    line between entries, an entry with no word (``|``) and two keys naming
    one language (``en`` and ``english``) are errors naming the files and line;
    blank lines before the first or after the last entry are ignored.

    >>> import semanscope_nb as snb, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "en.txt").write_text("water\\nfire\\n", encoding="utf-8")
    >>> _ = (d / "zh.txt").write_text("水\\n火\\n", encoding="utf-8")
    >>> snb.read_word_lists({"en": d / "en.txt", "zh": d / "zh.txt"}).rows[1]
    (('fire',), ('火',))
    """
    keys: dict[str, str] = {}
    for lang in files:
        code = language_code(lang) or lang.strip()
        if code in keys:
            other = keys[code]
            raise DatasetError(
                f"word lists: '{other}' ({files[other]}) and '{lang}' ({files[lang]}) are the same language "
                f"({code}); pass one file per language"
            )
        keys[code] = lang
    columns: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    report: list[str] = []
    digest = hashlib.sha256()
    for code, lang in keys.items():
        p = Path(files[lang])
        text, sha = _read_text(p)
        digest.update(sha.encode())
        entries: list[tuple[int, tuple[str, ...]]] = []
        blank: list[int] = []
        comments: list[int] = []
        for no, line in enumerate(_physical_lines(text), start=1):
            stripped = line.rstrip("\r\n").strip()
            if not stripped:
                blank.append(no)
                continue
            if stripped.startswith("#"):
                comments.append(no)
                continue
            words, notes = _split_cell(stripped)
            if not words:
                raise DatasetError(f"{p}: line {no}: empty entry {stripped!r} (no word between the '|')")
            report.extend(f"{p}: line {no}: {n}" for n in notes)
            entries.append((no, words))
        if entries:
            inner = [b for b in blank if entries[0][0] < b < entries[-1][0]]
            if inner:
                raise DatasetError(
                    f"{p}: line {inner[0]}: empty line between entries (line i of every file is concept i, so it would "
                    f"shift the pairing); delete it, or comment it out with '#' in every file"
                )
        if comments:
            report.append(f"{p}: {len(comments)} comment line(s) skipped (lines {_line_list(comments)})")
        columns[code] = entries
    counts = {lang: len(v) for lang, v in columns.items()}
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{files[keys[k]]}: {n}" for k, n in counts.items())
        raise DatasetError(f"word lists are misaligned: different numbers of entries ({detail})")
    langs = list(columns)
    n = next(iter(counts.values()), 0)
    raw_rows = [(columns[langs[0]][i][0], [columns[lang][i][1] for lang in langs], None) for i in range(n)]
    if not raw_rows:
        raise DatasetError(f"word lists {list(map(str, files.values()))} contain no entries")
    return _finish(
        name=name,
        source=", ".join(str(p) for p in files.values()),
        sha=digest.hexdigest(),
        languages=langs,
        raw_rows=raw_rows,
        report=report,
    )


def dataset_from_frame(frame: pd.DataFrame, *, name: str = "frame") -> WordDataset:
    """Build a dataset from a DataFrame whose columns are language names or codes."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    text = buf.getvalue()
    langs = [c for c in frame.columns if language_code(str(c))]
    codes = [language_code(str(c)) for c in langs]
    repeated = sorted({c for c in codes if codes.count(c) > 1})
    if repeated:
        raise DatasetError(
            f"{name}: columns {[str(c) for c, code in zip(langs, codes) if code in repeated]} name the same language"
        )
    rows = []
    report: list[str] = []
    for i, rec in enumerate(frame[langs].itertuples(index=False)):
        split = [_split_cell("" if pd.isna(v) else str(v)) for v in rec]
        cells = [cell for cell, _ in split]
        empty = [str(c) for c, cell in zip(langs, cells) if not cell]
        if empty:
            raise DatasetError(f"{name}: row {i}: empty cell in column(s) {', '.join(empty)}")
        report.extend(f"{name}: row {i}: column {c}: {n}" for c, (_, notes) in zip(langs, split) for n in notes)
        rows.append((i + 2, cells, None))
    return _finish(
        name=name,
        source=f"<DataFrame {name}>",
        sha=hashlib.sha256(text.encode()).hexdigest(),
        languages=codes,
        raw_rows=rows,
        report=report,
    )


# --------------------------------------------------------------------------- bundled data


def _dataset_name(path: Path) -> str:
    return path.stem


def bundled_data_dir() -> Path:
    """Folder of the datasets this project wrote (``SEMANSCOPE_DATA`` overrides)."""
    from semanscope_nb.settings import settings

    return settings.data_dir


def shared_data_dir() -> Path:
    """Folder of the public evaluation data (``SEMANSCOPE_SHARED_DATA`` overrides).

    Defaults to ``../shared/data`` next to the project checkout.
    """
    from semanscope_nb.settings import settings

    return settings.shared_data_dir


BUNDLED_DATASETS = ("conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives")


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset file holds, read from its header without parsing every row."""

    name: str
    path: str
    languages: tuple[str, ...]
    card: str | None


def list_datasets(folder: str | os.PathLike | None = None) -> list[DatasetInfo]:
    """The bundled datasets (or every ``*.csv`` in ``folder``), without loading them."""
    root = Path(folder) if folder is not None else bundled_data_dir()
    if folder is None:
        paths = [root / f"{n}.csv" for n in BUNDLED_DATASETS if (root / f"{n}.csv").exists()]
    else:
        paths = sorted(root.glob("*.csv"))
    out = []
    for p in paths:
        with open(p, encoding="utf-8-sig", errors="replace") as fh:
            header = next((ln for ln in fh if ln.strip() and not ln.lstrip(" \t").startswith("#")), "")
        langs = tuple(c for c in (language_code(h) for h in next(csv.reader([header]), [])) if c)
        card = p.with_suffix(".md")
        out.append(DatasetInfo(p.stem, str(p), langs, str(card) if card.exists() else None))
    return out


def load_dataset(
    name_or_path: str | os.PathLike,
    *,
    languages: Sequence[str] | None = None,
    on_empty: Literal["error", "drop"] = "error",
) -> WordDataset:
    """Load a bundled dataset by name, or any Semanscope CSV by path.

    >>> import semanscope_nb as snb
    >>> len(snb.load_dataset("edge-cases")) >= 80
    True
    """
    p = Path(name_or_path)
    if p.suffix.lower() != ".csv" and not p.exists():
        candidate = bundled_data_dir() / f"{name_or_path}.csv"
        if not candidate.exists():
            known = ", ".join(d.name for d in list_datasets())
            raise DatasetError(f"unknown dataset '{name_or_path}'; bundled: {known}; or pass a path to a CSV file")
        p = candidate
    return read_semanscope_csv(p, languages=languages, on_empty=on_empty)
