"""Alignment maps: a projection's points coloured by language, with the SA legend, in 2-D, "3-D" and grids.

:func:`alignment_map` draws one projection (the paper's Figure 3 panels),
:func:`map_3d` a 3-D projection as two linked 2-D views, :func:`map_grid` a grid
of maps; :func:`map_frame` is the table behind a map.  The pieces a map is made
of (:class:`MapParts`, :func:`map_view`, :func:`concept_pick`,
:func:`concept_lines_frame`, :func:`nav_features`) are public so that
:mod:`semanscope_nb.plots.compare` builds its side-by-side maps from the same parts.

Navigable maps (``navigate=True``): the mouse wheel zooms and a drag pans (an
interval selection bound to the scales); a search box enlarges, outlines and
labels the matching words; shift-drag brushes points and lists their words and
translations beside the map; a click labels a concept in every language
(``selected_concepts=`` restores a selection when the chart is redrawn).
Everything runs in the Vega view, so it works offline and in exported HTML.
Colours are fixed per language code (:mod:`semanscope_nb.plots.palette`); the
rows are embedded inline (:func:`semanscope_nb.plots.chart_kit.inline`), so large
maps pass Altair's row guard.

Layer: plots.  Imports the chart kit, the legend and :mod:`semanscope_nb.plots.sa_figures` (the worst-concepts panel).

Example
-------
>>> import semanscope_nb as snb
>>> emb = snb.embed(snb.data.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(20)), "random-null",
...                 cache=False)
>>> r = snb.run_task("sa", emb, n_boot=50)
>>> p = snb.plots.project_dataset(emb.dataset, emb.vectors, settings=snb.plots.ProjectionSettings("pca"), cache=False)
>>> spec = alignment_map(p, r, dataset=emb.dataset, navigate=True).to_dict()
>>> sorted(k for k in spec if k.endswith("concat"))
['hconcat']
>>> map_frame(p, result=r, dataset=emb.dataset).columns[-4:].tolist()
['group', 'translations', 'inter_cosine', 'inter_euclidean']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.plots.chart_kit import import_altair, inline, language_scale
from semanscope_nb.plots.legend import (
    check_legend_position,
    legend_layers,
    sa_legend_text,
    theme_colours,
    title_with_legend,
    verdict_sentence,
)
from semanscope_nb.plots.sa_figures import worst_concepts_chart

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.plots.projection import Projection


#: point shapes, in the order concept groups (or languages) take them
SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-left", "triangle-right"]
#: what ``navigate=True`` switches on; pass a subset (e.g. ``navigate={"zoom", "search"}``) for fewer
NAV_FEATURES = ("zoom", "search", "brush", "labels")
#: shift-drag draws the brush; a plain drag pans (so the two never fight over one gesture)
_SHIFT_DRAG = "[mousedown[event.shiftKey], window:mouseup] > window:mousemove!"
_PLAIN_DRAG = "[mousedown[!event.shiftKey], window:mouseup] > window:mousemove!"


def _language_shape(code: str, domain: Sequence[str]) -> str:
    return SHAPES[list(domain).index(code) % len(SHAPES)]


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


def concept_lines_frame(projection: "Projection", dataset: "WordDataset", *, fields: tuple[str, str] = ("x", "y")) -> pd.DataFrame:
    """One vertex per (concept, language): the first alternative's point; lines join a concept's translations.

    >>> import numpy as np, semanscope_nb as snb
    >>> ds = snb.data.load_dataset("edge-cases", languages=["en", "de"]).subset(range(3))
    >>> words, langs = [c[0] for c in ds.column("en")] + [c[0] for c in ds.column("de")], ["en"] * 3 + ["de"] * 3
    >>> p = snb.project(np.random.default_rng(0).normal(size=(6, 5)), method="pca", cache=False, words=words, languages=langs)
    >>> concept_lines_frame(p, ds).shape
    (6, 4)
    """
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


def nav_features(navigate: bool | Collection[str] | None) -> frozenset[str]:
    """The navigation features a ``navigate=`` argument switches on (True: all of :data:`NAV_FEATURES`).

    >>> sorted(nav_features({"zoom", "search"})), nav_features(False)
    (['search', 'zoom'], frozenset())
    """
    if navigate is True:
        return frozenset(NAV_FEATURES)
    if navigate is None or navigate is False:
        return frozenset()
    chosen = frozenset([navigate] if isinstance(navigate, str) else navigate)
    unknown = sorted(chosen - set(NAV_FEATURES))
    if unknown:
        raise ValueError(f"navigate: unknown feature(s) {unknown}; choose from {NAV_FEATURES} (or True for all)")
    return chosen


def _search_test(name: str, fields: Sequence[str]) -> str:
    """Vega expression: the search box holds text and one of ``fields`` contains it (case-insensitive substring).

    A substring test, not a regular expression: a half-typed pattern such as ``(`` cannot break the view.
    """
    hits = " || ".join(f"indexof(lower('' + (datum['{f}'] || '')), lower({name})) >= 0" for f in fields)
    return f"(length({name}) > 0 && ({hits}))"


class MapParts:
    """What every view of one projection shares: the rows, tooltip, colour and shape encodings.

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project(np.random.default_rng(0).normal(size=(4, 5)), method="pca", cache=False,
    ...                 words=["water", "fire", "水", "火"], languages=["en", "en", "zh", "zh"])
    >>> parts = MapParts(p, None, None, shape_by="group", language_domain=None)
    >>> parts.axis_name, parts.languages, parts.shape
    ('PC', ['en', 'zh'], None)
    """

    def __init__(self, projection: "Projection", result: SAResult | None, dataset: "WordDataset | None", *,
                 shape_by: str | None, language_domain: Sequence[str] | None) -> None:
        alt = import_altair()
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
        alt = import_altair()
        field, title, domain, shapes = self.shape  # type: ignore[misc]
        return alt.Shape(f"{field}:N", title=title, scale=alt.Scale(domain=list(domain), range=list(shapes)), legend=legend)


def concept_pick(frame: pd.DataFrame, selected: Sequence[str] | None) -> Any:
    """The click selection on ``concept``; ``selected`` concepts (those on this map) start selected.

    >>> concept_pick(pd.DataFrame({"concept": ["water / 水"]}), ["water / 水", "fire / 火"]).param.value
    [{'concept': 'water / 水'}]
    """
    alt = import_altair()
    known = set(frame["concept"].dropna())
    value = [{"concept": c} for c in dict.fromkeys(selected or ()) if c in known]
    kwargs = {"value": value} if value else {}
    return alt.selection_point(fields=["concept"], on="click", clear="dblclick", empty=True, **kwargs)


def map_view(
    parts: MapParts,
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
    """One 2-D view of a projection (fields ``x`` and ``y``): points, optional lines and labels, the SA legend box.

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project(np.random.default_rng(0).normal(size=(4, 5)), method="pca", cache=False,
    ...                 words=["water", "fire", "水", "火"], languages=["en", "en", "zh", "zh"])
    >>> parts = MapParts(p, None, None, shape_by=None, language_domain=None)
    >>> view = map_view(parts, width=200, height=150, point_size=40, pick=concept_pick(parts.frame, None),
    ...                 features=frozenset(), search_name=None, search_fields=("word",), legend_text="SA cosine 0.5")
    >>> [layer["mark"]["type"] for layer in view.to_dict()["layer"]]
    ['point', 'rect', 'text']
    """
    alt = import_altair()
    th = theme_colours(theme)
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
        layers += legend_layers(legend_text, width=width, height=height, position=legend_position, theme=theme,
                                 detail=legend_detail)
    return alt.layer(*layers).properties(width=width, height=height)


def _brush_list(parts: MapParts, brush: Any, *, width: int, height: int, theme: str) -> "alt.Chart":
    """The words inside the brush, one line each: word (language) — translations."""
    alt = import_altair()
    th = theme_colours(theme)
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
    >>> emb = snb.embed(ds, "random-null", cache=False)
    >>> p = snb.plots.project_dataset(ds, emb.vectors, settings=snb.plots.ProjectionSettings("pca"), cache=False)
    >>> spec = alignment_map(p, dataset=ds, navigate={"zoom"}).to_dict()
    >>> [prm.get("bind") for prm in spec["params"]]
    [None, 'scales']
    """
    alt = import_altair()
    features = nav_features(navigate)
    check_legend_position(legend_position)
    theme_colours(theme)
    parts = MapParts(projection, result, dataset, shape_by=shape_by if shape_by_group else None, language_domain=language_domain)
    side = "brush" in features or bool(worst_concepts)
    if worst_concepts and result is None:
        raise ValueError("worst_concepts= needs the SA result (its per-concept inter distances)")
    width = width if width is not None else (440 if side else 520)
    pick = concept_pick(parts.frame, selected_concepts)
    search_param = (alt.param(value=str(search), bind=alt.binding(input="search", placeholder="word or concept", name="search "))
                    if "search" in features else None)
    brush = (alt.selection_interval(encodings=["x", "y"], on=_SHIFT_DRAG, translate=_SHIFT_DRAG, zoom=False, empty=False,
                                    clear="dblclick")
             if "brush" in features else None)
    legend_text = sa_legend_text(result, verdict=verdict) if result is not None else None
    view = map_view(
        parts, width=width, height=height, point_size=point_size, pick=pick, features=features,
        search_name=search_param.name if search_param is not None else None, search_fields=search_fields, brush=brush,
        lines=concept_lines_frame(projection, dataset) if lines and dataset is not None else None, labels=labels,
        legend_text=legend_text, legend_detail=verdict_sentence(result) if verdict else None, legend_position=legend_position, theme=theme, legend_orient="bottom" if side else None,
    )
    view = title_with_legend(view, title if title is not None else _default_title(result), legend_text=legend_text,
                             legend_position=legend_position)
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
    alt = import_altair()
    if projection.coords.shape[1] < 3:
        raise ValueError("map_3d needs a 3-D projection: ProjectionSettings(n_components=3) or project(..., dims=3)")
    features = nav_features(navigate) - {"brush"}
    check_legend_position(legend_position)
    parts = MapParts(projection, result, dataset, shape_by=shape_by, language_domain=None)
    pick = concept_pick(parts.frame, selected_concepts)
    search_param = (alt.param(value=str(search), bind=alt.binding(input="search", placeholder="word or concept", name="search "))
                    if "search" in features else None)
    legend_text = sa_legend_text(result, verdict=verdict) if result is not None else None
    views = []
    for k, yfield in enumerate(("y", "z")):
        views.append(map_view(
            parts, x="x", y=yfield, width=width, height=height, point_size=point_size, pick=pick, features=features,
            search_name=search_param.name if search_param is not None else None, search_fields=search_fields,
            lines=concept_lines_frame(projection, dataset, fields=("x", yfield)) if lines and dataset is not None else None,
            legend_text=legend_text if k == 0 else None, legend_detail=verdict_sentence(result) if verdict else None,
            legend_position=legend_position, theme=theme, legend_orient="bottom",
        ))
    views[0] = title_with_legend(views[0], f"{parts.axis_name} 1 × 2", legend_text=legend_text,
                                 legend_position=legend_position)
    views[1] = views[1].properties(title=f"{parts.axis_name} 1 × 3")
    chart = alt.hconcat(*views).resolve_scale(color="shared", shape="shared")
    if search_param is not None:
        chart = chart.add_params(search_param)
    heading = title if title is not None else _default_title(result)
    return chart.properties(title=heading) if heading else chart


def map_grid(maps: Sequence["alt.TopLevelMixin"], *, columns: int = 2, title: str | None = None) -> "alt.VConcatChart":
    """A grid of maps (the paper's Figure 3 is 2x2): rows of ``columns`` charts, independent colour scales."""
    alt = import_altair()
    if not maps:
        raise ValueError("map_grid needs at least one chart")
    rows = [alt.hconcat(*maps[i : i + columns]) for i in range(0, len(maps), columns)]
    grid = alt.vconcat(*rows).resolve_scale(color="independent", shape="independent")
    return grid.properties(title=title) if title else grid
