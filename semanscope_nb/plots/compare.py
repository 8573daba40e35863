"""Two to four alignment maps side by side, for comparing models, datasets, language sets or projection methods.

:func:`compare_maps` lays out 2-4 maps (2: one row; 3: one row; 4: two rows
of two), each with its own SA legend (under its title by default, so small
maps keep every point visible), with one language colour legend shared by
all (colours are fixed per language code, so the same language has the same
colour on every map).  ``shared_axes=True`` rescales every map's coordinates
to [-1, 1] around its centre and gives all maps the same axis domain and size,
so spreads compare at a glance; projection axes carry no units, so this loses
nothing.  A text line under the maps gives each SA with its interval and, if
given, the paired difference of the first two (from
:func:`semanscope_nb.metrics.compare.compare_models`: diff, ci_low, ci_high, p_holm).

The maps share one search box and one concept selection: a click on a concept
in one map highlights and labels it in all of them (when they show the same
concepts); each map zooms on its own.

Layer: plots.  Imports :mod:`semanscope_nb.plots.maps`, :mod:`semanscope_nb.plots.legend` and the chart kit.

Example
-------
>>> import semanscope_nb as snb
>>> from semanscope_nb.plots.compare import compare_maps
>>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
>>> vecs = snb.embed(ds, "random-null", cache=False).vectors
>>> a = snb.plots.project_dataset(ds, vecs, settings=snb.plots.ProjectionSettings("pca"), cache=False)
>>> b = snb.plots.project_dataset(ds, vecs, settings=snb.plots.ProjectionSettings("tsne"), cache=False)
>>> spec = compare_maps({"PCA": (a, None), "t-SNE": (b, None)}, dataset=ds).to_dict()
>>> len(spec["vconcat"][0]["hconcat"])
2
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Collection, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.plots.chart_kit import import_altair, is_finite
from semanscope_nb.plots.legend import check_legend_position, sa_legend_text, title_with_legend, verdict_sentence
from semanscope_nb.plots.maps import MapParts, concept_lines_frame, concept_pick, map_view, nav_features

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.metrics.affinity import SAResult
    from semanscope_nb.plots.projection import Projection

#: the total width the maps of one row may take (JupyterLab's output area is ~900 px at common sizes)
MAX_ROW_WIDTH = 840


def _items(items: Any, dataset: Any) -> list[tuple[str, "Projection", "SAResult | None", Any]]:
    """(title, projection, result, dataset) per map, from a mapping or a sequence."""
    out = []
    pairs = list(items.items()) if isinstance(items, Mapping) else [(None, v) for v in items]
    for i, (name, value) in enumerate(pairs):
        value = tuple(value) if isinstance(value, (tuple, list)) else (value, None)
        if not 1 <= len(value) <= 3:
            raise ValueError(f"compare_maps: item {i} must be (projection, result) or (projection, result, dataset)")
        proj, result, ds = (list(value) + [None, None])[:3]
        ds = ds if ds is not None else (dataset[i] if isinstance(dataset, (list, tuple)) else dataset)
        if name is None:
            prov = getattr(result, "provenance", {}) or {}
            name = " · ".join(str(prov[k]) for k in ("model", "dataset") if k in prov) or f"map {i + 1} ({proj.method})"
        out.append((str(name), proj, result, ds))
    return out


def _unit_box(projection: "Projection") -> "Projection":
    """The projection centred and scaled so its largest absolute coordinate is 1."""
    c = np.asarray(projection.coords, dtype=np.float64)
    centred = c - (c.max(axis=0) + c.min(axis=0)) / 2.0
    span = float(np.abs(centred).max()) if centred.size else 0.0
    return dataclasses.replace(projection, coords=centred / span if span > 0 else centred)


def _sa_line(name: str, result: Any) -> str:
    if result is None:
        return f"{name}: no SA"
    c = result.cosine
    ci = f" [{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if is_finite(c.ci[0]) and is_finite(c.ci[1]) else ""
    v = getattr(result, "verdict_scores", None)  # the verdict's quantity beside the raw SA
    gap = f", SA − chance {v.delta.value:+.3f}" if v is not None and is_finite(v.delta.value) else ""
    return f"{name}: SA {c.sa:.3f}{ci}{gap} ({getattr(result, 'tier', '?')})"


def difference_line(difference: Mapping[str, Any], names: Sequence[str] = ("A", "B")) -> str:
    """``A − B: +0.012 [-0.004, +0.027], Holm-adjusted p = 0.210`` from a paired comparison's row.

    A ``label`` key (e.g. ``ModelComparison.score_label``) names the compared quantity after the pair.

    >>> difference_line({"diff": 0.2, "ci_low": 0.15, "ci_high": 0.25, "p_holm": 0.0004}, ["USE", "E5"])
    'USE − E5: +0.200 [+0.150, +0.250], Holm-adjusted p = 0.0004'
    """
    a = difference.get("model_a", names[0] if names else "A")
    b = difference.get("model_b", names[1] if len(names) > 1 else "B")
    d = float(difference["diff"])
    lo, hi = difference.get("ci_low", math.nan), difference.get("ci_high", math.nan)
    ci = f" [{float(lo):+.3f}, {float(hi):+.3f}]" if is_finite(lo) and is_finite(hi) else ""
    label = difference.get("label")
    text = f"{a} − {b}{f' ({label})' if label else ''}: {d:+.3f}{ci}"
    p = difference.get("p_holm", difference.get("p_value"))
    if is_finite(p):
        p = float(p)
        kind = "Holm-adjusted p" if "p_holm" in difference else "p"
        text += f", {kind} = {p:.4f}" if p < 0.001 else f", {kind} = {p:.3f}"
    return text


def _lined_up_legends(results: Sequence[Any], *, verdict: bool, line_up: bool) -> list[str | None]:
    """Each map's SA legend; lined up, every legend gets the same number of lines so the maps align."""
    legends = [sa_legend_text(result, verdict=verdict) if result is not None else None for result in results]
    if not line_up:
        return legends
    depth = max(len(t.split("\n")) if t else 0 for t in legends)
    return ["\n".join((t.split("\n") if t else []) + [" "] * (depth - (len(t.split("\n")) if t else 0)))
            if depth else t for t in legends]


def _comparison_text(alt: Any, entries: Sequence[tuple], difference: Mapping[str, Any] | None, *, width: int) -> Any:
    """The lines under the maps: each map's SA, and the paired difference of the first two when given."""
    names = [e[0] for e in entries]
    sa_lines = [_sa_line(n, r) for n, _, r, _ in entries]
    summary = [" · ".join(sa_lines)] if len(sa_lines) <= 2 else sa_lines
    if difference is not None:
        summary.append(difference_line(difference, names))
    return (alt.Chart(alt.InlineData(values=[{"comparison": "\n".join(summary)}]))
            .mark_text(align="left", baseline="top", lineBreak="\n", fontSize=12, limit=MAX_ROW_WIDTH)
            .encode(text="comparison:N", x=alt.value(0), y=alt.value(0))
            .properties(width=width, height=16 * len(summary), view=alt.ViewBackground(strokeWidth=0)))


def compare_maps(
    items: Mapping[str, tuple] | Sequence[tuple],
    *,
    dataset: "WordDataset | Sequence[WordDataset | None] | None" = None,
    shared_axes: bool = True,
    difference: Mapping[str, Any] | None = None,
    columns: int | None = None,
    width: int | None = None,
    height: int | None = None,
    point_size: int = 40,
    navigate: bool | Collection[str] = True,
    lines: bool = False,
    legend_position: str = "outside",
    theme: Literal["light", "dark"] = "light",
    verdict: bool = True,
    selected_concepts: Sequence[str] | None = None,
    title: str | None = None,
) -> "alt.VConcatChart":
    """2-4 alignment maps side by side with their SA legends, shared axis settings and a comparison line.

    ``items``: title -> (projection, result[, dataset]), or a sequence of such
    tuples (titles from the results' provenance).  ``dataset`` applies to every
    item that does not bring its own (or pass one per item).  ``difference``:
    a paired comparison of the first two maps (keys diff, ci_low, ci_high,
    p_holm; e.g. a row of ``compare_models(...).pairs``), printed under the maps.
    ``columns`` defaults to 2 for two or four maps and 3 for three; the map
    width follows so a row stays within ~840 px.  ``navigate``: as in
    :func:`semanscope_nb.plots.maps.alignment_map` (the brush is not used here);
    ``selected_concepts`` start selected on every map.
    """
    alt = import_altair()
    entries = _items(items, dataset)
    if not 2 <= len(entries) <= 4:
        raise ValueError(f"compare_maps shows 2 to 4 maps, got {len(entries)}")
    check_legend_position(legend_position)
    if legend_position in ("header", "auto"):  # several maps: each legend goes under its map's title
        legend_position = "outside"
    features = nav_features(navigate) - {"brush"}
    columns = columns or (3 if len(entries) == 3 else 2)
    if columns < 1:
        raise ValueError(f"columns must be >= 1, got {columns}")
    per_row = min(columns, len(entries))
    width = width or int((MAX_ROW_WIDTH - 20 * (per_row - 1)) // per_row)
    height = height or int(width * 0.85)
    languages = list(dict.fromkeys(lang for _, p, _, _ in entries for lang in (p.languages or ())))
    search = (alt.param(value="", bind=alt.binding(input="search", placeholder="word or concept", name="search "))
              if "search" in features else None)
    prepared = []
    for name, proj, result, ds in entries:
        shown = _unit_box(proj) if shared_axes else proj
        prepared.append((name, shown, result, ds, MapParts(shown, result, ds, shape_by="group", language_domain=languages)))
    concepts = set().union(*(set(parts.frame["concept"].dropna()) for *_, parts in prepared))
    pick = concept_pick(pd.DataFrame({"concept": sorted(concepts)}), selected_concepts)  # one selection, every map
    domains = {"x": (-1.08, 1.08), "y": (-1.08, 1.08)} if shared_axes else None
    legends = _lined_up_legends([result for _, _, result, _, _ in prepared], verdict=verdict,
                                line_up=legend_position == "outside")
    maps = []
    for (name, shown, result, ds, parts), legend in zip(prepared, legends):
        view = map_view(
            parts, width=width, height=height, point_size=point_size, pick=pick, features=features,
            search_name=search.name if search is not None else None, search_fields=("word", "concept"),
            lines=concept_lines_frame(shown, ds) if lines and ds is not None else None,
            legend_text=legend, legend_detail=verdict_sentence(result) if verdict else None,
            legend_position=legend_position, theme=theme, domains=domains, legend_orient="bottom",
        )
        maps.append(title_with_legend(view, name, legend_text=legend, legend_position=legend_position))
    rows = [alt.hconcat(*maps[i: i + columns]) for i in range(0, len(maps), columns)]
    text = _comparison_text(alt, entries, difference, width=max(1, per_row * width))
    chart = alt.vconcat(*rows, text).resolve_scale(color="shared", shape="independent")
    if search is not None:
        chart = chart.add_params(search)
    return chart.properties(title=title) if title else chart
