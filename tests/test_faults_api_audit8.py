"""Audit 8: bad arguments get a clear error naming the argument, before any work (never a raw Python error, never
silent acceptance), and the grid's and the report's files are what their readers promise."""

from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.errors import ArgumentError, EmbeddingError, JobFileWarning

LANGS = ["en", "zh"]
SENTS = ["The cat sits on the mat today.", "A dog runs in the park quickly.", "She reads a long book at night.",
         "We eat rice and fish for lunch.", "The river flows to the sea slowly.", "He plays the guitar very well."]


# --------------------------------------------------------------------------- 1, 2: load_model


@pytest.mark.parametrize("model", [123, 4.5, ["random-null"]], ids=["int", "float", "list"])
def test_a_model_that_is_not_an_id_or_an_encoder_is_refused_naming_model(model):
    with pytest.raises(ArgumentError, match="^model must be a model id"):
        snb.load_model(model)
    with pytest.raises(ArgumentError, match="^model must be"):
        snb.dataset_affinity("edge-cases", model, languages=LANGS, n_boot=200, surface_null=False)


@pytest.fixture
def counted_models():
    """Register models whose factory counts its calls (and may wait); removed afterwards."""
    from semanscope_nb.models import registry

    base = registry.get_model_info("random-null")
    added: list[str] = []

    def add(model_id, factory):
        registry.register_model(dataclasses.replace(base, id=model_id, factory=factory))
        added.append(model_id)

    yield base, add
    for model_id in added:
        registry._REGISTRY.pop(model_id, None)
        registry._LOADED.pop(model_id, None)


def test_load_model_from_several_threads_builds_one_encoder(counted_models):
    base, add = counted_models
    calls = []

    def slow():
        calls.append(threading.get_ident())
        time.sleep(0.2)
        return base.factory()

    add("audit8-slow-null", slow)
    out = []
    threads = [threading.Thread(target=lambda: out.append(snb.load_model("audit8-slow-null"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1, "the factory runs once"
    assert len(out) == 4 and len({id(o) for o in out}) == 1, "one encoder per process"


def test_a_model_being_built_does_not_hold_up_another(counted_models):
    base, add = counted_models
    release, started = threading.Event(), threading.Event()

    def blocked():
        started.set()
        release.wait(10)
        return base.factory()

    add("audit8-blocked-null", blocked)
    add("audit8-quick-null", base.factory)
    t = threading.Thread(target=snb.load_model, args=("audit8-blocked-null",))
    t.start()
    try:
        assert started.wait(5)
        done = []
        other = threading.Thread(target=lambda: done.append(snb.load_model("audit8-quick-null")))
        other.start()
        other.join(5)
        assert done, "another model loads while the first is being built"
    finally:
        release.set()
        t.join()


# --------------------------------------------------------------------------- 3, 4: run_task


def test_bdi_with_one_language_as_source_and_target_names_it():
    with pytest.raises(ArgumentError, match="bdi: source and target are the same language 'en'"):
        snb.run_task("bdi", "edge-cases", "random-null", languages=LANGS, source="en", target="en")


@pytest.mark.parametrize("value", ["no", "false", "0", 0, 7, None], ids=repr)
@pytest.mark.parametrize("task", ["sa", "pair-sa"])
def test_surface_null_must_be_a_bool(task, value):
    with pytest.raises(ArgumentError, match="surface_null must be True or False"):
        snb.run_task(task, "edge-cases", "random-null", languages=LANGS, n_boot=200, surface_null=value)


def test_surface_null_takes_a_numpy_bool():
    r = snb.dataset_affinity("edge-cases", "random-null", languages=LANGS, n_boot=200, surface_null=np.bool_(False))
    assert r.surface is None


# --------------------------------------------------------------------------- 5, 6, 9: run_grid


GRID = dict(languages=LANGS, params={"sa": {"n_boot": 200, "surface_null": False}}, progress=False)


def test_run_grid_takes_one_model_as_a_string_like_one_task(tmp_path):
    g = snb.run_grid("random-null", "edge-cases", tasks="sa", out_dir=tmp_path, **GRID)
    assert not g.failures
    assert list(g.table["model"]) == ["random-null"]


@pytest.mark.parametrize("bad", [1.5, 0, True, "3"], ids=repr)
def test_run_grid_max_concepts_is_checked(tmp_path, bad):
    with pytest.raises(ArgumentError, match="^max_concepts must be"):
        snb.run_grid(["random-null"], ["edge-cases"], max_concepts=bad, out_dir=tmp_path, **GRID)


@pytest.mark.parametrize("where", ["file", "inside a file", "runs is a file"])
def test_run_grid_out_dir_that_is_a_file_is_refused_before_work(tmp_path, where):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    out = {"file": tmp_path / "afile", "inside a file": tmp_path / "afile" / "sub", "runs is a file": tmp_path}[where]
    if where == "runs is a file":
        (tmp_path / "runs").write_text("x", encoding="utf-8")
    with pytest.raises(ArgumentError, match="^out_dir: .* is .*a file, not a folder"):
        snb.run_grid(["random-null"], ["edge-cases"], out_dir=out, **GRID)


@pytest.mark.parametrize("bad", [float("nan"), -1, 0, True, "10", float("inf")], ids=repr)
def test_run_grid_connect_timeout_is_checked_before_dask_starts(tmp_path, bad):
    with pytest.raises(ArgumentError, match="^connect_timeout must be a positive number"):
        snb.run_grid(["random-null"], ["edge-cases"], backend="dask", scheduler="tcp://127.0.0.1:1", connect_timeout=bad,
                     out_dir=tmp_path, **GRID)


def test_model_report_work_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with pytest.raises(ArgumentError, match="^work_dir: .* a file, not a folder"):
        snb.model_report(["random-null", "tfidf-char"], languages=LANGS, datasets=["edge-cases"], n_boot=200,
                         tatoeba=False, sib200=False, csc=False, contextual=False, progress=False,
                         work_dir=tmp_path / "afile")


def test_grid_job_file_of_a_long_dataset_name_keeps_task_key_and_json(tmp_path):
    from semanscope_nb.runs.grid import GridJob

    name = "d" * 120
    src = Path(snb.load_dataset("edge-cases").source)
    shutil.copy(src, tmp_path / f"{name}.csv")
    out = tmp_path / "out"
    g = snb.run_grid(["random-null"], [tmp_path / f"{name}.csv"], out_dir=out, **GRID)
    (job,) = g.jobs
    (f,) = (out / "runs").glob("*.json")
    assert f.name.startswith("random-null__ddd") and f.name.endswith(f"__sa__{job.key}.json"), f.name
    rows = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert (out / rows[0]["run_file"]).is_file(), "the leaderboard names the job file as written"
    # a job file of an earlier version (its whole name cut at 80 characters) is resumed, and moved to its full name
    legacy = GridJob.legacy_path(job, out / "runs")
    assert legacy.name != f.name and not legacy.name.endswith(".json")
    f.rename(legacy)
    again = snb.run_grid(["random-null"], [tmp_path / f"{name}.csv"], out_dir=out, **GRID)
    assert list(again.resumed) == [job.key]
    assert [p.name for p in (out / "runs").glob("*.json")] == [f.name]


# --------------------------------------------------------------------------- 7: concept_separation


@pytest.mark.parametrize(("arg", "bad"), [
    ("n_boot", 1), ("n_boot", True), ("n_boot", 10**9), ("n_boot", "10"),
    ("seed", -1), ("seed", "a"), ("seed", 1.5), ("seed", True),
    ("length_buckets", ["a"]), ("length_buckets", [5, 2]), ("length_buckets", [-3]), ("length_buckets", []),
    ("length_buckets", [2, 2]),
], ids=repr)
def test_concept_separation_checks_n_boot_seed_and_length_buckets_as_every_statistic(arg, bad):
    kw = {"n_boot": 200, arg: bad}
    with pytest.raises(ArgumentError, match=f"^{arg} must be"):
        snb.concept_separation(SENTS, "tfidf-char", language="en", cache=False, **kw)


# --------------------------------------------------------------------------- 8: bitext_retrieval


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 8)), rng.normal(size=(30, 8))


@pytest.mark.parametrize("names", [("a",), ("a", 1), ("a", "b", "c"), ("a", "")], ids=repr)
def test_bitext_retrieval_names_must_be_a_pair_of_strings(pair, names):
    with pytest.raises(ArgumentError, match="^names must be a pair"):
        snb.bitext_retrieval(*pair, n_boot=0, names=names)


@pytest.mark.parametrize(("arg", "labels"), [("source_labels", ["a", "b", "c"]), ("target_labels", ["x"] * 31),
                                             ("source_labels", "abc")], ids=repr)
def test_bitext_retrieval_labels_must_be_one_per_row(pair, arg, labels):
    with pytest.raises(ArgumentError, match=f"^{arg} "):
        snb.bitext_retrieval(*pair, n_boot=0, **{arg: labels})


# --------------------------------------------------------------------------- 10: the report's cost records


def _cost_case(tmp_path, monkeypatch):
    mr = importlib.import_module("semanscope_nb.runs.model_report")  # the module (the package exports a function so named)
    run = SimpleNamespace(jobs=SimpleNamespace(folder=tmp_path / "jobs", force=False))
    monkeypatch.setattr(mr, "_encode_seconds", lambda model, probe, language: (0.25, 8))
    return mr, run


@pytest.mark.parametrize("planted", [
    '{"dims": -7, "encode_seconds": NaN, "measured": "<img src=x onerror=alert(1)>"}',
    '{"dims": 8, "encode_seconds": 1e400, "measured": "2026-01-01T00:00:00+00:00"}',
    '{"dims": "8", "encode_seconds": 9.0, "measured": "2026-01-01T00:00:00+00:00"}',
    '{"dims": 8, "encode_seconds": 9.0, "measured": "2026-01-01T00:00:00+00:00", "model": "random-null", "key": "0"}',
    "[1, 2]",
    "{ damaged",
], ids=["negative-nan", "inf", "str-dims", "other-key", "list", "not-json"])
def test_a_damaged_cost_record_is_measured_again_with_a_warning(tmp_path, monkeypatch, planted):
    mr, run = _cost_case(tmp_path, monkeypatch)
    mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    (path,) = (tmp_path / "costs").glob("*.json")
    path.write_text(planted, encoding="utf-8")
    with pytest.warns(JobFileWarning, match="measured again"):
        rec = mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    assert rec["dims"] == 8 and rec["encode_seconds"] == 0.25
    assert json.loads(path.read_text(encoding="utf-8"))["model"] == "random-null", "replaced by the new measurement"


def test_another_models_cost_record_copied_over_is_measured_again(tmp_path, monkeypatch):
    mr, run = _cost_case(tmp_path, monkeypatch)
    mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    monkeypatch.setattr(mr, "_encode_seconds", lambda model, probe, language: (9.0, 99))
    mr._measured_cost(run, "tfidf-char", ["water", "fire"], "en")
    (mine,) = (tmp_path / "costs").glob("random-null__*.json")
    (theirs,) = (tmp_path / "costs").glob("tfidf-char__*.json")
    shutil.copy(theirs, mine)
    monkeypatch.setattr(mr, "_encode_seconds", lambda model, probe, language: (0.25, 8))
    with pytest.warns(JobFileWarning, match="holds another measurement"):
        rec = mr._measured_cost(run, "random-null", ["water", "fire"], "en")
    assert (rec["dims"], rec["encode_seconds"]) == (8, 0.25)
    again = mr._measured_cost(run, "random-null", ["water", "fire"], "en")  # now read back as it is
    assert again == rec


def test_the_bdi_pair_is_checked_before_anything_is_embedded(tmp_path):
    # the check runs on the dataset (runs.tasks' check hook): an encoder whose embedding would fail is never reached
    from semanscope_nb.models.encoders import Encoder

    class Refuses(Encoder):
        model_id = "refuses-to-embed"

        def _encode(self, texts):
            raise AssertionError("embedded before the bdi pair was checked")

    with pytest.raises(ArgumentError, match="bdi: source and target are the same language 'zh'"):
        snb.run_task("bdi", "edge-cases", Refuses(), languages=LANGS, source="zh", target="zh", cache=False)


@pytest.mark.parametrize("bad, match", [
    ({"en": np.array([["a", "b"], ["c", "d"], ["e", "f"]]), "zh": np.ones((3, 2))}, r"embeddings\['en'\] is not an array of numbers"),
    ({"en": [[1.0, 2.0], [3.0]], "zh": np.ones((2, 2))}, r"embeddings\['en'\] is not an array of numbers"),
    ({"en": np.ones((3, 2)), "zh": np.ones((3, 2)) * (1 + 2j)}, r"embeddings\['zh'\] holds complex numbers"),
], ids=["text", "ragged", "complex"])
def test_semantic_affinity_names_the_language_of_arrays_that_are_not_real_vectors(bad, match):
    with pytest.raises(EmbeddingError, match=match):
        snb.semantic_affinity(bad, n_boot=0)


@pytest.mark.parametrize("option, value, match", [
    ("method", "xx", "method must be 'percentile', 'basic' or 'BCa'"),
    ("on_zero", "skip", "on_zero must be 'error' or 'drop'"),
    ("batch", 0, "batch must be None or a positive integer"),
    ("thresholds", (0.5, 0.6), "thresholds must be a TierThresholds"),
])
def test_semantic_affinity_options_are_argument_errors(option, value, match):
    x = np.random.default_rng(0).normal(size=(10, 4))
    with pytest.raises(ArgumentError, match=match):
        snb.semantic_affinity({"en": x, "zh": x}, n_boot=0, **{option: value})
    with pytest.raises(ArgumentError, match="embeddings must map language -> array"):
        snb.semantic_affinity([x, x], n_boot=0)


@pytest.mark.parametrize("random_state", [-1, "a", True, 1.5])
def test_a_projection_seed_that_is_not_a_non_negative_int_is_named(random_state):
    with pytest.raises(ArgumentError, match=r"random_state must be an int >= 0"):
        snb.run_task("projection", "edge-cases", "random-null", languages=LANGS, random_state=random_state, cache=False)


def test_a_k_beyond_the_corpus_is_an_argument_error():
    x = np.random.default_rng(0).normal(size=(1, 4))
    with pytest.raises(ArgumentError, match=r"k=5 is larger than the corpus \(1 item\)"):
        snb.bitext_retrieval(x, x, n_boot=0)
    with pytest.raises(ArgumentError, match=r"ks must be positive integers, got \('3',\)"):
        snb.bitext_retrieval(np.eye(4), np.eye(4), ks=("3",), n_boot=0)
