"""Charts of retrieval, classification and alignment results (Altair 5; each returns a chart, nothing is shown).

* :func:`rank_histogram`: where the gold translation lands (rank 1, 2, ..., > max_rank), per model and direction.
* :func:`accuracy_at_k_chart`: accuracy@k curves per model and direction, with bootstrap intervals.
* :func:`classification_table`: a table-like heatmap of kNN and baseline accuracy per setting.
* :func:`sentence_map`: a projection of sentence embeddings coloured by class, language or sample id
  (MINERS figures 3 and 5).
* :func:`alignment_pair`: the before / after alignment maps side by side, each with its SA legend
  (:func:`semanscope_nb.plots.maps.alignment_map`, reused as is).

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> from semanscope_nb.plots import retrieval_charts as rc
>>> x = np.random.default_rng(0).normal(size=(30, 8))
>>> r = snb.bitext_retrieval(x, x + np.random.default_rng(1).normal(size=(30, 8)), n_boot=50)
>>> spec = rc.accuracy_at_k_chart({"toy": r}).to_dict()
>>> spec["layer"][0]["mark"]["type"]
'line'
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from semanscope_nb.plots.chart_kit import inline, language_scale
from semanscope_nb.plots.maps import alignment_map

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.metrics.affinity import SAResult
    from semanscope_nb.metrics.classification import ClassificationResult
    from semanscope_nb.metrics.retrieval import BitextResult
    from semanscope_nb.plots.projection import Projection


def _alt():
    import altair as alt  # lazy: `import semanscope_nb` does not import Altair

    return alt


def _named(results: "BitextResult | Mapping[str, BitextResult]") -> dict[str, "BitextResult"]:
    from semanscope_nb.metrics.retrieval import BitextResult

    if isinstance(results, BitextResult):
        return {str(results.provenance.get("model", "model")): results}
    if not results:
        raise ValueError("no results to chart")
    return dict(results)


def _directions(r: "BitextResult") -> list["BitextResult"]:
    return [r] + ([r.reverse] if r.reverse is not None else [])


def rank_frame(results: "BitextResult | Mapping[str, BitextResult]", *, max_rank: int = 10) -> pd.DataFrame:
    """Share of queries per rank bin (1..max_rank, then '>max_rank'), per model and direction."""
    rows = []
    bins = [str(i) for i in range(1, max_rank + 1)] + [f">{max_rank}"]
    for name, r in _named(results).items():
        for d in _directions(r):
            n = d.ranks.size
            counts = pd.Series([str(x) if x <= max_rank else f">{max_rank}" for x in d.ranks]).value_counts()
            for b in bins:
                c = int(counts.get(b, 0))
                rows.append({"model": name, "direction": d.direction, "rank": b, "queries": c, "share": c / n})
    return pd.DataFrame(rows)


def rank_histogram(results: "BitextResult | Mapping[str, BitextResult]", *, max_rank: int = 10, title: str | None = None) -> "alt.FacetChart":
    """Histogram of the gold item's rank: one bar per model in each rank bin, one panel per direction."""
    alt = _alt()
    df = rank_frame(results, max_rank=max_rank)
    order = [str(i) for i in range(1, max_rank + 1)] + [f">{max_rank}"]
    chart = (
        alt.Chart(inline(df)).mark_bar()
        .encode(
            x=alt.X("rank:N", sort=order, title="rank of the gold translation", axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("model:N"),
            y=alt.Y("share:Q", title="share of queries", axis=alt.Axis(format="%")),
            color=alt.Color("model:N", title="model"),
            tooltip=["model:N", "direction:N", "rank:N", "queries:Q", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=320, height=220)
        .facet(column=alt.Column("direction:N", title=None))
    )
    return chart.properties(title=title) if title else chart


def accuracy_frame(results: "BitextResult | Mapping[str, BitextResult]") -> pd.DataFrame:
    """accuracy@k with its interval, one row per (model, direction, k)."""
    rows = []
    for name, r in _named(results).items():
        for d in _directions(r):
            for k in d.ks:
                lo, hi = d.intervals.get(f"accuracy@{k}", (math.nan, math.nan))
                rows.append({"model": name, "direction": d.direction, "k": k, "accuracy": d.accuracy[k],
                             "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def accuracy_at_k_chart(results: "BitextResult | Mapping[str, BitextResult]", *, title: str | None = None) -> "alt.LayerChart":
    """accuracy@k curves: colour = model, dash = direction, bars = bootstrap 95% interval."""
    alt = _alt()
    df = accuracy_frame(results)
    base = alt.Chart(inline(df)).encode(
        x=alt.X("k:Q", title="k", scale=alt.Scale(type="log"), axis=alt.Axis(values=sorted(df["k"].unique().tolist()))),
        color=alt.Color("model:N", title="model"),
    )
    line = base.mark_line(point=True).encode(
        y=alt.Y("accuracy:Q", title="accuracy@k", scale=alt.Scale(domain=[0, 1])),
        strokeDash=alt.StrokeDash("direction:N", title="direction"),
        tooltip=["model:N", "direction:N", "k:Q", alt.Tooltip("accuracy:Q", format=".3f"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f")],
    )
    bars = base.mark_rule().encode(y="ci_low:Q", y2="ci_high:Q", detail="direction:N")
    chart = alt.layer(line, bars).properties(width=420, height=260)
    return chart.properties(title=title) if title else chart


def classification_frame(results: "ClassificationResult | Mapping[str, ClassificationResult]") -> pd.DataFrame:
    """Accuracy per (row label, method), the row label naming model and setting."""
    from semanscope_nb.metrics.classification import ClassificationResult

    items = {"result": results} if isinstance(results, ClassificationResult) else dict(results)
    if not items:
        raise ValueError("no results to chart")
    frames = []
    for name, r in items.items():
        df = r.to_frame()
        df["row"] = f"{name} · {r.setting} ({r.train_language}→{r.test_language})"
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def classification_table(results: "ClassificationResult | Mapping[str, ClassificationResult]", *, title: str | None = None) -> "alt.LayerChart":
    """A heatmap table: rows = model/setting, columns = kNN@k and the baselines, cells = accuracy (text) and colour."""
    alt = _alt()
    df = classification_frame(results)[["row", "method", "accuracy", "ci_low", "ci_high", "macro_f1"]]
    df = df.assign(label=[f"{a:.2f}" for a in df["accuracy"]])
    methods = list(dict.fromkeys(df["method"]))
    base = alt.Chart(inline(df)).encode(
        x=alt.X("method:N", sort=methods, title=None, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("row:N", sort=list(dict.fromkeys(df["row"])), title=None),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("accuracy:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="accuracy"),
        tooltip=["row:N", "method:N", alt.Tooltip("accuracy:Q", format=".3f"), alt.Tooltip("ci_low:Q", format=".3f"),
                 alt.Tooltip("ci_high:Q", format=".3f"), alt.Tooltip("macro_f1:Q", format=".3f", title="macro F1")],
    )
    text = base.mark_text(fontSize=12).encode(
        text="label:N", color=alt.condition("datum.accuracy > 0.6", alt.value("white"), alt.value("black")),
    )
    chart = alt.layer(cells, text).properties(width=90 * len(methods), height=28 * df["row"].nunique())
    return chart.properties(title=title) if title else chart


def alignment_pair(
    before: "tuple[Projection, SAResult]",
    after: "tuple[Projection, SAResult]",
    *,
    dataset: "WordDataset | None" = None,
    titles: tuple[str, str] = ("before alignment", "after alignment"),
    width: int = 380,
    height: int = 320,
    **kwargs: Any,
) -> "alt.HConcatChart":
    """Two alignment maps side by side (before, after), each with its SA legend in the corner.

    Each side is :func:`semanscope_nb.plots.maps.alignment_map` of (projection, SA result).
    """
    alt = _alt()
    maps = []
    for (proj, sa), t in zip((before, after), titles):
        model = sa.provenance.get("model")
        maps.append(alignment_map(proj, sa, dataset=dataset, title=f"{t}: {model}" if model else t, width=width,
                                  height=height, **kwargs))
    return alt.hconcat(*maps).resolve_scale(color="shared", shape="shared")


SENTENCE_MAP_COLOURS = ("class", "language", "sample")


def sentence_frame(
    projection: "Projection",
    *,
    labels: Sequence[str] | None = None,
    sample_ids: Sequence[Any] | None = None,
    texts: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per projected sentence: ``x, y, language, label, sample, text`` (the data of :func:`sentence_map`).

    ``labels`` (a class per row), ``sample_ids`` (the parallel-sentence id per row: rows of
    different languages with one id translate each other) and ``texts`` must have one entry per
    row of ``projection``; languages and, when ``texts`` is None, texts come from the projection.
    """
    n = len(projection)
    for name, values in (("labels", labels), ("sample_ids", sample_ids), ("texts", texts)):
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries; the projection has {n} rows")
    langs = projection.languages or ("",) * n
    words = texts if texts is not None else (projection.words or ("",) * n)
    return pd.DataFrame({
        "x": projection.coords[:, 0], "y": projection.coords[:, 1], "language": list(langs),
        "label": [str(v) for v in labels] if labels is not None else [""] * n,
        "sample": [str(v) for v in sample_ids] if sample_ids is not None else [""] * n,
        "text": [str(v) for v in words],
    })


def sentence_map(
    projection: "Projection",
    *,
    colour: str = "class",
    labels: Sequence[str] | None = None,
    sample_ids: Sequence[Any] | None = None,
    texts: Sequence[str] | None = None,
    title: str | None = None,
    width: int = 420,
    height: int = 360,
    point_size: int = 30,
    colour_title: str | None = None,
) -> "alt.Chart":
    """A t-SNE / PHATE / UMAP map of sentence embeddings coloured by class, language or sample id (MINERS Figs. 3, 5).

    ``colour="class"`` colours by ``labels`` and gives each language a shape (do classes
    cluster across languages?); ``"language"`` uses the fixed language colours (does the
    space split by language?); ``"sample"`` colours by ``sample_ids`` (do translations
    of one sentence land together?).  Tooltips show text, language, class and sample;
    wheel / drag zoom and pan.  ``colour_title`` names the colour legend (e.g. "topic").
    Returns the chart; nothing is displayed.

    >>> import numpy as np, semanscope_nb as snb
    >>> from semanscope_nb.plots.retrieval_charts import sentence_map
    >>> p = snb.project({"en": np.eye(4), "de": np.eye(4) + 0.1}, method="pca", cache=False)
    >>> spec = sentence_map(p, colour="sample", sample_ids=[0, 1, 2, 3] * 2).to_dict()
    >>> spec["mark"]["type"], spec["encoding"]["color"]["field"], spec["encoding"]["shape"]["field"]
    ('point', 'sample', 'language')
    """
    if colour not in SENTENCE_MAP_COLOURS:
        raise ValueError(f"colour must be one of {SENTENCE_MAP_COLOURS}, got {colour!r}")
    if colour == "class" and labels is None:
        raise ValueError("colour='class' needs labels= (one class per row)")
    if colour == "sample" and sample_ids is None:
        raise ValueError("colour='sample' needs sample_ids= (the parallel-sentence id of each row)")
    alt = _alt()
    frame = sentence_frame(projection, labels=labels, sample_ids=sample_ids, texts=texts)
    if colour == "language":
        color = alt.Color("language:N", scale=language_scale(frame["language"]), title="language")
    elif colour == "class":
        color = alt.Color("label:N", scale=alt.Scale(scheme="tableau10" if frame["label"].nunique() <= 10 else "tableau20"),
                          title=colour_title or "class")
    else:
        many = frame["sample"].nunique() > 20
        color = alt.Color("sample:N", scale=alt.Scale(scheme="tableau20"), title="sample id",
                          legend=None if many else alt.Legend())
    tooltip = [alt.Tooltip("text:N"), alt.Tooltip("language:N")]
    tooltip += [alt.Tooltip("label:N", title="class")] if labels is not None else []
    tooltip += [alt.Tooltip("sample:N", title="sample id")] if sample_ids is not None else []
    encoding: dict[str, Any] = {
        "x": alt.X("x:Q", scale=alt.Scale(zero=False), title=f"{projection.method} 1"),
        "y": alt.Y("y:Q", scale=alt.Scale(zero=False), title=f"{projection.method} 2"),
        "color": color, "tooltip": tooltip,
    }
    if colour != "language" and frame["language"].nunique() > 1:
        encoding["shape"] = alt.Shape("language:N", title="language")
    chart = (alt.Chart(inline(frame)).mark_point(filled=True, size=point_size, opacity=0.75)
             .encode(**encoding).properties(width=width, height=height).interactive())
    return chart.properties(title=title) if title else chart


def sentence_maps_by_sample_and_class(
    projection: "Projection",
    *,
    labels: Sequence[str],
    sample_ids: Sequence[Any],
    texts: Sequence[str] | None = None,
    titles: tuple[str, str] = ("by sample id", "by class"),
    class_title: str = "class",
    width: int = 340,
    height: int = 300,
) -> "alt.HConcatChart":
    """Two sentence maps side by side: coloured by sample id, and by class with its own legend.

    Each map keeps its own colour scale (``resolve_scale(color="independent")``): with a
    shared one, Vega-Lite merges the sample ids and the classes into one domain, warns of
    conflicting schemes, and the class map loses its legend and its distinct colours.

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project({"en": np.eye(4), "de": np.eye(4) + 0.1}, method="pca", cache=False)
    >>> spec = sentence_maps_by_sample_and_class(p, labels=["a", "b", "a", "b"] * 2, sample_ids=[0, 1, 2, 3] * 2,
    ...                                          class_title="topic").to_dict()
    >>> spec["resolve"]["scale"]["color"], spec["hconcat"][1]["encoding"]["color"]["title"]
    ('independent', 'topic')
    """
    alt = _alt()
    by_sample = sentence_map(projection, colour="sample", sample_ids=sample_ids, labels=labels, texts=texts,
                             title=titles[0], width=width, height=height)
    by_class = sentence_map(projection, colour="class", labels=labels, texts=texts, title=titles[1], width=width,
                            height=height, colour_title=class_title)
    return alt.hconcat(by_sample, by_class).resolve_scale(color="independent")
