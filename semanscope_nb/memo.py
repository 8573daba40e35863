"""One bounded, thread-safe, least-recently-used memo for every in-process cache of the package.

The baseline's statistics and word vectors (metrics, runs), the panel's data
sets, vectors, results and projections (widgets), the map's spec templates and
the projection cache (plots) each keep recent values in memory.  They all use
:class:`Memo`: bounded by a count, or by a size of each value (bytes), with the
least recently used entry dropped first, and safe to call from any thread
(JupyterLab 4 runs widget callbacks on kernel subshell threads).

Why cachetools: its ``LRUCache`` is the well-kept implementation of exactly this
eviction rule, including a size per value (``getsizeof``); it is not
thread-safe on its own, so every call here holds one lock.

Layer: bottom (imports only cachetools and the standard library).

Example
-------
>>> m = Memo(2)
>>> m.put("a", 1), m.put("b", 2), m.get("a"), m.put("c", 3)
(1, 2, 1, 3)
>>> sorted(m.keys()), m.get("b") is None
(['a', 'c'], True)
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Hashable

from cachetools import LRUCache


class Memo:
    """At most ``maxsize`` values (or, with ``sizeof``, values whose sizes sum to at most ``maxsize``), LRU first out.

    :meth:`get` marks an entry as recently used; :meth:`put` stores one and
    returns the value (a value larger than the whole bound is returned but not
    kept).  ``None`` is never stored, so ``get(key) is None`` means a miss.

    >>> m = Memo(10, sizeof=len)
    >>> _ = m.put("x", "12345678"); _ = m.put("y", "1234")  # 8 + 4 > 10: "x" goes
    >>> list(m.keys()), len(m)
    (['y'], 1)
    >>> m.put("z", "far too long to keep"), "z" in m
    ('far too long to keep', False)
    """

    def __init__(self, maxsize: int, *, sizeof: Callable[[Any], int] | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"Memo maxsize must be >= 1, got {maxsize}")
        self.maxsize = int(maxsize)
        self._store: LRUCache = LRUCache(maxsize=self.maxsize, getsizeof=sizeof)
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value stored under ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            return self._store.get(key, default)

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key`` as the most recently used entry, dropping the least recent beyond the bound."""
        if value is None:
            raise ValueError("Memo.put: None cannot be stored (get() returns None for a miss)")
        with self._lock:
            self._store.pop(key, None)
            try:
                self._store[key] = value
            except ValueError:  # larger than the whole bound: cachetools refuses it, the caller still gets it
                pass
        return value

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._store.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._store.clear()

    def keys(self) -> list:
        """The keys (in no set order)."""
        with self._lock:
            return list(self._store.keys())

    @property
    def size(self) -> int:
        """The sum of the stored values' sizes (their count without ``sizeof``)."""
        with self._lock:
            return int(self._store.currsize)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._store

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    def __repr__(self) -> str:
        return f"Memo(maxsize={self.maxsize}, entries={len(self)})"
