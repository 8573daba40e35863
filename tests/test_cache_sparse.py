"""Issue 21: mostly-zero vectors (TF-IDF) are stored sparse in the embedding cache and read back bit for bit.

Older caches (TF-IDF rows dense in ``vectors``, no ``sparse_vectors`` table) still read; a damaged sparse entry is
detected, named in a CacheWarning, dropped and re-encoded, as a damaged dense one is.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.cache import SPARSE_STORE_DENSITY, CacheWarning, _sparse_digest, _sparse_form

WORDS = ["water", "fire", "earth", "wind", "水", "火", "Wasser", "Feuer", "agua", "fuego", "eau", "feu"]


def _tfidf(words=WORDS):
    return snb.load_model("tfidf-char").prepare(list(words))


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _rows(cache, table: str) -> set[str]:
    con = sqlite3.connect(cache.path)
    try:
        return {t for (t,) in con.execute(f"SELECT text FROM {table}")}
    finally:
        con.close()


def _sparse_vector(dim: int, seed: int) -> np.ndarray:
    """A float32 row with a few non-zeros, among them a -0.0, a subnormal and a large value."""
    rng = np.random.default_rng(seed)
    v = np.zeros(dim, dtype=np.float32)
    pos = rng.choice(dim, size=6, replace=False)
    v[pos] = [np.float32(-0.0), np.float32(1e-42), np.float32(3e38), -1.5, 0.25, rng.random()]
    return v


def test_tfidf_rows_are_stored_sparse_and_read_back_bit_for_bit(tmp_path):
    enc = _tfidf()
    direct = enc.encode(WORDS)
    assert np.count_nonzero(direct) <= SPARSE_STORE_DENSITY * direct.size, "TF-IDF rows are mostly zero"
    cache = snb.EmbeddingCache(tmp_path)
    first = cache.embed(enc, WORDS)
    assert _rows(cache, "sparse_vectors") == set(WORDS) and not _rows(cache, "vectors"), "every TF-IDF row stored sparse"
    again = snb.EmbeddingCache(tmp_path).embed(enc, WORDS)
    assert cache.last_stats.n_encoded == len(WORDS)
    np.testing.assert_array_equal(_bits(again), _bits(direct), err_msg="a warm read gives the encoder's float32 bits")
    np.testing.assert_array_equal(_bits(again), _bits(first))
    found, n_damaged = cache.get(enc.cache_key, WORDS)
    assert n_damaged == 0 and all(v.dtype == np.float32 and not v.flags.writeable for v in found.values())


def test_sparse_form_keeps_every_non_zero_bit_pattern(tmp_path, dict_encoder):
    dim = 64
    table = {f"s{i}": _sparse_vector(dim, i).astype(np.float64).tolist() for i in range(5)}
    table["dense"] = np.linspace(-1, 1, dim).tolist()
    table["zero"] = [0.0] * dim
    enc = dict_encoder(table)
    cache = snb.EmbeddingCache(tmp_path)
    cache.embed(enc, list(table))
    assert _rows(cache, "vectors") == {"dense"} and _rows(cache, "sparse_vectors") == set(table) - {"dense"}
    found, _ = snb.EmbeddingCache(tmp_path).get(enc.cache_key, list(table))
    for t, v in table.items():
        np.testing.assert_array_equal(_bits(found[t]), _bits(np.array(v)), err_msg=f"{t}: the stored bits (-0.0 too)")
    assert np.signbit(found["s0"][np.flatnonzero(_bits(found["s0"]) == 0x80000000)]).all(), "-0.0 stays negative"
    idx, val = _sparse_form(np.asarray(table["s1"], dtype=np.float32))
    assert len(idx) == len(val) == 4 * 6
    assert _sparse_form(np.asarray(table["dense"], dtype=np.float32)) is None


def test_a_cache_from_before_the_sparse_table_reads_its_dense_rows(tmp_path):
    """TF-IDF rows written dense (no sparse_vectors table): read as they are, read-only too; new texts then go sparse."""
    enc = _tfidf()
    cache = snb.EmbeddingCache(tmp_path)
    con = sqlite3.connect(cache.path)
    con.execute("DROP TABLE sparse_vectors")  # as a cache written before the table existed
    con.commit()
    con.close()
    old = cache.embed(enc, WORDS[:8])
    assert _rows(cache, "vectors") == set(WORDS[:8]), "without the table, rows are stored dense"
    cache.close()
    ro = snb.EmbeddingCache(tmp_path, read_only=True)
    con = sqlite3.connect(ro.path)
    assert con.execute("SELECT 1 FROM sqlite_master WHERE name='sparse_vectors'").fetchone() is None
    con.close()
    got = ro.embed(enc, WORDS[:8])
    assert ro.last_stats.n_cached == 8 and ro.count(enc.cache_key) == 8 and ro.present(enc.cache_key, WORDS) == set(WORDS[:8])
    np.testing.assert_array_equal(_bits(got), _bits(old))
    ro.close()
    rw = snb.EmbeddingCache(tmp_path)  # a writable open adds the table; the old rows stay where they are
    both = rw.embed(enc, WORDS)
    assert rw.last_stats.n_cached == 8 and rw.last_stats.n_encoded == len(WORDS) - 8
    assert _rows(rw, "vectors") == set(WORDS[:8]) and _rows(rw, "sparse_vectors") == set(WORDS[8:])
    np.testing.assert_array_equal(_bits(both), _bits(enc.encode(WORDS)))
    assert rw.count(enc.cache_key) == len(WORDS) and rw.models() == [(enc.cache_key, len(WORDS))]
    assert rw.present(enc.cache_key, WORDS + ["nope"]) == set(WORDS)


def test_a_text_in_both_tables_is_read_once_and_a_put_keeps_one_place_per_text(tmp_path, dict_encoder):
    """A version without the sparse table re-encodes a sparse-stored text into ``vectors``: both hold the same vector."""
    dim = 64
    sparse_v = _sparse_vector(dim, 0)
    enc = dict_encoder({"a": sparse_v.astype(np.float64).tolist(), "b": np.ones(dim).tolist()})
    cache = snb.EmbeddingCache(tmp_path)
    cache.embed(enc, ["a", "b"])
    con = sqlite3.connect(cache.path)  # what an older version adds beside it
    from semanscope_nb.models.cache import _digest

    con.execute("INSERT INTO vectors VALUES (?,?,?,?,?)", (enc.cache_key, "a", dim, sparse_v.tobytes(), _digest(sparse_v.tobytes())))
    con.commit()
    con.close()
    found, n_damaged = cache.get(enc.cache_key, ["a", "b"])
    assert n_damaged == 0 and sorted(found) == ["a", "b"]
    np.testing.assert_array_equal(_bits(found["a"]), _bits(sparse_v))
    assert cache.count(enc.cache_key) == 2 and cache.models() == [(enc.cache_key, 2)], "each text counted once"
    cache.put(enc.cache_key, ["a"], sparse_v[None, :])
    assert "a" not in _rows(cache, "vectors") and "a" in _rows(cache, "sparse_vectors"), "stored sparse: the dense row goes"
    cache.put(enc.cache_key, ["a"], np.ones((1, dim), dtype=np.float32))
    assert "a" in _rows(cache, "vectors") and "a" not in _rows(cache, "sparse_vectors"), "stored dense: the sparse row goes"


def _damage(cache, text: str, how: str) -> None:
    con = sqlite3.connect(cache.path)
    dim, idx, val = con.execute("SELECT dim, idx, val FROM sparse_vectors WHERE text=?", (text,)).fetchone()
    i = np.frombuffer(idx, dtype="<i4").copy()
    v = np.frombuffer(val, dtype="<f4").copy()
    keep_digest = False
    if how == "flipped value byte":  # the digest gives it away
        b = bytearray(val)
        b[1] ^= 0x40
        val, keep_digest = bytes(b), True
    elif how == "positions cut short":
        idx = i[:-1].tobytes()
    elif how == "position out of range":
        i[-1] = dim
        idx = i.tobytes()
    elif how == "positions not increasing":
        i[[0, 1]] = i[[1, 0]]
        idx = i.tobytes()
    elif how == "non-finite value":
        v[0] = np.nan
        val = v.tobytes()
    elif how == "odd blob length":
        idx = idx + b"\x00"
    digest = con.execute("SELECT digest FROM sparse_vectors WHERE text=?", (text,)).fetchone()[0]
    con.execute("UPDATE sparse_vectors SET idx=?, val=?, digest=? WHERE text=?",
                (idx, val, digest if keep_digest else _sparse_digest(dim, idx, val), text))
    con.commit()
    con.close()


@pytest.mark.parametrize("how", ["flipped value byte", "positions cut short", "position out of range",
                                 "positions not increasing", "non-finite value", "odd blob length"])
def test_a_damaged_sparse_entry_is_named_dropped_and_re_encoded(tmp_path, how):
    enc = _tfidf()
    cache = snb.EmbeddingCache(tmp_path)
    good = cache.embed(enc, WORDS)
    _damage(cache, "fire", how)
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['fire'\]"):
        found, n_damaged = cache.get(enc.cache_key, WORDS)
    assert n_damaged == 1 and sorted(found) == sorted(set(WORDS) - {"fire"}), how
    for k, w in enumerate(WORDS):
        if w != "fire":
            np.testing.assert_array_equal(_bits(found[w]), _bits(good[k]), err_msg=f"{how}: sound rows read as stored")
    assert "fire" not in _rows(cache, "sparse_vectors"), "the damaged row is deleted"
    before = enc.texts_encoded
    again = cache.embed(enc, WORDS)
    assert enc.texts_encoded - before == 1, "only the damaged entry is encoded again"
    np.testing.assert_array_equal(_bits(again), _bits(good))
    assert "fire" in _rows(cache, "sparse_vectors"), "and stored sparse again"


def test_a_read_only_cache_serves_its_sparse_rows_and_a_damaged_one_is_named_but_left(tmp_path):
    enc = _tfidf()
    good = snb.EmbeddingCache(tmp_path).embed(enc, WORDS)
    _damage(snb.EmbeddingCache(tmp_path), "fire", "flipped value byte")
    ro = snb.EmbeddingCache(tmp_path, read_only=True)
    assert ro.present(enc.cache_key, WORDS) == set(WORDS) and ro.count(enc.cache_key) == len(WORDS)
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['fire'\]"):
        found, n_damaged = ro.get(enc.cache_key, WORDS)
    assert n_damaged == 1 and "fire" not in found
    for k, w in enumerate(WORDS):
        if w != "fire":
            np.testing.assert_array_equal(_bits(found[w]), _bits(good[k]), err_msg=w)
    assert "fire" in _rows(ro, "sparse_vectors"), "a read-only cache is never modified"


def test_a_damaged_sparse_entry_with_a_dense_copy_beside_it_is_re_encoded_not_served(tmp_path, dict_encoder):
    from semanscope_nb.models.cache import _digest

    dim = 64
    sparse_v = _sparse_vector(dim, 3)
    enc = dict_encoder({"a": sparse_v.astype(np.float64).tolist(), "b": _sparse_vector(dim, 4).astype(np.float64).tolist()})
    cache = snb.EmbeddingCache(tmp_path)
    cache.embed(enc, ["a", "b"])
    con = sqlite3.connect(cache.path)
    con.execute("INSERT INTO vectors VALUES (?,?,?,?,?)", (enc.cache_key, "a", dim, sparse_v.tobytes(), _digest(sparse_v.tobytes())))
    con.execute("UPDATE sparse_vectors SET val = CAST('not bytes' AS TEXT) WHERE text='a'")  # a value column of the wrong type
    con.commit()
    con.close()
    with pytest.warns(CacheWarning, match=r"1 damaged entry .*\['a'\]"):
        found, n_damaged = cache.get(enc.cache_key, ["a", "b"])
    assert n_damaged == 1 and sorted(found) == ["b"], "the dense copy of a damaged entry is not served"
    assert "a" not in _rows(cache, "vectors") | _rows(cache, "sparse_vectors"), "every copy of it is dropped"
    np.testing.assert_array_equal(_bits(cache.embed(enc, ["a"])[0]), _bits(sparse_v))
    assert cache.last_stats.n_encoded == 1
