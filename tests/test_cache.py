"""The per-text embedding cache: encode only what is missing, survive crashes and damage."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.cache import CacheWarning
from semanscope_nb.models.encoders import RandomEncoder


def test_only_missing_texts_are_encoded(tmp_path):
    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=16)
    first = cache.embed(enc, ["red", "blue", "red"], batch_size=1)
    assert enc.calls == 2 and enc.texts_encoded == 2  # 'red' once, batches of one
    assert cache.last_stats.n_unique == 2 and cache.last_stats.n_encoded == 2
    again = cache.embed(enc, ["blue", "green", "red"])
    assert enc.texts_encoded == 3 and cache.last_stats.n_cached == 2
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    assert cache.count(enc.cache_key) == 3


def test_key_separates_models_versions_and_options(tmp_path, dict_encoder):
    cache = snb.EmbeddingCache(tmp_path)
    a = dict_encoder({"w": [1.0, 0.0]}, version="1")
    b = dict_encoder({"w": [0.0, 1.0]}, version="2")
    np.testing.assert_array_equal(cache.embed(a, ["w"])[0], [1, 0])
    np.testing.assert_array_equal(cache.embed(b, ["w"])[0], [0, 1])
    from semanscope_nb.models.encoders import E5Encoder

    assert E5Encoder(prefix="query").cache_key != E5Encoder(prefix="passage").cache_key
    assert RandomEncoder(seed=1).cache_key != RandomEncoder(seed=2).cache_key


def test_same_word_in_two_datasets_embedded_once(tmp_path):
    cache = snb.EmbeddingCache(tmp_path)
    d1 = snb.dataset_from_frame(__import__("pandas").DataFrame({"en": ["red", "sun"], "zh": ["红", "日"]}), name="a")
    d2 = snb.dataset_from_frame(__import__("pandas").DataFrame({"en": ["red", "moon"], "zh": ["红", "月"]}), name="b")
    enc = snb.load_model("random-null")
    before = enc.texts_encoded
    snb.dataset_affinity(d1, enc, cache=cache, n_boot=0)
    snb.dataset_affinity(d2, enc, cache=cache, n_boot=0)
    assert enc.texts_encoded - before == 6  # red, 红 shared


def test_nan_vectors_rejected_and_not_cached(tmp_path, dict_encoder):
    cache = snb.EmbeddingCache(tmp_path)
    enc = dict_encoder({"ok": [1.0, 2.0], "bad": [np.nan, 1.0]})
    with pytest.raises(snb.EmbeddingError, match=r"NaN/inf vectors for \['bad'\]; not cached"):
        cache.embed(enc, ["ok", "bad"])
    assert cache.count(enc.cache_key) == 0


def test_unwritable_folder(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(snb.CacheError, match=r"cache folder '.*a-file/sub' is not writable"):
        snb.EmbeddingCache(blocker / "sub")


def test_env_var_sets_default_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(tmp_path / "here"))
    assert snb.EmbeddingCache().path == tmp_path / "here" / "embeddings.sqlite"


def test_damaged_entry_detected_and_only_it_rebuilt(tmp_path):
    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    good = cache.embed(enc, ["a", "b", "c"])
    con = sqlite3.connect(cache.path)
    con.execute("UPDATE vectors SET vec = ? WHERE text = 'b'", (b"\x00" * 32,))  # bit rot: digest no longer matches
    con.commit()
    con.close()
    before = enc.texts_encoded
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['b'\]"):
        again = cache.embed(enc, ["a", "b", "c"])
    assert enc.texts_encoded - before == 1
    assert cache.last_stats.n_damaged == 1
    np.testing.assert_array_equal(again, good)


def test_damaged_file_moved_aside(tmp_path):
    (tmp_path / "embeddings.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.warns(CacheWarning, match="is damaged"):
        cache = snb.EmbeddingCache(tmp_path)
    assert cache.count() == 0
    assert list(tmp_path.glob("embeddings.sqlite.damaged-*"))
    cache.embed(RandomEncoder(dim=4), ["x"])
    assert cache.count() == 1


def _writer(folder: str, offset: int, n: int) -> int:
    cache = snb.EmbeddingCache(folder)
    enc = RandomEncoder(dim=32)
    texts = [f"w{i}" for i in range(offset, offset + n)]
    for a in range(0, n, 50):
        cache.embed(enc, texts[a : a + 50])
    return cache.count()


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_two_processes_write_at_once(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        counts = pool.starmap(_writer, [(str(tmp_path), 0, 1500), (str(tmp_path), 1000, 1500)])
    cache = snb.EmbeddingCache(tmp_path)
    assert cache.count() == 2500  # overlap of 500 texts stored once
    assert max(counts) <= 2500
    enc = RandomEncoder(dim=32)
    np.testing.assert_array_equal(cache.embed(enc, ["w1200"]), enc.encode(["w1200"]))
    assert cache.last_stats.n_encoded == 0
    assert sqlite3.connect(cache.path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_killed_mid_write_loses_nothing_committed(tmp_path):
    script = textwrap.dedent(f"""
        import sys, numpy as np, semanscope_nb as snb
        cache = snb.EmbeddingCache({str(tmp_path)!r})
        rng = np.random.default_rng(0)
        i = 0
        while True:
            cache.put("k", [f"t{{i}}-{{j}}" for j in range(200)], rng.normal(size=(200, 256)))
            print(i, flush=True)
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    done = -1
    deadline = time.time() + 60
    while done < 30 and time.time() < deadline:
        done = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    cache = snb.EmbeddingCache(tmp_path)
    assert cache.count("k") >= (done + 1) * 200  # every batch reported as committed is there
    assert cache.count("k") % 200 == 0  # and no batch is half-written
    found, damaged = cache.get("k", [f"t{done}-{j}" for j in range(200)])
    assert len(found) == 200 and damaged == 0


def test_language_dependent_encoder_keys_on_language(tmp_path):
    class Shifted(RandomEncoder):
        model_id = "shifted"
        language_dependent = True

        def _encode_language(self, texts, language):
            return self._encode(texts) + (100.0 if language == "zh" else 0.0)

    cache = snb.EmbeddingCache(tmp_path)
    enc = Shifted(dim=4)
    with pytest.raises(ValueError, match="pass language="):
        cache.embed(enc, ["face"])
    en = cache.embed(enc, ["face"], language="en")
    zh = cache.embed(enc, ["face"], language="zh")
    np.testing.assert_allclose(zh - en, 100.0)
    assert cache.count() == 2
    import pandas as pd

    ds = snb.dataset_from_frame(pd.DataFrame({"en": ["face", "hand"], "zh": ["face", "手"]}), name="shared-text")
    vectors, _, stats = snb.embed_dataset(ds, enc, cache=cache)
    np.testing.assert_allclose(vectors["zh"]["face"] - vectors["en"]["face"], 100.0)
    assert stats["n_cached"] == 2


def test_non_finite_entry_with_a_valid_digest_is_damage_among_good_rows(tmp_path):
    """Issue 21: the finiteness check runs on the whole read at once; a NaN row (digest recomputed) is still named and re-encoded."""
    from semanscope_nb.models.cache import _digest

    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    words = [f"w{i}" for i in range(40)]
    good = cache.embed(enc, words)
    bad = good[7].copy()
    bad[3] = np.nan
    con = sqlite3.connect(cache.path)
    con.execute("UPDATE vectors SET vec = ?, digest = ? WHERE text = 'w7'", (bad.tobytes(), _digest(bad.tobytes())))
    con.commit()
    con.close()
    before = enc.texts_encoded
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['w7'\]"):
        found, n_damaged = cache.get(enc.cache_key, words)
    assert n_damaged == 1 and sorted(found) == sorted(set(words) - {"w7"})
    for i, w in enumerate(words):
        if w != "w7":
            np.testing.assert_array_equal(found[w], good[i], err_msg=f"{w}: the stored float32 row, as put")
            assert found[w].dtype == np.float32 and not found[w].flags.writeable
    again = cache.embed(enc, words)
    assert enc.texts_encoded - before == 1, "only the damaged entry is encoded again"
    np.testing.assert_array_equal(again, good)


def test_present_lists_keys_from_the_keys_index_and_without_it(tmp_path):
    """Issue 21: present() reads the keys-only index (made on open, also for a cache from before it); a read-only
    cache without the index still answers, from the table."""
    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    words = [f"w{i}" for i in range(1200)]  # more than one IN (...) chunk
    cache.embed(enc, words[:700])
    asked = ["nope", *words]
    assert cache.present(enc.cache_key, asked) == set(words[:700])
    con = sqlite3.connect(cache.path)
    assert con.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='vectors_keys'").fetchone()
    q = f"SELECT text FROM vectors INDEXED BY vectors_keys WHERE model_key=? AND text IN ({','.join('?' * 3)})"
    assert "COVERING INDEX vectors_keys" in str(con.execute("EXPLAIN QUERY PLAN " + q, ["k", "a", "b", "c"]).fetchall())
    con.execute("DROP INDEX vectors_keys")  # a cache written before the index
    con.commit()
    con.close()
    cache.close()
    ro = snb.EmbeddingCache(tmp_path, read_only=True)
    assert ro.present(enc.cache_key, asked) == set(words[:700]), "no index (read-only): the table answers"
    ro.close()
    reopened = snb.EmbeddingCache(tmp_path)
    assert reopened.present(enc.cache_key, asked) == set(words[:700])
    con = sqlite3.connect(reopened.path)
    assert con.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='vectors_keys'").fetchone(), "made on open"
    con.close()


def _count_blake2(monkeypatch) -> list[bytes]:
    """Spy on the per-row BLAKE2 digest of the cache's reads (and writes): the blobs it hashed."""
    from semanscope_nb.models import cache as cache_module

    seen: list[bytes] = []
    real = cache_module._digest

    def spy(blob: bytes) -> bytes:
        seen.append(bytes(blob))
        return real(blob)

    monkeypatch.setattr(cache_module, "_digest", spy)
    return seen


def test_stored_vectors_carry_a_quick_check_and_a_read_checks_it_alone_until_a_row_is_damaged(tmp_path, monkeypatch):
    """Issue 21: every stored row gets an XXH3-128 check (vector_checks); a read of sound rows computes no BLAKE2
    digest at all, and a damaged row -- its check fails -- is judged by its own BLAKE2 digest, named, dropped from
    both tables and re-encoded."""
    import xxhash

    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    words = [f"w{i}" for i in range(600)]  # more than one IN (...) chunk
    good = cache.embed(enc, words)
    con = sqlite3.connect(cache.path)
    checks = dict(con.execute("SELECT text, xxh3 FROM vector_checks WHERE model_key=?", (enc.cache_key,)))
    blobs = dict(con.execute("SELECT text, vec FROM vectors WHERE model_key=?", (enc.cache_key,)))
    assert sorted(checks) == sorted(words)
    assert all(checks[w] == xxhash.xxh3_128(blobs[w]).digest() for w in words), "the check is XXH3-128 of the stored blob"
    blake2 = _count_blake2(monkeypatch)
    found, n_damaged = cache.get(enc.cache_key, words)
    assert n_damaged == 0 and blake2 == [], "sound rows with their checks: no BLAKE2 digest is computed"
    np.testing.assert_array_equal(np.stack([found[w] for w in words]), good)
    con.execute("UPDATE vectors SET vec = ? WHERE text = 'w599'", (b"\x00" * 32,))  # bit rot
    con.commit()
    before = enc.texts_encoded
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['w599'\]"):
        again = cache.embed(enc, words)
    assert blake2 == [b"\x00" * 32, good[599].tobytes()], (
        "only the row whose check failed is judged by its BLAKE2 digest (then its new vector is stored with one)")
    assert enc.texts_encoded - before == 1 and cache.last_stats.n_damaged == 1
    np.testing.assert_array_equal(again, good)
    assert con.execute("SELECT xxh3 FROM vector_checks WHERE text = 'w599'").fetchone()[0] == xxhash.xxh3_128(
        good[599].tobytes()).digest(), "the re-encoded row is stored with a fresh check"
    con.close()


def test_a_check_that_does_not_match_a_sound_row_is_not_damage(tmp_path, monkeypatch):
    """A row rewritten by a version that knows no checks (vector and BLAKE2 digest updated, check stale) or a check
    that is itself wrong: the BLAKE2 digest vouches for the row, which is served and not re-encoded."""
    from semanscope_nb.models.cache import _digest

    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    good = cache.embed(enc, ["a", "b", "c"])
    newer = (good[1] * 2).astype(np.float32)
    con = sqlite3.connect(cache.path)
    con.execute("UPDATE vectors SET vec = ?, digest = ? WHERE text = 'b'", (newer.tobytes(), _digest(newer.tobytes())))
    con.execute("UPDATE vector_checks SET xxh3 = ? WHERE text = 'c'", (b"\x01" * 16,))
    con.commit()
    con.close()
    blake2 = _count_blake2(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # no damage reported
        found, n_damaged = cache.get(enc.cache_key, ["a", "b", "c"])
    assert n_damaged == 0 and sorted(blake2) == sorted([newer.tobytes(), good[2].tobytes()])
    np.testing.assert_array_equal(found["b"], newer)
    np.testing.assert_array_equal(found["c"], good[2])
    blake2.clear()
    again, _ = cache.get(enc.cache_key, ["a", "b", "c"])
    assert blake2 == [], "the stale and the wrong check were replaced by the read that vouched for the rows"
    np.testing.assert_array_equal(again["b"], newer)


@pytest.mark.parametrize("read_only", [True, False])
def test_a_cache_from_before_the_checks_reads_through_the_per_row_digests(tmp_path, monkeypatch, read_only):
    """A cache written before vector_checks existed: every row is checked by its BLAKE2 digest (read-only: the table
    stays absent; writable: it is made on open), a damaged row is still named, and new rows get checks."""
    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    words = [f"w{i}" for i in range(30)]
    good = cache.embed(enc, words)
    cache.close()
    con = sqlite3.connect(tmp_path / "embeddings.sqlite")
    con.execute("DROP TABLE vector_checks")
    con.execute("UPDATE vectors SET vec = ? WHERE text = 'w3'", (b"\x00" * 32,))
    con.commit()
    con.close()
    blake2 = _count_blake2(monkeypatch)
    old = snb.EmbeddingCache(tmp_path, read_only=read_only)
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['w3'\]"):
        found, n_damaged = old.get(enc.cache_key, words)
    assert n_damaged == 1 and len(blake2) == len(words), "no checks: every row by its own digest"
    for i, w in enumerate(words):
        if w != "w3":
            np.testing.assert_array_equal(found[w], good[i])
    con = sqlite3.connect(tmp_path / "embeddings.sqlite")
    has_table = con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='vector_checks'").fetchone()
    assert bool(has_table) is not read_only, "a read-only cache is never changed; a writable one gets the table"
    if not read_only:
        assert con.execute("SELECT count(*) FROM vector_checks").fetchone()[0] == len(words) - 1, (
            "the sound rows read get their checks (the damaged one is dropped)")
        blake2.clear()
        found, n_damaged = old.get(enc.cache_key, words)
        assert n_damaged == 0 and len(found) == len(words) - 1 and blake2 == [], "the second read checks them quickly"
        old.embed(enc, ["new"])
        assert con.execute("SELECT count(*) FROM vector_checks").fetchone()[0] == len(words), "the new row is checked too"
    con.close()
    old.close()


def test_checks_of_an_older_cache_are_stored_only_when_no_one_else_holds_the_lock(tmp_path, monkeypatch):
    """Storing the checks of rows read without one never waits for another writer (nor fails): the read returns at
    once with every vector, the checks are left for a later read, which stores them once the lock is free."""
    cache = snb.EmbeddingCache(tmp_path, timeout=5.0)
    enc = RandomEncoder(dim=8)
    words = [f"w{i}" for i in range(20)]
    good = cache.embed(enc, words)
    cache.close()
    con = sqlite3.connect(tmp_path / "embeddings.sqlite", isolation_level=None)
    con.execute("DELETE FROM vector_checks")  # as a cache from before the checks, table made
    holder = sqlite3.connect(tmp_path / "embeddings.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing
    reader = snb.EmbeddingCache(tmp_path, timeout=5.0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        found, n_damaged = reader.get(enc.cache_key, words)
    assert time.perf_counter() - t0 < 2.0, "no wait for the writer's lock (the cache's timeout is 5 s)"
    assert n_damaged == 0
    np.testing.assert_array_equal(np.stack([found[w] for w in words]), good)
    assert con.execute("SELECT count(*) FROM vector_checks").fetchone()[0] == 0, "not stored while the lock is held"
    holder.execute("ROLLBACK")
    holder.close()
    reader.get(enc.cache_key, words)
    assert con.execute("SELECT count(*) FROM vector_checks").fetchone()[0] == len(words), "stored once the lock is free"
    blake2 = _count_blake2(monkeypatch)
    reader.embed(enc, ["x", *words])  # the writer's busy timeout is back: a normal store still works
    assert blake2 == [reader.get(enc.cache_key, ["x"])[0]["x"].tobytes()], "only the new row's digest (when stored)"
    con.close()
    reader.close()


def test_an_older_cache_opened_while_another_process_writes_works_without_its_checks_table(tmp_path, monkeypatch):
    """The checks table of a cache from before it is made on open -- unless another writer holds the lock then: the
    cache opens after the busy timeout anyway, reads through the per-row digests and stores vectors without checks;
    the next open, with the lock free, makes the table."""
    cache = snb.EmbeddingCache(tmp_path)
    enc = RandomEncoder(dim=8)
    good = cache.embed(enc, ["a", "b"])
    cache.close()
    con = sqlite3.connect(tmp_path / "embeddings.sqlite", isolation_level=None)
    con.execute("DROP TABLE vector_checks")
    con.execute("BEGIN IMMEDIATE")  # another process writing
    blake2 = _count_blake2(monkeypatch)
    busy = snb.EmbeddingCache(tmp_path, timeout=0.3)
    found, n_damaged = busy.get(enc.cache_key, ["a", "b"])
    assert n_damaged == 0 and len(blake2) == 2
    np.testing.assert_array_equal(found["b"], good[1])
    con.execute("ROLLBACK")
    busy.embed(enc, ["c"])  # stored without a check: there is no table yet
    assert busy.get(enc.cache_key, ["c"])[1] == 0
    assert con.execute("SELECT 1 FROM sqlite_master WHERE name='vector_checks'").fetchone() is None
    busy.close()
    later = snb.EmbeddingCache(tmp_path)
    later.get(enc.cache_key, ["a", "b", "c"])  # the table is made on open; the read stores the three checks
    assert con.execute("SELECT count(*) FROM vector_checks").fetchone()[0] == 3
    later.close()
    con.close()
