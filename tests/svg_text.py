"""Read the text of an SVG drawn by vl-convert: each ``<text>`` with its box, grouped by the Vega mark that drew it.

For tests of rendered charts: boxes come from the position, anchor, rotation and
font size Vega wrote, and the advance widths of the face that draws the text
(DejaVu Sans for Latin, the CJK face for CJK: what exports use), read with
fontTools; heights are the face's cap height above and descent below the baseline.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from semanscope_nb.plots import export

_HAN = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@lru_cache(maxsize=None)
def _widths(path: str) -> tuple[int, dict, dict]:
    from fontTools.ttLib import TTFont

    font = TTFont(path, fontNumber=0, lazy=True)
    return font["head"].unitsPerEm, font.getBestCmap(), {g: a for g, (a, _) in font["hmtx"].metrics.items()}


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """Advance width (px) of ``text``: Latin characters in the Latin face, CJK characters in the CJK face."""
    latin = export._latin_face_files()
    cjk = export.regular_cjk_fonts()
    total = 0.0
    for ch in text:
        if _HAN.match(ch) and cjk:
            path = str(cjk[0])
        elif latin:
            path = str(latin[1][1] if bold else latin[1][0])
        else:  # no face to measure with: ~1 em for CJK, 0.62 em otherwise
            total += size * (1.0 if _HAN.match(ch) else 0.62)
            continue
        upem, cmap, widths = _widths(path)
        total += widths.get(cmap.get(ord(ch), ".notdef"), upem // 2) * size / upem
    return total


@dataclass
class Text:
    text: str
    role: str  # the Vega role of the mark that drew it, e.g. "axis-label", "legend-label", "mark"
    group: int  # texts of one mark share this number
    x: float  # the anchor point in the group's coordinates
    y: float
    angle: float  # degrees
    left: float  # the box in the text's own (rotated) frame, relative to the anchor point
    right: float
    top: float
    bottom: float
    size: float


def svg_texts(svg: str) -> list[Text]:
    """Every visible ``<text>`` of ``svg`` (opacity 0 -- a label Vega hid -- is left out), with its box."""
    out: list[Text] = []
    group = 0
    role = "other"
    roles: list[tuple[int, str, int]] = []
    for m in re.finditer(r'<g class="mark-text role-([a-z-]+)[ "]', svg):
        group += 1
        roles.append((m.start(), m.group(1), group))
    for m in re.finditer(r"<text\b([^>]*)>(.*?)</text>", svg, flags=re.S):
        attrs, body = m.group(1), m.group(2)
        owner = [r for r in roles if r[0] < m.start()]
        role, gid = (owner[-1][1], owner[-1][2]) if owner else ("other", 0)
        if re.search(r'\sopacity="0(\.0*)?"', attrs):
            continue
        text = html.unescape(re.sub(r"<[^>]+>", "", body))
        if not text.strip():
            continue
        t = re.search(r'transform="translate\(([-0-9.e]+),([-0-9.e]+)\)(?:\s*rotate\(([-0-9.e]+)\))?', attrs)
        x, y = (float(t.group(1)), float(t.group(2))) if t else (0.0, 0.0)
        angle = float(t.group(3)) if t and t.group(3) else 0.0
        dx = float(re.search(r'\sx="([-0-9.e]+)"', attrs).group(1)) if re.search(r'\sx="([-0-9.e]+)"', attrs) else 0.0
        size = float(re.search(r'font-size="([0-9.]+)', attrs).group(1)) if "font-size" in attrs else 11.0
        bold = bool(re.search(r'font-weight="(bold|[6-9]00)"', attrs))
        w = text_width(text, size, bold=bold)
        anchor = re.search(r'text-anchor="([a-z]+)"', attrs)
        start = dx - {"middle": w / 2, "end": w}.get(anchor.group(1) if anchor else "start", 0.0)
        out.append(Text(text, role, gid, x, y, angle, start, start + w, -0.73 * size, 0.21 * size, size))
    return out


def overlap(a: Text, b: Text, *, tolerance: float = 0.5) -> bool:
    """True when the boxes of two texts drawn at the same angle overlap by more than ``tolerance`` px both ways."""
    c, s = math.cos(math.radians(a.angle)), math.sin(math.radians(a.angle))
    # b's anchor in a's rotated frame
    rx, ry = b.x - a.x, b.y - a.y
    bx, by = c * rx + s * ry, -s * rx + c * ry
    w = min(a.right, bx + b.right) - max(a.left, bx + b.left)
    h = min(a.bottom, by + b.bottom) - max(a.top, by + b.top)
    return w > tolerance and h > tolerance


def colliding(texts: list[Text], *, roles: tuple[str, ...] = ("axis-label", "legend-label")) -> list[tuple[str, str, str]]:
    """(role, text, text) of every two texts of one mark (an axis's labels, a legend's labels) whose boxes overlap."""
    bad = []
    by_group: dict[int, list[Text]] = {}
    for t in texts:
        if t.role in roles:
            by_group.setdefault(t.group, []).append(t)
    for items in by_group.values():
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                if abs(a.angle - b.angle) < 1e-6 and overlap(a, b):
                    bad.append((a.role, a.text, b.text))
    return bad


@dataclass
class Placed:
    kind: str  # "text" or "symbol"
    text: str  # a text's characters (lines joined by "\n"); "" for a symbol
    classes: str  # the class of the Vega mark group that drew it
    box: tuple[float, float, float, float]  # left, top, right, bottom in the SVG's own pixels


def placed(svg: str, *, symbol_radius: float = 4.0) -> list[Placed]:
    """Every text and point symbol of ``svg`` with its box in absolute SVG pixels (group translations summed).

    A multi-line text (``<tspan x=".." dy="..">`` lines) is one box around all its lines.
    Symbols are ``<path transform="translate(x,y)">`` of a ``mark-symbol`` group, ``symbol_radius`` px around.
    """
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    out: list[Placed] = []

    def local(tag: str) -> str:
        return tag.rsplit("}", 1)[-1]

    def shift(el: Any) -> tuple[float, float]:
        m = re.match(r"\s*translate\(([-0-9.e]+),\s*([-0-9.e]+)\)", el.get("transform", ""))
        return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)

    def walk(el: Any, ox: float, oy: float, classes: str) -> None:
        tag = local(el.tag)
        dx, dy = shift(el)
        x, y = ox + dx, oy + dy
        if tag == "g" and el.get("class", "").startswith("mark-"):
            classes = el.get("class", "")
        if tag == "text":
            if el.get("opacity") in ("0", "0.0"):
                return
            size = float(re.sub(r"[^0-9.]", "", el.get("font-size", "11")) or 11)
            bold = el.get("font-weight", "") in ("bold", "600", "700", "800", "900")
            lines, offset = [], 0.0
            spans = [c for c in el if local(c.tag) == "tspan"]
            if spans and all(not (c.text or "").strip() == "" or c.get("dy") for c in spans):
                for k, c in enumerate(spans):
                    offset += float(c.get("dy", "0") or 0) if k else 0.0
                    lines.append(("".join(c.itertext()), offset))
            else:
                lines.append(("".join(el.itertext()), 0.0))
            widths = [text_width(t, size, bold=bold) for t, _ in lines]
            w = max(widths) if widths else 0.0
            start = x + float(el.get("x", "0") or 0) - {"middle": w / 2, "end": w}.get(el.get("text-anchor", "start"), 0.0)
            top, bottom = y - 0.73 * size, y + lines[-1][1] + 0.21 * size
            out.append(Placed("text", "\n".join(t for t, _ in lines), classes, (start, top, start + w, bottom)))
            return
        if tag == "path" and "mark-symbol" in classes and el.get("transform"):
            r = symbol_radius
            out.append(Placed("symbol", "", classes, (x - r, y - r, x + r, y + r)))
        for child in el:
            walk(child, x, y, classes)

    walk(root, 0.0, 0.0, "")
    return out


def boxes_meet(a: tuple[float, float, float, float], b: tuple[float, float, float, float], *, tolerance: float = 0.5) -> bool:
    """True when two (left, top, right, bottom) boxes overlap by more than ``tolerance`` px both ways."""
    return min(a[2], b[2]) - max(a[0], b[0]) > tolerance and min(a[3], b[3]) - max(a[1], b[1]) > tolerance
