"""The scale-out grid: serial vs loky vs a two-process Dask LocalCluster, resume, failures, killed workers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.runs.grid import GridBackendError, MetricRecord
from semanscope_nb.runs.tasks import Task, register_task

MODELS = ["random-null", "tfidf-char", "use-multilingual"]
DATASETS = ["edge-cases", "cultural-nuance"]
FAST = dict(max_concepts=25, params={"sa": {"n_boot": 50}, "retrieval": {"n_boot": 0, "ks": [1, 5]}}, progress=False)


def _results(g: snb.GridResult) -> dict:
    """Every job's result, without the parts that legitimately differ between runs (time stamps, worker ids)."""
    out = {}
    for rec in g.records.values():
        out[(rec["job"]["model"], rec["job"]["dataset"], rec["job"]["task"])] = json.loads(json.dumps(rec["result"]))
    return out


def _strip_created(obj):
    if isinstance(obj, dict):
        return {k: _strip_created(v) for k, v in obj.items() if k != "created"}
    if isinstance(obj, list):
        return [_strip_created(v) for v in obj]
    return obj


def _assert_same_numbers(a, b, *, atol: float, rtol: float, where: str = "") -> None:
    """Walk two JSON results: floats within (atol, rtol), everything else -- ints (ranks, predictions, counts),
    strings (tiers, labels), booleans, keys, lengths -- exactly equal."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: keys differ"
        for k in a:
            _assert_same_numbers(a[k], b[k], atol=atol, rtol=rtol, where=f"{where}/{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_numbers(x, y, atol=atol, rtol=rtol, where=f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert not isinstance(a, bool) and not isinstance(b, bool), where
        np.testing.assert_allclose(float(b), float(a), rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        assert a == b and type(a) is type(b), f"{where}: {a!r} != {b!r} (a decision, a count or a label: equal exactly)"


@pytest.mark.slow
def test_serial_and_loky_give_identical_results(tmp_path):
    kw = dict(models=MODELS, datasets=DATASETS, tasks=["sa", "retrieval", "csc"], corpora=["csc-everyday-en"], **FAST)
    kw["params"] = {**kw["params"], "csc": {"max_sentences": 15, "n_boot": 20}}
    serial = snb.run_grid(**kw, backend="serial", cache=tmp_path / "c1", out_dir=tmp_path / "r1")
    loky = snb.run_grid(**kw, backend="loky", n_jobs=2, cache=tmp_path / "c2", out_dir=tmp_path / "r2")  # its own cold cache
    assert not serial.failures and not loky.failures
    assert len(serial.records) == len(loky.records) == 3 * (2 * 2 + 1)
    # Decisions (ranks, predictions, tiers, counts) equal exactly.  Floats: the loky workers run 1 BLAS thread where
    # the serial run has 2, and the USE port's vectors move with the batch a text was first encoded in (the two runs
    # fill their caches in different orders) by at most its vector_tolerance per coordinate: a cosine or a distance
    # between unit vectors then moves by at most eps = 2 sqrt(512) * tolerance, and so do means, RMS, bootstrap
    # percentiles and KDE inputs of such values; SA = intra / (intra + inter) with intra + inter >= 1/2 moves by at
    # most 2 eps, the CSC overlap (an integral of two densities of cosines) by a few eps.  So 4 eps for USE jobs.
    # The other models' vectors are bit-identical (tested in test_ties.py), so only float64 summation order differs:
    # rtol 1e-9 is n * u (n <= 1e6 terms, u = 2**-53) with room to spare.
    eps = 2 * np.sqrt(512) * snb.load_model("use-multilingual").vector_tolerance
    a_res, b_res = _strip_created(_results(serial)), _strip_created(_results(loky))
    assert a_res.keys() == b_res.keys()
    for key in a_res:
        use = key[0] == "use-multilingual"
        _assert_same_numbers(a_res[key], b_res[key], atol=4 * eps if use else 1e-12, rtol=0 if use else 1e-9, where=str(key))
    pd.testing.assert_frame_equal(serial.table, loky.table, check_exact=False, rtol=0, atol=4 * eps)
    assert {r["worker"]["pid"] for r in serial.records.values()} == {os.getpid()}
    assert os.getpid() not in {r["worker"]["pid"] for r in loky.records.values()}
    assert "loky (2 worker processes)" in loky.backend
    # the combined store: one leaderboard with a row (and a run file) per job
    rows = json.loads((tmp_path / "r2" / "leaderboard.json").read_text())["rows"]
    assert len(rows) == 15 and all((tmp_path / "r2" / r["run_file"]).exists() for r in rows)  # relative to the results folder
    assert set(pd.read_csv(tmp_path / "r2" / "leaderboard.csv").task) == {"sa", "retrieval", "csc"}
    assert loky.leaderboard("csc").overlap.between(0, 1).all()


def _p_at_1_by_loops(ds: snb.WordDataset, vectors: dict, src: str, tgt: str) -> float:
    """Lexicon-induction P@1 straight from the definition: nearest target word by cosine, hit if it is any gold.

    Near ties follow the documented rule (metrics/ties.py): the first candidate (lowest index) whose cosine is within
    2 (d + 2) u of the best, u = 2**-24 (float32 vectors)."""
    si, ti = ds.languages.index(src), ds.languages.index(tgt)
    queries = list(dict.fromkeys(w for row in ds.rows for w in row[si]))
    cands = list(dict.fromkeys(w for row in ds.rows for w in row[ti]))
    hits = 0
    for q in queries:
        gold = {t for row in ds.rows if q in row[si] for t in row[ti]}
        qv = [float(x) for x in vectors[q]]
        tol = 2 * (len(qv) + 2) * 2.0**-24
        sims = []
        for c in cands:
            cv = [float(x) for x in vectors[c]]
            dot = sum(a * b for a, b in zip(qv, cv))
            norm = (sum(a * a for a in qv) ** 0.5) * (sum(b * b for b in cv) ** 0.5)
            sims.append(dot / norm if norm else 0.0)
        best = next(c for c, sim in zip(cands, sims) if sim >= max(sims) - tol)
        hits += best in gold
    return hits / len(queries)


@pytest.mark.slow
def test_grid_metrics_match_simple_references(tmp_path, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    g = snb.run_grid(["random-null", "use-multilingual"], ["edge-cases"], tasks=["sa", "retrieval", "csc"],
                     corpora=["csc-everyday-en"], languages=["en", "zh", "de"], max_concepts=40,
                     params={"sa": {"n_boot": 100, "seed": 3}, "retrieval": {"n_boot": 0, "ks": [1]},
                             "csc": {"max_sentences": 12, "n_boot": 30}},
                     cache=cache, out_dir=tmp_path / "r", progress=False)
    assert not g.failures
    ds = snb.load_dataset("edge-cases", languages=["en", "zh", "de"]).subset(range(40))
    for model in ("random-null", "use-multilingual"):
        enc = snb.load_model(model)
        texts = ds.all_texts()
        vectors = dict(zip(texts, cache.embed(enc, texts)))
        rec = next(r for r in g.records.values() if r["job"]["model"] == model and r["job"]["task"] == "retrieval")
        for tgt in ("zh", "de"):
            want = _p_at_1_by_loops(ds, vectors, "en", tgt)
            assert rec["result"]["pairs"][f"en->{tgt}"]["accuracy"]["1"] == pytest.approx(want, abs=1e-12)
        sa = next(r for r in g.records.values() if r["job"]["model"] == model and r["job"]["task"] == "sa")
        direct = snb.dataset_affinity(ds, model, cache=cache, n_boot=100, seed=3)
        assert sa["summary"]["sa_cosine"] == direct.cosine.sa and sa["summary"]["ci_low"] == direct.cosine.ci[0]
        csc = next(r for r in g.records.values() if r["job"]["model"] == model and r["job"]["task"] == "csc")
        from semanscope_nb.data.sentences import load_sentence_corpus
        from semanscope_nb.metrics.csc.separation import concept_separation

        corpus = load_sentence_corpus("csc-everyday-en").sample(12, seed=0)
        ref = concept_separation(corpus, model, language="en", n_boot=30, seed=0, cache=cache)
        assert csc["summary"]["overlap"] == pytest.approx(ref.overlap, abs=1e-12)
        assert csc["provenance"]["languages"] == ["en"]
    use = g.leaderboard("retrieval").set_index("model").p_at_1
    assert use["use-multilingual"] > use["random-null"]


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_resume_skips_finished_jobs_and_keys_on_parameters(tmp_path):
    kw = dict(models=["random-null", "tfidf-char"], datasets=["edge-cases"], tasks=["sa", "retrieval"],
              cache=tmp_path / "c", out_dir=tmp_path / "r", **FAST)
    first = snb.run_grid(**kw)
    assert len(first.records) == 4 and not first.resumed and first.n_encoded > 0
    files = sorted((tmp_path / "r" / "runs").glob("*.json"))
    assert len(files) == 4
    files[0].unlink()  # as if the run had been killed while this job was in flight
    second = snb.run_grid(**kw)
    assert len(second.resumed) == 3 and len(second.records) == 4 and second.n_encoded == 0
    pd.testing.assert_frame_equal(first.table, second.table)
    forced = snb.run_grid(**kw, force=True)
    assert not forced.resumed and len(forced.records) == 4
    assert {r["run_id"] for r in forced.records.values()} == {forced.run_id} != {first.run_id}  # recomputed, not re-read
    assert all(json.loads(f.read_text())["run_id"] == forced.run_id for f in (tmp_path / "r" / "runs").glob("*.json"))
    # other parameters are other jobs; a parameter grid adds one job per value
    more = snb.run_grid(**kw, param_grid={"sa": {"seed": [0, 1]}})
    sa = more.leaderboard("sa")
    assert len(sa) == 4 and len(more.records) == 6 and len(more.resumed) == 4  # seed 0 (the default) ran before; seed 1 is new
    assert sa.groupby("model").sa_cosine.nunique().eq(1).all()  # the point estimate does not depend on the bootstrap seed
    assert sa.groupby("model").ci_low.nunique().eq(2).all()  # the interval does


def test_a_failing_job_is_reported_and_the_rest_finish(tmp_path):
    def flaky(emb, **params):
        if emb.name == "cultural-nuance":
            raise RuntimeError("boom on purpose")
        return MetricRecord({"n_texts": len(emb.dataset.all_texts())}, "n_texts")

    register_task(Task("flaky-test", flaky, MetricRecord), replace=True)
    seen = []
    g = snb.run_grid(["random-null", "no-such-model"], ["edge-cases", "cultural-nuance"], tasks=["flaky-test", "sa"],
                     backend="loky", n_jobs=2, cache=tmp_path / "c", out_dir=tmp_path / "r",
                     on_job=lambda *a: seen.append(a), **FAST)
    assert len(g.records) == 3  # random-null: sa x 2 + flaky on edge-cases
    errors = {(f["model"], f["dataset"], f["task"]): f["error"] for f in g.failures.values()}
    assert errors[("random-null", "cultural-nuance", "flaky-test")] == "RuntimeError: boom on purpose"
    assert sum("unknown model 'no-such-model'" in e for e in errors.values()) == 4
    assert ("random-null", "cultural-nuance", "flaky-test", "failed: RuntimeError: boom on purpose") in seen
    meta = json.loads((tmp_path / "r" / "leaderboard.json").read_text())["meta"]
    assert len(meta["failures"]) == 5
    assert not (tmp_path / "r" / "runs" / ".inflight").exists() or not any((tmp_path / "r" / "runs" / ".inflight").iterdir())


@pytest.mark.slow
def test_dask_two_worker_local_cluster_one_store_one_cache_no_word_embedded_twice(tmp_path):
    datasets = ["edge-cases", "cultural-nuance", "conceptual-space"]
    kw = dict(models=["random-null", "use-multilingual"], datasets=datasets, tasks=["sa", "retrieval"], **FAST)
    g = snb.run_grid(**kw, backend="dask", n_jobs=2, cache=tmp_path / "cache", out_dir=tmp_path / "r")
    assert not g.failures and len(g.records) == 2 * 3 * 2
    assert "LocalCluster (2 worker processes)" in g.backend
    pids = {r["worker"]["pid"] for r in g.records.values()} | {w["worker"]["pid"] for w in g.warm}
    assert os.getpid() not in pids
    assert len(list((tmp_path / "r" / "runs").glob("*.json"))) == 12  # one store, one file per job
    cache = snb.EmbeddingCache(tmp_path / "cache")
    loaded = [snb.load_dataset(d).subset(range(25)) for d in datasets]
    union = list(dict.fromkeys(t for ds in loaded for t in ds.all_texts()))
    for model in kw["models"]:
        key = snb.load_model(model).cache_key
        encoded = sum(w["n_encoded"] for w in g.warm if w["model"] == model)
        encoded += sum(r["embedding"]["n_encoded"] for r in g.records.values() if r["job"]["model"] == model)
        assert cache.count(key) == len(union) == encoded  # every word of every dataset embedded exactly once
        assert all(r["embedding"]["n_encoded"] == 0 for r in g.records.values() if r["job"]["model"] == model)
    serial = snb.run_grid(**kw, backend="serial", cache=tmp_path / "cache2", out_dir=tmp_path / "r2")
    pd.testing.assert_frame_equal(serial.table, g.table)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_fails_fast_with_a_suggestion(tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(GridBackendError, match=r"could not reach the Dask scheduler .* within 2 s.*run locally instead: backend='loky'"):
        snb.run_grid(["random-null"], ["edge-cases"], backend="dask", scheduler=address, connect_timeout=2,
                     cache=tmp_path / "c", out_dir=tmp_path / "r", **FAST)


def _killer_task(name: str, marker: str, always: bool) -> Task:
    def killer(emb, **params):
        if emb.name == "cultural-nuance" and (always or not os.path.exists(marker)):
            with open(marker, "a") as fh:
                fh.write(f"{os.getpid()}\n")
            os._exit(17)  # the worker process dies mid-job
        return MetricRecord({"ok": 1, "pid": os.getpid()}, "ok")

    return register_task(Task(name, killer, MetricRecord), replace=True)


@pytest.mark.slow
def test_killed_loky_worker_is_retried_or_reported_and_the_grid_completes(tmp_path):
    marker = str(tmp_path / "killed")
    _killer_task("killer-once", marker, False)
    seen = []
    g = snb.run_grid(["random-null"], DATASETS + ["oracle-primitives"], tasks=["killer-once", "sa"], backend="loky",
                     n_jobs=2, cache=tmp_path / "c", out_dir=tmp_path / "r", on_job=lambda *a: seen.append(a), **FAST)
    assert not g.failures and len(g.records) == 6
    assert len(open(marker).read().split()) == 1  # it died once ...
    assert any(s[2] == "killer-once" and s[3].startswith("retrying (worker died") for s in seen)  # ... and was retried
    marker2 = str(tmp_path / "killed-always")
    _killer_task("killer-always", marker2, True)
    g2 = snb.run_grid(["random-null"], DATASETS, tasks=["killer-always", "sa"], backend="loky", n_jobs=2, max_retries=1,
                      cache=tmp_path / "c", out_dir=tmp_path / "r2", **FAST)
    (err,) = [f["error"] for f in g2.failures.values()]
    assert "worker process died during this job 2 times" in err
    assert len(g2.records) == 3 and len(open(marker2).read().split()) == 2


@pytest.mark.slow
def test_killed_dask_worker_job_is_rescheduled_and_the_grid_completes(tmp_path):
    marker = str(tmp_path / "killed")
    _killer_task("killer-once-dask", marker, False)
    g = snb.run_grid(["random-null"], DATASETS, tasks=["killer-once-dask", "sa"], backend="dask", n_jobs=2,
                     cache=tmp_path / "c", out_dir=tmp_path / "r", **FAST)
    assert not g.failures and len(g.records) == 4 and len(open(marker).read().split()) == 1


def test_bad_grid_arguments_are_named(tmp_path):
    kw = dict(cache=tmp_path / "c", out_dir=tmp_path / "r", progress=False)
    with pytest.raises(snb.errors.UnknownNameError, match=r"unknown task 'sa2'; registered: .*retrieval.*sa\. Did you mean 'sa'\?"):
        snb.run_grid(["random-null"], ["edge-cases"], tasks=["sa2"], **kw)
    with pytest.raises(snb.errors.ArgumentError, match=r"task 'sa': unknown parameter\(s\) \['nboot'\]; it takes confidence, method, n_boot"):
        snb.run_grid(["random-null"], ["edge-cases"], params={"sa": {"nboot": 3}}, **kw)
    with pytest.raises(snb.errors.UnknownNameError, match=r"params names unknown task\(s\) \['cs'\]; registered: "):
        snb.run_grid(["random-null"], ["edge-cases"], params={"cs": {"n_boot": 3}}, **kw)
    with pytest.raises(ValueError, match=r"param_grid\['sa'\]\['seed'\] must be a non-empty list"):
        snb.run_grid(["random-null"], ["edge-cases"], param_grid={"sa": {"seed": 3}}, **kw)
    with pytest.raises(ValueError, match="backend must be one of serial, loky, dask, got 'threads'"):
        snb.run_grid(["random-null"], ["edge-cases"], backend="threads", **kw)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer, got 0"):
        snb.run_grid(["random-null"], ["edge-cases"], backend="loky", n_jobs=0, **kw)
    with pytest.raises(ValueError, match="scheduler='tcp://x:1' needs backend='dask'"):
        snb.run_grid(["random-null"], ["edge-cases"], backend="loky", scheduler="tcp://x:1", **kw)
    with pytest.raises(snb.errors.ArgumentError, match=r"task 'bad-data': data must be among \('words', 'sentences', 'parallel', 'labelled'\)"):
        register_task(Task("bad-data", lambda emb: None, MetricRecord, data=("pixels",)))
    with pytest.raises(snb.errors.ArgumentError, match="task 'sa' is already registered"):
        register_task(Task("sa", lambda emb: None, MetricRecord))
    g = snb.run_grid(["random-null"], ["edge-cases"], tasks=["retrieval"], params={"retrieval": {"targets": ["xx"]}}, **kw)
    (err,) = [f["error"] for f in g.failures.values()]
    assert err == "ArgumentError: target language(s) ['xx'] not in dataset 'edge-cases' (en, zh, de, fr, es, ja)"


def _cli(*args, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "semanscope_nb", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_cli_benchmark_on_loky_and_bad_options(tmp_path):
    out = _cli("benchmark", "--backend", "loky", "--n-jobs", "2", "--tasks", "sa,retrieval", "--models", "random-null,tfidf-char",
               "--datasets", "edge-cases", "--max-concepts", "15", "--n-boot", "20", "--out", str(tmp_path / "r"),
               "--cache-dir", str(tmp_path / "c"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SA cos ± SEM" in out.stdout and "retrieval:p_at_1" in out.stdout and "loky (2 worker processes)" in out.stdout
    assert "random-null x edge-cases [retrieval]: done" in out.stderr
    assert len(json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]) == 4
    again = _cli("benchmark", "--backend", "loky", "--n-jobs", "2", "--tasks", "sa,retrieval", "--models", "random-null,tfidf-char",
                 "--datasets", "edge-cases", "--max-concepts", "15", "--n-boot", "20", "--out", str(tmp_path / "r"),
                 "--cache-dir", str(tmp_path / "c"))
    assert again.returncode == 0 and "resumed 4" in again.stdout
    bad = _cli("benchmark", "--backend", "loky", "--scheduler", "tcp://127.0.0.1:1", "--models", "random-null", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "needs backend='dask'" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("benchmark", "--tasks", "sa,nope", "--models", "random-null", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "unknown task 'nope'" in bad.stderr
