"""One path from a dataset to every score: the task registry, run by the grid, the CLI and the panels alike."""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.memo import Memo
from semanscope_nb.data import LabelledSplits, load_sentence_corpus, read_sib200
from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings
from semanscope_nb.runs import cli, tasks
from semanscope_nb.runs.tasks import get_task, list_tasks, register_task

BUILTIN = ("sa", "pair-sa", "permutation", "comparison", "retrieval", "bdi", "knn", "csc", "projection")
#: small parameters per task, so that every task runs in a second or two
SMALL = {"sa": {"n_boot": 30}, "pair-sa": {"n_boot": 30}, "permutation": {"n_perm": 30}, "comparison": {"n_boot": 30, "n_perm": 50},
         "retrieval": {"n_boot": 10, "ks": [1, 5]}, "bdi": {"n_boot": 10}, "knn": {"n_boot": 10, "ks": [1, 3]},
         "csc": {"max_sentences": 12, "n_boot": 20}, "projection": {"method": "pca"}}


@pytest.fixture
def spy():
    """Wrap every built-in task's ``run`` so each call records the task name and whether run_task made it."""
    calls: list[tuple[str, bool]] = []
    originals = {t.name: t for t in list_tasks() if t.name in BUILTIN}

    def wrap(task):
        def run(*args, **kw):
            via = any(f.function == "run_task" and f.filename == tasks.__file__ for f in inspect.stack())
            calls.append((task.name, via))
            return task.run(*args, **kw)

        return dataclasses.replace(task, run=run)

    for t in originals.values():
        register_task(wrap(t), replace=True)
    yield calls
    for t in originals.values():
        register_task(t, replace=True)


def test_the_registry_describes_every_task():
    names = [t.name for t in list_tasks()]
    assert set(BUILTIN) <= set(names)
    for name in BUILTIN:
        t = get_task(name)
        assert t.description and t.data and isinstance(t.defaults, dict)
        assert issubclass(t.result_type, snb.Result) and t.result_type.kind
        assert name == "projection" or t.main_score  # a projection has no score
    with pytest.raises(snb.errors.UnknownNameError, match="unknown task 'sa2'.*Did you mean 'sa'"):
        get_task("sa2")
    with pytest.raises(snb.errors.ArgumentError, match=r"task 'sa': unknown parameter\(s\) \['nboot'\]"):
        snb.run_task("sa", "edge-cases", "random-null", nboot=3)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_every_task_runs_through_run_task_from_the_grid(spy, tmp_path):
    splits = LabelledSplits(read_sib200("eng_Latn", "train").head(40), read_sib200("eng_Latn", "test").head(15))
    g = snb.run_grid(["random-null", "tfidf-char"], ["edge-cases", splits], tasks=list(BUILTIN),
                     corpora=[load_sentence_corpus("csc-everyday-en")], languages=["en", "de", "zh"], max_concepts=20,
                     params=SMALL, cache=tmp_path / "c", out_dir=tmp_path / "r", progress=False)
    assert not g.failures, g.failures
    assert set(g.table.task) == set(BUILTIN)
    assert {name for name, _ in spy} == set(BUILTIN) and all(via for _, via in spy)
    for (model, dataset, task), result in g.results.items():  # what the job files hold comes back as the task's result type
        assert isinstance(result, get_task(task).result_type)


@pytest.mark.parametrize("task", BUILTIN)
def test_every_task_runs_through_run_task_from_the_cli(spy, task, tmp_path, capsys):
    args = ["run", task, "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "r.json")]
    args += ["--models", "random-null,tfidf-char"] if task == "comparison" else ["--model", "random-null"]
    if task == "knn":
        args += ["--dataset", "en"]
    elif task == "csc":
        args += ["--dataset", "csc-everyday-en"]
    else:
        args += ["--dataset", "edge-cases", "--languages", "en,de"]
    for k, v in SMALL[task].items():
        args += ["--param", f"{k}={json.dumps(v)}"]
    assert cli.main(args) == 0, capsys.readouterr().err
    assert spy == [(task, True)]
    back = snb.Result.load(tmp_path / "r.json")
    assert isinstance(back, get_task(task).result_type) and back.provenance["task"] == task


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_the_panels_run_their_tasks_through_run_task(spy, tmp_path):
    from semanscope_nb.widgets import ComparePanel, CSCPanel, CSCPanelState, ExplorePanel

    cache = snb.EmbeddingCache(tmp_path / "c")
    panel = ExplorePanel(model="random-null", dataset="edge-cases", languages=["en", "de"], max_concepts=20, n_boot=30,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(), cache=cache)
    panel.view_toggle.value = "pairs"
    assert panel.error is None
    ComparePanel(slots=[{"model": "random-null", "dataset": "edge-cases", "languages": ["en", "de"]},
                        {"model": "tfidf-char", "dataset": "edge-cases", "languages": ["en", "de"]}],
                 n_boot=30, n_perm=50, max_concepts=20, cache=cache, auto=True)
    csc = CSCPanel(model="random-null", corpus="csc-everyday-en", cache=cache)
    assert csc.run(CSCPanelState(model="random-null", corpus="csc-everyday-en", max_sentences=12, n_boot=20)) is not None
    assert {"sa", "projection", "pair-sa", "comparison", "csc"} <= {name for name, _ in spy}
    assert all(via for _, via in spy)


def test_the_panel_and_the_function_give_the_same_result_and_provenance(tmp_path):
    from semanscope_nb.widgets import ExplorePanel

    cache = snb.EmbeddingCache(tmp_path / "c")
    panel = ExplorePanel(model="tfidf-char", dataset="edge-cases", languages=["en", "zh", "de"], n_boot=40, seed=3,
                         projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(), cache=cache)
    direct = snb.dataset_affinity("edge-cases", "tfidf-char", languages=["en", "zh", "de"], n_boot=40, seed=3, cache=cache)

    def comparable(prov):  # the time stamp and what the cache did differ between two calls; nothing else may
        return {k: v for k, v in prov.items() if k not in ("created", "embedding")}

    assert comparable(panel.result.provenance) == comparable(direct.provenance)
    assert panel.result.to_dict()["cosine"] == direct.to_dict()["cosine"]
    assert panel.result.verdict == direct.verdict


def test_unknown_token_answers_are_kept_in_the_cache_and_read_back(tmp_path):
    """Issue 21: a warm cache answers the verdict's unknown-token check without loading the tokenizer."""
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import RandomEncoder
    from semanscope_nb.runs.task_library import UNKNOWN_TOKEN_KEY, aligned_words, unknown_words

    asked: list[list[str]] = []

    def rule(text):  # a plumbing fake's "unknown": a length divisible by 3
        return len(text) % 3 == 0

    class Unk(RandomEncoder):
        model_id = "unk-fake"

        def unknown_token_words(self, texts):
            asked.append(list(texts))
            return [rule(t) for t in texts]

    ds = snb.load_dataset("edge-cases").select(["en", "zh", "de"])
    cache = EmbeddingCache(tmp_path / "c")
    first = unknown_words(snb.embed(ds, Unk(dim=8), cache=cache, progress=False))
    aw = aligned_words(snb.embed(ds, Unk(dim=8), cache=False, progress=False))
    want = {lang: tuple(w for w in words if rule(w)) for lang, words in zip(aw.languages, aw.words)}
    assert asked and first == {lang: hit for lang, hit in want.items() if hit} and first
    asked.clear()
    again = unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path / "c"), progress=False))
    assert asked == [] and again == first, "read back from the cache: the tokenizer is not asked"
    assert cache.get_token_entries(Unk(dim=8).cache_key + UNKNOWN_TOKEN_KEY, ["not a word of it"]) == {}
    bigger = snb.load_dataset("edge-cases").select(["en", "zh", "de", "fr"])
    seen = {w for words in aw.words for w in words}
    unknown_words(snb.embed(bigger, Unk(dim=8), cache=EmbeddingCache(tmp_path / "c"), progress=False))
    assert set().union(*map(set, asked)) == set(bigger.words("fr")) - seen, "only words not answered before are asked"


def _unknown_fake():
    """A plumbing fake whose "unknown" words have a length divisible by 3, and the word lists it was asked."""
    from semanscope_nb.models.encoders import RandomEncoder

    asked: list[list[str]] = []

    class Unk(RandomEncoder):
        model_id = "unk-fake"

        def unknown_token_words(self, texts):
            asked.append(list(texts))
            return [len(t) % 3 == 0 for t in texts]

    return Unk, asked


def _unknown_rows(path, key: str) -> list[tuple]:
    import sqlite3

    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT entry, meta, blob FROM token_vectors WHERE model_key=?", (key,)).fetchall()
    finally:
        con.close()


def test_the_answer_for_the_whole_word_set_is_read_in_one_entry_and_an_older_cache_gets_it(tmp_path):
    """Issue 21: a warm cache answers the unknown-token check of a data set from one entry (its word set's answer), the
    same answer the per-word entries give; an older cache (per-word entries only) answers from those, without the
    tokenizer, and gets the set's entry; another word set is another entry."""
    import sqlite3

    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.runs.task_library import UNKNOWN_SET_KEY, UNKNOWN_TOKEN_KEY, aligned_words, unknown_words

    Unk, asked = _unknown_fake()
    ds = snb.load_dataset("edge-cases").select(["en", "zh", "de"])
    aw = aligned_words(snb.embed(ds, Unk(dim=8), cache=False, progress=False))
    want = {lang: tuple(w for w in words if len(w) % 3 == 0) for lang, words in zip(aw.languages, aw.words)}
    want = {lang: hit for lang, hit in want.items() if hit}
    first = unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path / "c"), progress=False))
    assert first == want and want and asked
    path = tmp_path / "c" / "embeddings.sqlite"
    set_key, word_key = Unk(dim=8).cache_key + UNKNOWN_SET_KEY, Unk(dim=8).cache_key + UNKNOWN_TOKEN_KEY
    (entry, meta, blob), = _unknown_rows(path, set_key)
    assert meta == "set" and json.loads(blob) == sorted({w for hit in want.values() for w in hit})
    con = sqlite3.connect(path)
    con.execute("DELETE FROM token_vectors WHERE model_key=?", (word_key,))  # only the set's entry can answer now
    con.commit()
    asked.clear()
    assert unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path / "c"), progress=False)) == want
    assert asked == [], "the set's entry answered: neither the tokenizer nor the per-word entries"
    assert _unknown_rows(path, word_key) == []
    # an older cache: the per-word entries, no set entry
    unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path / "old"), progress=False))
    old = tmp_path / "old" / "embeddings.sqlite"
    con = sqlite3.connect(old)
    con.execute("DELETE FROM token_vectors WHERE model_key=?", (set_key,))
    con.commit()
    asked.clear()
    assert unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path / "old"), progress=False)) == want
    assert asked == [] and [r[0] for r in _unknown_rows(old, set_key)] == [entry], "read per word, the set's entry written"
    bigger = snb.load_dataset("edge-cases").select(["en", "zh", "de", "fr"])
    unknown_words(snb.embed(bigger, Unk(dim=8), cache=EmbeddingCache(tmp_path / "old"), progress=False))
    assert len(_unknown_rows(old, set_key)) == 2, "another word set: its own entry"
    con.close()


@pytest.mark.parametrize("damage", ["digest", "not json", "a word outside the set", "meta"])
def test_a_damaged_word_set_entry_is_named_answered_per_word_and_written_again(tmp_path, damage):
    """A set entry whose digest fails (dropped by the cache) or whose sound row does not hold a JSON list of words of
    the set is named in a CacheWarning; the answer comes from the per-word entries (the same) and the entry is
    written again."""
    import sqlite3

    from semanscope_nb.errors import CacheWarning
    from semanscope_nb.models.cache import EmbeddingCache, _digest
    from semanscope_nb.runs.task_library import UNKNOWN_SET_KEY, unknown_words

    Unk, asked = _unknown_fake()
    ds = snb.load_dataset("edge-cases").select(["en", "zh", "de"])
    good = unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path), progress=False))
    path, set_key = tmp_path / "embeddings.sqlite", Unk(dim=8).cache_key + UNKNOWN_SET_KEY
    (entry, meta, blob), = _unknown_rows(path, set_key)
    meta, blob = {"digest": (meta, blob[:-1] + b"]]"), "not json": (meta, b"[\"a\""),
                  "a word outside the set": (meta, json.dumps(["no such word"]).encode()), "meta": ("1", blob)}[damage]
    digest = b"\x00" * 16 if damage == "digest" else _digest(meta.encode() + blob)
    con = sqlite3.connect(path)
    con.execute("UPDATE token_vectors SET meta=?, blob=?, digest=? WHERE model_key=? AND entry=?",
                (meta, blob, digest, set_key, entry))
    con.commit()
    asked.clear()
    with pytest.warns(CacheWarning, match="damaged") as caught:
        again = unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path), progress=False))
    assert again == good and asked == []
    assert any(str(path) in str(w.message) for w in caught), "the warning names the cache"
    (_, meta2, blob2), = _unknown_rows(path, set_key)
    assert meta2 == "set" and json.loads(blob2) == sorted({w for hit in good.values() for w in hit}), "written again"
    con.close()


def test_a_read_only_or_locked_cache_still_answers_the_word_set_without_waiting(tmp_path):
    """A read-only cache and one another process is writing to answer the unknown-token check all the same (from the
    per-word entries when the set's entry is missing): its entry is not stored then, with no error and no wait."""
    import sqlite3
    import time
    import warnings

    from semanscope_nb.errors import CacheWarning
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.runs.task_library import UNKNOWN_SET_KEY, unknown_words

    Unk, asked = _unknown_fake()
    ds = snb.load_dataset("edge-cases").select(["en", "zh", "de"])
    good = unknown_words(snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path), progress=False))
    path, set_key = tmp_path / "embeddings.sqlite", Unk(dim=8).cache_key + UNKNOWN_SET_KEY
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DELETE FROM token_vectors WHERE model_key=?", (set_key,))  # an older cache
    asked.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        ro = EmbeddingCache(tmp_path, read_only=True)
        assert unknown_words(snb.embed(ds, Unk(dim=8), cache=ro, progress=False)) == good
        ro.close()
        e = snb.embed(ds, Unk(dim=8), cache=EmbeddingCache(tmp_path, timeout=30.0), progress=False)
        con.execute("BEGIN IMMEDIATE")  # another process writing
        t0 = time.perf_counter()
        assert unknown_words(e) == good
        assert time.perf_counter() - t0 < 10.0, "no wait for the writer's lock (the cache's timeout is 30 s)"
        con.execute("ROLLBACK")
    assert asked == [] and _unknown_rows(path, set_key) == [], "answered per word; nothing stored"
    assert unknown_words(e) == good and len(_unknown_rows(path, set_key)) == 1, "stored once the lock is free"
    con.close()


def _fresh_surface_memo(monkeypatch) -> None:
    """An empty kept-baseline memo (runs.task_library._SURFACES) for this test, and no baseline statistics known yet
    (chance._SURFACE_DONE empty, chance._SURFACE_STORE in an empty folder): a fresh process with an empty store."""
    import tempfile

    from semanscope_nb.metrics import chance
    from semanscope_nb.metrics.surface_store import SurfaceStore
    from semanscope_nb.runs import task_library

    monkeypatch.setattr(task_library, "_SURFACES", Memo(task_library.SURFACE_KEPT_BYTES, sizeof=lambda kept: kept[2]))
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    monkeypatch.setattr(chance, "_SURFACE_STORE", SurfaceStore(tempfile.mkdtemp(prefix="surface-store-test-")))


def _recorded_embeds(monkeypatch) -> tuple[list, Any]:
    """(the model names embedded from now on, the real embed): models.embedded.embed wrapped to record its calls."""
    from semanscope_nb.models import embedded as embedded_module

    calls: list = []
    real = embedded_module.embed
    monkeypatch.setattr(embedded_module, "embed", lambda ds, model, **kw: calls.append(model) or real(ds, model, **kw))
    return calls, real


def _surface_case(monkeypatch, tmp_path) -> tuple[list, Any, Any, Any]:
    """(recorded embed calls, the real embed, 30 edge-cases concepts in en/de/fr, a cache folder), a fresh memo."""
    _fresh_surface_memo(monkeypatch)
    calls, real = _recorded_embeds(monkeypatch)
    return calls, real, snb.load_dataset("edge-cases").select(["en", "de", "fr"]).subset(range(30)), tmp_path / "c"


def test_the_surface_baseline_of_a_data_set_is_read_once_per_process(tmp_path, monkeypatch):
    """Issue 21: a benchmark scores every model on each data set; the baseline's vectors are kept, not re-read."""
    from semanscope_nb.runs import task_library

    calls, real, ds, cache = _surface_case(monkeypatch, tmp_path)
    first = task_library.sa_task(real(ds, "tfidf-word", cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == ["tfidf-char"]
    again = task_library.sa_task(real(ds, "tfidf-word", cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == ["tfidf-char"], "the kept baseline: no second read"
    assert again.surface.difference.value == first.surface.difference.value
    other = ds.subset(range(20))
    task_library.sa_task(real(other, "tfidf-word", cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == ["tfidf-char", "tfidf-char"], "other concepts: their own baseline"
    kept = task_library._surface_words(real(ds, "tfidf-word", cache=cache, progress=False))
    assert calls == ["tfidf-char", "tfidf-char"]
    fresh = task_library.aligned_words(real(ds, "tfidf-char", cache=cache, progress=False))
    for a, b in zip(kept.vectors, fresh.vectors):
        assert a.dtype == b.dtype and not a.flags.writeable, "the kept rows come back as read, and read-only"
        np.testing.assert_array_equal(a, b, err_msg="kept as sparse rows: the same numbers as a read")
    assert kept.words == fresh.words and kept.languages == fresh.languages


def test_a_fresh_process_with_the_store_filled_reads_no_baseline_vector(tmp_path, monkeypatch):
    """Issue 21: the baseline's statistics are stored by what determines its vectors; a fresh process's verdict reads
    them without the vectors, with the very numbers; an edited data set or another baseline version reads the baseline."""
    from semanscope_nb.metrics import chance
    from semanscope_nb.models.encoders import TfidfEncoder
    from semanscope_nb.runs import task_library

    calls, real, ds, cache = _surface_case(monkeypatch, tmp_path)
    model = real(ds, "random-null", cache=cache, progress=False)
    first = task_library.sa_task(model, n_boot=60, seed=2)
    assert calls == ["tfidf-char"]
    filled = chance._SURFACE_STORE  # the store the first process filled
    _fresh_surface_memo(monkeypatch)  # a new process ...
    monkeypatch.setattr(chance, "_SURFACE_STORE", filled)  # ... with the store filled
    again = task_library.sa_task(model, n_boot=60, seed=2)
    assert calls == ["tfidf-char"], "the stored statistics: the baseline's vectors are not read"
    assert again.surface.to_dict() == first.surface.to_dict() and again.tier == first.tier
    _fresh_surface_memo(monkeypatch)  # from scratch: a plain AlignedWords baseline, no store
    scratch = snb.metrics.affinity.affinity_of_words(
        task_library.aligned_words(model), n_boot=60, seed=2, unknown_words=task_library.unknown_words(model),
        surface=task_library.aligned_words(real(ds, "tfidf-char", cache=cache, progress=False)))
    assert scratch.surface.to_dict() == first.surface.to_dict(), "the same numbers as computing the baseline outright"
    monkeypatch.setattr(chance, "_SURFACE_STORE", filled)
    calls.clear()
    rows = list(ds.rows)
    rows[4] = (rows[4][0], ("zzqx",) + tuple(rows[4][1][1:]), rows[4][2])
    edited = dataclasses.replace(ds, rows=tuple(rows))  # the same file hash, one word changed
    task_library.sa_task(real(edited, "random-null", cache=cache, progress=False), n_boot=60, seed=2)
    assert calls == ["tfidf-char"], "an edited data set: the baseline is read, not the stale statistics"
    calls.clear()
    monkeypatch.setattr(TfidfEncoder, "version", property(lambda self: "scikit-learn==0.0-other"))
    task_library.sa_task(model, n_boot=60, seed=2)
    assert calls == ["tfidf-char"], "another baseline version: the baseline is read"


def test_the_baseline_identity_changes_with_what_determines_its_vectors(monkeypatch):
    from semanscope_nb.models.encoders import TfidfEncoder
    from semanscope_nb.runs import task_library

    ds = snb.load_dataset("edge-cases").select(["en", "de", "fr"]).subset(range(30))

    def ident(d, cached=True):
        return task_library._baseline_identity(d, task_library._baseline_encoder(d), cached=cached)

    base = ident(ds)
    assert ident(ds) == base, "deterministic"
    rows = list(ds.rows)
    rows[0] = (rows[0][0] + ("extra",), *rows[0][1:])
    others = {
        "a word more": ident(dataclasses.replace(ds, rows=tuple(rows))),
        "other concepts": ident(ds.subset(range(29))),
        "other languages": ident(snb.load_dataset("edge-cases").select(["en", "de", "zh"]).subset(range(30))),
        "language order": ident(snb.load_dataset("edge-cases").select(["de", "en", "fr"]).subset(range(30))),
        "not through the cache": ident(ds, cached=False),
    }
    monkeypatch.setattr(TfidfEncoder, "version", property(lambda self: "scikit-learn==0.0-other"))
    others["another baseline version"] = ident(ds)
    assert len(set(others.values()) | {base}) == len(others) + 1, others


def test_the_baseline_identity_is_the_digest_the_store_s_keys_were_made_with_and_the_shell_is_the_data_set_s(monkeypatch):
    """Issue 21: the identity hashed in one update (faster) is the digest of one update per word, as before (the keys
    the on-disk store already holds stay valid); the baseline's words take the model's shell (the same data set's
    incidence, labels, groups and words) instead of building it again."""
    import hashlib

    import scipy.sparse as sp

    from semanscope_nb.runs import task_library

    def by_word(dataset, baseline, *, cached):  # the identity as first written: one update per part and per word
        h = hashlib.blake2b(digest_size=20)
        for part in (baseline.cache_key, dataset.sha256, "cache:float32" if cached else "no-cache",
                     repr(tuple(dataset.languages)), repr(dataset.groups)):
            h.update(str(part).encode())
            h.update(b"\x00")
        for row in dataset.rows:
            for cell in row:
                h.update(f"{len(cell)}:".encode())
                for w in cell:
                    b = w.encode()
                    h.update(f"{len(b)}:".encode() + b)
            h.update(b"\x1d")
        return h.digest()

    for name, langs in (("edge-cases", ["en", "zh", "de", "fr"]), ("conceptual-space", None)):
        ds = snb.load_dataset(name)
        ds = ds.select(langs) if langs else ds
        baseline = task_library._baseline_encoder(ds)
        for cached in (True, False):
            assert task_library._baseline_identity(ds, baseline, cached=cached) == by_word(ds, baseline, cached=cached)
    ds = snb.load_dataset("edge-cases").select(["en", "zh", "de", "fr"])
    e = snb.embed(ds, "random-null", cache=False, progress=False)
    aw = task_library.aligned_words(e)
    monkeypatch.setattr(task_library, "_SURFACES", Memo(task_library.SURFACE_KEPT_BYTES, sizeof=lambda kept: kept[2]))
    monkeypatch.setattr(task_library, "_word_shell", lambda dataset: pytest.fail("the shell is built again"))
    surface = task_library._surface_words(e, own=aw)
    monkeypatch.undo()
    built = task_library._word_shell(ds)
    assert surface.languages == built.languages and surface.labels == built.labels and surface.words == built.words
    assert surface.groups == built.groups
    assert all((sp.csr_matrix(a) != sp.csr_matrix(b)).nnz == 0 for a, b in zip(surface.incidence, built.incidence))


def test_the_surface_baselines_own_job_does_not_read_the_baseline_twice(tmp_path, monkeypatch):
    """Issue 21: SA of the baseline model itself takes its own vectors as the surface (same cache key), not a second read."""
    from semanscope_nb.models.encoders import TfidfEncoder
    from semanscope_nb.runs import task_library

    calls, real, ds, cache = _surface_case(monkeypatch, tmp_path)
    own = task_library.sa_task(real(ds, "tfidf-char", cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == [], "the baseline's own job: its vectors are the baseline's"
    _fresh_surface_memo(monkeypatch)
    monkeypatch.setattr(task_library, "_is_the_baseline", lambda embedded, *baseline: False)
    read = task_library.sa_task(real(ds, "tfidf-char", cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == ["tfidf-char"], "without the shortcut the baseline is read through the cache"
    assert own.surface.difference.value == read.surface.difference.value, "the same float32 vectors: the same arithmetic"
    assert own.surface.to_dict() == read.surface.to_dict()
    monkeypatch.undo()
    _fresh_surface_memo(monkeypatch)
    calls, real = _recorded_embeds(monkeypatch)
    other = TfidfEncoder(n_features=1024, model_id="tfidf-char")  # the baseline's name, other options: another key
    assert not task_library._is_the_baseline(real(ds, other, cache=cache, progress=False))
    task_library.sa_task(real(ds, other, cache=cache, progress=False), n_boot=0, seed=0)
    assert calls == ["tfidf-char"], "another TF-IDF space under the baseline's name: the baseline is read"
    assert task_library._is_the_baseline(real(ds, "tfidf-char", cache=cache, progress=False))
    assert not task_library._is_the_baseline(real(ds, "tfidf-word", cache=cache, progress=False))
