"""Model versus model on the same concepts: paired bootstrap, paired permutation test, Holm, rank bands.

Two 95% intervals that overlap do not mean two models tie, and separate
intervals do not mean they differ: the scores share their concepts, so the
comparison must be *paired*.

* **Paired bootstrap.**  Every model's SA is computed on the very same
  resampled concepts (one multinomial count vector per resample, shared); the
  interval of the difference comes from those paired differences.
* **Paired permutation test.**  SA is a ratio of sums over concepts, not a mean,
  so the test runs on each concept's jackknife pseudo-value
  ``R * SA - (R - 1) * SA_without_r`` (the concept's share of the score):
  under "no difference" the sign of each concept's paired difference is
  exchangeable, and the sign-flip test gives a p-value (two-sided, +1 corrected).
* **Many models.**  p-values across all pairs are Holm-adjusted
  (:func:`statsmodels.stats.multitest.multipletests`, a well-kept
  implementation); rank bands group models that do not differ significantly
  from the best model of their band (greedy from the top).

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.affinity` and
:mod:`semanscope_nb.metrics.chance`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> rng = np.random.default_rng(0); eye = sp.identity(120, format="csr"); e = rng.normal(size=(120, 16))
>>> good = AlignedWords(("en", "de"), (e, e + 0.3 * rng.normal(size=e.shape)), (eye, eye), tuple(map(str, range(120))))
>>> bad = AlignedWords(("en", "de"), (e, rng.normal(size=e.shape)), (eye, eye), good.labels)
>>> c = compare_models({"good": good, "bad": bad}, n_boot=200, n_perm=200, seed=0)
>>> row = c.pairs.iloc[0]
>>> row.model_a, row.model_b, bool(row.significant), c.bands
('good', 'bad', True, [['good'], ['bad']])
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.metrics.chance import _check_count, _check_seed, percentile_interval, resample_counts
from semanscope_nb.metrics.spreads import AlignedWords, _Spreads, affinity_ratio


def _sa_of_counts(spreads: _Spreads, counts: np.ndarray) -> np.ndarray:
    s = spreads.spreads(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return affinity_ratio(s["intra_cos"], s["inter_cos"])


def jackknife_pseudo_values(spreads: _Spreads, *, batch: int = 256) -> np.ndarray:
    """``R * SA - (R - 1) * SA_without_r`` for every concept row r (cosine SA)."""
    R = spreads.R
    full = float(_sa_of_counts(spreads, np.ones((1, R)))[0])
    out = np.empty(R)
    for a in range(0, R, batch):
        b = min(R, a + batch)
        counts = np.ones((b - a, R))
        counts[np.arange(b - a), np.arange(a, b)] = 0.0
        out[a:b] = R * full - (R - 1) * _sa_of_counts(spreads, counts)
    return out


def sign_flip_test(differences: np.ndarray, *, n_perm: int, seed: int | None) -> float:
    """Two-sided paired permutation (sign-flip) p-value of the mean of ``differences``."""
    d = np.asarray(differences, dtype=np.float64)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    while done < n_perm:
        b = min(1024, n_perm - done)
        signs = rng.choice((-1.0, 1.0), size=(b, d.size))
        hits += int(np.sum(np.abs(signs @ d) / d.size >= observed - 1e-15))
        done += b
    return (1 + hits) / (1 + n_perm)


@dataclass(frozen=True)
class ModelComparison(Result):
    """Pairwise paired comparisons of several models on the same concepts."""

    kind = "comparison"
    main_score_name = "best_sa"

    scores: pd.DataFrame  # model, sa, ci_low, ci_high, band, sem
    pairs: pd.DataFrame  # model_a, model_b, sa_a, sa_b, diff, ci_low, ci_high, p_value, sem, p_holm, significant
    bands: list[list[str]]
    n_boot: int
    n_perm: int
    seed: int | None
    confidence: float
    alpha: float
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def best_sa(self) -> float:
        """The SA of the first model of the first band."""
        return float(self.scores["sa"].iloc[0]) if len(self.scores) else float("nan")

    def estimates(self) -> dict[str, Estimate]:
        """Each model's SA (by name) and each paired difference (``"a - b"``): value, bootstrap std, interval."""
        out = {}
        for r in self.scores.to_dict("records"):
            out[r["model"]] = Estimate(r["sa"], r.get("sem", math.nan), Interval(r["ci_low"], r["ci_high"]))
        for r in self.pairs.to_dict("records"):
            out[f"{r['model_a']} - {r['model_b']}"] = Estimate(r["diff"], r.get("sem", math.nan), Interval(r["ci_low"], r["ci_high"]))
        return out

    def band_of(self, model: str) -> int:
        """1-based rank band of ``model``."""
        for i, band in enumerate(self.bands, 1):
            if model in band:
                return i
        raise KeyError(model)


def compare_models(
    models: Mapping[str, AlignedWords],
    *,
    n_boot: int = 1000,
    n_perm: int = 10000,
    seed: int | None = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
    batch: int | None = None,
) -> ModelComparison:
    """Paired bootstrap and permutation comparison of the cosine SA of two or more models on the same concepts."""
    from statsmodels.stats.multitest import multipletests

    names = list(models)
    if len(names) < 2:
        raise ValueError(f"compare_models needs at least two models, got {names}")
    _check_count("n_boot", n_boot, minimum=2)
    _check_count("n_perm", n_perm, minimum=1)
    _check_seed(seed)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    first = models[names[0]]
    for name in names[1:]:
        aw = models[name]
        if tuple(aw.labels) != tuple(first.labels) or tuple(aw.languages) != tuple(first.languages):
            raise ValueError(
                f"models '{names[0]}' and '{name}' were not scored on the same concepts and languages "
                "(a paired comparison needs identical concept rows)"
            )
    R = first.n_rows
    spreads = {n: _Spreads(models[n]) for n in names}
    point = {n: float(_sa_of_counts(spreads[n], np.ones((1, R)))[0]) for n in names}
    dist = {n: [] for n in names}
    for counts in resample_counts(R, n_boot, seed=seed, batch=batch):
        for n in names:
            dist[n].append(_sa_of_counts(spreads[n], counts))
    boot = {n: np.concatenate(dist[n]) for n in names}
    pseudo = {n: jackknife_pseudo_values(spreads[n]) for n in names}
    order = sorted(names, key=lambda n: -point[n])
    rows = []
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            diff = boot[a] - boot[b]
            lo, hi = percentile_interval(diff, confidence)
            rows.append({
                "model_a": a, "model_b": b, "sa_a": point[a], "sa_b": point[b], "diff": point[a] - point[b],
                "ci_low": lo, "ci_high": hi,
                "p_value": sign_flip_test(pseudo[a] - pseudo[b], n_perm=n_perm, seed=seed), "sem": _bootstrap_sd(diff),
            })
    pairs = pd.DataFrame(rows)
    pairs["p_holm"] = multipletests(pairs["p_value"].to_numpy(), alpha=alpha, method="holm")[1]
    pairs["significant"] = pairs["p_holm"] < alpha
    bands = rank_bands(order, pairs)
    band_index = {m: i for i, band in enumerate(bands, 1) for m in band}
    scores = pd.DataFrame([
        {"model": n, "sa": point[n], "ci_low": percentile_interval(boot[n], confidence)[0],
         "ci_high": percentile_interval(boot[n], confidence)[1], "band": band_index[n], "sem": _bootstrap_sd(boot[n])}
        for n in order
    ])
    notes = []
    for _, r in pairs.iterrows():
        ci_a = scores.set_index("model").loc[r.model_a, ["ci_low", "ci_high"]]
        ci_b = scores.set_index("model").loc[r.model_b, ["ci_low", "ci_high"]]
        overlap = ci_a.ci_low <= ci_b.ci_high and ci_b.ci_low <= ci_a.ci_high
        if overlap and r.significant:
            notes.append(f"{r.model_a} vs {r.model_b}: the intervals overlap, yet the paired test finds a difference")
        elif not overlap and not r.significant:
            notes.append(f"{r.model_a} vs {r.model_b}: the intervals are apart, yet the paired test finds no significant difference")
    return ModelComparison(scores, pairs, bands, int(n_boot), int(n_perm), seed, confidence, alpha, notes)


def _bootstrap_sd(values: np.ndarray) -> float:
    """The std (ddof=1) of the finite bootstrap values: the paper's "+-"."""
    v = values[np.isfinite(values)]
    return float(np.std(v, ddof=1)) if v.size > 1 else math.nan


def rank_bands(order: list[str], pairs: pd.DataFrame) -> list[list[str]]:
    """Greedy bands from the top: a band holds its best model and every next model not significantly worse than it.

    >>> p = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"], "significant": [False, True, True]})
    >>> rank_bands(["a", "b", "c"], p)
    [['a', 'b'], ['c']]
    """
    sig = {(r.model_a, r.model_b): bool(r.significant) for r in pairs.itertuples()}
    sig.update({(b, a): s for (a, b), s in list(sig.items())})
    bands: list[list[str]] = []
    for m in order:
        if bands and not sig.get((bands[-1][0], m), True):
            bands[-1].append(m)
        else:
            bands.append([m])
    return bands


def difference_is_significant(comparison: ModelComparison, a: str, b: str) -> bool:
    """Whether the Holm-adjusted paired test separates models ``a`` and ``b``."""
    p = comparison.pairs
    row = p[((p.model_a == a) & (p.model_b == b)) | ((p.model_a == b) & (p.model_b == a))]
    if row.empty:
        raise KeyError(f"no comparison of '{a}' and '{b}'")
    return bool(row.significant.iloc[0])

