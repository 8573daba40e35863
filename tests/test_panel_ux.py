"""ExplorePanel UX (issue 24): a checked state file, what the user did kept, checked number fields,
one number per quantity, a debounced background runner.  Plumbing only: the random-null model, PCA."""

from __future__ import annotations

import html
import json
import re
import threading
import time

import pytest

import semanscope_nb as snb
from semanscope_nb.plots import maps
from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings
from semanscope_nb.widgets import ExplorePanel
from semanscope_nb.widgets.panel_state import MAX_N_BOOT, StateError, read_state


@pytest.fixture
def panel():
    return ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=25, n_boot=50,
                        projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())


# --------------------------------------------------------------------------- the state file


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[1, 2]", r"must be a JSON object, got a JSON list"),
        ('{"projection": {"params": {}}}', r"field 'projection.method' is required"),
        ('{"selection": 5}', r"field 'selection': 5 is not of type 'array'"),
        ('{"n_boot": 2000000}', rf"field 'n_boot': 2000000 is greater than the maximum of {MAX_N_BOOT}"),
        ('{"model": "random-null", "n_boot": 10', r"not valid JSON \(line 1, column \d+: .*\); the file looks truncated"),
        ('{"thresholds": {"great": 0.3, "good": 0.6}}', r"field 'thresholds': great \(0.3\) must be >= good \(0.6\)"),
        ('{"projection": {"method": "umap", "params": {"perplexity": 5}}}', r"field 'projection.params': unknown"),
        ('{"colour": "red"}', r"field 'colour' is not a known key"),
        ('{"projection": {"method": "mds"}}', r"field 'projection.method': 'mds' is not one of"),
    ],
)
def test_a_bad_state_file_names_the_file_and_the_field(tmp_path, content, expected):
    path = tmp_path / "state.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StateError, match=rf"^panel state '{re.escape(str(path))}': {expected}"):
        read_state(path)


def test_the_saved_state_satisfies_its_own_schema(panel, tmp_path):
    panel.select([panel.result.concept_labels[0]])
    saved = read_state(panel.save_state(tmp_path / "s.json"))  # raises if the writer and the schema disagree
    assert saved["selection"] == [panel.result.concept_labels[0]] and saved["n_boot"] == 50


def test_a_bad_state_leaves_the_panel_as_it_was_and_working(panel, tmp_path):
    before, counts = panel.state, dict(panel.counts)
    bad = tmp_path / "bad.json"
    for content in ('{"selection": 5}', "[]", '{"n_boot": 2000000}', '{"model": "random-null"'):
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(StateError, match="bad.json"):
            panel.load_state(bad)
        assert panel.state == before and panel.counts == counts  # nothing was set, nothing recomputed
        assert "bad.json" in html.unescape(panel.message.value)  # the same message, in the panel
    with pytest.raises(StateError, match="bad.json"):
        ExplorePanel.from_state(bad)
    panel.tiers.value = snb.metrics.TierThresholds(great=0.9, good=0.8)  # the panel still works
    assert panel.error is None and panel.result.thresholds.great == 0.9 and panel.message.value == ""


# --------------------------------------------------------------------------- what the user did


def _click(panel, concepts, brush=None):
    """What the map's VegaView reports when the user clicks concepts (and shift-drags a box)."""
    sel = {maps.PARAM_NAMES["pick"]: {"concept": list(concepts)}}
    if brush is not None:
        sel[maps.PARAM_NAMES["brush"]] = brush
    panel.chart_out.selection = sel


def test_clicks_and_brush_go_into_the_saved_state_and_come_back(panel, tmp_path):
    concept = panel.result.concept_labels[2]
    xs, ys = panel.projection.coords[:, 0], panel.projection.coords[:, 1]
    box = {"x": [float(xs.min()), float(xs.mean())], "y": [float(ys.min()), float(ys.mean())]}
    redraws = panel.counts["redraw"]
    _click(panel, [concept], box)
    assert panel.selection == (concept,) and panel.counts["redraw"] == redraws  # the browser shows it already
    inside = [(w, l) for w, l, x, y in zip(panel.projection.words, panel.projection.languages, xs, ys)
              if box["x"][0] <= x <= box["x"][1] and box["y"][0] <= y <= box["y"][1]]
    assert inside and panel.brushed_words == tuple(f"{w} ({l})" for w, l in inside)
    saved = json.loads(panel.save_state(tmp_path / "s.json").read_text(encoding="utf-8"))
    assert saved["selection"] == [concept] and saved["brush"] == box
    assert saved["brushed_words"] == list(panel.brushed_words)
    again = ExplorePanel.from_state(tmp_path / "s.json", projection_cache=ProjectionCache())
    assert again.selection == (concept,) and again.brush == panel.brush and again.state == panel.state
    assert again.brushed_words == panel.brushed_words
    # the restored map starts with the click and the box in place
    params = {p["name"]: p for p in again.spec["params"]}
    assert params[maps.PARAM_NAMES["brush"]]["value"] == box
    assert concept in json.dumps(again.spec, ensure_ascii=False)


def test_exports_carry_the_selection_and_the_search_labels(panel):
    from semanscope_nb.plots.export import chart_bytes

    ds = panel._ds
    concept = panel.result.concept_labels[3]
    row = panel.result.concept_labels.index(concept)
    words = {ds.column(lang)[row][0] for lang in ds.languages}
    panel.select([concept])
    svg = chart_bytes(panel.publication_chart(), "svg").decode("utf-8")
    shown = set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    for w in words:  # the selected concept, labelled in every language
        assert html.escape(w) in shown, (w, sorted(shown)[:40])
    panel.search_box.value = ds.column("en")[5][0]
    svg = chart_bytes(panel.publication_chart(), "svg").decode("utf-8")
    assert html.escape(panel.search_box.value) in set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_a_worst_concept_row_selects_its_concept(panel):
    rows = [c for c in panel.worst_rows.children if hasattr(c, "children")]
    button = rows[0].children[0]
    button.click()
    assert panel.selection == (button.description,) and panel.error is None
    assert button.description == panel.result.concepts_frame()["concept"].iloc[0]


# --------------------------------------------------------------------------- checked fields


@pytest.mark.parametrize(("typed", "says"), [("1.5", "1.50 is outside [0.00, 1.00]"), ("abc", "'abc' is not a number"),
                                            ("-0.2", "-0.20 is outside [0.00, 1.00]")])
def test_a_typed_threshold_out_of_range_shows_a_message_and_keeps_the_last_value(panel, typed, says):
    before, sa = panel.tiers.value, panel.counts["sa"]
    panel.tiers.great_text.text.value = typed
    assert says in html.unescape(panel.tiers.great_text.message.value)
    assert "kept 0.60" in html.unescape(panel.tiers.great_text.message.value) or f"kept {before.great:.2f}" in html.unescape(
        panel.tiers.great_text.message.value)
    assert panel.tiers.value == before and panel.tiers.great_text.text.value == f"{before.great:.2f}"
    assert panel.result.thresholds == before and panel.counts["sa"] == sa
    panel.tiers.great_text.text.value = " 0,9 "  # a valid value clears the message and is used
    assert panel.tiers.great_text.message.value == "" and panel.result.thresholds.great == pytest.approx(0.9)


def test_typed_thresholds_that_would_invert_the_tiers_are_refused_with_a_message(panel):
    before = panel.tiers.value
    panel.tiers.good_text.text.value = "0.95"  # above great
    assert "must be ≥ good" in html.unescape(panel.tiers.message.value) and panel.tiers.value == before
    assert panel.tiers.good_text.text.value == f"{before.good:.2f}"


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_projection_fields_check_their_input(panel):
    panel.projection_picker.method.value = "umap"
    field = panel.projection_picker.n_neighbors
    before = field.value
    for typed in ("2.5", "1000", "many"):
        field.text.value = typed
        assert "neighbours" in field.message.value and field.value == before
    assert panel.error is None


# --------------------------------------------------------------------------- one number per quantity


def test_legend_verdict_table_and_export_show_the_same_gap(panel):
    from semanscope_nb.plots.export import chart_bytes

    r = panel.result
    v = r.verdict_scores
    assert v is not None
    gap = f"{v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}]"
    chance = f"{v.sa_null.value:.3f}"
    legend = next(row["legend"] for row in panel.spec["datasets"][maps.DATA_NAMES["legend"]])
    table = html.unescape(panel.table.value)
    label = html.unescape(panel.sa_label.value)
    svg = html.unescape(chart_bytes(panel.publication_chart(), "svg").decode("utf-8"))
    assert f"SA − chance {gap}" in legend and f"chance {chance}" in legend
    assert f"gap {gap}" in label and f"chance level {chance}" in label  # the verdict sentence
    assert gap in table and chance in table
    assert f"SA − chance {gap}" in svg
    # a number of the other basis (all concepts vs without the artefacts) appears nowhere
    if r.chance_excluding is not None and f"{r.chance.delta.value:+.3f}" != f"{v.delta.value:+.3f}":
        other = f"{r.chance.delta.value:+.3f}"
        assert all(other not in text for text in (legend, table, label, svg))
    # a tier change rewrites the legend in place, with the same numbers
    panel.tiers.value = snb.metrics.TierThresholds(great=0.95, good=0.9)
    legend = next(row["legend"] for row in panel.spec["datasets"][maps.DATA_NAMES["legend"]])
    assert f"SA − chance {gap}" in legend and gap in html.unescape(panel.table.value)


# --------------------------------------------------------------------------- the background runner


def test_five_quick_changes_give_one_computation():
    panel = ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(),
                         background=True, debounce=0.3)
    assert panel.wait(60)
    refreshes = panel.counts["refresh"]
    for great in (0.91, 0.92, 0.93, 0.94, 0.95):  # five quick clicks, each within the debounce of the last
        panel.tiers.value = snb.metrics.TierThresholds(great=great, good=0.5)
    assert panel.wait(60)
    assert panel.counts["refresh"] == refreshes + 1 and panel.result.thresholds.great == 0.95
    assert panel.error is None and not panel.cancelled


def test_a_newer_change_stops_the_running_embedding():
    """The superseded refresh's embedder is told to stop (its should_stop turns true) and returns early."""
    stopped = threading.Event()
    started = threading.Event()

    def embedder(ds, model, *, cache=None, progress=False, should_stop=None):
        if model == "tfidf-char":
            started.set()
            for _ in range(400):  # a long embedding, in batches, asking between them
                if should_stop is not None and should_stop():
                    stopped.set()
                    snb.models.cancel.check_stop(should_stop, "embedding")  # raises Cancelled with the token's reason
                time.sleep(0.025)
        return snb.embed(ds, model, cache=False)

    panel = ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(),
                         background=True, debounce=0.05, embedder=embedder)
    assert panel.wait(60)
    panel.models.value = "tfidf-char"
    assert started.wait(30)
    panel.models.value = "random-null"  # supersedes the running embedding
    assert stopped.wait(5)  # the embedding itself stopped, not only its display
    assert panel.wait(60)
    assert panel.result.provenance["model"] == "random-null" and panel.error is None
    assert [h["outcome"].split(":")[0] for h in panel.history][-2:] == ["stopped", "done"]
    assert panel.history[-2]["outcome"] == "stopped: embedding: superseded by a newer change"


# --------------------------------------------------------------------------- embedding batches sized for stopping


def test_embedding_batches_are_sized_so_that_a_stop_is_honoured_quickly(tmp_path, dict_encoder, monkeypatch):
    """A slow encoder (20 ms a text): batches after the first take about STOP_LATENCY; a stop ends after one batch."""
    from semanscope_nb.models import cache as cache_mod

    monkeypatch.setattr(cache_mod, "STOP_LATENCY", 0.2)
    texts = [f"w{i}" for i in range(200)]
    enc = dict_encoder({t: [1.0, float(i)] for i, t in enumerate(texts)})
    sizes: list[int] = []
    original = enc._encode

    def slow(part):
        sizes.append(len(part))
        time.sleep(0.02 * len(part))
        return original(part)

    enc._encode = slow
    stop_after = 3

    def should_stop():
        return len(sizes) >= stop_after

    with pytest.raises(snb.errors.Cancelled, match="new texts done"):
        snb.EmbeddingCache(tmp_path).embed(enc, texts, batch_size=128, should_stop=should_stop)
    assert sizes[0] == 8  # a small first batch measures the speed
    assert all(5 <= n <= 15 for n in sizes[1:]), sizes  # then ~0.2 s / 0.02 s = 10 texts a batch, not 128
    assert len(sizes) == stop_after  # nothing was encoded after the stop was asked for
    # without should_stop the caller's batch size is used as is
    sizes.clear()
    snb.EmbeddingCache(tmp_path / "other").embed(enc, texts[:150], batch_size=128)
    assert sizes == [128, 22]


# --------------------------------------------------------------------------- SA results kept across restarts


def test_sa_results_come_back_from_disk_after_a_restart(tmp_path):
    from semanscope_nb.widgets.explore import SAStore

    store = SAStore(tmp_path / "sa")
    opts = dict(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=40,
                projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())
    first = ExplorePanel(sa_store=store, **opts)
    assert first.counts["sa_disk"] == 0 and store.misses == 1 and len(list((tmp_path / "sa").glob("*.json"))) == 1
    again = ExplorePanel(sa_store=SAStore(tmp_path / "sa"), **opts)  # a new process would see the same files
    assert again.counts["sa_disk"] == 1 and again.error is None
    a, b = first.result, again.result
    assert (a.cosine.sa, a.cosine.ci, a.tier, a.verdict) == (b.cosine.sa, b.cosine.ci, b.tier, b.verdict)
    assert list(a.concept_labels) == list(b.concept_labels)
    # another bootstrap, or other vectors, is another key
    emb = again._vectors.get(again.state.embed_key)
    assert store.key(emb, n_boot=40, seed=0) != store.key(emb, n_boot=41, seed=0)
    changed = dict(emb.vectors[emb.languages[0]])
    word = next(iter(changed))
    changed[word] = changed[word] + 1e-3
    import dataclasses

    other = dataclasses.replace(emb, vectors={**emb.vectors, emb.languages[0]: changed})
    assert store.key(emb, n_boot=40, seed=0) != store.key(other, n_boot=40, seed=0)
    # a damaged file is a miss: recomputed and rewritten
    (path,) = (tmp_path / "sa").glob("*.json")
    path.write_text('{"cosine": ', encoding="utf-8")
    third = ExplorePanel(sa_store=SAStore(tmp_path / "sa"), **opts)
    assert third.counts["sa_disk"] == 0 and third.sa_store.errors == 1 and third.result.cosine.sa == a.cosine.sa
    assert SAStore(tmp_path / "sa").get(emb, n_boot=40, seed=0) is not None


# --------------------------------------------------------------------------- the legend never covers data


def _legend_case(coords=None):
    import dataclasses

    import numpy as np

    ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(30))
    emb = snb.embed(ds, "random-null", cache=False)
    p = snb.run_task("projection", emb, method="pca")
    if coords is not None:
        p = dataclasses.replace(p, coords=np.asarray(coords(len(p)), dtype=float))
    return ds, p, snb.run_task("sa", emb, n_boot=20)


def test_an_auto_legend_sits_where_no_point_lies_else_above_the_map():
    import numpy as np

    diagonal = lambda n: np.array([[i, i] for i in range(n)], dtype=float)  # noqa: E731 - two empty corners
    ds, p, r = _legend_case(diagonal)
    width, height, size = 800, 500, 60
    spec = maps.alignment_map(p, r, dataset=ds, legend_position="auto", width=width, height=height,
                              point_size=size).to_dict()
    points, box = spec["layer"][0], spec["layer"][-2]
    assert points["mark"]["type"] == "point" and box["mark"]["type"] == "rect"
    (x0, x1), (y0, y1) = points["encoding"]["x"]["scale"]["domain"], points["encoding"]["y"]["scale"]["domain"]
    e = box["encoding"]
    bx0, bx1, by0, by1 = e["x"]["value"], e["x2"]["value"], e["y"]["value"], e["y2"]["value"]
    radius = (size ** 0.5) / 2
    for x, y in p.coords[:, :2]:  # each point in pixels, as Vega's linear scales place it; none under the box
        px = (x - x0) / (x1 - x0) * width
        py = height - (y - y0) / (y1 - y0) * height
        assert not (bx0 - radius <= px <= bx1 + radius and by0 - radius <= py <= by1 + radius), (px, py, e)
    # points in every corner: no corner is free, the legend goes above the map
    grid = lambda n: np.array([[i % 6, i // 6] for i in range(n)], dtype=float)  # noqa: E731 - a 6-wide lattice
    ds, p, r = _legend_case(grid)
    spec = maps.alignment_map(p, r, dataset=ds, legend_position="auto", width=width, height=height).to_dict()
    assert "vconcat" in spec and spec["vconcat"][0]["mark"]["type"] == "text"  # the header holds the legend
    assert all(u["mark"]["type"] != "rect" for u in spec["vconcat"][1]["layer"])


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_a_compare_panel_says_why_it_is_blank_until_compare_is_pressed():
    from semanscope_nb.widgets import ComparePanel

    cp = ComparePanel(slots=[{"model": "random-null", "dataset": "edge-cases"},
                             {"model": "tfidf-char", "dataset": "edge-cases"}], auto=False)
    assert "press <b>Compare</b>" in cp.status.value and cp.comparison is None
    cp.compare_button.click()
    assert "press" not in cp.status.value and (cp.comparison is not None or cp.error)
