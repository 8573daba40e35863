"""Benchmark (issue 21): a warm read of TF-IDF rows stored sparse (``sparse_vectors``) against the same rows stored dense.

The words of the four bundled data sets, embedded with ``tfidf-char`` and ``tfidf-word`` (their IDF fitted on each
data set, as ``semanscope benchmark`` does: the same 12,668 rows a warm benchmark reads), are put into two caches:

* measured: this version's cache (mostly-zero rows go to ``sparse_vectors``);
* baseline, same run: a cache without that table (as written before it existed: every row dense in ``vectors``).

Each repeat opens both caches afresh and reads every data set's rows through :meth:`EmbeddingCache.get`, the two
interleaved; the figure is the minimum over ``--repeat``, in CPU time of this process (one thread: sqlite and the
row checks) and in wall time.  The rows read are checked bit-equal between the two caches.  Also printed: the
size of each file.

    python bench/bench_cache_sparse.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results  # noqa: E402
from _timing import scratch_dir  # noqa: E402

import semanscope_nb as snb  # noqa: E402
from semanscope_nb.models.cache import EmbeddingCache  # noqa: E402

DATASETS = ("conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives")
MODELS = ("tfidf-char", "tfidf-word")


def fill(folder: Path, *, dense: bool) -> list[tuple[str, list[str]]]:
    """Embed every data set's words with both TF-IDF models into ``folder``; the (cache key, texts) a warm run reads."""
    cache = EmbeddingCache(folder)
    if dense:  # as a cache from before the sparse table: put() then stores every row dense
        con = sqlite3.connect(cache.path)
        con.execute("DROP TABLE sparse_vectors")
        con.commit()
        con.close()
    reads = []
    for name in DATASETS:
        ds = snb.load_dataset(name)
        texts = list(dict.fromkeys(t for lang in ds.languages for t in ds.words(lang)))
        for model in MODELS:
            enc = snb.load_model(model).prepare(texts)
            cache.embed(enc, texts, progress=False)
            reads.append((enc.cache_key, texts))
    cache.close()
    return reads


def read_all(folder: Path, reads: list[tuple[str, list[str]]]) -> tuple[float, float, list[dict]]:
    """(CPU s, wall s, what was read) of one warm read of every (key, texts) from a freshly opened cache."""
    cache = EmbeddingCache(folder, read_only=True)
    c0, w0 = time.process_time(), time.perf_counter()
    out = [cache.get(key, texts)[0] for key, texts in reads]
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    cache.close()
    return cpu, wall, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    tmp = scratch_dir("bench-cache-sparse-")
    sparse_dir, dense_dir = tmp / "sparse", tmp / "dense"
    reads = fill(sparse_dir, dense=False)
    assert fill(dense_dir, dense=True) == reads
    n_rows = sum(len(t) for _, t in reads)
    sizes = {k: (d / "embeddings.sqlite").stat().st_size for k, d in (("sparse", sparse_dir), ("dense", dense_dir))}
    runs: dict[str, list[tuple[float, float]]] = {"sparse": [], "dense": []}
    for i in range(args.repeat):
        for kind, folder in (("sparse", sparse_dir), ("dense", dense_dir)) if i % 2 == 0 else (("dense", dense_dir), ("sparse", sparse_dir)):
            cpu, wall, got = read_all(folder, reads)
            runs[kind].append((cpu, wall))
            if i == 0:
                runs.setdefault(f"{kind}-rows", got)  # type: ignore[arg-type]
    a, b = runs.pop("sparse-rows"), runs.pop("dense-rows")  # type: ignore[misc]
    for x, y in zip(a, b):
        assert x.keys() == y.keys() and all(np.array_equal(x[t].view(np.uint32), y[t].view(np.uint32)) for t in x), \
            "the sparse and dense caches give the same float32 bits"
    print(f"{n_rows} rows; files: sparse {sizes['sparse'] / 1e6:.1f} MB, dense {sizes['dense'] / 1e6:.1f} MB; bit-equal reads")
    best = {k: (min(c for c, _ in v), min(w for _, w in v)) for k, v in runs.items()}
    import os

    note = (f"{n_rows} TF-IDF rows of the 4 bundled data sets (tfidf-char + tfidf-word); files {sizes['sparse'] / 1e6:.1f} MB "
            f"vs {sizes['dense'] / 1e6:.1f} MB; reads bit-equal; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = [
        row("warm cache read of the benchmark's TF-IDF rows, stored sparse, CPU", best["sparse"][0], best["dense"][0],
            baseline_name="the same rows stored dense (a cache from before sparse_vectors)", threads=1,
            repeats=args.repeat, clock="cpu", note=note),
        row("warm cache read of the benchmark's TF-IDF rows, stored sparse, wall", best["sparse"][1], best["dense"][1],
            baseline_name="the same rows stored dense (a cache from before sparse_vectors)", threads=1,
            repeats=args.repeat, clock="wall", note=note),
    ]
    write_results("cache-sparse", rows, script="bench/bench_cache_sparse.py", args=argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
