"""Degenerate statistics refuse what they cannot answer (issue 20), one rule per case, in every statistic.

Each class below failed on main before the rules of ``semanscope_nb.metrics.degenerate``:

* collapsed vectors (40 copies of one vector): ``permutation_test`` said SA 0.724, p = 0.005,
  ``chance_level`` 0.568 and ``compare_models`` scored the model with no note;
* one concept: ``permutation_test`` gave p = 0.005;
* 2-3 concepts: p = 0.0005 where the exact p is 0.5 or 1/6 (ties lost to the last bit);
* ``n_boot=10``: non-chance verdicts with no note;
* the CLI's verdict on the serial and the loky backend.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from reference import reference_sa

import semanscope_nb as snb
from semanscope_nb.errors import EmbeddingError
from semanscope_nb.metrics.chance import chance_level, permutation_test
from semanscope_nb.metrics.compare import compare_models
from semanscope_nb.metrics.degenerate import MIN_VERDICT_BOOT, UNDETERMINED_TIER
from semanscope_nb.metrics.pairs import pair_affinity
from semanscope_nb.metrics.spreads import AlignedWords


def _aw(arrays: dict[str, np.ndarray], words=None) -> AlignedWords:
    R = next(iter(arrays.values())).shape[0]
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(arrays), tuple(arrays.values()), tuple(eye for _ in arrays), tuple(map(str, range(R))), words=words)


def _collapsed(R: int = 40, d: int = 16, seed: int = 0) -> dict[str, np.ndarray]:
    v = np.random.default_rng(seed).normal(size=(1, d))
    return {"en": np.repeat(v, R, axis=0), "de": np.repeat(v * 3.0, R, axis=0)}


# --------------------------------------------------------------------------- collapsed vectors: NaN with a note, everywhere


def test_collapsed_vectors_give_nan_with_a_note_in_every_statistic():
    arrays = _collapsed()
    aw = _aw(arrays)
    r = snb.semantic_affinity(arrays, n_boot=200, seed=0)
    assert math.isnan(r.cosine.sa) and "undefined" in r.cosine.note
    t = permutation_test(aw, n_perm=200, seed=0)
    assert math.isnan(t.sa) and math.isnan(t.p_value) and "collapsed" in t.note
    c = chance_level(aw)
    assert math.isnan(c.sa_null_cosine) and "collapsed" in c.note
    rng = np.random.default_rng(1)
    real = _aw({"en": rng.normal(size=(40, 16)), "de": rng.normal(size=(40, 16))})
    cmp = compare_models({"collapsed": aw, "random": real}, n_boot=200, n_perm=200, seed=0)
    row = cmp.scores.set_index("model").loc["collapsed"]
    assert math.isnan(row.score) and pd.isna(row.band) and "collapsed" in row.note
    assert len(cmp.pairs) == 0 and any("collapsed" in n for n in cmp.notes)
    with pytest.raises(KeyError):
        cmp.band_of("collapsed")
    four = dict(arrays, zh=rng.normal(size=(40, 16)), fr=rng.normal(size=(40, 16)))
    pairs = pair_affinity(_aw(four), n_boot=200, n_perm=200, seed=0).table.set_index(["language_a", "language_b"])
    assert pairs.loc[("en", "de"), "verdict"] == "undefined" and math.isnan(pairs.loc[("en", "de"), "p_value"])
    assert "collapsed" in pairs.loc[("en", "de"), "note"]
    # a pair with one collapsed language: its 40 words share one vector, so no concept is left to judge -- the SA is
    # defined (zh is not collapsed), so the pair says 'insufficient', as the verdict of en, zh alone does
    assert pairs.loc[("en", "zh"), "verdict"] == "insufficient" and "only 0 of 40" in pairs.loc[("en", "zh"), "note"]
    assert snb.semantic_affinity({"en": four["en"], "zh": four["zh"]}, n_boot=200, seed=0).tier == "insufficient"
    assert pairs.loc[("zh", "fr"), "verdict"] == "chance"  # the other pairs are still judged


# --------------------------------------------------------------------------- too few concepts: one clear error, everywhere


def test_one_concept_is_refused_by_every_statistic():
    rng = np.random.default_rng(2)
    arrays = {"en": rng.normal(size=(1, 8)), "de": rng.normal(size=(1, 8))}
    aw = _aw(arrays)
    calls = {
        "semantic_affinity": lambda: snb.semantic_affinity(arrays, n_boot=0),
        "permutation_test": lambda: permutation_test(aw, n_perm=100),
        "chance_level": lambda: chance_level(aw),
        "compare_models": lambda: compare_models({"a": aw, "b": aw}, n_boot=200, n_perm=100),
        "pair_affinity": lambda: pair_affinity(aw, n_boot=200, n_perm=100),
    }
    for name, call in calls.items():
        with pytest.raises(EmbeddingError, match=r"at least 2 concept rows, got 1|at least 3 concept rows, got 1") as e:
            call()
        assert "1" in str(e.value), name


def test_two_concepts_are_refused_by_every_bootstrap_and_answered_exactly_by_the_permutation_test():
    rng = np.random.default_rng(3)
    e = rng.normal(size=(2, 8))
    arrays = {"en": e, "de": e + 0.01 * rng.normal(size=e.shape)}
    aw = _aw(arrays)
    for call in (lambda: snb.semantic_affinity(arrays, n_boot=200), lambda: compare_models({"a": aw, "b": aw}, n_boot=200),
                 lambda: pair_affinity(aw, n_boot=200)):
        with pytest.raises(EmbeddingError, match="at least 3 concept rows, got 2"):
            call()
    t = permutation_test(aw, n_perm=1000, seed=0)
    assert t.exact and t.n_perm == 2 and t.p_value == 0.5  # the observed pairing is 1 of 2, the better one


def _plain_exact_p(arrays: dict[str, np.ndarray], tol: float) -> float:
    """Every re-pairing of languages 1.. by plain loops (reference_sa), counting SA_perm >= SA_obs - tol."""
    langs = list(arrays)
    R = arrays[langs[0]].shape[0]
    vec = {(k, f"w{r}"): list(arrays[lang][r]) for k, lang in enumerate(langs) for r in range(R)}

    def sa_of(perms):
        rows = [[[f"w{perms[k][r]}"] for k in range(len(langs))] for r in range(R)]
        return reference_sa(rows, vec)["cosine"]["sa"]

    observed = sa_of([tuple(range(R))] * len(langs))
    all_perms = list(itertools.product(itertools.permutations(range(R)), repeat=len(langs) - 1))
    hits = sum(sa_of([tuple(range(R))] + list(p)) >= observed - tol for p in all_perms)
    return hits / len(all_perms)


@pytest.mark.parametrize("R,n_lang,seed", [(2, 2, 0), (3, 2, 1), (3, 2, 2), (4, 2, 3), (3, 3, 4), (2, 3, 5)])
def test_permutation_p_equals_a_plain_enumeration_on_tiny_inputs(R, n_lang, seed):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(R, 6))
    arrays = {f"l{k}": base + (0.2 if k else 0.0) * rng.normal(size=base.shape) for k in range(n_lang)}
    t = permutation_test(_aw(arrays), n_perm=10_000, seed=0)
    n_all = math.factorial(R) ** (n_lang - 1)
    assert t.exact and t.n_perm == n_all
    # the plain loop's tolerance 1e-9 is far above rounding and far below any real difference of these SAs
    assert t.p_value == _plain_exact_p(arrays, 1e-9)
    if (R, n_lang) == (3, 2):
        assert t.p_value >= 1 / 6


def test_tied_repairings_count_as_at_least_the_observed():
    # rows 0 and 1 hold the same vector in every language (up to the last bits): swapping them re-pairs nothing,
    # so the exact p counts both pairings; main counted whichever rounding happened to fall on the right side
    rng = np.random.default_rng(7)
    base = rng.normal(size=(3, 6))
    base[1] = base[0] * (1 + 2e-16)
    de = base + 0.05 * rng.normal(size=base.shape)
    de[1] = de[0] * (1 - 2e-16)
    arrays = {"en": base, "de": de}
    t = permutation_test(_aw(arrays), n_perm=100, seed=0)
    assert t.exact and t.p_value == _plain_exact_p(arrays, 1e-9) and t.p_value >= 2 / 6


def test_monte_carlo_p_uses_the_plus_one_convention_and_the_tie_rule():
    rng = np.random.default_rng(8)
    base = rng.normal(size=(30, 8))
    aw = _aw({"en": base, "de": base + 2.0 * rng.normal(size=base.shape)})
    t = permutation_test(aw, n_perm=300, seed=4)
    assert not t.exact
    # plain loop with the same generator draws: count re-pairings at least as good, the observed one counted once more
    from semanscope_nb.metrics.chance import _row_means, shuffled_inter_cosine
    from semanscope_nb.metrics.degenerate import sa_tie_tolerance

    means, n_alt = _row_means(aw)
    gen = np.random.default_rng(4)
    obs = shuffled_inter_cosine(means, n_alt, [np.arange(30)] * 2)
    hits = 0
    for _ in range(300):
        hits += shuffled_inter_cosine(means, n_alt, [np.arange(30), gen.permutation(30)]) <= obs + sa_tie_tolerance(aw.vectors, n_rows=30)
    assert t.p_value == (1 + hits) / 301


def test_batched_re_pairings_equal_the_one_at_a_time_route(monkeypatch):
    # the Gram-matrix route (gathers from M_k M_l^T) against the per-draw sums, replicate for replicate,
    # in 3 languages; and the whole test through the fallback route gives the same p
    from semanscope_nb.metrics import chance
    from semanscope_nb.metrics.chance import _row_means, shuffled_inter_cosine, shuffled_inter_cosines

    rng = np.random.default_rng(21)
    base = rng.normal(size=(25, 6))
    aw = _aw({"en": base, "de": base + rng.normal(size=base.shape), "fr": base + 1.5 * rng.normal(size=base.shape)})
    means, n_alt = _row_means(aw)
    perms = [np.tile(np.arange(25), (40, 1))] + [np.stack([rng.permutation(25) for _ in range(40)]) for _ in range(2)]
    batched = shuffled_inter_cosines(means, n_alt, perms)
    one_by_one = [shuffled_inter_cosine(means, n_alt, [p[i] for p in perms]) for i in range(40)]
    # both sum the same L(L-1)/2 = 3 pair dot products of unit-mean rows (|dot| <= 1): a few ulps apart
    np.testing.assert_allclose(batched, one_by_one, rtol=0, atol=1e-13, err_msg="one Gram gather per pair vs row sums per draw")
    fast = permutation_test(aw, n_perm=200, seed=5)
    monkeypatch.setattr(chance, "PERMUTATION_GRAM_BYTES", 0)  # force the per-draw route
    slow = permutation_test(aw, n_perm=200, seed=5)
    assert fast.p_value == slow.p_value and fast.n_perm == slow.n_perm == 200
    np.testing.assert_allclose(fast.null_mean, slow.null_mean, rtol=1e-12, err_msg="the same draws, the same null")


# --------------------------------------------------------------------------- too few resamples: no tier


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_too_few_resamples_give_no_tier_with_a_note():
    rng = np.random.default_rng(9)
    promoted = 0
    for s in range(40):
        arrays = {"en": rng.normal(size=(60, 8)), "de": rng.normal(size=(60, 8))}
        r = snb.semantic_affinity(arrays, n_boot=10, seed=s)
        assert r.tier == UNDETERMINED_TIER and "too rough" in r.verdict
        promoted += r.tier not in (UNDETERMINED_TIER, "chance")
    assert promoted == 0
    assert snb.semantic_affinity(arrays, n_boot=0).tier == UNDETERMINED_TIER
    good = {"en": arrays["en"], "de": arrays["en"] + 0.1 * rng.normal(size=(60, 8))}
    assert snb.semantic_affinity(good, n_boot=MIN_VERDICT_BOOT, seed=0).tier == "great"
    pairs = pair_affinity(_aw(good), n_boot=10, n_perm=200, seed=0)
    assert pairs.table.verdict.tolist() == [UNDETERMINED_TIER] and any("too rough" in n for n in pairs.notes)


# --------------------------------------------------------------------------- the same verdict on every backend


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_the_cli_prints_the_same_verdict_on_the_serial_and_the_loky_backend(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1"}
    shown = {}
    for backend in ("serial", "loky"):
        out = subprocess.run(
            [sys.executable, "-m", "semanscope_nb", "benchmark", "--models", "random-null", "--datasets", "edge-cases",
             "--backend", backend, "--n-jobs", "1", "--n-boot", "200", "--seed", "0", "--out", str(tmp_path / backend),
             "--cache-dir", str(tmp_path / "cache")],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        rows = [line for line in out.stdout.splitlines() if line.startswith("random-null")]
        assert len(rows) == 1, out.stdout
        shown[backend] = rows[0]
        board = json.loads((tmp_path / backend / "leaderboard.json").read_text())
        shown[backend + ".json"] = [(r["tier"], r["paper_tier"]) for r in (board["rows"] if isinstance(board, dict) else board)]
    assert shown["serial"] == shown["loky"]  # every number and the tier, as printed
    assert shown["serial.json"] == shown["loky.json"]
    assert "chance" in shown["serial"] and "SA − chance" not in shown["serial"]  # the row shows the tier, the header the label


def test_so_few_concepts_that_no_test_reaches_the_level_give_no_tier():
    # 3 or 4 concepts in two languages: 6 or 24 re-pairings, so the exact p is at least 1/24 > 2.5%; main printed
    # "great" from a liberal bootstrap interval
    rng = np.random.default_rng(10)
    for R in (3, 4):
        base = rng.normal(size=(R, 8))
        arrays = {"en": base, "de": base + 0.05 * rng.normal(size=base.shape)}
        r = snb.semantic_affinity(arrays, n_boot=MIN_VERDICT_BOOT, seed=0)
        assert r.paper_tier == "great" and r.tier == UNDETERMINED_TIER and f"1/{math.factorial(R)}" in r.verdict
        assert permutation_test(_aw(arrays), n_perm=1000).p_value >= 1 / math.factorial(R)
        assert pair_affinity(_aw(arrays), n_boot=MIN_VERDICT_BOOT, n_perm=100).table.verdict.tolist() == [UNDETERMINED_TIER]
    base = rng.normal(size=(5, 8))  # 120 re-pairings: the level can be reached, the tier is given
    assert snb.semantic_affinity({"en": base, "de": base + 0.05 * rng.normal(size=base.shape)}, n_boot=MIN_VERDICT_BOOT).tier == "great"
