"""Contextual alignment (metrics/contextual.py): every metric against a plain-loop implementation written here,
on random vectors and on real multilingual-e5-small word vectors (NumPy port, offline)."""

from __future__ import annotations

import math
import os
from types import SimpleNamespace as NS

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from semanscope_nb.metrics import contextual as cx  # noqa: E402

# --------------------------------------------------------------------------- plain references


def ref_cos(a, b):
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def ref_csls_rank(Q, C, knn):
    """Full CSLS score matrix with plain loops (Conneau et al. 2018)."""
    Q, C = Q.tolist(), C.tolist()
    cos = [[ref_cos(q, c) for c in C] for q in Q]
    r_q = [sum(sorted(row, reverse=True)[:knn]) / min(knn, len(C)) for row in cos]
    r_c = [sum(sorted([cos[i][j] for i in range(len(Q))], reverse=True)[:knn]) / min(knn, len(Q)) for j in range(len(C))]
    return [[2 * cos[i][j] - r_q[i] - r_c[j] for j in range(len(C))] for i in range(len(Q))]


def ref_topk(scores_row, k):
    return sorted(range(len(scores_row)), key=lambda j: (-scores_row[j], j))[:k]


def ref_mutual_argmax(S, T):
    sim = [[ref_cos(s, t) for t in T] for s in S]
    out = []
    for i in range(len(S)):
        j = max(range(len(T)), key=lambda jj: (sim[i][jj], -jj))
        i_back = max(range(len(S)), key=lambda ii: (sim[ii][j], -ii))
        if i_back == i:
            out.append((i, j))
    return out


@pytest.fixture(scope="module")
def enc():
    from semanscope_nb.models.tokens import E5TokenEncoder

    return E5TokenEncoder()


EN = ["The dog sleeps in the garden.", "I bought a red car yesterday.", "My sister reads a book.", "The children play football."]
DE = ["Der Hund schläft im Garten.", "Ich habe gestern ein rotes Auto gekauft.", "Meine Schwester liest ein Buch.",
      "Die Kinder spielen Fußball."]
ZH = ["狗在花园里睡觉。", "我昨天买了一辆红色的汽车。", "我的姐姐在读一本书。", "孩子们踢足球。"]
GOLD_DE = [{("The", "Der"), ("dog", "Hund"), ("sleeps", "schläft"), ("in", "im"), ("garden", "Garten")},
           {("I", "Ich"), ("bought", "gekauft"), ("a", "ein"), ("red", "rotes"), ("car", "Auto"), ("yesterday", "gestern")},
           {("My", "Meine"), ("sister", "Schwester"), ("reads", "liest"), ("a", "ein"), ("book", "Buch")},
           {("The", "Die"), ("children", "Kinder"), ("play", "spielen"), ("football", "Fußball")}]
GOLD_ZH_CONTENT = [{("dog", "狗"), ("sleeps", "睡觉"), ("garden", "花园里")},
                   {("I", "我"), ("bought", "买"), ("red", "红色"), ("car", "汽车"), ("yesterday", "昨天")},
                   {("sister", "姐姐")}, {("children", "孩子")}]


@pytest.fixture(scope="module")
def corpora(enc):
    return {"en": cx.encode_corpus(enc, EN, "en"), "de": cx.encode_corpus(enc, DE, "de"), "zh": cx.encode_corpus(enc, ZH, "zh")}


# --------------------------------------------------------------------------- CSLS, NN, P@K


@pytest.mark.parametrize("method", ["nn", "csls"])
def test_csls_topk_matches_loops_random(method):
    rng = np.random.default_rng(1)
    Q, C = rng.normal(size=(23, 7)), rng.normal(size=(31, 7))
    idx, val = cx.csls_scores_topk(Q, C, k=5, knn=4, method=method, block=6)
    if method == "csls":
        ref = ref_csls_rank(Q, C, 4)
    else:
        ref = [[ref_cos(q, c) for c in C.tolist()] for q in Q.tolist()]
    for i in range(len(Q)):
        assert idx[i].tolist() == ref_topk(ref[i], 5)
        assert np.allclose(val[i], [ref[i][j] for j in idx[i]], atol=1e-5)  # faiss computes r terms in float32
    # blocks of any height give the same answer
    idx1, _ = cx.csls_scores_topk(Q, C, k=5, knn=4, method=method, block=1)
    assert (idx1 == idx).all()


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_csls_matches_loops_real(corpora):
    Q = np.concatenate([t.vectors for t in corpora["en"].tokens])
    C = np.concatenate([t.vectors for t in corpora["de"].tokens])
    idx, _ = cx.csls_scores_topk(Q, C, k=3, knn=5)
    ref = ref_csls_rank(Q.astype(np.float64), C.astype(np.float64), 5)
    agree = np.mean([idx[i, 0] == ref_topk(ref[i], 1)[0] for i in range(len(Q))])
    assert agree == 1.0
    # CSLS and NN both pick the translation for content words here
    words_q = [w for t in corpora["en"].tokens for w in t.tokens]
    words_c = [w for t in corpora["de"].tokens for w in t.tokens]
    assert words_c[idx[words_q.index("garden"), 0]] == "Garten"


def test_precision_at_k_and_bootstrap_match_loops():
    rng = np.random.default_rng(2)
    ranks = rng.integers(-1, 12, size=57)
    s = cx.precision_at_k(ranks, ks=(1, 5), n_boot=200, seed=7)
    for k in (1, 5):
        hits = [1.0 if 0 <= r < k else 0.0 for r in ranks.tolist()]
        assert s.accuracy[k] == pytest.approx(sum(hits) / len(hits))
    # the same resamples (the package's draw rule: n uniform row indices per resample, counted), summed with loops
    g = np.random.default_rng(7)
    n = len(ranks)
    means = {1: [], 5: []}
    for _ in range(200):
        c = [0] * n
        for i in g.integers(0, n, size=n).tolist():
            c[i] += 1
        for k in (1, 5):
            means[k].append(sum(c[i] * (1.0 if 0 <= ranks[i] < k else 0.0) for i in range(n)) / n)
    for k in (1, 5):
        assert s.interval[k][0] == pytest.approx(np.percentile(means[k], 2.5))
        assert s.interval[k][0] <= s.accuracy[k] <= s.interval[k][1]
    assert cx.precision_at_k(ranks, n_boot=200, seed=7).interval == s.interval  # seeded
    with pytest.raises(ValueError, match="n_boot"):
        cx.precision_at_k(ranks, n_boot=-1)


@pytest.mark.parametrize("method", ["nn", "csls"])
def test_lexicon_induction_vectors_matches_loops(method):
    rng = np.random.default_rng(3)
    S, T = rng.normal(size=(15, 5)), rng.normal(size=(40, 5))
    sw, tw = [f"s{i}" for i in range(15)], [f"t{j}" for j in range(40)]
    gold = [(f"s{i}", f"t{(3 * i) % 40}") for i in range(12)] + [("s0", "t7")]
    r = cx.lexicon_induction_vectors(S, sw, T, tw, gold, method=method, ks=(1, 5), knn=3, n_boot=0)
    scores = ref_csls_rank(S, T, 3) if method == "csls" else [[ref_cos(a, b) for b in T.tolist()] for a in S.tolist()]
    hits = {1: 0, 5: 0}
    for i in range(12):
        g = {t for s, t in gold if s == f"s{i}"}
        top = [tw[j] for j in ref_topk(scores[i], 5)]
        hits[1] += top[0] in g
        hits[5] += any(w in g for w in top)
    assert r.accuracy == {1: hits[1] / 12, 5: hits[5] / 12}
    assert r.pool_size == 40 and r.n_queries == 12
    with pytest.raises(ValueError, match="target_words"):
        cx.lexicon_induction_vectors(S, sw, T, tw[:-1], gold)


# --------------------------------------------------------------------------- aligner


def test_align_words_matches_loops_random():
    rng = np.random.default_rng(4)
    for _ in range(20):
        S, T = rng.normal(size=(rng.integers(2, 9), 6)), rng.normal(size=(rng.integers(2, 9), 6))
        assert cx.align_words(S, T) == sorted(ref_mutual_argmax(S.tolist(), T.tolist()))
        more = cx.align_words(S, T, itermax=3)
        assert set(cx.align_words(S, T)) <= set(more)
        assert len({i for i, _ in more}) == len(more) == len({j for _, j in more})  # one-to-one


@pytest.mark.slow  # encodes with the real token encoder (the `corpora` fixture): on a cold token cache (a clean
# machine) it loads the model's weights, which the fast tier forbids; a warm cache hid this
def test_aligner_on_hand_aligned_pairs(corpora):
    found = []
    for k, gold in enumerate(GOLD_DE):
        a, b = corpora["en"].tokens[k], corpora["de"].tokens[k]
        found.append({(a.tokens[i], b.tokens[j]) for i, j in cx.align_words(a.vectors, b.vectors)})
    tp = sum(len(f & g) for f, g in zip(found, GOLD_DE))
    precision, recall = tp / sum(map(len, found)), tp / sum(map(len, GOLD_DE))
    assert precision >= 0.9 and recall >= 0.9, (precision, recall, found)
    zh_hits = 0
    for k, gold in enumerate(GOLD_ZH_CONTENT):
        a, b = corpora["en"].tokens[k], corpora["zh"].tokens[k]
        got = {(a.tokens[i], b.tokens[j]) for i, j in cx.align_words(a.vectors, b.vectors, itermax=2)}
        zh_hits += len(got & gold)
    assert zh_hits / sum(map(len, GOLD_ZH_CONTENT)) >= 0.8


# --------------------------------------------------------------------------- anchors


def fake_corpus(language, sentences_tokens, seed):
    rng = np.random.default_rng(seed)
    toks = tuple(NS(tokens=tuple(ws), vectors=rng.normal(size=(len(ws), 4))) for ws in sentences_tokens)
    return cx.EncodedCorpus(language, tuple(" ".join(w) for w in sentences_tokens), toks, {"model": "fake"})


def test_avg_type_anchors_match_loops():
    src = fake_corpus("en", [["the", "Bank", "is", "closed"], ["a", "bank", "of", "the", "river"], ["dog"]], 0)
    tgt = fake_corpus("de", [["die", "Bank", "ist", "zu"], ["das", "Ufer"], ["Hund", "Hund"]], 1)
    pairs = [("bank", "Bank"), ("dog", "Hund"), ("cat", "Katze"), ("river", "Fluss")]
    a = cx.avg_type_anchors(pairs, src, tgt, max_occurrences=5)
    assert a.pairs == (("bank", "Bank"), ("dog", "Hund"))
    assert a.missing == {"en": ("cat",), "de": ("Katze", "Fluss")}
    assert a.counts["per_word"]["en"] == {"bank": 2, "dog": 1, "cat": 0, "river": 1}
    assert a.counts["per_word"]["de"]["Hund"] == 2
    bank = [src.tokens[0].vectors[1], src.tokens[1].vectors[1]]
    assert np.allclose(a.source[0], [sum(v[d] for v in bank) / 2 for d in range(4)])
    hund = [tgt.tokens[2].vectors[0], tgt.tokens[2].vectors[1]]
    assert np.allclose(a.target[1], [sum(v[d] for v in hund) / 2 for d in range(4)])
    capped = cx.avg_type_anchors(pairs, src, tgt, max_occurrences=1, seed=3)
    assert capped.counts["per_word"]["en"]["bank"] == 1
    assert any(np.allclose(capped.source[0], v) for v in bank)
    with pytest.raises(ValueError, match="max_occurrences"):
        cx.avg_type_anchors(pairs, src, tgt, max_occurrences=0)


@pytest.mark.slow
def test_avg_type_anchors_real(enc):
    en = cx.encode_corpus(enc, ["I sat on the bank of the river.", "The bank lent me money.", "A dog barked."], "en")
    de = cx.encode_corpus(enc, ["Ich saß am Ufer des Flusses.", "Die Bank lieh mir Geld.", "Ein Hund bellte."], "de")
    a = cx.avg_type_anchors([("bank", "Bank"), ("dog", "Hund"), ("money", "Geld")], en, de)
    assert a.counts["per_word"]["en"]["bank"] == 2
    manual = (en.tokens[0].vectors[4] + en.tokens[1].vectors[1]) / 2
    assert np.allclose(a.source[0], manual, atol=1e-6)
    assert a.source.shape == (3, 384)


def test_fit_anchor_alignment_asserts_disjointness():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    R, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    a = cx.Anchors("iso", "en", "de", tuple((f"w{i}", f"W{i}") for i in range(30)), X, X @ R)
    al = cx.fit_anchor_alignment(a, test_pairs=[("other", "Other")])
    assert np.allclose(al.map_source(X[:3]), al.map_target((X @ R)[:3]), atol=1e-8)
    with pytest.raises(AssertionError, match="disjoint"):
        cx.fit_anchor_alignment(a, test_pairs=[("W0", "x"), ("w3", "y")])
    assert cx.fit_anchor_alignment(a, mim=True).mim


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_token_anchors_drop_test_words(corpora):
    pairs = cx.token_pairs(corpora["en"], corpora["de"])
    a = cx.token_anchors(pairs, exclude_source_words=["Dog", "car"])
    assert "dog" not in {s for s, _ in a.pairs} and ("garden", "garten") in a.pairs
    cx.fit_anchor_alignment(a, test_pairs=[("dog", "Hund"), ("car", "Auto")])  # no leak: no error


# --------------------------------------------------------------------------- per-language encoders


class ConstEncoder:
    """A fake token encoder: every word gets one vector that depends on the encoder, not the word."""

    def __init__(self, value, model_id):
        self.value, self.model_id, self.version, self.languages = value, model_id, "0", []

    def encode_tokens(self, texts, language=None, *, spans=None, layers="mean", pooling="word"):
        self.languages.append(language)
        return [NS(tokens=(t,), vectors=np.full((1, 3), self.value)) for t in texts]


@pytest.mark.slow
def test_per_language_encoders(enc):
    e_en, e_de = ConstEncoder(1.0, "a"), ConstEncoder(2.0, "b")
    a = cx.iso_type_anchors({"en": e_en, "de": e_de}, [("dog", "Hund")], source_language="en", target_language="de")
    assert a.source[0].tolist() == [1.0] * 3 and a.target[0].tolist() == [2.0] * 3
    assert e_en.languages == ["en"] and e_de.languages == ["de"]
    assert a.provenance["source_encoder"]["model"] == "a" and a.provenance["target_encoder"]["model"] == "b"
    with pytest.raises(ValueError, match="no encoder for language 'zh'"):
        cx.iso_type_anchors({"en": e_en}, [("dog", "狗")], source_language="en", target_language="zh")
    # real: a passage-prefixed E5 for German gives the vectors that encoder gives alone
    from semanscope_nb.models.tokens import E5TokenEncoder

    passage = E5TokenEncoder(prefix="passage")
    b = cx.iso_type_anchors({"en": enc, "de": passage}, [("dog", "Hund")], source_language="en", target_language="de")
    [alone] = passage.encode_tokens(["Hund"], "de", spans=[[(0, 4)]])
    assert np.allclose(b.target[0], alone.vectors[0]) and not np.allclose(b.target[0], enc.encode_tokens(["Hund"], "de")[0].vectors[0])


# --------------------------------------------------------------------------- BTSR


def random_pairs(n_sent=40, per=5, seed=6):
    rng = np.random.default_rng(seed)
    vocab = [(f"s{i}", f"t{i}") for i in range(12)]
    sent, ws, wt, S, T = [], [], [], [], []
    base = rng.normal(size=(12, 8))
    for k in range(n_sent):
        for _ in range(per):
            v = int(rng.integers(12))
            sent.append(k); ws.append(vocab[v][0]); wt.append(vocab[v][1])
            S.append(base[v] + 0.8 * rng.normal(size=8)); T.append(base[v] + 0.8 * rng.normal(size=8))
    return cx.TokenPairs("en", "de", np.array(sent), tuple(ws), tuple(wt), np.array(S), np.array(T), {})


def test_sense_retrieval_pool_guard_and_loops():
    p = random_pairs()
    r = cx.sense_retrieval(p, pool_size=60, ks=(1, 5), n_boot=50, seed=1)
    q, c = r.provenance["query_rows"], r.provenance["pool_rows"]
    assert r.pool_size == len(c) == 60
    # guard, checked with loops: no query sentence in the pool
    for i in q:
        for j in c:
            assert p.sentence[i] != p.sentence[j]
    # P@K with loops
    hits = {1: 0, 5: 0}
    for i in q:
        sims = [ref_cos(p.source[i].tolist(), p.target[j].tolist()) for j in c]
        top = ref_topk(sims, 5)
        gold = [pos for pos, j in enumerate(c) if (p.source_words[j], p.target_words[j]) == (p.source_words[i], p.target_words[i])]
        hits[1] += top[0] in gold
        hits[5] += any(t in gold for t in top)
    assert r.accuracy == {1: hits[1] / len(q), 5: hits[5] / len(q)}
    assert r.accuracy[1] > 3 / 12  # well above chance with this noise
    base = cx.sense_retrieval(p, pool_size=60, ks=(1, 5), n_boot=0, seed=1, baseline=True)
    assert base.provenance["query_rows"] == q and base.provenance["baseline"]
    with pytest.raises(AssertionError, match="candidate pool"):
        cx.check_pool_disjoint([1, 2, 3], [3, 4])


@pytest.mark.slow  # encodes with the real token encoder (the `corpora` fixture): on a cold token cache (a clean
# machine) it loads the model's weights, which the fast tier forbids; a warm cache hid this
def test_sense_retrieval_real(corpora):
    p = cx.token_pairs(corpora["en"], corpora["de"])
    more = cx.TokenPairs("en", "de", np.concatenate([p.sentence, p.sentence + 4]), p.source_words * 2, p.target_words * 2,
                         np.concatenate([p.source, p.source]), np.concatenate([p.target, p.target]), {})
    r = cx.sense_retrieval(more, pool_size=100, ks=(1, 5), n_boot=0, seed=0)
    assert r.n_queries >= 5 and r.accuracy[5] >= r.accuracy[1] >= 0.5


# --------------------------------------------------------------------------- sense separation


@pytest.mark.slow
def test_sense_separation_matches_loops_and_real(enc):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(9, 4))
    words = ["bank", "bank", "bank", "shore", "shore", "money", "cash", "cash", "bank"]
    senses = ["river", "money", "river", "river", "river", "money", "money", "money", "money"]
    s = cx.sense_separation(X, words, senses)
    ss, sw = [], []
    for i in range(9):
        for j in range(i + 1, 9):
            c = ref_cos(X[i].tolist(), X[j].tolist())
            if senses[i] == senses[j] and words[i] != words[j]:
                ss.append(c)
            if words[i] == words[j] and senses[i] != senses[j]:
                sw.append(c)
    assert s.same_sense == pytest.approx(sum(ss) / len(ss)) and s.same_word_other_sense == pytest.approx(sum(sw) / len(sw))
    assert s.auc == pytest.approx(sum((a > b) + 0.5 * (a == b) for a in ss for b in sw) / (len(ss) * len(sw)))
    texts = [("We walked along the bank of the river.", "bank", "river"), ("The boat drifted to the muddy bank.", "bank", "river"),
             ("She deposited cash at the bank.", "bank", "money"), ("The bank approved my loan.", "bank", "money"),
             ("We walked along the shore of the river.", "shore", "river"), ("She deposited cash at the lender.", "lender", "money")]
    res = enc.encode_tokens([t for t, _, _ in texts], "en")
    V = np.stack([r.vectors[r.tokens.index(w)] for r, (_, w, _) in zip(res, texts)])
    real = cx.sense_separation(V, [w for _, w, _ in texts], [s for _, _, s in texts])
    assert real.n_same_word == 4 and 0.0 <= real.auc <= 1.0 and math.isfinite(real.gap)


def test_sense_separation_within_word_matches_loops():
    X = np.array([[1.0, 0.0], [0.9, 0.2], [0.0, 1.0], [0.2, 0.9], [0.7, 0.7]])
    words, senses = ["bank", "bank", "bank", "bank", "shore"], ["r", "r", "m", "m", "r"]
    s = cx.sense_separation(X, words, senses)
    same = [ref_cos(X[0], X[1]), ref_cos(X[2], X[3])]
    other = [ref_cos(X[i], X[j]) for i in (0, 1) for j in (2, 3)]
    assert s.same_word_same_sense == pytest.approx(sum(same) / 2)
    assert s.within_word_gap == pytest.approx(sum(same) / 2 - sum(other) / 4)
    assert s.within_word_auc == pytest.approx(sum((a > b) + 0.5 * (a == b) for a in same for b in other) / 8)


def test_csls_without_faiss_matches(monkeypatch):
    import sys

    rng = np.random.default_rng(9)
    Q, C = rng.normal(size=(20, 6)), rng.normal(size=(25, 6))
    with_faiss = cx.csls_scores_topk(Q, C, k=3, knn=4)[0]
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss -> ImportError
    assert (cx.csls_scores_topk(Q, C, k=3, knn=4)[0] == with_faiss).all()
