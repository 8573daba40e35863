"""Provenance records and atomic file writes (results are never left half-written)."""

from __future__ import annotations

import datetime as _dt
import errno
import functools
import importlib.metadata
import json
import math
import os
import platform
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def package_version(dist: str) -> str:
    """Installed version of a distribution, or 'not-installed' (read once per process: every result stamps it)."""
    return _package_version(dist)


@functools.lru_cache(maxsize=256)
def _package_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not-installed"


def json_ready(x: Any) -> Any:
    """NumPy scalars/arrays -> Python, NaN/inf -> None, tuples -> lists, keys -> str: strict JSON.

    >>> json_ready({"a": np.float64("nan"), 1: (np.int64(2), np.array([0.5]))})
    {'a': None, '1': [2, [0.5]]}
    """
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, np.generic):
        return json_ready(x.item())
    if isinstance(x, np.ndarray):
        return [json_ready(v) for v in x.tolist()]
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    return x


#: longest file-name component built from user-given names (the rest is replaced by a hash of the whole)
MAX_NAME_PART = 80


def safe_name(name: object, *, what: str = "name") -> str:
    """``name`` as one safe file-name component: letters, digits, ``-_.`` kept, anything else ``_``.

    Never empty, never ``.`` / ``..`` or hidden (no leading dot), never longer than
    :data:`MAX_NAME_PART` (a long name keeps its start and gains a hash of the
    whole, so two long names stay distinct).

    >>> safe_name("../../etc/passwd"), safe_name("st:org/model v2"), safe_name("..")
    ('_.._.._etc_passwd', 'st_org_model_v2', '_..')
    """
    text = str(name)
    if not text:
        raise ValueError(f"{what}: an empty name cannot name a file")
    out = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in text)
    if out.startswith("."):
        out = "_" + out
    if len(out) > MAX_NAME_PART:
        import hashlib

        out = out[: MAX_NAME_PART - 17] + "-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def path_inside(folder: str | os.PathLike, *parts: object, what: str = "path") -> Path:
    """``folder / part / ...`` with every part made safe by :func:`safe_name`, checked to stay inside ``folder``.

    >>> path_inside("/tmp/results", "runs", "../../x.json").as_posix()
    '/tmp/results/runs/_.._.._x.json'
    """
    root = Path(folder)
    return ensure_inside(root, root.joinpath(*(safe_name(p, what=what) for p in parts)), what=what)


def ensure_inside(folder: str | os.PathLike, target: str | os.PathLike, *, what: str = "path") -> Path:
    """``target`` itself, after checking that it lies inside ``folder`` once symlinks and ``..`` are resolved.

    Raises ``ValueError`` naming both otherwise (a file a writer would put outside its folder).

    >>> ensure_inside("/tmp/results", "/tmp/results/a/b.json").as_posix()
    '/tmp/results/a/b.json'
    >>> ensure_inside("/tmp/results", "/tmp/results/../x.json")
    Traceback (most recent call last):
    ...
    ValueError: path: '/tmp/results/../x.json' would leave the folder '/tmp/results'
    """
    root, target = Path(folder), Path(target)
    base = os.path.realpath(root)
    real = os.path.realpath(target)
    if real == base or os.path.commonpath([base, real]) != base:
        raise ValueError(f"{what}: '{target}' would leave the folder '{root}'")
    return target


def shareable_source(source: str | os.PathLike | None) -> str:
    """A dataset's source as it may appear in shared results: never a home or absolute path.

    A file inside the project's data folder or the shared data folder is named
    relative to it (``shared:tatoeba/tatoeba.deu-eng.deu``, ``bundled:edge-cases.csv``);
    any other file by its name alone (its content is identified by the sha256
    results carry beside it); ``<memory>`` and the like stay as they are; two
    sources joined by `` | `` (a parallel corpus) are each made shareable.  Only
    when the user asks (``settings.absolute_paths = True``, ``SEMANSCOPE_ABSOLUTE_PATHS=1``,
    the CLI's ``--absolute-paths``) is the absolute path kept.

    >>> shareable_source("/home/alice/private/my words.csv")
    'my words.csv'
    >>> shareable_source("<memory>"), shareable_source("/home/a/x.deu | /home/a/x.eng")
    ('<memory>', 'x.deu | x.eng')
    """
    if source is None:
        return "<memory>"
    text = str(source)
    if text.startswith("<") or not text.strip():
        return text
    if " | " in text:
        return " | ".join(shareable_source(part) for part in text.split(" | "))
    from semanscope_nb.settings import settings

    path = Path(text).expanduser()
    try:
        resolved = path.resolve()
    except OSError:
        resolved = path
    if settings.absolute_paths:
        return str(resolved)
    for label, root in (("bundled", settings.data_dir), ("shared", settings.shared_data_dir)):
        try:
            return f"{label}:{resolved.relative_to(Path(root).resolve()).as_posix()}"
        except (ValueError, OSError):
            continue
    return path.name


def shareable_report(lines: Any, *sources: str | os.PathLike | None) -> list[str]:
    """A reader's report lines with each of ``sources`` (as written, expanded or resolved) named by
    :func:`shareable_source`: what results keep of the report (``reader_report``).

    >>> shareable_report(["/home/alice/w.csv: line 9: duplicate of line 3; dropped"], "/home/alice/w.csv")
    ['w.csv: line 9: duplicate of line 3; dropped']
    """
    out = [str(line) for line in (lines or ())]
    for source in sources:
        if source is None:
            continue
        for part in str(source).split(" | "):
            if part.startswith("<") or not part.strip():
                continue
            forms = {part, os.path.expanduser(part), os.path.abspath(os.path.expanduser(part))}
            try:
                forms.add(os.path.realpath(os.path.expanduser(part)))
            except OSError:
                pass
            shown = shareable_source(part)
            for form in sorted(forms, key=len, reverse=True):  # longest first: a form never leaves part of another
                if form != shown:
                    out = [line.replace(form, shown) for line in out]
    return out


def package_info() -> dict[str, str]:
    """Versions of this package and of the numerics it relies on."""
    return {
        "semanscope_nb": package_version("semanscope_nb"),
        "python": platform.python_version(),
        "numpy": package_version("numpy"),
        "scipy": package_version("scipy"),
    }


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def regular_file(path: str | os.PathLike) -> Path:
    """``path``, after checking (without opening it) that it is a regular file a cache or job file may be read from.

    The one rule every cache and job file of the package follows: ``FileNotFoundError``
    means *missing*; any other ``OSError`` met while reading means *cannot be read now*
    (permission denied, an I/O error, a lock, too many open files) -- a condition, never
    damage, so the caller leaves the file as it is and never overwrites it.  Something that
    is not a regular file (a folder, a FIFO, a socket, a device) raises an ``OSError`` here
    (it is not a file this package wrote): it is never opened, so a FIFO cannot hang the
    reader.  Only bytes that were read and do not parse count as damage (the caller's decision).

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.json").write_bytes(b"{}")
    >>> regular_file(d / "a.json").read_bytes()
    b'{}'
    >>> regular_file(d)
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] not a regular file (a folder): '...'
    """
    path = Path(path)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file (a folder)", str(path))
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path))
    return path


def kept_text(path: str | os.PathLike, *, sound: Any, build: Any) -> str:
    """A derived text kept in a cache file: the file's text when ``sound(text)``, else ``build()`` -- written over the
    file only when it was missing or read and not sound (damage), never when it could not be read now.

    :func:`regular_file`'s rule: any ``OSError`` but a missing file (a lock, EACCES, a folder or FIFO at its name) is
    a condition, so the text is built in memory and the file is left as it is.  A file that cannot be written (a
    read-only or full cache folder) keeps the built text in memory only.  The Vega bundles of the HTML export and of
    the panel's chart view read through it.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "bundle.js"
    >>> kept_text(f, sound=lambda t: t.endswith("ok"), build=lambda: "built ok"), f.read_text()
    ('built ok', 'built ok')
    """
    path = Path(path)
    may_write = True
    try:
        text = regular_file(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError:  # cannot be read now: not damage, never replaced
        text, may_write = "", False
    except UnicodeDecodeError:  # read and not text: damage, rebuilt and replaced
        text = ""
    if sound(text):
        return text
    text = build()
    if may_write:
        try:
            atomic_write_text(path, text)
        except OSError:  # a read-only or full cache folder: built again next time
            pass
    return text


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file + rename: readers see old or new, never half.

    A folder at ``path`` is an ``IsADirectoryError`` naming ``path`` (not the temporary file).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: a text cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs: a text cell that starts like a formula gains a leading ``'``.

    Numbers stay numbers; only text (a model, dataset or word a user named) is touched,
    so ``-0.5`` the number is kept and ``=HYPERLINK(...)`` the dataset name is shown as text.

    >>> spreadsheet_safe("=1+1"), spreadsheet_safe("@SUM(A1)"), spreadsheet_safe(-0.5), spreadsheet_safe("en,zh")
    ("'=1+1", "'@SUM(A1)", -0.5, 'en,zh')
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(frame: Any) -> str:
    """``frame`` (a DataFrame) as CSV text whose every text cell and column name is :func:`spreadsheet_safe`.

    >>> import pandas as pd
    >>> print(csv_text(pd.DataFrame({"dataset": ["=cmd|'/c calc'!A1", "words"], "sa": [-0.5, 0.25]})), end="")
    dataset,sa
    '=cmd|'/c calc'!A1,-0.5
    words,0.25
    """
    import pandas as pd  # here: this module is imported by every layer, most never write a CSV

    safe = frame.copy()
    safe.columns = [spreadsheet_safe(str(c)) for c in safe.columns]
    for col in range(safe.shape[1]):
        column = safe.iloc[:, col]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column)):
            safe.isetitem(col, column.astype(object).map(spreadsheet_safe))
    return safe.to_csv(index=False)


#: characters that, raw, change how the text around them is shown or hide what it says, so user-given text
#: (a dataset, file, model or word name) never reaches a page, a drawing or the terminal with them:
#: every C0/C1 control and DEL (terminal escapes, BEL, CR overwrites), the bidi controls U+061C, U+200E/F,
#: U+202A-U+202E, U+2066-U+2069 (they reorder text: "evil\u202elmth.exe" shows as "evilexe.html"), the invisible
#: U+200B, U+2060-U+2065, U+206A-U+206F, U+FEFF, U+FFF9-U+FFFB, the line/paragraph separators U+2028/U+2029, and
#: lone surrogates (a file name that is no UTF-8; they cannot even be written out).
#: Left alone on purpose: ZWNJ/ZWJ U+200C/U+200D (part of Persian, Indic and Arabic words and of emoji; they join or
#: split glyphs but cannot reorder or hide text), the soft hyphen U+00AD, the Arabic number signs U+0600-U+0605
#: and the emoji tag characters U+E0020-U+E007F.
INVISIBLE_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f"
                             "\ufeff\ufff9-\ufffb\ud800-\udfff]")


def visible_text(text: object, *, keep: str = "") -> str:
    r"""``str(text)`` with every character of :data:`INVISIBLE_CHARS` (but those in ``keep``) shown as ``\uXXXX``.

    The escape is JSON's (4 lower-case hex digits), so JSON text passed through
    stays JSON with the same values; the words a user gave keep their letters,
    ZWNJ/ZWJ included.  Use it on text for a person (an HTML text node, a chart
    title, a terminal line), never on the data itself.

    >>> visible_text("evil\u202elmth.exe"), visible_text("\x1b[2Jred\x07"), visible_text("a\tb\n", keep="\n\t")
    ('evil\\u202elmth.exe', '\\u001b[2Jred\\u0007', 'a\tb\n')
    >>> visible_text("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    True
    """
    return INVISIBLE_CHARS.sub(lambda m: m.group() if m.group() in keep else f"\\u{ord(m.group()):04x}", str(text))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
