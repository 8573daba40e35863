"""Altair charts of Concept Separation Curves: one result, a models x corpora grid, the overlap heatmap.

Every function takes results and returns an ``alt.Chart`` (or layer / facet
chart); nothing is displayed.  Altair is imported inside the functions, so
``import semanscope_nb`` stays light.  Altair 5 (Vega-Lite 5) renders natively
in JupyterLab 4 with no network.

Example
-------
>>> import semanscope_nb as snb
>>> r = snb.concept_separation(["The train leaves at noon.", "Water the plants."], "random-null",
...                            language="en", n_boot=20, cache=False)
>>> spec = snb.csc_chart(r).to_dict()
>>> spec["layer"][0]["mark"]["type"]
'area'
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.csc.separation import CSCResult
from semanscope_nb.plots.chart_kit import format_estimate

FUZZ_LABEL = "fuzzed (article inserted)"
NEG_LABEL = "negated"
OVERLAP_LABEL = "overlap"
CURVE_COLORS = {FUZZ_LABEL: "#1f77b4", NEG_LABEL: "#d62728"}


def _fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def overlap_label(result: CSCResult) -> str:
    """``overlap 0.123 [0.098, 0.155]`` (the interval's confidence in percent)."""
    point, interval = format_estimate(result.overlap, *result.ci)
    return f"overlap {point}" + (f" {interval} {round(100 * result.confidence)}% CI" if interval else "")


def auto_x_domain(results: Sequence[CSCResult], *, mass: float = 0.999) -> tuple[float, float]:
    """The smallest similarity range holding ``mass`` of every curve, padded by 10% (clipped to [-1, 1])."""
    lo, hi = 1.0, -1.0
    for r in results:
        g = r.curves.grid
        for d in (r.curves.fuzz, r.curves.negation):
            c = np.cumsum(d)
            a = g[min(np.searchsorted(c, (1 - mass) / 2), g.size - 1)]
            b = g[min(np.searchsorted(c, 1 - (1 - mass) / 2), g.size - 1)]
            lo, hi = min(lo, a), max(hi, b)
    if hi <= lo:
        lo, hi = -1.0, 1.0
    pad = max(0.1 * (hi - lo), 0.005)
    return float(max(-1.0, lo - pad)), float(min(1.0, hi + pad))


def curves_frame(result: CSCResult, *, x_domain: tuple[float, float] | None = None, max_points: int = 401) -> pd.DataFrame:
    """Long table of the curves inside ``x_domain``: similarity, density, curve (fuzz / negated / overlap).

    The overlap rows hold the pointwise minimum (what eq. 2 sums).  At most
    ``max_points`` grid points per curve are kept (every k-th one).
    """
    g = result.curves.grid
    lo, hi = x_domain if x_domain is not None else (-1.0, 1.0)
    idx = np.flatnonzero((g >= lo - 1e-12) & (g <= hi + 1e-12))
    if idx.size > max_points:
        idx = idx[:: int(math.ceil(idx.size / max_points))]
    f, n = result.curves.fuzz[idx], result.curves.negation[idx]
    parts = [
        pd.DataFrame({"similarity": g[idx], "density": f, "curve": FUZZ_LABEL}),
        pd.DataFrame({"similarity": g[idx], "density": n, "curve": NEG_LABEL}),
        pd.DataFrame({"similarity": g[idx], "density": np.minimum(f, n), "curve": OVERLAP_LABEL}),
    ]
    return pd.concat(parts, ignore_index=True)


def csc_chart(
    result: CSCResult,
    *,
    title: str | None = None,
    x_domain: tuple[float, float] | str | None = None,
    width: int = 380,
    height: int = 230,
    max_points: int = 401,
):
    """The two normalised curves (fuzzed vs negated), the shaded overlap, the score and interval in the corner.

    Hovering shows the similarity and both densities at that point.
    ``x_domain``: None = zoom to where the curves have mass, ``"full"`` = [-1, 1], or a (lo, hi) pair.
    """
    import altair as alt

    dom = (-1.0, 1.0) if x_domain == "full" else (auto_x_domain([result]) if x_domain is None else tuple(x_domain))
    df = curves_frame(result, x_domain=dom, max_points=max_points)
    x = alt.X("similarity:Q", title="cosine similarity to the original", scale=alt.Scale(domain=list(dom), nice=False))
    y = alt.Y("density:Q", title="normalised density (sums to 1)")
    base = alt.Chart(df)
    area = base.mark_area(color="#7f7f7f", opacity=0.35).encode(x=x, y=y).transform_filter(alt.datum.curve == OVERLAP_LABEL)
    color = alt.Color("curve:N", title=None, scale=alt.Scale(domain=list(CURVE_COLORS), range=list(CURVE_COLORS.values())),
                      legend=alt.Legend(orient="bottom"))
    lines = base.mark_line(strokeWidth=2).encode(x=x, y=y, color=color).transform_filter(alt.datum.curve != OVERLAP_LABEL)
    hover = alt.selection_point(name="csc_hover", fields=["similarity"], nearest=True, on="pointerover", empty=False, clear="pointerout")
    wide = df.pivot(index="similarity", columns="curve", values="density").reset_index()
    wide.columns = [str(c) for c in wide.columns]
    wide = wide.rename(columns={FUZZ_LABEL: "fuzzed", NEG_LABEL: "negated", OVERLAP_LABEL: "shared"})
    rule = alt.Chart(wide).mark_rule(color="#555").encode(
        x="similarity:Q",
        opacity=alt.condition(hover, alt.value(0.6), alt.value(0.0)),
        tooltip=[alt.Tooltip("similarity:Q", format=".3f"), alt.Tooltip("fuzzed:Q", title="fuzzed density", format=".5f"),
                 alt.Tooltip("negated:Q", title="negated density", format=".5f"),
                 alt.Tooltip("shared:Q", title="overlap (min)", format=".5f")],
    ).add_params(hover)
    points = base.mark_point(filled=True, size=40).encode(
        x=x, y=y, color=color, opacity=alt.condition(hover, alt.value(1.0), alt.value(0.0)),
    ).transform_filter(alt.datum.curve != OVERLAP_LABEL)
    sep = f"separation {_fmt(result.separation)}" + (" (negation moves LESS than an article)" if result.separation < 0 else "")
    label = alt.Chart(pd.DataFrame({"text": [overlap_label(result)]})).mark_text(
        align="left", baseline="top", x=6, y=6, fontSize=12, fontWeight="bold"
    ).encode(text="text:N")
    sublabel = alt.Chart(pd.DataFrame({"text": [sep]})).mark_text(align="left", baseline="top", x=6, y=22, fontSize=10).encode(
        text="text:N"
    )
    heading = title or f"{result.model} · {result.corpus} ({result.language}, n={result.n_sentences})"
    return alt.layer(area, lines, points, rule, label, sublabel).properties(
        title=heading, width=width, height=height
    )


#: the widest a grid of panels may get (JupyterLab's output area is ~900 px at common sizes)
MAX_GRID_WIDTH = 900


def csc_grid(
    results: Mapping[tuple[str, str], CSCResult] | Sequence[CSCResult],
    *,
    x_domain: tuple[float, float] | str | None = None,
    width: int | None = None,
    height: int = 110,
    max_points: int = 121,
    columns: int | None = None,
):
    """Small multiples: one CSC panel per (model, corpus), overlap in each corner.

    Up to three corpora: models as rows, corpora as columns.  More corpora, or
    ``columns=k``: the panels wrap into rows of ``k`` (default 3), each titled
    "model · corpus", so the grid never grows wider than the output area.
    ``width`` (per panel) defaults to what keeps the grid within ~900 px.

    ``x_domain``: None = one shared range holding every curve, ``"per-panel"`` =
    each panel zoomed to its own curves (independent x axes), ``"full"`` = [-1, 1].

    The data goes inline (``alt.InlineData``), so a large grid is not stopped by
    Altair's 5,000-row guard; ``max_points`` bounds the points per curve.
    """
    import altair as alt

    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not items:
        raise ValueError("csc_grid needs at least one CSCResult")
    if columns is not None and (isinstance(columns, bool) or not isinstance(columns, int) or columns < 1):
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    n_corpora = len(dict.fromkeys(r.corpus for r in items))
    wrap = columns is not None or n_corpora > 3
    n_cols = min(columns or 3, len(items)) if wrap else n_corpora
    if width is None:  # row headers (model names) take ~150 px when models are rows
        width = int(max(110, min(170, (MAX_GRID_WIDTH - (0 if wrap else 150)) // n_cols - 20)))
    per_panel = x_domain == "per-panel"
    dom = (-1.0, 1.0) if x_domain == "full" else (auto_x_domain(items) if x_domain in (None, "per-panel") else tuple(x_domain))
    data = _grid_frame(items, dom, per_panel=per_panel, max_points=max_points)
    x = alt.X("similarity:Q", title="cosine similarity",
              scale=alt.Scale(zero=False, nice=False) if per_panel else alt.Scale(domain=list(dom), nice=False))
    area, lines, text = _grid_layers(alt, x, wrap=wrap)
    if wrap:  # one facet field, wrapped into rows of n_cols panels
        data["panel"] = data["model"].astype(str) + " · " + data["corpus"].astype(str)
    layered = alt.layer(area, lines, text, data=alt.InlineData(values=data.to_dict("records"))).properties(
        width=width, height=height
    )
    if wrap:
        order = list(dict.fromkeys(data["panel"]))
        faceted = layered.facet(facet=alt.Facet("panel:N", title=None, sort=order, header=alt.Header(labelLimit=width)),
                                columns=n_cols)
    else:
        faceted = layered.facet(row=alt.Row("model:N", title=None), column=alt.Column("corpus:N", title=None))
    return faceted.resolve_scale(y="independent", x="independent" if per_panel else "shared").properties(
        title="Concept Separation Curves (overlap [95% CI] in each corner)"
    )


def _grid_frame(items: Sequence[CSCResult], dom: tuple[float, float], *, per_panel: bool, max_points: int) -> pd.DataFrame:
    """Every panel's two curves (the shaded minimum is computed in Vega-Lite) and its corner label, one frame."""
    frames = []
    for r in items:
        df = curves_frame(r, x_domain=auto_x_domain([r]) if per_panel else dom, max_points=max_points)
        df = df[df.curve != OVERLAP_LABEL].copy()  # the shaded minimum is computed in Vega-Lite (pivot + min)
        df["model"], df["corpus"], df["label"] = r.model, r.corpus, ""
        frames.append(df)
        frames.append(pd.DataFrame({"similarity": [dom[0]], "density": [0.0], "curve": ["label"], "model": [r.model],
                                    "corpus": [r.corpus], "label": [" ".join(t for t in format_estimate(r.overlap, *r.ci) if t)]}))
    data = pd.concat(frames, ignore_index=True)
    data["similarity"] = data["similarity"].round(6)
    data["density"] = data["density"].astype(float).round(8)
    return data


def _grid_layers(alt: Any, x: Any, *, wrap: bool) -> tuple[Any, Any, Any]:
    """(the shaded overlap, the two curves, the corner label) of one panel, without data."""
    y = alt.Y("density:Q", title="density")
    color = alt.Color("curve:N", title=None, scale=alt.Scale(domain=list(CURVE_COLORS), range=list(CURVE_COLORS.values())),
                      legend=alt.Legend(orient="bottom"))
    curves_only = (alt.datum.curve == FUZZ_LABEL) | (alt.datum.curve == NEG_LABEL)
    area = (
        alt.Chart()
        .transform_filter(curves_only)
        .transform_pivot("curve", value="density", groupby=["model", "corpus", "similarity"] + (["panel"] if wrap else []))
        .transform_calculate(shared=f"min(datum['{FUZZ_LABEL}'], datum['{NEG_LABEL}'])")
        .mark_area(color="#7f7f7f", opacity=0.35)
        .encode(x=x, y=alt.Y("shared:Q", title="density"))
    )
    lines = alt.Chart().mark_line().encode(
        x=x, y=y, color=color,
        tooltip=["model:N", "corpus:N", "curve:N", alt.Tooltip("similarity:Q", format=".3f"), alt.Tooltip("density:Q", format=".5f")],
    ).transform_filter(curves_only)
    text = alt.Chart().mark_text(align="left", baseline="top", x=4, y=4, fontSize=10).encode(text="label:N").transform_filter(
        alt.datum.curve == "label"
    )
    return area, lines, text


#: px per character of an axis label at Vega's default 10-11 px font (a generous average: wide names slant early)
HEADER_CHAR_PX = 7
#: px at which a slanted heatmap header is cut (with an ellipsis)
HEADER_LIMIT = 160


def csc_heatmap(
    results: Mapping[tuple[str, str], CSCResult] | Sequence[CSCResult] | pd.DataFrame,
    *,
    cell_width: int = 110,
    cell_height: int = 32,
):
    """Overlap per model (rows) and corpus (columns), like the paper's Table 3; lower = better separation.

    Each cell shows the overlap and its interval; a ``*`` marks a negative
    separation (negation moved the embedding less than an article).
    """
    import altair as alt

    from semanscope_nb.metrics.csc.separation import csc_table

    table = results if isinstance(results, pd.DataFrame) else csc_table(results)
    if table.empty:
        raise ValueError("csc_heatmap needs at least one result")
    t = table.copy()
    t["cell"] = [f"{format_estimate(o)[0]}{'*' if s < 0 else ''}" for o, s in zip(t.overlap, t.separation)]
    t["interval"] = [format_estimate(o, a, b)[1] or "[n/a, n/a]" for o, a, b in zip(t.overlap, t.ci_low, t.ci_high)]
    models, corpora = list(dict.fromkeys(t.model)), list(dict.fromkeys(t.corpus))
    # a header wider than its column would run into the next one: such headers are slanted (and cut at
    # HEADER_LIMIT px with an ellipsis, the full name in the tooltip); short ones stay level
    fits = max(len(str(c)) for c in corpora) * HEADER_CHAR_PX <= cell_width - 8
    header = (alt.Axis(orient="top", labelAngle=0, labelLimit=cell_width - 4) if fits else
              alt.Axis(orient="top", labelAngle=-40, labelAlign="left", labelBaseline="middle", labelLimit=HEADER_LIMIT))
    base = alt.Chart(t).encode(
        x=alt.X("corpus:N", title=None, sort=corpora, axis=header),
        y=alt.Y("model:N", title=None, sort=models),
    )
    tooltip = ["model:N", "corpus:N", alt.Tooltip("overlap:Q", format=".4f"), alt.Tooltip("ci_low:Q", format=".4f"),
               alt.Tooltip("ci_high:Q", format=".4f"), alt.Tooltip("median_fuzz:Q", format=".4f"),
               alt.Tooltip("median_negation:Q", format=".4f"), alt.Tooltip("separation:Q", format=".4f"), "n_sentences:Q"]
    rect = base.mark_rect().encode(
        # the colour legend beside the grid, as long as the grid is tall (not below a tall figure)
        color=alt.Color("overlap:Q", title="overlap", scale=alt.Scale(scheme="viridis", domain=[0, 1], reverse=True),
                        legend=alt.Legend(orient="right", gradientLength=max(60, int(cell_height * len(models) * 1.4)))),
        tooltip=tooltip,
    )
    dark = alt.datum.overlap > 0.55
    value = base.mark_text(baseline="bottom", dy=2, fontSize=12).encode(
        text="cell:N", color=alt.condition(dark, alt.value("white"), alt.value("black"))
    )
    interval = base.mark_text(baseline="top", dy=2, fontSize=9).encode(
        text="interval:N", color=alt.condition(dark, alt.value("white"), alt.value("black"))
    )
    return alt.layer(rect, value, interval).properties(
        width=cell_width * len(corpora), height=cell_height * len(models) * 1.4,
        title="CSC overlap of fuzzed and negated curves (lower = better; * = negation moves less than an article)",
    )


def csc_length_chart(result: CSCResult, *, width: int = 320, height: int = 180):
    """Overlap per sentence-length bucket (the paper's length effect); needs ``length_buckets=`` in the run."""
    import altair as alt

    if not result.buckets:
        raise ValueError("this result has no length buckets: run concept_separation(..., length_buckets=(0, 5, 10, 20))")
    df = pd.DataFrame(result.buckets)
    df["label"] = [f"{_fmt(o)} (n={n})" for o, n in zip(df.overlap, df.n_sentences)]
    order = list(df.bucket)
    base = alt.Chart(df).encode(x=alt.X("bucket:N", sort=order, title="words per sentence"))
    bars = base.mark_bar(color="#7f7f7f").encode(
        y=alt.Y("overlap:Q", scale=alt.Scale(domain=[0, 1]), title="overlap"),
        tooltip=["bucket:N", "n_sentences:Q", alt.Tooltip("overlap:Q", format=".4f"), alt.Tooltip("separation:Q", format=".4f")],
    )
    text = base.mark_text(dy=-6).encode(y="overlap:Q", text="label:N")
    return alt.layer(bars, text).properties(width=width, height=height, title=f"{result.model} · {result.corpus}: overlap by length")
