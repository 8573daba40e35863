"""Execute notebook 06 (retrieval and alignment) top to bottom with real models and small parameters."""

from __future__ import annotations

import json

import pytest
from notebook_runner import cell_outputs_text, run_notebook

import semanscope_nb as snb

pytestmark = pytest.mark.slow
NAME = "06-retrieval-and-alignment.ipynb"


def test_notebook_runs_small(shared_cache_dir, monkeypatch):
    data = snb.shared_data_dir()
    for need in ("tatoeba/tatoeba.deu-eng.deu", "sib-200/eng_Latn/train.tsv", "sib-200/zho_Hans/test.tsv", "muse/en-zh.dict.gz"):
        if not (data / need).exists():
            pytest.skip(f"{data / need} not found (set SEMANSCOPE_SHARED_DATA)")
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(shared_cache_dir))  # the kernel inherits it: real models embed once per session
    nb = run_notebook(NAME, {
        "TATOEBA_PAIRS": 80,
        "RETRIEVAL_MODELS": ["use-multilingual", "wordllama-l2-supercat"],
        "SIB_MODELS": ["use-multilingual"],
        "SIB_TRAIN": 150,
        "SIB_TEST": 60,
        "ENSEMBLE": ["use-multilingual", "wordllama-l2-supercat"],
        "ENSEMBLE_WEIGHTS": [2, 1],
        "ALIGN_MODELS": ["wordllama-l2-supercat", "use-multilingual"],
        "N_TRAIN": 400,
        "N_TEST": 100,
        "TOP": 4000,
        "MAP_MODEL": "wordllama-l2-supercat",
        "MAP_ROWS": 40,
        "MAP_SENTENCES": 30,
        "N_BOOT": 100,
    })
    text = cell_outputs_text(nb)
    assert "wordllama-l2-supercat+procrustes[muse-en-zh,n=400,seed=0]" in text
    assert "use-multilingual+procrustes[muse-en-zh,n=400,seed=0]" in text
    assert "distfuse[use-multilingual*2+wordllama-l2-supercat*1,cosine]" in text
    assert "TARGET @ SOURCE" in text and "traditional -> simplified" in text
    assert "logistic_regression" in text and "majority" in text
    # the code-switching is synthetic (dictionary lookups), said so in the text and in the printed line
    assert "synthetic dictionary code-switching (use-multilingual, MUSE en-de): accuracy@1 at rate 0 -> " in text
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "This is **synthetic dictionary code-switching**, not MINERS' code-switching data" in md
    assert "these numbers are not MINERS' CS numbers" in md
    specs = [o["data"]["application/vnd.vegalite.v5+json"] for c in nb.cells for o in c.get("outputs", [])
             if "application/vnd.vegalite.v5+json" in o.get("data", {})]
    assert len(specs) == 5  # accuracy@k, rank histogram, classification table, sentence maps, before/after maps
    maps = specs[3]["hconcat"]
    assert [m["encoding"]["color"]["field"] for m in maps] == ["sample", "label"]
    assert all(m["encoding"]["shape"]["field"] == "language" for m in maps)
    rows = specs[3]["datasets"][maps[0]["data"]["name"]]
    assert len(rows) == 60 and {r["language"] for r in rows} == {"en", "zh"}
    blob = json.dumps(specs[-1])
    assert blob.count("SA cosine") == 2 and "before alignment" in blob and "after alignment" in blob
