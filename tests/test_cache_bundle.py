"""Issue 21: a data set's whole word set read from the embedding cache in one row (a bundle).

After a full, sound read of at least BUNDLE_MIN_TEXTS dense vectors the cache stores them once more as one row; the
next read of the same (model, text set) is served from it.  The per-text rows stay the truth: a bundle is bit for
bit what they hold, any write or delete of one of the model's rows (by this version, an older one or plain SQL)
drops it, a damaged one is never served nor reported as damage, and writing it never waits or fails.

Whether a read was served from the bundle is told by *marking* it: the bundle is rewritten, with a sound digest,
to hold every vector + 1; a read that gives the marked values back was served from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import threading
import time
import warnings

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models import cache as cache_module
from semanscope_nb.models.cache import (
    BUNDLE_KEY_SUFFIX,
    BUNDLE_MIN_TEXTS,
    BUNDLES_PER_MODEL,
    CacheWarning,
    _bundle_row,
    _digest,
    _fast_digest,
    _sparse_digest,
    _sparse_form,
)
from semanscope_nb.models.encoders import RandomEncoder

DB = "embeddings.sqlite"
N = BUNDLE_MIN_TEXTS + 20
WORDS = [f"w{i}" for i in range(N - 3)] + ["水", "Wasser", "eau"]
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _enc() -> RandomEncoder:
    return RandomEncoder(dim=24)


def _bits(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _connect(folder) -> sqlite3.Connection:
    return sqlite3.connect(os.path.join(folder, DB), isolation_level=None, timeout=10)


def _bundles(folder, key: str) -> list[tuple[str, str, bytes, bytes]]:
    con = _connect(folder)
    try:
        return con.execute("SELECT entry, meta, blob, digest FROM token_vectors WHERE model_key=?",
                           (key + BUNDLE_KEY_SUFFIX,)).fetchall()
    finally:
        con.close()


def _per_text(folder, key: str, texts) -> np.ndarray:
    """The dense per-text rows, straight from the file (the truth a bundle must equal bit for bit)."""
    con = _connect(folder)
    try:
        rows = dict(con.execute("SELECT text, vec FROM vectors WHERE model_key=?", (key,)))
    finally:
        con.close()
    return np.stack([np.frombuffer(rows[t], dtype=np.float32) for t in texts])


def _filled(folder, words=WORDS) -> tuple[snb.EmbeddingCache, RandomEncoder, np.ndarray]:
    """A cache holding ``words`` and their bundle (written by the second, full read)."""
    cache, enc = snb.EmbeddingCache(folder), _enc()
    cache.embed(enc, words)
    assert not _bundles(folder, enc.cache_key), "the first call encodes: nothing read in full yet"
    cache.embed(enc, words)
    assert len(_bundles(folder, enc.cache_key)) == 1, "a full, sound read writes the bundle"
    return cache, enc, _per_text(folder, enc.cache_key, words)


def _mark(folder, key: str, texts=WORDS) -> np.ndarray:
    """Rewrite the bundle of ``texts`` with every vector + 1 and a sound digest; the marked vectors in ``texts`` order."""
    ordered = sorted(texts)
    marked = _per_text(folder, key, ordered) + np.float32(1)
    ((entry, *_),) = _bundles(folder, key)
    meta, blob, digest = _bundle_row(ordered, marked, written=time.time())
    con = _connect(folder)
    con.execute("UPDATE token_vectors SET meta=?, blob=?, digest=? WHERE model_key=? AND entry=?",
                (meta, blob, digest, key + BUNDLE_KEY_SUFFIX, entry))
    con.close()
    pos = {t: i for i, t in enumerate(ordered)}
    return marked[[pos[t] for t in texts]]


def _read(cache, key: str, texts=WORDS, *, strict: bool = True) -> np.ndarray:
    """``texts``' vectors from ``cache.get``; ``strict``: no CacheWarning and nothing damaged (not from threads:
    catching warnings is not thread-safe)."""
    if strict:
        with warnings.catch_warnings():
            warnings.simplefilter("error", CacheWarning)
            found, n_damaged = cache.get(key, texts)
    else:
        found, n_damaged = cache.get(key, texts)
    assert n_damaged == 0 and len(found) == len(texts)
    return np.stack([found[t] for t in texts])


# -- one truth ---------------------------------------------------------------------------------------------------------
def test_a_bundle_holds_the_per_text_rows_bit_for_bit_and_serves_the_next_read(tmp_path):
    cache, enc = snb.EmbeddingCache(tmp_path), _enc()
    special = np.zeros((3, 24), dtype=np.float32)
    special[0] = np.arange(1, 25, dtype=np.float32)  # dense: more than a quarter of each row non-zero
    special[0, :3] = [-0.0, np.float32(1e-45), np.finfo(np.float32).max]  # -0.0, a subnormal, the largest float
    special[1] = np.linspace(-1, 1, 24, dtype=np.float32)
    special[2] = np.float32(np.pi)
    cache.put(enc.cache_key, WORDS[:3], special)
    first = cache.embed(enc, WORDS)
    second = cache.embed(enc, WORDS)  # the full read: per text, then the bundle written
    ((entry, meta, blob, digest),) = _bundles(tmp_path, enc.cache_key)
    head = json.loads(meta)
    ordered = sorted(WORDS)
    assert json.loads(blob[: head["texts_bytes"]]) == ordered
    stored = np.frombuffer(blob, dtype="<f4", offset=head["texts_bytes"]).reshape(len(WORDS), 24)
    np.testing.assert_array_equal(_bits(stored), _bits(_per_text(tmp_path, enc.cache_key, ordered)))
    fresh = snb.EmbeddingCache(tmp_path)
    third = fresh.embed(enc, WORDS[::-1])[::-1]  # another order of the same set: the same bundle
    for got in (second, third):
        np.testing.assert_array_equal(_bits(got), _bits(first))
    np.testing.assert_array_equal(_bits(third[:3]), _bits(special))
    marked = _mark(tmp_path, enc.cache_key)
    np.testing.assert_array_equal(_read(fresh, enc.cache_key), marked)  # served from the bundle
    assert fresh.get(enc.cache_key, WORDS[:-1])[0].keys() == set(WORDS[:-1]), "another set: read per text"
    np.testing.assert_array_equal(_read(fresh, enc.cache_key, WORDS[:-1]), first[:-1])
    cache.close()
    fresh.close()


def test_small_sets_and_sparse_models_get_no_bundle_and_a_model_keeps_its_newest_bundles(tmp_path):
    cache, enc = snb.EmbeddingCache(tmp_path), _enc()
    small = WORDS[: BUNDLE_MIN_TEXTS - 1]
    cache.embed(enc, small)
    cache.embed(enc, small)
    assert not _bundles(tmp_path, enc.cache_key)
    tfidf = snb.load_model("tfidf-char").prepare(WORDS)
    cache.embed(tfidf, WORDS)
    cache.embed(tfidf, WORDS)
    assert not _bundles(tmp_path, tfidf.cache_key), "rows stored sparse are read quickly already (a dense copy is 40x)"
    sets = [WORDS[i:] + [f"extra{i}"] for i in range(BUNDLES_PER_MODEL + 3)]
    cache.embed(enc, [words[-1] for words in sets])  # stored first: a row written drops the model's bundles
    for words in sets:
        cache.embed(enc, words)
        time.sleep(0.002)  # distinct write times
    kept = [set(json.loads(blob[: json.loads(meta)["texts_bytes"]])) for _, meta, blob, _ in _bundles(tmp_path, enc.cache_key)]
    extras = sorted(w for words in kept for w in words if w.startswith("extra"))
    assert len(kept) == BUNDLES_PER_MODEL and extras == sorted(f"extra{i}" for i in range(3, len(sets))), (
        "the newest bundles are kept")
    cache.close()


# -- invalidation: every write of a per-text row drops the model's bundles -------------------------------------------------
def _sparse_vector() -> np.ndarray:
    v = np.zeros(24, dtype=np.float32)
    v[[2, 7]] = [0.5, -2.0]
    return v


def _put_new(cache, enc, folder):
    new = np.full((1, 24), 0.25, dtype=np.float32)
    cache.put(enc.cache_key, [WORDS[5]], new)  # a re-encoded text stored again
    return {WORDS[5]: new[0]}, 0


def _older_version_put(cache, enc, folder):
    new = np.full(24, -3.0, dtype=np.float32)
    con = _connect(folder)  # what a version without bundles does: INSERT OR REPLACE, nothing else
    con.execute("INSERT OR REPLACE INTO vectors VALUES (?,?,?,?,?)", (enc.cache_key, WORDS[5], 24, new.tobytes(), _digest(new.tobytes())))
    con.execute("INSERT OR REPLACE INTO vector_checks VALUES (?,?,?)", (enc.cache_key, WORDS[5], _fast_digest(new.tobytes())))
    con.close()
    return {WORDS[5]: new}, 0


def _damage_in_place(cache, enc, folder):
    con = _connect(folder)
    con.execute("UPDATE vectors SET vec = zeroblob(96) WHERE model_key=? AND text=?", (enc.cache_key, WORDS[5]))
    con.close()
    return {}, 1  # found damaged, dropped and re-encoded: the same vector


def _evict_one(cache, enc, folder):
    con = _connect(folder)
    con.execute("DELETE FROM vectors WHERE model_key=? AND text=?", (enc.cache_key, WORDS[5]))
    con.close()
    return {}, 0


def _clear_model(cache, enc, folder):
    con = _connect(folder)
    con.execute("DELETE FROM vectors WHERE model_key=?", (enc.cache_key,))
    con.close()
    return {}, 0


def _put_sparse(cache, enc, folder):
    cache.put(enc.cache_key, [WORDS[5]], _sparse_vector()[None])  # goes to sparse_vectors, its dense row deleted
    return {WORDS[5]: _sparse_vector()}, 0


def _older_version_sparse_row(cache, enc, folder):
    v = _sparse_vector()
    idx, val = _sparse_form(v)
    con = _connect(folder)  # a sparse row beside the dense one: the sparse row is the one read
    con.execute("INSERT INTO sparse_vectors VALUES (?,?,?,?,?,?)", (enc.cache_key, WORDS[5], 24, idx, val, _sparse_digest(24, idx, val)))
    con.close()
    return {WORDS[5]: v}, 0


@pytest.mark.parametrize("write", [_put_new, _older_version_put, _damage_in_place, _evict_one, _clear_model, _put_sparse,
                                   _older_version_sparse_row])
def test_any_write_of_a_per_text_row_drops_the_bundle(tmp_path, write):
    cache, enc, truth = _filled(tmp_path)
    marked = _mark(tmp_path, enc.cache_key)
    changed, n_damaged = write(cache, enc, tmp_path)
    assert not _bundles(tmp_path, enc.cache_key), "dropped in the same transaction as the row write"
    expected = truth.copy()
    for t, v in changed.items():
        expected[WORDS.index(t)] = v
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cache.embed(enc, WORDS)
    assert cache.last_stats.n_damaged == n_damaged
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == n_damaged
    np.testing.assert_array_equal(_bits(got), _bits(expected))
    assert not (got == marked).all(axis=1).any(), "no row served from the dropped bundle"
    if write is _put_sparse or write is _older_version_sparse_row:
        return  # a model with sparse rows is read per text
    np.testing.assert_array_equal(_bits(cache.embed(enc, WORDS)), _bits(expected))
    assert len(_bundles(tmp_path, enc.cache_key)) == 1, "written again from the new rows"
    np.testing.assert_array_equal(_bits(_read(snb.EmbeddingCache(tmp_path), enc.cache_key)), _bits(expected))


def test_a_write_of_another_model_keeps_the_bundle(tmp_path):
    cache, enc, truth = _filled(tmp_path)
    marked = _mark(tmp_path, enc.cache_key)
    cache.embed(RandomEncoder(dim=24, seed=1), ["other"])
    np.testing.assert_array_equal(_read(cache, enc.cache_key), marked)


def test_a_write_between_the_read_and_the_bundle_means_no_bundle(tmp_path, monkeypatch):
    """Another process stores a row of the model after the read began: the bundle of what was read would be stale."""
    cache, enc = snb.EmbeddingCache(tmp_path), _enc()
    truth = cache.embed(enc, WORDS)
    new = np.full(24, 7.0, dtype=np.float32)
    real = cache_module._bundle_row

    def meanwhile(*args, **kwargs):
        other = snb.EmbeddingCache(tmp_path)
        other.put(enc.cache_key, [WORDS[0]], new[None])
        other.close()
        return real(*args, **kwargs)

    monkeypatch.setattr(cache_module, "_bundle_row", meanwhile)
    cache.get(enc.cache_key, WORDS)
    monkeypatch.setattr(cache_module, "_bundle_row", real)
    assert not _bundles(tmp_path, enc.cache_key)
    truth[0] = new
    np.testing.assert_array_equal(_read(cache, enc.cache_key), truth)
    np.testing.assert_array_equal(_read(cache, enc.cache_key), truth)  # (now from a bundle of the new rows)
    assert len(_bundles(tmp_path, enc.cache_key)) == 1


# -- a damaged bundle is skipped, dropped and rewritten; the per-text rows are not touched ------------------------------------
def _resealed(meta: str, blob: bytes) -> tuple[str, bytes, bytes]:
    return meta, blob, cache_module._bundle_digest(meta, blob)


def _flip_byte(meta, blob, digest):
    b = bytearray(blob)
    b[-5] ^= 0x10
    return meta, bytes(b), digest  # the digest tells


def _truncated(meta, blob, digest):
    return _resealed(meta, blob[:-96])  # a sound digest: the length tells


def _nan(meta, blob, digest):
    b = bytearray(blob)
    b[-4:] = np.float32(np.nan).tobytes()
    return _resealed(meta, bytes(b))  # a sound digest: the finiteness check tells


def _other_texts(meta, blob, digest):
    size = json.loads(meta)["texts_bytes"]
    texts = json.loads(blob[:size])
    texts[0], texts[1] = texts[1], texts[0]  # the same set in another order, rows to match: not the order asked for
    names = json.dumps(texts, ensure_ascii=False).encode()
    names += b" " * (size - len(names))
    rows = np.frombuffer(blob, dtype="<f4", offset=size).reshape(len(texts), -1)[[1, 0, *range(2, len(texts))]]
    return _resealed(meta, names + rows.tobytes())


def _bad_header(meta, blob, digest):
    return _resealed(meta.replace('"dim": 24', '"dim": 12'), blob)


@pytest.mark.parametrize("damage", [_flip_byte, _truncated, _nan, _other_texts, _bad_header])
def test_a_damaged_bundle_is_not_served_nor_taken_for_damaged_rows_and_is_written_again(tmp_path, damage):
    cache, enc, truth = _filled(tmp_path)
    ((entry, meta, blob, digest),) = _bundles(tmp_path, enc.cache_key)
    con = _connect(tmp_path)
    con.execute("UPDATE token_vectors SET meta=?, blob=?, digest=? WHERE model_key=? AND entry=?",
                (*damage(meta, blob, digest), enc.cache_key + BUNDLE_KEY_SUFFIX, entry))
    con.close()
    np.testing.assert_array_equal(_bits(_read(cache, enc.cache_key)), _bits(truth))  # no CacheWarning, nothing damaged
    assert cache.count(enc.cache_key) == len(WORDS), "every per-text row kept"
    ((_, meta2, blob2, digest2),) = _bundles(tmp_path, enc.cache_key)
    assert (meta2, blob2, digest2) != (meta, blob, digest) or damage is _flip_byte
    assert cache_module._bundle_vectors(meta2, blob2, digest2, sorted(WORDS)) is not None, "written again, sound"
    marked = _mark(tmp_path, enc.cache_key)
    np.testing.assert_array_equal(_read(cache, enc.cache_key), marked)


# -- temporary conditions: no wait, no error, no bundle ------------------------------------------------------------------
def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.mark.parametrize("how", ["flag", "mount"])
def test_a_read_only_cache_serves_its_bundle_and_writes_none(tmp_path, how):
    folder = tmp_path / "c"
    if how == "mount":
        if not ROOT:
            pytest.skip("a read-only mount needs root")
        folder.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here")
    try:
        cache, enc, truth = _filled(folder)
        others = [f"x{i}" for i in range(N)]
        expected = cache.embed(enc, others)  # stored, never read in full: no bundle
        cache.close()
        con = _connect(folder)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        if how == "mount" and subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only")
        before = _sha(folder / DB)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)  # the one "read-only" warning
            ro = snb.EmbeddingCache(folder, read_only=how == "flag")
        assert ro.read_only
        t0 = time.perf_counter()
        np.testing.assert_array_equal(_bits(_read(ro, enc.cache_key)), _bits(truth))
        got = _read(ro, enc.cache_key, others)
        assert time.perf_counter() - t0 < 2.0
        np.testing.assert_array_equal(_bits(got), _bits(expected))
        ro.close()
        assert _sha(folder / DB) == before, "the file is not modified"
    finally:
        if how == "mount":
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_locked_cache_is_read_per_text_at_once_and_bundled_once_free(tmp_path):
    cache, enc = snb.EmbeddingCache(tmp_path, timeout=5.0), _enc()
    truth = cache.embed(enc, WORDS)
    holder = _connect(tmp_path)
    holder.execute("BEGIN IMMEDIATE")  # another process writing
    t0 = time.perf_counter()
    np.testing.assert_array_equal(_read(cache, enc.cache_key), truth)
    assert time.perf_counter() - t0 < 2.0, "no wait for the writer's lock (the cache's timeout is 5 s)"
    holder.execute("ROLLBACK")
    holder.close()
    assert not _bundles(tmp_path, enc.cache_key)
    np.testing.assert_array_equal(_read(cache, enc.cache_key), truth)
    assert len(_bundles(tmp_path, enc.cache_key)) == 1, "written once the lock is free"
    cache.close()


# -- older files, older versions ------------------------------------------------------------------------------------------
def _drop_triggers(folder) -> None:
    con = _connect(folder)
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        con.execute(f"DROP TRIGGER {name}")
    con.close()


def test_a_cache_from_before_bundles_reads_per_text_and_gets_its_triggers_when_opened_writable(tmp_path):
    cache, enc = snb.EmbeddingCache(tmp_path), _enc()
    truth = cache.embed(enc, WORDS)
    cache.close()
    _drop_triggers(tmp_path)  # as a file written before bundles
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        ro = snb.EmbeddingCache(tmp_path, read_only=True)
    for _ in range(2):
        np.testing.assert_array_equal(_read(ro, enc.cache_key), truth)
    ro.close()
    assert not _bundles(tmp_path, enc.cache_key), "read-only: no trigger can be made, so no bundle"
    rw = snb.EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(_read(rw, enc.cache_key), truth)
    assert len(_bundles(tmp_path, enc.cache_key)) == 1, "opened writable: the triggers are made, the bundle written"
    rw.close()


def test_a_bundle_is_not_served_once_its_triggers_are_gone(tmp_path):
    """Without the triggers a row write would not drop the bundle: it may be stale, so it is not read."""
    cache, enc, truth = _filled(tmp_path)
    cache.close()
    _drop_triggers(tmp_path)
    _older_version_put(None, enc, tmp_path)  # the bundle stays, stale
    assert len(_bundles(tmp_path, enc.cache_key)) == 1
    truth[5] = np.full(24, -3.0, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        ro = snb.EmbeddingCache(tmp_path, read_only=True)
    np.testing.assert_array_equal(_bits(_read(ro, enc.cache_key)), _bits(truth))
    ro.close()


def test_an_older_version_sees_no_new_table(tmp_path):
    """An older version refuses a file with a table it does not know (the CLI's foreign-table check): bundles are
    token entries and triggers, so the file holds only the tables every version since sparse rows knows."""
    cache, enc, _ = _filled(tmp_path)
    con = _connect(tmp_path)
    tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert tables == {"vectors", "token_vectors", "vector_checks", "sparse_vectors"}
    cache.close()


# -- threads --------------------------------------------------------------------------------------------------------------
def test_concurrent_readers_from_threads_get_the_same_bits(tmp_path):
    cache, enc = snb.EmbeddingCache(tmp_path), _enc()
    truth = cache.embed(enc, WORDS)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def reader(own: bool) -> None:
        try:
            mine = snb.EmbeddingCache(tmp_path) if own else cache
            start.wait()
            for _ in range(4):
                results.append(_read(mine, enc.cache_key, WORDS, strict=False))
            if own:
                mine.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i % 2 == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 24
    for got in results:
        np.testing.assert_array_equal(_bits(got), _bits(truth))
    assert len(_bundles(tmp_path, enc.cache_key)) == 1
    cache.close()
