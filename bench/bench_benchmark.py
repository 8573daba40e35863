"""Cold vs warm ``semanscope benchmark`` (what ``./scripts/run.sh`` runs), each in a fresh process.

Run:  .venv/bin/python bench/bench_benchmark.py [--quick] [--repeat 3] [--threads N] [--tree PATH --name NAME]
                                               [--n-jobs auto]

Cold: an empty embedding cache and results folder.  Warm: the same cache, a fresh results folder (every job
recomputed; zero texts embedded).  The runs are interleaved (cold 1, warm 1, cold 2, warm 2, ...; each cold
run gets its own empty cache) and each figure is the minimum over the repeats, in wall-clock time and in the
CPU time of the child process (user + system, all its threads).  ``--quick``: the first 40 concepts of each
dataset.  ``--threads``: BLAS threads of the children (OPENBLAS/OMP/MKL_NUM_THREADS); default: the machine's.
Writes bench/results/benchmark.json (see bench/_results.py).  ``--tree``: run another checkout's
``semanscope_nb`` (e.g. the main branch, for "before" rows) and ``--name`` the results file.
``--n-jobs auto`` (what ``./scripts/run.sh`` passes): every run with it, and each warm run interleaved with a
serial warm run on the same cache, for the row "warm with workers / warm serial"; the backend each run took
(its last line) goes into the rows' note.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run_once(cache: Path, out: Path, extra: list[str], env: dict[str, str], tree: Path = ROOT) -> tuple[float, float, str]:
    """(wall s, child CPU s, stdout tail) of one ``python -m semanscope_nb benchmark`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "semanscope_nb", "benchmark", "--cache-dir", str(cache), "--out", str(out),
                        "--force", *extra], capture_output=True, text=True, env=env, cwd=tree)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"benchmark failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout.strip().splitlines()[-3] if p.stdout.strip() else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the first 40 concepts of each dataset")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warm-only", action="store_true", help="one cold run to fill the cache, then only warm repeats")
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads of the benchmark processes (default: the machine's)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose semanscope_nb is measured")
    ap.add_argument("--name", default=None, help="results name (default benchmark[-quick])")
    ap.add_argument("--n-jobs", default=None, help="passed to every run (e.g. auto, as ./scripts/run.sh); warm runs then "
                    "alternate with serial warm runs")
    args = ap.parse_args(argv)
    extra = ["--max-concepts", "40"] if args.quick else []
    serial_extra = list(extra)
    if args.n_jobs:
        extra += ["--n-jobs", str(args.n_jobs)]
    tree = args.tree.resolve()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if args.threads:
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(args.threads)
    threads = args.threads or f"default ({os.cpu_count()} cores)"
    tmp = Path(tempfile.mkdtemp(prefix="bench-benchmark-"))
    cold, warm, serial = [], [], []
    try:
        for i in range(args.repeat):
            cache = tmp / f"cache{i if not args.warm_only else 0}"
            if not args.warm_only or i == 0:
                c = run_once(cache, tmp / f"cold{i}", extra, env, tree)
                cold.append(c)
                print(f"cold {i + 1}: {c[0]:.1f} s wall, {c[1]:.1f} s CPU   {c[2]}", flush=True)
            w = run_once(cache, tmp / f"warm{i}", extra, env, tree)
            warm.append(w)
            print(f"warm {i + 1}: {w[0]:.1f} s wall, {w[1]:.1f} s CPU   {w[2]}", flush=True)
            if args.n_jobs:
                one = run_once(cache, tmp / f"serial{i}", serial_extra, env, tree)
                serial.append(one)
                print(f"warm serial {i + 1}: {one[0]:.1f} s wall, {one[1]:.1f} s CPU   {one[2]}", flush=True)
            record(cold, warm, args, argv, threads, serial)  # after every pair: an interrupted run keeps what it measured
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def record(cold: list, warm: list, args: argparse.Namespace, argv: list[str] | None, threads: object,
           serial: list | None = None) -> None:
    """Write the minimum of the runs so far as bench/results/benchmark(-quick).json."""
    cw, cc = min(c[0] for c in cold), min(c[1] for c in cold)
    ww, wc = min(w[0] for w in warm), min(w[1] for w in warm)
    size = "first 40 concepts of each dataset" if args.quick else "every concept"
    if args.n_jobs:
        size += f", --n-jobs {args.n_jobs}"
    note = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end"
    if args.n_jobs:
        backends = sorted({w[2].split(" on ", 1)[1].split(";")[0] for w in warm if " on " in w[2]})
        note += f"; warm runs took: {', '.join(backends)}"
    rows = [
        row(f"warm `semanscope benchmark` ({size}), wall", ww, cw, baseline_name="cold run", threads=threads,
            repeats=len(warm), clock="wall", target="warm <= 10 s; cold/warm >= 5x (ratio <= 0.2)", note=note),
        row(f"warm `semanscope benchmark` ({size}), CPU", wc, cc, baseline_name="cold run", threads=threads,
            repeats=len(warm), clock="cpu", target="cold/warm >= 5x (ratio <= 0.2)", note=note),
    ]
    if serial:
        sw, sc = min(x[0] for x in serial), min(x[1] for x in serial)
        rows.append(row(f"warm `semanscope benchmark` ({size}) beside serial, wall", ww, sw,
                        baseline_name="the same warm run serially (one process)", threads=threads, repeats=len(warm),
                        clock="wall", target="warm <= 10 s", note=note))
        rows.append(row(f"warm `semanscope benchmark` ({size}) beside serial, CPU", wc, sc,
                        baseline_name="the same warm run serially (one process)", threads=threads, repeats=len(warm),
                        clock="cpu", note=note))
    print(f"cold/warm: {cw / ww:.2f}x wall, {cc / wc:.2f}x CPU")
    write_results(args.name or ("benchmark-quick" if args.quick else "benchmark"), rows, script="bench/bench_benchmark.py",
                  args=argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
