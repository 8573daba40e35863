"""figures/explore-map-legend-header.png: the explore panel's PNG export, SA legend above the map, a clicked concept labelled.

ExplorePanel(model='use-multilingual', dataset='conceptual-space', languages=['en', 'zh', 'de'],
n_boot=200, PHATE, background=False); the worst-aligned concept selected; the publication chart
exported as PNG at scale 2 (vl-convert, the export faces: DejaVu Sans for Latin, Noto Sans CJK for
CJK).  The selected concept's labels are placed apart (issue 24: 霜 / frost / Reif drew on top of each
other).  The script fails if the labels of the selected concept overlap in the exported SVG.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python scripts/explore_map_figure.py [--out figures/explore-map-legend-header.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "figures" / "explore-map-legend-header.png"))
    a = ap.parse_args()

    from svg_text import overlap, svg_texts  # the tests' SVG reader: the same check as tests/test_map_labels.py

    from semanscope_nb.plots.export import chart_bytes, export_svg
    from semanscope_nb.plots.projection import ProjectionSettings
    from semanscope_nb.widgets.explore import PUBLICATION, ExplorePanel

    panel = ExplorePanel(model="use-multilingual", dataset="conceptual-space", languages=["en", "zh", "de"], n_boot=200,
                         projection=ProjectionSettings("phate"), background=False)
    worst = str(panel.result.concepts_frame()["concept"].iloc[0])
    panel.select([worst])
    chart = panel.publication_chart()
    from semanscope_nb.plots.maps import map_frame

    frame = map_frame(panel.projection, result=panel.result, dataset=panel._ds)
    words = set(frame.loc[frame["concept"] == worst, "word"].astype(str))
    labels = [t for t in svg_texts(export_svg(chart)) if t.role == "mark" and t.text in words]
    clashes = [(x.text, y.text) for i, x in enumerate(labels) for y in labels[i + 1:] if overlap(x, y)]
    if len(labels) < len(words) or clashes:
        raise SystemExit(f"the labels of {worst!r} are not all apart: found {[t.text for t in labels]}, clashes {clashes}")
    out = Path(a.out)
    out.write_bytes(chart_bytes(chart, "png", scale=PUBLICATION.scale))
    print(f"wrote {out} ({out.stat().st_size} bytes): {worst!r} labelled as {sorted(words)}")


if __name__ == "__main__":
    main()
