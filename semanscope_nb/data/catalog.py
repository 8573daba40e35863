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

from semanscope_nb.data.languages import header_language_code


def bundled_data_dir() -> Path:
    """Folder of the datasets this project wrote (``SEMANSCOPE_DATA`` overrides)."""
    from semanscope_nb.settings import settings

    return settings.data_dir


def shared_data_dir() -> Path:
    """Folder of the public evaluation data (``SEMANSCOPE_SHARED_DATA`` overrides).

    Defaults to ``../shared/data`` next to the project checkout.  A setting that names a file (not a folder) is a
    :class:`~semanscope_nb.errors.DatasetError` naming the setting, not a "not found" for a folder under the file.
    """
    from semanscope_nb.errors import DatasetError
    from semanscope_nb.settings import settings

    folder = Path(settings.shared_data_dir)
    if folder.exists() and not folder.is_dir():
        raise DatasetError(f"the shared data folder (SEMANSCOPE_SHARED_DATA / settings.shared_data_dir) is set to "
                           f"'{folder}', which is not a folder; set it to the folder holding tatoeba/, muse/, semanscope/, ...")
    return folder


BUNDLED_DATASETS = ("conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives")


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset file holds, read from its header without parsing every row."""

    name: str
    path: str
    languages: tuple[str, ...]
    card: str | None
    #: why the file cannot be used (binary, not UTF-8, unreadable); None for a usable file
    error: str | None = None


#: bytes of a file looked at for a NUL (binary data) before its header is read
SNIFF_BYTES = 65536


def _header_languages(path: Path) -> tuple[str, ...]:
    """The language codes of the file's first line that is neither blank nor a ``#`` comment.

    A file holding a NUL byte in its first :data:`SNIFF_BYTES` bytes, or whose lines up to the header
    are not UTF-8, is not a CSV text file: :class:`~semanscope_nb.errors.DatasetError` naming it.
    """
    from semanscope_nb.errors import DatasetError
    from semanscope_nb.provenance import regular_file

    with open(regular_file(path), "rb") as fh:  # a FIFO is refused (an OSError), never opened: it would block
        head = fh.read(SNIFF_BYTES)
    nul = head.find(b"\0")
    if nul >= 0:
        raise DatasetError(f"{path.name}: binary data (a NUL byte at byte {nul}), not a CSV text file")
    header = ""
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):  # bytes up to the header only: a bad row is the loader's to report
            try:
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                column = len(raw[:exc.start].decode("utf-8", errors="replace")) + 1  # characters, not bytes
                raise DatasetError(f"{path.name}: line {line_no} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                                   f"character column {column}); save the file as UTF-8") from None
            if line.strip() and not line.lstrip(" \t").startswith("#"):
                header = line.rstrip("\r\n")
                break
    return tuple(c for c in (header_language_code(h) for h in next(csv.reader([header]), [])) if c)  # as the reader


def _dataset_info(path: Path, languages: tuple[str, ...], error: str | None = None) -> DatasetInfo:
    card = path.with_suffix(".md")
    return DatasetInfo(path.stem, str(path), languages, str(card) if card.exists() else None, error)


def _describe(path: Path) -> DatasetInfo:
    """The file's :class:`DatasetInfo`; a file that cannot be used gets ``error`` (and no languages) instead of raising."""
    from semanscope_nb.errors import DatasetError

    try:
        return _dataset_info(path, _header_languages(path))
    except DatasetError as exc:
        return _dataset_info(path, (), str(exc))
    except OSError as exc:
        return _dataset_info(path, (), f"{path.name}: cannot be read ({exc.strerror or exc})")


def list_datasets(folder: str | os.PathLike | None = None) -> list[DatasetInfo]:
    r"""The bundled datasets (or every ``*.csv`` in ``folder``), without loading them.

    A file that cannot be used (binary, not UTF-8, unreadable) is listed with its ``error`` set and
    no languages; the others are unaffected.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "good.csv").write_text("english,german\nwater,Wasser\n"); _ = (d / "bad.csv").write_bytes(b"\x00\xff")
    >>> [(i.name, i.languages, i.error) for i in list_datasets(d)]
    [('bad', (), 'bad.csv: binary data (a NUL byte at byte 0), not a CSV text file'), ('good', ('en', 'de'), None)]
    """
    root = Path(folder) if folder is not None else bundled_data_dir()
    if folder is None:
        paths = [root / f"{n}.csv" for n in BUNDLED_DATASETS if (root / f"{n}.csv").exists()]
    else:
        paths = sorted(root.glob("*.csv"))
    return [_describe(p) for p in paths]


def list_folder_datasets(folder: str | os.PathLike) -> tuple[list[DatasetInfo], list[str]]:
    """The ``*.csv`` files of ``folder`` (as :func:`list_datasets` lists them) and a note per entry skipped.

    An entry that cannot be used (a sub-folder named ``x.csv``, a binary or
    non-UTF-8 file, an unreadable file) is skipped and named with its error
    instead of failing the whole listing.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "x.csv").mkdir()
    >>> infos, notes = list_folder_datasets(d); infos, notes[0].endswith("a folder, not a CSV file; skipped")
    ([], True)
    """
    root = Path(folder).expanduser()
    infos: list[DatasetInfo] = []
    notes: list[str] = []
    for p in sorted(root.glob("*.csv")):
        if p.is_dir():
            notes.append(f"{p}: a folder, not a CSV file; skipped")
            continue
        info = _describe(p)
        if info.error is not None:
            notes.append(f"{p}: {info.error.removeprefix(p.name + ': ')}; skipped")
            continue
        infos.append(info)
    return infos, notes
