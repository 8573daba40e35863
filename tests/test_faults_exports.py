"""Issue 20: every export is inert.  Hostile dataset words open in headless Debian chromium and no script runs.

Each export kind is written with words that try to break out of their context (a ``<script>``
element, an attribute, text, an HTML comment, a JavaScript line break) and opened in the
system chromium (Playwright drives it; ``playwright install`` is never run) with every request
that is not a local file aborted.  A payload that ran would set ``window.__pwned`` or open an
``alert`` dialog: the test asserts neither happened, and that the hostile words are on the page
as text (so the page did render them, and the check is not vacuous).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pandas as pd
import pytest

CHROMIUM = "/usr/bin/chromium"

#: words a dataset may hold: each would run script if pasted raw into its context
HOSTILE = [
    "</script><script>window.__pwned=1;alert(1)</script>",
    "<img src=x onerror=\"window.__pwned=2;alert(2)\">",
    "<!--<script>window.__pwned=3</script>",
    "\"><svg onload=\"window.__pwned=4\">",
    "a\u2028b\u2029c</SCRIPT ><script>window.__pwned=5</script>",
]
VISIBLE = "alert(1)"  # the first payload's text must appear on the rendered page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            yield b
        finally:
            b.close()


def _open(browser, url: str, *, wait_for: str | None) -> dict:
    """Open ``url`` offline; return the dialogs, the flag, the blocked requests and the page text."""
    page = browser.new_page()
    dialogs: list[str] = []
    blocked: list[str] = []
    errors: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: errors.append(str(e)))

    def abort(route):
        blocked.append(route.request.url)
        route.abort()

    page.route(re.compile(r"^(?!file:|data:|about:|blob:)"), abort)
    try:
        page.goto(url, wait_until="load")
        rendered = True
        if wait_for:
            try:
                page.wait_for_selector(wait_for, timeout=20_000)
            except Exception:  # checked after the payload checks, so a payload that ran is named first
                rendered = False
        page.wait_for_timeout(500)  # an onerror / onload handler would have fired by now
        return {"dialogs": dialogs, "pwned": page.evaluate("() => window.__pwned === undefined ? null : window.__pwned"),
                "blocked": blocked, "errors": errors, "rendered": rendered,
                "text": page.evaluate("() => document.documentElement.textContent")}
    finally:
        page.close()


def _assert_inert(seen: dict, what: str) -> None:
    assert seen["dialogs"] == [], f"{what}: a payload opened a dialog: {seen['dialogs']}"
    assert seen["pwned"] is None, f"{what}: a payload ran (window.__pwned = {seen['pwned']})"
    assert seen["rendered"], f"{what}: the page did not draw (page errors: {seen['errors'][:3]})"
    assert VISIBLE in seen["text"], f"{what}: the hostile word is not on the page, so the check proves nothing"


@pytest.fixture(scope="module")
def hostile():
    """A dataset whose words are the payloads, its SA and a PCA map (random vectors: only the strings matter)."""
    from semanscope_nb.data.words import dataset_from_frame
    from semanscope_nb.models.embedded import embed
    from semanscope_nb.runs.tasks import run_task

    en = HOSTILE + ["water", "fire", "sun", "moon", "tree"]
    de = [f"{w} de" for w in HOSTILE] + ["Wasser", "Feuer", "Sonne", "Mond", "Baum"]
    ds = dataset_from_frame(pd.DataFrame({"english": en, "german": de}), name=HOSTILE[0])
    emb = embed(ds, "random-null", cache=False)
    return ds, run_task("sa", emb, n_boot=20), run_task("projection", emb, method="pca", projection_cache=False)


def _bars():
    import altair as alt

    rows = [{"w": w, "v": i + 1} for i, w in enumerate(HOSTILE)]
    bars = alt.Chart(alt.InlineData(values=rows)).mark_bar().encode(x=alt.X("w:N", title=HOSTILE[1]), y="v:Q",
                                                                      tooltip=["w:N"])
    text = bars.mark_text(dy=-8, limit=0).encode(text="w:N")
    return (bars + text).properties(title=HOSTILE[0], width=500)


def test_chart_to_html_and_save_chart_html_run_no_dataset_script(browser, tmp_path):
    from semanscope_nb.plots.export import chart_to_html, save_chart

    page = tmp_path / "bars-by-hand.html"
    page.write_text(chart_to_html(_bars(), title=HOSTILE[0]), encoding="utf-8")
    _assert_inert(_open(browser, page.as_uri(), wait_for="#vega-chart svg"), "chart_to_html")
    saved = save_chart(_bars(), tmp_path / "bars.html")
    seen = _open(browser, saved.as_uri(), wait_for="#vega-chart svg")
    _assert_inert(seen, "save_chart(..., 'x.html')")
    assert seen["blocked"] == [] and seen["errors"] == [], (seen["blocked"], seen["errors"])


def test_html_alignment_map_with_hostile_words_is_inert(browser, hostile, tmp_path):
    from semanscope_nb.plots import maps
    from semanscope_nb.plots.export import save_chart

    ds, result, projection = hostile
    chart = maps.alignment_map(projection, result, dataset=ds, navigate=True, labels=True, worst_concepts=5,
                               selected_concepts=[maps.row_label(ds.rows[0])])
    path = save_chart(chart, tmp_path / "map.html")
    _assert_inert(_open(browser, path.as_uri(), wait_for="#vega-chart svg"), "alignment map (HTML)")


def test_download_links_and_their_pages_are_inert(browser, tmp_path):
    from semanscope_nb.plots.export import download_link

    for fmt in ("html", "svg"):
        link = download_link(_bars(), fmt, filename=HOSTILE[3], label=HOSTILE[1] + " " + VISIBLE)
        holder = tmp_path / f"links-{fmt}.html"
        holder.write_text(f"<!DOCTYPE html><html><body>{link}</body></html>", encoding="utf-8")
        seen = _open(browser, holder.as_uri(), wait_for="a[download]")
        _assert_inert(seen, f"the {fmt} download link")
        body = base64.b64decode(re.search(r'base64,([^"]+)"', link).group(1))
        saved = tmp_path / f"downloaded.{fmt}"  # what the browser saves when the link is clicked
        saved.write_bytes(body)
        _assert_inert(_open(browser, saved.as_uri(), wait_for="#vega-chart svg" if fmt == "html" else "svg"),
                      f"the downloaded {fmt} file")


def test_svg_export_and_the_leaderboard_table_are_inert(browser, tmp_path):
    from semanscope_nb.plots.export import save_chart
    from semanscope_nb.plots.leaderboard import leaderboard_table

    svg = save_chart(_bars(), tmp_path / "bars.svg", cjk=False)
    _assert_inert(_open(browser, svg.as_uri(), wait_for="svg"), "SVG export")
    table = pd.DataFrame({"model": [HOSTILE[0], HOSTILE[1]], "dataset": [HOSTILE[2], HOSTILE[2]],
                          "sa_cosine": [0.7, 0.6], "sem_cosine": [0.01, 0.02]})
    page = tmp_path / "leaderboard.html"
    page.write_text(leaderboard_table(table, caption=HOSTILE[3]).to_html(), encoding="utf-8")
    _assert_inert(_open(browser, page.as_uri(), wait_for="table"), "leaderboard_table(...).to_html()")
