"""Navigable maps, fixed colours, the legend box, verdict-aware charts, 3-D, compare view, projection disk cache.

Specs are checked through ``to_dict()`` (params, marks, encodings, data), compiled
with vl-convert's oldest Vega-Lite 5 (close to what JupyterLab 4 bundles), and,
where the initial state shows it, rendered to SVG to see what a reader sees.
Everything runs on real embeddings (USE-multilingual, the random-null model).
"""

from __future__ import annotations

import colorsys
import dataclasses
import types
import warnings

import numpy as np
import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import affinity_of_words
from semanscope_nb.metrics.pairs import pair_affinity
from semanscope_nb.plots import leaderboard, legend, maps, palette, projection, sa_figures
from semanscope_nb.plots.compare import compare_maps
from semanscope_nb.runs.evaluate import aligned_words

OLDEST_VL = "5.8"  # JupyterLab 4 bundles Vega-Lite 5.6; vl-convert's oldest is 5.8


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """edge-cases, 30 concepts, en/zh/de: USE-multilingual and random-null vectors, SA results, PCA maps."""
    ds = snb.load_dataset("edge-cases", languages=["en", "zh", "de"]).subset(range(30))
    cache = snb.EmbeddingCache(tmp_path_factory.mktemp("maps-cache"))
    out = {"ds": ds}
    for model in ("use-multilingual", "random-null"):
        vectors = snb.embed(ds, model, cache=cache).vectors
        result = affinity_of_words(aligned_words(ds, vectors), n_boot=200, seed=0).with_provenance(model=model, dataset=ds.name)
        proj = snb.plots.project_dataset(ds, vectors, settings=snb.plots.ProjectionSettings("pca"), cache=False)
        out[model] = types.SimpleNamespace(vectors=vectors, result=result, proj=proj)
    return out


# --------------------------------------------------------------------------- helpers


def _compiles(spec):
    import vl_convert as vlc

    vg = vlc.vegalite_to_vega(spec, vl_version=OLDEST_VL)
    assert vg["$schema"].startswith("https://vega.github.io/schema/vega/v5")
    return vg


def _svg(spec) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec, vl_version=OLDEST_VL)


def _units(spec):
    """Every unit (mark-carrying) spec, depth first."""
    if "mark" in spec:
        yield spec
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _units(sub)
    if "spec" in spec:
        yield from _units(spec["spec"])


def _mark(unit) -> str:
    m = unit["mark"]
    return m if isinstance(m, str) else m["type"]


def _rows(spec, unit, *owners):
    """The inline rows a unit draws: its own data, else the nearest owner's (Altair hoists shared data)."""
    for holder in (unit, *owners, spec):
        if "data" in holder:
            return list(spec["datasets"][holder["data"]["name"]])  # inline rows are held as a tuple (no copies)
    raise KeyError("no data")


def _param(spec, pred):
    found = [p for p in spec.get("params", []) if pred(p)]
    assert len(found) == 1, spec.get("params")
    return found[0]


def _is_zoom(p):
    return p.get("bind") == "scales"


def _is_search(p):
    return isinstance(p.get("bind"), dict) and p["bind"].get("input") == "search"


def _is_brush(p):
    return p.get("select", {}).get("type") == "interval" and "bind" not in p


def _is_pick(p):
    return p.get("select", {}).get("type") == "point" and p["select"].get("fields") == ["concept"]


def _points(spec):
    (unit,) = [u for u in _units(spec) if _mark(u) == "point"]
    return unit


# --------------------------------------------------------------------------- navigation


@pytest.mark.slow  # loads real model weights
def test_zoom_and_pan_are_a_scale_bound_interval_on_every_navigable_map(real):
    r = real["use-multilingual"]
    spec = maps.alignment_map(r.proj, r.result, dataset=real["ds"], navigate=True).to_dict()
    zoom = _param(spec, _is_zoom)
    assert zoom["select"]["type"] == "interval"
    assert "!event.shiftKey" in zoom["select"]["translate"]  # a plain drag pans; shift is left to the brush
    assert zoom["views"] == [_points(spec)["name"]]
    assert _points(spec)["mark"]["clip"] is True  # zoomed-in points stay inside the plot
    _compiles(spec)
    # the 3-D pair and the compare view zoom too, one interval per view
    p3 = snb.plots.project_dataset(real["ds"], r.vectors, settings=snb.plots.ProjectionSettings("pca", n_components=3), cache=False)
    spec3 = maps.map_3d(p3, r.result, dataset=real["ds"]).to_dict()
    assert sum(_is_zoom(p) for p in spec3["params"]) == 2
    specc = compare_maps({"a": (r.proj, r.result), "b": (real["random-null"].proj, real["random-null"].result)},
                         dataset=real["ds"]).to_dict()
    assert sum(_is_zoom(p) for p in specc["params"]) == 2
    with pytest.raises(ValueError, match="unknown feature"):
        maps.alignment_map(r.proj, dataset=real["ds"], navigate={"pan"})


@pytest.mark.slow  # loads real model weights
def test_search_box_enlarges_outlines_and_labels_the_matches(real):
    r, ds = real["use-multilingual"], real["ds"]
    spec = maps.alignment_map(r.proj, r.result, dataset=ds, navigate={"search"}, search="wander").to_dict()
    search = _param(spec, _is_search)
    assert search["value"] == "wander" and search["bind"]["input"] == "search"
    enc = _points(spec)["encoding"]
    test = enc["size"]["condition"]["test"]
    assert search["name"] in test and "datum['word']" in test and "datum['concept']" in test
    assert enc["size"]["condition"]["value"] == 3 * enc["size"]["value"]
    assert enc["strokeWidth"]["condition"]["test"] == test and enc["strokeWidth"]["value"] == 0
    assert {"test": test, "value": 0.95} in enc["opacity"]["condition"]  # a match stays visible during a selection
    (labels,) = [u for u in _units(spec) if _mark(u) == "text" and u.get("transform")]
    assert labels["transform"][0] == {"filter": test} and labels["encoding"]["text"]["field"] == "word"
    assert labels["transform"][-1] == {"filter": f"datum.match_rank <= {maps.SEARCH_LABELS}"}  # a few labels, not a pile
    _compiles(spec)
    # what the reader sees: the matching word and its translations (by concept) are labelled, nothing else
    row = next(row for row in ds.rows if row[0][0] == "wanderlust")
    svg = _svg(spec)
    for cell in row:
        assert f">{cell[0]}<" in svg
    quiet = _svg(maps.alignment_map(r.proj, r.result, dataset=ds, navigate={"search"}).to_dict())
    assert f">{row[2][0]}<" not in quiet  # empty search box: no labels


@pytest.mark.slow  # loads real model weights
def test_brush_lists_the_selected_words_and_translations_beside_the_map(real):
    r = real["use-multilingual"]
    spec = maps.alignment_map(r.proj, r.result, dataset=real["ds"], navigate={"brush"}).to_dict()
    brush = _param(spec, _is_brush)
    assert brush["select"]["encodings"] == ["x", "y"] and "event.shiftKey" in brush["select"]["on"]
    assert brush["select"]["zoom"] is False
    the_map, the_list = spec["hconcat"]
    assert [_mark(u) for u in _units(the_map["vconcat"][0])] == ["text"]  # the legend header above the map
    assert brush["views"] == [_points(the_map)["name"]]
    assert _mark(the_list) == "text"
    assert the_list["transform"][0] == {"filter": {"param": brush["name"], "empty": False}}
    calc = next(t for t in the_list["transform"] if "calculate" in t)["calculate"]
    assert "datum.translations" in calc and "datum.word" in calc and "more" in calc
    # the list reads the map's rows, so every listed word carries its translations
    assert the_list["data"]["name"] == the_map["vconcat"][1]["data"]["name"]
    assert any("zh: " in row["translations"] for row in _rows(spec, the_list))
    _compiles(spec)


@pytest.mark.slow  # loads real model weights
def test_click_selection_on_concept_starts_from_the_given_concepts(real):
    r, ds = real["use-multilingual"], real["ds"]
    row = ds.rows[3]
    concept = maps.row_label(row)
    spec = maps.alignment_map(r.proj, r.result, dataset=ds, navigate={"labels"},
                                selected_concepts=[concept, "not a concept"]).to_dict()
    pick = _param(spec, _is_pick)
    assert pick["select"]["on"] == "click" and pick["select"]["clear"] == "dblclick"
    assert pick["value"] == [{"concept": concept}]  # unknown concepts are dropped, not raised
    (labels,) = [u for u in _units(spec) if _mark(u) == "text" and u.get("transform")]
    assert labels["transform"] == [{"filter": {"param": pick["name"], "empty": False}}]
    svg = _svg(spec)
    for cell in row:  # labelled in every language
        assert f">{cell[0]}<" in svg
    plain = maps.alignment_map(r.proj, r.result, dataset=ds).to_dict()
    assert "value" not in _param(plain, _is_pick)


@pytest.mark.slow  # loads real model weights
def test_worst_concepts_table_shares_the_concept_selection(real):
    r, ds = real["use-multilingual"], real["ds"]
    spec = maps.alignment_map(r.proj, r.result, dataset=ds, worst_concepts=6).to_dict()
    the_map, table = spec["hconcat"]
    the_map = the_map["vconcat"][1]  # under the legend header
    pick = _param(spec, _is_pick)
    assert sorted(pick["views"]) == sorted([_points(the_map)["name"], table["name"]])
    assert table["encoding"]["y"]["field"] == "concept"
    assert table["encoding"]["opacity"]["condition"]["param"] == pick["name"]
    assert table["encoding"]["strokeWidth"]["condition"] == {"param": pick["name"], "empty": False, "value": 2}
    worst = sorted(zip(r.result.concept_inter_cosine, r.result.concept_labels), reverse=True)[:6]
    assert [row["concept"] for row in _rows(spec, table)] == [c for _, c in worst]
    assert {c for _, c in worst} <= {row["concept"] for row in _rows(spec, _points(the_map), the_map)}
    _compiles(spec)
    # with the brush too: the list and the table share the side column, the whole stays within the output area
    both = maps.alignment_map(r.proj, r.result, dataset=ds, navigate=True, worst_concepts=6).to_dict()
    side = both["hconcat"][1]["vconcat"]
    assert [_mark(u) for u in side] == ["text", "bar"]
    assert both["hconcat"][0]["vconcat"][1]["width"] + max(u["width"] for u in side) + 200 <= 900
    with pytest.raises(ValueError, match="needs the SA result"):
        maps.alignment_map(r.proj, dataset=ds, worst_concepts=5)


# --------------------------------------------------------------------------- colours, legend, scales


@pytest.mark.slow  # loads real model weights
def test_language_colours_are_fixed_per_code(real):
    r, ds = real["use-multilingual"], real["ds"]
    two = snb.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(30))
    p2 = snb.plots.project_dataset(two, {k: r.vectors[k] for k in ("en", "zh")}, settings=snb.plots.ProjectionSettings("pca"), cache=False)
    s2 = _points(maps.alignment_map(p2, dataset=two).to_dict())["encoding"]["color"]["scale"]
    s3 = _points(maps.alignment_map(r.proj, dataset=ds).to_dict())["encoding"]["color"]["scale"]
    assert s2["domain"] == ["en", "zh"] and s3["domain"] == ["en", "zh", "de"]
    c2, c3 = dict(zip(s2["domain"], s2["range"])), dict(zip(s3["domain"], s3["range"]))
    assert c2["en"] == c3["en"] and c2["zh"] == c3["zh"]  # adding German recoloured nothing
    assert c3 == {code: palette.LANGUAGE_PALETTE[palette.LANGUAGE_ORDER.index(code)] for code in c3}
    first = [palette.language_colour(c) for c in palette.LANGUAGE_ORDER[:7]]
    assert len(set(first)) == 7 and set(first) == set(palette.OKABE_ITO)
    # an unknown code: a stable colour from a hash (BLAKE2, not Python's salted hash), inside the palette
    assert palette.language_colour("tlh") == palette.language_colour("tlh") in palette.LANGUAGE_PALETTE
    import subprocess
    import sys

    other = subprocess.run([sys.executable, "-c", "from semanscope_nb.plots.palette import language_colour as c; print(c('tlh'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == palette.language_colour("tlh")


@pytest.mark.slow  # loads real model weights
def test_sa_legend_sits_on_a_box_in_the_chosen_corner(real):
    r, ds = real["use-multilingual"], real["ds"]
    for position in ("top-left", "top-right", "bottom-left", "bottom-right"):
        spec = maps.alignment_map(r.proj, r.result, dataset=ds, legend_position=position, width=500, height=400).to_dict()
        marks = [_mark(u) for u in spec["layer"]]
        box, text = spec["layer"][-2], spec["layer"][-1]
        assert marks[-2:] == ["rect", "text"] and marks.index("point") < marks.index("rect")  # box behind the text, over points
        assert _rows(spec, box) == _rows(spec, text)
        e, t = box["encoding"], text["encoding"]
        x0, x1, y0, y1 = e["x"]["value"], e["x2"]["value"], e["y"]["value"], e["y2"]["value"]
        assert 0 <= x0 < x1 <= 500 and 0 <= y0 < y1 <= 400
        assert x0 <= t["x"]["value"] <= x1 and y0 <= t["y"]["value"] <= y1
        assert 0 < box["mark"]["fillOpacity"] < 1  # points show through
        left, top = position.endswith("left"), position.startswith("top")
        assert (x0 < 10) == left and (x1 > 490) == (not left) and (y0 < 10) == top and (y1 > 390) == (not top)
        assert text["mark"]["align"] == ("left" if left else "right")
        # the box holds the longest line (about 0.62 em a character at 12 px)
        lines = _rows(spec, text)[0]["legend"].split("\n")
        assert x1 - x0 >= 0.6 * 12 * max(map(len, lines)) and y1 - y0 >= 12 * len(lines)
        _compiles(spec)
    outside = maps.alignment_map(r.proj, r.result, dataset=ds, legend_position="outside").to_dict()
    assert [_mark(u) for u in outside["layer"]] == ["point"]
    assert outside["title"]["subtitle"] == legend.sa_legend_text(r.result).split("\n")
    dark = maps.alignment_map(r.proj, r.result, dataset=ds, theme="dark", legend_position="top-right").to_dict()
    box, text = dark["layer"][-2], dark["layer"][-1]
    assert box["mark"]["fill"] == legend.THEMES["dark"]["box"] and text["mark"]["color"] == legend.THEMES["dark"]["text"]
    light_box = maps.alignment_map(r.proj, r.result, dataset=ds, legend_position="top-right").to_dict()["layer"][-2]
    assert light_box["mark"]["fill"] == "#ffffff"  # the light box carries its own background on a dark notebook too
    with pytest.raises(ValueError, match="legend_position must be one of"):
        maps.alignment_map(r.proj, r.result, dataset=ds, legend_position="middle")
    with pytest.raises(ValueError, match="theme must be one of"):
        maps.alignment_map(r.proj, r.result, dataset=ds, theme="sepia")


@pytest.mark.slow  # loads real model weights
def test_projection_scales_do_not_include_zero(real):
    r, ds = real["use-multilingual"], real["ds"]
    p3 = snb.plots.project_dataset(ds, r.vectors, settings=snb.plots.ProjectionSettings("pca", n_components=3), cache=False)
    specs = [maps.alignment_map(r.proj, r.result, dataset=ds, navigate=True).to_dict(),
             maps.map_3d(p3, r.result, dataset=ds).to_dict(),
             compare_maps([(r.proj, r.result), (real["random-null"].proj, real["random-null"].result)], dataset=ds).to_dict()]
    n = 0
    for spec in specs:
        for unit in _units(spec):
            for ch in ("x", "y"):
                enc = unit.get("encoding", {}).get(ch, {})
                if enc.get("field") in ("x", "y", "z"):
                    assert enc["scale"]["zero"] is False
                    n += 1
    assert n >= 10


@pytest.mark.slow  # loads real model weights
def test_sa_legend_carries_the_chance_level_and_the_verdict(real):
    r = real["random-null"].result
    assert r.chance is not None and r.tier in palette.TIER_COLOURS
    text = legend.sa_legend_text(r)
    lines = text.split("\n")
    assert lines[0] == f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}"
    assert lines[2].startswith(f"tier: {r.tier}")
    if r.paper_tier != r.tier:
        assert f"(paper: {r.paper_tier})" in lines[2]
    v = r.verdict_scores  # the numbers the verdict rests on (artefact-free): the legend shows those, not the all-concept gap
    assert f"chance {v.sa_null.value:.3f}" in text
    assert f" {v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}]" in text and "SA − chance" in text
    assert legend.sa_legend_text(r, verdict=False).split("\n") == lines[:2] + [f"tier: {r.tier}"]
    # the verdict's caveats follow the numbers; the whole sentence is the legend box's tooltip
    good = real["use-multilingual"].result
    caveats = [c.strip() for c in good.verdict.split(";")[1:]]
    flat = " ".join(legend.sa_legend_text(good).split("\n"))
    assert all(c in flat for c in caveats)
    spec = maps.alignment_map(real["random-null"].proj, r, dataset=real["ds"], legend_position="top-right").to_dict()
    box = spec["layer"][-2]
    assert _rows(spec, box)[0]["verdict"] == r.verdict and box["encoding"]["tooltip"][0]["field"] == "verdict"
    header = maps.alignment_map(real["random-null"].proj, r, dataset=real["ds"]).to_dict()["vconcat"][0]  # the default
    assert _rows(spec, header)[0] == {"legend": text, "verdict": r.verdict} and header["encoding"]["tooltip"][0]["field"] == "verdict"
    # today's results (no chance, no verdict) keep the paper's three lines
    old = types.SimpleNamespace(cosine=r.cosine, euclidean=r.euclidean, tier="good")
    assert legend.sa_legend_text(old) == f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}\nSA Euclidean {r.euclidean.sa:.3f}\ntier: good"
    no_chance = dataclasses.replace(r, chance=None, chance_excluding=None)
    rest = legend.sa_legend_text(no_chance).split("\n")[3:]  # no chance level: the whole verdict sentence follows
    assert " ".join(rest) == no_chance.verdict and not any(line.startswith("SA − chance") for line in rest)


# --------------------------------------------------------------------------- verdict-aware charts


def _is_red(hexcolour: str) -> bool:
    h, s, _ = colorsys.rgb_to_hsv(*(int(hexcolour[i: i + 2], 16) / 255 for i in (1, 3, 5)))
    return s > 0.35 and (h * 360 < 20 or h * 360 > 340)


def _is_green(hexcolour: str) -> bool:
    h, s, _ = colorsys.rgb_to_hsv(*(int(hexcolour[i: i + 2], 16) / 255 for i in (1, 3, 5)))
    return s > 0.35 and 75 < h * 360 < 165


def test_tier_colours_are_colour_blind_safe_with_chance_in_grey():
    colours = palette.TIER_COLOURS
    assert set(palette.TIER_ORDER) == set(colours) >= {"great", "good", "non-aligned", "chance", "below chance"}
    assert not (any(map(_is_red, colours.values())) and any(map(_is_green, colours.values())))  # no red/green pair
    grey = colours["chance"]
    assert grey[1:3] == grey[3:5] == grey[5:7]  # neutral grey
    assert len(set(colours.values())) == len(colours)  # every tier its own colour; "below chance" is not "chance"
    assert sa_figures.TIER_COLOURS is leaderboard.TIER_COLOURS is colours  # one mapping, shared by every chart
    assert palette.tier_colour("no such tier") == colours["undefined"]


def _benchmark_table(real):
    rows = []
    for band, model in enumerate(("use-multilingual", "random-null"), 1):
        s = real[model].result.summary()
        s.update(model=model, dataset="edge-cases", band=band)
        rows.append(s)
    return pd.DataFrame(rows)


@pytest.mark.slow  # loads real model weights
def test_tier_bars_with_error_bars_chance_ticks_and_bands(real):
    table = _benchmark_table(real)
    assert {"sa_null", "delta", "delta_low", "delta_high", "paper_tier", "tier"} <= set(table.columns)
    spec = sa_figures.tier_bar_chart(table).to_dict()
    marks = [_mark(u) for u in spec["layer"]]
    assert marks[:3] == ["bar", "text", "rule"] and "errorbar" in marks and "tick" in marks
    bars = spec["layer"][0]
    scale = bars["encoding"]["color"]["scale"]
    assert scale["range"] == [palette.TIER_COLOURS[t] for t in scale["domain"]]
    rows = {row["model"]: row for row in _rows(spec, bars)}
    for model in ("use-multilingual", "random-null"):
        r = real[model].result
        assert rows[model]["tier"] == r.tier and rows[model]["paper_tier"] == r.paper_tier
        assert rows[model]["sa_null"] == pytest.approx(r.verdict_scores.sa_null.value, abs=1e-4)  # the verdict's quantity
        assert rows[model]["ci_low"] == pytest.approx(r.cosine.ci[0], abs=1e-4)
    assert rows["random-null"]["tier"] == "chance"
    tick = spec["layer"][marks.index("tick")]
    assert tick["encoding"]["x"]["field"] == "sa_null"
    chance_label = [u for u in spec["layer"] if _mark(u) == "text" and u["encoding"]["x"].get("field") == "sa_null"]
    assert len(chance_label) == 1 and chance_label[0]["transform"][-1] == {"calculate": "'chance'", "as": "chance_label"}
    error = spec["layer"][marks.index("errorbar")]["encoding"]
    assert (error["x"]["field"], error["x2"]["field"]) == ("ci_low", "ci_high")
    band_text = [u for u in spec["layer"] if _mark(u) == "text" and u["encoding"].get("text", {}).get("field") == "band_label"]
    assert [row["band_label"] for row in _rows(spec, band_text[0])] == ["band 1", "band 2"]
    _compiles(spec)
    # without a chance level or bands: no ticks, no "chance" label, no band column (no unlabelled dash at 0.5)
    plain = sa_figures.tier_bar_chart(table.drop(columns=["sa_null", "delta", "delta_low", "delta_high", "band"])).to_dict()
    assert "tick" not in [_mark(u) for u in plain["layer"]]
    assert all(u["encoding"].get("text", {}).get("field") not in ("chance_label", "band_label") for u in plain["layer"])
    # one band holding both models: a bracket joins them
    same = sa_figures.tier_bar_chart(table.assign(band=1)).to_dict()
    bracket = [u for u in same["layer"] if _mark(u) == "rule" and "y2" in u["encoding"]]
    assert len(bracket) == 1 and _rows(same, bracket[0]) == [{"band": 1, "first": "use-multilingual", "last": "random-null"}]
    _compiles(same)


@pytest.mark.slow  # loads real model weights
def test_pair_heatmap_of_sa_and_of_the_gap_to_chance(real):
    ds = real["ds"]
    frame = pair_affinity(aligned_words(ds, real["use-multilingual"].vectors), n_boot=200, seed=0).table
    spec = sa_figures.pair_heatmap(frame).to_dict()
    rect, outline, values, marks = spec["layer"]
    assert [_mark(u) for u in spec["layer"]] == ["rect", "rect", "text", "text"]
    cells = _rows(spec, rect)
    assert len(cells) == 2 * len(frame)  # both triangles, no diagonal
    for row in frame.itertuples():
        (a,) = [c for c in cells if (c["language_a"], c["language_b"]) == (row.language_a, row.language_b)]
        (b,) = [c for c in cells if (c["language_a"], c["language_b"]) == (row.language_b, row.language_a)]
        assert a["sa"] == b["sa"] == pytest.approx(row.sa, abs=1e-4) and a["cell_text"] == f"{row.sa:.3f}"
    enc = rect["encoding"]
    assert enc["color"]["field"] == "sa" and enc["x"]["sort"] == enc["y"]["sort"] == ["en", "zh", "de"]
    assert {t["field"] for t in enc["tooltip"]} >= {"ci_low", "ci_high", "sa_null", "delta_low", "delta_high", "verdict"}
    assert enc["x"]["axis"]["labelAngle"] != 0 and enc["x"]["axis"]["labelLimit"] <= 120  # headers never overlap
    _compiles(spec)
    # the gap to chance: diverging, colour-blind safe, centred at 0; the random model's pairs are marked as chance
    null = pair_affinity(aligned_words(ds, real["random-null"].vectors), n_boot=200, seed=0).table
    assert set(null["verdict"]) <= {"chance", "below chance"}
    gap = sa_figures.pair_heatmap(null, value="delta", triangle="lower").to_dict()
    rect, outline, values, marks = gap["layer"]
    scale = rect["encoding"]["color"]["scale"]
    assert rect["encoding"]["color"]["field"] == "delta" and scale["scheme"] == "blueorange" and scale["domainMid"] == 0
    assert scale["domain"][0] == -scale["domain"][1]
    assert len(_rows(gap, rect)) == len(null)  # lower triangle only
    assert outline["transform"][0]["filter"] == {"field": "verdict", "oneOf": ["chance", "below chance"]}
    assert outline["mark"]["fillOpacity"] == 0
    assert {row["mark"] for row in _rows(gap, marks)} <= {"≈ chance", "< chance"}
    assert all(row["cell_text"].startswith(("+", "-")) for row in _rows(gap, values))
    _compiles(gap)
    with pytest.raises(ValueError, match="lacks column"):
        sa_figures.pair_heatmap(frame.drop(columns=["delta"]), value="delta")


# --------------------------------------------------------------------------- 3-D, compare, layout


@pytest.mark.slow  # loads real model weights
def test_three_components_give_two_linked_views(real):
    r, ds = real["use-multilingual"], real["ds"]
    settings = snb.plots.ProjectionSettings("pca", n_components=3)
    assert settings != snb.plots.ProjectionSettings("pca") and hash(settings) != hash(snb.plots.ProjectionSettings("pca"))
    p3 = snb.plots.project_dataset(ds, r.vectors, settings=settings, cache=False)
    assert p3.coords.shape == (len(r.proj), 3) and p3.params["n_components"] == 3 and p3.dims == 3
    for k in range(2):  # PCA: the same first two components (up to sign and the randomised solver's noise)
        assert abs(np.corrcoef(p3.coords[:, k], r.proj.coords[:, k])[0, 1]) > 0.99
    assert list(p3.to_frame().columns[:3]) == ["x", "y", "z"]
    back = snb.plots.Projection.from_dict(p3.to_dict())
    np.testing.assert_allclose(back.coords, p3.coords)
    spec = maps.map_3d(p3, r.result, dataset=ds, selected_concepts=[maps.row_label(ds.rows[0])]).to_dict()
    head, body = spec["vconcat"]  # the legend above both views
    assert _rows(spec, head)[0]["legend"] == legend.sa_legend_text(r.result)
    xy, xz = body["hconcat"]
    assert (_points(xy)["encoding"]["y"]["field"], _points(xz)["encoding"]["y"]["field"]) == ("y", "z")
    pick = _param(spec, _is_pick)
    assert sorted(pick["views"]) == sorted([_points(xy)["name"], _points(xz)["name"]])  # a click links both views
    assert _param(spec, _is_search)
    assert _compiles(spec)
    with pytest.raises(ValueError, match="needs a 3-D projection"):
        maps.map_3d(r.proj)
    with pytest.raises(ValueError, match="only 2-D maps come from params"):
        snb.project(np.eye(6), method="pca", n_components=3, cache=False)
    with pytest.raises(ValueError, match="2 or 3 components"):
        snb.plots.ProjectionSettings("pca", n_components=4)


@pytest.mark.slow  # loads real model weights
def test_compare_maps_side_by_side_with_legends_shared_axes_and_the_difference(real):
    ds = real["ds"]
    a, b = real["use-multilingual"], real["random-null"]
    diff = {"diff": a.result.cosine.sa - b.result.cosine.sa, "ci_low": 0.05, "ci_high": 0.12, "p_holm": 0.0004}
    spec = compare_maps({"USE": (a.proj, a.result), "random": (b.proj, b.result)}, dataset=ds, difference=diff).to_dict()
    row, text = spec["vconcat"]
    views = row["hconcat"]
    assert len(views) == 2 and [m["title"]["text"] for m in views] == ["USE", "random"]
    for m, res in zip(views, (a.result, b.result)):
        assert m["title"]["subtitle"][0] == f"SA cosine {res.cosine.sa:.3f} ± {res.cosine.sem:.3f}"
    assert len(views[0]["title"]["subtitle"]) == len(views[1]["title"]["subtitle"])  # the maps line up
    scales = [(_points(m)["encoding"]["x"]["scale"], _points(m)["encoding"]["y"]["scale"]) for m in views]
    assert scales[0] == scales[1] and scales[0][0]["domain"] == [-1.08, 1.08]
    assert {m["width"] for m in views} == {views[0]["width"]} and 2 * views[0]["width"] + 20 <= 900
    for m in views:
        xs = [row["x"] for row in _rows(spec, _points(m), m)]
        assert max(map(abs, xs)) <= 1.0 + 1e-4
    colours = [_points(m)["encoding"]["color"]["scale"] for m in views]
    assert colours[0] == colours[1]
    pick = _param(spec, _is_pick)
    assert sorted(pick["views"]) == sorted(_points(m)["name"] for m in views)  # one concept selection across maps
    line = _rows(spec, text)[0]["comparison"]
    ca = a.result.cosine
    assert f"USE: SA {ca.sa:.3f} [{ca.ci[0]:.3f}, {ca.ci[1]:.3f}]" in line
    assert f"USE − random: {diff['diff']:+.3f} [+0.050, +0.120], Holm-adjusted p = 0.0004" in line
    _compiles(spec)
    four = compare_maps([(a.proj, a.result), (b.proj, b.result)] * 2, dataset=ds, shared_axes=False).to_dict()
    assert [len(r["hconcat"]) for r in four["vconcat"][:-1]] == [2, 2]
    assert "domain" not in _points(four["vconcat"][0]["hconcat"][0])["encoding"]["x"]["scale"]
    _compiles(four)
    with pytest.raises(ValueError, match="2 to 4 maps"):
        compare_maps([(a.proj, a.result)] * 5, dataset=ds)


def test_csc_grid_wraps_to_stay_within_the_output_area():
    corpora = [snb.data.SentenceCorpus.from_sentences(["The train leaves at noon.", "Water the plants every morning.",
                                                  "Plan the weekly budget.", "The cat sleeps on the sofa."],
                                                 language="en", name=f"c{i}") for i in range(5)]
    results = [snb.concept_separation(c, "random-null", n_boot=20, cache=False) for c in corpora]
    spec = snb.plots.csc_grid(results).to_dict()
    assert spec["columns"] == 3 and spec["facet"]["field"] == "panel"
    assert 3 * spec["spec"]["width"] + 2 * 20 <= 900
    labels = {row["panel"] for row in spec["datasets"][spec["data"]["name"]]}
    assert labels == {f"random-null · c{i}" for i in range(5)}
    assert spec["spec"]["layer"][0]["transform"][1]["groupby"][-1] == "panel"  # the shaded overlap survives the wrap
    two = snb.plots.csc_grid(results, columns=2).to_dict()
    assert two["columns"] == 2
    few = snb.plots.csc_grid(results[:3]).to_dict()
    assert few["facet"]["column"]["field"] == "corpus" and 3 * few["spec"]["width"] + 150 <= 900
    _compiles(spec)
    with pytest.raises(ValueError, match="columns must be a positive integer"):
        snb.plots.csc_grid(results, columns=0)


# --------------------------------------------------------------------------- the projection disk cache, PHATE output


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_default_projection_cache_lives_on_disk_beside_the_embedding_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(tmp_path))
    cache = projection.default_projection_cache()
    assert cache.folder == tmp_path / "projections" == snb.models.default_cache_dir() / "projections"
    assert projection.default_projection_cache() is cache  # one per folder per process
    x = np.random.default_rng(0).normal(size=(40, 8))
    first = snb.project(x, method="phate")  # cache=None: the default cache
    assert cache.computed == 1 and len(list((tmp_path / "projections").glob("*.npz"))) == 1
    assert not list((tmp_path / "projections").glob(".*.tmp"))  # atomic writes leave no temporary files
    # a kernel restart: the process-wide caches are gone, the folder is not
    monkeypatch.setattr(projection, "_DEFAULT_CACHES", {})
    again = projection.default_projection_cache()
    assert again is not cache
    second = snb.project(x, method="phate")
    assert second.from_cache and again.computed == 0 and again.disk_hits == 1
    np.testing.assert_array_equal(first.coords, second.coords)
    assert second.notes == first.notes  # the summary of PHATE's messages is stored with the coordinates


@pytest.mark.slow  # loads real model weights
def test_projection_cache_survives_a_new_instance_on_the_same_folder(real, tmp_path):
    r = real["use-multilingual"]
    a = projection.ProjectionCache(folder=tmp_path)
    p1 = snb.plots.project_dataset(real["ds"], r.vectors, settings=snb.plots.ProjectionSettings("phate"), cache=a)
    b = projection.ProjectionCache(folder=tmp_path)
    p2 = snb.plots.project_dataset(real["ds"], r.vectors, settings=snb.plots.ProjectionSettings("phate"), cache=b)
    assert (a.computed, b.computed, b.disk_hits) == (1, 0, 1) and p2.from_cache
    np.testing.assert_array_equal(p1.coords, p2.coords)
    # a 3-D projection is another entry, not the 2-D one
    snb.plots.project_dataset(real["ds"], r.vectors, settings=snb.plots.ProjectionSettings("phate", n_components=3), cache=b)
    assert b.computed == 1 and len(list(tmp_path.glob("*.npz"))) == 2


@pytest.mark.slow  # loads real model weights
def test_phate_messages_are_summarised_once_not_printed(real, capsys):
    r = real["use-multilingual"]
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = snb.plots.project_dataset(real["ds"], r.vectors, settings=snb.plots.ProjectionSettings("phate"), cache=False)
    out = capsys.readouterr()
    assert out.out == "" and out.err == "" and caught == []  # nothing spilled
    assert len(p.notes) == 1 and "\n" not in p.notes[0]  # one line
    note = p.notes[0]
    assert note.startswith("phate: ") and "caught (not printed)" in note
    assert p.provenance["notes"] == list(p.notes)
    # what PHATE said is in the line once, with the numbers of the first occurrence
    assert note.count("SGD-MDS may not have converged") <= 1
    assert projection.summarise_messages("phate", []) is None


@pytest.mark.slow  # loads real model weights
def test_download_link_carries_the_navigable_map_offline(real):
    import base64
    import re

    from semanscope_nb.plots import export

    r = real["use-multilingual"]
    chart = maps.alignment_map(r.proj, r.result, dataset=real["ds"], navigate=True, worst_concepts=5)
    link = export.download_link(chart, "html", filename="map")
    assert link.startswith('<a download="map.html" href="data:text/html;base64,')
    page = base64.b64decode(re.search(r'base64,([^"]+)"', link).group(1)).decode("utf-8")
    assert "cdn.jsdelivr" not in page and "SA cosine" in page and '"input": "search"' in page.replace('":"', '": "')
    assert export.chart_bytes(chart, "svg").startswith(b"<svg")
    with pytest.raises(ValueError, match="format must be one of"):
        export.chart_bytes(chart, "gif")
