"""Issue 17: one near-tie rule everywhere, and the same answer on every machine.

* The rule (semanscope_nb/metrics/ties.py) against plain loops written here and in tests/reference.py.
* A planted-duplicate bitext test (200 rows, 40 duplicated targets) against a plain loop of the rule and against
  scikit-learn on MTEB's convention (and mteb's own evaluator when it is installed).
* Invariance: retrieval, kNN, CSLS, margin mining and SA under threadpoolctl limits 1 and 2, block heights 1 / 7 /
  dense, faiss vs NumPy, on inputs with planted exact ties and near ties (differences of a third of the tolerance):
  decisions equal exactly, floats within tolerances derived from the arithmetic.
* Encoders: every offline model's vectors for batches of 1 / 16 / all and 1 / 2 BLAS threads, within its documented
  ``vector_tolerance`` (0.0 = bit-identical), and the NumPy e5 token port identical in a loky worker.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import rule_rank, rule_topk
from sklearn.metrics import precision_recall_fscore_support
from threadpoolctl import threadpool_limits

import semanscope_nb as snb
from semanscope_nb.metrics import ties
from semanscope_nb.metrics.contextual import align_words, csls_scores_topk
from semanscope_nb.metrics.retrieval import diagonal_ranks, gold_ranks, margin_mining
from semanscope_nb.metrics.search import EmbeddingDistances, topk_rows, topk_search

U32 = 2.0**-24
U64 = 2.0**-53
CONFIGS = [(threads, block) for threads in (1, 2) for block in (1, 7, None)]


# --------------------------------------------------------------------------- the tolerance


def test_tolerance_is_twice_the_dot_product_bound_of_the_coarser_precision():
    for d in (9, 384, 512):
        assert ties.dot_tolerance(d, np.float32) == pytest.approx(2 * (d + 2) * U32 / (1 - d * U32), rel=1e-12)
        assert ties.dot_tolerance(d, np.float64) == pytest.approx(2 * (d + 2) * U64, rel=1e-12)
    rng = np.random.default_rng(0)
    x64, x32 = rng.normal(size=(5, 16)), rng.normal(size=(5, 16)).astype(np.float32)
    # float32 vectors carry float32 rounding: even float64 distances of them tie at float32's tolerance
    assert EmbeddingDistances(x32, x32, dtype=np.float64).tie_tolerance == ties.dot_tolerance(16, np.float32)
    assert EmbeddingDistances(x64, x64, dtype=np.float64).tie_tolerance == ties.dot_tolerance(16, np.float64)
    assert EmbeddingDistances(x64, x64, dtype=None).tie_tolerance == ties.dot_tolerance(16, np.float32)
    e = EmbeddingDistances(x64, x64, metric="euclidean")
    assert e.T.tie_tolerance == e.tie_tolerance > 0


def test_the_bound_holds_for_real_blockings():
    """The tolerance must exceed what BLAS blocking does to one dot product: GEMV (one row) against GEMM (all rows),
    float32, d = 384, plus faiss's own GEMM when it is installed."""
    rng = np.random.default_rng(1)
    d = 384
    q = rng.normal(size=(300, d))
    c = rng.normal(size=(500, d))
    p = EmbeddingDistances(q, c, dtype=np.float32)
    dense = p.block(slice(0, 300)).astype(np.float64)
    rows = np.vstack([p.block(slice(i, i + 1)) for i in range(300)]).astype(np.float64)
    exact = 1 - (p._q.astype(np.float64) @ p._c.astype(np.float64).T)
    tol = p.tie_tolerance
    assert np.abs(dense - rows).max() <= tol and np.abs(dense - exact).max() <= tol / 2
    try:
        import faiss
    except ImportError:
        return
    sims, idx = faiss.knn(p._q, p._c, 5, metric=faiss.METRIC_INNER_PRODUCT)
    assert np.abs((1 - sims) - np.take_along_axis(dense, idx, axis=1)).max() <= tol


# --------------------------------------------------------------------------- the rule, against plain loops


def _planted_rows(rng, n_rows, n, tol):
    """Distances with exact ties, near ties (a third of tol apart, in random index order) and chains of near ties."""
    D = rng.uniform(0.2, 1.0, size=(n_rows, n))
    for r in range(n_rows):
        j = rng.choice(n, size=8, replace=False)
        D[r, j[1]] = D[r, j[0]]  # exact tie
        D[r, j[2]] = D[r, j[0]] + tol / 3  # near tie
        D[r, j[3]] = D[r, j[0]] - tol / 3
        D[r, j[5]] = D[r, j[4]] + 0.9 * tol  # a chain: 4 ~ 5 ~ 6 but 4 and 6 are 1.8 tol apart
        D[r, j[6]] = D[r, j[5]] + 0.9 * tol
        D[r, j[7]] = D[r].min() + tol / 4  # a near tie with the row's best
    return D


@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("n", [40, 3000])  # both paths of topk_rows: full partition and the chunk-minimum prefilter
def test_topk_rows_equal_a_plain_loop_of_the_rule(k, n):
    rng = np.random.default_rng(k + n)
    tol = 1e-4
    D = _planted_rows(rng, 25, n, tol)
    idx, val = topk_rows(D, k, tol)
    want = rule_topk(D, k, tol)
    np.testing.assert_array_equal(idx, np.array(want), err_msg="top-k is a decision: equal exactly")
    np.testing.assert_array_equal(val, np.take_along_axis(D, idx, axis=1), err_msg="values are read, not computed")
    # the same on float32 blocks, whose tied pairs are tested in float32
    D32 = D.astype(np.float32)
    np.testing.assert_array_equal(topk_rows(D32, k, tol)[0], np.array(rule_topk(D32, k, tol)))


def test_first_best_ranks_and_column_best_equal_plain_loops():
    rng = np.random.default_rng(3)
    tol = 1e-4
    D = _planted_rows(rng, 30, 30, tol)
    preds = ties.first_best(D, tol)
    for i in range(30):
        rank, pred = rule_rank(D[i], [i], tol)
        assert preds[i] == pred
    for rows in (1, 7, 30):  # the column decision, fed in row blocks
        cb = ties.ColumnBest(30, tol)
        for a in range(0, 30, rows):
            cb.update(D[a:a + rows], a)
        np.testing.assert_array_equal(cb.result(), [rule_rank(D[:, j], [j], tol)[1] for j in range(30)])
    # tie groups: connected components of |a - b| <= tol
    v = np.array([0.5, 0.5 + 0.9 * tol, 0.5 + 1.8 * tol, 0.7, 0.7, 0.1])
    assert ties.tie_groups(v, tol).tolist() == [1, 1, 1, 2, 2, 0]


class _Matrix(snb.metrics.search.DistanceProvider):
    """A fixed distance matrix as a provider (a unit-test fake: the rule, not the arithmetic, is under test)."""

    def __init__(self, D: np.ndarray, tol: float) -> None:
        self.D = D
        self.n_queries, self.n_corpus = D.shape
        self.tie_tolerance = tol

    def block(self, rows: slice) -> np.ndarray:
        return self.D[rows].copy()

    @property
    def T(self) -> "_Matrix":
        return _Matrix(self.D.T.copy(), self.tie_tolerance)


@pytest.mark.parametrize("block", [1, 7, None])
def test_gold_and_diagonal_ranks_equal_a_plain_loop_of_the_rule(block):
    rng = np.random.default_rng(4)
    tol = 1e-4
    n = 40
    D = _planted_rows(rng, n, n, tol)
    for i in range(0, n, 3):  # golds tied with competitors, on both sides of their index
        D[i, (i + 5) % n] = D[i, i] + tol / 2
        D[(i + 7) % n, i] = D[i, i] - tol / 2
    p = _Matrix(D, tol)
    ranks, preds, rev_ranks, rev_preds = diagonal_ranks(p, block=block)
    want = [rule_rank(D[i], [i], tol) for i in range(n)]
    assert ranks.tolist() == [r for r, _ in want] and preds.tolist() == [q for _, q in want]
    want_rev = [rule_rank(D[:, j], [j], tol) for j in range(n)]
    assert rev_ranks.tolist() == [r for r, _ in want_rev] and rev_preds.tolist() == [q for _, q in want_rev]
    assert [r.tolist() for r in gold_ranks(p, block=block)] == [ranks.tolist(), preds.tolist()]
    assert ((ranks == 1) == (preds == np.arange(n))).all()  # rank 1 exactly when the prediction is the gold


# --------------------------------------------------------------------------- planted duplicates: the real bug


def _duplicated_targets(seed: int = 0, n: int = 200, n_dup: int = 40, dims: int = 64):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dims))
    y = x + 0.3 * rng.normal(size=(n, dims))
    y[n - n_dup:] = y[:n_dup]  # target 160 + i is an exact copy of target i
    return x, y


def _loop_scores(x, y, tol):
    """Ranks and predictions from float64 cosine distances by the plain-loop rule; MTEB weighted P/R/F1 by hand."""
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    yn = y / np.linalg.norm(y, axis=1, keepdims=True)
    D = 1 - xn @ yn.T
    out = [rule_rank(D[i], [i], tol) for i in range(len(x))]
    ranks, preds = [r for r, _ in out], [p for _, p in out]
    n = len(x)
    p_sum = f_sum = 0.0
    for label in range(n):
        tp = 1 if preds[label] == label else 0
        n_pred = sum(1 for q in preds if q == label)
        p = tp / n_pred if n_pred else 0.0
        f_sum += 2 * p * tp / (p + tp) if p + tp else 0.0
        p_sum += p
    return ranks, preds, {"precision": p_sum / n, "recall": sum(r == 1 for r in ranks) / n, "f1": f_sum / n}


@pytest.mark.parametrize("threads,block", CONFIGS)
def test_planted_duplicates_equal_a_loop_of_the_rule_and_sklearn_on_mteb_convention(threads, block):
    x, y = _duplicated_targets()
    with threadpool_limits(threads):
        r = snb.bitext_retrieval(x, y, ks=(1, 5), n_boot=0, block=block)
    tol = EmbeddingDistances(x, y, dtype=None).tie_tolerance
    ranks, preds, mteb = _loop_scores(x, y, tol)
    assert r.ranks.tolist() == ranks and r.predictions.tolist() == preds
    # target 160 + i ties exactly with target i, and the lower index wins (MTEB's convention): queries 0..39 find
    # their gold, and no query can ever predict a copy, so queries 160..199 (whose own target was overwritten) miss
    assert r.predictions[:40].tolist() == list(range(40)) and not (r.predictions >= 160).any()
    assert r.accuracy[1] == pytest.approx(0.80, abs=1e-15)
    p, rec, f, _ = precision_recall_fscore_support(np.arange(200), r.predictions, average="weighted", zero_division=0)
    np.testing.assert_allclose([r.precision, r.recall, r.f1], [p, rec, f], rtol=0, atol=1e-12,
                               err_msg="weighted means of 200 rationals: a few ulps")
    np.testing.assert_allclose([r.precision, r.recall, r.f1], [mteb["precision"], mteb["recall"], mteb["f1"]],
                               rtol=0, atol=1e-12, err_msg="the same rationals summed in another order")
    # the reverse direction: target 160 + i (a copy of target i) retrieves source i, so 40 wrong again
    rev = _loop_scores(y, x, tol)
    assert r.reverse.ranks.tolist() == rev[0] and r.reverse.predictions.tolist() == rev[1]
    assert r.reverse.accuracy[1] == pytest.approx(0.80, abs=1e-15)


def _mteb_top1_metrics(mteb, x, y):
    """mteb's own nearest-neighbour search and bitext metrics on fixed embeddings (2.x, else the 1.x evaluator)."""
    gold = list(zip(range(len(x)), range(len(y))))
    try:  # mteb 2.x: the evaluator's search (model.similarity + torch.topk) and the task's metrics
        from mteb._evaluators.text.bitext_mining_evaluator import BitextMiningEvaluator
        from mteb.abstasks.text.bitext_mining import AbsTaskBitextMining
        from mteb.similarity_functions import cos_sim

        class Model:
            similarity = staticmethod(cos_sim)

        ev = object.__new__(BitextMiningEvaluator)  # the search reads no evaluator state
        return dict(AbsTaskBitextMining._compute_metrics(None, ev._similarity_search(x, y, Model()), gold))
    except ImportError:
        pass
    try:  # mteb 1.x
        import datasets
        from mteb.evaluation.evaluators import BitextMiningEvaluator
    except ImportError:
        pytest.skip(f"mteb {mteb.__version__}: neither the 1.x nor the 2.x BitextMiningEvaluator layout")
    table = {f"s{i}": v for i, v in enumerate(x)} | {f"t{i}": v for i, v in enumerate(y)}

    class Fixed:
        def encode(self, sentences, **kw):
            return np.array([table[s] for s in sentences])

    data = datasets.Dataset.from_dict({"sentence1": [f"s{i}" for i in range(len(x))], "sentence2": [f"t{i}" for i in range(len(y))]})
    try:
        scores = BitextMiningEvaluator(data, task_name="planted")(Fixed())
    except TypeError as exc:
        pytest.skip(f"mteb {mteb.__version__}: BitextMiningEvaluator API differs ({exc})")
    return scores.get("sentence1-sentence2", scores)


def test_planted_duplicates_equal_mtebs_own_evaluator_when_installed():
    mteb = pytest.importorskip("mteb")  # optional: not a requirement of the package
    x, y = (a.astype(np.float32) for a in _duplicated_targets())  # as an encoder hands them over
    got = _mteb_top1_metrics(mteb, x, y)
    r = snb.bitext_retrieval(x, y, ks=(1,), n_boot=0)
    np.testing.assert_allclose([got["accuracy"], got["precision"], got["recall"], got["f1"]],
                               [r.accuracy[1], r.precision, r.recall, r.f1], rtol=0, atol=1e-12,
                               err_msg=f"mteb {mteb.__version__}: the same decisions give the same rationals")


# --------------------------------------------------------------------------- invariance under threads and blocks


def _near_tie_data(seed: int = 5, n: int = 60, dims: int = 24):
    """Aligned pairs with planted exact ties (copies) and near ties (a copy nudged by a third of the tolerance)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dims)).astype(np.float32)
    y = (x + 0.8 * rng.normal(size=(n, dims))).astype(np.float32)
    tol = ties.dot_tolerance(dims, np.float32)
    y[50:55] = y[10:15]  # exact copies
    for j, src in zip(range(55, 60), range(20, 25)):  # near copies: the cosine to anything moves by < tol / 3
        u = y[src] / np.linalg.norm(y[src])
        nudge = rng.normal(size=dims)
        nudge -= nudge @ u * u
        y[j] = (u + (tol / 3) * nudge / np.linalg.norm(nudge)).astype(np.float32)
    x[30] = y[10]  # a query sitting exactly on a duplicated target
    return x, y


def test_retrieval_knn_csls_margins_give_the_same_decisions_under_threads_and_blocks():
    x, y = _near_tie_data()
    labels = np.array(list("abcab") * 12, dtype=object)
    test = x[:20] + 0.01
    out = {}
    for threads, block in CONFIGS:
        with threadpool_limits(threads):
            r = snb.bitext_retrieval(x, y, ks=(1, 3), n_boot=0, block=block)
            c = snb.metrics.knn_classification(y, labels, test, labels[:20], ks=(1, 4), n_boot=0, block=block, logistic=False)
            cs = csls_scores_topk(x, y, k=5, knn=3, block=block)
            nn = csls_scores_topk(x, y, k=5, method="nn", block=block)
            m = margin_mining(x, y, np.c_[np.arange(50), np.arange(50)], k=3, block=block)
        out[(threads, block)] = (r.ranks.tolist(), r.predictions.tolist(), r.reverse.ranks.tolist(),
                                 r.reverse.predictions.tolist(), [list(v) for v in c.predictions.values()],
                                 cs[0].tolist(), nn[0].tolist(), m.pairs.tolist(), m.n_selected)
        np.testing.assert_allclose(cs[1], out.setdefault("csls_scores", cs[1]), rtol=0,
                                   atol=ties.csls_tolerance(24), err_msg="CSLS scores within their tie tolerance")
    first = out[CONFIGS[0]]
    for key in CONFIGS[1:]:
        assert out[key] == first, f"decisions differ at threads, block = {key}"
    # the planted ties were decided by index: copies 50..54 of targets 10..14 lose to them
    preds = first[1]
    assert preds[30] == 10 and all(preds[i] != 50 + (i - 10) for i in range(10, 15))


def test_faiss_and_numpy_take_identical_decisions_under_threads():
    pytest.importorskip("faiss")
    x, y = _near_tie_data(seed=6, n=60)
    y = np.vstack([y] * 3)  # every target three times: ties across the k-th boundary everywhere
    got = []
    for threads in (1, 2):
        with threadpool_limits(threads):
            for backend in ("faiss", "numpy"):
                got.append(topk_search(x, y, k=4, backend=backend, block=7).indices)
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0], err_msg="top-k lists are decisions")
    # and they are the rule's: a plain loop on exact float64 distances (tied copies come together, in index order)
    xn = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    yn = y.astype(np.float64) / np.linalg.norm(y.astype(np.float64), axis=1, keepdims=True)
    tol = EmbeddingDistances(x, y, dtype=None).tie_tolerance
    np.testing.assert_array_equal(got[0], np.array(rule_topk(1 - xn @ yn.T, 4, tol)), err_msg="the rule, by a plain loop")
    assert got[0][10, :3].tolist() == [10, 50, 70]  # target 10, its planted copy 50, then the stacked copy 70


def test_align_words_breaks_near_ties_by_index():
    rng = np.random.default_rng(8)
    S = rng.normal(size=(4, 16)).astype(np.float32)
    T = np.vstack([S[2], S[2] * np.float32(1 + 2e-7), S[0], S[1]])  # targets 0 and 1: one direction (up to rounding)
    assert (2, 0) in align_words(S, T) and all(j != 1 for _, j in align_words(S, T))


@pytest.mark.parametrize("threads", [1, 2])
def test_sa_floats_within_the_float64_reordering_bound_and_equal_tiers(threads):
    rng = np.random.default_rng(9)
    en = rng.normal(size=(150, 32))
    E = {"en": en, "de": en + 0.7 * rng.normal(size=en.shape), "zh": en + 1.4 * rng.normal(size=en.shape)}
    E["de"][40:45] = E["de"][0]  # planted exact duplicates
    with threadpool_limits(1):
        ref = snb.semantic_affinity(E, n_boot=200, seed=2)
    with threadpool_limits(threads):
        got = snb.semantic_affinity(E, n_boot=200, seed=2)
    # the same float64 vectors: only the summation order of BLAS products (<= 150 * 32 terms) can differ, so every
    # number moves by at most n u = 4800 * 2**-53 ~ 5e-13 relative; 1e-11 leaves room for the ratio and percentiles
    for part in ("cosine", "euclidean"):
        a, b = getattr(ref, part), getattr(got, part)
        np.testing.assert_allclose([b.sa, b.intra, b.inter, b.sem, *b.ci], [a.sa, a.intra, a.inter, a.sem, *a.ci],
                                   rtol=1e-11, err_msg=f"{part}: float64 reordering only")
    assert got.tier == ref.tier  # a decision, away from a threshold here


# --------------------------------------------------------------------------- encoders: batches and threads


TEXTS = ["water", "fire", "tree", "mother", "Wasser", "Feuer", "水", "火", "母亲", "père", "madre", "両親",
         "The bank of the river is muddy.", "Ich habe Geld bei der Bank eingezahlt.", "我们在河边散步。",
         "grandfather on the father's side", "a cup of tea", "sunrise", "moon", "rice", "Reis", "米饭", "river", "bank"]


def _batches(enc, texts, size):
    return np.vstack([enc.encode(texts[i:i + size]) for i in range(0, len(texts), size)])


@pytest.mark.parametrize("model", ["use-multilingual", "multilingual-e5-small", "wordllama-l2-supercat", "tfidf-char",
                                   "random-null", "all-minilm-l6-v2"])
@pytest.mark.slow  # loads real model weights
def test_vectors_do_not_move_with_batch_or_threads_beyond_the_documented_tolerance(model):
    if model == "all-minilm-l6-v2":
        pytest.importorskip("sentence_transformers")
    enc = snb.load_model(model)
    if getattr(enc, "requires_fit", False):
        enc = enc.fit(TEXTS)
    tol = enc.vector_tolerance
    assert tol is not None
    with threadpool_limits(2):
        ref = enc.encode(TEXTS)
    runs = {"one batch, 1 thread": None, "batches of 1": 1, "batches of 16": 16}
    for name, size in runs.items():
        with threadpool_limits(1 if size is None else 2):
            got = enc.encode(TEXTS) if size is None else _batches(enc, TEXTS, size)
        np.testing.assert_allclose(got, ref, rtol=0, atol=tol,
                                   err_msg=f"{model}, {name}: beyond its vector_tolerance {tol} (0 = bit-identical)")


@pytest.mark.slow  # loads real model weights
def test_the_numpy_token_port_runs_each_text_alone_and_pins_its_threads():
    enc = snb.load_token_encoder("multilingual-e5-small")
    texts = TEXTS[12:16]
    with threadpool_limits(2):
        together = enc.encode_tokens(texts, "en", cache=False)
    with threadpool_limits(1):
        alone = [enc.encode_tokens([t], "en", cache=False)[0] for t in texts[::-1]][::-1]
    for a, b in zip(together, alone):
        # the same operations on the same numbers (its own shape, one BLAS thread): the derived tolerance is zero
        np.testing.assert_array_equal(a.vectors, b.vectors, err_msg=f"{a.text!r}: alone vs with others")
    np.testing.assert_array_equal(enc.encode(texts), np.vstack([enc.encode([t]) for t in texts]),
                                  err_msg="sentence vectors of the port: alone vs together")


def _port_vectors(texts):
    enc = snb.load_token_encoder("multilingual-e5-small")
    return [t.vectors for t in enc.encode_tokens(texts, "en", cache=False)]


@pytest.mark.slow  # loads real model weights
def test_the_token_port_gives_the_same_bits_in_a_loky_worker():
    import joblib

    texts = TEXTS[12:14]
    here = _port_vectors(texts)
    with joblib.parallel_config(backend="loky", n_jobs=2):  # a worker starts with one BLAS thread, this process two
        (there,) = joblib.Parallel()([joblib.delayed(_port_vectors)(texts)])
    for a, b in zip(here, there):
        np.testing.assert_array_equal(a, b, err_msg="pinned threads and per-text shapes: bit-identical across processes")


@pytest.mark.slow  # loads real model weights
def test_use_batch_jitter_moves_cosines_far_less_than_the_tie_tolerance():
    """Why a text's batch does not change a decision in practice: measured, the cosines of USE vectors move by far
    less than the float32 tie tolerance at d = 512 (the worst-case bound 2 sqrt(d) * vector_tolerance = 9e-5 assumes
    every coordinate moves the most, in the worst direction)."""
    enc = snb.load_model("use-multilingual")
    a, b = enc.encode(TEXTS), _batches(enc, TEXTS, 1)
    assert np.abs(a @ a.T - b @ b.T).max() < ties.dot_tolerance(512, np.float32) / 10


@pytest.mark.slow  # loads real model weights
def test_use_batch_sizes_change_no_decision_and_sa_within_the_derived_bound():
    """Batch sizes 1 / 16 / all for the one offline model whose vectors move with their batch: the same retrieval and
    kNN decisions, SA within eps / (intra + inter) with eps = 2 sqrt(512) * vector_tolerance (see test_api_models)."""
    ds = snb.load_dataset("cultural-nuance", languages=["en", "de"]).subset(range(40))
    en, de = [r[0][0] for r in ds.rows], [r[1][0] for r in ds.rows]
    enc = snb.load_model("use-multilingual")
    eps = 2 * math.sqrt(512) * enc.vector_tolerance
    runs = {}
    for size in (1, 16, None):
        E = {lang: (enc.encode(words) if size is None else _batches(enc, words, size)) for lang, words in (("en", en), ("de", de))}
        r = snb.bitext_retrieval(E["en"], E["de"], ks=(1, 5), n_boot=0)
        knn = snb.metrics.knn_classification(E["en"], [str(i % 4) for i in range(40)], E["de"], [str(i % 4) for i in range(40)],
                                             ks=(1, 3), n_boot=0, logistic=False)
        runs[size] = (r, knn, snb.semantic_affinity(E, n_boot=0))
    ref_r, ref_knn, ref_sa = runs[None]
    for size in (1, 16):
        r, knn, sa = runs[size]
        assert r.ranks.tolist() == ref_r.ranks.tolist() and r.predictions.tolist() == ref_r.predictions.tolist()
        assert r.reverse.predictions.tolist() == ref_r.reverse.predictions.tolist()
        assert all(list(knn.predictions[k]) == list(ref_knn.predictions[k]) for k in ref_knn.predictions)
        for part in ("cosine", "euclidean"):
            a, b = getattr(sa, part), getattr(ref_sa, part)
            np.testing.assert_allclose(a.sa, b.sa, rtol=0, atol=eps / (b.intra + b.inter),
                                       err_msg=f"{part} SA, batches of {size} vs one batch: beyond the USE port's bound")
