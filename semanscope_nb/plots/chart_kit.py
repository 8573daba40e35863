"""The small kit the Semantic Affinity chart modules share: lazy Altair, inline data, finite test, language colours.

Large maps: every chart embeds its rows as ``alt.InlineData`` values (:func:`inline`),
not as a DataFrame.  Altair's 5,000-row guard (``MaxRowsError``) checks DataFrames
handed to the data transformer; inline values pass through untouched and are
written once into the spec's top-level ``datasets``.

Speed: the rows are held as a *tuple* of row dicts, built without Altair's
instantiation-time validation.  Altair deep-copies lists and dicts whenever a
chart is layered or gets a parameter (``add_params``, ``_combine_subchart_params``):
with a list of 1,000 rows that was 600k copies per map and most of the time it
took to build one; a tuple is passed by reference (and written out as a JSON
array).  Validating the whole spec against the Vega-Lite schema (~1 s for a map)
belongs in tests, not on an interactive path: see :func:`fast_spec`.  So a 20,000-point map
renders without touching the user's global ``alt.data_transformers`` setting and
without VegaFusion (whose pre-evaluation buys nothing here: a map has no
transforms to pre-evaluate, only points to draw).  Only the columns a chart
encodes are embedded, rounded to 4 decimals, which keeps the spec ~100 bytes a point.

Layer: plots.  Imports :mod:`semanscope_nb.plots.palette` only (Altair lazily).

Example
-------
>>> import pandas as pd
>>> inline(pd.DataFrame({"x": [0.123456, float("nan")], "word": ["水", "fire"]})).to_dict()
{'values': [{'x': 0.1235, 'word': '水'}, {'x': None, 'word': 'fire'}]}
>>> is_finite("0.5"), is_finite(None), is_finite(float("inf"))
(True, False, False)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import pandas as pd

from semanscope_nb.plots.palette import language_colour

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def import_altair() -> Any:
    """The ``altair`` module, imported on first use (so that ``import semanscope_nb`` stays light).

    >>> import_altair().__name__
    'altair'
    """
    import altair as alt  # lazy: keeps `import semanscope_nb` light

    return alt


def _clean(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return round(f, 4) if math.isfinite(f) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def json_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as JSON-safe dicts (floats rounded to 4 decimals, NaN/inf as None); no Altair needed.

    >>> json_rows(pd.DataFrame({"x": [1.234567], "w": ["水"]}))
    [{'x': 1.2346, 'w': '水'}]
    """
    cols = list(frame.columns)
    return [{c: _clean(v) for c, v in zip(cols, row)} for row in frame.itertuples(index=False, name=None)]


def inline(frame: pd.DataFrame) -> "alt.InlineData":
    """A DataFrame as ``alt.InlineData`` (JSON-safe values; bypasses the 5,000-row guard and Altair's copies, see module doc)."""
    alt = import_altair()
    from altair.utils.schemapi import debug_mode

    values = tuple(json_rows(frame))
    with debug_mode(False):  # the rows are JSON-safe by construction: skip validating each one at instantiation
        return alt.InlineData(values=values)


def fast_spec(chart: Any) -> dict:
    """``chart.to_dict(validate=False)``: the Vega-Lite spec without the ~1 s JSON-schema validation.

    For interactive paths (panels) whose charts come from this package's plot
    functions; the tests validate those same charts once against the schema
    (``chart.to_dict()``), so skipping it here loses nothing.

    >>> import altair as alt
    >>> fast_spec(alt.Chart(inline(pd.DataFrame({"v": [1, 2]}))).mark_bar().encode(y="v:Q"))["mark"]
    {'type': 'bar'}
    """
    return chart.to_dict(validate=False)


def is_finite(x: Any) -> bool:
    """True when ``x`` converts to a finite float (None, NaN, infinities and text that is no number give False).

    >>> is_finite(3), is_finite(float("nan")), is_finite("n/a")
    (True, False, False)
    """
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def language_scale(languages: Iterable[str]) -> "alt.Scale":
    """A colour scale with an explicit domain and the fixed colour of every language code.

    >>> language_scale(["en", "zh"]).to_dict()
    {'domain': ['en', 'zh'], 'range': ['#0072B2', '#D55E00']}
    """
    alt = import_altair()
    domain = [str(code) for code in dict.fromkeys(languages)]
    return alt.Scale(domain=domain, range=[language_colour(code) for code in domain])


def require_columns(table: pd.DataFrame, cols: Iterable[str], *, what: str) -> None:
    """Raise a ValueError naming ``what`` and the missing columns when a benchmark table lacks one of ``cols``.

    >>> require_columns(pd.DataFrame({"model": []}), ["model", "dataset"], what="sa_heatmap")
    Traceback (most recent call last):
    ...
    ValueError: sa_heatmap: the table lacks column(s) ['dataset']; pass BenchmarkResult.table (see run_benchmark)
    """
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"{what}: the table lacks column(s) {missing}; pass BenchmarkResult.table (see run_benchmark)")


#: decimals a point and its interval show in chart labels (one rule for both, see :func:`format_estimate`)
ESTIMATE_DIGITS = 3


def format_estimate(point: Any, low: Any = None, high: Any = None, *, digits: int = ESTIMATE_DIGITS) -> tuple[str, str]:
    """(point text, ``"[low, high]"`` text or ``""``): the one display precision rule for a point and its interval.

    The rule: the point and both interval ends get the SAME number of decimals,
    each rounded to nearest.  Rounding to a fixed number of decimals is
    monotone, so a point inside its interval is never shown outside it (a point
    0.1234 in [0.1231, 0.1236] shows as 0.123 in [0.123, 0.124]); rounding the
    ends to fewer decimals than the point (the former CSC labels: 0.123 next to
    [0.12, 0.12]) is what broke it.  Non-finite values show as ``n/a``; no
    finite pair of ends, no interval text.

    >>> format_estimate(0.1234, 0.1231, 0.1236)
    ('0.123', '[0.123, 0.124]')
    >>> format_estimate(0.5, float("nan"), 0.7)
    ('0.500', '')
    """
    def text(x: Any) -> str:
        return f"{float(x):.{digits}f}" if is_finite(x) else "n/a"

    interval = f"[{text(low)}, {text(high)}]" if is_finite(low) and is_finite(high) else ""
    return text(point), interval
