"""Stopping long work on request: one small protocol, checked where the work can stop cleanly.

A ``should_stop`` argument is any callable taking no argument that returns True
once the work should stop (Cancel pressed, a newer change made).  Long loops call
:func:`check_stop` between their steps -- between embedding batches
(:meth:`~semanscope_nb.models.cache.EmbeddingCache.embed_with_stats`), between
bootstrap batches (:func:`~semanscope_nb.metrics.chance.null_aware_bootstrap`) and
while a projection runs in its worker process
(:func:`~semanscope_nb.plots.projection.project`) -- which raises
:class:`~semanscope_nb.errors.Cancelled`.  What finished before the stop stays
(every finished embedding batch is in the cache), so the next run resumes.

:class:`CancelToken` is the callable a panel hands out: ``cancel()`` from any
thread, ``token()`` (or ``token.cancelled``) to ask.  It is a plain
:class:`threading.Event` underneath, so it costs nothing to check.

Layer: models (the lowest layer that runs long work); metrics, plots, runs and
widgets import it from here.

Example
-------
>>> token = CancelToken()
>>> check_stop(token)            # not cancelled: returns quietly
>>> token.cancel(); token(), token.cancelled
(True, True)
>>> check_stop(token, "embedding")
Traceback (most recent call last):
...
semanscope_nb.errors.Cancelled: embedding: cancelled
"""

from __future__ import annotations

import threading
from typing import Callable

from semanscope_nb.errors import ArgumentError, Cancelled

#: what a ``should_stop=`` argument is: a callable taking nothing, True once the work should stop
ShouldStop = Callable[[], bool]


class CancelToken:
    """A thread-safe "stop now" flag that is its own ``should_stop`` callable.

    >>> t = CancelToken(); t(), t.cancel(), t()
    (False, None, True)
    """

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        """Ask the work holding this token to stop at its next check (safe from any thread)."""
        self.reason = self.reason or reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __call__(self) -> bool:
        return self._event.is_set()

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled})"


def check_stop(should_stop: ShouldStop | None, what: str = "") -> None:
    """Raise :class:`~semanscope_nb.errors.Cancelled` when ``should_stop()`` is true (None: never).

    The message names ``what`` stopped and, for a :class:`CancelToken`, why.

    >>> check_stop(None), check_stop(lambda: False)
    (None, None)
    """
    if should_stop is None:
        return
    if not callable(should_stop):
        raise ArgumentError(f"should_stop must be a callable returning True to stop, got {type(should_stop).__name__}")
    if should_stop():
        reason = getattr(should_stop, "reason", "") or "stopped on request"
        raise Cancelled(f"{what}: {reason}" if what else reason)
