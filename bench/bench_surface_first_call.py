"""A fresh process's first ``dataset_affinity`` call with the surface baseline's statistics on disk (issue 21).

Run:  .venv/bin/python bench/bench_surface_first_call.py [--before PATH] [--repeat N] [--name NAME]

Each measurement is a new Python process (a fresh kernel, the next benchmark run) that imports
``semanscope_nb`` from a tree, with the embedding cache and the surface store already filled
(``SEMANSCOPE_CACHE`` a private folder filled first, by the tree itself), and times its first
``dataset_affinity(conceptual-space, use-multilingual, n_boot=1000, seed=0)`` (wall and CPU,
one BLAS thread).  This tree (``--after``, default: the checkout holding this script) is
compared with ``--before`` (e.g. the main branch) in the same run, interleaved; the minimum of
``--repeat`` processes each.  Also counted inside the process: whether the baseline's TF-IDF
vectors were read (``embed`` of ``tfidf-char`` called).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import row, write_results

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from threadpoolctl import threadpool_limits
import semanscope_nb as snb
import semanscope_nb.models.embedded as embedded
reads = []
real = embedded.embed
def counting(ds, model, *a, **k):
    reads.append(str(model))
    return real(ds, model, *a, **k)
embedded.embed = counting
ds = snb.load_dataset("conceptual-space")
with threadpool_limits(1):
    w, c = time.perf_counter(), time.process_time()
    r = snb.dataset_affinity(ds, "use-multilingual", n_boot=1000, seed=0, progress=False)
    w, c = time.perf_counter() - w, time.process_time() - c
s = r.surface
print(json.dumps({"wall": w, "cpu": c, "tier": r.tier, "baseline_reads": reads.count("tfidf-char"),
                  "surface": [s.surface_corrected.value, *s.surface_corrected.ci, s.difference.value, *s.difference.ci]}))
"""


def run(tree: str, cache: str) -> dict:
    env = dict(os.environ, SEMANSCOPE_CACHE=cache, HF_HUB_OFFLINE="1", PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", CHILD, tree], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="/work/main", help="the tree measured as the baseline")
    ap.add_argument("--after", default=str(HERE.parent), help="the tree measured")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--name", default="surface-first-call")
    args = ap.parse_args()
    caches = {k: tempfile.mkdtemp(prefix=f"bench-surface-{k}-") for k in ("before", "after")}
    trees = {"before": args.before, "after": args.after}
    got: dict[str, list[dict]] = {"before": [], "after": []}
    try:
        for k, tree in trees.items():  # fill each tree's own cache and store (embeddings, the baseline's statistics)
            run(tree, caches[k])
        for _ in range(args.repeat):
            for k, tree in trees.items():
                got[k].append(run(tree, caches[k]))
    finally:
        for folder in caches.values():
            shutil.rmtree(folder, ignore_errors=True)
    for k in trees:
        print(k, json.dumps(got[k]))
    assert got["before"][0]["surface"] == got["after"][0]["surface"], "the same numbers in both trees"
    best = {k: {clock: min(g[clock] for g in got[k]) for clock in ("wall", "cpu")} for k in trees}
    shape = "USE, conceptual-space 481 x 6, 1000 resamples, warm embedding cache, surface store filled"
    note = (f"baseline vectors read: before {got['before'][0]['baseline_reads']}, after {got['after'][0]['baseline_reads']}; "
            f"tier {got['after'][0]['tier']}; the same surface numbers in both trees")
    rows = [row(f"`dataset_affinity`, a fresh process's first call ({clock} time), {shape}", best["after"][clock],
                best["before"][clock], baseline_name=f"the same call in a fresh process of {args.before}", threads=1,
                repeats=args.repeat, clock=clock, note=note) for clock in ("wall", "cpu")]
    write_results(args.name, rows, script="bench_surface_first_call.py", args=sys.argv[1:])


if __name__ == "__main__":
    main()
