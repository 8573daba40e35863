"""Benchmark of blocked top-k search: time and peak memory against a dense-matrix argmax baseline.

Run:  .venv/bin/python bench/bench_retrieval.py [--quick] [--sizes 10000 20000 50000] [--dense-sizes 10000 20000]

Queries and corpus are N x 384 float32 Gaussian vectors (cosine).  Each
measurement runs in a fresh subprocess, so peak memory is that run's own:
``tracemalloc`` (which sees NumPy's allocations) peak minus the two input
arrays, and the process's peak RSS (``ru_maxrss``).

* blocked: ``semanscope_nb.topk_search(q, c, k=10)`` (and k=1), the default
  memory budget (``max_block_bytes`` = 64 MB of float64 distances per block).
* dense baseline: the whole N x N float32 similarity matrix ``qn @ cn.T`` and
  its row ``argmax`` (the cheapest dense top-1), at the sizes it can handle.

Printed: seconds, peak MB, and blocked/dense ratios at every size measured
with both; the agreement of blocked top-1 with dense argmax is checked.  Every
figure is measured in this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
method, n, k, dims = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
q = rng.standard_normal((n, dims), dtype=np.float32)
c = rng.standard_normal((n, dims), dtype=np.float32)
import semanscope_nb as snb
tracemalloc.start()
t = time.perf_counter()
if method == "blocked":
    top = snb.topk_search(q, c, k=k, dtype=np.float32).indices[:, 0]
else:
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    sim = qn @ cn.T
    top = np.argmax(sim, axis=1)
    del sim
secs = time.perf_counter() - t
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
np.save(sys.argv[5], top)
copies = 2 * n * dims * 4  # the unit-normalised float32 copies of queries and corpus (both methods make them)
print(json.dumps({"seconds": secs, "peak_mb": peak / 2**20, "copies_mb": copies / 2**20,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(method: str, n: int, k: int, dims: int, out: str) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, method, str(n), str(k), str(dims), out], capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr else f"exit {p.returncode}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (2000, 5000) for a smoke run")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 50_000])
    ap.add_argument("--dense-sizes", type=int, nargs="+", default=[10_000, 20_000])
    ap.add_argument("--dims", type=int, default=384)
    args = ap.parse_args()
    sizes, dense_sizes = (args.sizes, args.dense_sizes) if not args.quick else ([2000, 5000], [2000, 5000])
    import tempfile

    import numpy as np

    tmp = tempfile.mkdtemp()
    print(f"top-k search, N queries x N corpus, {args.dims} dims, float32, cosine")
    print(f"{'N':>7} {'method':<16} {'seconds':>9} {'traced peak MB':>15} {'= copies (N·d)':>15} {'+ working':>10} {'max RSS MB':>11}")
    rows = {}
    for n in sorted(set(sizes) | set(dense_sizes)):
        for method, k in (("blocked", 10), ("blocked", 1), ("dense-argmax", 1)):
            if method == "blocked" and n not in sizes or method == "dense-argmax" and n not in dense_sizes:
                continue
            out = f"{tmp}/{method}-{k}-{n}.npy"
            r = run(method.split("-")[0], n, k, args.dims, out)
            rows[(n, method, k)] = (r, out)
            label = f"{method} k={k}"
            if "error" in r:
                print(f"{n:>7} {label:<16} failed: {r['error']}")
                continue
            print(f"{n:>7} {label:<16} {r['seconds']:>9.2f} {r['peak_mb']:>15.1f} {r['copies_mb']:>15.1f} "
                  f"{r['peak_mb'] - r['copies_mb']:>10.1f} {r['maxrss_mb']:>11.0f}")
    print("\nratios (blocked / dense, same run):")
    for n in sorted(dense_sizes):
        d = rows.get((n, "dense-argmax", 1))
        for k in (1, 10):
            b = rows.get((n, "blocked", k))
            if not d or not b or "error" in d[0] or "error" in b[0]:
                continue
            same = np.mean(np.load(b[1]) == np.load(d[1]))
            print(f"  N={n:>6} k={k:<2}: time x{b[0]['seconds'] / d[0]['seconds']:.2f}, traced peak "
                  f"x{b[0]['peak_mb'] / d[0]['peak_mb']:.3f}, working memory "
                  f"x{(b[0]['peak_mb'] - b[0]['copies_mb']) / (d[0]['peak_mb'] - d[0]['copies_mb']):.3f}, "
                  f"top-1 agreement with dense argmax {same:.5f}")
    blocked = [(n, rows[(n, "blocked", 10)][0]) for n in sorted(sizes) if "error" not in rows[(n, "blocked", 10)][0]]
    if len(blocked) >= 2:
        (n0, r0), (n1, r1) = blocked[0], blocked[-1]
        w0, w1 = r0["peak_mb"] - r0["copies_mb"], r1["peak_mb"] - r1["copies_mb"]
        print(f"\nblocked k=10 memory growth N={n0} -> N={n1} (x{n1 / n0:.1f} N, x{(n1 / n0) ** 2:.1f} N^2): "
              f"traced peak x{r1['peak_mb'] / r0['peak_mb']:.2f}, working memory x{w1 / w0:.2f}; "
              f"time x{r1['seconds'] / r0['seconds']:.2f} (the work grows as N^2)")
        dense_mb = {n: rows[(n, "dense-argmax", 1)][0]["peak_mb"]
                    for n in dense_sizes if "error" not in rows.get((n, "dense-argmax", 1), ({"error": 1},))[0]}
        if dense_mb:
            n_d = max(dense_mb)
            print(f"dense argmax at N={n1} would need about {dense_mb[n_d] * (n1 / n_d) ** 2:,.0f} MB (N^2 from N={n_d})")


if __name__ == "__main__":
    main()
