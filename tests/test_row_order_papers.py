"""One truth across row orders beyond SA: the other papers' seeded draws follow the rows' content, not their place.

SA's draws are made over concepts in canonical order (tests/test_row_order.py).  The same rule
(``data.concept_key.key_order``) now orders every other seeded draw over rows: the retrieval,
kNN, word-similarity, BDI and CSC bootstraps, the kNN random baseline, and the subsamples and
splits of the readers (SIB-200, sentence corpora, word-similarity pairs, MUSE splits).  Each
test reads a real file from ../shared/data (or embeds real text with a weight-free model),
shuffles its rows, and checks that the answer is the same: decisions and picked rows exactly,
interval ends to a tolerance from the arithmetic (the same resampled multisets, summed in
another order: a few ulps of each statistic).
"""

from __future__ import annotations

import numpy as np
import pytest

from semanscope_nb.data import SentenceCorpus
from semanscope_nb.errors import ArgumentError
from semanscope_nb.metrics import bitext_retrieval, concept_separation
from semanscope_nb.data.bitext import read_sib200, read_tatoeba
from semanscope_nb.data.concept_key import item_key, key_order, sampled_rows
from semanscope_nb.data.dictionaries import read_muse_dictionary, split_dictionary
from semanscope_nb.data.word_similarity import read_bcws
from semanscope_nb.metrics.classification import knn_classification
from semanscope_nb.metrics.contextual import precision_at_k
from semanscope_nb.metrics.word_similarity import contextual_word_similarity

# interval ends: each statistic is a mean over <= a few hundred terms summed in another order (|error| <= n eps |value|)
RTOL, ATOL = 1e-12, 1e-12


def _close(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


def _perm(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n)


def test_key_order_is_by_code_point_and_stable_for_equal_keys():
    keys = ["b", "a", "B", "é", "a", "e"]
    by_hand = sorted(range(len(keys)), key=lambda i: (keys[i], i))  # code point order, equal keys as given
    assert key_order(keys).tolist() == by_hand == [2, 1, 4, 0, 5, 3]
    assert key_order(None, 3).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="2 keys for 3 rows"):
        key_order(["a", "b"], 3)
    assert item_key("a", "b") != item_key("ab") and item_key("x", 1) == item_key("x", 1)


def test_sampled_rows_pick_the_same_content_in_any_row_order():
    keys = [f"row {i}" for i in range(200)]
    picked = {keys[r] for r in sampled_rows(keys, 30, seed=5)}
    assert len(picked) == 30
    for s in (1, 2, 3):
        p = _perm(200, s)
        shuffled = [keys[i] for i in p]
        rows = sampled_rows(shuffled, 30, seed=5)
        assert rows == sorted(rows)  # handed back in the file's order
        assert {shuffled[r] for r in rows} == picked
    assert {keys[r] for r in sampled_rows(keys, 30, seed=6)} != picked  # the seed matters


def test_sib200_sample_is_the_same_rows_in_any_order_and_the_same_ids_in_every_language():
    en = read_sib200("en", "test")
    picked = en.sample(40, seed=3)
    assert len(picked) == 40 and list(picked.ids) == [i for i in en.ids if i in set(picked.ids)]  # file order kept
    for s in (0, 1):
        shuffled = en._pick(_perm(len(en), s).tolist())
        again = shuffled.sample(40, seed=3)
        assert sorted(zip(again.ids, again.labels, again.texts)) == sorted(zip(picked.ids, picked.labels, picked.texts))
    de = read_sib200("de", "test")
    assert set(de.sample(40, seed=3).ids) == set(picked.ids)  # a parallel split: the same FLORES sentences


def test_sentence_corpus_sample_is_the_same_sentences_in_any_order():
    pairs = read_tatoeba("deu", limit=300)
    texts = list(dict.fromkeys(pairs.source_texts))
    corpus = SentenceCorpus.from_sentences(texts, language="de", name="tatoeba-de")
    picked = set(corpus.sample(25, seed=2).sentences)
    for s in (0, 1):
        p = _perm(len(texts), s)
        shuffled = SentenceCorpus.from_sentences([texts[i] for i in p], language="de", name="tatoeba-de")
        assert set(shuffled.sample(25, seed=2).sentences) == picked


def test_word_similarity_pairs_sample_is_the_same_pairs_in_any_order():
    bcws = read_bcws()
    picked = set(bcws.sample(50, seed=1).pair_keys())
    assert len(picked) == 50
    for s in (0, 1):
        shuffled = bcws.subset(_perm(len(bcws), s).tolist())
        assert set(shuffled.sample(50, seed=1).pair_keys()) == picked
    # a pair keeps the key it was read with through a script conversion: convert-then-sample = sample-then-convert
    before = bcws.sample(50, seed=1).converted("t2s")
    after = bcws.converted("t2s").sample(50, seed=1)
    assert after.lines == before.lines and after.sentences1 == before.sentences1
    assert after.sentences1 != bcws.sample(50, seed=1).sentences1  # the conversion did change the text


def test_muse_split_is_the_same_split_in_any_order():
    muse = read_muse_dictionary("en-zh")
    split = split_dictionary(muse, n_train=300, n_test=100, seed=4)
    train, test = set(split.train.pairs), set(split.test.pairs)
    for s in (0, 1):
        shuffled = muse.with_pairs([muse.pairs[i] for i in _perm(len(muse.pairs), s)])
        again = split_dictionary(shuffled, n_train=300, n_test=100, seed=4)
        assert set(again.train.pairs) == train and set(again.test.pairs) == test


def _intervals_agree(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert _close(a[name][0], b[name][0]) and _close(a[name][1], b[name][1]), (name, a[name], b[name])


def _distinct_tatoeba(n: int) -> tuple[list[str], list[str]]:
    pairs = read_tatoeba("deu", limit=4 * n)
    seen, src, tgt = set(), [], []
    for s, t in zip(pairs.source_texts, pairs.target_texts):  # distinct sentences on each side
        if s not in seen and t not in seen:
            seen |= {s, t}
            src.append(s)
            tgt.append(t)
    return src[:n], tgt[:n]


def test_bitext_retrieval_intervals_do_not_depend_on_the_row_order_real_tatoeba():
    """Real sentence pairs, embedded by TF-IDF (char n-grams) beside a small per-text jitter (the random-null model: a
    vector from the text's hash).  Bare TF-IDF ties exactly (two candidates sharing no n-gram with a query both sit at
    cosine 0), and tied candidates rank by index (MTEB's convention, kept for parity): there a rank follows the row
    order by design.  The jitter, a function of the text alone, leaves no ties within the float64 near-tie band (in
    float32 the band is ~5e-4 wide at this dimension and holds some), so this checks the bootstrap."""
    from semanscope_nb.models.embedding import embed_texts, load_encoder

    src, tgt = _distinct_tatoeba(150)
    tfidf, noise = load_encoder("tfidf-char", [*src, *tgt]), load_encoder("random-null", [*src, *tgt])

    def vectors(texts: list[str], lang: str) -> np.ndarray:
        jitter = embed_texts(noise, texts, language=lang, cache=False)
        return np.hstack([embed_texts(tfidf, texts, language=lang, cache=False),
                          0.1 * jitter / np.linalg.norm(jitter, axis=1, keepdims=True)])

    S, T = vectors(src, "en").astype(np.float64), vectors(tgt, "de").astype(np.float64)  # a near-tie band of ~1e-12
    kw = dict(ks=(1, 5), n_boot=300, seed=7, dtype=np.float64)  # float64 distances (float32 is the cosine default)
    base = bitext_retrieval(S, T, source_labels=src, target_labels=tgt, **kw)
    assert 0.0 < base.accuracy[1] < 1.0  # an informative case: the intervals have width
    lo, hi = base.intervals["accuracy@1"]
    assert lo < base.accuracy[1] < hi
    for s in (0, 1):
        p = _perm(len(src), s)
        r = bitext_retrieval(S[p], T[p], source_labels=[src[i] for i in p], target_labels=[tgt[i] for i in p], **kw)
        assert (r.ranks == base.ranks[p]).all()  # per query, the same ranks (decisions: exact)
        _intervals_agree(r.intervals, base.intervals)
        _intervals_agree(r.reverse.intervals, base.reverse.intervals)
    moved = bitext_retrieval(S[p], T[p], **kw)  # no labels: the rows as given, so other resamples
    assert any(not _close(moved.intervals[k][0], base.intervals[k][0]) or not _close(moved.intervals[k][1], base.intervals[k][1])
               for k in base.intervals)


def test_knn_intervals_and_random_baseline_follow_the_test_keys():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 16))
    y_train = np.repeat(["a", "b", "c"], 30)
    X_train = centres[np.repeat(np.arange(3), 30)] + 1.5 * rng.normal(size=(90, 16))
    y_test = rng.choice(["a", "b", "c"], size=80)
    X_test = centres[[{"a": 0, "b": 1, "c": 2}[y] for y in y_test]] + 1.5 * rng.normal(size=(80, 16))
    keys = [f"test sentence {i}" for i in range(80)]
    kw = dict(ks=(1, 5), n_boot=300, seed=2, logistic=False)
    base = knn_classification(X_train, y_train, X_test, y_test, test_keys=keys, **kw)
    assert 0.3 < base.accuracy[5] < 1.0
    for s in (0, 1):
        p = _perm(80, s)
        r = knn_classification(X_train, y_train, X_test[p], y_test[p], test_keys=[keys[i] for i in p], **kw)
        assert r.accuracy == base.accuracy and r.random_baseline == base.random_baseline
        _intervals_agree(r.intervals, base.intervals)
    with pytest.raises(ArgumentError, match="test_keys has 3 entries"):
        knn_classification(X_train, y_train, X_test, y_test, test_keys=["a", "b", "c"], **kw)


def test_word_similarity_interval_follows_the_pair_keys_real_bcws_pairs():
    bcws = read_bcws().sample(120, seed=0)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(len(bcws), 24)), rng.normal(size=(len(bcws), 24))
    a[:, 0] += bcws.scores  # a signal: the cosines follow the human scores
    b[:, 0] += bcws.scores
    keys = bcws.pair_keys()
    base = contextual_word_similarity(a, b, bcws.scores, n_boot=400, seed=3, keys=keys)
    assert base.ci.low < base.rho < base.ci.high
    for s in (0, 1):
        p = _perm(len(bcws), s)
        r = contextual_word_similarity(a[p], b[p], bcws.scores[p], n_boot=400, seed=3, keys=[keys[i] for i in p])
        assert _close(r.rho, base.rho) and _close(r.ci.low, base.ci.low) and _close(r.ci.high, base.ci.high)
        assert _close(r.sem, base.sem)


def test_precision_at_k_interval_follows_the_query_keys():
    ranks = np.random.default_rng(4).integers(-1, 8, size=90)
    keys = [f"w{i}" for i in range(90)]
    base = precision_at_k(ranks, ks=(1, 5), n_boot=300, seed=1, keys=keys)
    for s in (0, 1):
        p = _perm(90, s)
        r = precision_at_k(ranks[p], ks=(1, 5), n_boot=300, seed=1, keys=[keys[i] for i in p])
        assert r.accuracy == base.accuracy
        for k in (1, 5):
            assert _close(r.interval[k][0], base.interval[k][0]) and _close(r.interval[k][1], base.interval[k][1])


def test_csc_intervals_do_not_depend_on_the_sentence_order_real_sentences():
    pairs = read_tatoeba("deu", limit=200)
    texts = [t for t in dict.fromkeys(pairs.source_texts) if len(t.split()) >= 4][:30]
    kw = dict(language="en", n_boot=60, seed=0, cache=False, resolution=201, ci_method="percentile")
    base = concept_separation(texts, "tfidf-word", **kw)
    for s in (0,):
        p = _perm(len(texts), s)
        r = concept_separation([texts[i] for i in p], "tfidf-word", **kw)
        assert _close(r.overlap, base.overlap) or abs(r.overlap - base.overlap) <= 1e-9
        for x, y in ((r.ci, base.ci), (r.separation_ci, base.separation_ci)):
            assert abs(x[0] - y[0]) <= 1e-9 and abs(x[1] - y[1]) <= 1e-9, (x, y)


def test_knn_gives_one_answer_through_the_function_the_grid_and_a_shuffled_split(tmp_path):
    """SIB-200 (real), TF-IDF: text_classification, the grid's ``knn`` task and the same test split shuffled agree."""
    from semanscope_nb.data import LabelledSplits
    from semanscope_nb.metrics.classification import text_classification
    from semanscope_nb.runs.grid import run_grid

    tr = read_sib200("en", "train").sample(80, seed=0)
    te = read_sib200("en", "test").sample(40, seed=1)
    kw = dict(ks=(1, 3), n_boot=200, seed=5, logistic=False)
    direct = text_classification(tr.texts, tr.labels, te.texts, te.labels, "tfidf-char", cache=False, **kw)
    assert any(lo < hi for lo, hi in direct.intervals.values())  # intervals with width: the draws matter
    shuffled = te._pick(_perm(len(te), 2).tolist())
    again = text_classification(tr.texts, tr.labels, shuffled.texts, shuffled.labels, "tfidf-char", cache=False, **kw)
    _intervals_agree(again.intervals, direct.intervals)
    assert again.random_baseline == direct.random_baseline
    g = run_grid(["tfidf-char"], [LabelledSplits(tr, shuffled)], tasks=["knn"],
                 params={"knn": {"ks": [1, 3], "n_boot": 200, "seed": 5, "logistic": False}},
                 cache=tmp_path / "c", out_dir=tmp_path / "r", progress=False)
    assert not g.failures, g.failures
    (grid_result,) = g.results.values()
    assert grid_result.accuracy == direct.accuracy
    _intervals_agree(grid_result.intervals, direct.intervals)


def _token_pairs(n_sent: int = 40, per: int = 5, seed: int = 6, *, order: np.ndarray | None = None,
                 vocab: list[tuple[str, str]] | None = None):
    """Aligned tokens of ``n_sent`` sentence pairs, each keyed by its (made-up) texts; ``order``: the corpus lists
    sentence pair ``order[k]`` as its k-th (the same pairs, rows and vectors in another corpus order)."""
    from semanscope_nb.metrics.contextual import TokenPairs

    rng = np.random.default_rng(seed)
    vocab = vocab or [(f"s{i}", f"t{i}") for i in range(12)]
    base = rng.normal(size=(len(vocab), 8))
    pairs = []
    for k in range(n_sent):
        rows = []
        for _ in range(per):
            v = int(rng.integers(len(vocab)))
            rows.append((vocab[v][0], vocab[v][1], base[v] + 0.8 * rng.normal(size=8), base[v] + 0.8 * rng.normal(size=8)))
        pairs.append((item_key(f"source sentence {k}", f"target sentence {k}"), rows))
    order = np.arange(n_sent) if order is None else order
    sent, ws, wt, S, T = [], [], [], [], []
    for new, k in enumerate(order):
        for s, t, x, y in pairs[k][1]:
            sent.append(new)
            ws.append(s)
            wt.append(t)
            S.append(x)
            T.append(y)
    keys = tuple(pairs[k][0] for k in order)
    return TokenPairs("en", "de", np.array(sent), tuple(ws), tuple(wt), np.array(S), np.array(T), {}, keys)


def test_contextual_sense_retrieval_does_not_depend_on_the_corpus_order():
    from semanscope_nb.metrics.contextual import sense_retrieval

    base_pairs = _token_pairs()
    base = sense_retrieval(base_pairs, pool_size=60, ks=(1, 5), n_boot=200, seed=1, max_queries=50)
    assert 0 < base.accuracy[1] < 1
    picked = sorted(base_pairs.sentence_keys[base_pairs.sentence[r]] + base_pairs.source_words[r]
                    for r in base.provenance["query_rows"])
    for s in (0, 1):
        shuffled = _token_pairs(order=_perm(40, s))
        r = sense_retrieval(shuffled, pool_size=60, ks=(1, 5), n_boot=200, seed=1, max_queries=50)
        assert sorted(shuffled.sentence_keys[shuffled.sentence[q]] + shuffled.source_words[q]
                      for q in r.provenance["query_rows"]) == picked  # the same queries, by content
        assert r.accuracy == base.accuracy
        for k in (1, 5):
            assert _close(r.interval[k][0], base.interval[k][0]) and _close(r.interval[k][1], base.interval[k][1])


def test_btsr_items_and_table_do_not_depend_on_the_corpus_order():
    from semanscope_nb.runs.btsr import sense_items, sense_retrieval_table

    # bank/river-like senses: "s0" translates as "t0" or "t1", "t1" also translates "s1" (shared words: hard distractors)
    vocab = [("s0", "t0"), ("s0", "t1"), ("s1", "t1"), ("s1", "t2"), ("s2", "t2"), ("s3", "t3"), ("s3", "t0")]

    class Dictionary:
        pairs = tuple(vocab)

    tp = _token_pairs(60, 4, seed=3, vocab=vocab)
    items = sense_items(tp, Dictionary(), seed=2)
    table, _ = sense_retrieval_table(tp, items, ks=(1, 3), n_boot=150, seed=4)
    assert items.counts["queries"] > 20 and (table["P@1 lo"] < table["P@1 hi"]).all()  # an informative case
    for s in (0, 1):
        shuffled = _token_pairs(60, 4, seed=3, order=_perm(60, s), vocab=vocab)
        again = sense_items(shuffled, Dictionary(), seed=2)
        assert again.query_items == items.query_items and again.pool_items == items.pool_items
        assert (again.gold == items.gold).all() and again.counts == items.counts
        t2, _ = sense_retrieval_table(shuffled, again, ks=(1, 3), n_boot=150, seed=4)
        for col in table.columns:
            for a, b in zip(table[col], t2[col]):
                assert a == b if isinstance(a, str) else _close(float(a), float(b)), (col, a, b)


def test_model_report_draws_follow_the_pairs_keys_real_tatoeba():
    """The report's random pairing, its signal-vs-noise bootstrap, near threshold and paired model test."""
    from semanscope_nb.models.embedding import embed_texts, load_encoder
    from semanscope_nb.runs.model_report import near_threshold_of, paired_model_test, signal_vs_noise

    src, tgt = _distinct_tatoeba(120)
    enc = load_encoder("tfidf-char", [*src, *tgt])
    S = embed_texts(enc, src, language="en", cache=False).astype(np.float64)
    T = embed_texts(enc, tgt, language="de", cache=False).astype(np.float64)
    keys = [item_key(s, t) for s, t in zip(src, tgt)]
    scores = {"a": np.random.default_rng(0).random(120), "b": np.random.default_rng(1).random(120)}
    kw = dict(n_boot=200, seed=3)
    base = signal_vs_noise(S, T, order=key_order(keys), **kw)
    thr = near_threshold_of(T, seed=3, order=key_order(keys))
    table, bands = paired_model_test(scores, n_perm=200, order=key_order(keys), **kw)
    assert base["auc_low"] < base["auc"] < base["auc_high"]
    for s in (0, 1):
        p = _perm(120, s)
        moved_keys = [keys[i] for i in p]
        r = signal_vs_noise(S[p], T[p], order=key_order(moved_keys), **kw)
        for name in ("random_mean", "cohen_d", "auc", "ks_p", "cohen_d_low", "cohen_d_high", "auc_low", "auc_high"):
            assert _close(r[name], base[name]), (name, r[name], base[name])
        assert _close(near_threshold_of(T[p], seed=3, order=key_order(moved_keys)), thr)
        t2, b2 = paired_model_test({m: v[p] for m, v in scores.items()}, n_perm=200, order=key_order(moved_keys), **kw)
        assert b2 == bands and t2.p_value.tolist() == table.p_value.tolist()
        assert all(_close(x, y) for x, y in zip(t2.ci_low.tolist() + t2.ci_high.tolist(), table.ci_low.tolist() + table.ci_high.tolist()))
    moved = signal_vs_noise(S[p], T[p], **kw)  # no order: the pairing follows the rows as given
    assert not _close(moved["random_mean"], base["random_mean"])


def test_annotator_agreement_interval_follows_the_pair_keys_real_bcws():
    from semanscope_nb.metrics.word_similarity import annotator_agreement

    bcws = read_bcws()
    assert bcws.annotators is not None
    keys = bcws.pair_keys()
    base = annotator_agreement(bcws.annotators, n_boot=100, seed=2, keys=keys)
    p = _perm(len(bcws), 4)
    r = annotator_agreement(bcws.annotators[p], n_boot=100, seed=2, keys=[keys[i] for i in p])
    assert _close(r.rho, base.rho) and _close(r.ci.low, base.ci.low) and _close(r.ci.high, base.ci.high)


def test_code_switching_draws_per_text_so_order_and_neighbours_do_not_matter():
    from semanscope_nb.metrics.codeswitch import code_switch

    muse = read_muse_dictionary("en-zh")
    texts = list(dict.fromkeys(read_tatoeba("deu", limit=120).target_texts))[:60]  # real English sentences
    base = code_switch(texts, muse, rate=0.5, seed=3, choice="random")
    assert 0 < base.n_switched < base.n_switchable  # some switched, some not: the draws matter
    switched = dict(zip(texts, base.texts))
    p = _perm(len(texts), 1)
    moved = code_switch([texts[i] for i in p], muse, rate=0.5, seed=3, choice="random")
    assert all(switched[o] == t for o, t in zip(moved.originals, moved.texts))
    alone = code_switch(texts[10:20], muse, rate=0.5, seed=3, choice="random")  # a subset: each text as in the whole
    assert list(alone.texts) == list(base.texts[10:20])
