"""DistFuse: the fused matrix equals a dense weighted sum of z-scored matrices built here, every weight applied."""

from __future__ import annotations

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.metrics.fusion import distance_moments


def _dense_cos(q, c):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    return 1 - qn @ cn.T


@pytest.fixture
def two_models():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 6))
    a = (base, base + 1.0 * rng.normal(size=(50, 6)))
    b2 = rng.normal(size=(50, 10))
    b = (b2, b2 + 1.3 * rng.normal(size=(50, 10)) + 3.0)  # a different scale and offset
    return a, b


def test_fused_distances_equal_dense_weighted_zscores(two_models):
    (qa, ca), (qb, cb) = two_models
    Da, Db = _dense_cos(qa, ca), _dense_cos(qb, cb)
    fused = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[2.0, 0.5])
    expected = 2.0 * (Da - Da.mean()) / Da.std() + 0.5 * (Db - Db.mean()) / Db.std()
    np.testing.assert_allclose(fused.block(slice(0, 50)), expected, atol=1e-10)
    np.testing.assert_allclose(fused.T.block(slice(0, 50)), expected.T, atol=1e-10)
    mu, sd = distance_moments(snb.EmbeddingDistances(qa, ca), block=7)
    assert mu == pytest.approx(Da.mean(), abs=1e-12) and sd == pytest.approx(Da.std(), abs=1e-12)


def test_every_weight_is_applied_including_the_first(two_models):
    (qa, ca), (qb, cb) = two_models
    Da, Db = _dense_cos(qa, ca), _dense_cos(qb, cb)
    za, zb = (Da - Da.mean()) / Da.std(), (Db - Db.mean()) / Db.std()
    for w in ([1, 1], [3, 1], [1, 3], [0, 1], [1, 0]):
        f = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=w).block(slice(0, 50))
        np.testing.assert_allclose(f, w[0] * za + w[1] * zb, atol=1e-10)
    w31 = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[3, 1]).block(slice(0, 50))
    w11 = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[1, 1]).block(slice(0, 50))
    assert not np.allclose(w31, w11)
    raw = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[2, 1], standardise=False).block(slice(0, 50))
    np.testing.assert_allclose(raw, 2 * Da + Db, atol=1e-10)


def test_retrieval_and_classification_accept_an_ensemble(two_models):
    (qa, ca), (qb, cb) = two_models
    fused = snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[1, 2])
    D = fused.block(slice(0, 50))
    res = snb.bitext_retrieval(fused, ks=(1, 5), n_boot=0, block=9)
    # plain loops on the dense fused matrix
    ranks, preds = [], []
    for i in range(50):
        order = sorted(range(50), key=lambda j: (D[i, j], j))
        ranks.append(order.index(i) + 1)
        preds.append(order[0])
    assert res.ranks.tolist() == ranks and res.predictions.tolist() == preds
    rev_ranks = []
    for j in range(50):
        order = sorted(range(50), key=lambda i: (D[i, j], i))
        rev_ranks.append(order.index(j) + 1)
    assert res.reverse.ranks.tolist() == rev_ranks
    assert res.metric == "distfuse" and res.provenance["parameters"]["distances"]["provider"] == "distfuse"
    # the ensemble beats or ties its weaker member here (noisier model b)
    single_b = snb.bitext_retrieval(qb, cb, ks=(1,), n_boot=0)
    assert res.accuracy[1] >= single_b.accuracy[1]
    # classification: queries = test rows, corpus = train rows
    labels = [f"l{i % 4}" for i in range(50)]
    cls = snb.knn_classification(fused, labels, None, labels, ks=(1, 3), n_boot=0)
    top3 = np.argsort(D, axis=1, kind="stable")[:, :3]
    assert cls.predictions["knn@1"].tolist() == [labels[j] for j in top3[:, 0]]
    assert "logistic_regression" not in cls.baselines and cls.notes


def test_bad_ensembles_fail_clearly(two_models):
    (qa, ca), (qb, cb) = two_models
    with pytest.raises(ValueError, match="2 weight"):
        snb.FusedDistances.from_embeddings([(qa, ca)], weights=[1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        snb.FusedDistances.from_embeddings([(qa, ca), (qb, cb)], weights=[1, -1])
    with pytest.raises(ValueError, match="at least one"):
        snb.FusedDistances([])
    with pytest.raises(snb.EmbeddingError, match="differ in shape"):
        snb.FusedDistances.from_embeddings([(qa, ca), (qb[:40], cb)])
    const = np.ones((5, 3))
    with pytest.raises(snb.EmbeddingError, match="constant"):
        snb.FusedDistances.from_embeddings([(const, const)])
    with pytest.raises(ValueError, match="metric"):
        snb.DistFuse(["random-null"], metric="dot")


@pytest.mark.slow
def test_distfuse_of_real_models_on_tatoeba(shared_cache_dir):
    folder = snb.shared_data_dir() / "tatoeba"
    if not (folder / "tatoeba.fra-eng.fra").exists():
        pytest.skip(f"Tatoeba test files not found in {folder}")
    corpus = snb.read_tatoeba("fr", limit=50)
    cache = snb.EmbeddingCache(shared_cache_dir)
    ens = snb.DistFuse(["use-multilingual", "wordllama-l2-supercat"], weights=[2, 1])
    res = snb.text_retrieval(corpus.source_texts, corpus.target_texts, ens, source_language="fr", target_language="en",
                             ks=(1, 5), n_boot=0, cache=cache)
    assert res.provenance["model"] == ens.id == "distfuse[use-multilingual*2+wordllama-l2-supercat*1,cosine]"
    members = res.provenance["model_options"]["members"]
    assert [m["model"] for m in members] == ["use-multilingual", "wordllama-l2-supercat"] and members[0]["weight"] == 2
    # same numbers as fusing the two models' cached embeddings by hand
    pairs = []
    for mid in ("use-multilingual", "wordllama-l2-supercat"):
        enc = snb.load_model(mid)
        pairs.append((cache.embed(enc, list(corpus.source_texts)), cache.embed(enc, list(corpus.target_texts))))
    by_hand = snb.bitext_retrieval(snb.FusedDistances.from_embeddings(pairs, weights=[2, 1]), ks=(1, 5), n_boot=0)
    assert np.array_equal(res.ranks, by_hand.ranks) and res.f1 == by_hand.f1
    assert res.accuracy[1] > 0.8  # USE dominates the fused distances
