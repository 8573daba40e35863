"""The exact reduced form of sparse surface vectors (issue 21): the same statistics in the words' own span.

:func:`~semanscope_nb.metrics.spreads.reduced_words` replaces N sparse word vectors in D
dims (N < D) by their coordinates in an orthonormal basis of their span (N dims, from a
Householder QR).  Every SA statistic sees the vectors only through inner products, so the
statistics must equal the full-dimensional ones to rounding, replicate for replicate, and
every decision (tier) exactly.

Tolerance: Householder QR is backward stable column by column, ``||a_j - Q r_j|| <= c N u ||a_j||``
(Higham, Accuracy and Stability, Thm 19.4; in practice far below), so each inner product of
unit words moves by at most about ``2 c N u``: with N <= 512 words and u = 1.1e-16 that is
1e-13 for c = 1.  The spreads are sums of such terms divided by sums of weights (no
cancellation beyond that of the full-dim products: the cosine spreads of TF-IDF words lie
near 1), and SA is a ratio of spreads, so its relative error is a few times that.
``RTOL = 1e-10`` leaves a factor of about 1000 for the constant ``c`` and the ratio's
condition; the measured differences are ~1e-15.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics import spreads as spreads_module
from semanscope_nb.metrics.chance import NullParts, resample_counts, verdict_bootstrap
from semanscope_nb.metrics.spreads import AlignedWords, Spreads, reduced_words
from statistics_check import assert_statistics_close

RTOL = 1e-10  # from the QR's backward error (module docstring)


def _sparse_words(R, L, d, *, rng, nnz=12, alternatives=False):
    """TF-IDF-like unit rows (``nnz`` of ``d`` coordinates non-zero, non-negative); with ``alternatives``: rows holding two words,
    one of them shared with another row."""
    vectors, incs = [], []
    for _ in range(L):
        n = R + (R // 4 if alternatives else 0)
        X = np.zeros((n, d), dtype=np.float32)
        for k in range(n):
            X[k, rng.choice(d, size=nnz, replace=False)] = rng.random(nnz)
        vectors.append(X / np.linalg.norm(X, axis=1, keepdims=True))
        rows, cols = list(range(R)), list(range(R))
        if alternatives:
            for j, r in enumerate(range(0, R, 4)):
                rows.append(r)
                cols.append(R + j)
            rows.append(1)
            cols.append(2)  # row 1 also holds row 2's word
        incs.append(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(R, n)))
    return AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(vectors), tuple(incs), tuple(map(str, range(R))))


def _plain_sa(aw, counts):
    """SA (cosine) per count row by explicit pairs and tuples on the original vectors (paper eq. 3)."""
    X = [np.asarray(v, dtype=np.float64) for v in aw.vectors]
    U = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in X]
    A = [inc.toarray() for inc in aw.incidence]
    out = []
    for c in np.atleast_2d(counts):
        intra = []
        for u, a in zip(U, A):
            w = (c @ a) / a.sum(axis=0)
            ww = np.outer(w, w)
            np.fill_diagonal(ww, 0.0)
            intra.append((ww * (1.0 - u @ u.T)).sum() / ww.sum())
        num = den = 0.0
        for r in range(len(c)):
            for t in itertools.product(*[np.flatnonzero(a[r]) for a in A]):
                num += c[r] * np.mean([1.0 - U[i][t[i]] @ U[j][t[j]] for i, j in itertools.combinations(range(len(U)), 2)])
                den += c[r]
        out.append(np.mean(intra) / (np.mean(intra) + num / den))
    return np.array(out)


def _statistics(aw, counts, *, reduce):
    s = Spreads(aw, reduce=reduce)
    parts = NullParts(aw, s)
    sp_ = s.spreads(counts, scaled=True)
    null_cos, null_euc = parts.inter(counts)
    out = {**sp_, "null_cos": null_cos, "null_euc": null_euc}
    for key in ("intra_euc", "inter_euc", "null_euc"):  # units of each form's own power of two -> the vectors' units
        out[key] = np.ldexp(out[key], s.exponent)
    return s, out


@pytest.mark.parametrize("alternatives", [False, True])
def test_reduced_statistics_equal_the_full_dimensional_ones_on_random_sparse_words(alternatives):
    rng = np.random.default_rng(7)
    aw = _sparse_words(16, 3, 2048, rng=rng, alternatives=alternatives)
    red = reduced_words(aw)
    N = sum(v.shape[0] for v in aw.vectors)
    assert red is not None and all(v.shape == (n.shape[0], N) for v, n in zip(red.vectors, aw.vectors))
    # the Gram matrix of all the words, in both forms
    X = np.vstack([np.asarray(v, dtype=np.float64) for v in aw.vectors])
    Y = np.vstack(red.vectors)
    np.testing.assert_allclose(Y @ Y.T, X @ X.T, rtol=0, atol=RTOL, err_msg="inner products of unit words move by rounding only")
    counts = np.vstack([np.ones((1, aw.n_rows)), *resample_counts(aw.n_rows, 20, seed=3)])
    reduced, got = _statistics(aw, counts, reduce=True)
    full, want = _statistics(aw, counts, reduce=False)
    assert reduced.d == N and full.d == 2048, "the reduced form runs in the words' span, the other in all 2048 dims"
    assert all(S is not None for S in full.sparse), "the full-dim side takes the sparse products"
    assert_statistics_close(got, want, "beyond the QR's rounding", rtol=RTOL)
    # and both against the plain pairwise SA on the original vectors
    sa = got["intra_cos"] / (got["intra_cos"] + got["inter_cos"])
    np.testing.assert_allclose(sa[:3], _plain_sa(aw, counts[:3]), rtol=RTOL, err_msg="SA against the plain loop")
    # the Euclidean spreads in the vectors' own units (the two forms scale by different powers of two)
    ours = reduced.spreads(counts[:5])
    theirs = full.spreads(counts[:5])
    for key in ("intra_euc", "inter_euc"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=RTOL, err_msg=f"{key} in the vectors' units")


def test_reduction_is_skipped_where_it_does_not_pay(monkeypatch):
    rng = np.random.default_rng(8)
    monkeypatch.setattr(spreads_module, "REDUCE_MAX_WORDS", 20)  # the rule, on a small case
    dense = AlignedWords(("a", "b"), (rng.normal(size=(30, 2048)),) * 2, (sp.identity(30, format="csr"),) * 2, tuple(map(str, range(30))))
    assert reduced_words(dense) is None, "dense vectors keep their dims"
    many = _sparse_words(11, 2, 4096, rng=rng, nnz=4)
    assert reduced_words(many) is None, "more words than REDUCE_MAX_WORDS: the sparse products"
    assert reduced_words(many, max_words=10**6) is not None
    narrow = _sparse_words(30, 2, 1024, rng=rng, nnz=2)  # 60 words on at most 120 columns of 1024
    cols = np.unique(sp.vstack([sp.csr_matrix(v) for v in narrow.vectors]).indices).size
    assert (reduced_words(narrow) is None) == (cols < 2 * 60)
    assert Spreads(_sparse_words(20, 2, 2048, rng=rng), sparse=True).d == 2048, "sparse= given: the route asked for"


def test_a_zero_vector_stays_zero():
    rng = np.random.default_rng(9)
    aw = _sparse_words(20, 2, 2048, rng=rng)
    v0 = aw.vectors[0].copy()
    v0[3] = 0.0
    aw = AlignedWords(aw.languages, (v0, aw.vectors[1]), aw.incidence, aw.labels)
    red = reduced_words(aw)
    assert not np.any(red.vectors[0][3]), "a zero word is the zero vector in the reduced form too (QR maps 0 to 0)"
    assert np.all(np.linalg.norm(np.delete(red.vectors[0], 3, axis=0), axis=1) > 0.5)


@pytest.mark.slow  # the real baseline end to end, two affinity_of_words calls: several seconds
def test_real_tfidf_char_verdict_equal_in_both_forms(monkeypatch):
    """The real surface baseline (tfidf-char) on the first 40 concepts of edge-cases (with | alternatives): every
    verdict statistic replicate for replicate, and the tiers of affinity_of_words, reduced or not."""
    import semanscope_nb as snb
    from semanscope_nb.metrics.affinity import affinity_of_words
    from semanscope_nb.runs.task_library import aligned_words

    from semanscope_nb.metrics.artefacts import subset_rows

    aw = aligned_words(snb.embed("edge-cases", "tfidf-char", cache=False, progress=False))
    aw = subset_rows(aw, np.arange(aw.n_rows) < 40)  # the first 40 concepts, as the quick benchmark takes them
    assert reduced_words(aw) is not None, "40 concepts of TF-IDF words: the reduced form applies"
    keep = np.arange(aw.n_rows) % 5 != 0
    runs = {}
    for reduce in (True, False):
        d_full, d_sub = {}, {}
        s = Spreads(aw, reduce=reduce)
        v = verdict_bootstrap(aw, n_boot=200, seed=4, spreads=s, keep=keep, surface=aw, distributions=d_full,
                              subset_distributions=d_sub)
        runs[reduce] = (s, v, d_full, d_sub)
    assert runs[True][0].d < 1024 <= runs[False][0].d
    for k in runs[False][2]:
        np.testing.assert_allclose(runs[True][2][k], runs[False][2][k], rtol=RTOL, err_msg=f"all concepts, {k}")
        np.testing.assert_allclose(runs[True][3][k], runs[False][3][k], rtol=RTOL, err_msg=f"kept concepts, {k}")
    a, b = runs[True][1].surface, runs[False][1].surface
    np.testing.assert_allclose(a.difference.value, b.difference.value, rtol=0, atol=RTOL, err_msg="surface gap")
    # decisions: affinity_of_words with the reduction and with it switched off
    with_reduction = affinity_of_words(aw, n_boot=200, seed=4, on_zero="drop", surface=aw)
    monkeypatch.setattr(spreads_module, "REDUCE_MAX_WORDS", 0)
    without = affinity_of_words(aw, n_boot=200, seed=4, on_zero="drop", surface=aw)
    assert with_reduction.tier == without.tier
    np.testing.assert_allclose([with_reduction.sa_cosine, with_reduction.euclidean.sa, with_reduction.chance.sa_null.value],
                               [without.sa_cosine, without.euclidean.sa, without.chance.sa_null.value], rtol=RTOL,
                               err_msg="SA and chance level of affinity_of_words")
    np.testing.assert_allclose(tuple(with_reduction.cosine.ci), tuple(without.cosine.ci), rtol=RTOL, err_msg="the interval")

