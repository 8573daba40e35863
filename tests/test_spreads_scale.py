"""Issue 11, "speed and memory": the fused, blocked SA parts against plain NumPy, and the bootstrap's batch budget.

``Spreads`` computes norms, unit and centred rows, per-row inter sums and the
point estimate's sums in one fused pass, keeps float32 blocks as float32 until
one conversion, and streams large vocabularies in blocks.  Every route (stacked
or streamed, one word per row or ``|`` alternatives, float32 or float64, any
magnitude) must give the spreads a plain pairwise loop gives.  Small sizes: the
whole file runs in a few seconds.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics.chance import NullParts, null_aware_bootstrap, resample_counts
from semanscope_nb.metrics.spreads import (
    MIN_BOOTSTRAP_BUDGET,
    AlignedWords,
    Spreads,
    affinity_ratio,
    bootstrap_budget,
)

# --------------------------------------------------------------------------- plain references


def _aligned(R, L, d, *, alternatives, dtype, rng, scale=1.0, offset=0.0):
    """Random aligned words; with ``alternatives`` rows hold 1-3 words and some words sit in two rows."""
    vectors, incidence = [], []
    base = rng.normal(size=(R, d))
    for _ in range(L):
        if alternatives:
            sizes = rng.integers(1, 4, size=R)
            n = int(sizes.sum())
            A = np.zeros((R, n))
            A[np.repeat(np.arange(R), sizes), np.arange(n)] = 1.0
            A[1, 0] = A[2, 1] = 1.0  # shared words: a column sum of 2
            owner = np.repeat(np.arange(R), sizes)
            X = base[owner] + 0.8 * rng.normal(size=(n, d))
        else:
            A = np.eye(R)
            X = base + 0.8 * rng.normal(size=(R, d))
        vectors.append(((X + offset) * scale).astype(dtype))
        incidence.append(sp.csr_matrix(A))
    return AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(vectors), tuple(incidence), tuple(map(str, range(R))))


def _units(x):
    """Unit rows, each row divided by its largest coordinate first (so a 1e-250 row keeps its direction)."""
    m = np.abs(x).max(axis=1, keepdims=True)
    return (x / m) / np.linalg.norm(x / m, axis=1, keepdims=True)


def _plain_spreads(aw, counts, unit=1.0):
    """Intra / inter spreads per count row by explicit pairs and tuples (float64), Euclidean divided by ``unit``."""
    X = [np.asarray(v, dtype=np.float64) / unit for v in aw.vectors]
    A = [inc.toarray() for inc in aw.incidence]
    L = len(X)
    out = {k: [] for k in ("intra_cos", "inter_cos", "intra_euc", "inter_euc")}
    for c in np.atleast_2d(counts):
        ic, ie = [], []
        for x, a in zip(X, A):
            w = (c @ a) / a.sum(axis=0)
            u = _units(x)
            ww = np.outer(w, w)
            np.fill_diagonal(ww, 0.0)
            cosd = 1.0 - u @ u.T
            sqd = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
            ic.append((ww * cosd).sum() / ww.sum())
            ie.append(np.sqrt((ww * sqd).sum() / ww.sum()))
        num_c = num_e = den = 0.0
        for r in range(len(c)):
            alts = [np.flatnonzero(a[r]) for a in A]
            for t in itertools.product(*alts):
                e = [X[k][t[k]] for k in range(L)]
                eu = _units(np.array(e))
                pc = [1.0 - eu[i] @ eu[j] for i, j in itertools.combinations(range(L), 2)]
                pe = [((e[i] - e[j]) ** 2).sum() for i, j in itertools.combinations(range(L), 2)]
                num_c += c[r] * np.mean(pc)
                num_e += c[r] * np.sqrt(np.mean(pe))
                den += c[r]
        out["intra_cos"].append(np.mean(ic))
        out["intra_euc"].append(np.mean(ie))
        out["inter_cos"].append(num_c / den)
        out["inter_euc"].append(num_e / den)
    return {k: np.array(v) for k, v in out.items()}


def _plain_null(aw, counts, unit=1.0):
    """Closed-form null per count row: occurrence means of unit vectors and of vectors (any common centre)."""
    L = len(aw.vectors)
    X = [np.asarray(v, dtype=np.float64) / unit for v in aw.vectors]
    A = [inc.toarray() for inc in aw.incidence]
    cos, euc = [], []
    for c in np.atleast_2d(counts):
        occ = [c @ a for a in A]  # occurrences of each word drawn
        a_u = [o @ _units(x) / o.sum() for o, x in zip(occ, X)]
        mu = [o @ x / o.sum() for o, x in zip(occ, X)]
        s = [o @ (x * x).sum(axis=1) / o.sum() for o, x in zip(occ, X)]
        pairs = list(itertools.combinations(range(L), 2))
        cos.append(1.0 - np.mean([a_u[i] @ a_u[j] for i, j in pairs]))
        euc.append(np.sqrt(np.mean([s[i] + s[j] - 2.0 * mu[i] @ mu[j] for i, j in pairs])))
    return np.array(cos), np.array(euc)


ROUTES = {"stacked": {}, "streamed": {"stack_limit": 0, "block": 7}, "streamed, one block": {"stack_limit": 0},
          "sparse products": {"sparse": True}}


# --------------------------------------------------------------------------- the fused path against plain NumPy


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("alternatives", [False, True], ids=["one word per row", "alternatives"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_spreads_match_plain_pairs(route, alternatives, dtype):
    rng = np.random.default_rng(11)
    R = 17
    aw = _aligned(R, 3, 6, alternatives=alternatives, dtype=dtype, rng=rng)
    counts = np.vstack([np.ones(R), rng.multinomial(R, np.full(R, 1.0 / R), size=3)]).astype(float)
    spreads = Spreads(aw, **ROUTES[route])
    assert (spreads.stacked[0] is None) == (route != "stacked")
    want = _plain_spreads(aw, counts)
    for c in (counts, counts[:1]):  # a batch, and the point estimate (served from the construction pass)
        got = spreads.spreads(c)
        for key in want:
            np.testing.assert_allclose(got[key], want[key][: len(c)], rtol=1e-10, err_msg=key)
    # the per-word and per-row parts
    for k, v in enumerate(aw.vectors):
        np.testing.assert_allclose(spreads.norms[k], np.linalg.norm(np.asarray(v, dtype=np.float64), axis=1), rtol=1e-13)
    assert spreads.row_cos.sum() / spreads.tuples.sum() == pytest.approx(want["inter_cos"][0], rel=1e-10)


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("alternatives", [False, True], ids=["one word per row", "alternatives"])
def test_null_parts_match_plain_occurrence_means_cached_or_not(route, alternatives):
    rng = np.random.default_rng(12)
    R = 15
    aw = _aligned(R, 3, 5, alternatives=alternatives, dtype=np.float32, rng=rng, offset=0.7)
    counts = np.vstack([np.ones(R), rng.multinomial(R, np.full(R, 1.0 / R), size=4)]).astype(float)
    want_cos, want_euc = _plain_null(aw, counts)
    fresh = Spreads(aw, **ROUTES[route])
    cold = NullParts(aw, fresh).inter(counts)  # no spreads() call before: streams its own pass
    warm_spreads = Spreads(aw, **ROUTES[route])
    parts = NullParts(aw, warm_spreads)
    warm_spreads.spreads(counts)
    warm = parts.inter(counts)  # reuses the products of the spreads() call
    for got in (cold, warm):
        np.testing.assert_allclose(got[0], want_cos, rtol=1e-10)
        np.testing.assert_allclose(got[1] * fresh.scale, want_euc, rtol=1e-10)
    # a count matrix changed in place after spreads() is not served from the kept products
    counts[1:] = counts[1:][:, ::-1]
    np.testing.assert_allclose(parts.inter(counts)[0], _plain_null(aw, counts)[0], rtol=1e-10)


@pytest.mark.parametrize("scale", [1e-200, 1e300])
@pytest.mark.parametrize("route", ["stacked", "streamed"])
def test_extreme_magnitudes_on_every_route(scale, route):
    rng = np.random.default_rng(13)
    R = 14
    aw = _aligned(R, 3, 5, alternatives=True, dtype=np.float64, rng=rng, scale=scale, offset=2.0)
    counts = np.vstack([np.ones(R), rng.multinomial(R, np.full(R, 1.0 / R), size=2)]).astype(float)
    with np.errstate(over="raise"):
        spreads = Spreads(aw, **ROUTES[route])
        got = spreads.spreads(counts, scaled=True)
        null = NullParts(aw, spreads).inter(counts)
    unit = spreads.scale
    want = _plain_spreads(aw, counts, unit=unit)  # rescaled first: the plain loop cannot square 1e300
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-10, err_msg=key)
    np.testing.assert_allclose(null[0], _plain_null(aw, counts, unit)[0], rtol=1e-10)
    np.testing.assert_allclose(null[1], _plain_null(aw, counts, unit)[1], rtol=1e-10)


def test_offset_data_and_odd_rows_take_the_exact_routes():
    """A large common offset (cancellation in ||x||^2 - 2x.c + ||c||^2) and a tiny row among ordinary ones."""
    rng = np.random.default_rng(14)
    R = 20
    aw = _aligned(R, 3, 6, alternatives=False, dtype=np.float64, rng=rng, offset=1e4)
    aw.vectors[1][3] *= 1e-250  # normalised by itself, not through the block
    counts = np.vstack([np.ones(R), rng.multinomial(R, np.full(R, 1.0 / R), size=2)]).astype(float)
    want = _plain_spreads(aw, counts)
    for route in ROUTES.values():
        got = Spreads(aw, **route).spreads(counts)
        for key in ("intra_euc", "inter_euc"):  # the route the cancellation check exists for
            np.testing.assert_allclose(got[key], want[key], rtol=1e-10, err_msg=key)
        for key in ("intra_cos", "inter_cos"):  # cosine distances of 1e-8: float64's own cancellation, in any method
            np.testing.assert_allclose(got[key], want[key], rtol=1e-6, err_msg=key)


# --------------------------------------------------------------------------- batch sizing from a memory budget


def test_batch_size_keeps_the_bootstrap_within_the_budget():
    rng = np.random.default_rng(15)
    R, L, d = 30_000, 3, 96
    vecs = tuple(rng.standard_normal((R, d), dtype=np.float32) for _ in range(L))
    aw = AlignedWords(tuple("abc"), vecs, tuple(sp.identity(R, format="csr") for _ in range(L)), tuple(map(str, range(R))))
    spreads = Spreads(aw, stack_limit=0)
    size = sum(v.nbytes for v in vecs)
    budget = bootstrap_budget(size)
    assert budget == max(0.5 * size, MIN_BOOTSTRAP_BUDGET)
    B = spreads.bootstrap_batch(1000)
    assert 1 <= B < 1000
    # three count matrices of a batch (the draw, its float copy, the previous batch) fit, with the rest of the model
    assert 3 * B * R * 8 < budget
    fixed = spreads.state_bytes()
    assert fixed + B * spreads.bytes_per_resample() <= 0.9 * budget
    # the batch grows with the budget and never passes n_boot or drops below 1
    assert spreads.bootstrap_batch(1000, budget_bytes=4 * budget) > B
    assert spreads.bootstrap_batch(1000, budget_bytes=1) == 1
    assert spreads.bootstrap_batch(50, budget_bytes=10**12) == 50
    # the largest count array resample_counts hands out under that batch stays below the budget
    assert max(c.nbytes for c in resample_counts(R, 300, seed=0, batch=B)) < budget / 3


def test_budget_batch_measured_with_tracemalloc_and_same_resamples():
    rng = np.random.default_rng(16)
    R, L, d = 12_000, 3, 64
    # unit rows, as the encoders give: off the unit sphere the Euclidean chance level adds its own permutation
    # pass (euclidean_chance_by_permutation), which is not the bootstrap whose batch this test bounds
    vecs = tuple((v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
                 for v in (rng.standard_normal((R, d), dtype=np.float32) for _ in range(L)))
    aw = AlignedWords(tuple("abc"), vecs, tuple(sp.identity(R, format="csr") for _ in range(L)), tuple(map(str, range(R))))
    budget = MIN_BOOTSTRAP_BUDGET
    tracemalloc.start()
    try:
        spreads = Spreads(aw, stack_limit=0)
        B = spreads.bootstrap_batch(120, budget_bytes=budget)
        dist: dict = {}
        got = null_aware_bootstrap(aw, n_boot=120, seed=3, batch=B, spreads=spreads, distributions=dist)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert B < 120 and peak <= budget
    # the batch changes how resamples are grouped, never which resamples are drawn
    ref: dict = {}
    null_aware_bootstrap(aw, n_boot=120, seed=3, spreads=Spreads(aw), distributions=ref)
    np.testing.assert_allclose(dist["sa"], ref["sa"], rtol=1e-12)
    np.testing.assert_allclose(dist["sa_null"], ref["sa_null"], rtol=1e-12)
    assert got.sa.value == pytest.approx(float(affinity_ratio(*(Spreads(aw).spreads(np.ones((1, R)))[k][0] for k in ("intra_cos", "inter_cos")))), rel=1e-12)


# --------------------------------------------------------------------------- sparse surface baselines (issue 21)


def _sparse_aligned(R, L, d, *, rng, nnz=12):
    """TF-IDF-like rows: ``nnz`` non-negative coordinates of ``d``, unit length, one word per row."""
    vectors = []
    for _ in range(L):
        X = np.zeros((R, d), dtype=np.float32)
        for r in range(R):
            X[r, rng.choice(d, size=nnz, replace=False)] = rng.random(nnz)
        vectors.append(X / np.linalg.norm(X, axis=1, keepdims=True))
    return AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(vectors), tuple(sp.identity(R, format="csr") for _ in range(L)),
                        tuple(map(str, range(R))))


def _replicates(aw, sparse, n_boot=200):
    spreads = Spreads(aw, sparse=sparse)
    dist: dict = {}
    null_aware_bootstrap(aw, n_boot=n_boot, seed=5, spreads=spreads, distributions=dist)
    return spreads, dist


def _rounding_bound(aw, n_boot=200):
    """How far the sparse and the dense products may move a replicate's SA (both sum the same terms in other orders).

    Per language, each coordinate of ``W @ U`` sums at most ``n`` terms ``w_k u_kj`` (n = its words), so either
    order is within ``gamma_n sum_k w_k |u_kj|`` of the exact sum, and ``|| sum_k w_k |u_k| || <= w_tot`` (unit
    rows, non-negative weights): ``| ||WU||^2 - ||WU'||^2 | <= 4 gamma_n w_tot^2`` (1 + O(u)).  The intra spread
    divides it by ``pairs = w_tot^2 - sum w^2`` and SA = intra / (intra + inter) moves by at most that over
    ``intra + inter``.  The centred half adds ``(W 1) c`` (at most sqrt(128) times the dense terms, by the
    cancellation check), hence the factor 1 + sqrt(128) for the Euclidean SA.
    """
    n = max(v.shape[0] for v in aw.vectors)
    gamma = n * np.finfo(np.float64).eps / 2 / (1 - n * np.finfo(np.float64).eps / 2)
    counts = np.vstack(list(resample_counts(aw.n_rows, n_boot, seed=5)))
    worst = 0.0
    for inc in aw.incidence:  # the heaviest word weights any language gets (alternatives share a row's count)
        w = counts @ sp.csr_matrix(inc, dtype=np.float64)
        pairs = w.sum(axis=1) ** 2 - (w * w).sum(axis=1)
        worst = max(worst, float((w.sum(axis=1) ** 2 / pairs).max()))
    return 4.0 * 1.01 * gamma * worst


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_sparse_products_take_tfidf_like_rows_and_equal_the_dense_route_replicate_for_replicate():
    rng = np.random.default_rng(21)
    aw = _sparse_aligned(150, 4, 2048, rng=rng)
    sparse, got = _replicates(aw, None)  # detected: 12 of 2048 coordinates are non-zero
    dense, want = _replicates(aw, False)
    assert all(S is not None for S in sparse.sparse) and all(s is None for s in sparse.stacked)
    assert all(S is None for S in dense.sparse)
    tol = _rounding_bound(aw)
    for key in ("sa", "sa_null", "delta"):
        scale = 1.0 if key != "delta" else 2.0  # the gap is a difference of two such ratios
        np.testing.assert_allclose(got[key], want[key], rtol=0, atol=scale * tol, err_msg=f"{key}: beyond the rounding bound")
    np.testing.assert_allclose(got["sa_euclidean"], want["sa_euclidean"], rtol=0, atol=(1 + np.sqrt(128)) * tol,
                               err_msg="Euclidean SA: beyond the rounding bound")
    # and the sparse route's spreads against the plain pairwise loop on a few resamples
    counts = np.vstack([np.ones(aw.n_rows), rng.multinomial(aw.n_rows, np.full(aw.n_rows, 1 / aw.n_rows), size=2)])
    plain = _plain_spreads(aw, counts)
    mine = sparse.spreads(counts)
    for key in plain:
        np.testing.assert_allclose(mine[key], plain[key], rtol=1e-10, err_msg=key)


def test_dense_spaces_are_never_counted_as_sparse():
    rng = np.random.default_rng(22)
    aw = _aligned(40, 3, 1024, alternatives=False, dtype=np.float32, rng=rng)
    assert all(S is None for S in Spreads(aw).sparse)
    narrow = _sparse_aligned(30, 3, 64, rng=rng, nnz=1)  # sparse, but narrower than SPARSE_MIN_DIMS: not looked at
    assert all(S is None for S in Spreads(narrow).sparse)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_real_tfidf_char_sa_and_interval_equal_the_dense_route():
    """The bundled edge-cases (with | alternatives) through the real TF-IDF baseline: same replicates, same interval."""
    import semanscope_nb as snb
    from semanscope_nb.metrics.affinity import affinity_of_words
    from semanscope_nb.runs.task_library import aligned_words

    emb = snb.embed("edge-cases", "tfidf-char", cache=False, progress=False)
    aw = aligned_words(emb)
    sparse, got = _replicates(aw, None)
    dense, want = _replicates(aw, False)
    assert any(S is not None for S in sparse.sparse), "TF-IDF rows (under 1% non-zero) take the sparse products"
    tol = _rounding_bound(aw)
    np.testing.assert_allclose(got["sa"], want["sa"], rtol=0, atol=tol, err_msg="SA replicates beyond the rounding bound")
    np.testing.assert_allclose(got["sa_null"], want["sa_null"], rtol=0, atol=tol, err_msg="chance replicates")
    r = affinity_of_words(aw, n_boot=200, seed=5, on_zero="drop")
    assert np.isfinite(r.sa_cosine)
    lo, hi = np.percentile(want["sa"], [2.5, 97.5])
    lo2, hi2 = np.percentile(got["sa"], [2.5, 97.5])
    np.testing.assert_allclose([lo2, hi2], [lo, hi], rtol=0, atol=tol, err_msg="a percentile moves no more than its replicates")
