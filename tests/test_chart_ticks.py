"""No colliding tick or legend labels (issue 24: "0.000.05"): every chart builder that needs no model, rendered to SVG.

Each chart goes through the export path (:func:`semanscope_nb.plots.export.export_svg`:
the faces an exported file draws), and the boxes of its axis and legend labels
are measured from the SVG (:mod:`svg_text`: position, anchor, rotation, font size
and the face's advance widths).  Labels Vega hid (opacity 0) do not count.
"""

from __future__ import annotations

import altair as alt
import pytest
from chart_gallery import gallery
from svg_text import colliding, overlap, svg_texts

from semanscope_nb.plots import export

_GALLERY = gallery()


@pytest.mark.slow  # starts vl-convert (~2 s the first time in a process)
def test_the_collision_check_sees_colliding_ticks_and_not_separate_ones():
    # a control: 0.00, 0.01, ... 0.20 on a 60 px axis with Vega's overlap removal off must collide
    data = alt.InlineData(values=[{"v": 0.0}, {"v": 0.2}])
    crowded = alt.Chart(data).mark_point().encode(x=alt.X("v:Q", axis=alt.Axis(values=[i / 100 for i in range(21)],
                                                                           format=".2f", labelOverlap=False)))
    bad = colliding(svg_texts(export.export_svg(crowded.properties(width=60, height=20))))
    assert bad and all(role == "axis-label" for role, _, _ in bad), bad
    airy = crowded.encode(x=alt.X("v:Q", axis=alt.Axis(values=[0.0, 0.1, 0.2], format=".2f", labelOverlap=False)))
    assert colliding(svg_texts(export.export_svg(airy.properties(width=300, height=20)))) == []


def test_boxes_follow_the_anchor_and_the_rotation():
    svg = ('<svg><g class="mark-text role-axis-label"><text text-anchor="end" transform="translate(100,10)" font-size="10px">'
           'abc</text><text text-anchor="start" transform="translate(96,10)" font-size="10px">abc</text>'
           '<text transform="translate(0,50) rotate(-90)" font-size="10px">abc</text>'
           '<text transform="translate(0,90) rotate(-90)" font-size="10px">abc</text></g></svg>')
    end, start, up1, up2 = svg_texts(svg)
    assert end.right == pytest.approx(0.0) and end.left < -15  # "abc" ends at its anchor
    assert overlap(end, start)  # start 4 px left of the first one's end
    assert overlap(up1, up2) is False  # rotated: each runs up from its anchor, 40 px apart along the text


@pytest.mark.slow  # renders each chart: ~0.3-3 s apiece
@pytest.mark.parametrize("name", sorted(_GALLERY))
def test_no_tick_or_legend_labels_collide(name):
    texts = svg_texts(export.export_svg(_GALLERY[name]()))
    labels = [t for t in texts if t.role == "axis-label"]
    assert labels or name.startswith(("alignment_map", "compare_maps")), f"{name}: no axis label found to check"
    assert colliding(texts) == [], f"{name}: labels run into each other"
