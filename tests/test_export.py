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
def a_map():
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(25))
    emb = snb.embed(ds, "random-null", cache=False)
    r = snb.run_task("sa", emb, n_boot=50)
    p = snb.run_task("projection", emb, method="pca", projection_cache=False)
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
