"""The surface baseline's bootstrap statistics on disk, so that a fresh process's first verdict reuses them.

The verdict compares every model with the surface-form baseline (character n-gram
TF-IDF) on the same concepts and the same multinomial resamples.  The baseline's
statistics (its point chance-corrected score and the bootstrap distribution of it)
depend only on the baseline's word vectors, the compared concepts, the seed and the
number of resamples -- not on the model.  :mod:`semanscope_nb.metrics.chance` keeps
them in memory (a benchmark's second model reads them); this store keeps them in
``settings.cache_dir / "surface-null"`` as well, so the first call of a new process
(a fresh kernel, the next benchmark run) reads them instead of bootstrapping the
4096-dimensional baseline again.

What a file is keyed by: the caller's key, the package version and :data:`STORE_FORMAT`.
The caller's key is either a digest of the baseline's vectors and incidence (so of
the data set's words and the baseline's own version and parameters, which determine
those numbers), of the compared concepts, the seed, ``n_boot`` and the concept count;
or -- when the caller knows what determines the baseline's vectors without reading
them (:class:`~semanscope_nb.metrics.chance.BaselineVectors`: the baseline encoder's
cache key, the data set's content and languages) -- a digest of that, of the concepts
the model keeps, the seed, ``n_boot`` and the concept count.  Such a file also holds
the compared concepts (a boolean per concept: the kept ones the baseline can embed),
so that a hit needs no vector at all.
The file name is the digest of all of them; the file also holds them and a digest
of its own bytes, so a damaged file (truncated, bit-flipped, not ours) or a foreign
one (another key or package version under that name) is detected, ignored and
rewritten.  A file that cannot be read or written for a temporary reason (a
read-only or locked folder, a full disk: any ``OSError``) is *not* damage: the
statistics are computed (and kept in memory) and the file is left alone.

Writes are atomic (a temporary file in the same folder, flushed, then
``os.replace``): a reader sees the old file or the new one, never half of one.
The folder holds at most :data:`MAX_FILES` files: a write removes the least
recently used beyond it (a read marks a file used).

>>> import tempfile
>>> store = SurfaceStore(tempfile.mkdtemp())
>>> store.get(b"k" * 20) is None
True
>>> store.put(b"k" * 20, (np.float64(0.25), np.array([0.2, 0.3])))
True
>>> point, dist = store.get(b"k" * 20)
>>> float(point), dist.tolist(), store.hits, store.misses
(0.25, [0.2, 0.3], 1, 1)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import struct
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from semanscope_nb.provenance import regular_file

#: the layout of a file (bumped when the layout, or the arithmetic behind the stored numbers, changes);
#: 2: an optional third part, the compared concepts (a boolean per concept), after the distribution;
#: 3: the resamples drawn over the concepts in canonical order (metrics.row_order)
STORE_FORMAT = 3
#: the folder under ``settings.cache_dir``
FOLDER_NAME = "surface-null"
#: files kept at most (about 8 kB each at 1000 resamples); beyond, the least recently used ones are removed on a write
MAX_FILES = 512
_MAGIC = b"SNBSURF\x00"
_ROWS = b"ROWS"  # the tag of the optional compared concepts
_DIGEST = 32  # blake2b digest size of the file's own check


@functools.lru_cache(maxsize=1)
def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semanscope_nb")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def default_surface_folder() -> Path:
    """``surface-null/`` under ``settings.cache_dir`` (``SEMANSCOPE_CACHE``), read when called.

    >>> default_surface_folder().name
    'surface-null'
    """
    from semanscope_nb.settings import settings

    return Path(settings.cache_dir) / FOLDER_NAME


class SurfaceStore:
    """The baseline's (point, distribution) by key, one file each in ``folder`` (None: :func:`default_surface_folder`).

    :meth:`get` returns None on a miss (no file, a damaged or foreign file, or a
    temporary read error); :meth:`put` returns whether the file was written.
    Counters: ``hits``, ``misses``, ``damaged`` (files found damaged or foreign),
    ``errors`` (temporary read or write errors).  Safe from any thread.

    >>> import tempfile
    >>> s = SurfaceStore(tempfile.mkdtemp())
    >>> s.put(b"a" * 20, (np.float64(0.1), None)), s.get(b"a" * 20)
    (True, (np.float64(0.1), None))
    >>> s.put(b"b" * 20, (np.float64(0.1), None, np.array([True, False, True]))), s.get(b"b" * 20)[2].tolist()
    (True, [True, False, True])
    """

    def __init__(self, folder: str | os.PathLike | None = None, *, max_files: int = MAX_FILES) -> None:
        if max_files < 1:
            raise ValueError(f"max_files must be >= 1, got {max_files}")
        self._folder = None if folder is None else Path(folder)
        self.max_files = int(max_files)
        self._lock = threading.Lock()
        self.hits = self.misses = self.damaged = self.errors = 0
        self._warned = False

    @property
    def folder(self) -> Path:
        return self._folder if self._folder is not None else default_surface_folder()

    @staticmethod
    def _full_key(key: bytes) -> bytes:
        h = hashlib.blake2b(digest_size=20)
        h.update(b"surface-null|%d|" % STORE_FORMAT)
        h.update(_package_version().encode())
        h.update(b"|")
        h.update(bytes(key))
        return h.digest()

    def path(self, key: bytes) -> Path:
        """The file of ``key`` (its name: the hex digest of the key, the package version and the format)."""
        return self.folder / f"{self._full_key(key).hex()}.bin"

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def get(self, key: bytes) -> tuple | None:
        """The stored (point, distribution) -- or (point, distribution, compared concepts) -- of ``key``, or None."""
        path = self.path(key)
        try:
            raw = regular_file(path).read_bytes()
        except FileNotFoundError:
            self._count("misses")
            return None
        except OSError:  # locked, unreadable for now: temporary, not damage (the file stays)
            self._count("errors")
            self._count("misses")
            return None
        value = _decode(raw, self._full_key(key))
        if value is None:  # damaged or foreign: recomputed, and put() rewrites it
            self._count("damaged")
            self._count("misses")
            return None
        self._count("hits")
        with contextlib.suppress(OSError):  # recently used (a read-only folder leaves the time alone: not an error)
            os.utime(path)
        return value

    def put(self, key: bytes, value: tuple) -> bool:
        """Write ``value`` = (point, distribution or None[, compared concepts]) under ``key`` atomically.

        False (and one warning) on an OSError.
        """
        folder = self.folder
        data = _encode(value, self._full_key(key))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".surface-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:  # read-only folder, full disk, a lock: keep the statistics in memory only
            self._count("errors")
            with self._lock:
                first, self._warned = not self._warned, True
            if first:
                warnings.warn(f"surface baseline store: cannot write to {folder} ({type(exc).__name__}); its statistics "
                              "are kept in memory only", RuntimeWarning, stacklevel=2)
            return False
        self._prune(folder)
        return True

    def _prune(self, folder: Path) -> None:
        """Remove the least recently used files beyond ``max_files`` (another process may remove them first)."""
        with contextlib.suppress(OSError):
            files = list(folder.glob("*.bin"))
            if len(files) <= self.max_files:
                return
            aged = []
            for f in files:
                with contextlib.suppress(OSError):
                    aged.append((f.stat().st_mtime_ns, f.name, f))
            aged.sort()
            for _, _, f in aged[: len(aged) - self.max_files]:
                with contextlib.suppress(OSError):
                    f.unlink()


def _encode(value: tuple, full_key: bytes) -> bytes:
    point, dist = value[:2]
    dist_bytes = b"" if dist is None else np.ascontiguousarray(dist, dtype="<f8").tobytes()
    n = -1 if dist is None else int(np.asarray(dist).size)
    version = _package_version().encode()
    body = (_MAGIC + struct.pack("<HH", STORE_FORMAT, len(version)) + version + full_key
            + struct.pack("<dq", float(point), n) + dist_bytes)
    if len(value) > 2:  # the compared concepts: their count, then one bit each
        rows = np.asarray(value[2], dtype=bool).ravel()
        body += _ROWS + struct.pack("<q", rows.size) + np.packbits(rows).tobytes()
    return body + hashlib.blake2b(body, digest_size=_DIGEST).digest()


def _decode(raw: bytes, full_key: bytes) -> tuple | None:
    """The (point, distribution[, compared concepts]) in ``raw``, or None when it is damaged or not the file of ``full_key``."""
    if len(raw) < len(_MAGIC) + 4 + _DIGEST or not raw.startswith(_MAGIC):
        return None
    body, check = raw[:-_DIGEST], raw[-_DIGEST:]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != check:
        return None
    at = len(_MAGIC)
    fmt, n_version = struct.unpack_from("<HH", body, at)
    at += 4
    version = body[at:at + n_version]
    at += n_version
    if fmt != STORE_FORMAT or version != _package_version().encode() or body[at:at + len(full_key)] != full_key:
        return None  # another format, package version or key: foreign
    at += len(full_key)
    if len(body) < at + 16:
        return None
    point, n = struct.unpack_from("<dq", body, at)
    at += 16
    if n < -1 or len(body) < at + 8 * max(n, 0):
        return None
    dist = None if n == -1 else np.frombuffer(body, dtype="<f8", count=n, offset=at).astype(np.float64)  # a writable copy
    at += 8 * max(n, 0)
    if len(body) == at:
        return np.float64(point), dist
    if body[at:at + len(_ROWS)] != _ROWS or len(body) < at + len(_ROWS) + 8:
        return None
    at += len(_ROWS)
    (n_rows,) = struct.unpack_from("<q", body, at)
    at += 8
    if n_rows < 0 or len(body) != at + (n_rows + 7) // 8:
        return None
    rows = np.unpackbits(np.frombuffer(body, dtype=np.uint8, offset=at), count=n_rows).astype(bool)
    return np.float64(point), dist, rows
