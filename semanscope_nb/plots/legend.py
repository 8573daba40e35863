"""The Semantic Affinity legend: its text, the box it sits on in a corner of a map, and its colour themes.

:func:`sa_legend_text` writes the legend (SA cosine with its SEM, SA Euclidean,
the tier, the chance level and the verdict's caveats); :func:`legend_layers`
draws it on a semi-transparent box in a corner of a plot (one of
:data:`LEGEND_POSITIONS`), coloured by one of :data:`THEMES`;
:func:`title_with_legend` puts it under the title instead (``"outside"``).

Layer: plots.  Imports :mod:`semanscope_nb.plots.chart_kit` and the metrics layer's SA result.

Example
-------
>>> import semanscope_nb as snb
>>> emb = snb.embed("edge-cases", "random-null", languages=["en", "zh"], cache=False)
>>> r = snb.run_task("sa", emb, n_boot=200)
>>> text = sa_legend_text(r)
>>> text.splitlines()[0].startswith("SA cosine"), sa_legend_text(r, verdict=False).splitlines()[2]
(True, 'tier: chance')
>>> box, label = legend_layers(text, width=400, height=300, position="top-left", theme="dark")
>>> box.to_dict()["mark"]["fill"] == THEMES["dark"]["box"]
True
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.plots.chart_kit import import_altair, is_finite


#: where the legend box may sit: a corner of the plot, or "outside" (under the title)
LEGEND_POSITIONS = ("top-left", "top-right", "bottom-left", "bottom-right", "outside")
#: colours of the SA legend box, labels and outlines; the box carries its own background, so the
#: light box also reads on JupyterLab's dark theme
THEMES: dict[str, dict[str, Any]] = {
    "light": {"box": "#ffffff", "box_opacity": 0.82, "box_stroke": "#b0b0b0", "text": "#222222", "outline": "#111111",
              "muted": "#777777", "line": "#888888"},
    "dark": {"box": "#1e1e1e", "box_opacity": 0.80, "box_stroke": "#5a5a5a", "text": "#eeeeee", "outline": "#ffffff",
             "muted": "#aaaaaa", "line": "#9a9a9a"},
}


def theme_colours(theme: str) -> dict[str, Any]:
    """The colours of a theme (``"light"`` or ``"dark"``); another name is a ValueError listing the themes.

    >>> theme_colours("dark")["text"]
    '#eeeeee'
    """
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {tuple(THEMES)}, got {theme!r}")
    return THEMES[theme]


def _chance(result: Any) -> dict[str, float] | None:
    """The null-aware numbers the verdict rests on (``result.verdict_scores``: artefact-free), else ``result.chance``, else None."""
    chance = getattr(result, "verdict_scores", None)
    if chance is None:
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
    return out if is_finite(out["sa_null"]) else None


def sa_legend_text(result: SAResult, *, verdict: bool = True, wrap: int = 38) -> str:
    """The SA legend: ``SA cosine 0.xxx ± 0.xxx``, ``SA Euclidean 0.xxx``, ``tier: ...``, then the verdict.

    When the result carries a chance level two lines follow (the chance level
    with its interval, and SA minus chance with its interval): the numbers the
    verdict rests on (:attr:`~semanscope_nb.metrics.affinity.SAResult.verdict_scores`,
    labelled "artefact-free" when concepts were left out), so the legend and
    the verdict table never show two gaps; the raw all-concept SA stays on the
    first line; then the verdict's caveats (``result.verdict``'s clauses after
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
        null_ci = f" [{ch['null_low']:.3f}, {ch['null_high']:.3f}]" if is_finite(ch["null_low"]) and is_finite(ch["null_high"]) else ""
        lines.append(f"chance {ch['sa_null']:.3f}{null_ci}")
        if is_finite(ch["delta"]):
            d_ci = (f" [{ch['delta_low']:+.3f}, {ch['delta_high']:+.3f}]"
                    if is_finite(ch["delta_low"]) and is_finite(ch["delta_high"]) else "")
            judged = getattr(result, "chance_excluding", None) is not None
            lines.append(f"SA − chance{' (artefact-free)' if judged else ''} {ch['delta']:+.3f}{d_ci}")
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


def legend_layers(text: str, *, width: int, height: int, position: str, theme: str, font_size: int = 12,
                  detail: str | None = None) -> list[Any]:
    """A semi-transparent box (rect) and the legend text on it, in a corner of the plot.

    ``detail`` (the full verdict sentence) is the box's tooltip.

    >>> [layer.to_dict()["mark"]["type"] for layer in legend_layers("SA cosine 0.5", width=300, height=200,
    ...                                                              position="bottom-right", theme="light")]
    ['rect', 'text']
    """
    alt = import_altair()
    th = theme_colours(theme)
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


def check_legend_position(position: str) -> None:
    """Raise a ValueError naming :data:`LEGEND_POSITIONS` when ``position`` is not one of them.

    >>> check_legend_position("middle")
    Traceback (most recent call last):
    ...
    ValueError: legend_position must be one of ('top-left', 'top-right', 'bottom-left', 'bottom-right', 'outside'), got 'middle'
    """
    if position not in LEGEND_POSITIONS:
        raise ValueError(f"legend_position must be one of {LEGEND_POSITIONS}, got {position!r}")


def title_with_legend(chart: Any, title: str | None, *, legend_text: str | None, legend_position: str) -> Any:
    """``chart`` titled ``title``; with ``legend_position="outside"`` the legend's lines are the title's subtitle.

    >>> import altair as alt
    >>> c = alt.Chart(alt.InlineData(values=[{"a": 1}])).mark_point()
    >>> title_with_legend(c, "map", legend_text="SA cosine 0.5\\ntier: good", legend_position="outside").to_dict()["title"]
    {'text': 'map', 'anchor': 'start', 'subtitle': ['SA cosine 0.5', 'tier: good'], 'subtitleFontSize': 11}
    """
    alt = import_altair()
    if legend_text and legend_position == "outside":  # the legend under the title, outside the plot area
        return chart.properties(title=alt.TitleParams(text=title or "", subtitle=legend_text.split("\n"), anchor="start",
                                                      subtitleFontSize=11))
    return chart.properties(title=title) if title else chart


def verdict_sentence(result: Any) -> str | None:
    """The result's verdict sentence (``result.verdict``), or None when it has none (the legend box's tooltip).

    >>> verdict_sentence(None), verdict_sentence(type("R", (), {"verdict": "great; 2 concepts left out"})())
    (None, 'great; 2 concepts left out')
    """
    sentence = getattr(result, "verdict", None) if result is not None else None
    return sentence if isinstance(sentence, str) and sentence.strip() else None
