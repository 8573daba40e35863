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
