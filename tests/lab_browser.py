"""A real JupyterLab (local, token, no network) and headless Debian chromium driven by Playwright.

Shared by tests/test_browser.py and bench/bench_explore.py --browser: :func:`start_lab`
starts the server on a free port in a folder, :func:`open_browser` opens chromium with
every non-local request aborted (and recorded), :func:`run_all` runs a notebook's cells.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

CHROMIUM = "/usr/bin/chromium"
#: a URL that is not this machine (regex matched inside the Playwright driver)
NOT_LOCAL = re.compile(r"^(?!(https?|wss?)://127\.0\.0\.1[:/]|data:|blob:|about:)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_lab(root: Path, work: Path, *, env: dict | None = None) -> Iterator[tuple[str, str, subprocess.Popen]]:
    """JupyterLab serving ``root`` (config, runtime and workspaces under ``work``): yields (base URL, token, process)."""
    labconfig = work / "jcfg" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    # no "news?" toast (the announcements plugin would also try to fetch a feed)
    (labconfig / "page_config.json").write_text('{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    port, token = _free_port(), secrets.token_hex(16)
    full_env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / "jcfg"), "JUPYTER_RUNTIME_DIR": str(work / "jrun"),
                "JUPYTERLAB_WORKSPACES_DIR": str(work / "jws"), "SEMANSCOPE_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                **(env or {})}
    log = open(work / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.open_browser=False", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", f"--LabApp.workspaces_dir={work / 'jws'}"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=root, env=full_env, stdout=log, stderr=subprocess.STDOUT,
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
                    raise RuntimeError(f"JupyterLab did not start: {(work / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def launch_chromium(p):
    """Headless Debian chromium whose host resolver maps every host but 127.0.0.1 to nowhere."""
    return p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])


def guard_page(page, blocked: list[str], seen: list[str], console: list[tuple[str, str]]) -> None:
    """Abort and record every non-local request; record every request and every console message (type, text)."""

    def abort(r):
        blocked.append(r.request.url)
        r.abort()

    page.route(NOT_LOCAL, abort)
    page.on("request", lambda req: seen.append(req.url))
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("error", f"page error: {e}")))


def open_notebook(page, base: str, token: str, name: str) -> None:
    """Open ``name`` and wait for its kernel to be idle."""
    page.goto(f"{base}/lab/tree/{name}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'], .jp-Toolbar-kernelStatus", timeout=90_000)
    time.sleep(1.0)  # let the kernel connect


def run_all(page) -> None:
    """Run > Run All Cells; a click before the kernel is ready can be lost: retry."""
    for _ in range(6):
        try:
            accept = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
            if accept.count():  # "Select Kernel" when the kernel starts slowly: accept the default
                accept.first.click(timeout=5_000)
                time.sleep(2.0)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(timeout=10_000)
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click(timeout=10_000)
            page.wait_for_function(
                "() => Array.from(document.querySelectorAll('.jp-InputPrompt')).some(e => /\\[(\\*|\\d+)\\]/.test(e.innerText))",
                timeout=30_000)
            return
        except Exception:
            page.keyboard.press("Escape")
            time.sleep(2.0)
    raise RuntimeError("Run All did not start")


def restart_kernel_and_run_all(page) -> None:
    """Kernel > Restart Kernel and Run All Cells… (accepting the dialog)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click(timeout=10_000)
    # the Kernel menu's item is runmenu:restart-and-run-all in JupyterLab 4 (notebook:restart-run-all is the toolbar's)
    page.locator("li.lm-Menu-item[data-command='runmenu:restart-and-run-all'], "
                 "li.lm-Menu-item[data-command='notebook:restart-run-all']").first.click(timeout=10_000)
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").first.click(timeout=20_000)
