"""Issue 20: a widget rejects an invalid value before it is stored (an ipywidgets ``validate`` hook);
the previous value stays and the sliders keep working."""

from __future__ import annotations

import math

import pytest
import traitlets

from semanscope_nb.metrics.affinity import TierThresholds
from semanscope_nb.widgets.pickers import TierThresholdsPicker


@pytest.mark.parametrize("bad", [(0.4, 0.6), (math.nan, 0.5), (1.5, 0.5), {"great": 0.7, "bad": 0.1}, "0.6,0.5", None, (0.7,)])
def test_tier_picker_rejects_an_invalid_value_and_keeps_the_previous_one(bad):
    t = TierThresholdsPicker(value=(0.7, 0.55))
    before = t.value
    with pytest.raises(traitlets.TraitError, match="TierThresholdsPicker.value"):
        t.value = bad
    assert t.value == before and isinstance(t.value, TierThresholds)
    assert (t.great_slider.value, t.good_slider.value) == (0.7, 0.55)
    t.great_slider.value = 0.8  # the sliders still drive the value
    assert (t.value.great, t.value.good) == (0.8, 0.55)
    t.good_slider.value = 0.9  # and still keep great >= good
    assert (t.value.great, t.value.good) == (0.9, 0.9)


def test_tier_picker_accepts_a_valid_pair_or_mapping_as_thresholds():
    t = TierThresholdsPicker()
    t.value = (0.65, 0.45)
    assert t.value == TierThresholds(great=0.65, good=0.45) and (t.great_slider.value, t.good_slider.value) == (0.65, 0.45)
    t.value = {"great": 0.5, "good": 0.5}
    assert t.value == TierThresholds(great=0.5, good=0.5) and (t.great_slider.value, t.good_slider.value) == (0.5, 0.5)
