"""How light ``import semanscope_nb`` is: time and memory against importing the stack it stands on.

Run:  .venv/bin/python bench/bench_import.py [--quick] [--repeat 7]

Each import runs in a fresh interpreter (``python -c``), the contenders interleaved, the minimum over the
repeats taken: the import's wall and CPU time (measured inside the child around the import statement) and
the child's peak RSS minus a bare interpreter's.  Baselines: numpy + pandas + scipy.sparse (what the package
needs at import) and numpy + pandas + scipy.sparse + scipy.stats.  Also lists which heavy optional
dependencies the import loaded (none expected: they load on first use).
Writes bench/results/import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, resource, sys, time
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
exec(sys.argv[1])
wall, cpu = time.perf_counter() - t, time.process_time() - c
heavy = sorted({m.split('.')[0] for m in sys.modules} & {"altair", "torch", "sklearn", "statsmodels", "opencc", "umap",
                "phate", "ipywidgets", "langcodes", "language_data", "joblib", "faiss", "numba"})
print(json.dumps({"wall": wall, "cpu": cpu, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base,
                  "modules": len(sys.modules), "heavy": heavy}))
"""
CONTENDERS = {
    "semanscope_nb": "import semanscope_nb",
    "numpy + pandas + scipy.sparse": "import numpy, pandas, scipy.sparse",
    "numpy + pandas + scipy.sparse + scipy.stats": "import numpy, pandas, scipy.sparse, scipy.stats",
}


def child(stmt: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", CHILD, stmt], capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="3 repeats")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    for stmt in CONTENDERS.values():  # warm the .pyc files and the OS file cache first
        child(stmt)
    best: dict[str, dict] = {}
    for _ in range(repeat):
        for name, stmt in CONTENDERS.items():
            r = child(stmt)
            b = best.setdefault(name, {k: float("inf") for k in ("wall", "cpu", "rss_kb")})
            for k in ("wall", "cpu", "rss_kb"):
                b[k] = min(b[k], r[k])
            b["heavy"], b["modules"] = r["heavy"], r["modules"]
    for name, b in best.items():
        print(f"{name:45s} wall {b['wall']:.3f} s  CPU {b['cpu']:.3f} s  +RSS {b['rss_kb'] / 1024:.1f} MiB  "
              f"modules {b['modules']}  heavy {b['heavy']}")
    me = best["semanscope_nb"]
    rows = []
    for base in list(CONTENDERS)[1:]:
        b = best[base]
        rows.append(row(f"`import semanscope_nb` CPU time vs {base}", me["cpu"], b["cpu"], baseline_name=base, threads="n/a",
                        repeats=repeat, clock="cpu", note=f"heavy optional modules loaded: {me['heavy'] or 'none'}"))
        rows.append(row(f"`import semanscope_nb` memory (peak RSS added) vs {base}", me["rss_kb"] / 1024, b["rss_kb"] / 1024,
                        unit="MiB", baseline_name=base, threads="n/a", repeats=repeat, clock="rss"))
    write_results("import", rows, script="bench/bench_import.py", args=argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
