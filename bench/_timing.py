"""Shared timing helper for the bench scripts (run them as `python bench/bench_x.py`)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable


def scratch_dir(prefix: str) -> Path:
    """A new folder under the system's temporary directory, removed when the bench script exits.

    Benchmarks build caches of hundreds of MB there; left behind run after run they filled the
    disk of the machine CI runs on (issue 21, 2026-11-27), so every script's scratch goes through here.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` wall-clock runs of ``fn()``, in seconds (the least noisy estimate)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def sa_floor_case(R: int = 349, d: int = 512, B: int = 1000, seed: int = 0):
    """The SA + bootstrap case of bench_sa and bench_fused_verdict, and its product floor's operands.

    Two languages (the second the first plus noise, R concepts x d dims), ``C`` (B x R) and ``X``
    (R x d) for the floor ``C @ X``; returns ``(E, C, X, rng)`` with the generator left where the
    draws stopped (bench_sa draws its pdist resamples from it next).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    en = rng.normal(size=(R, d))
    E = {"en": en, "zh": en + 1.2 * rng.normal(size=(R, d))}
    C = rng.random((B, R))
    X = rng.normal(size=(R, d))
    return E, C, X, rng
