"""One truth across row orders: the same concepts listed in another order get the same answer.

Random draws over concepts (bootstrap resamples, permutation re-pairings, the model comparison's sign flips) are
made over the concepts in canonical order (``metrics.row_order``: each concept's words in every language of its
file), so a data set whose rows are shuffled draws the same resamples of the same concepts.  Only the order of the
sums over concepts changes: R terms of size <= 1 summed in another order move a spread by at most ~R u relative
(R <= 120 here: ~1e-14), and a ratio or difference of them by a few times that; RTOL = 1e-11 bounds it with room.
Decisions (tiers, p-values: counted re-pairings) are compared exactly.  Before the canonical order the interval ends
moved by up to 10% of the interval's width under a shuffle.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import semanscope_nb as snb
from semanscope_nb.metrics.row_order import canonical_rows
from semanscope_nb.metrics.spreads import AlignedWords

RTOL = 1e-11
B = 200


@pytest.fixture(scope="module")
def words():
    """120 concepts of conceptual-space in en, de and zh (real words; a real static model below)."""
    return snb.load_dataset("conceptual-space", languages=["en", "de", "zh"]).subset(range(120))


def _shuffled(ds, seed: int):
    return ds.subset(np.random.default_rng(seed).permutation(len(ds)).tolist())


def _sa_numbers(r) -> list[float]:
    v = r.verdict_scores
    out = [r.cosine.sa, *r.cosine.ci, r.cosine.sem, *r.euclidean.ci, v.sa.value, v.sa_null.value, *v.delta.ci,
           *v.corrected.ci]
    if r.surface is not None:
        out += [r.surface.difference.value, *r.surface.difference.ci]
    return out


@pytest.mark.slow  # a real static model and the TF-IDF baseline: seconds
@pytest.mark.parametrize("model", ["wordllama-l2-supercat", "tfidf-char"])
def test_the_verdict_of_shuffled_rows_is_the_verdict_of_the_rows_as_read(words, model, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    as_read = snb.dataset_affinity(words, model, n_boot=B, seed=0, cache=cache, progress=False)
    for seed in (1, 2):
        shuffled = snb.dataset_affinity(_shuffled(words, seed), model, n_boot=B, seed=0, cache=cache, progress=False)
        np.testing.assert_allclose(_sa_numbers(shuffled), _sa_numbers(as_read), rtol=RTOL, atol=1e-14,
                                   err_msg=f"{model}, rows shuffled by seed {seed}: the same resamples of the same concepts")
        assert shuffled.tier == as_read.tier
        assert (shuffled.permutation is None) == (as_read.permutation is None)
        if as_read.permutation is not None:  # the same re-pairings of the same concepts: the same count, the same p
            assert shuffled.permutation.p_value == as_read.permutation.p_value
            np.testing.assert_allclose(shuffled.permutation.null_mean, as_read.permutation.null_mean, rtol=RTOL)


@pytest.mark.slow  # a real static model and the TF-IDF baseline: seconds
def test_the_pair_matrix_and_the_comparison_of_shuffled_rows_are_those_of_the_rows_as_read(words, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    cols = ["sa", "ci_low", "ci_high", "sa_null", "delta", "delta_low", "delta_high"]
    as_read = snb.language_pairs(words, "wordllama-l2-supercat", n_boot=B, seed=0, cache=cache).table
    shuffled = snb.language_pairs(_shuffled(words, 3), "wordllama-l2-supercat", n_boot=B, seed=0, cache=cache).table
    np.testing.assert_allclose(shuffled[cols].to_numpy(float), as_read[cols].to_numpy(float), rtol=RTOL, atol=1e-14,
                               err_msg="every pair: the same resamples")
    assert shuffled["verdict"].tolist() == as_read["verdict"].tolist()
    assert shuffled["p_value"].tolist() == as_read["p_value"].tolist()
    models = ["wordllama-l2-supercat", "tfidf-char"]
    a = snb.compare_on_dataset(words, models, n_boot=B, n_perm=500, seed=0, cache=cache)
    b = snb.compare_on_dataset(_shuffled(words, 4), models, n_boot=B, n_perm=500, seed=0, cache=cache)
    np.testing.assert_allclose(b.scores[["score", "ci_low", "ci_high"]].to_numpy(float),
                               a.scores[["score", "ci_low", "ci_high"]].to_numpy(float), rtol=RTOL, atol=1e-14)
    assert b.pairs["p_value"].tolist() == a.pairs["p_value"].tolist()  # the sign flips drawn over the same concepts


def test_bca_intervals_of_shuffled_rows_are_those_of_the_rows_as_read():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(40, 8))
    arrays = {"en": e, "de": e + 0.9 * rng.normal(size=e.shape)}
    labels = [f"w{r}" for r in range(40)]
    a = snb.semantic_affinity(arrays, labels=labels, n_boot=300, seed=1, method="BCa")
    p = rng.permutation(40)
    b = snb.semantic_affinity({k: v[p] for k, v in arrays.items()}, labels=[labels[i] for i in p], n_boot=300, seed=1,
                              method="BCa")
    np.testing.assert_allclose([*b.cosine.ci, *b.euclidean.ci], [*a.cosine.ci, *a.euclidean.ci], rtol=RTOL)


def test_a_selection_keeps_the_concepts_keys_of_the_whole_file():
    whole = snb.load_dataset("conceptual-space")
    read_two = snb.load_dataset("conceptual-space", languages=["zh", "de"])
    assert read_two.concept_keys == whole.select(["zh", "de"]).concept_keys == whole.concept_keys
    sub = whole.subset([5, 3, 9])
    assert sub.concept_keys == tuple(whole.concept_keys[i] for i in (5, 3, 9))
    # the order draws follow: the same concepts first whatever the row order
    shuffled = _shuffled(whole, 0)
    assert sorted(whole.concept_keys) == [shuffled.concept_keys[i] for i in np.argsort(shuffled.concept_keys, kind="stable")]


def test_canonical_rows_follow_keys_then_labels_then_the_rows_as_given():
    eye = sp.identity(4, format="csr")
    v = np.eye(4)
    # no words: by label, labels of digits by their number (the row numbers unlabelled arrays get stay in place)
    assert canonical_rows(AlignedWords(("en", "de"), (v, v), (eye, eye), ("10", "9", "b", "a"))).tolist() == [1, 0, 3, 2]
    assert canonical_rows(AlignedWords(("en", "de"), (v, v), (eye, eye), tuple(map(str, range(4))))).tolist() == [0, 1, 2, 3]
    # words: by the words of every language (by code: de first), not by the labels
    aw = AlignedWords(("en", "de"), (v, v), (eye, eye), ("a", "b", "c", "d"),
                      words=(("one", "two", "three", "four"), ("eins", "zwei", "drei", "vier")))
    assert canonical_rows(aw).tolist() == [2, 0, 3, 1]  # drei, eins, vier, zwei
    # the keys a subset of languages carries are those of all of them
    from semanscope_nb.metrics.artefacts import subset_languages, subset_rows

    assert canonical_rows(subset_languages(aw, ("en",))).tolist() == [2, 0, 3, 1]
    assert canonical_rows(subset_rows(aw, np.array([True, False, True, True]))).tolist() == [1, 0, 2]


def test_the_panels_sa_store_keys_the_draw_order(tmp_path):
    """Two files whose selected columns agree but whose other columns differ draw in other orders: the panel's SA store
    must not hand one file's result to the other."""
    from semanscope_nb.data.words import WordDataset
    from semanscope_nb.widgets.explore import SAStore

    rows3 = [(("water",), ("Wasser",), ("eau",)), (("fire",), ("Feuer",), ("feu",)), (("sun",), ("Sonne",), ("soleil",))]
    a = WordDataset("w", ("en", "de", "fr"), tuple(rows3)).select(["en", "de"])
    other = [(r[0], r[1], (f"x{k}",)) for k, r in enumerate(rows3)]
    b = WordDataset("w", ("en", "de", "fr"), tuple(other)).select(["en", "de"])
    assert a.rows == b.rows and a.concept_keys != b.concept_keys
    store = SAStore(tmp_path)
    ka, kb = (store.key(snb.embed(ds, "random-null", cache=False, progress=False), n_boot=200, seed=0) for ds in (a, b))
    assert ka != kb
    assert ka == store.key(snb.embed(a, "random-null", cache=False, progress=False), n_boot=200, seed=0)
