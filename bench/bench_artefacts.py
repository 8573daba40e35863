"""The artefact checks (identical strings, degenerate vector groups) as a ratio to the point SA they guard.

Run:  .venv/bin/python bench/bench_artefacts.py [--rows 200000] [--dims 256]

On ``--rows`` concepts in two languages (float32 vectors, one word per concept,
22 planted groups of near-identical vectors, 5% identical strings), measured in
this run:

1. the point SA (``Spreads`` of the concepts and its all-ones evaluation: what
   ``affinity_of_words(..., n_boot=0)`` computes before any verdict);
2. ``degenerate_vector_groups`` (float32, no float64 copy);
3. ``identical_string_rows`` (the surface normalisation of every word);
4. ``find_artefacts`` (both, and the rows they touch).

Issue 21 asks the checks to cost at most 15% of the point SA.  The script prints
each time and its ratio to (1), and checks that the 22 planted groups are found.
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp
from _timing import best_of

from semanscope_nb.metrics.artefacts import degenerate_vector_groups, find_artefacts, identical_string_rows
from semanscope_nb.metrics.spreads import AlignedWords, Spreads


def planted(rows: int, dims: int, seed: int = 0) -> AlignedWords:
    rng = np.random.default_rng(seed)
    en = rng.normal(size=(rows, dims)).astype(np.float32)
    de = (en + rng.normal(size=(rows, dims)).astype(np.float32)).astype(np.float32)
    start = 0
    for g in range(22):
        size = 2 + g % 5
        base = rng.normal(size=dims).astype(np.float32)
        de[start:start + size] = base * (1 + np.float32(1e-7) * rng.standard_normal((size, dims)).astype(np.float32))
        start += size
    words_en = [f"word{r}" for r in range(rows)]
    words_de = [f"Word{r}" if r % 20 == 0 else f"wort{r}" for r in range(rows)]  # 5% identical after case folding
    eye = sp.identity(rows, format="csr")
    return AlignedWords(("en", "de"), (en, de), (eye, eye), tuple(words_en), words=(tuple(words_en), tuple(words_de)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    aw = planted(args.rows, args.dims)
    ones = np.ones((1, aw.n_rows))

    def point_sa():
        return Spreads(aw).spreads(ones, scaled=True)

    point_sa(), degenerate_vector_groups(aw)  # warm-up: BLAS threads, lazy imports, OpenCC tables
    groups = degenerate_vector_groups(aw)
    found = len(groups.get("de", []))
    base = best_of(point_sa, repeat=args.repeat)
    rows = [
        ("point SA (baseline)", base),
        ("degenerate_vector_groups", best_of(lambda: degenerate_vector_groups(aw), repeat=args.repeat)),
        ("identical_string_rows", best_of(lambda: identical_string_rows(aw), repeat=args.repeat)),
        ("find_artefacts", best_of(lambda: find_artefacts(aw), repeat=args.repeat)),
    ]
    print(f"{args.rows:,} concepts x 2 languages x {args.dims} dims (float32); 22 planted groups, found {found}")
    print(f"{'step':<28} {'seconds':>9} {'ratio to point SA':>18}")
    for name, t in rows:
        print(f"{name:<28} {t:9.3f} {t / base:18.2f}")
    return 0 if found == 22 else 1


if __name__ == "__main__":
    raise SystemExit(main())
