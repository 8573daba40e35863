"""Issue 10: the CLI and the panels never show a raw traceback.

One test per class of fault: bad arguments and inputs, a bad embedding cache,
damaged job files, unknown languages, errors inside the widget panels, a killed
grid driver (its loky workers must go too), and the dataset readers' reports.
Every CLI check runs the real ``python -m semanscope_nb`` in a subprocess.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import semanscope_nb as snb

# an ignored column ("human") and a repeated row: the reader has something to report
PAIRS_CSV = "english,chinese,human\nwater,水,a\nfire,火,b\nsun,日,c\nmoon,月,d\ntree,树,e\nwater,水,a\n"


def _start(*args: object, **kw: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "semanscope_nb", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _run(*commands: tuple) -> list[subprocess.CompletedProcess]:
    """Run several CLI commands at once (each a tuple of arguments); their results in order."""
    procs = [_start(*c) for c in commands]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def _one_error_line(out: subprocess.CompletedProcess, *needles: str, code: int = 2) -> None:
    """Exit status ``code`` and exactly one ``semanscope: error:`` line on stderr, naming every needle."""
    assert "Traceback" not in out.stderr, out.stderr[-1500:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semanscope: error: "), out.stderr[-1500:]
    assert out.returncode == code, (out.returncode, out.stderr)
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def _pairs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pairs.csv"
    path.write_text(PAIRS_CSV, encoding="utf-8")
    return path


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_bad_arguments_and_inputs_are_one_named_line(tmp_path):
    folder_csv = tmp_path / "folder.csv"
    folder_csv.mkdir()
    listing = tmp_path / "listing"
    (listing / "x.csv").mkdir(parents=True)
    _pairs(listing)
    r = tmp_path / "r"
    as_dataset, empty, n_jobs, worst, model, dataset, bench_model, bench_folder, datasets = _run(
        ("sa", "--model", "random-null", "--dataset", folder_csv, "--n-boot", "10"),
        ("sa", "--model", "random-null", "--dataset", "", "--n-boot", "10"),
        ("benchmark", "--models", "random-null", "--datasets", "edge-cases", "--n-jobs", "0", "--out", r),
        ("sa", "--model", "random-null", "--dataset", "edge-cases", "--worst", "-3"),
        ("sa", "--model", "use-multilingal", "--dataset", "edge-cases"),
        ("sa", "--model", "random-null", "--dataset", "no-such-dataset"),
        ("benchmark", "--models", "random-null,no-such-model", "--datasets", "edge-cases", "--out", r),
        ("benchmark", "--models", "random-null", "--datasets", f"edge-cases,{folder_csv}", "--out", r),
        ("datasets", "--folder", listing),
    )
    _one_error_line(as_dataset, f"--dataset '{folder_csv}'", "is a folder")
    _one_error_line(empty, "--dataset", "empty")
    _one_error_line(n_jobs, "--n-jobs", "positive", "0")
    _one_error_line(worst, "--worst", "-3")
    _one_error_line(model, "unknown model 'use-multilingal'", "Did you mean 'use-multilingual'")
    _one_error_line(dataset, "unknown dataset 'no-such-dataset'")
    _one_error_line(bench_model, "unknown model 'no-such-model'")
    _one_error_line(bench_folder, f"--datasets '{folder_csv}'", "is a folder")
    assert not r.exists()  # nothing ran
    # a folder listing with a sub-folder named x.csv: the CSV is listed, the sub-folder named in one warning line
    assert datasets.returncode == 0 and "Traceback" not in datasets.stderr, datasets.stderr[-1500:]
    assert datasets.stderr.strip().splitlines() == [f"semanscope: warning: {listing / 'x.csv'}: a folder, not a CSV file; skipped"]
    assert "pairs" in datasets.stdout and "en,zh" in datasets.stdout


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cache_faults_are_named_not_tracebacks(tmp_path):
    data = _pairs(tmp_path / "data")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    foreign, other_schema, garbage = (tmp_path / n for n in ("foreign", "other-schema", "garbage"))
    for folder, sql in ((foreign, "CREATE TABLE accounts (id INTEGER, owner TEXT)"), (other_schema, "CREATE TABLE vectors (a INTEGER)")):
        folder.mkdir()
        with sqlite3.connect(folder / "embeddings.sqlite") as con:
            con.execute(sql)
        con.close()
    garbage.mkdir()
    (garbage / "embeddings.sqlite").write_bytes(b"this is no SQLite database" * 40)
    sa = ("sa", "--model", "random-null", "--dataset", data, "--n-boot", "10", "--worst", "0", "--cache-dir")
    is_file, foreign_out, schema_out, garbage_out = _run(*(sa + (f,) for f in (a_file, foreign, other_schema, garbage)))
    _one_error_line(schema_out, str(other_schema / "embeddings.sqlite"), "not a semanscope cache", "'vectors' table")
    _one_error_line(foreign_out, str(foreign / "embeddings.sqlite"), "not a semanscope cache", "accounts")
    _one_error_line(is_file, f"--cache-dir '{a_file}'", "is a file, not a folder")
    assert (foreign / "embeddings.sqlite").stat().st_size > 0  # someone else's file is left alone
    # a file that is not a database at all is moved aside and rebuilt: one warning line naming it, then the result
    assert garbage_out.returncode == 0 and "Traceback" not in garbage_out.stderr, garbage_out.stderr[-1500:]
    named = [ln for ln in garbage_out.stderr.splitlines() if "embeddings.sqlite" in ln]
    assert len(named) == 1 and named[0].startswith("semanscope: warning: ") and str(garbage) in named[0], garbage_out.stderr
    assert "SA cosine" in garbage_out.stdout and list(garbage.glob("embeddings.sqlite.damaged-*"))
    # our own cache, token-level table and vector checks included, is of course accepted
    ours = tmp_path / "ours"
    snb.EmbeddingCache(ours).put_token_entries("tokens|m", [("entry", "{}", b"")])
    with sqlite3.connect(ours / "embeddings.sqlite") as con:
        assert {"vectors", "token_vectors", "vector_checks"} <= {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    (mine,) = _run(sa + (ours,))
    assert mine.returncode == 0 and "SA cosine" in mine.stdout, mine.stderr[-1500:]


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_damaged_job_files_are_recomputed_and_named(tmp_path):
    data = _pairs(tmp_path / "data")
    common = ("benchmark", "--models", "random-null", "--datasets", data, "--n-boot", "20", "--cache-dir", tmp_path / "c")
    serial, grid = tmp_path / "serial", tmp_path / "grid"
    commands = (common + ("--out", serial), common + ("--backend", "serial", "--out", grid))
    assert all(o.returncode == 0 for o in _run(*commands))
    files = [next((out / "runs").glob("*.json")) for out in (serial, grid)]
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])  # truncated, as by a full disk or a kill mid-copy
    for out, f, root in zip(_run(*commands), files, (serial, grid)):
        assert out.returncode == 0 and "Traceback" not in out.stderr and "FAILED" not in out.stdout, out.stderr[-1500:] + out.stdout
        warned = [ln for ln in out.stderr.splitlines() if ln.startswith("semanscope: warning: ")]
        # named relative to the results folder: the warning is also kept in leaderboard.json, which may be shared
        assert len(warned) == 1 and f"runs/{f.name}" in warned[0] and "damaged job file" in warned[0], out.stderr
        assert str(root) not in warned[0]
        assert json.loads(f.read_text(encoding="utf-8"))  # recomputed and written again
        rows = json.loads((root / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
        assert len(rows) == 1 and 0.0 < rows[0]["sa_cosine"] < 1.0
        assert json.loads((root / "leaderboard.json").read_text())["meta"]["warnings"] == [warned[0].removeprefix("semanscope: warning: ")]


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_unknown_languages_are_an_error_naming_them(tmp_path):
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    serial, grid = _run(
        ("benchmark", "--models", "random-null", "--datasets", "edge-cases", "--languages", "en,klingon", "--out", r1),
        ("benchmark", "--models", "random-null", "--datasets", "edge-cases", "--languages", "en,zh,klingon",
         "--backend", "serial", "--out", r2),
    )
    _one_error_line(serial, "unknown language(s) ['klingon']", "edge-cases")
    _one_error_line(grid, "unknown language(s) ['klingon']", "edge-cases")
    assert not (r1 / "leaderboard.csv").exists() and not (r2 / "leaderboard.csv").exists()
    kw = dict(cache=snb.EmbeddingCache(tmp_path / "c"), max_concepts=10)
    with pytest.raises(snb.errors.UnknownNameError, match=r"unknown language\(s\) \['klingon', 'vulcan'\]"):
        snb.run_benchmark(["random-null"], ["edge-cases"], languages=["en", "zh", "klingon", "vulcan"], n_boot=0,
                          out_dir=tmp_path / "r3", **kw)
    with pytest.raises(snb.errors.UnknownNameError, match=r"unknown language\(s\) \['klingon'\]"):
        snb.run_grid(["random-null"], ["edge-cases"], languages=["en", "zh", "klingon"], out_dir=tmp_path / "r4",
                     progress=False, **kw)
    ok = snb.run_benchmark(["random-null"], ["edge-cases"], languages=["english", "zh"], n_boot=0, out_dir=None, **kw)
    assert ok.results[("random-null", "edge-cases", "sa")].languages == ("en", "zh")  # names are still accepted


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_panels_show_errors_inside_and_stay_usable(tmp_path):
    from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings
    from semanscope_nb.widgets import ExplorePanel
    from semanscope_nb.widgets.csc_panel import CSCPanel, CSCPanelState

    folder = tmp_path / "mine"
    (folder / "x.csv").mkdir(parents=True)
    pairs = _pairs(folder)
    cache_dir = tmp_path / "panel-cache"
    panel = ExplorePanel(model="random-null", dataset="edge-cases", languages=["en", "klingon"], max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(), cache=str(cache_dir))
    assert "klingon" in panel.datasets.message.value and "snb-error" in panel.datasets.message.value
    assert panel.error is None and panel.state.dataset.languages == ("en", "zh")  # usable with the languages it has
    assert (cache_dir / "embeddings.sqlite").is_file()  # cache="folder" as a str is a folder
    # the Load-folder button on a folder holding a sub-folder named x.csv
    panel.datasets.folder_text.value = str(folder)
    panel.datasets.folder_button.click()
    assert "x.csv" in panel.datasets.message.value and "pairs" in [v for _, v in panel.datasets.dropdown.options]
    # an invalid threshold from the slider: named under the sliders, the tiers keep their last valid value
    before = panel.tiers.value
    panel.tiers.great_slider.value = float("nan")
    assert "great" in panel.tiers.message.value and "nan" in panel.tiers.message.value and panel.tiers.value == before
    panel.tiers.great_slider.value = 0.3  # the next valid change works
    assert panel.tiers.message.value == "" and panel.tiers.value == snb.TierThresholds(0.3, 0.3)
    assert panel.result.thresholds == snb.TierThresholds(0.3, 0.3) and panel.error is None  # the panel redrew with them
    panel.datasets.dropdown.value = "pairs"  # and the right SA is shown for the folder's file
    ds = snb.load_dataset(pairs, languages=["en", "zh"])
    ref = snb.dataset_affinity(ds, "random-null", n_boot=30, cache=snb.EmbeddingCache(cache_dir))
    assert panel.error is None and panel.result.cosine.sa == pytest.approx(ref.cosine.sa)
    assert f"SA cosine {ref.cosine.sa:.3f} ± {ref.cosine.sem:.3f}" in panel.sa_label.value

    csc_cache = tmp_path / "csc-cache"
    csc = CSCPanel(model="random-null", corpus="csc-everyday-en", cache=str(csc_cache))
    assert csc.run(CSCPanelState("random-null", "csc-everyday-en", "klingon", max_sentences=12, n_boot=20)) is None
    assert "klingon" in csc.status.value
    good = csc.run(CSCPanelState("random-null", "csc-everyday-en", "en", max_sentences=12, n_boot=20))
    assert good is not None and csc.status.value.startswith(f"overlap {good.overlap:.3f}")
    assert (csc_cache / "embeddings.sqlite").is_file()  # the str was used as the cache folder
    csc.max_sentences.value = 12
    csc.corpus.value = "no-such-corpus"
    csc.run_button.click()
    assert "unknown sentence corpus" in csc.status.value
    csc.corpus.value = "csc-everyday-en"
    csc.run_button.click()
    assert csc.status.value.startswith("overlap ") and csc.result.n_sentences == 12
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    on_file = CSCPanel(model="random-null", corpus="csc-everyday-en", cache=str(a_file))
    assert on_file.run(CSCPanelState("random-null", "csc-everyday-en", "en", max_sentences=12, n_boot=20)) is None
    assert "CacheError" in on_file.status.value and str(a_file) in on_file.status.value


def _alive(procs: list) -> list:
    import psutil

    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_killing_a_loky_grid_driver_stops_its_workers(tmp_path, signum):
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "r"
    with open(tmp_path / "stdout", "w") as so, open(tmp_path / "stderr", "w") as se:  # files: orphans must not hold our pipes
        driver = subprocess.Popen(
            [sys.executable, "-m", "semanscope_nb", "benchmark", "--backend", "loky", "--n-jobs", "2", "--models", "random-null",
             "--datasets", "edge-cases", "--n-boot", "400000", "--out", str(out), "--cache-dir", str(tmp_path / "c")],
            stdout=so, stderr=se)
    children: list = []
    try:
        inflight, deadline = out / "runs" / ".inflight", time.monotonic() + 120
        while not (inflight.is_dir() and any(inflight.iterdir())):  # a worker is inside the (minutes-long) SA job
            assert driver.poll() is None, (tmp_path / "stderr").read_text()[-1500:]
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.1)
        children = psutil.Process(driver.pid).children(recursive=True)
        assert any("loky" in " ".join(c.cmdline()) for c in children)
        driver.send_signal(signum)
        driver.wait(timeout=60)
        deadline = time.monotonic() + 10
        while _alive(children) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [(c.pid, " ".join(c.cmdline())[:90]) for c in _alive(children)]
        assert not left, f"still running 10 s after {signum.name}: {left}"
        err = (tmp_path / "stderr").read_text()
        assert "Traceback" not in err, err[-1500:]
        expected = (143, "semanscope: terminated") if signum == signal.SIGTERM else (130, "semanscope: interrupted")
        assert driver.returncode == expected[0] and expected[1] in err, (driver.returncode, err[-1500:])
    finally:
        if driver.poll() is None:
            driver.kill()
        for c in _alive(children):
            c.kill()


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_reader_reports_are_printed_and_kept_in_provenance(tmp_path):
    data = _pairs(tmp_path / "data")
    from semanscope_nb.provenance import shareable_report

    expected = shareable_report(snb.load_dataset(data).report, data)  # the file named without its folder (issue 20)
    assert expected and all(line.startswith("pairs.csv: ") for line in expected)  # the reader has something to report
    sa, serial, grid = _run(
        ("sa", "--model", "random-null", "--dataset", data, "--n-boot", "20", "--json", "--out", tmp_path / "sa.json"),
        ("benchmark", "--models", "random-null", "--datasets", data, "--n-boot", "20", "--out", tmp_path / "serial"),
        ("benchmark", "--models", "random-null", "--datasets", data, "--n-boot", "20", "--backend", "serial",
         "--out", tmp_path / "grid"),
    )
    for out in (sa, serial, grid):
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-1500:]
        printed = [ln.removeprefix("reader: ") for ln in out.stderr.splitlines() if ln.startswith("reader: ")]
        assert printed == expected, (printed, expected)
    assert json.loads(sa.stdout)["provenance"]["reader_report"] == expected  # stdout stays pure JSON
    assert json.loads((tmp_path / "sa.json").read_text())["provenance"]["reader_report"] == expected
    for root in ("serial", "grid"):
        board = json.loads((tmp_path / root / "leaderboard.json").read_text())
        assert board["rows"][0]["provenance"]["reader_report"] == expected
        assert board["meta"]["datasets"]["pairs"]["reader_report"] == expected
    lib = snb.dataset_affinity(data, "random-null", n_boot=0, cache=False, progress=False)
    assert lib.provenance["reader_report"] == expected
