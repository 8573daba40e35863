"""Per-text embedding cache on SQLite.

Why sqlite3: it ships with Python, and every write here is one transaction.
WAL journalling means a killed process leaves the file readable with every
committed batch in it, and several processes may read and write at once (a busy
timeout serialises writers).  Each row stores a BLAKE2 digest of its vector
bytes, so a damaged entry is detected on read, reported, deleted and
re-encoded, and the rest of the cache is untouched.  A file that is not a
database at all is moved aside (``*.damaged-<time>``) and a new one is started.

Key: the encoder's ``cache_key`` (model id + version + vector-changing options)
and the exact text.  Only missing texts are sent to the model, in batches.

Example
-------
>>> import tempfile, semanscope_nb as snb
>>> cache = snb.EmbeddingCache(tempfile.mkdtemp())
>>> enc = snb.load_model("random-null")
>>> v = cache.embed(enc, ["water", "水", "water"])
>>> v.shape, cache.embed(enc, ["water"]).shape, cache.last_stats.n_encoded
((3, 512), (1, 512), 0)
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from semanscope_nb.errors import CacheError, EmbeddingError
from semanscope_nb.models.encoders import Encoder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_key TEXT NOT NULL,
    text      TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    vec       BLOB NOT NULL,
    digest    BLOB NOT NULL,
    PRIMARY KEY (model_key, text)
) WITHOUT ROWID;
"""
_DB_NAME = "embeddings.sqlite"
_SQL_VARS = 500  # parameters per IN (...) query


class CacheWarning(UserWarning):
    """A damaged cache entry or file was found and is being rebuilt."""


def default_cache_dir() -> Path:
    """``SEMANSCOPE_CACHE`` if set, else the user's cache folder (platformdirs)."""
    env = os.environ.get("SEMANSCOPE_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("semanscope_nb"))


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


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
    """Persistent per-text vector store keyed on (encoder cache key, text)."""

    def __init__(self, folder: str | os.PathLike | None = None, *, timeout: float = 60.0) -> None:
        self.folder = Path(folder).expanduser() if folder is not None else default_cache_dir()
        self.path = self.folder / _DB_NAME
        self.timeout = timeout
        self.last_stats: EmbedStats | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            probe = self.folder / f".write-probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise CacheError(
                f"embedding cache folder '{self.folder}' is not writable ({exc.strerror or exc}); "
                "set SEMANSCOPE_CACHE or pass cache_dir= to a writable folder"
            ) from None
        self._open()

    # -- connection -------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute(_SCHEMA)
        return con

    def _open(self) -> None:
        try:
            self._con = self._connect()
            self._con.execute("SELECT count(*) FROM vectors LIMIT 1").fetchone()
        except sqlite3.DatabaseError as exc:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            moved = self.path.with_name(f"{_DB_NAME}.damaged-{stamp}")
            for suffix in ("", "-wal", "-shm"):
                p = Path(str(self.path) + suffix)
                if p.exists():
                    p.replace(Path(str(moved) + suffix))
            warnings.warn(
                f"embedding cache '{self.path}' is damaged ({exc}); moved to '{moved}' and starting a new one",
                CacheWarning,
                stacklevel=3,
            )
            self._con = self._connect()

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict:  # picklable for process pools: reconnect on the other side
        return {"folder": str(self.folder), "timeout": self.timeout}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["folder"], timeout=state["timeout"])

    # -- reads and writes ---------------------------------------------------------
    def get(self, model_key: str, texts: Iterable[str]) -> tuple[dict[str, np.ndarray], int]:
        """Cached vectors for ``texts`` (missing ones absent) and the count of damaged rows dropped."""
        texts = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        damaged: list[str] = []
        for a in range(0, len(texts), _SQL_VARS):
            part = texts[a : a + _SQL_VARS]
            q = f"SELECT text, dim, vec, digest FROM vectors WHERE model_key=? AND text IN ({','.join('?' * len(part))})"
            for text, dim, blob, digest in self._con.execute(q, [model_key, *part]):
                if len(blob) != 4 * dim or _digest(blob) != digest:
                    damaged.append(text)
                    continue
                found[text] = np.frombuffer(blob, dtype=np.float32)
        if damaged:
            warnings.warn(
                f"embedding cache '{self.path}': {len(damaged)} damaged entr{'y' if len(damaged) == 1 else 'ies'} "
                f"for {model_key} (e.g. {damaged[:3]}); re-encoding only those",
                CacheWarning,
                stacklevel=3,
            )
            self._write(lambda con: con.executemany(
                "DELETE FROM vectors WHERE model_key=? AND text=?", [(model_key, t) for t in damaged]
            ))
        return found, len(damaged)

    def put(self, model_key: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors in one transaction (all or nothing)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = []
        for t, v in zip(texts, vectors):
            blob = v.tobytes()
            rows.append((model_key, t, v.size, blob, _digest(blob)))
        self._write(lambda con: con.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?,?,?)", rows))

    def _write(self, action) -> None:
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            action(con)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def count(self, model_key: str | None = None) -> int:
        if model_key is None:
            return self._con.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self._con.execute("SELECT count(*) FROM vectors WHERE model_key=?", (model_key,)).fetchone()[0]

    def models(self) -> list[tuple[str, int]]:
        """(model key, number of cached texts) for every model in the cache."""
        return list(self._con.execute("SELECT model_key, count(*) FROM vectors GROUP BY model_key"))

    # -- the one entry point the rest of the package uses -------------------------
    def embed(
        self,
        encoder: Encoder,
        texts: Sequence[str],
        *,
        batch_size: int = 128,
        progress: bool | None = None,
        language: str | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` (float32, in order), encoding only what is missing.

        New vectors are validated (finite, one per text, one dimension) before
        they are stored, one transaction per batch, so an interrupted run keeps
        every finished batch.  ``progress=None`` shows a bar for > 500 missing texts.
        ``language`` is passed to language-dependent encoders (and keys their entries).
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

                bar = tqdm(total=len(missing), desc=f"embedding with {encoder.model_id}", unit="text")
            for a in range(0, len(missing), batch_size):
                part = missing[a : a + batch_size]
                vecs = encoder.encode(part, language=language)
                bad = np.flatnonzero(~np.isfinite(vecs).all(axis=1))
                if bad.size:
                    raise EmbeddingError(
                        f"{encoder.model_id} returned NaN/inf vectors for {[part[i] for i in bad[:5]]}; not cached"
                    )
                self.put(key, part, vecs)
                found.update(zip(part, vecs))
                n_batches += 1
                if bar is not None:
                    bar.update(len(part))
            if bar is not None:
                bar.close()
        dims = {v.shape[0] for v in found.values()}
        if len(dims) > 1:
            raise EmbeddingError(f"cache holds mixed dimensions {sorted(dims)} for {key}; clear it for this model")
        self.last_stats = EmbedStats(len(texts), len(unique), len(unique) - len(missing), len(missing), n_batches, n_damaged)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[t] for t in texts])
