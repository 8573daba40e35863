"""The Euclidean chance level's stopping rule: fewer re-pairings only where its standard error allows.

``euclidean_chance_by_permutation`` draws re-pairings in steps of
``EUCLIDEAN_CHANCE_STEP`` from one seeded generator and stops once the standard
error of the mean SA is at or below ``precision``.  These tests recompute that rule
by hand from the re-pairings' own SAs, check that a stopped estimate lies within
three stated standard errors of the all-``n_perm`` value, and that small data sets
(whose re-pairings vary more) keep every re-pairing and so the same number.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics import chance
from semanscope_nb.metrics.chance import EUCLIDEAN_CHANCE_STEP, euclidean_chance_by_permutation
from semanscope_nb.metrics.spreads import AlignedWords


def not_unit(R: int, d: int, seed: int, L: int = 2) -> AlignedWords:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(R, d))
    vectors = tuple((base + rng.normal(size=(R, d))) * rng.uniform(0.5, 3.0, size=(R, 1)) for _ in range(L))
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(f"l{k}" for k in range(L)), vectors, (eye,) * L, tuple(map(str, range(R))))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_stopped_estimate_is_within_three_stated_standard_errors_of_all_re_pairings(seed):
    aw = not_unit(3000, 6, seed)
    every_sa, every_inter = chance._euclidean_chance_draws(aw, n_perm=100, seed=seed, spreads=None, precision=None)
    assert every_sa.size == 100
    sd = every_sa.std(ddof=1)
    precision = 2 * sd / math.sqrt(16)  # a target this data set meets after a step or two
    got = chance._euclidean_chance_draws(aw, n_perm=100, seed=seed, spreads=None, precision=precision)[0]
    # the rule by hand: the first k re-pairings (the same draws), k the first multiple of the step whose SE meets it
    k = next(k for k in range(EUCLIDEAN_CHANCE_STEP, 101, EUCLIDEAN_CHANCE_STEP)
             if every_sa[:k].std(ddof=1) / math.sqrt(k) <= precision)
    assert got.size == k < 100
    np.testing.assert_allclose(got, every_sa[:k], rtol=1e-12, err_msg="the same seeded re-pairings in the same order")
    sa, _ = euclidean_chance_by_permutation(aw, n_perm=100, seed=seed, precision=precision)
    assert abs(sa - every_sa.mean()) <= 3 * precision, (sa, every_sa.mean(), precision)


def test_few_concepts_keep_every_re_pairing_and_the_same_number():
    aw = not_unit(300, 6, 5, L=3)
    default = euclidean_chance_by_permutation(aw, seed=5)
    everything = euclidean_chance_by_permutation(aw, seed=5, precision=None)
    np.testing.assert_array_equal(default, everything, err_msg="300 concepts: the default precision is not reached before n_perm")
    sas, _ = chance._euclidean_chance_draws(aw, n_perm=100, seed=5, spreads=None, precision=chance.EUCLIDEAN_CHANCE_SE)
    assert sas.size == 100 and sas.std(ddof=1) / 10 > chance.EUCLIDEAN_CHANCE_SE


def test_a_bad_precision_is_named():
    aw = not_unit(20, 4, 6)
    with pytest.raises(ValueError, match="precision"):
        euclidean_chance_by_permutation(aw, precision=0.0)


def step_by_step(aw: AlignedWords, *, n_perm: int, seed: int, precision: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The rule as documented, one step at a time: each re-pairing keeps language 0 and draws ``rng.permutation(R)``
    for every other language in turn; after each step before ``n_perm`` it stops once sd / sqrt(k) <= precision."""
    from semanscope_nb.metrics.spreads import Spreads

    rng = np.random.default_rng(seed)
    R, L = aw.n_rows, len(aw.languages)
    s = Spreads(aw)
    intra = s.spreads(np.ones((1, R)), scaled=True)["intra_euc"][0]
    sas: list[float] = []
    inters: list[float] = []
    step = n_perm if precision is None else EUCLIDEAN_CHANCE_STEP
    while len(sas) < n_perm:
        k = min(step, n_perm - len(sas))
        pairings = [[np.arange(R)] + [rng.permutation(R) for _ in range(L - 1)] for _ in range(k)]
        for inter in s.repaired_inters_euclidean(pairings):
            sas.append(intra / (intra + inter))
            inters.append(math.ldexp(inter, s.exponent))
        if precision is not None and len(sas) < n_perm and np.std(sas, ddof=1) / math.sqrt(len(sas)) <= precision:
            break
    return np.array(sas), np.array(inters)


@pytest.mark.parametrize("chunk_steps", [None, 2, 3])  # None: every re-pairing in one go (the default at 349 concepts)
@pytest.mark.parametrize("stop", [False, True])
def test_re_pairings_drawn_several_steps_at_once_are_those_of_step_by_step_drawing(monkeypatch, chunk_steps, stop):
    aw = not_unit(349, 16, 7, L=3)
    if chunk_steps is not None:  # chunks of a few steps: step ends inside and at the edges of chunks
        monkeypatch.setattr(chance, "EUCLIDEAN_CHANCE_CHUNK_BYTES", 8 * 3 * 349 * EUCLIDEAN_CHANCE_STEP * chunk_steps)
    every = step_by_step(aw, n_perm=100, seed=7, precision=None)[0]
    # a precision met after a few steps (stop) or never (the default at this size): the stopping step must not move
    precision = 1.5 * every.std(ddof=1) / math.sqrt(40) if stop else chance.EUCLIDEAN_CHANCE_SE
    want_sa, want_inter = step_by_step(aw, n_perm=100, seed=7, precision=precision)
    got_sa, got_inter = chance._euclidean_chance_draws(aw, n_perm=100, seed=7, spreads=None, precision=precision)
    assert got_sa.size == want_sa.size and (want_sa.size < 100) == stop, (got_sa.size, want_sa.size)
    # each re-pairing's inter spread is the same element-wise arithmetic on its own row of the batch: equal to the last
    # bit, so rtol = 0 up to one rounding of the final ratio
    eps = np.finfo(np.float64).eps
    np.testing.assert_allclose(got_sa, want_sa, rtol=2 * eps, atol=0, err_msg="the same re-pairings, the same SAs")
    np.testing.assert_allclose(got_inter, want_inter, rtol=2 * eps, atol=0, err_msg="the same inter spreads")
