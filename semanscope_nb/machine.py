"""What this machine can give a run right now: free CPUs (for the second thread of a small product, or the
benchmark's worker processes).

>>> free_cpus() >= 0
True
"""

from __future__ import annotations

import os


def free_cpus(*, own: int = 0) -> int:
    """CPUs this process may use that no other runnable task holds right now (0 where that cannot be read).

    Linux's ``/proc/loadavg`` counts the runnable tasks of the whole system (this thread included) at this instant;
    a container that shows the host's count simply gets 0 (the serial routes).  ``own``: tasks of this process's own
    that are counted there but are not competition for the work being placed -- side jobs of the same call already
    running (:func:`semanscope_nb.metrics.spreads.beside`): they are not held against it.

    >>> free_cpus() >= 0 and free_cpus(own=1) >= 0
    True
    """
    counted = _runnable_and_cpus()
    if counted is None:
        return 0
    running, cpus = counted
    return max(0, cpus - max(1, running - max(0, int(own))) + 1)


def _runnable_and_cpus() -> tuple[int, int] | None:
    """(runnable tasks of the whole system now, CPUs this process may use), or None where that cannot be read."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        cpus = len(os.sched_getaffinity(0))
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return running, cpus
