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
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

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
LANGUAGE_NAMES: dict[str, str] = {code: names[0].capitalize() for code, names in LANGUAGE_ALIASES.items()}
_HEADER_TO_CODE = {alias: code for code, names in LANGUAGE_ALIASES.items() for alias in (code, *names)}
GROUP_COLUMNS = ("category", "group", "domain", "concept_group")
ALTERNATIVE_SEPARATOR = "|"


def language_code(name: str) -> str | None:
    """Map a header or user-supplied language name to its ISO code, or None.

    >>> language_code("Chinese"), language_code("de"), language_code("human")
    ('zh', 'de', None)
    """
    return _HEADER_TO_CODE.get(name.strip().lower())


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


def _read_text(path: Path) -> tuple[str, str]:
    """Read a file as UTF-8 (BOM tolerated); return (text, sha256). Clear error otherwise."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DatasetError(
            f"{path}: line {line}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None
    return text, hashlib.sha256(raw).hexdigest()


def _split_cell(cell: str) -> tuple[str, ...]:
    parts = [p.strip() for p in cell.split(ALTERNATIVE_SEPARATOR)]
    return tuple(dict.fromkeys(p for p in parts if p))


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

    >>> import semanscope_nb as snb, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.csv"
    >>> _ = p.write_text("chinese,english,human\\n# comment\\n水,water,\\n日,sun|day,\\n", encoding="utf-8")
    >>> ds = snb.read_semanscope_csv(p)
    >>> ds.languages, ds.rows[1]
    (('zh', 'en'), (('日',), ('sun', 'day')))
    """
    path = Path(path)
    text, sha = _read_text(path)
    lines = text.splitlines()
    header_line = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), None)
    if header_line is None:
        raise DatasetError(f"{path}: empty file (no header row of language names)")
    header = next(csv.reader([lines[header_line]]))
    columns = [h.strip() for h in header]
    lang_cols = {j: language_code(h) for j, h in enumerate(columns) if language_code(h)}
    codes = list(lang_cols.values())
    dupes = {c for c in codes if codes.count(c) > 1}
    if dupes:
        raise DatasetError(f"{path}: line {header_line + 1}: language column(s) repeated: {sorted(dupes)}")
    group_col = next((j for j, h in enumerate(columns) if h.lower() in GROUP_COLUMNS), None)
    report = [
        f"{path}: column '{h}' is not a language; ignored"
        for j, h in enumerate(columns)
        if j not in lang_cols and j != group_col and h
    ]
    if languages is not None:
        wanted = []
        for lang in languages:
            code = language_code(lang) or lang
            if code not in codes:
                raise DatasetError(
                    f"{path}: unknown language column '{lang}'; the file has: "
                    f"{', '.join(f'{columns[j]} ({c})' for j, c in lang_cols.items())}"
                )
            wanted.append(code)
    else:
        wanted = codes
    col_of = {c: j for j, c in lang_cols.items()}
    raw_rows: list[tuple[int, list[tuple[str, ...]], str | None]] = []
    body = io.StringIO("\n".join(lines[header_line + 1 :]))
    for offset, fields in enumerate(csv.reader(body)):
        line = header_line + 2 + offset
        if not fields or not any(f.strip() for f in fields) or fields[0].lstrip().startswith("#"):
            continue
        if len(fields) < len(columns):
            fields = fields + [""] * (len(columns) - len(fields))
        elif len(fields) > len(columns) and any(f.strip() for f in fields[len(columns) :]):
            raise DatasetError(
                f"{path}: line {line}: {len(fields)} fields but the header has {len(columns)} "
                "(a cell with a comma must be quoted)"
            )
        cells = [_split_cell(fields[col_of[c]]) for c in wanted]
        empty = [columns[col_of[c]] for c, cell in zip(wanted, cells) if not cell]
        if empty:
            msg = f"{path}: line {line}: empty cell in column(s) {', '.join(empty)}"
            if on_empty == "error":
                raise DatasetError(msg + " (fill it in, or read with on_empty='drop')")
            report.append(msg + "; row dropped")
            continue
        group = fields[group_col].strip() or None if group_col is not None else None
        raw_rows.append((line, cells, group))
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

    Blank lines and ``#`` lines are skipped in every file; the remaining line
    counts must agree.  Cells may hold ``|`` alternatives.

    >>> import semanscope_nb as snb, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "en.txt").write_text("water\\nfire\\n", encoding="utf-8")
    >>> _ = (d / "zh.txt").write_text("水\\n火\\n", encoding="utf-8")
    >>> snb.read_word_lists({"en": d / "en.txt", "zh": d / "zh.txt"}).rows[1]
    (('fire',), ('火',))
    """
    columns: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    digest = hashlib.sha256()
    for lang, p in files.items():
        code = language_code(lang) or lang
        text, sha = _read_text(Path(p))
        digest.update(sha.encode())
        entries = [
            (i + 1, _split_cell(ln))
            for i, ln in enumerate(text.splitlines())
            if ln.strip() and not ln.lstrip().startswith("#")
        ]
        columns[code] = entries
    counts = {lang: len(v) for lang, v in columns.items()}
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{files[k] if k in files else k}: {n}" for k, n in counts.items())
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
        report=[],
    )


def dataset_from_frame(frame: pd.DataFrame, *, name: str = "frame") -> WordDataset:
    """Build a dataset from a DataFrame whose columns are language names or codes."""
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    text = buf.getvalue()
    langs = [c for c in frame.columns if language_code(str(c))]
    rows = []
    for i, rec in enumerate(frame[langs].itertuples(index=False)):
        cells = [_split_cell("" if pd.isna(v) else str(v)) for v in rec]
        empty = [str(c) for c, cell in zip(langs, cells) if not cell]
        if empty:
            raise DatasetError(f"{name}: row {i}: empty cell in column(s) {', '.join(empty)}")
        rows.append((i + 2, cells, None))
    return _finish(
        name=name,
        source=f"<DataFrame {name}>",
        sha=hashlib.sha256(text.encode()).hexdigest(),
        languages=[language_code(str(c)) for c in langs],
        raw_rows=rows,
        report=[],
    )


# --------------------------------------------------------------------------- bundled data


def _dataset_name(path: Path) -> str:
    return path.stem


def bundled_data_dir() -> Path:
    """Folder of the datasets this project wrote (``SEMANSCOPE_DATA`` overrides)."""
    env = os.environ.get("SEMANSCOPE_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def shared_data_dir() -> Path:
    """Folder of the public evaluation data (``SEMANSCOPE_SHARED_DATA`` overrides).

    Defaults to ``../shared/data`` next to the project checkout.
    """
    env = os.environ.get("SEMANSCOPE_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


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
            header = next((ln for ln in fh if ln.strip() and not ln.startswith("#")), "")
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
