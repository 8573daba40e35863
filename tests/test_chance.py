"""The chance level, the permutation test, the paired comparison and the per-pair SA against plain loops."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from reference import _sq_dist, reference_sa

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import AlignedWords, Spreads
from semanscope_nb.metrics.artefacts import find_artefacts, language_centred
from semanscope_nb.metrics.chance import (
    NullParts,
    chance_level,
    null_aware_bootstrap,
    null_aware_statistics,
    permutation_test,
    resample_counts,
)
from semanscope_nb.metrics.compare import compare_models, jackknife_pseudo_values, sign_flip_test
from semanscope_nb.metrics.pairs import pair_affinity
from semanscope_nb.runs.evaluate import aligned_words


def _aw(arrays: dict[str, np.ndarray], words=None) -> AlignedWords:
    R = next(iter(arrays.values())).shape[0]
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(arrays), tuple(arrays.values()), tuple(eye for _ in arrays), tuple(map(str, range(R))), words=words)


def _rows_vec(arrays):
    """reference_sa's input for one word per row: rows[r][l] = [word id], vec[(l, word)] = vector."""
    langs = list(arrays)
    R = arrays[langs[0]].shape[0]
    rows = [[[f"w{r}"] for _ in langs] for r in range(R)]
    vec = {(l, f"w{r}"): list(arrays[lang][r]) for l, lang in enumerate(langs) for r in range(R)}
    return rows, vec


def _shuffled_rows(rows, perms):
    return [[rows[perms[l][r]][l] for l in range(len(perms))] for r in range(len(rows))]


# --------------------------------------------------------------------------- the closed form


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("n_lang", [2, 3])
def test_closed_form_null_equals_the_exhaustive_shuffle_average(n_lang):
    rng = np.random.default_rng(n_lang)
    R = 5
    raw = {f"l{k}": rng.normal(size=(R, 4)) + (0.5 if k else 0.0) for k in range(n_lang)}
    # unit vectors: the closed form (sqrt(E[Q]) for the Euclidean inter spread) is the chance level there
    arrays = {k: v / np.linalg.norm(v, axis=1, keepdims=True) for k, v in raw.items()}
    rows, vec = _rows_vec(arrays)
    # plain loops: every re-pairing of languages 1.. (language 0 stays), the paper's inter distance
    inters, sq = [], []
    for perms in itertools.product(itertools.permutations(range(R)), repeat=n_lang - 1):
        shuffled = _shuffled_rows(rows, [tuple(range(R)), *perms])
        inters.append(reference_sa(shuffled, vec)["cosine"]["inter"])
        for row in shuffled:
            q = [_sq_dist(vec[(i, row[i][0])], vec[(j, row[j][0])]) for i in range(n_lang) for j in range(i + 1, n_lang)]
            sq.append(sum(q) / len(q))
    c = chance_level(_aw(arrays))
    assert c.inter_null_cosine == pytest.approx(np.mean(inters), abs=1e-12)
    assert c.inter_null_euclidean == pytest.approx(math.sqrt(np.mean(sq)), rel=1e-10)
    intra = reference_sa(rows, vec)["cosine"]["intra"]
    assert c.sa_null_cosine == pytest.approx(intra / (intra + np.mean(inters)), abs=1e-12)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("n_lang", [2, 3])
def test_euclidean_chance_off_the_unit_sphere_is_the_shuffle_average(n_lang):
    """Vectors that are not unit norm: the Euclidean chance level is a permutation estimate of the exhaustive average."""
    from semanscope_nb.metrics.chance import EUCLIDEAN_CHANCE_PERMUTATIONS

    rng = np.random.default_rng(n_lang)
    R = 5
    arrays = {f"l{k}": rng.normal(size=(R, 4)) * (1 + k) + (0.5 if k else 0.0) for k in range(n_lang)}
    rows, vec = _rows_vec(arrays)
    inters = np.array([reference_sa(_shuffled_rows(rows, [tuple(range(R)), *perms]), vec)["euclidean"]["inter"]
                       for perms in itertools.product(itertools.permutations(range(R)), repeat=n_lang - 1)])
    c = chance_level(_aw(arrays))
    se = inters.std() / math.sqrt(EUCLIDEAN_CHANCE_PERMUTATIONS)  # the estimate averages that many seeded shuffles
    assert abs(c.inter_null_euclidean - inters.mean()) <= 4 * se, (c.inter_null_euclidean, inters.mean(), se)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_closed_form_null_with_alternatives_matches_a_plain_permutation_loop():
    rng = np.random.default_rng(7)
    R, d = 12, 6
    # rows with 1-3 alternatives per language; a shared offset per language so the null is far from 0.5
    rows, vec = [], {}
    for r in range(R):
        row = []
        for l in range(2):
            alts = [f"r{r}l{l}a{a}" for a in range(1 + (r + l) % 3)]
            for w in alts:
                vec[(l, w)] = list(rng.normal(size=d) + (2.0 if l else -1.0))
            row.append(alts)
        rows.append(row)
    ds = snb.dataset_from_frame(pd.DataFrame({"en": ["|".join(r[0]) for r in rows], "de": ["|".join(r[1]) for r in rows]}), name="t")
    vectors = {lang: {w: np.array(vec[(k, w)]) for r in rows for w in r[k]} for k, lang in enumerate(("en", "de"))}
    aw = aligned_words(ds, vectors)
    c = chance_level(aw)
    # plain loop: many random re-pairings of the German rows, the paper's tuple-weighted inter distance
    perm_rng = np.random.default_rng(0)
    inters = [reference_sa(_shuffled_rows(rows, [tuple(range(R)), tuple(perm_rng.permutation(R))]), vec)["cosine"]["inter"]
              for _ in range(1500)]
    se = np.std(inters) / math.sqrt(len(inters))
    # ratio of expectations vs expectation of the ratio: equal up to the sampling error and a small bias
    assert abs(c.inter_null_cosine - np.mean(inters)) < 4 * se + 0.01
    assert abs(c.inter_null_cosine - 1.0) > 0.3  # far from the unshifted 1.0: the language offsets enter the null


def test_null_for_resampled_rows_equals_the_null_of_the_duplicated_dataset():
    rng = np.random.default_rng(3)
    arrays = {"en": rng.normal(size=(4, 5)), "de": rng.normal(size=(4, 5)) + 1.0}
    aw = _aw(arrays)
    counts = np.array([[2.0, 0.0, 1.0, 1.0]])
    spreads = Spreads(aw)
    inter_cos, _ = NullParts(aw, spreads).inter(counts)
    # plain loop: the resample as a dataset of duplicated rows, every re-pairing
    picked = [0, 0, 2, 3]
    rows = [[[f"e{i}"], [f"d{i}"]] for i in picked]
    vec = {**{(0, f"e{i}"): list(arrays["en"][i]) for i in range(4)}, **{(1, f"d{i}"): list(arrays["de"][i]) for i in range(4)}}
    inters = [reference_sa(_shuffled_rows(rows, [tuple(range(4)), p]), vec)["cosine"]["inter"] for p in itertools.permutations(range(4))]
    assert inter_cos[0] == pytest.approx(np.mean(inters), abs=1e-12)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_permutation_test_agrees_with_a_plain_loop_and_the_closed_form():
    rng = np.random.default_rng(11)
    R = 30
    base = rng.normal(size=(R, 8))
    arrays = {"en": base, "de": base + 0.8 * rng.normal(size=(R, 8)) + 0.5}
    aw = _aw(arrays)
    t = permutation_test(aw, n_perm=400, seed=1)
    rows, vec = _rows_vec(arrays)
    ref = reference_sa(rows, vec)["cosine"]
    assert t.sa == pytest.approx(ref["sa"], abs=1e-12)
    loop_rng = np.random.default_rng(5)
    loop = []
    for _ in range(400):
        inter = reference_sa(_shuffled_rows(rows, [tuple(range(R)), tuple(loop_rng.permutation(R))]), vec)["cosine"]["inter"]
        loop.append(ref["intra"] / (ref["intra"] + inter))
    loop = np.array(loop)
    assert t.null_mean == pytest.approx(loop.mean(), abs=4 * loop.std() / math.sqrt(400) + 4 * t.null_sd / math.sqrt(400))
    assert t.null_sd == pytest.approx(loop.std(ddof=1), rel=0.2)
    assert t.p_value == pytest.approx((1 + np.sum(loop >= t.sa)) / 401, abs=0.02)
    assert t.null_mean == pytest.approx(chance_level(aw).sa_null_cosine, abs=3 * t.null_sd / math.sqrt(400) + 0.005)
    assert t.z > 3 and t.p_value < 0.01


def test_permutation_test_is_seeded():
    rng = np.random.default_rng(0)
    aw = _aw({"en": rng.normal(size=(20, 4)), "zh": rng.normal(size=(20, 4))})
    assert permutation_test(aw, n_perm=50, seed=3) == permutation_test(aw, n_perm=50, seed=3)
    with pytest.raises(ValueError, match="seed"):
        permutation_test(aw, n_perm=50, seed=-1)
    with pytest.raises(ValueError, match="n_perm"):
        permutation_test(aw, n_perm=0)


def test_permutation_test_from_the_spreads_centred_grams_equals_the_direct_route():
    """With a Spreads of vectors off the unit sphere the unit Gram matrices come from the centred ones the Euclidean
    chance level uses (x.y = (x-c).(y-c) + (x-c).c + (y-c).c + c.c): each entry is checked against a plain loop of unit
    dot products within its stated bound, and the test's statistics against the direct route (no spreads given)."""
    from semanscope_nb.metrics.chance import unit_grams_from_centred
    from semanscope_nb.metrics.ties import unit_roundoff

    rng = np.random.default_rng(8)
    R, d = 60, 32  # |c| = 1.0 beside a smallest norm of 5.6: r = 0.18
    base = rng.normal(size=(R, d)) * rng.uniform(1.0, 3.0, size=(R, 1))  # norms differ: not the unit sphere
    arrays = {"en": base + 0.05, "de": base + 0.9 * rng.normal(size=(R, d)) + 0.05, "fr": 2 * rng.normal(size=(R, d))}
    aw = _aw(arrays)
    spreads = Spreads(aw)
    got = unit_grams_from_centred(spreads)
    assert got is not None, "small centre, off the sphere: the derived route applies"
    grams, extra = got
    u64 = unit_roundoff(np.float64)
    assert extra < 4 * (d * u64) + 6 * u64 + 1e-15 and extra > 0
    units = [[[x / math.sqrt(sum(y * y for y in row)) for x in row] for row in v.tolist()] for v in arrays.values()]
    for (k, m), G in grams.items():
        plain = np.array([[sum(a * b for a, b in zip(units[k][i], units[m][j])) for j in range(R)] for i in range(R)])
        np.testing.assert_allclose(G, plain, rtol=0, atol=extra + 2 * (d + 2) * u64,
                                   err_msg=f"{k}-{m}: the derived unit Gram within its bound of plain unit dots")
    direct = permutation_test(aw, n_perm=300, seed=2)
    derived = permutation_test(aw, n_perm=300, seed=2, spreads=spreads)
    for key in ("sa", "null_mean", "null_sd", "z"):
        # the inter distances differ by the Gram entries' rounding (<= ~1e-14 at d = 16): relative to values ~0.5
        np.testing.assert_allclose(getattr(derived, key), getattr(direct, key), rtol=1e-9,
                                   err_msg=f"{key}: the same re-pairings, another rounding of the same dot products")
    assert derived.p_value == direct.p_value and derived.n_perm == direct.n_perm, "the decision counts the same re-pairings"


def test_unit_grams_from_centred_declines_a_large_centre_and_the_unit_sphere():
    """A centre beyond a quarter of the smallest norm (the sum would cancel) or unit vectors (no centred Gram matrices
    are made for them): the direct unit product is used."""
    from semanscope_nb.metrics.chance import unit_grams_from_centred

    rng = np.random.default_rng(3)
    far = {"en": rng.normal(size=(20, 8)) + 5.0, "de": rng.normal(size=(20, 8)) + 5.0}
    assert unit_grams_from_centred(Spreads(_aw(far))) is None
    x = rng.normal(size=(2, 20, 8))
    unit = {"en": x[0] / np.linalg.norm(x[0], axis=1, keepdims=True), "de": x[1] / np.linalg.norm(x[1], axis=1, keepdims=True)}
    assert unit_grams_from_centred(Spreads(_aw(unit))) is None
    aw = _aw(far)
    np.testing.assert_allclose(permutation_test(aw, n_perm=100, seed=1, spreads=Spreads(aw)).null_mean,
                               permutation_test(aw, n_perm=100, seed=1).null_mean, rtol=1e-12,
                               err_msg="declined: the direct route whatever the spreads")


def test_words_digest_of_mostly_zero_vectors_tells_every_change_apart():
    """The surface statistics' memo key: equal vectors (another copy) give one digest; moving a non-zero entry,
    changing its value, or a zero turned -0.0 / NaN is told apart or not exactly as the values are (a bit mask and the
    non-zero values)."""
    from semanscope_nb.metrics.chance import _words_digest

    rng = np.random.default_rng(5)
    v = np.zeros((30, 64), dtype=np.float32)
    v[rng.random(v.shape) < 0.05] = 0.5
    aw = _aw({"en": v, "de": v[::-1].copy()})
    same = _words_digest(_aw({"en": v.copy(), "de": v[::-1].copy()})).digest()
    assert _words_digest(aw).digest() == same
    i, j = np.argwhere(v != 0)[0]
    moved = v.copy(); moved[i, j] = 0.0; moved[i, (j + 1) % 64 if v[i, (j + 1) % 64] == 0 else (j + 2) % 64] = 0.5
    valued = v.copy(); valued[i, j] = 0.25
    nan = v.copy(); nan[v == 0] = np.where(np.arange((v == 0).sum()) == 0, np.nan, 0.0)
    negzero = v.copy(); negzero[v == 0] = -0.0
    for other, differs in ((moved, True), (valued, True), (nan, True), (negzero, False)):
        got = _words_digest(_aw({"en": other, "de": v[::-1].copy()})).digest()
        assert (got != same) == differs, f"differs={differs}: {np.argwhere(other != v)[:3].tolist()}"


# --------------------------------------------------------------------------- null-aware bootstrap


def test_resample_counts_are_seeded_multinomial_vectors():
    a = np.concatenate(list(resample_counts(50, 300, seed=4, batch=64)))
    b = np.concatenate(list(resample_counts(50, 300, seed=4, batch=300)))
    assert a.shape == (300, 50) and (a.sum(axis=1) == 50).all()
    assert b.shape == a.shape and (b.sum(axis=1) == 50).all()
    assert np.array_equal(np.concatenate(list(resample_counts(50, 300, seed=4, batch=64))), a)  # same seed, same resamples
    assert not np.array_equal(np.concatenate(list(resample_counts(50, 300, seed=5, batch=64))), a)
    assert abs(a.mean() - 1.0) < 0.02 and abs(a.var() - (1 - 1 / 50)) < 0.1


def _loop_resamples(R: int, B: int, *, seed: int) -> list[list[float]]:
    """The draw rule as plain loops: resample b is the next R draws of integers(0, R) of the seed's generator, counted
    per row."""
    g = np.random.default_rng(seed)
    want = []
    for _ in range(B):
        c = [0.0] * R
        for i in g.integers(0, R, size=R).tolist():
            c[i] += 1.0
        want.append(c)
    return want


def test_resample_counts_are_uniform_row_draws_counted_whatever_the_batch():
    """The draw rule, replicated with plain loops: resample b is the next R draws of integers(0, R), counted per row."""
    R, B = 37, 23  # odd sizes: a batch boundary never falls on a 64-bit word of the generator
    want = _loop_resamples(R, B, seed=11)
    for batch in (1, 2, 5, 22, 23, 100):
        got = np.concatenate(list(resample_counts(R, B, seed=11, batch=batch)))
        assert got.dtype == np.float64 and got.shape == (B, R)
        assert np.array_equal(got, np.array(want)), f"batch {batch}: not the loop's resamples"


def test_resample_counts_drawn_ahead_on_a_free_cpu_are_the_loop_s_resamples(monkeypatch):
    """With a free CPU (a small space's pinned verdict) each next batch is drawn on the pool's thread while the caller
    works on the current one: still one batch after the other from the same generator, so the plain loop's resamples;
    a caller that stops early finds the draw under way ended; no free CPU: every batch drawn in the caller."""
    import threading

    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    from semanscope_nb.metrics import chance, spreads as spreads_module
    from semanscope_nb.metrics.spreads import small_space_blas

    R, B = 37, 23
    want = _loop_resamples(R, B, seed=11)
    drawn_on = []
    real = chance._drawn_counts

    def recorded(*args):
        drawn_on.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(chance, "_drawn_counts", recorded)
    eye = sp.identity(R, format="csr")
    space = AlignedWords(("en", "de"), (np.eye(R, 8), np.eye(R, 8)), (eye, eye), tuple(map(str, range(R))))
    for free in (1, 0):
        monkeypatch.setattr(spreads_module, "_free_cpus", lambda free=free: free)
        drawn_on.clear()
        with threadpool_limits(2, user_api="blas"):
            with small_space_blas(space):
                got = [c for c in resample_counts(R, B, seed=11, batch=5)]
                early = resample_counts(R, B, seed=11, batch=5)
                first = next(early)
                early.close()  # stops early: the second batch may be under way on the other thread
        assert np.array_equal(np.concatenate(got), np.array(want)), f"free CPUs {free}: not the loop's resamples"
        assert np.array_equal(first, np.array(want[:5]))
        here = threading.current_thread().name
        if free:
            assert drawn_on[0] == here and all(name != here for name in drawn_on[1:5]), \
                "the first batch in the caller, the next four on the pool's thread"
        else:
            assert set(drawn_on) == {here}, "no free CPU: every batch in the caller"


def test_null_aware_statistics_match_plain_loops():
    rng = np.random.default_rng(2)
    R = 4
    arrays = {"en": rng.normal(size=(R, 4)), "de": rng.normal(size=(R, 4)) + 0.7, "fr": rng.normal(size=(R, 4))}
    aw = _aw(arrays)
    spreads = Spreads(aw)
    stats = null_aware_statistics(spreads, NullParts(aw, spreads), np.ones((1, R)))
    rows, vec = _rows_vec(arrays)
    ref = reference_sa(rows, vec)["cosine"]
    inters = [reference_sa(_shuffled_rows(rows, [tuple(range(R)), p, q]), vec)["cosine"]["inter"]
              for p in itertools.permutations(range(R)) for q in itertools.permutations(range(R))]
    null = ref["intra"] / (ref["intra"] + np.mean(inters))  # every re-pairing of de and fr: the exact expectation
    assert stats["sa"][0] == pytest.approx(ref["sa"], abs=1e-12)
    assert stats["sa_null"][0] == pytest.approx(null, abs=1e-12)
    assert stats["delta"][0] == pytest.approx(ref["sa"] - null, abs=1e-12)
    assert stats["corrected"][0] == pytest.approx((ref["sa"] - null) / (1 - null), abs=1e-12)


def test_random_vectors_are_indistinguishable_from_chance():
    rng = np.random.default_rng(0)
    aw = _aw({"en": rng.normal(size=(150, 32)), "zh": rng.normal(size=(150, 32)), "de": rng.normal(size=(150, 32))})
    s = null_aware_bootstrap(aw, n_boot=300, seed=0)
    assert s.delta.contains(0.0)
    assert snb.metrics.chance.null_aware_tier("good", s.delta.ci) == "chance"


def test_anisotropic_model_sits_far_above_its_own_low_null():
    # every vector shares a large common direction (as mE5 does): cosines are squeezed, chance is not 0.5
    rng = np.random.default_rng(1)
    base = rng.normal(size=(100, 16))
    common = 6 * np.ones(16)
    aw = _aw({"en": base + common, "de": base + 0.5 * rng.normal(size=base.shape) + common})
    s = null_aware_bootstrap(aw, n_boot=200, seed=0)
    assert s.delta.ci[0] > 0 and s.corrected.value > 0


# --------------------------------------------------------------------------- model versus model


def test_paired_bootstrap_interval_is_the_percentile_of_same_resample_differences():
    rng = np.random.default_rng(5)
    e = rng.normal(size=(40, 8))
    a = _aw({"en": e, "de": e + 0.4 * rng.normal(size=e.shape)})
    b = _aw({"en": e, "de": e + 0.6 * rng.normal(size=e.shape)})
    c = compare_models({"a": a, "b": b}, n_boot=300, n_perm=500, seed=9, score="sa")
    # by hand: one resample at a time, both models on the same resampled concepts
    diffs = []
    for counts in resample_counts(40, 300, seed=9, batch=1):
        sa = [snb.metrics.affinity.affinity_ratio(*(Spreads(aw).spreads(counts)[k][0] for k in ("intra_cos", "inter_cos"))) for aw in (a, b)]
        diffs.append(sa[0] - sa[1])
    row = c.pairs.iloc[0]
    assert row.model_a == "a" and row["diff"] == pytest.approx(c.scores.sa.iloc[0] - c.scores.sa.iloc[1])
    # batch=1 draws the same multinomial stream as the default batch only if numpy's generator is batch-invariant;
    # so compare with the same batch as compare_models used (the default) via the distribution's quantiles
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    assert row.ci_low == pytest.approx(lo, abs=0.03) and row.ci_high == pytest.approx(hi, abs=0.03)
    assert row.ci_low < row["diff"] < row.ci_high


def test_jackknife_pseudo_values_from_plain_loops():
    rng = np.random.default_rng(6)
    arrays = {"en": rng.normal(size=(7, 3)), "de": rng.normal(size=(7, 3))}
    aw = _aw(arrays)
    pv = jackknife_pseudo_values(Spreads(aw))
    rows, vec = _rows_vec(arrays)
    full = reference_sa(rows, vec)["cosine"]["sa"]
    for r in range(7):
        without = reference_sa(rows[:r] + rows[r + 1:], vec)["cosine"]["sa"]
        assert pv[r] == pytest.approx(7 * full - 6 * without, abs=1e-10)


def test_sign_flip_test_from_a_plain_enumeration():
    d = np.array([0.3, -0.1, 0.2, 0.25, 0.05, 0.15])
    # exact two-sided p over all 2^6 sign patterns
    obs = abs(d.mean())
    exact = np.mean([abs(np.mean(np.array(s) * d)) >= obs - 1e-15 for s in itertools.product((-1, 1), repeat=6)])
    p = sign_flip_test(d, n_perm=20000, seed=0)
    assert p == pytest.approx(exact, abs=0.01)


def test_overlapping_intervals_can_still_differ_significantly():
    # two models whose scores share most of their concept-level noise: intervals overlap, the paired test separates
    rng = np.random.default_rng(8)
    e = rng.normal(size=(200, 16))
    noise = rng.normal(size=e.shape)
    a = _aw({"en": e, "de": e + 0.9 * noise})
    b = _aw({"en": e, "de": e + 0.95 * noise})
    c = compare_models({"a": a, "b": b}, n_boot=400, n_perm=2000, seed=0)
    s = c.scores.set_index("model")
    assert s.loc["a", "ci_low"] <= s.loc["b", "ci_high"]  # intervals overlap
    assert bool(c.pairs.significant.iloc[0])
    assert any("overlap" in n for n in c.notes)
    assert c.bands == [["a"], ["b"]]


def test_holm_and_bands_across_three_models():
    rng = np.random.default_rng(9)
    e = rng.normal(size=(120, 8))
    n1 = rng.normal(size=e.shape)
    models = {"m1": _aw({"en": e, "de": e + 0.3 * n1}), "m1b": _aw({"en": e, "de": e + 0.3 * n1 + 1e-4 * rng.normal(size=e.shape)}),
              "m3": _aw({"en": e, "de": rng.normal(size=e.shape)})}
    c = compare_models(models, n_boot=200, n_perm=1000, seed=0)
    assert (c.pairs.p_holm >= c.pairs.p_value).all()
    assert c.band_of("m3") == 2 and c.band_of("m1") == c.band_of("m1b") == 1
    with pytest.raises(ValueError, match="same concepts"):
        compare_models({"x": models["m1"], "y": _aw({"en": e[:50], "de": e[:50]})}, n_boot=10)


# --------------------------------------------------------------------------- per language pair and artefacts


def test_pair_affinity_matches_plain_loops_per_pair():
    rng = np.random.default_rng(10)
    e = rng.normal(size=(25, 6))
    arrays = {"en": e, "de": e + 0.3 * rng.normal(size=e.shape), "zh": rng.normal(size=e.shape)}
    df = pair_affinity(_aw(arrays), n_boot=200, seed=0).table
    assert len(df) == 3
    for r in df.itertuples():
        two = {r.language_a: arrays[r.language_a], r.language_b: arrays[r.language_b]}
        rows, vec = _rows_vec(two)
        assert r.sa == pytest.approx(reference_sa(rows, vec)["cosine"]["sa"], abs=1e-12)
        u = [two[k] / np.linalg.norm(two[k], axis=1)[:, None] for k in two]
        null_inter = 1 - u[0].mean(axis=0) @ u[1].mean(axis=0)
        intra = reference_sa(rows, vec)["cosine"]["intra"]
        assert r.sa_null == pytest.approx(intra / (intra + null_inter), abs=1e-12)
    v = df.set_index(["language_a", "language_b"]).verdict
    assert v[("en", "de")] in ("good", "great") and v[("en", "zh")] == "chance"


def test_artefacts_identical_strings_and_degenerate_vectors():
    rng = np.random.default_rng(0)
    R = 6
    en = rng.normal(size=(R, 4))
    zh = rng.normal(size=(R, 4))
    zh[3] = zh[4] = zh[5]  # a tokenizer's <unk>: three distinct words, one vector
    words = (("Paris", "dog", "cat", "a", "b", "c"), ("Paris", "狗", "猫", "鿰", "鿱", "鿲"))
    aw = _aw({"en": en, "zh": zh}, words=words)
    art = find_artefacts(aw)
    assert art.identical_rows.tolist() == [True, False, False, False, False, False]
    assert art.degenerate == {"zh": [("鿰", "鿱", "鿲")]}
    assert art.degenerate_rows.tolist() == [False, False, False, True, True, True]
    notes = art.notes()
    assert any("surface identity" in n and "1 of 6" in n for n in notes) and any("'zh'" in n and "3 distinct" in n for n in notes)


def test_degenerate_groups_match_a_plain_pairwise_loop_across_blocks_and_hash_collisions(monkeypatch):
    from semanscope_nb.metrics import artefacts

    rng = np.random.default_rng(7)
    n, tol = 300, 1e-6
    v = rng.normal(size=(n, 5))
    v[[40, 170, 299]] = v[3]  # one group spanning the whole list
    v[[60, 61]] = 2.5 * v[59]  # same direction, other length: the same unit vector
    v[80] = v[81] + 1e-12  # agrees far below tol
    v[120] = 0.0  # a zero row (NaN unit) pairs with nothing but another zero row
    # two vectors 1e-12 apart whose unit coordinate sits on a rounding-grid border (k + 1/2) * tol: a grid would split
    # them; the rule (max abs difference <= tol) does not
    u = v[200] / np.linalg.norm(v[200])
    k = np.floor(u[0] / tol)
    u[0] = (k + 0.5) * tol
    v[200] = u
    v[201] = u.copy()
    v[201][0] += 1e-12
    v[[250, 251]] = rng.normal(size=5)  # placed below, then moved 0.9 tol and 0.9 tol more: a chain, one group
    v[251] = v[250] / np.linalg.norm(v[250])
    v[250] = v[251].copy()
    v[250][1] -= 0.9 * tol
    v[252] = v[251].copy()
    v[252][1] += 0.9 * tol
    words = tuple(f"w{i}" for i in range(n))
    aw = _aw({"en": v, "de": rng.normal(size=(n, 5))}, words=(words, tuple(f"d{i}" for i in range(n))))

    def plain():  # every pair of rows from the definition, then connected components by repeated merging
        units = [r / np.linalg.norm(r) if np.linalg.norm(r) else np.zeros_like(r) for r in v]
        group = list(range(n))
        for i in range(n):
            for j in range(i + 1, n):
                if max(abs(a - b) for a, b in zip(units[i], units[j])) <= tol:
                    gi, gj = group[i], group[j]
                    group = [gi if g == gj else g for g in group]
        out = {}
        for i in range(n):
            out.setdefault(group[i], []).append(words[i])
        return sorted(tuple(g) for g in out.values() if len(g) > 1)

    want = plain()
    assert ("w200", "w201") in want and ("w250", "w251", "w252") in want and len(want) == 5
    assert sorted(artefacts.degenerate_vector_groups(aw, tol=tol)["en"]) == want
    monkeypatch.setattr(artefacts, "_PAIR_BLOCK", 3)  # candidate pairs compared a few at a time
    assert sorted(artefacts.degenerate_vector_groups(aw, tol=tol)["en"]) == want


def test_language_centring_removes_a_constant_offset():
    rng = np.random.default_rng(4)
    e = rng.normal(size=(60, 8))
    aw = _aw({"en": e + 5.0, "de": e + 0.2 * rng.normal(size=e.shape) - 5.0})
    centred = language_centred(aw)
    for k, v in enumerate(centred.vectors):
        assert np.allclose(v.mean(axis=0), 0.0)
    raw = snb.metrics.affinity.affinity_of_words(aw, n_boot=0).cosine.sa
    cen = snb.metrics.affinity.affinity_of_words(centred, n_boot=0).cosine.sa
    assert cen > raw + 0.1



def test_language_centred_sa_of_one_word_rows_matches_plain_loops_and_the_spreads_route(monkeypatch):
    """The language-centred SA of one word per row (no second Spreads) equals the paper's formula by plain loops on the
    centred vectors and the Spreads route it replaces (3 languages, an offset per language)."""
    from semanscope_nb.metrics import affinity

    rng = np.random.default_rng(12)
    R, d = 25, 6
    e = rng.normal(size=(R, d))
    arrays = {"en": e + 3.0, "de": e + 0.7 * rng.normal(size=(R, d)) - 2.0, "fr": e + rng.normal(size=(R, d)) + 1.0}
    aw = _aw(arrays)
    got = affinity._language_centred_sa(aw, block=8192)
    centred = {lang: v - v.mean(axis=0) for lang, v in arrays.items()}
    rows, vec = _rows_vec(centred)
    ref = reference_sa(rows, vec)["cosine"]["sa"]
    np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg="the paper's formula on the centred vectors")
    monkeypatch.setattr(affinity.Spreads, "point_cosines", staticmethod(lambda vectors, incidence=None: None))  # the Spreads route
    np.testing.assert_allclose(got, affinity._language_centred_sa(aw, block=8192), rtol=1e-13,
                               err_msg="the same sums in another order")


def test_tier_flip_rate_counts_tiers_resample_by_resample():
    """The vectorised flip rate equals asking TierThresholds.classify of every resample's SA (and a subclass is asked)."""
    rng = np.random.default_rng(8)
    R = 40
    eye = sp.identity(R, format="csr")
    en = rng.normal(size=(R, 6))
    aw = AlignedWords(("en", "de"), (en, en + 0.9 * rng.normal(size=(R, 6))), (eye, eye), tuple(map(str, range(R))))
    th = snb.metrics.TierThresholds(great=0.815, good=0.55)  # the point SA is about 0.814: resamples fall on both sides
    dist: dict = {}
    got = null_aware_bootstrap(aw, n_boot=300, seed=3, thresholds=th, distributions=dist)
    base = th.classify(got.sa.value)
    want = sum(th.classify(float(v)) != base for v in dist["sa"]) / len(dist["sa"])
    assert 0.0 < want < 1.0, "the data must straddle a threshold for the check to bite"
    assert got.tier_flip_rate == pytest.approx(want, abs=0), "one share of resamples, counted two ways"

    class Never(snb.metrics.TierThresholds):
        def classify(self, sa: float) -> str:
            return "same"

    assert null_aware_bootstrap(aw, n_boot=300, seed=3, thresholds=Never(great=0.815, good=0.55)).tier_flip_rate == 0.0


def test_language_centred_is_the_scaled_route_bit_for_bit():
    """In the normal range the mean is removed directly; it gives the bits of the exact power-of-two route."""
    g = np.random.default_rng(0)
    eye = sp.identity(60, format="csr")
    for scale in (1.0, 1e-30, 1e30, 3e-7, 1e300):
        x = [g.normal(size=(60, 7)) * scale, g.random((60, 7)) * scale]
        aw = AlignedWords(("a", "b"), tuple(x), (eye, eye), tuple(map(str, range(60))))
        for v, got in zip(x, language_centred(aw).vectors):
            e = int(np.frexp(np.abs(v).max())[1])
            xs = np.ldexp(v, -e)
            want = np.ldexp(xs - xs.mean(axis=0), e)
            assert np.isfinite(got).all() and np.array_equal(got, want), f"scale {scale}"


def test_percentile_and_scipy_routes_draw_the_same_resamples():
    """resample_counts' rule is scipy.stats.bootstrap's (integers(0, R) per resample from the same generator):
    method='percentile' (counts) and method='basic' (scipy's index arrays) bootstrap the very same resamples."""
    g = np.random.default_rng(0)
    e = g.normal(size=(57, 8))
    E = {"en": e, "de": e + g.normal(size=e.shape)}
    pct = snb.semantic_affinity(E, n_boot=300, seed=4, method="percentile", batch=64)
    basic = snb.semantic_affinity(E, n_boot=300, seed=4, method="basic", batch=77)
    for key in ("cosine", "euclidean"):
        a, b = getattr(pct, key), getattr(basic, key)
        np.testing.assert_allclose([a.sem, a.boot_mean], [b.sem, b.boot_mean], rtol=1e-12,
                                   err_msg=f"{key}: one draw rule, so one bootstrap distribution")


def test_the_chunk_of_re_pairings_grows_only_when_the_gram_matrices_leave_the_cache(monkeypatch):
    """Gram matrices beyond PERMUTATION_HOT_GRAM_BYTES (USE's artefact-free conceptual-space: 15 of 784 KB) are read
    back from memory by every chunk of re-pairings: the chunks then grow to PERMUTATION_CHUNK_BYTES of indices -- the
    same draws, inter distances and p-value to the last bit as chunks of PERMUTATION_CHUNK (and as one chunk), with
    alternatives (tuple weights) and without."""
    from semanscope_nb.metrics import chance

    assert chance.repairing_chunk(349, 2) == chance.PERMUTATION_CHUNK, "one 975 KB Gram matrix stays in cache"
    assert chance.repairing_chunk(313, 6) == chance.PERMUTATION_CHUNK_BYTES // (8 * 313) > chance.PERMUTATION_CHUNK
    assert chance.repairing_chunk(10**6, 2) == chance.PERMUTATION_CHUNK, "never fewer than PERMUTATION_CHUNK"
    rng = np.random.default_rng(21)
    R, n_perm = 40, 300
    base = rng.normal(size=(R, 5))
    arrays = {lang: base + s * rng.normal(size=(R, 5)) for lang, s in (("en", 0.0), ("de", 0.8), ("fr", 1.0), ("es", 1.2))}
    two = sp.csr_matrix(np.c_[np.eye(R), np.eye(R)[:, ::-1]][:, : R + 3])  # the last 3 rows: a second word
    with_alternatives = AlignedWords(("en", "de"), (rng.normal(size=(R + 3, 5)), rng.normal(size=(R, 5))),
                                     (two, sp.identity(R, format="csr")), tuple(map(str, range(R))))
    for aw in (_aw(arrays), with_alternatives):
        L = len(aw.languages)
        runs = {}
        for name, hot, chunk_bytes in (("chunks of 64", 2**40, 1), ("grown", 0, 8 * R * 64 + 8 * R * 37),
                                        ("one chunk", 0, 8 * R * n_perm)):
            monkeypatch.setattr(chance, "PERMUTATION_HOT_GRAM_BYTES", hot)
            monkeypatch.setattr(chance, "PERMUTATION_CHUNK_BYTES", chunk_bytes)
            assert chance.repairing_chunk(R, L) == {"chunks of 64": 64, "grown": 101, "one chunk": n_perm}[name]
            chance._REPAIRINGS.clear()  # drawn afresh in this chunk size
            runs[name] = permutation_test(aw, n_perm=n_perm, seed=5)
        ref = runs["chunks of 64"]
        for name, got in runs.items():
            assert (got.p_value, got.n_perm, got.exact) == (ref.p_value, ref.n_perm, ref.exact), name
            np.testing.assert_allclose([got.null_mean, got.null_sd, got.z], [ref.null_mean, ref.null_sd, ref.z], rtol=1e-15,
                                       err_msg=f"{name}: each re-pairing's inter distance is its own row's arithmetic")


@pytest.mark.parametrize("chunk", [7, 25, 256])
def test_permutation_test_drawn_in_chunks_equals_one_draw_and_a_plain_loop(monkeypatch, chunk):
    """Re-pairings drawn PERMUTATION_CHUNK at a time are the draws of rng.permutation(R), lane by lane, whatever the chunk:
    the null statistics equal a plain loop over those draws (reference_sa: sums over pairs and tuples), and the p-value
    (a decision: counted re-pairings) equals that of one chunk holding every draw exactly."""
    from semanscope_nb.metrics import chance

    rng = np.random.default_rng(12)
    R, n_perm = 25, 60
    base = rng.normal(size=(R, 6))
    arrays = {"en": base, "de": base + 0.9 * rng.normal(size=(R, 6)), "fr": base + 1.1 * rng.normal(size=(R, 6))}
    aw = _aw(arrays)
    monkeypatch.setattr(chance, "PERMUTATION_CHUNK", n_perm)
    whole = permutation_test(aw, n_perm=n_perm, seed=4)
    monkeypatch.setattr(chance, "PERMUTATION_CHUNK", chunk)
    got = permutation_test(aw, n_perm=n_perm, seed=4)
    rows, vec = _rows_vec(arrays)
    ref = reference_sa(rows, vec)["cosine"]
    loop_rng = np.random.default_rng(4)
    loop = np.array([ref["intra"] / (ref["intra"] + reference_sa(
        _shuffled_rows(rows, [tuple(range(R))] + [tuple(loop_rng.permutation(R)) for _ in range(2)]), vec)["cosine"]["inter"])
        for _ in range(n_perm)])
    # Gram gathers against plain loops of d = 6 products: the same dot products rounded apart by ~1e-16 each
    np.testing.assert_allclose([got.null_mean, got.null_sd], [loop.mean(), loop.std(ddof=1)], rtol=1e-12,
                               err_msg="the chunked draws are the plain loop's rng.permutation draws")
    assert (got.p_value, got.n_perm, got.exact) == (whole.p_value, whole.n_perm, whole.exact)
    np.testing.assert_allclose([got.null_mean, got.null_sd, got.z], [whole.null_mean, whole.null_sd, whole.z], rtol=1e-15,
                               err_msg="each re-pairing's inter distance is its own row's arithmetic, whatever the chunk")
