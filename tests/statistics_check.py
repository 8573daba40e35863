"""One comparison of verdict statistics computed by two routes (sparse vs dense, reduced vs full, subset vs alone).

The ratios (``sa``, ``sa_null``, ...) are compared within ``rtol`` of themselves.  The gaps are differences,
``delta = sa - sa_null`` and ``corrected = delta / (1 - sa_null)``: their rounding is bounded relative to the two
terms, not to the gap, which can be 0 (under OpenBLAS's SSE kernels a replicate's gap was 0.0 on one route and
5.6e-17 on the other), so they get ``rtol`` of their terms as well.  NaNs must fall in the same replicates.
"""

from __future__ import annotations

import numpy as np

GAPS = ("delta", "corrected")


def assert_statistics_close(got: dict, want: dict, what: str, *, rtol: float, keys=None) -> None:
    """Every statistic of ``keys`` (default: those of ``want``) of the two routes within ``rtol`` (gaps: of their terms)."""
    terms = np.abs(np.asarray(want["sa"])) + np.abs(np.asarray(want["sa_null"])) if "sa_null" in want else None
    for key in keys if keys is not None else want:
        g, w = np.asarray(got[key], dtype=float), np.asarray(want[key], dtype=float)
        if key not in GAPS or terms is None:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0, err_msg=f"{key}: {what}")
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            allowance = rtol * terms if key == "delta" else rtol * terms / np.abs(1.0 - np.asarray(want["sa_null"]))
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{key}: {what}: undefined in the same replicates")
        ok = np.isnan(w) | (np.abs(g - w) <= rtol * np.abs(w) + allowance)
        assert ok.all(), f"{key}: {what}: {g[~ok]} vs {w[~ok]}, beyond rtol of the difference's terms"
