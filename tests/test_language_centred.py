"""The language-centred SA of sparse (TF-IDF) words from sparse algebra (issue 21), against plain loops and the dense route."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import _language_centred_sa
from semanscope_nb.metrics.artefacts import language_centred, language_centred_cosines
from semanscope_nb.metrics.spreads import AlignedWords, Spreads
from semanscope_nb.runs.task_library import aligned_words

# sums of a few hundred O(1) terms, each with a few roundings; the sparse route's terms are bounded by
# sqrt(LANGUAGE_CENTRED_KAPPA) times the dense ones: 1e-12 leaves a wide margin over the ~1e-15 seen
RTOL = 1e-12


def _loops(aw: AlignedWords) -> tuple[float, float]:
    """Paper 000's cosine D_intra and D_inter of the language-centred words, pair by pair and tuple by tuple."""
    units = []
    for v in aw.vectors:
        x = np.asarray(v, dtype=np.float64)
        mean = [sum(x[k, j] for k in range(x.shape[0])) / x.shape[0] for j in range(x.shape[1])]
        c = x - np.array(mean)
        units.append([row / math.sqrt(sum(t * t for t in row)) for row in c])
    intra = []
    for u in units:
        pairs = [1.0 - float(u[a] @ u[b]) for a, b in itertools.combinations(range(len(u)), 2)]
        intra.append(sum(pairs) / len(pairs))
    dists = []
    for r in range(aw.n_rows):
        alts = [list(inc[r].indices) for inc in aw.incidence]
        for t in itertools.product(*alts):
            pair = [1.0 - float(units[i][t[i]] @ units[j][t[j]]) for i, j in itertools.combinations(range(len(t)), 2)]
            dists.append(sum(pair) / len(pair))
    return sum(intra) / len(intra), sum(dists) / len(dists)


def _random_aw(seed: int, n_rows: int = 30, dims: int = 2048) -> AlignedWords:
    rng = np.random.default_rng(seed)
    vectors, incs = [], []
    for lang in range(3):
        n = n_rows + lang  # some rows hold two alternatives; a word may sit in two rows
        vectors.append(np.where(rng.random((n, dims)) < 0.01, rng.random((n, dims)), 0.0).astype(np.float32))
        rows, cols = list(range(n_rows)), list(range(n_rows))
        for extra in range(n_rows, n):
            rows.append(int(rng.integers(n_rows)))
            cols.append(extra)
        if lang == 2:
            rows.append(0)
            cols.append(1)  # word 1 also in row 0
        incs.append(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_rows, n)))
    return AlignedWords(("en", "de", "fr"), tuple(vectors), tuple(incs), tuple(f"c{i}" for i in range(n_rows)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparse_algebra_equals_the_paper_loops_and_the_dense_route(seed):
    aw = _random_aw(seed)
    got = language_centred_cosines(aw)
    assert got is not None, "sparse words: the sparse route is taken"
    want = _loops(aw)
    np.testing.assert_allclose(got, want, rtol=RTOL, err_msg="D_intra, D_inter: algebra vs pair/tuple loops")
    s = Spreads(language_centred(aw), stack_limit=0).spreads(np.ones((1, aw.n_rows)), scaled=True)
    np.testing.assert_allclose(got, (s["intra_cos"][0], s["inter_cos"][0]), rtol=RTOL,
                               err_msg="the dense route the diagnostic took before")


def test_real_tfidf_words_give_the_dense_routes_sa():
    full = snb.load_dataset("edge-cases")
    # tfidf-word needs every language for a vocabulary past SPARSE_MIN_DIMS (fewer columns: the dense route)
    for model, ds in (("tfidf-char", full.select(["en", "zh", "de"])), ("tfidf-word", full)):
        aw = aligned_words(snb.embed(ds, model, cache=False, progress=False))
        assert language_centred_cosines(aw) is not None, f"{model}: sparse words, the sparse route"
        centred = language_centred(aw)
        s = Spreads(centred, stack_limit=0).spreads(np.ones((1, aw.n_rows)), scaled=True)
        dense = float(s["intra_cos"][0] / (s["intra_cos"][0] + s["inter_cos"][0]))
        np.testing.assert_allclose(_language_centred_sa(aw, block=8192), dense, rtol=RTOL,
                                   err_msg=f"{model}: language-centred SA, sparse algebra vs dense centred rows")


def test_the_dense_route_is_kept_where_the_algebra_does_not_apply():
    aw = _random_aw(3)
    dense = AlignedWords(aw.languages, tuple(np.random.default_rng(0).random(v.shape) for v in aw.vectors),
                         aw.incidence, aw.labels)
    assert language_centred_cosines(dense) is None, "dense words: the dense route"
    one_word = AlignedWords(aw.languages[:2], (aw.vectors[0][:1], aw.vectors[1][:1]),
                            (sp.identity(1, format="csr"),) * 2, ("a",))
    assert language_centred_cosines(one_word) is None
    at_mean = [v.copy() for v in aw.vectors]
    at_mean[0][:] = at_mean[0][0]  # every word of a language at its mean: no direction
    flat = AlignedWords(aw.languages, tuple(at_mean), aw.incidence, aw.labels)
    assert language_centred_cosines(flat) is None, "the cancellation check hands it to the dense route"
    assert math.isnan(_language_centred_sa(flat, block=8192)), "which calls the diagnostic undefined, as before"
    huge = AlignedWords(aw.languages, tuple(v.astype(np.float64) * 1e300 for v in aw.vectors), aw.incidence, aw.labels)
    assert language_centred_cosines(huge) is None, "coordinates past 2**400: the dense route's exact scaling"


def _dense_aw(seed: int, n_rows: int = 24, dims: int = 16) -> AlignedWords:
    """Dense words (a model's) with the incidence of :func:`_random_aw`: alternatives and a word shared by two rows."""
    shape = _random_aw(seed, n_rows=n_rows, dims=dims)
    rng = np.random.default_rng(100 + seed)
    base = rng.normal(size=(max(v.shape[0] for v in shape.vectors), dims))
    vectors = tuple((base[: v.shape[0]] + 0.6 * rng.normal(size=v.shape) + 0.8 * k).astype(np.float32)  # a language offset
                    for k, v in enumerate(shape.vectors))
    return AlignedWords(shape.languages, vectors, shape.incidence, shape.labels)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_words_with_alternatives_take_the_closed_form_equal_to_the_loops_and_the_spreads(seed, monkeypatch):
    """Issue 21: a data set's dense words (alternatives, shared words) no longer build a second Spreads for one point."""
    from semanscope_nb.metrics import affinity

    aw = _dense_aw(seed)
    intra, inter = _loops(language_centred(aw))  # the loops centre again: a no-op on centred words, to rounding
    s = Spreads(language_centred(aw), stack_limit=0).spreads(np.ones((1, aw.n_rows)), scaled=True)
    built = []
    real_init = Spreads.__init__
    monkeypatch.setattr(affinity.Spreads, "__init__", lambda self, *a, **kw: built.append(a) or real_init(self, *a, **kw))
    got = _language_centred_sa(aw, block=8192)
    assert not built, "the closed form, not a second Spreads"
    np.testing.assert_allclose(got, intra / (intra + inter), rtol=RTOL, err_msg="closed form vs pair/tuple loops")
    np.testing.assert_allclose(got, s["intra_cos"][0] / (s["intra_cos"][0] + s["inter_cos"][0]), rtol=RTOL,
                               err_msg="closed form vs the Spreads route the diagnostic took before")
    # one word per row but a word shared by two rows (not an identity incidence): the gathered route
    R = aw.n_rows
    shared = np.eye(R)[:, : R - 1]
    shared[R - 1, R - 2] = 1.0  # the last row holds the word of the row before it
    inc = [sp.identity(R, format="csr"), sp.identity(R, format="csr"), sp.csr_matrix(shared)]
    one = AlignedWords(aw.languages, tuple(v[: m.shape[1]] for v, m in zip(aw.vectors, inc)), tuple(inc), aw.labels)
    intra, inter = _loops(language_centred(one))
    np.testing.assert_allclose(_language_centred_sa(one, block=8192), intra / (intra + inter), rtol=RTOL,
                               err_msg="one word per row, a shared word: gathered unit rows vs loops")
    assert not built


def test_the_closed_form_hands_unusual_incidences_and_magnitudes_to_the_spreads(monkeypatch):
    aw = _dense_aw(4)
    c = language_centred(aw)
    weighted = list(c.incidence)
    weighted[0] = weighted[0] * 2.0  # not a 0/1 incidence
    assert Spreads.point_cosines(c.vectors, weighted) is None
    tiny = [v * 1e-300 for v in c.vectors]  # squared norms below float64's normal range
    assert Spreads.point_cosines(tiny, c.incidence) is None
    huge = AlignedWords(aw.languages, tuple(v.astype(np.float64) * 1e200 for v in aw.vectors), aw.incidence, aw.labels)
    s = Spreads(language_centred(huge), stack_limit=0).spreads(np.ones((1, aw.n_rows)), scaled=True)
    np.testing.assert_allclose(_language_centred_sa(huge, block=8192), s["intra_cos"][0] / (s["intra_cos"][0] + s["inter_cos"][0]),
                               rtol=RTOL, err_msg="1e200: the Spreads route with its scaling")


@pytest.mark.parametrize("L", [2, 3, 5])
def test_point_cosines_of_one_word_per_row_match_plain_loops_and_the_unit_row_route(L):
    """One word per row in every language: ``Spreads.point_cosines`` takes each row's pair dots as ``x_k . x_l / (|x_k|
    |x_l|)`` (one row-dot per pair, no unit rows formed).  Against plain loops over the unit rows, and the route through
    the unit rows (any incidence: an identity incidence written with a duplicate-free permutation gathers the same rows).

    Bound: each pair's dot of unit rows is a sum of d products of numbers of magnitude <= 1 with two divisions and a
    square root per norm: within (d + 8) u of the exact value in either computation; D_inter is the mean of 1 - the mean
    of K such dots, so the routes and the loop agree to 2 (d + 8) u absolutely (|dot| <= 1)."""
    rng = np.random.default_rng(40 + L)
    R, d = 37, 64
    xs = [rng.normal(size=(R, d)) * rng.uniform(0.5, 3.0, size=(R, 1)) + 0.2 for _ in range(L)]
    eye = sp.identity(R, format="csr")
    fast = Spreads.point_cosines(xs)
    with_eye = Spreads.point_cosines(xs, [eye] * L)
    perm = rng.permutation(R)  # row r holds word perm[r]: not one word per row in order, so the unit-row route
    moved = [x[np.argsort(perm)] for x in xs]  # ... on words reordered so that row r still holds the same vector
    gathered = sp.csr_matrix((np.ones(R), perm, np.arange(R + 1)), shape=(R, R))
    general = Spreads.point_cosines(moved, [gathered] * L)
    units = [[row / math.sqrt(sum(t * t for t in row)) for row in x] for x in xs]
    pairs = list(itertools.combinations(range(L), 2))
    inter = sum(sum(1.0 - sum(a * b for a, b in zip(units[i][r], units[j][r])) for i, j in pairs) / len(pairs)
                for r in range(R)) / R
    bound = 2 * (d + 8) * np.finfo(np.float64).eps / 2
    assert fast == with_eye, "None and an identity incidence: the same route"
    np.testing.assert_allclose(fast[1], inter, rtol=0, atol=bound, err_msg="D_inter within 2 (d + 8) u of plain loops")
    np.testing.assert_allclose(fast[1], general[1], rtol=0, atol=bound, err_msg="D_inter: the unit-row route, to rounding")
    np.testing.assert_allclose(fast[0], general[0], rtol=0, atol=bound, err_msg="D_intra: the same arithmetic up to the "
                               "word order of the sums")
