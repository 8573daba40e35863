"""Sparse languages' resample sums on their own columns (issue 21: ``SparseSums``).

A TF-IDF language's words use a third of the hashed n-gram columns or fewer (scripts
differ), so ``W @ [unit | x - c]`` is held on those columns plus ``-(W 1) c`` off them.
These tests hold that form to a plain ``W @ [unit | x - c]`` written here, and every
verdict statistic of the sparse route to the dense route's, replicate for replicate.

Tolerance: both routes sum the same float64 products in other orders; each coordinate
sums at most a few hundred terms of size <= 1 (unit rows, centred rows of norm <= 2, the
cancellation check bounding the centred half by sqrt(128) times the dense terms), so the
sums agree to ~1e-13 relative to their norms and the ratios built from them (SA, chance
level, gap) to a few times that; rtol 1e-10 leaves a margin of ~1000.  The gap ``delta = sa - sa_null`` and
``corrected = delta / (1 - sa_null)`` are differences: their rounding is that relative tolerance times the terms
(``|sa| + |sa_null|``, over ``1 - sa_null`` for ``corrected``), not times the gap itself, which may be zero or a
last bit (0.0 against 5.6e-17 under OpenBLAS's SSE kernels, ``OPENBLAS_CORETYPE=Prescott`` or ``Nehalem``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics.chance import NullParts, null_aware_statistics, resample_counts, subset_statistics
from semanscope_nb.metrics.spreads import AlignedWords, RowSubset, Spreads, SparseSums
from statistics_check import assert_statistics_close as check

RTOL = 1e-10
KEYS = ("sa", "sa_null", "delta", "corrected", "sa_euclidean", "sa_null_euclidean")


def assert_statistics_close(got: dict, want: dict, what: str) -> None:
    check(got, want, what, rtol=RTOL, keys=KEYS)


def _script_words(R: int, L: int, d: int = 2048, *, seed: int, dense_last: bool = False) -> AlignedWords:
    """TF-IDF-like words: each language's n-grams in its own block of columns plus a block all share, alternatives in
    some rows and a word shared by two rows in each language (so the incidence is not the identity)."""
    rng = np.random.default_rng(seed)
    block = d // (L + 1)
    vectors, incidence = [], []
    for lang in range(L):
        rows = [[f"w{r}"] + ([f"w{r}b"] if r % 5 == lang % 5 else []) for r in range(R)]
        rows[1] = ["w0"]  # rows 0 and 1 share a word
        uniq = list(dict.fromkeys(w for row in rows for w in row))
        pos = {w: i for i, w in enumerate(uniq)}
        X = np.zeros((len(uniq), d))
        if dense_last and lang == L - 1:
            X = rng.normal(size=(len(uniq), d))  # a dense space beside the sparse ones
        else:
            own = np.arange(lang * block, (lang + 1) * block)
            shared = np.arange(L * block, d)
            for i in range(len(uniq)):
                cols = np.concatenate([rng.choice(own, size=9, replace=False), rng.choice(shared, size=3, replace=False)])
                X[i, cols] = rng.random(12)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        r_idx = [r for r, row in enumerate(rows) for _ in row]
        c_idx = [pos[w] for row in rows for w in row]
        incidence.append(sp.csr_matrix((np.ones(len(r_idx)), (r_idx, c_idx)), shape=(R, len(uniq))))
        vectors.append(X)
    return AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(vectors), tuple(incidence), tuple(f"c{r}" for r in range(R)))


def _counts(R: int, n: int, seed: int) -> np.ndarray:
    return np.vstack(list(resample_counts(R, n, seed=seed)))


def test_sparse_sums_equal_the_plain_weighted_sums_of_unit_and_centred_words():
    aw = _script_words(40, 4, seed=1)
    s = Spreads(aw, sparse=True)
    assert all(S is not None for S in s.sparse)
    counts = _counts(aw.n_rows, 7, seed=2)
    parts = s.intra_parts(counts)
    centre = np.vstack(aw.vectors).mean(axis=0)  # the mean of every word of every language
    for lang, (A, X) in enumerate(zip(aw.incidence, aw.vectors)):
        both = parts[lang][2]
        assert isinstance(both, SparseSums)
        used = np.flatnonzero(np.any(X != 0, axis=0))
        assert both.cols.tolist() == used.tolist() and both.data_t.shape == (2 * used.size, counts.shape[0])
        A = A.toarray()
        W = np.zeros((counts.shape[0], X.shape[0]))  # word k weighs sum_r c_r A[r, k] / (rows holding k)
        for b in range(counts.shape[0]):
            for k in range(X.shape[0]):
                W[b, k] = sum(counts[b, r] * A[r, k] for r in range(aw.n_rows)) / A[:, k].sum()
        plain = W @ np.hstack([X / np.linalg.norm(X, axis=1, keepdims=True), X - centre])
        scale = np.abs(W).sum(axis=1, keepdims=True)  # each coordinate sums terms of size <= 2 w_k
        np.testing.assert_allclose(both.dense() / scale, plain / scale, rtol=0, atol=1e-13,
                                   err_msg=f"language {lang}: the full sums from their own columns")
        uu, cc = both.squares()
        np.testing.assert_allclose(uu, (plain[:, : X.shape[1]] ** 2).sum(axis=1), rtol=1e-12, err_msg="||W unit||^2")
        np.testing.assert_allclose(cc, (plain[:, X.shape[1]:] ** 2).sum(axis=1), rtol=1e-12, err_msg="||W (x - c)||^2")
        half = both.times(np.full(counts.shape[0], 0.5))
        np.testing.assert_allclose((both - half).dense(), 0.5 * both.dense(), rtol=0, atol=1e-13 * scale.max())
        np.testing.assert_allclose(both.dense() - half, (both - half).dense(), rtol=0, atol=1e-13 * scale.max(),
                                   err_msg="an array minus the sums is the full array's difference")


@pytest.mark.parametrize("L,dense_last", [(2, False), (3, False), (5, False), (5, True)])
def test_sparse_route_statistics_equal_the_dense_route_replicate_for_replicate(L, dense_last):
    """Pairs and triples (null pair by pair), five languages (the transposed total), a dense language among sparse ones."""
    aw = _script_words(60, L, seed=10 + L, dense_last=dense_last)
    sparse, dense = Spreads(aw, reduce=False), Spreads(aw, sparse=False)  # (few words: not the reduced form)
    assert sum(S is not None for S in sparse.sparse) == L - dense_last, "TF-IDF-like languages take the sparse route"
    assert all(S is None for S in dense.sparse)
    # per-row inter sums (from sparse unit and working rows when every language is sparse, else dense rows)
    np.testing.assert_allclose(sparse.row_cos, dense.row_cos, rtol=RTOL, err_msg="per-row cosine inter sums")
    np.testing.assert_allclose(sparse.row_euc, dense.row_euc, rtol=RTOL, err_msg="per-row Euclidean inter sums")
    keep = np.random.default_rng(3).random(aw.n_rows) < 0.75
    keep[:3] = True
    few = np.zeros(aw.n_rows, dtype=bool)
    few[:12] = True  # most rows left out: the subset's direct route
    sides = [(s, NullParts(aw, s), RowSubset(s, keep), RowSubset(s, few)) for s in (sparse, dense)]
    for counts in [np.ones((1, aw.n_rows)), *resample_counts(aw.n_rows, 30, seed=4, batch=11)]:
        (s1, p1, k1, f1), (s2, p2, k2, f2) = sides
        assert_statistics_close(null_aware_statistics(s1, p1, counts), null_aware_statistics(s2, p2, counts), "all concepts")
        for a, b, what in ((k1, k2, "three quarters kept"), (f1, f2, "12 kept")):
            assert_statistics_close(subset_statistics(a, counts), subset_statistics(b, counts), what)


def test_sparse_sums_leave_the_memory_budget_to_the_columns_in_use():
    aw = _script_words(60, 5, seed=7)
    sparse, dense = Spreads(aw, sparse=True), Spreads(aw, sparse=False)
    cols = sum(c.size for c in sparse.sparse_cols)
    assert cols < 5 * 2048 / 2, "each language uses its own block and the shared one"
    assert sparse.bytes_per_resample() < dense.bytes_per_resample()
    assert sparse.bootstrap_batch(1000, budget_bytes=64 * 2**20) > dense.bootstrap_batch(1000, budget_bytes=64 * 2**20)


def test_permutation_test_of_sparse_row_means_equals_the_dense_grams(monkeypatch):
    """The permutation gate of a TF-IDF model: its row means' Gram matrices by sparse products, the same p."""
    from semanscope_nb.metrics import spreads as spreads_module
    from semanscope_nb.metrics.chance import _row_means, permutation_test, row_mean_grams

    aw = _script_words(50, 4, seed=21)
    means, _ = _row_means(aw)
    grams = row_mean_grams(means)
    for (k, m), G in grams.items():
        plain = np.array([[float(means[k][i] @ means[m][j]) for j in range(aw.n_rows)] for i in range(aw.n_rows)])
        np.testing.assert_allclose(G, plain, rtol=0, atol=1e-14, err_msg=f"pair {k, m}: dot products of unit-norm means")
    got = permutation_test(aw, n_perm=200, seed=4)
    monkeypatch.setattr(spreads_module, "SPARSE_DENSITY", 0.0)  # every row mean dense: the plain products
    want = permutation_test(aw, n_perm=200, seed=4)
    assert got.p_value == want.p_value, "the same re-pairings counted as at least the observed SA"
    np.testing.assert_allclose([got.null_mean, got.null_sd], [want.null_mean, want.null_sd], rtol=1e-12,
                               err_msg="the null's mean and sd from the same dot products")


def test_the_permutation_gate_of_the_judged_concepts_reads_their_spreads_from_the_full_set(monkeypatch):
    """The artefact-free concepts' observed spreads by RowSubset equal a Spreads of those concepts alone: the same test."""
    from semanscope_nb.metrics import affinity
    from semanscope_nb.metrics.artefacts import subset_rows
    from semanscope_nb.metrics.chance import permutation_test

    aw = _script_words(50, 3, d=64, seed=23)  # a small dense-route space (d < SPARSE_MIN_DIMS)
    rng = np.random.default_rng(5)
    aw = AlignedWords(aw.languages, tuple(v + 0.05 * rng.normal(size=v.shape) for v in aw.vectors), aw.incidence, aw.labels)
    kept = np.arange(aw.n_rows) >= 8
    spreads = Spreads(aw)
    asked = []
    real = affinity.permutation_test
    monkeypatch.setattr(affinity, "permutation_test", lambda a, **kw: asked.append(kw) or real(a, **kw))
    verdict = affinity._Verdict(kept=kept, excluded={"identical-string": 8})
    verdict.chance_excluding = type("Basis", (), {"delta": type("D", (), {"ci": (0.1, 0.2)})()})()
    got = affinity._permutation_gate(aw, spreads, verdict, n_boot=200, seed=3, should_stop=None)
    assert asked and asked[0].get("spreads") is None and asked[0].get("point") is not None, "no second Spreads"
    want = permutation_test(subset_rows(aw, kept), n_perm=200, seed=3)
    assert got.p_value == want.p_value
    np.testing.assert_allclose([got.sa, got.null_mean, got.null_sd], [want.sa, want.null_mean, want.null_sd], rtol=1e-12,
                               err_msg="the subset's spreads from the full set's products: the same sums in another order")


@pytest.mark.parametrize("repaired", [False, True])
def test_euclidean_row_sums_over_expanded_tuples_equal_a_plain_loop(repaired):
    """Rows with alternatives in several languages: every tuple's RMS distance, summed per row (block by block)."""
    aw = _script_words(45, 3, d=48, seed=31)  # alternatives where r % 5 == lang: rows 0, 1, 2 of ... and shared words
    rng = np.random.default_rng(8)
    # a second alternative in every language for rows 10..14: 8 tuples each
    vectors, incidence = [], []
    for v, inc in zip(aw.vectors, aw.incidence):
        extra = rng.normal(size=(5, v.shape[1]))
        A = sp.lil_matrix((aw.n_rows, v.shape[0] + 5))
        A[:, : v.shape[0]] = inc
        for i, r in enumerate(range(10, 15)):
            A[r, v.shape[0] + i] = 1.0
        vectors.append(np.vstack([v, extra]))
        incidence.append(sp.csr_matrix(A))
    aw = AlignedWords(aw.languages, tuple(vectors), tuple(incidence), aw.labels)
    s = Spreads(aw)
    s.rows = 3  # small blocks of tuples: several blocks, rows never split
    pairing = [np.arange(aw.n_rows)] + [rng.permutation(aw.n_rows) for _ in range(2)] if repaired else None
    got = s._row_euclid(pairing)
    centre = np.vstack(aw.vectors).mean(axis=0)
    rows_of = pairing or [np.arange(aw.n_rows)] * 3
    want = np.zeros(aw.n_rows)
    for r in range(aw.n_rows):
        cells = [aw.incidence[k][rows_of[k][r]].indices for k in range(3)]
        for i in cells[0]:
            for j in cells[1]:
                for k in cells[2]:
                    e = [aw.vectors[0][i] - centre, aw.vectors[1][j] - centre, aw.vectors[2][k] - centre]
                    sq = sum(float((e[a] - e[b]) @ (e[a] - e[b])) for a, b in ((0, 1), (0, 2), (1, 2)))
                    want[r] += np.sqrt(sq / 3)
    assert (s.tuples > 1).sum() >= 5 and s.tuples.max() >= 8
    np.testing.assert_allclose(got, want, rtol=1e-12, err_msg="sum of tuple RMS distances per row")


@pytest.mark.slow  # a pytest in a subprocess (~10-30 s)
def test_routes_agree_under_openblas_sse_kernels():
    """Under another CPU's BLAS kernels (OpenBLAS's SSE ones) the gap of a replicate was 0.0 on one route and 5.6e-17 on
    the other, which a tolerance relative to the gap itself failed; within the tolerance of its terms it passes."""
    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott"}
    probe = subprocess.run([sys.executable, "-c", "import numpy, threadpoolctl; print(' '.join(str(i.get('architecture')) "
                            "for i in threadpoolctl.threadpool_info() if i.get('internal_api') == 'openblas'))"],
                           env=env, capture_output=True, text=True, timeout=120)
    if probe.returncode != 0 or not ({"Prescott", "Katmai"} & set(probe.stdout.split())):
        pytest.skip(f"NumPy's BLAS does not take OPENBLAS_CORETYPE here ({probe.stdout.strip() or probe.stderr[-200:]})")
    test = "test_sparse_route_statistics_equal_the_dense_route_replicate_for_replicate[2-False]"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{test}"],
                         env=env, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
