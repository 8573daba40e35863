"""Benchmark of exact top-k search: ours against faiss-cpu's flat inner-product search, measured in the same run.

Run:  .venv/bin/python bench/bench_retrieval.py [--quick] [--sizes 10000 50000] [--k 10] [--bitext]

Queries and corpus are N x 384 float32 Gaussian vectors (cosine).  Each
measurement runs in a fresh subprocess, so peak memory is that run's own:
``tracemalloc`` peak (NumPy's allocations; faiss's C++ buffers are not traced)
and the process's peak RSS (``ru_maxrss``).

* faiss (the baseline): ``faiss.knn(qn, cn, k, METRIC_INNER_PRODUCT)`` on
  unit-normalised float32 copies -- what a user would write by hand.
* ours (auto): ``semanscope_nb.topk_search(q, c, k=k)`` -- float32 cosine,
  faiss underneath when installed, ties re-ordered to the index rule.
* ours (numpy): ``topk_search(..., backend="numpy")`` -- the blocked NumPy
  search (one float32 GEMM per block + chunk-minimum prefilter).
* ``--bitext``: ``bitext_retrieval(q, c, n_boot=0)`` (both directions' ranks
  from one pass over float32 blocks).

Printed: seconds, peak MB, ratios ours/faiss at every size, top-k agreement
with faiss (slots that differ must be float32 ties), and memory growth between
the smallest and largest size (must not grow as N^2).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results  # noqa: E402
from _timing import scratch_dir  # noqa: E402

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
method, n, k, dims, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(0)
q = rng.standard_normal((n, dims), dtype=np.float32)
c = q + 1.5 * rng.standard_normal((n, dims), dtype=np.float32)  # row i's gold is row i (for the bitext run)
import semanscope_nb as snb
import faiss
tracemalloc.start()
t = time.perf_counter()
if method == "faiss":
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    _, idx = faiss.knn(qn, cn, k, metric=faiss.METRIC_INNER_PRODUCT)
elif method == "ours":
    idx = snb.topk_search(q, c, k=k).indices
elif method == "numpy":
    idx = snb.topk_search(q, c, k=k, backend="numpy").indices
else:
    r = snb.bitext_retrieval(q, c, ks=(1, k), n_boot=0)
    idx = r.predictions[:, None]
secs = time.perf_counter() - t
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
np.save(out, idx)
print(json.dumps({"seconds": secs, "peak_mb": peak / 2**20, "inputs_mb": 2 * n * dims * 4 / 2**20,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(method: str, n: int, k: int, dims: int, out: str, threads: int | None = None) -> dict:
    import os

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])  # the children import this tree's semanscope_nb
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    if threads:
        env.update({v: str(threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    p = subprocess.run([sys.executable, "-c", CHILD, method, str(n), str(k), str(dims), out], capture_output=True, text=True,
                       env=env)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr else f"exit {p.returncode}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (2000, 5000) for a smoke run")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--bitext", action="store_true", help="also time bitext_retrieval (both directions)")
    ap.add_argument("--methods", nargs="+", default=["faiss", "ours", "numpy"])
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repeats (each method in a fresh process); the minimum is kept")
    ap.add_argument("--threads", type=int, default=1, help="BLAS / OpenMP threads of every child (0: the machine's default)")
    args = ap.parse_args()
    sizes = [2000, 5000] if args.quick else sorted(args.sizes)
    methods = list(args.methods) + (["bitext"] if args.bitext else [])

    import numpy as np

    tmp = str(scratch_dir("bench-retrieval-"))
    print(f"exact top-{args.k} search, N queries x N corpus, {args.dims} dims, float32, cosine")
    print(f"{'N':>7} {'method':<8} {'seconds':>9} {'traced peak MB':>15} {'inputs MB':>10} {'max RSS MB':>11}", flush=True)
    rows = {}
    for n in sizes:
        for rep in range(args.repeat):  # interleaved: faiss, ours, numpy, faiss, ours, numpy, ...
            for m in methods:
                out = f"{tmp}/{m}-{n}.npy"
                r = run(m, n, args.k, args.dims, out, args.threads or None)
                old = rows.get((n, m))
                if old is None or "error" in old[0] or ("error" not in r and r["seconds"] < old[0]["seconds"]):
                    rows[(n, m)] = (r, out)
                if "error" in r:
                    print(f"{n:>7} {m:<8} failed: {r['error']}", flush=True)
                    continue
                print(f"{n:>7} {m:<8} {r['seconds']:>9.2f} {r['peak_mb']:>15.1f} {r['inputs_mb']:>10.1f} {r['maxrss_mb']:>11.0f}"
                      f"   (repeat {rep + 1})", flush=True)
    claims = []
    print("\nratios against faiss (same run):")
    for n in sizes:
        f = rows.get((n, "faiss"))
        if not f or "error" in f[0]:
            continue
        for m in methods:
            o = rows.get((n, m))
            if m == "faiss" or not o or "error" in o[0]:
                continue
            a, b = np.load(f[1]), np.load(o[1])
            agree = np.mean(a[:, : b.shape[1]] == b) if m != "bitext" else np.mean(a[:, 0] == b[:, 0])
            print(f"  N={n:>6} {m:<8} time x{o[0]['seconds'] / f[0]['seconds']:.2f}   "
                  f"{'top-1' if m == 'bitext' else 'top-k'} slots identical to faiss: {agree:.6f}")
            what = {"ours": "`topk_search` (faiss underneath)", "numpy": "`topk_search(backend='numpy')`",
                    "bitext": "`bitext_retrieval(n_boot=0)`, both directions"}[m]
            claims.append(row(f"{what}, exact top-{args.k}, {n:,} x {n:,} x {args.dims} float32", o[0]["seconds"],
                              f[0]["seconds"], baseline_name="faiss.knn (one direction)",
                              threads=args.threads or "default", repeats=args.repeat, clock="wall",
                              note=f"{'top-1' if m == 'bitext' else 'top-k'} slots identical to faiss {agree:.6f}"))
    for m in methods:
        ok = [(n, rows[(n, m)][0]) for n in sizes if "error" not in rows[(n, m)][0]]
        if len(ok) >= 2:
            (n0, r0), (n1, r1) = ok[0], ok[-1]
            w0, w1 = r0["peak_mb"] - r0["inputs_mb"], r1["peak_mb"] - r1["inputs_mb"]
            print(f"memory growth {m:<7} N={n0} -> {n1} (x{n1 / n0:.1f} N, x{(n1 / n0) ** 2:.0f} N^2): traced peak "
                  f"x{r1['peak_mb'] / r0['peak_mb']:.2f} (beyond inputs x{w1 / max(w0, 1e-9):.2f}), "
                  f"RSS x{r1['maxrss_mb'] / r0['maxrss_mb']:.2f}; time x{r1['seconds'] / r0['seconds']:.1f}")


    if claims:
        write_results("retrieval-quick" if args.quick else "retrieval", claims, script="bench/bench_retrieval.py",
                      args=sys.argv[1:])


if __name__ == "__main__":
    main()
