"""Benchmark the scale-out grid: serial vs loky (2 workers) vs a 2-worker Dask LocalCluster, and an API model.

    python bench/bench_grid.py                  # the full offline grid (every available offline model x 4 datasets)
    python bench/bench_grid.py --max-concepts 40 --n-boot 200 --no-csc   # a quick look

Part 1 - the full offline grid (models x bundled datasets x metrics sa, retrieval, csc) run three
ways in one process, each measured twice:
  * cold: an empty cache of its own (model loading + embedding + metrics), and
  * warm: the same grid again with force=True on that now-filled cache (metrics only; no model loads).
Ratios are against the serial run of the same kind (cold vs cold, warm vs warm).  Results must be
identical across backends (checked).

Part 2 - an API model (an OpenAI-compatible server on 127.0.0.1 serving use-multilingual) on one
dataset after half of its words were cached: HTTP requests and texts sent vs words needed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd

import semanscope_nb as snb


def run_config(name, backend, n_jobs, root: Path, common: dict) -> dict:
    cache, out = root / f"cache-{name}", root / f"results-{name}"
    t0 = time.perf_counter()
    cold = snb.run_grid(**common, backend=backend, n_jobs=n_jobs, cache=cache, out_dir=out)
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm = snb.run_grid(**common, backend=backend, n_jobs=n_jobs, cache=cache, out_dir=out, force=True)
    t_warm = time.perf_counter() - t0
    assert not cold.failures and not warm.failures, (cold.failures, warm.failures)
    ph = ", ".join(f"{k} {v:.1f} s" for k, v in cold.phase_seconds.items())
    print(f"  {name:<13} cold {t_cold:7.1f} s ({ph})   warm {t_warm:7.1f} s", flush=True)
    return {"name": name, "backend": cold.backend, "cold_s": t_cold, "warm_s": t_warm, "jobs": len(cold.records),
            "texts_embedded_cold": cold.n_encoded, "texts_embedded_warm": warm.n_encoded, "table": cold.table}


class _Server:
    """OpenAI /v1/embeddings served by a local model; counts requests and texts."""

    def __init__(self, model_id: str, key: str) -> None:
        self.requests = 0
        self.texts = 0
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                srv.requests += 1
                srv.texts += len(req["input"])
                if self.headers.get("Authorization") != f"Bearer {key}":
                    self.send_response(401)
                    self.end_headers()
                    return
                vecs = snb.load_model(model_id).encode(req["input"])
                body = json.dumps({"data": [{"embedding": v.tolist(), "index": i} for i, v in enumerate(vecs)],
                                   "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def api_run(root: Path, batch: int) -> dict:
    key = "bench-key-not-secret"
    os.environ["BENCH_API_KEY"] = key
    server = _Server("use-multilingual", key)
    try:
        snb.register_api_model("bench-api-use", base_url=server.url, model="use-multilingual", api_key_env="BENCH_API_KEY",
                               dims=512, max_batch_texts=batch, replace=True)
        ds = snb.load_dataset("conceptual-space")
        words = ds.all_texts()
        cache = snb.EmbeddingCache(root / "cache-api")
        enc = snb.load_model("bench-api-use")
        cache.embed(enc, words[: len(words) // 2])  # half the words are already cached
        est = snb.estimate_api_cost("bench-api-use", words, cache=cache)
        r0, t0 = server.requests, server.texts
        t = time.perf_counter()
        g = snb.run_grid(["bench-api-use"], [ds], metrics=["sa", "retrieval"], params={"sa": {"n_boot": 200}, "retrieval": {"n_boot": 0}},
                         cache=cache, out_dir=root / "results-api", progress=False)
        secs = time.perf_counter() - t
        assert not g.failures, g.failures
        r1, t1 = server.requests, server.texts
        g2 = snb.run_grid(["bench-api-use"], [ds], metrics=["sa", "retrieval"], params={"sa": {"n_boot": 200}, "retrieval": {"n_boot": 0}},
                          cache=cache, out_dir=root / "results-api", progress=False, force=True)
        assert not g2.failures
        return {"words_needed": len(words), "cached_before": len(words) // 2, "estimate": est.describe(),
                "estimated_requests": est.n_requests, "requests": r1 - r0, "texts_sent": t1 - t0, "seconds": secs,
                "requests_second_run": server.requests - r1, "batch": batch}
    finally:
        server.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-concepts", type=int, default=None, help="first N concepts of each dataset (default: all)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--no-csc", action="store_true", help="leave out the CSC metric")
    ap.add_argument("--csc-sentences", type=int, default=60, help="sentences per CSC corpus (seeded sample)")
    ap.add_argument("--api-batch", type=int, default=64)
    args = ap.parse_args()

    models = [m.id for m in snb.list_models(offline=True) if m.available]
    metrics = ["sa", "retrieval"] + ([] if args.no_csc else ["csc"])
    params = {"sa": {"n_boot": args.n_boot}, "retrieval": {"n_boot": 0}, "csc": {"max_sentences": args.csc_sentences, "n_boot": 200}}
    common = dict(models=models, datasets=None, metrics=metrics, max_concepts=args.max_concepts, params=params, progress=False)
    root = Path(tempfile.mkdtemp(prefix="bench-grid-"))
    print(f"models: {', '.join(models)}\nmetrics: {', '.join(metrics)}; datasets: bundled"
          f"{f' (first {args.max_concepts} concepts)' if args.max_concepts else ''}; n_boot {args.n_boot}; "
          f"{os.cpu_count()} CPUs; scratch {root}\n")
    try:
        runs = [run_config("serial", "serial", None, root, common),
                run_config("loky-2", "loky", 2, root, common),
                run_config("dask-local-2", "dask", 2, root, common)]
        base = runs[0]
        for r in runs[1:]:
            a, b = base["table"], r["table"]
            cols = [c for c in a.columns if c in b.columns and pd.api.types.is_numeric_dtype(a[c])]
            same_keys = a[["model", "dataset", "metric", "params"]].equals(b[["model", "dataset", "metric", "params"]])
            diffs = {c: float((a[c] - b[c]).abs().max()) for c in cols}
            worst = max(diffs, key=lambda c: diffs[c]) if diffs else None
            if same_keys and worst is not None and diffs[worst] == 0:
                print(f"{r['name']}: leaderboard bit-identical to serial")
            else:
                print(f"{r['name']}: same jobs {same_keys}; largest |difference| from serial {diffs.get(worst, 'n/a'):.3g} "
                      f"in column {worst} (BLAS thread counts differ: serial uses every core, workers one each)")
        print(f"{'config':<14} {'jobs':>4} {'cold s':>8} {'x serial':>8} {'warm s':>8} {'x serial':>8} {'texts embedded (cold)':>22}")
        for r in runs:
            print(f"{r['name']:<14} {r['jobs']:>4} {r['cold_s']:>8.1f} {base['cold_s'] / r['cold_s']:>7.2f}x "
                  f"{r['warm_s']:>8.1f} {base['warm_s'] / r['warm_s']:>7.2f}x {r['texts_embedded_cold']:>22}")
        print("(x serial = serial time / this time: > 1 is faster; "
              f"warm runs embedded {sum(r['texts_embedded_warm'] for r in runs)} texts)\n")

        a = api_run(root, args.api_batch)
        need = a["words_needed"] - a["cached_before"]
        print(f"API model (use-multilingual behind 127.0.0.1, batch {a['batch']}), dataset conceptual-space, metrics sa+retrieval:")
        print(f"  cost estimate printed before the run: {a['estimate']}")
        print(f"  words needed {a['words_needed']}, already cached {a['cached_before']}, so {need} to fetch")
        print(f"  HTTP requests {a['requests']} (estimated {a['estimated_requests']}; "
              f"minimum ceil({need}/{a['batch']}) = {math.ceil(need / a['batch'])}), texts sent {a['texts_sent']} "
              f"= {a['texts_sent'] / a['words_needed']:.2f} of the words needed, {a['seconds']:.1f} s")
        print(f"  second run (force=True, recomputes every metric): {a['requests_second_run']} HTTP requests")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
