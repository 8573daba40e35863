"""The degenerate-vector check against a deliberately simple O(n^2) loop, at the edges of its tie window.

``degenerate_vector_groups`` promises the near-tie rule of ``metrics.ties``: two
words are tied when every coordinate of their unit vectors differs by at most
``tol`` (all-zero vectors have the zero unit vector), and a group is a connected
component of that relation.  The reference below computes exactly that, pair by
pair, with a union-find; the tests plant ties just inside (0.9 tol) and just
outside (1.1 tol) the rule, chains, last-bit differences, scaled copies, exact
copies and zero rows, in float32 and float64, and check both search paths (four
coordinates of the unit rows, and the dense random directions used for sparse rows).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics import artefacts
from semanscope_nb.metrics.spreads import AlignedWords

TOL = 1e-6


def plain_groups(v: np.ndarray, tol: float) -> list[tuple[str, ...]]:
    """Groups of >= 2 row names whose unit vectors agree to tol in every coordinate: every pair, then union-find."""
    n = len(v)
    units = []
    for row in np.asarray(v, dtype=np.float64):
        norm = float(np.sqrt(sum(float(x) * float(x) for x in row)))
        units.append(row / norm if norm > 0 else np.zeros_like(row))
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if float(np.max(np.abs(units[i] - units[j]))) <= tol:
                parent[find(i)] = find(j)
    comps: dict[int, list[str]] = {}
    for i in range(n):
        comps.setdefault(find(i), []).append(f"w{i}")
    return sorted(tuple(c) for c in comps.values() if len(c) > 1)


def found_groups(v: np.ndarray, tol: float = TOL) -> list[tuple[str, ...]]:
    n = len(v)
    names = tuple(f"w{i}" for i in range(n))
    aw = AlignedWords(("en",), (v,), (sp.identity(n, format="csr"),), names, words=(names,))
    return sorted(artefacts.degenerate_vector_groups(aw, tol=tol).get("en", []))


def planted(dtype: type, seed: int, n: int = 240, d: int = 24) -> tuple[np.ndarray, list[tuple[int, int]], list[tuple[int, int]]]:
    """Random unit rows plus planted partners: (vectors, pairs planted at 0.9 tol, pairs planted at 1.1 tol).

    A partner is its base row moved by exactly 0.9 or 1.1 ``tol`` on every coordinate
    (random signs ``s``; the base row is made orthogonal to ``s``, so the partner's norm
    moves by ``|step|^2 / 2``, about ``1e-11``, and float32 storage moves a coordinate by
    under ``0.01 tol``), plus a chain of three rows 0.9 tol apart
    (ends 1.8 tol apart: one group through the middle row), last-bit neighbours, a
    scaled copy, exact copies and zero rows.
    """
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    inside, outside = [], []
    k = 0

    def orthogonal_base(signs: np.ndarray) -> np.ndarray:
        g = rng.standard_normal(d)
        g -= (g @ signs) / (signs @ signs) * signs
        return g / np.linalg.norm(g)

    for factor, bucket in ((0.9, inside), (1.1, outside)):
        for _ in range(12):
            signs = rng.choice([-1.0, 1.0], size=d)
            v[k] = orthogonal_base(signs)
            v[k + 1] = v[k] + factor * TOL * signs
            bucket.append((k, k + 1))
            k += 2
    signs = rng.choice([-1.0, 1.0], size=d)  # a chain: a-b and b-c at 0.9 tol, a-c at 1.8 tol
    v[k] = orthogonal_base(signs)
    v[k + 1] = v[k] + 0.9 * TOL * signs
    v[k + 2] = v[k] + 1.8 * TOL * signs
    k += 3
    v = v.astype(dtype)
    v[k + 1] = np.nextafter(v[k], dtype(np.inf))  # every coordinate one ulp apart
    v[k + 2] = v[k]
    v[k + 2, 5] = np.nextafter(v[k, 5], dtype(-np.inf))  # one coordinate one ulp apart
    v[k + 3] = v[k] * dtype(3.0)  # the same direction at another norm
    k += 4
    v[k:k + 5] = v[k - 1]  # exact copies
    k += 5
    v[k:k + 3] = 0.0  # zero rows: a group of their own
    return v, inside, outside


def only_path(monkeypatch, path: str) -> None:
    """Make the check use one search path only (the other raises or declines)."""
    if path == "coordinates":
        monkeypatch.setattr(artefacts, "_near_ties_by_directions", None)  # calling it would raise
    else:
        monkeypatch.setattr(artefacts, "_near_ties_by_coordinates", lambda v, tol, norms=None: None)


def reference_ties(want: list, inside: list, outside: list):
    """``tied(i, j)`` of the reference's groups, after checking that they tie every pair planted at 0.9 tol and no
    pair planted at 1.1 tol (the planted cases are what they claim to be)."""
    together = {frozenset(g) for g in want}

    def tied(i: int, j: int) -> bool:
        return any({f"w{i}", f"w{j}"} <= g for g in together)

    assert all(tied(i, j) for i, j in inside), "the reference ties every pair planted at 0.9 tol"
    assert not any(tied(i, j) for i, j in outside), "the reference ties no pair planted at 1.1 tol"
    return tied


@pytest.mark.parametrize("path", ["coordinates", "directions"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1])
def test_groups_equal_a_plain_pairwise_loop_at_the_edges_of_the_window(dtype, seed, path, monkeypatch):
    v, inside, outside = planted(dtype, seed)
    only_path(monkeypatch, path)
    want = plain_groups(v, TOL)
    reference_ties(want, inside, outside)
    assert ("w48", "w49", "w50") in want, "a chain 0.9 tol apart is one group"
    assert found_groups(v) == want


def test_sparse_rows_fall_back_to_dense_directions_and_keep_the_groups():
    rng = np.random.default_rng(5)
    n, d = 200, 64
    v = np.zeros((n, d), dtype=np.float32)
    for i in range(n):
        cols = rng.choice(d, size=3, replace=False)
        v[i, cols] = rng.random(3).astype(np.float32) + 0.1
    v[11] = v[10] * np.float32(2.0)
    v[21] = v[20]
    v[21, np.flatnonzero(v[20])[0]] += np.float32(0.5 * TOL)
    norms, _, _ = artefacts._row_norms(v)
    assert artefacts._key_columns(v, norms) is None, "every coordinate is mostly zero: no coordinate keys"
    want = plain_groups(v, TOL)
    assert ("w10", "w11") in want and ("w20", "w21") in want
    assert found_groups(v) == want


def test_many_copies_of_one_vector_stay_one_group_on_both_paths(monkeypatch):
    rng = np.random.default_rng(6)
    v = rng.standard_normal((400, 16)).astype(np.float32)  # random rows: no two within 1e-6 (checked below on a part)
    v[100:400] = v[0]  # three quarters of the rows are one vector (tokenizer <unk>): the dense-direction path
    assert found_groups(v) == [tuple(f"w{i}" for i in [0, *range(100, 400)])]
    part = v[:60].copy()
    part[5:9] = part[4]  # a few copies: merged on the coordinate path itself
    want = plain_groups(part, TOL)
    assert want == [("w4", "w5", "w6", "w7", "w8")]
    monkeypatch.setattr(artefacts, "_near_ties_by_directions", None)  # the coordinate path must not need it
    assert found_groups(part) == want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_norms_stay_within_their_stated_bound_at_every_scale(dtype):
    rng = np.random.default_rng(7)
    d = 384
    x = rng.standard_normal((64, d))
    info = np.finfo(dtype)
    scales = np.r_[np.ones(40), [float(info.tiny) * 1e3, float(info.max) / 1e3, 1e-30, 1e30] * 6]
    v = (x * scales[:, None]).astype(dtype)
    v[-1] = 0.0
    norms, zero, rel = artefacts._row_norms(v)
    exact = []
    for r in v.astype(np.float64):  # the reference norm: scaled by the largest coordinate, summed exactly (math.fsum)
        peak = float(np.abs(r).max())
        exact.append(math.sqrt(math.fsum((x / peak) ** 2 for x in r)) * peak if peak > 0 else 0.0)
    exact = np.array(exact)
    assert zero.tolist() == [not r.any() for r in v]
    ok = exact > 0
    err = np.abs(norms[ok] / exact[ok] - 1)
    assert (err <= rel).all(), f"largest relative error {err.max():.3g} above the bound {rel:.3g}"
    u = info.eps / 2
    assert rel < d * u, "the bound is about half of gamma_d"


def test_nan_rows_are_tied_with_nothing():
    rng = np.random.default_rng(8)
    v = rng.standard_normal((30, 8)).astype(np.float32)
    v[3] = v[2]
    v[7] = np.nan
    v[8] = np.nan
    assert found_groups(v) == [("w2", "w3")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_norms_of_a_spreads_give_the_same_groups_without_a_pass(dtype, monkeypatch):
    from semanscope_nb.metrics.spreads import Spreads

    v, _, _ = planted(dtype, 3)
    v = v[np.abs(v).sum(axis=1) > 0] * dtype(7.0)  # no zero rows (a Spreads needs them dropped), not unit norm
    n = len(v)
    names = tuple(f"w{i}" for i in range(n))
    other = np.random.default_rng(9).standard_normal((n, v.shape[1])).astype(dtype)
    aw = AlignedWords(("en", "de"), (v, other), (sp.identity(n, format="csr"),) * 2, names, words=(names, names))
    norms = Spreads(aw).norms
    monkeypatch.setattr(artefacts, "_row_norms", None)  # no norm pass may run
    monkeypatch.setattr(artefacts, "_near_ties_by_directions", None)
    got = artefacts.degenerate_vector_groups(aw, tol=TOL, norms=norms)
    assert sorted(got["en"]) == plain_groups(v, TOL) and "de" not in got


def test_norms_of_the_wrong_shape_or_sign_are_named():
    v = np.random.default_rng(10).standard_normal((6, 4))
    names = tuple("abcdef")
    aw = AlignedWords(("en",), (v,), (sp.identity(6, format="csr"),), names, words=(names,))
    with pytest.raises(ValueError, match="norms must hold one float64 norm per word vector"):
        artefacts.degenerate_vector_groups(aw, norms=[np.ones(5)])
    with pytest.raises(ValueError, match="norms must be >= 0"):
        artefacts.degenerate_vector_groups(aw, norms=[-np.ones(6)])


def pairwise_groups(v: np.ndarray, tol: float) -> list[tuple[str, ...]]:
    """:func:`plain_groups` for a few thousand rows: each row against all later rows in one NumPy comparison, union-find."""
    x = np.asarray(v, dtype=np.float64)
    norm = np.sqrt((x * x).sum(axis=1))
    units = x / np.where(norm > 0, norm, 1.0)[:, None]
    parent = list(range(len(x)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(x)):
        for j in (i + 1 + np.flatnonzero(np.abs(units[i + 1:] - units[i]).max(axis=1) <= tol)).tolist():
            parent[find(i)] = find(j)
    comps: dict[int, list[str]] = {}
    for i in range(len(x)):
        comps.setdefault(find(i), []).append(f"w{i}")
    return sorted(tuple(c) for c in comps.values() if len(c) > 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("given_norms", [False, True])
@pytest.mark.parametrize("cell_widths", [2, 16])
def test_planted_near_ties_across_grid_slots_and_cells_equal_the_pairwise_loop(dtype, given_norms, cell_widths, monkeypatch):
    """Many pairs planted at 0.9, 0.99, 1.01 and 1.1 tol land at random places on the search grid.

    The grid of the coordinate path (slots on one unit coordinate, cells on another) is
    where a quantised key goes wrong: a tied pair split by a slot or cell border must
    still be found.  A spy on ``_coordinate_grid`` records each row's grid key, and the
    test checks that enough tied pairs straddle a slot border and a cell border for the
    comparison with the pairwise loop to mean something.  Cells 2 tie windows wide (the
    default is 16) put many tied pairs across a cell border and half the rows near the top
    of their cell.
    """
    rng = np.random.default_rng(11 + given_norms)
    n_pairs, d = 400, 16
    base = rng.standard_normal((2 * n_pairs + 200, d))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    factors = np.repeat([0.9, 0.99, 1.01, 1.1], n_pairs // 4)
    for p, factor in enumerate(factors):  # partner = base + factor tol on every coordinate, base orthogonal to the step
        signs = rng.choice([-1.0, 1.0], size=d)
        g = base[2 * p] - (base[2 * p] @ signs) / d * signs
        base[2 * p] = g / np.linalg.norm(g)
        base[2 * p + 1] = base[2 * p] + factor * TOL * signs
    v = (base * rng.uniform(0.5, 2.0, size=(len(base), 1))).astype(dtype)  # not unit norm
    seen = {}
    grid = artefacts._coordinate_grid

    def spy(k0, k1, w0, w1, **kw):
        out = grid(k0, k1, w0, w1, **kw)
        seen["key"], seen["step"] = out[0].copy(), out[2]  # a copy: the search sorts the keys in place
        return out

    monkeypatch.setattr(artefacts, "_coordinate_grid", spy)
    monkeypatch.setattr(artefacts, "_CELL_WIDTHS", cell_widths)
    monkeypatch.setattr(artefacts, "_near_ties_by_directions", None)  # the coordinate path must answer
    n = len(v)
    names = tuple(f"w{i}" for i in range(n))
    aw = AlignedWords(("en",), (v,), (sp.identity(n, format="csr"),), names, words=(names,))
    norms = [np.sqrt((v.astype(np.float64) ** 2).sum(axis=1))] if given_norms else None
    got = sorted(artefacts.degenerate_vector_groups(aw, tol=TOL, norms=norms).get("en", []))
    want = pairwise_groups(v, TOL)
    assert got == want
    tied = [(2 * p, 2 * p + 1) for p in range(n_pairs) if (f"w{2 * p}", f"w{2 * p + 1}") in want]
    assert len(tied) >= n_pairs // 4, "at least the pairs planted at 0.9 tol are tied"
    key, step = seen["key"], seen["step"]
    slots_apart = sum(key[a] % step != key[b] % step for a, b in tied)
    cells_apart = sum(key[a] // step != key[b] // step for a, b in tied)
    assert slots_apart >= 20, f"only {slots_apart} tied pairs straddle a slot border"
    assert cells_apart >= (20 if cell_widths == 2 else 0), f"only {cells_apart} tied pairs straddle a cell border"


def test_the_norm_pass_copies_the_key_columns_it_reads_block_by_block(monkeypatch):
    rng = np.random.default_rng(12)
    v = rng.standard_normal((1000, 48)).astype(np.float32)
    v[17] = 0.0
    v[300] *= np.float32(1e-30)  # a row redone in float64
    monkeypatch.setattr(artefacts, "_PASS_BYTES", 64 * 48 * 4 * 3 + 100)  # blocks of 192 rows: the last one partial
    norms, zero, rel, picked = artefacts._norms_and_columns(v, np.array([5, 40, 7]))
    whole, whole_zero, whole_rel = artefacts._row_norms(v)
    np.testing.assert_array_equal(picked, v[:, [5, 40, 7]].T, err_msg="the copied columns are the vectors' own entries")
    np.testing.assert_allclose(norms, whole, rtol=2 * rel, err_msg="blocked and whole passes sum the same squares per row")
    assert zero.tolist() == whole_zero.tolist() and rel == whole_rel and zero[17]


@pytest.mark.parametrize("options", [dict(n_boot=0), dict(n_boot=20), dict(n_boot=20, sem="delta"), dict(n_boot=0, method="BCa")])
def test_semantic_affinity_gives_the_check_the_norms_of_its_spreads_on_every_path(options, monkeypatch):
    from semanscope_nb.metrics.affinity import semantic_affinity

    rng = np.random.default_rng(13)
    emb = {lang: rng.standard_normal((60, 12)).astype(np.float32) for lang in ("en", "de", "fr")}
    emb["de"][4] = emb["de"][3]  # a degenerate group, so that the check has something to find
    calls = []
    check = artefacts.degenerate_vector_groups

    def spy(aw, **kw):
        calls.append(kw.get("norms"))
        return check(aw, **kw)

    monkeypatch.setattr(artefacts, "degenerate_vector_groups", spy)
    monkeypatch.setattr(artefacts, "_norms_and_columns", None)  # no second norm pass may run
    res = semantic_affinity(emb, seed=0, **options)
    assert calls and all(nm is not None and len(nm) == 3 for nm in calls), "every call reuses the Spreads' norms"
    assert res.excluded_concepts.get("degenerate-vector") == 2, "the planted pair of equal vectors is found and excluded"


@pytest.mark.parametrize("seed", range(24))
def test_random_copies_scaled_copies_and_near_copies_equal_the_pairwise_loop(seed):
    """Random shapes, tolerances and plantings (either search path, whichever the check takes) against the loop."""
    rng = np.random.default_rng(1000 + seed)
    n, d = int(rng.integers(2, 300)), int(rng.integers(4, 40))
    dtype = (np.float32, np.float64)[seed % 2]
    tol = float(rng.choice([1e-9, 1e-6, 1e-4, 1e-3]))
    v = rng.standard_normal((n, d))
    if seed % 5 == 0:
        v[:, 0] *= 50  # one dominant coordinate
    for _ in range(int(rng.integers(0, n // 2 + 1))):
        i, j = rng.integers(0, n, 2)
        kind = rng.integers(0, 4)
        if kind == 0:
            v[j] = v[i]
        elif kind == 1:
            v[j] = v[i] * rng.uniform(0.1, 10)
        elif kind == 2 and np.any(v[i]):  # a near copy: up to 1.2 tol off on each unit coordinate
            v[j] = (v[i] / np.linalg.norm(v[i]) + rng.uniform(-1.2, 1.2, d) * tol) * rng.uniform(0.5, 2)
        else:
            v[j] = 0.0
    if seed % 7 == 0:
        v[rng.integers(0, n)] = np.nan
    v = v.astype(dtype)
    names = tuple(f"w{i}" for i in range(n))
    aw = AlignedWords(("en",), (v,), (sp.identity(n, format="csr"),), names, words=(names,))
    assert sorted(artefacts.degenerate_vector_groups(aw, tol=tol).get("en", [])) == pairwise_groups(v, tol)


def planted_sparse(dtype: type, seed: int, n: int = 300, d: int = 2048) -> tuple[np.ndarray, list[tuple[int, int]], list[tuple[int, int]]]:
    """Wide rows with 8 non-zeros each (a TF-IDF space) plus planted ties: (vectors, pairs at 0.9 tol, pairs at 1.1 tol).

    Planted: an exact copy, a scaled copy, partners moved by 0.9 / 1.1 ``tol`` on each of their
    non-zero unit coordinates (the base made orthogonal to the signs on its pattern, as in
    :func:`planted`), a chain of three 0.9 tol apart, three zero rows, a row with the same
    pattern and other values, and a row with the same values on another pattern.
    """
    rng = np.random.default_rng(seed)

    def row_on(cols: np.ndarray, values: np.ndarray) -> np.ndarray:
        r = np.zeros(d)
        r[cols] = values
        return r

    v = np.stack([row_on(rng.choice(d, 8, replace=False), rng.uniform(0.1, 1.0, 8)) for _ in range(n)])
    inside, outside = [], []
    k = 0

    def orthogonal_base(cols: np.ndarray, signs: np.ndarray) -> np.ndarray:
        while True:
            g = rng.uniform(0.2, 1.0, cols.size)
            g -= (g @ signs) / (signs @ signs) * signs
            g /= np.linalg.norm(g)
            if np.abs(g).min() > 0.01:  # every non-zero far above tol
                return g

    for factor, bucket in ((0.9, inside), (1.1, outside)):
        for _ in range(6):
            cols = rng.choice(d, 8, replace=False)
            signs = rng.choice([-1.0, 1.0], size=8)
            g = orthogonal_base(cols, signs)
            v[k], v[k + 1] = row_on(cols, g), row_on(cols, g + factor * TOL * signs)
            bucket.append((k, k + 1))
            k += 2
    cols = rng.choice(d, 8, replace=False)
    signs = rng.choice([-1.0, 1.0], size=8)
    g = orthogonal_base(cols, signs)
    for t in range(3):  # a chain: a-b and b-c at 0.9 tol, a-c at 1.8 tol
        v[k + t] = row_on(cols, g + 0.9 * t * TOL * signs)
    k += 3
    v[k + 1] = v[k]  # an exact copy
    v[k + 2] = v[k] * 3.0  # the same direction at another norm
    v[k + 3] = row_on(np.flatnonzero(v[k]), rng.uniform(0.1, 1.0, 8))  # the same pattern, other values
    v[k + 4] = np.roll(v[k], 5)  # the same values, another pattern
    k += 5
    v[k:k + 3] = 0.0  # zero rows: a group of their own
    return v.astype(dtype), inside, outside


def sparse_groups(v: np.ndarray, monkeypatch, *, route: str) -> list[tuple[str, ...]]:
    """found_groups through one route: 'support' (must be taken and must answer) or 'dense' (the support route off)."""
    calls = []
    support = artefacts._near_ties_by_support

    def spy(x, tol):
        out = support(x, tol)
        calls.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(artefacts, "_near_ties_by_support", spy if route == "support" else (lambda x, tol: None))
        got = found_groups(v)
    if route == "support":
        assert calls == [True], "the sparse rows are grouped by their pattern, without a dense pass"
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_rows_keyed_by_their_pattern_give_the_groups_of_the_pairwise_loop_and_the_dense_route(dtype, seed, monkeypatch):
    v, inside, outside = planted_sparse(dtype, seed)
    want = pairwise_groups(v, TOL)
    tied = reference_ties(want, inside, outside)
    assert ("w24", "w25", "w26") in want, "a chain 0.9 tol apart is one group"
    assert ("w27", "w28", "w29") in want and ("w32", "w33", "w34") in want, "copies and zero rows"
    assert not tied(27, 30) and not tied(27, 31), "a shared pattern or shared values alone tie nothing"
    assert sparse_groups(v, monkeypatch, route="support") == want
    assert sparse_groups(v, monkeypatch, route="dense") == want


def test_sparse_rows_with_a_non_zero_near_tol_or_a_nan_take_the_dense_route_and_keep_the_groups(monkeypatch):
    v, _, _ = planted_sparse(np.float64, 2)
    v[41] = v[40]
    v[41, np.flatnonzero(v[40] == 0)[0]] = 0.5 * TOL * np.linalg.norm(v[40])  # tied to row 40 through another pattern
    assert artefacts._looks_sparse(v)
    assert artefacts._near_ties_by_support(v, TOL) is None, "a non-zero within 2 tol: patterns may differ in a tie"
    want = pairwise_groups(v, TOL)
    assert ("w40", "w41") in want
    assert found_groups(v) == want
    w, _, _ = planted_sparse(np.float32, 3)
    w[50, np.flatnonzero(w[50])[0]] = np.nan
    assert artefacts._near_ties_by_support(w, TOL) is None, "a NaN: tied with nothing, as the dense route decides"
    assert found_groups(w) == pairwise_groups(w, TOL)


def test_dense_or_narrow_rows_never_take_the_sparse_route():
    rng = np.random.default_rng(11)
    assert not artefacts._looks_sparse(rng.standard_normal((50, 2048)))
    narrow = np.zeros((50, 64))
    narrow[:, 0] = 1.0
    assert not artefacts._looks_sparse(narrow), "below SPARSE_MIN_DIMS a space is never counted as sparse"
    mostly = np.zeros((200, 2048))
    mostly[:64, :3] = 1.0
    mostly[64:] = rng.standard_normal((136, 2048))  # sparse head, dense body
    assert artefacts._looks_sparse(mostly) and artefacts._near_ties_by_support(mostly, TOL) is None


def _key_columns_by_columns(v: np.ndarray, norms: np.ndarray | None, count: int = 4, sample: int = 256):
    """The key columns by the rule written plainly: per column, the zeros counted and the spread of the unit values."""
    n, d = v.shape
    run = max(1, min(n, sample) // 8)
    starts = np.linspace(0, n - run, 8).astype(np.int64)
    rows = [r for a in starts for r in range(a, a + run)]
    x = np.asarray(v, dtype=np.float64)[rows]
    nx = np.sqrt((x * x).sum(axis=1)) if norms is None else np.asarray(norms)[rows]
    x, nx = x[nx > 0], nx[nx > 0]
    if not x.shape[0]:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        u = x / nx[:, None]
        mean = u.mean(axis=0)
        spread = np.nan_to_num(np.einsum("ij,ij->j", u, u) / u.shape[0] - mean * mean, nan=0.0)
    dense = [j for j in range(d) if sum(1 for i in range(u.shape[0]) if u[i, j] == 0) <= 0.01 * u.shape[0]]
    if len(dense) < count:
        return None
    dense = np.array(dense)
    return dense[np.argsort(-spread[dense], kind="stable")[:count]]


@pytest.mark.parametrize("kind", ["dense", "dense-float32", "zero-rows", "a-few-zeros", "sparse"])
def test_key_columns_are_those_of_the_per_column_rule(kind):
    """``_key_columns`` counts zeros column by column only when the sample holds more than 1% of a column's worth in
    all, and divides its own copy of the sample in place: the columns are exactly those of the plain rule."""
    rng = np.random.default_rng(8)
    v = rng.normal(size=(300, 40))
    if kind == "dense-float32":
        v = v.astype(np.float32)
    elif kind == "zero-rows":
        v[::7] = 0.0
    elif kind == "a-few-zeros":  # zeros in a few columns: more than 1% of the sample in all, few in most columns
        v[:40, 3] = 0.0
        v[:2, 5] = 0.0
    elif kind == "sparse":
        v = np.where(rng.random(v.shape) < 0.9, 0.0, v)
    norms = np.sqrt(np.einsum("ij,ij->i", v.astype(np.float64), v.astype(np.float64)))
    for given in (norms, None):
        got = artefacts._key_columns(v, given)
        want = _key_columns_by_columns(v, given)
        if want is None:
            assert got is None, f"{kind}: too few dense columns"
        else:
            assert got is not None and got.tolist() == want.tolist(), f"{kind}: the same key columns"
    if kind == "a-few-zeros":
        assert 3 not in artefacts._key_columns(v, norms), "the column zero on 40 of the sample's rows is left out"
