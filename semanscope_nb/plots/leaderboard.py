"""The leaderboard as the paper prints it (Tables D.1 cosine / D.2 Euclidean): a wide table and its Styler.

:func:`leaderboard_wide` lays a benchmark table (``BenchmarkResult.table``) out
as one row per model and one ``SA ± SEM`` column per dataset, plus ``Avg SA``;
:func:`leaderboard_table` styles it (a pandas ``Styler``, ``Avg SA`` shaded by the verdict's tier,
:func:`leaderboard_tiers`).

Layer: plots.  Imports :mod:`semanscope_nb.plots.chart_kit`, the palette and the metrics layer's tiers.

Example
-------
>>> import pandas as pd
>>> table = pd.DataFrame({"model": ["m1", "m2"], "dataset": ["d1", "d1"], "sa_cosine": [0.8, 0.6],
...                       "sem_cosine": [0.005, 0.01]})
>>> leaderboard_wide(table).reset_index().values.tolist()
[['m1', '0.800 ± 0.005', 0.8], ['m2', '0.600 ± 0.010', 0.6]]
>>> "Cosine Distance - PRIMARY" in leaderboard_table(table).to_html()
True
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.affinity import DEFAULT_TIERS, TierThresholds
from semanscope_nb.plots.chart_kit import is_finite, require_columns
from semanscope_nb.plots.palette import TIER_COLOURS
from semanscope_nb.plots.sa_figures import model_means


def leaderboard_wide(table: pd.DataFrame, *, distance: str = "cosine", datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Tables D.1/D.2 layout: one row per model, ``SA ± SEM`` per dataset, ``Avg SA``; best model first.

    The dataset columns hold strings ("0.807 ± 0.005"); ``Avg SA`` is a number
    (the mean over the datasets shown), so a Styler can colour it.  When the
    table carries the verdict's gap (``delta``: SA minus chance on the
    artefact-free concepts), ``Avg SA − chance (artefact-free)`` follows and the
    models are ranked by it, the quantity every verdict and comparison uses.
    """
    col, sem = f"sa_{distance}", f"sem_{distance}"
    require_columns(table, ["model", "dataset", col], what="leaderboard_wide")
    df = table.copy()
    if sem not in df:
        df[sem] = np.nan
    df["name"] = df["display_name"] if "display_name" in df else df["model"]
    datasets = list(datasets) if datasets is not None else list(dict.fromkeys(df["dataset"]))

    def cell(v: float, s: float) -> str:
        if not is_finite(v):
            return "n/a"  # measured but undefined (collapsed vectors, a failed bootstrap): marked, never "nan"
        return f"{v:.3f} ± {s:.3f}" if is_finite(s) else f"{v:.3f}"

    df[col] = pd.to_numeric(df[col], errors="coerce").where(lambda v: np.isfinite(v))  # +-inf is no score either
    df[sem] = pd.to_numeric(df[sem], errors="coerce")
    # dropna=False: a model whose every score is undefined keeps its row (shown "n/a"), it is not dropped
    out = df.pivot_table(index="name", columns="dataset", values=col, aggfunc="first", dropna=False)
    measured = df.pivot_table(index="name", columns="dataset", values=col, aggfunc="size", fill_value=0)
    errs = df.pivot_table(index="name", columns="dataset", values=sem, aggfunc="first", dropna=False)
    wide = pd.DataFrame(index=out.index)
    for d in datasets:
        wide[d] = [("" if not (d in measured and m in measured.index and measured.loc[m, d]) else
                    cell(v, errs.loc[m, d] if d in errs and m in errs.index else math.nan))
                   for m, v in zip(out.index, out[d] if d in out else [np.nan] * len(out))]
    wide["Avg SA"] = out[[d for d in datasets if d in out]].mean(axis=1)
    key = "Avg SA"
    if distance == "cosine" and "delta" in df and pd.to_numeric(df["delta"], errors="coerce").notna().any():
        # the verdict's quantity beside the raw SA, and the ranking by it (SA - chance on the artefact-free concepts)
        gaps = df.assign(delta=pd.to_numeric(df["delta"], errors="coerce").where(lambda v: np.isfinite(v))).pivot_table(
            index="name", columns="dataset", values="delta", aggfunc="first", dropna=False)
        key = "Avg SA − chance (artefact-free)"
        wide[key] = gaps[[d for d in datasets if d in gaps]].mean(axis=1).reindex(wide.index)
    # equal scores keep the table's order (as model_means, format_leaderboard and compare_models do), not pivot_table's
    # alphabetical one: the same tie is broken the same way on every path
    wide = wide.reindex(list(dict.fromkeys(df["name"])))
    wide = wide.sort_values(key, ascending=False, kind="stable", na_position="last")
    wide.index.name = "Model"
    return wide


def leaderboard_tiers(
    table: pd.DataFrame, *, distance: str = "cosine", thresholds: TierThresholds = DEFAULT_TIERS,
    datasets: Sequence[str] | None = None,
) -> dict[str, str]:
    """The tier that shades each model's ``Avg SA`` (keyed by the leaderboard's row name), over the datasets shown.

    Cosine: :func:`~semanscope_nb.plots.sa_figures.model_means`'s ``tier`` (the verdict's tier with one dataset,
    the verdict's rule on the pooled numbers with several: the tier :func:`~semanscope_nb.plots.sa_figures.tier_bar_chart`
    colours), so random vectors are never shaded "good" beside a verdict of "chance".  A table without the verdict's
    columns (``tier``, ``delta`` ...) and the Euclidean table (no verdict is taken on it) get the paper's tier of
    ``Avg SA`` under ``thresholds``.

    >>> t = pd.DataFrame({"model": ["m"], "dataset": ["d"], "sa_cosine": [0.55], "tier": ["chance"]})
    >>> leaderboard_tiers(t), leaderboard_tiers(t.drop(columns="tier"))
    ({'m': 'chance'}, {'m': 'good'})
    """
    shown = table if datasets is None else table[table["dataset"].isin(list(datasets))]
    if distance != "cosine":
        wide = leaderboard_wide(shown, distance=distance)
        return {str(name): thresholds.classify(float(v)) for name, v in wide["Avg SA"].items() if pd.notna(v)}
    means = model_means(shown, thresholds=thresholds, distance=distance)
    return dict(zip(means["name"].astype(str), means["tier"].astype(str)))


def leaderboard_table(
    table: pd.DataFrame, *, distance: str = "cosine", thresholds: TierThresholds = DEFAULT_TIERS,
    datasets: Sequence[str] | None = None, caption: str | None = None,
) -> "pd.io.formats.style.Styler":
    """The leaderboard styled like the paper's Tables D.1 (cosine) / D.2 (Euclidean): a pandas ``Styler``.

    A Styler (not an Altair text table) because it renders as an HTML table in
    notebooks, copies into papers (``.to_latex()``, ``.to_html()``) and keeps the
    "0.807 ± 0.005" cells as text.  ``Avg SA`` is shaded by the model's tier over the datasets shown
    (:func:`leaderboard_tiers`: the verdict's, as the tier bar chart colours it, not the paper's tier of the raw mean).  Model and
    dataset names, cells and the caption are HTML-escaped (a Styler does not
    escape by default), so the HTML holds no markup a name brought in.

    >>> t = pd.DataFrame({"model": ["<img src=x onerror=alert(1)>"], "dataset": ["d"], "sa_cosine": [0.7]})
    >>> "<img" in leaderboard_table(t).to_html()
    False
    """
    wide = leaderboard_wide(table, distance=distance, datasets=datasets)
    tier_of = leaderboard_tiers(table, distance=distance, thresholds=thresholds, datasets=datasets)
    default = ("Semantic Affinity Scores (Cosine Distance - PRIMARY)" if distance == "cosine"
               else "Semantic Affinity Scores (Euclidean Distance - SUPPLEMENTARY)")

    def shade(column: pd.Series) -> list[str]:
        return ["" if not isinstance(v, (int, float)) or not math.isfinite(v) or tier_of.get(name) not in TIER_COLOURS
                else f"background-color: {TIER_COLOURS[tier_of[name]]}33" for name, v in column.items()]

    styler = (
        wide.style.format(escape="html")
        .format({"Avg SA": "{:.3f}", "Avg SA − chance (artefact-free)": "{:+.3f}"}, na_rep="n/a")
        .format_index(escape="html", axis=0).format_index(escape="html", axis=1)
        .apply(shade, subset=["Avg SA"], axis=0)
        .set_caption(html.escape(caption or default))
        .set_table_styles([
            {"selector": "caption", "props": "caption-side: bottom; font-style: italic; padding-top: 6px;"},
            {"selector": "th", "props": "text-align: left; border-bottom: 1px solid #444;"},
            {"selector": "td", "props": "padding: 2px 10px; font-family: monospace;"},
        ])
    )
    return styler
