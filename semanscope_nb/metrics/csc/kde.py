"""Kernel density curves of cosine similarities on a fixed grid and their overlap (paper 002, eqs. 1-2).

Layer: metrics.  Pure NumPy; imports :mod:`semanscope_nb.errors` only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

# --------------------------------------------------------------------------- curves and overlap

KDEMethod = Literal["auto", "binned", "windowed", "direct"]
_BINNED_MIN_SD_STEPS = 4.0  # narrower kernels (in grid steps) use the exact windowed route
_BIN_OVERSAMPLE = 4  # the binned route bins at a quarter of the grid step
KERNEL_REACH = 8.0  # kernel truncated at 8 sd (relative mass lost < 1e-15)


#: the authors' demo app (not the paper: paper 002 states no bandwidth) calls gaussian_kde with covariance_factor = 0.2
AUTHORS_DEMO_BANDWIDTH = 0.2
PAPER_BANDWIDTH = AUTHORS_DEMO_BANDWIDTH  # old name, kept for imports
#: "paper" is the deprecated alias of "authors-demo" (the 0.2 comes from the authors' demo; the paper gives none)
BANDWIDTH_PRESETS = ("scott", "silverman", "authors-demo", "paper")


def resolve_bandwidth(bandwidth: Any) -> Any:
    """``bandwidth`` with the deprecated ``'paper'`` turned into ``'authors-demo'`` (with a DeprecationWarning).

    >>> resolve_bandwidth("authors-demo"), resolve_bandwidth(None), resolve_bandwidth(0.3)
    ('authors-demo', None, 0.3)
    """
    if isinstance(bandwidth, str) and bandwidth == "paper":
        import warnings

        warnings.warn("bandwidth='paper' is now bandwidth='authors-demo': the fixed factor 0.2 comes from the authors' "
                      "demo app; paper 002 itself states no bandwidth", DeprecationWarning, stacklevel=3)
        return "authors-demo"
    return bandwidth


def validate_grid(resolution: Any, bandwidth: Any) -> None:
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 10:
        raise ValueError(f"resolution must be an integer >= 10 (grid points over [-1, 1]), got {resolution!r}")
    if bandwidth is None or isinstance(bandwidth, str):
        if isinstance(bandwidth, str) and bandwidth not in BANDWIDTH_PRESETS:
            raise ValueError(f"bandwidth must be None, 'scott', 'silverman', 'authors-demo' or a number > 0, got {bandwidth!r}")
        return
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.number)) or not math.isfinite(bandwidth) or bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0 (scipy's bw_method factor; None = Scott's rule), got {bandwidth!r}")


def bandwidth_factor(n: Any, bandwidth: float | str | None = None) -> Any:
    """The factor scipy's ``gaussian_kde`` multiplies the sample std by, for ``n`` samples (scalar or array).

    ``None``/``'scott'``: ``n**(-1/5)``; ``'silverman'``: ``(3n/4)**(-1/5)``;
    ``'authors-demo'`` (deprecated alias ``'paper'``): the fixed 0.2 of the authors' demo app
    (whatever ``n``; paper 002 states no bandwidth); a number: itself.

    >>> round(bandwidth_factor(1000), 4), bandwidth_factor(1000, "authors-demo"), bandwidth_factor(1000, 0.5)
    (0.2512, 0.2, 0.5)
    """
    n = np.asarray(n, dtype=np.float64)
    if bandwidth is None or bandwidth == "scott":
        out = n ** (-1.0 / 5)
    elif bandwidth == "silverman":
        out = (n * 3.0 / 4.0) ** (-1.0 / 5)
    elif bandwidth in ("authors-demo", "paper"):
        out = np.full(n.shape, AUTHORS_DEMO_BANDWIDTH)
    else:
        out = np.full(n.shape, float(bandwidth))
    return float(out) if out.ndim == 0 else out


def scipy_bw_method(bandwidth: float | str | None) -> float | str | None:
    """``bandwidth`` as scipy's ``bw_method`` argument ('authors-demo' becomes 0.2)."""
    return AUTHORS_DEMO_BANDWIDTH if bandwidth in ("authors-demo", "paper") else bandwidth


SIM_TOLERANCE = 1e-6  # rounding of a computed cosine (float32: ~1e-7) may step this far outside [-1, 1]


def checked_sims(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-D float array of cosine similarities in [-1, 1] (rounding excursions clipped), or a clear error.

    >>> checked_sims([0.5, 1.0 + 1e-12], "fuzz_sims").tolist()
    [0.5, 1.0]
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a 1-D sequence of numbers (cosine similarities): {e}") from None
    if arr.ndim > 1:
        raise ValueError(
            f"{name} must be 1-D (one cosine similarity per pair), got shape {arr.shape}; flatten it first if that is meant"
        )
    x = arr.ravel()
    if x.size == 0:
        raise ValueError(f"{name} is empty: a curve needs at least one similarity")
    bad = int((~np.isfinite(x)).sum())
    if bad:
        raise ValueError(f"{name} holds {bad} NaN/inf value(s); drop undefined similarities (zero vectors) first")
    out = np.flatnonzero(np.abs(x) > 1.0 + SIM_TOLERANCE)
    if out.size:
        raise ValueError(
            f"{name} holds {out.size} value(s) outside [-1, 1], e.g. {x[out[:3]].tolist()}: cosine similarities are "
            "bounded by 1 (distances or unnormalised dot products?)"
        )
    return np.clip(x, -1.0, 1.0)


def kernel_sd(samples: Any, bandwidth: float | str | None = None) -> float:
    """The Gaussian kernel's standard deviation: ``bandwidth_factor(n, bandwidth) * std(samples, ddof=1)``.

    This is what ``scipy.stats.gaussian_kde(samples, bw_method=bandwidth)`` uses
    (the tests check it against scipy); ``'authors-demo'`` is ``bw_method=0.2``.
    0.0 for fewer than two distinct values (no KDE exists then).

    >>> round(kernel_sd([0.0, 1.0], 0.5), 4)
    0.3536
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0:
        return 0.0
    return float(bandwidth_factor(x.size, bandwidth) * np.std(x, ddof=1))


def _linear_bin(x: np.ndarray, start: float, dx: float, size: int) -> np.ndarray:
    pos = np.clip((x - start) / dx, 0.0, size - 1.0)  # callers pad the bins; this only guards rounding at the edges
    i = np.minimum(np.floor(pos).astype(np.int64), size - 2)
    frac = pos - i
    counts = np.bincount(i, weights=1.0 - frac, minlength=size) + np.bincount(i + 1, weights=frac, minlength=size)
    return counts[:size]


def _windowed_exact(x: np.ndarray, grid: np.ndarray, sd: float) -> np.ndarray:
    """Exact Gaussian sums at the grid points within 8 sd of each sample (narrow kernels)."""
    dx = float(grid[1] - grid[0])
    half = int(math.ceil(KERNEL_REACH * sd / dx)) + 1
    centre = np.rint((x - grid[0]) / dx).astype(np.int64)
    out = np.zeros(grid.size)
    step = max(1, 2_000_000 // (2 * half + 1))  # bounded memory
    offsets = np.arange(-half, half + 1)
    for a in range(0, x.size, step):
        idx = centre[a : a + step, None] + offsets
        ok = (idx >= 0) & (idx < grid.size)
        vals = np.exp(-0.5 * ((grid[np.clip(idx, 0, grid.size - 1)] - x[a : a + step, None]) / sd) ** 2)
        out += np.bincount(idx[ok], weights=vals[ok], minlength=grid.size)
    return out


def kde_on_grid(
    samples: Any, grid: np.ndarray, *, bandwidth: float | str | None = None, method: KDEMethod = "auto"
) -> tuple[np.ndarray, str]:
    """Gaussian KDE of ``samples`` at the evenly spaced ``grid`` (up to a constant); returns (density, route).

    Routes:

    * ``direct``: ``scipy.stats.gaussian_kde(samples, bw_method=bandwidth).evaluate(grid)`` (the reference).
    * ``binned``: linear binning at a quarter of the grid step (extended to
      cover the data and 8 kernel widths) and one FFT convolution with the same
      kernel (``scipy.signal.fftconvolve``): O(n + m log m) instead of O(n m).
    * ``windowed``: exact Gaussian sums over the grid points within 8 kernel
      widths of each sample (used by ``auto`` when the kernel is narrower than
      4 grid steps, where binning would be coarse).
    * ``auto``: binned, or windowed for narrow kernels.

    Zero spread (all values equal, or one value): no KDE exists (singular
    covariance); the result is the KDE's limit as the kernel shrinks, a point
    mass split linearly between the two nearest grid points (route ``point-mass``).
    """
    import scipy.signal
    import scipy.stats

    if method not in ("auto", "binned", "direct", "windowed"):
        raise ValueError(f"method must be 'auto', 'binned', 'windowed' or 'direct', got {method!r}")
    x = np.asarray(samples, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    dx = float(grid[1] - grid[0])
    sd = kernel_sd(x, bandwidth)
    if sd == 0.0:
        c = float(np.clip(x[0], grid[0], grid[-1]))
        return _linear_bin(np.array([c]), float(grid[0]), dx, grid.size), "point-mass"
    if method == "direct":
        return scipy.stats.gaussian_kde(x, bw_method=scipy_bw_method(bandwidth)).evaluate(grid), "direct"
    if method == "windowed" or (method == "auto" and sd < _BINNED_MIN_SD_STEPS * dx):
        return _windowed_exact(x, grid, sd), "windowed"
    h = dx / _BIN_OVERSAMPLE  # bins finer than the grid; every _BIN_OVERSAMPLE-th output is a grid point
    half = int(math.ceil(KERNEL_REACH * sd / h))
    if method == "auto" and half > 2_000_000:  # absurdly wide kernel: the FFT arrays would be huge
        return scipy.stats.gaussian_kde(x, bw_method=scipy_bw_method(bandwidth)).evaluate(grid), "direct"
    lo = min(float(grid[0]), float(x.min())) - half * h
    hi = max(float(grid[-1]), float(x.max())) + half * h
    k_lo = int(math.floor((lo - grid[0]) / h)) - 1
    size = int(math.ceil((hi - grid[0]) / h)) - k_lo + 2
    counts = _linear_bin(x, float(grid[0]) + k_lo * h, h, size)
    kernel = np.exp(-0.5 * ((np.arange(-half, half + 1) * h) / sd) ** 2)
    dens = scipy.signal.fftconvolve(counts, kernel, mode="same")
    dens = dens[-k_lo :: _BIN_OVERSAMPLE][: grid.size]
    return np.clip(dens, 0.0, None), "binned"


@dataclass(frozen=True)
class CSCCurves:
    """The two normalised curves on the grid (each sums to 1) and their overlap (eq. 2)."""

    grid: np.ndarray
    fuzz: np.ndarray
    negation: np.ndarray
    overlap: float
    fuzz_kernel_sd: float
    negation_kernel_sd: float
    routes: tuple[str, str]


def _normalise(d: np.ndarray, name: str) -> np.ndarray:
    total = float(d.sum())
    if not total > 0:
        raise ValueError(f"the {name} density is zero on the whole grid (similarities far outside [-1, 1]?)")
    return d / total


def kde_curves(f: np.ndarray, n: np.ndarray, *, resolution: int, bandwidth: Any, method: KDEMethod) -> CSCCurves:
    """Both curves by :func:`kde_on_grid` (``method="auto"``: each curve's own route), for checked inputs.

    >>> kde_curves(np.array([0.9, 0.95]), np.array([0.5, 0.6]), resolution=201, bandwidth=None, method="auto").routes
    ('windowed', 'binned')
    """
    grid = np.linspace(-1.0, 1.0, int(resolution))
    df, rf = kde_on_grid(f, grid, bandwidth=bandwidth, method=method)
    dn, rn = kde_on_grid(n, grid, bandwidth=bandwidth, method=method)
    nf, nn = _normalise(df, "fuzz"), _normalise(dn, "negation")
    overlap = float(min(1.0, np.minimum(nf, nn).sum()))
    return CSCCurves(grid, nf, nn, overlap, kernel_sd(f, bandwidth), kernel_sd(n, bandwidth), (rf, rn))
