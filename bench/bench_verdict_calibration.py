"""The verdict's false-positive rate on random data: how often does pure noise earn an above-chance tier?

Run:  .venv/bin/python bench/bench_verdict_calibration.py [--seeds 1000] [--n-boot 200]

For each seed, random Gaussian vectors for ``--languages`` languages and a small
number of concepts (cycling through ``--sizes``): no language knows any other, so
every "above chance" is a false positive.  Measured in this run, per size and overall:

* the interval rule alone: the lower end of the gap's 95% interval above 0 (nominal
  one-sided rate 2.5%: a two-sided 95% interval leaves 2.5% above);
* the verdict's rule: the interval *and* the effect-size floor
  (``chance-corrected score >= MIN_CORRECTED``), i.e. ``result.tier`` not
  'chance' / 'below chance';
* the permutation test's rate at one-sided p < 0.025 (the same data, ``n_perm``
  shuffles), the reference a liberal bootstrap would be replaced by.

Prints nominal vs measured with a binomial 95% interval for each rate.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import scipy.sparse as sp

from semanscope_nb.metrics.affinity import affinity_of_words
from semanscope_nb.metrics.chance import MIN_CORRECTED, permutation_test
from semanscope_nb.metrics.spreads import AlignedWords


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% interval of a binomial proportion k / n."""
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--n-perm", type=int, default=199)
    ap.add_argument("--sizes", default="10,20,40")
    ap.add_argument("--languages", type=int, default=2)
    ap.add_argument("--dims", type=int, default=16)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    langs = tuple(f"l{k}" for k in range(args.languages))
    counts = {R: {"n": 0, "interval": 0, "verdict": 0, "perm": 0} for R in sizes}
    for seed in range(args.seeds):
        R = sizes[seed % len(sizes)]
        rng = np.random.default_rng(seed)
        eye = sp.identity(R, format="csr")
        aw = AlignedWords(langs, tuple(rng.normal(size=(R, args.dims)) for _ in langs), (eye,) * len(langs),
                          tuple(map(str, range(R))))
        r = affinity_of_words(aw, n_boot=args.n_boot, seed=seed, language_centred=False)
        c = counts[R]
        c["n"] += 1
        c["interval"] += bool(r.chance.delta.ci[0] > 0)
        c["verdict"] += r.tier not in ("chance", "below chance")
        c["perm"] += permutation_test(aw, n_perm=args.n_perm, seed=seed).p_value < 0.025
    print(f"random vectors, {args.languages} languages x {args.dims} dims, n_boot={args.n_boot}, n_perm={args.n_perm}, "
          f"{args.seeds} seeds; effect-size floor MIN_CORRECTED={MIN_CORRECTED}")
    print(f"{'concepts':>8} {'seeds':>6} {'rule':<34} {'nominal':>8} {'measured':>9} {'95% CI':>17}")
    total = {k: 0 for k in ("n", "interval", "verdict", "perm")}
    for R, c in list(counts.items()) + [("all", None)]:
        if c is None:
            c = total
        else:
            for k in total:
                total[k] += c[k]
        for key, name in (("interval", "gap interval above 0 (bootstrap)"), ("verdict", "verdict tier (interval + floor)"),
                          ("perm", "permutation p < 0.025")):
            lo, hi = wilson(c[key], c["n"])
            print(f"{R!s:>8} {c['n']:>6} {name:<34} {0.025:>8.3f} {c[key] / c['n']:>9.3f} [{lo:.3f}, {hi:.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
