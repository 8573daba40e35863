"""ipywidgets panels: thin front ends that gather a small state object and call the pure functions.

Pickers (each *is* an ``ipywidgets.VBox`` with an observable ``.value``):

* :class:`ModelPicker` -- ``.value`` model id; shows family / objective / languages; loads no model.
* :class:`DatasetPicker` -- ``.value`` :class:`DatasetChoice` (bundled datasets or a folder of your CSVs, languages).
* :class:`TierThresholdsPicker` (alias ``TierThresholds`` here; the
  dataclass of that name is ``semanscope_nb.TierThresholds``) -- ``.value`` a ``semanscope_nb.TierThresholds``.
* :class:`ProjectionPicker` -- ``.value`` :class:`~semanscope_nb.plots.projection.ProjectionSettings`.

:class:`ExplorePanel` composes them with the alignment map and the score table;
:class:`ComparePanel` puts 2-4 (model, dataset, languages, projection) slots side by side.

>>> from semanscope_nb.widgets import ModelPicker
>>> ModelPicker(value="multilingual-e5-small").value
'multilingual-e5-small'
"""

from semanscope_nb.widgets.csc_panel import CSCPanel, CSCPanelState, run_csc
from semanscope_nb.widgets.pickers import (
    DatasetChoice,
    DatasetPicker,
    ModelPicker,
    ProjectionPicker,
    TierThresholdsPicker,
    TierThresholdsWidget,
)

TierThresholds = TierThresholdsPicker  # the widget; semanscope_nb.TierThresholds is the dataclass


def __getattr__(name: str):  # ExplorePanel pulls in Altair; import it on first use
    if name in ("ExplorePanel", "ExploreState", "PublicationSettings", "PUBLICATION"):
        from semanscope_nb.widgets import explore

        return getattr(explore, name)
    if name in ("ComparePanel", "SlotState", "compare_slots"):
        from semanscope_nb.widgets import compare

        return getattr(compare, name)
    raise AttributeError(f"module 'semanscope_nb.widgets' has no attribute {name!r}")


__all__ = [
    "CSCPanel", "CSCPanelState", "run_csc", "ComparePanel", "SlotState", "compare_slots", "DatasetChoice", "DatasetPicker", "ExplorePanel", "ExploreState", "ModelPicker", "ProjectionPicker",
    "PublicationSettings", "TierThresholds", "TierThresholdsPicker", "TierThresholdsWidget",
]
