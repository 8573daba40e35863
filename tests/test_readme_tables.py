"""The README's tables about the verdict's statistics are the output of bench/readme_tables.py (they cannot drift)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "bench" / "readme_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_readme_blocks_equal_the_generated_tables():
    mod = _module()
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = mod.render()
    assert set(blocks) == {"degenerate-statistics", "one-quantity"}
    assert mod.replace_blocks(text, blocks) == text, "README.md is stale: run `make readme` (bench/readme_tables.py --write)"
    # the generated statements say what the README's prose claims
    assert "| 2 concepts |" in blocks["degenerate-statistics"] and "p = 0.5 (exact)" in blocks["degenerate-statistics"]
    assert "p = 0.1667 (exact)" in blocks["degenerate-statistics"]
    assert "| SA − chance (artefact-free) | real > random" in blocks["one-quantity"]
