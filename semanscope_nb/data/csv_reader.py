"""The delimited-text engine every reader uses: files read strictly, lines counted physically, csv errors located.

:func:`read_text_file` reads a file as UTF-8 (a BOM tolerated, ``.gz``
decompressed) and names the file, line and column of bad bytes.
:func:`physical_lines` splits text only at ``\\r\\n``, ``\\r`` and ``\\n`` (so line
numbers are the file's).  :class:`CsvRows` iterates the records of a
delimited text with the physical lines each spans, skips ``#`` comment lines
when asked, and turns the csv module's errors into a
:class:`~semanscope_nb.errors.DatasetError` naming file, line and column (an
unterminated quote, text after a closing quote).

:func:`find_control_character` is the one rule on control characters, shared by the
word readers and every encoder.

Layer: data.  Imports :mod:`semanscope_nb.errors` only (the standard library's ``csv`` does the parsing).

Example
-------
>>> rows = CsvRows("f.tsv", "en\\tde\\n\\t\\nwater\\tWasser\\n", delimiter="\\t")
>>> [(r.line, r.fields) for r in rows if not is_blank_record(r.fields)]
[(1, ['en', 'de']), (3, ['water', 'Wasser'])]
>>> list(CsvRows("f.csv", 'a,"b\\n', delimiter=","))
Traceback (most recent call last):
...
semanscope_nb.errors.DatasetError: f.csv: line 1, column 3: unterminated quote: ...
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import io
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from semanscope_nb.errors import DatasetError

_GZIP_MAGIC = b"\x1f\x8b"

#: the control characters (Unicode category Cc) a text may not hold: all but tab, line feed and carriage return.
#: The one rule of the word readers (a cell holding one is an error naming file, line and column) and of every
#: encoder (:func:`semanscope_nb.models.encoders.check_text_characters`): a file the reader accepts no model refuses.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def find_control_character(text: str) -> int:
    """Index of the first control character of ``text`` a text may not hold, or -1 (like ``str.find``).

    The control characters (Unicode category Cc: C0, DEL and C1, U+0085 and form feed included) but tab,
    line feed and carriage return; U+2028, U+2029 and the invisible format characters (category Cf) are not
    control characters.

    >>> find_control_character("ho\\x07use"), find_control_character("tab\\tand\\nline\\u2028sep")
    (2, -1)
    """
    m = _CONTROL.search(text)
    return -1 if m is None else m.start()


def _line_col(text: str, index: int, *, first_line: int = 1) -> tuple[int, int]:
    """Physical line and 1-based column of ``text[index]`` (lines end at ``\\r\\n``, ``\\r`` or ``\\n`` only).

    >>> _line_col("ab\\r\\ncd\\u2028e", 6)
    (2, 3)
    """
    before = text[:index]
    line = first_line + before.count("\n") + before.count("\r") - before.count("\r\n")
    return line, index - max(before.rfind("\n"), before.rfind("\r"))


def physical_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ends, split only at ``\\r\\n``, ``\\r`` and ``\\n``.

    ``str.splitlines`` also splits at U+2028, U+2029, U+0085, ``\\v``, ``\\f`` and
    ``\\x1c``-``\\x1e``; a file's line numbers (and its rows) do not.

    >>> physical_lines("a\\u2028b\\x0cc\\r\\nd\\re")
    ['a\\u2028b\\x0cc\\r\\n', 'd\\r', 'e']
    """
    return io.StringIO(text, newline="").readlines()


def read_text_file(path: Path) -> tuple[str, str]:
    """Read a file as UTF-8 (BOM tolerated; ``.gz`` decompressed); return (text, sha256 of the file's bytes).

    A ``.gz`` file that is not gzip, a gzip file not named ``.gz``, bytes that
    are not UTF-8 and NUL characters are errors naming the file, line and column.

    >>> import gzip, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.txt.gz"
    >>> _ = p.write_bytes(gzip.compress("\\ufeffwater\\n".encode("utf-8")))
    >>> read_text_file(p)[0]
    'water\\n'
    >>> read_text_file(p.with_name("w.txt"))
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.DatasetError: ...w.txt: file not found
    """
    if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO would block the read for ever
        raise DatasetError(f"{path}: not a regular file (a FIFO, socket or device); give a data file")
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
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        # the text before the bad byte is valid UTF-8: its characters (not its bytes; the BOM is none) give the column
        before = data[bom : bom + exc.start].decode("utf-8", errors="replace")
        line, col = _line_col(before, len(before))
        raise DatasetError(
            f"{path}: line {line}: not valid UTF-8 (byte 0x{data[bom + exc.start]:02x} at character column {col} of "
            f"the line, byte offset {bom + exc.start} of the file); save the file as UTF-8"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _line_col(text, nul)
        raise DatasetError(f"{path}: line {line}, column {col}: NUL character (a binary or UTF-16 file?); save it as UTF-8 text")
    return text, hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class CsvRecord:
    """One record of a delimited file: its fields and the physical lines it spans (1-based).

    >>> CsvRecord(line=2, end_line=3, fields=["a", "b\\nc"]).end_line
    3
    """

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


class CsvRows:
    """Records of a delimited text with their physical line numbers.

    Rows are split only at ``\\r``/``\\n`` (a U+2028 or form feed inside a cell
    stays in the cell: the word readers then refuse a form feed, a control
    character, naming its line); a quoted cell may span lines, and every line counts.
    With ``comment``, a line that starts a record and whose first non-blank
    character is ``comment`` is skipped and its number kept in
    ``comment_lines`` (a line inside a quoted cell is never a comment).  csv
    errors become :class:`DatasetError` naming file, line and column.

    >>> rows = CsvRows("f.csv", '# c\\na,"b\\nc"\\nd,e\\n', delimiter=",", comment="#")
    >>> [(r.line, r.end_line, r.fields) for r in rows], rows.comment_lines
    ([(2, 3, ['a', 'b\\nc']), (4, 4, ['d', 'e'])], [1])
    """

    def __init__(self, path: str | os.PathLike, text: str, *, delimiter: str, comment: str | None = None) -> None:
        self.path = path
        self.lines = physical_lines(text)
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

    def __iter__(self) -> Iterator[CsvRecord]:
        reader = csv.reader(self._source(), delimiter=self.delimiter, strict=True)
        while True:
            self._at_start = True
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise self._error(exc) from None
            yield CsvRecord(self._start, self._next, fields)

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


def is_blank_record(fields: Sequence[str]) -> bool:
    """True when a record has no fields or only blank ones (``,,`` or ``\\t \\t``).

    >>> is_blank_record([" ", ""]), is_blank_record([]), is_blank_record(["", "x"])
    (True, True, False)
    """
    return not fields or not any(f.strip() for f in fields)
