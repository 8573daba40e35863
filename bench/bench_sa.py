"""Benchmarks of Semantic Affinity: bootstrap speed, point-SA speed at scale, bootstrap memory.

Run:  .venv/bin/python bench/bench_sa.py [--quick]

1. SA + 1000-resample bootstrap, 349 concepts x 2 languages x 512 dims, against
   (a) recomputing every resample with scipy's ``pdist`` (the same statistic:
   pairs of drawn rows holding different concepts), timed on a slice of the
   resamples and scaled to 1000, and (b) the floor: one float64 matrix product
   (resamples x concepts) @ (concepts x dims).
2. Point SA for 200,000 concepts x 3 languages x 384 dims, float32 and float64
   embeddings, each in a fresh subprocess: the SA core (``Spreads``, the point
   spreads and the chance level) and ``semantic_affinity(..., n_boot=0)`` end to
   end, against a single pass over the data -- every block read once and its
   row norms computed, in blocks of the size the fused pass uses -- timed in the
   same process, interleaved, best of 3.  Peak memory (tracemalloc, which sees
   NumPy's allocations) relative to the embeddings' own size.
3. Memory of the 1000-resample bootstrap at 50,000 concepts x 3 languages x 384
   dims (float32): peak beside the embeddings for the multinomial bootstrap
   (``null_aware_bootstrap``, what ``affinity_of_words`` runs for
   method="percentile") with its default batch (``Spreads.bootstrap_batch``: a budget of
   half the embeddings' size) and with the fixed 64 MiB batch it used before, against
   the index-array bootstrap (``scipy.stats.bootstrap`` with vectorised index
   arrays and ``affinity_of_words``' batch rule, what method="basic"/"BCa" runs),
   each in a fresh subprocess.
Every figure is measured in this run; nothing is copied from elsewhere.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
from _timing import best_of, sa_floor_case
from scipy.spatial.distance import pdist

import semanscope_nb as snb


def pdist_resample(E: dict[str, np.ndarray], idx: np.ndarray) -> tuple[float, float]:
    """SA (cosine, Euclidean) of one resample, recomputed from scratch with pdist."""
    n = idx.size
    same = pdist(idx[:, None].astype(float), "cityblock") == 0  # pairs drawing the same concept
    intra_c, intra_e = [], []
    for X in E.values():
        Xr = X[idx]
        intra_c.append(pdist(Xr, "cosine")[~same].mean())
        intra_e.append(np.sqrt(pdist(Xr, "sqeuclidean")[~same].mean()))
    langs = list(E.values())
    inter_c, inter_e = np.zeros(n), np.zeros(n)
    k = 0
    for i in range(len(langs)):
        for j in range(i + 1, len(langs)):
            a, b = langs[i][idx], langs[j][idx]
            inter_c += 1 - np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            inter_e += np.sum((a - b) ** 2, axis=1)
            k += 1
    ic, ie = np.mean(intra_c), np.mean(intra_e)
    return ic / (ic + np.mean(inter_c / k)), ie / (ie + np.mean(np.sqrt(inter_e / k)))


def bootstrap_bench(n_slice: int) -> dict:
    R, d, B = 349, 512, 1000
    E, C, X, rng = sa_floor_case(R, d, B)
    snb.semantic_affinity(E, n_boot=B, seed=0), C @ X  # warm-up: BLAS threads, lazy imports
    ours = best_of(lambda: snb.semantic_affinity(E, n_boot=B, seed=0), repeat=10)
    floor = best_of(lambda: C @ X, repeat=10)
    idx = rng.integers(0, R, size=(n_slice, R))
    t = time.perf_counter()
    base_vals = [pdist_resample(E, row) for row in idx]
    baseline = (time.perf_counter() - t) * B / n_slice
    # the two routes compute the same statistic: check on the sliced resamples
    import scipy.sparse as sp

    from semanscope_nb.metrics.spreads import AlignedWords, Spreads, rows_to_counts

    aw = AlignedWords(("en", "zh"), (E["en"], E["zh"]), tuple(sp.identity(R, format="csr") for _ in range(2)), tuple(map(str, range(R))))
    s = Spreads(aw).spreads(rows_to_counts(idx, R))
    ours_vals = np.stack([snb.affinity_ratio(s["intra_cos"], s["inter_cos"]), snb.affinity_ratio(s["intra_euc"], s["inter_euc"])], axis=1)
    max_diff = float(np.abs(ours_vals - np.array(base_vals)).max())
    return {
        "shape": f"{R} concepts x 2 languages x {d} dims, {B} resamples",
        "ours_s": ours,
        "pdist_baseline_s": baseline,
        "pdist_timed_resamples": n_slice,
        "matmul_floor_s": floor,
        "speedup_vs_pdist": baseline / ours,
        "ours_over_floor": ours / floor,
        "max_abs_diff_vs_pdist": max_diff,
    }


_POINT = r"""
import json, sys, time, tracemalloc
import numpy as np, scipy.sparse as sp
import semanscope_nb as snb
from semanscope_nb.metrics import spreads as S
from semanscope_nb.metrics.chance import NullParts
R, dtype, L, d = int(sys.argv[1]), np.dtype(sys.argv[2]), 3, 384
rng = np.random.default_rng(0)
E = {f"l{k}": rng.standard_normal((R, d), dtype=np.float32).astype(dtype) for k in range(L)}
size = sum(v.nbytes for v in E.values())
aw = S.AlignedWords(tuple(E), tuple(E.values()), tuple(sp.identity(R, format="csr") for _ in E), tuple(map(str, range(R))))
rows = max(1, min(8192, getattr(S, "STREAM_BLOCK_BYTES", 2**20) // (8 * d)))

def one_pass():  # every block read once, its row norms computed
    for v in E.values():
        for a in range(0, R, rows):
            np.linalg.norm(v[a:a + rows], axis=1)

def whole():  # the previous floor: row norms of each whole array (one temporary of the array's size)
    for v in E.values():
        np.linalg.norm(v, axis=1)

def core():
    s = S.Spreads(aw)
    ones = np.ones((1, R))
    s.spreads(ones, scaled=True)
    NullParts(aw, s).inter(ones)

best = {"one_pass": 1e9, "whole": 1e9, "core": 1e9}
for _ in range(3):  # interleaved, so load from other work hits all three alike
    for name, fn in (("one_pass", one_pass), ("whole", whole), ("core", core)):
        t = time.perf_counter(); fn(); best[name] = min(best[name], time.perf_counter() - t)
tracemalloc.start(); core(); core_peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
t = time.perf_counter(); r = snb.semantic_affinity(E, n_boot=0); e2e = time.perf_counter() - t
tracemalloc.start(); snb.semantic_affinity(E, n_boot=0); e2e_peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
print(json.dumps({"concepts": R, "dtype": dtype.name, "embeddings_bytes": size, "block_rows": rows,
                  "one_pass_s": best["one_pass"], "whole_array_norm_s": best["whole"], "core_s": best["core"],
                  "end_to_end_s": e2e, "core_peak_bytes": core_peak, "end_to_end_peak_bytes": e2e_peak,
                  "sa_cosine": r.cosine.sa}))
"""

_BOOT = r"""
import json, sys, time, tracemalloc, warnings
import numpy as np, scipy.sparse as sp
from semanscope_nb.metrics.spreads import AlignedWords, Spreads, rows_to_counts, affinity_ratio
from semanscope_nb.metrics.chance import DEFAULT_MAX_BATCH_BYTES, null_aware_bootstrap
R, B, mode, L, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], 3, 384
rng = np.random.default_rng(0)
base = rng.standard_normal((R, d), dtype=np.float32)
vecs = tuple(base + rng.standard_normal((R, d), dtype=np.float32) for _ in range(L))  # aligned: SA about 0.67
aw = AlignedWords(tuple(f"l{k}" for k in range(L)), vecs, tuple(sp.identity(R, format="csr") for _ in range(L)), tuple(map(str, range(R))))
size = sum(v.nbytes for v in vecs)
out = {"mode": mode, "concepts": R, "n_boot": B, "embeddings_bytes": size}
tracemalloc.start()
t = time.perf_counter()
spreads = Spreads(aw)
if mode == "index":  # scipy.stats.bootstrap with index arrays, as affinity_of_words runs for method="basic"/"BCa"
    import scipy.stats
    def statistic(idx, axis=-1):
        s = spreads.spreads(rows_to_counts(np.asarray(idx), R), scaled=True)
        return np.stack([affinity_ratio(s["intra_cos"], s["inter_cos"]), affinity_ratio(s["intra_euc"], s["inter_euc"])])
    batch = int(max(1, min(B, 32_000_000 // (R + 2 * d))))
    res = scipy.stats.bootstrap((np.arange(R),), statistic, n_resamples=B, batch=batch, vectorized=True,
                                method="basic", rng=np.random.default_rng(0))
    out.update(batch=batch, sem=float(res.standard_error[0]))
else:  # multinomial counts: SA, chance level, gap, corrected score on the same resamples
    batch = max(1, DEFAULT_MAX_BATCH_BYTES // (8 * R)) if mode == "fixed" else None  # the default before 2026-11-26
    res = null_aware_bootstrap(aw, n_boot=B, seed=0, batch=batch, spreads=spreads)
    out.update(batch=batch if batch is not None else spreads.bootstrap_batch(B), sem=res.sa.sem, sa=res.sa.value)
out["time_s"] = time.perf_counter() - t
out["peak_bytes"] = tracemalloc.get_traced_memory()[1]
print(json.dumps(out))
"""


def _run(code: str, *args: object) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    args = ap.parse_args()
    b = bootstrap_bench(n_slice=20 if args.quick else 100)
    print("== SA + bootstrap:", b["shape"])
    print(f"  ours (vectorised, multinomial counts)     {b['ours_s'] * 1e3:9.1f} ms")
    print(f"  pdist per resample (timed {b['pdist_timed_resamples']}, scaled) {b['pdist_baseline_s'] * 1e3:9.1f} ms"
          f"   -> speed-up {b['speedup_vs_pdist']:.0f}x (target >= 100x)")
    print(f"  floor: one float64 (1000x349)@(349x512)   {b['matmul_floor_s'] * 1e3:9.2f} ms"
          f"   -> ours / floor {b['ours_over_floor']:.1f}x (target <= 10x)")
    print(f"  same statistic: max |ours - pdist| over the timed resamples = {b['max_abs_diff_vs_pdist']:.2e}")
    gb = 1 / 2**30
    n = 20_000 if args.quick else 200_000
    point = {}
    for dtype in ("float32", "float64"):
        g = point[dtype] = _run(_POINT, n, dtype)
        print(f"== point SA, {g['concepts']:,} concepts x 3 languages x 384 dims ({dtype}, {g['embeddings_bytes'] * gb:.2f} GiB)")
        print(f"  single pass (blocks of {g['block_rows']} rows, row norms) {g['one_pass_s']:.3f} s"
              f"   [whole-array norms {g['whole_array_norm_s']:.3f} s]")
        print(f"  SA core (spreads + point + chance level)  {g['core_s']:.3f} s -> {g['core_s'] / g['one_pass_s']:.2f}x the single pass"
              f" (target <= 5x); peak {g['core_peak_bytes'] / g['embeddings_bytes']:.3f}x the embeddings beside them")
        print(f"  semantic_affinity(n_boot=0) end to end    {g['end_to_end_s']:.2f} s -> {g['end_to_end_s'] / g['one_pass_s']:.1f}x;"
              f" peak {g['end_to_end_peak_bytes'] / g['embeddings_bytes']:.2f}x the embeddings beside them")
    nb = 5_000 if args.quick else 50_000
    boot = {}
    for mode in ("default", "fixed", "index"):
        boot[mode] = _run(_BOOT, nb, 200 if args.quick else 1000, mode)
    print(f"== bootstrap memory, {nb:,} concepts x 3 languages x 384 dims (float32, "
          f"{boot['index']['embeddings_bytes'] * gb:.3f} GiB), {boot['index']['n_boot']} resamples")
    names = {"default": "multinomial, default (budget) batch", "fixed": "multinomial, fixed 64 MiB batch", "index": "index arrays (scipy)"}
    for mode, r in boot.items():
        ratio = r["peak_bytes"] / r["embeddings_bytes"]
        print(f"  {names[mode]:36s} batch {r['batch']:5d}: peak beside the embeddings {r['peak_bytes'] * gb:.3f} GiB"
              f" = {ratio:.2f}x (total {1 + ratio:.2f}x; target <= 0.5x / 1.5x); {r['time_s']:.1f} s")
    print(f"  multinomial (default) / index arrays: peak {boot['default']['peak_bytes'] / boot['index']['peak_bytes']:.3f}x")
    print(json.dumps({"bootstrap": b, "point": point, "bootstrap_memory": boot}))


if __name__ == "__main__":
    main()
