"""Benchmark (issue 21): a warm read of a data set's whole word set through its bundle against the per-text rows.

2,886 texts x 512 float32 (the shape of USE on conceptual-space: 481 concepts x 6 languages), encoded by
``random-null`` into two caches that hold the same per-text rows:

* measured: this version's cache after one full read (the bundle written): a read is one row;
* baseline, same run: the same rows in a file without the bundle triggers (as written before bundles), opened
  read-only so they cannot be made: every read goes row by row (each 2 KB row spills to an overflow page).

Each repeat opens both caches afresh (read-only) and reads the set through :meth:`EmbeddingCache.get`, the two
interleaved; the figure is the minimum over ``--repeat`` in CPU time of this process and in wall time.  The rows are
checked bit-equal between the two caches.  Also measured (printed, not a claim row): the one-off cost of the first
full read on a writable cache -- the per-text read plus writing the bundle -- against the per-text read alone.

    python bench/bench_cache_bundle.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results  # noqa: E402
from _timing import scratch_dir  # noqa: E402

from semanscope_nb.models.cache import BUNDLE_KEY_SUFFIX, EmbeddingCache  # noqa: E402
from semanscope_nb.models.encoders import RandomEncoder  # noqa: E402

N_TEXTS, DIM = 2886, 512


def fill(folder: Path, texts: list[str], *, bundled: bool) -> str:
    """Embed ``texts`` into ``folder``; ``bundled``: read them once more (the bundle written), else drop the triggers."""
    cache, enc = EmbeddingCache(folder), RandomEncoder(dim=DIM)
    cache.embed(enc, texts, progress=False)
    if bundled:
        cache.get(enc.cache_key, texts)
    cache.close()
    con = sqlite3.connect(folder / "embeddings.sqlite", isolation_level=None)
    if not bundled:  # as a cache from before bundles
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            con.execute(f"DROP TRIGGER {name}")
    n = con.execute("SELECT count(*) FROM token_vectors WHERE model_key=?", (enc.cache_key + BUNDLE_KEY_SUFFIX,)).fetchone()[0]
    assert n == (1 if bundled else 0), n
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return enc.cache_key


def read(folder: Path, key: str, texts: list[str], *, read_only: bool = True) -> tuple[float, float, dict]:
    """(CPU s, wall s, vectors) of one read of ``texts`` from a freshly opened cache."""
    cache = EmbeddingCache(folder, read_only=read_only)
    c0, w0 = time.process_time(), time.perf_counter()
    found, n_damaged = cache.get(key, texts)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    cache.close()
    assert n_damaged == 0 and len(found) == len(texts)
    return cpu, wall, found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    tmp = scratch_dir("bench-cache-bundle-")
    texts = [f"word {i} {'水' if i % 6 == 1 else ''}" for i in range(N_TEXTS)]
    key = fill(tmp / "bundled", texts, bundled=True)
    assert fill(tmp / "per-text", texts, bundled=False) == key
    runs: dict[str, list[tuple[float, float]]] = {"bundled": [], "per-text": []}
    got: dict[str, dict] = {}
    for i in range(args.repeat):
        order = ("bundled", "per-text") if i % 2 == 0 else ("per-text", "bundled")
        for kind in order:
            cpu, wall, got[kind] = read(tmp / kind, key, texts)
            runs[kind].append((cpu, wall))
    a, b = got["bundled"], got["per-text"]
    assert a.keys() == b.keys() and all(np.array_equal(a[t].view(np.uint32), b[t].view(np.uint32)) for t in a), \
        "the bundle gives the per-text rows' float32 bits"
    # the one-off cost: a first full read on a writable cache (per-text read + the bundle written) vs per-text alone
    first: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        con = sqlite3.connect(tmp / "bundled" / "embeddings.sqlite", isolation_level=None)
        con.execute("DELETE FROM token_vectors WHERE model_key=?", (key + BUNDLE_KEY_SUFFIX,))
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        cpu, wall, _ = read(tmp / "bundled", key, texts, read_only=False)
        first.append((cpu, wall))
    best = {k: (min(c for c, _ in v), min(w for _, w in v)) for k, v in runs.items()}
    first_best = (min(c for c, _ in first), min(w for _, w in first))
    load = os.getloadavg()[0]
    print(f"{N_TEXTS} texts x {DIM}; reads bit-equal; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"first full read, bundle written: CPU {first_best[0] * 1e3:.1f} ms, wall {first_best[1] * 1e3:.1f} ms "
          f"= {first_best[0] / best['per-text'][0]:.2f}x / {first_best[1] / best['per-text'][1]:.2f}x the per-text read "
          "(once per model and text set)")
    note = (f"{N_TEXTS} texts x {DIM} float32 (random-null; the shape of USE on conceptual-space); reads bit-equal; "
            f"the first full read, which writes the bundle, costs {first_best[1] / best['per-text'][1]:.2f}x a per-text "
            f"read (wall) once; load average {load:.1f} on {os.cpu_count()} cores")
    baseline = "the same rows read per text (a cache file without the bundle triggers)"
    rows = [
        row("warm cache read of a data set's word set through its bundle, CPU", best["bundled"][0], best["per-text"][0],
            baseline_name=baseline, threads=1, repeats=args.repeat, clock="cpu", note=note),
        row("warm cache read of a data set's word set through its bundle, wall", best["bundled"][1], best["per-text"][1],
            baseline_name=baseline, threads=1, repeats=args.repeat, clock="wall", note=note),
    ]
    write_results("cache-bundle", rows, script="bench/bench_cache_bundle.py", args=argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
