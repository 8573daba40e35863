"""The verdict's false-positive rate on random data: how often does pure noise earn an above-chance tier?

Run:  .venv/bin/python bench/bench_verdict_calibration.py [--seeds 1000] [--n-boot 200] [--quick]

For each seed, random Gaussian vectors (``--dims``) for a few languages and concepts
(seed ``s`` takes the ``s % k``-th of the ``k`` combinations of ``--sizes`` x
``--languages``): no language knows any other, so every "above chance" is a false
positive.  ``affinity_of_words(aw, n_boot=..., seed=s)`` is run once per seed, and
from that one run are counted, overall and per size:

* **bootstrap interval alone**: the lower end of the gap's 95% interval above 0
  (nominal one-sided rate 2.5%: a two-sided 95% interval leaves 2.5% above);
* **verdict before the permutation gate**: the interval *and* the effect-size floor
  (``corrected >= MIN_CORRECTED``), the rule before issue 19's calibration;
* **permutation test alone**: one-sided p < 0.025 (``permutation_test(aw,
  n_perm=n_boot, seed=s)``, the very test the verdict runs when the interval is above 0);
* **the gate** (:func:`~semanscope_nb.metrics.chance.above_chance_gate`): interval
  *and* permutation p, without the floor -- the significance rule being calibrated;
* **verdict now** (``result.tier`` is a paper tier): interval, permutation p and floor
  (:func:`~semanscope_nb.metrics.chance.above_chance_gate`).

Each rate is printed with its Clopper-Pearson 95% interval (``scipy.stats.binomtest``)
and written to ``bench/results/verdict-calibration[-quick].json`` (rendered into
bench/README.md by ``bench/make_readme.py``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.stats import binomtest  # Clopper-Pearson interval of a binomial proportion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's semanscope_nb, not an installed one
from _results import row, write_results  # noqa: E402

from semanscope_nb.metrics.affinity import affinity_of_words  # noqa: E402
from semanscope_nb.metrics.chance import ABOVE_CHANCE, MIN_CORRECTED, NO_TIER_LABELS, above_chance_gate, null_aware_tier, permutation_test  # noqa: E402
from semanscope_nb.metrics.degenerate import UNDETERMINED_TIER  # noqa: E402
from semanscope_nb.metrics.spreads import AlignedWords  # noqa: E402

NOMINAL = 0.025
RULES = {
    "interval": "bootstrap interval alone (gap's lower end > 0)",
    "before": "verdict before the permutation gate (interval + floor)",
    "perm": "permutation test alone (one-sided p < 0.025)",
    "gate": "interval + permutation p (the gate, no floor)",
    "after": "verdict now (interval + permutation p + floor)",
}


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval of a binomial proportion k / n."""
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def random_words(seed: int, n_concepts: int, n_languages: int, dims: int) -> AlignedWords:
    """Gaussian vectors, one word per concept and language, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    eye = sp.identity(n_concepts, format="csr")
    langs = tuple(f"l{k}" for k in range(n_languages))
    return AlignedWords(langs, tuple(rng.normal(size=(n_concepts, dims)) for _ in langs), (eye,) * n_languages,
                        tuple(map(str, range(n_concepts))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--sizes", default="12,24,48", help="concepts per seed (cycled)")
    ap.add_argument("--languages", default="2,3", help="languages per seed (cycled with the sizes)")
    ap.add_argument("--dims", type=int, default=48)
    ap.add_argument("--quick", action="store_true", help="60 seeds")
    args = ap.parse_args(argv)
    seeds = 60 if args.quick else args.seeds
    configs = list(itertools.product([int(s) for s in args.sizes.split(",")], [int(s) for s in args.languages.split(",")]))
    counts = {c: dict.fromkeys(("n", *RULES), 0) for c in configs}
    t0 = time.process_time()
    for seed in range(seeds):
        R, L = configs[seed % len(configs)]
        aw = random_words(seed, R, L, args.dims)
        r = affinity_of_words(aw, n_boot=args.n_boot, seed=seed, language_centred=False)
        v = r.verdict_scores
        perm = permutation_test(aw, n_perm=args.n_boot, seed=seed)
        if r.permutation is not None:  # the verdict ran the same test: the same p
            assert r.permutation.p_value == perm.p_value, (seed, r.permutation.p_value, perm.p_value)
        c = counts[(R, L)]
        c["n"] += 1
        c["interval"] += bool(v.delta.ci[0] > 0)
        c["before"] += null_aware_tier("tier", v.delta.ci, corrected=v.corrected.value) == "tier"
        c["perm"] += bool(perm.p_value < NOMINAL)
        c["gate"] += above_chance_gate(v.delta.ci, p_value=perm.p_value, confidence=0.95) == ABOVE_CHANCE
        c["after"] += r.tier not in (*NO_TIER_LABELS, UNDETERMINED_TIER)
    cpu = time.process_time() - t0
    sizes = ", ".join(f"{R}x{L}" for R, L in configs)
    setting = (f"random Gaussian vectors, {args.dims} dims, concepts x languages cycled over {sizes}, n_boot = n_perm = "
               f"{args.n_boot}, {seeds} seeds (seed s: data, bootstrap and permutations), floor MIN_CORRECTED={MIN_CORRECTED}")
    print(setting)
    print(f"{'size':>8} {'seeds':>6} {'rule':<56} {'nominal':>8} {'measured':>9} {'95% CI (Clopper-Pearson)':>26}")
    total = dict.fromkeys(("n", *RULES), 0)
    for c in counts.values():
        for k in total:
            total[k] += c[k]
    for key, c in [(f"{R}x{L}", c) for (R, L), c in counts.items()] + [("all", total)]:
        for rule, name in RULES.items():
            lo, hi = clopper_pearson(c[rule], c["n"])
            print(f"{key:>8} {c['n']:>6} {name:<56} {NOMINAL:>8.3f} {c[rule] / c['n']:>9.4f} [{lo:.4f}, {hi:.4f}]")
    rows = []
    for rule, name in RULES.items():
        k, n = total[rule], total["n"]
        lo, hi = clopper_pearson(k, n)
        rows.append(row(f"false-positive rate on random data: {name}", 100.0 * k / n, 100.0 * NOMINAL, unit="%",
                        baseline_name="nominal one-sided", threads="default", repeats=1, clock="share of seeds",
                        target="<= 2.5 % (nominal)" if rule == "after" else None,
                        note=f"{k} of {n} seeds, 95% Clopper-Pearson [{100 * lo:.2f}%, {100 * hi:.2f}%]; {setting}; "
                             f"{cpu:.0f} s CPU"))
    write_results("verdict-calibration-quick" if args.quick else "verdict-calibration", rows,
                  script="bench/bench_verdict_calibration.py", args=list(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
