"""Altair charts built from results: alignment maps, the paper's Figures 1-3, rankings, the leaderboard.

Every function takes result objects and returns an ``alt.Chart`` (or layered /
concatenated chart; the leaderboard returns a pandas ``Styler``); nothing is
displayed or printed.  Charts use Altair 5 (Vega-Lite 5), which JupyterLab 4
renders with its built-in Vega extension, offline (see :mod:`semanscope_nb.plots.export`).

Large maps: every chart embeds its rows as ``alt.InlineData`` values, not as a
DataFrame.  Altair's 5,000-row guard (``MaxRowsError``) checks DataFrames handed
to the data transformer; inline values pass through untouched and are written
once into the spec's top-level ``datasets``.  So a 20,000-point map renders
without touching the user's global ``alt.data_transformers`` setting and
without VegaFusion (whose pre-evaluation buys nothing here: a map has no
transforms to pre-evaluate, only points to draw).  Only the columns a chart
encodes are embedded, rounded to 4 decimals, which keeps the spec ~100 bytes a point.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> from semanscope_nb import charts
>>> ds = snb.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(20))
>>> vecs, _, _ = snb.embed_dataset(ds, "random-null", cache=False)
>>> r = snb.runs.evaluate.affinity_of_words(snb.runs.evaluate.aligned_words(ds, vecs), n_boot=50)
>>> p = snb.projection.project_dataset(ds, vecs, settings=snb.projection.ProjectionSettings("pca"), cache=False)
>>> chart = charts.alignment_map(p, r, dataset=ds)
>>> charts.sa_legend_text(r).splitlines()[0].startswith("SA cosine")
True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.affinity import DEFAULT_TIERS, SAResult, TierThresholds

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.plots.projection import Projection

TIER_COLOURS = {"great": "#1a9850", "good": "#fdae61", "non-aligned": "#d73027", "undefined": "#999999"}
TIER_ORDER = ["great", "good", "non-aligned", "undefined"]
SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-left", "triangle-right"]


def _alt():
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


def inline(frame: pd.DataFrame) -> "alt.InlineData":
    """A DataFrame as ``alt.InlineData`` (JSON-safe values; bypasses the 5,000-row guard, see module doc)."""
    alt = _alt()
    cols = list(frame.columns)
    values = [{c: _clean(v) for c, v in zip(cols, row)} for row in frame.itertuples(index=False, name=None)]
    return alt.InlineData(values=values)


# --------------------------------------------------------------------------- the alignment map


def row_label(row: Sequence[Sequence[str]]) -> str:
    """A concept row's label, as :func:`semanscope_nb.runs.evaluate.aligned_words` writes it."""
    return " / ".join(cell[0] for cell in row[:2])


def sa_legend_text(result: SAResult) -> str:
    """The paper's SA legend (three lines): ``SA cosine 0.xxx ± 0.xxx``, ``SA Euclidean 0.xxx``, ``tier: ...``."""
    c, e = result.cosine, result.euclidean
    sem = f" ± {c.sem:.3f}" if math.isfinite(c.sem) else ""
    return f"SA cosine {c.sa:.3f}{sem}\nSA Euclidean {e.sa:.3f}\ntier: {result.tier}"


def map_frame(projection: "Projection", *, result: SAResult | None = None, dataset: "WordDataset | None" = None) -> pd.DataFrame:
    """One row per map point: x, y, word, language, concept, group, translations, inter distances.

    A word that sits in several concept rows takes its first row's concept, and
    ``translations`` lists the other languages' words of all its rows.  The
    concept's inter distance comes from ``result`` (NaN for a dropped concept).
    """
    df = projection.to_frame()
    if "word" not in df or "language" not in df:
        raise ValueError("the projection has no words/languages; project with words=... and languages=... (or project_dataset)")
    n = len(df)
    concept, group, translations = [None] * n, [None] * n, [""] * n
    if dataset is not None:
        where: dict[tuple[str, str], list[int]] = {}
        for r, row in enumerate(dataset.rows):
            for lang, cell in zip(dataset.languages, row):
                for w in cell:
                    where.setdefault((lang, w), []).append(r)
        for i, (w, lang) in enumerate(zip(df["word"], df["language"])):
            rows = where.get((lang, w), [])
            if not rows:
                continue
            concept[i] = row_label(dataset.rows[rows[0]])
            group[i] = dataset.groups[rows[0]] if dataset.groups is not None else None
            others = []
            for r in rows:
                for other, cell in zip(dataset.languages, dataset.rows[r]):
                    if other != lang:
                        others.append(f"{other}: {'|'.join(cell)}")
            translations[i] = "; ".join(dict.fromkeys(others))
    df["concept"] = concept
    df["group"] = group
    df["translations"] = translations
    if result is not None:
        inter_c = dict(zip(result.concept_labels, np.asarray(result.concept_inter_cosine, dtype=float)))
        inter_e = dict(zip(result.concept_labels, np.asarray(result.concept_inter_euclidean, dtype=float)))
        df["inter_cosine"] = [inter_c.get(c, np.nan) for c in concept]
        df["inter_euclidean"] = [inter_e.get(c, np.nan) for c in concept]
    return df


def _lines_frame(projection: "Projection", dataset: "WordDataset") -> pd.DataFrame:
    """One vertex per (concept, language): the first alternative's point; lines join a concept's translations."""
    pos = {(lang, w): (x, y) for x, y, w, lang in zip(projection.coords[:, 0], projection.coords[:, 1],
                                                       projection.words or (), projection.languages or ())}
    recs = []
    for row in dataset.rows:
        label = row_label(row)
        for k, (lang, cell) in enumerate(zip(dataset.languages, row)):
            if (lang, cell[0]) in pos:
                x, y = pos[(lang, cell[0])]
                recs.append({"concept": label, "order": k, "x": x, "y": y})
    return pd.DataFrame(recs, columns=["concept", "order", "x", "y"])


def alignment_map(
    projection: "Projection",
    result: SAResult | None = None,
    *,
    dataset: "WordDataset | None" = None,
    lines: bool = False,
    labels: bool = False,
    title: str | None = None,
    width: int = 520,
    height: int = 420,
    point_size: int = 60,
    shape_by_group: bool = True,
) -> "alt.LayerChart":
    """The alignment map: points coloured by language, shaped by concept group, with the SA legend.

    Tooltip: word, language, concept, translations, the concept's inter distance.
    ``lines=True`` joins each concept's translations.  Clicking a point highlights
    its concept in every language (an Altair point selection on ``concept``;
    double-click clears).  The SA legend (:func:`sa_legend_text`) sits in the
    top-right corner, as in the paper's figures.
    """
    alt = _alt()
    df = map_frame(projection, result=result, dataset=dataset)
    keep = ["x", "y", "word", "language", "concept", "group", "translations"] + (
        ["inter_cosine"] if "inter_cosine" in df else [])
    df = df[keep]
    axis_name = {"phate": "PHATE", "umap": "UMAP", "tsne": "t-SNE", "pca": "PC"}.get(projection.method, projection.method)
    pick = alt.selection_point(fields=["concept"], on="click", clear="dblclick", empty=True)
    tooltip = [alt.Tooltip("word:N"), alt.Tooltip("language:N"), alt.Tooltip("concept:N"), alt.Tooltip("translations:N")]
    if df["group"].notna().any():
        tooltip.append(alt.Tooltip("group:N", title="concept group"))
    if "inter_cosine" in df:
        tooltip.append(alt.Tooltip("inter_cosine:Q", title="concept inter distance (cosine)", format=".3f"))
    enc: dict[str, Any] = {
        "x": alt.X("x:Q", title=f"{axis_name} 1", axis=alt.Axis(labels=False, ticks=False, grid=False)),
        "y": alt.Y("y:Q", title=f"{axis_name} 2", axis=alt.Axis(labels=False, ticks=False, grid=False)),
        "color": alt.Color("language:N", title="language", scale=alt.Scale(scheme="category10")),
        "tooltip": tooltip,
        "opacity": alt.condition(pick, alt.value(0.9), alt.value(0.12)),
    }
    groups = [g for g in df["group"].value_counts().index if g is not None]
    if shape_by_group and groups:
        if len(groups) > len(SHAPES):  # too many for distinguishable shapes: the largest groups + "other"
            top = set(groups[: len(SHAPES) - 1])
            groups = groups[: len(SHAPES) - 1] + ["other"]
        else:
            top = set(groups)
        df = df.assign(shape_group=[g if g in top or g is None else "other" for g in df["group"]])
        enc["shape"] = alt.Shape("shape_group:N", title="concept group", scale=alt.Scale(domain=groups, range=SHAPES[: len(groups)]))
    points = alt.Chart(inline(df)).mark_point(filled=True, size=point_size).encode(**enc).add_params(pick)
    layers = []
    if lines and dataset is not None:
        lf = _lines_frame(projection, dataset)
        layers.append(
            alt.Chart(inline(lf)).mark_line(strokeWidth=0.7, color="#888888")
            .encode(x="x:Q", y="y:Q", detail="concept:N", order="order:O",
                    opacity=alt.condition(pick, alt.value(0.35), alt.value(0.05)))
        )
    layers.append(points)
    if labels:
        layers.append(alt.Chart(inline(df)).mark_text(dx=6, align="left", fontSize=9)
                      .encode(x="x:Q", y="y:Q", text="word:N", color=alt.Color("language:N", legend=None),
                              opacity=alt.condition(pick, alt.value(0.9), alt.value(0.1))))
    if result is not None:
        text = sa_legend_text(result)
        layers.append(
            alt.Chart(alt.InlineData(values=[{"legend": text}]))
            .mark_text(align="right", baseline="top", lineBreak="\n", fontSize=12, fontWeight="bold", color="#222222")
            .encode(text="legend:N", x=alt.value(width - 6), y=alt.value(6))
        )
    if title is None and result is not None:
        prov = result.provenance
        title = " · ".join(str(prov[k]) for k in ("model", "dataset") if k in prov) or None
    chart = alt.layer(*layers).properties(width=width, height=height)
    if title:
        chart = chart.properties(title=title)
    return chart


def map_grid(maps: Sequence["alt.TopLevelMixin"], *, columns: int = 2, title: str | None = None) -> "alt.VConcatChart":
    """A grid of maps (the paper's Figure 3 is 2x2): rows of ``columns`` charts, independent colour scales."""
    alt = _alt()
    if not maps:
        raise ValueError("map_grid needs at least one chart")
    rows = [alt.hconcat(*maps[i : i + columns]) for i in range(0, len(maps), columns)]
    grid = alt.vconcat(*rows).resolve_scale(color="independent", shape="independent")
    return grid.properties(title=title) if title else grid


# --------------------------------------------------------------------------- benchmark figures


def _require(table: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"{what}: the table lacks column(s) {missing}; pass BenchmarkResult.table (see run_benchmark)")


def model_means(table: pd.DataFrame, *, thresholds: TierThresholds = DEFAULT_TIERS, distance: str = "cosine") -> pd.DataFrame:
    """Average SA per model across datasets, with its tier, best first (Figure 1's data)."""
    col = f"sa_{distance}"
    _require(table, ["model", col], "model_means")
    name = table["display_name"] if "display_name" in table else table["model"]
    g = (table.assign(name=name).groupby(["model", "name"], sort=False)[col]
         .agg(["mean", "count"]).reset_index().rename(columns={"mean": "avg_sa", "count": "n_datasets"}))
    g["tier"] = [thresholds.classify(v) for v in g["avg_sa"]]
    return g.sort_values("avg_sa", ascending=False, kind="stable").reset_index(drop=True)


def tier_bar_chart(
    table: pd.DataFrame, *, thresholds: TierThresholds = DEFAULT_TIERS, width: int = 480, title: str | None = None
) -> "alt.LayerChart":
    """Figure 1: average SA (cosine) across datasets per model, bars coloured by tier, threshold rules."""
    alt = _alt()
    means = model_means(table, thresholds=thresholds)
    order = list(means["name"])
    bars = alt.Chart(inline(means)).mark_bar().encode(
        y=alt.Y("name:N", sort=order, title=None),
        x=alt.X("avg_sa:Q", title="average SA (cosine)", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("tier:N", scale=alt.Scale(domain=TIER_ORDER[:3], range=[TIER_COLOURS[t] for t in TIER_ORDER[:3]]),
                        title="tier"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("avg_sa:Q", format=".3f"), alt.Tooltip("n_datasets:Q"), alt.Tooltip("tier:N")],
    )
    values = bars.mark_text(align="left", dx=3).encode(text=alt.Text("avg_sa:Q", format=".3f"), color=alt.value("#222222"))
    th = pd.DataFrame({"threshold": [thresholds.great, thresholds.good], "label": ["great", "good"]})
    rules = alt.Chart(inline(th)).mark_rule(strokeDash=[4, 3], color="#555555").encode(x="threshold:Q", tooltip=["label:N", "threshold:Q"])
    chart = alt.layer(bars, values, rules).properties(width=width, height=max(60, 26 * len(order)))
    return chart.properties(title=title or "Three-tier structure: average SA (cosine) across datasets")


def sa_heatmap(table: pd.DataFrame, *, distance: str = "cosine", title: str | None = None) -> "alt.LayerChart":
    """Figure 2: model x dataset heatmap of SA (red low -> yellow -> green high), values written in."""
    alt = _alt()
    col = f"sa_{distance}"
    _require(table, ["model", "dataset", col], "sa_heatmap")
    df = table[["model", "dataset", col]].rename(columns={col: "sa"}).copy()
    df["name"] = table["display_name"] if "display_name" in table else table["model"]
    order = list(df.groupby("name", sort=False)["sa"].mean().sort_values(ascending=False).index)
    ds_order = list(df.groupby("dataset", sort=False)["sa"].mean().sort_values(ascending=False).index)
    base = alt.Chart(inline(df)).encode(
        x=alt.X("dataset:N", sort=ds_order, title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("name:N", sort=order, title=None),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("sa:Q", scale=alt.Scale(scheme="redyellowgreen"), title=f"SA ({distance})"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("dataset:N"), alt.Tooltip("sa:Q", format=".3f")],
    )
    text = base.mark_text(fontSize=11).encode(text=alt.Text("sa:Q", format=".3f"), color=alt.value("#111111"))
    chart = alt.layer(rect, text).properties(width=max(160, 95 * len(ds_order)), height=max(60, 28 * len(order)))
    return chart.properties(title=title or f"Dataset difficulty: SA ({distance}) per model and dataset")


def worst_concepts_chart(result: SAResult, *, n: int = 15, title: str | None = None) -> "alt.Chart":
    """The ``n`` worst-aligned concepts (largest inter distance between translations), worst on top."""
    alt = _alt()
    df = result.concepts_frame().head(n)
    order = list(df["concept"])
    chart = alt.Chart(inline(df)).mark_bar(color="#d73027").encode(
        y=alt.Y("concept:N", sort=order, title=None),
        x=alt.X("inter_cosine:Q", title="inter distance between translations (cosine)"),
        tooltip=[alt.Tooltip("concept:N"), alt.Tooltip("group:N"), alt.Tooltip("inter_cosine:Q", format=".3f"),
                 alt.Tooltip("inter_euclidean:Q", format=".3f")],
    )
    return chart.properties(width=420, height=max(60, 18 * len(order)), title=title or f"{len(order)} worst-aligned concepts")


# --------------------------------------------------------------------------- the leaderboard (Tables D.1 / D.2)


def leaderboard_wide(table: pd.DataFrame, *, distance: str = "cosine", datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Tables D.1/D.2 layout: one row per model, ``SA ± SEM`` per dataset, ``Avg SA``; best model first.

    The dataset columns hold strings ("0.807 ± 0.005"); ``Avg SA`` is a number
    (the mean over the datasets shown), so a Styler can colour it.
    """
    col, sem = f"sa_{distance}", f"sem_{distance}"
    _require(table, ["model", "dataset", col], "leaderboard_wide")
    df = table.copy()
    if sem not in df:
        df[sem] = np.nan
    df["name"] = df["display_name"] if "display_name" in df else df["model"]
    datasets = list(datasets) if datasets is not None else list(dict.fromkeys(df["dataset"]))

    def cell(v: float, s: float) -> str:
        return f"{v:.3f} ± {s:.3f}" if math.isfinite(s) else f"{v:.3f}"

    out = df.pivot_table(index="name", columns="dataset", values=col, aggfunc="first")
    errs = df.pivot_table(index="name", columns="dataset", values=sem, aggfunc="first", dropna=False)
    wide = pd.DataFrame(index=out.index)
    for d in datasets:
        wide[d] = [cell(v, errs.loc[m, d] if d in errs and m in errs.index else math.nan) if pd.notna(v) else ""
                   for m, v in zip(out.index, out[d] if d in out else [np.nan] * len(out))]
    wide["Avg SA"] = out[[d for d in datasets if d in out]].mean(axis=1)
    wide = wide.sort_values("Avg SA", ascending=False, kind="stable")
    wide.index.name = "Model"
    return wide


def leaderboard_table(
    table: pd.DataFrame, *, distance: str = "cosine", thresholds: TierThresholds = DEFAULT_TIERS,
    datasets: Sequence[str] | None = None, caption: str | None = None,
) -> "pd.io.formats.style.Styler":
    """The leaderboard styled like the paper's Tables D.1 (cosine) / D.2 (Euclidean): a pandas ``Styler``.

    A Styler (not an Altair text table) because it renders as an HTML table in
    notebooks, copies into papers (``.to_latex()``, ``.to_html()``) and keeps the
    "0.807 ± 0.005" cells as text.  ``Avg SA`` is shaded by tier.
    """
    wide = leaderboard_wide(table, distance=distance, datasets=datasets)
    default = ("Semantic Affinity Scores (Cosine Distance - PRIMARY)" if distance == "cosine"
               else "Semantic Affinity Scores (Euclidean Distance - SUPPLEMENTARY)")

    def shade(v: float) -> str:
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            return ""
        return f"background-color: {TIER_COLOURS[thresholds.classify(float(v))]}33"

    styler = (
        wide.style.format({"Avg SA": "{:.3f}"}).map(shade, subset=["Avg SA"])
        .set_caption(caption or default)
        .set_table_styles([
            {"selector": "caption", "props": "caption-side: bottom; font-style: italic; padding-top: 6px;"},
            {"selector": "th", "props": "text-align: left; border-bottom: 1px solid #444;"},
            {"selector": "td", "props": "padding: 2px 10px; font-family: monospace;"},
        ])
    )
    return styler
