"""The scale-out benchmark grid: models x datasets x metrics (x parameters) through joblib.

Every job is one (model, dataset, metric, parameters) tuple, keyed by a hash
of (the model's cache key, the dataset's rows and hash, the metric and its
version, the parameters).  A finished job is written at once, atomically, to
``<out_dir>/runs/<model>__<dataset>__<metric>__<key>.json`` by the process
that ran it: workers write different files, so they never clobber each
other; a rerun skips every job whose file exists; a killed run loses only
the jobs in flight.  The driver combines the job files into
``leaderboard.csv`` / ``leaderboard.json`` at the end.

Execution goes through joblib (no scheduler or worker pool of our own):
``backend="serial"`` (in this process), ``"loky"`` (joblib's default process
pool) or ``"dask"`` (``joblib.parallel_config(backend="dask")`` on a
``dask.distributed`` client: a scheduler address, or ``"local"`` for a
LocalCluster of processes on this machine).

The per-word cache across workers
---------------------------------
Every worker reads and writes the one shared SQLite cache
(:class:`~semanscope_nb.models.cache.EmbeddingCache`: WAL journal, busy timeout,
one transaction per batch), and the grid adds an *embedding phase*: before
the metric jobs run, one task per model embeds the union of the texts its
pending jobs need (only those the cache lacks): the word datasets' texts and
the texts a metric declares (``register_metric(texts=...)``: CSC's original
and perturbed sentences).  So each (model, text) is computed once for the
whole grid, by one worker, and the metric jobs then read every vector from
the cache (they load no model weights at all).  Without that phase, jobs
that share words (SA and retrieval on one dataset, two datasets sharing
words) race: both miss the cache and both embed the word (measured: 861
encodes for 858 cache entries on a 2-worker LocalCluster; 858 with it).
The one exception: retrieval fits TF-IDF per language pair, so that cheap
baseline embeds inside its jobs.
Why not ship the vectors from the driver instead: the driver would have to
run every model itself (serialising the expensive part), and each job would
receive megabytes of arrays through the scheduler; the shared cache also
keeps what a killed run has already paid for.  The price: the cache folder
and the results folder must be on a filesystem every worker sees (local
disk for loky and a LocalCluster; for a multi-host cluster a shared POSIX
filesystem with working file locks - SQLite over NFS without locking is not
safe).  API keys are read by each worker from its own environment and are
never shipped with a job.

Numbers across workers
----------------------
joblib's loky workers start with one BLAS thread each (``n_cpus // n_jobs``)
where the serial run has all of them, and which texts share an encoding
batch depends on the order in which jobs reach the cache.  Neither changes a
decision: every rank, prediction, vote and top-k list follows the near-tie
rule of :mod:`semanscope_nb.metrics.ties`, whose tolerance covers the last-bit
differences of BLAS blockings and thread counts and the encoders' documented
``vector_tolerance``.  Floats can differ in their last bits (the USE port's
vectors move by up to 2e-6 with their batch, see
:class:`~semanscope_nb.models.encoders.USEEncoder`; the NumPy e5 token port
pins one BLAS thread and runs each text alone, so it does not move at all).
Threads are therefore not pinned by the grid; ``tests/test_grid.py`` compares
the serial and the loky run with decisions equal and floats within the
tolerance derived from that bound.

Faults
------
A job that raises is reported (``result.failures``) with its error; the rest
of the grid finishes.  A worker process that dies (killed, out of memory)
leaves an in-flight marker; its jobs are retried, suspects one at a time,
and a job that kills its worker more than ``max_retries`` times is reported
as failed.  (Dask also reschedules the tasks of a lost worker by itself.)
An unreachable scheduler fails fast with a suggestion to run locally.
A damaged or truncated job file is recomputed, and named in ``result.warnings``.
While the grid runs on loky or Dask, SIGTERM and SIGINT first shut the worker
pool down (workers are killed, not left computing for minutes), then do what
they did before (the default SIGTERM ends the process; SIGINT raises
KeyboardInterrupt); the previous handlers are restored when the grid returns.

Example
-------
>>> import tempfile, semanscope_nb as snb
>>> out = tempfile.mkdtemp()
>>> g = snb.run_grid(["random-null"], ["edge-cases"], metrics=["sa", "retrieval"], max_concepts=20,
...                  params={"sa": {"n_boot": 50}}, out_dir=out, progress=False)
>>> sorted(g.table.metric), len(g.failures)
(['retrieval', 'sa'], 0)
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
import traceback
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.data.words import WordDataset
from semanscope_nb.errors import SemanscopeError
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.registry import (
    ModelInfo,
    get_model_info,
    list_models,
    load_model,
    register_model,
)
from semanscope_nb.provenance import (
    atomic_write_json,
    atomic_write_text,
    json_ready,
    package_info,
    utc_now,
)
from semanscope_nb.runs.evaluate import (
    JobFileWarning,
    _default_models,
    _load_datasets,
    _model_meta,
    _safe,
    prepare_encoder,
)

BACKENDS = ("serial", "loky", "dask")
#: models registered when the package was imported exist in every worker; others (API models, ...) are shipped with the jobs
_STARTUP_MODELS = frozenset(m.id for m in list_models())


class GridBackendError(SemanscopeError, RuntimeError):
    """The execution backend cannot be used (unreachable scheduler, bad backend options)."""


# --------------------------------------------------------------------------- metrics

MetricFn = Callable[[str, WordDataset, dict, EmbeddingCache], dict]


@dataclass(frozen=True)
class Metric:
    """A grid metric: ``fn(model_id, dataset, params, cache) -> JSON-able dict``.

    The dict's ``"summary"`` entry (a flat dict of numbers/strings), or else its
    top-level scalars, becomes the job's leaderboard row.  ``defaults`` lists
    every parameter the metric accepts; ``headline`` is the summary column that
    ranks models (``higher_is_better`` says which way); bump ``version`` when
    the metric's numbers change (old job files are then not reused).
    ``data``: ``"words"`` (the metric gets a :class:`WordDataset`) or
    ``"sentences"`` (a :class:`~semanscope_nb.data.sentences.SentenceCorpus`).
    ``embeds_dataset``: the grid pre-embeds the dataset's texts for it (so each
    word is embedded once across workers); ``texts(dataset, params) -> {language:
    [texts]}`` names other texts the metric will embed (e.g. CSC's perturbed
    sentences), so they are pre-embedded too (a corpus-fitted model is fitted on
    exactly those texts, as the metric will do).
    """

    name: str
    fn: MetricFn
    defaults: Mapping[str, Any] = field(default_factory=dict)
    headline: str | None = None
    version: str = "1"
    embeds_dataset: bool = True
    description: str = ""
    data: str = "words"
    higher_is_better: bool = True
    texts: Callable[[Any, dict], dict] | None = None


_METRICS: dict[str, Metric] = {}


def register_metric(
    name: str,
    fn: MetricFn,
    *,
    defaults: Mapping[str, Any] | None = None,
    headline: str | None = None,
    version: str = "1",
    embeds_dataset: bool = True,
    description: str = "",
    data: str = "words",
    higher_is_better: bool = True,
    texts: Callable[[Any, dict], dict] | None = None,
    replace: bool = False,
) -> Metric:
    """Make ``fn(model_id, dataset, params, cache) -> dict`` available to :func:`run_grid` as ``name``.

    >>> import semanscope_nb as snb
    >>> m = snb.register_metric("n-words", lambda model, ds, params, cache: {"n": len(ds.all_texts())},
    ...                         headline="n", embeds_dataset=False, replace=True)
    >>> m.name
    'n-words'
    """
    if not name or not isinstance(name, str) or any(c in name for c in "/\\ "):
        raise ValueError(f"metric name must be a non-empty string without spaces or slashes, got {name!r}")
    if not callable(fn):
        raise TypeError(f"metric '{name}': fn must be callable, got {type(fn).__name__}")
    if data not in ("words", "sentences"):
        raise ValueError(f"metric '{name}': data must be 'words' or 'sentences', got {data!r}")
    if name in _METRICS and not replace:
        raise ValueError(f"metric '{name}' is already registered (pass replace=True)")
    metric = Metric(name, fn, dict(defaults or {}), headline, str(version), embeds_dataset and data == "words", description,
                    data, higher_is_better, texts)
    _METRICS[name] = metric
    return metric


def list_metrics() -> list[Metric]:
    """Every registered grid metric."""
    return list(_METRICS.values())


def get_metric(name: str) -> Metric:
    if name not in _METRICS:
        raise ValueError(f"unknown metric '{name}'; registered: {', '.join(sorted(_METRICS))}")
    return _METRICS[name]


def _sa_metric(model: str, dataset: WordDataset, params: dict, cache: EmbeddingCache) -> dict:
    from semanscope_nb.runs.evaluate import dataset_affinity

    r = dataset_affinity(dataset, model, cache=cache, n_boot=params["n_boot"], seed=params["seed"],
                         confidence=params["confidence"], progress=False)
    return {**r.to_dict(), "summary": r.summary()}


def _default_pairs(dataset: WordDataset, params: dict) -> list[tuple[str, str]]:
    langs = list(dataset.languages)
    source = params.get("source") or ("en" if "en" in langs else langs[0])
    if source not in langs:
        raise ValueError(f"retrieval: source language '{source}' is not in dataset '{dataset.name}' ({', '.join(langs)})")
    targets = params.get("targets") or [lang for lang in langs if lang != source]
    missing = [t for t in targets if t not in langs]
    if missing:
        raise ValueError(f"retrieval: target language(s) {missing} not in dataset '{dataset.name}' ({', '.join(langs)})")
    return [(source, t) for t in targets if t != source]


def _retrieval_metric(model: str, dataset: WordDataset, params: dict, cache: EmbeddingCache) -> dict:
    """Bilingual lexicon induction P@K (:func:`semanscope_nb.metrics.retrieval.lexicon_induction`), source -> each target.

    Queries: every unique source word (each ``|`` alternative); candidates: every
    unique target word; a hit at K if any gold translation is among the K nearest.
    """
    from semanscope_nb.metrics.retrieval import lexicon_induction

    per_pair = {}
    for src, tgt in _default_pairs(dataset, params):
        r = lexicon_induction(dataset, model, source=src, target=tgt, ks=params["ks"], n_boot=params["n_boot"],
                              seed=params["seed"], cache=cache)
        per_pair[f"{src}->{tgt}"] = {"forward": r.summary(), "reverse": r.reverse.summary() if r.reverse else None}
    ks = [int(k) for k in params["ks"]]
    summary: dict[str, Any] = {"n_pairs": len(per_pair)}
    for k in ks:
        summary[f"p_at_{k}"] = float(np.mean([v["forward"][f"accuracy@{k}"] for v in per_pair.values()]))
    summary["mrr"] = float(np.mean([v["forward"]["mrr"] for v in per_pair.values()]))
    summary["p_at_1_reverse"] = float(np.mean([v["reverse"]["accuracy@1"] for v in per_pair.values() if v["reverse"]]))
    return {"summary": summary, "per_pair": per_pair,
            "implementation": "semanscope_nb.metrics.retrieval.lexicon_induction (cosine, MUSE convention)"}


def _csc_metric(model: str, corpus: Any, params: dict, cache: EmbeddingCache) -> dict:
    """Concept Separation Curves (:func:`semanscope_nb.metrics.csc.concept_separation`) on a sentence corpus."""
    from semanscope_nb.metrics.csc.separation import concept_separation

    r = concept_separation(_csc_sample(corpus, params), model, language=corpus.language, max_per_sentence=params["max_per_sentence"],
                           negation=params["negation"], seed=params["seed"], n_boot=params["n_boot"],
                           confidence=params["confidence"], cache=cache, progress=False)
    summary = {k: v for k, v in r.summary().items() if k not in ("model", "corpus", "language")}
    return {**r.to_dict(), "summary": summary}


def _csc_sample(corpus: Any, params: dict) -> Any:
    return corpus.sample(params["max_sentences"], seed=params["seed"]) if params["max_sentences"] else corpus


def _csc_texts(corpus: Any, params: dict) -> dict:
    """The originals and perturbed sentences :func:`_csc_metric` will embed (pre-embedded by the grid)."""
    from semanscope_nb.metrics.csc.perturbation import perturb_corpus

    texts = list(_csc_sample(corpus, params).sentences)
    perts = perturb_corpus(texts, language=corpus.language, max_per_sentence=params["max_per_sentence"], seed=params["seed"],
                           negation=params["negation"])
    return {corpus.language: list(dict.fromkeys(texts + [p.text for p in perts]))}


def _builtin_metrics() -> None:
    register_metric("sa", _sa_metric, defaults={"n_boot": 1000, "seed": 0, "confidence": 0.95}, headline="sa_cosine",
                    description="Semantic Affinity (cosine and Euclidean) with a bootstrap CI", replace=True)
    register_metric("retrieval", _retrieval_metric, defaults={"source": None, "targets": None, "ks": [1, 5, 10], "n_boot": 200,
                                                              "seed": 0},
                    headline="p_at_1", version="lexicon-induction-1",
                    description="bilingual lexicon induction P@K, source (default en) -> every other language", replace=True)
    register_metric("csc", _csc_metric, defaults={"max_sentences": None, "max_per_sentence": 3, "negation": "particle",
                                                  "seed": 0, "n_boot": 200, "confidence": 0.95},
                    headline="overlap", higher_is_better=False, data="sentences", version="1", texts=_csc_texts,
                    description="Concept Separation Curves: overlap of fuzz and negation similarity curves (lower = better)",
                    replace=True)


_builtin_metrics()


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class GridJob:
    """One (model, dataset, metric, parameters) cell of the grid."""

    model: str
    dataset: Any = field(repr=False)  # a WordDataset, or a SentenceCorpus for sentence metrics
    metric: str
    params: dict = field(hash=False)
    key: str
    model_key: str = field(repr=False)

    @property
    def dataset_name(self) -> str:
        return self.dataset.name

    @property
    def params_label(self) -> str:
        return json.dumps(self.params, sort_keys=True, ensure_ascii=False)

    @property
    def file_name(self) -> str:
        return f"{_safe(self.model)}__{_safe(self.dataset.name)}__{_safe(self.metric)}__{self.key}.json"

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "dataset": self.dataset.name, "metric": self.metric, "params": self.params, "key": self.key}


def _content_digest(ds: Any) -> str:
    """Hash of exactly what a job sees: a word dataset's languages and rows, or a corpus's language and sentences."""
    content = [ds.languages, ds.rows] if isinstance(ds, WordDataset) else [ds.language, ds.sentences]
    return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode()).hexdigest()


def _languages_of(ds: Any) -> list[str]:
    return list(ds.languages) if isinstance(ds, WordDataset) else [ds.language]


def job_key(model_key: str, ds: Any, metric: Metric, params: Mapping[str, Any]) -> str:
    """The identity of a job: hash of model cache key, dataset content, metric (+version) and parameters."""
    blob = json.dumps({"model": model_key, "dataset_sha256": ds.sha256, "rows": _content_digest(ds),
                       "metric": metric.name, "metric_version": metric.version, "params": dict(params)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _param_variants(metric: Metric, params: Mapping[str, Any] | None, grid: Mapping[str, Sequence] | None) -> list[dict]:
    base = dict(metric.defaults)
    for source, given in (("params", params or {}), ("param_grid", grid or {})):
        unknown = sorted(set(given) - set(base))
        if unknown:
            raise ValueError(f"{source} for metric '{metric.name}': unknown parameter(s) {unknown}; "
                             f"it accepts: {', '.join(sorted(base)) or '(none)'}")
    base.update(params or {})
    if not grid:
        return [base]
    names = list(grid)
    for n in names:
        if isinstance(grid[n], (str, bytes)) or not isinstance(grid[n], Sequence) or not grid[n]:
            raise ValueError(f"param_grid['{metric.name}']['{n}'] must be a non-empty list of values, got {grid[n]!r}")
    return [{**base, **dict(zip(names, combo))} for combo in itertools.product(*(grid[n] for n in names))]




def _summary_of(result: Mapping[str, Any]) -> dict[str, Any]:
    src = result.get("summary") if isinstance(result.get("summary"), Mapping) else result
    return {k: v for k, v in src.items() if isinstance(v, (int, float, str, bool)) or v is None}


# --------------------------------------------------------------------------- worker side


class _CountingCache(EmbeddingCache):
    """The shared cache, counting what this job embedded and read (for the job record)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.totals = {"n_unique": 0, "n_cached": 0, "n_encoded": 0, "n_batches": 0}

    def embed(self, encoder, texts, **kwargs):  # type: ignore[override]
        out = super().embed(encoder, texts, **kwargs)
        s = self.last_stats
        for k in self.totals:
            self.totals[k] += getattr(s, k)
        return out


def _ensure_model(info: ModelInfo | None) -> None:
    """Models registered at run time in the driver (API, aligned) are re-registered in the worker."""
    if info is None:
        return
    try:
        current = get_model_info(info.id)
    except Exception:
        current = None
    if current is not info:  # a copy shipped to a worker (which may hold an older registration of this id): use it
        register_model(info, replace=True)


def _worker_id() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname()}


def _warm_task(model: str, info: ModelInfo | None, items: list[tuple[Any, dict | None]], cache_folder: str) -> dict:
    """Embed once every text the model's pending jobs need (only what the cache lacks).

    ``items``: (dataset, None) for a word dataset's own texts, or (data, {language: texts}) for the
    texts a metric declared; a corpus-fitted model is fitted as the metric will fit it.
    """
    t0 = time.perf_counter()
    out = {"model": model, "n_texts": 0, "n_encoded": 0, "n_batches": 0, "error": None, "worker": _worker_id()}
    try:
        _ensure_model(info)
        groups: dict[str, tuple[Any, str | None, dict[str, None]]] = {}
        for data, declared in items:
            if declared is None:
                encoder = prepare_encoder(model, data)
                parts = {lang: data.words(lang) for lang in data.languages} if encoder.language_dependent else {None: data.all_texts()}
            else:
                encoder = load_model(model)
                if encoder.requires_fit:
                    encoder = encoder.fit([t for texts in declared.values() for t in texts])  # type: ignore[attr-defined]
                parts = declared if encoder.language_dependent else {None: [t for texts in declared.values() for t in texts]}
            for lang, texts in parts.items():
                key = encoder.cache_key_for(lang)
                groups.setdefault(key, (encoder, lang, {}))[2].update(dict.fromkeys(texts))
        with _CountingCache(cache_folder) as cache:
            for encoder, lang, texts in groups.values():
                cache.embed(encoder, list(texts), language=lang, progress=False)
            out.update(n_texts=cache.totals["n_unique"], n_encoded=cache.totals["n_encoded"], n_batches=cache.totals["n_batches"])
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["seconds"] = time.perf_counter() - t0
    return out


def _run_job(job: GridJob, metric: Metric, info: ModelInfo | None, cache_folder: str, runs_dir: str, run_id: str) -> dict:
    """Run one job in whatever process joblib chose; write its record atomically; never raise."""
    runs = Path(runs_dir)
    marker = runs / ".inflight" / f"{job.key}.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(_worker_id()))
    t0 = time.perf_counter()
    record: dict[str, Any] = {"job": job.describe(), "run_id": run_id, "worker": _worker_id()}
    cache = None
    try:
        _ensure_model(info)
        cache = _CountingCache(cache_folder)
        result = json_ready(metric.fn(job.model, job.dataset, dict(job.params), cache))
        if not isinstance(result, dict):
            raise TypeError(f"metric '{metric.name}' returned {type(result).__name__}, expected a dict")
        encoder = prepare_encoder(job.model, job.dataset) if isinstance(job.dataset, WordDataset) else load_model(job.model)
        record.update(
            status="done",
            summary=_summary_of(result),
            result=result,
            embedding=dict(cache.totals),
            seconds=time.perf_counter() - t0,
            provenance=json_ready({
                "model": job.model,
                "model_version": encoder.version if encoder else None,
                "model_options": encoder.options if encoder else None,
                "model_cache_key": job.model_key,
                "dataset": job.dataset.name,
                "dataset_source": job.dataset.source,
                "dataset_sha256": job.dataset.sha256,
                "languages": _languages_of(job.dataset),
                "reader_report": list(getattr(job.dataset, "report", ())),
                "n_rows": len(job.dataset),
                "metric": metric.name,
                "metric_version": metric.version,
                "parameters": job.params,
                "packages": package_info(),
                "created": utc_now(),
            }),
        )
        atomic_write_json(runs / job.file_name, record)
    except Exception as exc:  # reported per job; the grid goes on
        record.update(status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8),
                      seconds=time.perf_counter() - t0)
    finally:
        if cache is not None:
            cache.close()
        marker.unlink(missing_ok=True)
    return record


# --------------------------------------------------------------------------- backends


@contextlib.contextmanager
def _backend(
    backend: str, n_jobs: int | None, scheduler: str | None, connect_timeout: float
) -> Iterator[tuple[Any, int, str, Callable[[], None] | None]]:
    """joblib configuration for the backend: yields (backend name, n_jobs, description, stop).

    ``stop()`` kills this run's worker processes at once (called on SIGTERM/SIGINT); None for serial.
    """
    import joblib

    if backend == "serial":
        with joblib.parallel_config(backend="sequential", n_jobs=1):
            yield "sequential", 1, "serial (this process)", None
        return
    if backend == "loky":
        n = n_jobs or os.cpu_count() or 1
        with joblib.parallel_config(backend="loky", n_jobs=n):
            yield "loky", n, f"loky ({n} worker processes)", _kill_loky_workers
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - the dist extra is installed in CI
        raise GridBackendError("backend='dask' needs dask.distributed: pip install 'semanscope_nb[dist]'") from exc
    cluster = None
    before = set(multiprocessing.active_children())
    if scheduler in (None, "", "local"):
        n = n_jobs or 2
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster, timeout=connect_timeout)
        desc = f"dask LocalCluster ({n} worker processes)"
    else:
        try:
            client = Client(scheduler, timeout=connect_timeout)
        except Exception as exc:
            raise GridBackendError(
                f"could not reach the Dask scheduler at '{scheduler}' within {connect_timeout:g} s "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). Check the address and that "
                "`dask scheduler` and its workers are running, or run locally instead: backend='loky' "
                "(CLI: --backend loky) or a local Dask cluster (CLI: --scheduler local)."
            ) from None
        n = n_jobs or max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values()))
        desc = f"dask scheduler {scheduler} ({n} slots)"

    def stop() -> None:
        _call_with_timeout(client.close, 3.0)
        if cluster is not None:
            _call_with_timeout(cluster.close, 5.0)
            _kill_processes([p for p in multiprocessing.active_children() if p not in before])  # what the cluster left

    try:
        with joblib.parallel_config(backend="dask", n_jobs=n):
            yield "dask", n, desc, stop
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _call_with_timeout(fn: Callable[[], Any], timeout: float) -> None:
    """Run ``fn()`` in a helper thread and wait at most ``timeout`` s (a signal handler must not hang)."""
    t = threading.Thread(target=_quiet, args=(fn,), daemon=True)
    t.start()
    t.join(timeout)


def _quiet(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # best effort: the processes are killed below anyway
        pass


def _kill_processes(processes: Sequence[Any]) -> None:
    for proc in processes:
        try:
            if proc.is_alive():
                proc.kill()
        except Exception:
            pass
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(2.0)


def _kill_loky_workers() -> None:
    """Shut joblib's reusable loky executor down, killing its workers (jobs in flight are abandoned)."""
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)  # the one joblib's loky backend uses; none: nothing to stop
    if executor is None:
        return
    workers = list((getattr(executor, "_processes", None) or {}).values())
    _call_with_timeout(lambda: executor.shutdown(wait=True, kill_workers=True), 3.0)
    _kill_processes(workers)


@contextlib.contextmanager
def _stop_pool_on_signals(stop: Callable[[], None] | None) -> Iterator[None]:
    """While the block runs, SIGTERM / SIGINT call ``stop()`` (kill the workers), then act as before.

    The previous handlers are restored when the block ends (and as soon as a signal arrives, so a
    second Ctrl-C acts at once).  Only the main thread can set handlers; elsewhere this does nothing.
    """
    if stop is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def restore() -> None:
        for signum, old in previous.items():
            with contextlib.suppress(Exception):
                signal.signal(signum, old)

    def handler(signum: int, frame: Any) -> None:
        restore()
        with contextlib.suppress(Exception):  # whatever happens, the signal still does what it did before
            stop()
        old = previous[signum]
        if callable(old):  # e.g. Python's SIGINT handler: raises KeyboardInterrupt here
            old(signum, frame)
        else:  # SIG_DFL: end the process as the signal would have
            signal.raise_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        old = signal.getsignal(signum)
        if old is None or old == signal.SIG_IGN:  # ignored, or set outside Python: leave it alone
            continue
        previous[signum] = old
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            if signal.getsignal(signum) is handler:
                signal.signal(signum, old)


def _parallel_map(fn: Callable, args_list: list[tuple], n_jobs: int) -> Iterator[Any]:
    """Results of fn(*args) as they finish, through whatever joblib backend is configured."""
    from joblib import Parallel, delayed

    if not args_list:
        return iter(())
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered", batch_size=1)(delayed(fn)(*a) for a in args_list)


# --------------------------------------------------------------------------- the driver


@dataclass
class GridResult:
    """What :func:`run_grid` produced.

    ``table``: one row per finished job (model, dataset, metric, params + the
    metric's summary columns); ``records``: job key -> full job record;
    ``failures``: job key -> {model, dataset, metric, params, error}.
    """

    table: pd.DataFrame
    records: dict[str, dict]
    jobs: list[GridJob]
    resumed: list[str] = field(default_factory=list)
    failures: dict[str, dict] = field(default_factory=dict)
    warm: list[dict] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    backend: str = ""
    seconds: float = 0.0
    run_id: str = ""
    phase_seconds: dict[str, float] = field(default_factory=dict)  # backend start-up, embedding phase, metric jobs
    warnings: list[str] = field(default_factory=list)  # e.g. a damaged job file that was recomputed
    reader_reports: dict[str, list[str]] = field(default_factory=dict)  # dataset name -> what its reader reported

    def leaderboard(self, metric: str = "sa") -> pd.DataFrame:
        """The rows of one metric (for ``sa``: the same columns as :func:`semanscope_nb.leaderboard`)."""
        if self.table.empty:
            return self.table
        sub = self.table[self.table.metric == metric].dropna(axis=1, how="all").reset_index(drop=True)
        return sub

    def wide(self) -> pd.DataFrame:
        """One row per (model, dataset): each metric's headline number (several parameter sets -> their mean)."""
        if self.table.empty:
            return self.table
        rows = []
        for (model, dataset), grp in self.table.groupby(["model", "dataset"], sort=False):
            row = {"model": model, "dataset": dataset}
            for metric, sub in grp.groupby("metric", sort=False):
                head = _METRICS[metric].headline if metric in _METRICS else None
                if head and head in sub:
                    row[f"{metric}:{head}"] = pd.to_numeric(sub[head], errors="coerce").mean()
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def n_encoded(self) -> int:
        """Texts embedded by the models in this run (embedding phase + jobs; cache hits excluded)."""
        warm = sum(w.get("n_encoded", 0) for w in self.warm)
        jobs = sum(self.records[k].get("embedding", {}).get("n_encoded", 0) for k in self.records if k not in self.resumed)
        return warm + jobs


def _load_corpora(corpora) -> list[Any]:
    from semanscope_nb.data.sentences import (
        SentenceCorpus,
        list_sentence_corpora,
        load_sentence_corpus,
    )

    if corpora is None:
        corpora = list_sentence_corpora()
        if not corpora:
            raise FileNotFoundError("no bundled sentence corpora found for the sentence metrics (pass corpora=)")
    return [c if isinstance(c, SentenceCorpus) else load_sentence_corpus(c) for c in corpora]


_FIXED_COLUMNS = ("model", "display_name", "dataset", "languages", "metric", "params")


def _ordered_table(records: list[dict], metrics: Sequence[str]) -> pd.DataFrame:
    rows = []
    for rec in records:
        j = rec["job"]
        try:
            display = get_model_info(j["model"]).display_name
        except Exception:
            display = j["model"]
        rows.append({"model": j["model"], "display_name": display, "dataset": j["dataset"],
                     "languages": ",".join(rec["provenance"]["languages"]), "metric": j["metric"],
                     "params": json.dumps(j["params"], sort_keys=True, ensure_ascii=False),
                     **{k: v for k, v in rec["summary"].items() if k not in _FIXED_COLUMNS}})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    parts = []
    for metric in metrics:
        sub = df[df.metric == metric]
        if sub.empty:
            continue
        m = _METRICS.get(metric)
        head = m.headline if m else None
        if head and head in sub:
            means = pd.to_numeric(sub[head], errors="coerce").groupby(sub["model"]).mean()
            order = means.sort_values(ascending=not m.higher_is_better).index
            rank = {m: i for i, m in enumerate(order)}
            sub = sub.assign(_r=sub["model"].map(rank)).sort_values(["_r", "dataset", "params"]).drop(columns="_r")
        parts.append(sub)
    return pd.concat(parts, ignore_index=True)


def run_grid(
    models: Sequence[str] | None = None,
    datasets: Sequence[str | os.PathLike | WordDataset] | None = None,
    metrics: Sequence[str] = ("sa",),
    *,
    corpora: Sequence[Any] | None = None,
    languages: Sequence[str] | None = None,
    max_concepts: int | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    param_grid: Mapping[str, Mapping[str, Sequence]] | None = None,
    backend: str = "serial",
    n_jobs: int | None = None,
    scheduler: str | None = None,
    connect_timeout: float = 10.0,
    cache: EmbeddingCache | str | os.PathLike | None = None,
    out_dir: str | os.PathLike | None = "results",
    force: bool = False,
    prefetch: bool = True,
    max_retries: int = 2,
    progress: bool | None = None,
    on_job: Callable[[str, str, str, str], None] | None = None,
) -> GridResult:
    """Run every (model, dataset, metric, parameter set) job through joblib; resumable.

    ``params={"sa": {"n_boot": 200}}`` sets a metric's parameters;
    ``param_grid={"sa": {"seed": [0, 1]}}`` adds one job per combination.
    Word metrics (sa, retrieval) run on ``datasets`` (default: the bundled
    word datasets); sentence metrics (csc) on ``corpora`` (default: the
    bundled sentence corpora).
    ``backend``: ``"serial"``, ``"loky"`` (``n_jobs`` processes) or ``"dask"``
    (``scheduler``: an address such as ``tcp://host:8786``, or ``"local"``/None
    for a LocalCluster of ``n_jobs`` processes).  Jobs whose file exists in
    ``out_dir/runs`` are reused (``force=True`` recomputes).  ``on_job(model,
    dataset, metric, status)`` is called in the driver as jobs finish.
    """
    t_start = time.perf_counter()
    run_id = uuid.uuid4().hex[:12]  # tells this run's job files from older ones (force=True must not adopt those)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if n_jobs is not None and (not isinstance(n_jobs, int) or n_jobs < 1):
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    if scheduler is not None and backend != "dask":
        raise ValueError(f"scheduler={scheduler!r} needs backend='dask' (got backend={backend!r})")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    metric_objs = [get_metric(m) for m in dict.fromkeys(metrics)]
    if not metric_objs:
        raise ValueError("metrics: give at least one metric name")
    for source, given in (("params", params or {}), ("param_grid", param_grid or {})):
        extra = sorted(set(given) - set(_METRICS))  # registered metrics that are not in this run are ignored
        if extra:
            raise ValueError(f"{source} names unknown metric(s) {extra}; registered: {', '.join(sorted(_METRICS))}")
    variants = {m.name: _param_variants(m, (params or {}).get(m.name), (param_grid or {}).get(m.name)) for m in metric_objs}

    if isinstance(cache, EmbeddingCache):
        cache_folder = str(cache.folder)
    else:
        with EmbeddingCache(cache) as probe:  # creates the folder, or fails with a clear CacheError
            cache_folder = str(probe.folder)
    skipped: dict[str, str] = {}
    models = list(models) if models is not None else _default_models(skipped)
    kinds = {m.data for m in metric_objs}
    data_of: dict[str, list[Any]] = {
        "words": _load_datasets(datasets, languages, max_concepts) if "words" in kinds else [],
        "sentences": _load_corpora(corpora) if "sentences" in kinds else [],
    }
    loaded = data_of["words"] + data_of["sentences"]
    names = [d.name for d in loaded]
    if len(set(names)) < len(names):
        raise ValueError(f"datasets and corpora need distinct names, got {names}")
    tmp_out = None
    if out_dir is None:
        tmp_out = tempfile.TemporaryDirectory(prefix="semanscope-grid-")
        out_dir = tmp_out.name
    out = Path(out_dir)
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)

    # -- build the jobs (nothing is loaded: cache keys come from metadata) ----------------------
    jobs: list[GridJob] = []
    infos: dict[str, ModelInfo | None] = {}
    failures: dict[str, dict] = {}
    for model in models:
        try:
            infos[model] = get_model_info(model)
        except Exception as exc:
            for m in metric_objs:
                for ds in data_of[m.data]:
                    for p in variants[m.name]:
                        k = f"{_safe(model)}|{ds.name}|{m.name}|{json.dumps(p, sort_keys=True)}"
                        failures[k] = {"model": model, "dataset": ds.name, "metric": m.name, "params": p,
                                       "error": f"{type(exc).__name__}: {exc}"}
            continue
        for m in metric_objs:
            for ds in data_of[m.data]:
                try:  # nothing loads: cache keys come from package metadata (TF-IDF fits on the dataset, cheaply)
                    model_key = (prepare_encoder(model, ds) if isinstance(ds, WordDataset) else load_model(model)).cache_key
                except Exception as exc:
                    model_key, err = None, f"{type(exc).__name__}: {exc}"
                for p in variants[m.name]:
                    if model_key is None:
                        k = f"{_safe(model)}|{ds.name}|{m.name}|{json.dumps(p, sort_keys=True)}"
                        failures[k] = {"model": model, "dataset": ds.name, "metric": m.name, "params": p, "error": err}
                        continue
                    jobs.append(GridJob(model, ds, m.name, dict(p), job_key(model_key, ds, m, p), model_key))
    infos = {k: (v if k not in _STARTUP_MODELS else None) for k, v in infos.items()}  # ship only run-time registrations
    metric_of = {m.name: m for m in metric_objs}

    # -- resume -------------------------------------------------------------------------------
    records: dict[str, dict] = {}
    resumed: list[str] = []
    pending: list[GridJob] = []
    grid_warnings: list[str] = []
    for job in jobs:
        f = runs / job.file_name
        if f.exists() and not force:
            try:
                rec = _read_record(f)
            except Exception as exc:  # damaged or truncated: recompute, and say which file
                grid_warnings.append(f"{f}: damaged job file ({type(exc).__name__}: {exc}); recomputing")
                warnings.warn(grid_warnings[-1], JobFileWarning, stacklevel=2)
            else:
                if rec.get("status") == "done" and rec.get("job", {}).get("key") == job.key:
                    records[job.key] = rec
                    resumed.append(job.key)
                    continue
        pending.append(job)

    show = progress if progress is not None else len(jobs) > 1
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs) + len(failures), desc="grid", unit="job", initial=len(resumed) + len(failures))

    def report(job_like: Mapping[str, Any], status: str) -> None:
        if bar is not None:
            bar.set_postfix_str(f"{job_like['model']} x {job_like['dataset']} [{job_like['metric']}]: {status}"[:120])
            if status.startswith("failed") or status.startswith("retry"):
                bar.write(f"{job_like['model']} x {job_like['dataset']} [{job_like['metric']}]: {status}")
        if on_job is not None:
            on_job(job_like["model"], job_like["dataset"], job_like["metric"], status)

    for key in resumed:
        report(records[key]["job"], "resumed")
    for f in failures.values():
        report(f, f"failed: {f['error']}")

    warm: list[dict] = []
    by_key = {j.key: j for j in pending}
    attempts: dict[str, int] = {}
    desc = ""
    phases: dict[str, float] = {}
    t_phase = time.perf_counter()
    try:
        with _backend(backend, n_jobs, scheduler, connect_timeout) as (_, n_workers, desc, stop), _stop_pool_on_signals(stop):
            # -- phase 1: each (model, text) embedded once, by one worker --------------------------
            phases["startup"] = time.perf_counter() - t_phase
            t_phase = time.perf_counter()
            if prefetch:
                need: dict[str, dict[str, tuple[Any, dict | None]]] = {}
                declared: dict[tuple[str, str], dict | None] = {}  # (metric + params, dataset) -> texts, computed once
                for j in pending:
                    metric = metric_of[j.metric]
                    if metric.embeds_dataset:
                        need.setdefault(j.model, {})[f"dataset:{j.dataset.name}"] = (j.dataset, None)
                    if metric.texts is not None:
                        dk = (f"{metric.name}:{j.params_label}", j.dataset.name)
                        if dk not in declared:
                            try:
                                declared[dk] = metric.texts(j.dataset, dict(j.params))
                            except Exception:  # the job itself will report the problem
                                declared[dk] = None
                        if declared[dk]:
                            need.setdefault(j.model, {})[f"{dk[0]}|{dk[1]}"] = (j.dataset, declared[dk])
                tasks = [(m, infos[m], list(d.values()), cache_folder) for m, d in need.items()]
                try:
                    for w in _parallel_map(_warm_task, tasks, n_workers):
                        warm.append(w)
                        if bar is not None:
                            bar.set_postfix_str(f"embedded {w['model']}: {w['n_encoded']} new texts"[:120])
                except Exception as exc:  # best effort: the jobs embed what is still missing
                    warm.append({"model": "*", "error": f"embedding phase interrupted: {type(exc).__name__}: {exc}"})

            # -- phase 2: the metric jobs, retrying those whose worker died ----------------------
            phases["embedding"] = time.perf_counter() - t_phase
            t_phase = time.perf_counter()
            def finish(rec: dict) -> None:
                key = rec["job"]["key"]
                by_key.pop(key, None)
                if rec["status"] == "done":
                    records[key] = rec
                    report(rec["job"], "done")
                else:
                    failures[key] = {**rec["job"], "error": rec["error"]}
                    report(rec["job"], f"failed: {rec['error']}")
                if bar is not None:
                    bar.update(1)

            def run_round(batch: list[GridJob]) -> Exception | None:
                args = [(j, metric_of[j.metric], infos[j.model], cache_folder, str(runs), run_id) for j in batch]
                try:
                    for rec in _parallel_map(_run_job, args, n_workers):
                        finish(rec)
                except Exception as exc:  # a worker died (or the cluster went away)
                    return exc
                return None

            for j in pending:
                (runs / ".inflight" / f"{j.key}.json").unlink(missing_ok=True)
            suspects: list[str] = []
            crashes_without_suspect = 0
            def adopt_finished() -> None:  # finished on a worker, but the driver never heard of it
                for k, j in list(by_key.items()):
                    f = runs / j.file_name
                    if f.exists():
                        try:
                            rec = _read_record(f)
                        except Exception:  # being written, or damaged: the job runs again
                            continue
                        if rec.get("status") == "done" and rec.get("job", {}).get("key") == k and rec.get("run_id") == run_id:
                            finish(rec)

            while by_key:
                adopt_finished()
                if not by_key:
                    break
                if suspects:  # one at a time, so a crash names its job
                    key = suspects.pop(0)
                    if key not in by_key:
                        continue
                    batch = [by_key[key]]
                else:
                    batch = list(by_key.values())
                exc = run_round(batch)
                if exc is None:
                    continue
                died = [j.key for j in batch if j.key in by_key and (runs / ".inflight" / f"{j.key}.json").exists()]
                for k in died:
                    (runs / ".inflight" / f"{k}.json").unlink(missing_ok=True)
                if not died:
                    crashes_without_suspect += 1
                    if crashes_without_suspect > max_retries:
                        for k in list(by_key):
                            finish({"job": by_key[k].describe(), "status": "failed",
                                    "error": f"backend failure: {type(exc).__name__}: {exc}"})
                    continue
                for k in died:
                    attempts[k] = attempts.get(k, 0) + 1
                    job = by_key[k]
                    if attempts[k] > max_retries:
                        finish({"job": job.describe(), "status": "failed",
                                "error": f"worker process died during this job {attempts[k]} times "
                                         f"(killed or out of memory?); last error: {type(exc).__name__}: {exc}"})
                    else:
                        report(job.describe(), f"retrying (worker died: {type(exc).__name__}), attempt {attempts[k] + 1}")
                        if k not in suspects:
                            suspects.append(k)
            phases["jobs"] = time.perf_counter() - t_phase
    finally:
        if bar is not None:
            bar.close()

    # -- combine the store into the leaderboard --------------------------------------------------
    done = [records[j.key] for j in jobs if j.key in records]
    table = _ordered_table(done, [m.name for m in metric_objs])
    result = GridResult(table, {j.key: records[j.key] for j in jobs if j.key in records}, jobs, resumed, failures, warm,
                        skipped, [], desc, 0.0, warnings=grid_warnings,
                        reader_reports={d.name: list(getattr(d, "report", ())) for d in loaded})
    if tmp_out is None:
        meta = {
            "created": utc_now(),
            "packages": package_info(),
            "backend": desc,
            "metrics": {m.name: {"version": m.version, "variants": variants[m.name]} for m in metric_objs},
            "parameters": {"languages": list(languages) if languages else None, "max_concepts": max_concepts},
            "datasets": {ds.name: {"source": ds.source, "sha256": ds.sha256, "rows": len(ds), "languages": _languages_of(ds),
                                   "reader_report": list(getattr(ds, "report", ()))}
                         for ds in loaded},
            "models": {m: _model_meta(m) for m in models},
            "n_jobs": len(jobs), "resumed": len(resumed), "retried": attempts,
            "failures": list(failures.values()),
            "embedding_phase": warm,
            "skipped": skipped,
            "warnings": grid_warnings,
        }
        rows = json.loads(table.to_json(orient="records")) if not table.empty else []
        for row, rec in zip(rows, done if table.empty else _records_in_table_order(table, done)):
            row["provenance"] = rec["provenance"]
            row["run_file"] = str(runs / next(j.file_name for j in jobs if j.key == rec["job"]["key"]))
        result.files = [
            str(atomic_write_text(out / "leaderboard.csv", table.to_csv(index=False))),
            str(atomic_write_json(out / "leaderboard.json", json_ready({"meta": meta, "rows": rows}))),
        ]
    else:
        tmp_out.cleanup()
    result.seconds = time.perf_counter() - t_start
    result.run_id = run_id
    result.phase_seconds = phases
    return result


def _read_record(path: Path) -> dict:
    """A job file's record; raises if it is damaged, truncated or not a job record."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(rec, dict) or not isinstance(rec.get("job"), dict):
        raise ValueError("not a job record")
    if rec.get("status") == "done":
        prov = rec.get("provenance")
        if not isinstance(rec.get("summary"), dict) or not isinstance(prov, dict) or "languages" not in prov:
            raise ValueError("a finished job without its summary or provenance")
    return rec


def _records_in_table_order(table: pd.DataFrame, done: list[dict]) -> list[dict]:
    index = {(r["job"]["model"], r["job"]["dataset"], r["job"]["metric"], json.dumps(r["job"]["params"], sort_keys=True, ensure_ascii=False)): r
             for r in done}
    return [index[(t.model, t.dataset, t.metric, t.params)] for t in table[["model", "dataset", "metric", "params"]].itertuples()]
