"""Benchmarks of the null-aware statistics, as ratios to the SA bootstrap itself.

Run:  .venv/bin/python bench/bench_verdicts.py [--quick]

On conceptual-space (481 concepts x 6 languages, with `|` alternatives), with the
real offline models embedded through the cache (first run embeds; timings below
exclude embedding):

1. the SA + 1000-resample bootstrap (the baseline: ``affinity_of_words``);
2. the closed-form chance level (``chance_level``);
3. the null-aware bootstrap (SA, null, delta, corrected on the same 1000 resamples);
4. the permutation test with 1000 permutations;
5. the paired comparison of 6 models (1000 paired resamples, jackknife pseudo-values,
   10,000 sign flips per pair, Holm) -- against 6 separate SA bootstraps.

Every figure is measured in this run.
"""

from __future__ import annotations

import argparse
import sys
import time

from _results import interleaved_min, row, write_results
from _timing import best_of

import semanscope_nb as snb
from semanscope_nb.metrics.chance import chance_level, null_aware_bootstrap, permutation_test
from semanscope_nb.metrics.compare import compare_models
from semanscope_nb.runs.evaluate import aligned_words

MODELS = ["use-multilingual", "multilingual-e5-small", "wordllama-l2-supercat", "tfidf-char", "random-null", "all-minilm-l6-v2"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="100 resamples / permutations instead of 1000")
    args = ap.parse_args(argv)
    n = 100 if args.quick else 1000
    ds = snb.load_dataset("conceptual-space")
    known = {m.id for m in snb.list_models()}
    models = [m for m in MODELS if m in known]
    aws = {}
    for m in models:
        try:
            vectors, _, _ = snb.embed_dataset(ds, m)
        except Exception as exc:  # a model whose extra is missing is skipped, and said
            print(f"skip {m}: {exc}", file=sys.stderr)
            continue
        aws[m] = aligned_words(ds, vectors)
    aw = aws["use-multilingual"]
    print(f"conceptual-space: {aw.n_rows} concepts x {len(aw.languages)} languages; models: {', '.join(aws)}")
    t_sa = best_of(lambda: snb.metrics.affinity.affinity_of_words(aw, n_boot=n, seed=0), 3)
    rows = [("SA + bootstrap (baseline)", t_sa)]
    rows.append(("closed-form chance level", best_of(lambda: chance_level(aw), 3)))
    rows.append(("null-aware bootstrap (SA, null, delta, corrected)", best_of(lambda: null_aware_bootstrap(aw, n_boot=n, seed=0), 3)))
    rows.append((f"permutation test, {n} permutations", best_of(lambda: permutation_test(aw, n_perm=n, seed=0), 1)))
    t0 = time.perf_counter()
    c = compare_models(aws, n_boot=n, n_perm=10 * n, seed=0)
    rows.append((f"paired comparison of {len(aws)} models", time.perf_counter() - t0))
    six = best_of(lambda: [snb.metrics.affinity.affinity_of_words(a, n_boot=n, seed=0) for a in aws.values()], 1)
    print(f"{'benchmark':55s} {'seconds':>9s} {'x SA bootstrap':>15s}")
    for name, t in rows:
        print(f"{name:55s} {t:9.3f} {t / t_sa:15.2f}")
    print(f"{'paired comparison vs ' + str(len(aws)) + ' separate SA bootstraps':55s} {rows[-1][1]:9.3f} {rows[-1][1] / six:15.2f}  (baseline {six:.3f} s)")
    print("\nrank bands:", c.bands)
    print(c.scores.to_string(index=False))
    # the claims of bench/README.md: interleaved, CPU time, one BLAS thread, minimum of the repeats
    from threadpoolctl import threadpool_limits

    repeat = 3
    with threadpool_limits(1):
        best = interleaved_min({
            "sa": lambda: snb.metrics.affinity.affinity_of_words(aw, n_boot=n, seed=0),
            "null": lambda: null_aware_bootstrap(aw, n_boot=n, seed=0),
            "perm": lambda: permutation_test(aw, n_perm=n, seed=0),
        }, repeat=repeat, clock="cpu")
    base = "SA + bootstrap (`affinity_of_words`, USE)"
    claims = [
        row(f"null-aware bootstrap (SA, null, delta, corrected; {n} resamples), conceptual-space 481 x 6", best["null"], best["sa"],
            baseline_name=base, threads=1, repeats=repeat, clock="cpu"),
        row(f"permutation test, {n} permutations, conceptual-space 481 x 6", best["perm"], best["sa"], baseline_name=base,
            threads=1, repeats=repeat, clock="cpu"),
    ]
    write_results("verdicts-quick" if args.quick else "verdicts", claims, script="bench/bench_verdicts.py",
                  args=argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
