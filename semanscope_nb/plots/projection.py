"""2-D (or 3-D) projections of word embeddings (PHATE, UMAP, t-SNE, PCA) behind one cached function.

:func:`project` takes vectors (an array, or language -> array) and returns a
:class:`Projection` whose ``coords`` row i is input row i -- always, even when
several rows hold the same vector.  Duplicate vectors are projected once (the
paper's "duplicate filtering", Appendix B.3) and mapped back, so every point keeps
its word and language.

PHATE uses the paper's settings (Appendix B.2/B.3): knn 15, decay 40, t auto,
gamma 1, 2-D, StandardScaler on the vectors, then 1e-10 Gaussian jitter (seeded)
for numerical stability; knn shrinks to ``n_unique - 2`` when there are few points.
UMAP's ``n_neighbors`` and t-SNE's ``perplexity`` shrink the same way.

Results are cached in a :class:`ProjectionCache` keyed on the SHA-256 of the
unique vectors' bytes + method + effective parameters + seed + library version
(in memory, LRU; optionally also on disk), so re-colouring a map or moving a
tier slider never recomputes a projection.  ``hits``/``misses``/``computed``
count what happened.  The default cache (:func:`default_projection_cache`)
also keeps every projection on disk, in ``projections/`` under the embedding
cache's folder (``SEMANSCOPE_CACHE``), so a kernel restart does not recompute PHATE.

Warnings and log output of the projection libraries (PHATE's "SGD-MDS may not
have converged", printed through its logger) are caught and summarised in one
line in ``Projection.notes`` (and ``provenance["notes"]``), never printed.

``dims=3`` (``ProjectionSettings(n_components=3)``) asks for three components.

Stopping: with ``should_stop=`` (see :mod:`semanscope_nb.models.cancel`), PHATE,
UMAP and t-SNE run in a worker process (:class:`ProjectionWorker`, started with
``spawn`` and kept for the next projection) while this process waits and asks
``should_stop`` every 50 ms; when it says stop, the worker is terminated at once
-- its CPU use ends with it -- and :class:`~semanscope_nb.errors.Cancelled` is
raised.  A finished projection is cached as usual (memory and disk), so it is
never computed twice.  PCA runs in place (it takes milliseconds).

Example
-------
>>> import numpy as np
>>> from semanscope_nb.plots.projection import project, ProjectionCache
>>> x = np.random.default_rng(0).normal(size=(40, 8)); x[1] = x[0]   # a duplicate row
>>> cache = ProjectionCache()
>>> p = project(x, method="pca", cache=cache, words=[f"w{i}" for i in range(40)])
>>> p.coords.shape, bool((p.coords[0] == p.coords[1]).all()), p.n_unique
((40, 2), True, 39)
>>> _ = project(x, method="pca", cache=cache); (cache.hits, cache.misses, cache.computed)
(1, 1, 1)
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import tempfile
import threading
import time
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.errors import ArgumentError, Cancelled
from semanscope_nb.memo import Memo
from semanscope_nb.models.cancel import ShouldStop, check_stop
from semanscope_nb.models.encoders import package_version
from semanscope_nb.provenance import json_ready
from semanscope_nb.results import Result

PROJECTION_METHODS = ("phate", "umap", "tsne", "pca")
Method = Literal["phate", "umap", "tsne", "pca"]

#: Paper 000, Appendix B.2.
PHATE_DEFAULTS: dict[str, Any] = {"knn": 15, "decay": 40, "t": "auto", "gamma": 1.0, "n_components": 2}
UMAP_DEFAULTS: dict[str, Any] = {"n_neighbors": 15, "min_dist": 0.1, "metric": "euclidean", "n_components": 2}
TSNE_DEFAULTS: dict[str, Any] = {"perplexity": 30.0, "n_components": 2}
PCA_DEFAULTS: dict[str, Any] = {"n_components": 2}
DEFAULTS = {"phate": PHATE_DEFAULTS, "umap": UMAP_DEFAULTS, "tsne": TSNE_DEFAULTS, "pca": PCA_DEFAULTS}
_LIBRARY = {"phate": "phate", "umap": "umap-learn", "tsne": "scikit-learn", "pca": "scikit-learn"}
JITTER = 1e-10  # Appendix B.3: epsilon noise for numerical stability


@dataclass(frozen=True)
class ProjectionSettings:
    """Method + parameters + seed of a projection (what a widget gathers; hashable).

    >>> ProjectionSettings("umap", {"n_neighbors": 10}).method
    'umap'
    """

    method: str = "phate"
    params: Mapping[str, Any] = field(default_factory=dict)
    random_state: int = 0
    n_components: int = 2

    def __post_init__(self) -> None:
        if self.method not in PROJECTION_METHODS:
            raise ValueError(f"projection method must be one of {PROJECTION_METHODS}, got {self.method!r}")
        _check_dims(self.n_components)
        object.__setattr__(self, "params", dict(self.params))

    def __hash__(self) -> int:
        return hash((self.method, json.dumps(dict(self.params), sort_keys=True, default=str), self.random_state,
                     self.n_components))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProjectionSettings) and (
            self.method, dict(self.params), self.random_state, self.n_components) == (
            other.method, dict(other.params), other.random_state, other.n_components)


def _check_dims(dims: object) -> None:
    if isinstance(dims, bool) or dims not in (2, 3):
        raise ValueError(f"a projection has 2 or 3 components, got {dims!r}")


@dataclass(frozen=True)
class Projection(Result):
    """2-D (or 3-D) coordinates of every input row, with each row's word and language kept.

    ``coords[i]`` belongs to input row ``i``; ``inverse[i]`` is the row of the
    unique-vector matrix that was projected for it (duplicates share one).
    ``params`` are the *effective* parameters (after adapting knn to few points).
    ``notes`` summarise what the library warned about (one line each).
    A map has no score: :attr:`main_score` is NaN.
    """

    kind = "projection"
    main_score_name = ""  # a map, not a score

    coords: np.ndarray
    method: str
    params: dict[str, Any]
    random_state: int
    key: str
    n_unique: int
    inverse: np.ndarray
    words: tuple[str, ...] | None = None
    languages: tuple[str, ...] | None = None
    seconds: float = 0.0
    from_cache: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return self.coords.shape[0]

    @property
    def dims(self) -> int:
        """Number of components (2 or 3)."""
        return int(self.coords.shape[1])

    def to_frame(self) -> pd.DataFrame:
        """One row per point: x, y (z for 3-D), word, language (and ``unique_id`` of its projected vector)."""
        cols = {"x": self.coords[:, 0], "y": self.coords[:, 1]}
        if self.coords.shape[1] > 2:
            cols["z"] = self.coords[:, 2]
        df = pd.DataFrame({**cols, "unique_id": self.inverse})
        at = len(cols)
        if self.words is not None:
            df.insert(at, "word", list(self.words))
        if self.languages is not None:
            df.insert(at + 1 if self.words is not None else at, "language", list(self.languages))
        return df

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (round-trips through :meth:`from_dict`)."""
        return json_ready({
            "coords": self.coords.tolist(), "method": self.method, "params": self.params, "random_state": self.random_state,
            "key": self.key, "n_unique": self.n_unique, "inverse": self.inverse.tolist(),
            "words": list(self.words) if self.words is not None else None,
            "languages": list(self.languages) if self.languages is not None else None,
            "seconds": self.seconds, "from_cache": self.from_cache, "provenance": self.provenance, "notes": list(self.notes),
        })

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Projection":
        dims = int(dict(d["params"]).get("n_components", 2))
        return cls(
            coords=np.asarray(d["coords"], dtype=np.float64).reshape(-1, dims), method=d["method"], params=dict(d["params"]),
            random_state=d["random_state"], key=d["key"], n_unique=d["n_unique"], inverse=np.asarray(d["inverse"], dtype=np.int64),
            words=tuple(d["words"]) if d.get("words") is not None else None,
            languages=tuple(d["languages"]) if d.get("languages") is not None else None,
            seconds=d.get("seconds", 0.0), from_cache=bool(d.get("from_cache", False)), provenance=dict(d.get("provenance", {})),
            notes=tuple(d.get("notes", ())),
        )


# --------------------------------------------------------------------------- cache

#: (coords, effective params, seconds, notes) of one projection
CacheEntry = tuple[np.ndarray, dict[str, Any], float, tuple[str, ...]]


class ProjectionCache:
    """LRU cache of unique-vector projections (in memory; also on disk if ``folder`` is given).

    Counters: ``hits`` (memory or disk), ``disk_hits``, ``misses``, ``computed``
    (projections actually run).  Disk entries are ``<key>.npz`` files written
    atomically (a temporary file in the same folder, flushed, then renamed), so
    a reader sees the old entry or the new one, never half of one.  Each entry
    carries its key and a SHA-256 digest of its content (:meth:`entry_digest`):
    a file that was read and is copied over another key's, changed, truncated, not an ``.npz`` or holding
    non-finite coordinates is damage: recomputed and overwritten, with a :class:`CacheWarning`.  A file that
    cannot be read *now* (permission denied, an I/O error, a lock; also a folder, FIFO or symlink out of the
    folder at the entry's name: :func:`~semanscope_nb.provenance.regular_file`) is not damage: the
    projection is computed and kept in memory only, the file is left as it is (``unreadable`` counts them,
    with a :class:`CacheWarning` each).  A folder that cannot be written to
    leaves the cache working in memory (``disk_errors`` counts the failures,
    and one :class:`RuntimeWarning` says so).
    """

    def __init__(self, maxsize: int = 64, *, folder: str | os.PathLike | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"ProjectionCache maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self.folder = Path(folder).expanduser() if folder is not None else None
        self._store = Memo(maxsize)  # key -> CacheEntry
        self._lock = threading.Lock()  # the counters and the held keys
        self._held: set[str] = set()  # keys whose file could not be read now: never overwritten by put()
        self.hits = self.disk_hits = self.misses = self.computed = self.disk_errors = self.unreadable = 0

    def __repr__(self) -> str:
        return f"ProjectionCache(maxsize={self.maxsize}, folder={str(self.folder) if self.folder else None!r})"

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses, "computed": self.computed,
                "entries": len(self._store), "disk_errors": self.disk_errors, "unreadable": self.unreadable}

    def reset_counters(self) -> None:
        self.hits = self.disk_hits = self.misses = self.computed = self.disk_errors = self.unreadable = 0

    def clear(self) -> None:
        """Forget the in-memory entries (files on disk stay)."""
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)

    def _path(self, key: str) -> Path:
        """The entry file of ``key``: one sanitised name inside the cache folder, whatever the key holds."""
        from semanscope_nb.provenance import path_inside

        return path_inside(self.folder, f"{key}.npz", what="projection cache key")  # type: ignore[arg-type]

    def _entry_path(self, key: str) -> Path | None:
        """:meth:`_path`, or None (the key held, one :class:`CacheWarning`) when the name is a symlink out of the folder."""
        from semanscope_nb.errors import CacheWarning

        try:
            return self._path(key)
        except ValueError as exc:  # a symlink out of the folder at the entry's name: not ours, never read or replaced
            with self._lock:
                self._held.add(key)
                self.unreadable += 1
            warnings.warn(f"projection cache: {exc}; projecting in memory, the link is left as it is",
                          CacheWarning, stacklevel=4)
            return None

    @staticmethod
    def entry_digest(key: str, coords: np.ndarray, params_json: str, notes_json: str) -> str:
        """SHA-256 of what a disk entry claims: its key, its coordinates (dtype, shape, bytes), parameters and notes."""
        c = np.ascontiguousarray(coords)
        h = hashlib.sha256()
        for part in (key, c.dtype.str, repr(c.shape), params_json, notes_json):
            h.update(part.encode("utf-8") + b"\0")
        h.update(c.tobytes())
        return h.hexdigest()

    def _read(self, key: str, path: Path, shape: tuple[int, int] | None) -> CacheEntry | None:
        """The entry in ``path`` if it is what it claims to be; else None and one :class:`CacheWarning` saying why.

        Bytes that were read and are not a sound entry are damage (the caller recomputes and overwrites);
        a file that cannot be read now is held: :meth:`put` leaves it as it is.
        """
        from semanscope_nb.errors import CacheWarning
        from semanscope_nb.provenance import regular_file

        why = None
        try:
            with np.load(regular_file(path), allow_pickle=False) as z:
                if "key" not in z.files or "digest" not in z.files:
                    why = "carries no key or digest (written by an older version)"
                else:
                    coords, params_json = z["coords"], str(z["params"])
                    notes_json = str(z["notes"]) if "notes" in z.files else "[]"
                    if str(z["key"]) != key:
                        why = f"holds another key ({str(z['key'])[:32]!r})"
                    elif not np.issubdtype(coords.dtype, np.number) or not np.isfinite(coords).all():
                        why = "holds coordinates that are not finite numbers"
                    elif shape is not None and coords.shape != shape:
                        why = f"holds {coords.shape} coordinates where {shape} were projected"
                    elif self.entry_digest(key, coords, params_json, notes_json) != str(z["digest"]):
                        why = "does not match its digest (changed after it was written)"
                    else:
                        entry = coords, json.loads(params_json), float(z["seconds"]), tuple(json.loads(notes_json))
                        with self._lock:
                            self._held.discard(key)
                        return entry
        except FileNotFoundError:  # removed since it was listed: a plain miss
            return None
        except OSError as exc:  # permission denied, I/O error, a lock, not a regular file: a condition, not damage
            with self._lock:
                self._held.add(key)
                self.unreadable += 1
            warnings.warn(f"projection cache: '{path.name}' cannot be read now ({type(exc).__name__}: "
                          f"{exc.strerror or exc}); projecting in memory, the file is left as it is",
                          CacheWarning, stacklevel=4)
            return None
        except Exception as exc:  # noqa: BLE001 - read but truncated, not an .npz, bad JSON: damage, recomputed (and overwritten)
            why = f"is damaged ({type(exc).__name__})"
        with self._lock:
            self._held.discard(key)
        warnings.warn(f"projection cache: '{path.name}' {why}; recomputing the projection", CacheWarning, stacklevel=4)
        return None

    def get(self, key: str, *, shape: tuple[int, int] | None = None) -> CacheEntry | None:
        """(coords, params, seconds, notes) of ``key``, from memory or disk; None on a miss.

        A disk entry is served only if it carries ``key`` and a digest that matches its content, its
        coordinates are finite and (given ``shape``) of that shape; otherwise a :class:`CacheWarning`
        names the file and the caller recomputes (the entry is overwritten).
        """
        entry = self._store.get(key)
        if entry is not None:
            with self._lock:
                self.hits += 1
            return entry
        if self.folder is not None:
            path = self._entry_path(key)
            if path is not None and os.path.lexists(path):
                entry = self._read(key, path, shape)
                if entry is not None:
                    self._store.put(key, entry)
                    with self._lock:
                        self.hits += 1
                        self.disk_hits += 1
                    return entry
        with self._lock:
            self.misses += 1
        return None

    def put(self, key: str, coords: np.ndarray, params: dict[str, Any], seconds: float, notes: Sequence[str] = ()) -> None:
        entry = (coords, params, seconds, tuple(notes))
        self._store.put(key, entry)
        with self._lock:
            held = key in self._held
        if self.folder is not None and not held:  # a file that could not be read now is never overwritten
            try:
                self._write(key, entry)
            except (OSError, ValueError) as exc:  # read-only, full disk, a symlink out of the folder: keep working in memory
                with self._lock:
                    self.disk_errors += 1
                    first = self.disk_errors == 1
                if first:
                    warnings.warn(f"projection cache: cannot write to {self.folder} ({exc}); keeping projections in memory only",
                                  RuntimeWarning, stacklevel=3)

    def _write(self, key: str, entry: CacheEntry) -> None:
        coords, params, seconds, notes = entry
        self.folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        buf = io.BytesIO()
        coords = np.asarray(coords)
        params_json, notes_json = json.dumps(params, default=str), json.dumps(list(notes))
        np.savez(buf, coords=coords, params=np.array(params_json), seconds=np.array(seconds), notes=np.array(notes_json),
                 key=np.array(key), digest=np.array(self.entry_digest(key, coords, params_json, notes_json)))
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(buf.getvalue())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


_DEFAULT_CACHES: dict[str, ProjectionCache] = {}
_DEFAULT_LOCK = threading.Lock()


def default_projection_folder() -> Path:
    """``projections/`` under the embedding cache's folder (``SEMANSCOPE_CACHE``, else the user cache dir)."""
    from semanscope_nb.models.cache import default_cache_dir

    return default_cache_dir() / "projections"


def default_projection_cache() -> ProjectionCache:
    """The process-wide cache :func:`project` uses when ``cache=None``: in memory and on disk.

    Its folder is :func:`default_projection_folder`, read when called, so
    setting ``SEMANSCOPE_CACHE`` moves projections along with embeddings; one
    cache object per folder is kept for the process.
    """
    folder = default_projection_folder()
    with _DEFAULT_LOCK:
        cache = _DEFAULT_CACHES.get(str(folder))
        if cache is None:
            cache = _DEFAULT_CACHES[str(folder)] = ProjectionCache(folder=folder)
        return cache


# --------------------------------------------------------------------------- inputs


def unique_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique rows in first-seen order, inverse) with ``unique[inverse] == x`` (exact byte equality).

    A dict keyed on each row's bytes (hashing, linear in the data): sorting the rows as wide void
    records (``np.unique``) took 0.12 s for 600 TF-IDF rows of a few thousand dimensions.

    >>> u, inv = unique_rows(np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]]))
    >>> u.tolist(), inv.tolist()
    ([[1.0, 2.0], [0.0, 1.0]], [0, 1, 0])
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape[0] == 0:
        return x, np.zeros(0, dtype=np.int64)
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(x.shape[0], dtype=np.int64)
    for i, row in enumerate(x):
        k = seen.setdefault(row.tobytes(), len(first))
        if k == len(first):
            first.append(i)
        inverse[i] = k
    return x[first], inverse


def content_hash(x: np.ndarray) -> str:
    """SHA-256 of a float64 C-contiguous array's shape and bytes."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    h = hashlib.sha256(str(x.shape).encode())
    h.update(x.tobytes())
    return h.hexdigest()


def _as_matrix(
    vectors: Any, words: Sequence[str] | None, languages: Sequence[str] | None
) -> tuple[np.ndarray, tuple[str, ...] | None, tuple[str, ...] | None]:
    if isinstance(vectors, Mapping):
        if languages is not None:
            raise ValueError("pass languages= only with an array; a mapping's keys are the languages")
        parts, langs, wds = [], [], []
        for lang, v in vectors.items():
            arr = np.asarray(v, dtype=np.float64)
            if arr.ndim != 2:
                raise ValueError(f"vectors['{lang}'] must be 2-D (rows x dims), got shape {arr.shape}")
            parts.append(arr)
            langs += [lang] * arr.shape[0]
        if words is not None:
            wds = list(words)
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise ValueError(f"vectors have mixed dimensions across languages: {sorted(dims)}")
        x = np.vstack(parts) if parts else np.zeros((0, 0))
        words = wds if words is not None else None
        languages = langs
    else:
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array (rows x dims), got shape {x.shape}")
    n = x.shape[0]
    for name, seq in (("words", words), ("languages", languages)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"{name} has {len(seq)} entries but there are {n} vectors")
    if n and not np.isfinite(x).all():
        bad = np.flatnonzero(~np.isfinite(x).all(axis=1))[:5].tolist()
        what = [words[i] for i in bad] if words is not None else bad
        raise ValueError(f"vectors hold NaN or inf in row(s) {what}")
    return x, (tuple(words) if words is not None else None), (tuple(languages) if languages is not None else None)


def _effective_params(method: str, n_unique: int, params: Mapping[str, Any], dims: int = 2) -> dict[str, Any]:
    unknown = set(params) - set(DEFAULTS[method]) - EXTRA_PARAMS[method]
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {sorted(unknown)} for method '{method}'; "
            f"known: {sorted(set(DEFAULTS[method]) | EXTRA_PARAMS[method])}"
        )
    p = {**DEFAULTS[method], **params}
    if p.get("n_components", 2) != 2:
        raise ValueError(f"only 2-D maps come from params (n_components=2), got {p['n_components']}; "
                         "ask for a 3-D projection with dims=3 (ProjectionSettings(n_components=3))")
    _check_dims(dims)
    p["n_components"] = int(dims)
    if method == "phate":
        p["knn"] = int(max(2, min(int(p["knn"]), n_unique - 2)))  # PHATE needs knn < n_samples
    elif method == "umap":
        p["n_neighbors"] = int(max(2, min(int(p["n_neighbors"]), n_unique - 1)))
    elif method == "tsne":
        p["perplexity"] = float(max(1.0, min(float(p["perplexity"]), (n_unique - 1) / 3.0)))
    if n_unique <= dims + 1 and method != "pca":
        p["fallback"] = "pca"  # neighbour graphs are undefined on so few distinct points
    return p


EXTRA_PARAMS: dict[str, set[str]] = {
    "phate": {"n_landmark", "mds_solver", "n_pca", "knn_dist", "scale", "jitter"},
    "umap": {"spread", "init", "scale"},
    "tsne": {"early_exaggeration", "learning_rate", "max_iter", "init", "scale"},
    "pca": {"scale"},
}


# --------------------------------------------------------------------------- quiet libraries

_QUIET_LOCK = threading.RLock()
#: Python loggers the projection libraries print through (PHATE and graphtools use tasklogger's "graphtools")
_LIBRARY_LOGGERS = ("graphtools", "phate", "umap", "pynndescent")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except (TypeError, ValueError):  # pragma: no cover - a record whose arguments do not format
            self.messages.append(str(record.msg))


@contextmanager
def _quiet(method: str, notes: list[str]) -> Iterator[None]:
    """Run a projection with its warnings, log records and stray prints caught; append one summary line to ``notes``."""
    handler = _Collect()
    out, err = io.StringIO(), io.StringIO()
    with _QUIET_LOCK:
        saved = []
        for name in _LIBRARY_LOGGERS:
            lg = logging.getLogger(name)
            saved.append((lg, lg.handlers[:], lg.propagate))
            lg.handlers = [handler]
            lg.propagate = False
        try:
            with warnings.catch_warnings(record=True) as caught, redirect_stdout(out), redirect_stderr(err):
                warnings.simplefilter("always")
                yield
        finally:
            for lg, handlers, propagate in saved:
                lg.handlers = handlers
                lg.propagate = propagate
    messages = [f"{w.category.__name__}: {w.message}" for w in caught] + handler.messages
    messages += [line for line in (out.getvalue() + err.getvalue()).splitlines() if line.strip()]
    summary = summarise_messages(method, messages)
    if summary:
        notes.append(summary)


def summarise_messages(method: str, messages: Sequence[str], *, limit: int = 240) -> str | None:
    """One line for many library messages: how many, and each distinct one once (numbers folded).

    >>> summarise_messages("phate", ["SGD-MDS may not have converged: stress changed by 9.8%",
    ...                               "  SGD-MDS may not have converged: stress changed by 10.1%"])
    'phate: 2 library messages caught (not printed): SGD-MDS may not have converged: stress changed by 9.8%'
    """
    cleaned = [" ".join(str(m).split()) for m in messages if str(m).strip()]
    if not cleaned:
        return None
    distinct: dict[str, str] = {}
    for m in cleaned:
        distinct.setdefault(re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", m), m)
    body = "; ".join(distinct.values())
    if len(body) > limit:
        body = body[: limit - 1].rstrip() + "…"
    return f"{method}: {len(cleaned)} library message{'s' if len(cleaned) != 1 else ''} caught (not printed): {body}"


# --------------------------------------------------------------------------- the projections


def _standardise(x: np.ndarray) -> np.ndarray:
    from sklearn.preprocessing import (
        StandardScaler,  # zero mean, unit variance per dimension (B.3 step 1)
    )

    return StandardScaler().fit_transform(x)


def _run(method: str, x: np.ndarray, p: dict[str, Any], random_state: int) -> np.ndarray:
    n = x.shape[0]
    dims = int(p.get("n_components", 2))
    if p.get("scale", True):
        x = _standardise(x)
    if p.get("fallback") == "pca":
        method = "pca"
    if method == "phate":
        import phate  # lazy: heavy import

        rng = np.random.default_rng(random_state)
        x = x + p.get("jitter", JITTER) * rng.standard_normal(x.shape)  # B.3 step 2
        op = phate.PHATE(
            n_components=dims, knn=p["knn"], decay=p["decay"], t=p["t"], gamma=p["gamma"],
            n_landmark=p.get("n_landmark", 2000), mds_solver=p.get("mds_solver", "sgd"), n_pca=p.get("n_pca", 100),
            knn_dist=p.get("knn_dist", "euclidean"), random_state=random_state, n_jobs=1, verbose=0,
        )
        return np.asarray(op.fit_transform(x), dtype=np.float64)
    if method == "umap":
        import umap  # lazy: heavy import (numba)

        op = umap.UMAP(
            n_components=dims, n_neighbors=p["n_neighbors"], min_dist=p["min_dist"], metric=p["metric"],
            spread=p.get("spread", 1.0), init=p.get("init", "spectral") if n > p["n_neighbors"] + 1 else "random",
            random_state=random_state, n_jobs=1,
        )
        return np.asarray(op.fit_transform(x), dtype=np.float64)
    if method == "tsne":
        from sklearn.manifold import TSNE

        op = TSNE(
            n_components=dims, perplexity=p["perplexity"], early_exaggeration=p.get("early_exaggeration", 12.0),
            learning_rate=p.get("learning_rate", "auto"), max_iter=p.get("max_iter", 1000), init=p.get("init", "pca"),
            random_state=random_state,
        )
        return np.asarray(op.fit_transform(x), dtype=np.float64)
    from sklearn.decomposition import PCA

    k = min(dims, x.shape[0], x.shape[1])
    out = PCA(n_components=k, random_state=random_state).fit_transform(x) if k else np.zeros((n, 0))
    if out.shape[1] < dims:
        out = np.hstack([out, np.zeros((n, dims - out.shape[1]))])
    return np.asarray(out, dtype=np.float64)


# --------------------------------------------------------------------------- the worker process (stoppable projections)


def _worker_main(conn: Any) -> None:  # pragma: no cover - runs in the spawned process
    """The worker's loop: receive (method, x, params, seed), send back ("ok", coords, notes) or ("error", exception)."""
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        method, x, p, random_state = job
        notes: list[str] = []
        try:
            with _quiet(method, notes):
                coords = _run(method, x, p, random_state)
            conn.send(("ok", coords, notes))
        except Exception as exc:  # sent back and raised in the caller's process
            try:
                conn.send(("error", exc, notes))
            except Exception:  # an exception that does not pickle
                conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), notes))


class WorkerUnavailable(RuntimeError):
    """The worker process could not start or died; :func:`project` then computes in this process (one warning)."""


class ProjectionWorker:
    """One ``spawn``-ed process that runs projections, so that a running one can be ended at once.

    :meth:`run` sends the job and waits, asking ``should_stop`` every ``poll``
    seconds; on stop it terminates the process (its CPU use stops with it; the
    next job starts a new one) and raises :class:`~semanscope_nb.errors.Cancelled`.
    The process is kept between jobs, so only the first projection pays for
    starting Python and importing the libraries.  Why a process and not a thread:
    PHATE, UMAP and t-SNE give no hook to stop them, and a thread cannot be killed.
    Jobs from several threads run one after the other.

    >>> w = ProjectionWorker(); w.pid is None
    True
    """

    def __init__(self, *, poll: float = 0.05) -> None:
        self.poll = float(poll)
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()  # one job at a time
        self.started = 0  # processes started (tests and benchmarks read it)
        self.terminated = 0  # processes ended by a stop

    @property
    def pid(self) -> int | None:
        """The worker process's id while it is alive (None before the first job and after a stop)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.is_alive() else None

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            return
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # never fork a process that holds threads (a kernel, a widget callback)
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="semanscope-projection-worker")
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self.started += 1

    def stop(self) -> None:
        """End the worker process now (terminate, then kill if it lingers); safe to call at any time."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if proc is not None and proc.is_alive():
            proc.terminate()
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()
                proc.join(2.0)
            self.terminated += 1
        if conn is not None:
            conn.close()

    def run(self, method: str, x: np.ndarray, params: dict[str, Any], random_state: int, *,
            should_stop: ShouldStop | None = None) -> tuple[np.ndarray, list[str]]:
        """``(coords, notes)`` of one projection computed in the worker; :class:`Cancelled` if stopped meanwhile."""
        what = f"{method} projection"
        while not self._lock.acquire(timeout=self.poll):  # another thread's job runs: wait, but keep listening
            check_stop(should_stop, what)
        try:
            check_stop(should_stop, what)
            self._ensure()
            try:
                self._conn.send((method, x, params, int(random_state)))
            except (BrokenPipeError, EOFError, OSError) as exc:
                self.stop()
                raise WorkerUnavailable(f"the projection worker process did not start ({exc}); a script that runs "
                                        "panels needs `if __name__ == '__main__':` around its code (multiprocessing spawn)") from exc
            while not self._conn.poll(self.poll):
                if should_stop is not None and should_stop():
                    self.stop()
                    check_stop(should_stop, what)
                    raise Cancelled(f"{what}: stopped on request")  # pragma: no cover - should_stop changed its mind
                if not self._proc.is_alive():
                    code = self._proc.exitcode
                    self.stop()
                    raise WorkerUnavailable(f"the projection worker process ended unexpectedly (exit code {code}) during {what}")
            try:
                status, payload, notes = self._conn.recv()
            except (EOFError, OSError) as exc:
                self.stop()
                raise WorkerUnavailable(f"the projection worker process ended unexpectedly during {what} ({exc})") from exc
        finally:
            self._lock.release()
        if status == "error":
            raise payload
        return np.asarray(payload, dtype=np.float64), list(notes)


_WORKER: ProjectionWorker | None = None
_WORKER_LOCK = threading.Lock()


def projection_worker() -> ProjectionWorker:
    """The process-wide :class:`ProjectionWorker` that :func:`project` uses with ``should_stop=``.

    >>> projection_worker() is projection_worker()
    True
    """
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = ProjectionWorker()
        return _WORKER


def project(
    vectors: Any,
    *,
    method: Method = "phate",
    random_state: int = 0,
    words: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
    cache: ProjectionCache | None | Literal[False] = None,
    dims: int = 2,
    should_stop: ShouldStop | None = None,
    **params: Any,
) -> Projection:
    """Project ``vectors`` to 2-D (``dims=3``: 3-D) with ``method`` (phate, umap, tsne, pca); cached.

    ``vectors``: an (n x d) array (then ``words`` / ``languages`` label the rows),
    or language -> (n_l x d) array (rows stacked in the mapping's order; the
    languages come from the keys).  ``params`` override the method's defaults
    (PHATE: knn, decay, t, gamma; UMAP: n_neighbors, min_dist, metric; t-SNE:
    perplexity; any: ``scale=False`` skips the StandardScaler).  ``cache=None``
    uses :func:`default_projection_cache` (memory + disk); ``False`` computes
    without caching.  Library warnings end up in ``notes``, not on the screen.
    ``should_stop`` (a callable): PHATE, UMAP and t-SNE run in the
    :func:`projection_worker` process, ended when it says stop (see the module doc).

    >>> import numpy as np
    >>> v = {"en": np.eye(6), "zh": np.eye(6)}          # every zh row duplicates an en row
    >>> p = project(v, method="pca", words=list("abcdef") * 2, cache=False)
    >>> p.n_unique, p.languages[6], bool((p.coords[:6] == p.coords[6:]).all())
    (6, 'zh', True)
    >>> project(v, method="pca", dims=3, cache=False).coords.shape
    (12, 3)
    """
    if method not in PROJECTION_METHODS:
        raise ArgumentError(f"method must be one of {PROJECTION_METHODS}, got {method!r}")
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        # (a negative seed would reach scikit-learn / PHATE and fail there without naming the argument)
        raise ArgumentError(f"random_state must be an int >= 0 (every random step takes a seed), got {random_state!r}")
    x, words_t, langs_t = _as_matrix(vectors, words, languages)
    if x.shape[0] < 2:
        raise ValueError(f"need at least 2 vectors to project, got {x.shape[0]}")
    uniq, inverse = unique_rows(x)
    p = _effective_params(method, uniq.shape[0], params, dims)
    lib = _LIBRARY[method]
    data_hash = content_hash(uniq)
    key_blob = json.dumps({"data": data_hash, "method": method, "params": p, "random_state": int(random_state),
                           "library": f"{lib}=={package_version(lib)}"}, sort_keys=True, default=str)
    key = hashlib.sha256(key_blob.encode()).hexdigest()[:32]
    store = None if cache is False else (cache if cache is not None else default_projection_cache())
    hit = store.get(key, shape=(uniq.shape[0], int(p.get("n_components", dims)))) if store is not None else None
    if hit is not None:
        coords_u, _, seconds, notes = hit
        from_cache = True
    else:
        t0 = time.perf_counter()
        caught: list[str] = []
        in_worker = should_stop is not None and method != "pca" and p.get("fallback") != "pca"
        if in_worker:
            try:
                coords_u, caught = projection_worker().run(method, uniq, p, int(random_state), should_stop=should_stop)
            except WorkerUnavailable as exc:
                warnings.warn(f"{exc}; projecting in this process instead (Cancel then waits for the projection to end)",
                              RuntimeWarning, stacklevel=2)
                in_worker = False
        if not in_worker:
            check_stop(should_stop, f"{method} projection")
            with _quiet(method, caught):
                coords_u = _run(method, uniq, p, int(random_state))
        notes = tuple(caught)
        seconds = time.perf_counter() - t0
        from_cache = False
        if store is not None:
            store.computed += 1
            store.put(key, coords_u, p, seconds, notes)
    coords = np.asarray(coords_u)[inverse]
    prov = {"library": f"{lib}=={package_version(lib)}", "n_points": int(x.shape[0]), "n_unique": int(uniq.shape[0]),
            "dims": int(x.shape[1]), "content_sha256": data_hash}
    if notes:
        prov["notes"] = list(notes)
    return Projection(
        coords=coords, method=method, params=p, random_state=int(random_state), key=key, n_unique=int(uniq.shape[0]),
        inverse=inverse, words=words_t, languages=langs_t, seconds=seconds, from_cache=from_cache,
        provenance=prov, notes=tuple(notes),
    )


def dataset_points(dataset: Any, vectors: Mapping[str, Mapping[str, np.ndarray]]) -> tuple[np.ndarray, list[str], list[str]]:
    """One point per unique (language, word) of a dataset: (matrix, words, languages).

    ``vectors`` is what :func:`semanscope_nb.embed_dataset` returns (language -> text -> vector).
    """
    rows, words, langs = [], [], []
    for lang in dataset.languages:
        for w in dataset.words(lang):
            rows.append(np.asarray(vectors[lang][w], dtype=np.float64))
            words.append(w)
            langs.append(lang)
    return np.stack(rows), words, langs


def project_dataset(
    dataset: Any,
    vectors: Mapping[str, Mapping[str, np.ndarray]],
    *,
    settings: ProjectionSettings | None = None,
    cache: ProjectionCache | None | Literal[False] = None,
    should_stop: ShouldStop | None = None,
) -> Projection:
    """:func:`project` of every unique (language, word) of ``dataset`` with ``settings`` (3-D if ``n_components=3``)."""
    s = settings or ProjectionSettings()
    x, words, langs = dataset_points(dataset, vectors)
    return project(x, method=s.method, random_state=s.random_state, words=words, languages=langs, cache=cache,
                   dims=s.n_components, should_stop=should_stop, **dict(s.params))
