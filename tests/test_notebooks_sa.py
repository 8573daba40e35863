"""Execute notebooks 00-04 top to bottom (real models, small parameters) and check what they print and export."""

from __future__ import annotations

import json
import types

import pytest
from notebook_runner import NOTEBOOKS, cell_outputs_text, run_notebook

pytestmark = pytest.mark.slow


def _outputs_of_type(nb, mime):
    return [o["data"][mime] for c in nb.cells for o in c.get("outputs", []) if mime in o.get("data", {})]


def test_committed_notebooks_have_no_outputs_and_a_parameters_cell():
    import nbformat

    names = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert names[0] == "00-quickstart" and names[-1] == "08-choose-a-model" and len(names) == 9
    for name in names:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), name
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), f"{name} has saved outputs"


def test_quickstart(tmp_path, shared_cache_dir):
    nb = run_notebook("00-quickstart.ipynb", {
        "MAX_CONCEPTS": 40, "N_BOOT": 200, "CACHE_DIR": str(shared_cache_dir), "FIGURES_DIR": str(tmp_path),
    })
    text = cell_outputs_text(nb)
    assert "SA cosine" in text and "paper tier:" in text and "verdict: great: SA" in text
    assert "chance level" in text and "permutation test: shuffled SA" in text and "p = 0.0010" in text
    assert "Stage 1 (cosine SA, null-aware verdict)" in text and "Recommendation:" in text
    specs = _outputs_of_type(nb, "application/vnd.vegalite.v5+json")
    assert len(specs) == 2  # the map and the worst-concepts chart
    legend = [v for spec in specs for vals in spec.get("datasets", {}).values() for v in vals if "legend" in v]
    assert legend and legend[0]["legend"].startswith("SA cosine")
    assert (tmp_path / "quickstart-map.png").stat().st_size > 5000
    assert "cdn.jsdelivr" not in (tmp_path / "quickstart-map.html").read_text()


def test_explore_notebook_builds_the_panel(shared_cache_dir):
    nb = run_notebook("01-explore.ipynb", {"MAX_CONCEPTS": 25, "N_BOOT": 50, "CACHE_DIR": str(shared_cache_dir)})
    widgets = _outputs_of_type(nb, "application/vnd.jupyter.widget-view+json")
    assert widgets, "the panel did not display as a widget"
    text = cell_outputs_text(nb)
    assert "'sa': 1" in text and "'projection': 1" in text and "'errors': 0" in text


def test_benchmark_notebook(tmp_path, shared_cache_dir):
    nb = run_notebook("02-benchmark.ipynb", {
        "MODELS": ["use-multilingual", "multilingual-e5-small", "tfidf-char", "random-null"],
        "DATASETS": ["conceptual-space", "edge-cases"], "MAX_CONCEPTS": 30, "N_BOOT": 50,
        "CACHE_DIR": str(shared_cache_dir), "RESULTS_DIR": str(tmp_path / "results"),
        "FIGURES_DIR": str(tmp_path / "figures"), "FORMATS": ["png", "pdf", "html"], "METHOD": "pca",
    })
    text = cell_outputs_text(nb)
    assert "8 results; failures: none" in text
    assert "conceptual-space bands: [['use-multilingual']" in text  # the best model stands alone in band 1
    assert "runs here: use-multilingual; skipped: 12" in text  # the paper preset, offline and without a key
    assert "skipped labse: LaBSE: needs hub" in text and "openai-text-embedding-3-large" in text
    for name in ("fig1-tiers", "fig2-heatmap", "fig3-maps", "worst-concepts"):
        for fmt in ("png", "pdf", "html"):
            assert (tmp_path / "figures" / f"{name}.{fmt}").stat().st_size > 1000, (name, fmt)
    html = (tmp_path / "figures" / "leaderboard-d1.html").read_text()
    assert "± " in html and "Avg SA" in html
    board = json.loads((tmp_path / "results" / "leaderboard.json").read_text())
    assert len(board["rows"]) == 8


def test_paper_datasets_notebook(tmp_path, shared_cache_dir, paper_dir):
    nb = run_notebook("03-paper-datasets.ipynb", {
        "PAPER_DIR": str(paper_dir), "MODELS": ["use-multilingual", "random-null"], "MAX_CONCEPTS": 30,
        "N_BOOT": 50, "CACHE_DIR": str(shared_cache_dir), "RESULTS_DIR": str(tmp_path / "results"),
        "FIGURES_DIR": str(tmp_path / "figures"), "METHOD": "pca",
    })
    text = cell_outputs_text(nb)
    assert "failures: none" in text and "DS4" in text
    import pandas as pd

    comp = pd.read_csv(tmp_path / "figures" / "paper-use-vs-table-d1.csv")
    assert list(comp["dataset"].unique()) == ["DS1", "DS2", "DS3", "DS4"] and len(comp) == 16
    assert set(comp["files"]) == {"v0", "later"} and set(comp["distance"]) == {"cosine", "euclidean"}
    first = comp.iloc[0]
    assert (first.dataset, first.files, first.distance, first.paper_sa, first.paper_n) == ("DS1", "v0", "cosine", 0.767, 349)
    assert comp["sa"].notna().all() and comp["tool_pm"].notna().all()
    # what the reader sees: one verdict sentence per number, in our SEs, for both file versions
    for row in comp.itertuples():
        verdict = "reproduced" if row.reproduced else "NOT reproduced"
        assert (f"{row.dataset} ({row.files} files), {row.distance}: ours {row.sa:.3f} ± {row.sem:.4f} vs published "
                f"{row.paper_sa:.3f} ± {row.paper_pm:.3f}: gap {row.gap:+.3f} = {row.gap_se:+.1f} of our SE: {verdict}") in text
    # both error bars, and which part of the tool's ± is the between-language term
    for key in ("DS1", "DS4"):
        assert f"{key} cosine: tool's ± " in text
    assert "of its variance is the between-language term" in text and "our bootstrap SE" in text
    assert (tmp_path / "figures" / "paper-fig3-maps.png").stat().st_size > 5000
    assert (tmp_path / "figures" / "paper-gaps-in-our-se.png").stat().st_size > 5000


def _student_sees(nb) -> str:
    """Everything a student sees: text, markdown and stream outputs, widget placeholders (a progress bar), errors."""
    parts = [cell_outputs_text(nb)]
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                parts.append("TRACEBACK " + out.get("ename", "") + " " + "\n".join(out.get("traceback", [])))
    return "\n".join(parts)


def _no_noise(seen: str) -> None:
    assert "TRACEBACK" not in seen and "Traceback" not in seen, seen[-2000:]
    assert "Loading weights" not in seen and "it/s]" not in seen  # no weight-loading bar
    assert "Warning:" not in seen and "/tmp/" not in seen and ".py:" not in seen  # no raw warning line with its path


def test_workshop_notebook_forgives_sloppy_answers(shared_cache_dir):
    sloppy = {"identical": "about 1", "random": "~0,5", "tiny_tier": " Great", "shuffled_sa": "0.5 ",
              "strict_tier": "GOOD", "minilm_vs_chance": "Above its chance level"}
    nb = run_notebook("04-workshop.ipynb", {"ANSWERS": sloppy, "N_BOOT": 200, "CACHE_DIR": str(shared_cache_dir)})
    seen = _student_sees(nb)
    assert "score: 6/6 correct (0 unanswered)" in seen, seen[-2000:]
    assert "[random] ✓ correct: you said 0.5; measured 0.4" in seen or "[random] ✓ correct: you said 0.5; measured 0.5" in seen
    assert "[tiny_tier] ✓ correct: you said great" in seen and "\nTrue\n" not in seen  # a check shows its line only
    assert "degenerate vectors in 'zh'" in seen  # found: the verdict and its notes follow the right answer
    assert "note: model 'all-minilm-l6-v2' does not list zh" in seen  # the warning, as one plain note
    _no_noise(seen)


def test_workshop_notebook_hints_at_wrong_answers_and_gives_nothing_away(shared_cache_dir):
    wrong = {"identical": None, "random": "half", "tiny_tier": "non-aligned", "shuffled_sa": 0.9, "strict_tier": "good",
             "minilm_vs_chance": "below"}
    nb = run_notebook("04-workshop.ipynb", {"ANSWERS": wrong, "N_BOOT": 200, "CACHE_DIR": str(shared_cache_dir)})
    seen = _student_sees(nb)
    assert "[identical] no answer yet" in seen
    assert "[random] ? I could not read your answer: 'half' holds no number; write one, e.g. 0.5" in seen  # no ValueError
    assert "[tiny_tier] ✗ not quite (you said non-aligned). Hint: USE-multilingual was trained" in seen
    assert "[shuffled_sa] ✗ not quite (you said 0.9). Hint: after the shuffle" in seen
    assert "[minilm_vs_chance] ✗ not quite (you said below). Hint: compare the model's SA with ITS OWN chance level" in seen
    assert "score: 1/6 correct (2 unanswered)" in seen, seen[-2000:]
    # a wrong answer is not told the value, and exercise 6's verdict (its answer) stays hidden
    tiny = [c for c in nb.cells if "tiny_tier" in c.source and "ws.check" in c.source][0]
    shown = cell_outputs_text(types.SimpleNamespace(cells=[tiny]))
    assert "measured" not in shown and "great" not in shown.split("Hint")[0]
    assert "indistinguishable from chance" not in seen and "gap " not in seen and "degenerate vectors" not in seen
    _no_noise(seen)
