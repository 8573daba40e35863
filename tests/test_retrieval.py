"""Bitext retrieval and lexicon induction against plain-loop implementations written here."""

from __future__ import annotations

import doctest
import importlib
import json
import math

import numpy as np
import pytest
from reference import rule_topk
from sklearn.metrics import precision_recall_fscore_support

import semanscope_nb as snb
from semanscope_nb.errors import EmbeddingError
from semanscope_nb.metrics.retrieval import mteb_scores
from semanscope_nb.metrics.search import EmbeddingDistances

# --------------------------------------------------------------------------- plain-loop reference


def _dist(a, b, metric):
    if metric == "cosine":
        dot = sum(x * y for x, y in zip(a, b))
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(y * y for y in b))
        return 1.0 - dot / (na * nb)
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def loop_ranking(queries, corpus, metric):
    """For every query: corpus indices sorted by (distance, index)."""
    out = []
    for q in queries:
        d = [(_dist(q, c, metric), j) for j, c in enumerate(corpus)]
        d.sort()
        out.append([j for _, j in d])
    return out


def loop_scores(queries, corpus, ks, metric="cosine", golds=None):
    """accuracy@k, MRR and (single gold) MTEB precision/recall/F1 straight from their definitions."""
    ranking = loop_ranking(queries, corpus, metric)
    n = len(queries)
    diagonal = golds is None
    golds = golds if golds is not None else [[i] for i in range(n)]
    ranks, preds = [], []
    for i in range(n):
        best = min(ranking[i].index(g) + 1 for g in golds[i])
        ranks.append(best)
        preds.append(ranking[i][0])
    acc = {k: sum(1 for r in ranks if r <= k) / n for k in ks}
    mrr = sum(1.0 / r for r in ranks) / n
    out = {"ranks": ranks, "preds": preds, "accuracy": acc, "mrr": mrr}
    if diagonal:
        # per label L (= gold of query L): precision = TP / #predicted L, recall = TP / support, weighted by support 1
        p_sum = r_sum = f_sum = 0.0
        for label in range(n):
            tp = 1 if preds[label] == label else 0
            n_pred = sum(1 for p in preds if p == label)
            p = tp / n_pred if n_pred else 0.0
            r = float(tp)
            f = 2 * p * r / (p + r) if p + r else 0.0
            p_sum, r_sum, f_sum = p_sum + p, r_sum + r, f_sum + f
        out.update(precision=p_sum / n, recall=r_sum / n, f1=f_sum / n)
    return out


def _check_against_loop(res, ref, ks):
    assert res.ranks.tolist() == ref["ranks"]
    assert res.predictions.tolist() == ref["preds"]
    for k in ks:
        assert res.accuracy[k] == pytest.approx(ref["accuracy"][k], abs=1e-12)
    assert res.mrr == pytest.approx(ref["mrr"], abs=1e-12)
    if "f1" in ref:
        assert res.precision == pytest.approx(ref["precision"], abs=1e-12)
        assert res.recall == pytest.approx(ref["recall"], abs=1e-12)
        assert res.f1 == pytest.approx(ref["f1"], abs=1e-12)


# --------------------------------------------------------------------------- random embeddings


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("seed", [0, 1])
def test_metrics_match_plain_loops_on_random_embeddings(metric, seed):
    rng = np.random.default_rng(seed)
    src = rng.normal(size=(60, 12))
    tgt = src + 1.2 * rng.normal(size=(60, 12)) + 0.5  # noisy enough that many queries miss
    ks = (1, 3, 10)
    res = snb.bitext_retrieval(src, tgt, ks=ks, metric=metric, n_boot=0)
    _check_against_loop(res, loop_scores(src.tolist(), tgt.tolist(), ks, metric), ks)
    _check_against_loop(res.reverse, loop_scores(tgt.tolist(), src.tolist(), ks, metric), ks)
    assert 0 < res.accuracy[1] < 1  # the case is not trivial
    assert res.direction == "source->target" and res.reverse.direction == "target->source"


def test_precision_recall_f1_equal_sklearn_weighted_convention():
    rng = np.random.default_rng(5)
    src = rng.normal(size=(80, 6))
    tgt = src + 1.5 * rng.normal(size=(80, 6))
    res = snb.bitext_retrieval(src, tgt, ks=(1,), n_boot=0)
    p, r, f, _ = precision_recall_fscore_support(np.arange(80), res.predictions, average="weighted", zero_division=0)
    assert (res.precision, res.recall, res.f1) == pytest.approx((p, r, f), abs=1e-12)
    # and on bootstrap-style resamples (rows repeated), through the weighted-count path
    idx = rng.integers(0, 80, size=(4, 80))
    counts = np.stack([np.bincount(i, minlength=80) for i in idx])
    m = mteb_scores(res.predictions, counts)
    for b in range(4):
        p, r, f, _ = precision_recall_fscore_support(idx[b], res.predictions[idx[b]], average="weighted", zero_division=0)
        assert (m["precision"][b], m["recall"][b], m["f1"][b]) == pytest.approx((p, r, f), abs=1e-12)


def test_f1_falls_below_accuracy_when_predictions_collide():
    """Worked case: queries 0 and 1 both retrieve target 0; query 2 retrieves target 2.

    accuracy@1 = recall = 2/3.  Precision per label: 0 -> 1/2 (two picks, one right), 1 -> 0 (never
    picked), 2 -> 1; weighted by support 1 each: (1/2 + 0 + 1) / 3 = 1/2.  F1 per label:
    0 -> 2*(1/2)*1/(3/2) = 2/3, 1 -> 0, 2 -> 1; mean 5/9.
    """
    targets = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    sources = np.array([[1.0, 0.05], [1.0, 0.2], [-1.0, 0.05]])
    res = snb.bitext_retrieval(sources, targets, ks=(1, 2, 3), n_boot=0)
    assert res.predictions.tolist() == [0, 0, 2]
    assert res.accuracy[1] == pytest.approx(2 / 3)
    assert res.recall == pytest.approx(2 / 3)
    assert res.precision == pytest.approx(1 / 2)
    assert res.f1 == pytest.approx(5 / 9)
    assert res.f1 < res.accuracy[1]
    assert res.main_score == res.f1
    assert res.ranks.tolist() == [1, 2, 1]
    assert res.mrr == pytest.approx((1 + 1 / 2 + 1) / 3)


def test_ties_go_to_the_lower_index_consistently():
    # corpus rows 0 and 2 are identical; query 2's gold is row 2 but row 0 ties and has the lower index
    corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    queries = np.array([[1.0, 0.1], [0.1, 1.0], [1.0, 0.1]])
    res = snb.bitext_retrieval(queries, corpus, ks=(1, 2), n_boot=0)
    assert res.predictions.tolist() == [0, 1, 0]
    assert res.ranks.tolist() == [1, 1, 2]
    ref = loop_scores(queries.tolist(), corpus.tolist(), (1, 2))
    _check_against_loop(res, ref, (1, 2))


@pytest.mark.parametrize("block", [1, 7, 64, None])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_blocked_search_equals_dense_search(block, metric):
    rng = np.random.default_rng(11)
    q = rng.normal(size=(70, 9))
    c = rng.normal(size=(90, 9))
    c[10] = c[3]  # exact ties across the k-th boundary must follow the index rule too
    q[5] = c[3]
    top = snb.metrics.topk_search(q, c, k=6, metric=metric, block=block)
    # dense reference: the whole matrix at once in float64, ranked by a plain loop of the rule
    if metric == "cosine":
        qn = q / np.linalg.norm(q, axis=1, keepdims=True)
        cn = c / np.linalg.norm(c, axis=1, keepdims=True)
        D = 1 - qn @ cn.T
    else:
        D = np.sqrt(((q[:, None, :] - c[None, :, :]) ** 2).sum(-1))
    tol = EmbeddingDistances(q, c, metric=metric, dtype=None).tie_tolerance
    if metric == "cosine":  # float32 blocks of unit vectors: 2 (d + 2) u, the documented bound
        assert tol == pytest.approx(2 * (9 + 2) * 2.0**-24, rel=1e-6)
    order = np.array(rule_topk(D, 6, tol))
    np.testing.assert_array_equal(top.indices, order, err_msg="top-k is a decision: equal exactly")
    # distances: a float32 cosine block is within the tolerance of the exact value; Euclidean float64 near 0 is the
    # square root of a ~1e-15 rounding residue, bounded by the provider's tolerance too
    np.testing.assert_allclose(top.distances, np.take_along_axis(D, order, axis=1), rtol=0, atol=tol,
                               err_msg="distances within the tie tolerance of the exact float64 values")
    assert top.indices[5, 0] == 3 and top.indices[5, 1] == 10
    # the gold ranks do not depend on the block size either
    dense = snb.bitext_retrieval(q, c[:70], metric=metric, n_boot=0, block=10_000)
    blocked = snb.bitext_retrieval(q, c[:70], metric=metric, n_boot=0, block=block)
    assert np.array_equal(dense.ranks, blocked.ranks) and np.array_equal(dense.predictions, blocked.predictions)
    assert np.array_equal(dense.reverse.ranks, blocked.reverse.ranks)
    assert np.array_equal(dense.reverse.predictions, blocked.reverse.predictions)


def test_block_size_bounded_by_memory_budget():
    rng = np.random.default_rng(0)
    d = EmbeddingDistances(rng.normal(size=(500, 4)), rng.normal(size=(1000, 4)))
    assert d.rows_per_block(None, max_block_bytes=8 * 1000 * 16) == 16
    assert d.rows_per_block(None, max_block_bytes=1) == 1
    with pytest.raises(ValueError, match="block"):
        d.rows_per_block(0)


def test_both_directions_and_their_asymmetry():
    # a "hub" target close to every source makes source->target worse than target->source
    rng = np.random.default_rng(3)
    src = rng.normal(size=(40, 8))
    tgt = src + 0.8 * rng.normal(size=(40, 8))
    tgt[0] = src.mean(axis=0) * 0.0 + 0.05 * rng.normal(size=8) + src.sum(axis=0) / 6
    res = snb.bitext_retrieval(src, tgt, n_boot=0, ks=(1,))
    swapped = snb.bitext_retrieval(tgt, src, n_boot=0, ks=(1,))
    assert np.array_equal(res.reverse.ranks, swapped.ranks)
    assert res.reverse.f1 == swapped.f1
    assert res.accuracy[1] != res.reverse.accuracy[1]


def test_bootstrap_intervals_are_seeded_and_bracket_the_point():
    rng = np.random.default_rng(2)
    src = rng.normal(size=(120, 10))
    tgt = src + 1.1 * rng.normal(size=(120, 10))
    a = snb.bitext_retrieval(src, tgt, n_boot=300, seed=4)
    b = snb.bitext_retrieval(src, tgt, n_boot=300, seed=4)
    c = snb.bitext_retrieval(src, tgt, n_boot=300, seed=5)
    assert a.intervals == b.intervals
    assert a.intervals != c.intervals
    for name, value in [("accuracy@1", a.accuracy[1]), ("mrr", a.mrr), ("f1", a.f1), ("precision", a.precision)]:
        lo, hi = a.intervals[name]
        assert lo <= value <= hi and lo < hi
    # an independent percentile bootstrap of accuracy@1 written here agrees to Monte-Carlo error
    hits = (a.ranks == 1).astype(float)
    r2 = np.random.default_rng(0)
    boots = [hits[r2.integers(0, 120, 120)].mean() for _ in range(2000)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    assert a.intervals["accuracy@1"][0] == pytest.approx(lo, abs=0.03)
    assert a.intervals["accuracy@1"][1] == pytest.approx(hi, abs=0.03)


def test_result_round_trips_through_json(tmp_path):
    rng = np.random.default_rng(0)
    src = rng.normal(size=(30, 5))
    res = snb.bitext_retrieval(src, src + rng.normal(size=(30, 5)), n_boot=50, source_labels=[f"s{i}" for i in range(30)],
                               target_labels=[f"t{i}" for i in range(30)])
    path = res.save(tmp_path / "r.json")
    back = snb.BitextResult.from_dict(json.loads(open(path, encoding="utf-8").read()))
    assert back.accuracy == res.accuracy and back.f1 == res.f1 and back.intervals == res.intervals
    assert np.array_equal(back.ranks, res.ranks) and back.reverse.mrr == res.reverse.mrr
    assert back.query_labels == res.query_labels
    frame = res.to_frame()
    assert list(frame["direction"]) == ["source->target", "target->source"]
    assert res.errors(3)["rank"].tolist() == sorted(res.ranks.tolist(), reverse=True)[:3]


# --------------------------------------------------------------------------- lexicon induction


def test_lexicon_induction_counts_a_hit_on_any_alternative(dict_encoder):
    # "bank" has two gold translations; the nearest candidate is its second one
    table = {
        "bank": [1.0, 0.0, 0.0], "water": [0.0, 1.0, 0.0], "tree": [0.0, 0.0, 1.0],
        "银行": [0.2, 0.9, 0.1], "岸": [1.0, 0.1, 0.0], "水": [0.1, 1.0, 0.0], "木": [0.9, 0.0, 0.3],
    }
    pairs = [("bank", "银行"), ("bank", "岸"), ("water", "水"), ("tree", "木")]
    enc = dict_encoder(table)
    res = snb.lexicon_induction(pairs, enc, source="en", target="zh", ks=(1, 2), n_boot=0, cache=False)
    src_words = ["bank", "water", "tree"]
    tgt_words = ["银行", "岸", "水", "木"]
    golds = [[0, 1], [2], [3]]
    ref = loop_scores([table[w] for w in src_words], [table[w] for w in tgt_words], (1, 2), "cosine", golds)
    _check_against_loop(res, ref, (1, 2))
    assert res.precision is None and res.f1 is None  # several golds per query: MTEB's F1 is undefined
    assert res.main_score == res.accuracy[1]
    # the main score's name says what it is (it said "f1" where the number is P@1), and survives a round trip
    assert res.main_score_name == "accuracy@1" and res.value(res.main_score_name) == res.main_score
    back = type(res).from_dict(json.loads(json.dumps(res.to_dict())))
    assert (back.main_score_name, back.main_score) == ("accuracy@1", res.main_score)
    # reverse: each Chinese word's gold is its English source
    rev_golds = [[0], [0], [1], [2]]
    ref_r = loop_scores([table[w] for w in tgt_words], [table[w] for w in src_words], (1, 2), "cosine", rev_golds)
    _check_against_loop(res.reverse, ref_r, (1, 2))


def test_lexicon_induction_on_a_bundled_dataset_with_alternatives():
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"]).subset(range(40))
    res = snb.lexicon_induction(ds, "random-null", ks=(1, 5), n_boot=0, cache=False)
    words_en = ds.words("en")
    assert res.n_queries == len(words_en) and res.n_corpus == len(ds.words("zh"))
    assert res.provenance["dataset"] == ds.name and res.provenance["model"] == "random-null"


# --------------------------------------------------------------------------- bad input


def test_bad_input_gets_clear_errors():
    x = np.ones((5, 4)) + np.arange(20).reshape(5, 4)
    with pytest.raises(EmbeddingError, match="5 rows but target has 4"):
        snb.bitext_retrieval(x, x[:4])
    with pytest.raises(EmbeddingError, match="empty"):
        snb.bitext_retrieval(np.zeros((0, 4)), np.zeros((0, 4)))
    with pytest.raises(EmbeddingError, match="empty"):
        snb.text_retrieval([], [], "random-null", cache=False)
    with pytest.raises(EmbeddingError, match="3 texts but target_texts has 2"):
        snb.text_retrieval(["a", "b", "c"], ["x", "y"], "random-null", cache=False)
    with pytest.raises(ValueError, match=r"k=10 is larger than the corpus \(5 items\)"):
        snb.bitext_retrieval(x, x, ks=(1, 10))
    with pytest.raises(ValueError, match="larger than the corpus"):
        snb.topk_search(x, x, k=6)
    with pytest.raises(EmbeddingError, match="4 dimensions but target has 3"):
        snb.bitext_retrieval(x, x[:, :3])
    bad = x.copy()
    bad[2, 1] = np.nan
    with pytest.raises(EmbeddingError, match="NaN"):
        snb.bitext_retrieval(bad, x)
    zero = x.copy()
    zero[1] = 0
    with pytest.raises(EmbeddingError, match="all-zero"):
        snb.bitext_retrieval(zero, x)
    snb.bitext_retrieval(zero, x, ks=(1,), metric="euclidean", n_boot=0)  # fine for Euclidean
    with pytest.raises(ValueError, match="metric"):
        snb.bitext_retrieval(x, x, ks=(1,), metric="manhattan")
    with pytest.raises(ValueError, match="ks"):
        snb.bitext_retrieval(x, x, ks=())
    with pytest.raises(ValueError, match="n_boot"):
        snb.bitext_retrieval(x, x, ks=(1,), n_boot=-1)
    with pytest.raises(EmbeddingError, match="2-D"):
        snb.bitext_retrieval(np.ones(4), np.ones(4))
    with pytest.raises(TypeError, match="texts"):
        snb.text_retrieval(["a", 3], ["b", "c"], "random-null", cache=False)


# --------------------------------------------------------------------------- real embeddings


@pytest.fixture(scope="module")
def tatoeba_de():
    folder = snb.shared_data_dir() / "tatoeba"
    if not (folder / "tatoeba.deu-eng.deu").exists():
        pytest.skip(f"Tatoeba test files not found in {folder} (set SEMANSCOPE_SHARED_DATA)")
    return snb.read_tatoeba("deu", limit=60)


@pytest.mark.slow
def test_real_model_on_tatoeba_matches_plain_loops(tatoeba_de, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    res = snb.text_retrieval(tatoeba_de.source_texts, tatoeba_de.target_texts, "wordllama-l2-supercat",
                             source_language="de", target_language="en", ks=(1, 5, 10), n_boot=200, cache=cache)
    enc = snb.load_model("wordllama-l2-supercat")
    de = cache.embed(enc, list(tatoeba_de.source_texts)).astype(np.float64)
    en = cache.embed(enc, list(tatoeba_de.target_texts)).astype(np.float64)
    _check_against_loop(res, loop_scores(de.tolist(), en.tolist(), (1, 5, 10)), (1, 5, 10))
    _check_against_loop(res.reverse, loop_scores(en.tolist(), de.tolist(), (1, 5, 10)), (1, 5, 10))
    assert res.direction == "de->en" and res.provenance["model"] == "wordllama-l2-supercat"
    assert res.provenance["texts_sha256"] and res.provenance["n_texts"] == 60


@pytest.mark.slow
def test_tatoeba_retrieval_with_use(tatoeba_de, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    res = snb.tatoeba_retrieval("de", "use-multilingual", limit=60, n_boot=100, cache=cache)
    # USE is translation-supervised: it finds nearly every German translation among 60
    assert res.accuracy[1] >= 0.9 and res.reverse.accuracy[1] >= 0.9
    assert res.provenance["dataset"] == "tatoeba-deu-eng" and res.provenance["dataset_sha256"]


def test_readers_fail_clearly(tmp_path):
    (tmp_path / "tatoeba.deu-eng.deu").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("a\n", encoding="utf-8")
    with pytest.raises(snb.DatasetError, match="2 lines.*has 1"):
        snb.read_tatoeba("de", folder=tmp_path)
    (tmp_path / "tatoeba.deu-eng.eng").write_text("a\n\n", encoding="utf-8")
    with pytest.raises(snb.DatasetError, match="line 2: empty"):
        snb.read_tatoeba("deu", folder=tmp_path)
    with pytest.raises(snb.DatasetError, match="unknown Tatoeba language"):
        snb.read_tatoeba("xx", folder=tmp_path)
    (tmp_path / "eng_Latn").mkdir()
    (tmp_path / "eng_Latn" / "train.tsv").write_text("index_id\tcategory\ttext\n1\tsports\tA goal.\n2\t\tNo label.\n", encoding="utf-8")
    with pytest.raises(snb.DatasetError, match="line 3: empty 'category'"):
        snb.read_sib200("en", "train", folder=tmp_path)
    with pytest.raises(snb.DatasetError, match="file not found"):
        snb.read_sib200("de", "train", folder=tmp_path)


def test_sib200_parallel_reader():
    folder = snb.shared_data_dir() / "sib-200"
    if not (folder / "zho_Hans" / "test.tsv").exists():
        pytest.skip(f"SIB-200 not found in {folder} (set SEMANSCOPE_SHARED_DATA)")
    c = snb.sib200_parallel("zh", "en", split="test")
    en = snb.read_sib200("en", "test")
    assert len(c) == len(en) == 204 and c.target_texts == en.texts
    assert c.source_language == "zh" and c.target_language == "en"


@pytest.mark.parametrize("name", ["metrics.retrieval", "metrics.fusion", "metrics.classification", "metrics.alignment", "data.bitext"])
def test_docstring_examples_run(name):
    module = importlib.import_module(f"semanscope_nb.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- charts


def _values(spec):
    return [v for vals in spec.get("datasets", {}).values() for v in vals]


def test_retrieval_charts_encode_the_results():
    from semanscope_nb.plots import retrieval_charts as rc

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6))
    r = snb.bitext_retrieval(x, x + 1.2 * rng.normal(size=(40, 6)), n_boot=100)
    spec = rc.rank_histogram({"m": r}, max_rank=5).to_dict()
    assert spec["spec"]["mark"]["type"] == "bar" and spec["facet"]["column"]["field"] == "direction"
    vals = _values(spec)
    fwd = {v["rank"]: v["queries"] for v in vals if v["direction"] == "source->target"}
    assert fwd["1"] == int((r.ranks == 1).sum()) and fwd[">5"] == int((r.ranks > 5).sum())
    assert sum(fwd.values()) == 40
    spec = rc.accuracy_at_k_chart({"m": r}).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "rule"]
    assert spec["layer"][0]["encoding"]["strokeDash"]["field"] == "direction"
    acc = {(v["direction"], v["k"]): v["accuracy"] for v in _values(spec)}
    assert acc[("target->source", 5)] == pytest.approx(r.reverse.accuracy[5], abs=1e-4)
    cls = snb.knn_classification(x, ["a", "b"] * 20, x, ["a", "b"] * 20, ks=(1, 3), n_boot=0)
    spec = rc.classification_table({"m": cls}).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rect", "text"]
    methods = {v["method"] for v in _values(spec)}
    assert methods == {"kNN (k=1)", "kNN (k=3)", "majority", "logistic_regression"}
    assert {v["label"] for v in _values(spec) if v["method"] == "kNN (k=1)"} == {f"{cls.accuracy[1]:.2f}"}


def test_alignment_pair_shows_two_maps_with_sa_legends():
    from semanscope_nb.plots import retrieval_charts as rc
    from semanscope_nb.runs.alignment import dataset_map

    ds = snb.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(15))
    before = dataset_map(ds, "random-null", n_boot=50, cache=False)
    after = dataset_map(ds, snb.models.encoders.RandomEncoder(seed=1), n_boot=50, cache=False)
    spec = rc.alignment_pair(before, after, dataset=ds).to_dict()
    assert len(spec["hconcat"]) == 2
    legends = [v["legend"] for v in _values(spec) if "legend" in v]
    assert len(legends) == 2 and all(t.startswith("SA cosine") for t in legends)
    assert f"{before[1].cosine.sa:.3f}" in legends[0]
    titles = [m["title"] for m in spec["hconcat"]]
    assert titles[0].startswith("before alignment") and titles[1].startswith("after alignment")
