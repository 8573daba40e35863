"""Benchmark: Concept Separation Curves.

1. KDE + overlap for 10,000 similarities per curve on 2,001 grid points: the
   toolkit's route (``method="auto"``: the CSC bootstrap's fine-bin FFT, one
   truth with the CSC point; beside it the per-curve binned / windowed KDE) against a direct ``scipy.stats.gaussian_kde(...).evaluate``
   on the grid (time, ratio, overlap difference), for three shapes of data.
2. Sentence perturbation + embedding throughput with a warm cache
   (sentences/s), against a cold cache in the same run.
3. The 1,000-resample BCa bootstrap of (overlap, separation): the vectorised
   statistic (one batched FFT per 500 resamples) against the one-resample loop
   it replaced (``vectorized=False``, one KDE pair per resample), on
   synthetic similarities shaped like USE's, for 160 and 400 sentences.

Run: ``python bench/bench_csc.py`` (``--quick`` for a smaller run).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import scipy.stats
from _timing import best_of

import semanscope_nb as snb


def direct_overlap(f: np.ndarray, n: np.ndarray, resolution: int = 2001) -> float:
    grid = np.linspace(-1, 1, resolution)
    df = scipy.stats.gaussian_kde(f)(grid)
    dn = scipy.stats.gaussian_kde(n)(grid)
    return float(np.minimum(df / df.sum(), dn / dn.sum()).sum())


def bench_kde(n: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    shapes = {
        "sentence-encoder-like (fuzz ~0.98±0.02, neg ~0.90±0.05)": (rng.normal(0.98, 0.02, n), rng.normal(0.90, 0.05, n)),
        "wide (0.5±0.2 vs 0.3±0.25)": (rng.normal(0.5, 0.2, n), rng.normal(0.3, 0.25, n)),
        "narrow (0.995±0.002 vs 0.99±0.004)": (rng.normal(0.995, 0.002, n), rng.normal(0.99, 0.004, n)),
    }
    print(f"KDE + overlap, {n:,} similarities per curve, 2,001 grid points (best of {repeat})")
    from semanscope_nb.metrics.csc.kde import kde_curves

    print(f"{'data':58s} {'direct scipy':>13s} {'toolkit':>10s} {'route':>20s} {'speed-up':>9s} {'|overlap diff|':>15s}"
          f" {'per-curve KDE':>14s} {'its diff':>9s}")
    for name, (f, g) in shapes.items():
        f, g = np.clip(f, -1, 1), np.clip(g, -1, 1)
        t_direct = best_of(lambda: direct_overlap(f, g), repeat)
        t_fast = best_of(lambda: snb.csc_overlap(f, g), repeat)
        diff = abs(direct_overlap(f, g) - snb.csc_overlap(f, g))
        route = "/".join(snb.csc_curves(f, g).routes)
        # the per-curve binned / windowed KDE (csc_curves' default before it took the bootstrap's route), same run
        t_kde = best_of(lambda: kde_curves(f, g, resolution=2001, bandwidth=None, method="auto").overlap, repeat)
        d_kde = abs(direct_overlap(f, g) - kde_curves(f, g, resolution=2001, bandwidth=None, method="auto").overlap)
        print(f"{name:58s} {t_direct * 1000:10.1f} ms {t_fast * 1000:7.2f} ms {route:>20s} {t_direct / t_fast:8.0f}x {diff:15.2e}"
              f" {t_kde * 1000:11.2f} ms {d_kde:9.1e}")


def bench_pipeline(max_sentences: int | None, model: str) -> None:
    corpus = snb.load_sentence_corpus("csc-everyday-en").sample(max_sentences, seed=0)
    with tempfile.TemporaryDirectory() as d:
        cache = snb.EmbeddingCache(d)
        t = time.perf_counter()
        perts = snb.perturb_corpus(corpus.sentences, language="en")
        t_perturb = time.perf_counter() - t
        t = time.perf_counter()
        snb.concept_separation(corpus, model, n_boot=0, cache=cache, progress=False)
        t_cold = time.perf_counter() - t
        t = time.perf_counter()
        warm = snb.concept_separation(corpus, model, n_boot=0, cache=cache, progress=False)
        t_warm = time.perf_counter() - t
        t = time.perf_counter()
        snb.concept_separation(corpus, model, n_boot=1000, cache=cache, progress=False)
        t_boot = time.perf_counter() - t
    n = len(corpus)
    print(f"\nPerturbation + embedding, {model} on {n} sentences ({len(perts)} variants, X=3)")
    print(f"  perturbation alone:                 {t_perturb * 1000:8.1f} ms   ({n / t_perturb:,.0f} sentences/s)")
    print(f"  perturb + embed + curves, cold cache: {t_cold:8.2f} s    ({n / t_cold:,.0f} sentences/s)")
    print(f"  perturb + embed + curves, warm cache: {t_warm:8.2f} s    ({n / t_warm:,.0f} sentences/s; "
          f"{t_cold / t_warm:.0f}x the cold run; encoded {warm.provenance['embedding']['n_encoded']} texts)")
    print(f"  the same with a 1,000-resample BCa bootstrap (warm): {t_boot:6.2f} s")


def loop_bootstrap(fz, fs, ng, ns, n_sentences, n_boot=1000, seed=0):
    """The previous implementation: scipy.stats.bootstrap calling the one-resample statistic per resample."""
    from semanscope_nb.metrics.csc.separation import _stats_for

    def statistic(idx):
        c = np.bincount(idx.astype(np.int64), minlength=n_sentences)
        return np.array(_stats_for(np.repeat(fz, c[fs]), np.repeat(ng, c[ns]), 2001, None, "auto"))

    res = scipy.stats.bootstrap((np.arange(n_sentences),), statistic, vectorized=False, n_resamples=n_boot,
                                method="BCa", rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low[0]), float(res.confidence_interval.high[0]))


def bench_bootstrap(repeat: int) -> None:
    from semanscope_nb.metrics.csc.separation import _bootstrap

    print("\nBCa bootstrap, 1,000 resamples (+ jackknife), USE-like similarities, X = 3")
    print(f"{'sentences':>10s} {'loop (before)':>14s} {'vectorised':>11s} {'speed-up':>9s} {'|CI bound diff|':>16s}")
    rng = np.random.default_rng(0)
    for n in (160, 400):
        fs = ns = np.repeat(np.arange(n), 3)
        fz = np.clip(rng.normal(0.985, 0.01, fs.size), -1, 1)
        ng = np.clip(rng.normal(0.93, 0.04, ns.size), -1, 1)
        ci_new = _bootstrap(fz, fs, ng, ns, n, n_boot=1000, seed=0, confidence=0.95, method="BCa", resolution=2001,
                            bandwidth=None, kde_method="auto")[0]
        ci_old = loop_bootstrap(fz, fs, ng, ns, n)
        t_old = best_of(lambda: loop_bootstrap(fz, fs, ng, ns, n), repeat)
        t_new = best_of(lambda: _bootstrap(fz, fs, ng, ns, n, n_boot=1000, seed=0, confidence=0.95, method="BCa",
                                           resolution=2001, bandwidth=None, kde_method="auto"), repeat)
        diff = max(abs(a - b) for a, b in zip(ci_new, ci_old))
        print(f"{n:10d} {t_old:12.2f} s {t_new:9.2f} s {t_old / t_new:8.1f}x {diff:16.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and sentences")
    ap.add_argument("--model", default="use-multilingual")
    args = ap.parse_args()
    bench_kde(10_000, 2 if args.quick else 5)
    bench_pipeline(40 if args.quick else None, args.model)
    bench_bootstrap(1 if args.quick else 2)


if __name__ == "__main__":
    main()
