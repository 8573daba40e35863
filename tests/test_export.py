"""Export: PNG/SVG/PDF via vl-convert, self-contained HTML, CJK glyphs, the offline notebook renderer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.plots import export, maps


def _text_chart(text: str, size: int = 64):
    import altair as alt

    return (alt.Chart(alt.InlineData(values=[{"t": text}])).mark_text(fontSize=size)
            .encode(text="t:N").properties(width=120, height=100))


def _pixels(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("L"))


@pytest.fixture(scope="module")
def en_zh_parts():
    """(dataset, SA result, PCA projection): 25 conceptual-space concepts in en and zh, random-null vectors."""
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(25))
    emb = snb.embed(ds, "random-null", cache=False)
    r = snb.run_task("sa", emb, n_boot=50)
    p = snb.run_task("projection", emb, method="pca", projection_cache=False)
    return ds, r, p


@pytest.fixture(scope="module")
def a_map(en_zh_parts):
    ds, r, p = en_zh_parts
    return maps.alignment_map(p, r, dataset=ds, labels=True)


def test_every_format_is_written_and_non_trivial(a_map, tmp_path):
    paths = snb.plots.save_figures({"map": a_map}, tmp_path)
    assert sorted(p.suffix for p in paths) == [".html", ".pdf", ".png", ".svg"]
    png = (tmp_path / "map.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    img = _pixels(tmp_path / "map.png")
    assert img.shape[0] > 400 and (img < 200).mean() > 0.01  # something is drawn
    assert (tmp_path / "map.pdf").read_bytes()[:5] == b"%PDF-" and (tmp_path / "map.pdf").stat().st_size > 10_000
    svg = (tmp_path / "map.svg").read_text()
    assert svg.startswith("<svg") and "SA cosine" in svg
    assert not list(tmp_path.glob(".*.tmp"))


def test_html_is_self_contained(a_map, tmp_path):
    html = snb.save_chart(a_map, tmp_path / "map.html").read_text()
    assert not re.search(r"<script[^>]+src=\"https?://", html), "the page loads JavaScript from the network"
    assert "cdn.jsdelivr" not in html and len(html) > 500_000  # Vega, Vega-Lite, vega-embed inlined
    assert "SA cosine" in html


def test_cjk_renders_as_glyphs(tmp_path):
    dirs = export.register_cjk_fonts()
    # the folder registered holds a Regular-weight CJK face (Debian's Noto Sans CJK, or the wheel's Noto Sans SC at wght 400)
    faces = [f.name for d in dirs for f in Path(d).iterdir()]
    assert any("Regular" in name and ("NotoSansCJK" in name or "NotoSansSC" in name) for name in faces), faces
    assert export.register_cjk_fonts() == dirs  # once per process
    water, fire, latin = (tmp_path / "water.png", tmp_path / "fire.png", tmp_path / "latin.png")
    snb.save_chart(_text_chart("水"), water)
    snb.save_chart(_text_chart("火"), fire)
    snb.save_chart(_text_chart("AB"), latin)
    a, b = _pixels(water), _pixels(fire)
    ink_a, ink_b = (a < 128).sum(), (b < 128).sum()
    # missing-glyph boxes would be identical for both characters; real glyphs differ in shape and ink
    assert ink_a > 200 and ink_b > 200
    assert (a != b).sum() > 300 and abs(int(ink_a) - int(ink_b)) > 10
    # a PDF keeps the glyphs too (the font is embedded)
    pdf = snb.save_chart(_text_chart("水火"), tmp_path / "cjk.pdf").read_bytes()
    assert b"FontFile" in pdf or b"/Font" in pdf


def test_bad_format_is_named(a_map, tmp_path):
    with pytest.raises(ValueError, match=r"cannot save '.*map\.jpeg': format must be one of"):
        snb.save_chart(a_map, tmp_path / "map.jpeg")


def test_setup_notebook_uses_jupyterlabs_builtin_renderer():
    import altair as alt

    before = alt.renderers.active
    try:
        assert snb.setup_notebook() == "semanscope"
        bundle = alt.renderers.get()(a_spec := _text_chart("x").to_dict())
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        assert "application/vnd.vegalite.v5+json" in data  # JupyterLab 4 renders this MIME type itself
        assert not any("html" in k for k in data)  # no HTML that would fetch Vega from a CDN
        assert a_spec["$schema"].endswith("v5.20.1.json")  # Altair's exact version stays in exports
        # the notebook copy names the major version only: JupyterLab's Vega-Lite 5.6.1 satisfies "^5" (no warning)
        shown = data["application/vnd.vegalite.v5+json"]["$schema"]
        assert shown == "https://vega.github.io/schema/vega-lite/v5.json"
        assert {k: v for k, v in data["application/vnd.vegalite.v5+json"].items() if k != "$schema"} == {
            k: v for k, v in a_spec.items() if k != "$schema"}
    finally:
        alt.renderers.enable(before)


# ---------------------------------------------------------------- one sans-serif face per script (issue 24)

_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")  # kana, ideographs, hangul: the test's own CJK test


def _pdf_font_names(pdf: bytes) -> set[str]:
    """The ``/BaseFont`` names of a PDF: a small reader of its own, also inside Flate-compressed (object) streams."""
    import zlib

    chunks = [pdf]
    for m in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, flags=re.S):
        try:
            chunks.append(zlib.decompress(m.group(1)))
        except zlib.error:
            pass  # an image or a stream of another filter
    return {n.decode("latin-1").split("+", 1)[-1] for c in chunks for n in re.findall(rb"/BaseFont\s*/([^\s/<>\[\]()]+)", c)}


def _svg_texts(svg: str) -> list[tuple[str, str]]:
    """(font-family, text) of every ``<text>`` element of an SVG."""
    import html

    out = []
    for attrs, body in re.findall(r"<text\b([^>]*)>(.*?)</text>", svg, flags=re.S):
        family = re.search(r'font-family="([^"]*)"', attrs)
        out.append((family.group(1) if family else "", html.unescape(re.sub(r"<[^>]+>", "", body))))
    return out


@pytest.fixture(scope="module")
def en_zh_map(en_zh_parts):
    ds, r, p = en_zh_parts
    concepts = list(dict.fromkeys(maps.map_frame(p, result=r, dataset=ds)["concept"]))[:3]
    # a title mixing both scripts, and three concepts labelled in English and Chinese
    return maps.alignment_map(p, r, dataset=ds, selected_concepts=concepts, title=f"map of {concepts[0]}")


@pytest.mark.slow  # renders the map twice and subsets a CJK face (~3 s)
def test_svg_draws_latin_in_the_latin_sans_face_and_only_cjk_runs_in_the_cjk_face(en_zh_map):
    latin = export._latin_face_files()
    if latin is None or export.cjk_family() is None:
        pytest.skip("needs an installed Latin sans face (DejaVu Sans or Liberation Sans) and a CJK face")
    texts = _svg_texts(export.chart_bytes(en_zh_map, "svg").decode())
    cjk = [(f, t) for f, t in texts if _HAN.search(t)]
    latin_texts = [(f, t) for f, t in texts if re.search(r"[A-Za-z]", t)]
    assert len(cjk) >= 3 and len(latin_texts) >= 5, texts
    for family, text in latin_texts:  # every Latin run: the Latin sans face first, no CJK character in it
        assert family.split(",")[0].strip() == latin[0], (family, text)
        assert not _HAN.search(text), f"a Latin text element holds a CJK run: {text!r}"
    for family, text in cjk:  # every CJK run: its own element, in the CJK sans face, with no Latin letter
        assert family.split(",")[0].strip() == export.cjk_family(), (family, text)
        assert "Serif" not in family and not re.search(r"[A-Za-z]", text), (family, text)
    # the mixed title was cut into runs: its Latin part and its Chinese part are separate elements
    assert any(t.startswith("map of") for _, t in latin_texts)
    # embedding the CJK face renames only the CJK runs' family
    embedded = _svg_texts(export.chart_bytes(en_zh_map, "svg", svg_fonts="embed").decode())
    assert {f.split(",")[0] for f, t in embedded if _HAN.search(t)} == {"snb-cjk"}
    assert all(f.split(",")[0] == latin[0] for f, t in embedded if re.search(r"[A-Za-z]", t))


@pytest.mark.slow  # renders a PDF
def test_pdf_embeds_sans_faces_only_with_a_cjk_face(en_zh_map, tmp_path):
    if export._latin_face_files() is None or export.cjk_family() is None:
        pytest.skip("needs an installed Latin sans face and a CJK face")
    names = _pdf_font_names(snb.save_chart(en_zh_map, tmp_path / "map.pdf").read_bytes())
    assert names, "no font found in the PDF"
    assert not [n for n in names if "Serif" in n], f"a serif face is embedded: {sorted(names)}"
    assert any("CJK" in n and "Sans" in n for n in names), sorted(names)
    assert any(n.replace(" ", "").startswith(export._latin_face_files()[0].replace(" ", "")) for n in names), sorted(names)
