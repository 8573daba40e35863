"""Issue 14: MINERS (paper 003) and MTEB conventions.

Every metric is compared with a deliberately plain implementation written here
from the formulas (loops over queries / labels / candidates).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from reference import rule_topk

import semanscope_nb as snb
from semanscope_nb.metrics.classification import knn_classification
from semanscope_nb.metrics.retrieval import (
    MiningResult,
    best_f1_threshold,
    bitext_retrieval,
    bucc_mining,
    bucc_pool,
    margin_mining,
    ratio_margin,
)
from semanscope_nb.metrics.search import EmbeddingDistances, topk_search

# --------------------------------------------------------------------------- plain references


def _cos_matrix(a, b):
    out = [[0.0] * len(b) for _ in a]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            nx = math.sqrt(sum(v * v for v in x))
            ny = math.sqrt(sum(v * v for v in y))
            out[i][j] = sum(u * v for u, v in zip(x, y)) / (nx * ny)
    return out


def _plain_ranks(S):
    """Forward rank of gold i (similarity matrix S, higher = closer), ties by lower index; top-1 predictions."""
    n = len(S)
    ranks, preds = [], []
    for i in range(n):
        g = S[i][i]
        r = 1
        for j in range(n):
            if S[i][j] > g or (S[i][j] == g and j < i):
                r += 1
        ranks.append(r)
        best = 0
        for j in range(n):
            if S[i][j] > S[i][best]:
                best = j
        preds.append(best)
    return ranks, preds


def _plain_label_scores(gold, pred, lab):
    """Precision, recall, F1 and support of one label, straight from the counts."""
    tp = sum(1 for g, p in zip(gold, pred) if g == lab and p == lab)
    n_pred = sum(1 for p in pred if p == lab)
    n_gold = sum(1 for g in gold if g == lab)
    prec = tp / n_pred if n_pred else 0.0
    rec = tp / n_gold if n_gold else 0.0
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0), n_gold


def _plain_weighted_f1(gold, pred):
    """sklearn-free weighted F1 (labels = gold values, weighted by support), as MTEB's bitext mining."""
    return sum(n * f1 for _, _, f1, n in (_plain_label_scores(gold, pred, lab) for lab in sorted(set(gold)))) / len(gold)


def _plain_macro(gold, pred, labels):
    scores = [_plain_label_scores(gold, pred, lab) for lab in labels]
    return tuple(sum(s[i] for s in scores) / len(labels) for i in range(3))


# --------------------------------------------------------------------------- F1@k


def test_f1_at_k_matches_plain_loops_both_directions():
    rng = np.random.default_rng(0)
    src = rng.normal(size=(60, 8))
    tgt = src + 1.2 * rng.normal(size=(60, 8))
    tgt[5] = tgt[9]  # a hub / exact tie
    r = bitext_retrieval(src, tgt, ks=(1, 3, 10), n_boot=0, dtype=np.float64)
    S = _cos_matrix(src.tolist(), tgt.tolist())
    for res, M in ((r, S), (r.reverse, [list(col) for col in zip(*S)])):
        ranks, preds = _plain_ranks(M)
        assert res.ranks.tolist() == ranks and res.predictions.tolist() == preds
        gold = list(range(len(M)))
        for k in (1, 3, 10):
            pred_k = [g if rk <= k else p for g, rk, p in zip(gold, ranks, preds)]
            assert res.f1_at[k] == pytest.approx(_plain_weighted_f1(gold, pred_k), abs=1e-12)
    assert r.f1_at[1] == pytest.approx(r.f1, abs=1e-12)
    assert r.f1_at[1] <= r.f1_at[3] <= r.f1_at[10]
    back = snb.BitextResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.f1_at == r.f1_at and back.reverse.f1_at == r.reverse.f1_at


def test_both_directions_from_one_pass_equal_two_passes():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(130, 12))
    y = x + rng.normal(size=(130, 12))
    y[7] = y[3]
    one = bitext_retrieval(x, y, n_boot=0, block=17)
    two = bitext_retrieval(y, x, n_boot=0, block=1000)
    assert np.array_equal(one.reverse.ranks, two.ranks)
    assert np.array_equal(one.reverse.predictions, two.predictions)


# --------------------------------------------------------------------------- macro P/R/F1 + random baseline


def test_macro_scores_and_random_baseline_match_plain_loops():
    rng = np.random.default_rng(2)
    labs = np.array(["a", "b", "c", "d"])
    centres = rng.normal(size=(4, 6)) * 1.5
    y_tr = rng.choice(labs[:3], size=80)  # "d" only in test: it must count in the macro mean
    y_te = rng.choice(labs, size=40)
    X_tr = centres[np.searchsorted(labs, y_tr)] + rng.normal(size=(80, 6))
    X_te = centres[np.searchsorted(labs, y_te)] + rng.normal(size=(40, 6))
    r = knn_classification(X_tr, y_tr, X_te, y_te, ks=(1, 5), n_boot=0, seed=7)
    for k in (1, 5):
        p, rec, f = _plain_macro(list(y_te), list(r.predictions[f"knn@{k}"]), ["a", "b", "c", "d"])
        assert (r.macro_precision[k], r.macro_recall[k], r.macro_f1[k]) == pytest.approx((p, rec, f), abs=1e-12)
    rb = r.random_baseline
    assert rb["expected_accuracy"] == pytest.approx(1 / 3)
    again = knn_classification(X_tr, y_tr, X_te, y_te, ks=(1,), n_boot=0, seed=7, logistic=False)
    assert again.random_baseline == rb  # seeded
    other = knn_classification(X_tr, y_tr, X_te, y_te, ks=(1,), n_boot=0, seed=8, logistic=False)
    assert other.random_baseline != rb
    frame = r.macro_frame()
    assert frame["method"].iloc[-1].startswith("random") and frame["macro_f1"].notna().all()
    back = snb.ClassificationResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.macro_precision == r.macro_precision and back.random_baseline == r.random_baseline


# --------------------------------------------------------------------------- margin and BUCC


def _plain_margin(src, tgt, k):
    S = _cos_matrix(src, tgt)
    a = [sum(sorted(row, reverse=True)[:k]) / k for row in S]
    b = [sum(sorted((S[i][j] for i in range(len(src))), reverse=True)[:k]) / k for j in range(len(tgt))]
    return [[S[i][j] / (a[i] / 2 + b[j] / 2) for j in range(len(tgt))] for i in range(len(src))]


def test_ratio_margin_matches_plain_formula():
    rng = np.random.default_rng(5)
    src = rng.normal(size=(25, 7))
    tgt = rng.normal(size=(31, 7))
    M = ratio_margin(src, tgt, k=3)
    ref = np.array(_plain_margin(src.tolist(), tgt.tolist(), 3))
    np.testing.assert_allclose(M, ref, atol=2e-6)  # float32 cosines


def _plain_bucc(src, tgt, gold, k, mode):
    M = _plain_margin(src, tgt, k)
    ns, nt = len(src), len(tgt)
    fwd = {(i, max(range(nt), key=lambda j: (M[i][j], -j))): None for i in range(ns)}
    bwd = {(max(range(ns), key=lambda i: (M[i][j], -i)), j): None for j in range(nt)}
    cand = {"forward": set(fwd), "backward": set(bwd), "intersect": set(fwd) & set(bwd), "union": set(fwd) | set(bwd)}[mode]
    gold = set(gold)
    best = (0.0, None, 0.0, 0.0)
    for t in sorted({M[i][j] for i, j in cand}, reverse=True):
        sel = [p for p in cand if M[p[0]][p[1]] >= t]
        tp = sum(1 for p in sel if p in gold)
        prec, rec = tp / len(sel), tp / len(gold)
        f1 = 2 * prec * rec / (prec + rec) if tp else 0.0
        if f1 > best[0]:
            best = (f1, t, prec, rec)
    return cand, best


@pytest.mark.parametrize("mode", ["intersect", "forward", "backward", "union"])
def test_margin_mining_and_bucc_f1_match_plain_loops(mode):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(40, 10))
    y = np.vstack([x[:15] + 0.9 * rng.normal(size=(15, 10)), rng.normal(size=(25, 10))])
    gold = [(i, i) for i in range(15)]
    r = margin_mining(x, y, gold, k=4, mode=mode, block=7)
    cand, (f1, t, prec, rec) = _plain_bucc(x.tolist(), y.tolist(), gold, 4, mode)
    assert {tuple(p) for p in r.pairs.tolist()} == cand
    assert (r.f1, r.precision, r.recall) == pytest.approx((f1, prec, rec), abs=1e-12)
    assert r.threshold == pytest.approx(t, abs=2e-6)
    back = MiningResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.f1 == r.f1 and np.array_equal(back.pairs, r.pairs)


def test_best_f1_threshold_keeps_ties_together():
    out = best_f1_threshold(np.array([0.9, 0.5, 0.5, 0.1]), np.array([True, True, False, True]), 3)
    # thresholds 0.9 -> F1 .5; 0.5 -> P 2/3 R 2/3 F1 .667; 0.1 -> P .75 R 1 F1 .857
    assert out["threshold"] == 0.1 and out["f1"] == pytest.approx(6 / 7)
    with pytest.raises(ValueError, match="n_gold"):
        best_f1_threshold(np.array([1.0]), np.array([True]), 0)


def test_bucc_pool_is_seeded_and_hides_gold_among_untranslated_distractors():
    p = bucc_pool(300, n_gold=40, n_distractors=100, seed=3)
    q = bucc_pool(300, n_gold=40, n_distractors=100, seed=3)
    assert np.array_equal(p.source_rows, q.source_rows) and np.array_equal(p.gold, q.gold)
    assert not np.array_equal(p.source_rows, bucc_pool(300, n_gold=40, n_distractors=100, seed=4).source_rows)
    shared = set(p.source_rows.tolist()) & set(p.target_rows.tolist())
    assert len(shared) == 40  # only the gold rows appear on both sides
    for s, t in p.gold.tolist():
        assert p.source_rows[s] == p.target_rows[t]
    with pytest.raises(ValueError, match="exceeds"):
        bucc_pool(100, n_gold=50, n_distractors=30, seed=0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 32))
    r = bucc_mining(x, x + 0.4 * rng.normal(size=(300, 32)), n_gold=40, n_distractors=100, seed=3)
    assert r.n_source == 140 and len(r.gold) == 40 and r.f1 > 0.9


# --------------------------------------------------------------------------- search: faiss vs blocked NumPy


def test_faiss_and_blocked_search_give_identical_topk():
    pytest.importorskip("faiss")
    rng = np.random.default_rng(9)
    q = rng.standard_normal((700, 24)).astype(np.float32)
    c = rng.standard_normal((1500, 24)).astype(np.float32)
    c[100] = c[40]  # exact ties across and inside the top k
    c[101] = c[40]
    q[3] = c[40]
    c[200] = c[60] * (1 + 1e-7)  # a near tie: the same direction up to float32 rounding of the norm
    q[4] = c[60]
    a = topk_search(q, c, k=10, backend="faiss")
    b = topk_search(q, c, k=10, backend="numpy", block=97)
    np.testing.assert_array_equal(a.indices, b.indices, err_msg="top-k lists are decisions: faiss and NumPy equal")
    tol = EmbeddingDistances(q, c, dtype=np.float32).tie_tolerance
    np.testing.assert_allclose(a.distances, b.distances, rtol=0, atol=tol,
                               err_msg="two GEMMs of one float32 dot product differ by at most the tie tolerance")
    assert a.indices[3, :3].tolist() == [40, 100, 101] and a.indices[4, :2].tolist() == [60, 200]
    qn = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float64)
    cn = (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float64)
    np.testing.assert_array_equal(a.indices, np.array(rule_topk(1 - qn[:60] @ cn.T, 10, tol) + a.indices[60:].tolist()),
                                  err_msg="the first 60 rows against a plain loop of the rule on exact float64 distances")


def test_blocked_chunk_prefilter_equals_full_sort():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((50, 6))
    c = rng.standard_normal((3000, 6))
    c[2000:2010] = c[5]  # ten exact ties
    q[0] = c[5]
    top = topk_search(q, c, k=7, backend="numpy", dtype=np.float64)
    D = 1 - (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (c / np.linalg.norm(c, axis=1, keepdims=True)).T
    tol = EmbeddingDistances(q, c, dtype=np.float64).tie_tolerance
    np.testing.assert_array_equal(top.indices, np.array(rule_topk(D, 7, tol)), err_msg="a decision: equal exactly")
    assert top.indices[0].tolist() == [5, 2000, 2001, 2002, 2003, 2004, 2005]


def test_topk_backend_errors_are_clear():
    x = np.eye(3)
    with pytest.raises(ValueError, match="backend"):
        topk_search(x, x, k=1, backend="gpu")
    with pytest.raises(ValueError, match="faiss"):
        topk_search(x, x, k=1, metric="euclidean", backend="faiss")


def test_distfuse_miners_preset_is_raw_euclidean():
    ens = snb.DistFuse(["use-multilingual", "multilingual-e5-small"], weights=[1, 3], preset="miners")
    assert ens.metric == "euclidean" and ens.standardise is False
    with pytest.raises(ValueError, match="preset"):
        snb.DistFuse(["use-multilingual"], preset="miners", metric="cosine")
    with pytest.raises(ValueError, match="preset"):
        snb.DistFuse(["use-multilingual"], preset="nope")


# --------------------------------------------------------------------------- code-switching


def _toy_dictionary():
    from semanscope_nb.data.dictionaries import BilingualDictionary

    words = ["the", "red", "house", "cat", "dog", "sees", "big", "small", "tree", "water"]
    return BilingualDictionary("toy-en-de", "en", "de", tuple((w, w.upper() + "_DE") for w in words))


def test_code_switch_is_seeded_and_switches_the_stated_share():
    from semanscope_nb.metrics.codeswitch import CodeSwitched, code_switch

    rng = np.random.default_rng(0)
    vocab = ["the", "red", "house", "cat", "dog", "sees", "big", "small", "tree", "water", "unknownword", "xyz"]
    texts = [" ".join(rng.choice(vocab, size=12)) + "." for _ in range(400)]
    d = _toy_dictionary()
    for rate in (0.0, 0.2, 0.5, 1.0):
        cs = code_switch(texts, d, rate=rate, seed=11)
        # plain recount of what was switched, token by token
        switched = switchable = 0
        for orig, new in zip(texts, cs.texts):
            for a, b in zip(orig.rstrip(".").split(), new.rstrip(".").split()):
                if a in {w for w, _ in d.pairs}:
                    switchable += 1
                    switched += b == a.upper() + "_DE"
                else:
                    assert a == b  # words outside the dictionary never change
        assert (switched, switchable) == (cs.n_switched, cs.n_switchable)
        sd = math.sqrt(rate * (1 - rate) / switchable)
        assert abs(cs.switch_share - rate) <= 4 * sd + 1e-12  # binomial sampling tolerance
        assert cs.word_share == pytest.approx(switched / cs.n_words)
    a = code_switch(texts, d, rate=0.3, seed=5)
    assert a.texts == code_switch(texts, d, rate=0.3, seed=5).texts
    assert a.texts != code_switch(texts, d, rate=0.3, seed=6).texts
    assert CodeSwitched.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    with pytest.raises(ValueError, match="rate"):
        code_switch(texts, d, rate=1.5, seed=0)


def test_code_switch_with_real_muse_dictionary():
    from semanscope_nb.metrics.codeswitch import code_switch

    try:
        d = snb.read_muse_dictionary("en-de")
    except Exception as e:  # the shared data folder is not on this machine
        pytest.skip(f"MUSE en-de not available: {e}")
    cs = code_switch(["The house is red and the tree is big."], d, rate=1.0, seed=0)
    assert cs.n_switched == cs.n_switchable >= 6
    assert "haus" in cs.texts[0].lower()


# --------------------------------------------------------------------------- LinCE / PHINC readers


def test_read_lince_tokens_tags_and_errors(tmp_path):
    from semanscope_nb.data.bitext import read_lince
    from semanscope_nb.errors import DatasetError

    p = tmp_path / "train.conll"
    p.write_text("# sent_enum = 0\nyo\tlang2\nlove\tlang1\nmy\tlang1\nperro\tlang2\n!\tother\n\n"
                 "# sent_enum = 1\nok\tlang1\nbye\tlang1\n\n\n", encoding="utf-8")
    c = read_lince(p)
    assert c.texts == ("yo love my perro !", "ok bye")
    assert c.tags[0] == ("lang2", "lang1", "lang1", "lang2", "other")
    assert c.switch_points() == (2, 0) and c.tag_counts() == {"lang1": 4, "lang2": 2, "other": 1}
    bad = tmp_path / "bad.conll"
    bad.write_text("yo\tlang2\nlove lang1\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.conll, line 2"):
        read_lince(bad)


def test_read_phinc_pairs_and_errors(tmp_path):
    from semanscope_nb.data.bitext import read_phinc
    from semanscope_nb.errors import DatasetError

    p = tmp_path / "phinc.csv"
    p.write_text('Sentence,English_Translation\nmain ghar ja raha hoon,I am going home\n'
                 '"yaar, kya scene hai","buddy, what is up"\n', encoding="utf-8")
    c = read_phinc(p, source_column="Sentence", target_column="English_Translation")
    assert c.source_texts == ("main ghar ja raha hoon", "yaar, kya scene hai")
    assert c.target_texts == ("I am going home", "buddy, what is up") and len(c) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("Sentence,English_Translation\nok,fine\nonly one cell\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.csv, line 3"):
        read_phinc(bad)
    with pytest.raises(DatasetError, match="no column named"):
        read_phinc(p, source_column="Hinglish")


# --------------------------------------------------------------------------- MTEB JSON


def test_mteb_json_round_trip(tmp_path):
    from semanscope_nb.runs.mteb import MtebResult, bitext_entry, language_breakdown, read_mteb, write_mteb

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8))
    r = bitext_retrieval(x, x + 0.5 * rng.normal(size=(50, 8)), ks=(1, 5), n_boot=0)
    entry = bitext_entry(r, subset="deu-eng", languages=["deu-Latn", "eng-Latn"])
    assert entry["main_score"] == r.f1 and entry["f1_at_5"] == r.f1_at[5]
    res = MtebResult("Tatoeba", "9080400076fbadbb4c4dcb136ff4eddc40b42553",
                     {"test": [entry, {**entry, "hf_subset": "fra-eng", "main_score": 0.5}]}, evaluation_time=2.25,
                     model={"name": "semanscope/use-multilingual", "revision": "3", "languages": ["deu-Latn"]})
    folder = write_mteb([res], tmp_path)
    task_file = tmp_path / "semanscope__use-multilingual" / "3" / "Tatoeba.json"
    on_disk = json.loads(task_file.read_text(encoding="utf-8"))
    assert set(on_disk) >= {"task_name", "dataset_revision", "scores", "evaluation_time", "mteb_version"}
    assert on_disk["scores"]["test"][1]["hf_subset"] == "fra-eng"
    back = read_mteb(folder)
    assert back[0].scores == res.scores and back[0].score("test", "fra-eng") == 0.5 and back[0].main_score == r.f1
    # the partial model entry is completed with nulls (every field mteb's ModelMeta has); what was given is kept
    assert back[0].model["languages"] == ["deu-Latn"] and back[0].model["n_parameters"] is None
    task_file.write_text('{"task_name": "X", "scores": {"test": [{"f1": 1}]}}', encoding="utf-8")
    with pytest.raises(Exception, match="main_score"):
        read_mteb(folder)
    t = language_breakdown(pd_frame(), sample_texts={"de": ["Haus"], "zh": ["房子"], "ru": ["дом"]})
    fam = t[t.group == "family"].set_index("value")
    assert fam.loc["Indo-European", "n"] == 2 and fam.loc["Indo-European", "mean"] == pytest.approx(0.85)
    assert set(t[t.group == "script"].value) == {"Latin", "Han", "Cyrillic"}


def pd_frame():
    import pandas as pd

    return pd.DataFrame({"language": ["de", "zh", "ru"], "main_score": [0.9, 0.6, 0.8]})


def test_code_switched_retrieval_pipeline_runs_per_rate():
    from semanscope_nb.data.bitext import ParallelCorpus
    from semanscope_nb.metrics.codeswitch import code_switched_retrieval

    src = tuple(f"Satz nummer {i}" for i in range(30))
    tgt = tuple(f"the red house number {i} sees the dog" for i in range(30))
    corpus = ParallelCorpus("toy", "de", "en", src, tgt, "<memory>", "0")
    df = code_switched_retrieval(corpus, _toy_dictionary(), "random-null", rates=(0.0, 0.5), seed=0, n_boot=0,
                                 cache=False, ks=(1, 5))
    assert df["rate"].tolist() == [0.0, 0.0, 0.5, 0.5]
    assert df["switch_share"].iloc[0] == 0.0 and 0.3 < df["switch_share"].iloc[2] < 0.7
    assert {"f1@5", "accuracy@1"} <= set(df.columns)


# --------------------------------------------------------------------------- sentence maps (MINERS figures 3 and 5)


def _rows(spec: dict) -> list[dict]:
    """The inline rows of a chart spec (Altair moves them into ``datasets``)."""
    data = spec["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


@pytest.mark.slow  # loads real model weights (USE)
def test_sentence_map_of_real_sib200_sentences_by_class_language_and_sample(tmp_path):
    from semanscope_nb.plots.retrieval_charts import sentence_map

    try:
        en, de = snb.read_sib200("eng_Latn", "test"), snb.read_sib200("deu_Latn", "test")
    except Exception as e:  # the shared data folder is not on this machine
        pytest.skip(f"SIB-200 not available: {e}")
    ids = [i for i in en.ids if i in set(de.ids)][:40]
    pick = {lt.language: [lt.ids.index(i) for i in ids] for lt in (en, de)}
    texts = {lt.language: [lt.texts[k] for k in pick[lt.language]] for lt in (en, de)}
    labels = [en.labels[k] for k in pick[en.language]] * 2
    cache = snb.EmbeddingCache(tmp_path / "c")
    model = snb.load_model("use-multilingual")
    vectors = {lang: snb.models.embed_texts(model, t, language=lang, cache=cache) for lang, t in texts.items()}
    proj = snb.project(vectors, method="tsne", random_state=0, cache=False, perplexity=10)
    by_sample = sentence_map(proj, colour="sample", sample_ids=ids * 2, labels=labels,
                             texts=texts[en.language] + texts[de.language]).to_dict()
    rows = _rows(by_sample)
    assert len(rows) == 80 and by_sample["encoding"]["color"]["field"] == "sample"
    assert by_sample["encoding"]["shape"]["field"] == "language" and by_sample["encoding"]["color"]["legend"] is None
    assert [r["language"] for r in rows] == [en.language] * 40 + [de.language] * 40
    assert rows[3]["text"] == texts[en.language][3] and rows[43]["sample"] == str(ids[3]) and rows[43]["label"] == labels[3]
    # what figure 5 shows for a translation-supervised model: a sentence and its translation lie close together
    xy = np.array([[r["x"], r["y"]] for r in rows])
    pair = np.linalg.norm(xy[:40] - xy[40:], axis=1).mean()
    other = np.linalg.norm(xy[:40] - np.roll(xy[40:], 7, axis=0), axis=1).mean()
    assert pair < 0.5 * other, (pair, other)
    by_class = sentence_map(proj, colour="class", labels=labels).to_dict()
    assert by_class["encoding"]["color"]["field"] == "label" and {r["label"] for r in _rows(by_class)} == set(labels)
    by_lang = sentence_map(proj, colour="language").to_dict()
    assert by_lang["encoding"]["color"]["scale"]["domain"] == [en.language, de.language] and "shape" not in by_lang["encoding"]
    with pytest.raises(ValueError, match="colour='class' needs labels"):
        sentence_map(proj, colour="class")
    with pytest.raises(ValueError, match="sample_ids has 3 entries; the projection has 80 rows"):
        sentence_map(proj, colour="sample", sample_ids=[1, 2, 3])
    with pytest.raises(ValueError, match="colour must be one of"):
        sentence_map(proj, colour="topic")


def test_topic_map_beside_the_sample_map_keeps_its_own_colours_and_a_topic_legend():
    import numpy as np

    from semanscope_nb.plots.retrieval_charts import sentence_maps_by_sample_and_class

    rng = np.random.default_rng(0)
    topics = [f"topic {i % 7}" for i in range(30)]
    p = snb.project({"en": rng.normal(size=(30, 8)), "fr": rng.normal(size=(30, 8))}, method="pca", cache=False)
    spec = sentence_maps_by_sample_and_class(p, labels=topics * 2, sample_ids=list(range(30)) * 2,
                                             class_title="topic").to_dict()  # validated against the schema
    assert spec["resolve"]["scale"]["color"] == "independent"  # no merged domain, no conflicting schemes
    by_sample, by_topic = (c["encoding"]["color"] for c in spec["hconcat"])
    assert by_sample["field"] == "sample" and by_sample["scale"]["scheme"] == "tableau20"
    assert by_topic["field"] == "label" and by_topic["title"] == "topic" and by_topic["scale"]["scheme"] == "tableau10"
    assert by_topic.get("legend", {}) is not None  # the topic map shows its legend (30 sample ids show none)
    assert by_sample["legend"] is None
