"""Where datasets live and what they hold: the data folders, the bundled datasets, and folder listings.

:func:`bundled_data_dir` is the folder of the datasets this project wrote
(``SEMANSCOPE_DATA`` overrides), :func:`shared_data_dir` the folder of the
public evaluation data (``SEMANSCOPE_SHARED_DATA``).  :func:`list_datasets`
and :func:`list_folder_datasets` describe dataset files (name, path,
languages, card) from their header lines, without reading their rows; loading
one is :func:`semanscope_nb.data.words.load_dataset`.

Layer: data.  Imports :mod:`semanscope_nb.data.languages` and :mod:`semanscope_nb.settings` only.

Example
-------
>>> [d.name for d in list_datasets()]
['conceptual-space', 'cultural-nuance', 'edge-cases', 'oracle-primitives']
>>> info = list_datasets()[2]
>>> info.languages[:2], info.card is not None
(('en', 'zh'), True)
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from semanscope_nb.data.languages import language_code


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


def _header_languages(path: Path) -> tuple[str, ...]:
    """The language codes of the file's first line that is neither blank nor a ``#`` comment."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        header = next((ln for ln in fh if ln.strip() and not ln.lstrip(" \t").startswith("#")), "")
    return tuple(c for c in (language_code(h) for h in next(csv.reader([header]), [])) if c)


def _dataset_info(path: Path, languages: tuple[str, ...]) -> DatasetInfo:
    card = path.with_suffix(".md")
    return DatasetInfo(path.stem, str(path), languages, str(card) if card.exists() else None)


def list_datasets(folder: str | os.PathLike | None = None) -> list[DatasetInfo]:
    """The bundled datasets (or every ``*.csv`` in ``folder``), without loading them."""
    root = Path(folder) if folder is not None else bundled_data_dir()
    if folder is None:
        paths = [root / f"{n}.csv" for n in BUNDLED_DATASETS if (root / f"{n}.csv").exists()]
    else:
        paths = sorted(root.glob("*.csv"))
    return [_dataset_info(p, _header_languages(p)) for p in paths]


def list_folder_datasets(folder: str | os.PathLike) -> tuple[list[DatasetInfo], list[str]]:
    """The ``*.csv`` files of ``folder`` (as :func:`list_datasets` lists them) and a note per entry skipped.

    An entry that is not a readable file (a sub-folder named ``x.csv``) is
    skipped and named instead of failing the whole listing.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "x.csv").mkdir()
    >>> infos, notes = list_folder_datasets(d); infos, notes[0].endswith("a folder, not a CSV file; skipped")
    ([], True)
    """
    root = Path(folder).expanduser()
    entries = sorted(root.glob("*.csv"))
    if all(p.is_file() for p in entries):
        try:
            return list_datasets(root), []
        except OSError:
            pass  # one of them cannot be read: list the others below
    infos: list[DatasetInfo] = []
    notes: list[str] = []
    for p in entries:
        if not p.is_file():
            notes.append(f"{p}: a folder, not a CSV file; skipped")
            continue
        try:
            languages = _header_languages(p)
        except OSError as exc:
            notes.append(f"{p}: cannot be read ({exc.strerror or exc}); skipped")
            continue
        infos.append(_dataset_info(p, languages))
    return infos, notes
