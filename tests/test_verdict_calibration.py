"""The verdict's "above chance" gate: the bootstrap interval AND the permutation p-value (issue 19's calibration).

The rule (README "Above chance is decided on the concepts left", ``metrics.chance.above_chance_gate``):
above chance needs the lower end of the gap's interval above 0 *and* the seeded permutation test's
one-sided p below ``(1 - confidence) / 2``.  The bootstrap alone is liberal on random data;
``bench/bench_verdict_calibration.py`` measures both rates on 1,000 seeds.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics.affinity import SAResult, affinity_of_words
from semanscope_nb.metrics.chance import (
    ABOVE_CHANCE,
    BELOW_CHANCE_TIER,
    CHANCE_TIER,
    UNCONFIRMED_BY_PERMUTATION,
    above_chance_gate,
)
from semanscope_nb.metrics.spreads import AlignedWords


def _aw(arrays: list[np.ndarray]) -> AlignedWords:
    R = arrays[0].shape[0]
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(f"l{k}" for k in range(len(arrays))), tuple(arrays), (eye,) * len(arrays),
                        tuple(map(str, range(R))))


def _random(seed: int, n_concepts: int, n_languages: int, dims: int) -> AlignedWords:
    rng = np.random.default_rng(seed)
    return _aw([rng.normal(size=(n_concepts, dims)) for _ in range(n_languages)])


def _reference_gate(lo: float, hi: float, p: float | None, confidence: float) -> str:
    """The documented rule, written out plainly."""
    if lo <= 0.0 <= hi:
        return "chance"
    if hi < 0.0:
        return "below chance"
    if p is None:
        return "above chance"
    return "above chance" if p < (1.0 - confidence) / 2.0 else "unconfirmed by permutation"


@pytest.mark.parametrize("lo, hi", [(0.01, 0.05), (-0.01, 0.05), (0.0, 0.05), (-0.05, -0.01), (-0.05, 0.0)])
@pytest.mark.parametrize("p", [None, 0.001, 0.0249, 0.025, 0.04, 0.5, math.nan])
@pytest.mark.parametrize("confidence", [0.95, 0.90])
def test_the_gate_is_the_documented_rule(lo, hi, p, confidence):
    expected = _reference_gate(lo, hi, p, confidence)
    assert above_chance_gate((lo, hi), p_value=p, confidence=confidence) == expected
    assert {ABOVE_CHANCE, CHANCE_TIER, BELOW_CHANCE_TIER, UNCONFIRMED_BY_PERMUTATION} >= {expected}


def _reference_permutation_p(aw: AlignedWords, n_perm: int, seed: int) -> float:
    """Two languages, one word per cell: the Monte Carlo p by plain loops, drawing the shuffles as the package does."""
    a, b = (np.asarray(v, dtype=np.float64) for v in aw.vectors)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    R = a.shape[0]

    def intra(x: np.ndarray) -> float:
        d = [1.0 - float(x[i] @ x[j]) for i in range(R) for j in range(i + 1, R)]
        return sum(d) / len(d)

    d_intra = (intra(a) + intra(b)) / 2

    def sa(order: np.ndarray) -> float:
        d_inter = sum(1.0 - float(a[r] @ b[order[r]]) for r in range(R)) / R
        return d_intra / (d_intra + d_inter)

    observed = sa(np.arange(R))
    rng = np.random.default_rng(seed)
    hits = sum(sa(rng.permutation(R)) >= observed for _ in range(n_perm))
    return (1 + hits) / (1 + n_perm)


def test_bootstrap_above_zero_but_permutation_not_is_chance():
    # random vectors (seed 3, 10 concepts): the bootstrap interval of the gap lies above 0, the permutation p does not
    # reach 2.5% -- a false positive of the bootstrap alone that the gate removes
    aw = _random(3, 10, 2, 16)
    r = affinity_of_words(aw, n_boot=200, seed=3, language_centred=False)
    assert r.verdict_scores.delta.ci[0] > 0, "the planted case needs a bootstrap interval above 0"
    assert r.permutation is not None and r.permutation.n_perm == 200 and r.permutation.seed == 3
    p_ref = _reference_permutation_p(aw, 200, 3)
    np.testing.assert_allclose(r.permutation.p_value, p_ref, rtol=0, atol=1e-12,
                               err_msg="p is a count ratio: (1 + hits) / 201, equal when the hits are")
    assert p_ref >= 0.025
    assert r.tier == "chance", r.verdict
    assert r.verdict.startswith("indistinguishable from chance")
    assert "permutation test does not confirm it" in r.verdict and f"p = {p_ref:.3g}" in r.verdict


def test_both_above_is_above_chance_and_a_planted_p_flips_it():
    rng = np.random.default_rng(0)
    en = rng.normal(size=(40, 16))
    aw = _aw([en, en + 0.8 * rng.normal(size=en.shape)])
    r = affinity_of_words(aw, n_boot=200, seed=0, language_centred=False)
    assert r.verdict_scores.delta.ci[0] > 0 and r.permutation.p_value < 0.025
    assert r.tier == r.paper_tier and r.tier in ("good", "great"), r.verdict
    # the same bootstrap with a permutation p above the level: not above chance
    weak = replace(r, permutation=replace(r.permutation, p_value=0.03))
    assert weak.tier == "chance" and "does not confirm" in weak.verdict
    # no permutation test recorded (a result written before the rule): the interval alone decides
    assert replace(r, permutation=None).tier == r.tier
    # the p-value and the tier survive the JSON round trip
    back = SAResult.from_dict(json.loads(json.dumps(weak.to_dict())))
    assert back.permutation.p_value == 0.03 and back.tier == "chance"


# seed 23 (10 concepts, 16 dims) is another case where the bootstrap interval alone lies above 0
@pytest.mark.parametrize("seed, n_concepts, n_languages, dims", [(0, 24, 2, 32), (1, 24, 3, 32), (2, 40, 2, 32), (23, 10, 2, 16)])
def test_random_vectors_are_not_called_above_chance(seed, n_concepts, n_languages, dims):
    r = affinity_of_words(_random(seed, n_concepts, n_languages, dims), n_boot=200, seed=seed, language_centred=False)
    assert r.tier in ("chance", "below chance"), r.verdict


def test_the_permutation_test_runs_where_the_count_of_re_pairings_exceeds_a_float():
    # (120!)^5 overflows a float: the verdict's permutation test of 120 concepts in 6 languages used to raise
    # OverflowError; the count is now infinite and the test is Monte Carlo
    from semanscope_nb.metrics.chance import n_repairings, permutation_test

    assert n_repairings(120, 6) == math.inf and n_repairings(170, 2) < math.inf
    t = permutation_test(_random(5, 120, 6, 8), n_perm=20, seed=5)
    assert not t.exact and t.n_perm == 20 and 1 / 21 <= t.p_value <= 1
