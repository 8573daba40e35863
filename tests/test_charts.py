"""Chart specs, asserted through to_dict(): marks, encodings, data, the SA legend's text, tooltips."""

from __future__ import annotations

import math

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import affinity_of_words
from semanscope_nb.plots import charts, leaderboard, legend, maps, sa_figures
from semanscope_nb.plots.projection import ProjectionSettings, project_dataset
from semanscope_nb.runs.evaluate import aligned_words
from chart_gallery import sa_table


@pytest.fixture(scope="module")
def small():
    ds = snb.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(40))
    vectors = snb.embed(ds, "random-null", cache=False).vectors
    result = affinity_of_words(aligned_words(ds, vectors), n_boot=200, seed=0).with_provenance(model="random-null", dataset=ds.name)
    proj = project_dataset(ds, vectors, settings=ProjectionSettings("pca"), cache=False)
    return ds, vectors, result, proj


def _datasets(spec):
    return spec["datasets"]


def _rows(spec, layer):
    """The inline rows a layer draws (its own data, the nearest owner's, or the chart's top-level data)."""
    return list(spec["datasets"][(layer.get("data") or spec["data"])["name"]])  # inline rows are a tuple (no copies)


def _units(spec, owner_data=None):
    """Every unit (mark-carrying) spec, depth first, with the data it inherits filled in."""
    data = spec.get("data", owner_data)
    if "mark" in spec:
        yield {**spec, "data": data} if data is not None else spec
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _units(sub, data)


def _layer(spec, mark):
    """The units of ``mark`` anywhere in the spec (a map sits under its legend header, beside its side panels)."""
    return [u for u in _units(spec) if (u["mark"]["type"] if isinstance(u["mark"], dict) else u["mark"]) == mark]


def test_sa_legend_text_equals_the_computed_values(small):
    ds, _, r, p = small
    spec = maps.alignment_map(p, r, dataset=ds, legend_position="top-right").to_dict()
    (text_layer,) = _layer(spec, "text")
    assert text_layer["encoding"]["text"]["field"] == "legend"
    assert text_layer["mark"]["align"] == "right" and text_layer["mark"]["baseline"] == "top"
    assert text_layer["encoding"]["x"]["value"] > 400 and text_layer["encoding"]["y"]["value"] < 20  # top-right
    (values,) = [v for v in _rows(spec, text_layer)]
    assert values["legend"] == legend.sa_legend_text(r)
    assert values["legend"].startswith(f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}\nSA Euclidean {r.euclidean.sa:.3f}\n"
                                       f"tier: {r.tier}")
    v = r.verdict_scores
    assert f"chance {v.sa_null.value:.3f}" in values["legend"]
    # the tier line follows the thresholds without recomputation
    strict = r.with_thresholds(snb.metrics.TierThresholds(great=0.0, good=0.0))
    spec2 = maps.alignment_map(p, strict, dataset=ds, legend_position="top-right").to_dict()
    (t2,) = _layer(spec2, "text")
    assert "paper: great" in _rows(spec2, t2)[0]["legend"] or _rows(spec2, t2)[0]["legend"].split("\n")[2] == "tier: great"


def test_map_points_colour_shape_tooltip_and_click_selection(small):
    ds, _, r, p = small
    spec = maps.alignment_map(p, r, dataset=ds).to_dict()
    (points,) = _layer(spec, "point")
    enc = points["encoding"]
    assert enc["color"]["field"] == "language" and enc["shape"]["field"] == "shape_group"
    assert {t["field"] for t in enc["tooltip"]} >= {"word", "language", "concept", "translations", "inter_cosine"}
    (param,) = spec["params"]
    assert param["select"] == {"type": "point", "fields": ["concept"], "on": "click", "clear": "dblclick"}
    assert enc["opacity"]["condition"]["param"] == param["name"]
    rows = _rows(spec, points)
    n_points = sum(len(ds.words(lang)) for lang in ds.languages)
    assert len(rows) == n_points == len(p)
    # every point carries its word, language, concept and the concept's inter distance (loop check)
    inter = dict(zip(r.concept_labels, r.concept_inter_cosine))
    by_word = {(row["language"], row["word"]): row for row in rows}
    for k, row in enumerate(ds.rows):
        label = maps.row_label(row)
        for lang, cell in zip(ds.languages, row):
            rec = by_word[(lang, cell[0])]
            if rec["concept"] == label:  # a word shared by several rows keeps its first row's concept
                assert rec["inter_cosine"] == pytest.approx(inter[label], abs=1e-4)
                other = [o for o in ds.languages if o != lang][0]
                assert f"{other}: {'|'.join(row[ds.languages.index(other)])}" in rec["translations"]
    assert spec["title"] == "random-null · edge-cases"


def test_translation_lines_join_each_concept(small):
    ds, _, r, p = small
    spec = maps.alignment_map(p, r, dataset=ds, lines=True).to_dict()
    (line,) = _layer(spec, "line")
    assert line["encoding"]["detail"]["field"] == "concept"
    verts = _rows(spec, line)
    assert len(verts) == len(ds) * 2  # one vertex per (concept, language)
    assert not _layer(maps.alignment_map(p, r, dataset=ds).to_dict(), "line")


def test_map_over_5000_points_renders_to_a_spec():
    rng = np.random.default_rng(0)
    n = 6000
    words = [f"w{i}" for i in range(n)]
    p = snb.project(rng.normal(size=(n, 5)), method="pca", words=words, languages=["en"] * (n // 2) + ["zh"] * (n // 2), cache=False)
    spec = maps.alignment_map(p).to_dict()  # Altair's DataFrame guard would raise MaxRowsError here
    (points,) = _layer(spec, "point")
    assert len(_rows(spec, points)) == n
    import altair as alt

    assert alt.data_transformers.options.get("max_rows", 5000) == 5000  # the user's global setting is untouched


def test_projection_without_labels_is_refused():
    p = snb.project(np.random.default_rng(0).normal(size=(10, 3)), method="pca", cache=False)
    with pytest.raises(ValueError, match="no words/languages"):
        maps.alignment_map(p)


def _table():
    return sa_table()  # tests/chart_gallery.py: the same seeded table the chart gallery renders


def test_tier_bar_chart_is_figure_1():
    table = _table()
    spec = sa_figures.tier_bar_chart(table).to_dict()
    bars = _layer(spec, "bar")[0]
    data = _rows(spec, bars)
    # averages by a plain loop
    for rec in data:
        vals = [r.sa_cosine for r in table.itertuples() if r.model == rec["model"]]
        assert rec["avg_sa"] == pytest.approx(sum(vals) / len(vals), abs=1e-4)
        assert rec["tier"] == snb.metrics.DEFAULT_TIERS.classify(sum(vals) / len(vals))
    assert bars["encoding"]["color"]["field"] == "tier"
    assert [d["avg_sa"] for d in data] == sorted((d["avg_sa"] for d in data), reverse=True)
    rules = _layer(spec, "rule")[0]
    assert sorted(v["threshold"] for v in _rows(spec, rules)) == [0.5, 0.6]


def test_heatmap_is_figure_2():
    table = _table()
    spec = sa_figures.sa_heatmap(table).to_dict()
    rect, text = _layer(spec, "rect")[0], _layer(spec, "text")[0]
    assert rect["encoding"]["color"]["scale"]["scheme"] == "redyellowgreen"
    assert rect["encoding"]["x"]["field"] == "dataset" and rect["encoding"]["y"]["field"] == "name"
    assert text["encoding"]["text"]["format"] == ".3f"
    assert len(_rows(spec, rect)) == 6


def test_map_grid_is_figure_3(small):
    ds, _, r, p = small
    four = [maps.alignment_map(p, r, dataset=ds, width=200, height=150) for _ in range(4)]
    spec = maps.map_grid(four, title="four").to_dict()
    assert len(spec["vconcat"]) == 2 and all(len(row["hconcat"]) == 2 for row in spec["vconcat"])
    names = [prm["name"] for prm in spec.get("params", [])]
    assert len(names) == len(set(names)) == 4  # one click selection per map, no name clash
    with pytest.raises(ValueError, match="at least one chart"):
        maps.map_grid([])


def test_worst_concepts_ranking(small):
    _, _, r, _ = small
    spec = sa_figures.worst_concepts_chart(r, n=5).to_dict()
    data = _rows(spec, spec)
    ranked = sorted(zip(r.concept_inter_cosine, r.concept_labels), reverse=True)[:5]
    assert [d["concept"] for d in data] == [label for _, label in ranked]
    assert spec["encoding"]["y"]["sort"] == "-x"  # by bar length: worst on top, the same chart for any result


def test_leaderboard_table_like_d1_and_d2():
    table = _table()
    wide = leaderboard.leaderboard_wide(table)
    assert list(wide.columns) == ["conceptual-space", "edge-cases", "Avg SA"]
    top = table[table.model == "use-multilingual"]
    cell = wide.loc["USE-MULTILINGUAL", "edge-cases"]
    v = float(top[top.dataset == "edge-cases"].sa_cosine.iloc[0])
    assert cell == f"{v:.3f} ± 0.010"
    assert wide["Avg SA"].is_monotonic_decreasing
    html = leaderboard.leaderboard_table(table).to_html()
    assert "Cosine Distance - PRIMARY" in html and "background-color" in html
    html2 = leaderboard.leaderboard_table(table, distance="euclidean").to_html()
    assert "Euclidean Distance - SUPPLEMENTARY" in html2
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['sa_cosine'\]"):
        leaderboard.leaderboard_wide(table.drop(columns="sa_cosine"))


@pytest.mark.slow
def test_map_legend_on_real_model(shared_cache_dir):
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(30))
    cache = snb.EmbeddingCache(shared_cache_dir)
    r = snb.dataset_affinity(ds, "use-multilingual", n_boot=200, cache=cache)  # >= 200: a tier can be called
    vectors = snb.embed(ds, "use-multilingual", cache=cache).vectors
    p = project_dataset(ds, vectors, settings=ProjectionSettings("phate"), cache=False)
    spec = maps.alignment_map(p, r, dataset=ds).to_dict()
    (text_layer,) = _layer(spec, "text")
    legend = _rows(spec, text_layer)[0]["legend"]
    first = legend.splitlines()[0]
    assert first == f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}" and math.isfinite(r.cosine.sem)
    tier_line = legend.splitlines()[2]
    assert tier_line.startswith(f"tier: {r.tier}")
    assert (f"(paper: {r.paper_tier})" in tier_line) == (r.tier != r.paper_tier), tier_line  # the paper's tier when they differ


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_the_old_charts_module_resolves_every_name_to_its_new_module_with_a_warning():
    import importlib
    import subprocess
    import sys

    moved = {"maps": {"alignment_map", "map_3d", "map_grid", "map_frame", "row_label", "SHAPES", "NAV_FEATURES"},
             "legend": {"sa_legend_text", "LEGEND_POSITIONS", "THEMES"},
             "sa_figures": {"model_means", "tier_bar_chart", "sa_heatmap", "pair_heatmap", "PAIR_COLUMNS", "worst_concepts_chart"},
             "leaderboard": {"leaderboard_wide", "leaderboard_table"}, "chart_kit": {"inline", "language_scale"}}
    for module, names in moved.items():
        new = importlib.import_module(f"semanscope_nb.plots.{module}")
        for name in names:
            with pytest.warns(DeprecationWarning, match=rf"semanscope_nb\.plots\.charts\.{name} moved to semanscope_nb\.plots\.{module}\.{name};"):
                assert getattr(charts, name) is getattr(new, name)
    assert set().union(*moved.values()) <= set(charts.__all__) <= set(dir(charts))
    with pytest.warns(DeprecationWarning, match="semanscope_nb.plots.palette.TIER_COLOURS"):
        from semanscope_nb.plots.charts import TIER_COLOURS
    assert TIER_COLOURS is snb.plots.palette.TIER_COLOURS
    with pytest.raises(AttributeError, match="_map_view"):  # the private pieces are not carried over
        charts._map_view  # noqa: B018
    # importing the old module (and the package) warns about nothing
    code = "import warnings; warnings.simplefilter('error'); import semanscope_nb.plots.charts"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
