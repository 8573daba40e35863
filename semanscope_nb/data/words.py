"""Word datasets: :class:`WordDataset` and its readers (the Semanscope CSV format, per-language word lists, frames).

A dataset is a table of concept rows; each row holds, for every language, one or
more alternative words (``bank|shore``).  The reader is strict about what would
silently change a score (misaligned rows, empty cells, bad encodings) and
reports what a user should know about (duplicates, ignored columns).
:func:`load_dataset` reads a bundled dataset by name (see
:mod:`semanscope_nb.data.catalog`) or any Semanscope CSV by path.

Language codes live in :mod:`semanscope_nb.data.languages`, the delimited-text
engine in :mod:`semanscope_nb.data.csv_reader`, the data folders and dataset
listings in :mod:`semanscope_nb.data.catalog`; the names of those that used to
be defined here are still importable from here.

Layer: data.  Imports :mod:`semanscope_nb.errors` and the data rooms ``languages``, ``csv_reader`` and ``catalog``.

Example
-------
>>> ds = load_dataset("conceptual-space", languages=["en", "zh"])
>>> ds.languages
('en', 'zh')
>>> dataset_from_frame(ds.to_frame().head(3), name="three").rows == ds.rows[:3]
True
"""

from __future__ import annotations

import collections.abc
import hashlib
import io
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

import pandas as pd

# the catalog's and the language names were defined here before; importers of this module still find them
from semanscope_nb.data.catalog import (  # noqa: F401
    BUNDLED_DATASETS,
    DatasetInfo,
    bundled_data_dir,
    list_datasets,
    shared_data_dir,
)
from semanscope_nb.data.concept_key import concept_key
from semanscope_nb.data.csv_reader import (
    CsvRows,
    find_control_character,
    is_blank_record,
    physical_lines,
    read_text_file,
)
from semanscope_nb.data.languages import (  # noqa: F401
    GROUP_COLUMNS,
    LANGUAGE_ALIASES,
    LANGUAGE_NAMES,
    RESERVED_COLUMNS,
    checked_language_code,
    header_language_code,
    language_code,
    language_name,
)
from semanscope_nb.errors import ArgumentError, DatasetError


#: separates the alternative words of a cell (``bank|shore``)
ALTERNATIVE_SEPARATOR = "|"
#: the byte-order mark (ZERO WIDTH NO-BREAK SPACE): the file's own is dropped by the reader; one inside a cell (files
#: pasted together) is removed from its word and reported, so that '\ufefffire' is the word 'fire'
_BOM = "\ufeff"


def _is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: only whitespace and invisible format characters (Unicode category Cf:
    U+200B zero-width space, U+2060 word joiner, U+FEFF ...); such a word is no word.

    >>> _is_blank(" \\u200b\\u2060"), _is_blank("fire"), _is_blank("\\u200dfire")
    (True, False, False)
    """
    if text.isprintable() and text.strip():  # no format, control or separator character: something shows (C speed)
        return False
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message: escapes for control and invisible characters, cut at ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _control_message(text: str, at: int, *, what: str = "cell") -> str:
    """What is wrong with ``text`` whose character ``at`` is a control character (never the raw character).

    >>> _control_message("ho\\x07use", 2)
    "'ho\\\\x07use' holds the control character U+0007 at character 3 of the cell; remove it (a word may hold no control character but tab, line feed and carriage return)"
    """
    return (f"{_shown(text)} holds the control character U+{ord(text[at]):04X} at character {at + 1} of the {what}; "
            "remove it (a word may hold no control character but tab, line feed and carriage return)")


@dataclass(frozen=True)
class WordDataset:
    """Concept rows aligned across languages.

    ``rows[r][k]`` is the tuple of alternatives of concept ``r`` in language
    ``languages[k]``.  ``groups`` holds the optional concept group (category)
    of each row; ``line_numbers`` the source line of each row (1-based).
    ``concept_keys``: what each row is (:func:`~semanscope_nb.data.concept_key.concept_key` of its words in every
    language of the file it was read from; by default of its own languages), kept by :meth:`select` and
    :meth:`subset`: random draws over concepts follow it, not the row order (:mod:`semanscope_nb.metrics.row_order`).
    """

    name: str
    languages: tuple[str, ...]
    rows: tuple[tuple[tuple[str, ...], ...], ...]
    groups: tuple[str | None, ...] | None = None
    source: str = "<memory>"
    sha256: str = ""
    line_numbers: tuple[int, ...] = ()
    report: tuple[str, ...] = field(default=(), compare=False)
    concept_keys: tuple[str, ...] = field(default=(), compare=False, repr=False)
    #: the texts of the dataset this one was selected or subset from (empty: its own); :meth:`fit_corpus`
    fit_texts: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        # the one checker of a dataset's labels and shape: the readers build through here, so a dataset made by
        # hand gets the same errors as a file (lists are taken as tuples; language names become their codes)
        languages, rows, groups, lines = check_dataset(
            name=self.name, languages=self.languages, rows=self.rows, groups=self.groups,
            line_numbers=self.line_numbers, source=self.source,
        )
        for attr, value in (("languages", languages), ("rows", rows), ("groups", groups), ("line_numbers", lines)):
            if value is not getattr(self, attr):
                object.__setattr__(self, attr, value)
        keys = tuple(self.concept_keys)
        if not keys:  # made by hand (or read without them): the key of each row's own words
            keys = tuple(concept_key(dict(zip(languages, row))) for row in rows)
        elif len(keys) != len(rows) or not all(isinstance(k, str) for k in keys):
            raise DatasetError(f"{self.source}: concept_keys must hold one string per row ({len(rows)}), got {len(keys)}")
        object.__setattr__(self, "concept_keys", keys)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def concept_labels(self) -> list[str]:
        """A readable label per row: the first alternative of the first language."""
        return [row[0][0] for row in self.rows]

    def column(self, language: str) -> list[tuple[str, ...]]:
        """The cells of one language (alternatives as tuples)."""
        k = self._index(language)  # resolved once, not once per row (a language code lookup each)
        return [row[k] for row in self.rows]

    def words(self, language: str) -> list[str]:
        """Unique words of one language, alternatives flattened, in first-seen order."""
        return list(dict.fromkeys(w for cell in self.column(language) for w in cell))

    def texts_by_language(self) -> dict[str, list[str]]:
        """Each language's unique words (what :func:`semanscope_nb.embed` embeds)."""
        return {lang: self.words(lang) for lang in self.languages}

    def all_texts(self) -> list[str]:
        """Every unique text across languages (what an encoder must embed)."""
        return list(dict.fromkeys(w for row in self.rows for cell in row for w in cell))

    def fit_corpus(self) -> list[str]:
        """The texts a corpus-fitted model (TF-IDF's IDF weights) is fitted on: every text of the whole dataset, as read.

        :meth:`select` and :meth:`subset` keep them, so two languages of a file, a sample of its concepts and the whole
        file are embedded by one model: a pair of the pair matrix, the verdict of those two languages and the surface
        baseline of either give one vector per word.

        >>> ds = WordDataset("t", ("en", "de", "fr"), ((("water",), ("Wasser",), ("eau",)), (("fire",), ("Feuer",), ("feu",))))
        >>> ds.select(["fr", "de"]).fit_corpus() == ds.fit_corpus() == ["water", "Wasser", "eau", "fire", "Feuer", "feu"]
        True
        """
        return list(self.fit_texts) if self.fit_texts else self.all_texts()

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
            concept_keys=self.concept_keys,
            fit_texts=self.fit_texts or tuple(self.all_texts()),
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
            concept_keys=tuple(self.concept_keys[r] for r in keep),
            fit_texts=self.fit_texts or tuple(self.all_texts()),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per concept, one column per language (alternatives joined by ``|``)."""
        data = {lang: [ALTERNATIVE_SEPARATOR.join(c) for c in self.column(lang)] for lang in self.languages}
        if self.groups is not None:
            data["group"] = list(self.groups)
        return pd.DataFrame(data)

    def _resolve(self, language: str) -> str:
        if not isinstance(language, str) or not language.strip():
            raise ArgumentError(f"languages: {language!r} is not a language code or name (dataset '{self.name}' has: "
                                f"{', '.join(self.languages)})")
        code = language_code(language) or language
        if code not in self.languages:
            raise DatasetError(
                f"{self.source}: language '{language}' is not in dataset '{self.name}'; "
                f"available: {', '.join(self.languages)}"
            )
        return code

    def _index(self, language: str) -> int:
        return self.languages.index(self._resolve(language))


def _is_sequence(x: object) -> bool:
    """A tuple or list (the fast path), or another non-text, non-mapping sequence."""
    return type(x) is tuple or type(x) is list or (
        not isinstance(x, (str, bytes, Mapping)) and isinstance(x, collections.abc.Sequence))


def _refuse_row(where: str, r: int, row: object, codes: Sequence[str]) -> None:
    if not _is_sequence(row):
        raise DatasetError(f"{where}: row {r} must be a sequence of one cell per language, got {row!r:.80}")
    raise DatasetError(f"{where}: row {r} has {len(row)} cell(s) but the dataset has {len(codes)} languages "  # type: ignore[arg-type]
                       f"({', '.join(codes)}); every row needs one cell per language")


def check_dataset(
    *,
    name: object,
    languages: object,
    rows: object,
    groups: object = None,
    line_numbers: object = (),
    source: object = "<memory>",
) -> tuple[tuple[str, ...], tuple[tuple[tuple[str, ...], ...], ...], tuple[str | None, ...] | None, tuple[int, ...]]:
    """(languages, rows, groups, line_numbers) of a :class:`WordDataset`, checked and as tuples.

    What every dataset must be, however it was made (by a reader or by hand): a name and a source
    that are text; at least two languages, each a language code or name (never a path, markup or an
    empty string: :func:`~semanscope_nb.data.languages.checked_language_code`; a name becomes its
    code), no language twice (``en`` and ``English`` included); at least one concept row; every row a
    sequence of one cell per language, every cell a non-empty sequence of non-empty words (a plain
    string is refused: ``"bank|shore"`` would be read as letters); ``groups`` and ``line_numbers``
    (when given) one per row.  Errors name the source, the dataset and the row, language or argument.

    >>> check_dataset(name="t", languages=["English", "zh"], rows=[[["water"], ["水"]]])[:2]
    (('en', 'zh'), ((('water',), ('水',)),))
    >>> check_dataset(name="t", languages=["en", "English"], rows=[[["a"], ["b"]]])
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.DatasetError: <memory>: dataset 't': languages 'en' and 'English' are the same language (en); keep one
    """
    if not isinstance(source, str):
        raise ArgumentError(f"dataset source must be text (a file name or '<memory>'), got {type(source).__name__}")
    if not isinstance(name, str) or not name.strip():
        raise DatasetError(f"{source}: a dataset name must be non-empty text, got {name!r}")
    where = f"{source}: dataset '{name}'"
    if not _is_sequence(languages):
        raise DatasetError(f"{where}: languages must be a sequence of language codes such as ('en', 'zh'), got {languages!r:.80}")
    codes: list[str] = []
    for lang in languages:
        code = checked_language_code(lang, what=f"{where}: language")
        if code in codes:
            first = languages[codes.index(code)]
            if first == lang:
                raise DatasetError(f"{where}: language '{lang}' is given twice; give each language once")
            raise DatasetError(f"{where}: languages '{first}' and '{lang}' are the same language ({code}); keep one")
        codes.append(code)
    if len(codes) < 2:
        raise DatasetError(f"{where} needs at least two languages, got {list(languages)}")
    if not _is_sequence(rows):
        raise DatasetError(f"{where}: rows must be a sequence of concept rows, got {type(rows).__name__}")
    if not rows:
        raise DatasetError(f"{where} has no concept rows")
    width = len(codes)
    checked_rows, changed = [], type(rows) is not tuple
    for r, row in enumerate(rows):
        if not _is_sequence(row) or len(row) != width:
            _refuse_row(where, r, row, codes)
        row_changed = type(row) is not tuple
        for k, cell in enumerate(row):
            if type(cell) is not tuple:
                if not _is_sequence(cell):
                    raise DatasetError(f"{where}: row {r}, language {codes[k]}: a cell must be a tuple of words such as "
                                       f"('bank', 'shore'), got {cell!r:.80}")
                row_changed = True
            if not cell:
                raise DatasetError(f"{where}: row {r}, language {codes[k]}: empty cell (no word)")
            for w in cell:
                if not isinstance(w, str) or _is_blank(w):
                    raise DatasetError(f"{where}: row {r}, language {codes[k]}: {w!r:.80} is not a word (non-empty text)")
                at = find_control_character(w)
                if at >= 0:
                    raise DatasetError(f"{where}: row {r}, language {codes[k]}: {_control_message(w, at)}")
        if row_changed:
            row, changed = tuple(tuple(cell) for cell in row), True
        checked_rows.append(row)
    out_rows = tuple(checked_rows) if changed else rows
    out_groups = groups
    if groups is not None:
        if not _is_sequence(groups):
            raise DatasetError(f"{where}: groups must be one group (or None) per row, got {type(groups).__name__}")
        if len(groups) != len(rows):
            raise DatasetError(f"{where}: {len(groups)} group(s) for {len(rows)} row(s); give one per row (or None)")
        bad_group = next((g for g in groups if g is not None and not isinstance(g, str)), None)
        if bad_group is not None:
            raise DatasetError(f"{where}: group {bad_group!r} is not text")
        out_groups = groups if type(groups) is tuple else tuple(groups)
    if not _is_sequence(line_numbers):
        raise DatasetError(f"{where}: line_numbers must be one line number per row, got {type(line_numbers).__name__}")
    if line_numbers and len(line_numbers) != len(rows):
        raise DatasetError(f"{where}: {len(line_numbers)} line number(s) for {len(rows)} row(s); give one per row (or none)")
    out_lines = line_numbers if type(line_numbers) is tuple else tuple(line_numbers)
    out_langs = tuple(codes)
    if type(languages) is tuple and out_langs == languages:
        out_langs = languages
    return out_langs, out_rows, out_groups, out_lines


def _split_cell(cell: str) -> tuple[tuple[str, ...], list[str]]:
    """The ``|`` alternatives of a cell (stripped, first-seen order) and notes on what was left out or changed.

    An alternative of only whitespace and invisible format characters (U+200B, U+2060, U+FEFF ...) is empty;
    a byte-order mark U+FEFF inside a word is removed from it (and noted).

    >>> _split_cell(" bank | shore |bank| ")
    (('bank', 'shore'), ["empty alternative in 'bank | shore |bank|' ignored", "repeated alternative in 'bank | shore |bank|' kept once"])
    >>> _split_cell("\\ufefffire|\\u200b")
    (('fire',), ["byte-order mark U+FEFF removed from '\\\\ufefffire|\\\\u200b'", "empty alternative in '\\\\ufefffire|\\\\u200b' ignored"])
    """
    parts = [p.strip() for p in cell.split(ALTERNATIVE_SEPARATOR)]
    notes = []
    if _BOM in cell and not _is_blank(cell.replace(ALTERNATIVE_SEPARATOR, "")):
        parts = [p.replace(_BOM, "").strip() for p in parts]
        notes.append(f"byte-order mark U+FEFF removed from {cell.strip()!r}")
    words = [p for p in parts if not _is_blank(p)]
    unique = tuple(dict.fromkeys(words))
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
    concept_keys: Sequence[str] | None = None,
) -> WordDataset:
    """De-duplicate identical rows (reported) and note words shared by several rows.

    ``concept_keys``: one per raw row (of every language column of the file), when the rows hold only some of them.
    """
    seen: dict[tuple, int] = {}
    rows, groups, lines, keys = [], [], [], []
    for r, (line, cells, group) in enumerate(raw_rows):
        key = tuple(cells)
        if key in seen:
            report.append(f"{source}: line {line}: duplicate of line {seen[key]}; dropped")
            continue
        seen[key] = line
        rows.append(key)
        groups.append(group)
        lines.append(line)
        if concept_keys is not None:
            keys.append(concept_keys[r])
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
        concept_keys=tuple(keys),
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
    A header cell is a language when it is, as a whole, a language code or tag
    or a language name (:func:`~semanscope_nb.data.languages.header_language_code`);
    the row-number and key columns of ``RESERVED_COLUMNS`` (``id``, ``index``,
    ``no`` ...) never are: Indonesian is ``indonesian`` or ``ind`` in a header.
    Fewer than two language columns is an error naming the header's other
    columns (a misspelt ``chinse``).  An empty cell in a language column (or
    one of only invisible characters: U+200B, U+2060, U+FEFF ...) is an error
    naming line and column (``on_empty="drop"`` drops the row and reports it
    instead).  A byte-order mark U+FEFF inside a cell or a header cell is
    removed (and reported): ``\\ufefffire`` is the word ``fire``.  ``languages``
    selects columns *after* reading: every language column is read and checked
    and duplicate rows are whole rows, so the concepts are the same rows for
    every selection (``read_semanscope_csv(p, languages=L)`` is
    ``read_semanscope_csv(p).select(L)``, on every path that reads a file).

    Comments follow the paper's tool, which reads these files with
    ``pandas.read_csv(comment="#")`` ("rows starting with '#' are treated as
    comments"), and its ICML-4 file comments rows out as ``#丨,vertical line,``:
    a line that starts a row and whose first non-blank character is ``#`` is
    a comment, so an unquoted first cell ``#1`` or ``#hashtag`` comments its
    line out; quote it (``"#1"``) to make it a word.  A ``#`` anywhere else is
    text.  Every skipped comment line is listed in ``report``.

    Rows end only at ``\\r``/``\\n``: U+2028 and U+2029 stay inside their cell.
    The other ``str.splitlines`` separators (U+0085, form feed, vertical tab,
    ``\\x1c``-``\\x1e``) are control characters: like every control character
    but tab, line feed and carriage return (the encoders' rule,
    :func:`~semanscope_nb.data.csv_reader.find_control_character`), one in a
    language cell is an error naming file, line and column (shown as U+0085,
    never raw), not a row split.  A quoted cell may span lines (reported); line
    numbers are physical lines.  An unterminated quote, text after a closing
    quote and a cell over ``csv.field_size_limit`` are errors naming file, line
    and column.  ``report`` also lists ignored
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
    if on_empty not in ("error", "drop"):
        raise ArgumentError(f"on_empty must be 'error' or 'drop', got {on_empty!r}")
    path = Path(path)
    text, sha = read_text_file(path)
    records = CsvRows(path, text, delimiter=",", comment="#")
    rows = iter(records)
    header = next((r for r in rows if not is_blank_record(r.fields)), None)
    if header is None:
        raise DatasetError(f"{path}: empty file (no header row of language names)")
    columns = [h.replace(_BOM, "").strip() for h in header.fields]  # a BOM before a header cell (files pasted together)
    report = [
        f"{path}: line {header.line}, column {j + 1}: byte-order mark U+FEFF removed from the header cell {h.strip()!r}"
        for j, h in enumerate(header.fields) if _BOM in h
    ]
    lang_cols = _language_columns(path, columns, line=header.line)
    group_col = next((j for j, h in enumerate(columns) if h.lower() in GROUP_COLUMNS), None)
    others = [j for j, h in enumerate(columns) if j not in lang_cols and j != group_col and h]
    if len(lang_cols) < 2:
        named = ", ".join(f"'{columns[j]}' (column {j + 1}" + (", a row-number or key column)"
                          if columns[j].lower() in RESERVED_COLUMNS else ")") for j in others)
        raise DatasetError(
            f"{path}: dataset '{name or _dataset_name(path)}' needs at least two languages, got "
            f"{list(lang_cols.values())}; "
            + (f"the header's other columns are not language names: {named}" if named else
               f"the header (line {header.line}) has no other column")
            + " (name a language column by its code, such as 'en', or its name, such as 'english')"
        )
    report += [f"{path}: column '{columns[j]}' is not a language; ignored" for j in others]
    unnamed = [j for j, h in enumerate(columns) if not h]
    wanted = _wanted_languages(path, languages, lang_cols, columns)
    raw_rows: list[tuple[int, list[tuple[str, ...]], str | None]] = []
    keys: list[str] = []  # each row's concept key, of every language column (the same whatever ``languages`` selects)
    notes: list[str] = []
    empty_rows: list[int] = []
    unnamed_data: list[int] = []
    for row in rows:
        fields = row.fields
        if is_blank_record(fields):
            if fields and len(fields) > 1:
                empty_rows.append(row.line)
            continue
        if row.end_line > row.line:
            notes.append(f"{path}: lines {row.line}-{row.end_line}: one row (a quoted cell holds a line break)")
        fields = _padded_fields(path, row.line, fields, len(columns))
        if any(fields[j].strip() for j in unnamed):
            unnamed_data.append(row.line)
        # every language column, whatever ``languages`` selects: the file's concepts (which rows are complete, which
        # repeat another) do not depend on the selection, so a panel reading two columns, a function reading the whole
        # file and selecting them, the grid and the pair matrix score the same concepts (selected at the end)
        cells = _row_cells(path, row.line, fields, list(lang_cols), columns, on_empty=on_empty, notes=notes)
        if cells is not None:
            raw_rows.append((row.line, cells, fields[group_col].strip() or None if group_col is not None else None))
            keys.append(concept_key(dict(zip(lang_cols.values(), cells))))
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
    whole = _finish(name=name or _dataset_name(path), source=str(path), sha=sha, languages=list(lang_cols.values()),
                    raw_rows=raw_rows, report=report, concept_keys=keys)
    return whole if wanted == list(whole.languages) else whole.select(wanted)


def _language_columns(path: Path, columns: Sequence[str], *, line: int) -> dict[int, str]:
    """Column index -> language code of the header's language columns; a language named twice is an error.

    A header cell is a language when :func:`~semanscope_nb.data.languages.header_language_code` reads it as one: a
    code, a tag or a whole language name, never a column name of ``RESERVED_COLUMNS`` (``id``, ``index`` ...).
    """
    lang_cols = {j: code for j, h in enumerate(columns) if (code := header_language_code(h))}
    first_col: dict[str, int] = {}
    for j, code in lang_cols.items():
        if code in first_col:
            i = first_col[code]
            raise DatasetError(
                f"{path}: line {line}: columns '{columns[i]}' (column {i + 1}) and '{columns[j]}' "
                f"(column {j + 1}) are the same language ({code}); the language is repeated - keep one"
            )
        first_col[code] = j
    return lang_cols


def _wanted_languages(path: Path, languages: Sequence[str] | None, lang_cols: Mapping[int, str],
                      columns: Sequence[str]) -> list[str]:
    """The language codes to read: ``languages`` (each a column of the file, none twice), or every language column."""
    codes = list(lang_cols.values())
    if languages is None:
        return codes
    if isinstance(languages, str):  # "en,zh", as run_grid and the CLI read it
        languages = [t.strip() for t in languages.split(",") if t.strip()]
    if isinstance(languages, (bytes, Mapping)) or not isinstance(languages, Iterable):
        raise ArgumentError(f"languages must be a list of language codes (or 'en,zh'), got {languages!r}")
    languages = list(languages)
    if not languages:
        raise ArgumentError("languages is empty: name at least one language, or pass None for every language of the file")
    wanted: list[str] = []
    for lang in languages:
        if not isinstance(lang, str) or not lang.strip():
            raise ArgumentError(f"languages={languages!r}: {lang!r} is not a language code")
        code = language_code(lang) or lang
        if code not in codes:
            raise DatasetError(
                f"{path}: unknown language column '{lang}'; the file has: "
                f"{', '.join(f'{columns[j]} ({c})' for j, c in lang_cols.items())}"
            )
        if code in wanted:
            raise DatasetError(f"{path}: languages={list(languages)} names language '{code}' twice")
        wanted.append(code)
    return wanted


def _padded_fields(path: Path, line: int, fields: list[str], n_columns: int) -> list[str]:
    """A row's fields padded to the header's width; non-empty fields beyond it are an error (an unquoted comma)."""
    if len(fields) < n_columns:
        return fields + [""] * (n_columns - len(fields))
    if len(fields) > n_columns and any(f.strip() for f in fields[n_columns:]):
        raise DatasetError(
            f"{path}: line {line}: {len(fields)} fields but the header has {n_columns} "
            "(a cell with a comma must be quoted)"
        )
    return fields


def _row_cells(path: Path, line: int, fields: Sequence[str], cols: Sequence[int], columns: Sequence[str], *,
               on_empty: str, notes: list[str]) -> list[tuple[str, ...]] | None:
    """The ``|`` alternatives of each wanted column of a row; None for a row dropped for an empty cell.

    A cell holding a control character is an error naming its line and column (the encoders' rule).
    """
    cells = []
    for j in cols:
        at = find_control_character(fields[j])
        if at >= 0:
            before = fields[j][:at]  # a quoted cell may span lines: the line of the character
            at_line = line + before.count("\n") + before.count("\r") - before.count("\r\n")
            raise DatasetError(f"{path}: line {at_line}, column {j + 1} ({columns[j]}): the cell "
                               f"{_control_message(fields[j], at)}")
        cell, cell_notes = _split_cell(fields[j])
        cells.append(cell)
        notes.extend(f"{path}: line {line}: column {columns[j]}: {n}" for n in cell_notes)
    empty = [columns[j] for j, cell in zip(cols, cells) if not cell]
    if not empty:
        return cells
    msg = f"{path}: line {line}: empty cell in column(s) {', '.join(empty)}"
    invisible = sorted({f"U+{ord(ch):04X}" for j, cell in zip(cols, cells) if not cell
                        for ch in fields[j] if not ch.isspace() and ch != ALTERNATIVE_SEPARATOR})
    if invisible:
        msg += f" (only invisible characters: {', '.join(invisible)})"
    if on_empty == "error":
        raise DatasetError(msg + " (fill it in, or read with on_empty='drop'; every language column is read whatever "
                           "languages= selects, so a concept is the same row for every choice of languages)")
    notes.append(msg + "; row dropped")
    return None


def read_word_lists(files: Mapping[str, str | os.PathLike], *, name: str = "word-lists") -> WordDataset:
    """Read one-word-per-line files, one per language; line i of each file is concept i.

    ``#`` lines (first non-blank character ``#``) are skipped in every file and
    listed in ``report``; the remaining entries must agree in number.  Entries
    may hold ``|`` alternatives.  Lines end only at ``\\r``/``\\n``.  An empty
    line between entries, an entry with no word (``|``, or invisible characters
    only), a control character (the encoders' rule; file, line and column) and
    two keys naming one language (``en`` and ``english``) are errors naming the
    files and line; a byte-order mark inside an entry is removed and reported;
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
        code = checked_language_code(lang, what="word list key")
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
        text, sha = read_text_file(p)
        digest.update(sha.encode())
        columns[code] = _word_list_entries(p, text, report)
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


def _word_list_entries(p: Path, text: str, report: list[str]) -> list[tuple[int, tuple[str, ...]]]:
    """(line, alternatives) of each entry of one word-list file; an empty line between entries is an error."""
    entries: list[tuple[int, tuple[str, ...]]] = []
    blank: list[int] = []
    comments: list[int] = []
    for no, line in enumerate(physical_lines(text), start=1):
        stripped = line.rstrip("\r\n").strip()
        if not stripped:
            blank.append(no)
            continue
        if stripped.startswith("#"):
            comments.append(no)
            continue
        entry = line.rstrip("\r\n")
        at = find_control_character(entry)
        if at >= 0:
            raise DatasetError(f"{p}: line {no}, column {at + 1}: the line {_control_message(entry, at, what='line')}")
        words, notes = _split_cell(stripped)
        if not words:
            why = "no word between the '|'" if ALTERNATIVE_SEPARATOR in stripped else "only invisible characters"
            raise DatasetError(f"{p}: line {no}: empty entry {stripped!r} ({why})")
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
    return entries


def dataset_from_frame(frame: pd.DataFrame, *, name: str = "frame") -> WordDataset:
    """Build a dataset from a DataFrame whose columns are language names or codes."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    text = buf.getvalue()
    langs = [c for c in frame.columns if header_language_code(str(c))]
    codes = [header_language_code(str(c)) for c in langs]
    repeated = sorted({c for c in codes if codes.count(c) > 1})
    if repeated:
        raise DatasetError(
            f"{name}: columns {[str(c) for c, code in zip(langs, codes) if code in repeated]} name the same language"
        )
    rows = []
    report: list[str] = []
    for i, rec in enumerate(frame[langs].itertuples(index=False)):
        texts = ["" if pd.isna(v) else str(v) for v in rec]
        for c, text in zip(langs, texts):
            at = find_control_character(text)
            if at >= 0:
                raise DatasetError(f"{name}: row {i}, column {c}: the cell {_control_message(text, at)}")
        split = [_split_cell(text) for text in texts]
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


def _dataset_name(path: Path) -> str:
    return path.stem


def _path_exists(path: Path, given: object) -> bool:
    """Whether ``path`` exists; a name the file system cannot hold (too long, say) is a DatasetError naming it."""
    try:
        return path.exists()
    except OSError as exc:  # ENAMETOOLONG and the like: pathlib raises what it does not take for "absent"
        text = str(given)
        shown = text if len(text) <= 80 else f"{text[:80]}..."
        raise DatasetError(f"load_dataset: '{shown}' ({len(text)} characters) is not a dataset name or a path this "
                           f"file system can open: {exc.strerror or exc}") from None


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
    if not str(name_or_path).strip():
        raise ArgumentError("load_dataset: the dataset name is empty (give a bundled name or a CSV path)")
    p = Path(name_or_path)
    if p.suffix.lower() != ".csv" and not _path_exists(p, name_or_path):
        candidate = bundled_data_dir() / f"{name_or_path}.csv"
        if not _path_exists(candidate, name_or_path):
            known = ", ".join(d.name for d in list_datasets())
            raise DatasetError(f"unknown dataset '{name_or_path}'; bundled: {known}; or pass a path to a CSV file")
        p = candidate
    return read_semanscope_csv(p, languages=languages, on_empty=on_empty)
