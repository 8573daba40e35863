"""The long browser visit of issue 24, shared by tests/test_browser.py (which asserts) and
bench/bench_panel_ux.py --browser (which records the timings).

A real JupyterLab and headless Debian chromium (:mod:`lab_browser`), a fresh embedding /
projection / SA cache folder (``SEMANSCOPE_CACHE`` and ``CACHE_DIR``: every model is uncached at
first), and a notebook whose panel cell is 01-explore's, except that it restores the panel with
``ExplorePanel.from_state`` when a saved state exists (so "Restart Kernel and Run All" is the
user's restart).  The visit, as a user makes it:

1. the first map (use-multilingual, en + zh);
2. three model changes in quick succession (only the last is shown);
3. Ctrl-click three more languages (de, fr, es: the rows the list shows) (fewer computations than clicks);
4. t-SNE chosen, Cancel pressed while it runs (the projection worker ends): CPU of the kernel and
   its children measured over ``CPU_WINDOW`` s after "cancelled"; PCA chosen;
5. an uncached model (multilingual-e5-small) chosen, Cancel pressed while it embeds, CPU measured;
   a new change (tfidf-char): the time until its computation starts and until it is shown;
6. back to use-multilingual (a switch to data the kernel holds);
7. typed tier thresholds that are not numbers, out of range and inverted (a message, the last
   valid value kept, nothing recomputed), then a slider drag (the tier label changes in place);
8. a worst-aligned concept clicked (selected and labelled on the map): the legend covers no point
   and no label, measured on the rendered SVG's boxes;
9. "Prepare downloads": the SVG carries the selected concept's labels; then the nearest other concept
   shift-clicked: the two concepts' labels placed apart jointly, in place (no refresh); its row again
   selects the first concept alone;
10. ``panel.save_state`` (through a second client of the same kernel), Restart Kernel and Run All:
    the panel comes back from the state with the same SA, thresholds and selection;
11. a model switch after the restart to data cached on disk.

:func:`long_visit` returns the measurements (seconds, CPU cores) and raises AssertionError when
the panel does not do what a step expects.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import nbformat
from lab_browser import guard_page, launch_chromium, open_notebook, restart_kernel_and_run_all, run_all, start_lab
from notebook_runner import NOTEBOOKS, inject_parameters, kernel_env

N_CONCEPTS = 120
N_BOOT = 200  # MIN_VERDICT_BOOT: fewer resamples give "undetermined", which no tier slider moves
CPU_WINDOW = 2.5  # seconds of kernel CPU measured after "cancelled"
STATE = "visit-state.json"
NOTEBOOK = "01-explore.ipynb"  # the same name, so enter_notebook_folder() keeps the lab folder

PANEL_CELL = """\
import os

import semanscope_nb as snb
from semanscope_nb.widgets import ExplorePanel

snb.setup_notebook()
STATE = {state!r}
# a saved state (the long visit saves one before restarting the kernel) comes back as it was
panel = (ExplorePanel.from_state(STATE, cache=CACHE_DIR) if os.path.exists(STATE) else
         ExplorePanel(model=MODEL, dataset=DATASET, languages=LANGUAGES, n_boot=N_BOOT,
                      max_concepts=MAX_CONCEPTS, folder=USER_FOLDER, cache=CACHE_DIR))
panel"""


def write_notebook(root: Path, cache_dir: Path) -> Path:
    """01-explore with the visit's parameters and a panel cell that restores a saved state."""
    nb = nbformat.read(NOTEBOOKS / "01-explore.ipynb", as_version=4)
    inject_parameters(nb, {"MAX_CONCEPTS": N_CONCEPTS, "N_BOOT": N_BOOT, "CACHE_DIR": str(cache_dir)})
    cell = next(c for c in nb.cells if c.cell_type == "code" and "panel = ExplorePanel(" in c.source)
    cell.source = PANEL_CELL.format(state=STATE)
    path = root / NOTEBOOK
    nbformat.write(nb, path)
    return path


# --------------------------------------------------------------------------- the kernel's processes
def kernel_process(lab_proc: Any) -> Any:
    """The ipykernel process JupyterLab started (psutil.Process)."""
    import psutil

    for _ in range(100):
        for c in psutil.Process(lab_proc.pid).children(recursive=True):
            try:
                if "ipykernel" in " ".join(c.cmdline()):
                    return c
            except psutil.Error:
                continue
        time.sleep(0.2)
    raise AssertionError("no ipykernel process under JupyterLab")


def cpu_rate(proc: Any, seconds: float) -> float:
    """CPU cores used by ``proc`` and its descendants (a projection worker) over the next ``seconds``."""
    import psutil

    def snap() -> dict[int, float]:
        out = {}
        for p in [proc, *proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except psutil.Error:
                pass
        return out

    a = snap()
    time.sleep(seconds)
    b = snap()
    return sum(v - a.get(pid, 0.0) for pid, v in b.items()) / seconds


def kernel_client(base: str, token: str, runtime: Path) -> Any:
    """A second client of the notebook's kernel (jupyter_client), to call the panel's methods as a user would in a cell."""
    from jupyter_client import BlockingKernelClient

    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as r:
        sessions = json.loads(r.read())
    kid = next(s["kernel"]["id"] for s in sessions if s["path"].endswith(NOTEBOOK))
    kc = BlockingKernelClient(connection_file=str(runtime / f"kernel-{kid}.json"))
    kc.load_connection_file()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return kc


def run_in_kernel(kc: Any, code: str) -> str:
    """Execute ``code`` in the kernel; its stdout, or AssertionError with the traceback."""
    out: list[str] = []
    errors: list[str] = []

    def hook(msg: dict) -> None:
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            errors.append("\n".join(msg["content"]["traceback"]))

    kc.execute_interactive(code, output_hook=hook, timeout=120)
    assert not errors, errors
    return "".join(out)


# --------------------------------------------------------------------------- the page
def _text(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def _count(page, name: str) -> int:
    return int(_text(page, f".snb-count-{name}"))


def _label_languages(label: str) -> list[str]:
    m = re.search(r"\(([a-zA-Z, -]+), \d+ concepts\)", label)
    assert m, label
    return [x.strip() for x in m.group(1).split(",")]


def wait_shown(page, *, model: str, want: str | None = None, charts_before: int | None = None,
               contains: str | None = None, refresh_is: int | None = None, timeout: int = 240_000) -> str:
    """Wait until the panel shows ``model``'s result (not stale; ``want`` in the label; a new chart); the label text."""
    try:
        page.wait_for_function(
            """([who, want, charts, contains, refresh]) => {
                 const l = document.querySelector('.snb-sa-label'); const c = document.querySelector('.snb-count-chart');
                 const r = document.querySelector('.snb-count-refresh');
                 return l && !l.classList.contains('snb-stale') && l.innerText.includes(who + ' on')
                        && (want === null || l.innerText.includes(want)) && (contains === null || l.innerText.includes(contains))
                        && (charts === null || (c && parseInt(c.innerText) > charts))
                        && (refresh === null || (r && parseInt(r.innerText) === refresh)); }""",
            arg=[model, want, charts_before, contains, refresh_is], timeout=timeout)
    except Exception:
        raise AssertionError(f"expected {model} ({want}); the panel shows: {_text(page, '.snb-sa-label')} | "
                             f"status: {_text(page, '.snb-status')} | message: {_text(page, '.snb-message')}") from None
    page.wait_for_selector(".snb-chart svg g.mark-symbol path", timeout=60_000)
    return _text(page, ".snb-sa-label")


def _select_model(page, model: str) -> None:
    labels = page.eval_on_selector(".snb-model-picker select", "s => Array.from(s.options).map(o => o.textContent)")
    page.locator(".snb-model-picker select").select_option(index=next(i for i, t in enumerate(labels) if f"[{model}]" in t))


def _wait_status(page, pattern: str, timeout: int = 120_000) -> float:
    """Wait until the status line matches ``pattern`` (a JS regex); the time.perf_counter() when seen."""
    page.wait_for_function("p => { const s = document.querySelector('.snb-status'); return s && new RegExp(p).test(s.innerText); }",
                           arg=pattern, timeout=timeout)
    return time.perf_counter()


_MAP_BOXES = """() => {
  const texts = Array.from(document.querySelectorAll('.snb-chart svg g.mark-text.role-mark text'));
  const leg = texts.find(t => t.textContent.includes('SA cosine'));
  if (!leg) return null;
  const group = leg.closest('g.mark-text');
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const visible = e => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0
                         && getComputedStyle(e).opacity !== '0' && e.getAttribute('opacity') !== '0'; };
  return {legend: Array.from(group.querySelectorAll('text')).map(box),
          labels: texts.filter(t => !group.contains(t) && t.textContent.trim() && visible(t)).map(t => [t.textContent, ...box(t)]),
          points: Array.from(document.querySelectorAll('.snb-chart svg g.mark-symbol.role-mark path')).filter(visible).map(box)};
}"""


#: every visible point of the map with its concept (from the aria-label Vega writes) and its centre on the page
_POINTS_BY_CONCEPT = """() => Array.from(document.querySelectorAll('.snb-chart svg g.mark-symbol.role-mark path'))
  .filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 && getComputedStyle(e).opacity !== '0'
                 && b.top >= 0 && b.bottom <= window.innerHeight && b.left >= 0 && b.right <= window.innerWidth; })
  .map(e => { const b = e.getBoundingClientRect(); const m = /concept: (.*?); translations/.exec(e.getAttribute('aria-label') || '');
              return [m ? m[1] : null, (b.left + b.right) / 2, (b.top + b.bottom) / 2]; })"""

#: how many draws and in-place updates the map's VegaView has finished (its ``rendered`` count; -1: none yet)
_RENDERED = """() => { const e = document.querySelector('.snb-chart[data-rendered], .snb-chart [data-rendered], [data-rendered]');
  return e ? parseInt(e.dataset.rendered) : -1; }"""


def _overlap(a: list[float], b: list[float], tol: float = 0.5) -> bool:
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol


def legend_collisions(page) -> tuple[list, dict]:
    """(what lies under the legend's text, the boxes): every label and point box that intersects a legend text box."""
    boxes = page.evaluate(_MAP_BOXES)
    assert boxes is not None, "the map shows no SA legend"
    hits = [("label", lab[0]) for lab in boxes["labels"] for leg in boxes["legend"] if _overlap(lab[1:], leg)]
    hits += [("point", p) for p in boxes["points"] for leg in boxes["legend"] if _overlap(p, leg)]
    return hits, boxes


# --------------------------------------------------------------------------- the visit
def long_visit(work: Path, *, expected_sa: Callable[[str, str, list[str]], str], log: Callable[[str], None] = print,
               shots: Path | None = None) -> dict[str, Any]:
    """Drive the visit in ``work`` (a fresh folder); returns the measurements.  ``expected_sa(model, dataset, languages)``
    gives the "SA cosine x ± y" text the panel must show (computed outside the kernel)."""
    from playwright.sync_api import sync_playwright

    root, cache_dir = work / "lab", work / "fresh-cache"
    root.mkdir(parents=True)
    cache_dir.mkdir()
    write_notebook(root, cache_dir)
    env = {**kernel_env(), "SEMANSCOPE_CACHE": str(cache_dir)}  # projections and SA results too: nothing cached
    m: dict[str, Any] = {}
    blocked: list[str] = []
    seen: list[str] = []
    console: list[tuple[str, str]] = []
    n_shot = 0

    def shot(page, step: str) -> None:
        nonlocal n_shot
        if shots is not None:
            n_shot += 1
            page.locator(".snb-explore").first.screenshot(path=str(shots / f"{n_shot:02d}-{step}.png"))

    t_visit = time.perf_counter()
    with start_lab(root, work, env=env) as (base, token, lab), sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1700})
        guard_page(page, blocked, seen, console)
        try:
            open_notebook(page, base, token, NOTEBOOK)
            t_open = time.perf_counter()
            run_all(page)
            cs, en_zh = "conceptual-space", ["en", "zh"]

            # 1. the first map
            page.wait_for_selector(".snb-sa-value", timeout=240_000)
            first = wait_shown(page, model="use-multilingual", want=expected_sa("use-multilingual", cs, en_zh))
            m["first_map_open"] = time.perf_counter() - t_open  # kernel start, import, model load, embed, SA, PHATE
            assert _label_languages(first) == en_zh, first
            kernel = kernel_process(lab)
            m["cpu_idle"] = cpu_rate(kernel, 1.0)
            shot(page, "first-map")
            log(f"first map; kernel CPU idle {m['cpu_idle']:.3f} cores")

            # 2. three model changes in quick succession: only the last one is shown, the others never finish
            refreshes, embeds = _count(page, "refresh"), _count(page, "embed")
            charts, stopped = _count(page, "chart"), _count(page, "cancelled")
            t = time.perf_counter()
            for model in ("multilingual-e5-small", "tfidf-char", "use-multilingual"):
                _select_model(page, model)
            wait_shown(page, model="use-multilingual", want=expected_sa("use-multilingual", cs, en_zh), charts_before=charts)
            m["rapid_changes_shown"] = time.perf_counter() - t
            m["rapid_refreshes"] = _count(page, "refresh") - refreshes
            m["rapid_embeds"] = _count(page, "embed") - embeds
            m["rapid_completed"] = m["rapid_refreshes"] - (_count(page, "cancelled") - stopped)
            log(f"3 rapid model changes: {m['rapid_refreshes']} refreshes, {m['rapid_embeds']} embeddings, "
                f"shown after {m['rapid_changes_shown']:.2f} s")

            # 3. Ctrl-click three more languages (de, fr, es: the rows the list shows)
            options = page.eval_on_selector(".snb-dataset-picker select[multiple]",
                                            "s => Array.from(s.options).map(o => [o.value, o.textContent])")
            refreshes, charts = _count(page, "refresh"), _count(page, "chart")
            stopped = _count(page, "cancelled")
            index = {}
            for lang in ("de", "fr", "es"):
                i = next((i for i, (v, txt) in enumerate(options) if v == lang or txt.strip() == lang
                          or txt.strip().endswith(f"({lang})")), None)
                assert i is not None, f"no option for {lang} in {options}"
                index[lang] = i
            page.keyboard.down("Control")  # three Ctrl-clicks as fast as a hand makes them (the list scrolls to the last)
            t = time.perf_counter()
            for lang, i in index.items():
                option = page.locator(".snb-dataset-picker select[multiple] option").nth(i)
                option.scroll_into_view_if_needed()
                b = option.bounding_box()
                page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
            m["multiselect_click_span"] = time.perf_counter() - t
            page.keyboard.up("Control")
            label = wait_shown(page, model="use-multilingual", charts_before=charts,
                               contains=", es")
            langs5 = _label_languages(label)
            assert sorted(langs5) == sorted(["en", "zh", "de", "fr", "es"]), label
            want5 = expected_sa("use-multilingual", cs, langs5)
            assert want5 in label, (want5, label)
            m["multiselect_refreshes"] = _count(page, "refresh") - refreshes
            m["multiselect_completed"] = m["multiselect_refreshes"] - (_count(page, "cancelled") - stopped)
            shot(page, "five-languages")
            log(f"Ctrl-click 3 languages in {m['multiselect_click_span']:.2f} s: {m['multiselect_refreshes']} refreshes, "
                f"{m['multiselect_completed']} completed")

            # 4. t-SNE, cancelled while the worker runs; then PCA
            page.locator(".snb-projection-picker select").first.select_option("tsne")
            _wait_status(page, "TSNE projection")
            m["cpu_tsne_running"] = cpu_rate(kernel, 0.5)
            page.locator(".snb-cancel").first.click()
            t = time.perf_counter()
            _wait_status(page, "cancelled", timeout=30_000)
            m["tsne_cancel_to_message"] = time.perf_counter() - t
            m["cpu_after_tsne_cancel"] = cpu_rate(kernel, CPU_WINDOW)
            assert "cancelled" in _text(page, ".snb-message"), _text(page, ".snb-message")
            assert want5 in _text(page, ".snb-sa-value")  # the previous result stays
            shot(page, "tsne-cancelled")
            log(f"t-SNE: CPU while running {m['cpu_tsne_running']:.2f}, after Cancel {m['cpu_after_tsne_cancel']:.3f} cores")
            charts = _count(page, "chart")
            t = time.perf_counter()
            page.locator(".snb-projection-picker select").first.select_option("pca")
            m["after_projection_cancel_start"] = _wait_status(page, "^(?!cancelled|updating)") - t
            wait_shown(page, model="use-multilingual", want=want5, charts_before=charts)
            m["after_projection_cancel_shown"] = time.perf_counter() - t

            # 5. an uncached model, cancelled while it embeds; then a new change
            embeds = _count(page, "embed")
            _select_model(page, "multilingual-e5-small")
            _wait_status(page, "embedding .* with multilingual-e5-small")
            m["cpu_embedding"] = cpu_rate(kernel, 0.5)
            page.locator(".snb-cancel").first.click()
            t = time.perf_counter()
            _wait_status(page, "cancelled", timeout=30_000)
            m["embed_cancel_to_message"] = time.perf_counter() - t
            m["cpu_after_embed_cancel"] = cpu_rate(kernel, CPU_WINDOW)
            assert "cancelled" in _text(page, ".snb-message")
            assert "use-multilingual on" in _text(page, ".snb-sa-label") and want5 in _text(page, ".snb-sa-value")
            shot(page, "embedding-cancelled")
            log(f"e5 embedding: CPU while running {m['cpu_embedding']:.2f}, after Cancel {m['cpu_after_embed_cancel']:.3f} cores")
            charts = _count(page, "chart")
            t = time.perf_counter()
            _select_model(page, "tfidf-char")
            m["after_embed_cancel_start"] = _wait_status(page, "^(?!cancelled|updating)") - t
            wait_shown(page, model="tfidf-char", want=expected_sa("tfidf-char", cs, langs5), charts_before=charts)
            m["after_embed_cancel_shown"] = time.perf_counter() - t
            m["embeds_started_after_cancel"] = _count(page, "embed") - embeds
            log(f"after Cancel: the new change started in {m['after_embed_cancel_start']:.2f} s, shown in "
                f"{m['after_embed_cancel_shown']:.2f} s")

            # 6. back to a model the kernel holds
            charts = _count(page, "chart")
            t = time.perf_counter()
            _select_model(page, "use-multilingual")
            wait_shown(page, model="use-multilingual", want=want5, charts_before=charts)
            m["cached_switch_memo"] = time.perf_counter() - t

            # 7. typed thresholds: not a number, out of range, inverted; then a drag
            refreshes, tier = _count(page, "refresh"), _text(page, ".snb-tier")
            great_before = page.locator(".snb-great-text input").first.input_value()
            good_before = page.locator(".snb-good-text input").first.input_value()
            for field, typed, says in (("great", "abc", "not a number"), ("great", "1.5", "outside"),
                                       ("good", "-0.2", "outside"), ("good", "0.99", "must be ≥")):
                box = page.locator(f".snb-{field}-text input").first
                box.fill(typed)
                box.press("Enter")
                page.wait_for_function(
                    "s => Array.from(document.querySelectorAll('.snb-tier-sliders .snb-error, .snb-tier-sliders'))"
                    ".some(e => e.innerText.includes(s))", arg=says, timeout=30_000)
                page.wait_for_function(
                    "([f, v]) => document.querySelector(`.snb-${f}-text input`).value === v",
                    arg=[field, great_before if field == "great" else good_before], timeout=30_000)
            time.sleep(1.0)
            assert _count(page, "refresh") == refreshes, "an invalid threshold recomputed the panel"
            assert _text(page, ".snb-tier") == tier
            shot(page, "invalid-thresholds")
            updates = _count(page, "update")
            slider = page.locator(".snb-tier-sliders .widget-slider").nth(1)  # "good if SA >="
            handle, track = slider.locator(".noUi-handle").first, slider.locator(".noUi-target").first
            hb, tb = handle.bounding_box(), track.bounding_box()
            to_x = tb["x"] + tb["width"] + 40 if tier != "non-aligned" else tb["x"] - 40
            page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
            page.mouse.down()
            page.mouse.move(to_x, hb["y"] + hb["height"] / 2, steps=8)
            t = time.perf_counter()
            page.mouse.up()
            page.wait_for_function("n => parseInt(document.querySelector('.snb-count-update').innerText) > n",
                                   arg=updates, timeout=60_000)
            m["tier_move"] = time.perf_counter() - t
            assert _text(page, ".snb-tier") != tier
            assert "snb-error" not in page.inner_html(".snb-tier-sliders")  # the messages went with a valid value
            thresholds = (page.locator(".snb-great-text input").first.input_value(),
                          page.locator(".snb-good-text input").first.input_value())
            log(f"tier move (in place): {m['tier_move']:.3f} s; thresholds now {thresholds}")

            # 8. a worst-aligned concept clicked: selected, labelled; the legend covers nothing
            charts = _count(page, "chart")
            labels_before = {b[0] for b in legend_collisions(page)[1]["labels"]}
            row = page.locator(".snb-worst-row").first
            concept = row.inner_text().strip()
            row.click()
            wait_shown(page, model="use-multilingual", want=want5, charts_before=charts)
            page.wait_for_function("() => document.querySelectorAll('.snb-chart svg g.mark-text.role-mark text').length > 1",
                                   timeout=30_000)
            time.sleep(0.5)
            hits, boxes = legend_collisions(page)
            labels = [b[0] for b in boxes["labels"] if b[0] not in labels_before]  # the selected concept's words
            m["legend_collisions"], m["map_labels"], m["map_points"] = hits, labels, len(boxes["points"])
            m["selected_concept"] = concept
            assert len(boxes["points"]) >= 4 * N_CONCEPTS, len(boxes["points"])
            assert len(labels) >= 2, (concept, labels)  # one word per language at least
            shot(page, "selected")
            log(f"selected '{concept}': labels {labels}; under the legend: {hits}")

            # 9. downloads: the SVG carries the labels
            page.locator(".snb-export").first.click()
            page.wait_for_selector(".snb-downloads a[download$='.svg']", timeout=180_000)
            href = page.locator(".snb-downloads a[download$='.svg']").first.get_attribute("href")
            svg = html.unescape(base64.b64decode(href.split(",", 1)[1]).decode("utf-8"))
            m["export_labels_missing"] = [w for w in labels if w not in svg]
            assert labels and "SA cosine" in svg

            # 9b. the nearest other concept shift-clicked: both concepts' labels placed apart jointly, in place
            page.locator(".snb-chart svg").first.scroll_into_view_if_needed()  # mouse clicks need it on screen
            time.sleep(0.3)
            points = page.evaluate(_POINTS_BY_CONCEPT)
            mine = [(x, y) for c, x, y in points if c == concept]
            _, covered = legend_collisions(page)
            free = [(min(math.hypot(x - a, y - b) for a, b in mine), c, x, y) for c, x, y in points
                    if c and c != concept and not any(l[1] - 2 <= x <= l[3] + 2 and l[2] - 2 <= y <= l[4] + 2
                                                      for l in covered["labels"])]
            assert mine and free, (concept, len(points))
            _, other, ox, oy = min(free)
            refreshes, drawn = _count(page, "refresh"), page.evaluate(_RENDERED)
            page.keyboard.down("Shift")
            page.mouse.click(ox, oy)
            page.keyboard.up("Shift")
            page.wait_for_function(f"() => ({_RENDERED})() > {drawn}", timeout=30_000)  # the rows placed in place
            time.sleep(0.3)
            _, boxes = legend_collisions(page)
            both = [b for b in boxes["labels"] if b[0] not in labels_before]
            m["joint_concepts"], m["joint_labels"] = [concept, other], [b[0] for b in both]
            m["joint_label_clashes"] = [(a[0], b[0]) for i, a in enumerate(both) for b in both[i + 1:] if _overlap(a[1:], b[1:])]
            m["joint_refreshes"] = _count(page, "refresh") - refreshes
            assert len(both) > len(labels), (concept, other, m["joint_labels"])  # the second concept labelled too
            assert m["joint_label_clashes"] == [], m["joint_label_clashes"]
            assert m["joint_refreshes"] == 0  # placed in place: no refresh, no new spec
            shot(page, "two-selected")
            log(f"shift-clicked '{other}' next to '{concept}': {len(both)} labels, none on another")
            charts = _count(page, "chart")  # its worst-concept row again: the first concept alone (a new map)
            page.locator(".snb-worst-row").first.click()
            wait_shown(page, model="use-multilingual", want=want5, charts_before=charts)

            # 10. save_state, restart the kernel, from_state
            kc = kernel_client(base, token, work / "jrun")
            try:
                run_in_kernel(kc, f"panel.save_state({STATE!r})")
            finally:
                kc.stop_channels()
            saved = json.loads((root / STATE).read_text(encoding="utf-8"))
            m["saved_selection"] = saved["selection"]
            assert saved["selection"] == [concept], saved
            assert saved["languages"] == langs5 and saved["model"] == "use-multilingual", saved
            sa_before = _text(page, ".snb-sa-value")
            t = time.perf_counter()
            restart_kernel_and_run_all(page)
            label = wait_shown(page, model="use-multilingual", want=sa_before,
                               refresh_is=1)
            m["restart_to_map"] = time.perf_counter() - t
            done = re.search(r"done in ([\d.]+) s", _text(page, ".snb-status"))
            m["from_state_refresh"] = float(done.group(1)) if done else float("nan")
            assert _label_languages(label) == langs5, label
            assert (page.locator(".snb-great-text input").first.input_value(),
                    page.locator(".snb-good-text input").first.input_value()) == thresholds
            page.wait_for_function("() => document.querySelectorAll('.snb-chart svg g.mark-text.role-mark text').length > 1",
                                   timeout=30_000)
            _, boxes = legend_collisions(page)
            m["restored_labels"] = [b[0] for b in boxes["labels"]]
            assert set(labels) <= set(m["restored_labels"]), (labels, m["restored_labels"])
            counts = {n: _count(page, n) for n in ("embed", "sa", "projection", "proj-computed")}
            m["after_restart_counts"] = counts
            shot(page, "restored")
            log(f"restart -> map {m['restart_to_map']:.2f} s (the panel's own refresh {m['from_state_refresh']:.2f} s); "
                f"counts {counts}")

            # 11. a model switch after the restart, to data cached on disk
            charts = _count(page, "chart")
            want = expected_sa("tfidf-char", cs, langs5)
            drawn_before = page.evaluate(_RENDERED)
            t, t_epoch = time.perf_counter(), time.time()
            _select_model(page, "tfidf-char")
            wait_shown(page, model="tfidf-char", want=want, charts_before=charts)
            m["cached_switch_disk"] = time.perf_counter() - t
            shown_epoch = time.time()
            done = re.search(r"done in ([\d.]+) s", _text(page, ".snb-status"))
            m["cached_switch_disk_refresh"] = float(done.group(1)) if done else float("nan")
            # where the time went: the change reaching the kernel's refresh (comm + debounce), the refresh, the page
            page.wait_for_function(f"() => ({_RENDERED})() > {drawn_before}", timeout=60_000)
            m["cached_switch_disk_drawn"] = time.perf_counter() - t
            m["cached_switch_disk_render_ms"] = page.evaluate(
                "() => { const e = document.querySelector('.snb-chart[data-render-ms], .snb-chart [data-render-ms], [data-render-ms]');"
                " return e ? parseFloat(e.dataset.renderMs) : null; }")
            kc = kernel_client(base, token, work / "jrun")
            try:
                last = json.loads(run_in_kernel(kc, "import json; print(json.dumps(panel.history[-1]))").strip())
            finally:
                kc.stop_channels()
            m["cached_switch_disk_to_refresh"] = last["started"] - t_epoch
            m["cached_switch_disk_after_refresh"] = shown_epoch - last["at"]
            log(f"cached switch after restart: change -> refresh start {m['cached_switch_disk_to_refresh']:.2f} s, "
                f"refresh {last['seconds']:.2f} s, refresh end -> shown {m['cached_switch_disk_after_refresh']:.2f} s; "
                f"chart drawn after {m['cached_switch_disk_drawn']:.2f} s (vega-embed {m['cached_switch_disk_render_ms']} ms)")
            m["after_switch_counts"] = {n: _count(page, n) for n in ("embed", "sa", "projection", "proj-computed")}
            log(f"cached switch after restart: {m['cached_switch_disk']:.2f} s (refresh {m['cached_switch_disk_refresh']:.2f} s)")
            m["console_errors"] = [t for kind, t in console if kind == "error"]
        except Exception:
            if shots is not None:
                page.screenshot(path=str(shots / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    m["visit_seconds"] = time.perf_counter() - t_visit
    m["blocked"] = blocked
    m["requests"] = len(seen)
    return m
