"""Sense-testing BTSR (paper 001, section 4): tie-aware P@K against an enumeration of tie orders, the paired
baseline bootstrap, and the construction of queries, gold-by-sense and hard distractors on hand-made items."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from semanscope_nb.errors import ArgumentError, DatasetError
from semanscope_nb.metrics.btsr import SenseRetrievalScore, expected_hits, sense_retrieval_scores
from semanscope_nb.metrics.contextual import TokenPairs
from semanscope_nb.results import Result
from semanscope_nb.runs.btsr import same_sense, sense_items, sense_retrieval_table


def plain_expected_hit(scores, gold, k, tol=1e-9):
    """Average over every order of the candidates tied with the best gold: is a gold within the first k?"""
    golds = [j for j in range(len(scores)) if gold[j]]
    if not golds:
        return 0.0
    best = max(scores[j] for j in golds)
    above = [j for j in range(len(scores)) if scores[j] > best + tol and not gold[j]]
    tied = [j for j in range(len(scores)) if abs(scores[j] - best) <= tol]
    hits = total = 0
    for order in itertools.permutations(tied):
        ranking = above + list(order)
        hits += any(gold[j] for j in ranking[:k])
        total += 1
    return hits / total


def plain_cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a)) / math.sqrt(sum(y * y for y in b))


def test_expected_hits_match_an_enumeration_of_tie_orders():
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(2, 8))
        S = rng.integers(0, 3, size=(3, n)).astype(float) / 2  # coarse values: many exact ties
        G = rng.random((3, n)) < 0.35
        got = expected_hits(S, G, ks=(1, 2, 3))
        for q in range(3):
            for j, k in enumerate((1, 2, 3)):
                np.testing.assert_allclose(got[q, j], plain_expected_hit(S[q].tolist(), G[q].tolist(), k), rtol=1e-12,
                                           atol=1e-12, err_msg=f"trial {trial}, query {q}, k {k}")


def test_scores_match_loops_and_the_paired_bootstrap():
    rng = np.random.default_rng(1)
    nq, nc, d = 25, 12, 5
    Q, C = rng.normal(size=(nq, d)), rng.normal(size=(nc, d))
    words = rng.integers(0, 4, size=nc)  # the baseline: one vector per candidate word, so ties within a word
    BC = np.stack([np.eye(d)[w] + 0.1 for w in words])
    BQ = rng.normal(size=(nq, d))
    G = rng.random((nq, nc)) < 0.2
    G[:, 0] |= ~G.any(axis=1)
    r = sense_retrieval_scores(Q, C, G, baseline_queries=BQ, baseline_candidates=BC, ks=(1, 3), n_boot=40, seed=9)
    for vecs, acc in (((Q, C), r.accuracy), ((BQ, BC), r.baseline_accuracy)):
        A, B = vecs
        for k in (1, 3):
            per = [plain_expected_hit([plain_cos(A[q], B[c]) for c in range(nc)], G[q].tolist(), k) for q in range(nq)]
            np.testing.assert_allclose(acc[k], np.mean(per), rtol=1e-12, err_msg=f"P@{k} from loops")
    np.testing.assert_allclose(r.difference[1], r.accuracy[1] - r.baseline_accuracy[1], rtol=1e-12, err_msg="gain")
    hits = expected_hits(Q @ C.T / np.linalg.norm(Q, axis=1)[:, None] / np.linalg.norm(C, axis=1), G, ks=(1, 3))
    base = expected_hits(BQ @ BC.T / np.linalg.norm(BQ, axis=1)[:, None] / np.linalg.norm(BC, axis=1), G, ks=(1, 3))
    rng2 = np.random.default_rng(9)
    diffs = []
    for _ in range(40):  # the same resamples of queries, one at a time (nq uniform query indices, counted)
        w = [0] * nq
        for i in rng2.integers(0, nq, size=nq).tolist():
            w[i] += 1
        diffs.append(sum(w[q] * (hits[q, 0] - base[q, 0]) for q in range(nq)) / nq)
    np.testing.assert_allclose(list(r.difference_interval[1]), np.percentile(diffs, [2.5, 97.5]), rtol=1e-10, atol=1e-12,
                               err_msg="paired percentile interval of the difference")
    assert r.pool_size == nc and r.n_queries == nq and isinstance(r, Result)
    assert r.beats_baseline(1) == (r.difference_interval[1].low > 0)
    assert isinstance(Result.from_dict.__func__(SenseRetrievalScore, r.to_dict()), SenseRetrievalScore)


def test_scores_bad_input():
    Q = np.ones((2, 3))
    with pytest.raises(ArgumentError, match="gold must be"):
        sense_retrieval_scores(Q, Q, np.ones((3, 2), bool), baseline_queries=Q, baseline_candidates=Q, n_boot=0)
    with pytest.raises(ArgumentError, match="exceeds the candidate pool"):
        sense_retrieval_scores(Q, Q, np.eye(2, dtype=bool), baseline_queries=Q, baseline_candidates=Q, ks=(5,), n_boot=0)
    bad = Q.copy()
    bad[1, 0] = np.nan
    with pytest.raises(Exception, match="candidate vectors: row 1"):
        sense_retrieval_scores(Q, bad, np.eye(2, dtype=bool), baseline_queries=Q, baseline_candidates=Q, ks=(1,), n_boot=0)


class Dict:
    def __init__(self, pairs):
        self.pairs = tuple(pairs)


DICTIONARY = Dict([("bank", "银行"), ("bank", "河岸"), ("banks", "银行"), ("shore", "河岸"), ("hit", "打"), ("hit", "击"),
                   ("play", "打"), ("play", "玩"), ("strike", "击"), ("big", "大"), ("big", "巨大"), ("large", "大"),
                   ("large", "巨大"), ("river", "河")])


def toy_pairs():
    """Sentence k holds one aligned item (each in four sentences, so both halves hold most items)."""
    items = [("bank", "银行"), ("bank", "河岸"), ("hit", "打"), ("play", "打"), ("big", "大"), ("large", "大"),
             ("large", "巨大"), ("river", "河"), ("unknown", "未知")]
    rows = items * 4
    sent = np.arange(len(rows))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(len(rows), 4))
    return TokenPairs("en", "zh", sent, tuple(s for s, _ in rows), tuple(t for _, t in rows), X, X + 0.01, {})


def test_same_sense_rule():
    tr = {"bank": {"银行", "河岸"}, "banks": {"银行"}, "shore": {"河岸"}, "hit": {"打", "击"}, "play": {"打", "玩"},
          "big": {"大", "巨大"}, "large": {"大", "巨大"}}
    back = {"银行": {"bank", "banks"}, "河岸": {"bank", "shore"}, "打": {"hit", "play"}, "大": {"big", "large"},
            "巨大": {"big", "large"}}
    assert not same_sense(("bank", "银行"), ("bank", "河岸"), tr, back)  # the two senses of bank
    assert not same_sense(("hit", "打"), ("play", "打"), tr, back)  # the two senses of 打
    assert same_sense(("big", "大"), ("large", "大"), tr, back)  # synonyms sharing 巨大 as well
    assert same_sense(("big", "大"), ("large", "巨大"), tr, back)  # no word shared, one sense
    assert same_sense(("bank", "银行"), ("banks", "银行"), tr, back)  # one Snowball stem
    assert same_sense(("organisation", "组织"), ("organization", "组织"), {}, {})  # spelling variants
    assert same_sense(("this", "这"), ("this", "这个"), {}, {})  # one shared character
    assert not same_sense(("house", "房子"), ("horse", "房子"), {}, {})  # one letter apart, not variants


def test_sense_items_gold_by_sense_and_hard_distractors():
    tp = toy_pairs()
    items = sense_items(tp, DICTIONARY, seed=3)
    q_sent, p_sent = set(tp.sentence[items.query_rows].tolist()), set(tp.sentence[items.pool_rows].tolist())
    assert not q_sent & p_sent  # queries and pool come from different sentence pairs
    assert all(it in set(DICTIONARY.pairs) for it in items.pool_items)  # validated items only ("unknown" left out)
    for q, it in enumerate(items.query_items):
        golds = {items.pool_items[c] for c in np.flatnonzero(items.gold[q])}
        hard = {items.pool_items[c] for c in np.flatnonzero(items.hard[q])}
        assert golds and hard and not golds & hard
        if it == ("bank", "银行"):
            assert golds == {("bank", "银行")} and hard == {("bank", "河岸")}
        if it == ("hit", "打"):
            assert golds == {("hit", "打")} and hard == {("play", "打")}
        for g in golds:
            assert g == it or g[0] == it[0] or g[1] == it[1] or g in {("large", "巨大"), ("big", "巨大")}
    assert ("river", "河") not in items.query_items  # no hard distractor: not a sense test
    tp_stop = toy_pairs()  # function words are not items (paper 001's words come from WordNet: content words)
    only_the = TokenPairs("en", "zh", tp_stop.sentence, ("the",) * len(tp_stop), tp_stop.target_words, tp_stop.source,
                          tp_stop.target, {})
    with pytest.raises(DatasetError, match="fewer than 2 sentence pairs"):
        sense_items(only_the, Dict([("the", t) for t in set(tp_stop.target_words)]), seed=3)
    assert items.counts["dropped_no_hard_distractor"] >= 0 and items.pool_size == len(items.pool_rows)
    assert set(items.examples(3).columns) == {"query", "gold", "hard distractors"}
    excluded = sense_items(tp, DICTIONARY, seed=3, exclude_sentences=range(9))
    assert set(tp.sentence[excluded.pool_rows].tolist()) | set(tp.sentence[excluded.query_rows].tolist()) <= set(range(9, 36))
    with pytest.raises(DatasetError, match="fewer than 2 sentence pairs"):
        sense_items(tp, Dict([("nothing", "无")]))


def test_sense_table_baseline_ties_word_identity():
    tp = toy_pairs()
    items = sense_items(tp, DICTIONARY, seed=3)
    table, results = sense_retrieval_table(tp, items, ks=(1,), n_boot=20)
    row = table.iloc[0]
    assert row["map"] == "orig" and row["pool"] == items.pool_size and row["queries"] == len(items.query_rows)
    for col in ("P@1", "P@1 no-context", "P@1 gain", "P@1 gain lo", "P@1 gain hi"):
        assert np.isfinite(row[col])
    # the baseline gives one vector per Chinese word: a query whose gold and hard distractor are the same
    # Chinese word can do no better than a coin among them
    assert results["orig"].baseline_accuracy[1] < 1.0
