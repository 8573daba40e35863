"""One question, one answer for the papers other than SA: retrieval, kNN classification, alignment, CSC,
word similarity -- the function vs the task / CLI vs the chart data vs a saved result; plus the panel's
threshold fields (what is shown is what is used).  Fast: tfidf-char / random-null models, small real data."""

from __future__ import annotations

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


# --------------------------------------------------------------------------- CSC: the panel, the chart, the task, a saved result


def _chart_texts(spec):
    """Every literal text a chart spec's datasets hold (the overlap label is one)."""
    return [row["text"] for rows in spec.get("datasets", {}).values() for row in rows if "text" in row]


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
