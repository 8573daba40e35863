"""Bench results as JSON rows that ``bench/make_readme.py`` renders into ``bench/README.md``.

Each bench script that makes a claim writes ``bench/results/<name>.json``::

    {"bench": "<name>", "script": "bench/<script>.py", "args": [...], "date": "...", "load": [1, 5, 15 min],
     "cpu_count": 2, "rows": [{"claim": "...", "measured": "...", "baseline": "...", "ratio": 1.23,
                              "target": "<= 10", "threads": 1, "repeats": 3, "clock": "cpu"}]}

``ratio`` is measured / baseline, both taken in the same run as the minimum of ``repeats`` interleaved repeats
(:func:`interleaved_min`); ``threads`` is the BLAS thread count of the measurement.  Another helper's bench adds
rows by calling :func:`write_results` with its own name: the README generator renders every file it finds.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

RESULTS = Path(__file__).resolve().parent / "results"


def interleaved_min(fns: Mapping[str, Callable[[], Any]], *, repeat: int = 3,
                    clock: str = "cpu", settle: Mapping[str, float] | None = None) -> dict[str, float]:
    """The minimum over ``repeat`` rounds of each function's time, the functions run in turn within each round.

    ``clock``: "cpu" (``time.process_time``: this process, all its threads) or "wall" (``time.perf_counter``).
    Interleaving spreads a busy machine's load over every contender instead of over whichever ran last.
    ``settle``: seconds to sleep (untimed) before each run of the named functions, e.g. so that the BLAS worker
    threads a threaded product left spinning (OpenBLAS: about 0.1 s) are asleep again and their CPU time is not
    charged to a function that runs on one BLAS thread.
    """
    tick = time.process_time if clock == "cpu" else time.perf_counter
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            if settle and settle.get(k):
                time.sleep(settle[k])
            t = tick()
            fn()
            best[k] = min(best[k], tick() - t)
    return best


def row(claim: str, measured: float, baseline: float, *, unit: str = "s", baseline_name: str, threads: int | str,
        repeats: int, clock: str, target: str | None = None, note: str | None = None) -> dict[str, Any]:
    """One claim: what was measured against which baseline, the ratio and how it was taken."""
    return {"claim": claim, "measured": measured, "unit": unit, "baseline": baseline, "baseline_name": baseline_name,
            "ratio": measured / baseline if baseline else float("nan"), "target": target, "threads": threads,
            "repeats": repeats, "clock": clock, "note": note}


def write_results(name: str, rows: Sequence[Mapping[str, Any]], *, script: str, args: Sequence[str] = ()) -> Path:
    """Write ``bench/results/<name>.json`` atomically (a rerun replaces it) and print the rows."""
    RESULTS.mkdir(exist_ok=True)
    doc = {"bench": name, "script": script, "args": list(args),
           "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "load": list(os.getloadavg()) if hasattr(os, "getloadavg") else None, "cpu_count": os.cpu_count(),
           "python": sys.version.split()[0], "rows": [dict(r) for r in rows]}
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    for r in rows:
        print(f"  {r['claim']}: {r['measured']:.4g} {r['unit']} vs {r['baseline_name']} {r['baseline']:.4g} {r['unit']} "
              f"= {r['ratio']:.3g}x  (threads {r['threads']}, min of {r['repeats']} interleaved, {r['clock']} time)")
    print(f"wrote {path}")
    return path
