"""Seeded draws kept between calls (metrics.chance.seeded_repairings): the same draws as one generator, draw for draw.

The permutation gate and the Euclidean chance level draw their re-pairings from ``default_rng(seed)`` by one rule;
those drawn once are handed out again and the generator goes on from the state it had after them.  Every test here
compares with the plain rule -- ``rng.permutation(R)`` per lane, re-pairing after re-pairing, from one fresh
generator -- and the statistics and p-values with and without kept draws exactly.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics import chance
from semanscope_nb.metrics.chance import euclidean_chance_by_permutation, permutation_test, seeded_repairings
from semanscope_nb.metrics.spreads import AlignedWords, Spreads


def _loop(seed: int, n: int, lanes: int, R: int) -> np.ndarray:
    """The plain rule: re-pairing after re-pairing, lane after lane, ``rng.permutation(R)`` of one generator."""
    rng = np.random.default_rng(seed)
    return np.array([[rng.permutation(R) for _ in range(lanes)] for _ in range(n)], dtype=np.intp).reshape(n, lanes, R)


def _drawn(seed: int, n: int, lanes: int, R: int, chunk: int) -> np.ndarray:
    return np.concatenate(list(seeded_repairings(seed, n_perm=n, n_lanes=lanes, R=R, chunk=chunk)))


@pytest.fixture(autouse=True)
def _fresh_memo():
    chance._REPAIRINGS.clear()
    yield
    chance._REPAIRINGS.clear()


@pytest.mark.parametrize("R", [2, 3, 5, 17, 64, 65, 349])
def test_kept_draws_then_more_are_one_generator_s_draws(R):
    """A first call keeps its draws; a longer second call hands them out and draws on from the kept state (the buffered
    half of a 32-bit draw included: odd and even numbers of 32-bit draws are both hit over these seeds and sizes)."""
    for seed in range(12):
        for lanes, first, total, chunk in ((1, 3, 11, 4), (2, 7, 20, 64), (3, 1, 9, 2)):
            want = _loop(seed, total, lanes, R)
            a = _drawn(seed, first, lanes, R, chunk)
            b = _drawn(seed, total, lanes, R, chunk + 1)  # another cut: the same stream
            c = _drawn(seed, first - 1 if first > 1 else 1, lanes, R, chunk)  # fewer than kept: a prefix
            assert np.array_equal(a, want[:first]), (seed, R, lanes)
            assert np.array_equal(b, want), (seed, R, lanes)
            assert np.array_equal(c, want[: c.shape[0]]), (seed, R, lanes)
            chance._REPAIRINGS.clear()


def test_a_caller_that_stops_early_keeps_what_was_drawn_and_the_rest_goes_on_from_there():
    R, lanes = 40, 2
    want = _loop(5, 30, lanes, R)
    it = seeded_repairings(5, n_perm=30, n_lanes=lanes, R=R, chunk=4)
    got = [next(it), next(it)]  # 8 drawn (and a third chunk not yet)
    it.close()
    assert chance._REPAIRINGS.get((5, lanes, R))[0].shape[0] == 8
    assert np.array_equal(np.concatenate(got), want[:8])
    assert np.array_equal(_drawn(5, 30, lanes, R, 6), want)
    assert chance._REPAIRINGS.get((5, lanes, R))[0].shape[0] == 30


def test_kept_draws_are_read_only_and_none_seed_or_large_draws_are_not_kept(monkeypatch):
    block = next(seeded_repairings(1, n_perm=4, n_lanes=1, R=9, chunk=4))
    assert not block.flags.writeable
    with pytest.raises(ValueError):
        block[0, 0, 0] = 3
    list(seeded_repairings(None, n_perm=4, n_lanes=1, R=9, chunk=4))
    assert len(chance._REPAIRINGS) == 1  # seed None: fresh entropy, never kept
    monkeypatch.setattr(chance, "REPAIRING_MEMO_BYTES", 4 * 8 * 9 * 10 - 1)  # a quarter of it below 10 draws of 9
    list(seeded_repairings(2, n_perm=10, n_lanes=1, R=9, chunk=4))
    assert (2, 1, 9) not in chance._REPAIRINGS


def test_two_threads_drawing_the_same_seed_at_once_both_get_the_generator_s_draws():
    R, n = 50, 200
    want = _loop(8, n, 1, R)
    out: dict[int, np.ndarray] = {}

    def run(i: int, chunk: int) -> None:
        out[i] = _drawn(8, n if i else n // 2, 1, R, chunk)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in ((0, 3), (1, 7))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert np.array_equal(out[0], want[: n // 2]) and np.array_equal(out[1], want)
    assert np.array_equal(_drawn(8, n + 10, 1, R, 16), _loop(8, n + 10, 1, R))  # whichever was kept, it goes on right


def _aw(R: int = 60, d: int = 12, seed: int = 3) -> AlignedWords:
    rng = np.random.default_rng(seed)
    en = rng.normal(size=(R, d)) * rng.uniform(0.5, 2.0, size=(R, 1))  # off the unit sphere: the Euclidean permutations
    eye = sp.identity(R, format="csr")
    return AlignedWords(("en", "de"), (en, en + 0.8 * rng.normal(size=(R, d))), (eye, eye), tuple(map(str, range(R))))


def test_gate_and_euclidean_chance_are_the_same_with_and_without_kept_draws():
    """The gate's first re-pairings are the Euclidean chance level's: the order in which they run, or draws kept from an
    earlier call, changes no statistic (floats equal: the same gathers of the same draws) and no p-value."""
    aw = _aw()
    alone = (permutation_test(aw, n_perm=300, seed=0, spreads=Spreads(aw)),
             euclidean_chance_by_permutation(aw, seed=0, spreads=Spreads(aw)))
    chance._REPAIRINGS.clear()
    euclid_first = euclidean_chance_by_permutation(aw, seed=0, spreads=Spreads(aw))  # keeps its re-pairings
    gate_after = permutation_test(aw, n_perm=300, seed=0, spreads=Spreads(aw))  # starts from them
    again = (permutation_test(aw, n_perm=300, seed=0, spreads=Spreads(aw)),
             euclidean_chance_by_permutation(aw, seed=0, spreads=Spreads(aw)))  # every draw kept
    for gate, euclid in ((gate_after, euclid_first), again):
        assert (gate.p_value, gate.n_perm, gate.exact) == (alone[0].p_value, alone[0].n_perm, alone[0].exact)
        np.testing.assert_allclose([gate.null_mean, gate.null_sd, gate.z, *euclid],
                                   [alone[0].null_mean, alone[0].null_sd, alone[0].z, *alone[1]], rtol=0, atol=0,
                                   err_msg="the same draws through the same arithmetic: the same bits")
    # and they are the plain rule's draws: the gate's null from a loop over rng.permutation
    rng = np.random.default_rng(0)
    u = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in aw.vectors]
    intra = sum((60.0**2 - float(np.sum(x.sum(axis=0) ** 2))) / (60.0**2 - 60.0) for x in u) / 2
    inters = np.array([np.mean(1.0 - np.einsum("ij,ij->i", u[0], u[1][rng.permutation(60)])) for _ in range(300)])
    null = intra / (intra + inters)
    # each inter distance: 60 dot products of d = 12 rounded apart (gamma_12 relative to 1) and a mean of 60 terms
    np.testing.assert_allclose([again[0].null_mean, again[0].null_sd], [null.mean(), null.std(ddof=1)], rtol=1e-12,
                               err_msg="the kept draws are rng.permutation's, re-pairing after re-pairing")


# --------------------------------------------------------------------------- resample counts kept between passes


def _loop_counts(R: int, B: int, *, seed: int) -> np.ndarray:
    """resample_counts' rule as plain loops: resample b is the next R draws of integers(0, R), counted per row."""
    g = np.random.default_rng(seed)
    out = np.zeros((B, R))
    for b in range(B):
        for i in g.integers(0, R, size=R).tolist():
            out[b, i] += 1.0
    return out


@pytest.fixture()
def _fresh_resamples(monkeypatch):
    """An empty memo of resample counts that keeps passes of any size (RESAMPLE_MEMO_MIN 0: small test passes)."""
    monkeypatch.setattr(chance, "RESAMPLE_MEMO_MIN", 0)
    chance._RESAMPLES.clear()
    yield
    chance._RESAMPLES.clear()


def test_a_completed_pass_is_handed_out_again_cut_at_the_same_batches(_fresh_resamples):
    from semanscope_nb.metrics.chance import resample_counts

    R, B = 37, 23
    want = _loop_counts(R, B, seed=11)
    first = list(resample_counts(R, B, seed=11, batch=5))
    assert (11, R) in chance._RESAMPLES and chance._RESAMPLES.get((11, R)).dtype == np.uint8
    for n_boot, batch in ((23, 5), (23, 7), (10, 4), (1, 1)):
        again = list(resample_counts(R, n_boot, seed=11, batch=batch))
        assert [c.shape[0] for c in again] == [min(batch, n_boot - a) for a in range(0, n_boot, batch)]
        assert all(c.dtype == np.float64 and c.flags.writeable for c in again)  # fresh arrays, as a draw gives
        assert np.array_equal(np.concatenate(again), want[:n_boot]), (n_boot, batch)
    assert all(np.array_equal(a, b) for a, b in zip(first, resample_counts(R, B, seed=11, batch=5)))
    again = next(resample_counts(R, B, seed=11, batch=5))
    again[:] = -1.0  # a caller writing into its counts changes nothing kept
    assert np.array_equal(np.concatenate(list(resample_counts(R, B, seed=11, batch=5))), want)
    longer = np.concatenate(list(resample_counts(R, 40, seed=11, batch=6)))  # more than kept: drawn, then kept
    assert np.array_equal(longer, _loop_counts(R, 40, seed=11)) and chance._RESAMPLES.get((11, R)).shape == (40, R)


def test_a_stopped_or_large_pass_or_a_count_beyond_a_byte_is_not_kept(_fresh_resamples, monkeypatch):
    from semanscope_nb.metrics.chance import resample_counts

    it = resample_counts(30, 20, seed=1, batch=4)
    next(it)
    it.close()
    assert (1, 30) not in chance._RESAMPLES  # stopped early: nothing kept
    list(resample_counts(30, 20, seed=None, batch=4))
    assert len(chance._RESAMPLES) == 0  # fresh entropy: never kept
    monkeypatch.setattr(chance, "RESAMPLE_MEMO_BYTES", 4 * 30 * 20 - 1)
    list(resample_counts(30, 20, seed=2, batch=4))
    assert (2, 30) not in chance._RESAMPLES  # above a quarter of the bound
    monkeypatch.setattr(chance, "RESAMPLE_MEMO_MIN", 30 * 20 + 1)
    monkeypatch.setattr(chance, "RESAMPLE_MEMO_BYTES", 8 * 2**20)
    list(resample_counts(30, 20, seed=2, batch=4))
    assert (2, 30) not in chance._RESAMPLES  # fewer counts than the minimum: drawn every time, never kept
    monkeypatch.setattr(chance, "RESAMPLE_MEMO_BYTES", 8 * 2**20)
    real = chance._drawn_counts

    def one_row_drawn_300_times(rng, b, n_rows):
        c = real(rng, b, n_rows)
        c[0, 0] = 300.0
        return c

    monkeypatch.setattr(chance, "_drawn_counts", one_row_drawn_300_times)
    list(resample_counts(400, 3, seed=3, batch=2))
    assert (3, 400) not in chance._RESAMPLES  # a count a byte cannot hold: the pass is not kept (never wrapped)


def test_the_default_bounds_keep_the_verdict_s_pass_and_not_a_small_one():
    from semanscope_nb.metrics.chance import resample_counts

    chance._RESAMPLES.clear()
    try:
        list(resample_counts(37, 23, seed=11, batch=5))  # 851 counts: drawn again every time
        assert len(chance._RESAMPLES) == 0
        list(resample_counts(349, 1000, seed=0, batch=208))  # the floor case of bench_fused_verdict: 349 kB kept
        assert chance._RESAMPLES.get((0, 349)).nbytes == 349_000
    finally:
        chance._RESAMPLES.clear()


def test_semantic_affinity_is_the_same_with_kept_and_fresh_draws(_fresh_resamples):
    """The whole verdict with every draw fresh and with every draw kept: equal to the bit, decisions included."""
    import semanscope_nb as snb

    rng = np.random.default_rng(21)
    en = rng.normal(size=(90, 16)) * rng.uniform(0.5, 2.0, size=(90, 1))
    E = {"en": en, "zh": en + 1.1 * rng.normal(size=(90, 16))}
    fresh = snb.semantic_affinity(E, n_boot=200, seed=4)
    kept = snb.semantic_affinity(E, n_boot=200, seed=4)
    assert (4, 90) in chance._RESAMPLES and (4, 1, 90) in chance._REPAIRINGS
    assert (fresh.tier, fresh.verdict, fresh.permutation.p_value) == (kept.tier, kept.verdict, kept.permutation.p_value)
    a, b = fresh.to_dict(), kept.to_dict()
    a.pop("provenance", None), b.pop("provenance", None)
    assert a == b


# --------------------------------------------------------------------------- the Euclidean chance level's gathers


@pytest.mark.parametrize("L", [2, 3])
def test_repaired_inters_euclidean_gathers_equal_the_plain_gathers_and_loops(L):
    """Re-pairings through the centred Gram matrices: a language kept in place is read without a gather and the
    Gram entries by one flat gather -- the same numbers as the 2-d gathers of every language (to the bit), and the
    paper's RMS distance over each tuple's language pairs as plain loops (to rounding)."""
    rng = np.random.default_rng(30 + L)
    R, d = 41, 7
    vecs = tuple(rng.normal(size=(R, d)) * rng.uniform(0.5, 3.0, size=(R, 1)) for _ in range(L))
    eye = sp.identity(R, format="csr")
    aw = AlignedWords(tuple("abc"[:L]), vecs, (eye,) * L, tuple(map(str, range(R))))
    s = Spreads(aw)
    m = 9
    for first_in_place in (True, False):
        P = np.stack([np.stack([np.arange(R) if (k == 0 and first_in_place) else rng.permutation(R) for k in range(L)])
                      for _ in range(m)])
        got = s.repaired_inters_euclidean(P)
        gram = s._centred_gram()
        pair_sq = np.zeros((m, R))
        for i in range(L):
            for j in range(i + 1, L):  # the 2-d gathers of every language
                pair_sq += s._q[i][P[:, i]] + s._q[j][P[:, j]] - 2.0 * gram[i, j][P[:, i], P[:, j]]
        plain = np.sqrt(np.maximum(pair_sq, 0.0) / s.K).sum(axis=1) / float(R)
        plain = np.ldexp(plain, s._wexp - s.exponent) if s._wexp - s.exponent else plain
        np.testing.assert_array_equal(got, plain, err_msg="the same gathered numbers in the same arithmetic")
        x = [np.ldexp(v, -s.exponent) for v in vecs]  # units of the spreads' scale (a power of two: exact)
        loops = [sum(np.sqrt(sum(float(np.sum((x[i][P[b, i, r]] - x[j][P[b, j, r]]) ** 2))
                                 for i in range(L) for j in range(i + 1, L)) / s.K) for r in range(R)) / R
                 for b in range(m)]
        # squared distances from centred norms and Gram entries: each within ~(d + 2) u of (|x_i - c| + |x_j - c|)^2
        # beside ||x_i - x_j||^2 (no worse than 1e-11 relative here: the rows are within a factor 10 of the centre)
        np.testing.assert_allclose(got, loops, rtol=1e-11, err_msg="the paper's tuple RMS distances, as plain loops")
