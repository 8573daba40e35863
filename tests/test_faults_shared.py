"""Issue 20: shared results carry no home path.

A dataset kept in a private folder (here a sandbox standing for ``/home/alice/private``), with a
comment line and a duplicate row so that its reader reports name the file, is run through every
writer of results: ``semanscope sa --out/--json``, ``semanscope run <task> --out``, ``semanscope
benchmark`` on the serial and the loky backend (``leaderboard.json``, ``runs/*.json``), and the
Python API (``to_dict()`` of each task's result, the CSC result of a sentence file).  No output may
hold the private folder; each names the file by its name beside its sha256.  ``--absolute-paths``
(``settings.absolute_paths``) keeps the absolute path, and only then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PKG_ROOT = str(Path(__file__).resolve().parents[1])


@pytest.fixture
def private(tmp_path) -> Path:
    folder = tmp_path / "home" / "alice" / "private words"  # a space too
    folder.mkdir(parents=True)
    rows = ["water,Wasser", "fire,Feuer", "sun,Sonne", "moon,Mond", "tree,Baum", "house,Haus", "dog,Hund", "cat,Katze"]
    (folder / "words.csv").write_text("# my own list\nenglish,german\n" + "\n".join(rows + ["water,Wasser"]) + "\n",
                                      encoding="utf-8")
    (folder / "sentences.txt").write_text("# mine\nThe train leaves at noon.\nI like tea.\nI like tea.\n"
                                          "She reads a book.\nWe walk home.\n", encoding="utf-8")
    return folder


def _cli(*args: object, env_extra: dict | None = None, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PKG_ROOT, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    env.pop("SEMANSCOPE_ABSOLUTE_PATHS", None) if not env_extra else None
    out = subprocess.run([sys.executable, "-m", "semanscope_nb", *map(str, args)], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _leaks(texts: dict[str, str], folder: Path) -> list[str]:
    forms = {str(folder), str(folder.resolve()), folder.parent.as_posix(), "alice"}
    return [f"{where}: {form}" for where, t in texts.items() for form in forms if form in t]


def _files(root: Path) -> dict[str, str]:
    return {str(p): p.read_text(encoding="utf-8") for p in root.rglob("*.json")}


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cli_results_name_the_file_not_its_folder(private, tmp_path):
    csv = private / "words.csv"
    out = tmp_path / "out"
    common = ["--model", "random-null", "--dataset", csv, "--n-boot", "20", "--cache-dir", tmp_path / "cache"]
    texts = {"sa --json": _cli("sa", *common, "--json", "--out", out / "sa.json", cwd=tmp_path).stdout}
    for task, extra in [("sa", []), ("pair-sa", []), ("permutation", ["--param", "n_perm=50"]),
                        ("retrieval", ["--param", "ks=[1,2]"]), ("bdi", []), ("projection", ["--param", 'method="pca"'])]:
        texts[f"run {task} --json"] = _cli("run", task, *common, *extra, "--json", "--out", out / f"run-{task}.json",
                                           cwd=tmp_path).stdout
    for backend in ("serial", "loky"):
        _cli("benchmark", "--models", "random-null", "--datasets", csv, "--n-boot", "20", "--backend", backend,
             "--n-jobs", "2", "--tasks", "sa,pair-sa", "--out", out / backend, "--cache-dir", tmp_path / "cache", cwd=tmp_path)
    texts.update(_files(out))
    assert len([k for k in texts if k.endswith("leaderboard.json")]) == 2
    assert len([k for k in texts if "/runs/" in k]) == 4
    assert not _leaks(texts, private), _leaks(texts, private)
    sa = json.loads((out / "sa.json").read_text())
    assert sa["provenance"]["dataset_source"] == "words.csv" and len(sa["provenance"]["dataset_sha256"]) == 64
    assert any("words.csv: line 11: duplicate of line 3" in line for line in sa["provenance"]["reader_report"])
    board = json.loads((out / "serial" / "leaderboard.json").read_text())
    assert board["meta"]["datasets"]["words"]["source"] == "words.csv"
    assert all(r["run_file"].startswith("runs/") for r in board["rows"])


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_absolute_paths_only_when_asked(private, tmp_path):
    csv = private / "words.csv"
    common = ["--model", "random-null", "--dataset", csv, "--n-boot", "20", "--cache-dir", tmp_path / "cache"]
    _cli("sa", *common, "--out", tmp_path / "asked.json", "--absolute-paths", cwd=tmp_path)
    _cli("sa", *common, "--out", tmp_path / "env.json", env_extra={"SEMANSCOPE_ABSOLUTE_PATHS": "1"}, cwd=tmp_path)
    for name in ("asked.json", "env.json"):
        prov = json.loads((tmp_path / name).read_text())["provenance"]
        assert prov["dataset_source"] == str(csv.resolve())
        assert any(line.startswith(str(csv.resolve())) for line in prov["reader_report"])


def test_python_results_to_dict_name_the_file_not_its_folder(private, tmp_path, monkeypatch):
    import semanscope_nb as snb
    from semanscope_nb.data.sentences import read_sentences
    from semanscope_nb.metrics.csc import concept_separation
    from semanscope_nb.runs.tasks import run_task
    from semanscope_nb.settings import settings

    monkeypatch.delenv("SEMANSCOPE_ABSOLUTE_PATHS", raising=False)
    ds = snb.load_dataset(private / "words.csv")
    emb = snb.embed(ds, "random-null", cache=snb.EmbeddingCache(tmp_path / "cache"))
    texts = {"embedded": json.dumps(emb.provenance)}
    for task, kw in [("sa", {"n_boot": 20}), ("pair-sa", {"n_boot": 20}), ("permutation", {"n_perm": 50}),
                     ("retrieval", {"ks": [1, 2]}), ("bdi", {}), ("projection", {"method": "pca", "projection_cache": False})]:
        texts[task] = json.dumps(run_task(task, emb, **kw).to_dict())
    corpus = read_sentences(private / "sentences.txt", language="en")
    csc = concept_separation(corpus, snb.load_model("random-null"), n_boot=0)
    texts["csc"] = json.dumps(csc.to_dict())
    assert not _leaks(texts, private), _leaks(texts, private)
    assert csc.provenance["corpus_source"] == "sentences.txt"
    assert any(n.startswith("sentences.txt: line 4: duplicate") for n in csc.notes), csc.notes
    settings.absolute_paths = True
    try:
        again = run_task("sa", snb.embed(ds, "random-null", cache=snb.EmbeddingCache(tmp_path / "cache")), n_boot=20)
    finally:
        settings.reset("absolute_paths")
    assert again.provenance["dataset_source"] == str((private / "words.csv").resolve())


def test_shareable_source_names(tmp_path, monkeypatch):
    from semanscope_nb.provenance import shareable_report, shareable_source
    from semanscope_nb.settings import settings

    monkeypatch.delenv("SEMANSCOPE_ABSOLUTE_PATHS", raising=False)
    assert shareable_source(settings.data_dir / "edge-cases.csv") == "bundled:edge-cases.csv"
    assert shareable_source(settings.shared_data_dir / "tatoeba" / "x.deu") == "shared:tatoeba/x.deu"
    assert shareable_source(tmp_path / "a" / "b.csv") == "b.csv"
    assert shareable_source(f"{tmp_path}/s.deu | {tmp_path}/s.eng") == "s.deu | s.eng"
    assert shareable_source(None) == "<memory>"
    monkeypatch.chdir(tmp_path)
    assert shareable_report(["sub/w.csv: line 2: x", f"{tmp_path}/sub/w.csv: y"], "sub/w.csv") == ["w.csv: line 2: x", "w.csv: y"]
