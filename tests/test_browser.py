"""Proof in a real browser, offline: JupyterLab + headless Debian chromium (Playwright) run 01-explore.

Every request that does not go to 127.0.0.1 is aborted and recorded; the test asserts
none was made.  It checks: the dropdowns and tier sliders are there, the Vega map
rendered (SVG symbol marks, one per point), changing the model changes the SA shown,
and moving a tier slider changes the tier label without recomputing SA or the projection
(read from the panel's counters).  The screenshot goes to figures/explore-screenshot.png.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from notebook_runner import NOTEBOOKS, inject_parameters

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SCREENSHOT = ROOT / "figures" / "explore-screenshot.png"
N_CONCEPTS = 30

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path, shared_cache_dir):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    pytest.importorskip("playwright")
    root = tmp_path / "lab"
    root.mkdir()
    nb = nbformat.read(NOTEBOOKS / "01-explore.ipynb", as_version=4)
    inject_parameters(nb, {"MAX_CONCEPTS": N_CONCEPTS, "N_BOOT": 100, "CACHE_DIR": str(shared_cache_dir)})
    nbformat.write(nb, root / "01-explore.ipynb")
    labconfig = tmp_path / "jcfg" / "labconfig"
    labconfig.mkdir(parents=True)
    # no "news?" toast (the announcements plugin would also try to fetch a feed)
    (labconfig / "page_config.json").write_text('{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrun"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "jws"), "SEMANSCOPE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    log = open(tmp_path / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.open_browser=False", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", f"--LabApp.workspaces_dir={tmp_path / 'jws'}"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except Exception:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"JupyterLab did not start: {(tmp_path / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _text(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def _counts(page) -> dict[str, int]:
    return {name: int(_text(page, f".snb-count-{name}")) for name in ("embed", "sa", "projection", "proj-computed", "chart")}


def test_explore_panel_in_headless_chromium(jupyterlab, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token = jupyterlab
    blocked: list[str] = []
    seen: list[str] = []
    # Only non-local URLs are intercepted (a regex is matched inside the Playwright driver, so local
    # traffic never waits on this Python thread); each is recorded and aborted.  Chromium's host
    # resolver also maps every other host to nowhere, so nothing can leave the machine either way.
    not_local = re.compile(r"^(?!(https?|wss?)://127\.0\.0\.1[:/]|data:|blob:|about:)")

    def abort(r):
        blocked.append(r.request.url)
        r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.route(not_local, abort)
            page.on("request", lambda req: seen.append(req.url))
            console_errors: list[str] = []
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/lab/tree/01-explore.ipynb?token={token}", wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'], .jp-Toolbar-kernelStatus", timeout=90_000)
            time.sleep(1.0)  # let the kernel connect
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()

            # the panel: dropdowns, sliders, a rendered map
            page.wait_for_selector(".snb-sa-value", timeout=240_000)
            assert page.locator(".snb-model-picker select").count() == 1
            assert page.locator(".snb-dataset-picker select").count() >= 1
            assert page.locator(".snb-tier-sliders .widget-slider").count() == 2
            page.wait_for_selector(".snb-chart svg g.mark-symbol path", timeout=60_000)
            n_marks = page.locator(".snb-chart svg g.mark-symbol path").count()
            assert n_marks >= 2 * N_CONCEPTS  # one symbol per (language, word): at least one word per concept and language
            legend = " | ".join(page.eval_on_selector_all(".snb-chart svg g.mark-text text", "els => els.map(e => e.textContent)"))
            first_sa = _text(page, ".snb-sa-value")
            assert re.fullmatch(r"SA cosine 0\.\d{3} ± 0\.\d{3}", first_sa), first_sa
            assert first_sa in legend, legend  # the map's SA legend shows the same numbers as the panel
            before = _counts(page)
            assert before["sa"] == 1 and before["projection"] == 1 and before["proj-computed"] >= 1

            # change the model: the SA shown changes
            labels = page.eval_on_selector(".snb-model-picker select", "s => Array.from(s.options).map(o => o.textContent)")
            target = next(i for i, t in enumerate(labels) if "[multilingual-e5-small]" in t)
            page.locator(".snb-model-picker select").select_option(index=target)
            page.wait_for_function(
                "prev => { const e = document.querySelector('.snb-sa-value'); return e && e.innerText !== prev; }",
                arg=first_sa, timeout=180_000)
            second_sa = _text(page, ".snb-sa-value")
            assert second_sa != first_sa
            page.wait_for_function("() => document.querySelector('.snb-count-sa').innerText === '2'", timeout=60_000)
            after_model = _counts(page)
            assert after_model["sa"] == 2 and after_model["projection"] == 2

            # move a tier slider: the tier label changes, SA and projection are not recomputed.
            # great/good now -> drag "good" to 1.00 (it drags "great" along): non-aligned; non-aligned -> drag "good" to 0.
            tier_before = _text(page, ".snb-tier")
            slider = page.locator(".snb-tier-sliders .widget-slider").nth(1)  # "good if SA >="
            handle, track = slider.locator(".noUi-handle").first, slider.locator(".noUi-target").first
            hb, tb = handle.bounding_box(), track.bounding_box()
            to_x = tb["x"] + tb["width"] + 40 if tier_before != "non-aligned" else tb["x"] - 40
            page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
            page.mouse.down()
            page.mouse.move(to_x, hb["y"] + hb["height"] / 2, steps=12)
            page.mouse.up()
            page.wait_for_function(
                "prev => { const e = document.querySelector('.snb-tier'); return e && e.innerText !== prev; }",
                arg=tier_before, timeout=60_000)
            tier_after = _text(page, ".snb-tier")
            assert tier_after != tier_before
            page.wait_for_function(f"() => document.querySelector('.snb-count-chart').innerText === '{after_model['chart'] + 1}'",
                                   timeout=30_000)
            after_tier = _counts(page)
            assert after_tier["sa"] == after_model["sa"]
            assert after_tier["projection"] == after_model["projection"]
            assert after_tier["proj-computed"] == after_model["proj-computed"]
            assert after_tier["embed"] == after_model["embed"]
            page.wait_for_function(
                "t => Array.from(document.querySelectorAll('.snb-chart svg g.mark-text text')).some(e => e.textContent.includes(t))",
                arg=f"tier: {tier_after}", timeout=30_000)

            SCREENSHOT.parent.mkdir(exist_ok=True)
            if page.locator("button", has_text=re.compile(r"^No$")).count():  # JupyterLab's "news?" toast
                page.locator("button", has_text=re.compile(r"^No$")).first.click()
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print("failure screenshot:", tmp_path / "failure.png")
            raise
        try:
            page.locator(".snb-explore").screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
    assert blocked == [], f"the page tried to reach the network: {blocked[:10]}"
    outside = [u for u in seen if not_local.match(u)]
    assert outside == [], f"requests outside 127.0.0.1: {outside[:10]}"
    assert len(seen) > 20  # the recorder saw JupyterLab's own (local) traffic
    assert SCREENSHOT.stat().st_size > 20_000
