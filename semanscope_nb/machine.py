"""What this machine can give a run right now: free CPUs (for the second thread of a small product, or the
benchmark's worker processes).

>>> free_cpus() >= 0
True
"""

from __future__ import annotations

import os


def free_cpus() -> int:
    """CPUs this process may use that no other runnable task holds right now (0 where that cannot be read).

    Linux's ``/proc/loadavg`` counts the runnable tasks of the whole system (this thread included) at this instant;
    a container that shows the host's count simply gets 0 (the serial routes).
    """
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        cpus = len(os.sched_getaffinity(0))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0
    return max(0, cpus - running + 1)
