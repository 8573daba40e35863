"""ExplorePanel: pick a model, a dataset and tiers; see the alignment map and the scores change.

The panel is thin: it gathers an :class:`ExploreState` and calls the pure
functions (``embed_dataset`` -> ``affinity_of_words`` -> ``project_dataset`` ->
``alignment_map``).  Each stage is memoised on exactly the inputs it depends on,
so a change recomputes only what it affects:

====================  =====  ===  ==========  =====
change                embed  SA   projection  chart
====================  =====  ===  ==========  =====
model / dataset       yes    yes  yes         yes
projection settings   -      -    yes         yes
bootstrap settings    -      yes  -           yes
tier sliders          -      -    -           yes (``SAResult.with_thresholds``)
lines checkbox        -      -    -           yes
====================  =====  ===  ==========  =====

``panel.counts`` counts the stage runs (tests use it), ``panel.timings`` times the
last refresh.  Errors (a malformed CSV, a model that is not installed, a cache
folder that is a file) appear in the panel's message area, never as a traceback;
the pickers show their own (a sub-folder named ``x.csv``, an unknown language,
an invalid threshold), and the next valid change redraws the panel.

Example
-------
>>> from semanscope_nb.widgets import ExplorePanel
>>> panel = ExplorePanel(model="random-null", dataset="edge-cases", max_concepts=20, n_boot=50,
...                      projection=None)  # doctest: +SKIP
>>> panel.tiers.great_slider.value = 0.2; panel.counts["sa"]  # doctest: +SKIP
1
"""

from __future__ import annotations

import html
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import ipywidgets as W

from semanscope_nb.data.words import WordDataset, load_dataset
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    SAResult,
    TierThresholds,
    affinity_of_words,
)
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.plots import charts
from semanscope_nb.plots.projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
    project_dataset,
)
from semanscope_nb.provenance import package_info, utc_now
from semanscope_nb.runs.evaluate import aligned_words, embed_dataset
from semanscope_nb.widgets.pickers import (
    DatasetChoice,
    DatasetPicker,
    ModelPicker,
    ProjectionPicker,
    TierThresholdsPicker,
    _error_html,
    as_thresholds,
)

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
SVG_MAX_POINTS = 3000


@dataclass(frozen=True)
class ExploreState:
    """Everything the panel shows is a function of this."""

    model: str | None
    dataset: DatasetChoice | None
    thresholds: TierThresholds = DEFAULT_TIERS
    projection: ProjectionSettings = field(default_factory=ProjectionSettings)
    n_boot: int = 200
    seed: int = 0
    max_concepts: int | None = None
    lines: bool = False

    @property
    def embed_key(self) -> tuple:
        d = self.dataset
        return (self.model, d.path if d else None, d.languages if d else None, self.max_concepts)

    @property
    def sa_key(self) -> tuple:
        return (*self.embed_key, self.n_boot, self.seed)

    @property
    def projection_key(self) -> tuple:
        return (*self.embed_key, self.projection)


class _Memo(OrderedDict):
    """A small LRU dict."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def remember(self, key: Any, value: Any) -> Any:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class ExplorePanel(W.VBox):
    """Model, dataset, tier and projection pickers + the alignment map + the score table.

    Options: ``model`` (id), ``dataset`` (bundled name), ``languages``, ``folder``
    (your own Semanscope CSVs), ``n_boot``/``seed`` (bootstrap), ``max_concepts``
    (first N rows: a quick look), ``projection`` (a :class:`ProjectionSettings`),
    ``cache`` (an :class:`~semanscope_nb.EmbeddingCache` or a folder path, str or
    Path; default cache if None), ``projection_cache`` (default: the process-wide
    one), ``thresholds`` (a :class:`TierThresholds`, ``{"great", "good"}`` or a
    ``(great, good)`` pair).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        dataset: str | None = "conceptual-space",
        languages: Sequence[str] | None = ("en", "zh"),
        folder: str | os.PathLike | None = None,
        n_boot: int = 200,
        seed: int = 0,
        max_concepts: int | None = None,
        projection: ProjectionSettings | None = None,
        thresholds: TierThresholds | dict | tuple = DEFAULT_TIERS,
        cache: EmbeddingCache | str | os.PathLike | None = None,
        projection_cache: ProjectionCache | None = None,
        offline_only: bool = True,
        width: int = 560,
        height: int = 440,
        auto: bool = True,
    ) -> None:
        self.models = ModelPicker(value=model, offline_only=offline_only)
        self.datasets = DatasetPicker(value=dataset, folder=folder, languages=languages)
        if not (cache is None or isinstance(cache, (EmbeddingCache, str, os.PathLike))):
            raise TypeError(f"cache must be an EmbeddingCache, a folder path (str or Path) or None, got {type(cache).__name__}")
        self.tiers = TierThresholdsPicker(value=as_thresholds(thresholds))
        self.projection_picker = ProjectionPicker(value=projection)
        self.lines_box = W.Checkbox(value=False, description="join translations", indent=False)
        self.progress = W.IntProgress(value=0, min=0, max=4, description="", layout=W.Layout(width="200px"))
        self.status = W.HTML()
        self.message = W.HTML()
        self.sa_label = W.HTML()
        self.counters = W.HTML()
        self.chart_out = W.Output(layout=W.Layout(min_height=f"{height + 60}px"))
        self.table = W.HTML()
        for w, cls in ((self.sa_label, "snb-sa-label"), (self.counters, "snb-counters"), (self.message, "snb-message"),
                       (self.chart_out, "snb-chart"), (self.status, "snb-status"), (self.table, "snb-table")):
            w.add_class(cls)
        controls = W.VBox([self.models, self.datasets, W.HBox([self.tiers, W.VBox([self.projection_picker, self.lines_box])])])
        super().__init__([controls, W.HBox([self.progress, self.status]), self.message, self.sa_label,
                          W.HBox([self.chart_out, self.table]), self.counters])
        self.add_class("snb-explore")
        self.n_boot, self.seed, self.max_concepts = int(n_boot), int(seed), max_concepts
        self.width, self.height = width, height
        self._cache_arg = cache
        self._cache: EmbeddingCache | None = None
        self.projection_cache = projection_cache if projection_cache is not None else default_projection_cache()
        self._datasets: _Memo = _Memo(8)
        self._vectors: _Memo = _Memo(8)
        self._results: _Memo = _Memo(16)
        self._projections: _Memo = _Memo(16)
        self.counts = {"refresh": 0, "dataset": 0, "embed": 0, "sa": 0, "projection": 0, "chart": 0, "errors": 0}
        self.timings: dict[str, float] = {}
        self.result: SAResult | None = None
        self.projection: Projection | None = None
        self.chart: Any = None
        self.spec: dict | None = None
        self.error: str | None = None
        for w in (self.models, self.datasets, self.tiers, self.projection_picker):
            w.observe(lambda change: self.refresh(), names="value")
        self.lines_box.observe(lambda change: self.refresh(), names="value")
        self._show_counters()
        if auto:
            self.refresh()

    # -- state ------------------------------------------------------------------
    @property
    def widget(self) -> "ExplorePanel":
        return self

    @property
    def state(self) -> ExploreState:
        return ExploreState(
            model=self.models.value, dataset=self.datasets.value, thresholds=self.tiers.value,
            projection=self.projection_picker.value, n_boot=self.n_boot, seed=self.seed,
            max_concepts=self.max_concepts, lines=self.lines_box.value,
        )

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            c = self._cache_arg
            self._cache = c if isinstance(c, EmbeddingCache) else EmbeddingCache(c)
        return self._cache

    # -- stages (each memoised on what it depends on) -----------------------------
    def _dataset(self, s: ExploreState) -> WordDataset:
        key = (s.dataset.path, s.dataset.languages, s.max_concepts)
        if key not in self._datasets:
            self.counts["dataset"] += 1
            ds = load_dataset(s.dataset.path, languages=s.dataset.languages)
            if s.max_concepts is not None:
                ds = ds.subset(range(min(int(s.max_concepts), len(ds))))
            self._datasets.remember(key, ds)
        return self._datasets[key]

    def _embed(self, s: ExploreState, ds: WordDataset) -> tuple[dict, Any, dict]:
        if s.embed_key not in self._vectors:
            self._step(1, f"embedding {len(ds.all_texts())} texts with {html.escape(str(s.model))} "
                          f"(cached texts are read, not re-encoded)…")
            self.counts["embed"] += 1
            self._vectors.remember(s.embed_key, embed_dataset(ds, s.model, cache=self.cache, progress=False))
        return self._vectors[s.embed_key]

    def _sa(self, s: ExploreState, ds: WordDataset, vectors: dict, encoder: Any, stats: dict) -> SAResult:
        if s.sa_key not in self._results:
            self._step(2, f"Semantic Affinity with {s.n_boot} bootstrap resamples…")
            self.counts["sa"] += 1
            r = affinity_of_words(aligned_words(ds, vectors), n_boot=s.n_boot, seed=s.seed, on_zero="drop")
            r = r.with_provenance(model=encoder.model_id, model_version=encoder.version, dataset=ds.name,
                                  dataset_sha256=ds.sha256, languages=list(ds.languages), embedding=stats,
                                  packages=package_info(), created=utc_now())
            self._results.remember(s.sa_key, r)
        return self._results[s.sa_key]

    def _project(self, s: ExploreState, ds: WordDataset, vectors: dict) -> Projection:
        if s.projection_key not in self._projections:
            self._step(3, f"{s.projection.method.upper()} projection…")
            self.counts["projection"] += 1
            self._projections.remember(s.projection_key,
                                       project_dataset(ds, vectors, settings=s.projection, cache=self.projection_cache))
        return self._projections[s.projection_key]

    # -- refresh -----------------------------------------------------------------
    def refresh(self) -> None:
        """Bring the map, the SA label and the table up to date with the pickers (never raises)."""
        self.counts["refresh"] += 1
        self.timings = {}
        self.message.value = ""
        self.error = None
        try:
            s = self.state
            if s.model is None or s.dataset is None:
                raise ValueError("pick a model, a dataset and at least two languages")
            t0 = time.perf_counter()
            self._step(0, f"reading {html.escape(s.dataset.name)}…")
            ds = self._dataset(s)
            t1 = time.perf_counter()
            vectors, encoder, stats = self._embed(s, ds)
            t2 = time.perf_counter()
            result = self._sa(s, ds, vectors, encoder, stats).with_thresholds(s.thresholds)
            t3 = time.perf_counter()
            proj = self._project(s, ds, vectors)
            t4 = time.perf_counter()
            chart = charts.alignment_map(proj, result, dataset=ds, lines=s.lines, width=self.width, height=self.height)
            spec = chart.to_dict()
            self.counts["chart"] += 1
            t5 = time.perf_counter()
            self.timings = {"dataset": t1 - t0, "embed": t2 - t1, "sa": t3 - t2, "projection": t4 - t3, "chart": t5 - t4,
                            "total": t5 - t0}
            self.result, self.projection, self.chart, self.spec, self._ds = result, proj, chart, spec, ds
            self._show(result, spec)
            self._step(4, f"done in {t5 - t0:.2f} s")
            self.progress.bar_style = "success"
        except Exception as exc:  # shown in the panel, not as a traceback
            self.counts["errors"] += 1
            self.error = f"{type(exc).__name__}: {exc}"
            self.message.value = _error_html(self.error)
            self.progress.bar_style = "danger"
            self.status.value = "<span style='color:#b00020'>failed</span>"
        try:
            self._show_counters()
        except Exception:  # the counters are a footnote: never let them raise into the kernel log
            pass

    def _step(self, k: int, text: str) -> None:
        self.progress.value = k
        self.progress.bar_style = "info"
        self.status.value = f"<span style='font-size:90%'>{text}</span>"

    def _show(self, result: SAResult, spec: dict) -> None:
        c, e = result.cosine, result.euclidean
        colour = charts.TIER_COLOURS.get(result.tier, "#999")
        prov = result.provenance
        self.sa_label.value = (
            f"<div style='font-size:120%'><b>{html.escape(str(prov.get('model')))}</b> on "
            f"<b>{html.escape(str(prov.get('dataset')))}</b> ({', '.join(result.languages)}, {result.n_concepts} concepts): "
            f"<span class='snb-sa-value'>SA cosine {c.sa:.3f} ± {c.sem:.3f}</span> · SA Euclidean {e.sa:.3f} · "
            f"tier <span class='snb-tier' style='background:{colour};color:white;padding:0 6px;border-radius:3px'>"
            f"{result.tier}</span> <span style='font-size:80%;color:#666'>(paper: {result.paper_tier})</span></div>"
            f"<div class='snb-verdict' style='font-size:90%'>{html.escape(result.verdict)}</div>"
        )
        rows = [("SA cosine", f"{c.sa:.3f} ± {c.sem:.3f}"), ("95% CI", f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]"),
                ("SA Euclidean", f"{e.sa:.3f} ± {e.sem:.3f}"), ("D_intra / D_inter (cos)", f"{c.intra:.3f} / {c.inter:.3f}"),
                ("tier (null-aware)", result.tier), ("paper tier", result.paper_tier)]
        v = result.verdict_scores
        if v is not None:
            rows += [("chance level", f"{v.sa_null.value:.3f} [{v.sa_null.ci[0]:.3f}, {v.sa_null.ci[1]:.3f}]"),
                     ("SA − chance", f"{v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}]"),
                     ("chance-corrected", f"{v.corrected.value:.3f}")]
        rows.append(("concepts", str(result.n_concepts)))
        worst = result.concepts_frame().head(8)
        self.table.value = (
            "<table style='font-size:90%'>" + "".join(f"<tr><td>{k}</td><td><b>{html.escape(v)}</b></td></tr>" for k, v in rows)
            + "</table><div style='margin-top:8px;font-size:90%'><b>worst-aligned concepts</b>"
            + worst[["concept", "inter_cosine"]].to_html(index=False, float_format=lambda v: f"{v:.3f}", border=0)
            + "</div>" + "".join(f"<div style='font-size:85%;color:#666'>note: {html.escape(n)}</div>" for n in result.diagnostics.notes)
        )
        # The raw Vega-Lite 5 MIME bundle, set as the Output widget's content (works in and out of a kernel):
        # JupyterLab 4 renders it natively, offline, whatever alt.renderers says.  SVG for maps a browser
        # draws comfortably (marks stay inspectable), canvas for big ones.
        renderer = "svg" if len(self.projection or ()) <= SVG_MAX_POINTS else "canvas"
        self.chart_out.outputs = ({
            "output_type": "display_data",
            "data": {VEGALITE_MIME: spec, "text/plain": "<alignment map>"},
            "metadata": {VEGALITE_MIME: {"embed_options": {"renderer": renderer, "actions": False}}},
        },)

    def _show_counters(self) -> None:
        st = self.projection_cache.stats()
        self.counters.value = (
            "<span style='font-size:80%;color:#777'>"
            f"embeddings computed: <span class='snb-count-embed'>{self.counts['embed']}</span> · "
            f"SA computed: <span class='snb-count-sa'>{self.counts['sa']}</span> · "
            f"projections requested: <span class='snb-count-projection'>{self.counts['projection']}</span> · "
            f"projection cache: <span class='snb-count-proj-computed'>{st['computed']}</span> computed, "
            f"{st['hits']} hits · charts drawn: <span class='snb-count-chart'>{self.counts['chart']}</span></span>"
        )
