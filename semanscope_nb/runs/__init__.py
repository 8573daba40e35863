"""Runs layer: dataset-level evaluation, benchmark grids, results on disk and the command line.

Rooms:

* :mod:`~semanscope_nb.runs.tasks` -- the task registry and :func:`run_task`, the one way every score runs.
* :mod:`~semanscope_nb.runs.task_library` -- the built-in tasks (SA, pairs, permutation, comparison, retrieval, BDI, kNN, CSC, projection).
* :mod:`~semanscope_nb.runs.evaluate` -- dataset-level SA (the ``sa`` task); leaderboards.
* :mod:`~semanscope_nb.runs.alignment` -- alignment before/after reports and maps.
* :mod:`~semanscope_nb.runs.verdicts` -- per-pair SA, permutation tests, model comparisons, the two-stage report.
* :mod:`~semanscope_nb.runs.contextual` -- paper 001's comparison of anchor kinds on one language pair.
* :mod:`~semanscope_nb.runs.word_similarity` -- paper 001 on BCWS / SCWS: before and after every en->zh map, Figure 1's sweep.
* :mod:`~semanscope_nb.runs.btsr` -- the sense-testing BTSR on the offline en-zh data.
* :mod:`~semanscope_nb.runs.mteb` -- results mteb validates, our models inside ``mteb.evaluate``; family / script breakdowns.
* :mod:`~semanscope_nb.runs.paper` -- the papers' own numbers beside ours (paper 000 on its files, paper 002's TF-IDF on ESS).
* :mod:`~semanscope_nb.runs.model_report` -- which model for my languages: every measurement side by side, one HTML report.
* :mod:`~semanscope_nb.runs.grid` -- models x datasets x metrics on joblib/Dask, resumable per job.
* :mod:`~semanscope_nb.runs.cli` -- the ``semanscope`` command.

May import: the plots, metrics, models and data layers, :mod:`semanscope_nb.errors`,
:mod:`semanscope_nb.provenance` and itself.  A new benchmark metric is registered with
:func:`register_metric`; a new command goes into ``cli.py``.

Example
-------
>>> import semanscope_nb as snb
>>> r = snb.runs.dataset_affinity("edge-cases", "random-null", languages=["en", "de"], n_boot=0, cache=False, progress=False)
>>> r.provenance["model"], r.provenance["dataset"], r.languages
('random-null', 'edge-cases', ('en', 'de'))
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.runs.alignment import AlignmentReport, alignment_report, dataset_map
from semanscope_nb.runs.btsr import sense_retrieval_en_zh
from semanscope_nb.runs.contextual import ContextualReport, contextual_comparison, parallel_sample
from semanscope_nb.runs.evaluate import (
    BenchmarkResult,
    dataset_affinity,
    embed_dataset,
    format_leaderboard,
    leaderboard,
    run_benchmark,
)
from semanscope_nb.runs.grid import GridBackendError, GridResult, Metric, get_metric, list_metrics, register_metric, resolve_models, run_grid
from semanscope_nb.runs.model_report import ModelReport, model_report, save_report
from semanscope_nb.runs.mteb import (
    MtebEncoder,
    MtebResult,
    bitext_entry,
    language_breakdown,
    mteb_language,
    mteb_model,
    mteb_model_meta,
    mteb_subset,
    mteb_version,
    read_mteb,
    tatoeba_task,
    write_mteb,
)
from semanscope_nb.runs.paper import PaperRun, csc_sample_overlaps, csc_sample_summary, paper_comparison, run_paper_000
from semanscope_nb.runs.task_library import aligned_words
from semanscope_nb.runs.tasks import Task, get_task, list_tasks, prepare, register_task, run_task
from semanscope_nb.runs.verdicts import (
    LanguageSupportWarning,
    compare_on_dataset,
    dataset_permutation_test,
    language_pairs,
    two_stage_report,
    unsupported_languages,
    with_rank_bands,
)
from semanscope_nb.runs.word_similarity import (
    PAPER_001_SETTINGS,
    WordSimilaritySweep,
    evaluate_word_similarity,
    paper_001_encoders,
    prepare_en_zh_training,
    word_similarity_sweep,
)

__all__ = _public_names(globals())
