"""Issue 20: every path the toolkit writes is built from sanitised parts and stays inside its folder.

Each writer gets traversal (``..``, ``../../../x``), absolute and reserved names; the test then
lists every file under a sandbox whose only writable child is the chosen folder, so a file
written anywhere else is found.  Names that would overwrite the writer's own files (MTEB's
``model_meta.json``) or another result's file are refused before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from semanscope_nb.errors import ArgumentError
from semanscope_nb.provenance import path_inside, safe_name
from semanscope_nb.runs.mteb import MtebResult, read_mteb, write_mteb


def _result(task: str = "Tatoeba", name: str = "org/model", revision: str = "v1", score: float = 0.5) -> MtebResult:
    return MtebResult(task, "r1", {"test": [{"main_score": score, "hf_subset": "deu-eng", "languages": ["deu-Latn", "eng-Latn"]}]},
                      1.0, model={"name": name, "revision": revision})


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("task, name, revision", [
    ("Tatoeba", "org/model", "../../../escaped"),
    ("Tatoeba", "org/..", ".."),
    ("Tatoeba", "../..", "v1"),
    ("Tatoeba", "org/model", "/tmp/absolute-revision"),
    ("Tatoeba", "/abs/org/model", "v1"),
    ("../../../x", "org/model", "v1"),
    ("/etc/passwd", "org/model", "v1"),
])
def test_mteb_export_never_writes_outside_its_folder(tmp_path, task, name, revision):
    folder = tmp_path / "a" / "b" / "results"
    root = write_mteb([_result(task, name, revision)], folder=folder)
    assert Path(root) == folder
    written = _files(tmp_path)
    assert written and all(f.startswith("a/b/results/") for f in written), written
    back = read_mteb(root)
    assert [(b.task_name, b.model["name"], b.model["revision"]) for b in back] == [(task, name, revision)]


@pytest.mark.parametrize("task", ["model_meta", "Model_Meta", "full_precision"])
def test_mteb_task_named_like_the_layouts_own_files_is_refused(tmp_path, task):
    write_mteb([_result("Tatoeba")], folder=tmp_path)
    before = {f: (tmp_path / f).read_bytes() for f in _files(tmp_path)}
    with pytest.raises(ArgumentError, match=f"task name '{task}'.*rename the task"):
        write_mteb([_result(task)], folder=tmp_path)
    assert {f: (tmp_path / f).read_bytes() for f in _files(tmp_path)} == before  # nothing written, metadata intact
    assert [r.model["name"] for r in read_mteb(tmp_path)] == ["org/model"]


def test_mteb_slash_task_round_trips_with_its_model_metadata(tmp_path):
    root = write_mteb([_result("Bitext/Tatoeba", score=0.25), _result("Tatoeba", score=0.75)], cache=tmp_path)
    back = {r.task_name: r for r in read_mteb(root)}
    assert set(back) == {"Bitext/Tatoeba", "Tatoeba"}
    assert back["Bitext/Tatoeba"].model["name"] == "org/model" and back["Bitext/Tatoeba"].model["revision"] == "v1"
    assert back["Bitext/Tatoeba"].score("test", "deu-eng") == 0.25 and back["Tatoeba"].score("test", "deu-eng") == 0.75


def test_mteb_names_that_would_share_a_file_are_refused(tmp_path):
    with pytest.raises(ArgumentError, match="tasks 'a/b' and 'a-b' both map to the file"):
        write_mteb([_result("a/b"), _result("a-b")], folder=tmp_path)
    assert _files(tmp_path) == []  # refused before anything was written
    write_mteb([_result("a/b", score=0.1)], folder=tmp_path)
    with pytest.raises(ArgumentError, match="both map to the file"):  # against the file already there
        write_mteb([_result("a-b", score=0.9)], folder=tmp_path)
    with pytest.raises(ArgumentError, match="model 'org/a b' revision 'v1' and model 'org/a_b' revision 'v1' both map"):
        write_mteb([_result("T", "org/a b"), _result("T", "org/a_b")], folder=tmp_path)
    assert [(r.task_name, r.first_main_score) for r in read_mteb(tmp_path)] == [("a/b", 0.1)]


@pytest.mark.parametrize("name", ["../../../escaped", "<absolute>", "..", "sub/dir/fig", ".hidden", "x" * 300])
def test_save_figures_keeps_every_file_inside_the_folder(tmp_path, name):
    import altair as alt

    from semanscope_nb.plots.export import save_figures

    if name == "<absolute>":  # an absolute name pointing outside the folder (but inside this test's sandbox)
        name = str(tmp_path / "outside" / "figure")
    folder = tmp_path / "x" / "y" / "figures"
    chart = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    paths = save_figures({name: chart}, folder, formats=["svg", "html"])
    assert [p.parent for p in paths] == [folder, folder]
    assert all(not p.name.startswith(".") for p in paths)
    assert [p.suffix for p in paths] == [".svg", ".html"]  # a long name is shortened, its extension kept
    assert _files(tmp_path) == sorted(f"x/y/figures/{p.name}" for p in paths)


def test_save_figures_refuses_two_names_for_one_file(tmp_path):
    import altair as alt

    from semanscope_nb.plots.export import save_figures

    chart = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    with pytest.raises(ValueError, match="'a/b' and 'a_b' would both be saved as 'a_b.svg'"):
        save_figures({"a/b": chart, "a_b": chart}, tmp_path, formats=["svg"])
    assert _files(tmp_path) == []


def test_download_link_file_name_is_one_safe_component():
    import altair as alt

    from semanscope_nb.plots.export import download_link

    chart = alt.Chart(alt.InlineData(values=[{"v": 1}])).mark_bar().encode(y="v:Q")
    for filename in ("../../../home/x/.bashrc", "y" * 300):
        link = download_link(chart, "svg", filename=filename)
        name = link.split('download="', 1)[1].split('"', 1)[0]
        assert "/" not in name and not name.startswith(".") and name.endswith(".svg"), name


def test_grid_job_files_and_leaderboard_stay_inside_the_results_folder(tmp_path):
    from semanscope_nb.data.words import dataset_from_frame
    from semanscope_nb.runs.grid import run_grid

    frame = pd.DataFrame({"english": ["water", "fire", "sun", "moon", "tree", "house", "dog", "cat"],
                          "german": ["Wasser", "Feuer", "Sonne", "Mond", "Baum", "Haus", "Hund", "Katze"]})
    names = ("../../../escaped", "/tmp/absolute-dataset", "..", ".hidden", "leaderboard", "runs")  # traversal, absolute, reserved
    hostile = [dataset_from_frame(frame.drop(index=i), name=n) for i, n in enumerate(names)]
    out = tmp_path / "a" / "results"
    run_grid(["random-null"], hostile, ["sa"], params={"sa": {"n_boot": 20}}, out_dir=out, cache=tmp_path / "cache",
             progress=False)
    written = [f for f in _files(tmp_path) if not f.startswith("cache/")]
    assert written and all(f.startswith("a/results/") for f in written), written
    runs = sorted(f for f in written if f.startswith("a/results/runs/"))
    assert len(runs) == len(names) and all(Path(f).parent.as_posix() == "a/results/runs" for f in runs), runs
    assert not any(Path(f).name.startswith(".") for f in runs), runs
    assert sorted(f for f in written if not f.startswith("a/results/runs/")) == ["a/results/leaderboard.csv",
                                                                                  "a/results/leaderboard.json"]
    board = json.loads((out / "leaderboard.json").read_text())
    assert {r["run_file"] for r in board["rows"]} == {f"runs/{Path(f).name}" for f in runs}


def test_path_helpers_refuse_what_leaves_the_folder(tmp_path):
    from semanscope_nb.provenance import ensure_inside

    assert path_inside(tmp_path, "../../x.json").parent == tmp_path
    assert safe_name("/etc/passwd") == "_etc_passwd" and safe_name("..") == "_.."
    with pytest.raises(ValueError, match="would leave the folder"):
        ensure_inside(tmp_path, tmp_path / ".." / "x.json")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "link").symlink_to(outside)  # a symlink inside that points outside
    with pytest.raises(ValueError, match="would leave the folder"):
        ensure_inside(tmp_path, tmp_path / "link" / "x.json")
    with pytest.raises(ValueError, match="empty name"):
        safe_name("")
