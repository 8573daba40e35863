"""A selected concept's word labels never sit on each other (issue 24): 霜 / frost / Frost at one point, drawn apart.

The map is rendered to SVG by vl-convert (the export path), and the labels'
boxes are measured from the SVG (:mod:`svg_text`: the position Vega drew, the
font size, the advance widths of the face that draws them), not from the
estimate :func:`~semanscope_nb.plots.maps.with_label_offsets` places them with.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest
from svg_text import overlap, svg_texts

import semanscope_nb as snb
from semanscope_nb.plots import export, maps
from semanscope_nb.plots.projection import ProjectionSettings, project_dataset

LANGUAGES = ["en", "zh", "de", "ja"]


@pytest.fixture(scope="module")
def aligned():
    """conceptual-space in four languages, embedded so that translations nearly coincide (a well-aligned model)."""
    ds = snb.load_dataset("conceptual-space", languages=LANGUAGES).subset(range(40))
    emb = snb.embed(ds, "random-null", cache=False)
    result = snb.run_task("sa", emb, n_boot=50)
    rows = maps.map_frame(project_dataset(ds, emb.vectors, settings=ProjectionSettings("pca"), cache=False), dataset=ds)
    rng = np.random.default_rng(1)
    concept_vec = {c: rng.normal(size=32) for c in dict.fromkeys(rows["concept"])}
    vectors: dict = {}
    for lang, word, concept in zip(rows["language"], rows["word"], rows["concept"]):
        vectors.setdefault(lang, {})[word] = concept_vec[concept] + 0.01 * rng.normal(size=32)
    proj = project_dataset(ds, vectors, settings=ProjectionSettings("pca"), cache=False)
    frame = maps.map_frame(proj, result=result, dataset=ds)
    full = frame.groupby("concept")["language"].nunique()
    concepts = [c for c in full.index if full[c] == len(LANGUAGES)][:3]
    return ds, proj, result, frame, concepts


def _labels(svg: str, words: set[str]):
    return [t for t in svg_texts(svg) if t.role == "mark" and t.text in words and t.size == maps.LABEL_FONT_SIZE]


def _assert_apart(labels, expected: int):
    assert len(labels) == expected, [t.text for t in labels]
    clashes = [(a.text, b.text) for i, a in enumerate(labels) for b in labels[i + 1:] if overlap(a, b)]
    assert clashes == [], f"labels drawn over each other: {clashes}"


@pytest.mark.slow  # the fixture embeds and projects (~5 s)
def test_without_offsets_the_labels_of_a_concept_collide(aligned):
    # the control: the very same words at their default place sit on each other, so the checks below can fail
    ds, proj, result, frame, concepts = aligned
    rows = frame[frame["concept"] == concepts[0]]
    boxes = maps.label_boxes(rows.drop(columns=[c for c in ("label_dx", "label_dy") if c in rows]), width=520, height=420,
                             domains=maps._padded_domains(frame))
    hits = sum(boxes[i, 0] < boxes[j, 2] and boxes[j, 0] < boxes[i, 2] and boxes[i, 1] < boxes[j, 3] and boxes[j, 1] < boxes[i, 3]
               for i in range(len(boxes)) for j in range(i + 1, len(boxes)))
    assert hits >= 3, "the fixture's translations should nearly coincide"


@pytest.mark.slow  # renders three maps with vl-convert
def test_selected_concepts_labels_do_not_overlap_in_any_map(aligned):
    ds, proj, result, frame, concepts = aligned
    words = set(frame.loc[frame["concept"].isin(concepts), "word"].astype(str))
    n_words = int(frame["concept"].isin(concepts).sum())
    # a figure: the selected concepts labelled together
    _assert_apart(_labels(export.export_svg(maps.alignment_map(proj, result, dataset=ds, selected_concepts=concepts)), words),
                  n_words)
    # an interactive map with one concept clicked (the click selection starts with it): its labels apart
    one = set(frame.loc[frame["concept"] == concepts[0], "word"].astype(str))
    clicked = maps.alignment_map(proj, result, dataset=ds, navigate=True, selected_concepts=concepts[:1])
    _assert_apart(_labels(export.export_svg(clicked), one), len(LANGUAGES))
    # the panel's fast path (a template plus the rows) places them the same way
    spec = maps.alignment_map_spec(proj, result, dataset=ds, templates=False, navigate=True, selected_concepts=concepts[:1])
    _assert_apart(_labels(export.export_svg(spec), one), len(LANGUAGES))


def test_offsets_keep_every_label_of_a_group_apart_at_the_map_scale():
    f = pd.DataFrame({"x": [0.5] * 5 + [0.9], "y": [0.5] * 5 + [0.9], "word": ["frost", "霜", "Frost", "霜", "gelo", "far"],
                      "concept": ["frost"] * 5 + ["other"]})
    out = maps.with_label_offsets(f, width=300, height=300, domains={"x": (0, 1), "y": (0, 1)})
    boxes = maps.label_boxes(out, width=300, height=300, domains={"x": (0, 1), "y": (0, 1)})[:5]
    for i in range(5):
        for j in range(i + 1, 5):
            assert not (boxes[i, 0] < boxes[j, 2] and boxes[j, 0] < boxes[i, 2] and boxes[i, 1] < boxes[j, 3]
                        and boxes[j, 1] < boxes[i, 3]), (i, j, boxes.round(1).tolist())
    assert out.loc[5, ["label_dx", "label_dy"]].tolist() == [maps.LABEL_DX, maps.LABEL_DY]  # alone: the default place
    # a CJK label is counted at 1 em a glyph, a Latin one at 0.7 em
    np.testing.assert_allclose([maps.label_width("霜霜"), maps.label_width("ab")], [22.0, 2 * 0.7 * 11], rtol=1e-12,
                               err_msg="label width estimate: 1 em a CJK glyph, 0.7 em otherwise")


# ---------------------------------------------------------------- the SA legend covers no point and no label (issue 24)

def _legend_clear(svg: str) -> tuple[int, list[str]]:
    """(points found, what lies under the SA legend) from the SVG's geometry."""
    from svg_text import boxes_meet, placed

    items = placed(svg)
    legend = [p for p in items if p.kind == "text" and p.text.startswith("SA cosine")]
    assert len(legend) == 1, [p.text[:30] for p in legend]
    box = legend[0].box
    box = (box[0] - 4, box[1] - 4, box[2] + 4, box[3] + 4)  # the box drawn around the text, padded
    points = [p for p in items if p.kind == "symbol" and "role-mark" in p.classes]
    under = [p.text or f"point at {tuple(round(v) for v in p.box[:2])}" for p in items
             if p is not legend[0] and "legend" not in p.classes and "title" not in p.classes and boxes_meet(box, p.box)]
    return len(points), under


@pytest.mark.slow  # renders maps with vl-convert
@pytest.mark.parametrize("position", ["header", "auto", "outside"])
def test_the_sa_legend_covers_no_point_and_no_label_in_the_exports(aligned, position, tmp_path):
    ds, proj, result, frame, concepts = aligned
    small = snb.load_dataset("conceptual-space", languages=LANGUAGES).subset(range(6))
    small_proj = project_dataset(small, snb.embed(small, "random-null", cache=False).vectors,
                                 settings=ProjectionSettings("pca"), cache=False)
    # the points along the bottom and the right edge: the top-left corner is empty, and an "auto" legend goes there
    # (a crowded map puts it in the header)
    n = len(small_proj.coords)
    t = np.linspace(0.0, 1.0, n)
    edges = np.where(np.arange(n)[:, None] % 2 == 0, np.column_stack([t, 0.05 * t]), np.column_stack([1 + 0.05 * t, t]))
    diagonal = dataclasses.replace(small_proj, coords=edges)
    picked_small = list(dict.fromkeys(maps.map_frame(diagonal, dataset=small)["concept"]))[:2]
    for p, d, picked, width in ((proj, ds, concepts, None), (diagonal, small, picked_small, 700)):
        chart = maps.alignment_map(p, result, dataset=d, selected_concepts=picked, legend_position=position, width=width)
        if position == "auto" and p is diagonal:  # the legend went into a corner of the plot (a rect behind its text)
            assert "vconcat" not in chart.to_dict() and "rect" in json.dumps(chart.to_dict()["layer"])
        svg = export.export_svg(chart)
        n_points, under = _legend_clear(svg)
        assert n_points >= 6 * len(LANGUAGES) - 4, n_points
        assert under == [], f"legend_position={position!r}: under the legend: {under[:8]}"
        # the PDF is drawn from this very SVG (svg_to_pdf): same page, same geometry
        pdf = snb.save_chart(chart, tmp_path / f"map-{position}.pdf").read_bytes()
        width, height = (float(v) for v in re.search(r'<svg[^>]*width="([0-9.]+)" height="([0-9.]+)"', svg).groups())
        media = [float(v) for v in re.search(rb"/MediaBox\s*\[\s*([-0-9.\s]+)\]", pdf).group(1).split()]
        np.testing.assert_allclose(media[2:], [width, height], rtol=0, atol=1.0, err_msg="PDF page = the SVG's size")


@pytest.mark.slow
def test_a_legend_forced_into_a_crowded_corner_is_seen_covering_data(aligned):
    # the control: the check above can fail
    ds, proj, result, frame, concepts = aligned
    chart = maps.alignment_map(proj, result, dataset=ds, selected_concepts=concepts, legend_position="top-left")
    assert _legend_clear(export.export_svg(chart))[1]


# ------------------------------------------------- several concepts clicked together: their labels apart jointly (issue 24)

def _crowd(emb, concepts: list[str], frame):
    """``emb`` with the words of ``concepts`` moved next to each other (one shared vector, a little noise each):
    several nearby concepts, as a shift-click picks them in a dense area."""
    rng = np.random.default_rng(2)
    centre = rng.normal(size=next(iter(next(iter(emb.vectors.values())).values())).shape[0])
    near = {c: centre + 0.02 * rng.normal(size=centre.shape[0]) for c in concepts}
    vectors = {lang: dict(v) for lang, v in emb.vectors.items()}
    for lang, word, concept in zip(frame["language"], frame["word"], frame["concept"]):
        if concept in near:
            vectors[lang][word] = (near[concept] + 0.005 * rng.normal(size=centre.shape[0])).astype(np.float32)
    return dataclasses.replace(emb, vectors=vectors)


@pytest.fixture(scope="module")
def crowded():
    """conceptual-space (4 languages, 40 concepts) with three concepts' words crowded at one spot."""
    ds = snb.load_dataset("conceptual-space", languages=LANGUAGES).subset(range(40))
    emb = snb.embed(ds, "random-null", cache=False)
    frame = maps.map_frame(project_dataset(ds, emb.vectors, settings=ProjectionSettings("pca"), cache=False), dataset=ds)
    full = frame.groupby("concept")["language"].nunique()
    concepts = [c for c in full.index if full[c] == len(LANGUAGES)][:3]
    emb = _crowd(emb, concepts, frame)
    proj = project_dataset(ds, emb.vectors, settings=ProjectionSettings("pca"), cache=False)
    result = snb.run_task("sa", emb, n_boot=50)
    return ds, emb, proj, result, maps.map_frame(proj, result=result, dataset=ds), concepts


def _meet(boxes: np.ndarray) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i, 0] < boxes[j, 2] and boxes[j, 0] < boxes[i, 2] and boxes[i, 1] < boxes[j, 3] and boxes[j, 1] < boxes[i, 3]]


@pytest.mark.slow  # the fixture embeds, bootstraps and projects (~6 s)
def test_each_concept_placed_alone_lets_nearby_concepts_labels_collide(crowded):
    # the control: with each concept's labels placed on their own (one click), the crowded concepts' labels meet
    ds, emb, proj, result, frame, concepts = crowded
    domains = maps._padded_domains(frame)
    alone = maps.with_label_offsets(frame, width=440, height=420, domains=domains)
    rows = alone[alone["concept"].isin(concepts)]
    assert len(_meet(maps.label_boxes(rows, width=440, height=420, domains=domains))) >= 3, "the fixture should crowd"
    joint = maps.with_selection_label_offsets(frame, concepts, width=440, height=420, domains=domains)
    rows = joint[joint["concept"].isin(concepts)]
    assert _meet(maps.label_boxes(rows, width=440, height=420, domains=domains)) == []
    others = ~frame["concept"].isin(concepts)  # the concepts not clicked keep their own placement
    np.testing.assert_array_equal(joint.loc[others, ["label_dx", "label_dy"]].to_numpy(),
                                  alone.loc[others, ["label_dx", "label_dy"]].to_numpy(),
                                  err_msg="offsets of unselected concepts are unchanged by a selection")


@pytest.mark.slow  # renders maps with vl-convert
def test_several_nearby_clicked_concepts_labels_do_not_meet_in_the_rendered_map(crowded):
    ds, emb, proj, result, frame, concepts = crowded
    words = set(frame.loc[frame["concept"].isin(concepts), "word"].astype(str))
    n_words = int(frame["concept"].isin(concepts).sum())
    # the panel's map drawn with the three concepts clicked (from_state, select())
    spec = maps.alignment_map_spec(proj, result, dataset=ds, templates=False, navigate=True, selected_concepts=concepts)
    _assert_apart(_labels(export.export_svg(spec), words), n_words)
    # a map drawn with one concept clicked, then two more shift-clicked: the rows the panel sends in place
    one = maps.alignment_map_spec(proj, result, dataset=ds, templates=False, navigate=True, selected_concepts=concepts[:1])
    pick = next(p for p in one["params"] if p["name"] == maps.PARAM_NAMES["pick"])
    pick["value"] = [{"concept": c} for c in concepts]  # what the browser's selection holds after the shift-clicks
    before = _labels(export.export_svg(one), words)
    assert any(overlap(a, b) for i, a in enumerate(before) for b in before[i + 1:]), "control: they meet before"
    one["datasets"] = {**one["datasets"], maps.DATA_NAMES["points"]: maps.selection_label_rows(one, concepts)}
    _assert_apart(_labels(export.export_svg(one), words), n_words)


@pytest.mark.slow  # builds a panel (SA bootstrap, PCA, map spec)
def test_the_panel_places_shift_clicked_concepts_labels_in_place_without_a_redraw(crowded):
    from semanscope_nb.plots.projection import ProjectionCache
    from semanscope_nb.widgets import ExplorePanel

    ds, emb, proj, result, frame, concepts = crowded
    panel = ExplorePanel(model="random-null", dataset="conceptual-space", languages=LANGUAGES, max_concepts=40,
                         n_boot=50, projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(),
                         embedder=lambda *a, **k: emb, sa_store=False)
    assert panel.error is None, panel.error
    drawn = panel.spec["datasets"][maps.DATA_NAMES["points"]]
    redraws = panel.counts["redraw"]
    panel.chart_out.selection = {maps.PARAM_NAMES["pick"]: {"concept": list(concepts)}}  # three shift-clicks
    assert panel.selection == tuple(concepts) and panel.counts["redraw"] == redraws and panel.counts["labels_placed"] == 1
    sent = panel.chart_out.data_patch[maps.DATA_NAMES["points"]]
    assert sent == panel.spec["datasets"][maps.DATA_NAMES["points"]]  # the exports read what the view shows
    meta = panel.spec["usermeta"][maps.LABEL_META]
    placed = pd.DataFrame(sent)
    rows = placed[placed["concept"].isin(concepts)]
    assert _meet(maps.label_boxes(rows, width=meta["width"], height=meta["height"], domains=meta["domains"])) == []
    # back to one concept: each concept's own placement again, the rows first drawn
    panel.chart_out.selection = {maps.PARAM_NAMES["pick"]: {"concept": concepts[:1]}}
    assert panel.chart_out.data_patch[maps.DATA_NAMES["points"]] == drawn and panel.counts["redraw"] == redraws
