"""Execute notebook 07 (contextual alignment, paper 001) top to bottom with the real NumPy e5 engine, small parameters."""

from __future__ import annotations

import re

import pytest
from notebook_runner import cell_outputs_text, run_notebook

import semanscope_nb as snb

pytestmark = pytest.mark.slow
NAME = "07-contextual-alignment.ipynb"


def test_notebook_runs_small_and_shows_the_papers_comparison():
    data = snb.shared_data_dir()
    for need in ("tatoeba/tatoeba.deu-eng.deu", "muse/en-de.dict.gz"):
        if not (data / need).exists():
            pytest.skip(f"{data / need} not found (set SEMANSCOPE_SHARED_DATA)")
    nb = run_notebook(NAME, {"LANGUAGES": ["de"], "N_SENTENCES": 60, "N_TEST_WORDS": 20, "N_ANCHOR_WORDS": 80,
                             "BDI_POOL": 120, "BTSR_POOL": 120, "N_BOOT": 50}, timeout=900)
    text = cell_outputs_text(nb)
    # the comparison table: every anchor kind with Procrustes and MIM, beside orig, on BDI (NN, CSLS) and BTSR
    assert re.search(r"^en-de\s+avg\s+MIM\s+\d", text, re.M)
    for row in ("iso", "token"):
        assert re.search(rf"^\s+{row}\s+MIM\s+\d", text, re.M), row
    assert len(re.findall(r"^\s+procrustes\s+\d", text, re.M)) == 3 and re.search(r"^\s+none\s+orig\s+\d", text, re.M)
    for task in ("BDI-nn", "BDI-csls", "BTSR", "BTSR-type-avg"):
        assert task in text, task
    cells = re.findall(r"(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]", text)  # "P@1 [lo, hi]" cells
    assert len(cells) >= 7 * 4 and all(float(lo) <= float(p) <= float(hi) for p, lo, hi in cells)
    assert "BDI pool 120 of" in text and "avg-type pairs; English occurrences per word" in text
    # the within-language sense check and the map of bank / Bank in two languages
    sense_table = next(o["data"]["text/plain"] for c in nb.cells if "sense_separation" in c.source
                       for o in c.get("outputs", []) if "text/plain" in o.get("data", {}))
    header = sense_table.splitlines()[0].split()
    assert {"layers", "language", "same_sense", "same_word_other_sense", "gap", "auc", "within_word_auc"} <= set(header)
    assert len(sense_table.splitlines()) == 1 + 4  # mean and last layer x en, de
    readings = re.findall(r"^(en|de), layers (mean|last): .*\(gap [+-]\d\.\d{3}, AUC \d\.\d{2}\); .*within-word AUC \d\.\d{2}\)$",
                          text, re.M)
    assert len(readings) == 4  # the reading is phrased from the numbers, one line per row
    specs = [o["data"]["application/vnd.vegalite.v5+json"] for c in nb.cells for o in c.get("outputs", [])
             if "application/vnd.vegalite.v5+json" in o.get("data", {})]
    assert len(specs) == 1
    spec = specs[0]
    rows = spec["datasets"][spec["data"]["name"]]
    assert len(rows) == 20 and {r["language"] for r in rows} == {"en", "de"} and {r["sense"] for r in rows} >= {"finance"}
    assert spec["encoding"]["color"]["field"] == "sense" and spec["encoding"]["shape"]["field"] == "language"
