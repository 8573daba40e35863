"""The workshop's checking helper (widgets/workshop.py): answers read kindly, hints without the value, no noise.

The notebook itself runs in tests/test_notebooks_sa.py (slow) with right, sloppy and wrong answers."""

from __future__ import annotations

import sys
import warnings

import pytest

from semanscope_nb.widgets.workshop import AnswerNotUnderstood, Workshop, read_choice, read_number

TIERS = ("great", "good", "non-aligned")


@pytest.mark.parametrize(("said", "number"), [("about 0.5", 0.5), ("~0,5", 0.5), (" 0.5 ", 0.5), ("50%", 0.5),
                                              ("roughly .5", 0.5), (0.5, 0.5), ("I think 1", 1.0), ("-0.2", -0.2)])
def test_numbers_are_read_kindly(said, number):
    assert read_number(said) == pytest.approx(number, abs=1e-12)


@pytest.mark.parametrize("said", ["half", "0.4 or 0.6", True, float("nan"), ""])
def test_an_unreadable_number_says_what_to_write(said):
    with pytest.raises(AnswerNotUnderstood, match="number"):
        read_number(said)


@pytest.mark.parametrize(("said", "choice"), [("Great", "great"), (" GOOD ", "good"), ("non aligned", "non-aligned"),
                                              ("Non-Aligned", "non-aligned"), ("it is great", "great")])
def test_choices_ignore_case_spaces_and_hyphens(said, choice):
    assert read_choice(said, TIERS) == choice


def test_a_wrong_answer_gets_the_hint_not_the_value(capsys):
    ws = Workshop({"random": 0.9, "tier": "Great", "gap": "abc", "none": None})
    assert not ws.check("random", 0.4987, tolerance=0.05, hint="compare a translation with a random word")
    out = capsys.readouterr().out
    assert "✗ not quite (you said 0.9). Hint: compare a translation with a random word" in out
    assert "0.4987" not in out and "0.499" not in out and "measured" not in out  # the value stays hidden
    assert ws.check("tier", "great", choices=TIERS)
    assert "✓ correct: you said great; measured great" in capsys.readouterr().out
    assert ws.check("gap", 0.3, tolerance=0.1).ok is None
    out = capsys.readouterr().out
    assert "could not read your answer: 'abc' holds no number" in out and "Traceback" not in out and "0.3" not in out
    assert ws.check("none", 1.0, tolerance=0.1).ok is None and "no answer yet" in capsys.readouterr().out
    assert ws.summary() == "score: 1/4 correct (2 unanswered)"
    assert ws.reveal("random") == 0.4987 and "measured: 0.499" in capsys.readouterr().out


def test_quiet_prints_each_warning_once_without_its_file_and_swallows_bars(capsys):
    with Workshop.quiet() as notes:
        for _ in range(3):
            warnings.warn("model 'x' does not list zh", UserWarning, stacklevel=1)
        print("embedding 30%|███ | 3/10 [00:01<00:02, 3.0it/s]", file=sys.stderr)  # a progress bar's line
        print("the step's own output")
    out = capsys.readouterr()
    assert notes == ["model 'x' does not list zh"]
    assert out.out.count("note: model 'x' does not list zh") == 1 and "the step's own output" in out.out
    assert ".py:" not in out.out + out.err and "UserWarning" not in out.out + out.err and "it/s" not in out.out + out.err
