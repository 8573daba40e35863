"""Projections: every point keeps its word and language through duplicate removal; the cache counts."""

from __future__ import annotations

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.plots.projection import PHATE_DEFAULTS, ProjectionCache, ProjectionSettings, project, project_dataset, unique_rows


def _points(n=40, d=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d))


def test_phate_defaults_are_the_papers():
    assert PHATE_DEFAULTS == {"knn": 15, "decay": 40, "t": "auto", "gamma": 1.0, "n_components": 2}


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("method", ["phate", "umap", "tsne", "pca"])
def test_duplicates_keep_their_word_and_language(method):
    x = _points(30)
    # row 30 duplicates row 0 (another language, same vector), row 31 duplicates row 5
    x = np.vstack([x, x[0], x[5]])
    words = [f"w{i}" for i in range(30)] + ["w0-copy", "w5-copy"]
    langs = ["en"] * 30 + ["fr", "fr"]
    p = project(x, method=method, words=words, languages=langs, cache=False)
    assert p.coords.shape == (32, 2) and np.isfinite(p.coords).all()
    assert p.n_unique == 30
    assert (p.coords[30] == p.coords[0]).all() and (p.coords[31] == p.coords[5]).all()
    df = p.to_frame()
    assert list(df["word"][30:]) == ["w0-copy", "w5-copy"] and list(df["language"][30:]) == ["fr", "fr"]
    # the unique id links each point to the projected row, in input order
    assert p.inverse[30] == p.inverse[0] and len(set(p.inverse[:30])) == 30


def test_unique_rows_against_a_loop():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(6, 4))
    x = base[[0, 1, 0, 2, 3, 1, 4, 5, 5]]
    uniq, inv = unique_rows(x)
    # loop reference: first-seen order
    seen: list[tuple] = []
    ref_inv = []
    for row in x:
        key = tuple(row)
        if key not in seen:
            seen.append(key)
        ref_inv.append(seen.index(key))
    assert [tuple(r) for r in uniq] == seen and inv.tolist() == ref_inv


def test_knn_adapts_to_few_points():
    p = project(_points(8), method="phate", cache=False)
    assert p.params["knn"] == 6  # n_unique - 2 (PHATE needs knn < n)
    p = project(_points(3), method="umap", cache=False)
    assert p.params["fallback"] == "pca" and p.coords.shape == (3, 2)
    p = project(_points(100), method="phate", cache=False)
    assert p.params["knn"] == 15 and p.params["decay"] == 40


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_mapping_input_and_seeds():
    rng = np.random.default_rng(1)
    v = {"en": rng.normal(size=(25, 8)), "zh": rng.normal(size=(25, 8))}
    a = project(v, method="umap", random_state=3, cache=False)
    b = project(v, method="umap", random_state=3, cache=False)
    assert a.languages == ("en",) * 25 + ("zh",) * 25
    np.testing.assert_allclose(a.coords, b.coords)  # same seed, same map
    assert a.key == b.key and project(v, method="umap", random_state=4, cache=False).key != a.key


def test_projection_cache_hits_misses_and_keys():
    cache = ProjectionCache(maxsize=2)
    x = _points(30)
    p1 = project(x, method="pca", cache=cache)
    p2 = project(x.copy(), method="pca", cache=cache)  # same content, new array: a hit
    assert (cache.hits, cache.misses, cache.computed) == (1, 1, 1)
    assert not p1.from_cache and p2.from_cache and np.array_equal(p1.coords, p2.coords)
    project(x, method="pca", cache=cache, words=[str(i) for i in range(30)])  # labels do not change the key
    assert cache.computed == 1
    x2 = x.copy()
    x2[0, 0] += 1e-9  # any change in content is a new key
    project(x2, method="pca", cache=cache)
    project(x, method="phate", cache=cache, knn=5)  # method and params are in the key
    assert cache.computed == 3 and len(cache) == 2  # LRU bound
    project(x, method="pca", cache=cache)  # evicted by the LRU: recomputed
    assert cache.computed == 4


def test_disk_cache_survives_a_new_process_cache(tmp_path):
    x = _points(30)
    a = ProjectionCache(folder=tmp_path)
    p1 = project(x, method="phate", cache=a)
    b = ProjectionCache(folder=tmp_path)  # a fresh in-memory cache reading the same folder
    p2 = project(x, method="phate", cache=b)
    assert b.computed == 0 and b.disk_hits == 1
    np.testing.assert_array_equal(p1.coords, p2.coords)
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary files
    # a damaged file is recomputed, not trusted
    next(tmp_path.glob("*.npz")).write_bytes(b"garbage")
    c = ProjectionCache(folder=tmp_path)
    project(x, method="phate", cache=c)
    assert c.computed == 1


def test_round_trip_to_dict():
    p = project(_points(20), method="pca", words=[str(i) for i in range(20)], cache=False)
    q = snb.Projection.from_dict(p.to_dict())
    np.testing.assert_allclose(q.coords, p.coords)
    assert q.words == p.words and q.params == p.params and q.key == p.key


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "mds"}, "method must be one of"),
        ({"method": "phate", "knnn": 5}, "unknown parameter(s) ['knnn']"),
        ({"method": "pca", "n_components": 3}, "only 2-D"),
        ({"method": "pca", "random_state": None}, "random_state must be an int"),
        ({"method": "pca", "words": ["a"]}, "words has 1 entries but there are 20 vectors"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        project(_points(20), cache=False, **kwargs)


def test_bad_vectors():
    x = _points(10)
    x[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf in row\(s\) \['w3'\]"):
        project(x, words=[f"w{i}" for i in range(10)], cache=False)
    with pytest.raises(ValueError, match="at least 2 vectors"):
        project(np.zeros((1, 4)), cache=False)
    with pytest.raises(ValueError, match="2-D"):
        project(np.zeros(5), cache=False)
    with pytest.raises(ValueError, match="mixed dimensions"):
        project({"en": np.zeros((3, 4)), "zh": np.zeros((3, 5))}, cache=False)


@pytest.mark.slow
def test_phate_on_real_embeddings_keeps_translations_closer_than_random(shared_cache_dir):
    """USE-multilingual is translation-supervised: on its PHATE map, a word should sit nearer its
    translation than a random other-language word does (checked with a plain loop)."""
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(60))
    vectors, _, _ = snb.embed_dataset(ds, "use-multilingual", cache=snb.EmbeddingCache(shared_cache_dir))
    p = project_dataset(ds, vectors, settings=ProjectionSettings("phate"), cache=False)
    pos = {(lang, w): xy for xy, w, lang in zip(p.coords, p.words, p.languages)}
    assert len(pos) == len(p)  # every (language, word) has its point
    rng = np.random.default_rng(0)
    closer = 0
    for row in ds.rows:
        en, zh = pos[("en", row[0][0])], pos[("zh", row[1][0])]
        other = ds.rows[rng.integers(len(ds.rows))][1][0]
        d_true = float(np.hypot(*(en - zh)))
        d_rand = float(np.hypot(*(en - pos[("zh", other)])))
        closer += d_true < d_rand
    assert closer / len(ds.rows) > 0.7
