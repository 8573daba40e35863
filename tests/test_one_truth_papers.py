"""One question, one answer for the papers other than SA: retrieval, alignment, CSC -- the function vs the task vs
the panel vs the chart data vs a saved result; plus the panel's threshold fields (what is shown is what is used).
tfidf-char / random-null models on small real data (edge-cases, MUSE en-de, csc-everyday-en); the cross-path tests
build several embeddings and charts, so they are marked slow."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from semanscope_nb.widgets import ExplorePanel
from semanscope_nb.widgets.pickers import TierThresholdsPicker
from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings


# --------------------------------------------------------------------------- the panel's threshold fields


@pytest.fixture(scope="module")
def panel():
    # built without computing (auto=False): the thresholds the panel's state records are what the verdict uses
    return ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=25, n_boot=50, auto=False,
                        projection=ProjectionSettings("pca"), projection_cache=ProjectionCache())


@pytest.mark.slow  # the panel recomputes its verdict (random-null, ~5 s) when the threshold changes
def test_a_typed_threshold_is_shown_as_the_number_the_panel_uses(panel):
    """Typing 0.605 used 0.605 but showed "0.60": the text must read back as the threshold the verdict uses."""
    panel.tiers.great_text.text.value = "0.605"
    assert panel.state.thresholds.great == 0.605 == float(panel.tiers.great_text.text.value)


@pytest.mark.parametrize(("field", "typed"), [("great_text", "0.605"), ("good_text", "0.125"), ("great_text", "0,6789")])
def test_a_typed_threshold_is_shown_as_the_number_used(field, typed):
    tiers = TierThresholdsPicker(value=(0.7, 0.1))
    getattr(tiers, field).text.value = typed
    used = tiers.value.great if field == "great_text" else tiers.value.good
    assert used == float(typed.replace(",", "."))
    assert float(getattr(tiers, field).text.value) == used  # what a reader sees is what is used


def test_a_round_threshold_keeps_its_two_decimals_and_a_set_value_is_shown_exactly():
    tiers = TierThresholdsPicker()
    tiers.value = (0.7, 0.5)
    assert (tiers.great_text.text.value, tiers.good_text.text.value) == ("0.70", "0.50")
    tiers.value = (0.7125, 0.5)  # set in code (a state file, the API): shown exactly too
    assert float(tiers.great_text.text.value) == tiers.value.great == 0.7125


def test_an_inverted_typed_pair_message_names_the_numbers_as_typed():
    tiers = TierThresholdsPicker()
    tiers.value = (0.605, 0.6)
    tiers.good_text.text.value = "0.6055"
    assert "great (0.605) must be ≥ good (0.6055)" in tiers.message.value
    assert tiers.value.good == 0.6 and tiers.good_text.text.value == "0.60"


def test_every_float_field_shows_the_number_it_holds():
    # the projection fields (min_dist, perplexity) use the default format "{:g}", which showed 6 significant digits
    from semanscope_nb.widgets.pickers import NumberField

    f = NumberField(value=0.1, min=0.0, max=1.0, description="min_dist")
    assert f.text.value == "0.1"
    f.text.value = "0.1234567"
    assert f.value == 0.1234567 and float(f.text.value) == f.value

# --------------------------------------------------------------------------- CSC: the panel, the chart, the task, a saved result


def _chart_texts(spec):
    """Every literal text a chart spec's datasets hold (the overlap label is one)."""
    return [row["text"] for rows in spec.get("datasets", {}).values() for row in rows if "text" in row]


@pytest.mark.slow  # a CSC run through the panel: seconds
@pytest.mark.parametrize("n_boot", [0])  # no interval: the case the two labels differed most (~5 s under load, mostly imports)
def test_the_csc_panel_says_what_its_chart_says(tmp_path, n_boot):
    # path A: the panel's status line; path B: the chart's overlap label (plots.csc_charts.overlap_label).  Before the
    # fix the panel formatted its own line: no confidence level, and "[n/a, n/a]" where the chart shows no interval
    import semanscope_nb as snb
    from semanscope_nb.plots.csc_charts import overlap_label
    from semanscope_nb.widgets.csc_panel import CSCPanel, CSCPanelState, run_csc

    cache = snb.EmbeddingCache(tmp_path / "c")
    p = CSCPanel(model="random-null", corpus="csc-everyday-en", cache=cache)
    state = CSCPanelState("random-null", "csc-everyday-en", "en", max_sentences=12, n_boot=n_boot)
    r = p.run(state)
    label = overlap_label(r)
    assert label in _chart_texts(p.chart.to_dict())
    assert p.status.value == f"{label} · {r.n_sentences} sentences"
    assert run_csc(state, cache=cache).overlap == r.overlap  # the task's number, through the panel's state


# --------------------------------------------------------------------------- retrieval (lexicon induction), alignment


def _spec(chart) -> str:
    """A chart's spec as text, minus Altair's view / parameter counters (they differ between two builds)."""
    import json
    import re

    return re.sub(r'"(view|param|selector)_\d+"', '"X"', json.dumps(chart.to_dict(), sort_keys=True, default=str))


@pytest.fixture(scope="module")
def en_de():
    from semanscope_nb.data import load_dataset

    return load_dataset("edge-cases", languages=["en", "de"])  # real words; identical strings across languages tie


@pytest.mark.slow  # several embeddings and Altair builds: seconds, not milliseconds
def test_retrieval_function_task_blocks_chart_and_saved_result_give_one_answer(en_de, tmp_path):
    # paths: lexicon_induction (blocks of 7 rows, auto) | the retrieval task (what `semanscope run retrieval` and the grid
    # run) | the charts' frames | Result.load of the saved task.  Agreed on main; kept as a guard of the paths
    import semanscope_nb as snb
    from semanscope_nb.metrics.retrieval import lexicon_induction
    from semanscope_nb.plots import retrieval_charts as rc
    from semanscope_nb.results import Result

    runs = [lexicon_induction(en_de, "tfidf-char", source="en", target="de", ks=(1, 5, 10), n_boot=50, seed=0,
                              cache=False, block=b) for b in (None, 7)]
    task = snb.run_task("retrieval", en_de, "tfidf-char", ks=[1, 5, 10], n_boot=50, seed=0, cache=False)
    assert list(task.pairs) == ["en->de"]
    via_task = task.pairs["en->de"]
    for r in [*runs[1:], via_task]:  # decisions exactly equal: ranks and top-1 predictions, both directions
        for a, b in ((runs[0], r), (runs[0].reverse, r.reverse)):
            assert (a.direction, a.ks) == (b.direction, b.ks)
            np.testing.assert_array_equal(a.ranks, b.ranks)
            np.testing.assert_array_equal(a.predictions, b.predictions)
            assert a.accuracy == b.accuracy and a.intervals == b.intervals  # counts over the same ranks: exact
    f = runs[0]
    assert (f.direction, f.reverse.direction) == ("en->de", "de->en")
    assert task.main_score == task.p_at_1 == f.accuracy[1]
    for d in (f, f.reverse):  # P@1 <= P@5 <= P@10, and each is the share of ranks <= k (an independent count)
        assert [d.accuracy[k] for k in d.ks] == sorted(d.accuracy[k] for k in d.ks)
        assert all(d.accuracy[k] == sum(int(x) <= k for x in d.ranks) / len(d.ranks) for k in d.ks)
    shares = rc.rank_frame(f).set_index(["direction", "rank"])["queries"]
    for d in (f, f.reverse):
        assert all(sum(shares[(d.direction, str(i))] for i in range(1, k + 1)) == sum(int(x) <= k for x in d.ranks)
                   for k in d.ks)
    path = task.save(tmp_path / "retrieval.json")
    back = Result.load(path)
    assert back.main_score == task.main_score
    assert rc.accuracy_frame(dict(back.pairs)).equals(rc.accuracy_frame(dict(task.pairs)))
    assert _spec(rc.accuracy_at_k_chart(dict(back.pairs))) == _spec(rc.accuracy_at_k_chart(dict(task.pairs)))
    assert _spec(rc.rank_histogram(dict(back.pairs))) == _spec(rc.rank_histogram(dict(task.pairs)))


@pytest.mark.slow  # several embeddings and Altair builds: seconds, not milliseconds
def test_the_alignment_reports_p_at_k_is_the_retrieval_tasks_and_survives_a_save(tmp_path):
    # paths: runs.alignment_report's table row | the retrieval task on the dictionary's own dataset | the bdi task's
    # nearest-neighbour P@K | Result.load.  Agreed on main; kept as a guard
    import semanscope_nb as snb
    from semanscope_nb.data import BilingualDictionary, read_muse_dictionary
    from semanscope_nb.results import Result
    from semanscope_nb.runs import alignment_report

    muse = read_muse_dictionary("en-de")
    d = BilingualDictionary(muse.name, "en", "de", tuple(muse.pairs[:300]))
    rep = alignment_report({"before": "tfidf-char", "null": "random-null"}, d, ks=(1, 5, 10), n_boot=50, seed=0, cache=False)
    ds = d.as_dataset(name=d.name)
    task = snb.run_task("retrieval", ds, "tfidf-char", ks=[1, 5, 10], n_boot=50, seed=0, cache=False).pairs["en->de"]
    bdi = snb.run_task("bdi", ds, "tfidf-char", ks=[1, 5, 10], n_boot=0, seed=0, cache=False, method="nn")
    row = rep.table.set_index("stage").loc["before"]
    assert [row["P@1"], row["P@5"], row["P@10"]] == [task.accuracy[k] for k in (1, 5, 10)] == \
        [bdi.accuracy[k] for k in (1, 5, 10)]
    assert row["reverse P@1"] == task.reverse.accuracy[1]
    for _, r in rep.table.iterrows():
        assert r["P@1"] <= r["P@5"] <= r["P@10"] and r["n_queries"] == task.n_queries
    path = rep.save(tmp_path / "report.json")
    back = Result.load(path)
    assert back.main_score == rep.main_score == max(rep.table["P@1"])
    pd.testing.assert_frame_equal(back.table, rep.table)
