"""Audit 6: faults found by a hostile read of the public entry points, each fixed at its cause.

- a result file is checked against what :meth:`Result.save` writes: a newer ``format``, a field of the
  wrong type (``"12"`` concepts, ``"en"`` as the language list), ``NaN`` / ``Infinity`` tokens, a key
  twice, a key no result writes, a tier that contradicts the result's own numbers -- each a
  ``DatasetError`` naming the file and the key, never a result that loads with the damage inside;
- CSV files a spreadsheet opens (``leaderboard.csv``, the report's ``-numbers.csv``) never hold a text cell
  that starts like a formula (``=``, ``+``, ``-``, ``@``): a dataset named ``=HYPERLINK(...)`` is shown as text;
- two names for one grid job (the same rows under two dataset names) are refused before any work:
  they shared one job file and one record, and the leaderboard showed the second name twice;
- the options every statistic takes (``n_boot``, ``seed``, ``confidence``, ``n_perm``, ``ks``) are
  checked one way by every task: ``seed=True``, ``confidence=0``, ``ks=[2.5]`` or ``n_boot=10**12``
  are an ``ArgumentError`` naming the argument, not a numpy error, a silent result or days of work;
- a model report's job file copied over another job's file is not reused (it is recomputed, with a warning).
"""

from __future__ import annotations

import csv
import json
import shutil
import signal
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.errors import ArgumentError, DatasetError, JobFileWarning
from semanscope_nb.results import RESULT_FORMAT, Result

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def emb():
    return snb.embed("edge-cases", "random-null", languages=["en", "zh", "de"], cache=False)


@pytest.fixture(scope="module")
def saved(emb, tmp_path_factory):
    """A real SA result file and its JSON."""
    path = Path(snb.run_task("sa", emb, n_boot=50).save(tmp_path_factory.mktemp("r") / "sa.json"))
    return path, json.loads(path.read_text(encoding="utf-8"))


def _write(tmp_path: Path, body: dict | str) -> Path:
    p = tmp_path / "edited.json"
    p.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    return p


# --------------------------------------------------------------------------- result files


def test_a_sound_result_file_still_loads(saved):
    path, d = saved
    r = Result.load(path)
    assert r.to_dict() == {k: v for k, v in d.items() if k not in ("kind", "format")}


def test_result_file_from_a_newer_format_is_refused_naming_both_versions(saved, tmp_path):
    _, d = saved
    with pytest.raises(DatasetError, match=rf"edited.json: result format {RESULT_FORMAT + 1} is newer .* \(format {RESULT_FORMAT}\)"):
        Result.load(_write(tmp_path, {**d, "format": RESULT_FORMAT + 1}))
    for bad in ("1", True, 0, 1.5, None):
        with pytest.raises(DatasetError, match=r"edited.json: 'format' must be a whole number"):
            Result.load(_write(tmp_path, {**d, "format": bad}))


@pytest.mark.parametrize("field, value, said", [
    ("n_concepts", "12", "field 'n_concepts': expected a whole number"),
    ("n_boot", 50.5, "field 'n_boot': expected a whole number"),
    ("seed", True, "field 'seed': expected a whole number"),
    ("confidence", "0.95", "field 'confidence': expected a number"),
    ("confidence", True, "field 'confidence': expected a number"),
    ("languages", "en", "field 'languages': expected a list"),  # tuple("en") would be ('e', 'n')
    ("languages", ["en", 7], r"field 'languages\[1\]': expected a string"),
    ("concept_labels", {"a": 1}, "field 'concept_labels': expected a list"),  # list(dict) would keep the keys
    ("n_words", [["en", 3]], "field 'n_words': expected a mapping"),
    ("language_centred_sa", "high", "field 'language_centred_sa': expected a number"),
])
def test_result_field_of_the_wrong_type_is_refused_naming_the_field(saved, tmp_path, field, value, said):
    _, d = saved
    with pytest.raises(DatasetError, match=rf"edited.json: a damaged 'sa' result \({said}"):
        Result.load(_write(tmp_path, {**d, field: value}))


def test_nan_infinity_and_repeated_keys_are_not_a_result_file(saved, tmp_path):
    path, _ = saved
    text = path.read_text(encoding="utf-8")
    for token in ("NaN", "Infinity", "-Infinity"):
        edited = text.replace('"language_centred_sa": ', f'"language_centred_sa": {token}, "x_": ', 1)
        with pytest.raises(DatasetError, match=rf"edited.json: not a semanscope_nb result file \(not strict JSON: {token}"):
            Result.load(_write(tmp_path, edited))
    twice = text.replace('"kind": "sa",', '"kind": "sa", "kind": "csc",', 1)
    assert twice != text
    with pytest.raises(DatasetError, match="key 'kind' appears twice"):
        Result.load(_write(tmp_path, twice))
    deep = '{"kind": "sa", "cosine": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(DatasetError, match="edited.json: not a semanscope_nb result file"):
        Result.load(_write(tmp_path, deep))


def test_a_key_no_result_writes_is_refused_naming_it(saved, tmp_path):
    _, d = saved
    with pytest.raises(DatasetError, match=r"edited.json: key\(s\) 'sa_cosine_v2' are not part of a 'sa' result"):
        Result.load(_write(tmp_path, {**d, "sa_cosine_v2": 0.9}))


def test_a_tier_that_contradicts_the_numbers_is_damage(saved, tmp_path):
    _, d = saved
    assert d["tier"] != "great"
    with pytest.raises(DatasetError, match=rf"key 'tier' says 'great' but the result's own numbers give '{d['tier']}'"):
        Result.load(_write(tmp_path, {**d, "tier": "great"}))


def test_from_saved_checks_a_dict_as_load_checks_a_file(saved):
    _, d = saved
    assert Result.from_saved(d).to_dict() == Result.from_saved(json.loads(json.dumps(d))).to_dict()
    with pytest.raises(DatasetError, match=r"job 3: a damaged 'sa' result \(field 'n_tuples'"):
        Result.from_saved({**d, "n_tuples": None}, source="job 3")


# --------------------------------------------------------------------------- CSV cells a spreadsheet would run


def _cells(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_spreadsheet_safe_touches_text_only():
    from semanscope_nb.provenance import csv_text, spreadsheet_safe

    frame = pd.DataFrame({"=name": ["=1+1", "+A1", "-cmd", "@SUM(A1)", "\tx", "plain"], "v": [-0.5, 1.0, -2.0, 0.0, 3.0, 4.0],
                          "n": [-1, 2, 3, 4, 5, 6]})
    back = pd.read_csv(__import__("io").StringIO(csv_text(frame)))
    assert list(back.columns) == ["'=name", "v", "n"]
    assert back["'=name"].tolist() == ["'=1+1", "'+A1", "'-cmd", "'@SUM(A1)", "'\tx", "plain"]
    np.testing.assert_array_equal(back["v"].to_numpy(), frame["v"].to_numpy())  # numbers stay numbers, signs kept
    np.testing.assert_array_equal(back["n"].to_numpy(), frame["n"].to_numpy())
    assert spreadsheet_safe(-3) == -3 and spreadsheet_safe(None) is None
    assert frame["=name"].iloc[0] == "=1+1", "the frame itself is not changed"


def test_leaderboard_csv_never_starts_a_text_cell_with_a_formula(tmp_path):
    from semanscope_nb.data.words import dataset_from_frame
    from semanscope_nb.runs.grid import run_grid

    frame = pd.DataFrame({"english": ["water", "fire", "sun", "moon", "tree", "house", "dog", "cat"],
                          "german": ["Wasser", "Feuer", "Sonne", "Mond", "Baum", "Haus", "Hund", "Katze"]})
    names = ("=HYPERLINK(\"http://x\",\"y\")", "+cmd", "@SUM(A1)", "-2+3")
    hostile = [dataset_from_frame(frame.drop(index=i), name=n) for i, n in enumerate(names)]
    out = tmp_path / "results"
    run_grid(["random-null"], hostile, ["sa"], params={"sa": {"n_boot": 20}}, out_dir=out, cache=tmp_path / "cache", progress=False)
    cells = _cells(out / "leaderboard.csv")
    formulas = [c for c in cells if c.startswith(FORMULA_STARTS) and not _is_number(c)]
    assert not formulas, formulas
    for n in names:
        assert f"'{n}" in cells, n
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert sorted(r["dataset"] for r in board["rows"]) == sorted(names), "the JSON keeps the names as given"
    table = pd.read_csv(out / "leaderboard.csv")
    assert (pd.to_numeric(table["sa_cosine"]) > 0).all(), "numbers are still numbers"


# --------------------------------------------------------------------------- two names for one grid job


def test_the_same_rows_under_two_dataset_names_are_refused_before_any_work(tmp_path):
    from semanscope_nb.data.words import dataset_from_frame
    from semanscope_nb.runs.grid import run_grid

    frame = pd.DataFrame({"english": ["water", "fire", "sun", "moon"], "german": ["Wasser", "Feuer", "Sonne", "Mond"]})
    same = [dataset_from_frame(frame, name="words-a"), dataset_from_frame(frame, name="words-b")]
    out = tmp_path / "results"
    with pytest.raises(ArgumentError, match="dataset 'words-a' and .* dataset 'words-b' are the same job"):
        run_grid(["random-null"], same, ["sa"], params={"sa": {"n_boot": 20}}, out_dir=out, cache=tmp_path / "cache",
                 progress=False)
    assert not list(out.rglob("*.json")), "nothing was written"
    # different rows under two names still run, one job file each
    other = dataset_from_frame(frame.drop(index=0), name="words-b")
    run_grid(["random-null"], [same[0], other], ["sa"], params={"sa": {"n_boot": 20}}, out_dir=out, cache=tmp_path / "cache",
             progress=False)
    assert len(list((out / "runs").glob("*.json"))) == 2
    assert sorted(pd.read_csv(out / "leaderboard.csv")["dataset"]) == ["words-a", "words-b"]


def test_the_cli_names_both_datasets(tmp_path, capsys):
    from semanscope_nb.runs.cli import main

    src = Path(snb.settings.data_dir) / "edge-cases.csv"
    for name in ("a.csv", "b.csv"):
        shutil.copy(src, tmp_path / name)
    status = main(["benchmark", "--models", "random-null", "--datasets", f"{tmp_path / 'a.csv'},{tmp_path / 'b.csv'}",
                   "--out", str(tmp_path / "out"), "--n-boot", "20", "--languages", "en,zh"])
    err = capsys.readouterr().err
    assert status != 0 and "dataset 'a'" in err and "dataset 'b'" in err and "same job" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "leaderboard.csv").exists()


# --------------------------------------------------------------------------- the options of every statistic


@contextmanager
def _at_most(seconds: int):
    """Fail instead of running for days (the old code accepted n_boot=10**12 and started)."""
    def stop(*_):
        raise TimeoutError(f"still running after {seconds} s: the option was not refused")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


BAD_OPTIONS = [
    ("n_boot", "100"), ("n_boot", float("nan")), ("n_boot", True), ("n_boot", 10**12),
    ("seed", True), ("seed", -1), ("seed", 2.5), ("seed", "1"), ("seed", float("nan")),
    ("confidence", 0.0), ("confidence", -0.1), ("confidence", 1.0), ("confidence", True), ("confidence", "0.9"),
    ("confidence", float("nan")),
]


@pytest.mark.parametrize("task", ["sa", "pair-sa", "retrieval", "bdi"])
@pytest.mark.parametrize("arg, value", BAD_OPTIONS)
def test_every_task_refuses_a_bad_option_naming_it(emb, task, arg, value):
    if task == "bdi" and arg == "confidence":
        pytest.skip("bdi takes no confidence")
    with _at_most(10), pytest.raises(ValueError, match=rf"^{arg} must be"):  # an ArgumentError (a ValueError) naming it
        snb.run_task(task, emb, **{arg: value})


@pytest.mark.parametrize("task", ["retrieval", "bdi"])
@pytest.mark.parametrize("ks", [[True], [2.5], ["5"], [0], "15"])
def test_every_k_is_a_positive_whole_number(emb, task, ks):
    with pytest.raises(ValueError, match=r"^ks must be"):
        snb.run_task(task, emb, ks=ks, n_boot=0)


@pytest.mark.parametrize("task", ["pair-sa", "permutation"])
@pytest.mark.parametrize("value", [10**12, True, 2.5, "7"])
def test_permutation_counts_are_whole_and_bounded(emb, task, value):
    with _at_most(10), pytest.raises(ValueError, match=r"^n_perm must be an integer"):
        snb.run_task(task, emb, n_perm=value)


def _untimed(x):
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k != "created"}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def test_sound_options_give_the_same_numbers_as_before(emb):
    """The checks return the canonical values: an integral float or a numpy integer counts as the int."""
    a = snb.run_task("retrieval", emb, n_boot=20, seed=3, ks=[1, 5])
    b = snb.run_task("retrieval", emb, n_boot=20.0, seed=np.int64(3), ks=(np.int64(5), 1))
    assert _untimed(a.to_dict()) == _untimed(b.to_dict())
    p = snb.run_task("pair-sa", emb, n_boot=20, seed=0, confidence=0.9)
    q = snb.run_task("pair-sa", emb, n_boot=20.0, seed=0, confidence=np.float64(0.9))
    pd.testing.assert_frame_equal(p.table, q.table)


# --------------------------------------------------------------------------- model report job files


@pytest.mark.slow  # two small model reports (about 15 s)
def test_model_report_job_file_copied_over_another_is_recomputed_and_its_csv_is_inert(tmp_path):
    from semanscope_nb.runs.report_html import report_numbers, save_report

    hostile = tmp_path / "=HYPERLINK(1).csv"
    shutil.copy(Path(snb.settings.data_dir) / "edge-cases.csv", hostile)
    kw = dict(languages=["en", "zh"], datasets=[str(hostile)], n_boot=10, tatoeba=False, sib200=False, csc=False,
              work_dir=tmp_path / "work", progress=False)
    first = snb.model_report(["random-null", "tfidf-char"], **kw)
    paths = save_report(first, tmp_path / "out" / "report.html")
    cells = _cells(Path(paths["csv"]))
    assert not [c for c in cells if c.startswith(FORMULA_STARTS) and not _is_number(c)]
    assert "'=HYPERLINK(1)" in cells

    jobs = sorted((tmp_path / "work" / "jobs").glob("sa__*.json"))
    assert len(jobs) == 2, jobs  # one per model
    shutil.copy(jobs[0], jobs[1])  # model A's SA file under model B's name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = snb.model_report(["random-null", "tfidf-char"], **kw)
    said = [str(w.message) for w in caught if issubclass(w.category, JobFileWarning)]
    assert len(said) == 1 and jobs[1].name in said[0] and "another job" in said[0], said
    a, b = report_numbers(first).set_index("id")["value"], report_numbers(again).set_index("id")["value"]
    pd.testing.assert_series_equal(a.sort_index(), b.sort_index(), rtol=0, atol=1e-12)
    assert again.provenance["jobs_reused"] >= 1


def test_the_option_checkers_raise_argument_errors_naming_the_argument():
    from semanscope_nb.metrics import options

    for call, name in [(lambda: options.check_n_boot(1), "n_boot"), (lambda: options.check_n_boot(options.MAX_RESAMPLES + 1), "n_boot"),
                       (lambda: options.check_seed(None), "seed"), (lambda: options.check_confidence(np.nan), "confidence"),
                       (lambda: options.check_ks([]), "ks"), (lambda: options.check_ks(3.0), "ks"),
                       (lambda: options.check_count("n_perm", 0, minimum=1), "n_perm")]:
        with pytest.raises(ArgumentError, match=rf"^{name} must"):
            call()
    assert options.check_n_boot(options.MAX_RESAMPLES) == options.MAX_RESAMPLES


# --------------------------------------------------------------------------- reader options


@pytest.mark.parametrize("languages", ["en,zh", ["en", "zh"], ("english", "Chinese")])
def test_load_dataset_reads_languages_as_the_grid_does(languages):
    """A comma-separated string is a list of languages (run_grid and the CLI read it so), not its characters."""
    assert snb.load_dataset("edge-cases", languages=languages).languages == ("en", "zh")


@pytest.mark.parametrize("kw, said", [
    ({"languages": ["en", None]}, r"languages=\['en', None\]: None is not a language code"),
    ({"languages": []}, "languages is empty"),
    ({"languages": 5}, "languages must be a list of language codes"),
    ({"on_empty": "explode"}, "on_empty must be 'error' or 'drop', got 'explode'"),
])
def test_load_dataset_refuses_bad_options_naming_them(kw, said):
    with pytest.raises(ArgumentError, match=said):
        snb.load_dataset("edge-cases", **kw)


def test_an_empty_dataset_name_is_named_as_such():
    with pytest.raises(ArgumentError, match="the dataset name is empty"):
        snb.load_dataset("")


@pytest.mark.parametrize("key", ["../x", "<script>", "en/zh", "", " ", "e n"])
def test_word_list_and_sentence_languages_are_codes_never_paths_or_markup(tmp_path, key):
    (tmp_path / "a.txt").write_text("water\nfire\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("水\n火\n", encoding="utf-8")
    with pytest.raises(ArgumentError, match="word list key|language code"):
        snb.data.read_word_lists({key: tmp_path / "a.txt", "zh": tmp_path / "b.txt"})
    with pytest.raises(ArgumentError, match="language"):
        snb.data.read_sentences(tmp_path / "a.txt", language=key)
    # a code the package does not know is still a code
    assert snb.data.read_sentences(tmp_path / "a.txt", language="tok").language == "tok"
    assert snb.data.read_word_lists({"tok": tmp_path / "a.txt", "zh": tmp_path / "b.txt"}).languages == ("tok", "zh")


@pytest.mark.parametrize("language", ["../../etc", "eng_Latn/../../x", "a b", 7])
def test_sib200_language_never_names_a_path_outside_its_folder(tmp_path, language):
    (tmp_path / "eng_Latn").mkdir()
    with pytest.raises(ArgumentError, match="SIB-200 language"):
        snb.data.read_sib200(language, folder=tmp_path)


@pytest.mark.parametrize("limit", [True, 2.5, "3", 0, -1])
def test_tatoeba_limit_is_a_positive_whole_number(tmp_path, limit):
    (tmp_path / "tatoeba.deu-eng.deu").write_text("Hallo.\nDanke.\n", encoding="utf-8")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("Hello.\nThanks.\n", encoding="utf-8")
    assert len(snb.data.read_tatoeba("deu", folder=tmp_path, limit=np.int64(1)).source_texts) == 1
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        snb.data.read_tatoeba("deu", folder=tmp_path, limit=limit)


@pytest.mark.parametrize("params", [{"n_boot": 10**12}, {"seed": "0"}, {"confidence": 95}, {"n_boot": float("nan")}])
def test_a_grid_with_a_bad_option_is_refused_before_any_work(tmp_path, params):
    from semanscope_nb.runs.grid import run_grid

    name = next(iter(params))
    with _at_most(20), pytest.raises(ArgumentError, match=rf"task 'sa': {name} must be"):
        run_grid(["random-null"], ["edge-cases"], ["sa"], params={"sa": params}, languages=["en", "zh"], out_dir=tmp_path / "out",
                 cache=tmp_path / "cache", progress=False)
    assert not (tmp_path / "out" / "leaderboard.csv").exists()


def test_a_grid_where_every_job_failed_still_writes_a_csv_with_its_header(tmp_path, monkeypatch, capsys):
    from semanscope_nb.runs.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status = main(["benchmark", "--api-model", "nokey=text-embedding-3-small@http://127.0.0.1:9", "--models", "nokey",
                   "--datasets", "edge-cases", "--languages", "en,zh", "--n-boot", "20", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1 and "OPENAI_API_KEY" in err
    table = pd.read_csv(tmp_path / "out" / "leaderboard.csv")  # an empty file raised EmptyDataError
    assert table.empty and {"model", "dataset", "task", "main_score"} <= set(table.columns)


def test_a_job_file_that_cannot_be_read_now_is_not_damage_and_is_never_overwritten(tmp_path, monkeypatch):
    from semanscope_nb.runs.grid import run_grid

    kw = dict(params={"sa": {"n_boot": 20}}, languages=["en", "zh"], out_dir=tmp_path / "out", cache=tmp_path / "cache",
              progress=False)
    run_grid(["random-null"], ["edge-cases"], ["sa"], **kw)
    (job,) = (tmp_path / "out" / "runs").glob("*.json")
    before = job.read_bytes()
    real = Path.read_text

    def unreadable(self, *a, **k):
        if self == job:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", unreadable)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JobFileWarning)  # not called damaged
        with pytest.raises(PermissionError, match="Permission denied"):
            run_grid(["random-null"], ["edge-cases"], ["sa"], **kw)
    monkeypatch.undo()
    assert job.read_bytes() == before
    resumed = run_grid(["random-null"], ["edge-cases"], ["sa"], **kw)  # readable again: resumed, not recomputed
    assert len(resumed.resumed) == 1


def test_a_verdict_sentence_worded_otherwise_still_loads(saved, tmp_path):
    """A later version may reword the verdict's prose; only decisions (tiers, numbers) are checked."""
    _, d = saved
    assert " " in d["verdict"]
    r = Result.load(_write(tmp_path, {**d, "verdict": "worded by another version of the package"}))
    assert r.verdict == d["verdict"] and r.tier == d["tier"]
