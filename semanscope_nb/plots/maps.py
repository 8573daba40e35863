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

import hashlib
import json
import math
import os
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.memo import Memo
from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.provenance import atomic_write_text
from semanscope_nb.plots.chart_kit import fast_spec, import_altair, inline, json_rows, language_scale
from semanscope_nb.plots.legend import (
    check_legend_position,
    emptiest_corner,
    legend_header,
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
#: the dataset names of a map built by name (:func:`alignment_map_spec`): a panel updates one of them in place
DATA_NAMES = {"points": "snb_points", "lines": "snb_lines", "legend": "snb_legend", "worst": "snb_worst"}
#: the parameter names of a map built by name (their signals carry clicks and brushes back to a panel)
PARAM_NAMES = {"pick": "snb_pick", "brush": "snb_brush", "search": "snb_search", "zoom": "snb_zoom"}
#: the legend positions drawn on a box inside the plot
CORNER_POSITIONS = ("top-left", "top-right", "bottom-left", "bottom-right")
#: at most this many search matches are labelled on the map (the side list shows them all)
SEARCH_LABELS = 12
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


@dataclass(frozen=True)
class MapTable:
    """The data of a map, without any chart: its rows, languages, shape groups and axis name (no Altair needed)."""

    frame: pd.DataFrame
    axis_name: str
    languages: list[str]
    #: (field, title, domain, shapes) of the shape encoding, or None
    shape: tuple[str, str, list[str], list[str]] | None


def map_table(projection: "Projection", result: SAResult | None, dataset: "WordDataset | None", *,
              shape_by: str | None, language_domain: Sequence[str] | None) -> MapTable:
    """The rows every view of a map draws (see :func:`map_frame`), its colour domain and its shapes.

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project(np.random.default_rng(0).normal(size=(4, 5)), method="pca", cache=False,
    ...                 words=["water", "fire", "水", "火"], languages=["en", "en", "zh", "zh"])
    >>> t = map_table(p, None, None, shape_by="group", language_domain=None)
    >>> t.axis_name, t.languages, t.shape, len(t.frame)
    ('PC', ['en', 'zh'], None, 4)
    """
    df = map_frame(projection, result=result, dataset=dataset)
    keep = [c for c in ("x", "y", "z") if c in df] + ["word", "language", "concept", "group", "translations"] + (
        ["inter_cosine"] if "inter_cosine" in df else [])
    df = df[keep]
    axis_name = {"phate": "PHATE", "umap": "UMAP", "tsne": "t-SNE", "pca": "PC"}.get(projection.method, projection.method)
    given = [str(code) for code in (language_domain or ())]
    languages = list(dict.fromkeys(given + [str(code) for code in df["language"]]))
    shape = None
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
            shape = ("shape_group", "concept group", [str(g) for g in groups], SHAPES[: len(groups)])
    elif shape_by == "language":
        shape = ("language", "language", languages, [_language_shape(c, languages) for c in languages])
    return MapTable(df, axis_name, languages, shape)


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
                 shape_by: str | None, language_domain: Sequence[str] | None, named: bool = False,
                 table: MapTable | None = None) -> None:
        alt = import_altair()
        #: with ``named=True`` every view reads its rows by name (:data:`DATA_NAMES`) and the rows wait in
        #: :attr:`datasets` (``{name: rows}``) for the caller to put under the spec's top-level ``datasets``
        self.named = bool(named)
        self.datasets: dict[str, Any] = {}
        t = table or map_table(projection, result, dataset, shape_by=shape_by, language_domain=language_domain)
        df = t.frame
        self.axis_name, self.languages, self.shape = t.axis_name, t.languages, t.shape
        tooltip = [alt.Tooltip("word:N"), alt.Tooltip("language:N"), alt.Tooltip("concept:N"), alt.Tooltip("translations:N")]
        if df["group"].notna().any():
            tooltip.append(alt.Tooltip("group:N", title="concept group"))
        if "inter_cosine" in df:
            tooltip.append(alt.Tooltip("inter_cosine:Q", title="concept inter distance (cosine)", format=".3f"))
        self.tooltip = tooltip
        self.colour = language_scale(self.languages)
        self.frame = df
        self.data = self.data_for("points", df)

    def data_for(self, role: str, frame: pd.DataFrame) -> Any:
        """The Altair data of ``frame`` for one ``role`` ("points", "lines", "legend", "worst"): inline, or by name."""
        if not self.named:
            return inline(frame)
        alt = import_altair()
        name = DATA_NAMES[role]
        self.datasets[name] = json_rows(frame)
        return alt.NamedData(name=name)

    def shape_encoding(self, legend: Any) -> Any:
        alt = import_altair()
        field, title, domain, shapes = self.shape  # type: ignore[misc]
        return alt.Shape(f"{field}:N", title=title, scale=alt.Scale(domain=list(domain), range=list(shapes)), legend=legend)


def concept_pick(frame: pd.DataFrame, selected: Sequence[str] | None, *, name: str | None = None) -> Any:
    """The click selection on ``concept``; ``selected`` concepts (those on this map) start selected.

    ``name``: the parameter's name (default: Altair's numbered one); a panel names it to read clicks back.

    >>> concept_pick(pd.DataFrame({"concept": ["water / 水"]}), ["water / 水", "fire / 火"]).param.value
    [{'concept': 'water / 水'}]
    """
    alt = import_altair()
    known = set(frame["concept"].dropna())
    value = [{"concept": c} for c in dict.fromkeys(selected or ()) if c in known]
    kwargs: dict[str, Any] = {"value": value} if value else {}
    if name:
        kwargs["name"] = name
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
    zoom_name: str | None = None,
    static_labels: Sequence[str] | None = None,
    static_search: str = "",
) -> "alt.LayerChart":
    """One 2-D view of a projection (fields ``x`` and ``y``): points, optional lines and labels, the SA legend box.

    The legend box is drawn only for a corner ``legend_position``.  Search matches
    are labelled up to :data:`SEARCH_LABELS` of them (the side list holds them all).
    ``static_labels`` (concepts) and ``static_search`` (text) label words without
    any interaction: what an exported figure carries of the user's selection and search.

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
    X, Y = _map_axes(alt, parts, x, y, domains)
    match = _search_test(search_name, search_fields) if search_name else None
    enc = _point_encoding(alt, parts, X, Y, pick=pick, match=match, point_size=point_size, outline=th["outline"],
                          legend=alt.Legend(orient=legend_orient) if legend_orient else alt.Undefined)
    clip = "zoom" in features  # zoomed-in points stay inside the plot area
    points = alt.Chart(parts.data).mark_point(filled=True, size=point_size, clip=clip).encode(**enc).add_params(pick)
    if "zoom" in features:  # wheel zooms, a plain drag pans, double-click resets
        zoom = alt.selection_interval(bind="scales", translate=_PLAIN_DRAG, **({"name": zoom_name} if zoom_name else {}))
        points = points.add_params(zoom)
    if brush is not None:
        points = points.add_params(brush)
    layers: list[Any] = []
    if lines is not None:
        layers.append(
            alt.Chart(parts.data_for("lines", lines)).mark_line(strokeWidth=0.7, color=th["line"], clip=clip)
            .encode(x=X, y=Y, detail="concept:N", order="order:O",
                    opacity=alt.condition(pick, alt.value(0.35), alt.value(0.05)))
        )
    layers.append(points)
    if labels:
        layers.append(alt.Chart(parts.data).mark_text(dx=6, align="left", fontSize=9, clip=clip)
                      .encode(x=X, y=Y, text="word:N", color=alt.Color("language:N", scale=parts.colour, legend=None),
                              opacity=alt.condition(pick, alt.value(0.9), alt.value(0.1))))
    layers += _word_label_layers(alt, parts, X, Y, pick=pick, features=features, match=match, clip=clip,
                                 static_labels=static_labels, static_search=static_search, search_fields=search_fields,
                                 text_colour=th["text"], own_offsets=(x, y) == ("x", "y"))
    if legend_text and legend_position in CORNER_POSITIONS:
        detail_row = {"legend": legend_text, **({"verdict": legend_detail} if legend_detail else {})}
        layers += legend_layers(legend_text, width=width, height=height, position=legend_position, theme=theme,
                                detail=legend_detail,
                                data=parts.data_for("legend", pd.DataFrame([detail_row])) if parts.named else None)
    return alt.layer(*layers).properties(width=width, height=height)


def _map_axes(alt: Any, parts: MapParts, x: str, y: str, domains: Mapping[str, Sequence[float]] | None) -> tuple[Any, Any]:
    """The x and y channels: no ticks or labels (projection axes have no units), fixed domains when given."""
    axis = alt.Axis(labels=False, ticks=False, grid=False)

    def scale(field: str) -> Any:
        if domains is not None and field in domains:
            return alt.Scale(domain=[float(v) for v in domains[field]], zero=False, nice=False)
        return alt.Scale(zero=False)

    return (alt.X(f"{x}:Q", title=f"{parts.axis_name} {_AXIS_INDEX[x] + 1}", axis=axis, scale=scale(x)),
            alt.Y(f"{y}:Q", title=f"{parts.axis_name} {_AXIS_INDEX[y] + 1}", axis=axis, scale=scale(y)))


def _point_encoding(alt: Any, parts: MapParts, X: Any, Y: Any, *, pick: Any, match: str | None, point_size: int,
                    outline: str, legend: Any) -> dict[str, Any]:
    """The points' channels: language colour, shape by group, faded unless picked, search matches enlarged."""
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
        enc["stroke"] = alt.value(outline)
        enc["strokeWidth"] = alt.condition(match, alt.value(1.5), alt.value(0))
    return enc


def _word_label_layers(alt: Any, parts: MapParts, X: Any, Y: Any, *, pick: Any, features: frozenset[str], match: str | None,
                       clip: bool, static_labels: Sequence[str] | None, static_search: str, search_fields: Sequence[str],
                       text_colour: str, own_offsets: bool) -> list[Any]:
    """Labels of the clicked (or, in a figure, the selected) concept in every language, and of the first search matches."""
    layers: list[Any] = []
    label_mark = {"align": "left", "baseline": "bottom", "dx": LABEL_DX, "dy": LABEL_DY, "fontSize": LABEL_FONT_SIZE,
                  "fontWeight": "bold", "color": text_colour, "clip": clip}
    if "label_dx" in parts.frame and own_offsets:  # each label at its own offset: a concept's labels apart
        label_mark.update(dx=alt.ExprRef(expr="datum.label_dx"), dy=alt.ExprRef(expr="datum.label_dy"))
    if "labels" in features:  # a clicked concept, labelled in every language
        layers.append(alt.Chart(parts.data).transform_filter({"param": pick.name, "empty": False})
                      .mark_text(**label_mark).encode(x=X, y=Y, text="word:N", tooltip=parts.tooltip))
    elif static_labels:  # a figure without interaction: the selected concepts, labelled
        known = [c for c in dict.fromkeys(static_labels) if c in set(parts.frame["concept"].dropna())]
        if known:
            layers.append(alt.Chart(parts.data).transform_filter(alt.FieldOneOfPredicate(field="concept", oneOf=known))
                          .mark_text(**label_mark).encode(x=X, y=Y, text="word:N", tooltip=parts.tooltip))
    found = match or (_search_test(json.dumps(str(static_search)), search_fields) if static_search else None)
    if found:  # search matches: the first few labelled (sorted by word), so a dense area does not pile up labels
        layers.append(
            alt.Chart(parts.data).transform_filter(found)
            .transform_window(match_rank="row_number()", sort=[{"field": "word"}, {"field": "language"}])
            .transform_filter(f"datum.match_rank <= {SEARCH_LABELS}")
            .mark_text(**label_mark).encode(x=X, y=Y, text="word:N", tooltip=parts.tooltip)
        )
    return layers


def _brush_list(parts: MapParts, brush: Any, *, width: int, height: int, theme: str, match: str | None = None) -> "alt.Chart":
    """The words inside the brush (and the search matches), one line each: word (language) — translations."""
    alt = import_altair()
    th = theme_colours(theme)
    rows = max(3, int(height // 15) - 1)
    line = "datum.word + ' (' + datum.language + ')' + (datum.translations ? ' — ' + datum.translations : '')"
    more = f"datum.rank == {rows} && datum.total > {rows} ? '… and ' + (datum.total - {rows} + 1) + ' more' : "
    shown = {"or": [{"param": brush.name, "empty": False}, match]} if match else brush
    heading = "brushed words (shift-drag) and search matches" if match else "brushed words (shift-drag on the map)"
    return (
        alt.Chart(parts.data)
        .transform_filter(shown)
        .transform_joinaggregate(total="count()")
        .transform_window(rank="row_number()", sort=[{"field": "language"}, {"field": "word"}])
        .transform_filter(f"datum.rank <= {rows}")
        .transform_calculate(line=more + line)
        .mark_text(align="left", baseline="middle", fontSize=11, limit=width - 8, color=th["text"])
        .encode(x=alt.value(4), y=alt.Y("rank:Q", axis=None, scale=alt.Scale(domain=[0.5, rows + 0.5], reverse=True)),
                text="line:N", tooltip=[alt.Tooltip("word:N"), alt.Tooltip("language:N"), alt.Tooltip("translations:N")])
        .properties(width=width, height=height,
                    title=alt.TitleParams(heading, fontSize=11, anchor="start"))
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
    legend_position: str = "header",
    theme: Literal["light", "dark"] = "light",
    language_domain: Sequence[str] | None = None,
    list_width: int = 220,
    verdict: bool = True,
    brush: Mapping[str, Sequence[float]] | None = None,
) -> "alt.LayerChart | alt.HConcatChart | alt.VConcatChart":
    """The alignment map: points coloured by language (fixed colour per code), with the SA legend.

    Tooltip: word, language, concept, translations, the concept's inter distance.
    ``lines=True`` joins each concept's translations.  Clicking a point highlights
    its concept in every language (a point selection on ``concept``; double-click
    clears); ``selected_concepts`` starts with those concepts selected, so a
    redraw keeps the user's choice.  Shapes mark concept groups when there are
    two or more (``shape_by="language"`` or ``None`` instead; ``shape_by_group=False``
    also turns shapes off).  The SA legend (:func:`sa_legend_text`) sits in a
    band above the plot by default (``legend_position="header"``), so it never
    covers a point or a label; ``"outside"``: under the title; ``"auto"``: the
    corner with no point or label under it (:func:`~semanscope_nb.plots.legend.emptiest_corner`),
    else the header; a named corner draws it on a semi-transparent box over the
    points there.  ``theme="dark"`` gives a dark box with light text.
    The legend carries the chance level and the verdict's caveats when the
    result has them (``verdict=False``: the paper's three lines); hovering the
    box shows the whole verdict sentence.

    ``navigate=True`` (or a subset of :data:`NAV_FEATURES`) adds: ``zoom`` (wheel
    zoom, drag to pan, double-click resets), ``search`` (a search box; matches in
    ``search_fields`` are enlarged, outlined and labelled; ``search`` is the
    initial text), ``brush`` (shift-drag lists the words and translations inside
    the box beside the map) and ``labels`` (a clicked concept is labelled in
    every language; a figure without ``labels`` navigation labels the
    ``selected_concepts`` and the ``search`` matches instead, so an export keeps
    them).  ``worst_concepts=n`` puts the n worst-aligned concepts
    beside the map, linked to it: click a bar, see the concept on the map.
    With a side panel the chart is an ``hconcat`` and the map is 440 px wide
    unless ``width`` says otherwise (the whole stays under ~900 px).  ``brush``
    (``{"x": [x0, x1], "y": [y0, y1]}`` in data units) starts with that box brushed.
    The x and y scales get the points' padded extent as their domain.

    >>> import semanscope_nb as snb
    >>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    >>> emb = snb.embed(ds, "random-null", cache=False)
    >>> p = snb.plots.project_dataset(ds, emb.vectors, settings=snb.plots.ProjectionSettings("pca"), cache=False)
    >>> spec = alignment_map(p, dataset=ds, navigate={"zoom"}).to_dict()
    >>> [prm.get("bind") for prm in spec["params"]]
    [None, 'scales']
    """
    chart, _ = _build_map(
        projection, result, dataset=dataset, lines=lines, labels=labels, title=title, width=width, height=height,
        point_size=point_size, shape_by=shape_by if shape_by_group else None, navigate=navigate,
        selected_concepts=selected_concepts, search=search, search_fields=search_fields, worst_concepts=worst_concepts,
        legend_position=legend_position, theme=theme, language_domain=language_domain, list_width=list_width,
        verdict=verdict, named=False, brush=brush)
    return chart


#: a clicked or selected concept's word labels: font size (px, bold) and their offset from the point
LABEL_FONT_SIZE = 11
LABEL_DX, LABEL_DY = 6, -4


def label_width(text: str, font_size: float = LABEL_FONT_SIZE) -> float:
    """The estimated width (px) of a bold label: 1 em a CJK (East Asian wide) glyph, 0.7 em any other.

    0.7 em: a bold sans face's average letter (DejaVu Sans Bold, what exports draw, runs 0.34-0.92 em).

    >>> label_width("frost"), label_width("霜")
    (38.5, 11.0)
    """
    import unicodedata

    return round(sum(1.0 if unicodedata.east_asian_width(c) in ("W", "F") else 0.7 for c in str(text)) * font_size, 4)


def _pixels(frame: pd.DataFrame, *, width: int, height: int, domains: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The points' pixel positions in the plot (y down), at the map's own scale domains."""
    (x0, x1), (y0, y1) = domains["x"], domains["y"]
    px = (frame["x"].to_numpy(float) - x0) / ((x1 - x0) or 1.0) * width
    py = (1.0 - (frame["y"].to_numpy(float) - y0) / ((y1 - y0) or 1.0)) * height
    return px, py


def label_boxes(frame: pd.DataFrame, *, width: int, height: int, domains: Mapping[str, Sequence[float]],
                font_size: float = LABEL_FONT_SIZE) -> np.ndarray:
    """(left, top, right, bottom) in plot pixels of each row's word label, drawn at its ``label_dx``/``label_dy``.

    The label is left-aligned with its baseline at the offset point (as the map draws
    it); rows without offsets take the default (:data:`LABEL_DX`, :data:`LABEL_DY`).

    >>> f = pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0], "word": ["frost", "霜"]})
    >>> label_boxes(f, width=100, height=100, domains={"x": (0, 1), "y": (0, 1)}).round(1).tolist()
    [[6.0, 85.0, 44.5, 96.0], [106.0, -15.0, 117.0, -4.0]]
    """
    px, py = _pixels(frame, width=width, height=height, domains=domains)
    dx = frame["label_dx"].to_numpy(float) if "label_dx" in frame else np.full(len(frame), float(LABEL_DX))
    dy = frame["label_dy"].to_numpy(float) if "label_dy" in frame else np.full(len(frame), float(LABEL_DY))
    w = np.array([label_width(t, font_size) for t in frame["word"].astype(str)], dtype=float)
    return np.column_stack([px + dx, py + dy - font_size, px + dx + w, py + dy])


def with_label_offsets(frame: pd.DataFrame, *, width: int, height: int, domains: Mapping[str, Sequence[float]],
                       labelled: Sequence[str] | None = None, font_size: float = LABEL_FONT_SIZE) -> pd.DataFrame:
    """``frame`` with ``label_dx``/``label_dy`` (px): where each word label goes so that no two labels shown together overlap.

    The words of one concept (霜 / frost / Frost) often sit at nearly the same
    point, and their labels were drawn on top of each other.  Labels are shown a
    concept at a time on a click (``labelled=None``: each concept's labels are
    placed apart from each other), or all of the ``labelled`` concepts at once in a
    figure (their labels are placed apart jointly).  Placement is greedy, top to
    bottom: each label takes the first free spot of its default place (right of and
    above its point), then one line up, one line down, two up, ..., then the same on
    the left of its point.  Computed from the projected coordinates at the map's
    unzoomed scale (its ``width``, ``height`` and scale ``domains``).

    Several concepts clicked together (shift-click) are placed jointly by
    :func:`with_selection_label_offsets`: the panel (:class:`~semanscope_nb.widgets.ExplorePanel`)
    re-places them when its selection changes, in place.  A plain Altair chart outside
    the panel (:func:`alignment_map` with ``navigate``) places the concepts it starts
    with (``selected_concepts``) jointly, but has no kernel behind later clicks: there
    each clicked concept's labels are apart from each other, while the labels of two
    concepts shift-clicked close together may overlap.

    Zooming: the offsets are pixels at the unzoomed scale and stay the same pixels
    when the map is zoomed, while the points move apart.  Two labels stacked at one
    point then drift apart as the points do, but at an intermediate zoom a stacked
    label can pass next to, or over, another label; zooming out again (double-click
    resets) puts them back.  Offsets in data units would only move apart when zooming
    in, but they grow with the zoom and a label would leave its point.

    >>> f = pd.DataFrame({"x": [0.5, 0.5, 0.51], "y": [0.5, 0.5, 0.5], "word": ["frost", "霜", "Frost"],
    ...                   "concept": ["frost / 霜"] * 3})
    >>> out = with_label_offsets(f, width=200, height=200, domains={"x": (0, 1), "y": (0, 1)})
    >>> out[["label_dx", "label_dy"]].to_numpy().tolist()
    [[6.0, -4.0], [6.0, -17.0], [6.0, 9.0]]
    """
    out = frame.copy()
    dx = np.full(len(out), float(LABEL_DX))
    dy = np.full(len(out), float(LABEL_DY))
    if len(out):
        px_a, py_a = _pixels(out, width=width, height=height, domains=domains)
        px, py = px_a.tolist(), py_a.tolist()  # plain floats: the loop below runs once a label
        words = out["word"].astype(str).tolist()
        concepts = out["concept"].tolist()
        if labelled is None:
            groups: dict[Any, list[int]] = {}
            for i, c in enumerate(concepts):
                if c is not None and c == c:  # no concept (NaN/None): never labelled on a click
                    groups.setdefault(c, []).append(i)
            batches = [g for g in groups.values() if len(g) > 1]
        else:
            keep = set(labelled)
            batches = [[i for i, c in enumerate(concepts) if c in keep]]
        line = font_size + 2.0
        base_dx, base_dy = float(LABEL_DX), float(LABEL_DY)
        for rows in batches:
            placed: list[tuple[float, float, float, float]] = []
            steps = [0] + [s for k in range(1, len(rows) + 2) for s in (-k, k)]
            for i in sorted(rows, key=lambda k: (py[k], px[k], words[k])):
                x, y = px[i], py[i]
                if not (math.isfinite(x) and math.isfinite(y)):
                    continue  # not drawn: keeps the default place, takes no room
                w = label_width(words[i], font_size)
                found = None
                for inside in (True, False):  # a spot inside the plot first, then any free one
                    for cand_dx in (base_dx, -base_dx - w):
                        left, right = x + cand_dx, x + cand_dx + w
                        if inside and (left < 0 or right > width):
                            continue
                        for k in steps:
                            bottom = y + base_dy + k * line
                            top = bottom - font_size
                            if inside and (top < 0 or bottom > height):
                                continue
                            if not any(left < b[2] and b[0] < right and top < b[3] and b[1] < bottom for b in placed):
                                found = (cand_dx, bottom - y, (left, top, right, bottom))
                                break
                        if found is not None:
                            break
                    if found is not None:
                        break
                if found is not None:
                    dx[i], dy[i] = found[0], found[1]
                    placed.append(found[2])
    out["label_dx"], out["label_dy"] = dx, dy
    return out


def with_selection_label_offsets(frame: pd.DataFrame, selected: Sequence[str] | None, *, width: int, height: int,
                                 domains: Mapping[str, Sequence[float]], font_size: float = LABEL_FONT_SIZE) -> pd.DataFrame:
    """The offsets of an interactive map: each concept's labels apart (a click), and, when more than one concept is
    ``selected`` (shift-click), the labels of all selected concepts placed apart jointly.

    Same placement as :func:`with_label_offsets`; rows of concepts not selected keep their per-concept place.

    >>> f = pd.DataFrame({"x": [0.5, 0.5, 0.51, 0.51], "y": [0.5, 0.5, 0.5, 0.5], "word": ["frost", "霜", "ice", "冰"],
    ...                   "concept": ["frost", "frost", "ice", "ice"]})
    >>> d = {"x": (0, 1), "y": (0, 1)}
    >>> with_selection_label_offsets(f, ["frost"], width=200, height=200, domains=d)["label_dy"].tolist()
    [-4.0, -17.0, -4.0, -17.0]
    >>> with_selection_label_offsets(f, ["frost", "ice"], width=200, height=200, domains=d)["label_dy"].tolist()
    [-4.0, -17.0, 9.0, -30.0]
    """
    out = with_label_offsets(frame, width=width, height=height, domains=domains, labelled=None, font_size=font_size)
    known = set(frame["concept"].dropna()) if len(frame) else set()
    chosen = [c for c in dict.fromkeys(selected or ()) if c in known]
    if len(chosen) > 1:
        mask = frame["concept"].isin(chosen).to_numpy()
        joint = with_label_offsets(frame[mask], width=width, height=height, domains=domains, labelled=chosen,
                                   font_size=font_size)
        dx, dy = out["label_dx"].to_numpy(float).copy(), out["label_dy"].to_numpy(float).copy()
        dx[mask], dy[mask] = joint["label_dx"].to_numpy(float), joint["label_dy"].to_numpy(float)
        out["label_dx"], out["label_dy"] = dx, dy
    return out


#: where a panel's map spec keeps what :func:`selection_label_rows` needs (Vega-Lite's ``usermeta``: not drawn)
LABEL_META = "snb_labels"


def selection_label_rows(spec: Mapping[str, Any], selected: Sequence[str] | None) -> list[dict[str, Any]] | None:
    """The points rows of a map spec from :func:`alignment_map_spec` (``navigate`` with labels), re-placed for the
    clicked concepts ``selected`` (:func:`with_selection_label_offsets`); None if the spec has no clickable labels.

    A panel sends these rows to its drawn view in place (no redraw) when the selection changes.

    >>> rows = [{"x": 0.5, "y": 0.5, "word": w, "concept": c, "label_dx": 6.0, "label_dy": -4.0}
    ...         for w, c in [("frost", "frost"), ("霜", "frost"), ("ice", "ice"), ("冰", "ice")]]
    >>> spec = {"datasets": {"snb_points": rows},
    ...         "usermeta": {"snb_labels": {"width": 200, "height": 200, "domains": {"x": [0, 1], "y": [0, 1]}}}}
    >>> [r["label_dy"] for r in selection_label_rows(spec, ["frost", "ice"])]
    [-4.0, -30.0, -17.0, 9.0]
    """
    meta = (spec.get("usermeta") or {}).get(LABEL_META)
    rows = (spec.get("datasets") or {}).get(DATA_NAMES["points"])
    if not meta or not rows:
        return None
    frame = pd.DataFrame({"x": [r.get("x") for r in rows], "y": [r.get("y") for r in rows],
                          "word": [r.get("word") for r in rows], "concept": [r.get("concept") for r in rows]})
    frame[["x", "y"]] = frame[["x", "y"]].astype(float)
    placed = with_selection_label_offsets(frame, selected, width=int(meta["width"]), height=int(meta["height"]),
                                          domains={k: tuple(v) for k, v in meta["domains"].items()})
    dx, dy = placed["label_dx"].tolist(), placed["label_dy"].tolist()
    return [{**r, "label_dx": round(a, 4), "label_dy": round(b, 4)} for r, a, b in zip(rows, dx, dy)]


def _auto_corner(f: pd.DataFrame, legend_text: str, *, width: int, height: int, point_size: int, labels: bool,
                 labelled: Sequence[str], domains: Mapping[str, Sequence[float]]) -> str | None:
    """The corner for an "auto" legend: the emptiest one if nothing lies under it, else None (the header)."""
    px, py = _pixels(f, width=width, height=height, domains=domains)
    r = np.sqrt(point_size) / 2 + 1
    boxes = [np.column_stack([px - r, py - r, px + r, py + r])]
    words = f["word"].astype(str).to_numpy()
    if labels:  # every word labelled (9 px, right of its point)
        wlen = np.array([label_width(w, 9) for w in words], dtype=float)
        boxes.append(np.column_stack([px + 6, py - 9, px + 6 + wlen, py + 3]))
    mask = f["concept"].isin(list(labelled)).to_numpy()
    if mask.any():  # the selected concepts' labels, where the map draws them (see with_label_offsets)
        boxes.append(label_boxes(f[mask], width=width, height=height, domains=domains))
    corner, count = emptiest_corner(legend_text, np.vstack(boxes), width=width, height=height)
    return corner if count == 0 else None


def _legend_place(frame: pd.DataFrame, legend_text: str | None, position: str, *, width: int, height: int,
                  point_size: int, labels: bool, labelled: Sequence[str]) -> tuple[str, dict]:
    """Where the legend goes, and the scale domains of the map (its points' extent, padded).

    The domains are written into the spec: Vega then computes no extent from the data, so a
    layer that happens to be empty (no search match, no click yet) logs no "Infinite extent"
    warning, and an "auto" legend knows where every point lands.
    """
    domains = _padded_domains(frame)
    if not legend_text or position != "auto":
        return position, domains
    corner = _auto_corner(frame, legend_text, width=width, height=height, point_size=point_size, labels=labels,
                          labelled=labelled, domains=domains)
    return (corner or "header"), domains


def _padded_domains(frame: pd.DataFrame, pad: float = 0.05) -> dict[str, tuple[float, float]]:
    out = {}
    for axis in [a for a in ("x", "y", "z") if a in frame]:
        values = frame[axis].to_numpy(float)
        values = values[np.isfinite(values)]
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        span = (hi - lo) or 1.0
        out[axis] = (round(lo - pad * span, 4), round(hi + pad * span, 4))
    return out


def _build_map(
    projection: "Projection",
    result: SAResult | None,
    *,
    dataset: "WordDataset | None",
    lines: bool,
    labels: bool,
    title: str | None,
    width: int | None,
    height: int,
    point_size: int,
    shape_by: str | None,
    navigate: bool | Collection[str],
    selected_concepts: Sequence[str] | None,
    search: str,
    search_fields: Sequence[str],
    worst_concepts: int | None,
    legend_position: str,
    theme: str,
    language_domain: Sequence[str] | None,
    list_width: int,
    verdict: bool,
    named: bool,
    table: MapTable | None = None,
    domains: Mapping[str, Sequence[float]] | None = None,
    brush: Mapping[str, Sequence[float]] | None = None,
) -> tuple[Any, MapParts]:
    """The map (see :func:`alignment_map`) and its parts; ``named``: rows and parameters by name (a panel's map)."""
    alt = import_altair()
    features = nav_features(navigate)
    check_legend_position(legend_position)
    theme_colours(theme)
    side = "brush" in features or bool(worst_concepts)
    if worst_concepts and result is None:
        raise ValueError("worst_concepts= needs the SA result (its per-concept inter distances)")
    width = width if width is not None else (440 if side else 520)
    table = table or map_table(projection, result, dataset, shape_by=shape_by, language_domain=language_domain)
    static = [] if "labels" in features else list(selected_concepts or ())
    if ("labels" in features or static) and "label_dx" not in table.frame:  # labels placed apart (with_label_offsets)
        at = dict(width=width, height=height, domains=domains or _padded_domains(table.frame))
        table = replace(table, frame=with_selection_label_offsets(table.frame, selected_concepts, **at) if "labels" in features
                        else with_label_offsets(table.frame, labelled=static, **at))
    parts = MapParts(projection, result, dataset, shape_by=shape_by, language_domain=language_domain, named=named, table=table)
    names = PARAM_NAMES if named else {}
    pick = concept_pick(parts.frame, selected_concepts, name=names.get("pick"))
    search_param, brush = _map_params(alt, features, search=search, brush=brush, names=names)
    legend_text = sa_legend_text(result, verdict=verdict) if result is not None else None
    detail = verdict_sentence(result) if verdict else None
    position, own = _legend_place(parts.frame, legend_text, legend_position, width=width, height=height,
                                  point_size=point_size, labels=labels, labelled=static)
    domains = domains or own
    view = map_view(
        parts, width=width, height=height, point_size=point_size, pick=pick, features=features,
        search_name=search_param.name if search_param is not None else None, search_fields=search_fields, brush=brush,
        lines=concept_lines_frame(projection, dataset) if lines and dataset is not None else None, labels=labels,
        legend_text=legend_text, legend_detail=detail, legend_position=position, theme=theme,
        legend_orient="bottom" if side else None, domains=domains, zoom_name=names.get("zoom"), static_labels=static,
        static_search="" if "search" in features else search,
    )
    if legend_text and position == "header":
        view = alt.vconcat(_header(parts, legend_text, detail, width=width, theme=theme, named=named), view, spacing=4)
    if side:
        view = alt.hconcat(view, _side_panel(alt, parts, result, pick, brush, search_param, search_fields=search_fields,
                                             worst_concepts=worst_concepts, list_width=list_width, height=height,
                                             theme=theme, named=named))
    chart = title_with_legend(view, title if title is not None else _default_title(result), legend_text=legend_text,
                              legend_position=position)
    if search_param is not None:
        chart = chart.add_params(search_param)
    return chart, parts


def _header(parts: MapParts, legend_text: str, detail: str | None, *, width: int, theme: str, named: bool) -> Any:
    """The SA legend as a header panel above the map (its row named ``legend`` in a panel's map)."""
    row = pd.DataFrame([{"legend": legend_text, **({"verdict": detail} if detail else {})}])
    return legend_header(legend_text, width=width, theme=theme, detail=detail,
                         data=parts.data_for("legend", row) if named else None)


def _map_params(alt: Any, features: frozenset[str], *, search: str, brush: Mapping[str, Sequence[float]] | None,
                names: Mapping[str, str]) -> tuple[Any, Any]:
    """(the search box parameter, the shift-drag brush starting at ``brush``), each None unless its feature is on."""
    search_param = (alt.param(value=str(search), bind=alt.binding(input="search", placeholder="word or concept", name="search "),
                              **({"name": names["search"]} if names else {}))
                    if "search" in features else None)
    brush_value = ({"x": [float(v) for v in brush["x"]], "y": [float(v) for v in brush["y"]]}
                   if brush and "x" in brush and "y" in brush else None)
    brush_param = (alt.selection_interval(encodings=["x", "y"], on=_SHIFT_DRAG, translate=_SHIFT_DRAG, zoom=False, empty=False,
                                          clear="dblclick", **({"name": names["brush"]} if names else {}),
                                          **({"value": brush_value} if brush_value else {}))
                   if "brush" in features else None)
    return search_param, brush_param


def _side_panel(alt: Any, parts: MapParts, result: SAResult | None, pick: Any, brush: Any, search_param: Any, *,
                search_fields: Sequence[str], worst_concepts: int | None, list_width: int, height: int, theme: str,
                named: bool) -> Any:
    """Beside the map: the brushed words (and search matches) and / or the clickable worst-aligned concepts."""
    panels = []
    if brush is not None:
        panels.append(_brush_list(parts, brush, width=list_width, height=height if not worst_concepts else height // 2,
                                  theme=theme, match=_search_test(search_param.name, search_fields)
                                  if search_param is not None else None))
    if worst_concepts:
        panels.append(worst_concepts_chart(result, n=int(worst_concepts), selection=pick,  # type: ignore[arg-type]
                                           width=list_width - 80,
                                           title=alt.TitleParams("worst-aligned concepts (click one)", fontSize=11,
                                                                 anchor="start"),
                                           data=(parts.data_for("worst", result.concepts_frame().head(int(worst_concepts)))
                                                 if named else None)))
    return panels[0] if len(panels) == 1 else alt.vconcat(*panels)


# --------------------------------------------------------------------------- the fast path: a map spec from a template

#: bump when the structure of a map spec changes (stored templates are then rebuilt)
TEMPLATE_VERSION = "1"
_MAP_OPTIONS: dict[str, Any] = {
    "lines": False, "labels": False, "title": None, "width": None, "height": 420, "point_size": 60, "shape_by": "group",
    "navigate": False, "selected_concepts": None, "search": "", "search_fields": ("word", "concept"), "worst_concepts": None,
    "legend_position": "header", "theme": "light", "language_domain": None, "list_width": 220, "verdict": True,
    "brush": None,
}


class SpecTemplates:
    """Map specs without their rows, kept by structure: in memory (LRU) and, with ``folder``, on disk.

    A template is the Vega-Lite spec of a map built once with its rows and
    parameters *by name* (:data:`DATA_NAMES`, :data:`PARAM_NAMES`); every other
    map of the same structure (same languages, shapes, options, legend length)
    is that template plus its own rows, title, selection and search text: no
    Altair object is built, no schema validated.  Files are JSON, written
    atomically; a damaged one is rebuilt.  ``hits``, ``disk_hits`` and
    ``misses`` count what happened.

    >>> t = SpecTemplates(); t.get("k") is None, t.misses
    (True, 1)
    """

    def __init__(self, maxsize: int = 32, *, folder: str | os.PathLike | None = None) -> None:
        self.maxsize = int(maxsize)
        self.folder = Path(folder).expanduser() if folder is not None else None
        self._store = Memo(self.maxsize)  # the templates' JSON texts (a fresh copy per get)
        self._lock = threading.Lock()  # the counters
        self.hits = self.disk_hits = self.misses = 0

    def get(self, key: str) -> dict | None:
        """A fresh copy of the template stored under ``key``, or None."""
        text = self._store.get(key)
        if text is not None:
            with self._lock:
                self.hits += 1
            return json.loads(text)
        if self.folder is not None:
            try:
                text = (self.folder / f"{key}.json").read_text(encoding="utf-8")
                spec = json.loads(text)
            except (OSError, ValueError):
                spec = None
            if isinstance(spec, dict):
                self._store.put(key, text)
                with self._lock:
                    self.hits += 1
                    self.disk_hits += 1
                return spec
        with self._lock:
            self.misses += 1
        return None

    def put(self, key: str, spec: dict) -> None:
        text = json.dumps(spec, ensure_ascii=False, sort_keys=True)
        self._store.put(key, text)
        if self.folder is not None:
            try:
                atomic_write_text(self.folder / f"{key}.json", text)
            except OSError:  # a read-only or full cache folder: the template stays in memory
                pass


_DEFAULT_TEMPLATES: dict[str, SpecTemplates] = {}


def default_spec_templates() -> SpecTemplates:
    """The process-wide templates, also on disk in ``spec-templates/`` under the cache folder (``SEMANSCOPE_CACHE``)."""
    from semanscope_nb.settings import settings

    folder = Path(settings.cache_dir) / "spec-templates"
    key = str(folder)
    if key not in _DEFAULT_TEMPLATES:
        _DEFAULT_TEMPLATES[key] = SpecTemplates(folder=folder)
    return _DEFAULT_TEMPLATES[key]


def _title_value(heading: str | None, legend_text: str | None, position: str) -> Any:
    """What :func:`title_with_legend` writes as the spec's ``title`` (None: no title)."""
    if legend_text and position == "outside":
        return {"text": heading or "", "anchor": "start", "subtitle": legend_text.split("\n"), "subtitleFontSize": 11}
    return heading or None


def alignment_map_spec(
    projection: "Projection",
    result: SAResult | None = None,
    *,
    dataset: "WordDataset | None" = None,
    templates: SpecTemplates | None | Literal[False] = None,
    **options: Any,
) -> dict[str, Any]:
    """The alignment map as a Vega-Lite dict, fast: the same map as :func:`alignment_map` (same options).

    The rows and parameters are named (:data:`DATA_NAMES`, :data:`PARAM_NAMES`),
    so a panel can replace one dataset -- the legend after a tier change -- or
    read a selection back by name.  The layout comes from ``templates``
    (default: :func:`default_spec_templates`, in memory and on disk; False: build
    it now) when a map of the same structure was built before; only then is no
    Altair object built and no schema validated (the tests validate a freshly
    built spec, and check that a template gives the very same spec).

    >>> import numpy as np, semanscope_nb as snb
    >>> p = snb.project(np.random.default_rng(0).normal(size=(4, 5)), method="pca", cache=False,
    ...                 words=["water", "fire", "水", "火"], languages=["en", "en", "zh", "zh"])
    >>> spec = alignment_map_spec(p, templates=SpecTemplates(), navigate=True)
    >>> sorted(spec["datasets"]), [prm["name"] for prm in spec["params"]][:1]
    (['snb_points'], ['snb_pick'])
    """
    unknown = sorted(set(options) - set(_MAP_OPTIONS))
    if unknown:
        raise TypeError(f"alignment_map_spec: unknown option(s) {unknown}; it takes those of alignment_map")
    o = {**_MAP_OPTIONS, **options}
    features = nav_features(o["navigate"])
    check_legend_position(o["legend_position"])
    theme_colours(o["theme"])
    side = "brush" in features or bool(o["worst_concepts"])
    if o["worst_concepts"] and result is None:
        raise ValueError("worst_concepts= needs the SA result (its per-concept inter distances)")
    width = o["width"] if o["width"] is not None else (440 if side else 520)
    table = map_table(projection, result, dataset, shape_by=o["shape_by"], language_domain=o["language_domain"])
    legend_text = sa_legend_text(result, verdict=o["verdict"]) if result is not None else None
    detail = verdict_sentence(result) if o["verdict"] else None
    selected = list(dict.fromkeys(o["selected_concepts"] or ()))
    static = [] if "labels" in features else selected
    label_at = dict(width=width, height=o["height"], domains=_padded_domains(table.frame))
    if "labels" in features:  # labels placed apart, the selected concepts' jointly, at the map's own scale
        table = replace(table, frame=with_selection_label_offsets(table.frame, selected, **label_at))
    elif static:  # a figure's selected concepts, placed apart jointly
        table = replace(table, frame=with_label_offsets(table.frame, labelled=static, **label_at))
    position, domains = _legend_place(table.frame, legend_text, o["legend_position"], width=width, height=o["height"],
                                      point_size=o["point_size"], labels=o["labels"], labelled=static)
    if o["legend_position"] == "auto":  # the corner was chosen from these very domains: part of the structure
        structure_domains: Any = domains
    else:
        structure_domains = None
    lines = concept_lines_frame(projection, dataset) if o["lines"] and dataset is not None else None
    worst = result.concepts_frame().head(int(o["worst_concepts"])) if o["worst_concepts"] else None
    rows = {DATA_NAMES["points"]: json_rows(table.frame)}
    if lines is not None:
        rows[DATA_NAMES["lines"]] = json_rows(lines)
    if legend_text and position in ("header", *CORNER_POSITIONS):
        rows[DATA_NAMES["legend"]] = [{"legend": legend_text, **({"verdict": detail} if detail else {})}]
    if worst is not None:
        rows[DATA_NAMES["worst"]] = json_rows(worst)
    structure = {k: v for k, v in o.items() if k not in ("title", "selected_concepts", "search", "brush")}
    structure.update(
        template=TEMPLATE_VERSION, code=_code_fingerprint(), altair=_altair_version(), width=width, position=position, domains=structure_domains,
        languages=table.languages, shape=table.shape, axis=table.axis_name, columns=list(table.frame.columns),
        groups=bool(table.frame["group"].notna().any()), legend_lines=len(legend_text.split("\n")) if legend_text else 0,
        legend_text=legend_text if position in CORNER_POSITIONS else None, detail=bool(detail),
        worst=len(worst) if worst is not None else None, has_lines=lines is not None,
        static_labels=static, static_search="" if "search" in features else o["search"],
        navigate=sorted(features), search_fields=list(o["search_fields"]),
        language_domain=list(o["language_domain"] or ()),
    )
    key = hashlib.sha256(json.dumps(structure, sort_keys=True, default=str).encode()).hexdigest()[:32]
    store = None if templates is False else (templates if templates is not None else default_spec_templates())
    spec = store.get(key) if store is not None else None
    if spec is None:
        from altair.utils.schemapi import debug_mode

        with debug_mode(False):  # no validation while the objects are built: the tests validate the result
            chart, _ = _build_map(
                projection, result, dataset=dataset, lines=o["lines"], labels=o["labels"], title=None, width=width,
                height=o["height"], point_size=o["point_size"], shape_by=o["shape_by"], navigate=o["navigate"],
                selected_concepts=static, search="", search_fields=o["search_fields"],
                worst_concepts=o["worst_concepts"], legend_position=position, theme=o["theme"],
                language_domain=o["language_domain"], list_width=o["list_width"], verdict=o["verdict"], named=True,
                table=table, domains=structure_domains or _SENTINEL_DOMAINS)
            spec = fast_spec(chart)
        spec.pop("datasets", None)
        spec.pop("title", None)
        spec = _stable_view_names(spec)
        for prm in spec.get("params", []):
            if prm.get("name") in (PARAM_NAMES["pick"], PARAM_NAMES["brush"]):
                prm.pop("value", None)
        if store is not None:
            store.put(key, spec)
    if structure_domains is None:
        spec = _fill_domains(spec, domains)
    spec["datasets"] = rows
    title = _title_value(o["title"] if o["title"] is not None else _default_title(result), legend_text, position)
    if title is not None:
        spec["title"] = title
    if "labels" in features:  # what selection_label_rows needs to re-place the labels of a new selection
        spec["usermeta"] = {LABEL_META: {"width": int(width), "height": int(o["height"]),
                                         "domains": {k: [float(v) for v in label_at["domains"][k]] for k in ("x", "y")}}}
    known = set(table.frame["concept"].dropna())
    for prm in spec.get("params", []):
        if prm.get("name") == PARAM_NAMES["pick"]:
            value = [{"concept": c} for c in selected if c in known]
            if value:
                prm["value"] = value
        elif prm.get("name") == PARAM_NAMES["search"]:
            prm["value"] = str(o["search"])
        elif prm.get("name") == PARAM_NAMES["brush"] and o["brush"]:
            prm["value"] = {"x": [float(v) for v in o["brush"]["x"]], "y": [float(v) for v in o["brush"]["y"]]}
    return spec


#: placeholders a template holds where a map's scale domains go (filled in by :func:`_fill_domains`)
_SENTINEL_DOMAINS = {"x": (-7.77e300, 7.77e300), "y": (-8.88e300, 8.88e300)}


def _fill_domains(spec: Any, domains: Mapping[str, Sequence[float]]) -> Any:
    """The spec with each placeholder domain of :data:`_SENTINEL_DOMAINS` replaced by the map's own."""
    lookup = {tuple(v): [float(a) for a in domains[k]] for k, v in _SENTINEL_DOMAINS.items() if k in domains}

    def walk(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return lookup.get(tuple(obj), obj) if len(obj) == 2 and all(isinstance(v, float) for v in obj) else [walk(v) for v in obj]
        return obj

    return walk(spec)


def _stable_view_names(spec: dict) -> dict:
    """Altair's numbered view names ("view_7", from a process-wide counter) renamed in order of appearance."""
    text = json.dumps(spec, ensure_ascii=False)
    seen: dict[str, str] = {}
    for name in re.findall(r'"(view_\d+)"', text):
        seen.setdefault(name, f"snb_view_{len(seen) + 1}")
    return json.loads(re.sub(r'"(view_\d+)"', lambda m: f'"{seen[m.group(1)]}"', text)) if seen else spec


_FINGERPRINT: list[str] = []


def _code_fingerprint() -> str:
    """A hash of the modules that write map specs, so that a changed module never reuses an old template."""
    if not _FINGERPRINT:
        here = Path(__file__).parent
        h = hashlib.sha256()
        for name in ("maps.py", "legend.py", "sa_figures.py", "chart_kit.py", "palette.py"):
            try:
                h.update((here / name).read_bytes())
            except OSError:  # pragma: no cover - an installation without sources
                h.update(name.encode())
        _FINGERPRINT.append(h.hexdigest()[:16])
    return _FINGERPRINT[0]


def _altair_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("altair")
    except PackageNotFoundError:  # pragma: no cover
        return "?"


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
    legend_position: str = "header",
    theme: Literal["light", "dark"] = "light",
    verdict: bool = True,
) -> "alt.HConcatChart":
    """A 3-D projection as two linked 2-D views side by side: components 1-2 and 1-3.

    Vega-Lite (what JupyterLab renders offline) has no 3-D marks, and a rotating
    3-D scatter would need another renderer (and its JavaScript) in the
    notebook.  Two views sharing the x axis show all three components instead,
    linked: a click on a concept highlights and labels it in both views, the one
    search box marks matches in both, and each view zooms on its own.  The SA
    legend sits above both views (``"header"``, the default; ``"auto"`` too), under
    the first view's title (``"outside"``) or in a corner of the first view.
    ``navigate``'s ``brush`` is not used here.

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
    legend_position = "header" if legend_position == "auto" else legend_position
    domains = _padded_domains(parts.frame)  # fixed domains: no "Infinite extent" from an empty label layer
    views = []
    for k, yfield in enumerate(("y", "z")):
        views.append(map_view(
            parts, x="x", y=yfield, width=width, height=height, point_size=point_size, pick=pick, features=features,
            search_name=search_param.name if search_param is not None else None, search_fields=search_fields,
            lines=concept_lines_frame(projection, dataset, fields=("x", yfield)) if lines and dataset is not None else None,
            legend_text=legend_text if k == 0 else None, legend_detail=verdict_sentence(result) if verdict else None,
            legend_position=legend_position, theme=theme, legend_orient="bottom", domains=domains,
        ))
    views[0] = title_with_legend(views[0], f"{parts.axis_name} 1 × 2", legend_text=legend_text,
                                 legend_position=legend_position)
    views[1] = views[1].properties(title=f"{parts.axis_name} 1 × 3")
    chart = alt.hconcat(*views).resolve_scale(color="shared", shape="shared")
    if legend_text and legend_position == "header":
        chart = alt.vconcat(legend_header(legend_text, width=2 * width + 20, theme=theme,
                                          detail=verdict_sentence(result) if verdict else None), chart, spacing=4)
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
