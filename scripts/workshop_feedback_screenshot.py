"""figures/workshop-feedback.png: the workshop's feedback as a student sees it, in a real JupyterLab.

Runs notebooks/04-workshop.ipynb in JupyterLab with headless Debian chromium (tests/lab_browser.py:
local server, token, every non-local request aborted) with a student's answers -- sloppy but right
("about 1", " Great"), wrong (0.9 for random vectors), unreadable ("abc") and unanswered -- then
shoots every feedback output (the lines the checks print, and the score) and stacks them into one
image.  The script fails when a check's output shows a traceback or a temporary path.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python scripts/workshop_feedback_screenshot.py [--out figures/workshop-feedback.png]
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lab_browser import guard_page, launch_chromium, open_notebook, run_all, start_lab  # noqa: E402
from notebook_runner import NOTEBOOKS, inject_parameters, kernel_env  # noqa: E402

#: a student's answers: right but sloppy, wrong, unreadable, unanswered
ANSWERS = {"identical": "about 1", "random": 0.9, "tiny_tier": " Great", "shuffled_sa": "abc",
           "strict_tier": None, "minilm_vs_chance": "Above"}
FEEDBACK = re.compile(r"^\[\w+\] (✓|✗|\?|no answer)|^score: ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "figures" / "workshop-feedback.png"))
    a = ap.parse_args()
    from PIL import Image  # stacking the shots (Pillow: already a dependency of the plotting stack)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / "lab"
        root.mkdir()
        nb = nbformat.read(NOTEBOOKS / "04-workshop.ipynb", as_version=4)
        inject_parameters(nb, {"ANSWERS": ANSWERS, "N_BOOT": 200, "CACHE_DIR": str(work / "cache")})
        nbformat.write(nb, root / "04-workshop.ipynb")
        blocked: list[str] = []
        with start_lab(root, work, env=kernel_env()) as (base, token, _), sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1100, "height": 9000})  # tall: every cell is rendered
            guard_page(page, blocked, [], [])
            open_notebook(page, base, token, "04-workshop.ipynb")
            run_all(page)
            page.wait_for_function(
                "() => Array.from(document.querySelectorAll('.jp-OutputArea-output')).some(e => e.innerText.startsWith('score:'))",
                timeout=600_000)
            time.sleep(1.0)
            outputs = page.locator(".jp-OutputArea-output")
            shots = []
            for i in range(outputs.count()):
                out = outputs.nth(i)
                text = out.inner_text().strip()
                if not text or not any(FEEDBACK.search(line) for line in text.splitlines()):
                    continue
                assert "Traceback" not in text and not re.search(r"/tmp/|/var/folders/", text), text
                out.scroll_into_view_if_needed()
                shots.append(Image.open(io.BytesIO(out.screenshot())))
            browser.close()
        assert blocked == [], blocked
        assert len(shots) >= 5, f"only {len(shots)} feedback outputs found"
        width = max(s.width for s in shots)
        gap = 8
        sheet = Image.new("RGB", (width + 2 * gap, sum(s.height + gap for s in shots) + gap), "white")
        y = gap
        for s in shots:
            sheet.paste(s, (gap, y))
            y += s.height + gap
        Path(a.out).parent.mkdir(exist_ok=True)
        sheet.save(a.out)
        print(f"wrote {a.out} ({len(shots)} feedback outputs, {sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
