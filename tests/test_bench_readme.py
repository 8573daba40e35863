"""bench/README.md's measured claims come from bench/results/*.json (bench/make_readme.py): the committed block is
current, and a row written by any bench script is rendered with its ratio, threads and repeats."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_readme_block_is_what_the_results_give():
    assert _load("make_readme").main(["--check"]) == 0, "bench/README.md is stale: run `make bench-readme`"


def test_a_new_bench_row_is_rendered_next_to_its_ratio(tmp_path, monkeypatch):
    results = _load("_results")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    r = results.row("a | claim", 3.0, 2.0, baseline_name="floor", threads=1, repeats=3, clock="cpu", target="<= 2")
    assert r["ratio"] == 1.5
    results.write_results("demo", [r], script="bench/demo.py", args=["--quick"])
    doc = json.loads((tmp_path / "demo.json").read_text())
    assert doc["rows"][0]["threads"] == 1 and doc["bench"] == "demo"
    block = _load("make_readme").render(tmp_path)
    line = next(ln for ln in block.splitlines() if ln.startswith("| a \\| claim"))
    assert "**1.5×**" in line and "3 interleaved" in line and "| 1 |" in line and "floor: 2.00 s" in line
    readme = "# B\n\nintro\n\n## Old\n\ntext\n"
    spliced = _load("make_readme").splice(readme, block)
    assert spliced.index("Measured claims") < spliced.index("## Old")
    assert _load("make_readme").splice(spliced, block) == spliced, "re-rendering the same results changes nothing"


def test_interleaved_min_takes_each_contenders_minimum():
    results = _load("_results")
    calls: list[str] = []
    best = results.interleaved_min({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeat=3, clock="wall")
    assert calls == ["a", "b"] * 3 and set(best) == {"a", "b"} and all(v >= 0 for v in best.values())
