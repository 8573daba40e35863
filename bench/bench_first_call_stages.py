"""Where a first ``dataset_affinity`` call goes: CPU and wall time per stage, against a plain SA bootstrap.

Run:  .venv/bin/python bench/bench_first_call_stages.py [--tree PATH] [--repeat N] [--profile N]

USE on conceptual-space (481 concepts x 6 languages), 1000 resamples, seed 0, one BLAS thread, from the warm
cache, as the process's first call (the surface baseline's statistics forgotten in memory, read from the on-disk
store: what ``bench_fused_verdict.py``'s first row measures).  Each stage is a function of the package wrapped
by a timer (``time.process_time`` and ``time.perf_counter``, inclusive of what it calls: indented rows are parts
of the row above them); each figure is the minimum over ``--repeat`` calls, and the plain SA + 1000-resample
bootstrap (``bench_fused_verdict.plain_sa_bootstrap``'s code) is timed after each call, so "x plain" is a ratio
within one run.  ``--profile N``: also print cProfile's N most expensive functions (own time) of one more call.
Prints only (no results file): a table for bench/README.md's notes, not a claim.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--tree", default=str(HERE.parent), help="the checkout whose semanscope_nb is measured")
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--profile", type=int, default=0, help="also print cProfile's N top functions by own time")
ARGS = ap.parse_args()
sys.path.insert(0, ARGS.tree)

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import semanscope_nb as snb  # noqa: E402
from semanscope_nb.metrics import affinity, chance  # noqa: E402
from semanscope_nb.metrics import spreads as spreads_module  # noqa: E402
from semanscope_nb.runs import task_library, tasks  # noqa: E402

#: (module, function name, row label): the stages, in the order a call reaches them; two leading spaces per level
STAGES = [
    (tasks, "prepare", "model vectors from the cache (`tasks.prepare`)"),
    (task_library, "aligned_words", "`aligned_words`"),
    (task_library, "_surface_words", "the surface baseline's words (`_surface_words`)"),
    (task_library, "unknown_words", "`unknown_words`"),
    (affinity, "affinity_of_words", "`affinity_of_words`"),
    (affinity, "_point_scores", "  the point (`_point_scores`)"),
    (affinity, "_language_centred_sa", "  language-centred SA"),
    (affinity, "_artefact_exclusion", "  artefact rows (`_artefact_exclusion`)"),
    (affinity, "verdict_bootstrap", "  verdict bootstrap (`verdict_bootstrap`)"),
    (chance, "null_aware_statistics", "    all concepts (`null_aware_statistics`: spreads + null)"),
    (chance, "subset_statistics", "    artefact-free concepts (`subset_statistics`)"),
    (chance, "null_inter", "    the closed-form null (`null_inter`, both sets)"),
    (affinity, "_permutation_gate", "  permutation gate (`_permutation_gate`)"),
    (affinity, "_gate_point", "    the kept concepts' point (`_gate_point`)"),
    (chance, "row_mean_grams", "    Gram matrices (`row_mean_grams`)"),
    (chance, "shuffled_inter_cosines", "    gathers (`shuffled_inter_cosines`)"),
]
ACC: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])


def _timed(fn, label):
    def run(*args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            a = ACC[label]
            a[0] += time.perf_counter() - w
            a[1] += time.process_time() - c
            a[2] += 1
    return run


def _wrap() -> None:
    for module, name, label in STAGES:
        fn = getattr(module, name, None)
        if fn is None:  # a tree without this function
            continue
        timed = _timed(fn, label)
        for m in (module, tasks, task_library, affinity, chance):  # every module that imported it by name
            if getattr(m, name, None) is fn:
                setattr(m, name, timed)
    init = spreads_module.Spreads.__init__
    spreads_module.Spreads.__init__ = _timed(init, "  `Spreads` construction")


def plain_sa_bootstrap(aw, n_boot: int):
    """bench_fused_verdict.py's baseline: SA (cosine, Euclidean) on n_boot multinomial resamples, percentile intervals."""
    s = spreads_module.Spreads(aw)
    out = []
    for c in chance.resample_counts(aw.n_rows, n_boot, seed=0, batch=s.bootstrap_batch(n_boot)):
        r = s.spreads(c, scaled=True)
        out.append(np.stack([r["intra_cos"] / (r["intra_cos"] + r["inter_cos"]), r["intra_euc"] / (r["intra_euc"] + r["inter_euc"])]))
    return np.quantile(np.concatenate(out, axis=1), [0.025, 0.975], axis=1)


def main() -> int:
    ds = snb.load_dataset("conceptual-space")
    aw = task_library.aligned_words(snb.embed(ds, "use-multilingual", progress=False))

    def first_call():
        getattr(chance, "_SURFACE_DONE", {}).clear()  # as a fresh process: the statistics from the on-disk store
        return snb.dataset_affinity(ds, "use-multilingual", n_boot=1000, seed=0, progress=False)

    first_call()  # warm: caches, lazy imports, the store filled
    _wrap()
    best: dict[str, list[float]] = {}
    with threadpool_limits(1):
        first_call()
        for _ in range(ARGS.repeat):
            ACC.clear()
            w, c = time.perf_counter(), time.process_time()
            first_call()
            ACC["dataset_affinity (first call)"] = [time.perf_counter() - w, time.process_time() - c, 1]
            call = {label: list(v) for label, v in ACC.items()}  # (before the baseline's own Spreads is timed)
            w, c = time.perf_counter(), time.process_time()
            plain_sa_bootstrap(aw, 1000)
            plain = [time.perf_counter() - w, time.process_time() - c, 1]
            for label, v in list(call.items()) + [("plain SA + 1000 bootstrap (baseline)", plain)]:
                if label not in best or v[1] < best[label][1]:
                    best[label] = list(v)
        base = best["plain SA + 1000 bootstrap (baseline)"][1]
        load = os.getloadavg()
        print(f"tree {Path(ARGS.tree).name}; one BLAS thread; min of {ARGS.repeat}; load average {load[0]:.1f}")
        print("| stage | CPU ms | wall ms | calls | CPU x plain |\n|---|---|---|---|---|")
        order = ["dataset_affinity (first call)"] + [label for _, _, label in STAGES[:5]] + ["  `Spreads` construction"] + \
            [label for _, _, label in STAGES[5:]] + ["plain SA + 1000 bootstrap (baseline)"]
        for label in order:
            if label in best:
                w, c, n = best[label]
                print(f"| {label.replace('  ', '&nbsp;&nbsp;')} | {c * 1e3:.1f} | {w * 1e3:.1f} | {n} | {c / base:.2f} |")
        if ARGS.profile:
            prof = cProfile.Profile()
            prof.enable()
            first_call()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(ARGS.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
