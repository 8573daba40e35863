"""Paper 000's Figures 1 and 2 redrawn from its Tables D.1/D.2, beside our own runs (same axes, same model order).

Our models are matched to the paper's by the registry's ``paper_name`` (only USE is
offline here); unmatched models of ours follow the paper's 13, our bars only.
Datasets are matched by the paper's keys (DS1-DS4), its file stems (``ICML-1-peterg...``)
or our bundled datasets on the same themes (``conceptual-space`` ...).

Example
-------
>>> import pandas as pd
>>> from semanscope_nb.plots.paper import paper_tier_chart
>>> ours = pd.DataFrame({"model": ["use-multilingual"] * 2, "dataset": ["DS1", "DS2"],
...                      "sa_cosine": [0.75, 0.74], "sem_cosine": [0.005, 0.006]})
>>> spec = paper_tier_chart(ours).to_dict()
>>> sorted({r["source"] for r in spec["datasets"][spec["layer"][0]["data"]["name"]]})
['ours', 'paper']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import pandas as pd

from semanscope_nb.data.reference import PAPER_DATASETS, PAPER_FILES, paper_model_order, paper_tables
from semanscope_nb.metrics.affinity import DEFAULT_TIERS, TierThresholds
from semanscope_nb.models.registry import get_model_info
from semanscope_nb.plots.palette import TIER_COLOURS

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

SOURCES = ("paper", "ours")
SOURCE_COLOURS = ("#9e9e9e", "#1f77b4")


def _file_version(name: str) -> str | None:
    """'v0' or 'later' for one of the paper's files (by its name), None for other datasets."""
    s = str(name)
    if not any(s.startswith(stem) for stem in PAPER_FILES.values()):
        return None
    return "v0" if "-v0" in s else "later"


def _dataset_key(name: str) -> str | None:
    s = str(name)
    if s in PAPER_FILES:
        return s
    for key, stem in PAPER_FILES.items():
        if s.startswith(stem):
            return key
    return {v: k for k, v in PAPER_DATASETS.items()}.get(s)


def _paper_name(model: str) -> str:
    try:
        return get_model_info(model).paper_name or model
    except Exception:  # an unregistered id (an encoder object's name): keep it
        return model


def comparison_frame(
    ours: pd.DataFrame,
    *,
    distance: Literal["cosine", "euclidean"] = "cosine",
    paper: pd.DataFrame | None = None,
    files: Literal["v0", "later"] = "v0",
) -> pd.DataFrame:
    """Long table ``source, model, dataset, sa, pm, our_id`` of the paper's numbers and ours.

    ``ours`` is a leaderboard (``run_benchmark(...).table``) with ``model, dataset,
    sa_<distance>`` and optionally ``sem_<distance>``; rows whose dataset is not one of
    the paper's four are dropped.  When ``ours`` holds a dataset in both versions
    of the paper's files (``...-v0-SA`` and the later ``...-SA``), only ``files``
    is kept: by default the v0 files, the ones the paper's numbers come from.

    >>> ours = pd.DataFrame({"model": ["use-multilingual"], "dataset": ["edge-cases"], "sa_cosine": [0.6]})
    >>> comparison_frame(ours).query("source == 'ours'")[["model", "dataset"]].values.tolist()
    [['USE', 'DS3']]
    """
    if distance not in ("cosine", "euclidean"):
        raise ValueError(f"distance must be 'cosine' or 'euclidean', got {distance!r}")
    if not isinstance(ours, pd.DataFrame):
        raise TypeError(f"ours must be a DataFrame (a leaderboard), got {type(ours).__name__}")
    col, sem = f"sa_{distance}", f"sem_{distance}"
    missing = [c for c in ("model", "dataset", col) if c not in ours.columns]
    if missing:
        raise ValueError(f"ours lacks the columns {missing} (pass run_benchmark(...).table)")
    ref = paper if paper is not None else paper_tables(distance=distance)
    ref = ref[ref["distance"] == distance] if "distance" in ref else ref
    p = pd.DataFrame({"source": "paper", "model": ref["model"], "dataset": ref["dataset"],
                      "sa": ref["sa"].astype(float), "pm": ref["pm"].astype(float), "our_id": None})
    o = pd.DataFrame({"source": "ours", "model": [_paper_name(m) for m in ours["model"]],
                      "dataset": [_dataset_key(d) for d in ours["dataset"]], "sa": ours[col].astype(float),
                      "pm": ours[sem].astype(float) if sem in ours else math.nan, "our_id": ours["model"].astype(str)})
    o = o[o["dataset"].notna()]
    version = pd.Series([_file_version(d) for d in ours["dataset"]], index=ours.index).reindex(o.index)
    both = o.assign(_v=version).groupby(["our_id", "dataset"])["_v"].transform("nunique") > 1
    o = o[~both | (version == files)]
    return pd.concat([p, o], ignore_index=True)


def _model_order(frame: pd.DataFrame) -> list[str]:
    order = [m for m in paper_model_order() if m in set(frame["model"])]
    return order + [m for m in dict.fromkeys(frame["model"]) if m not in order]


def paper_tier_chart(
    ours: pd.DataFrame,
    *,
    distance: Literal["cosine", "euclidean"] = "cosine",
    thresholds: TierThresholds = DEFAULT_TIERS,
    paper: pd.DataFrame | None = None,
    width: int = 640,
    height: int = 300,
    title: str | None = None,
) -> "alt.LayerChart":
    """Figure 1, ours vs the paper's: average SA over DS1-DS4 per model, grey = paper, blue = ours.

    Error bars: ± the standard error of the average, ``sqrt(sum of ±²) / n`` (datasets taken as
    independent).  Dashed rules mark the tier thresholds.  Returns the chart; displays nothing.
    """
    import altair as alt

    f = comparison_frame(ours, distance=distance, paper=paper)
    g = f.groupby(["source", "model"], sort=False).agg(
        avg_sa=("sa", "mean"), n=("sa", "size"),
        err=("pm", lambda s: float(math.sqrt((s.astype(float) ** 2).sum(min_count=1)) / len(s))),
    ).reset_index()
    g["err"] = g["err"].fillna(0.0)
    g["low"], g["high"] = g["avg_sa"] - g["err"], g["avg_sa"] + g["err"]
    g["tier"] = [thresholds.classify(v) for v in g["avg_sa"]]
    order = _model_order(f)
    x = alt.X("model:N", sort=order, title=None, axis=alt.Axis(labelAngle=-40))
    y_scale = alt.Scale(domain=[0.3, 0.9], clamp=True)
    base = alt.Chart(g)
    bars = base.mark_bar().encode(
        x=x, xOffset=alt.XOffset("source:N", sort=list(SOURCES)),
        y=alt.Y("avg_sa:Q", scale=y_scale, title=f"average SA ({distance}) over DS1-DS4"),
        color=alt.Color("source:N", scale=alt.Scale(domain=list(SOURCES), range=list(SOURCE_COLOURS)), title=None),
        tooltip=["source", "model", alt.Tooltip("avg_sa:Q", format=".3f"), alt.Tooltip("err:Q", format=".3f"), "n", "tier"],
    )
    errs = base.mark_rule(color="black").encode(
        x=x, xOffset=alt.XOffset("source:N", sort=list(SOURCES)), y=alt.Y("low:Q", scale=y_scale), y2="high:Q",
    )
    rules = alt.Chart(pd.DataFrame({"threshold": [thresholds.good, thresholds.great],
                                    "tier": ["good", "great"]})).mark_rule(strokeDash=[4, 3]).encode(
        y=alt.Y("threshold:Q", scale=y_scale),
        color=alt.value(TIER_COLOURS.get("good", "#888")),
    )
    return alt.layer(bars, errs, rules).properties(
        width=width, height=height,
        title=title or f"Figure 1, ours vs paper 000 (Table D.{1 if distance == 'cosine' else 2}): three tiers")


def paper_heatmap(
    ours: pd.DataFrame,
    *,
    distance: Literal["cosine", "euclidean"] = "cosine",
    paper: pd.DataFrame | None = None,
    cell: int = 44,
    scheme: str = "redyellowgreen",
    title: str | None = None,
) -> "alt.FacetChart":
    """Figure 2, ours vs the paper's: model x dataset SA heatmaps side by side (one colour scale, one model order).

    The paper's red-yellow-green scale by default; ``scheme="viridis"`` is colour-blind safe.

    >>> import pandas as pd
    >>> ours = pd.DataFrame({"model": ["random-null"], "dataset": ["DS4"], "sa_cosine": [0.5]})
    >>> paper_heatmap(ours).to_dict()["facet"]["column"]["field"]
    'source'
    """
    import altair as alt

    f = comparison_frame(ours, distance=distance, paper=paper)
    order = _model_order(f)
    f = f.assign(label=[f"{v:.3f}" for v in f["sa"]])
    colour = alt.Color("sa:Q", scale=alt.Scale(scheme=scheme, domain=[0.4, 0.8], clamp=True),
                       title=f"SA ({distance})")
    y = alt.Y("model:N", sort=order, title=None)
    x = alt.X("dataset:N", sort=list(PAPER_FILES), title=None)
    rect = alt.Chart().mark_rect().encode(
        x=x, y=y, color=colour,
        tooltip=["source", "model", "dataset", alt.Tooltip("sa:Q", format=".3f"), alt.Tooltip("pm:Q", format=".3f")])
    text = alt.Chart().mark_text(fontSize=10).encode(x=x, y=y, text="label:N")
    return alt.layer(rect, text, data=f).properties(width=4 * cell, height=cell * len(order) // 2).facet(
        column=alt.Column("source:N", sort=list(SOURCES), title=None),
    ).properties(title=title or f"Figure 2, ours vs paper 000: SA ({distance}), models x datasets")


# --------------------------------------------------------------------------- the comparison table (runs.paper)

ERROR_BARS = ("published ±", "ours: bootstrap SE (sampling error)", "ours: the tool's delta-method ±")
ERROR_BAR_COLOURS = ("#9e9e9e", "#1f77b4", "#ff7f0e")


def paper_error_bars(
    table: pd.DataFrame, *, files: str = "v0", width: int = 220, height: int = 220, title: str | None = None,
) -> "alt.FacetChart":
    """Our SA with both error bars beside the published SA ± (one panel per distance).

    ``table`` is :func:`semanscope_nb.runs.paper.paper_comparison`.  Three
    points per dataset: the published SA ± its published ±; ours ± our
    bootstrap SE (concepts resampled: the sampling error); ours ± the original
    tool's delta-method ± computed on our vectors (not a sampling error: it
    holds the between-language term).

    >>> t = pd.DataFrame({"dataset": ["DS1"], "files": ["v0"], "distance": ["cosine"], "sa": [0.77], "sem": [0.005],
    ...                   "tool_pm": [0.008], "paper_sa": [0.767], "paper_pm": [0.007]})
    >>> paper_error_bars(t).to_dict()["facet"]["column"]["field"]
    'distance'
    """
    import altair as alt

    t = table[table["files"] == files]
    parts = [
        pd.DataFrame({"bar": ERROR_BARS[0], "dataset": t["dataset"], "distance": t["distance"], "sa": t["paper_sa"],
                      "pm": t["paper_pm"]}),
        pd.DataFrame({"bar": ERROR_BARS[1], "dataset": t["dataset"], "distance": t["distance"], "sa": t["sa"], "pm": t["sem"]}),
        pd.DataFrame({"bar": ERROR_BARS[2], "dataset": t["dataset"], "distance": t["distance"], "sa": t["sa"],
                      "pm": t["tool_pm"]}),
    ]
    f = pd.concat(parts, ignore_index=True)
    f["low"], f["high"] = f["sa"] - f["pm"], f["sa"] + f["pm"]
    colour = alt.Color("bar:N", scale=alt.Scale(domain=list(ERROR_BARS), range=list(ERROR_BAR_COLOURS)), title=None,
                       legend=alt.Legend(orient="bottom", direction="vertical"))
    x = alt.X("dataset:N", sort=list(PAPER_FILES), title=None)
    off = alt.XOffset("bar:N", sort=list(ERROR_BARS))
    y = alt.Y("sa:Q", scale=alt.Scale(zero=False), title="SA")
    tips = ["bar", "dataset", "distance", alt.Tooltip("sa:Q", format=".3f"), alt.Tooltip("pm:Q", format=".4f")]
    points = alt.Chart().mark_point(filled=True, size=50).encode(x=x, xOffset=off, y=y, color=colour, tooltip=tips)
    rules = alt.Chart().mark_rule().encode(x=x, xOffset=off, y="low:Q", y2="high:Q", color=colour)
    return alt.layer(rules, points, data=f).properties(width=width, height=height).facet(
        column=alt.Column("distance:N", title=None),
    ).resolve_scale(y="independent").properties(
        title=title or f"SA ± on the paper's {files} files: published, our sampling error, the tool's ±")


def paper_gap_chart(table: pd.DataFrame, *, within: float = 2.0, width: int = 300, height: int = 200) -> "alt.LayerChart":
    """Each gap to the published SA in our standard errors, per dataset and distance; the band is ``±within``.

    >>> t = pd.DataFrame({"dataset": ["DS1", "DS1"], "files": ["v0", "later"], "distance": ["cosine"] * 2,
    ...                   "gap_se": [0.9, -2.9], "reproduced": [True, False]})
    >>> len(paper_gap_chart(t).to_dict()["layer"])
    2
    """
    import altair as alt

    f = table.assign(label=[f"{d} {dist[:3]}" for d, dist in zip(table["dataset"], table["distance"])])
    order = [f"{d} {dist}" for dist in ("cos", "euc") for d in PAPER_FILES]
    band = alt.Chart(pd.DataFrame({"low": [-within], "high": [within]})).mark_rect(opacity=0.15, color="#2ca02c").encode(
        y="low:Q", y2="high:Q")
    points = alt.Chart(f).mark_point(filled=True, size=70).encode(
        x=alt.X("label:N", sort=order, title=None, axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("gap_se:Q", title="gap to the published SA, in our SEs"),
        color=alt.Color("files:N", title="files"), shape=alt.Shape("files:N", title="files"),
        tooltip=["dataset", "distance", "files", alt.Tooltip("gap_se:Q", format="+.1f"), "reproduced"])
    return alt.layer(band, points).properties(
        width=width, height=height, title=f"Reproduced when the point lies in the band (|gap| <= {within:g} of our SEs)")
