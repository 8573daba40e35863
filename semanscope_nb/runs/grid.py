"""The benchmark engine: models x datasets x tasks (x parameters) through joblib, resumable per job.

There is one engine.  :func:`run_grid` runs any registered task
(:mod:`semanscope_nb.runs.tasks`) of any model on any dataset, on
``backend="serial"`` (this process), ``"loky"`` (joblib's process pool) or
``"dask"`` (a ``dask.distributed`` cluster through joblib); ``run_benchmark``
is ``run_grid(tasks=["sa"], backend="serial")``.

Every job is one (model, dataset, task, parameters) tuple, keyed by a hash of
(the model's cache key, the dataset's content, the task and its version, the
parameters).  A finished job is written at once, atomically, to
``<out_dir>/runs/<model>__<dataset>__<task>__<key>.json`` by the process that
ran it (every part of the name is sanitised, and stays inside the folder):
workers write different files, so they never clobber each other; a rerun
skips every job whose file holds that job (checked against its key, model,
dataset hash and parameters; anything else is recomputed and named); a
killed run loses only the jobs in flight.  The driver combines the job files
into ``leaderboard.csv`` / ``leaderboard.json`` at the end.

The run goes in named steps: :func:`plan_jobs` (nothing is loaded: cache keys
come from metadata), :func:`resume_jobs`, :func:`embed_phase` (each (model,
text) embedded once, by one worker, into the shared cache), :func:`run_jobs`
(each job reads its vectors from the cache and runs its task through
:func:`~semanscope_nb.runs.tasks.run_task`, retrying jobs whose worker died)
and :func:`write_leaderboard`.

The per-word cache across workers
---------------------------------
Every worker reads and writes the one shared SQLite cache (WAL journal, busy
timeout, one transaction per batch).  Without the embedding phase, jobs that
share words race: both miss the cache and both embed the word (measured: 861
encodes for 858 cache entries on a 2-worker LocalCluster; 858 with it).  The
cache folder and the results folder must be on a filesystem every worker sees.
API keys are read by each worker from its own environment and are never
shipped with a job.

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
A job that raises is reported (``result.failures``: job key -> model, dataset,
task, params, error) and the rest of the grid finishes.  A worker process
that dies leaves an in-flight marker; its jobs are retried, suspects one at a
time, and a job that kills its worker more than ``max_retries`` times is
reported as failed.  An unreachable scheduler fails fast with a suggestion to
run locally.  While the grid runs on loky or Dask, SIGTERM and SIGINT first
shut the worker pool down, then do what they did before.

Example
-------
>>> import tempfile, semanscope_nb as snb
>>> out = tempfile.mkdtemp()
>>> g = snb.run_grid(["random-null"], ["edge-cases"], tasks=["sa", "retrieval"], max_concepts=20,
...                  params={"sa": {"n_boot": 50}, "retrieval": {"n_boot": 20}}, out_dir=out, progress=False)
>>> sorted(g.table.task), len(g.failures)
(['retrieval', 'sa'], 0)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
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

from semanscope_nb.data.datasets import as_dataset, fit_corpus
from semanscope_nb.data.words import BUNDLED_DATASETS, WordDataset, language_code, list_datasets
from semanscope_nb.errors import ArgumentError, DatasetError, GridBackendError, JobFileWarning, UnknownNameError
from semanscope_nb.machine import free_cpus
from semanscope_nb.metrics.options import check_common, check_count
from semanscope_nb.models.cache import EmbeddingCache, EmbedStats
from semanscope_nb.models.registry import ModelInfo, get_model_info, list_models, load_model, preset_names, register_model
from semanscope_nb.provenance import (
    atomic_write_json,
    atomic_write_text,
    csv_text,
    ensure_inside,
    json_ready,
    package_info,
    path_inside,
    regular_file,
    safe_name,
    shareable_report,
    shareable_source,
    utc_now,
)
from semanscope_nb.results import Result, result_kinds
from semanscope_nb.runs.tasks import Task, get_task, list_tasks, register_task, run_task

BACKENDS = ("serial", "loky", "dask")
#: models registered when the package was imported exist in every worker; others (API models, ...) are shipped with the jobs
_STARTUP_MODELS = frozenset(m.id for m in list_models())


# --------------------------------------------------------------------------- what runs: models, datasets, jobs


def default_models(skipped: dict[str, str]) -> list[str]:
    """Every offline model whose packages are installed; the others go into ``skipped`` with the reason."""
    models = []
    for m in list_models(offline=True):
        (models.append(m.id) if m.available else skipped.__setitem__(m.id, f"needs {', '.join(m.requires)}"))
    return models


def resolve_models(models: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Expand preset names (``"paper"``) into model ids; models that cannot run here go into the second value.

    Each skipped model gets one reason ("needs hub: ...", "needs key: set OPENROUTER_API_KEY ...");
    a model given by its own id is never skipped here (it fails, or runs, as asked).

    >>> ids, skipped = resolve_models(["paper", "random-null"])
    >>> ids[0], "random-null" in ids, len(ids) + len(skipped)
    ('use-multilingual', True, 14)
    """
    if isinstance(models, str):
        raise ArgumentError("models must be a list of model ids or preset names, not one string")
    presets = set(preset_names())
    out: list[str] = []
    skipped: dict[str, str] = {}
    for name in models:
        if name not in presets:
            out.append(name)
            continue
        for info in list_models(preset=name):
            why = info.missing_access()
            if why is not None:
                skipped[info.id] = f"{info.paper_name or info.id}: {why}"
            elif info.id not in out:
                out.append(info.id)
    return list(dict.fromkeys(out)), skipped


def load_word_datasets(
    datasets: Sequence[Any] | None, languages: Sequence[str] | str | None, max_concepts: int | None
) -> list[WordDataset]:
    """The grid's word datasets (default: bundled), restricted to ``languages`` and the first ``max_concepts`` rows."""
    if max_concepts is not None:  # before any file is read
        max_concepts = check_count("max_concepts", max_concepts, minimum=1)
    if datasets is None:
        datasets = [d.name for d in list_datasets()]
        if not datasets:
            raise FileNotFoundError(f"no bundled datasets found (expected {', '.join(BUNDLED_DATASETS)})")
    if isinstance(datasets, (str, os.PathLike)):
        datasets = [datasets]
    full = [as_dataset(d) for d in datasets]
    wanted = None
    if languages is not None:
        if isinstance(languages, str):
            languages = [t.strip() for t in languages.split(",") if t.strip()]
        wanted = [language_code(str(lang)) or str(lang) for lang in languages]
        if not wanted:
            raise DatasetError("languages: no language given (pass None for every language of each dataset)")
        known = {lang for ds in full if isinstance(ds, WordDataset) for lang in ds.languages}
        unknown = [lang for lang, code in zip(languages, wanted) if code not in known]
        if unknown:
            have = "; ".join(f"{ds.name}: {', '.join(ds.languages)}" for ds in full if isinstance(ds, WordDataset))
            raise UnknownNameError(f"unknown language(s) {unknown}: in none of the datasets ({have})")
    loaded = []
    for ds in full:
        if isinstance(ds, WordDataset):
            if wanted is not None:
                ds = ds.select([lang for lang in dict.fromkeys(wanted) if lang in ds.languages])
            if max_concepts is not None:
                ds = ds.subset(range(min(max_concepts, len(ds))))
        loaded.append(ds)
    names = [ds.name for ds in loaded]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ArgumentError(f"datasets: several datasets are named {dupes}; give them distinct names")
    return loaded


def load_sentence_corpora(corpora: Sequence[Any] | None) -> list[Any]:
    """The grid's sentence corpora (default: the bundled ones)."""
    from semanscope_nb.data.sentences import SentenceCorpus, list_sentence_corpora, load_sentence_corpus

    if corpora is None:
        corpora = list_sentence_corpora()
        if not corpora:
            raise FileNotFoundError("no bundled sentence corpora found for the sentence tasks (pass corpora=)")
    return [c if isinstance(c, SentenceCorpus) else load_sentence_corpus(c) for c in corpora]


def model_metadata(model: str) -> dict[str, Any]:
    """The registry's metadata of ``model`` (or the error that names why there is none)."""
    try:
        return get_model_info(model).to_dict()
    except Exception as exc:
        return {"error": str(exc)}


def content_digest(ds: Any) -> str:
    """Hash of exactly what a job sees of a dataset (its languages and rows, or its texts and labels)."""
    if isinstance(ds, WordDataset):
        content: Any = [ds.languages, ds.rows]
    else:
        content = {lang: texts for lang, texts in ds.texts_by_language().items()}
        labels = getattr(ds, "labels", None)
        if labels is not None:
            content = [content, list(labels)]
    return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode()).hexdigest()


def params_json(params: Mapping[str, Any]) -> dict[str, Any]:
    """Task parameters as plain JSON (dataclasses such as TierThresholds become dicts)."""
    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return dataclasses.asdict(v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        return v

    return json_ready({k: plain(v) for k, v in params.items()})


@dataclass(frozen=True)
class GridJob:
    """One (model, dataset, task, parameters) cell of the grid."""

    model: str
    dataset: Any = field(repr=False)
    task: str
    params: dict = field(hash=False)
    key: str
    model_key: str = field(repr=False)
    members: tuple[str, ...] = ()  # the models a comparison job compares (its ``model`` is their names joined by '+')

    @property
    def models(self) -> tuple[str, ...]:
        return self.members or (self.model,)

    @property
    def params_label(self) -> str:
        return json.dumps(params_json(self.params), sort_keys=True, ensure_ascii=False)

    @property
    def file_name(self) -> str:
        """``<model>__<dataset>__<task>__<key>.json``: each name made safe and shortened on its own
        (:func:`~semanscope_nb.provenance.safe_name`), so the task, the key and ``.json`` always remain, in at most
        :data:`MAX_FILE_NAME` characters."""
        head, tail = f"{safe_name(self.model)}__{safe_name(self.dataset.name)}__", f"__{self.key}.json"
        task = safe_name(self.task)
        room = MAX_FILE_NAME - len(head) - len(tail)
        if len(task) > room:  # only a registered task of a very long name
            task = task[: room - 17] + "-" + hashlib.sha256(self.task.encode()).hexdigest()[:16]
        return head + task + tail

    def path(self, runs: str | os.PathLike) -> Path:
        """The job's file in the ``runs`` folder (its name is safe already: never cut again)."""
        return ensure_inside(runs, Path(runs) / self.file_name, what="job file")

    def legacy_path(self, runs: str | os.PathLike) -> Path:
        """Where earlier versions wrote the job's file: the whole name cut at 80 characters when longer (task, key and
        ``.json`` lost); the grid still resumes from it."""
        return path_inside(runs, self.file_name)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "dataset": self.dataset.name, "dataset_sha256": self.dataset.sha256, "task": self.task,
                "params": params_json(self.params), "key": self.key}


#: longest job file name (a file-name component holds 255 bytes on common file systems; these names are ASCII)
MAX_FILE_NAME = 255


def job_key(model_key: str, ds: Any, task: Task, params: Mapping[str, Any]) -> str:
    """The identity of a job: hash of model cache key, dataset content, task (+version) and parameters."""
    blob = json.dumps({"model": model_key, "dataset_sha256": ds.sha256, "rows": content_digest(ds),
                       "task": task.name, "task_version": task.version, "params": params_json(params)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def param_variants(task: Task, params: Mapping[str, Any] | None, grid: Mapping[str, Sequence] | None) -> list[dict]:
    """Every parameter set of ``task``: its defaults, ``params``, and one set per combination of ``grid``."""
    base = task.params(params)
    if not grid:
        return [base]
    task.params(dict.fromkeys(grid, None))  # names checked against the task's parameters
    names = list(grid)
    for n in names:
        if isinstance(grid[n], (str, bytes)) or not isinstance(grid[n], Sequence) or not grid[n]:
            raise ArgumentError(f"param_grid['{task.name}']['{n}'] must be a non-empty list of values, got {grid[n]!r}")
    return [task.params({**base, **dict(zip(names, combo))}) for combo in itertools.product(*(grid[n] for n in names))]


# --------------------------------------------------------------------------- functions registered the old way


@dataclass(frozen=True)
class MetricRecord(Result):
    """What a function registered with the deprecated :func:`register_metric` returned (its dict)."""

    kind = "metric-record"
    main_score_name = "headline"

    values: dict
    headline_name: str | None = None
    provenance: dict = field(default_factory=dict)

    @property
    def headline(self) -> float:
        v = self.summary().get(self.headline_name) if self.headline_name else None
        return float(v) if isinstance(v, (int, float)) else float("nan")

    def summary(self) -> dict[str, Any]:
        src = self.values.get("summary") if isinstance(self.values.get("summary"), Mapping) else self.values
        return {k: v for k, v in src.items() if isinstance(v, (int, float, str, bool)) or v is None}


def register_metric(name: str, fn: Callable[[str, Any, dict, EmbeddingCache], dict], *, defaults: Mapping[str, Any] | None = None,
                    headline: str | None = None, version: str = "1", embeds_dataset: bool = True, description: str = "",
                    data: str = "words", higher_is_better: bool = True, texts: Callable | None = None,
                    replace: bool = False) -> Task:
    """Deprecated: register a :class:`~semanscope_nb.runs.tasks.Task` (``register_task``) instead.

    ``fn(model_id, dataset, params, cache) -> dict`` becomes a task whose result
    is a :class:`MetricRecord` holding that dict.
    """
    warnings.warn("register_metric is deprecated: register a semanscope_nb.runs.Task with register_task",
                  DeprecationWarning, stacklevel=2)
    if data not in ("words", "sentences"):
        raise ArgumentError(f"metric '{name}': data must be 'words' or 'sentences', got {data!r}")
    if not callable(fn):
        raise ArgumentError(f"metric '{name}': fn must be callable, got {type(fn).__name__}")

    def run(embedded: Any, **params: Any) -> MetricRecord:
        out = fn(embedded.model_id, embedded.dataset, dict(params), embedded.cache)
        if not isinstance(out, Mapping):
            raise TypeError(f"metric '{name}' returned {type(out).__name__}, expected a dict")
        return MetricRecord(json_ready(dict(out)), headline, dict(embedded.provenance))

    task = Task(name, run, MetricRecord, (data,), (), dict(defaults or {}), higher_is_better, str(version), description,
                texts=texts)
    return register_task(task, replace=replace)


def list_metrics() -> list[Task]:
    """Deprecated alias of :func:`semanscope_nb.runs.tasks.list_tasks`."""
    return list_tasks()


def get_metric(name: str) -> Task:
    """Deprecated alias of :func:`semanscope_nb.runs.tasks.get_task`."""
    return get_task(name)


Metric = Task  # the grid's old name for a task


# --------------------------------------------------------------------------- worker side


class _CountingCache(EmbeddingCache):
    """The shared cache, counting what this job embedded and read (for the job record).

    ``presence_only`` (the embedding phase, which keeps no vector): texts already cached are only looked up by
    key, not read and checked -- the job reads them (and re-encodes any entry it finds damaged).
    """

    def __init__(self, *args: Any, presence_only: bool = False, aside: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.presence_only = presence_only
        self.totals = {"n_unique": 0, "n_cached": 0, "n_encoded": 0, "n_batches": 0}
        #: encoders counted apart (the verdict's surface-form baseline, embedded inside an SA job): ``baseline_totals``
        self.aside = set(aside)
        self.baseline_totals = dict(self.totals)

    def embed_with_stats(self, encoder, texts, **kwargs) -> tuple[Any, EmbedStats]:  # type: ignore[override]
        texts = list(texts)
        if self.presence_only and texts:
            unique = list(dict.fromkeys(texts))
            if len(self.present(encoder.cache_key_for(kwargs.get("language")), unique)) == len(unique):
                self.totals["n_unique"] += len(unique)
                self.totals["n_cached"] += len(unique)
                return np.zeros((len(texts), 0), dtype=np.float32), EmbedStats(len(texts), len(unique), len(unique), 0, 0, 0)
        out, s = super().embed_with_stats(encoder, texts, **kwargs)
        totals = self.baseline_totals if getattr(encoder, "model_id", None) in self.aside else self.totals
        for k in totals:
            totals[k] += getattr(s, k)
        return out, s


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


def warm_model(model: str, info: ModelInfo | None, jobs: list[tuple[Task, Any, dict]], cache_folder: str) -> dict:
    """Embed once every text the model's pending jobs need (only what the cache lacks): the embedding phase.

    Each job's dataset is prepared exactly as :func:`run_task` will prepare it
    (same encoder preparation, same extra texts), so the jobs find every vector.
    """
    from semanscope_nb.runs.tasks import prepare

    t0 = time.perf_counter()
    out = {"model": model, "n_texts": 0, "n_encoded": 0, "n_batches": 0, "error": None, "worker": _worker_id()}
    try:
        _ensure_model(info)
        with _CountingCache(cache_folder, presence_only=True) as cache:
            for task, dataset, params in jobs:
                prepare(task, dataset, model, cache=cache, progress=False, params=params)
            out.update(n_texts=cache.totals["n_unique"], n_encoded=cache.totals["n_encoded"], n_batches=cache.totals["n_batches"])
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["seconds"] = time.perf_counter() - t0
    return out


def run_job(job: GridJob, task: Task, infos: Sequence[ModelInfo | None], cache_folder: str, runs_dir: str, run_id: str) -> dict:
    """Run one job through :func:`run_task` in whatever process joblib chose; write its record atomically; never raise."""
    runs = Path(runs_dir)
    marker = path_inside(runs / ".inflight", f"{job.key}.json")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(_worker_id()))
    t0 = time.perf_counter()
    record: dict[str, Any] = {"job": job.describe(), "run_id": run_id, "worker": _worker_id()}
    cache = None
    try:
        for info in infos:
            _ensure_model(info)
        from semanscope_nb.runs.task_library import SURFACE_BASELINE

        job_models = set(job.members) if job.members else {job.model}
        cache = _CountingCache(cache_folder, aside=() if SURFACE_BASELINE in job_models else (SURFACE_BASELINE,))
        result = run_task(task, job.dataset, list(job.members) if job.members else job.model, cache=cache, progress=False,
                          **job.params)
        record.update(
            status="done",
            kind=result.kind,
            summary=json_ready({**{k: v for k, v in result.summary().items() if isinstance(v, (int, float, str, bool)) or v is None},
                                "main_score": result.main_score}),
            result=result.to_dict(),
            embedding=dict(cache.totals),
            embedding_baseline=dict(cache.baseline_totals),  # the surface-form baseline of the verdict, counted apart
            seconds=time.perf_counter() - t0,
            provenance=json_ready({**dict(getattr(result, "provenance", {})), "model_cache_key": job.model_key,
                                   "n_rows": len(job.dataset), "task": task.name, "task_version": task.version,
                                   "job_parameters": params_json(job.params)}),
        )
        atomic_write_json(job.path(runs), record)
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


# --------------------------------------------------------------------------- the driver, in named steps


@dataclass
class GridResult:
    """What :func:`run_grid` produced.

    ``table``: one row per finished job (model, dataset, task, params + the
    result's summary columns); ``records``: job key -> full job record (its
    ``result`` holds the result as a dict; :attr:`results` gives them back as
    result objects); ``failures``: job key -> {model, dataset, task, params, error}.
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
    phase_seconds: dict[str, float] = field(default_factory=dict)  # backend start-up, embedding phase, jobs
    warnings: list[str] = field(default_factory=list)  # e.g. a damaged job file that was recomputed
    reader_reports: dict[str, list[str]] = field(default_factory=dict)  # dataset name -> what its reader reported

    def leaderboard(self, task: str = "sa") -> pd.DataFrame:
        """The rows of one task (for ``sa``: the leaderboard columns of :func:`semanscope_nb.runs.evaluate.leaderboard`)."""
        if self.table.empty:
            return self.table
        return self.table[self.table.task == task].dropna(axis=1, how="all").reset_index(drop=True)

    @property
    def results(self) -> dict[tuple[str, str, str], Result]:
        """(model, dataset, task) -> the result object (the last parameter set when a task ran with several)."""
        kinds = result_kinds()
        out = {}
        for rec in self.records.values():
            j = rec["job"]
            cls = kinds.get(rec.get("kind", ""))
            if cls is not None and isinstance(rec.get("result"), dict):
                out[(j["model"], j["dataset"], j["task"])] = cls.from_dict(rec["result"])
        return out

    def wide(self) -> pd.DataFrame:
        """One row per (model, dataset): each task's main score (several parameter sets -> their mean)."""
        if self.table.empty:
            return self.table
        rows = []
        for (model, dataset), grp in self.table.groupby(["model", "dataset"], sort=False):
            row = {"model": model, "dataset": dataset}
            for task, sub in grp.groupby("task", sort=False):
                if "main_score" in sub:
                    row[f"{task}:{_main_score_name(task)}"] = pd.to_numeric(sub["main_score"], errors="coerce").mean()
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def encoder_calls(self) -> dict[str, int]:
        """Batches each model's encoder ran in this run (embedding phase + jobs; cache hits cost none)."""
        calls: dict[str, int] = {}
        for w in self.warm:
            if w.get("model") not in (None, "*"):
                calls[w["model"]] = calls.get(w["model"], 0) + int(w.get("n_batches", 0))
        for k, rec in self.records.items():
            if k not in self.resumed:
                m = rec["job"]["model"]
                calls[m] = calls.get(m, 0) + int(rec.get("embedding", {}).get("n_batches", 0))
                base = int(rec.get("embedding_baseline", {}).get("n_batches", 0))
                if base:
                    from semanscope_nb.runs.task_library import SURFACE_BASELINE

                    calls[SURFACE_BASELINE] = calls.get(SURFACE_BASELINE, 0) + base
        return calls

    @property
    def total_encoder_calls(self) -> int:
        return sum(self.encoder_calls.values())

    @property
    def n_encoded(self) -> int:
        """Texts embedded by the models in this run (embedding phase + jobs; cache hits excluded)."""
        warm = sum(w.get("n_encoded", 0) for w in self.warm)
        jobs = sum(self.records[k].get("embedding", {}).get("n_encoded", 0) for k in self.records if k not in self.resumed)
        return warm + jobs


def _main_score_name(task: str) -> str:
    try:
        return get_task(task).main_score
    except UnknownNameError:
        return "main_score"


def plan_jobs(
    models: Sequence[str], tasks: Sequence[Task], data_of: Mapping[str, list[Any]], variants: Mapping[str, list[dict]]
) -> tuple[list[GridJob], dict[str, dict], dict[str, ModelInfo | None]]:
    """Every (model, dataset, task, parameters) job; jobs whose model cannot even be described are failures.

    Nothing is loaded: cache keys come from package metadata (TF-IDF fits on the dataset, cheaply).
    """
    jobs: list[GridJob] = []
    failures: dict[str, dict] = {}
    infos: dict[str, ModelInfo | None] = {}

    def fail(model: str, ds: Any, task: Task, p: dict, err: str) -> None:
        # the names as given (two models whose file names would be alike are two failures, none lost), unambiguously joined
        k = json.dumps([model, ds.name, task.name, params_json(p)], sort_keys=True, ensure_ascii=False)
        failures[k] = {"model": model, "dataset": ds.name, "task": task.name, "params": params_json(p), "error": err}

    keys: dict[tuple[str, str], str | None] = {}
    for model in models:
        try:
            infos[model] = get_model_info(model)
        except Exception as exc:
            for t in tasks:
                for ds in _datasets_for(t, data_of):
                    for p in variants[t.name]:
                        fail(model, ds, t, p, f"{type(exc).__name__}: {exc}")
            continue
        for t in tasks:
            for ds in _datasets_for(t, data_of):
                try:
                    keys[(model, ds.name)] = load_model(model).prepare(fit_corpus(ds)).cache_key
                except Exception as exc:
                    keys[(model, ds.name)] = None
                    for p in variants[t.name]:
                        fail(model, ds, t, p, f"{type(exc).__name__}: {exc}")
                    continue
                if t.inputs == "models":
                    continue
                for p in variants[t.name]:
                    jobs.append(GridJob(model, ds, t.name, dict(p), job_key(keys[(model, ds.name)], ds, t, p), keys[(model, ds.name)]))
    for t in tasks:  # a comparison is one job per dataset over every model that could be described
        if t.inputs != "models":
            continue
        for ds in _datasets_for(t, data_of):
            members = tuple(m for m in models if keys.get((m, ds.name)))
            if len(members) < 2:
                continue
            model_key = json.dumps([keys[(m, ds.name)] for m in members])
            for p in variants[t.name]:
                jobs.append(GridJob("+".join(members), ds, t.name, dict(p), job_key(model_key, ds, t, p), model_key, members))
    first: dict[str, GridJob] = {}
    for job in jobs:  # one key is one job file and one record: two names for it would share them and lose a row
        other = first.setdefault(job.key, job)
        if other is not job:
            raise ArgumentError(
                f"model {other.model!r} on dataset {other.dataset.name!r} and model {job.model!r} on dataset "
                f"{job.dataset.name!r} are the same job ({job.task}): the same model and the same rows under two names; "
                f"give each model and each dataset once")
    infos = {k: (v if k not in _STARTUP_MODELS else None) for k, v in infos.items()}  # ship only run-time registrations
    return jobs, failures, infos


def _datasets_for(task: Task, data_of: Mapping[str, list[Any]]) -> list[Any]:
    from semanscope_nb.runs.tasks import data_kind

    seen = []
    for kind in task.data:
        seen += [d for d in data_of.get(kind, []) if data_kind(d) == kind]
    return seen


def read_job_file(path: Path) -> dict:
    """A job file's record; raises if it is damaged, truncated or not a job record."""
    rec = json.loads(regular_file(path).read_text(encoding="utf-8"))
    if not isinstance(rec, dict) or not isinstance(rec.get("job"), dict):
        raise ValueError("not a job record")
    if rec.get("status") == "done":
        prov = rec.get("provenance")
        if not isinstance(rec.get("summary"), dict) or not isinstance(prov, dict) or "languages" not in prov:
            raise ValueError("a finished job without its summary or provenance")
    return rec


def _holds_job(rec: Mapping[str, Any], job: GridJob) -> str | None:
    """None when ``rec`` is a finished record of ``job``; else why not (a copied or stale file)."""
    j = rec.get("job", {})
    if rec.get("status") != "done":
        return "not a finished job"
    want = job.describe()
    for key in ("key", "model", "dataset", "task", "dataset_sha256", "params"):
        if j.get(key) != want[key]:
            return f"holds another job ({key} {j.get(key)!r}, expected {want[key]!r})"
    if rec.get("provenance", {}).get("dataset_sha256") not in (None, job.dataset.sha256):
        return "holds results of another dataset"
    return None


def resume_jobs(jobs: Sequence[GridJob], runs: Path, *, force: bool) -> tuple[dict[str, dict], list[str], list[GridJob], list[str]]:
    """Records of the jobs whose file holds exactly that job; the rest are pending (damaged or foreign files named)."""
    records: dict[str, dict] = {}
    resumed: list[str] = []
    pending: list[GridJob] = []
    notes: list[str] = []
    for job in jobs:
        f = job.path(runs)
        if not f.exists() and job.legacy_path(runs).exists():  # written under the cut name of earlier versions
            f = job.legacy_path(runs)
        if f.exists() and not force:
            try:
                rec = read_job_file(f)
            except OSError:
                raise  # unreadable now (permissions, I/O, too many open files): a condition, not damage; never overwritten
            except Exception as exc:  # damaged or truncated: recompute, and say which file
                notes.append(f"runs/{f.name}: damaged job file ({type(exc).__name__}: {exc}); recomputing")
                warnings.warn(notes[-1], JobFileWarning, stacklevel=3)
            else:
                why = _holds_job(rec, job)
                if why is None:
                    if f != job.path(runs):  # an earlier version's cut name: moved to the full one the leaderboard names
                        with contextlib.suppress(OSError):  # a read-only results folder: resumed where it is
                            os.replace(f, job.path(runs))
                    records[job.key] = rec
                    resumed.append(job.key)
                    continue
                notes.append(f"runs/{f.name}: {why}; recomputing")
                warnings.warn(notes[-1], JobFileWarning, stacklevel=3)
        pending.append(job)
    return records, resumed, pending, notes


def embed_phase(pending: Sequence[GridJob], tasks: Mapping[str, Task], infos: Mapping[str, ModelInfo | None],
                cache_folder: str, n_workers: int) -> list[dict]:
    """Each (model, text) of the pending jobs embedded once, one worker per model, into the shared cache."""
    by_model: dict[str, dict[str, tuple[Task, Any, dict]]] = {}
    for j in pending:
        t = tasks[j.task]
        prep = (t.name if (t.texts or t.check or t.select) else "", j.dataset.name,
                json.dumps(params_json(j.params), sort_keys=True) if (t.texts or t.select) else "")
        for m in j.models:
            by_model.setdefault(m, {})[json.dumps(prep)] = (t, j.dataset, j.params)
    args = [(m, infos.get(m), list(d.values()), cache_folder) for m, d in by_model.items()]
    warm: list[dict] = []
    try:
        for w in _parallel_map(warm_model, args, n_workers):
            warm.append(w)
    except Exception as exc:  # best effort: the jobs embed what is still missing
        warm.append({"model": "*", "error": f"embedding phase interrupted: {type(exc).__name__}: {exc}"})
    return warm


def run_jobs(pending: Sequence[GridJob], tasks: Mapping[str, Task], infos: Mapping[str, ModelInfo | None], cache_folder: str,
             runs: Path, run_id: str, n_workers: int, max_retries: int, finish: Callable[[dict], None],
             report: Callable[[Mapping[str, Any], str], None]) -> dict[str, int]:
    """Run the pending jobs, retrying those whose worker died (suspects one at a time); returns the retry counts."""
    by_key = {j.key: j for j in pending}
    attempts: dict[str, int] = {}

    def done(rec: dict) -> None:
        by_key.pop(rec["job"]["key"], None)
        finish(rec)

    def run_round(batch: list[GridJob]) -> Exception | None:
        args = [(j, tasks[j.task], [infos.get(m) for m in j.models], cache_folder, str(runs), run_id) for j in batch]
        try:
            for rec in _parallel_map(run_job, args, n_workers):
                done(rec)
        except Exception as exc:  # a worker died (or the cluster went away)
            return exc
        return None

    def adopt_finished() -> None:  # finished on a worker, but the driver never heard of it
        for k, j in list(by_key.items()):
            f = j.path(runs)
            if f.exists():
                try:
                    rec = read_job_file(f)
                except Exception:  # being written, or damaged: the job runs again
                    continue
                if _holds_job(rec, j) is None and rec.get("run_id") == run_id:
                    done(rec)

    for j in pending:
        path_inside(runs / ".inflight", f"{j.key}.json").unlink(missing_ok=True)
    suspects: list[str] = []
    crashes_without_suspect = 0
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
        died = [j.key for j in batch if j.key in by_key and path_inside(runs / ".inflight", f"{j.key}.json").exists()]
        for k in died:
            path_inside(runs / ".inflight", f"{k}.json").unlink(missing_ok=True)
        if not died:
            crashes_without_suspect += 1
            if crashes_without_suspect > max_retries:
                for k in list(by_key):
                    done({"job": by_key[k].describe(), "status": "failed", "error": f"backend failure: {type(exc).__name__}: {exc}"})
            continue
        for k in died:
            attempts[k] = attempts.get(k, 0) + 1
            job = by_key[k]
            if attempts[k] > max_retries:
                done({"job": job.describe(), "status": "failed",
                      "error": f"worker process died during this job {attempts[k]} times "
                               f"(killed or out of memory?); last error: {type(exc).__name__}: {exc}"})
            else:
                report(job.describe(), f"retrying (worker died: {type(exc).__name__}), attempt {attempts[k] + 1}")
                if k not in suspects:
                    suspects.append(k)
    return attempts


_FIXED_COLUMNS = ("model", "display_name", "dataset", "languages", "task", "params")


def grid_table(records: Sequence[dict], task_order: Sequence[str]) -> pd.DataFrame:
    """One row per finished job; within a task, models ordered by their mean main score (best first)."""
    rows = []
    for rec in records:
        j = rec["job"]
        try:
            display = get_model_info(j["model"]).display_name
        except Exception:
            display = j["model"]
        rows.append({"model": j["model"], "display_name": display, "dataset": j["dataset"],
                     "languages": ",".join(rec["provenance"]["languages"]), "task": j["task"],
                     "params": json.dumps(j["params"], sort_keys=True, ensure_ascii=False),
                     **{k: v for k, v in rec["summary"].items() if k not in _FIXED_COLUMNS}})
    df = pd.DataFrame(rows)
    if df.empty:  # the header still names the columns: leaderboard.csv stays a CSV a reader can open
        return pd.DataFrame(columns=[*_FIXED_COLUMNS, "main_score"])
    parts = []
    for name in task_order:
        sub = df[df.task == name]
        if sub.empty:
            continue
        if "main_score" in sub:
            better = get_task(name).higher_is_better if name in {t.name for t in list_tasks()} else True
            means = pd.to_numeric(sub["main_score"], errors="coerce").groupby(sub["model"]).mean()
            order = means.sort_values(ascending=not better, kind="stable").index
            rank = {m: i for i, m in enumerate(order)}
            sub = sub.assign(_r=sub["model"].map(rank)).sort_values(["_r", "dataset", "params"], kind="stable").drop(columns="_r")
        parts.append(sub)
    return pd.concat(parts, ignore_index=True)


def write_leaderboard(out: Path, table: pd.DataFrame, done: Sequence[dict], jobs: Sequence[GridJob], meta: dict) -> list[str]:
    """``leaderboard.csv`` and ``leaderboard.json`` (rows + provenance + the relative job file); shareable: no home paths."""
    file_of = {j.key: j.file_name for j in jobs}
    by_row = {(r["job"]["model"], r["job"]["dataset"], r["job"]["task"], json.dumps(r["job"]["params"], sort_keys=True, ensure_ascii=False)): r
              for r in done}
    # every float as Python writes it (the shortest repr that reads back to the same double), as in leaderboard.csv and
    # the run files: DataFrame.to_json would cut each to 10 decimals (its double_precision)
    rows = [{k: None if pd.api.types.is_scalar(v) and pd.isna(v) else v for k, v in record.items()}
            for record in table.to_dict(orient="records")]
    for row in rows:
        rec = by_row[(row["model"], row["dataset"], row["task"], row["params"])]
        row["provenance"] = rec["provenance"]
        row["run_file"] = f"runs/{file_of[rec['job']['key']]}"
    return [
        str(atomic_write_text(path_inside(out, "leaderboard.csv"), csv_text(table))),
        str(atomic_write_json(path_inside(out, "leaderboard.json"), json_ready({"meta": meta, "rows": rows}))),
    ]


def grid_tasks(tasks: Sequence[str] | str, params: Mapping[str, Mapping[str, Any]] | None,
               param_grid: Mapping[str, Mapping[str, Sequence]] | None) -> tuple[list[Task], dict[str, list[dict]]]:
    """The grid's tasks (registry entries, in order, once each) and each task's parameter variants.

    >>> tasks, variants = grid_tasks("sa", {"sa": {"n_boot": 50}}, None)
    >>> [t.name for t in tasks], variants["sa"][0]["n_boot"]
    (['sa'], 50)
    """
    if isinstance(tasks, str):
        tasks = [tasks]
    task_objs = [get_task(t) for t in dict.fromkeys(tasks)]
    if not task_objs:
        raise ArgumentError("tasks: give at least one task name")
    registered = sorted(t.name for t in list_tasks())
    for source, given in (("params", params or {}), ("param_grid", param_grid or {})):
        extra = sorted(set(given) - set(registered))  # registered tasks not in this run are ignored
        if extra:
            raise UnknownNameError(f"{source} names unknown task(s) {extra}; registered: {', '.join(registered)}")
    variants = {t.name: param_variants(t, (params or {}).get(t.name), (param_grid or {}).get(t.name)) for t in task_objs}
    for name, sets in variants.items():  # a bad option is one line before any work, not one failed job per model
        for p in sets:
            try:
                check_common(p)
            except ArgumentError as exc:
                raise ArgumentError(f"task {name!r}: {exc}") from None
    return task_objs, variants


def auto_workers(*, jobs: int | None = None) -> int:
    """Worker processes for ``n_jobs="auto"``: the CPUs free right now (:func:`~semanscope_nb.machine.free_cpus`), at
    most one per job; below 2 the grid runs serially in this process.

    Two workers halve a warm benchmark's wall time on an idle 2-core machine, but on a busy one each worker's start
    (imports, the embedding phase) waits for a CPU and the run takes longer than serially: hence the load, read at
    the start.  The choice never changes a result (every job's numbers are its own; the serial and loky backends
    give the same files, tests/test_faults_shared.py).

    >>> auto_workers(jobs=1)
    1
    """
    workers = free_cpus()
    if jobs is not None:
        workers = min(workers, int(jobs))
    return max(1, workers)


def resolve_backend(backend: str | None, *, n_jobs: int | str | None, scheduler: str | None) -> tuple[str, int | None]:
    """The grid's (backend, worker count) for what a command line asked: no backend named -> Dask with a
    scheduler, loky with a worker count, else serial; ``n_jobs="auto"`` -> :func:`auto_workers` (serial below 2
    unless a backend is named).

    >>> resolve_backend(None, n_jobs=None, scheduler=None), resolve_backend(None, n_jobs=3, scheduler=None)
    (('serial', None), ('loky', 3))
    """
    if n_jobs == "auto":
        n_jobs = auto_workers()
        if backend == "serial" or (backend is None and scheduler is None and n_jobs < 2):
            n_jobs = None
    return backend or ("dask" if scheduler else ("loky" if n_jobs else "serial")), n_jobs


def check_backend(backend: str, *, n_jobs: int | None, scheduler: str | None, max_retries: int,
                  connect_timeout: float = 10.0) -> None:
    """Refuse a backend, worker count, scheduler, retry count or connection timeout the grid cannot use (an
    ArgumentError naming it)."""
    if backend not in BACKENDS:
        raise ArgumentError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1):
        raise ArgumentError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    if scheduler is not None and backend != "dask":
        raise ArgumentError(f"scheduler={scheduler!r} needs backend='dask' (got backend={backend!r})")
    check_count("max_retries", max_retries, minimum=0)
    if (isinstance(connect_timeout, (bool, np.bool_)) or not isinstance(connect_timeout, (int, float, np.integer, np.floating))
            or not (math.isfinite(connect_timeout) and connect_timeout > 0)):
        raise ArgumentError(f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}")


def check_out_folder(name: str, folder: Any) -> Path:
    """``folder`` (a results or work folder) as a Path, refused (an ArgumentError naming ``name``) before any work
    when it is not a path, or it or a folder above it is an existing file."""
    if isinstance(folder, bool) or not isinstance(folder, (str, os.PathLike)) or not str(folder):
        raise ArgumentError(f"{name} must be a folder path, got {folder!r}")
    path = Path(folder)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                what = "is" if p == path else f"is inside '{p}', which is"
                raise ArgumentError(f"{name}: '{folder}' {what} a file, not a folder")
            break
    return path


def grid_cache_folder(cache: EmbeddingCache | str | os.PathLike | None) -> str:
    """The embedding cache folder the workers open (created now, or a clear CacheError)."""
    if isinstance(cache, EmbeddingCache):
        return str(cache.folder)
    with EmbeddingCache(cache) as probe:
        return str(probe.folder)


def load_grid_data(task_objs: Sequence[Task], datasets: Sequence[Any] | None, corpora: Sequence[Any] | None, *,
                   languages: Sequence[str] | None, max_concepts: int | None) -> dict[str, list[Any]]:
    """The data the tasks need, by kind (words, parallel, labelled, sentences); names must be distinct."""
    from semanscope_nb.runs.tasks import data_kind

    kinds = {k for t in task_objs for k in t.data}
    data_of: dict[str, list[Any]] = {"words": [], "parallel": [], "sentences": [], "labelled": []}
    if kinds & {"words", "parallel", "labelled"}:
        for ds in load_word_datasets(datasets, languages, max_concepts):
            data_of[data_kind(ds)].append(ds)
    if "sentences" in kinds:
        data_of["sentences"] = load_sentence_corpora(corpora)
    names = [d.name for kind in data_of.values() for d in kind]
    if len(set(names)) < len(names):
        raise ArgumentError(f"datasets and corpora need distinct names, got {names}")
    return data_of


def grid_dataset_metadata(loaded: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """What the leaderboard records of each dataset: a shareable source, its hash, size, languages, reader report."""
    return {ds.name: {"source": shareable_source(ds.source), "sha256": ds.sha256, "rows": len(ds),
                      "languages": list(ds.texts_by_language()),
                      "reader_report": shareable_report(getattr(ds, "report", ()), ds.source)}
            for ds in loaded}


class GridProgress:
    """The grid's one progress bar and ``on_job`` callback; files each finished job as a record or a failure."""

    def __init__(self, records: dict[str, dict], failures: dict[str, dict], *, total: int, show: bool,
                 on_job: Callable[[str, str, str, str], None] | None, initial: int = 0) -> None:
        self.records, self.failures, self.on_job = records, failures, on_job
        self.bar = None
        if show:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="grid", unit="job", initial=initial)

    def report(self, job_like: Mapping[str, Any], status: str) -> None:
        label = f"{job_like['model']} x {job_like['dataset']} [{job_like['task']}]: {status}"
        if self.bar is not None:
            self.bar.set_postfix_str(label[:120])
            if status.startswith("failed") or status.startswith("retry"):
                self.bar.write(label)
        if self.on_job is not None:
            self.on_job(job_like["model"], job_like["dataset"], job_like["task"], status)

    def finish(self, rec: dict) -> None:
        job = rec["job"]
        if rec["status"] == "done":
            self.records[job["key"]] = rec
            self.report(job, "done")
        else:
            self.failures[job["key"]] = {**{k: job[k] for k in ("model", "dataset", "task", "params")}, "error": rec["error"]}
            self.report(job, f"failed: {rec['error']}")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def execute_jobs(pending: Sequence[GridJob], task_of: Mapping[str, Task], infos: Mapping[str, ModelInfo | None], *,
                 backend: str, n_jobs: int | None, scheduler: str | None, connect_timeout: float, cache_folder: str,
                 runs: Path, run_id: str, prefetch: bool, max_retries: int,
                 tracker: "GridProgress") -> tuple[list[dict], dict[str, int], dict[str, float], str]:
    """Start the backend, embed what the pending jobs need (``prefetch``), run the jobs; stop the pool on a signal.

    Returns the embedding phase's records, the retry counts, the seconds of each phase and the backend's description.
    """
    warm: list[dict] = []
    attempts: dict[str, int] = {}
    phases: dict[str, float] = {}
    t_phase = time.perf_counter()
    with _backend(backend, n_jobs, scheduler, connect_timeout) as (_, n_workers, desc, stop), _stop_pool_on_signals(stop):
        phases["startup"] = time.perf_counter() - t_phase
        t_phase = time.perf_counter()
        if prefetch and pending:
            # loky's workers share this machine: the embedding phase runs here (one model at a time, its encoder on
            # every core, as a serial run does -- so a cold cache gets the same vectors, batch for batch, whatever the
            # backend) and only the metric jobs go to the workers; a Dask cluster embeds on its workers (the models
            # live there)
            warm = embed_phase(pending, task_of, infos, cache_folder, 1 if backend == "loky" else n_workers)
        phases["embedding"] = time.perf_counter() - t_phase
        t_phase = time.perf_counter()
        attempts = run_jobs(pending, task_of, infos, cache_folder, runs, run_id, n_workers, max_retries, tracker.finish,
                            tracker.report)
        phases["jobs"] = time.perf_counter() - t_phase
    return warm, attempts, phases, desc


def run_grid(
    models: Sequence[str] | None = None,
    datasets: Sequence[Any] | None = None,
    tasks: Sequence[str] = ("sa",),
    *,
    metrics: Sequence[str] | None = None,
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
    """Run every (model, dataset, task, parameter set) job through joblib; resumable.

    ``models``: ids or preset names (default: every offline model installed).
    ``datasets``: word datasets or parallel corpora (default: the bundled word
    datasets); ``corpora``: sentence corpora for sentence tasks (default: the
    bundled ones).  ``params={"sa": {"n_boot": 200}}`` sets a task's
    parameters; ``param_grid={"sa": {"seed": [0, 1]}}`` adds one job per
    combination.  ``backend``: ``"serial"``, ``"loky"`` (``n_jobs`` processes,
    default ``settings.n_jobs``) or ``"dask"`` (``scheduler``: an address such
    as ``tcp://host:8786``, or ``"local"``/None for a LocalCluster).  Jobs
    whose file holds that job are reused (``force=True`` recomputes).
    ``on_job(model, dataset, task, status)`` is called in the driver as jobs
    finish.  ``metrics`` is the old name of ``tasks``.
    """
    t_start = time.perf_counter()
    run_id = uuid.uuid4().hex[:12]  # tells this run's job files from older ones (force=True must not adopt those)
    task_objs, variants = grid_tasks(metrics if metrics is not None else tasks, params, param_grid)
    check_backend(backend, n_jobs=n_jobs, scheduler=scheduler, max_retries=max_retries, connect_timeout=connect_timeout)
    if max_concepts is not None:
        check_count("max_concepts", max_concepts, minimum=1)
    if out_dir is not None:
        check_out_folder("out_dir", out_dir)
        check_out_folder("out_dir", Path(out_dir) / "runs")
    cache_folder = grid_cache_folder(cache)
    models, skipped = _grid_models(models)
    data_of = load_grid_data(task_objs, datasets, corpora, languages=languages, max_concepts=max_concepts)
    loaded = [d for kind in data_of.values() for d in kind]
    tmp_out = tempfile.TemporaryDirectory(prefix="semanscope-grid-") if out_dir is None else None
    out = Path(tmp_out.name if tmp_out is not None else out_dir)
    (runs := out / "runs").mkdir(parents=True, exist_ok=True)

    jobs, failures, infos = plan_jobs(models, task_objs, data_of, variants)
    task_of = {t.name: t for t in task_objs}
    records, resumed, pending, grid_warnings = resume_jobs(jobs, runs, force=force)

    tracker = _grid_tracker(records, failures, resumed, n_jobs=len(jobs), progress=progress, on_job=on_job)

    try:
        warm, attempts, phases, desc = execute_jobs(
            pending, task_of, infos, backend=backend, n_jobs=n_jobs, scheduler=scheduler, connect_timeout=connect_timeout,
            cache_folder=cache_folder, runs=runs, run_id=run_id, prefetch=prefetch, max_retries=max_retries, tracker=tracker)
    finally:
        tracker.close()

    done = [records[j.key] for j in jobs if j.key in records]
    table = grid_table(done, [t.name for t in task_objs])
    result = GridResult(table, {j.key: records[j.key] for j in jobs if j.key in records}, jobs, resumed, failures, warm,
                        skipped, [], desc, 0.0, warnings=grid_warnings,
                        reader_reports={d.name: shareable_report(getattr(d, "report", ()), d.source) for d in loaded})
    if tmp_out is None:
        result.files = write_leaderboard(out, table, done, jobs, _run_metadata(
            result, task_objs, variants, loaded, models, languages=languages, max_concepts=max_concepts, retried=attempts))
    else:
        tmp_out.cleanup()
    result.seconds, result.run_id, result.phase_seconds = time.perf_counter() - t_start, run_id, phases
    return result


def _run_metadata(result: GridResult, task_objs: Sequence[Any], variants: Mapping[str, Sequence], loaded: Sequence[Any],
                  models: Sequence[str], *, languages: Sequence[str] | None, max_concepts: int | None,
                  retried: Any) -> dict[str, Any]:
    """The run's ``run.json``: packages, backend, task versions and variants, data and model metadata, outcome counts."""
    return {
        "created": utc_now(), "packages": package_info(), "backend": result.backend,
        "tasks": {t.name: {"version": t.version, "variants": [params_json(p) for p in variants[t.name]]} for t in task_objs},
        "parameters": {"languages": list(languages) if languages else None, "max_concepts": max_concepts},
        "datasets": grid_dataset_metadata(loaded), "models": {m: model_metadata(m) for m in models},
        "n_jobs": len(result.jobs), "resumed": len(result.resumed), "retried": retried,
        "failures": list(result.failures.values()), "embedding_phase": result.warm, "skipped": result.skipped,
        "warnings": result.warnings,
    }


def _grid_models(models: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """(model ids to run, model -> why it is skipped): presets expanded; default every offline model installed."""
    if models is None:
        skipped: dict[str, str] = {}
        return default_models(skipped), skipped
    if isinstance(models, str):  # one model id or preset, as one task name or one dataset is taken
        models = [models]
    return resolve_models(list(models))


def _grid_tracker(records: dict, failures: dict, resumed: Sequence[str], *, n_jobs: int, progress: bool | None,
                  on_job: Callable[[str, str, str, str], None] | None) -> GridProgress:
    """The progress tracker, told already of the resumed and the failed jobs (a bar when more than one job runs)."""
    show = progress if progress is not None else n_jobs > 1
    tracker = GridProgress(records, failures, total=n_jobs + len(failures), show=show, on_job=on_job,
                           initial=len(resumed) + len(failures))
    for key in resumed:
        tracker.report(records[key]["job"], "resumed")
    for f in failures.values():
        tracker.report(f, f"failed: {f['error']}")
    return tracker
