"""Retrieval-based (kNN) classification (MINERS, section 2.2), with a majority-class and a logistic-regression baseline.

A labelled training set in one language; test texts in the same language
(monolingual) or another (cross-lingual).  Each test text takes the majority
label of its k nearest training texts; a tie between labels goes to the label
of the nearest neighbour among the tied ones.  Neighbours are ordered by the
near-tie rule of :mod:`semanscope_nb.metrics.ties` (distances within the
provider's tolerance tie, and the lower training index goes first), which also
decides which neighbours fill the k-th place; so votes and predictions do not
depend on the block height, the thread count or the BLAS kernels.

Reported for k = 1, 5, 10: accuracy (with a bootstrap percentile interval over
test rows) and macro F1 (scikit-learn ``f1_score(average="macro")`` over the
union of train and test labels, ``zero_division=0``).  Baselines on the same
data: the majority class of the training labels, and scikit-learn's
``LogisticRegression`` on the same embeddings (standardised features; the
embeddings are unit-normalised first when the metric is cosine, the geometry
kNN sees).  An ensemble (DistFuse) provides distances, not embeddings, so it
gets no logistic-regression baseline.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> centres = rng.normal(size=(3, 8)) * 4
>>> y_tr = np.repeat(["a", "b", "c"], 20); y_te = np.repeat(["a", "b", "c"], 5)
>>> X_tr = centres[np.repeat([0, 1, 2], 20)] + rng.normal(size=(60, 8))
>>> X_te = centres[np.repeat([0, 1, 2], 5)] + rng.normal(size=(15, 8))
>>> r = snb.knn_classification(X_tr, y_tr, X_te, y_te, n_boot=0)
>>> r.accuracy[5], r.baselines["majority"]["accuracy"] < 0.5
(1.0, True)
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.data.concept_key import item_key, key_order
from semanscope_nb.errors import ArgumentError, DatasetError
from semanscope_nb.metrics.retrieval import number_or_nan
from semanscope_nb.metrics.search import (
    DistanceProvider,
    EmbeddingDistances,
    Metric,
    topk_search,
)
from semanscope_nb.metrics.spreads import rows_to_counts
from semanscope_nb.provenance import json_ready, shareable_report, shareable_source
from semanscope_nb.settings import resolve

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.metrics.fusion import DistFuse
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder


def _check_labels(labels: Any, name: str) -> np.ndarray:
    if labels is None:
        raise DatasetError(f"{name} are missing (None): kNN classification needs one label per text")
    arr = list(labels)
    if not arr:
        raise DatasetError(f"{name} is empty")
    bad = [i for i, v in enumerate(arr) if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())]
    if bad:
        raise DatasetError(f"{name}: {len(bad)} missing label(s) (None, NaN or empty), e.g. at rows {bad[:5]}")
    return np.asarray([str(v) for v in arr], dtype=object)


def vote(neighbour_labels: np.ndarray) -> np.ndarray:
    """Majority label of each row of ``neighbour_labels`` (nearest first); ties go to the nearest tied label.

    "Nearest first" is the order of :func:`~semanscope_nb.metrics.search.topk_search` (near-tie rule of
    :mod:`semanscope_nb.metrics.ties`), so a vote tie is decided the same way on every machine.

    >>> vote(np.array([["b", "a", "a", "b"], ["c", "a", "b", "a"]]))
    array(['b', 'a'], dtype=object)
    """
    nl = np.asarray(neighbour_labels, dtype=object)
    classes, codes = np.unique(nl.astype(str), return_inverse=True)
    codes = codes.reshape(nl.shape)
    n, k = codes.shape
    counts = np.zeros((n, classes.size), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), k), codes.ravel()), 1)
    first = np.full((n, classes.size), k, dtype=np.int64)  # position of each label's nearest occurrence
    np.minimum.at(first, (np.repeat(np.arange(n), k), codes.ravel()), np.tile(np.arange(k), n))
    tied = counts == counts.max(axis=1, keepdims=True)
    winner = np.where(tied, first, k + 1).argmin(axis=1)
    return classes[winner].astype(object)


def knn_predict(neighbours: np.ndarray, train_labels: Sequence[str], k: int) -> np.ndarray:
    """Labels predicted from the first ``k`` columns of ``neighbours`` (indices into ``train_labels``, nearest first)."""
    labels = np.asarray(list(train_labels), dtype=object)
    return vote(labels[np.asarray(neighbours)[:, :k]])


def majority_label(train_labels: Sequence[str]) -> str:
    """The most frequent training label (ties: alphabetically first)."""
    vals, counts = np.unique(np.asarray(list(train_labels), dtype=str), return_counts=True)
    return str(vals[np.argmax(counts)])


@dataclass(frozen=True)
class ClassificationResult(Result):
    """kNN classification scores per k, the baselines, predictions and bootstrap intervals."""

    kind = "classification"
    main_score_name = "accuracy_first_k"

    @property
    def accuracy_first_k(self) -> float:
        """kNN accuracy at the first k asked for (the main score)."""
        return self.accuracy[self.ks[0]]

    setting: str
    train_language: str | None
    test_language: str | None
    classes: tuple[str, ...]
    ks: tuple[int, ...]
    accuracy: dict[int, float]
    macro_f1: dict[int, float]
    baselines: dict[str, dict[str, float]]
    predictions: dict[str, np.ndarray]
    test_labels: np.ndarray
    intervals: dict[str, Interval]
    n_train: int
    n_test: int
    metric: str
    n_boot: int
    seed: int
    confidence: float
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    macro_precision: dict[int, float] = field(default_factory=dict)
    macro_recall: dict[int, float] = field(default_factory=dict)
    random_baseline: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "intervals", {k: Interval.of(v) for k, v in self.intervals.items()})

    def estimates(self) -> dict[str, Estimate]:
        """Accuracy of kNN at each k (``"knn@k"``) and of each baseline, with its bootstrap percentile interval.

        ``sem`` is NaN: the bootstrap keeps only the interval.
        """
        out = {f"knn@{k}": Estimate(self.accuracy[k], math.nan, self.intervals.get(f"knn@{k}", Interval.empty())) for k in self.ks}
        for name, sc in self.baselines.items():
            out[name] = Estimate(sc["accuracy"], math.nan, self.intervals.get(name, Interval.empty()))
        return out

    def summary(self) -> dict[str, Any]:
        """The main score, the counts, and each method's accuracy with its interval (``knn@k``, ``knn@k_ci_low``, ...)."""
        out = super().summary()
        for name, e in self.estimates().items():
            out[name] = e.value
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = e.ci
        for k in self.ks:
            out[f"macro_f1@{k}"] = self.macro_f1[k]
        return out

    def macro_frame(self) -> pd.DataFrame:
        """One row per method (kNN at each k, the baselines, the seeded random baseline): accuracy and macro P/R/F1.

        Macro scores are scikit-learn's ``precision_recall_fscore_support(average="macro")``
        over the union of train and test labels (``zero_division=0``).
        """
        rows = [{"method": f"kNN (k={k})", "accuracy": self.accuracy[k], "macro_precision": self.macro_precision.get(k, math.nan),
                 "macro_recall": self.macro_recall.get(k, math.nan), "macro_f1": self.macro_f1[k]} for k in self.ks]
        extra = dict(self.baselines)
        if self.random_baseline:
            extra["random (uniform over train labels)"] = self.random_baseline
        for name, sc in extra.items():
            rows.append({"method": name, "accuracy": sc["accuracy"], "macro_precision": sc.get("macro_precision", math.nan),
                         "macro_recall": sc.get("macro_recall", math.nan), "macro_f1": sc["macro_f1"]})
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """One row per method: kNN at each k, then the baselines."""
        rows = []
        for k in self.ks:
            lo, hi = self.intervals.get(f"knn@{k}", (math.nan, math.nan))
            rows.append({"method": f"kNN (k={k})", "k": k, "accuracy": self.accuracy[k], "ci_low": lo, "ci_high": hi,
                         "macro_f1": self.macro_f1[k]})
        for name, s in self.baselines.items():
            lo, hi = self.intervals.get(name, (math.nan, math.nan))
            rows.append({"method": name, "k": None, "accuracy": s["accuracy"], "ci_low": lo, "ci_high": hi, "macro_f1": s["macro_f1"]})
        df = pd.DataFrame(rows)
        df.insert(0, "setting", self.setting)
        df.insert(1, "train_language", self.train_language)
        df.insert(2, "test_language", self.test_language)
        if "model" in self.provenance:
            df.insert(0, "model", self.provenance["model"])
        return df

    def to_dict(self) -> dict[str, Any]:
        return json_ready({
            "setting": self.setting, "train_language": self.train_language, "test_language": self.test_language,
            "classes": list(self.classes), "ks": list(self.ks),
            "accuracy": {str(k): v for k, v in self.accuracy.items()},
            "macro_f1": {str(k): v for k, v in self.macro_f1.items()},
            "baselines": self.baselines, "predictions": {k: list(v) for k, v in self.predictions.items()},
            "test_labels": list(self.test_labels), "intervals": {k: list(v) for k, v in self.intervals.items()},
            "n_train": self.n_train, "n_test": self.n_test, "metric": self.metric, "n_boot": self.n_boot,
            "seed": self.seed, "confidence": self.confidence, "provenance": self.provenance, "notes": list(self.notes),
            "macro_precision": {str(k): v for k, v in self.macro_precision.items()},
            "macro_recall": {str(k): v for k, v in self.macro_recall.items()},
            "random_baseline": self.random_baseline,
        })

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ClassificationResult":
        return cls(
            setting=d["setting"], train_language=d["train_language"], test_language=d["test_language"],
            classes=tuple(d["classes"]), ks=tuple(int(k) for k in d["ks"]),
            accuracy={int(k): number_or_nan(v) for k, v in d["accuracy"].items()},
            macro_f1={int(k): number_or_nan(v) for k, v in d["macro_f1"].items()},
            baselines={k: {m: number_or_nan(x) for m, x in v.items()} for k, v in d["baselines"].items()},
            predictions={k: np.asarray(v, dtype=object) for k, v in d["predictions"].items()},
            test_labels=np.asarray(d["test_labels"], dtype=object),
            intervals={k: Interval.of(v) for k, v in d["intervals"].items()},
            n_train=int(d["n_train"]), n_test=int(d["n_test"]), metric=d["metric"], n_boot=int(d["n_boot"]),
            seed=int(d["seed"]), confidence=float(d["confidence"]), provenance=dict(d.get("provenance") or {}),
            notes=tuple(d.get("notes") or ()),
            macro_precision={int(k): number_or_nan(v) for k, v in (d.get("macro_precision") or {}).items()},
            macro_recall={int(k): number_or_nan(v) for k, v in (d.get("macro_recall") or {}).items()},
            random_baseline={m: number_or_nan(x) for m, x in (d.get("random_baseline") or {}).items()},
        )


def _accuracy_intervals(hits: dict[str, np.ndarray], *, n_boot: int, seed: int, confidence: float,
                        order: np.ndarray) -> dict[str, tuple[float, float]]:
    """Percentile intervals of each method's accuracy, resampling the test rows: slot ``s`` is row ``order[s]``."""
    names = list(hits)
    H = np.stack([hits[n].astype(np.float64) for n in names])  # methods x n
    n = H.shape[1]
    if n_boot == 0 or n < 2:
        return {name: (math.nan, math.nan) for name in names}

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        c = rows_to_counts(idx, n)
        return (H @ c.T) / c.sum(axis=1)

    import scipy.stats  # here, not at import time: it costs ~0.6 s of package start-up
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = scipy.stats.bootstrap((np.asarray(order),), statistic, n_resamples=int(n_boot), vectorized=True,
                                    batch=int(max(1, min(n_boot, 4_000_000 // n))), confidence_level=confidence,
                                    method="percentile", rng=np.random.default_rng(seed))
    out = {}
    for j, name in enumerate(names):
        dist = res.bootstrap_distribution[j]
        lo, hi = float(res.confidence_interval.low[j]), float(res.confidence_interval.high[j])
        if np.ptp(dist) == 0:
            lo = hi = float(dist[0])
        out[name] = (lo, hi)
    return out


def test_row_keys(texts: Sequence[str], labels: Sequence[Any]) -> list[str]:
    """What each test row is, for the draws over test rows (:func:`knn_classification`'s ``test_keys``): its text and
    label.  The one rule of every path (:func:`text_classification`, :func:`sib200_classification`, the ``knn`` task).

    >>> test_row_keys(["a cat"], ["animals"]) == test_row_keys(("a cat",), ("animals",))
    True
    """
    return [item_key(str(t), str(y)) for t, y in zip(texts, labels)]


def knn_classification(
    train: Any,
    train_labels: Sequence[str],
    test: Any = None,
    test_labels: Sequence[str] | None = None,
    *,
    ks: Sequence[int] = (1, 5, 10),
    metric: Metric = "cosine",
    logistic: bool = True,
    n_boot: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    block: int | None = None,
    setting: str | None = None,
    train_language: str | None = None,
    test_language: str | None = None,
    test_keys: Sequence[str] | None = None,
) -> ClassificationResult:
    """kNN classification of ``test`` rows from labelled ``train`` rows (embedding arrays).

    ``train`` may instead be a :class:`~semanscope_nb.metrics.search.DistanceProvider`
    of test x train distances (e.g. a DistFuse ensemble's), with ``test=None``;
    then the logistic-regression baseline is skipped (it needs embeddings).

    ``test_keys``: what each test row is (its text, or its id in a parallel set), so the seeded draws over test
    rows -- the bootstrap's resamples and the random baseline's labels -- are made in their canonical order
    (:func:`~semanscope_nb.data.concept_key.key_order`): the same test rows in another order get the same
    intervals.  None: the rows as given.
    """
    n_boot = resolve(n_boot, "n_boot")
    y_train = _check_labels(train_labels, "train_labels")
    y_test = _check_labels(test_labels, "test_labels")
    provider, X_train, X_test = _distances_of(train, test, metric=metric)
    if provider.n_corpus != y_train.size:
        raise DatasetError(f"train has {provider.n_corpus} rows but train_labels has {y_train.size}")
    if provider.n_queries != y_test.size:
        raise DatasetError(f"test has {provider.n_queries} rows but test_labels has {y_test.size}")
    ks = _checked_ks(ks, n_train=y_train.size)
    top = topk_search(provider, k=ks[-1], block=block)
    classes = tuple(sorted(set(y_train) | set(y_test)))
    predictions: dict[str, np.ndarray] = {}
    accuracy, macro_f1, macro_p, macro_r = {}, {}, {}, {}
    for k in ks:
        pred = knn_predict(top.indices, y_train, k)
        predictions[f"knn@{k}"] = pred
        s = _macro_scores(pred, y_test, classes)
        accuracy[k], macro_f1[k], macro_p[k], macro_r[k] = s["accuracy"], s["macro_f1"], s["macro_precision"], s["macro_recall"]
    predictions["majority"] = np.full(y_test.size, majority_label(y_train), dtype=object)
    if test_keys is not None and len(test_keys) != y_test.size:
        raise ArgumentError(f"test_keys has {len(test_keys)} entries but test_labels has {y_test.size}")
    order = key_order(None if test_keys is None else [str(k) for k in test_keys], y_test.size)
    random_scores = _random_baseline(y_train, y_test, classes, seed=seed, order=order)
    notes = []
    if logistic and X_train is not None and len(set(y_train)) > 1:
        predictions["logistic_regression"] = _logistic_predictions(X_train, y_train, X_test, metric=metric, seed=seed)
    elif logistic:
        notes.append("logistic regression skipped: " + ("distances only (no embeddings)" if X_train is None else "one class only"))
    baselines = {name: {m: v for m, v in _macro_scores(predictions[name], y_test, classes).items() if m in ("accuracy", "macro_f1")}
                 for name in ("majority", "logistic_regression") if name in predictions}
    hits = {name: pred == y_test for name, pred in predictions.items()}
    intervals = _accuracy_intervals(hits, n_boot=n_boot, seed=seed, confidence=confidence, order=order)
    if setting is None:
        setting = "cross-lingual" if train_language and test_language and train_language != test_language else "monolingual"
    return ClassificationResult(
        setting=setting, train_language=train_language, test_language=test_language, classes=classes, ks=ks,
        accuracy=accuracy, macro_f1=macro_f1, baselines=baselines, predictions=predictions, test_labels=y_test,
        intervals=intervals, n_train=int(y_train.size), n_test=int(y_test.size), metric=getattr(provider, "metric", metric),
        n_boot=int(n_boot), seed=seed, confidence=confidence,
        macro_precision=macro_p, macro_recall=macro_r, random_baseline=random_scores,
        provenance={"parameters": {"ks": list(ks), "metric": getattr(provider, "metric", metric), "n_boot": int(n_boot),
                                   "seed": seed, "confidence": confidence, "distances": provider.describe()}},
        notes=tuple(notes),
    )


def _distances_of(train: Any, test: Any, *, metric: Metric) -> tuple[DistanceProvider, np.ndarray | None, np.ndarray | None]:
    """(test x train distances, train embeddings, test embeddings); the embeddings are None for a given provider."""
    if isinstance(train, DistanceProvider):
        if test is not None:
            raise TypeError("pass either a DistanceProvider (test x train) alone, or train and test embeddings")
        return train, None, None
    if test is None:
        raise TypeError("test embeddings are missing")
    provider = EmbeddingDistances(test, train, metric=metric, names=("test", "train"))
    return provider, np.asarray(train, dtype=np.float64), np.asarray(test, dtype=np.float64)


def _checked_ks(ks: int | Sequence[int], *, n_train: int) -> tuple[int, ...]:
    """The distinct ks in increasing order; each at most the training set's size."""
    if isinstance(ks, int):
        ks = (ks,)
    out = tuple(sorted(set(int(k) for k in ks)))
    if not out:
        raise ValueError("ks must hold at least one k")
    if out[-1] > n_train:
        raise ValueError(f"k={out[-1]} is larger than the training set ({n_train} rows)")
    return out


def _macro_scores(pred: np.ndarray, y_test: np.ndarray, classes: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro precision / recall / F1 over ``classes`` (a class never predicted scores 0)."""
    # scikit-learn for P/R/F1: the reference implementation MTEB and MINERS report with
    from sklearn.metrics import precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(y_test.astype(str), pred.astype(str), labels=list(classes),
                                                 average="macro", zero_division=0)
    return {"accuracy": float(np.mean(pred == y_test)), "macro_f1": float(f),
            "macro_precision": float(p), "macro_recall": float(r)}


def _random_baseline(y_train: np.ndarray, y_test: np.ndarray, classes: Sequence[str], *, seed: int,
                     order: np.ndarray) -> dict[str, float]:
    """Scores of labels drawn uniformly from the training labels (seeded, draw ``s`` for test row ``order[s]``); its
    expected accuracy is 1 / #labels."""
    train_classes = np.array(sorted(set(y_train)), dtype=object)
    rand = np.empty(y_test.size, dtype=object)
    rand[np.asarray(order)] = train_classes[np.random.default_rng(seed).integers(0, train_classes.size, size=y_test.size)]
    return {**_macro_scores(rand, y_test, classes), "expected_accuracy": 1.0 / train_classes.size}


def _logistic_predictions(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, *, metric: Metric,
                          seed: int) -> np.ndarray:
    """The logistic-regression baseline (scikit-learn, standardised features; unit rows for cosine) on the test rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def feats(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True) if metric == "cosine" else x

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(feats(X_train), y_train.astype(str))
    return clf.predict(feats(X_test)).astype(object)


def text_classification(
    train_texts: Sequence[str],
    train_labels: Sequence[str],
    test_texts: Sequence[str],
    test_labels: Sequence[str],
    model: "str | Encoder | DistFuse | None" = None,
    *,
    train_language: str | None = None,
    test_language: str | None = None,
    cache: "EmbeddingCache | None | Literal[False]" = None,
    name: str = "texts",
    **kwargs: Any,
) -> ClassificationResult:
    """:func:`knn_classification` on texts embedded by ``model`` (id, Encoder or DistFuse) through the cache.

    Each test row is keyed by its text and label (``test_keys``, unless given): the draws over test rows follow them.
    """
    from semanscope_nb.metrics.fusion import DistFuse
    from semanscope_nb.metrics.retrieval import check_texts, hash_texts
    from semanscope_nb.models.embedding import embed_texts, load_encoder
    from semanscope_nb.provenance import package_info, utc_now

    tr = check_texts(train_texts, "train_texts")
    te = check_texts(test_texts, "test_texts")
    if kwargs.get("test_keys") is None and len(test_labels) == len(te):
        kwargs["test_keys"] = test_row_keys(te, test_labels)
    if isinstance(model, DistFuse):
        provider = model.distances(te, tr, query_language=test_language, corpus_language=train_language, cache=cache)
        result = knn_classification(provider, train_labels, None, test_labels, train_language=train_language,
                                    test_language=test_language, **kwargs)
        info = model.provenance()
    else:
        encoder = load_encoder(model, list(dict.fromkeys([*tr, *te])))
        X_tr = embed_texts(encoder, tr, language=train_language, cache=cache)
        X_te = embed_texts(encoder, te, language=test_language, cache=cache)
        result = knn_classification(X_tr, train_labels, X_te, test_labels, train_language=train_language,
                                    test_language=test_language, **kwargs)
        info = {"model": encoder.model_id, "model_version": encoder.version, "model_options": encoder.options}
    return replace(result, provenance={**result.provenance, **info, "dataset": name, "texts_sha256": hash_texts(tr, te),
                                       "packages": package_info(), "created": utc_now()})


def sib200_classification(
    model: "str | Encoder | DistFuse | None" = None,
    *,
    train_language: str = "en",
    test_language: str | None = None,
    train_split: str = "train",
    test_split: str = "test",
    max_train: int | None = None,
    max_test: int | None = None,
    folder: str | os.PathLike | None = None,
    **kwargs: Any,
) -> ClassificationResult:
    """kNN topic classification on SIB-200: train on ``train_language``, test on ``test_language``.

    ``test_language=None`` is the monolingual setting (same language); another
    language is the cross-lingual setting.  ``max_train`` / ``max_test`` draw
    N rows of each split at random (seeded by ``seed``; the files are sorted by
    topic, so their first rows are not a fair sample).  Further keyword arguments go
    to :func:`knn_classification` (``ks``, ``metric``, ``n_boot``, ``seed``, ...)
    and ``cache``.
    """
    from semanscope_nb.data.bitext import limited_splits, read_sib200

    test_language = test_language or train_language
    tr = read_sib200(train_language, train_split, folder=folder)
    te = read_sib200(test_language, test_split, folder=folder)
    tr, te, sample = limited_splits(tr, te, max_train=max_train, max_test=max_test, seed=kwargs.get("seed", 0))
    result = text_classification(tr.texts, tr.labels, te.texts, te.labels, model, train_language=tr.language,
                                 test_language=te.language, name=f"sib-200:{train_split}->{test_split}", **kwargs)
    return replace(result, provenance={**result.provenance, "sample": sample, "dataset_sha256": {shareable_source(tr.source): tr.sha256, shareable_source(te.source): te.sha256},
                                       "reader_report": shareable_report(list(getattr(tr, "report", ())) + list(getattr(te, "report", ())),
                                                                         tr.source, te.source)})


def classification_frame(results: Mapping[str, ClassificationResult] | Sequence[ClassificationResult]) -> pd.DataFrame:
    """The :meth:`ClassificationResult.to_frame` rows of several results, stacked."""
    items = results.items() if isinstance(results, Mapping) else ((None, r) for r in results)
    frames = []
    for name, r in items:
        df = r.to_frame()
        if name is not None:
            df.insert(0, "name", name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
