"""notebooks/05-concept-separation.ipynb runs top to bottom (small parameters, every offline model)."""

from __future__ import annotations

import json

import nbformat
import pandas as pd
import pytest
from notebook_runner import NOTEBOOKS, cell_outputs_text, run_notebook

import semanscope_nb as snb

NAME = "05-concept-separation.ipynb"


def test_notebook_is_committed_clean_with_a_parameters_cell():
    nb = nbformat.read(NOTEBOOKS / NAME, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)


@pytest.mark.slow
def test_notebook_runs_small(tmp_path, shared_cache_dir, monkeypatch):
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(shared_cache_dir))  # the kernel inherits it
    params = {"MAX_SENTENCES": 10, "ESS_MAX_QUESTIONS": 10, "N_BOOT": 60, "OUT_DIR": str(tmp_path / "csc"),
              "LENGTH_BUCKETS": (0, 10, 20), "PAPER_TFIDF_SAMPLES": 2}
    nb = run_notebook(NAME, params)
    text = cell_outputs_text(nb)
    models = [m.id for m in snb.list_models(offline=True, available=True)]
    table = pd.read_csv(tmp_path / "csc" / "csc_table.csv")
    n_corpora = 4 + (2 if (snb.shared_data_dir() / "ess-mcsq").is_dir() else 0)
    assert len(table) == len(models) * n_corpora, "FAILED" in text
    assert set(table.model) == set(models)
    assert table.overlap.between(0, 1).all() and (table.ci_low <= table.ci_high).all()
    assert "FAILED" not in text
    saved = list((tmp_path / "csc").glob("*.json"))
    assert len(saved) == len(table)
    back = snb.CSCResult.load(saved[0])
    assert back.provenance["parameters"]["n_boot"] == 60
    # the interpretation cell produced markdown phrased from the results
    md = [o["data"]["text/markdown"] for c in nb.cells for o in c.get("outputs", [])
          if "text/markdown" in o.get("data", {})]
    assert md and "random-vector null model" in md[-1]
    for c in table.corpus:
        assert f"**{c}**" in md[-1]
    # paper 002's TF-IDF number beside seeded samples of its size, for both IDF fits
    if n_corpora > 4:
        for fit in ("originals", "all"):
            assert f"TF-IDF on ESS-en, IDF fitted on {fit}: median overlap" in text
        assert "over 2 samples of 94 questions" in text and "paper 002's 0.4516 lies" in text
    # one overall progress bar (the grid's), no per-job embedding bars
    bars = [o for c in nb.cells for o in c.get("outputs", [])
            if "CSC grid" in (o.get("text", "") + o.get("data", {}).get("text/plain", ""))]
    assert len(bars) == 1 and "embedding with" not in text
    # the charts were produced as Vega-Lite 5 specs
    specs = [o["data"] for c in nb.cells for o in c.get("outputs", []) if any("vegalite.v5" in k for k in o.get("data", {}))]
    assert len(specs) >= 3 + (n_corpora > 4)  # curves, grid, heatmap (+ the length chart when the ESS questions are there)
    json.dumps(specs[0])
