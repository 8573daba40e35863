"""The Semantic Affinity legend: its text, where it sits beside a map, and its colour themes.

:func:`sa_legend_text` writes the legend (SA cosine with its SEM, SA Euclidean,
the tier, then the chance level, the gap and the verdict's caveats, read from
:attr:`~semanscope_nb.metrics.affinity.SAResult.verdict_scores`: the numbers the
verdict, the panel's table and every export show).  Where it sits
(:data:`LEGEND_POSITIONS`): ``"header"`` (the default of the maps) is a band
above the plot area (:func:`legend_header`), so it never covers a point or a
label; ``"outside"`` puts the lines under the title (:func:`title_with_legend`);
``"auto"`` picks the corner with no point under it (:func:`emptiest_corner`)
and falls back to the header when every corner holds points; the four corners
draw it on a semi-transparent box (:func:`legend_layers`), coloured by one of
:data:`THEMES`, over whatever lies there.

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


#: where the legend may sit: a band above the plot ("header"), under the title ("outside"), the emptiest
#: corner or the header ("auto"), or a corner of the plot (over the points there)
LEGEND_POSITIONS = ("header", "outside", "auto", "top-left", "top-right", "bottom-left", "bottom-right")
#: the four corners, in the order "auto" tries them
CORNERS = ("top-right", "top-left", "bottom-right", "bottom-left")
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
    """The null-aware numbers the verdict rests on (``result.verdict_scores``; else ``result.chance``), or None."""
    chance = getattr(result, "verdict_scores", None) if hasattr(result, "verdict_scores") else getattr(result, "chance", None)
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

    def num(x: Any) -> str:  # an undefined score (collapsed vectors) is marked "n/a", never printed "nan"
        return f"{float(x):.3f}" if is_finite(x) else "n/a"

    sem = f" ± {c.sem:.3f}" if is_finite(c.sem) and is_finite(c.sa) else ""
    tier = getattr(result, "tier", "undefined")
    lines = [f"SA cosine {num(c.sa)}{sem}", f"SA Euclidean {num(e.sa)}", f"tier: {tier}"]
    if not verdict:
        return "\n".join(lines)
    paper = getattr(result, "paper_tier", None)
    if isinstance(paper, str) and paper != tier:
        lines[2] += f" (paper: {paper})"
    ch = _chance(result)
    if ch is not None:
        null_ci = f" [{ch['null_low']:.3f}, {ch['null_high']:.3f}]" if is_finite(ch["null_low"]) and is_finite(ch["null_high"]) else ""
        lines.append(f"chance {num(ch['sa_null'])}{null_ci}")
        if is_finite(ch["delta"]):
            d_ci = (f" [{ch['delta_low']:+.3f}, {ch['delta_high']:+.3f}]"
                    if is_finite(ch["delta_low"]) and is_finite(ch["delta_high"]) else "")
            judged = getattr(result, "chance_excluding", None) is not None
            lines.append(f"SA − chance{' (artefact-free)' if judged else ''} {ch['delta']:+.3f}{d_ci}")
        basis = getattr(result, "verdict_basis", None)
        if isinstance(basis, str) and basis and not basis.startswith("all "):
            lines.append(f"(verdict on {basis})")
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
                  detail: str | None = None, data: Any = None) -> list[Any]:
    """A semi-transparent box (rect) and the legend text on it, in a corner of the plot.

    ``detail`` (the full verdict sentence) is the box's tooltip; ``data``: the Altair
    data holding the row ``{"legend": text, "verdict": detail}`` (default: inline).

    >>> [layer.to_dict()["mark"]["type"] for layer in legend_layers("SA cosine 0.5", width=300, height=200,
    ...                                                              position="bottom-right", theme="light")]
    ['rect', 'text']
    """
    alt = import_altair()
    th = theme_colours(theme)
    g = _legend_box(text, width=width, height=height, position=position, font_size=font_size)
    row = {"legend": text, **({"verdict": detail} if detail else {})}
    data = data if data is not None else alt.InlineData(values=[row])
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
    ValueError: legend_position must be one of ('header', 'outside', 'auto', 'top-left', 'top-right', 'bottom-left', 'bottom-right'), got 'middle'
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


#: font size and line height (px) of the header legend
HEADER_FONT_SIZE = 11


def header_height(text: str, *, font_size: int = HEADER_FONT_SIZE) -> int:
    """Pixel height of the header band that holds ``text`` (its lines plus a small margin).

    >>> header_height("a\\nb\\nc")
    48
    """
    return len(text.split("\n")) * round(font_size * 1.25) + 6


def legend_header(text: str, *, width: int, theme: str = "light", font_size: int = HEADER_FONT_SIZE,
                  detail: str | None = None, data: Any = None) -> Any:
    """The legend as a band of its own above the plot area: a text view ``width`` wide, as tall as its lines.

    It never covers a point or a label (it is not inside the plot).  ``data``:
    the Altair data holding the one row ``{"legend": text, "verdict": detail}``
    (default: that row inline); a panel passes named data to update the text in
    place.  ``detail`` (the whole verdict sentence) is the tooltip.

    >>> h = legend_header("SA cosine 0.5\\ntier: good", width=300).to_dict()
    >>> h["mark"]["type"], h["height"], h["encoding"]["text"]["field"]
    ('text', 34, 'legend')
    """
    alt = import_altair()
    from semanscope_nb.plots.chart_kit import inline

    th = theme_colours(theme)
    if data is None:
        import pandas as pd

        data = inline(pd.DataFrame([{"legend": text, **({"verdict": detail} if detail else {})}]))
    label = alt.Chart(data).mark_text(
        align="left", baseline="top", lineBreak="\n", lineHeight=round(font_size * 1.25), fontSize=font_size,
        fontWeight="bold", color=th["text"],
    ).encode(text="legend:N", x=alt.value(0), y=alt.value(2))
    if detail:
        label = label.encode(tooltip=[alt.Tooltip("verdict:N", title="verdict")])
    return label.properties(width=width, height=header_height(text, font_size=font_size), view=alt.ViewConfig(strokeWidth=0))


def legend_box(text: str, *, width: int, height: int, position: str, font_size: int = 12) -> dict[str, float]:
    """Pixel box ``{x0, x1, y0, y1}`` the legend of ``text`` takes in a corner of a ``width`` x ``height`` plot.

    >>> b = legend_box("SA cosine 0.5", width=400, height=300, position="top-left"); (b["x0"], b["y0"])
    (2, 2)
    """
    g = _legend_box(text, width=width, height=height, position=position, font_size=font_size)
    return {k: g[k] for k in ("x0", "x1", "y0", "y1")}


def emptiest_corner(text: str, points: Any, *, width: int, height: int, margin: float = 6.0,
                    font_size: int = 12) -> tuple[str | None, int]:
    """The corner whose legend box holds the fewest of ``points`` (pixel x, y), and how many it holds.

    ``points``: an (n, 2) array of pixel positions inside the plot (x to the
    right, y down), already widened by the caller for marks and labels, or
    (n, 4) boxes ``x0, y0, x1, y1``.  A point within ``margin`` px of the box
    counts.  Returns ``(corner, count)``; ``(None, n)`` when there are no corners
    to try.  "auto" legends use the corner when it holds nothing, else the header.

    >>> import numpy as np
    >>> emptiest_corner("SA cosine 0.5", np.array([[390.0, 10.0], [10.0, 10.0]]), width=400, height=300)
    ('bottom-right', 0)
    """
    import numpy as np

    pts = np.asarray(points, dtype=float).reshape(-1, np.asarray(points).shape[-1] if np.size(points) else 2)
    boxes = pts if pts.shape[1] == 4 else np.hstack([pts, pts])
    best: tuple[str | None, int] = (None, len(boxes))
    for corner in CORNERS:
        b = legend_box(text, width=width, height=height, position=corner, font_size=font_size)
        hit = ((boxes[:, 2] >= b["x0"] - margin) & (boxes[:, 0] <= b["x1"] + margin)
               & (boxes[:, 3] >= b["y0"] - margin) & (boxes[:, 1] <= b["y1"] + margin))
        n = int(hit.sum())
        if best[0] is None or n < best[1]:
            best = (corner, n)
        if n == 0:
            break
    return best
