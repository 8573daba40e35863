"""Semantic Affinity figures besides the map: tier bars (Figure 1), the model x dataset heatmap (Figure 2),
the language-pair heatmap and the worst-aligned concepts.

:func:`model_means` is Figure 1's data: each model's average SA across
datasets with its interval, chance level, paper tier, null-aware tier and rank
band; :func:`tier_bar_chart` draws it.  :func:`sa_heatmap` takes a benchmark
table (``BenchmarkResult.table``), :func:`pair_heatmap` the table of
:func:`semanscope_nb.metrics.pairs.pair_affinity` and
:func:`worst_concepts_chart` one SA result.  Every function returns an Altair
chart (``model_means`` a DataFrame); nothing is displayed.

Layer: plots.  Imports :mod:`semanscope_nb.plots.chart_kit`, the palette and the metrics layer's tiers.

Example
-------
>>> import pandas as pd
>>> table = pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "dataset": ["d1", "d2", "d1", "d2"],
...                       "sa_cosine": [0.80, 0.70, 0.50, 0.60], "sem_cosine": [0.01, 0.01, 0.02, 0.02]})
>>> model_means(table)[["model", "avg_sa", "tier"]].round(3).values.tolist()
[['m1', 0.75, 'great'], ['m2', 0.55, 'good']]
>>> [layer["mark"]["type"] for layer in tier_bar_chart(table).to_dict()["layer"]]
['bar', 'text', 'rule', 'errorbar']
>>> [layer["mark"]["type"] for layer in sa_heatmap(table).to_dict()["layer"]]
['rect', 'text']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Literal

import numpy as np
import pandas as pd

from semanscope_nb.metrics.affinity import DEFAULT_TIERS, TIER_LABELS, SAResult, TierThresholds
from semanscope_nb.metrics.chance import SURFACE_TIER, above_surface, null_aware_tier
from semanscope_nb.plots.chart_kit import import_altair, inline, is_finite, require_columns
from semanscope_nb.plots.palette import CHANCE_COLOUR, TIER_COLOURS, TIER_ORDER, tier_colour

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def _verdict_tier_under(row: pd.Series, thresholds: TierThresholds) -> str:
    """A table row's verdict tier under ``thresholds`` (:meth:`SAResult.with_thresholds`'s tier, from the row alone).

    The gates (chance, below chance, insufficient, surface form, undetermined) do not read the thresholds, so a
    row whose verdict is one of them keeps it; a paper tier is re-classified by the verdict's rule
    (:meth:`TierThresholds.verdict_tier`: the lower of the tiers of the raw SA and of the artefact-free SA,
    ``sa_verdict_basis``), so the row's tier is right whatever thresholds it was computed under.
    """
    tier = str(row["tier"])
    if tier not in TIER_LABELS or "sa_cosine" not in row:
        return tier
    sa = float(row["sa_cosine"])
    judged = float(row["sa_verdict_basis"]) if "sa_verdict_basis" in row and pd.notna(row["sa_verdict_basis"]) else sa
    return thresholds.verdict_tier(sa, judged)


def model_means(table: pd.DataFrame, *, thresholds: TierThresholds = DEFAULT_TIERS, distance: str = "cosine",
                confidence_z: float = 1.959964) -> pd.DataFrame:
    """Average SA per model across datasets, with its interval, chance level, tier and band, best first (Figure 1's data).

    Columns: model, name, avg_sa, n_datasets, ci_low, ci_high, paper_tier, tier,
    and when the table has them sa_null, delta, delta_low, delta_high, band.
    One dataset: its own interval (``ci_low``/``ci_high``) and its gap to chance.
    Several: the mean, with ``sem`` (or the gap's half-widths) pooled as if the
    datasets were independent (``sqrt(sum of squares) / n``).  ``tier`` is the
    null-aware tier when the table has the gap's interval -- the verdict's rule on the
    pooled numbers: "chance" when the gap's interval holds 0 or the mean chance-corrected
    score is under :data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`, "not above surface form" when the
    table has the surface baseline's ``surface_difference`` and its mean fails
    :func:`~semanscope_nb.metrics.chance.above_surface`, else the lower of
    the paper's tiers of the mean raw SA and the mean artefact-free SA -- else the paper's tier; with one dataset it is that
    row's verdict tier itself (a paper tier re-classified under ``thresholds`` by the
    verdict's rule, so another threshold gives :meth:`SAResult.with_thresholds`'s tier).  ``band`` is kept only when it is the same on
    every dataset of the model.

    **One quantity.**  ``delta`` (and its interval) is the verdict's: SA minus its
    chance level on the artefact-free concepts (a benchmark table's ``delta``
    column, :attr:`~semanscope_nb.metrics.affinity.SAResult.verdict_scores`), and
    models are ranked by it when the table has it (else by ``avg_sa``); the raw
    all-concept SA stays beside it as ``avg_sa``.
    """
    col = f"sa_{distance}"
    require_columns(table, ["model", col], what="model_means")
    t = table.assign(name=table["display_name"] if "display_name" in table else table["model"])
    out = []
    for (model, name), g in t.groupby(["model", "name"], sort=False):
        vals = g[col].astype(float)
        n = int(vals.notna().sum())
        avg = float(vals.mean())
        rec: dict[str, Any] = {"model": model, "name": name, "avg_sa": avg, "n_datasets": len(g)}
        lo = hi = math.nan
        if distance == "cosine" and {"ci_low", "ci_high"} <= set(g.columns) and len(g) == 1:
            lo, hi = float(g["ci_low"].iloc[0]), float(g["ci_high"].iloc[0])
        elif f"sem_{distance}" in g and g[f"sem_{distance}"].notna().all() and n:
            half = confidence_z * math.sqrt(float((g[f"sem_{distance}"].astype(float) ** 2).sum())) / n
            lo, hi = avg - half, avg + half
        rec["ci_low"], rec["ci_high"] = lo, hi
        if "sa_null" in g:
            rec["sa_null"] = float(g["sa_null"].astype(float).mean())
        if "delta" in g:
            rec["delta"] = float(g["delta"].astype(float).mean())
            if {"delta_low", "delta_high"} <= set(g.columns):
                if len(g) == 1:
                    rec["delta_low"], rec["delta_high"] = float(g["delta_low"].iloc[0]), float(g["delta_high"].iloc[0])
                else:
                    half = math.sqrt(float((((g["delta_high"] - g["delta_low"]).astype(float) / 2) ** 2).sum())) / len(g)
                    rec["delta_low"], rec["delta_high"] = rec["delta"] - half, rec["delta"] + half
        if "band" in g:
            bands = set(g["band"].dropna())
            rec["band"] = next(iter(bands)) if len(bands) == 1 else None
        rec["paper_tier"] = thresholds.classify(avg)
        tiers = set(g["tier"].dropna()) if "tier" in g else set()
        if len(g) == 1 and tiers:  # the verdict itself: one dataset, one number, one tier
            rec["tier"] = _verdict_tier_under(g.iloc[0], thresholds)
        elif "undetermined" in tiers:
            rec["tier"] = "undetermined"  # some dataset's interval was too rough to call
        else:  # the verdict's rule on the pooled numbers: the lower of the raw and artefact-free tiers, the gap's
            # interval, the effect-size floor on the mean chance-corrected score (metrics.chance.null_aware_tier)
            paper = rec["paper_tier"]
            if "sa_verdict_basis" in g and g["sa_verdict_basis"].notna().all():
                paper = thresholds.verdict_tier(avg, float(g["sa_verdict_basis"].astype(float).mean()))
            corrected = (float(g["corrected"].astype(float).mean())
                         if "corrected" in g and g["corrected"].notna().all() else None)
            rec["tier"] = (null_aware_tier(paper, (rec["delta_low"], rec["delta_high"]), corrected=corrected)
                           if "delta_low" in rec else paper)
            # the verdict's next gate, the surface-form baseline, on the mean difference of chance-corrected scores
            # (metrics.chance.above_surface; point only, as a verdict without a bootstrap reads it)
            if (rec["tier"] in TIER_LABELS and "surface_difference" in g and g["surface_difference"].notna().all()
                    and not above_surface(float(g["surface_difference"].astype(float).mean()))):
                rec["tier"] = SURFACE_TIER
        out.append(rec)
    df = pd.DataFrame(out)
    key = "delta" if "delta" in df and df["delta"].notna().any() else "avg_sa"  # rank by the verdict's quantity
    return df.sort_values(key, ascending=False, kind="stable", na_position="last").reset_index(drop=True)


def _tier_colour_scale(tiers: Iterable[str]) -> "alt.Scale":
    alt = import_altair()
    present = set(tiers)
    domain = [t for t in TIER_ORDER if t in present or t in ("great", "good", "non-aligned")]
    return alt.Scale(domain=domain, range=[tier_colour(t) for t in domain])


def tier_bar_chart(
    table: pd.DataFrame, *, thresholds: TierThresholds = DEFAULT_TIERS, width: int = 480, title: str | None = None
) -> "alt.LayerChart":
    """Figure 1: average SA (cosine) per model, bars coloured by tier, interval error bars, threshold rules.

    With ``sa_null`` in the table, each model's chance level is a dark tick
    labelled "chance" (tooltip: chance, SA - chance and its interval); with
    ``band`` (rank bands from a paired comparison), a "band k" column to the
    right of the bars and a bracket joining the models of a shared band.
    """
    alt = import_altair()
    means = model_means(table, thresholds=thresholds)
    order = list(means["name"])
    has_ci = means["ci_low"].notna().any()
    has_null = "sa_null" in means and means["sa_null"].notna().any()
    has_band = "band" in means and means["band"].notna().any()
    means["label_x"] = [max([v for v in (a, h) if is_finite(v)], default=0.0) for a, h in zip(means["avg_sa"], means["ci_high"])]
    step = 36 if has_null else 26
    bar = 14 if has_null else 20
    x_title = "average SA (cosine)"
    X = alt.X("avg_sa:Q", title=x_title, scale=alt.Scale(domain=[0, 1]))
    Y = alt.Y("name:N", sort=order, title=None)
    tooltip = _tier_bar_tooltip(alt, means, has_null=has_null, has_band=has_band)
    data = inline(means)
    base = alt.Chart(data)
    bars = base.mark_bar(size=bar).encode(
        y=Y, x=X, tooltip=tooltip,
        color=alt.Color("tier:N", scale=_tier_colour_scale(means["tier"]), title="tier",
                        legend=alt.Legend(orient="bottom") if has_band else alt.Undefined),  # the band column takes the right
    )
    values = base.mark_text(align="left", dx=5).encode(
        y=Y, x=alt.X("label_x:Q", title=x_title, scale=alt.Scale(domain=[0, 1])),
        text=alt.Text("avg_sa:Q", format=".3f"), color=alt.value("#222222"))
    th = pd.DataFrame({"threshold": [thresholds.great, thresholds.good], "label": ["great", "good"]})
    rules = alt.Chart(inline(th)).mark_rule(strokeDash=[4, 3], color="#555555").encode(
        x=alt.X("threshold:Q", title=x_title), tooltip=["label:N", "threshold:Q"])
    layers: list[Any] = [bars, values, rules]
    if has_ci:
        layers.append(base.mark_errorbar(ticks=True, color="#222222").encode(
            y=Y, x=alt.X("ci_low:Q", title=x_title, scale=alt.Scale(domain=[0, 1])), x2="ci_high:Q"))
    if has_null:
        chance = base.transform_filter("isValid(datum.sa_null)")
        layers.append(chance.mark_tick(thickness=2.5, size=bar + 10, color=CHANCE_COLOUR).encode(
            y=Y, x=alt.X("sa_null:Q", title=x_title, scale=alt.Scale(domain=[0, 1])), tooltip=tooltip))
        layers.append(chance.transform_calculate(chance_label="'chance'").mark_text(
            fontSize=9, color=CHANCE_COLOUR, baseline="bottom", dy=-(bar / 2 + 4)).encode(
            y=Y, x=alt.X("sa_null:Q", title=x_title, scale=alt.Scale(domain=[0, 1])), text="chance_label:N"))
    if has_band:
        layers += _band_layers(alt, means, Y, order, width=width)
    chart = alt.layer(*layers).properties(width=width, height=max(60, step * len(order)))
    return chart.properties(title=title or "Three-tier structure: average SA (cosine) across datasets")


def _tier_bar_tooltip(alt: Any, means: pd.DataFrame, *, has_null: bool, has_band: bool) -> list[Any]:
    tooltip = [alt.Tooltip("model:N"), alt.Tooltip("avg_sa:Q", format=".3f"), alt.Tooltip("ci_low:Q", format=".3f"),
               alt.Tooltip("ci_high:Q", format=".3f"), alt.Tooltip("n_datasets:Q"), alt.Tooltip("tier:N"),
               alt.Tooltip("paper_tier:N", title="paper tier")]
    if has_null:
        tooltip += [alt.Tooltip("sa_null:Q", title="chance level", format=".3f")]
        if "delta" in means:
            tooltip += [alt.Tooltip("delta:Q", title="SA − chance", format="+.3f")]
        if "delta_low" in means:
            tooltip += [alt.Tooltip("delta_low:Q", title="SA − chance, low", format="+.3f"),
                        alt.Tooltip("delta_high:Q", title="SA − chance, high", format="+.3f")]
    if has_band:
        tooltip.append(alt.Tooltip("band:O", title="rank band"))
    return tooltip


def _band_layers(alt: Any, means: pd.DataFrame, Y: Any, order: list[str], *, width: int) -> list[Any]:
    """A "band k" column right of the bars, and a bracket joining the models of each shared band."""
    banded = means.dropna(subset=["band"])
    layers = [alt.Chart(inline(banded.assign(band_label=[f"band {int(b)}" for b in banded["band"]])))
              .mark_text(align="left", fontSize=10, color="#444444")
              .encode(y=Y, x=alt.value(width + 14), text="band_label:N")]
    spans = [{"band": int(b), "first": g["name"].iloc[0], "last": g["name"].iloc[-1]}
             for b, g in banded.groupby("band", sort=False) if len(g) > 1]
    if spans:
        layers.append(alt.Chart(inline(pd.DataFrame(spans))).mark_rule(color="#444444", strokeWidth=1.5)
                      .encode(y=alt.Y("first:N", sort=order, title=None), y2="last:N", x=alt.value(width + 8)))
    return layers


def sa_heatmap(table: pd.DataFrame, *, distance: str = "cosine", title: str | None = None,
               scheme: str = "redyellowgreen") -> "alt.LayerChart":
    """Figure 2: model x dataset heatmap of SA (the paper's red low -> yellow -> green high), values written in.

    ``scheme="viridis"`` (or any Vega scheme) for a colour-blind-safe version.
    """
    alt = import_altair()
    col = f"sa_{distance}"
    require_columns(table, ["model", "dataset", col], what="sa_heatmap")
    df = table[["model", "dataset", col]].rename(columns={col: "sa"}).copy()
    df["name"] = table["display_name"] if "display_name" in table else table["model"]
    order = list(df.groupby("name", sort=False)["sa"].mean().sort_values(ascending=False).index)
    ds_order = list(df.groupby("dataset", sort=False)["sa"].mean().sort_values(ascending=False).index)
    base = alt.Chart(inline(df)).encode(
        x=alt.X("dataset:N", sort=ds_order, title=None, axis=alt.Axis(labelAngle=-30, labelLimit=120)),
        y=alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=180)),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("sa:Q", scale=alt.Scale(scheme=scheme), title=f"SA ({distance})"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("dataset:N"), alt.Tooltip("sa:Q", format=".3f")],
    )
    text = base.mark_text(fontSize=11).encode(text=alt.Text("sa:Q", format=".3f"), color=alt.value("#111111"))
    chart = alt.layer(rect, text).properties(width=max(160, min(95 * len(ds_order), 640)), height=max(60, 28 * len(order)))
    return chart.properties(title=title or f"Dataset difficulty: SA ({distance}) per model and dataset")


#: the columns :func:`pair_heatmap` reads (those missing are filled with NaN)
PAIR_COLUMNS = ("language_a", "language_b", "sa", "ci_low", "ci_high", "sa_null", "delta", "delta_low", "delta_high", "verdict",
                "p_fdr", "survives")
_CHANCE_VERDICTS = ("chance", "below chance")
_NO_CALL_VERDICTS = ("insufficient", "undetermined", "not above surface form")  # shown as such in a pair's cell: no tier, whatever the FDR says


def pair_heatmap(
    frame: pd.DataFrame,
    *,
    value: Literal["sa", "delta"] = "sa",
    triangle: Literal["both", "lower"] = "both",
    cell: int | None = None,
    label_limit: int = 90,
    title: str | None = None,
) -> "alt.LayerChart":
    """Language x language heatmap of each pair's SA, or of SA - chance (``value="delta"``), from
    :func:`semanscope_nb.metrics.pairs.pair_affinity`.

    The matrix is symmetric: both triangles by default, ``triangle="lower"``
    for one.  SA uses the sequential viridis scheme; the gap uses the
    colour-blind-safe blue-orange diverging scheme centred at 0 (blue: above
    chance).  Cells show the value; pairs whose verdict is "chance" get a
    dashed outline and "≈ chance", "below chance" a solid outline and "< chance";
    pairs that survive the false-discovery-rate control of
    :func:`~semanscope_nb.metrics.pairs.pair_affinity` (column ``survives``) are
    marked "✓ FDR", unless their verdict gives no tier ("insufficient" or
    "undetermined", which the cell then says).
    Tooltips give both intervals.  Axis labels are angled and cut at ``label_limit`` px.

    >>> df = pd.DataFrame({"language_a": ["en"], "language_b": ["de"], "sa": [0.7], "ci_low": [0.68], "ci_high": [0.72],
    ...                    "sa_null": [0.5], "delta": [0.2], "delta_low": [0.18], "delta_high": [0.22], "verdict": ["great"]})
    >>> [layer["mark"]["type"] for layer in pair_heatmap(df).to_dict()["layer"]]
    ['rect', 'rect', 'text', 'text']
    """
    alt = import_altair()
    both, languages = _pair_cells(frame, value=value, triangle=triangle)
    n = len(languages)
    size = cell if cell is not None else int(max(34, min(64, 640 // max(n, 1))))
    colour, dark = _pair_colour(alt, both, value)
    ax = {"title": None, "sort": languages}
    base = alt.Chart(inline(both)).encode(
        x=alt.X("language_b:N", axis=alt.Axis(orient="top", labelAngle=-40, labelLimit=label_limit), **ax),
        y=alt.Y("language_a:N", axis=alt.Axis(labelLimit=label_limit), **ax),
    )
    tooltip = _pair_tooltip(alt)
    rect = base.mark_rect().encode(color=colour, tooltip=tooltip)
    outline = base.transform_filter(alt.FieldOneOfPredicate(field="verdict", oneOf=list(_CHANCE_VERDICTS))).mark_rect(
        fillOpacity=0, strokeWidth=2.5, stroke=CHANCE_COLOUR).encode(
        strokeDash=alt.condition("datum.verdict == 'chance'", alt.value([4, 3]), alt.value([1, 0])), tooltip=tooltip)
    text_colour = alt.condition(dark, alt.value("white"), alt.value("black"))
    has_mark = both["mark"].str.len() > 0
    values = base.mark_text(fontSize=11, baseline="middle", dy=-6 if has_mark.any() else 0).encode(
        text="cell_text:N", color=text_colour, tooltip=tooltip)
    marks = base.transform_filter("datum.mark != ''").mark_text(fontSize=8, baseline="middle", dy=8).encode(
        text="mark:N", color=text_colour, tooltip=tooltip)
    heading = title or ("Semantic Affinity per language pair" if value == "sa" else "SA minus chance per language pair")
    subtitle = "dashed outline: indistinguishable from chance · solid outline: below chance"
    if both["survives"].notna().any():
        subtitle = "✓ FDR: above chance after Benjamini–Hochberg across pairs · " + subtitle
    return alt.layer(rect, outline, values, marks).properties(
        width=size * n, height=size * n, title=alt.TitleParams(heading, subtitle=subtitle, anchor="start"))


def _pair_cells(frame: Any, *, value: str, triangle: str) -> tuple[pd.DataFrame, list[str]]:
    """(one row per shown cell: both orders of each pair, or the lower triangle; with its text and mark, languages)."""
    if value not in ("sa", "delta"):
        raise ValueError(f"value must be 'sa' or 'delta', got {value!r}")
    if triangle not in ("both", "lower"):
        raise ValueError(f"triangle must be 'both' or 'lower', got {triangle!r}")
    need = ["language_a", "language_b", value] + (["delta_low", "delta_high"] if value == "delta" else [])
    frame = getattr(frame, "table", frame)  # a PairAffinity result, or its table
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"pair_heatmap: the frame lacks column(s) {missing}; pass metrics.pairs.pair_affinity(...)")
    if frame.empty:
        raise ValueError("pair_heatmap needs at least one language pair")
    df = frame.copy()
    for c in PAIR_COLUMNS:
        if c not in df:
            df[c] = None if c in ("verdict", "survives") else np.nan
    languages = list(dict.fromkeys(list(df["language_a"]) + list(df["language_b"])))
    rank = {lang: i for i, lang in enumerate(languages)}
    cols = list(PAIR_COLUMNS)
    mirrored = df[cols].rename(columns={"language_a": "language_b", "language_b": "language_a"})[cols]
    both = pd.concat([df[cols], mirrored], ignore_index=True)
    # row = language_a (y), column = language_b (x); the lower triangle has the later language as the row
    if triangle == "lower":
        both = both[[rank[a] > rank[b] for a, b in zip(both["language_a"], both["language_b"])]]
    both = both.drop_duplicates(subset=["language_a", "language_b"]).reset_index(drop=True)
    both["verdict"] = both["verdict"].fillna("")
    both["survives"] = [bool(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else None for v in both["survives"]]
    # the mark says the verdict: a pair with no tier ('insufficient', 'undetermined') is never marked above chance
    both["mark"] = ["≈ chance" if v == "chance" else "< chance" if v == "below chance" else v if v in _NO_CALL_VERDICTS
                    else "✓ FDR" if ok else "" for v, ok in zip(both["verdict"], both["survives"])]
    fmt = ".3f" if value == "sa" else "+.3f"
    both["cell_text"] = [format(float(v), fmt) if is_finite(v) else "n/a" for v in both[value]]
    return both, languages


def _pair_colour(alt: Any, both: pd.DataFrame, value: str) -> tuple[Any, str]:
    """(the colour encoding, the Vega expression of cells dark enough for white text)."""
    if value == "sa":
        # the domain runs from the lowest chance level (or SA) to the highest SA, in steps of 0.05, so small
        # differences are not blown up to the whole colour range
        vals = pd.concat([both["sa"], both["sa_null"]]).astype(float)
        vals = vals[np.isfinite(vals)]
        lo = math.floor(float(vals.min()) * 20) / 20 if len(vals) else 0.45
        hi = math.ceil(float(both["sa"].astype(float).max()) * 20) / 20 if both["sa"].notna().any() else 0.8
        hi = hi if hi > lo else lo + 0.05
        colour = alt.Color("sa:Q", title="SA (cosine)", scale=alt.Scale(scheme="viridis", domain=[lo, hi]))
        return colour, f"datum.sa < {(lo + hi) / 2:.4f}"  # viridis is dark at the low end
    m = float(np.nanmax(np.abs(both[["delta", "delta_low", "delta_high"]].astype(float).to_numpy()))) if both["delta"].notna().any() else 0.0
    m = max(m, 0.01)
    colour = alt.Color("delta:Q", title="SA − chance", scale=alt.Scale(scheme="blueorange", domain=[-m, m], domainMid=0,
                                                                       reverse=True))
    return colour, f"abs(datum.delta) > {0.6 * m:.4f}"


def _pair_tooltip(alt: Any) -> list[Any]:
    return [alt.Tooltip("language_a:N", title="language"), alt.Tooltip("language_b:N", title="with"),
            alt.Tooltip("sa:Q", title="SA", format=".3f"), alt.Tooltip("ci_low:Q", title="SA low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="SA high", format=".3f"), alt.Tooltip("sa_null:Q", title="chance", format=".3f"),
            alt.Tooltip("delta:Q", title="SA − chance", format="+.3f"),
            alt.Tooltip("delta_low:Q", title="SA − chance, low", format="+.3f"),
            alt.Tooltip("delta_high:Q", title="SA − chance, high", format="+.3f"), alt.Tooltip("verdict:N"),
            alt.Tooltip("p_fdr:Q", title="p (Benjamini–Hochberg)", format=".4f"),
            alt.Tooltip("survives:N", title="above chance after FDR")]


def worst_concepts_chart(
    result: SAResult, *, n: int = 15, title: Any = None, selection: Any = None, width: int = 420, data: Any = None,
) -> "alt.Chart":
    """The ``n`` worst-aligned concepts (largest inter distance between translations), worst on top.

    ``selection``: a point selection on ``concept`` (an alignment map's) to link
    the bars to a map: clicking a bar selects that concept everywhere.  ``data``:
    the Altair data holding ``result.concepts_frame().head(n)`` (default: those rows inline).

    >>> import semanscope_nb as snb
    >>> r = snb.run_task("sa", snb.embed("edge-cases", "random-null", languages=["en", "de"], cache=False), n_boot=50)
    >>> worst_concepts_chart(r, n=5).to_dict()["encoding"]["y"]["field"]
    'concept'
    """
    alt = import_altair()
    df = result.concepts_frame().head(n)
    order = list(df["concept"])
    # sorted by the bar length, not by a list of names, so the same chart serves any result; few, formatted
    # ticks: a narrow axis never prints colliding labels such as "0.000.05"
    ticks = max(2, min(5, width // 70))
    chart = alt.Chart(data if data is not None else inline(df)).mark_bar(color=TIER_COLOURS["non-aligned"]).encode(
        y=alt.Y("concept:N", sort="-x", title=None, axis=alt.Axis(labelLimit=160)),
        x=alt.X("inter_cosine:Q", title="inter distance (cosine)" if width < 260 else "inter distance between translations (cosine)",
                axis=alt.Axis(tickCount=ticks, format=".2f", labelOverlap="greedy", labelFlush=True)),
        tooltip=[alt.Tooltip("concept:N"), alt.Tooltip("group:N"), alt.Tooltip("inter_cosine:Q", format=".3f"),
                 alt.Tooltip("inter_euclidean:Q", format=".3f")],
    )
    if selection is not None:
        chart = chart.encode(
            opacity=alt.condition(selection, alt.value(1.0), alt.value(0.35)),
            stroke=alt.value("#111111"),
            strokeWidth=alt.condition({"param": selection.name, "empty": False}, alt.value(2), alt.value(0)),
        ).add_params(selection)
    return chart.properties(width=width, height=max(60, 18 * len(order)), title=title or f"{len(order)} worst-aligned concepts")
