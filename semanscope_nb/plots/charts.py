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

Navigable maps (``navigate=True``): the mouse wheel zooms and a drag pans (an
interval selection bound to the scales); a search box enlarges, outlines and
labels the matching words; shift-drag brushes points and lists their words and
translations beside the map; a click labels a concept in every language
(``selected_concepts=`` restores a selection when the chart is redrawn).
Everything runs in the Vega view, so it works offline and in exported HTML.
Colours are fixed per language code (:mod:`semanscope_nb.plots.palette`).

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
>>> spec = charts.alignment_map(p, r, dataset=ds, navigate=True).to_dict()
>>> sorted(k for k in spec if k.endswith("concat"))
['hconcat']
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any, Collection, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.affinity import DEFAULT_TIERS, SAResult, TierThresholds
from semanscope_nb.plots.palette import CHANCE_COLOUR, TIER_COLOURS, TIER_ORDER, language_colour, tier_colour

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.plots.projection import Projection

SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-left", "triangle-right"]
#: what ``navigate=True`` switches on; pass a subset (e.g. ``navigate={"zoom", "search"}``) for fewer
NAV_FEATURES = ("zoom", "search", "brush", "labels")
LEGEND_POSITIONS = ("top-left", "top-right", "bottom-left", "bottom-right", "outside")
#: colours of the SA legend box, labels and outlines; the box carries its own background, so the
#: light box also reads on JupyterLab's dark theme
THEMES: dict[str, dict[str, Any]] = {
    "light": {"box": "#ffffff", "box_opacity": 0.82, "box_stroke": "#b0b0b0", "text": "#222222", "outline": "#111111",
              "muted": "#777777", "line": "#888888"},
    "dark": {"box": "#1e1e1e", "box_opacity": 0.80, "box_stroke": "#5a5a5a", "text": "#eeeeee", "outline": "#ffffff",
             "muted": "#aaaaaa", "line": "#9a9a9a"},
}
#: shift-drag draws the brush; a plain drag pans (so the two never fight over one gesture)
_SHIFT_DRAG = "[mousedown[event.shiftKey], window:mouseup] > window:mousemove!"
_PLAIN_DRAG = "[mousedown[!event.shiftKey], window:mouseup] > window:mousemove!"


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


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _theme(theme: str) -> dict[str, Any]:
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {tuple(THEMES)}, got {theme!r}")
    return THEMES[theme]


def language_scale(languages: Iterable[str]) -> "alt.Scale":
    """A colour scale with an explicit domain and the fixed colour of every language code.

    >>> language_scale(["en", "zh"]).to_dict()
    {'domain': ['en', 'zh'], 'range': ['#0072B2', '#D55E00']}
    """
    alt = _alt()
    domain = [str(code) for code in dict.fromkeys(languages)]
    return alt.Scale(domain=domain, range=[language_colour(code) for code in domain])


def _language_shape(code: str, domain: Sequence[str]) -> str:
    return SHAPES[list(domain).index(code) % len(SHAPES)]


# --------------------------------------------------------------------------- the SA legend


def _chance(result: Any) -> dict[str, float] | None:
    """The null-aware numbers of a result, when it carries them (``result.chance``), else None."""
    chance = getattr(result, "chance", None)
    if chance is None:
        return None
    try:
        out = {"sa_null": float(chance.sa_null.value), "delta": float(chance.delta.value),
               "delta_low": float(chance.delta.ci[0]), "delta_high": float(chance.delta.ci[1])}
        null_ci = getattr(chance.sa_null, "ci", (math.nan, math.nan))
        out["null_low"], out["null_high"] = float(null_ci[0]), float(null_ci[1])
        corrected = getattr(chance, "corrected", None)
        out["corrected"] = float(corrected.value) if corrected is not None else math.nan
    except (AttributeError, TypeError, IndexError, ValueError):
        return None
    return out if _finite(out["sa_null"]) else None


def sa_legend_text(result: SAResult, *, verdict: bool = True, wrap: int = 38) -> str:
    """The SA legend: ``SA cosine 0.xxx ± 0.xxx``, ``SA Euclidean 0.xxx``, ``tier: ...``, then the verdict.

    When the result carries a chance level (``result.chance``) two lines follow
    (the chance level with its interval, and SA minus chance with its
    interval), then the verdict's caveats (``result.verdict``'s clauses after
    the first ";": concepts left out, a threshold inside the interval), wrapped
    at ``wrap`` characters; without a chance level the whole verdict sentence
    follows.  The tier line also names the paper's tier when the null-aware
    tier differs.  ``verdict=False`` gives the paper's three lines only.
    Results without these attributes give the three lines either way.
    """
    c, e = result.cosine, result.euclidean
    sem = f" ± {c.sem:.3f}" if math.isfinite(c.sem) else ""
    tier = getattr(result, "tier", "undefined")
    lines = [f"SA cosine {c.sa:.3f}{sem}", f"SA Euclidean {e.sa:.3f}", f"tier: {tier}"]
    if not verdict:
        return "\n".join(lines)
    paper = getattr(result, "paper_tier", None)
    if isinstance(paper, str) and paper != tier:
        lines[2] += f" (paper: {paper})"
    ch = _chance(result)
    if ch is not None:
        null_ci = f" [{ch['null_low']:.3f}, {ch['null_high']:.3f}]" if _finite(ch["null_low"]) and _finite(ch["null_high"]) else ""
        lines.append(f"chance {ch['sa_null']:.3f}{null_ci}")
        if _finite(ch["delta"]):
            d_ci = (f" [{ch['delta_low']:+.3f}, {ch['delta_high']:+.3f}]"
                    if _finite(ch["delta_low"]) and _finite(ch["delta_high"]) else "")
            lines.append(f"SA − chance {ch['delta']:+.3f}{d_ci}")
    sentence = getattr(result, "verdict", None)
    if isinstance(sentence, str) and sentence.strip():
        # with the numbers above, only the verdict's caveats (its clauses after the first ';') add anything
        clauses = [c.strip() for c in sentence.split(";")]
        for clause in (clauses[1:] if ch is not None else [sentence.strip()]):
            lines += textwrap.wrap(clause, width=wrap)
    return "\n".join(lines)


def _legend_box(text: str, *, width: int, height: int, position: str, font_size: int) -> dict[str, Any]:
    """Pixel geometry of the legend box and its text (estimated from the line lengths)."""
    lines = text.split("\n")
    char_w, line_h, pad, margin = 0.62 * font_size, round(font_size * 1.25), 4, 2
    box_w = min(width - 2 * margin, max(len(line) for line in lines) * char_w + 2 * pad)
    box_h = min(height - 2 * margin, len(lines) * line_h + 2 * pad)
    left, top = position.endswith("left"), position.startswith("top")
    x0 = margin if left else width - margin - box_w
    y0 = margin if top else height - margin - box_h
    return {"x0": round(x0, 1), "x1": round(x0 + box_w, 1), "y0": round(y0, 1), "y1": round(y0 + box_h, 1),
            "tx": round(x0 + pad if left else x0 + box_w - pad, 1), "ty": round(y0 + pad, 1),
            "align": "left" if left else "right", "line_height": line_h}


def _legend_layers(text: str, *, width: int, height: int, position: str, theme: str, font_size: int = 12,
                   detail: str | None = None) -> list[Any]:
    """A semi-transparent box (rect) and the legend text on it, in a corner of the plot.

    ``detail`` (the full verdict sentence) is the box's tooltip.
    """
    alt = _alt()
    th = _theme(theme)
    g = _legend_box(text, width=width, height=height, position=position, font_size=font_size)
    row = {"legend": text, **({"verdict": detail} if detail else {})}
    data = alt.InlineData(values=[row])
    box = alt.Chart(data).mark_rect(
        fill=th["box"], fillOpacity=th["box_opacity"], stroke=th["box_stroke"], strokeWidth=0.6, cornerRadius=3,
    ).encode(x=alt.value(g["x0"]), x2=alt.value(g["x1"]), y=alt.value(g["y0"]), y2=alt.value(g["y1"]))
    if detail:
        box = box.encode(tooltip=[alt.Tooltip("verdict:N", title="verdict")])
    label = alt.Chart(data).mark_text(
        align=g["align"], baseline="top", lineBreak="\n", lineHeight=g["line_height"], fontSize=font_size,
        fontWeight="bold", color=th["text"],
    ).encode(text="legend:N", x=alt.value(g["tx"]), y=alt.value(g["ty"]))
    return [box, label]


# --------------------------------------------------------------------------- the alignment map


def row_label(row: Sequence[Sequence[str]]) -> str:
    """A concept row's label, as :func:`semanscope_nb.runs.evaluate.aligned_words` writes it."""
    return " / ".join(cell[0] for cell in row[:2])


def map_frame(projection: "Projection", *, result: SAResult | None = None, dataset: "WordDataset | None" = None) -> pd.DataFrame:
    """One row per map point: x, y (z), word, language, concept, group, translations, inter distances.

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


_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _lines_frame(projection: "Projection", dataset: "WordDataset", *, fields: tuple[str, str] = ("x", "y")) -> pd.DataFrame:
    """One vertex per (concept, language): the first alternative's point; lines join a concept's translations."""
    a, b = (_AXIS_INDEX[f] for f in fields)
    pos = {(lang, w): (u, v) for u, v, w, lang in zip(projection.coords[:, a], projection.coords[:, b],
                                                       projection.words or (), projection.languages or ())}
    recs = []
    for row in dataset.rows:
        label = row_label(row)
        for k, (lang, cell) in enumerate(zip(dataset.languages, row)):
            if (lang, cell[0]) in pos:
                u, v = pos[(lang, cell[0])]
                recs.append({"concept": label, "order": k, fields[0]: u, fields[1]: v})
    return pd.DataFrame(recs, columns=["concept", "order", *fields])


def _nav_features(navigate: bool | Collection[str] | None) -> frozenset[str]:
    if navigate is True:
        return frozenset(NAV_FEATURES)
    if navigate is None or navigate is False:
        return frozenset()
    chosen = frozenset([navigate] if isinstance(navigate, str) else navigate)
    unknown = sorted(chosen - set(NAV_FEATURES))
    if unknown:
        raise ValueError(f"navigate: unknown feature(s) {unknown}; choose from {NAV_FEATURES} (or True for all)")
    return chosen


def _check_position(position: str) -> None:
    if position not in LEGEND_POSITIONS:
        raise ValueError(f"legend_position must be one of {LEGEND_POSITIONS}, got {position!r}")


def _search_test(name: str, fields: Sequence[str]) -> str:
    """Vega expression: the search box holds text and one of ``fields`` contains it (case-insensitive substring).

    A substring test, not a regular expression: a half-typed pattern such as ``(`` cannot break the view.
    """
    hits = " || ".join(f"indexof(lower('' + (datum['{f}'] || '')), lower({name})) >= 0" for f in fields)
    return f"(length({name}) > 0 && ({hits}))"


class _MapParts:
    """What every view of one projection shares: the rows, tooltip, colour and shape encodings."""

    def __init__(self, projection: "Projection", result: SAResult | None, dataset: "WordDataset | None", *,
                 shape_by: str | None, language_domain: Sequence[str] | None) -> None:
        alt = _alt()
        df = map_frame(projection, result=result, dataset=dataset)
        keep = [c for c in ("x", "y", "z") if c in df] + ["word", "language", "concept", "group", "translations"] + (
            ["inter_cosine"] if "inter_cosine" in df else [])
        df = df[keep]
        self.axis_name = {"phate": "PHATE", "umap": "UMAP", "tsne": "t-SNE", "pca": "PC"}.get(projection.method, projection.method)
        tooltip = [alt.Tooltip("word:N"), alt.Tooltip("language:N"), alt.Tooltip("concept:N"), alt.Tooltip("translations:N")]
        if df["group"].notna().any():
            tooltip.append(alt.Tooltip("group:N", title="concept group"))
        if "inter_cosine" in df:
            tooltip.append(alt.Tooltip("inter_cosine:Q", title="concept inter distance (cosine)", format=".3f"))
        self.tooltip = tooltip
        given = [str(code) for code in (language_domain or ())]
        self.languages = list(dict.fromkeys(given + [str(code) for code in df["language"]]))
        self.colour = language_scale(self.languages)
        self.shape = None
        if shape_by not in ("group", "language", None):
            raise ValueError(f"shape_by must be 'group', 'language' or None, got {shape_by!r}")
        if shape_by == "group":
            groups = [g for g in df["group"].value_counts().index if g is not None]
            if len(groups) >= 2:  # one group: a shape legend would say nothing
                if len(groups) > len(SHAPES):  # too many for distinguishable shapes: the largest groups + "other"
                    top = set(groups[: len(SHAPES) - 1])
                    groups = groups[: len(SHAPES) - 1] + ["other"]
                else:
                    top = set(groups)
                df = df.assign(shape_group=[g if g in top or g is None else "other" for g in df["group"]])
                self.shape = ("shape_group", "concept group", groups, SHAPES[: len(groups)])
        elif shape_by == "language":
            self.shape = ("language", "language", self.languages, [_language_shape(c, self.languages) for c in self.languages])
        self.frame = df
        self.data = inline(df)

    def shape_encoding(self, legend: Any) -> Any:
        alt = _alt()
        field, title, domain, shapes = self.shape  # type: ignore[misc]
        return alt.Shape(f"{field}:N", title=title, scale=alt.Scale(domain=list(domain), range=list(shapes)), legend=legend)


def _concept_pick(frame: pd.DataFrame, selected: Sequence[str] | None) -> Any:
    """The click selection on ``concept``; ``selected`` concepts (those on this map) start selected."""
    alt = _alt()
    known = set(frame["concept"].dropna())
    value = [{"concept": c} for c in dict.fromkeys(selected or ()) if c in known]
    kwargs = {"value": value} if value else {}
    return alt.selection_point(fields=["concept"], on="click", clear="dblclick", empty=True, **kwargs)


def _map_view(
    parts: _MapParts,
    *,
    x: str = "x",
    y: str = "y",
    width: int,
    height: int,
    point_size: int,
    pick: Any,
    features: frozenset[str],
    search_name: str | None,
    search_fields: Sequence[str],
    brush: Any = None,
    lines: pd.DataFrame | None = None,
    labels: bool = False,
    legend_text: str | None = None,
    legend_detail: str | None = None,
    legend_position: str = "top-right",
    theme: str = "light",
    domains: Mapping[str, Sequence[float]] | None = None,
    legend_orient: str | None = None,
) -> "alt.LayerChart":
    """One 2-D view of a projection (fields ``x`` and ``y``): points, optional lines and labels, the SA legend box."""
    alt = _alt()
    th = _theme(theme)
    axis = alt.Axis(labels=False, ticks=False, grid=False)

    def scale(field: str) -> Any:
        if domains is not None and field in domains:
            return alt.Scale(domain=[float(v) for v in domains[field]], zero=False, nice=False)
        return alt.Scale(zero=False)

    X = alt.X(f"{x}:Q", title=f"{parts.axis_name} {_AXIS_INDEX[x] + 1}", axis=axis, scale=scale(x))
    Y = alt.Y(f"{y}:Q", title=f"{parts.axis_name} {_AXIS_INDEX[y] + 1}", axis=axis, scale=scale(y))
    legend = alt.Legend(orient=legend_orient) if legend_orient else alt.Undefined
    match = _search_test(search_name, search_fields) if search_name else None
    enc: dict[str, Any] = {
        "x": X, "y": Y,
        "color": alt.Color("language:N", title="language", scale=parts.colour, legend=legend),
        "tooltip": parts.tooltip,
        "opacity": alt.condition(pick, alt.value(0.9), alt.value(0.12)),
    }
    if match:  # a match stays opaque even while another concept is selected
        enc["opacity"] = {"condition": [{"test": match, "value": 0.95}, {"param": pick.name, "value": 0.9}], "value": 0.12}
    if parts.shape is not None:
        enc["shape"] = parts.shape_encoding(legend)
    if match:  # matched words: three times the area and an outline
        enc["size"] = alt.condition(match, alt.value(point_size * 3), alt.value(point_size))
        enc["stroke"] = alt.value(th["outline"])
        enc["strokeWidth"] = alt.condition(match, alt.value(1.5), alt.value(0))
    clip = "zoom" in features  # zoomed-in points stay inside the plot area
    points = alt.Chart(parts.data).mark_point(filled=True, size=point_size, clip=clip).encode(**enc).add_params(pick)
    if "zoom" in features:  # wheel zooms, a plain drag pans, double-click resets
        points = points.add_params(alt.selection_interval(bind="scales", translate=_PLAIN_DRAG))
    if brush is not None:
        points = points.add_params(brush)
    layers: list[Any] = []
    if lines is not None:
        layers.append(
            alt.Chart(inline(lines)).mark_line(strokeWidth=0.7, color=th["line"], clip=clip)
            .encode(x=X, y=Y, detail="concept:N", order="order:O",
                    opacity=alt.condition(pick, alt.value(0.35), alt.value(0.05)))
        )
    layers.append(points)
    if labels:
        layers.append(alt.Chart(parts.data).mark_text(dx=6, align="left", fontSize=9, clip=clip)
                      .encode(x=X, y=Y, text="word:N", color=alt.Color("language:N", scale=parts.colour, legend=None),
                              opacity=alt.condition(pick, alt.value(0.9), alt.value(0.1))))
    shown: list[Any] = []
    if "labels" in features:  # a clicked concept, labelled in every language
        shown.append({"param": pick.name, "empty": False})
    if match:
        shown.append(match)
    if shown:
        layers.append(
            alt.Chart(parts.data).transform_filter(shown[0] if len(shown) == 1 else {"or": shown})
            .mark_text(align="left", baseline="bottom", dx=6, dy=-4, fontSize=11, fontWeight="bold", color=th["text"], clip=clip)
            .encode(x=X, y=Y, text="word:N", tooltip=parts.tooltip)
        )
    if legend_text and legend_position != "outside":
        layers += _legend_layers(legend_text, width=width, height=height, position=legend_position, theme=theme,
                                 detail=legend_detail)
    return alt.layer(*layers).properties(width=width, height=height)


def _brush_list(parts: _MapParts, brush: Any, *, width: int, height: int, theme: str) -> "alt.Chart":
    """The words inside the brush, one line each: word (language) — translations."""
    alt = _alt()
    th = _theme(theme)
    rows = max(3, int(height // 15) - 1)
    line = "datum.word + ' (' + datum.language + ')' + (datum.translations ? ' — ' + datum.translations : '')"
    more = f"datum.rank == {rows} && datum.total > {rows} ? '… and ' + (datum.total - {rows} + 1) + ' more' : "
    return (
        alt.Chart(parts.data)
        .transform_filter(brush)
        .transform_joinaggregate(total="count()")
        .transform_window(rank="row_number()", sort=[{"field": "language"}, {"field": "word"}])
        .transform_filter(f"datum.rank <= {rows}")
        .transform_calculate(line=more + line)
        .mark_text(align="left", baseline="middle", fontSize=11, limit=width - 8, color=th["text"])
        .encode(x=alt.value(4), y=alt.Y("rank:Q", axis=None, scale=alt.Scale(domain=[0.5, rows + 0.5], reverse=True)),
                text="line:N", tooltip=[alt.Tooltip("word:N"), alt.Tooltip("language:N"), alt.Tooltip("translations:N")])
        .properties(width=width, height=height,
                    title=alt.TitleParams("brushed words (shift-drag on the map)", fontSize=11, anchor="start"))
    )


def _titled(chart: Any, title: str | None, legend_text: str | None, legend_position: str) -> Any:
    alt = _alt()
    if legend_text and legend_position == "outside":  # the legend under the title, outside the plot area
        return chart.properties(title=alt.TitleParams(text=title or "", subtitle=legend_text.split("\n"), anchor="start",
                                                      subtitleFontSize=11))
    return chart.properties(title=title) if title else chart


def _verdict_sentence(result: Any) -> str | None:
    sentence = getattr(result, "verdict", None) if result is not None else None
    return sentence if isinstance(sentence, str) and sentence.strip() else None


def _default_title(result: SAResult | None) -> str | None:
    if result is None:
        return None
    prov = result.provenance
    return " · ".join(str(prov[k]) for k in ("model", "dataset") if k in prov) or None


def alignment_map(
    projection: "Projection",
    result: SAResult | None = None,
    *,
    dataset: "WordDataset | None" = None,
    lines: bool = False,
    labels: bool = False,
    title: str | None = None,
    width: int | None = None,
    height: int = 420,
    point_size: int = 60,
    shape_by_group: bool = True,
    shape_by: Literal["group", "language"] | None = "group",
    navigate: bool | Collection[str] = False,
    selected_concepts: Sequence[str] | None = None,
    search: str = "",
    search_fields: Sequence[str] = ("word", "concept"),
    worst_concepts: int | None = None,
    legend_position: str = "top-right",
    theme: Literal["light", "dark"] = "light",
    language_domain: Sequence[str] | None = None,
    list_width: int = 220,
    verdict: bool = True,
) -> "alt.LayerChart | alt.HConcatChart":
    """The alignment map: points coloured by language (fixed colour per code), with the SA legend.

    Tooltip: word, language, concept, translations, the concept's inter distance.
    ``lines=True`` joins each concept's translations.  Clicking a point highlights
    its concept in every language (a point selection on ``concept``; double-click
    clears); ``selected_concepts`` starts with those concepts selected, so a
    redraw keeps the user's choice.  Shapes mark concept groups when there are
    two or more (``shape_by="language"`` or ``None`` instead; ``shape_by_group=False``
    also turns shapes off).  The SA legend (:func:`sa_legend_text`) sits on a
    semi-transparent box in a corner (``legend_position``, or ``"outside"``:
    under the title); ``theme="dark"`` gives a dark box with light text.
    The legend carries the chance level and the verdict's caveats when the
    result has them (``verdict=False``: the paper's three lines); hovering the
    box shows the whole verdict sentence.

    ``navigate=True`` (or a subset of :data:`NAV_FEATURES`) adds: ``zoom`` (wheel
    zoom, drag to pan, double-click resets), ``search`` (a search box; matches in
    ``search_fields`` are enlarged, outlined and labelled; ``search`` is the
    initial text), ``brush`` (shift-drag lists the words and translations inside
    the box beside the map) and ``labels`` (a clicked concept is labelled in
    every language).  ``worst_concepts=n`` puts the n worst-aligned concepts
    beside the map, linked to it: click a bar, see the concept on the map.
    With a side panel the chart is an ``hconcat`` and the map is 440 px wide
    unless ``width`` says otherwise (the whole stays under ~900 px).

    >>> import semanscope_nb as snb
    >>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    >>> vecs, _, _ = snb.embed_dataset(ds, "random-null", cache=False)
    >>> p = snb.project_dataset(ds, vecs, settings=snb.ProjectionSettings("pca"), cache=False)
    >>> spec = alignment_map(p, dataset=ds, navigate={"zoom"}).to_dict()
    >>> [prm.get("bind") for prm in spec["params"]]
    [None, 'scales']
    """
    alt = _alt()
    features = _nav_features(navigate)
    _check_position(legend_position)
    _theme(theme)
    parts = _MapParts(projection, result, dataset, shape_by=shape_by if shape_by_group else None, language_domain=language_domain)
    side = "brush" in features or bool(worst_concepts)
    if worst_concepts and result is None:
        raise ValueError("worst_concepts= needs the SA result (its per-concept inter distances)")
    width = width if width is not None else (440 if side else 520)
    pick = _concept_pick(parts.frame, selected_concepts)
    search_param = (alt.param(value=str(search), bind=alt.binding(input="search", placeholder="word or concept", name="search "))
                    if "search" in features else None)
    brush = (alt.selection_interval(encodings=["x", "y"], on=_SHIFT_DRAG, translate=_SHIFT_DRAG, zoom=False, empty=False,
                                    clear="dblclick")
             if "brush" in features else None)
    legend_text = sa_legend_text(result, verdict=verdict) if result is not None else None
    view = _map_view(
        parts, width=width, height=height, point_size=point_size, pick=pick, features=features,
        search_name=search_param.name if search_param is not None else None, search_fields=search_fields, brush=brush,
        lines=_lines_frame(projection, dataset) if lines and dataset is not None else None, labels=labels,
        legend_text=legend_text, legend_detail=_verdict_sentence(result) if verdict else None, legend_position=legend_position, theme=theme, legend_orient="bottom" if side else None,
    )
    view = _titled(view, title if title is not None else _default_title(result), legend_text, legend_position)
    if not side:
        return view.add_params(search_param) if search_param is not None else view
    panels = []
    if brush is not None:
        panels.append(_brush_list(parts, brush, width=list_width, height=height if not worst_concepts else height // 2,
                                  theme=theme))
    if worst_concepts:
        panels.append(worst_concepts_chart(result, n=int(worst_concepts), selection=pick,  # type: ignore[arg-type]
                                           width=list_width - 80,
                                           title=alt.TitleParams("worst-aligned concepts (click one)", fontSize=11,
                                                                 anchor="start")))
    panel = panels[0] if len(panels) == 1 else alt.vconcat(*panels)
    chart = alt.hconcat(view, panel)
    return chart.add_params(search_param) if search_param is not None else chart


def map_3d(
    projection: "Projection",
    result: SAResult | None = None,
    *,
    dataset: "WordDataset | None" = None,
    title: str | None = None,
    width: int = 340,
    height: int = 320,
    point_size: int = 50,
    shape_by: Literal["group", "language"] | None = "group",
    navigate: bool | Collection[str] = True,
    selected_concepts: Sequence[str] | None = None,
    search: str = "",
    search_fields: Sequence[str] = ("word", "concept"),
    lines: bool = False,
    legend_position: str = "top-right",
    theme: Literal["light", "dark"] = "light",
    verdict: bool = True,
) -> "alt.HConcatChart":
    """A 3-D projection as two linked 2-D views side by side: components 1-2 and 1-3.

    Vega-Lite (what JupyterLab renders offline) has no 3-D marks, and a rotating
    3-D scatter would need another renderer (and its JavaScript) in the
    notebook.  Two views sharing the x axis show all three components instead,
    linked: a click on a concept highlights and labels it in both views, the one
    search box marks matches in both, and each view zooms on its own.  The SA
    legend sits on the first view.  ``navigate``'s ``brush`` is not used here.

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project(np.random.default_rng(0).normal(size=(12, 5)), method="pca", dims=3, cache=False,
    ...                 words=[f"w{i}" for i in range(12)], languages=["en", "de"] * 6)
    >>> [v["layer"][0]["encoding"]["y"]["field"] for v in map_3d(p).to_dict()["hconcat"]]
    ['y', 'z']
    """
    alt = _alt()
    if projection.coords.shape[1] < 3:
        raise ValueError("map_3d needs a 3-D projection: ProjectionSettings(n_components=3) or project(..., dims=3)")
    features = _nav_features(navigate) - {"brush"}
    _check_position(legend_position)
    parts = _MapParts(projection, result, dataset, shape_by=shape_by, language_domain=None)
    pick = _concept_pick(parts.frame, selected_concepts)
    search_param = (alt.param(value=str(search), bind=alt.binding(input="search", placeholder="word or concept", name="search "))
                    if "search" in features else None)
    legend_text = sa_legend_text(result, verdict=verdict) if result is not None else None
    views = []
    for k, yfield in enumerate(("y", "z")):
        views.append(_map_view(
            parts, x="x", y=yfield, width=width, height=height, point_size=point_size, pick=pick, features=features,
            search_name=search_param.name if search_param is not None else None, search_fields=search_fields,
            lines=_lines_frame(projection, dataset, fields=("x", yfield)) if lines and dataset is not None else None,
            legend_text=legend_text if k == 0 else None, legend_detail=_verdict_sentence(result) if verdict else None,
            legend_position=legend_position, theme=theme, legend_orient="bottom",
        ))
    views[0] = _titled(views[0], f"{parts.axis_name} 1 × 2", legend_text, legend_position)
    views[1] = views[1].properties(title=f"{parts.axis_name} 1 × 3")
    chart = alt.hconcat(*views).resolve_scale(color="shared", shape="shared")
    if search_param is not None:
        chart = chart.add_params(search_param)
    heading = title if title is not None else _default_title(result)
    return chart.properties(title=heading) if heading else chart


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


def _null_aware_tier(paper: str, lo: float, hi: float) -> str:
    """The verdict tier from the paper tier and the interval of SA - chance (mirrors metrics.chance)."""
    if not (_finite(lo) and _finite(hi)):
        return paper
    if lo <= 0.0 <= hi:
        return "chance"
    return "below chance" if hi < 0.0 else paper


def model_means(table: pd.DataFrame, *, thresholds: TierThresholds = DEFAULT_TIERS, distance: str = "cosine",
                confidence_z: float = 1.959964) -> pd.DataFrame:
    """Average SA per model across datasets, with its interval, chance level, tier and band, best first (Figure 1's data).

    Columns: model, name, avg_sa, n_datasets, ci_low, ci_high, paper_tier, tier,
    and when the table has them sa_null, delta, delta_low, delta_high, band.
    One dataset: its own interval (``ci_low``/``ci_high``) and its gap to chance.
    Several: the mean, with ``sem`` (or the gap's half-widths) pooled as if the
    datasets were independent (``sqrt(sum of squares) / n``).  ``tier`` is the
    null-aware tier ("chance" when the gap's interval holds 0) when the table
    has the gap's interval, else the paper's tier.  ``band`` is kept only when
    it is the same on every dataset of the model.
    """
    col = f"sa_{distance}"
    _require(table, ["model", col], "model_means")
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
        rec["tier"] = (_null_aware_tier(rec["paper_tier"], rec["delta_low"], rec["delta_high"])
                       if "delta_low" in rec else rec["paper_tier"])
        out.append(rec)
    df = pd.DataFrame(out)
    return df.sort_values("avg_sa", ascending=False, kind="stable").reset_index(drop=True)


def _tier_colour_scale(tiers: Iterable[str]) -> "alt.Scale":
    alt = _alt()
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
    alt = _alt()
    means = model_means(table, thresholds=thresholds)
    order = list(means["name"])
    has_ci = means["ci_low"].notna().any()
    has_null = "sa_null" in means and means["sa_null"].notna().any()
    has_band = "band" in means and means["band"].notna().any()
    means["label_x"] = [max([v for v in (a, h) if _finite(v)], default=0.0) for a, h in zip(means["avg_sa"], means["ci_high"])]
    step = 36 if has_null else 26
    bar = 14 if has_null else 20
    x_title = "average SA (cosine)"
    X = alt.X("avg_sa:Q", title=x_title, scale=alt.Scale(domain=[0, 1]))
    Y = alt.Y("name:N", sort=order, title=None)
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
        banded = means.dropna(subset=["band"])
        layers.append(alt.Chart(inline(banded.assign(band_label=[f"band {int(b)}" for b in banded["band"]])))
                      .mark_text(align="left", fontSize=10, color="#444444")
                      .encode(y=Y, x=alt.value(width + 14), text="band_label:N"))
        spans = []
        for b, g in banded.groupby("band", sort=False):
            if len(g) > 1:
                spans.append({"band": int(b), "first": g["name"].iloc[0], "last": g["name"].iloc[-1]})
        if spans:
            layers.append(alt.Chart(inline(pd.DataFrame(spans))).mark_rule(color="#444444", strokeWidth=1.5)
                          .encode(y=alt.Y("first:N", sort=order, title=None), y2="last:N", x=alt.value(width + 8)))
    chart = alt.layer(*layers).properties(width=width, height=max(60, step * len(order)))
    return chart.properties(title=title or "Three-tier structure: average SA (cosine) across datasets")


def sa_heatmap(table: pd.DataFrame, *, distance: str = "cosine", title: str | None = None,
               scheme: str = "redyellowgreen") -> "alt.LayerChart":
    """Figure 2: model x dataset heatmap of SA (the paper's red low -> yellow -> green high), values written in.

    ``scheme="viridis"`` (or any Vega scheme) for a colour-blind-safe version.
    """
    alt = _alt()
    col = f"sa_{distance}"
    _require(table, ["model", "dataset", col], "sa_heatmap")
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


PAIR_COLUMNS = ("language_a", "language_b", "sa", "ci_low", "ci_high", "sa_null", "delta", "delta_low", "delta_high", "verdict")
_CHANCE_VERDICTS = ("chance", "below chance")


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
    dashed outline and "≈ chance", "below chance" a solid outline and "< chance".
    Tooltips give both intervals.  Axis labels are angled and cut at ``label_limit`` px.

    >>> df = pd.DataFrame({"language_a": ["en"], "language_b": ["de"], "sa": [0.7], "ci_low": [0.68], "ci_high": [0.72],
    ...                    "sa_null": [0.5], "delta": [0.2], "delta_low": [0.18], "delta_high": [0.22], "verdict": ["great"]})
    >>> [layer["mark"]["type"] for layer in pair_heatmap(df).to_dict()["layer"]]
    ['rect', 'rect', 'text', 'text']
    """
    alt = _alt()
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
            df[c] = None if c == "verdict" else np.nan
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
    both["mark"] = ["≈ chance" if v == "chance" else "< chance" if v == "below chance" else "" for v in both["verdict"]]
    fmt = ".3f" if value == "sa" else "+.3f"
    both["cell_text"] = [format(float(v), fmt) if _finite(v) else "n/a" for v in both[value]]
    n = len(languages)
    size = cell if cell is not None else int(max(34, min(64, 640 // max(n, 1))))
    if value == "sa":
        # the domain runs from the lowest chance level (or SA) to the highest SA, in steps of 0.05, so small
        # differences are not blown up to the whole colour range
        vals = pd.concat([both["sa"], both["sa_null"]]).astype(float)
        vals = vals[np.isfinite(vals)]
        lo = math.floor(float(vals.min()) * 20) / 20 if len(vals) else 0.45
        hi = math.ceil(float(both["sa"].astype(float).max()) * 20) / 20 if both["sa"].notna().any() else 0.8
        hi = hi if hi > lo else lo + 0.05
        colour = alt.Color("sa:Q", title="SA (cosine)", scale=alt.Scale(scheme="viridis", domain=[lo, hi]))
        dark = f"datum.sa < {(lo + hi) / 2:.4f}"  # viridis is dark at the low end
    else:
        m = float(np.nanmax(np.abs(both[["delta", "delta_low", "delta_high"]].astype(float).to_numpy()))) if both["delta"].notna().any() else 0.0
        m = max(m, 0.01)
        colour = alt.Color("delta:Q", title="SA − chance", scale=alt.Scale(scheme="blueorange", domain=[-m, m], domainMid=0,
                                                                           reverse=True))
        dark = f"abs(datum.delta) > {0.6 * m:.4f}"
    ax = {"title": None, "sort": languages}
    base = alt.Chart(inline(both)).encode(
        x=alt.X("language_b:N", axis=alt.Axis(orient="top", labelAngle=-40, labelLimit=label_limit), **ax),
        y=alt.Y("language_a:N", axis=alt.Axis(labelLimit=label_limit), **ax),
    )
    tooltip = [alt.Tooltip("language_a:N", title="language"), alt.Tooltip("language_b:N", title="with"),
               alt.Tooltip("sa:Q", title="SA", format=".3f"), alt.Tooltip("ci_low:Q", title="SA low", format=".3f"),
               alt.Tooltip("ci_high:Q", title="SA high", format=".3f"), alt.Tooltip("sa_null:Q", title="chance", format=".3f"),
               alt.Tooltip("delta:Q", title="SA − chance", format="+.3f"),
               alt.Tooltip("delta_low:Q", title="SA − chance, low", format="+.3f"),
               alt.Tooltip("delta_high:Q", title="SA − chance, high", format="+.3f"), alt.Tooltip("verdict:N")]
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
    return alt.layer(rect, outline, values, marks).properties(
        width=size * n, height=size * n, title=alt.TitleParams(heading, subtitle=subtitle, anchor="start"))


def worst_concepts_chart(
    result: SAResult, *, n: int = 15, title: Any = None, selection: Any = None, width: int = 420,
) -> "alt.Chart":
    """The ``n`` worst-aligned concepts (largest inter distance between translations), worst on top.

    ``selection``: a point selection on ``concept`` (an alignment map's) to link
    the bars to a map: clicking a bar selects that concept everywhere.
    """
    alt = _alt()
    df = result.concepts_frame().head(n)
    order = list(df["concept"])
    chart = alt.Chart(inline(df)).mark_bar(color=TIER_COLOURS["non-aligned"]).encode(
        y=alt.Y("concept:N", sort=order, title=None, axis=alt.Axis(labelLimit=160)),
        x=alt.X("inter_cosine:Q", title="inter distance between translations (cosine)"),
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
