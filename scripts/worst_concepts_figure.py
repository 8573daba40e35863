"""figures/worst-concepts.{png,svg,pdf,html}: notebook 02's worst-concepts figure, remade on its own.

Notebook 02 (the benchmark) draws the 12 worst-aligned concepts of its best model on the map
dataset: use-multilingual on conceptual-space (en, zh).  The bars are per-concept inter distances,
which need no bootstrap, so this script remakes the figure without rerunning the whole benchmark:
SA of use-multilingual on conceptual-space (en, zh; n_boot=1000, seed 0, as the notebook), then
worst_concepts_chart(n=12) saved as the notebook saves it (save_figures: one sans face per script,
readable ticks).  Fails if two tick labels or two concept labels overlap in the SVG.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python scripts/worst_concepts_figure.py [--folder figures]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", default=str(ROOT / "figures"))
    ap.add_argument("--model", default="use-multilingual")
    a = ap.parse_args()

    from svg_text import colliding, svg_texts  # the tests' SVG reader (tests/test_chart_ticks.py)

    import semanscope_nb as snb
    from semanscope_nb.plots.export import export_svg

    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"])
    result = snb.run_task("sa", snb.embed(ds, a.model), n_boot=1000, seed=0)
    chart = snb.plots.worst_concepts_chart(result, n=12, title=f"worst-aligned concepts: {a.model} on {ds.name}")
    bad = colliding(svg_texts(export_svg(chart)))
    if bad:
        raise SystemExit(f"labels overlap: {bad}")
    for p in snb.plots.save_figures({"worst-concepts": chart}, a.folder, formats=("png", "svg", "pdf", "html")):
        print("saved", p)


if __name__ == "__main__":
    main()
