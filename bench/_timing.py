"""Shared timing helper for the bench scripts (run them as `python bench/bench_x.py`)."""

from __future__ import annotations

import time
from typing import Callable


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` wall-clock runs of ``fn()``, in seconds (the least noisy estimate)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)
