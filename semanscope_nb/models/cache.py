"""Per-text embedding cache on SQLite.

Why sqlite3: it ships with Python, and every write here is one transaction.
WAL journalling means a killed process leaves the file readable with every
committed batch in it, and several processes may read and write at once (a busy
timeout serialises writers).  Each row stores a BLAKE2 digest of its vector
bytes, so a damaged entry is detected on read, reported, deleted and
re-encoded, and the rest of the cache is untouched.  Rows stored since the
``vector_checks`` table exists also carry an XXH3-128 digest there, about ten
times faster to check (a warm benchmark hashes some 300 MB of vectors): a read
checks it first and takes the BLAKE2 digest only when it is missing (a cache
written before it) or does not match, so a damaged row is still told and named
by its own digest; a sound row read that way gets its check stored (best
effort, never waiting for another writer).

A temporary condition never destroys the cache:

- *locked* by another process: wait ``timeout`` seconds (sqlite busy timeout),
  then raise :class:`~semanscope_nb.errors.CacheError` naming the folder;
- *read-only* file or folder (or a disk too full to open it): serve the cached
  vectors, encode the missing ones without storing them (one
  :class:`CacheWarning`); the file is never modified or renamed;
- *disk full / I/O error* while storing: the batch is rolled back and not stored
  (one :class:`CacheWarning`); every committed row is kept.

Only real damage -- SQLite says "not a database" or "malformed" *and* a
``PRAGMA quick_check`` on a fresh connection confirms it -- moves the file aside,
to a name never used before (``*.damaged-<time>-<pid>-<random>``), and starts a
new one.  The cache may be used from any thread (see :class:`EmbeddingCache`).

Key: the encoder's ``cache_key`` (model id + version + vector-changing options)
and the exact text.  Only missing texts are sent to the model, in batches.

Sparse rows (at most a quarter of their coordinates non-zero: TF-IDF, 0.4% non-zero
over 4096 hashed n-grams) are stored in their own table, ``sparse_vectors``, as the
int32 positions and float32 bit patterns of their non-zero coordinates with an
XXH3-128 digest of both: a warm read of a TF-IDF row fetches ~100 bytes, not 16 KB
spread over overflow pages, and gives back the same float32 bits.  A cache written
before that table holds its TF-IDF rows dense in ``vectors`` and is read as it is;
a version that does not know the table re-encodes such texts into ``vectors`` (a
text found in both is served from ``sparse_vectors``: the same vector).

A data set's whole word set is read again and again (every call on it asks for the same texts): after a full,
sound read of at least :data:`BUNDLE_MIN_TEXTS` dense vectors, the cache stores them once more as a *bundle* -- one
row holding the sorted texts, one float32 block and an XXH3-128 digest of both -- and the next read of the same
(model, text set) fetches that one row instead of one row per text (each 2 KB row spills to an overflow page).  The
per-text rows stay the truth: a bundle is derived, written best effort (a lock held elsewhere, a read-only file or
a full disk mean no bundle, never a wait or an error), and triggers in the file delete a model's bundles in the same
transaction as any write or delete of one of its rows, whoever writes it (an older version too).  A bundle is
served only while those triggers are in the file and its digest, length, texts and finiteness check out; a
damaged one is skipped (the per-text rows answer, nothing is reported as damaged) and written over.  Bundles are
token-vector entries (``token_vectors``, model key + :data:`BUNDLE_KEY_SUFFIX`): no new table, so an older version
opens and checks the file as before.

Example
-------
>>> import tempfile, semanscope_nb as snb
>>> cache = snb.EmbeddingCache(tempfile.mkdtemp())
>>> enc = snb.load_model("random-null")
>>> v = cache.embed(enc, ["water", "水", "water"])
>>> v.shape, cache.embed(enc, ["water"]).shape, cache.last_stats.n_encoded
((3, 512), (1, 512), 0)
>>> cache.read_only
False
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np
import xxhash

from semanscope_nb.errors import ArgumentError, CacheError, CacheWarning, EmbeddingError
from semanscope_nb.models.cancel import ShouldStop, check_stop
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.provenance import visible_text

#: seconds one embedding batch should take when a caller may ask to stop (``should_stop``): the stop latency
STOP_LATENCY = 0.4

VECTORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_key TEXT NOT NULL,
    text      TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    vec       BLOB NOT NULL,
    digest    BLOB NOT NULL,
    PRIMARY KEY (model_key, text)
) WITHOUT ROWID;
"""
# Token-level entries (models.tokens): one row per (model, entry) where the entry key is the JSON of the
# text, its word spans and the layer / pooling choice; ``meta`` holds the tokens and shapes, ``blob`` the
# offsets, subword counts and float32 vectors; the digest covers both.
TOKEN_VECTORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS token_vectors (
    model_key TEXT NOT NULL,
    entry     TEXT NOT NULL,
    meta      TEXT NOT NULL,
    blob      BLOB NOT NULL,
    digest    BLOB NOT NULL,
    PRIMARY KEY (model_key, entry)
) WITHOUT ROWID;
"""
# A second digest of each vector blob, XXH3-128 (xxhash: ten times the speed of BLAKE2 at the same 128 bits against
# accidental damage), in a table of its own so that the ``vectors`` table keeps its schema.  A read checks it first; a
# row without one (stored before this table existed) or whose check does not match is judged by its BLAKE2 digest.
VECTOR_CHECKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_checks (
    model_key TEXT NOT NULL,
    text      TEXT NOT NULL,
    xxh3      BLOB NOT NULL,
    PRIMARY KEY (model_key, text)
) WITHOUT ROWID;
"""
# Mostly-zero vectors (at most SPARSE_STORE_DENSITY of the coordinates non-zero): ``idx`` the int32 positions of the
# non-zero coordinates, strictly increasing, ``val`` their float32 values (every non-zero bit pattern, -0.0 included,
# so a read gives back the stored bits), ``digest`` the XXH3-128 of the dimension (8 bytes, little-endian), ``idx``
# and ``val`` (see _sparse_digest).  A table of its own: the ``vectors`` table keeps its schema and meaning.
SPARSE_VECTORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS sparse_vectors (
    model_key TEXT NOT NULL,
    text      TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    idx       BLOB NOT NULL,
    val       BLOB NOT NULL,
    digest    BLOB NOT NULL,
    PRIMARY KEY (model_key, text)
) WITHOUT ROWID;
"""
#: a vector with at most this fraction of non-zero coordinates is stored sparse (8 bytes per non-zero: at most half
#: its dense 4 bytes per coordinate)
SPARSE_STORE_DENSITY = 0.25
# The keys alone, for :meth:`EmbeddingCache.present`: in the table a key sits beside its vector (a 4096-wide TF-IDF row
# spills over several pages), so listing which texts are cached read about one page per entry; this index holds the
# keys only, a hundred to a page.  Made when a writable cache is opened (a cache that cannot take it -- full disk,
# read-only, busy -- is only slower to list).
VECTORS_KEYS_INDEX = "CREATE INDEX IF NOT EXISTS vectors_keys ON vectors (model_key, text)"
# A derived bundle of one (model, text set): a row of ``token_vectors`` under the model key + BUNDLE_KEY_SUFFIX, entry
# "blake2b:" + the hex digest of the sorted texts' JSON, ``meta`` a small JSON header (format, n, dim, texts_bytes,
# written), ``blob`` the texts' JSON (padded with spaces to a multiple of 16 bytes) then the n x dim float32 block,
# ``digest`` XXH3-128 of meta and blob (see _bundle_digest).  These triggers make every write or delete of a per-text
# row (INSERT OR REPLACE fires the INSERT trigger) delete its model's bundles in the same transaction, whoever writes.
BUNDLE_KEY_SUFFIX = "|vector-bundles"
#: a text set is bundled from this many texts on (below it the per-text rows read quickly enough)
BUNDLE_MIN_TEXTS = 256
#: the largest bundle's float32 block, bytes (a bigger set is read per text)
BUNDLE_MAX_BYTES = 64 << 20
#: bundles kept per model key (the newest: a data set read again is read through it, the others are dropped)
BUNDLES_PER_MODEL = 8
_BUNDLE_FORMAT = 1
_BUNDLE_TRIGGERS = {
    (table, event): f"CREATE TRIGGER IF NOT EXISTS {table}_{event.lower()}_drops_bundles AFTER {event} ON {table} "
    f"BEGIN {' '.join(f'DELETE FROM token_vectors WHERE model_key = {row}.model_key || {BUNDLE_KEY_SUFFIX!r};' for row in rows)} END"
    for table in ("vectors", "sparse_vectors")
    for event, rows in (("INSERT", ("NEW",)), ("UPDATE", ("OLD", "NEW")), ("DELETE", ("OLD",)))
}
CACHE_TABLES = ("vectors", "token_vectors", "vector_checks", "sparse_vectors")  # every table this cache writes (anything else is another program's file)
_DB_NAME = "embeddings.sqlite"
_SQL_VARS = 500  # parameters per IN (...) query
_T = TypeVar("_T")

# What an sqlite3 error means for the cache, by primary result code (extended code & 0xFF).
_KIND_BY_CODE = {
    5: "busy",  # SQLITE_BUSY: another connection holds the lock (after the busy timeout)
    6: "busy",  # SQLITE_LOCKED
    11: "damaged",  # SQLITE_CORRUPT
    26: "damaged",  # SQLITE_NOTADB
    8: "readonly",  # SQLITE_READONLY
    13: "full",  # SQLITE_FULL
    10: "io",  # SQLITE_IOERR (ENOSPC often surfaces here, e.g. IOERR_SHMSIZE)
    14: "cantopen",  # SQLITE_CANTOPEN (e.g. a WAL file on a read-only mount)
    3: "cantopen",  # SQLITE_PERM
    23: "cantopen",  # SQLITE_AUTH
}
_READONLY_DBMOVED = 1032  # the file was renamed/unlinked under an open connection: reconnect
# Errors built by hand (wrappers, tests) carry no code: fall back on SQLite's fixed messages.
_KIND_BY_MESSAGE = (
    ("database is locked", "busy"),
    ("table is locked", "busy"),
    ("not a database", "damaged"),
    ("malformed", "damaged"),
    ("readonly database", "readonly"),
    ("disk is full", "full"),
    ("disk i/o error", "io"),
    ("unable to open", "cantopen"),
)
_NO_WRITE_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}


def _kind(exc: BaseException) -> str:
    """Classify an sqlite3 error: busy, damaged, readonly, full, io, cantopen, moved or other."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        if code == _READONLY_DBMOVED:
            return "moved"
        return _KIND_BY_CODE.get(code & 0xFF, "other")
    msg = str(exc).lower()
    return next((kind for needle, kind in _KIND_BY_MESSAGE if needle in msg), "other")


def default_cache_dir() -> Path:
    """``SEMANSCOPE_CACHE`` if set, else the user's cache folder (platformdirs)."""
    from semanscope_nb.settings import settings

    return settings.cache_dir


def resolve_cache(cache: "EmbeddingCache | str | os.PathLike | None | bool" = None) -> "EmbeddingCache | None":
    """The one rule for a ``cache`` argument: None -> the default cache, a folder -> a cache there,
    an :class:`EmbeddingCache` -> itself, False -> no cache.

    >>> resolve_cache(False) is None
    True
    """
    if cache is False:
        return None
    if cache is None or cache is True:
        return EmbeddingCache()
    if isinstance(cache, EmbeddingCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return EmbeddingCache(cache)
    raise ArgumentError(f"cache must be None, False, a folder or an EmbeddingCache, got {type(cache).__name__}")


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def _fast_digest(blob: bytes) -> bytes:
    """The quick check of a vector blob (``vector_checks.xxh3``): XXH3-128, 16 bytes like :func:`_digest`."""
    return xxhash.xxh3_128_digest(blob)


def _has_table(con: sqlite3.Connection, name: str) -> bool:
    """Whether the file holds the table ``name`` (``vector_checks``, ``sparse_vectors``: tables added after the first
    version, missing from a cache written before them and opened read-only or while busy since)."""
    return con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _holds_sparse(con: sqlite3.Connection, model_key: str) -> bool:
    """Whether ``model_key`` has any row in ``sparse_vectors`` (one index probe): when not, that table is not asked."""
    return _has_table(con, "sparse_vectors") and con.execute("SELECT 1 FROM sparse_vectors WHERE model_key=? LIMIT 1",
                                            (model_key,)).fetchone() is not None


def _sparse_digest(dim: int, idx: bytes, val: bytes) -> bytes:
    """The digest of a ``sparse_vectors`` row: XXH3-128 of its dimension (8 bytes, little-endian), positions and values."""
    h = xxhash.xxh3_128(int(dim).to_bytes(8, "little"))
    h.update(idx)
    h.update(val)
    return h.digest()


def _sparse_form(v: np.ndarray) -> tuple[bytes, bytes] | None:
    """(int32 positions, float32 values) of ``v``'s non-zero coordinates (bit patterns: -0.0 is kept), or None when
    more than :data:`SPARSE_STORE_DENSITY` of them are non-zero (then the dense row is the smaller).

    >>> idx, val = _sparse_form(np.array([0, 2.5, 0, 0, 0, 0, 0, -0.0], dtype=np.float32))
    >>> np.frombuffer(idx, dtype="<i4").tolist(), np.frombuffer(val, dtype="<f4").tolist()
    ([1, 7], [2.5, -0.0])
    >>> _sparse_form(np.ones(8, dtype=np.float32)) is None
    True
    """
    nz = np.flatnonzero(v.view(np.uint32))
    if nz.size > SPARSE_STORE_DENSITY * v.size:
        return None
    return nz.astype("<i4").tobytes(), v[nz].astype("<f4").tobytes()


def _dense_of_sparse(dim: int, rows: Sequence[tuple[bytes, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """(float32 block of the rows, one row each, read-only; which rows are sound) of ``sparse_vectors`` rows.

    Sound: as many values as positions, positions strictly increasing inside ``[0, dim)``, every value finite
    (``put`` stores nothing else).  An unsound row's line in the block is zeros.  One pass over all rows at once.
    """
    n = len(rows)
    counts = np.array([len(i) for i, _ in rows], dtype=np.int64)
    ok = (counts % 4 == 0) & (counts == np.array([len(v) for _, v in rows], dtype=np.int64))
    counts = np.where(ok, counts // 4, 0)
    idx = np.frombuffer(b"".join(i for (i, _), good in zip(rows, ok) if good), dtype="<i4").astype(np.int64)
    val = np.frombuffer(b"".join(v for (_, v), good in zip(rows, ok) if good), dtype="<f4")
    row_of = np.repeat(np.arange(n), counts)
    starts = np.cumsum(counts) - counts
    bad = (idx < 0) | (idx >= dim) | ~np.isfinite(val)
    rising = np.ones(idx.size, dtype=bool)
    rising[1:] = idx[1:] > idx[:-1]
    rising[starts[counts > 0]] = True  # the first position of each row has nothing before it
    bad |= ~rising
    ok &= np.bincount(row_of[bad], minlength=n) == 0
    block = np.zeros((n, dim), dtype=np.float32)
    keep = ok[row_of]
    block[row_of[keep], idx[keep]] = val[keep]
    block.flags.writeable = False
    return block, ok


def _bundles_guarded(con: sqlite3.Connection) -> bool:
    """Whether every bundle trigger is in the file (those of ``sparse_vectors`` when it has that table): only then is
    a bundle written or served -- without them a per-text write would leave a bundle stale."""
    have = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    sparse = _has_table(con, "sparse_vectors")
    return all(f"{table}_{event.lower()}_drops_bundles" in have
               for table, event in _BUNDLE_TRIGGERS if table == "vectors" or sparse)


def _bundle_entry(names: bytes) -> str:
    """The entry of a bundle of the sorted texts whose JSON list is ``names``: ``"blake2b:" +`` its hex digest.

    >>> _bundle_entry(_texts_json(["a", "b"])) != _bundle_entry(_texts_json(["ab"]))
    True
    """
    return "blake2b:" + hashlib.blake2b(names, digest_size=20).hexdigest()


def _texts_json(texts: Sequence[str]) -> bytes:
    """The JSON list of ``texts`` (UTF-8) padded with spaces to a multiple of 16 bytes, as a bundle stores it (so that
    its float32 block starts aligned; JSON allows trailing spaces)."""
    names = json.dumps(list(texts), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return names + b" " * (-len(names) % 16)


def _bundle_digest(meta: str, blob: bytes) -> bytes:
    """The digest of a bundle row: XXH3-128 of its meta (UTF-8) then its blob."""
    h = xxhash.xxh3_128(meta.encode("utf-8", "surrogatepass"))
    h.update(blob)
    return h.digest()


def _bundle_row(texts: Sequence[str], block: np.ndarray, *, written: float) -> tuple[str, bytes, bytes]:
    """(meta, blob, digest) of the bundle of the sorted ``texts`` and their float32 rows ``block``.

    >>> meta, blob, digest = _bundle_row(["a", "b"], np.eye(2, dtype=np.float32), written=0.0)
    >>> _bundle_vectors(meta, blob, digest, ["a", "b"])["b"].tolist()
    [0.0, 1.0]
    """
    names = _texts_json(texts)
    n, dim = block.shape
    meta = json.dumps({"format": _BUNDLE_FORMAT, "n": n, "dim": dim, "texts_bytes": len(names), "written": written})
    blob = names + np.ascontiguousarray(block, dtype="<f4").tobytes()
    return meta, blob, _bundle_digest(meta, blob)


def _bundle_vectors(meta: Any, blob: Any, digest: Any, texts: Sequence[str], *,
                    names: bytes | None = None) -> dict[str, np.ndarray] | None:
    """text -> its vector (read-only views of one block) from a bundle row of the sorted ``texts``; None when the row
    is not sound: wrong types, digest, header, length, texts or a non-finite value (``_bundle_row`` writes none).
    ``names``: ``_texts_json(texts)`` when known (the stored texts are compared byte for byte with it)."""
    if not (isinstance(meta, str) and isinstance(blob, bytes) and isinstance(digest, bytes)):
        return None
    try:
        if _bundle_digest(meta, blob) != digest:
            return None
        head = json.loads(meta)
        n, dim, size = head["n"], head["dim"], head["texts_bytes"]
        if (head.get("format") != _BUNDLE_FORMAT or not all(type(x) is int and x >= 0 for x in (n, dim, size))
                or n != len(texts) or len(blob) != size + 4 * n * dim
                or blob[:size] != (_texts_json(texts) if names is None else names)):
            return None
    except (ValueError, TypeError, KeyError):  # not JSON, a header of the wrong shape
        return None
    block = np.frombuffer(blob, dtype="<f4", count=n * dim, offset=size).reshape(n, dim)
    if not np.isfinite(block).all():
        return None
    return dict(zip(texts, block))


def _transaction(con: sqlite3.Connection, action: Callable[[sqlite3.Connection], Any]) -> None:
    """Run ``action`` in one write transaction; roll back on any failure (SQLite may already have)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        action(con)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
        raise


@dataclass(frozen=True)
class EmbedStats:
    """What one :meth:`EmbeddingCache.embed` call did."""

    n_requested: int
    n_unique: int
    n_cached: int
    n_encoded: int
    n_batches: int
    n_damaged: int


class EmbeddingCache:
    """Persistent per-text vector store keyed on (encoder cache key, text).

    ``timeout``: seconds to wait for another process's lock before a
    :class:`~semanscope_nb.errors.CacheError`.  ``read_only=True`` never writes
    (it is also switched on, with one :class:`CacheWarning`, when the file or
    folder cannot be written).  Safe to share between threads; picklable
    (the copy reconnects).
    """

    def __init__(
        self, folder: str | os.PathLike | None = None, *, timeout: float = 60.0, read_only: bool = False
    ) -> None:
        self.folder = Path(folder).expanduser() if folder is not None else default_cache_dir()
        self.path = self.folder / _DB_NAME
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValueError(f"EmbeddingCache timeout= must be a number of seconds >= 0, got {timeout!r}")
        self.timeout = float(timeout)
        self.read_only = bool(read_only)
        self._requested_read_only = self.read_only
        self.last_stats: EmbedStats | None = None
        self._warned: set[str] = set()
        # Threads: ONE connection (check_same_thread=False) guarded by a re-entrant lock, not a
        # connection per thread (threading.local).  ipykernel 7 runs widget callbacks on short-lived
        # subshell threads: per-thread connections would leave an open connection behind for every
        # dead thread, close() could not reach them, and a pickled/unpickled copy would be bound to
        # whichever thread unpickled it.  The lock also keeps each BEGIN..COMMIT whole.  Only a few
        # SQL statements run under it; encoding (the slow part) runs outside it, in parallel.
        self._lock = threading.RLock()
        self._con: sqlite3.Connection | None = None
        self._file_id: tuple[int, int] | None = None
        if not self.read_only:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                probe = self.folder / f".write-probe-{os.getpid()}-{threading.get_ident()}"
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as exc:
                if not (exc.errno in _NO_WRITE_ERRNOS and self.path.is_file()):
                    raise CacheError(
                        f"embedding cache folder '{self.folder}' is not writable ({exc.strerror or exc}); "
                        "set SEMANSCOPE_CACHE or pass cache_dir= to a writable folder"
                    ) from None
                self._go_read_only(f"folder '{self.folder}' is not writable: {exc.strerror or exc}")
        elif not self.path.is_file():
            raise CacheError(f"embedding cache '{self.path}' does not exist (opened with read_only=True)")
        self._reconnect()

    # -- connection -------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        """A read-write connection in WAL mode with the schema in place."""
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute(VECTORS_SCHEMA)
            con.execute(TOKEN_VECTORS_SCHEMA)
            for optional in (VECTORS_KEYS_INDEX, VECTOR_CHECKS_SCHEMA, SPARSE_VECTORS_SCHEMA,
                             *_BUNDLE_TRIGGERS.values()):  # a cache that cannot take them now works without (no bundles)
                try:
                    con.execute(optional)
                except sqlite3.DatabaseError as exc:
                    if _kind(exc) not in ("full", "io", "busy", "readonly"):
                        raise
                    break  # the next would meet the same lock (after as long a wait) or the same full disk
            con.execute("SELECT 1 FROM vectors LIMIT 1").fetchall()
        except BaseException:
            con.close()
            raise
        return con

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write: ``mode=ro``, else ``immutable=1`` when no WAL content is pending.

        ``immutable=1`` is needed where SQLite cannot create the WAL index (read-only mount, full
        disk); it is used only if the ``-wal`` file is absent or empty, so no committed row is missed.
        """
        uri = self.path.resolve().as_uri()
        try:
            immutable_ok = os.stat(f"{self.path}-wal").st_size == 0
        except FileNotFoundError:
            immutable_ok = True
        except OSError:
            immutable_ok = False
        last: sqlite3.DatabaseError | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            if "immutable" in query and not immutable_ok:
                break
            try:
                con = sqlite3.connect(uri + query, uri=True, timeout=self.timeout, isolation_level=None,
                                      check_same_thread=False)
            except sqlite3.DatabaseError as exc:
                last = exc
                continue
            try:
                con.execute("PRAGMA temp_store=MEMORY")
                if con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='vectors'").fetchone() is None:
                    con.execute(VECTORS_SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE"))  # an empty file: nothing cached
                if con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='token_vectors'").fetchone() is None:
                    con.execute(TOKEN_VECTORS_SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE"))  # a cache from before token entries
                return con
            except sqlite3.DatabaseError as exc:
                con.close()
                last = exc
                if _kind(exc) in ("busy", "damaged"):
                    break
        assert last is not None
        raise self._error(last, "open it read-only") from last

    def _open(self) -> sqlite3.Connection:
        """Connect; damage -> :meth:`_recover`; read-only/full/unopenable -> read-only mode; locked -> CacheError."""
        if self.read_only:
            return self._connect_read_only()
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            kind = _kind(exc)
            if kind == "damaged":
                return self._recover(exc)
            if kind in ("readonly", "full", "io", "cantopen") and self.path.is_file():
                con = self._connect_read_only()
                self._go_read_only(str(exc))
                return con
            raise self._error(exc, "open it") from exc

    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the database file, None if it is gone."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _reconnect(self, damage: BaseException | None = None) -> None:
        """(Re)open: after ``damage``, through :meth:`_recover`; remember which file the connection is on.

        The old connection is closed only once the new one is open, so a failure leaves the cache usable.
        """
        con = self._open() if damage is None else self._recover(damage)
        self._drop_connection()
        self._con, self._file_id = con, self._identity()

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            raise CacheError(f"embedding cache '{self.path}' is closed; open a new EmbeddingCache")
        return self._con

    def _drop_connection(self) -> None:
        con, self._con = self._con, None
        if con is not None:
            with contextlib.suppress(sqlite3.Error):
                con.close()

    def close(self) -> None:
        """Close the connection (from any thread; closing twice is harmless)."""
        with self._lock:
            self._drop_connection()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict:  # picklable for process pools: reconnect on the other side
        return {"folder": str(self.folder), "timeout": self.timeout, "read_only": self._requested_read_only}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["folder"], timeout=state["timeout"], read_only=state.get("read_only", False))

    # -- faults -------------------------------------------------------------------
    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, CacheWarning, stacklevel=4)

    def _go_read_only(self, reason: str) -> None:
        self.read_only = True
        self._warn_once(
            "read-only",
            f"embedding cache '{self.path}' is read-only ({reason}): cached vectors are served, "
            "missing ones are encoded but not stored; the file is left as it is",
        )

    def _error(self, exc: BaseException, what: str) -> CacheError:
        """A CacheError naming the folder, for an sqlite3 error met while trying to ``what``."""
        kind = _kind(exc)
        if kind == "busy":
            return CacheError(
                f"embedding cache folder '{self.folder}' is locked by another process: waited {self.timeout:g} s "
                f"to {what} ({exc}); nothing was changed. Try again when it is done, or pass a longer timeout= "
                "or another cache folder"
            )
        if kind == "damaged":
            why = "the cache is read-only" if self.read_only else "PRAGMA quick_check does not confirm the damage"
            return CacheError(
                f"embedding cache '{self.path}' reports damage ({exc}) but was left in place ({why}); "
                "if this persists, move the file aside and a new cache is started"
            )
        return CacheError(f"embedding cache '{self.path}' (folder '{self.folder}') could not {what}: {exc}")

    @contextlib.contextmanager
    def _folder_lock(self) -> Iterator[None]:
        """Serialise damage handling between processes (an advisory flock next to the database)."""
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; the quick_check re-test still applies
            yield
            return
        try:
            fh = open(self.folder / f".{_DB_NAME}.lock", "a+b")  # noqa: SIM115 - closed by the `with fh` below
        except OSError as exc:
            raise CacheError(f"embedding cache folder '{self.folder}': cannot create its lock file ({exc})") from None
        with fh:
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise CacheError(
                            f"embedding cache folder '{self.folder}' is locked by another process repairing it "
                            f"(waited {self.timeout:g} s)"
                        ) from None
                    time.sleep(0.02)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _confirmed_damaged(self) -> bool:
        """True only if the file exists and a fresh read-only connection's ``PRAGMA quick_check`` fails."""
        if not self.path.is_file():
            return False
        try:
            con = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, timeout=self.timeout)
        except sqlite3.DatabaseError as exc:
            return _kind(exc) == "damaged"
        try:
            return con.execute("PRAGMA quick_check").fetchall() != [("ok",)]
        except sqlite3.DatabaseError as exc:
            return _kind(exc) == "damaged"  # locked, I/O error ...: not proof of damage
        finally:
            con.close()

    def _move_aside(self) -> Path:
        """Rename the database (and its -wal/-shm) to a name never used before; return the new name."""
        tag = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        moved = self.path.with_name(f"{_DB_NAME}.damaged-{tag}")
        for suffix in ("", "-wal", "-shm"):
            src, dst = Path(f"{self.path}{suffix}"), Path(f"{moved}{suffix}")
            if src.exists():
                if dst.exists():  # cannot happen with a fresh uuid; never overwrite a backup
                    raise CacheError(f"embedding cache: backup name '{dst}' is taken; not moving '{src}'")
                os.replace(src, dst)
        return moved

    def _recover(self, exc: BaseException) -> sqlite3.Connection:
        """After a 'damaged' error: move the file aside if (and only if) damage is confirmed; reconnect."""
        if self.read_only:
            raise self._error(exc, "read it") from exc
        moved = None
        with self._folder_lock():  # another process may be repairing it right now: re-test under the lock
            if self._confirmed_damaged():
                moved = self._move_aside()
            try:
                con = self._connect()
            except sqlite3.DatabaseError as again:
                raise self._error(again, "open it") from again
        if moved is not None:
            warnings.warn(
                f"embedding cache '{self.path}' is damaged ({exc}); moved to '{moved}' and starting a new one",
                CacheWarning,
                stacklevel=4,
            )
        return con

    def _run(self, op: Callable[[sqlite3.Connection], _T]) -> _T:
        """``op(connection)`` under the lock; after a moved or confirmed-damaged file, reconnect and retry once.

        Other sqlite3 errors are raised as they are, for the caller to classify.
        """
        with self._lock:
            self._connection()
            if self._identity() != self._file_id:  # renamed or deleted under us (e.g. moved aside by another process)
                self._reconnect()
            for attempt in (0, 1):
                con = self._connection()
                try:
                    return op(con)
                except sqlite3.DatabaseError as exc:
                    kind = _kind(exc)
                    if attempt or kind not in ("moved", "damaged") or (kind == "damaged" and self.read_only):
                        raise
                    self._reconnect(None if kind == "moved" else exc)
            raise AssertionError("unreachable")

    def _read(self, op: Callable[[sqlite3.Connection], _T], *, what: str) -> _T:
        try:
            return self._run(op)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc, what) from exc

    def _write(self, action: Callable[[sqlite3.Connection], Any], *, what: str) -> bool:
        """One transaction; False (not stored, one warning) if the cache is read-only or the disk full."""
        with self._lock:
            if self.read_only:
                return False
            try:
                self._run(lambda con: _transaction(con, action))
                return True
            except sqlite3.DatabaseError as exc:
                kind = _kind(exc)
                if kind == "readonly":
                    self._go_read_only(str(exc))
                    return False
                if kind in ("full", "io"):
                    self._warn_once(
                        "full",
                        f"embedding cache '{self.path}' could not {what} ({exc}): new vectors are encoded but "
                        "not stored until there is room again; every stored vector is kept",
                    )
                    return False
                raise self._error(exc, what) from exc

    # -- reads and writes ---------------------------------------------------------
    def get(self, model_key: str, texts: Iterable[str]) -> tuple[dict[str, np.ndarray], int]:
        """Cached vectors for ``texts`` (missing ones absent) and the count of damaged rows dropped.

        A row is damaged when its length, its digest or a non-finite value gives it away; damaged rows
        are deleted and named in one :class:`CacheWarning`, and the caller re-encodes them.  The digest
        checked is the row's XXH3 check when it has one that matches, else its BLAKE2 digest (see the
        module docstring): a row is never judged by the quick check alone to be damaged.  Sound rows
        that had no check, or a stale one, get theirs stored afterwards when that needs no waiting
        (:meth:`_store_checks`), so an older cache becomes quick to read as it is used.
        """
        texts = list(dict.fromkeys(texts))
        unchecked: list[tuple[str, bytes]] = []  # sound by their BLAKE2 digest, without a matching check
        # the set's texts in a bundle's order (not sorted when even 128-wide rows would make too big a bundle)
        bundled = sorted(texts) if BUNDLE_MIN_TEXTS <= len(texts) <= BUNDLE_MAX_BYTES // 512 else None
        names = _texts_json(bundled) if bundled is not None else b""
        entry = _bundle_entry(names) if bundled is not None else ""
        seen: dict[str, Any] = {}  # what the read saw: for writing a bundle of it afterwards (see _store_bundle)

        def read(con: sqlite3.Connection) -> tuple[dict[str, np.ndarray], list[str]]:
            found: dict[str, np.ndarray] = {}
            damaged: list[str] = []
            unchecked.clear()
            seen.clear()
            if bundled is not None and _bundles_guarded(con):
                # before the first row is read: another connection's commit from now on changes it
                seen.update(con=con, version=con.execute("PRAGMA data_version").fetchone()[0], guarded=True)
                row = con.execute("SELECT meta, blob, digest FROM token_vectors WHERE model_key=? AND entry=?",
                                  (model_key + BUNDLE_KEY_SUFFIX, entry)).fetchone()
                vectors = _bundle_vectors(*row, bundled, names=names) if row is not None else None
                if vectors is not None:
                    seen["served"] = True
                    return vectors, damaged
                # no bundle, or a damaged one: the per-text rows answer (and a sound read writes it over)
            checks = _has_table(con, "vector_checks")
            sparse = _holds_sparse(con, model_key)
            seen["sparse"] = sparse
            for a in range(0, len(texts), _SQL_VARS):
                part = texts[a : a + _SQL_VARS]
                marks = ",".join("?" * len(part))
                if sparse:  # sparse rows first: a text also found dense (written by a version without the table) is the same
                    by_dim_sparse: dict[int, list[tuple[str, bytes, bytes]]] = {}
                    q = f"SELECT text, dim, idx, val, digest FROM sparse_vectors WHERE model_key=? AND text IN ({marks})"
                    for text, dim, idx, val, digest in con.execute(q, [model_key, *part]):
                        if (not isinstance(dim, int) or dim < 0 or not isinstance(idx, bytes) or not isinstance(val, bytes)
                                or _sparse_digest(dim, idx, val) != digest):
                            damaged.append(text)
                            continue
                        by_dim_sparse.setdefault(dim, []).append((text, idx, val))
                    for dim, srows in by_dim_sparse.items():
                        block, sound = _dense_of_sparse(dim, [(i, v) for _, i, v in srows])
                        for (text, _, _), vec, ok in zip(srows, block, sound):
                            if ok:
                                found[text] = vec
                            else:  # never stored by put: damage, digest or not
                                damaged.append(text)
                    told = set(damaged)  # a damaged sparse entry is re-encoded, not served from a dense copy beside it
                    part = [t for t in part if t not in found and t not in told]
                    if not part:
                        continue
                    marks = ",".join("?" * len(part))
                q = ("SELECT v.text, v.dim, v.vec, v.digest, c.xxh3 FROM vectors AS v LEFT JOIN vector_checks AS c "
                     f"ON c.model_key = v.model_key AND c.text = v.text WHERE v.model_key=? AND v.text IN ({marks})"
                     if checks else f"SELECT text, dim, vec, digest, NULL FROM vectors WHERE model_key=? AND text IN ({marks})")
                by_dim: dict[int, list[tuple[str, bytes]]] = {}
                for text, dim, blob, digest, check in con.execute(q, [model_key, *part]):
                    if len(blob) != 4 * dim:
                        damaged.append(text)
                        continue
                    if _fast_digest(blob) != check:
                        if _digest(blob) != digest:
                            damaged.append(text)
                            continue
                        unchecked.append((text, blob))
                    by_dim.setdefault(dim, []).append((text, blob))
                for dim, rows in by_dim.items():
                    # one buffer per width: the finiteness check is one pass, each vector a read-only view of it
                    block = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), dim)
                    finite = np.isfinite(block).all(axis=1) if dim else np.ones(len(rows), dtype=bool)
                    for (text, _), vec, ok in zip(rows, block, finite):
                        if ok:
                            found[text] = vec
                        else:  # never stored by put (vectors are validated): damage, digest or not
                            damaged.append(text)
            return found, damaged

        with self._lock:  # the read and the bundle written of it: no write of this connection in between
            found, damaged = self._read(read, what="read cached vectors")
            if (bundled is not None and seen.get("guarded") and not seen.get("served") and not seen.get("sparse")
                    and not damaged and len(found) == len(bundled)):
                self._store_bundle(model_key, entry, bundled, found, seen)
        if damaged:
            warnings.warn(
                f"embedding cache '{self.path}': {len(damaged)} damaged entr{'y' if len(damaged) == 1 else 'ies'} "
                f"for {model_key} (e.g. {damaged[:3]}); re-encoding only those",
                CacheWarning,
                stacklevel=3,
            )
            keys = [(model_key, t) for t in damaged]

            def drop(con: sqlite3.Connection) -> None:
                con.executemany("DELETE FROM vectors WHERE model_key=? AND text=?", keys)
                if _has_table(con, "vector_checks"):
                    con.executemany("DELETE FROM vector_checks WHERE model_key=? AND text=?", keys)
                if _has_table(con, "sparse_vectors"):
                    con.executemany("DELETE FROM sparse_vectors WHERE model_key=? AND text=?", keys)

            self._write(drop, what="drop damaged entries")
        if unchecked:
            self._store_checks(model_key, [(t, blob) for t, blob in unchecked if t in found])
        return found, len(damaged)

    def _store_bundle(self, model_key: str, entry: str, texts: Sequence[str], found: dict[str, np.ndarray],
                      seen: dict[str, Any]) -> bool:
        """Store the bundle of a full, sound read of the sorted ``texts`` (see the module docstring); True if stored.

        Best effort, as :meth:`_store_checks`: never an error and never a wait.  Stored only if no other connection
        committed since the read began (``PRAGMA data_version`` unchanged, on the same connection: the rows read are
        the rows in the file) and the file has every bundle trigger; the newest :data:`BUNDLES_PER_MODEL` bundles of
        the model key are kept.  A set of mixed widths or over :data:`BUNDLE_MAX_BYTES` is not bundled.
        """
        if len({found[t].shape for t in texts}) != 1 or 4 * found[texts[0]].size * len(texts) > BUNDLE_MAX_BYTES:
            return False
        meta, blob, digest = _bundle_row(texts, np.stack([found[t] for t in texts]), written=time.time())
        key = model_key + BUNDLE_KEY_SUFFIX
        stored: list[bool] = []

        def store(con: sqlite3.Connection) -> None:
            if con is not seen["con"] or con.execute("PRAGMA data_version").fetchone()[0] != seen["version"]:
                return  # another connection wrote since the read (or the file was reopened): what was read may be stale
            if not _bundles_guarded(con):
                return
            stored.append(True)
            con.execute("INSERT OR REPLACE INTO token_vectors VALUES (?,?,?,?,?)", (key, entry, meta, blob, digest))
            others = con.execute("SELECT entry, meta FROM token_vectors WHERE model_key=? AND entry<>?",
                                 (key, entry)).fetchall()
            if len(others) >= BUNDLES_PER_MODEL:
                def written(head: Any) -> float:
                    try:
                        return float(json.loads(head)["written"])
                    except (ValueError, TypeError, KeyError):
                        return float("-inf")  # not a header _bundle_row writes: the first to go
                others.sort(key=lambda r: written(r[1]), reverse=True)
                con.executemany("DELETE FROM token_vectors WHERE model_key=? AND entry=?",
                                [(key, e) for e, _ in others[BUNDLES_PER_MODEL - 1 :]])

        return self._write_now(store) and bool(stored)

    def _write_now(self, action: Callable[[sqlite3.Connection], Any]) -> bool:
        """Run ``action`` in one transaction if that needs no waiting: False (nothing written, no error, no warning)
        when the cache is read-only, another connection holds the write lock, or the disk is full."""

        def now(con: sqlite3.Connection) -> None:
            con.execute("PRAGMA busy_timeout=0")  # someone else is writing: do not queue behind them
            try:
                _transaction(con, action)
            finally:
                con.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")

        with self._lock:
            if self.read_only:
                return False
            try:
                self._run(now)
                return True
            except sqlite3.DatabaseError:
                return False

    def _store_checks(self, model_key: str, rows: Sequence[tuple[str, bytes]]) -> None:
        """Store the XXH3 checks of sound rows read without one -- only if no other connection holds the lock.

        Best effort, never an error and never a wait: a lock held elsewhere, a read-only file or a full disk
        leaves the rows as they were (still read through their BLAKE2 digests), to be checked another time.
        """
        values = [(model_key, t, _fast_digest(blob)) for t, blob in rows]
        if not values:
            return

        def store(con: sqlite3.Connection) -> None:
            if _has_table(con, "vector_checks"):  # else made when the cache is next opened while no one else writes
                con.executemany("INSERT OR REPLACE INTO vector_checks VALUES (?,?,?)", values)

        self._write_now(store)

    def present(self, model_key: str, texts: Iterable[str]) -> set[str]:
        """Which of ``texts`` have an entry for ``model_key`` (keys only: no vector is read or checked).

        >>> import tempfile, semanscope_nb as snb
        >>> cache, enc = snb.EmbeddingCache(tempfile.mkdtemp()), snb.load_model("random-null")
        >>> _ = cache.embed(enc, ["water"])
        >>> sorted(cache.present(enc.cache_key, ["water", "fire"]))
        ['water']
        """
        texts = list(dict.fromkeys(texts))

        def read(con: sqlite3.Connection) -> set[str]:
            found: set[str] = set()
            keys_only = con.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='vectors_keys'").fetchone()
            sources = ["vectors INDEXED BY vectors_keys" if keys_only else "vectors"]  # a cache opened read-only may lack it
            if _holds_sparse(con, model_key):
                sources.insert(0, "sparse_vectors")  # its rows are small: the table itself lists keys quickly
            for a in range(0, len(texts), _SQL_VARS):
                part = texts[a : a + _SQL_VARS]
                for source in sources:  # each next table asked only for the texts not found yet
                    if not part:
                        break
                    q = f"SELECT text FROM {source} WHERE model_key=? AND text IN ({','.join('?' * len(part))})"
                    hits = {t for (t,) in con.execute(q, [model_key, *part])}
                    found |= hits
                    part = [t for t in part if t not in hits]
            return found

        return self._read(read, what="list cached texts")

    def put(self, model_key: str, texts: Sequence[str], vectors: np.ndarray) -> bool:
        """Store vectors in one transaction (all or nothing); False if not stored (read-only, disk full).

        A mostly-zero vector (:data:`SPARSE_STORE_DENSITY`) goes to ``sparse_vectors`` when the file has that table
        (any dense row of the same text is then removed), every other one to ``vectors``.
        """
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        texts = list(texts)
        forms = [_sparse_form(v) for v in vectors]

        def store(con: sqlite3.Connection) -> None:
            sparse, has_checks = _has_table(con, "sparse_vectors"), _has_table(con, "vector_checks")
            rows, checks, srows = [], [], []
            for t, v, form in zip(texts, vectors, forms):
                if sparse and form is not None:
                    srows.append((model_key, t, v.size, *form, _sparse_digest(v.size, *form)))
                    continue
                blob = v.tobytes()
                rows.append((model_key, t, v.size, blob, _digest(blob)))
                checks.append((model_key, t, _fast_digest(blob)))
            con.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?,?,?)", rows)
            if has_checks:
                con.executemany("INSERT OR REPLACE INTO vector_checks VALUES (?,?,?)", checks)
            if sparse:
                con.executemany("INSERT OR REPLACE INTO sparse_vectors VALUES (?,?,?,?,?,?)", srows)
                # one place per text: a dense row stored sparse now (a re-encoded entry) and the other way round
                moved = [r[:2] for r in srows]
                con.executemany("DELETE FROM vectors WHERE model_key=? AND text=?", moved)
                if has_checks:
                    con.executemany("DELETE FROM vector_checks WHERE model_key=? AND text=?", moved)
                con.executemany("DELETE FROM sparse_vectors WHERE model_key=? AND text=?", [r[:2] for r in rows])

        return self._write(store, what=f"store {len(texts)} vectors")

    def get_token_entries(self, model_key: str, entries: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """Cached token-level entries ``entry -> (meta, blob)`` (see :mod:`semanscope_nb.models.tokens`); damaged ones dropped."""
        entries = list(dict.fromkeys(entries))

        def read(con: sqlite3.Connection) -> tuple[dict[str, tuple[str, bytes]], list[str]]:
            found: dict[str, tuple[str, bytes]] = {}
            damaged: list[str] = []
            for a in range(0, len(entries), _SQL_VARS):
                part = entries[a : a + _SQL_VARS]
                q = ("SELECT entry, CAST(meta AS BLOB), CAST(blob AS BLOB), digest FROM token_vectors "  # bytes whatever was stored
                     f"WHERE model_key=? AND entry IN ({','.join('?' * len(part))})")
                for entry, meta, blob, digest in con.execute(q, [model_key, *part]):
                    if _digest(bytes(meta) + bytes(blob)) != digest:
                        damaged.append(entry)
                        continue
                    found[entry] = (bytes(meta).decode("utf-8"), bytes(blob))
            return found, damaged

        found, damaged = self._read(read, what="read cached token vectors")
        if damaged:
            warnings.warn(f"embedding cache '{self.path}': {len(damaged)} damaged token entr"
                          f"{'y' if len(damaged) == 1 else 'ies'} for {model_key}; re-encoding only those",
                          CacheWarning, stacklevel=3)
            self._write(lambda con: con.executemany("DELETE FROM token_vectors WHERE model_key=? AND entry=?",
                                                    [(model_key, e) for e in damaged]), what="drop damaged token entries")
        return found

    def put_token_entries(self, model_key: str, rows: Sequence[tuple[str, str, bytes]], *,
                          best_effort: bool = False) -> bool:
        """Store ``(entry, meta, blob)`` rows in one transaction; False if not stored (read-only, disk full).

        ``best_effort``: rows that only save work later (they can be derived again) -- never an error and never a
        wait: a lock held by another connection, a read-only file or a full disk leaves them unstored (False), as
        :meth:`_store_checks` does.
        """
        values = [(model_key, entry, meta, blob, _digest(meta.encode("utf-8") + blob)) for entry, meta, blob in rows]

        def store(con: sqlite3.Connection) -> None:
            con.executemany("INSERT OR REPLACE INTO token_vectors VALUES (?,?,?,?,?)", values)

        if not best_effort:
            return self._write(store, what=f"store {len(values)} token entries")
        return self._write_now(store)

    @staticmethod
    def _keys_source(con: sqlite3.Connection) -> str:
        """The (model_key, text) of every cached vector, dense or sparse, each once: a FROM clause."""
        if not _has_table(con, "sparse_vectors"):
            return "vectors"
        return "(SELECT model_key, text FROM vectors UNION SELECT model_key, text FROM sparse_vectors)"

    def count(self, model_key: str | None = None) -> int:
        """Number of cached vectors (for one model key, or all)."""
        if model_key is None:
            return self._read(lambda con: con.execute(f"SELECT count(*) FROM {self._keys_source(con)}").fetchone()[0],
                              what="count")
        return self._read(
            lambda con: con.execute(f"SELECT count(*) FROM {self._keys_source(con)} WHERE model_key=?",
                                    (model_key,)).fetchone()[0],
            what="count",
        )

    def models(self) -> list[tuple[str, int]]:
        """(model key, number of cached texts) for every model in the cache."""
        return self._read(
            lambda con: list(con.execute(f"SELECT model_key, count(*) FROM {self._keys_source(con)} GROUP BY model_key")),
            what="list models",
        )

    # -- the one entry point the rest of the package uses -------------------------
    def embed(
        self,
        encoder: Encoder,
        texts: Sequence[str],
        *,
        batch_size: int = 128,
        progress: bool | None = None,
        language: str | None = None,
        should_stop: ShouldStop | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` (float32, in order), encoding only what is missing (see :meth:`embed_with_stats`)."""
        matrix, stats = self.embed_with_stats(encoder, texts, batch_size=batch_size, progress=progress, language=language,
                                              should_stop=should_stop)
        self.last_stats = stats
        return matrix

    def embed_with_stats(
        self,
        encoder: Encoder,
        texts: Sequence[str],
        *,
        batch_size: int = 128,
        progress: bool | None = None,
        language: str | None = None,
        should_stop: ShouldStop | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        """Vectors for ``texts`` (float32, in order) and what this call did, encoding only what is missing.

        New vectors are validated (finite, one per text, one dimension) before
        they are stored, one transaction per batch, so an interrupted run keeps
        every finished batch.  ``progress=None`` shows a bar for > 500 missing texts.
        ``language`` is passed to language-dependent encoders (and keys their entries).
        ``should_stop`` (see :mod:`semanscope_nb.models.cancel`) is asked before each
        batch is encoded: when it says stop, :class:`~semanscope_nb.errors.Cancelled` is
        raised and the batches stored so far stay in the cache.  With ``should_stop`` the
        batches are sized from the measured speed to take about :data:`STOP_LATENCY` seconds
        (at most ``batch_size`` texts), so a stop is honoured that quickly.
        """
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str")
        unique = list(dict.fromkeys(texts))
        key = encoder.cache_key_for(language)
        found, n_damaged = self.get(key, unique)
        missing = [t for t in unique if t not in found]
        n_batches = 0
        if missing:
            show = progress if progress is not None else len(missing) > 500
            bar = None
            if show:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(missing), desc=f"embedding with {visible_text(encoder.model_id)}", unit="text")
            try:
                # with should_stop, batches are sized to take about STOP_LATENCY seconds (a first small one
                # measures the speed), so a stop is honoured within about that long, whatever the model's speed
                size = batch_size if should_stop is None else min(batch_size, 8)
                a = 0
                while a < len(missing):
                    check_stop(should_stop, f"embedding with {encoder.model_id} ({a} of {len(missing)} new texts done)")
                    part = missing[a : a + size]
                    t0 = time.perf_counter()
                    vecs = self._encode_batch(encoder, part, key, language)
                    if should_stop is not None:
                        per_text = (time.perf_counter() - t0) / len(part)
                        size = int(max(1, min(batch_size, STOP_LATENCY / max(per_text, 1e-6))))
                    found.update(zip(part, vecs))
                    a += len(part)
                    n_batches += 1
                    if bar is not None:
                        bar.update(len(part))
            finally:
                if bar is not None:
                    bar.close()
        dims = {v.shape[0] for v in found.values()}
        if len(dims) > 1:
            raise EmbeddingError(f"cache holds mixed dimensions {sorted(dims)} for {key}; clear it for this model")
        stats = EmbedStats(len(texts), len(unique), len(unique) - len(missing), len(missing), n_batches, n_damaged)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32), stats
        return np.stack([found[t] for t in texts]), stats

    def _encode_batch(self, encoder: Encoder, part: list[str], key: str, language: str | None) -> np.ndarray:
        """Encode one batch, check every vector is finite, store it (one transaction)."""
        vecs = encoder.encode(part, language=language)
        bad = np.flatnonzero(~np.isfinite(vecs).all(axis=1))
        if bad.size:
            raise EmbeddingError(f"{encoder.model_id} returned NaN/inf vectors for {[part[i] for i in bad[:5]]}; not cached")
        self.put(key, part, vecs)
        return vecs
