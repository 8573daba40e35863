"""Regenerate the README's verdict table (offline models x bundled datasets) from the code, so it cannot drift.

Run:  .venv/bin/python bench/readme_verdict_table.py [--n-boot 1000] [--write README.md]

Each cell is ``dataset_affinity(dataset, model, n_boot=..., seed=0)`` (all languages,
surface-form null on): the SA on all concepts, the SA without artefacts, the chance
level, the verdict tier, and how many concepts were excluded.  ``--write`` replaces
the table between the README's ``<!-- verdict-table:start -->`` and
``<!-- verdict-table:end -->`` markers.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import semanscope_nb as snb

MODELS = ["use-multilingual", "multilingual-e5-small", "wordllama-l2-supercat", "tfidf-char", "random-null", "all-minilm-l6-v2"]
DATASETS = ["conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives"]
START, END = "<!-- verdict-table:start -->", "<!-- verdict-table:end -->"


def cell(r) -> str:
    v = r.verdict_scores
    excl = sum(r.excluded_concepts.values())
    free = f"{v.sa.value:.3f}" if v is not None else "–"
    chance = f"{v.sa_null.value:.3f}" if v is not None else "–"
    return f"{r.cosine.sa:.3f} · {free} · chance {chance} · **{r.tier}** ({excl} excl.)"


def table(n_boot: int) -> str:
    lines = ["| model | " + " | ".join(DATASETS) + " |", "|---|" + "---|" * len(DATASETS)]
    for m in MODELS:
        cells = []
        for d in DATASETS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = snb.dataset_affinity(d, m, n_boot=n_boot, seed=0, progress=False)
            cells.append(cell(r))
            print(f"{m} {d}: {r.verdict}", file=sys.stderr)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args(argv)
    text = table(args.n_boot)
    print(text)
    if args.write is not None:
        readme = args.write.read_text(encoding="utf-8")
        a, b = readme.index(START) + len(START), readme.index(END)
        args.write.write_text(readme[:a] + "\n" + text + "\n" + readme[b:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
