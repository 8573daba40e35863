"""CSC charts: specs checked through ``to_dict()`` (marks, encodings, data, text); nothing is displayed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_csc import SENTS, BagEncoder

import semanscope_nb as snb
from semanscope_nb.plots.csc_charts import FUZZ_LABEL, NEG_LABEL, OVERLAP_LABEL, auto_x_domain, curves_frame


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, sents in (("tiny", SENTS), ("tiny2", SENTS[:4])):
        corpus = snb.SentenceCorpus.from_sentences(sents, language="en", name=name)
        for model in (BagEncoder(), "random-null"):
            r = snb.concept_separation(corpus, model, n_boot=50, cache=False, length_buckets=(0, 5))
            out[(r.model, r.corpus)] = r
    return out


def _datasets(spec):
    return spec.get("datasets", {})


def _layer_data(spec, layer):
    name = layer.get("data", {}).get("name") or spec.get("data", {}).get("name")
    return _datasets(spec)[name]


def test_single_chart_spec(results):
    r = results[("bag-fake", "tiny")]
    spec = snb.csc_chart(r).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["area", "line", "point", "rule", "text", "text"]
    assert spec["title"] == f"bag-fake · tiny (en, n={r.n_sentences})"
    area, line = spec["layer"][0], spec["layer"][1]
    assert area["encoding"]["x"]["field"] == "similarity" and area["encoding"]["y"]["field"] == "density"
    assert area["transform"] == [{"filter": f"(datum.curve === '{OVERLAP_LABEL}')"}]
    assert line["encoding"]["color"]["scale"]["domain"] == [FUZZ_LABEL, NEG_LABEL]
    rows = _layer_data(spec, line)
    overlap_rows = [d for d in rows if d["curve"] == OVERLAP_LABEL]
    fuzz_rows = {d["similarity"]: d["density"] for d in rows if d["curve"] == FUZZ_LABEL}
    neg_rows = {d["similarity"]: d["density"] for d in rows if d["curve"] == NEG_LABEL}
    assert all(d["density"] == pytest.approx(min(fuzz_rows[d["similarity"]], neg_rows[d["similarity"]])) for d in overlap_rows)
    # the score and interval in the corner, as text computed from the result
    label = _layer_data(spec, spec["layer"][4])[0]["text"]
    assert label == f"overlap {r.overlap:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] 95% CI"
    assert spec["layer"][4]["mark"]["x"] == 6 and spec["layer"][4]["mark"]["align"] == "left"
    # hover: a nearest-point selection on the rule whose tooltip shows similarity and both densities
    rule = spec["layer"][3]
    params = rule.get("params") or spec["params"]  # altair hoists layer params to the top level
    hover = next(p for p in params if p["name"] == "csc_hover")
    assert hover["select"]["nearest"] is True and hover["select"]["on"] == "pointerover"
    assert rule["encoding"]["opacity"]["condition"]["param"] == "csc_hover"
    assert [t["field"] for t in rule["encoding"]["tooltip"]] == ["similarity", "fuzzed", "negated", "shared"]


def test_x_domain_options(results):
    r = results[("bag-fake", "tiny")]
    full = snb.csc_chart(r, x_domain="full").to_dict()
    assert full["layer"][0]["encoding"]["x"]["scale"]["domain"] == [-1.0, 1.0]
    lo, hi = auto_x_domain([r])
    assert -1 <= lo < hi <= 1
    inside = r.curves.grid[(r.curves.grid >= lo) & (r.curves.grid <= hi)]
    mass = r.curves.fuzz[(r.curves.grid >= lo) & (r.curves.grid <= hi)].sum()
    assert mass > 0.999 and inside.size > 10
    df = curves_frame(r, x_domain=(lo, hi), max_points=50)
    assert set(df.curve) == {FUZZ_LABEL, NEG_LABEL, OVERLAP_LABEL} and (df.curve == FUZZ_LABEL).sum() <= 50


def test_grid_spec(results):
    spec = snb.csc_grid(results).to_dict()
    assert spec["facet"]["row"]["field"] == "model" and spec["facet"]["column"]["field"] == "corpus"
    marks = [layer["mark"]["type"] for layer in spec["spec"]["layer"]]
    assert marks == ["area", "line", "text"]
    rows = _datasets(spec)[spec["data"]["name"]]
    labels = {(d["model"], d["corpus"]): d["label"] for d in rows if d["curve"] == "label"}
    area = spec["spec"]["layer"][0]
    assert area["transform"][1]["pivot"] == "curve" and "min(" in area["transform"][2]["calculate"]
    assert set(labels) == set(results)
    r = results[("random-null", "tiny2")]
    assert labels[("random-null", "tiny2")].startswith(f"{r.overlap:.3f} [")
    with pytest.raises(ValueError, match="at least one"):
        snb.csc_grid({})
    zoomed = snb.csc_grid(results, x_domain="per-panel").to_dict()
    assert zoomed["resolve"]["scale"]["x"] == "independent" and spec["resolve"]["scale"]["x"] == "shared"


def test_grid_is_not_stopped_by_altairs_row_guard(results):
    many = {(f"m{i}", c): r for i in range(30) for (m, c), r in results.items()}
    spec = snb.csc_grid(list(many.values()), max_points=121).to_dict()
    assert len(_datasets(spec)[spec["data"]["name"]]) > 5000


def test_heatmap_spec(results):
    spec = snb.csc_heatmap(results).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["rect", "text", "text"]
    rect = spec["layer"][0]
    assert rect["encoding"]["color"]["field"] == "overlap" and rect["encoding"]["color"]["scale"]["domain"] == [0, 1]
    rows = _datasets(spec)[spec["data"]["name"]]
    assert len(rows) == len(results)
    for d in rows:
        r = results[(d["model"], d["corpus"])]
        assert d["overlap"] == pytest.approx(r.overlap)
        assert d["cell"] == f"{r.overlap:.3f}" + ("*" if r.separation < 0 else "")
        assert d["interval"] == f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]"  # the point's decimals (chart_kit.format_estimate)
    assert spec["layer"][1]["encoding"]["text"]["field"] == "cell"


def test_heatmap_headers_never_run_into_each_other_and_the_legend_sits_beside_the_grid(results):
    from semanscope_nb.plots import csc_charts

    def header(spec):
        return spec["layer"][0]["encoding"]["x"]["axis"]

    spec = snb.csc_heatmap(results).to_dict()
    names = {d["corpus"] for d in _datasets(spec)[spec["data"]["name"]]}
    ax = header(spec)
    # level headers only when the longest one fits its column; otherwise slanted and cut
    if max(map(len, names)) * csc_charts.HEADER_CHAR_PX <= 110 - 8:
        assert ax["labelAngle"] == 0 and ax["labelLimit"] <= 110
    else:
        assert ax["labelAngle"] != 0
    long = pd.DataFrame([{"model": m, "corpus": c, "overlap": 0.3, "separation": 0.1, "ci_low": 0.2, "ci_high": 0.4}
                         for m in ("a", "b") for c in ("ess-questions-en-100", "ess-questions-zh-100", "x")])
    ax = header(snb.csc_heatmap(long, cell_width=90).to_dict())
    assert ax["labelAngle"] == -40 and ax["labelAlign"] == "left" and ax["labelLimit"] == csc_charts.HEADER_LIMIT
    legend = spec["layer"][0]["encoding"]["color"]["legend"]
    assert legend["orient"] == "right" and legend["gradientLength"] >= 60


def test_length_chart_spec(results):
    r = results[("bag-fake", "tiny")]
    spec = snb.csc_length_chart(r).to_dict()
    rows = _datasets(spec)[spec["data"]["name"]]
    assert [d["bucket"] for d in rows] == ["0-5", ">=5"]
    assert [d["n_sentences"] for d in rows] == [b["n_sentences"] for b in r.buckets]
    no_buckets = snb.concept_separation(SENTS, BagEncoder(), language="en", n_boot=0, cache=False)
    with pytest.raises(ValueError, match="no length buckets"):
        snb.csc_length_chart(no_buckets)


def test_chart_renders_offline_with_vl_convert(results):
    vlc = pytest.importorskip("vl_convert")
    svg = vlc.vegalite_to_svg(snb.csc_chart(results[("bag-fake", "tiny")]).to_json())
    assert svg.startswith("<svg") and "overlap" in svg


def test_importing_the_package_does_not_import_altair():
    code = "import sys, semanscope_nb as snb; snb.csc_chart; print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_curves_sum_to_one_in_the_chart_data(results):
    r = results[("random-null", "tiny")]
    df = curves_frame(r, max_points=10_000)
    assert np.isclose(df[df.curve == FUZZ_LABEL].density.sum(), 1.0)
