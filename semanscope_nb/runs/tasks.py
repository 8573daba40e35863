"""Every score is a registered task: one registry, one way to run it (:func:`run_task`).

A :class:`Task` is described by metadata, as mteb describes its tasks: a name,
the kind of data it reads, what it needs (two languages, labels, several
models), its default parameters, the result type and that type's main score.
It runs on an :class:`~semanscope_nb.models.embedded.Embedded` (or several) and
returns a :class:`~semanscope_nb.results.Result`.

The grid, the CLI, the panels and the convenience functions
(:func:`~semanscope_nb.runs.evaluate.dataset_affinity`, ``language_pairs``, ...)
all call :func:`run_task`, so every path checks the same things, embeds the
same way and stamps the same provenance.

======================  ==========  ==================================================
task                    data        result (main score)
======================  ==========  ==================================================
``sa``                  words       SAResult (cosine SA)
``pair-sa``             words       PairAffinity (lowest pair SA)
``permutation``         words       PermutationTest (p-value)
``comparison``          words       ModelComparison (best model's SA); several models
``retrieval``           words,      RetrievalSet (mean P@1): every language pair of a
                        parallel    word dataset, or a parallel corpus row by row
``bdi``                 words       BDIResult (P@1, nearest neighbour or CSLS)
``knn``                 labelled    ClassificationResult (kNN accuracy); a labelled
                                    train and test split (``LabelledSplits``)
``csc``                 sentences   CSCResult (overlap, lower is better)
``projection``          words       Projection (PHATE / UMAP / t-SNE / PCA map)
======================  ==========  ==================================================

Example
-------
>>> import semanscope_nb as snb
>>> r = snb.run_task("sa", "edge-cases", "random-null", languages=["en", "zh"], n_boot=200, cache=False)
>>> r.provenance["task"], r.tier
('sa', 'chance')
>>> sorted(t.name for t in snb.list_tasks())[:3]
['bdi', 'comparison', 'csc']
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

from semanscope_nb.data.datasets import as_dataset
from semanscope_nb.errors import ArgumentError, UnknownNameError
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.cancel import ShouldStop, check_stop
from semanscope_nb.models.embedded import Embedded, embed
from semanscope_nb.results import Result
from semanscope_nb.settings import settings

DATA_KINDS = ("words", "sentences", "parallel", "labelled")


@dataclass(frozen=True)
class Task:
    """A registered score: metadata plus ``run(embedded, **params) -> Result``.

    ``inputs``: 1 (one :class:`Embedded`) or ``"models"`` (one dataset under
    several models: a list of :class:`Embedded`).  ``defaults`` lists every
    parameter the task accepts; a default of None for ``n_boot`` or ``seed``
    means ``settings.n_boot`` / ``settings.seed``.  ``check(dataset, params)``
    refuses, before anything is embedded, what the task cannot score;
    ``texts(dataset, params)`` names further texts the task embeds (CSC's
    perturbed sentences), so a grid can embed them ahead; ``select(dataset,
    params)`` narrows the dataset before anything is embedded (CSC's seeded
    sample of ``max_sentences``).  Bump ``version``
    when the task's numbers change (stored job results are then not reused).
    """

    name: str
    run: Callable[..., Result] = field(repr=False)
    result_type: type[Result]
    data: tuple[str, ...] = ("words",)
    needs: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    higher_is_better: bool = True
    version: str = "1"
    description: str = ""
    inputs: int | str = 1
    check: Callable[[Any, dict], None] | None = field(default=None, repr=False)
    texts: Callable[[Any, dict], dict[str, list[str]]] | None = field(default=None, repr=False)
    select: Callable[[Any, dict], Any] | None = field(default=None, repr=False)

    @property
    def main_score(self) -> str:
        return self.result_type.main_score_name

    @property
    def stoppable(self) -> bool:
        """Whether :attr:`run` takes ``should_stop=`` (checked between its batches); others are asked before they start."""
        try:
            return "should_stop" in inspect.signature(self.run).parameters
        except (TypeError, ValueError):  # a builtin or a callable without a signature
            return False

    def params(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The full parameter set: defaults, then ``given``; unknown names are refused, settings fill None."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise ArgumentError(f"task '{self.name}': unknown parameter(s) {unknown}; it takes {', '.join(sorted(self.defaults))}")
        out = {**self.defaults, **given}
        for name in ("n_boot", "seed"):
            if name in out and out[name] is None:
                out[name] = getattr(settings, name)
        return out

    def accepts(self, dataset: Any) -> bool:
        """Whether this task reads ``dataset``'s kind of data."""
        return data_kind(dataset) in self.data


_TASKS: dict[str, Task] = {}


def register_task(task: Task, *, replace: bool = False) -> Task:
    """Make ``task`` available to :func:`run_task`, the grid, the CLI and the panels."""
    if not isinstance(task, Task):
        raise ArgumentError(f"register_task takes a Task, got {type(task).__name__}")
    if not task.name or any(c in task.name for c in "/\\ ") or task.name.startswith("."):
        raise ArgumentError(f"task name must be non-empty, without spaces or slashes, got {task.name!r}")
    bad = [k for k in task.data if k not in DATA_KINDS]
    if bad:
        raise ArgumentError(f"task '{task.name}': data must be among {DATA_KINDS}, got {bad}")
    if task.name in _TASKS and not replace:
        raise ArgumentError(f"task '{task.name}' is already registered (pass replace=True)")
    _TASKS[task.name] = task
    return task


def get_task(name: "str | Task") -> Task:
    """The registered task called ``name``."""
    if isinstance(name, Task):
        return name
    if name not in _TASKS:
        import difflib

        close = difflib.get_close_matches(str(name), list(_TASKS), n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise UnknownNameError(f"unknown task '{name}'; registered: {', '.join(sorted(_TASKS))}.{hint}")
    return _TASKS[name]


def list_tasks() -> list[Task]:
    """Every registered task, in registration order."""
    return list(_TASKS.values())


def data_kind(dataset: Any) -> str:
    """'words', 'sentences', 'parallel' or 'labelled' for a dataset value."""
    from semanscope_nb.data.bitext import LabelledSplits, ParallelCorpus
    from semanscope_nb.data.sentences import SentenceCorpus
    from semanscope_nb.data.words import WordDataset

    if isinstance(dataset, Embedded):
        dataset = dataset.dataset
    for kind, cls in (("words", WordDataset), ("sentences", SentenceCorpus), ("parallel", ParallelCorpus), ("labelled", LabelledSplits)):
        if isinstance(dataset, cls):
            return kind
    raise ArgumentError(f"not a dataset: {type(dataset).__name__}")


def prepare(
    task: "str | Task",
    dataset: Any,
    model: Any = None,
    *,
    languages: Sequence[str] | None = None,
    cache: EmbeddingCache | str | os.PathLike | None | Literal[False] = None,
    progress: bool | None = None,
    params: Mapping[str, Any] | None = None,
    should_stop: ShouldStop | None = None,
) -> Embedded:
    """Check ``dataset`` for ``task``, then embed it (and the texts the task adds) with ``model``.

    What a panel calls before it keeps the :class:`Embedded` for several tasks.
    ``should_stop`` (see :mod:`semanscope_nb.models.cancel`) is asked between
    embedding batches: when it says stop, :class:`~semanscope_nb.errors.Cancelled` is raised.
    """
    t = get_task(task)
    p = t.params(params)
    ds = as_dataset(dataset, languages=languages)
    if not t.accepts(ds):
        raise ArgumentError(f"task '{t.name}' reads {' or '.join(t.data)} data; '{ds.name}' is {data_kind(ds)}")
    if t.select is not None:
        ds = t.select(ds, p)
    if t.check is not None:
        t.check(ds, p)
    emb = embed(ds, model, cache=cache, progress=progress, should_stop=should_stop)
    if t.texts is not None:
        emb = emb.extend(t.texts(ds, p), progress=progress, should_stop=should_stop)
    return emb


def run_task(
    task: "str | Task",
    data: Any,
    model: Any = None,
    *,
    languages: Sequence[str] | None = None,
    cache: EmbeddingCache | str | os.PathLike | None | Literal[False] = None,
    progress: bool | None = None,
    should_stop: ShouldStop | None = None,
    **params: Any,
) -> Result:
    """Run ``task`` on ``data`` with ``model``; the one path every caller takes.

    ``data``: an :class:`Embedded` (``model`` must then be None), or anything
    :func:`semanscope_nb.embed` reads (a bundled name, a CSV path, a dataset
    value, a (train, test) pair of labelled splits), embedded here through the
    cache.  ``comparison`` takes a dataset and a list of models, or a list of
    :class:`Embedded`.  ``params`` are the task's
    parameters (:attr:`Task.defaults`).

    ``should_stop`` (a callable, see :mod:`semanscope_nb.models.cancel`; not a
    task parameter) stops the run early with :class:`~semanscope_nb.errors.Cancelled`:
    it is asked between embedding batches, before the task starts and, for a
    task whose function takes ``should_stop`` (:attr:`Task.stoppable`: ``sa``,
    ``pair-sa``, ``projection``), between its own batches.
    """
    t = get_task(task)
    p = t.params(params)
    if t.inputs == "models":
        inputs = _model_inputs(t, data, model, languages, cache, progress, p, should_stop)
    else:
        inputs = [_one_input(t, data, model, languages, cache, progress, p, should_stop)]
    check_stop(should_stop, f"task '{t.name}'")
    stop = {"should_stop": should_stop} if should_stop is not None and t.stoppable else {}
    result = t.run(*inputs, **p, **stop) if t.inputs != "models" else t.run(inputs, **p, **stop)
    own = dict(getattr(result, "provenance", {}) or {})
    base = dict(inputs[0].provenance) if t.inputs == 1 else {}  # every single-input result carries its embedding's provenance
    return result.with_provenance(**{k: v for k, v in base.items() if k not in own}, task=t.name, task_version=t.version)


def _one_input(t: Task, data: Any, model: Any, languages, cache, progress, p: dict, should_stop=None) -> Embedded:
    if isinstance(data, Embedded):
        if model is not None and model != data.model_id:
            raise ArgumentError(f"model={model!r} was given with data embedded by '{data.model_id}'; pass one or the other")
        emb = data.select(languages) if languages is not None else data
        if not t.accepts(emb.dataset):
            raise ArgumentError(f"task '{t.name}' reads {' or '.join(t.data)} data; '{emb.name}' is {data_kind(emb.dataset)}")
        if t.check is not None:
            t.check(emb.dataset, p)
        if t.texts is not None:
            emb = emb.extend(t.texts(emb.dataset, p), progress=progress, should_stop=should_stop)
        return emb
    return prepare(t, data, model, languages=languages, cache=cache, progress=progress, params=p, should_stop=should_stop)


def _model_inputs(t: Task, data: Any, models: Any, languages, cache, progress, p: dict, should_stop=None) -> list[Embedded]:
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, Embedded) for d in data):
        return [_one_input(t, d, None, languages, cache, progress, p, should_stop) for d in data]
    if models is None or isinstance(models, str) or len(models) < 2:
        raise ArgumentError(f"task '{t.name}' compares several models: pass models=[...] (two or more), got {models!r}")
    return [_one_input(t, data, m, languages, cache, progress, p, should_stop) for m in models]


def builtin_tasks() -> list[Task]:
    """The tasks registered at import (their functions live in :mod:`semanscope_nb.runs.task_library`)."""
    from semanscope_nb.metrics.chance import PermutationTest
    from semanscope_nb.metrics.classification import ClassificationResult
    from semanscope_nb.metrics.compare import ModelComparison
    from semanscope_nb.metrics.contextual import BDIResult
    from semanscope_nb.metrics.csc.separation import CSCResult
    from semanscope_nb.metrics.pairs import PairAffinity
    from semanscope_nb.metrics.retrieval import RetrievalSet
    from semanscope_nb.plots.projection import Projection
    from semanscope_nb.metrics.affinity import DEFAULT_TIERS, SAResult
    from semanscope_nb.runs import task_library as lib

    boot = {"n_boot": None, "seed": None}
    return [
        Task("sa", lib.sa_task, SAResult, ("words",), ("languages>=2",),
             {**boot, "confidence": 0.95, "thresholds": DEFAULT_TIERS, "on_zero": "drop", "method": "percentile",
              "surface_null": True},
             version="2",  # 2: resamples and re-pairings drawn over the concepts in canonical order (metrics.row_order)
             description="Semantic Affinity (cosine and Euclidean) with its bootstrap, chance level and verdict",
             check=lib.check_sa),
        Task("pair-sa", lib.pair_sa_task, PairAffinity, ("words",), ("languages>=2",),
             {**boot, "confidence": 0.95, "thresholds": DEFAULT_TIERS, "n_perm": None, "alpha": 0.05, "surface_null": True,
              "on_zero": "drop"},
             version="5",
             description="SA of every language pair, each with its own chance level, artefact exclusion and an FDR-controlled "
                         "verdict", check=lib.check_sa),
        Task("permutation", lib.permutation_task, PermutationTest, ("words",), ("languages>=2",), {"n_perm": 1000, "seed": None},
             version="4", higher_is_better=False,
             description="the verdict's permutation test: SA of the artefact-free concepts against shuffled translations",
             check=lib.check_sa),
        Task("comparison", lib.comparison_task, ModelComparison, ("words",), ("languages>=2", "models>=2"),
             {**boot, "n_perm": 10000, "confidence": 0.95, "alpha": 0.05}, inputs="models", version="5",
             description="paired model-vs-model comparison of SA − chance on the same artefact-free concepts (Holm, rank bands)",
             check=lib.check_sa),
        Task("retrieval", lib.retrieval_task, RetrievalSet, ("words", "parallel"), ("languages>=2",),
             {"source": None, "targets": None, "ks": [1, 5, 10], "n_boot": None, "seed": None, "confidence": 0.95},
             version="row-order-3",  # 2: queries resampled in canonical order (data.concept_key); 3: also a parallel corpus's
             description="retrieval P@K: each language pair of a word dataset (any gold in top K), or a parallel corpus"),
        Task("bdi", lib.bdi_task, BDIResult, ("words",), ("languages>=2",),
             {"source": None, "target": None, "method": "nn", "ks": [1, 5], "knn": 10, "n_boot": None, "seed": None},
             version="2",  # 2: queries resampled in canonical order (data.concept_key)
             description="bilingual lexicon induction against the full target vocabulary (NN or CSLS)",
             check=lib.bdi_pair),
        Task("knn", lib.knn_task, ClassificationResult, ("labelled",), ("labels",),
             {"ks": [1, 5, 10], "metric": "cosine", "logistic": True, "n_boot": None, "seed": None, "confidence": 0.95},
             version="2",  # 2: test rows resampled in canonical order (data.concept_key)
             description="kNN classification of a test split from a labelled train split, with baselines"),
        Task("csc", lib.csc_task, CSCResult, ("sentences",), (),
             {"max_sentences": None, "max_per_sentence": 3, "negation": "particle", "n_boot": None, "seed": None, "confidence": 0.95,
              "language": None, "bandwidth": None, "min_words": None, "max_words": None, "fuzz_terms": None,
              "negation_terms": None},
             higher_is_better=False, texts=lib.csc_texts, select=lib.csc_sample,
             version="2",  # 2: the sample and the resamples drawn over sentences in canonical order (data.concept_key)
             description="Concept Separation Curves: overlap of fuzz and negation similarity curves (lower = better)"),
        Task("projection", lib.projection_task, Projection, ("words",), (),
             {"method": "phate", "random_state": 0, "n_components": 2, "options": None, "projection_cache": None},
             description="a 2-D or 3-D map of every word (PHATE with the paper's settings, UMAP, t-SNE, PCA)"),
    ]



def _builtin() -> None:
    for task in builtin_tasks():
        register_task(task, replace=True)


_builtin()
