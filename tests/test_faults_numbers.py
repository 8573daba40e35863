"""Issue 10, "numbers are right or refused": SA, CI, retrieval and CSC at the edges of the number line.

SA values are checked against plain loops written from paper 000's formula
(``tests/reference.py`` for the point estimate, the loops below for bootstrap
resamples and the BCa interval).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from reference import reference_sa
from scipy.special import ndtr, ndtri

import semanscope_nb as snb
from semanscope_nb.metrics import affinity
from semanscope_nb.metrics.affinity import AlignedWords, affinity_of_words

# --------------------------------------------------------------------------- helpers


def _aligned(rows, vec, languages, labels=None):
    """rows[r][l] = list of words; vec[(l, word)] -> vector."""
    vectors, incidence = [], []
    for lang in range(len(languages)):
        uniq = list(dict.fromkeys(w for row in rows for w in row[lang]))
        m = np.zeros((len(rows), len(uniq)))
        for r, row in enumerate(rows):
            for w in row[lang]:
                m[r, uniq.index(w)] = 1
        vectors.append(np.array([vec[(lang, w)] for w in uniq], dtype=float))
        incidence.append(sp.csr_matrix(m))
    labels = labels or [str(i) for i in range(len(rows))]
    return AlignedWords(tuple(languages), tuple(vectors), tuple(incidence), tuple(labels))


def _plain_rows(E):
    """semantic_affinity's arrays as reference_sa's rows / vec (one word per row)."""
    langs = list(E)
    R = len(E[langs[0]])
    rows = [[[i] for _ in langs] for i in range(R)]
    vec = {(k, i): [float(x) for x in E[lang][i]] for k, lang in enumerate(langs) for i in range(R)}
    return rows, vec


def _plain_resample_sa(E, idx):
    """SA (cosine, Euclidean) of one bootstrap resample by plain loops (paper 000, eq. 3 / App. A.1 / A.3).

    Intra: mean over pairs of drawn positions holding different concepts; inter: mean over drawn rows.
    """
    langs = list(E)
    intra_c, intra_e = [], []
    for lang in langs:
        dc, de = [], []
        for i, j in itertools.combinations(range(len(idx)), 2):
            if idx[i] == idx[j]:
                continue
            a, b = E[lang][idx[i]], E[lang][idx[j]]
            dc.append(1.0 - float(a @ b) / (math.sqrt(float(a @ a)) * math.sqrt(float(b @ b))))
            de.append(float((a - b) @ (a - b)))
        intra_c.append(sum(dc) / len(dc))
        intra_e.append(math.sqrt(sum(de) / len(de)))
    inter_c, inter_e = [], []
    for r in idx:
        dc, de = [], []
        for l1, l2 in itertools.combinations(langs, 2):
            a, b = E[l1][r], E[l2][r]
            dc.append(1.0 - float(a @ b) / (math.sqrt(float(a @ a)) * math.sqrt(float(b @ b))))
            de.append(float((a - b) @ (a - b)))
        inter_c.append(sum(dc) / len(dc))
        inter_e.append(math.sqrt(sum(de) / len(de)))
    ic, ie = sum(intra_c) / len(langs), sum(intra_e) / len(langs)
    return ic / (ic + sum(inter_c) / len(idx)), ie / (ie + sum(inter_e) / len(idx))


def _pair(seed, R=40, d=8, noise=0.7):
    rng = np.random.default_rng(seed)
    en = rng.normal(size=(R, d))
    return {"en": en, "zh": en + noise * rng.normal(size=en.shape)}


# --------------------------------------------------------------------------- collapsed and tiny vectors


def test_identical_vectors_give_a_flagged_nan_never_a_crash_or_warning():
    rng = np.random.default_rng(0)
    v = rng.normal(size=6)
    for E in ({"en": np.ones((10, 4)), "zh": np.ones((10, 4))}, {k: np.tile(v, (12, 1)) for k in ("en", "zh", "de")}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning (0/0) either
            r = snb.semantic_affinity(E, n_boot=200, seed=0)
        assert r.diagnostics.collapsed
        assert any("collapsed" in n for n in r.diagnostics.notes)
        for scores in (r.cosine, r.euclidean):
            assert math.isnan(scores.sa) and math.isnan(scores.ci[0]) and math.isnan(scores.sem)
            assert "undefined" in scores.note
        assert r.tier == "undefined"
        assert math.isnan(snb.SAResult.from_dict(r.to_dict()).cosine.sa)


def test_parallel_vectors_have_no_cosine_sa_but_a_correct_euclidean_one():
    rng = np.random.default_rng(1)
    v = rng.normal(size=5)
    E = {k: rng.uniform(0.5, 3.0, size=(15, 1)) * v for k in ("en", "zh")}  # one direction, many lengths
    r = snb.semantic_affinity(E, n_boot=100, seed=0)
    assert math.isnan(r.cosine.sa) and "cosine SA undefined" in r.cosine.note
    ref = reference_sa(*_plain_rows(E))
    assert r.euclidean.sa == pytest.approx(ref["euclidean"]["sa"], rel=1e-9)
    assert 0.0 <= r.euclidean.ci[0] <= r.euclidean.ci[1] <= 1.0


def test_tiny_vectors_are_flagged_collapsed_and_scored_like_the_rescaled_ones():
    E = _pair(2)
    tiny = {k: v * 1e-200 for k, v in E.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = snb.semantic_affinity(tiny, n_boot=300, seed=3)
    assert r.diagnostics.collapsed  # paper App. A.6: max distance < 1e-6
    assert any("collapsed" in n for n in r.diagnostics.notes)
    ref = reference_sa(*_plain_rows(E))
    assert r.cosine.sa == pytest.approx(ref["cosine"]["sa"], rel=1e-9)
    assert r.euclidean.sa == pytest.approx(ref["euclidean"]["sa"], rel=1e-9)
    assert r.euclidean.intra == pytest.approx(ref["euclidean"]["intra"] * 1e-200, rel=1e-9)
    base = snb.semantic_affinity(E, n_boot=300, seed=3)
    assert r.cosine.ci == pytest.approx(base.cosine.ci, rel=1e-9)
    assert r.euclidean.ci == pytest.approx(base.euclidean.ci, rel=1e-9)


# --------------------------------------------------------------------------- magnitudes up to the float range


@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_huge_magnitudes_give_the_same_sa_and_ci_as_the_rescaled_vectors(scale):
    rng = np.random.default_rng(4)
    L = 3
    rows = [[[f"w{r}_{lang}_{a}" for a in range(1 + (r + lang) % 3)] for lang in range(L)] for r in range(25)]
    centre = rng.normal(size=6)
    vec = {}
    for r, row in enumerate(rows):
        concept = rng.normal(size=6)
        for lang in range(L):
            for w in row[lang]:
                vec[(lang, w)] = (centre + concept + 0.6 * rng.normal(size=6)).tolist()
    ref = reference_sa(rows, vec)
    big = {key: [x * scale for x in v] for key, v in vec.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning
        r = affinity_of_words(_aligned(rows, big, ["en", "zh", "de"]), n_boot=300, seed=2)
    base = affinity_of_words(_aligned(rows, vec, ["en", "zh", "de"]), n_boot=300, seed=2)
    for dist, got, want in (("cosine", r.cosine, base.cosine), ("euclidean", r.euclidean, base.euclidean)):
        assert got.sa == pytest.approx(ref[dist]["sa"], rel=1e-9)
        assert got.ci == pytest.approx(want.ci, rel=1e-9)
        assert got.sem == pytest.approx(want.sem, rel=1e-6)
        assert got.ci[0] <= got.sa <= got.ci[1]
    assert r.euclidean.intra == pytest.approx(ref["euclidean"]["intra"] * scale, rel=1e-9)
    assert r.euclidean.inter == pytest.approx(ref["euclidean"]["inter"] * scale, rel=1e-9)
    assert not r.diagnostics.collapsed


def _plain_ranks(src, tgt, metric):
    """Rank of the gold target of every query, by plain loops (ties: lower index first)."""
    ranks = []
    for i, q in enumerate(src):
        d = []
        for c in tgt:
            if metric == "cosine":
                d.append(1.0 - float(q @ c) / (math.sqrt(float(q @ q)) * math.sqrt(float(c @ c))))
            else:
                d.append(math.sqrt(float((q - c) @ (q - c))))
        ranks.append(1 + sum(1 for j, x in enumerate(d) if x < d[i] or (x == d[i] and j < i)))
    return ranks


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("scale", [1e160, 1e-200])
def test_retrieval_is_the_same_at_any_magnitude(metric, scale):
    E = _pair(5, R=60, d=6, noise=0.9)
    want = snb.bitext_retrieval(E["en"], E["zh"], metric=metric, n_boot=200, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = snb.bitext_retrieval(E["en"] * scale, E["zh"] * scale, metric=metric, n_boot=200, seed=1)
    assert got.ranks.tolist() == _plain_ranks(E["en"], E["zh"], metric)
    assert got.reverse.ranks.tolist() == _plain_ranks(E["zh"], E["en"], metric)
    assert got.accuracy == want.accuracy and got.mrr == pytest.approx(want.mrr) and got.f1 == pytest.approx(want.f1)
    assert got.intervals.keys() == want.intervals.keys()
    for name, ci in want.intervals.items():
        assert got.intervals[name] == pytest.approx(ci), name
    if metric == "euclidean":  # distances come back in the vectors' own units
        d = snb.EmbeddingDistances(E["en"] * scale, E["zh"] * scale, metric="euclidean").block(slice(0, 3))
        plain = [[math.sqrt(float((q - c) @ (q - c))) for c in E["zh"]] for q in E["en"][:3]]
        np.testing.assert_allclose(d / scale, plain, rtol=1e-9)


# --------------------------------------------------------------------------- intervals


def _interval_cases():
    """(embeddings, method, confidence, seed): random small spaces, near-identical translations, one outlier row."""
    for case in range(48):  # random, 3-8 concepts
        rng = np.random.default_rng(100 + case)
        R = int(rng.integers(3, 9))
        base = rng.normal(size=(R, 4))
        E = {f"l{k}": base + rng.uniform(0.2, 3.0) * rng.normal(size=base.shape) for k in range(2 + case % 2)}
        yield E, ("percentile", "basic")[case % 2], 0.95, case
    for case in range(8):  # SA near 1: the basic interval 2*sa - q reaches past 1
        rng = np.random.default_rng(200 + case)
        base = rng.normal(size=(8, 4))
        yield {"en": base, "zh": base + 0.02 * rng.normal(size=base.shape)}, "basic", 0.95, case
    rng = np.random.default_rng(0)  # one reversed, far-off translation among 5: resamples without it score ~1,
    base = rng.normal(size=(5, 3))  # so the narrow (20%) percentile interval misses the point estimate
    zh = base + 0.05 * rng.normal(size=(5, 3))
    zh[0] = -30 * base[0]
    yield {"en": base, "zh": zh}, "percentile", 0.2, 0


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_intervals_lie_in_unit_range_and_hold_the_point_or_a_note_says_why():
    seen = {"clean": 0, "left out": 0, "clipped": 0, "does not contain": 0}
    for E, method, confidence, seed in _interval_cases():
        r = snb.semantic_affinity(E, n_boot=300, seed=seed, method=method, confidence=confidence)
        for scores in (r.cosine, r.euclidean):
            lo, hi = scores.ci
            note = getattr(scores, "note", "")
            assert math.isfinite(lo) and math.isfinite(hi), (method, scores)
            assert 0.0 <= lo <= hi <= 1.0, (method, scores)  # inside SA's range, with or without a note
            if not note:
                seen["clean"] += 1
                assert lo <= scores.sa <= hi, (method, scores)
                continue
            assert any(n in note for n in r.diagnostics.notes)  # shown where the CLI and panel show notes
            for kind in ("left out", "clipped", "does not contain"):
                seen[kind] += kind in note
            if "does not contain" in note:
                assert not lo <= scores.sa <= hi
    assert all(seen.values()), seen  # every branch was exercised


def test_resamples_with_an_undefined_sa_are_left_out_and_counted():
    # 3 concepts: 1 resample in 9 draws one row three times -> one word per language -> intra undefined
    E = _pair(6, R=3, d=5)
    r = snb.semantic_affinity(E, n_boot=500, seed=0)
    for scores in (r.cosine, r.euclidean):
        assert 0.0 <= scores.ci[0] <= scores.ci[1] <= 1.0 and math.isfinite(scores.sem), scores
        assert "undefined SA" in scores.note and "left out" in scores.note


def _plain_bca(E, n_boot, seed, confidence):
    """BCa interval (Efron & Tibshirani 14.3 / 15.4) of the plain-loop statistic, resampling concept rows."""
    R = len(next(iter(E.values())))
    idx = np.random.default_rng(seed).integers(0, R, size=(n_boot, R))  # scipy.stats.bootstrap's draws
    boot = np.array([_plain_resample_sa(E, list(row)) for row in idx])  # (B, 2)
    point = np.array(_plain_resample_sa(E, list(range(R))))
    jack = np.array([_plain_resample_sa(E, [r for r in range(R) if r != i]) for i in range(R)])
    out = []
    for k in range(2):
        z0 = ndtri(((boot[:, k] < point[k]).sum() + (boot[:, k] <= point[k]).sum()) / (2 * n_boot))
        u = (R - 1) * (jack[:, k].mean() - jack[:, k])
        a = (u**3).sum() / R**3 / (6 * ((u**2).sum() / R**2) ** 1.5)
        z = ndtri((1 - confidence) / 2)
        q = [ndtr(z0 + (z0 + zz) / (1 - a * (z0 + zz))) for zz in (z, -z)]
        out.append(tuple(float(x) for x in np.quantile(boot[:, k], q)))
    return out, point


def test_bca_matches_a_plain_bca_of_the_plain_loop_statistic():
    E = _pair(7, R=12, d=5, noise=0.8)
    (cos_ci, euc_ci), point = _plain_bca(E, n_boot=400, seed=5, confidence=0.9)
    r = snb.semantic_affinity(E, n_boot=400, seed=5, confidence=0.9, method="BCa")
    assert r.cosine.sa == pytest.approx(point[0], rel=1e-10)
    assert r.cosine.ci == pytest.approx(cos_ci, rel=1e-9)
    assert r.euclidean.ci == pytest.approx(euc_ci, rel=1e-9)
    assert r.provenance["parameters"]["method"] == "BCa"


def test_bca_is_close_to_percentile_on_a_large_sample_and_holds_the_estimate():
    E = _pair(8, R=400, d=16, noise=1.0)
    bca = snb.semantic_affinity(E, n_boot=2000, seed=1, method="BCa")
    pct = snb.semantic_affinity(E, n_boot=2000, seed=1, method="percentile")
    for b, p in ((bca.cosine, pct.cosine), (bca.euclidean, pct.euclidean)):
        width = p.ci[1] - p.ci[0]
        assert b.ci[0] <= b.sa <= b.ci[1] and b.note == ""
        assert abs(b.ci[0] - p.ci[0]) < 0.2 * width and abs(b.ci[1] - p.ci[1]) < 0.2 * width


# --------------------------------------------------------------------------- refused inputs


def test_a_language_with_one_unique_word_is_refused_naming_it():
    rng = np.random.default_rng(9)
    rows = [[[f"e{r}"], ["水"]] for r in range(6)]
    vec = {(0, f"e{r}"): rng.normal(size=4).tolist() for r in range(6)} | {(1, "水"): rng.normal(size=4).tolist()}
    aw = _aligned(rows, vec, ["en", "zh"])
    aw = AlignedWords(aw.languages, aw.vectors, aw.incidence, aw.labels, words=(tuple(f"e{r}" for r in range(6)), ("水",)))
    for n_boot in (0, 100):
        with pytest.raises(snb.EmbeddingError, match=r"language 'zh' has only 1 unique word \('水'\)"):
            affinity_of_words(aw, n_boot=n_boot)


def test_bad_options_are_refused_naming_the_argument():
    E = _pair(10, R=12, d=4)
    zero = {k: v.copy() for k, v in E.items()}
    zero["zh"][3] = 0.0
    bad = [
        (dict(n_boot=1), ValueError, "n_boot"),
        (dict(n_boot=2.5), ValueError, "n_boot"),
        (dict(n_boot="10"), ValueError, "n_boot"),
        (dict(n_boot=True), ValueError, "n_boot"),
        (dict(n_boot=-3), ValueError, "n_boot"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(seed=1.5), ValueError, "seed"),
        (dict(seed="0"), ValueError, "seed"),
        (dict(on_zero="skip"), ValueError, "on_zero"),
        (dict(on_zero=None), ValueError, "on_zero"),
        (dict(confidence="0.9"), ValueError, "confidence"),
        (dict(confidence=1.0), ValueError, "confidence"),
        (dict(method="bootstrap"), ValueError, "method"),
        (dict(batch=0), ValueError, "batch"),
    ]
    for kwargs, exc, name in bad:
        for emb in (E, zero):
            with pytest.raises(exc, match=name):
                snb.semantic_affinity(emb, **{"n_boot": 10, **kwargs})
    # the supported spellings still work: 0 = no bootstrap, integral floats and numpy ints, 'bca' for 'BCa'
    assert math.isnan(snb.semantic_affinity(E, n_boot=0).cosine.ci[0])
    a = snb.semantic_affinity(E, n_boot=np.int64(50), seed=np.int32(3))
    assert a.cosine == snb.semantic_affinity(E, n_boot=50.0, seed=3).cosine
    assert snb.semantic_affinity(E, n_boot=50, method="bca").provenance["parameters"]["method"] == "BCa"


def test_csc_rejects_similarities_outside_the_cosine_range_and_2d_input():
    ok = [0.9, 0.95, 0.97, 0.8]
    for name, args in (("fuzz_sims", ([0.5, 2.0, 0.3], ok)), ("neg_sims", (ok, [0.1, -1.5, 0.3]))):
        with pytest.raises(ValueError, match=rf"{name} holds 1 value\(s\) outside \[-1, 1\]"):
            snb.csc_overlap(*args)
    grid = np.full((3, 3), 0.5) + np.arange(9).reshape(3, 3) / 100
    for name, args in (("fuzz_sims", (grid, ok)), ("neg_sims", (ok, np.array(ok)[:, None]))):
        with pytest.raises(ValueError, match=rf"{name} must be 1-D"):
            snb.csc_overlap(*args)
        with pytest.raises(ValueError, match=rf"{name} must be 1-D"):
            snb.csc_curves(*args)
    with pytest.raises(ValueError, match="fuzz_sims must be a 1-D sequence of numbers"):
        snb.csc_overlap(["a", "b"], ok)
    # rounding just past 1 (a computed cosine) is accepted and clipped
    assert snb.csc_overlap([1.0 + 1e-12, 0.99, 0.98], [1.0 + 1e-12, 0.99, 0.98]) == pytest.approx(1.0)


def _many_alternatives(n_alt, L=6, R=5, seed=11):
    rng = np.random.default_rng(seed)
    rows = [[[f"big{lang}_{a}" for a in range(n_alt)] for lang in range(L)]]
    rows += [[[f"w{r}_{lang}"] for lang in range(L)] for r in range(1, R)]
    vec = {(lang, w): rng.normal(size=4).tolist() for row in rows for lang in range(L) for w in row[lang]}
    labels = ["big"] + [f"c{r}" for r in range(1, R)]
    return _aligned(rows, vec, [f"l{k}" for k in range(L)], labels), rows


def test_rows_with_too_many_tuples_are_refused_before_any_work(monkeypatch):
    aw, rows = _many_alternatives(12)  # 12**6 = 2,985,984 tuples in concept 'big'

    def work_started(*args, **kwargs):
        raise AssertionError("the tuple enumeration started before the row was refused")

    monkeypatch.setattr(affinity, "Spreads", work_started)
    with pytest.raises(snb.DatasetError, match=r"concept 'big' \(row 0\) expands to 2,985,984 translation tuples"):
        affinity_of_words(aw, n_boot=0)
    monkeypatch.undo()
    from semanscope_nb.metrics.affinity import MAX_TUPLES_PER_ROW, check_row_tuples

    assert "MAX_TUPLES_PER_ROW" in affinity.__doc__ and 12**6 > MAX_TUPLES_PER_ROW >= 10_000
    with pytest.raises(snb.DatasetError, match=r"MAX_TUPLES_PER_ROW = 100,000"):
        check_row_tuples(rows, languages=aw.languages, labels=list(aw.labels))
    small, small_rows = _many_alternatives(3)  # 729 tuples: fine, and the count matches the product
    r = affinity_of_words(small, n_boot=0)
    assert r.n_tuples == 3**6 + 4 == check_row_tuples(small_rows, languages=small.languages)
    with pytest.raises(snb.DatasetError, match="729 translation tuples"):
        affinity_of_words(small, n_boot=0, max_tuples_per_row=500)
    for name in ("conceptual-space", "edge-cases"):  # the bundled datasets stay far below the limit
        ds = snb.load_dataset(name)
        assert check_row_tuples(ds.rows, languages=ds.languages) >= len(ds.rows)
