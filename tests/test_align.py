"""Procrustes alignment, seed dictionaries, honest splits and the aligned registry model."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest
import scipy.linalg

import semanscope_nb as snb
from semanscope_nb.models.aligned import Alignment


@pytest.fixture(autouse=True)
def _restore_registry():
    """Aligned models registered here must not leak into other tests' model lists."""
    from semanscope_nb.models import registry

    saved, loaded = dict(registry._REGISTRY), dict(registry._LOADED)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    registry._LOADED.clear()
    registry._LOADED.update(loaded)


def _rotation(d, seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("normalize,center", [(False, False), (True, True), (True, False)])
def test_procrustes_recovers_a_known_rotation(normalize, center):
    rng = np.random.default_rng(0)
    S = rng.normal(size=(200, 20)) + 0.7
    R = _rotation(20, 1)
    W = snb.procrustes(S, S @ R, normalize=normalize, center=center)
    assert np.abs(W - R).max() < 1e-10
    assert np.abs(W.T @ W - np.eye(20)).max() < 1e-10


def test_procrustes_agrees_with_scipy_and_minimises_the_objective():
    rng = np.random.default_rng(2)
    S = rng.normal(size=(60, 8))
    T = S @ _rotation(8, 3) + 0.5 * rng.normal(size=(60, 8))
    W = snb.procrustes(S, T)
    R_scipy, _ = scipy.linalg.orthogonal_procrustes(S, T)  # an independent, well-kept implementation
    assert np.abs(W - R_scipy).max() < 1e-10
    best = np.linalg.norm(S @ W - T)
    for seed in range(20):  # no random orthogonal matrix does better
        assert best <= np.linalg.norm(S @ _rotation(8, 100 + seed) - T)


def test_alignment_lowers_distance_on_held_out_pairs():
    rng = np.random.default_rng(4)
    d = 16
    X = rng.normal(size=(400, d))
    Y = (X @ _rotation(d, 5)) * 1.0 + 0.3 * rng.normal(size=(400, d)) + 2.0  # rotated, noisy, shifted
    train, test = slice(0, 300), slice(300, 400)
    al = snb.fit_alignment(X[train], Y[train], source_language="xx", target_language="yy")

    def mean_cos_dist(a, b):
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        return float(np.mean(1 - np.sum(a * b, axis=1)))

    before = mean_cos_dist(X[test], Y[test])
    after = mean_cos_dist(al.map_source(X[test]), al.map_target(Y[test]))
    assert after < 0.2 < before
    # held-out retrieval improves too
    r_before = snb.bitext_retrieval(X[test], Y[test], ks=(1,), n_boot=0)
    r_after = snb.bitext_retrieval(al.map_source(X[test]), al.map_target(Y[test]), ks=(1,), n_boot=0)
    assert r_after.accuracy[1] > r_before.accuracy[1]
    # MIM: least-squares maps bring the training pairs at least as close to their midpoints
    mim = snb.fit_alignment(X[train], Y[train], source_language="xx", target_language="yy", mim=True)
    gap = np.linalg.norm(al.map_source(X[train]) - al.map_target(Y[train]))
    gap_mim = np.linalg.norm(mim.map_source(X[train]) - mim.map_target(Y[train]))
    assert gap_mim <= gap + 1e-9
    back = Alignment.from_dict(mim.to_dict())
    assert back.sha256 == mim.sha256
    with pytest.raises(ValueError, match="no map for language 'zz'"):
        al.transform(X[:2], "zz")


def test_procrustes_bad_input():
    with pytest.raises(snb.EmbeddingError, match="5 rows but target has 4"):
        snb.procrustes(np.ones((5, 3)), np.ones((4, 3)))
    with pytest.raises(snb.EmbeddingError, match="3 dimensions but target has 2"):
        snb.procrustes(np.ones((5, 3)), np.ones((5, 2)))
    with pytest.raises(snb.EmbeddingError, match="all-zero"):
        snb.procrustes(np.zeros((3, 2)), np.ones((3, 2)), normalize=True)


# --------------------------------------------------------------------------- dictionaries


def _write_gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def test_muse_reversed_order_and_traditional_to_simplified(tmp_path):
    p = _write_gz(tmp_path / "en-zh.dict.gz", ["這個 @ this", "來自 @ from", "從 @ from", "cross @ cross", "utc @ utc", "这个 @ this", "水 @ water"])
    d = snb.read_muse_dictionary(p)
    assert d.source_language == "en" and d.target_language == "zh"
    # (SOURCE, TARGET) order, simplified script, identical and non-CJK pairs dropped, duplicates merged after t2s
    assert d.pairs == (("this", "这个"), ("from", "来自"), ("from", "从"), ("water", "水"))
    assert any("identical" in line for line in d.report)
    kept = snb.read_muse_dictionary(p, simplified=False, drop_identical=False, require_script=False)
    assert ("this", "這個") in kept.pairs and ("cross", "cross") in kept.pairs
    bad = _write_gz(tmp_path / "en-de.dict.gz", ["Haus @ house", "no separator here"])
    with pytest.raises(snb.DatasetError, match=r"en-de.dict.gz: line 2: expected 'TARGET @ SOURCE'"):
        snb.read_muse_dictionary(bad)
    with pytest.raises(snb.DatasetError, match="file not found"):
        snb.read_muse_dictionary("en-xx", folder=tmp_path)


@pytest.fixture(scope="module")
def muse_en_zh():
    path = snb.shared_data_dir() / "muse" / "en-zh.dict.gz"
    if not path.exists():
        pytest.skip(f"MUSE dictionaries not found at {path} (set SEMANSCOPE_SHARED_DATA)")
    return snb.read_muse_dictionary("en-zh")


def test_real_muse_file_is_read_source_first_and_simplified(muse_en_zh):
    from opencc import OpenCC

    d = muse_en_zh
    assert d.pairs[0] == ("and", "而且")
    assert ("this", "这个") in d.pairs and ("from", "来自") in d.pairs  # '這個 @ this', '來自 @ from' in the file
    t2s = OpenCC("t2s").convert
    sample = [t for _, t in d.pairs[::50]]
    assert all(t2s(t) == t for t in sample)  # nothing traditional left to convert
    assert not any(ch in "這們來說時會對國學" for _, t in d.pairs for ch in t)
    assert all(s != t for s, t in d.pairs)


def test_cedict_dictionary_pairs():
    d = snb.cedict_dictionary()
    assert ("water", "水") in d.pairs
    assert d.source_language == "en" and d.target_language == "zh" and len(d) > 10_000
    assert all(" " not in s for s, _ in d.pairs[:1000])


def test_split_is_disjoint_and_free_of_evaluated_datasets(muse_en_zh):
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"])
    split = snb.split_dictionary(muse_en_zh, n_train=1500, n_test=300, seed=7, exclude=[ds], top=6000)
    train_src = {s for s, _ in split.train.pairs}
    test_src = {s for s, _ in split.test.pairs}
    assert not train_src & test_src
    assert len(train_src) == 1500 and len(test_src) == 300
    en_words = {w.casefold() for w in ds.words("en")}
    zh_words = set(ds.words("zh"))
    assert not {s.casefold() for s in train_src} & en_words
    assert not {t for _, t in split.train.pairs} & zh_words
    assert split.counts["pairs_excluded_by_datasets"] > 0
    # the check catches a leak
    leaky = snb.DictionarySplit(split.train.with_pairs(split.train.pairs + split.test.pairs[:1]), split.test, 7, 1, 1, (), {})
    with pytest.raises(AssertionError, match="share 1 source word"):
        leaky.check()
    water = split.train.with_pairs(split.train.pairs + (("water", "水"),))
    with pytest.raises(AssertionError, match="evaluated datasets"):
        snb.DictionarySplit(water, split.test, 7, 1, 1, (), {}).check([ds])
    # seeded
    again = snb.split_dictionary(muse_en_zh, n_train=1500, n_test=300, seed=7, exclude=[ds], top=6000)
    assert again.train.pairs == split.train.pairs


def test_no_pairs_left_after_filtering_is_a_clear_error(tmp_path):
    d = snb.BilingualDictionary("tiny-en-zh", "en", "zh", (("water", "水"), ("fire", "火"), ("tree", "树")))
    ds = snb.read_word_lists({"en": _txt(tmp_path / "en.txt", "water\nfire\ntree\n"), "zh": _txt(tmp_path / "zh.txt", "水\n火\n树\n")})
    with pytest.raises(snb.DatasetError) as err:
        snb.split_dictionary(d, n_train=2, n_test=1, exclude=[ds])
    msg = str(err.value)
    assert "3 pairs read" in msg and "3 excluded" in msg and "0 pairs (0 source words) left" in msg and "3 source words needed" in msg
    with pytest.raises(snb.DatasetError, match="10 source words needed"):
        snb.split_dictionary(d, n_train=8, n_test=2)


def _txt(path, text):
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the aligned model


@pytest.mark.slow
def test_aligned_model_behaves_as_a_registry_model(muse_en_zh, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(60))
    split = snb.split_dictionary(muse_en_zh, n_train=600, n_test=150, seed=0, exclude=[ds], top=5000)
    am = snb.align_model("wordllama-l2-supercat", split, cache=cache)
    assert am.model_id == "wordllama-l2-supercat+procrustes[muse-en-zh,n=600,seed=0]"
    info = snb.get_model_info(am.model_id)
    assert info.languages == ("en", "zh") and am.model_id in [m.id for m in snb.list_models(language="zh")]
    enc = snb.load_model(am.model_id)
    assert enc.language_dependent
    assert enc.cache_key_for("en") != enc.cache_key_for("zh")
    assert am.alignment.sha256 in enc.cache_key
    # its vectors are the base vectors mapped by the alignment
    base = snb.load_model("wordllama-l2-supercat")
    words = ["water", "fire"]
    np.testing.assert_allclose(enc.encode(words, language="en"), am.alignment.map_source(base.encode(words)), atol=1e-5)
    np.testing.assert_allclose(enc.encode(["水"], language="zh"), am.alignment.map_target(base.encode(["水"])), atol=1e-5)
    with pytest.raises(ValueError, match="cannot embed language 'de'"):
        enc.encode(["Wasser"], language="de")
    # scored, and cached, like any model
    r = snb.dataset_affinity(ds, am.model_id, cache=cache, n_boot=50)
    r2 = snb.dataset_affinity(ds, am.model_id, cache=cache, n_boot=50)
    assert r.provenance["model"] == am.model_id and math.isfinite(r.cosine.sa)
    assert r2.provenance["embedding"]["n_encoded"] == 0 and r2.cosine.sa == r.cosine.sa
    # report before / after on the held-out words (numbers are measured, not asserted in direction)
    with pytest.warns(snb.LanguageSupportWarning, match="'wordllama-l2-supercat' does not list zh"):  # mostly English
        rep = snb.alignment_report({"before": "wordllama-l2-supercat", "after": am.model_id}, split, n_boot=0, cache=cache)
    assert list(rep.table["stage"]) == ["before", "after"]
    assert rep.n_test_pairs == len(split.test.pairs)
    assert all(0 <= p <= 1 for p in rep.table["P@1"])
    assert rep.retrieval["after"].n_queries == 150


def test_aligned_model_with_a_fake_base(dict_encoder):
    rng = np.random.default_rng(0)
    R = _rotation(4, 9)
    words = ["a", "b", "c", "d", "e", "f"]
    en = {w: rng.normal(size=4) for w in words}
    table = {**{w: v.tolist() for w, v in en.items()}, **{w.upper(): (v @ R).tolist() for w, v in en.items()}}
    enc = dict_encoder(table)
    d = snb.BilingualDictionary("toy-en-xx", "en", "xx", tuple((w, w.upper()) for w in words))
    am = snb.align_model(enc, d, normalize=False, center=False, register=False, model_id="toy-aligned", cache=False)
    assert np.abs(am.alignment.W - R).max() < 1e-6  # encoders hand back float32 vectors
    assert am.counts["pairs_used"] == 6
    assert "toy-aligned" not in [m.id for m in snb.list_models()]
