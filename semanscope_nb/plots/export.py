"""Save charts offline (PNG, SVG, PDF, self-contained HTML) and set notebooks up to render them offline.

Why vl-convert: it bundles the Vega/Vega-Lite JavaScript and a renderer in one
wheel, so static export and inline HTML need neither a browser nor a CDN.
Chinese/Japanese/Korean labels need a CJK font registered with vl-convert,
otherwise they come out as empty boxes: :func:`register_cjk_fonts` registers the
Noto Sans SC/TC/JP/KR fonts of the ``justmytype-intl-cjk`` wheel (or Debian's
``fonts-noto-cjk`` if that is what is installed).

One sans-serif face for Latin text, one for CJK text (:func:`export_svg`): an
export's spec gets the font list :func:`export_font_family` (``DejaVu Sans,
Liberation Sans, Noto Sans CJK SC, sans-serif``), and every run of CJK
characters in its SVG becomes its own ``<text>`` in the Noto Sans CJK face,
placed after the Latin run before it (the widths come from the fonts' advance
tables, read with fontTools).  Why not a font list alone: vl-convert's renderer
(resvg) takes the first installed family of a list, and for a character that
face lacks it falls back to the *first face in its font database* holding it --
on Debian that is Noto **Serif** CJK -- and a Latin run sharing a ``<text>``
with a CJK run was drawn in that fallback face too.  Separate elements make the
PDF and PNG embed DejaVu Sans for Latin and Noto Sans CJK for CJK, and a browser
viewing the SVG gets the same two families.

In JupyterLab 4, Altair 5 charts render through JupyterLab's built-in Vega-Lite 5
MIME renderer: :func:`setup_notebook` enables the ``semanscope`` renderer, Altair's
``mimetype`` output with one change (Altair 5's ``default`` renderer writes HTML
that loads Vega from a CDN, which stays blank with no internet).  This also works
inside ``ipywidgets.Output`` (:func:`notebook_output`).

The change: Altair stamps its specs ``$schema .../vega-lite/v5.20.1.json``, and
JupyterLab 4's renderer (vega-embed with Vega-Lite 5.6.1) logs "The input spec
uses Vega-Lite v5.20.1, but the current version of Vega-Lite is v5.6.1" for every
chart, because 5.6.1 does not satisfy ``^5.20.1``.  Our charts use nothing newer
than what 5.6 draws (the browser tests render them there), so the notebook copy is
stamped with the major version only, ``.../vega-lite/v5.json``
(:data:`NOTEBOOK_VL_SCHEMA`): vega-embed then checks ``^5`` and has nothing to say.
Exports keep Altair's exact schema.

Example
-------
>>> import altair as alt, tempfile, pathlib
>>> from semanscope_nb.plots.export import save_chart
>>> c = alt.Chart(alt.InlineData(values=[{"w": "水", "v": 1}])).mark_bar().encode(x="w:N", y="v:Q")
>>> out = save_chart(c, pathlib.Path(tempfile.mkdtemp()) / "c.png")
>>> out.stat().st_size > 1000
True
"""

from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path
from typing import Any, Literal, Sequence

from semanscope_nb.provenance import atomic_write_text, ensure_inside, kept_text, safe_name, visible_text

FORMATS = ("png", "svg", "pdf", "html")
#: the MIME type JupyterLab 4 draws natively (Vega-Lite 5)
VEGALITE_MIME = "application/vnd.vegalite.v5+json"
#: the ``$schema`` of a spec shown in a notebook: the major version, which any JupyterLab 4 renderer satisfies
NOTEBOOK_VL_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_DEBIAN_CJK = ("/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/noto")
_registered: list[str] = []
_lock = threading.Lock()


def cjk_font_directories() -> list[Path]:
    """Folders holding CJK fonts: the justmytype-intl-cjk wheel's, then Debian's fonts-noto-cjk."""
    out = []
    try:
        import justmytype_intl_cjk

        d = Path(justmytype_intl_cjk.__file__).parent / "fonts"
        if d.is_dir():
            out.append(d)
    except ImportError:
        pass
    for d in _DEBIAN_CJK:
        p = Path(d)
        if p.is_dir() and any(p.glob("*CJK*")):
            out.append(p)
    return out


def _font_cache_dir() -> Path:
    from semanscope_nb.settings import settings

    return settings.cache_dir / "fonts"


def regular_cjk_fonts() -> list[Path]:
    """Regular-weight (400) CJK font files, the face exported charts use.

    The justmytype-intl-cjk wheel ships *variable* fonts whose default instance is
    **Thin** (wght 100), and that is the face vl-convert's font database picks, so
    labels came out hairline-thin.  Debian's ``NotoSansCJK-Regular.ttc`` is used
    when installed; otherwise the wheel's Noto Sans SC (CJK ideographs and kana) is
    instanced at wght 400 with fontTools once and kept in the cache folder.

    >>> all(p.suffix in (".ttc", ".ttf", ".otf") for p in regular_cjk_fonts())
    True
    """
    for d in _DEBIAN_CJK:
        f = Path(d) / "NotoSansCJK-Regular.ttc"
        if f.is_file():
            return [f]
    out_dir = _font_cache_dir()
    found = []
    try:
        import justmytype_intl_cjk
    except ImportError:
        return []
    src_dir = Path(justmytype_intl_cjk.__file__).parent / "fonts" / "ofl"
    for name in ("notosanssc",):
        src = next(iter(sorted((src_dir / name).glob("*.ttf"))), None)
        if src is None:
            continue
        target = out_dir / f"{src.stem.split('[')[0]}-Regular-{src.stat().st_size}.ttf"
        if not target.is_file():
            try:
                from fontTools.ttLib import TTFont
                from fontTools.varLib import instancer
            except ImportError:
                return []
            font = TTFont(str(src))
            if "fvar" in font:
                font = instancer.instantiateVariableFont(font, {"wght": 400}, updateFontNames=True)
            out_dir.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            font.save(str(tmp))
            os.replace(tmp, target)
        found.append(target)
    return found


def register_cjk_fonts() -> list[str]:
    """Register a Regular-weight CJK font with vl-convert (once per process); returns the folders registered.

    Only a folder holding the Regular face is registered (see :func:`regular_cjk_fonts`),
    so the renderer cannot fall back to the Thin default of a variable font.  Falls back
    to the font folders themselves if no Regular face can be made.  Raises
    ``RuntimeError`` naming both routes if no CJK font is installed.
    """
    import vl_convert as vlc

    with _lock:
        if _registered:
            return list(_registered)
        regular = []
        try:
            regular = regular_cjk_fonts()
        except Exception:  # a damaged font or a read-only cache: fall back to the font folders
            regular = []
        if regular:
            link_dir = _font_cache_dir() / "registered"
            link_dir.mkdir(parents=True, exist_ok=True)
            for f in regular:
                link = link_dir / f.name
                if not link.exists():
                    try:
                        link.symlink_to(f)
                    except FileExistsError:  # another process made it
                        pass
                    except OSError:
                        import shutil

                        shutil.copyfile(f, link)
            dirs = [link_dir]
        else:
            dirs = cjk_font_directories()
        if not dirs:
            raise RuntimeError(
                "no CJK font found: `pip install justmytype-intl-cjk` (Noto Sans SC/TC/JP/KR) "
                "or `apt-get install fonts-noto-cjk`; without one, Chinese/Japanese labels export as empty boxes"
            )
        for d in dirs:
            vlc.register_font_directory(str(d))
            _registered.append(str(d))
        return list(_registered)


#: the sans-serif faces exports draw Latin text in: the first installed one is used (see :func:`export_font_family`)
LATIN_SANS = ("DejaVu Sans", "Liberation Sans")
_LATIN_FILES = {"DejaVu Sans": ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"),
                "Liberation Sans": ("LiberationSans-Regular.ttf", "LiberationSans-Bold.ttf")}
#: where resvg (vl-convert's renderer) finds system fonts on Linux
_SYSTEM_FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts")
#: runs of East Asian wide characters: CJK ideographs, kana, hangul, CJK punctuation and full-width forms
_CJK_CHARS = ("\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3200-\u9fff\ua960-\ua97f"
              "\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
#: a text cut into runs: CJK runs and the runs between them
_RUNS = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
_FACES: dict[tuple[str, int], Any] = {}


@functools.lru_cache(maxsize=1)
def _latin_face_files() -> tuple[str, tuple[Path, Path]] | None:
    """The first installed face of :data:`LATIN_SANS` and its regular and bold files, or None (looked up once a process)."""
    for family in LATIN_SANS:
        regular, bold = _LATIN_FILES[family]
        for d in _SYSTEM_FONT_DIRS:
            root = Path(d).expanduser()
            if not root.is_dir():
                continue
            found = {f.name: f for f in root.rglob("*.ttf") if f.name in (regular, bold)}
            if regular in found:
                return family, (found[regular], found.get(bold, found[regular]))
    return None


def cjk_family() -> str | None:
    """The family name of the Regular CJK face exports draw CJK runs in (None when no CJK face is installed).

    >>> cjk_family() in (None, "Noto Sans CJK SC", "Noto Sans SC")
    True
    """
    fonts = regular_cjk_fonts()
    return _family_of(str(fonts[0])) if fonts else None


@functools.lru_cache(maxsize=8)
def _family_of(path: str) -> str:
    """The family name of a font file (of a collection: "Noto Sans CJK SC" when it holds that face); read once."""
    from fontTools.ttLib import TTCollection, TTFont

    faces = TTCollection(path, lazy=True).fonts if path.endswith(".ttc") else [TTFont(path, lazy=True)]
    names = [str(face["name"].getDebugName(1)) for face in faces]
    return "Noto Sans CJK SC" if "Noto Sans CJK SC" in names else names[0]


def export_font_family() -> str:
    """The font list an exported chart's text uses: the installed Latin sans face, the CJK sans face, ``sans-serif``.

    >>> export_font_family().endswith("sans-serif")
    True
    """
    latin = _latin_face_files()
    try:
        cjk = cjk_family()
    except Exception:  # an unreadable font file: no CJK face named
        cjk = None
    return ", ".join([*([latin[0]] if latin else []), *([cjk] if cjk else []), "sans-serif"])


def _face(path: Path, number: int = 0) -> Any:
    """(units per em, cmap, advance widths) of one font face, read once per process."""
    key = (str(path), number)
    if key not in _FACES:
        from fontTools.ttLib import TTFont

        font = TTFont(str(path), fontNumber=number, lazy=True)
        _FACES[key] = (font["head"].unitsPerEm, font.getBestCmap(), {g: a for g, (a, _) in font["hmtx"].metrics.items()})
    return _FACES[key]


def _advance(text: str, size: float, path: Path) -> float:
    """The advance width (px) of ``text`` at ``size`` px in the face at ``path`` (no kerning: labels are short)."""
    upem, cmap, widths = _face(path)
    default = widths.get(".notdef", upem // 2)
    return sum(widths.get(cmap.get(ord(c), ".notdef"), default) for c in text) * size / upem


def _with_export_font(spec: dict) -> dict:
    """``spec`` with ``config.font`` set to :func:`export_font_family` unless the chart names its own font."""
    config = dict(spec.get("config") or {})
    if "font" in config:
        return spec
    config["font"] = export_font_family()
    return {**spec, "config": config}


def split_cjk_runs(svg: str) -> str:
    """``svg`` with every run of CJK characters in its own ``<text>`` in the CJK face (see the module doc).

    A text of only CJK characters keeps its element and gets the CJK face's family
    first; a mixed text becomes one ``<text>`` per run, each placed after the one
    before by its advance width (``text-anchor`` start, middle and end are kept).
    Latin-only texts are left as they are.  Without an installed Latin or CJK face
    the SVG is returned unchanged.

    >>> svg = ('<svg xmlns="http://www.w3.org/2000/svg"><text text-anchor="start" transform="translate(5,20)" '
    ...        'font-family="DejaVu Sans, sans-serif" font-size="11px">Frost 霜</text></svg>')
    >>> out = split_cjk_runs(svg)
    >>> out.count("<text") in (1, 2)  # 2 where DejaVu Sans and a CJK face are installed
    True
    """
    import html as _html

    if not _CJK_RUN.search(svg):
        return svg
    latin = _latin_face_files()
    fonts = regular_cjk_fonts()
    family = cjk_family() if fonts else None
    if latin is None or family is None:
        return svg
    cjk_list = f"{family}, sans-serif"

    def attr(attrs: str, name: str) -> str | None:
        m = re.search(rf'\s{name}="([^"]*)"', attrs)
        return m.group(1) if m else None

    def set_attr(attrs: str, name: str, value: str) -> str:
        if attr(attrs, name) is None:
            return f'{attrs} {name}="{value}"'
        return re.sub(rf'(\s{name}=)"[^"]*"', lambda m: f'{m.group(1)}"{value}"', attrs, count=1)

    def one_line(attrs: str, text: str, y: float) -> str:
        at_y = f' y="{y:g}"' if y else ""
        runs = [(run, bool(_CJK_RUN.fullmatch(run))) for run in _RUNS.findall(text)]
        if not any(is_cjk for _, is_cjk in runs):
            return f"<text{attrs}{at_y}>{_html.escape(text, quote=False)}</text>"
        if len(runs) == 1:
            return f"<text{set_attr(attrs, 'font-family', cjk_list)}{at_y}>{_html.escape(text, quote=False)}</text>"
        size = float(re.sub(r"[^0-9.]", "", attr(attrs, "font-size") or "10") or 10)
        bold = (attr(attrs, "font-weight") or "") in ("bold", "600", "700", "800", "900")
        latin_file = latin[1][1] if bold else latin[1][0]
        widths = [_advance(run, size, fonts[0] if is_cjk else latin_file) for run, is_cjk in runs]
        anchor = attr(attrs, "text-anchor") or "start"
        x = {"middle": -sum(widths) / 2, "end": -sum(widths)}.get(anchor, 0.0)
        base = set_attr(attrs, "text-anchor", "start")
        out = []
        for (run, is_cjk), w in zip(runs, widths):
            a = set_attr(base, "font-family", cjk_list) if is_cjk else base
            lead = run[: len(run) - len(run.lstrip())]  # SVG drops an element's leading spaces: step over them
            start = x + (_advance(lead, size, latin_file) if lead else 0.0)
            if run.strip():
                out.append(f'<text{a} x="{start:.2f}"{at_y}>{_html.escape(run.strip(), quote=False)}</text>')
            x += w
        return "".join(out)

    def element(m: "re.Match[str]") -> str:
        attrs, body = m.group(1), m.group(2)
        if not _CJK_RUN.search(_html.unescape(body)):
            return m.group(0)
        if "<tspan" not in body:
            return one_line(attrs, _html.unescape(body), 0.0)
        # Vega's multi-line text: <tspan>line</tspan><tspan x="0" dy="14">line</tspan>...
        out, y = [], 0.0
        for k, line in enumerate(re.finditer(r"<tspan([^>]*)>(.*?)</tspan>", body, flags=re.S)):
            dy = attr(line.group(1), "dy")
            y += float(dy) if (k and dy) else 0.0
            out.append(one_line(attrs, _html.unescape(line.group(2)), y))
        return "".join(out)

    return re.sub(r"<text\b([^>]*)>(.*?)</text>", element, svg, flags=re.S)


def export_svg(chart: Any) -> str:
    """The chart as SVG for export: the export font list (:func:`export_font_family`) and CJK runs split out.

    PNG and PDF exports are rendered from this SVG, so all three draw the same faces.  Control, bidi and
    invisible characters in its texts are drawn as their escapes (:func:`~semanscope_nb.provenance.visible_text`).

    >>> import altair as alt
    >>> c = alt.Chart(alt.InlineData(values=[{"w": "frost"}])).mark_text().encode(text="w:N")
    >>> 'font-family="DejaVu Sans' in export_svg(c) or _latin_face_files() is None
    True
    """
    import vl_convert as vlc

    # a word or title holding a bidi override or a control character is drawn with it visible (\u202e), not obeyed;
    # and vl-convert aborts the whole process (a Rust panic, no exception) on a C0 control in a text it draws
    spec = visible_spec(_with_export_font(_spec(chart)))
    return split_cjk_runs(vlc.vegalite_to_svg(spec, vl_version=_vl_version()))


def visible_spec(obj: Any) -> Any:
    r"""A copy of ``obj`` (a spec) whose every string and key is :func:`visible_text` (newlines and tabs kept).

    Only for what is drawn (an export, the report's charts): the chart and its data keep the words exact.  Keys
    too, so a field named by a user still matches its encoding.

    >>> visible_spec({"w\u202e": ["a\x1bb", 1, {"t": "x\ny"}]})
    {'w\\u202e': ['a\\u001bb', 1, {'t': 'x\ny'}]}
    """
    if isinstance(obj, str):
        return visible_text(obj, keep="\n\t")
    if isinstance(obj, dict):
        return {(visible_text(k, keep="\n\t") if isinstance(k, str) else k): visible_spec(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [visible_spec(v) for v in obj]
    return obj


def embed_svg_fonts(svg: str) -> str:
    """The SVG with the Regular CJK face embedded (subset to the CJK characters used) as an ``@font-face``.

    The file then shows the same glyphs on a machine without CJK fonts.  Only the CJK
    runs (split out by :func:`split_cjk_runs`) name the embedded face first; Latin
    text keeps its sans-serif family.  Returns the SVG unchanged when it holds no CJK
    text or no Regular face is available.

    >>> embed_svg_fonts('<svg xmlns="http://www.w3.org/2000/svg"><text>a</text></svg>').count("@font-face")
    0
    """
    import base64
    import html as _html
    import io

    texts = "".join(_html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S))
    chars = sorted({c for c in texts if _CJK_RUN.fullmatch(c)})
    fonts = regular_cjk_fonts() if chars else []
    family = cjk_family() if fonts else None
    if not fonts or family is None:
        return svg
    svg = split_cjk_runs(svg)  # no change if it was split already
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(fonts[0]), fontNumber=0)
    opts = subset.Options()
    opts.layout_features, opts.name_IDs, opts.notdef_outline = ["*"], ["*"], True
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=[ord(c) for c in chars])
    sub.subset(font)
    buf = io.BytesIO()
    font.flavor = None
    font.save(buf)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    style = "<defs><style>@font-face{font-family:'snb-cjk';src:url(data:font/ttf;base64," + data + ") format('truetype');}</style></defs>"
    svg = svg.replace(f'font-family="{family}, sans-serif"', f'font-family="snb-cjk, {family}, sans-serif"')
    return re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + style, svg, count=1)


def _spec(chart: Any) -> dict:
    return chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)


def _vl_version() -> str:
    import altair as alt

    return alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]  # e.g. "5.20"


#: what may not appear raw inside a ``<script>`` element: ``</script`` ends it, ``<!--`` switches the HTML
#: tokenizer into its escaped state, U+2028/2029 end a line in older JavaScript; ``&`` and ``>`` for symmetry.
#: The control, bidi and invisible characters of :data:`~semanscope_nb.provenance.INVISIBLE_CHARS` are escaped
#: too (by :func:`script_json`): the same string to ``JSON.parse``, but none raw in the page's source
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(obj: Any) -> str:
    """``obj`` as JSON that is inert inside an HTML ``<script>`` element, whatever its strings hold.

    Every ``<``, ``>``, ``&``, U+2028 and U+2029 becomes its ``\\uXXXX`` escape, which
    JSON and JavaScript read back as the same character: a label
    ``</script><script>alert(1)</script>`` stays a string of the chart (the
    escaping happens here, at the boundary; the words themselves are not changed).
    So does every control, bidi or invisible character
    (:func:`~semanscope_nb.provenance.visible_text`; JSON text only holds them inside strings).

    >>> script_json({"w": "</script><!--"})
    '{"w": "\\\\u003c/script\\\\u003e\\\\u003c!--"}'
    >>> import json; json.loads(script_json({"w": "</script>"}))["w"]
    '</script>'
    """
    import json

    from semanscope_nb.provenance import json_ready

    text = json.dumps(json_ready(obj), ensure_ascii=False, allow_nan=False)  # NaN -> null: JSON.parse reads it
    return visible_text("".join(_SCRIPT_ESCAPES.get(c, c) for c in text))


_BUNDLES: dict[str, str] = {}


def _javascript_bundle(vl_version: str) -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (vl-convert builds it; kept per version, in memory and on disk).

    Building the bundle takes seconds, so it is also kept in ``settings.cache_dir/vega-bundles`` keyed by the
    vl-convert and Vega-Lite versions (written atomically; an unwritable cache folder only means no disk copy).
    """
    import vl_convert as vlc

    with _lock:
        if vl_version not in _BUNDLES:
            from semanscope_nb.settings import settings

            path = Path(settings.cache_dir) / "vega-bundles" / safe_name(f"vl-convert-{getattr(vlc, '__version__', '?')}-vl-{vl_version}.js")
            # a file that cannot be read now is never replaced; absent or not a bundle: built (and kept)
            bundle = kept_text(path, sound=lambda text: "vegaEmbed" in text,
                               build=lambda: vlc.javascript_bundle(vl_version=vl_version))
            if "</script" in bundle.lower():  # would end the element early: refuse rather than write a broken page
                raise RuntimeError("vl-convert's JavaScript bundle holds '</script': it cannot be inlined")
            _BUNDLES[vl_version] = bundle
        return _BUNDLES[vl_version]


def chart_to_html(chart: Any, *, title: str = "semanscope chart") -> str:
    """A self-contained HTML page: Vega, Vega-Lite and vega-embed inlined (no CDN, no network).

    The page is inert whatever the chart's strings hold: the spec sits in a
    ``<script type="application/json">`` element through :func:`script_json`, and
    the title is HTML-escaped, so a dataset word such as
    ``</script><script>alert(1)</script>`` is drawn as a label and never runs.

    >>> import altair as alt
    >>> c = alt.Chart(alt.InlineData(values=[{"w": "</script><script>alert(1)</script>"}])).mark_text().encode(text="w:N")
    >>> page = chart_to_html(c, title="<b>x</b>")
    >>> "<script>alert(1)" in page, "<title>&lt;b&gt;x&lt;/b&gt;</title>" in page
    (False, True)
    """
    import html as _html

    spec = script_json(_spec(chart))
    bundle = _javascript_bundle(_vl_version())
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n"
        f"<title>{_html.escape(visible_text(title))}</title>\n"
        "<style>#vega-chart.vega-embed { width: 100%; display: flex; }</style>\n"
        f'<script type="text/javascript">{bundle}</script>\n'
        "</head>\n<body>\n<div id=\"vega-chart\"></div>\n"
        f'<script type="application/json" id="vega-spec">{spec}</script>\n'
        '<script type="text/javascript">\n'
        "vegaEmbed('#vega-chart', JSON.parse(document.getElementById('vega-spec').textContent), "
        '{"renderer": "svg"}).catch(console.error);\n'
        "</script>\n</body>\n</html>\n"
    )


def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (from the installed vl-convert, as :func:`chart_to_html`; no CDN).

    Sets ``window.vegaEmbed``; it holds no ``</script`` (refused otherwise), so it can sit in a ``<script>`` element.
    """
    return _javascript_bundle(_vl_version())


def save_chart(
    chart: Any,
    path: str | os.PathLike,
    *,
    format: Literal["png", "svg", "pdf", "html"] | None = None,
    scale: float = 2.0,
    cjk: bool = True,
    svg_fonts: Literal["system", "embed"] = "system",
) -> Path:
    """Save ``chart`` to ``path`` (format from the suffix unless given); written atomically.

    PNG/SVG/PDF via vl-convert; HTML is self-contained (inline JavaScript).
    ``cjk=True`` registers the Regular CJK face first, so Chinese/Japanese render as glyphs.
    ``svg_fonts="embed"`` embeds that face (subset to the characters used) in an SVG.
    """
    import vl_convert as vlc

    path = Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot save '{path}': format must be one of {FORMATS}, got '{fmt}'")
    if cjk and fmt in ("png", "pdf", "svg"):
        try:
            register_cjk_fonts()
        except RuntimeError:
            pass  # export still works; CJK glyphs may be boxes (the error message says how to fix it)
    spec = _spec(chart)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        return atomic_write_text(path, chart_to_html(chart, title=path.stem))
    svg = export_svg(spec)  # PNG and PDF are drawn from this SVG: the same faces in every format
    if fmt == "svg":
        return atomic_write_text(path, embed_svg_fonts(svg) if svg_fonts == "embed" else svg)
    data = vlc.svg_to_png(svg, scale=scale) if fmt == "png" else vlc.svg_to_pdf(svg)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


_MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html"}


def chart_bytes(chart: Any, format: Literal["png", "svg", "pdf", "html"] = "png", *, scale: float = 2.0,
                cjk: bool = True, svg_fonts: Literal["system", "embed"] = "system") -> bytes:
    """The chart as the bytes of a PNG, SVG, PDF or self-contained HTML file (nothing is written).

    >>> import altair as alt
    >>> c = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    >>> chart_bytes(c, "svg")[:4]
    b'<svg'
    """
    import vl_convert as vlc

    fmt = format.lower()
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got '{format}'")
    if cjk and fmt in ("png", "pdf", "svg"):
        try:
            register_cjk_fonts()
        except RuntimeError:
            pass  # export still works; CJK glyphs may be boxes
    spec = _spec(chart)
    if fmt == "html":
        return chart_to_html(chart).encode("utf-8")
    svg = export_svg(spec)  # PNG and PDF are drawn from this SVG: the same faces in every format
    if fmt == "svg":
        return (embed_svg_fonts(svg) if svg_fonts == "embed" else svg).encode("utf-8")
    return vlc.svg_to_png(svg, scale=scale) if fmt == "png" else vlc.svg_to_pdf(svg)


def download_link(chart: Any, format: Literal["png", "svg", "pdf", "html"] = "png", *, filename: str = "chart",
                  label: str | None = None, svg_fonts: Literal["system", "embed"] = "system") -> str:
    """An HTML ``<a download>`` link holding the chart as a ``data:`` URI: a download button that needs no server.

    Put it in an ``ipywidgets.HTML`` (or ``IPython.display.HTML``); the browser
    saves ``<filename>.<format>`` when clicked, offline.  ``svg_fonts="embed"``: an SVG
    carries its CJK face (see :func:`chart_bytes`).

    >>> import altair as alt
    >>> c = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    >>> download_link(c, "svg", filename="bars").startswith('<a download="bars.svg" href="data:image/svg+xml;base64,')
    True
    """
    import base64
    import html

    fmt = format.lower()
    data = base64.b64encode(chart_bytes(chart, fmt, svg_fonts=svg_fonts)).decode("ascii")  # type: ignore[arg-type]
    name = html.escape(f"{safe_name(filename, what='filename')}.{fmt}", quote=True)  # a file name, never a path
    text = html.escape(visible_text(label or f"download {fmt.upper()}"))
    return f'<a download="{name}" href="data:{_MIME[fmt]};base64,{data}">{text}</a>'


def save_figures(
    charts: dict[str, Any], folder: str | os.PathLike, *, formats: Sequence[str] = ("png", "svg", "pdf", "html")
) -> list[Path]:
    """Save each named chart in every format into ``folder`` (``<name>.<format>``); returns the paths.

    Each file name is built from the chart's name by
    :func:`semanscope_nb.provenance.safe_name` and stays inside ``folder``
    (``"../x"`` becomes ``_.._x.png`` there); two names that would give the same
    file are refused before anything is written.

    >>> import altair as alt, tempfile
    >>> c = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    >>> [p.name for p in save_figures({"../../escape": c}, tempfile.mkdtemp(), formats=["svg"])]
    ['_.._.._escape.svg']
    """
    bad = [f for f in formats if str(f).lower() not in FORMATS]
    if bad:
        raise ValueError(f"formats: {bad} are not among {FORMATS}")
    targets: dict[Path, str] = {}
    for name in charts:
        for fmt in formats:
            what = f"figure name {name!r}"
            path = ensure_inside(folder, Path(folder) / f"{safe_name(name, what=what)}.{str(fmt).lower()}", what=what)
            if path in targets and targets[path] != name:
                raise ValueError(f"figure names {targets[path]!r} and {name!r} would both be saved as '{path.name}'; rename one")
            targets[path] = name
    out = []
    for path, name in targets.items():
        out.append(save_chart(charts[name], path, format=path.suffix.lstrip(".")))  # type: ignore[arg-type]
    return out


def notebook_spec(spec: dict) -> dict:
    """A copy of ``spec`` stamped for JupyterLab's renderer (:data:`NOTEBOOK_VL_SCHEMA`; see the module doc).

    >>> notebook_spec({"$schema": "https://vega.github.io/schema/vega-lite/v5.20.1.json", "mark": "point"})["$schema"]
    'https://vega.github.io/schema/vega-lite/v5.json'
    """
    return {**spec, "$schema": NOTEBOOK_VL_SCHEMA}


def notebook_output(spec: dict, *, text: str = "<chart>", renderer: str = "svg") -> dict:
    """One ``display_data`` output holding ``spec`` for JupyterLab's Vega-Lite renderer (for ``ipywidgets.Output.outputs``).

    >>> notebook_output({"mark": "point"})["data"]["application/vnd.vegalite.v5+json"]["$schema"].endswith("/v5.json")
    True
    """
    return {"output_type": "display_data", "data": {VEGALITE_MIME: notebook_spec(spec), "text/plain": text},
            "metadata": {VEGALITE_MIME: {"embed_options": {"renderer": renderer, "actions": False}}}}


def _semanscope_renderer(spec: dict, **metadata: Any) -> tuple[dict, dict]:
    """Altair's ``mimetype`` output, stamped with :data:`NOTEBOOK_VL_SCHEMA`."""
    return {VEGALITE_MIME: notebook_spec(spec), "text/plain": "<VegaLite 5 object>"}, {VEGALITE_MIME: metadata} if metadata else {}


def setup_notebook(*, max_rows: int | None = None) -> str:
    """Render Altair charts offline in JupyterLab 4 / Notebook 7: enable the ``semanscope`` renderer.

    JupyterLab's built-in Vega extension draws the ``application/vnd.vegalite.v5+json``
    output, with no network and no version warning (see the module doc).  Returns
    the active renderer name.  ``max_rows`` also lifts Altair's row guard for
    *your own* DataFrame charts (ours embed inline data and need no change).
    """
    import altair as alt

    if "semanscope" not in alt.renderers.names():
        alt.renderers.register("semanscope", _semanscope_renderer)
    alt.renderers.enable("semanscope")
    if max_rows is not None:
        alt.data_transformers.enable("default", max_rows=max_rows)
    return alt.renderers.active
