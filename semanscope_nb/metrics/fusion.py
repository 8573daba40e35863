"""DistFuse ensembles (MINERS, section 2.5): a weighted sum of standardised distance matrices.

For models m = 1..M with distance matrices D_m (queries x corpus) and weights w_m,
the fused distance is ``sum_m w_m (D_m - mean(D_m)) / std(D_m)``: every model's
weight is applied, the first one included, and each matrix is z-scored over all
its (query, corpus) entries first so that models with different distance scales
(mE5's squeezed cosines, USE's spread-out ones) contribute in proportion to
their weights.  ``standardise=False`` sums the raw distances instead.

Presets (``DistFuse(..., preset=...)`` / ``DISTFUSE_PRESETS``):

* ``"zscore"`` (this package's default): cosine distances, each matrix z-scored.
* ``"miners"``: the paper's own setting.  MINERS (paper 003, sections 2.2 and
  3) scores pairs by the Euclidean distance ``||u_x - u_y||_2`` and DistFuse
  "merg[es] them through a linear combination" with weights (alpha = 1,
  beta = 3 for two models): raw weighted Euclidean distances, NO
  standardisation.  Models with larger distance scales then weigh more than
  their weights say, which is why z-scoring is our default.

Means and standard deviations are exact, computed in one blocked pass (the
matrices are never held in memory), and the fused distances are served in row
blocks like any :class:`~semanscope_nb.metrics.search.DistanceProvider`, so
:func:`~semanscope_nb.bitext_retrieval`, :func:`~semanscope_nb.metrics.search.topk_search`
and :func:`~semanscope_nb.metrics.classification.knn_classification` take an ensemble
wherever they take embeddings; the text-level functions
(:func:`~semanscope_nb.text_retrieval`, :func:`~semanscope_nb.lexicon_induction`,
:func:`~semanscope_nb.metrics.classification.sib200_classification`) take a :class:`DistFuse`
wherever they take a model id.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> a = rng.normal(size=(40, 8)); b = rng.normal(size=(40, 16))
>>> fused = snb.FusedDistances.from_embeddings([(a, a + 0.1), (b, b + 0.1)], weights=[1, 3])
>>> snb.bitext_retrieval(fused, n_boot=0).accuracy[1]
1.0
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.metrics.search import (
    DEFAULT_MAX_BLOCK_BYTES,
    METRICS,
    DistanceProvider,
    EmbeddingDistances,
    Metric,
)
from semanscope_nb.metrics.ties import fused_tolerance

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder


def distance_moments(provider: DistanceProvider, *, block: int | None = None, max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES) -> tuple[float, float]:
    """Exact mean and (population) standard deviation of all of a provider's distances, in one blocked pass.

    Blocks are combined with Chan et al.'s pairwise update (no sum-of-squares cancellation).
    """
    rows = provider.rows_per_block(block, max_block_bytes)
    count, mean, m2 = 0, 0.0, 0.0
    for a in range(0, provider.n_queries, rows):
        D = provider.block(slice(a, min(provider.n_queries, a + rows)))
        n_b = D.size
        mean_b = float(D.mean())
        m2_b = float(((D - mean_b) ** 2).sum())
        delta = mean_b - mean
        total = count + n_b
        mean += delta * n_b / total
        m2 += m2_b + delta * delta * count * n_b / total
        count = total
    return mean, math.sqrt(m2 / count)


def _deviation_bound(provider: DistanceProvider, mu: float, sd: float, *, standardise: bool) -> float | None:
    """A bound on ``|D - mu|`` over all of ``provider``'s distances, or None when unknown.

    Standardised (``mu``, ``sd`` the distances' own mean and population std over N entries): Samuelson's
    inequality, ``|D - mu| <= sd sqrt(N - 1)``.  Raw (``mu = 0``): cosine distances lie in [0, 2]; Euclidean
    ones are at most ``max |q| + max |c|`` (the provider's ``distance_bound``).
    """
    if standardise:
        return sd * math.sqrt(max(provider.n_queries * provider.n_corpus - 1, 0))
    bound = getattr(provider, "distance_bound", None)
    return None if bound is None else abs(mu) + float(bound)


class FusedDistances(DistanceProvider):
    """DistFuse: ``sum_m w_m (D_m - mu_m) / sd_m`` over several distance providers of one shape."""

    metric = "distfuse"

    def __init__(
        self,
        providers: Sequence[DistanceProvider],
        weights: Sequence[float] | None = None,
        *,
        standardise: bool = True,
        moments: Sequence[tuple[float, float]] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        providers = list(providers)
        if not providers:
            raise ValueError("DistFuse needs at least one model")
        shapes = {(p.n_queries, p.n_corpus) for p in providers}
        if len(shapes) > 1:
            raise EmbeddingError(f"the models' distance matrices differ in shape: {sorted(shapes)}")
        self.weights = _check_weights(weights, len(providers))
        self.providers = providers
        self.standardise = standardise
        self.names = list(names) if names is not None else [f"model{i}" for i in range(len(providers))]
        self.n_queries, self.n_corpus = providers[0].n_queries, providers[0].n_corpus
        if not standardise:
            self.moments = [(0.0, 1.0)] * len(providers)
        elif moments is not None:
            self.moments = [tuple(map(float, m)) for m in moments]
        else:
            self.moments = [distance_moments(p) for p in providers]
        for name, (mu, sd) in zip(self.names, self.moments):
            if not (math.isfinite(mu) and math.isfinite(sd)) or sd <= 0:
                raise EmbeddingError(f"DistFuse: {name}'s distances are constant (std {sd}); they cannot be standardised")
        # near ties (metrics.ties): each member's tolerance carried through its weight and z-score, plus the
        # fusion's float64 roundings of terms bounded by _deviation_bound
        self.tie_tolerance = fused_tolerance([float(getattr(p, "tie_tolerance", 0.0)) for p in providers], self.weights,
                                             [sd for _, sd in self.moments],
                                             deviation_bounds=[_deviation_bound(p, mu, sd, standardise=standardise)
                                                               for p, (mu, sd) in zip(providers, self.moments)])

    @classmethod
    def from_embeddings(
        cls,
        pairs: Sequence[tuple[Any, Any]],
        weights: Sequence[float] | None = None,
        *,
        metric: Metric = "cosine",
        standardise: bool = True,
        names: Sequence[str] | None = None,
    ) -> "FusedDistances":
        """Fuse models given as (query embeddings, corpus embeddings) pairs, one pair per model."""
        return cls([EmbeddingDistances(q, c, metric=metric, dtype=np.float64) for q, c in pairs], weights, standardise=standardise, names=names)

    def block(self, rows: slice) -> np.ndarray:
        out = None
        for p, w, (mu, sd) in zip(self.providers, self.weights, self.moments):
            # float64 whatever the member's dtype (a float32 block minus a Python float stays float32 under NumPy 2's
            # promotion rules): the tolerance counts float64 roundings of the fusion, on every path
            part = w * (np.asarray(p.block(rows), dtype=np.float64) - mu) / sd
            out = part if out is None else out + part
        return out

    def diagonal(self) -> np.ndarray:
        """Fused distances of query i to corpus item i (square providers), from the members' diagonals."""
        out = None
        for p, w, (mu, sd) in zip(self.providers, self.weights, self.moments):
            part = w * (np.asarray(p.diagonal(), dtype=np.float64) - mu) / sd
            out = part if out is None else out + part
        return out

    @property
    def T(self) -> "FusedDistances":
        # z-scores over all entries are the same for the transposed matrix
        return FusedDistances([p.T for p in self.providers], self.weights, standardise=self.standardise,
                              moments=self.moments, names=self.names)

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "distfuse", "standardise": self.standardise, "tie_tolerance": self.tie_tolerance,
            "members": [{"name": n, "weight": w, "mean": mu, "std": sd, **p.describe()}
                        for n, w, (mu, sd), p in zip(self.names, self.weights, self.moments, self.providers)],
        }


def _check_weights(weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    weights = [float(w) for w in weights]
    if len(weights) != n:
        raise ValueError(f"DistFuse: {len(weights)} weight(s) for {n} model(s)")
    if any(not math.isfinite(w) or w < 0 for w in weights) or not any(w > 0 for w in weights):
        raise ValueError(f"DistFuse weights must be finite, non-negative and not all zero, got {weights}")
    return weights


DISTFUSE_PRESETS: dict[str, dict[str, Any]] = {
    "zscore": {"metric": "cosine", "standardise": True},
    "miners": {"metric": "euclidean", "standardise": False},  # paper 003: raw weighted Euclidean distances
}


class DistFuse:
    """An ensemble of registry models, usable wherever the text-level retrieval/classification take a model.

    >>> import semanscope_nb as snb
    >>> ens = snb.DistFuse(["use-multilingual", "multilingual-e5-small"], weights=[1, 3])
    >>> ens.id
    'distfuse[use-multilingual*1+multilingual-e5-small*3,cosine]'
    >>> snb.DistFuse(["use-multilingual", "multilingual-e5-small"], weights=[1, 3], preset="miners").id
    'distfuse[use-multilingual*1+multilingual-e5-small*3,euclidean,raw]'

    ``preset="miners"`` is the paper's setting (raw weighted Euclidean
    distances); ``preset="zscore"`` (= the defaults) z-scores cosine distances.
    A preset sets ``metric`` and ``standardise``; passing either as well is an error.
    """

    def __init__(
        self,
        models: Sequence["str | Encoder"],
        weights: Sequence[float] | None = None,
        *,
        metric: Metric | None = None,
        standardise: bool | None = None,
        preset: Literal["zscore", "miners"] | None = None,
    ) -> None:
        if preset is not None:
            if preset not in DISTFUSE_PRESETS:
                raise ValueError(f"preset must be one of {sorted(DISTFUSE_PRESETS)}, got {preset!r}")
            if metric is not None or standardise is not None:
                raise ValueError(f"preset={preset!r} sets metric and standardise; do not pass them as well")
            metric, standardise = DISTFUSE_PRESETS[preset]["metric"], DISTFUSE_PRESETS[preset]["standardise"]
        metric = "cosine" if metric is None else metric
        standardise = True if standardise is None else standardise
        self.preset = preset
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        self.models = list(models)
        if not self.models:
            raise ValueError("DistFuse needs at least one model")
        self.weights = _check_weights(weights, len(self.models))
        self.metric = metric
        self.standardise = standardise

    @property
    def model_ids(self) -> list[str]:
        return [m if isinstance(m, str) else m.model_id for m in self.models]

    @property
    def id(self) -> str:
        parts = "+".join(f"{m}*{w:g}" for m, w in zip(self.model_ids, self.weights))
        return f"distfuse[{parts},{self.metric}{'' if self.standardise else ',raw'}]"

    def distances(
        self,
        query_texts: Sequence[str],
        corpus_texts: Sequence[str],
        *,
        query_language: str | None = None,
        corpus_language: str | None = None,
        cache: "EmbeddingCache | None | Literal[False]" = None,
    ) -> FusedDistances:
        """Embed both lists with every member (through the cache) and fuse their distances."""
        from semanscope_nb.models.embedding import embed_texts, load_encoder

        fit_corpus = list(dict.fromkeys([*query_texts, *corpus_texts]))
        providers, names = [], []
        self._members = []
        for m in self.models:
            enc = load_encoder(m, fit_corpus)
            q = embed_texts(enc, query_texts, language=query_language, cache=cache)
            c = embed_texts(enc, corpus_texts, language=corpus_language, cache=cache)
            providers.append(EmbeddingDistances(q, c, metric=self.metric, dtype=np.float64))  # z-scores: keep float64
            names.append(enc.model_id)
            self._members.append({"model": enc.model_id, "model_version": enc.version, "model_options": enc.options})
        return FusedDistances(providers, self.weights, standardise=self.standardise, names=names)

    def provenance(self) -> dict[str, Any]:
        members = getattr(self, "_members", [{"model": m} for m in self.model_ids])
        return {
            "model": self.id,
            "model_version": "+".join(str(m.get("model_version", "?")) for m in members),
            "model_options": {"members": [{**m, "weight": w} for m, w in zip(members, self.weights)],
                              "metric": self.metric, "standardise": self.standardise},
        }

    def __repr__(self) -> str:
        return f"DistFuse({self.id})"
