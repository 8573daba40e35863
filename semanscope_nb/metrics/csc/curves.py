"""The public CSC curves and overlap: one route shared with the CSC point and its bootstrap.

:func:`csc_curves` / :func:`csc_overlap` compute, by default, exactly what
:func:`~semanscope_nb.metrics.csc.separation.concept_separation` reports and
what its bootstrap centres on (:func:`~semanscope_nb.metrics.csc.bootstrap.full_sample_curves`);
the single-route KDEs are in :mod:`semanscope_nb.metrics.csc.kde`.

Layer: metrics.  Imports the CSC KDE room and the bootstrap's statistic only.
"""

from __future__ import annotations

from typing import Any


from semanscope_nb.metrics.csc.bootstrap import full_sample_curves
from semanscope_nb.metrics.csc.kde import CSCCurves, KDEMethod, checked_sims, kde_curves, resolve_bandwidth, validate_grid


def csc_curves(
    fuzz_sims: Any,
    neg_sims: Any,
    *,
    resolution: int = 2001,
    bandwidth: float | str | None = None,
    method: KDEMethod = "auto",
) -> CSCCurves:
    """Both CSC curves: KDE on ``np.linspace(-1, 1, resolution)``, each normalised to sum 1 (paper eq. 1).

    ``method="auto"`` (the default) is the fine-bin FFT route the CSC
    bootstrap computes every resample by (:func:`~semanscope_nb.metrics.csc.bootstrap.full_sample_curves`),
    so this overlap is the one :func:`concept_separation` reports for the same
    similarities; ``"binned"``, ``"windowed"`` and ``"direct"`` (scipy) pick
    one KDE route for both curves.

    ``bandwidth`` sets the kernel sd = factor x the curve's sample standard
    deviation, for each curve separately (scipy's ``bw_method``):

    * ``None`` / ``'scott'`` (default): factor ``n**(-1/5)``, so it shrinks with
      the number of similarities ``n`` (0.40 at n=100, 0.25 at n=1,000, 0.16 at
      n=10,000);
    * ``'authors-demo'``: the fixed factor 0.2 of the authors' demo app
      (``gaussian_kde`` with ``covariance_factor = 0.2``, their "kernel
      width"; paper 002 itself states no bandwidth): narrower than Scott's
      below n = 0.2**-5 = 3,125 similarities, wider above; use it to compare
      overlaps with the authors' tool.  ``'paper'`` is its deprecated alias;
    * ``'silverman'``: ``(3n/4)**(-1/5)``; a number: that factor.  Each input must be 1-D, finite and in
    [-1, 1] (excursions up to ``SIM_TOLERANCE`` from rounding are clipped);
    anything else raises ``ValueError`` naming the argument.

    >>> c = csc_curves([0.95, 0.9, 0.97, 0.92], [0.5, 0.6, 0.55, 0.4], resolution=201)
    >>> round(float(c.fuzz.sum()), 6), c.overlap < 0.05
    (1.0, True)
    """
    validate_grid(resolution, bandwidth)
    bandwidth = resolve_bandwidth(bandwidth)
    f = checked_sims(fuzz_sims, "fuzz_sims")
    n = checked_sims(neg_sims, "neg_sims")
    if method == "auto":  # one truth: the route concept_separation's point and its bootstrap share
        return full_sample_curves(f, n, resolution=resolution, bandwidth=bandwidth)
    return kde_curves(f, n, resolution=resolution, bandwidth=bandwidth, method=method)


def csc_overlap(
    fuzz_sims: Any, neg_sims: Any, *, resolution: int = 2001, bandwidth: float | str | None = None, method: KDEMethod = "auto"
) -> float:
    """Overlap of the fuzz and negation curves (paper eq. 1-2), in [0, 1]: lower = better separation.

    >>> round(csc_overlap([0.9, 0.95, 0.97], [0.9, 0.95, 0.97]), 12)   # a sum of areas: 1 to rounding (NumPy's order)
    1.0
    """
    return csc_curves(fuzz_sims, neg_sims, resolution=resolution, bandwidth=bandwidth, method=method).overlap
