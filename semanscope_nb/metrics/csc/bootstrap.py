"""CSC statistics for many resamples at once: overlap and median separation, vectorised over resamples.

A resample is a vector of counts over the original sentences (a sentence drawn
twice brings its variants twice).  For every resample this computes what
:func:`~semanscope_nb.metrics.csc.curves.csc_curves` and ``np.median`` give on
the repeated similarities, without a Python loop over resamples:

* each similarity is linearly binned once, on fine bins aligned with the grid
  (``h = grid step / q``, ``q`` chosen so the narrowest kernel spans >= 16 bins);
* a resample's binned counts are one weighted ``bincount``; its kernel sd
  follows from weighted sums (n, mean, variance: the same rule as scipy's
  ``gaussian_kde``, per resample);
* the Gaussian smoothing is one batched real FFT, multiplied by the Gaussian's
  exact transfer function ``exp(-2 pi^2 sd^2 f^2)`` (each resample its own sd);
* medians come from the weighted cumulative counts of the sorted values
  (exactly ``np.median`` of the repeated values).

Agreement with scipy (:func:`~semanscope_nb.metrics.csc.curves.csc_curves` with
``method="direct"``) is tested to 1e-4 in overlap; the medians are
exact.  A resample whose curve has no spread (one distinct value) or a very
narrow kernel goes through :func:`kde_curves` (each curve's own KDE route; a
point mass).  :func:`full_sample_curves` is the same computation on the full
sample (every sentence drawn once): the CSC point, and :func:`csc_curves`'
default route.

Layer: metrics.  Pure NumPy; imports the CSC KDE room only.

>>> import numpy as np
>>> fz, ng = np.array([0.95, 0.97, 0.9, 0.92]), np.array([0.5, 0.6, 0.55, 0.7])
>>> sent = np.array([0, 1, 2, 3])
>>> r = resampled_csc_stats(fz, sent, ng, sent, np.ones((1, 4)), resolution=201)
>>> float(r.overlap[0]) == full_sample_curves(fz, ng, resolution=201).overlap, round(float(r.separation[0]), 6)
(True, 0.36)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from semanscope_nb.metrics.csc.kde import KERNEL_REACH, CSCCurves, bandwidth_factor, kde_curves

_MIN_SD_BINS = 16.0  # the narrowest kernel spans at least this many fine bins (linear-binning error ~ 1e-4 relative)
_MAX_Q = 64  # at most this many fine bins per grid step
_MAX_CELLS = 4_000_000  # resamples x bins held at once (memory bound: ~32 MB per array)


@dataclass(frozen=True)
class ResampledStats:
    """Per-resample overlap (eq. 2) and separation (median fuzz - median negation); NaN where a curve is empty."""

    overlap: np.ndarray
    separation: np.ndarray
    n_fuzz: np.ndarray
    n_negation: np.ndarray


def _moments(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted n and sample std (ddof=1) per row of ``w``; x is centred first, for precision."""
    c = x - x.mean()
    n = w.sum(axis=1)
    s1 = w @ c
    s2 = w @ (c * c)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        var = (s2 - n * mean * mean) / (n - 1)
    return n, np.sqrt(np.clip(var, 0.0, None))


def _weighted_median(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``np.median(np.repeat(x, w_row))`` for every row of integer weights ``w`` (NaN for an empty row)."""
    order = np.argsort(x, kind="stable")
    xs, cum = x[order], np.cumsum(w[:, order], axis=1)
    total = cum[:, -1]
    lo = (total - 1) // 2
    hi = total // 2
    j_lo = np.minimum((cum <= lo[:, None]).sum(axis=1), x.size - 1)
    j_hi = np.minimum((cum <= hi[:, None]).sum(axis=1), x.size - 1)
    out = (xs[j_lo] + xs[j_hi]) / 2.0
    return np.where(total > 0, out, np.nan)


def _smooth(counts: np.ndarray, sd_bins: np.ndarray, length: int) -> np.ndarray:
    """Each row of binned counts convolved with a Gaussian of its own sd (in bins), by one batched real FFT."""
    spec = np.fft.rfft(counts, n=length, axis=1)
    f = np.fft.rfftfreq(length)
    spec *= np.exp(-2.0 * math.pi**2 * (sd_bins[:, None] ** 2) * (f[None, :] ** 2))
    return np.fft.irfft(spec, n=length, axis=1)[:, : counts.shape[1]]


def resampled_csc_stats(
    fuzz: Any, fuzz_sentence: Any, negation: Any, negation_sentence: Any, counts: Any, *,
    resolution: int = 2001, bandwidth: float | str | None = None,
) -> ResampledStats:
    """Overlap and separation for every row of ``counts`` (resamples x sentences, integer draws per sentence).

    ``fuzz``/``negation`` are the defined similarities, ``*_sentence`` the
    index of each one's original sentence (0 .. n_sentences-1).  Row ``b`` is
    the statistic of ``np.repeat(fuzz, counts[b, fuzz_sentence])`` (and the
    same for negation), as :func:`csc_curves` and ``np.median`` compute it.
    """
    return _resampled(fuzz, fuzz_sentence, negation, negation_sentence, counts, resolution=resolution,
                      bandwidth=bandwidth, keep_curves=False)[0]


def full_sample_curves(fuzz: Any, negation: Any, *, resolution: int = 2001,
                       bandwidth: float | str | None = None) -> CSCCurves:
    """The curves and overlap of the full sample by the bootstrap's own computation (every sentence drawn once).

    This is the statistic the bootstrap's interval is built around (scipy's
    ``theta_hat``: :func:`resampled_csc_stats` with a row of ones), so
    :func:`~semanscope_nb.metrics.csc.separation.concept_separation` reports
    this overlap as its point: one function and one route for the point and
    the resamples.  Routes: ``"fft"`` (the batched fine-bin FFT), or those of
    :func:`~semanscope_nb.metrics.csc.kde.kde_curves` for a curve without spread or a very narrow kernel.

    >>> import numpy as np
    >>> fz, ng = np.array([0.95, 0.97, 0.9, 0.92]), np.array([0.5, 0.6, 0.55, 0.7])
    >>> c = full_sample_curves(fz, ng, resolution=201)
    >>> r = resampled_csc_stats(fz, np.arange(4), ng, np.arange(4), np.ones((1, 4)), resolution=201)
    >>> c.overlap == float(r.overlap[0]), c.routes, round(float(c.fuzz.sum()), 12)
    (True, ('fft', 'fft'), 1.0)
    """
    fz, ng = np.asarray(fuzz, dtype=np.float64).ravel(), np.asarray(negation, dtype=np.float64).ravel()
    n = max(fz.size, ng.size, 1)
    stats, curves = _resampled(fz, np.arange(fz.size) % n, ng, np.arange(ng.size) % n, np.ones((1, n)),
                               resolution=resolution, bandwidth=bandwidth, keep_curves=True)
    return curves


def _resampled(
    fuzz: Any, fuzz_sentence: Any, negation: Any, negation_sentence: Any, counts: Any, *,
    resolution: int, bandwidth: float | str | None, keep_curves: bool,
) -> tuple[ResampledStats, CSCCurves | None]:
    """:func:`resampled_csc_stats`; with ``keep_curves`` (one row) also the row's curves on the whole grid."""
    fz, ng = np.asarray(fuzz, dtype=np.float64), np.asarray(negation, dtype=np.float64)
    fs, ns = np.asarray(fuzz_sentence, dtype=np.int64), np.asarray(negation_sentence, dtype=np.int64)
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2:
        raise ValueError(f"counts must be 2-D (resamples x sentences), got shape {c.shape}")
    if fz.shape != fs.shape or ng.shape != ns.shape:
        raise ValueError("each similarity needs its sentence index (fuzz/fuzz_sentence or negation/negation_sentence differ in length)")
    if fz.size == 0 or ng.size == 0:
        raise ValueError("fuzz and negation must each hold at least one similarity")
    if max(fs.max(), ns.max()) >= c.shape[1] or min(fs.min(), ns.min()) < 0:
        raise ValueError(f"a sentence index lies outside 0..{c.shape[1] - 1} (the columns of counts)")
    wf, wn = c[:, fs], c[:, ns]
    n_f, sd_f = _moments(wf, fz)
    n_n, sd_n = _moments(wn, ng)
    sd_f = np.where(n_f >= 2, bandwidth_factor(np.maximum(n_f, 1), bandwidth) * sd_f, 0.0)
    sd_n = np.where(n_n >= 2, bandwidth_factor(np.maximum(n_n, 1), bandwidth) * sd_n, 0.0)
    separation = _weighted_median(wf, fz) - _weighted_median(wn, ng)
    overlap = np.full(c.shape[0], np.nan)
    empty = (n_f == 0) | (n_n == 0)
    narrow = _MIN_SD_BINS / _MAX_Q * (2.0 / (resolution - 1))  # kernels narrower than this: the one-resample route
    point = ~empty & ((sd_f < narrow) | (sd_n < narrow))
    smooth = ~empty & ~point
    kept: CSCCurves | None = None
    if point.any():  # a curve without spread (point mass) or a very narrow kernel: the one-resample route
        for b in np.flatnonzero(point):
            cur = kde_curves(np.repeat(fz, c[b, fs].astype(np.int64)), np.repeat(ng, c[b, ns].astype(np.int64)),
                             resolution=resolution, bandwidth=bandwidth, method="auto")  # each curve's own KDE route
            overlap[b] = cur.overlap
            kept = cur
    if smooth.any():
        rows = np.flatnonzero(smooth)
        step = max(1, _MAX_CELLS // (2 * resolution))
        for a in range(0, rows.size, step):
            r = rows[a : a + step]
            start_f, df = _curves_on_grid(fz, wf[r], sd_f[r], resolution)
            start_n, dn = _curves_on_grid(ng, wn[r], sd_n[r], resolution)
            a0, a1 = max(start_f, start_n), min(start_f + df.shape[1], start_n + dn.shape[1])
            if a1 <= a0:  # the two windows do not meet: no overlap at all
                overlap[r] = 0.0
            else:
                both = np.minimum(df[:, a0 - start_f : a1 - start_f], dn[:, a0 - start_n : a1 - start_n])
                overlap[r] = np.minimum(1.0, both.sum(axis=1))
            if keep_curves:
                kept = CSCCurves(np.linspace(-1.0, 1.0, int(resolution)), _on_grid(df[0], start_f, resolution),
                                 _on_grid(dn[0], start_n, resolution), float(overlap[r[0]]), float(sd_f[r[0]]),
                                 float(sd_n[r[0]]), ("fft", "fft"))
    return ResampledStats(overlap, separation, n_f, n_n), kept


def _on_grid(window: np.ndarray, start: int, resolution: int) -> np.ndarray:
    """A curve held on a window of grid points, placed on the whole grid (zeros outside the window)."""
    out = np.zeros(int(resolution))
    out[start : start + window.size] = window
    return out


def _curves_on_grid(x: np.ndarray, w: np.ndarray, sd: np.ndarray, resolution: int) -> tuple[int, np.ndarray]:
    """Normalised KDE curves (one row per resample) on the grid points of the window the data can reach.

    Returns the index of the first grid point and the (rows x points) curves,
    each summing to 1; grid points outside the window hold a density below
    exp(-32) of the peak and are left out.
    """
    dx = 2.0 / (resolution - 1)
    q = max(1, int(math.ceil(_MIN_SD_BINS * dx / float(sd.min()))))  # fine bins per grid step
    h = dx / q
    reach = KERNEL_REACH * float(sd.max())
    g0 = max(0, int(math.floor((float(x.min()) - reach + 1.0) / dx)))
    g1 = min(resolution - 1, int(math.ceil((float(x.max()) + reach + 1.0) / dx)))
    k_lo = g0 * q  # fine bin k sits at -1 + k*h; grid point g is fine bin g*q
    size = (g1 - g0) * q + 1
    pad = int(math.ceil(reach / h)) + 2
    length = _fast_len(size + 2 * pad)
    i, frac = _bins(x, k_lo, h, size)
    step = max(1, _MAX_CELLS // (length + x.size))  # bounded memory
    dens = np.concatenate([
        _smooth(_binned(w[a : a + step], i, frac, size, pad), sd[a : a + step] / h, length)[:, pad : pad + size : q]
        for a in range(0, w.shape[0], step)
    ])
    dens = np.clip(dens, 0.0, None)
    dens /= dens.sum(axis=1, keepdims=True)
    return g0, dens


def _fast_len(n: int) -> int:
    import scipy.fft

    return int(scipy.fft.next_fast_len(n, real=True))


def _bins(x: np.ndarray, k_lo: int, h: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Linear binning of each value: left bin index (within the window) and the fraction going right."""
    pos = np.clip((x + 1.0) / h - k_lo, 0.0, size - 1.0)
    i = np.minimum(np.floor(pos).astype(np.int64), size - 2)
    return i, pos - i


def _binned(w: np.ndarray, i: np.ndarray, frac: np.ndarray, size: int, pad: int) -> np.ndarray:
    """Weighted linear-binned counts for each row of ``w`` (rows x values), placed after ``pad`` zero bins."""
    rows = w.shape[0]
    width = size + 2 * pad
    base = (np.arange(rows)[:, None] * width + pad + i[None, :]).ravel()
    out = np.bincount(base, weights=(w * (1.0 - frac)).ravel(), minlength=rows * width)
    out += np.bincount(base + 1, weights=(w * frac).ravel(), minlength=rows * width)
    return out.reshape(rows, width)
