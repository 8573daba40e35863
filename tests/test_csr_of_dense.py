"""csr_of_dense: the CSR form scipy gives, built faster (issue 21: TF-IDF rows turned sparse on every warm job)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics.spreads import csr_of_dense


def _same(a: sp.csr_matrix, b: sp.csr_matrix) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr, err_msg="row pointers: the same entries per row")
    np.testing.assert_array_equal(a.indices, b.indices, err_msg="column indices, in scipy's canonical order")
    np.testing.assert_array_equal(a.data, b.data, err_msg="stored values: copies of the dense ones, no arithmetic")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_scipys_conversion_on_random_sparse_rows(dtype):
    rng = np.random.default_rng(21)
    x = np.where(rng.random((97, 513)) < 0.01, rng.standard_normal((97, 513)), 0.0).astype(dtype)
    x[5] = 0.0  # an empty row
    x[6, 7] = -0.0  # a negative zero is a zero
    x[8, 9] = np.nan  # kept, as scipy keeps it
    x[8, 10] = np.inf
    expected = sp.csr_matrix(x)
    got = csr_of_dense(x)
    assert got.has_canonical_format
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.data, expected.data)  # assert_array_equal treats NaN == NaN
    wide = csr_of_dense(x, dtype=np.float64)
    np.testing.assert_array_equal(wide.toarray(), x.astype(np.float64), err_msg="float32 -> float64 is exact")
    assert wide.dtype == np.float64


def test_edge_shapes_and_bad_input():
    for shape in [(0, 5), (3, 0), (0, 0), (1, 1)]:
        x = np.zeros(shape)
        _same(csr_of_dense(x), sp.csr_matrix(x))
    _same(csr_of_dense(np.eye(4)), sp.csr_matrix(np.eye(4)))
    view = np.arange(60.0).reshape(6, 10)[::2, 1::3]  # not contiguous
    _same(csr_of_dense(view), sp.csr_matrix(view))
    with pytest.raises(ValueError, match="2-d"):
        csr_of_dense(np.ones(3))
