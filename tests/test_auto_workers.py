"""``semanscope benchmark --n-jobs auto`` (what ./scripts/run.sh passes): worker processes from the CPUs free at the
start, serial below two -- and the same results either way."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from semanscope_nb import machine
from semanscope_nb.runs import grid


def _free(monkeypatch, n: int) -> None:
    monkeypatch.setattr(grid, "free_cpus", lambda: n)


def test_free_cpus_reads_the_run_queue_and_never_goes_below_zero():
    n = machine.free_cpus()
    import os

    assert 0 <= n <= len(os.sched_getaffinity(0)), "at most the CPUs this process may use (it counts itself as running)"


@pytest.mark.parametrize(("free", "jobs", "want"), [(0, None, 1), (1, None, 1), (2, None, 2), (3, 2, 2), (4, 1, 1)])
def test_auto_workers_takes_the_free_cpus_at_most_one_per_job(monkeypatch, free, jobs, want):
    _free(monkeypatch, free)
    assert grid.auto_workers(jobs=jobs) == want


@pytest.mark.parametrize(("backend", "n_jobs", "scheduler", "free", "want"), [
    (None, None, None, 2, ("serial", None)),  # nothing asked: serial, whatever the machine
    (None, 3, None, 0, ("loky", 3)),  # a count asked: that many, whatever the load
    (None, "auto", None, 2, ("loky", 2)),
    (None, "auto", None, 1, ("serial", None)),  # a busy machine: one process
    (None, "auto", None, 0, ("serial", None)),
    ("serial", "auto", None, 2, ("serial", None)),  # a named backend wins
    ("loky", "auto", None, 1, ("loky", 1)),
    (None, "auto", "local", 2, ("dask", 2)),
])
def test_resolve_backend(monkeypatch, backend, n_jobs, scheduler, free, want):
    _free(monkeypatch, free)
    assert grid.resolve_backend(backend, n_jobs=n_jobs, scheduler=scheduler) == want


@pytest.mark.parametrize("bad", ["0", "two", "-1", ""])
def test_a_bad_worker_count_is_one_error_line_naming_the_option(bad):
    out = subprocess.run([sys.executable, "-m", "semanscope_nb", "benchmark", "--n-jobs", bad], capture_output=True,
                         text=True, timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "--n-jobs" in lines[0], out.stderr[-800:]


def test_run_sh_passes_auto_before_the_users_arguments():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "scripts" / "run.sh").read_text()
    assert 'benchmark --n-jobs auto "$@"' in text, "a user's own --n-jobs / --backend comes later and wins"


@pytest.mark.slow  # three CLI runs end to end
def test_auto_gives_the_serial_and_the_loky_runs_results(tmp_path):
    """Whatever ``auto`` picks on this machine now, the leaderboard rows are those of a serial and a 2-worker run."""
    common = ("benchmark", "--models", "random-null,tfidf-char", "--datasets", "edge-cases", "--n-boot", "20",
              "--max-concepts", "30", "--cache-dir", str(tmp_path / "cache"))
    boards = {}
    for name, extra in (("serial", ("--backend", "serial")), ("loky", ("--n-jobs", "2")), ("auto", ("--n-jobs", "auto"))):
        out = subprocess.run([sys.executable, "-m", "semanscope_nb", *common, *extra, "--out", str(tmp_path / name)],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-1500:]
        assert ("on loky (2 worker" in out.stdout) if name == "loky" else True
        assert "on serial" in out.stdout or "on loky" in out.stdout
        rows = json.loads((tmp_path / name / "leaderboard.json").read_text())["rows"]
        boards[name] = [{k: v for k, v in r.items() if k not in ("created", "seconds", "pid", "provenance")} for r in rows]
    assert len(boards["serial"]) == 2
    assert boards["auto"] == boards["serial"] == boards["loky"], "the backend never changes a number, tier or verdict"


@pytest.mark.slow  # a real torch model, cold caches, two grids
def test_a_cold_loky_run_embeds_in_this_process_and_gets_the_serial_runs_vectors(tmp_path):
    """Padded torch batches move a vector's last bits with its batch (MiniLMEncoder.vector_tolerance): the loky grid
    embeds in the driver, one model at a time as a serial run does, so a cold run's numbers are the serial run's."""
    import os

    import semanscope_nb as snb

    kw = dict(models=["all-minilm-l6-v2", "random-null"], datasets=["edge-cases"], tasks=["sa"], max_concepts=30,
              languages=["en", "de"], params={"sa": {"n_boot": 20, "seed": 0}})
    serial = snb.run_grid(**kw, backend="serial", cache=tmp_path / "c1", out_dir=tmp_path / "r1")
    loky = snb.run_grid(**kw, backend="loky", n_jobs=2, cache=tmp_path / "c2", out_dir=tmp_path / "r2")
    assert not serial.failures and not loky.failures
    assert {w["worker"]["pid"] for w in loky.warm} == {os.getpid()}, "the embedding phase ran in the driver"
    assert any(r["worker"]["pid"] != os.getpid() for r in loky.records.values()), "the metric jobs in the workers"
    assert sum(w["n_encoded"] for w in loky.warm) == sum(w["n_encoded"] for w in serial.warm) > 0
    a, b = snb.EmbeddingCache(tmp_path / "c1"), snb.EmbeddingCache(tmp_path / "c2")
    key = snb.load_model("all-minilm-l6-v2").cache_key
    texts = list(dict.fromkeys(t for t in snb.load_dataset("edge-cases").select(["en", "de"]).subset(range(30)).all_texts()))
    import numpy as np

    (va, _), (vb, _) = a.get(key, texts), b.get(key, texts)
    assert len(va) == len(vb) == len(texts)
    for t in texts:
        np.testing.assert_array_equal(va[t], vb[t], err_msg=f"{t!r}: the same batches in one process, the same bits")
    cols = [c for c in serial.table.columns if c not in ("seconds",)]
    assert serial.table[cols].equals(loky.table[cols])
