"""Deprecated: the old home of the Semantic Affinity charts, now one module per concern.

* :mod:`~semanscope_nb.plots.maps`: alignment_map, map_3d, map_grid, map_frame, row_label, SHAPES, NAV_FEATURES;
* :mod:`~semanscope_nb.plots.legend`: sa_legend_text, LEGEND_POSITIONS, THEMES;
* :mod:`~semanscope_nb.plots.sa_figures`: model_means, tier_bar_chart, sa_heatmap, pair_heatmap, PAIR_COLUMNS,
  worst_concepts_chart;
* :mod:`~semanscope_nb.plots.leaderboard`: leaderboard_wide, leaderboard_table;
* :mod:`~semanscope_nb.plots.chart_kit`: inline, language_scale.

Every public name of the old module still resolves here (``snb.plots.charts.alignment_map``),
with a ``DeprecationWarning`` naming its new place; importing this module warns about nothing.

Layer: plots.  Imports the modules above (and the palette and the SA tiers it used to re-export).

Example
-------
>>> import warnings
>>> from semanscope_nb.plots import charts, maps
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     found = charts.alignment_map
>>> found is maps.alignment_map
True
>>> print(caught[0].message)
semanscope_nb.plots.charts.alignment_map moved to semanscope_nb.plots.maps.alignment_map; the old name works until version 0.3
"""

from __future__ import annotations

import warnings as _warnings
from types import ModuleType as _ModuleType

from semanscope_nb.metrics import affinity as _affinity
from semanscope_nb.plots import chart_kit as _chart_kit
from semanscope_nb.plots import leaderboard as _leaderboard
from semanscope_nb.plots import legend as _legend
from semanscope_nb.plots import maps as _maps
from semanscope_nb.plots import palette as _palette
from semanscope_nb.plots import sa_figures as _sa_figures

#: the public names of the old module, by the module that holds each now
_MOVED: dict[str, _ModuleType] = {
    name: module
    for module, names in (
        (_maps, ("alignment_map", "map_3d", "map_grid", "map_frame", "row_label", "SHAPES", "NAV_FEATURES")),
        (_legend, ("sa_legend_text", "LEGEND_POSITIONS", "THEMES")),
        (_sa_figures, ("model_means", "tier_bar_chart", "sa_heatmap", "pair_heatmap", "PAIR_COLUMNS", "worst_concepts_chart")),
        (_leaderboard, ("leaderboard_wide", "leaderboard_table")),
        (_chart_kit, ("inline", "language_scale")),
        (_palette, ("CHANCE_COLOUR", "TIER_COLOURS", "TIER_ORDER", "language_colour", "tier_colour")),
        (_affinity, ("DEFAULT_TIERS", "SAResult", "TierThresholds")),
    )
    for name in names
}

__all__ = sorted(_MOVED)


def __getattr__(name: str):
    """An old name: the object from its new module, with a DeprecationWarning saying where it lives now."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'semanscope_nb.plots.charts' has no attribute {name!r}")
    _warnings.warn(f"semanscope_nb.plots.charts.{name} moved to {module.__name__}.{name}; the old name works until version 0.3",
                   DeprecationWarning, stacklevel=2)
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED))
