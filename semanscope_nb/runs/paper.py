"""The papers' own numbers beside ours: paper 000 on the files it used, paper 002's TF-IDF baseline on ESS.

Paper 000.  :func:`run_paper_000` scores one model on the paper's four files
(DS1-DS4, English-Chinese), by default the earlier ``v0`` files whose counts
Table D.1 prints in brackets and the later revision beside them, with both
error bars: our bootstrap std (concept rows resampled; the sampling error)
and the original tool's delta-method ± (:mod:`semanscope_nb.metrics.paper_sem`).
:func:`paper_comparison` turns those runs into the comparison table, one row
per dataset x file version x distance:

* counts: rows and expanded tuples we read, beside the paper's bracket;
* SA: ours and the published Table D.1 (cosine) / D.2 (Euclidean);
* the gap, in *our* standard errors (the bootstrap std), and the verdict
  ``reproduced = |gap| <= 2 SE``.  The paper's ± is shown, never used as a
  standard error: the tool's ± holds a between-language term that is not
  sampling noise.

Paper 002.  :func:`csc_sample_overlaps` runs the TF-IDF baseline on many
seeded samples of the paper's size (94 ESS questions, X = 3), with the IDF
fitted on the originals (a fit/transform split, the default) and on all
texts, so the published 0.4516 can be set against the spread of samples.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> from semanscope_nb.runs.task_library import aligned_words
>>> emb = snb.embed("edge-cases", "random-null", languages=["en", "zh"], cache=False)
>>> r = snb.run_task("sa", emb, n_boot=50)
>>> run = PaperRun("DS3", "v0", "edge-cases.csv", len(emb.dataset), r, tool_sems(aligned_words(emb)))
>>> t = paper_comparison([run], model="USE")
>>> t[["dataset", "files", "distance", "paper_sa"]].values.tolist()
[['DS3', 'v0', 'cosine', 0.575], ['DS3', 'v0', 'euclidean', 0.548]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from semanscope_nb.data.reference import (
    PAPER_002_ESS_TFIDF,
    PAPER_FILE_VERSIONS,
    PAPER_FILES,
    paper_counts,
    paper_file,
    paper_tables,
)
from semanscope_nb.errors import ArgumentError, UnknownNameError
from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.metrics.paper_sem import DeltaMethodSEM, tool_sem
from semanscope_nb.metrics.spreads import AlignedWords
from semanscope_nb.settings import resolve

#: a published number counts as reproduced when our SA lies within this many of our standard errors of it
REPRODUCED_WITHIN_SE = 2.0
DISTANCES = ("cosine", "euclidean")


@dataclass(frozen=True)
class PaperRun:
    """One model on one of the paper's files: our SA result and the tool's ± per distance."""

    dataset: str  # DS1..DS4
    files: str  # "v0" or "later"
    file: str  # the file's name (no folder: shareable)
    rows_read: int  # concept rows in the file, exact duplicates included (the tool keeps them; our reader drops them)
    result: SAResult
    delta: Mapping[str, DeltaMethodSEM] | None = None  # None when concepts were dropped (zero vectors)


def tool_sems(aw: AlignedWords) -> dict[str, DeltaMethodSEM]:
    """The original tool's ± under both distances.

    >>> import numpy as np, scipy.sparse as sp
    >>> e = np.random.default_rng(0).normal(size=(5, 4)); eye = sp.identity(5, format="csr")
    >>> sorted(tool_sems(AlignedWords(("en", "zh"), (e, e + 1), (eye, eye), tuple("abcde"))))
    ['cosine', 'euclidean']
    """
    return {d: tool_sem(aw, distance=d) for d in DISTANCES}


def _rows_read(dataset: Any) -> int:
    """Rows of the file the tool would read: ours plus the exact duplicates our reader dropped (listed in its report)."""
    dropped = sum(1 for line in getattr(dataset, "report", ()) if "duplicate of line" in line and line.endswith("dropped"))
    return len(dataset) + dropped


def run_paper_000(
    model: str = "use-multilingual",
    *,
    datasets: Sequence[str] = tuple(PAPER_FILES),
    versions: Sequence[str] = PAPER_FILE_VERSIONS,
    folder: str | Path | None = None,
    n_boot: int | None = None,
    seed: int = 0,
    cache: Any = None,
    max_concepts: int | None = None,
    progress: bool | None = None,
) -> list[PaperRun]:
    """Score ``model`` on the paper's files (English-Chinese): SA with bootstrap, and the tool's ± beside it.

    ``versions``: ``"v0"`` (the files the published numbers were computed on,
    see :func:`~semanscope_nb.data.reference.paper_file`) and/or ``"later"``.
    ``max_concepts`` keeps the first rows of each file (a quick check; the
    counts then no longer match the paper's).  A missing file is an error
    naming it.

    >>> run_paper_000("random-null", datasets=["DS9"])
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.ArgumentError: datasets: unknown ['DS9']; the paper's are ['DS1', 'DS2', 'DS3', 'DS4']
    """
    n_boot = resolve(n_boot, "n_boot")
    from semanscope_nb.data import load_dataset
    from semanscope_nb.models.embedded import embed
    from semanscope_nb.runs.task_library import aligned_words
    from semanscope_nb.runs.tasks import run_task

    unknown = [d for d in datasets if d not in PAPER_FILES]
    if unknown:
        raise ArgumentError(f"datasets: unknown {unknown}; the paper's are {list(PAPER_FILES)}")
    bad = [v for v in versions if v not in PAPER_FILE_VERSIONS]
    if bad:
        raise ArgumentError(f"versions: unknown {bad}; known: {list(PAPER_FILE_VERSIONS)}")
    runs = []
    for version in versions:
        for key in datasets:
            path = paper_file(key, version=version, folder=folder)
            ds = load_dataset(path, languages=["en", "zh"])
            rows_read = _rows_read(ds)
            if max_concepts:
                ds = ds.subset(range(min(max_concepts, len(ds))))
                rows_read = len(ds)
            emb = embed(ds, model, languages=["en", "zh"], cache=cache, progress=progress)
            result = run_task("sa", emb, n_boot=n_boot, seed=seed)
            delta = None if result.diagnostics.dropped_concepts else tool_sems(aligned_words(emb))
            runs.append(PaperRun(key, version, path.name, rows_read, result, delta))
    return runs


def _paper_alias(result: SAResult) -> str | None:
    from semanscope_nb.models.registry import get_model_info

    try:
        return get_model_info(str(result.provenance.get("model"))).paper_name
    except UnknownNameError:  # an unregistered model id: no alias
        return None


def paper_comparison(
    runs: Sequence[PaperRun],
    *,
    model: str | None = None,
    paper: pd.DataFrame | None = None,
    within: float = REPRODUCED_WITHIN_SE,
) -> pd.DataFrame:
    """The comparison table: one row per run x distance, ours beside the paper's Table D.1 / D.2.

    Columns: ``dataset, files, distance, paper_n`` (Table D.1's bracket),
    ``rows, rows_read, tuples, counts_match`` (whether the bracket is our row
    count as the tool reads it, duplicates included, or our tuple count),
    ``paper_sa, paper_pm`` (published SA and ±), ``sa, sem`` (ours, the
    bootstrap std: the sampling error), ``tool_pm, tool_pm_between`` (the
    original tool's delta-method ± on our vectors, and its between-language
    term), ``gap`` (ours minus published), ``gap_se`` (gap in our standard
    errors) and ``reproduced`` (``|gap_se| <= within``).  ``model`` is the
    paper's alias (default: the registry's ``paper_name`` of the runs' model).
    """
    if not runs:
        raise ArgumentError("runs: nothing to compare (pass run_paper_000(...))")
    alias = model or _paper_alias(runs[0].result)
    ref = paper if paper is not None else paper_tables()
    ref = ref[ref["model"] == alias]
    if ref.empty:
        raise ArgumentError(f"model: the paper's tables have no model {alias!r} (pass model= one of the paper's aliases)")
    published = {(r.dataset, r.distance): (float(r.sa), float(r.pm)) for r in ref.itertuples()}
    counts = paper_counts()
    rows = []
    for run in runs:
        res = run.result
        for dist in DISTANCES:
            p_sa, p_pm = published.get((run.dataset, dist), (math.nan, math.nan))
            scores = getattr(res, dist)
            gap = scores.sa - p_sa
            gap_se = gap / scores.sem if scores.sem > 0 else math.nan
            d = run.delta[dist] if run.delta else None
            rows.append({
                "dataset": run.dataset, "files": run.files, "distance": dist,
                "paper_n": counts.get(run.dataset), "rows": res.n_concepts, "rows_read": run.rows_read,
                "tuples": res.n_tuples, "counts_match": counts.get(run.dataset) in (run.rows_read, res.n_tuples),
                "paper_sa": p_sa, "paper_pm": p_pm, "sa": scores.sa, "sem": scores.sem,
                "tool_pm": d.sem if d else math.nan, "tool_pm_between": d.between_language_term if d else math.nan,
                "gap": gap, "gap_se": gap_se, "reproduced": bool(abs(gap_se) <= within) if math.isfinite(gap_se) else False,
            })
    return pd.DataFrame(rows)


def comparison_sentences(table: pd.DataFrame) -> list[str]:
    """One sentence per row of :func:`paper_comparison`, as a reader would say it.

    >>> t = pd.DataFrame([{"dataset": "DS1", "files": "v0", "distance": "cosine", "sa": 0.772, "sem": 0.0055,
    ...                    "paper_sa": 0.767, "paper_pm": 0.007, "gap": 0.005, "gap_se": 0.9, "reproduced": True}])
    >>> comparison_sentences(t)[0]
    'DS1 (v0 files), cosine: ours 0.772 ± 0.0055 vs published 0.767 ± 0.007: gap +0.005 = +0.9 of our SE: reproduced'
    """
    out = []
    for r in table.itertuples():
        verdict = "reproduced" if r.reproduced else "NOT reproduced"
        out.append(f"{r.dataset} ({r.files} files), {r.distance}: ours {r.sa:.3f} ± {r.sem:.4f} vs published "
                   f"{r.paper_sa:.3f} ± {r.paper_pm:.3f}: gap {r.gap:+.3f} = {r.gap_se:+.1f} of our SE: {verdict}")
    return out


def comparison_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown (what the README shows), numbers rounded as printed.

    >>> t = pd.DataFrame([{"dataset": "DS1", "files": "v0", "distance": "cosine", "paper_n": 349, "rows_read": 349,
    ...                    "tuples": 349, "sa": 0.772, "sem": 0.0055, "tool_pm": 0.008, "paper_sa": 0.767,
    ...                    "paper_pm": 0.007, "gap": 0.005, "gap_se": 0.9, "reproduced": True}])
    >>> comparison_markdown(t).splitlines()[2]
    '| DS1 | v0 | cosine | 349 / 349 [349] | 0.772 ± 0.0055 | 0.008 | 0.767 ± 0.007 | +0.005 | +0.9 | yes |'
    """
    head = ("| dataset | files | distance | rows / tuples [paper] | ours (bootstrap SE) | tool's ± on ours | "
            "published | gap | gap in our SE | reproduced |")
    lines = [head, "|" + "---|" * 10]
    for r in table.itertuples():
        lines.append(f"| {r.dataset} | {r.files} | {r.distance} | {r.rows_read} / {r.tuples} [{r.paper_n}] | "
                     f"{r.sa:.3f} ± {r.sem:.4f} | {r.tool_pm:.3f} | {r.paper_sa:.3f} ± {r.paper_pm:.3f} | "
                     f"{r.gap:+.3f} | {r.gap_se:+.1f} | {'yes' if r.reproduced else 'no'} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- paper 002: TF-IDF on ESS


def csc_sample_overlaps(
    corpus: Any,
    model: str = "tfidf-word",
    *,
    n_sentences: int = PAPER_002_ESS_TFIDF["n_sentences"],
    n_samples: int = 20,
    seed: int = 0,
    tfidf_fits: Sequence[Literal["originals", "all"]] = ("originals", "all"),
    max_per_sentence: int = PAPER_002_ESS_TFIDF["max_per_sentence"],
    bandwidth: float | str | None = None,
    cache: Any = False,
) -> pd.DataFrame:
    """CSC overlap of ``model`` on ``n_samples`` seeded samples of ``n_sentences`` of ``corpus``, per TF-IDF fit.

    Sample ``i`` draws its sentences and its perturbations with seed
    ``seed + i``.  Returns ``sample, seed, tfidf_fit, overlap, separation``
    (one row per sample and fit; no bootstrap: the samples are the spread).

    >>> f = csc_sample_overlaps(["Do you work?", "Is the shop open?", "Can a man vote?"], n_sentences=2, n_samples=2)
    >>> f.shape, sorted(f.tfidf_fit.unique())
    ((4, 5), ['all', 'originals'])
    """
    from semanscope_nb.data.sentences import SentenceCorpus
    from semanscope_nb.metrics.csc import concept_separation

    if isinstance(corpus, (list, tuple)):
        corpus = SentenceCorpus.from_sentences(list(corpus), language="en", name="sentences")
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ArgumentError(f"n_samples must be a positive integer, got {n_samples!r}")
    rows = []
    for i in range(n_samples):
        s = seed + i
        sub = corpus.sample(n_sentences, seed=s)
        for fit in tfidf_fits:
            r = concept_separation(sub, model, max_per_sentence=max_per_sentence, seed=s, n_boot=0, tfidf_fit=fit,
                                   bandwidth=bandwidth, cache=cache, progress=False)
            rows.append({"sample": i, "seed": s, "tfidf_fit": fit, "overlap": r.overlap, "separation": r.separation})
    return pd.DataFrame(rows)


def csc_sample_summary(samples: pd.DataFrame, *, published: float = PAPER_002_ESS_TFIDF["overlap"]) -> pd.DataFrame:
    """Per TF-IDF fit: the samples' median and 2.5-97.5% range of overlaps beside the published number.

    ``within_range``: whether the published overlap lies in that range (the
    paper's sample is one of these draws, if the fit matches).

    >>> s = pd.DataFrame({"tfidf_fit": ["originals"] * 3, "overlap": [0.3, 0.4, 0.5]})
    >>> row = csc_sample_summary(s).iloc[0]
    >>> row.tfidf_fit, [round(float(row[c]), 3) for c in ("median", "low", "high")], bool(row.within_range)
    ('originals', [0.4, 0.305, 0.495], True)
    """
    out = []
    for fit, g in samples.groupby("tfidf_fit", sort=False):
        ov = g["overlap"].to_numpy(dtype=np.float64)
        lo, hi = (float(q) for q in np.quantile(ov, [0.025, 0.975]))
        med = float(np.median(ov))
        out.append({"tfidf_fit": fit, "n_samples": int(ov.size), "median": med, "low": lo, "high": hi,
                    "published": published, "gap_to_median": published - med, "within_range": bool(lo <= published <= hi)})
    return pd.DataFrame(out)
