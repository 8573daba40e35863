"""Cold vs warm `benchmark` run: every offline model x every bundled dataset.

Run:  .venv/bin/python bench/bench_cache.py [--max-concepts N]

Cold: empty cache, fresh results folder.  Warm: same cache, results recomputed
(``force=True``), so the only difference is the embedding cache; the warm run
must make zero encoder calls.  Resumed: finished jobs read back from
``results/runs``.  Also reports texts embedded vs (concepts x languages), the
per-word cache's saving.
"""

from __future__ import annotations

import argparse
import json
import time

from _timing import scratch_dir  # bench/ is the script's folder: on sys.path

import semanscope_nb as snb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-concepts", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    tmp = scratch_dir("bench-cache-")
    cache = snb.EmbeddingCache(tmp / "cache")
    kw = dict(n_boot=args.n_boot, cache=cache, out_dir=tmp / "results", max_concepts=args.max_concepts)
    t = time.perf_counter()
    cold = snb.run_benchmark(**kw)
    t_cold = time.perf_counter() - t
    t = time.perf_counter()
    warm = snb.run_benchmark(**kw, force=True)
    t_warm = time.perf_counter() - t
    t = time.perf_counter()
    resumed = snb.run_benchmark(**kw)
    t_resumed = time.perf_counter() - t
    texts = sum(r.provenance["embedding"]["n_unique"] for r in cold.results.values())
    cells = sum(sum(len(c) for row in snb.load_dataset(d).rows for c in row) for d in {k[1] for k in cold.results})
    models = sorted({k[0] for k in cold.results})
    print(f"grid: {len(models)} models x {len(cold.results) // max(1, len(models))} datasets = {len(cold.results)} jobs, n_boot={args.n_boot}")
    print(f"cold   {t_cold:8.1f} s   encoder calls {cold.total_encoder_calls}")
    print(f"warm   {t_warm:8.1f} s   encoder calls {warm.total_encoder_calls}   cold/warm = {t_cold / t_warm:.1f}x")
    print(f"resume {t_resumed:8.1f} s   encoder calls {resumed.total_encoder_calls}   cold/resume = {t_cold / t_resumed:.1f}x")
    print(f"cache entries {cache.count()}; unique texts per dataset summed over jobs {texts}; "
          f"word cells (alternatives counted) per model {cells}")
    print("per-model encoder calls (cold):", json.dumps(cold.encoder_calls))
    if cold.failures:
        print("FAILURES:", cold.failures)


if __name__ == "__main__":
    main()
