"""Dataset-level Semantic Affinity through the cache, and the model x dataset benchmark grid.

Example
-------
>>> import semanscope_nb as snb
>>> r = snb.dataset_affinity("edge-cases", "random-null", languages=["en", "zh"], n_boot=100)
>>> r.provenance["model"], r.tier
('random-null', 'chance')
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.data.catalog import list_folder_datasets  # noqa: F401  (moved to the data layer; old imports still work)
from semanscope_nb.data.words import (
    BUNDLED_DATASETS,
    WordDataset,
    language_code,
    list_datasets,
    load_dataset,
)
from semanscope_nb.errors import DatasetError, JobFileWarning
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    AlignedWords,
    SAResult,
    TierThresholds,
    affinity_of_words,
    check_row_tuples,
)
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.embedded import Embedded, embed
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.models.registry import (
    DEFAULT_MODEL,
    get_model_info,
    list_models,
    load_model,
    preset_names,
    warn_unsupported,
)
from semanscope_nb.provenance import (
    atomic_write_json,
    atomic_write_text,
    package_info,
    utc_now,
)


def _as_dataset(dataset: WordDataset | str | os.PathLike, languages: Sequence[str] | None) -> WordDataset:
    ds = dataset if isinstance(dataset, WordDataset) else load_dataset(dataset)
    return ds.select(languages) if languages is not None else ds


def prepare_encoder(model: str | Encoder, dataset: WordDataset) -> Encoder:
    """Deprecated: ``load_model(model).prepare(dataset.all_texts())`` (see :func:`semanscope_nb.embed`)."""
    return load_model(model).prepare(dataset.all_texts())


def aligned_words(dataset: WordDataset, vectors: dict[str, dict[str, np.ndarray]]) -> AlignedWords:
    """Deprecated: ``runs.task_library.aligned_words(embedded)``; unique-word vectors and row incidence per language."""
    vecs, incs, words = [], [], []
    for lang in dataset.languages:
        uniq = dataset.words(lang)
        pos = {w: i for i, w in enumerate(uniq)}
        cells = dataset.column(lang)
        r_idx = np.repeat(np.arange(len(cells)), [len(c) for c in cells])
        c_idx = np.fromiter((pos[w] for c in cells for w in c), dtype=np.int64, count=r_idx.size)
        incs.append(sp.csr_matrix((np.ones(r_idx.size), (r_idx, c_idx)), shape=(len(cells), len(uniq))))
        vecs.append(np.stack([vectors[lang][w] for w in uniq]))
        words.append(tuple(uniq))
    labels = tuple(" / ".join(cell[0] for cell in row[:2]) for row in dataset.rows)
    return AlignedWords(dataset.languages, tuple(vecs), tuple(incs), labels, dataset.groups, tuple(words))


def embed_dataset(
    dataset: WordDataset, model: str | Encoder, *, cache: EmbeddingCache | None | Literal[False] = None, progress: bool | None = None
) -> tuple[dict[str, dict[str, np.ndarray]], Encoder, dict[str, Any]]:
    """Deprecated: use :func:`semanscope_nb.embed`, which returns an :class:`~semanscope_nb.models.embedded.Embedded`.

    Returns (language -> text -> vector, the prepared encoder, what the cache did).
    """
    emb = embed(dataset, model, cache=cache, progress=progress)
    return {lang: dict(v) for lang, v in emb.vectors.items()}, emb.encoder, dict(emb.stats)


def dataset_affinity(
    dataset: WordDataset | str | os.PathLike | Embedded,
    model: str | Encoder | None = None,
    *,
    languages: Sequence[str] | None = None,
    cache: EmbeddingCache | None | Literal[False] = None,
    n_boot: int | None = None,
    seed: int | None = None,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    on_zero: Literal["error", "drop"] = "drop",
    progress: bool | None = None,
) -> SAResult:
    """SA of ``model`` on ``dataset`` (bundled name, CSV path, :class:`WordDataset` or :class:`Embedded`): the ``sa`` task.

    Each ``|`` alternative is embedded on its own, through the per-text cache
    (``cache=None``: the default cache; ``False``: no cache).  Concepts holding
    a word that embeds to the zero vector are dropped and listed in
    ``result.diagnostics`` (``on_zero="error"`` raises instead).  ``model``
    defaults to ``settings.default_model``, ``n_boot`` and ``seed`` to
    ``settings.n_boot`` / ``settings.seed``.  The result carries its
    provenance: model id/version/options, dataset hash, parameters, package
    versions.
    """
    from semanscope_nb.runs.tasks import run_task

    return run_task("sa", dataset, model, languages=languages, cache=cache, progress=progress, n_boot=n_boot, seed=seed,
                    confidence=confidence, thresholds=thresholds, on_zero=on_zero)


# --------------------------------------------------------------------------- the grid


@dataclass
class BenchmarkResult:
    """What :func:`run_benchmark` produced: the leaderboard, every SA result, and what it cost."""

    table: pd.DataFrame
    results: dict[tuple[str, str], SAResult]
    encoder_calls: dict[str, int]
    resumed: list[tuple[str, str]] = field(default_factory=list)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. a damaged job file that was recomputed
    reader_reports: dict[str, list[str]] = field(default_factory=dict)  # dataset name -> what its reader reported

    @property
    def total_encoder_calls(self) -> int:
        return sum(self.encoder_calls.values())


def _job_key(model_key: str, ds: WordDataset, params: dict[str, Any]) -> str:
    blob = json.dumps({"model": model_key, "dataset": ds.sha256, "languages": ds.languages, "rows": len(ds), **params}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _model_meta(model: str) -> dict[str, Any]:
    try:
        return get_model_info(model).to_dict()
    except Exception as exc:
        return {"error": str(exc)}


def leaderboard(results: dict[tuple[str, str], SAResult]) -> pd.DataFrame:
    """One row per (model, dataset), models ordered by their mean cosine SA."""
    rows = []
    for (model, dataset), r in results.items():
        info = get_model_info(model)
        rows.append({"model": model, "display_name": info.display_name, "dataset": dataset,
                     "languages": ",".join(r.languages), **r.summary()})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    order = df.groupby("model")["sa_cosine"].mean().sort_values(ascending=False).index
    df["model"] = pd.Categorical(df["model"], categories=list(order), ordered=True)
    df = df.sort_values(["model", "dataset"]).reset_index(drop=True)
    df["model"] = df["model"].astype(str)
    return df


def format_leaderboard(table: pd.DataFrame) -> str:
    """A plain-text leaderboard: model, dataset, SA cosine +- SEM, 95% CI, chance level, SA Euclidean, verdict tier."""
    if table.empty:
        return "(no results)"
    header = f"{'model':<24} {'dataset':<20} {'SA cos ± SEM':<16} {'95% CI':<17} {'chance':<7} {'SA euc':<7} tier (paper's)"
    lines = [header, "-" * len(header)]
    for r in table.itertuples():
        chance = getattr(r, "sa_null", float("nan"))
        paper = getattr(r, "paper_tier", r.tier)
        lines.append(
            f"{r.model:<24} {r.dataset:<20} {r.sa_cosine:.3f} ± {r.sem_cosine:.3f}    "
            f"[{r.ci_low:.3f}, {r.ci_high:.3f}]  {chance:.3f}   {r.sa_euclidean:.3f}   {r.tier}"
            + (f" ({paper})" if paper != r.tier else "")
        )
    return "\n".join(lines)



def resolve_models(models: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Expand preset names (``"paper"``) into model ids; models that cannot run here go into the second value.

    Each skipped model gets one reason ("needs hub: ...", "needs key: set OPENROUTER_API_KEY ...");
    a model given by its own id is never skipped here (it fails, or runs, as asked).

    >>> ids, skipped = resolve_models(["paper", "random-null"])
    >>> ids[0], "random-null" in ids, len(ids) + len(skipped)
    ('use-multilingual', True, 14)
    """
    if isinstance(models, str):
        raise TypeError("models must be a list of model ids or preset names, not one string")
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


def _default_models(skipped: dict[str, str]) -> list[str]:
    """Every offline model whose packages are installed; the others go into ``skipped`` with the reason."""
    models = []
    for m in list_models(offline=True):
        (models.append(m.id) if m.available else skipped.__setitem__(m.id, f"needs {', '.join(m.requires)}"))
    return models


def _load_datasets(
    datasets: Sequence[str | os.PathLike | WordDataset] | None, languages: Sequence[str] | None, max_concepts: int | None
) -> list[WordDataset]:
    """The grid's datasets (default: bundled), restricted to ``languages`` and the first ``max_concepts`` rows."""
    if datasets is None:
        datasets = [d.name for d in list_datasets()]
        if not datasets:
            raise FileNotFoundError(f"no bundled datasets found (expected {', '.join(BUNDLED_DATASETS)})")
    if isinstance(datasets, (str, os.PathLike)):
        datasets = [datasets]
    full = [_as_dataset(d, None) for d in datasets]
    wanted = None
    if languages is not None:
        if isinstance(languages, str):
            languages = [t.strip() for t in languages.split(",") if t.strip()]
        wanted = [language_code(str(lang)) or str(lang) for lang in languages]
        if not wanted:
            raise DatasetError("languages: no language given (pass None for every language of each dataset)")
        known = {lang for ds in full for lang in ds.languages}
        unknown = [lang for lang, code in zip(languages, wanted) if code not in known]
        if unknown:
            have = "; ".join(f"{ds.name}: {', '.join(ds.languages)}" for ds in full)
            raise DatasetError(f"unknown language(s) {unknown}: in none of the datasets ({have})")
    loaded = []
    for ds in full:
        if wanted is not None:
            ds = ds.select([lang for lang in dict.fromkeys(wanted) if lang in ds.languages])
        if max_concepts is not None:
            ds = ds.subset(range(min(max_concepts, len(ds))))
        loaded.append(ds)
    names = [ds.name for ds in loaded]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"datasets: several datasets are named {dupes}; give them distinct names")
    return loaded


def _read_job_file(path: Path) -> SAResult:
    """A finished job's :class:`SAResult`; raises if the file is damaged, truncated or not a result."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("cosine"), dict) or not isinstance(data.get("provenance"), dict):
        raise ValueError("not a Semantic Affinity result")
    return SAResult.from_dict(data)


def run_benchmark(
    models: Sequence[str] | None = None,
    datasets: Sequence[str | os.PathLike | WordDataset] | None = None,
    *,
    languages: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    thresholds: TierThresholds = DEFAULT_TIERS,
    cache: EmbeddingCache | None = None,
    out_dir: str | os.PathLike | None = "results",
    max_concepts: int | None = None,
    force: bool = False,
    progress: bool | None = None,
    on_job: Callable[[str, str, str], None] | None = None,
) -> BenchmarkResult:
    """Score every model on every dataset; write ``results/*.csv`` and ``results/*.json``.

    Defaults: every offline registry model whose packages are installed, every
    bundled dataset.  Each (model, dataset, parameters) job is written to
    ``out_dir/runs/`` as soon as it finishes, so an interrupted run resumes
    where it stopped (``force=True`` recomputes).  A failing job is recorded
    in ``failures`` and the rest of the grid still runs.  ``max_concepts``
    takes the first N rows of each dataset (a quick look).  A preset name in
    ``models`` (``"paper"``: paper 000's 13 models) expands to its models;
    those that need hub weights or an API key this machine lacks are listed
    in ``skipped`` with the reason, and the others run.
    """
    cache = cache if cache is not None else EmbeddingCache()
    skipped: dict[str, str] = {}
    if models is not None:
        models, skipped = resolve_models(list(models))
    else:
        models = _default_models(skipped)
    loaded = _load_datasets(datasets, languages, max_concepts)
    params = {"n_boot": n_boot, "seed": seed}
    results: dict[tuple[str, str], SAResult] = {}
    calls: dict[str, int] = {}
    resumed, failures = [], {}
    warnings_: list[str] = []
    out = Path(out_dir) if out_dir is not None else None
    for model in models:
        calls[model] = 0
        for ds in loaded:
            job = (model, ds.name)
            try:
                encoder = prepare_encoder(model, ds)
                run_file = out / "runs" / f"{_safe(model)}__{_safe(ds.name)}__{_job_key(encoder.cache_key, ds, params)}.json" if out else None
                if run_file is not None and run_file.exists() and not force:
                    try:
                        results[job] = _read_job_file(run_file).with_thresholds(thresholds)
                    except Exception as exc:  # damaged or truncated: recompute it, as the grid does, and say so
                        note = f"{run_file}: damaged job file ({type(exc).__name__}: {exc}); recomputing"
                        warnings_.append(note)
                        warnings.warn(note, JobFileWarning, stacklevel=2)
                        on_job and on_job(model, ds.name, "damaged job file; recomputing")
                    else:
                        resumed.append(job)
                        on_job and on_job(model, ds.name, "resumed")
                        continue
                on_job and on_job(model, ds.name, "running")
                r = dataset_affinity(ds, encoder, cache=cache, n_boot=n_boot, seed=seed, thresholds=thresholds, progress=progress)
                calls[model] += r.provenance["embedding"]["n_batches"]
                results[job] = r
                if run_file is not None:
                    atomic_write_json(run_file, r.to_dict())
                on_job and on_job(model, ds.name, "done")
            except Exception as exc:  # one failing job must not sink the grid
                failures[job] = f"{type(exc).__name__}: {exc}"
                on_job and on_job(model, ds.name, f"failed: {exc}")
                if os.environ.get("SEMANSCOPE_DEBUG"):
                    traceback.print_exc()
    table = leaderboard(results)
    bench = BenchmarkResult(table, results, calls, resumed, failures, skipped, warnings=warnings_,
                            reader_reports={ds.name: list(ds.report) for ds in loaded})
    if out is not None:
        meta = {
            "created": utc_now(),
            "packages": package_info(),
            "parameters": {**params, "languages": list(languages) if languages else None,
                           "max_concepts": max_concepts, "thresholds": asdict(thresholds)},
            "datasets": {ds.name: {"source": ds.source, "sha256": ds.sha256, "rows": len(ds), "languages": list(ds.languages),
                                   "reader_report": list(ds.report)} for ds in loaded},
            "models": {m: _model_meta(m) for m in models},
            "encoder_calls": calls,
            "resumed": [list(j) for j in resumed],
            "failures": {f"{m}|{d}": e for (m, d), e in failures.items()},
            "skipped": skipped,
            "warnings": warnings_,
        }
        records = json.loads(table.to_json(orient="records")) if not table.empty else []
        for rec in records:
            r = results[(rec["model"], rec["dataset"])]
            rec["provenance"] = r.provenance
        bench.files = [
            str(atomic_write_text(out / "leaderboard.csv", table.to_csv(index=False))),
            str(atomic_write_json(out / "leaderboard.json", {"meta": meta, "rows": records})),
        ]
    return bench
