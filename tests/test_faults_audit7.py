"""Seventh fault audit: inputs a hostile reviewer would try, each guarding a fix (fails on the code before it).

- the projection cache tells a file it cannot read *now* (permission denied, EIO, a lock, a folder,
  FIFO or symlink out of its folder at the entry's name) from a damaged one: the first is projected
  in memory and left exactly as it is, only bytes read and found malformed are overwritten;
  a FIFO never hangs a reader (projection cache, surface store, job files);
- a :class:`WordDataset` built by hand is checked as the readers check a file (labels, duplicates,
  shape, emptiness), by one checker.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest

from semanscope_nb.errors import ArgumentError, CacheWarning, DatasetError

# --------------------------------------------------------------------------- projection cache: temporary != damage


@contextlib.contextmanager
def _no_hang(seconds: float = 10.0):
    """Fail (not hang) when a reader blocks on a FIFO: an alarm interrupts the blocked open()."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def _expired(*_):
        raise TimeoutError("a reader blocked on a FIFO")

    old = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _points(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((12, 5))


def _project(x: np.ndarray, cache):
    from semanscope_nb.plots.projection import project

    return project(x, method="pca", words=[f"w{i}" for i in range(len(x))], cache=cache)


def _cache(folder: Path):
    from semanscope_nb.plots.projection import ProjectionCache

    return ProjectionCache(folder=folder)


def _project_recording(x: np.ndarray, cache):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = _project(x, cache)
    return p, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO, errno.EAGAIN, errno.EMFILE])
def test_projection_entry_that_cannot_be_read_now_is_projected_in_memory_and_never_overwritten(tmp_path, monkeypatch,
                                                                                              code):
    x = _points(0)
    first = _project(x, _cache(tmp_path))
    path = tmp_path / f"{first.key}.npz"
    # the entry is made unusable *after* it was written (a stale foreign entry): only a read would show it,
    # so a writer that overwrites without reading is caught by the bytes check below
    path.write_bytes(b"held by another process: not ours to replace")
    before = path.read_bytes()
    real_load = np.load

    def locked(file, *a, **k):
        if Path(file) == path:
            raise OSError(code, os.strerror(code), str(file))
        return real_load(file, *a, **k)

    monkeypatch.setattr(np, "load", locked)
    cache = _cache(tmp_path)
    p, said = _project_recording(x, cache)
    assert not p.from_cache and cache.computed == 1
    np.testing.assert_allclose(p.coords, first.coords, rtol=0, atol=1e-12, err_msg="projected in memory, the same")
    assert path.read_bytes() == before, "a file that could not be read now is never overwritten"
    assert len(said) == 1 and "cannot be read now" in said[0] and "left as it is" in said[0], said
    assert "damage" not in said[0] and cache.unreadable == 1
    # served from memory afterwards, still without touching the file
    assert _project(x, cache).from_cache and path.read_bytes() == before
    monkeypatch.undo()
    # readable again (and malformed): now it is damage, recomputed and overwritten by a sound entry
    again, said = _project_recording(x, _cache(tmp_path))
    assert len(said) == 1 and "damaged" in said[0] and "recomputing" in said[0], said
    assert _project(x, _cache(tmp_path)).from_cache


def test_projection_entry_that_was_read_and_is_truncated_is_damage_and_rewritten(tmp_path):
    x = _points(1)
    first = _project(x, _cache(tmp_path))
    path = tmp_path / f"{first.key}.npz"
    path.write_bytes(path.read_bytes()[:50])
    p, said = _project_recording(x, _cache(tmp_path))
    assert not p.from_cache and len(said) == 1 and "damaged" in said[0], said
    assert _project(x, _cache(tmp_path)).from_cache, "the damaged entry was replaced by a sound one"


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_projection_entry_that_is_a_folder_or_a_fifo_is_left_alone_and_never_blocks(tmp_path, kind):
    if kind == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    x = _points(2)
    key = _project(x, False).key
    path = tmp_path / f"{key}.npz"
    if kind == "folder":
        path.mkdir()
        (path / "keep.txt").write_text("mine")
    else:
        os.mkfifo(path)  # opening it to read would block for ever (no writer)
    cache = _cache(tmp_path)
    with _no_hang():
        p, said = _project_recording(x, cache)
    assert not p.from_cache and np.isfinite(p.coords).all()
    assert len(said) == 1 and "cannot be read now" in said[0], said
    assert path.is_dir() if kind == "folder" else path.is_fifo(), "left as it is"
    assert cache.disk_errors == 0, "nothing was even tried: no write error either"


def test_projection_entry_that_is_a_symlink_out_of_the_folder_is_neither_followed_nor_fatal(tmp_path):
    x = _points(3)
    key = _project(x, False).key
    folder, outside = tmp_path / "cache", tmp_path / "outside.npz"
    folder.mkdir()
    outside.write_bytes(b"someone else's file")
    (folder / f"{key}.npz").symlink_to(outside)
    cache = _cache(folder)
    p, said = _project_recording(x, cache)  # raised ValueError before
    assert not p.from_cache and len(said) == 1 and "would leave the folder" in said[0], said
    assert outside.read_bytes() == b"someone else's file" and (folder / f"{key}.npz").is_symlink()


def test_a_fifo_never_hangs_the_surface_store_or_a_job_file_reader(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    from semanscope_nb.metrics.surface_store import SurfaceStore
    from semanscope_nb.runs.grid import read_job_file

    store = SurfaceStore(tmp_path / "surface")
    store.folder.mkdir()
    os.mkfifo(store.path(b"k" * 20))
    with _no_hang():
        assert store.get(b"k" * 20) is None and store.errors == 1 and store.damaged == 0
    os.mkfifo(tmp_path / "job.json")
    with _no_hang(), pytest.raises(OSError, match="not a regular file"):
        read_job_file(tmp_path / "job.json")


# --------------------------------------------------------------------------- WordDataset built by hand


def _dataset(**kw):
    from semanscope_nb.data import WordDataset

    args = dict(name="toy", languages=("en", "zh"), rows=((("water",), ("水",)), (("fire",), ("火",))))
    args.update(kw)
    return WordDataset(**args)


@pytest.mark.parametrize("label", ["../../etc/x", "<b>en</b>", "", " ", None, 3, "en\nzh"])
def test_hand_built_dataset_refuses_a_language_that_is_a_path_or_markup(label):
    with pytest.raises((ArgumentError, DatasetError), match="toy"):
        _dataset(languages=("en", label))


def test_hand_built_dataset_refuses_one_language_twice_and_takes_names_as_codes():
    with pytest.raises(DatasetError, match=r"'en' and 'English' are the same language \(en\)"):
        _dataset(languages=("en", "English"))
    with pytest.raises(DatasetError, match="language 'zh' is given twice"):
        _dataset(languages=("zh", "zh"))
    assert _dataset(languages=("English", "Chinese")).languages == ("en", "zh"), "as the readers do"


@pytest.mark.parametrize(("rows", "said"), [
    ((), "has no concept rows"),
    ([], "has no concept rows"),
    (((("water",),),), r"row 0 has 1 cell\(s\) but the dataset has 2 languages"),
    (((("water",), ("水",)), (("fire",), ("火",), ("x",))), r"row 1 has 3 cell\(s\)"),
    (((("water",), ()),), "row 0, language zh: empty cell"),
    (((("water",), ("",)),), "row 0, language zh: '' is not a word"),
    (((("water",), (None,)),), "row 0, language zh: None is not a word"),
    ((("water", ("水",)),), "row 0, language en: a cell must be a tuple of words"),
    (("water",), "row 0 must be a sequence of one cell per language"),
])
def test_hand_built_dataset_refuses_a_bad_shape_naming_the_row_and_language(rows, said):
    with pytest.raises(DatasetError, match=said):
        _dataset(rows=rows)


def test_hand_built_dataset_refuses_groups_or_line_numbers_not_one_per_row_and_an_empty_name():
    with pytest.raises(DatasetError, match=r"1 group\(s\) for 2 row\(s\)"):
        _dataset(groups=("nature",))
    with pytest.raises(DatasetError, match=r"3 line number\(s\) for 2 row\(s\)"):
        _dataset(line_numbers=(1, 2, 3))
    with pytest.raises(DatasetError, match="name must be non-empty"):
        _dataset(name="")


def test_hand_built_dataset_from_lists_equals_the_tuple_one_and_hashes():
    lists = _dataset(languages=["en", "zh"], rows=[[["water"], ["水"]], [["fire"], ["火"]]], groups=["a", "b"])
    tuples = _dataset(groups=("a", "b"))
    assert lists == tuples and hash(lists) == hash(tuples)


def test_readers_and_the_constructor_use_one_checker(tmp_path):
    """The word-list reader refuses a path-like key; the constructor refuses the same label the same way."""
    from semanscope_nb.data import read_word_lists

    (tmp_path / "en.txt").write_text("water\n", encoding="utf-8")
    with pytest.raises(ArgumentError, match="'../x' is not a language code or name") as by_reader:
        read_word_lists({"en": tmp_path / "en.txt", "../x": tmp_path / "en.txt"})
    with pytest.raises(ArgumentError, match="'../x' is not a language code or name") as by_hand:
        _dataset(languages=("en", "../x"))
    assert type(by_reader.value) is type(by_hand.value)


# --------------------------------------------------------------------------- the Vega bundle caches: temporary != damage


@pytest.mark.parametrize("which", ["export", "widget"])
def test_vega_bundle_file_that_cannot_be_read_now_is_rebuilt_in_memory_and_never_overwritten(tmp_path, monkeypatch,
                                                                                              which):
    vlc = pytest.importorskip("vl_convert")
    from semanscope_nb.settings import settings

    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: "/* vegaEmbed */ export default {};")
    if which == "export":
        from semanscope_nb.plots import export
        from semanscope_nb.provenance import safe_name

        monkeypatch.setattr(export, "_BUNDLES", {})
        path = Path(settings.cache_dir) / "vega-bundles" / safe_name(f"vl-convert-{getattr(vlc, '__version__', '?')}-vl-5.x.js")
        build = lambda: export._javascript_bundle("5.x")  # noqa: E731
    else:
        pytest.importorskip("anywidget")
        from semanscope_nb.widgets import vega_view

        monkeypatch.setattr(vega_view, "_BUNDLE", None)
        path = vega_view.vega_bundle_path()
        build = vega_view.vega_bundle
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("another process's bundle, locked right now", encoding="utf-8")
    _locked_read_text(monkeypatch, path)
    assert "vegaEmbed" in build(), "rebuilt, in memory"
    assert path.read_bytes() == b"another process's bundle, locked right now", "never overwritten"


# --------------------------------------------------------------------------- grid failures and leaderboard marks


def test_two_failing_models_whose_file_names_are_alike_are_two_failures(tmp_path):
    from semanscope_nb.runs.grid import run_grid

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = run_grid(["no-such?model", "no-such!model"], ["edge-cases"], ["sa"], params={"sa": {"n_boot": 20}},
                     languages=["en", "zh"], out_dir=tmp_path / "out", cache=tmp_path / "cache", progress=False)
    assert sorted(f["model"] for f in g.failures.values()) == ["no-such!model", "no-such?model"], "none lost"


def test_leaderboard_marks_an_undefined_score_n_a_never_nan_and_keeps_the_model():
    import pandas as pd

    from semanscope_nb.plots.leaderboard import leaderboard_table, leaderboard_wide

    table = pd.DataFrame({"model": ["m1", "m2", "m3", "m1"], "dataset": ["d1", "d1", "d1", "d2"],
                          "sa_cosine": [0.8, np.nan, 0.5, 0.7], "sem_cosine": [0.01, np.nan, np.nan, 0.02],
                          "delta": [0.1, np.nan, np.inf, 0.2]})
    wide = leaderboard_wide(table)
    # ranked by the gap: m2's is undefined and m3's infinite (no number), so both follow m1 in the table's order
    assert list(wide.index) == ["m1", "m2", "m3"], "every model kept"
    assert wide.loc["m2", "d1"] == "n/a" and wide.loc["m2", "d2"] == "", "undefined is marked, not run is blank"
    html = leaderboard_table(table).to_html()
    cells = [c.strip().lower() for c in html.replace(">", "<").split("<")]
    assert not {"nan", "+nan", "inf", "+inf", "-inf"} & set(cells), "no nan/inf shown"
    assert cells.count("n/a") == 4  # m2: d1, Avg SA, its gap; m3: an infinite gap is no number either


# --------------------------------------------------------------------------- MTEB export and the report's cost records


def _locked_read_text(monkeypatch, path: Path) -> None:
    real = Path.read_text

    def locked(self, *a, **k):
        if self == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", locked)


def test_mteb_export_never_writes_over_a_task_file_it_cannot_read_now(tmp_path, monkeypatch):
    from semanscope_nb.runs.mteb import MtebResult, write_mteb

    def result(score: float) -> MtebResult:
        return MtebResult("Tatoeba", "r1", {"test": [{"main_score": score, "hf_subset": "deu-eng", "languages": []}]}, 1.0,
                          model={"name": "org/model", "revision": "v1"})

    root = Path(write_mteb([result(0.1)], folder=tmp_path))
    task = root / "org__model" / "v1" / "Tatoeba.json"
    before = task.read_bytes()
    _locked_read_text(monkeypatch, task)
    with pytest.raises(PermissionError):  # its owner cannot be checked now: nothing is written over it
        write_mteb([result(0.9)], folder=tmp_path)
    assert task.read_bytes() == before
    monkeypatch.undo()
    task.write_text("{ damaged", encoding="utf-8")  # read and not JSON: damage, written over
    write_mteb([result(0.9)], folder=tmp_path)
    assert json.loads(task.read_text(encoding="utf-8"))["scores"]["test"][0]["main_score"] == 0.9


def test_model_report_cost_record_that_cannot_be_read_now_is_measured_again_and_left_alone(tmp_path, monkeypatch):
    import importlib
    from types import SimpleNamespace

    mr = importlib.import_module("semanscope_nb.runs.model_report")  # the module (the package exports a function so named)

    run = SimpleNamespace(jobs=SimpleNamespace(folder=tmp_path / "jobs", force=False))
    monkeypatch.setattr(mr, "_encode_seconds", lambda model, probe, language: (0.25, 8))
    first = mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    (path,) = (tmp_path / "costs").glob("*.json")
    path.write_text('{"dims": 8, "encode_seconds": 9.0, "measured": "another process"}', encoding="utf-8")
    before = path.read_bytes()
    _locked_read_text(monkeypatch, path)
    again = mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    assert again["encode_seconds"] == first["encode_seconds"] == 0.25, "measured again"
    assert path.read_bytes() == before, "a record that could not be read now is never overwritten"


# --------------------------------------------------------------------------- the panel's SA store


@pytest.fixture(scope="module")
def sa_case():
    import semanscope_nb as snb

    ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    emb = snb.embed(ds, "random-null", cache=False)
    return emb, snb.run_task("sa", emb, n_boot=20, seed=0, surface_null=False)


def test_sa_store_file_that_cannot_be_read_now_is_a_miss_left_as_it_is(tmp_path, monkeypatch, sa_case):
    from semanscope_nb.widgets.explore import SAStore

    emb, result = sa_case
    store = SAStore(tmp_path)
    store.put(emb, result, n_boot=20, seed=0)
    (path,) = tmp_path.glob("*.json")
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=1), encoding="utf-8")  # its own bytes
    before = path.read_bytes()
    _locked_read_text(monkeypatch, path)
    assert store.get(emb, n_boot=20, seed=0) is None and store.errors == 1
    store.put(emb, result, n_boot=20, seed=0)  # what the panel does after the miss
    monkeypatch.undo()
    assert path.read_bytes() == before, "never overwritten"
    assert SAStore(tmp_path).get(emb, n_boot=20, seed=0).cosine.sa == result.cosine.sa


def test_sa_store_refuses_a_changed_file_or_another_keys_file(tmp_path, sa_case):
    import dataclasses

    from semanscope_nb.widgets.explore import SAStore

    emb, result = sa_case
    store = SAStore(tmp_path)
    store.put(emb, result, n_boot=20, seed=0)
    (path,) = tmp_path.glob("*.json")
    d = json.loads(path.read_text(encoding="utf-8"))
    d["cosine"]["sa"] = 0.99  # a changed score, still valid JSON of the right type
    path.write_text(json.dumps(d), encoding="utf-8")
    assert store.get(emb, n_boot=20, seed=0) is None and store.errors == 1, "a changed score is never served"
    store.put(emb, result, n_boot=20, seed=0)
    assert store.get(emb, n_boot=20, seed=0).cosine.sa == result.cosine.sa, "recomputed and rewritten"
    changed = {w: v + 1.0 for w, v in emb.vectors[emb.languages[0]].items()}
    other = dataclasses.replace(emb, vectors={**emb.vectors, emb.languages[0]: changed})
    (tmp_path / f"{store.key(other, n_boot=20, seed=0)}.json").write_bytes(path.read_bytes())  # copied over
    assert store.get(other, n_boot=20, seed=0) is None, "another key's file is not this result"


# --------------------------------------------------------------------------- CLI: a FIFO as data, a folder as --out


def test_a_fifo_given_as_a_dataset_is_refused_never_read(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    from semanscope_nb.data import read_semanscope_csv

    os.mkfifo(tmp_path / "words.csv")
    with _no_hang(), pytest.raises(DatasetError, match="words.csv: not a regular file"):
        read_semanscope_csv(tmp_path / "words.csv")


def test_a_folder_given_as_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from semanscope_nb.runs import cli

    monkeypatch.setattr(cli, "_cmd_sa", lambda args: pytest.fail("the work began"))
    monkeypatch.setattr(cli, "_cmd_run", lambda args: pytest.fail("the work began"))
    with pytest.raises(SystemExit) as stop:
        cli.main(["sa", "--model", "random-null", "--dataset", "edge-cases", "--out", str(tmp_path)])
    assert stop.value.code == 2 and "is a folder; give a file name" in capsys.readouterr().err
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "sa", "--model", "random-null", "--dataset", "edge-cases", "--out", str(tmp_path / "a-file" / "r.json")])
    assert stop.value.code == 2 and "which is a file, not a folder" in capsys.readouterr().err
    (tmp_path / "a-file").unlink()
    from semanscope_nb.provenance import atomic_write_text

    with pytest.raises(IsADirectoryError, match=str(tmp_path)):  # the writer names the path, not its temporary file
        atomic_write_text(tmp_path, "x")
    assert list(tmp_path.iterdir()) == []


def test_a_language_selected_twice_is_named_at_the_dataset():
    import semanscope_nb as snb

    ds = snb.load_dataset("edge-cases")
    with pytest.raises(DatasetError, match="language 'en' is given twice"):
        ds.select(["en", "en"])


def test_sa_legend_of_collapsed_vectors_marks_the_scores_n_a_never_nan():
    import semanscope_nb as snb
    from semanscope_nb.plots.legend import sa_legend_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = snb.semantic_affinity({"en": np.ones((10, 4)), "zh": np.ones((10, 4))}, n_boot=20, seed=0)
    assert np.isnan(r.cosine.sa)
    text = sa_legend_text(r)
    assert "SA cosine n/a" in text and "SA Euclidean n/a" in text
    assert "nan" not in text.lower().replace("non-", "")


@pytest.mark.parametrize("reader", ["result", "panel state"])
def test_a_fifo_given_as_a_result_or_panel_state_is_refused_never_read(tmp_path, reader):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "saved.json"
    os.mkfifo(path)
    if reader == "result":
        from semanscope_nb.results import Result

        with _no_hang(), pytest.raises(OSError, match="not a regular file"):
            Result.load(path)
    else:
        from semanscope_nb.widgets.panel_state import StateError, read_state

        with _no_hang(), pytest.raises(StateError, match="saved.json.*not a regular file"):
            read_state(path)


def test_a_fifo_named_csv_in_a_data_folder_is_listed_as_unusable_never_opened(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    from semanscope_nb.data.catalog import list_datasets, list_folder_datasets

    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "good.csv").write_text("english,german\nwater,Wasser\n", encoding="utf-8")
    with _no_hang():
        listed = {i.name: i for i in list_datasets(tmp_path)}
        found, notes = list_folder_datasets(tmp_path)
    assert listed["good"].error is None and "not a regular file" in listed["pipe"].error
    assert [i.name for i in found] == ["good"] and len(notes) == 1 and "not a regular file" in notes[0], notes


def test_text_leaderboard_marks_undefined_numbers_n_a_and_keeps_the_layout_of_defined_ones():
    import pandas as pd

    from semanscope_nb.runs.evaluate import format_leaderboard

    row = dict(model="m", dataset="d", delta=0.1, delta_low=0.05, delta_high=0.15, sa_cosine=0.812, sem_cosine=0.005,
               ci_low=0.8, ci_high=0.82, sa_null=0.7, sa_euclidean=0.75, tier="good", paper_tier="good")
    undefined = {**row, "model": "collapsed", "delta": np.nan, "delta_low": np.nan, "delta_high": np.nan,
                 "sa_cosine": np.nan, "sem_cosine": np.nan, "ci_low": np.nan, "ci_high": np.nan, "sa_null": np.nan,
                 "sa_euclidean": np.nan, "tier": "undefined", "paper_tier": "undefined"}
    lines = format_leaderboard(pd.DataFrame([row, undefined])).splitlines()
    assert lines[2].split() == ["m", "d", "+0.100", "[+0.050,", "+0.150]", "0.812", "±", "0.005", "[0.800,", "0.820]",
                                "0.700", "0.750", "good"]
    assert "nan" not in lines[3].lower() and lines[3].split()[2:] == ["n/a"] * 5 + ["undefined"]


def test_report_numbers_mark_every_non_finite_value_n_a():
    from semanscope_nb.runs.report_html import format_number

    for v in (float("nan"), np.float32("nan"), np.float64("nan"), float("inf"), -np.inf, None):
        assert format_number(v) == "n/a", v
    assert format_number(np.float32(0.25)) == "0.2500" and format_number(7) == "7"


def test_read_mteb_names_a_damaged_metadata_file_and_never_blocks_on_a_fifo(tmp_path):
    from semanscope_nb.runs.mteb import MtebResult, read_mteb, write_mteb

    res = MtebResult("T", "r1", {"test": [{"main_score": 0.5, "hf_subset": "default", "languages": []}]}, 1.0,
                     model={"name": "org/model", "revision": "v1"})
    root = Path(write_mteb([res], folder=tmp_path))
    (root / "org__model" / "v1" / "model_meta.json").write_text('{"name": ', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"model_meta.json, line 1: not valid JSON"):
        read_mteb(root)
    (root / "org__model" / "v1" / "model_meta.json").write_bytes(b'{"name": "\xff"}')
    with pytest.raises(DatasetError, match=r"model_meta.json: not UTF-8"):
        read_mteb(root)
    (root / "org__model" / "v1" / "model_meta.json").unlink()
    (root / "org__model" / "v1" / "sub.json").mkdir()  # a folder named like a task file: not one
    assert [r.task_name for r in read_mteb(root)] == ["T"]
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "org__model" / "v1" / "U.json")
        with _no_hang(), pytest.raises(DatasetError, match=r"U.json: not a regular file"):
            read_mteb(root)


# --------------------------------------------------------------------------- the shared data setting names a file


def test_a_shared_data_setting_that_names_a_file_is_named_by_every_reader(tmp_path, monkeypatch):
    """SEMANSCOPE_SHARED_DATA set to a file: each reader of the shared data says the setting names no folder (it said
    "Tatoeba folder '<file>/tatoeba' not found", or handed out a path under a file)."""
    from semanscope_nb.data import bitext, dictionaries, reference, sentences, word_similarity

    not_a_folder = tmp_path / "shared.txt"
    not_a_folder.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("SEMANSCOPE_SHARED_DATA", str(not_a_folder))
    readers = {
        "tatoeba": lambda: bitext.read_tatoeba("deu"),
        "sib-200": lambda: bitext.read_sib200("eng_Latn"),
        "muse": lambda: dictionaries.read_muse_dictionary("en-de"),
        "bcws": lambda: word_similarity.read_bcws(),
        "ess": sentences.ess_folder,
        "paper file": lambda: reference.paper_file("DS1"),
    }
    for name, read in readers.items():
        with pytest.raises(DatasetError, match="SEMANSCOPE_SHARED_DATA.*not a folder") as err:
            read()
        assert str(not_a_folder) in str(err.value), name
    monkeypatch.setenv("SEMANSCOPE_SHARED_DATA", str(tmp_path))  # a folder (empty): the readers' own "not found"
    with pytest.raises(DatasetError, match="not found"):
        bitext.read_tatoeba("deu")
