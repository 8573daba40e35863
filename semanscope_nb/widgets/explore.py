"""ExplorePanel: pick a model, a dataset and tiers; see the alignment map and the scores change.

Also: a Cancel button (a flag checked between embed, SA and projection; a newer
change supersedes a running one), the stale map and SA label greyed
(``snb-stale``) with "updating…" while a new result computes, a word search
wired to the map's ``search=``, the per-language-pair heatmap (*view* toggle),
a download row (PNG/SVG/PDF/HTML) using the publication settings
(:data:`PUBLICATION`, kept while the kernel runs), and the panel state saved to /
restored from a small JSON file (``save_state`` / ``load_state`` / ``from_state``).

The panel is thin: it gathers an :class:`ExploreState`, keeps one
:class:`~semanscope_nb.models.embedded.Embedded` per (model, dataset) and runs the
registered tasks on it through :func:`~semanscope_nb.runs.tasks.run_task` (``sa``,
``projection``, ``pair-sa``: the same function the CLI and the grid call, so the
same checks and the same provenance), then draws ``alignment_map``.  Each stage is memoised on exactly the inputs it depends on,
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

import base64
import html
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import ipywidgets as W

from semanscope_nb.data.words import WordDataset, load_dataset
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    SAResult,
    TierThresholds,
)
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.embedded import Embedded
from semanscope_nb.plots import maps, palette, sa_figures
from semanscope_nb.plots.export import chart_bytes, download_link
from semanscope_nb.plots.projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
)
from semanscope_nb.provenance import atomic_write_text, safe_name
from semanscope_nb.runs.tasks import prepare, run_task
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


def _prepare_sa(dataset: WordDataset, model: str, *, cache: Any = None, progress: bool | None = False) -> Embedded:
    """The panel's embedding step: the ``sa`` task's checks, then :func:`semanscope_nb.embed` (one Embedded for every view)."""
    return prepare("sa", dataset, model, cache=cache, progress=progress)
SVG_MAX_POINTS = 3000


@dataclass
class PublicationSettings:
    """Figure settings for the download row (one module-level instance, :data:`PUBLICATION`, kept while the kernel runs).

    >>> PublicationSettings(dpi=144).scale
    2.0
    """

    width: int = 520
    height: int = 440
    font_size: int = 12
    point_size: int = 60
    dpi: int = 144
    title: bool = True

    @property
    def scale(self) -> float:
        """vl-convert's PNG scale for this DPI (vl-convert draws at 72 px per inch)."""
        return self.dpi / 72.0


#: the publication settings every panel of this kernel shares (and remembers between panels)
PUBLICATION = PublicationSettings()
_PUBLICATION_LOCK = threading.Lock()


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
    search: str = ""
    selection: tuple[str, ...] = ()
    view: str = "map"

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

    def to_json(self) -> dict:
        """A JSON-ready dict (what :meth:`ExplorePanel.save_state` writes).

        >>> ExploreState(model="random-null", dataset=None).to_json()["model"]
        'random-null'
        """
        d = self.dataset
        folder = str(Path(d.path).parent) if d is not None and d.source == "folder" else None
        return {
            "version": 1, "model": self.model, "dataset": d.name if d else None, "folder": folder,
            "languages": list(d.languages) if d else None,
            "thresholds": {"great": self.thresholds.great, "good": self.thresholds.good},
            "projection": {"method": self.projection.method, "params": dict(self.projection.params),
                           "random_state": self.projection.random_state},
            "n_boot": self.n_boot, "seed": self.seed, "max_concepts": self.max_concepts, "lines": self.lines,
            "search": self.search, "selection": list(self.selection), "view": self.view,
        }


class Cancelled(Exception):
    """A refresh stopped between steps (Cancel pressed, or a newer change superseded it)."""


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


_STYLE = ("<style>.snb-stale{opacity:.4;filter:grayscale(1);transition:opacity .2s}"
          ".snb-stale-note{color:#a15c00;font-style:italic}</style>")


def publication_chart(projection: Projection, result: SAResult, *, dataset: WordDataset | None = None,
                      settings: PublicationSettings | None = None, lines: bool = False,
                      selected_concepts: Sequence[str] | None = None) -> Any:
    """The static alignment map for export: the publication size, fonts, point size and title choice.

    >>> import semanscope_nb as snb
    >>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    >>> emb = snb.embed(ds, "random-null", cache=False)
    >>> p = snb.run_task("projection", emb, method="pca")
    >>> r = snb.run_task("sa", emb, n_boot=20)
    >>> publication_chart(p, r, dataset=ds, settings=PublicationSettings(width=300)).to_dict()["width"]
    300
    """
    st = settings or PUBLICATION
    chart = maps.alignment_map(projection, result, dataset=dataset, lines=lines, width=st.width, height=st.height,
                                 point_size=st.point_size, title=None if st.title else "",
                                 selected_concepts=list(selected_concepts) if selected_concepts else None)
    f = st.font_size
    return (chart.configure_axis(labelFontSize=f, titleFontSize=f).configure_legend(labelFontSize=f, titleFontSize=f)
            .configure_title(fontSize=f + 2, subtitleFontSize=f).configure_text(fontSize=f))


class ExplorePanel(W.VBox):
    """Model, dataset, tier and projection pickers + the navigable alignment map + the score table.

    Options: ``model`` (id), ``dataset`` (bundled name), ``languages``, ``folder``
    (your own Semanscope CSVs), ``n_boot``/``seed`` (bootstrap), ``max_concepts``
    (first N rows: a quick look), ``projection`` (a :class:`ProjectionSettings`),
    ``cache`` (an :class:`~semanscope_nb.EmbeddingCache` or a folder path, str or
    Path; default cache if None), ``projection_cache`` (default: the process-wide
    one), ``thresholds`` (a :class:`TierThresholds`, ``{"great", "good"}`` or a
    ``(great, good)`` pair), ``worst_concepts`` (bars linked to the map; 0: none),
    ``navigate`` (as in :func:`~semanscope_nb.plots.maps.alignment_map`),
    ``embedder`` (a replacement for the embedding step, ``(dataset, model, cache=, progress=) -> Embedded``; plumbing).
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
        worst_concepts: int = 10,
        navigate: bool | Sequence[str] = True,
        search: str = "",
        selection: Sequence[str] = (),
        embedder: Callable[..., tuple] | None = None,
        auto: bool = True,
    ) -> None:
        self.models = ModelPicker(value=model, offline_only=offline_only)
        self.datasets = DatasetPicker(value=dataset, folder=folder, languages=languages)
        if not (cache is None or isinstance(cache, (EmbeddingCache, str, os.PathLike))):
            raise TypeError(f"cache must be an EmbeddingCache, a folder path (str or Path) or None, got {type(cache).__name__}")
        self.tiers = TierThresholdsPicker(value=as_thresholds(thresholds))
        self.projection_picker = ProjectionPicker(value=projection)
        self.lines_box = W.Checkbox(value=False, description="join translations", indent=False)
        self.search_box = W.Text(value=str(search), description="search", placeholder="word or concept",
                                 continuous_update=False, layout=W.Layout(width="260px"))
        self.view_toggle = W.ToggleButtons(options=[("map", "map"), ("language pairs", "pairs")], value="map",
                                           style={"button_width": "130px"})
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True, layout=W.Layout(width="90px"))
        self.progress = W.IntProgress(value=0, min=0, max=4, description="", layout=W.Layout(width="200px"))
        self.status = W.HTML()
        self.message = W.HTML()
        self.sa_label = W.HTML()
        self.counters = W.HTML()
        self.chart_out = W.Output(layout=W.Layout(min_height=f"{height + 60}px"))
        self.pairs_out = W.Output()
        self.table = W.HTML()
        self._build_publish_controls()
        for w, cls in ((self.sa_label, "snb-sa-label"), (self.counters, "snb-counters"), (self.message, "snb-message"),
                       (self.chart_out, "snb-chart"), (self.status, "snb-status"), (self.table, "snb-table"),
                       (self.pairs_out, "snb-pairs"), (self.cancel_button, "snb-cancel"), (self.search_box, "snb-search"),
                       (self.view_toggle, "snb-view"), (self.downloads, "snb-downloads")):
            w.add_class(cls)
        controls = W.VBox([self.models, self.datasets,
                           W.HBox([self.tiers, W.VBox([self.projection_picker, self.lines_box, self.search_box])])])
        self.map_box = W.VBox([self.chart_out, self.table])  # the navigable map is ~900 px wide: the table goes below
        super().__init__([W.HTML(_STYLE), controls, W.HBox([self.progress, self.cancel_button, self.status]), self.message,
                          self.sa_label, self.view_toggle, self.map_box, self.counters, self.publish_box])
        self.add_class("snb-explore")
        self.n_boot, self.seed, self.max_concepts = int(n_boot), int(seed), max_concepts
        self.width, self.height = width, height
        self.worst_concepts, self.navigate = int(worst_concepts), navigate
        self.selection: tuple[str, ...] = tuple(selection)
        self._embedder = embedder or _prepare_sa
        self._cache_arg = cache
        self._cache: EmbeddingCache | None = None
        self.projection_cache = projection_cache if projection_cache is not None else default_projection_cache()
        self._datasets: _Memo = _Memo(8)
        self._vectors: _Memo = _Memo(8)
        self._results: _Memo = _Memo(16)
        self._projections: _Memo = _Memo(16)
        self._pairs: _Memo = _Memo(8)
        self.counts = {"refresh": 0, "dataset": 0, "embed": 0, "sa": 0, "projection": 0, "chart": 0, "errors": 0}
        self.timings: dict[str, float] = {}
        self.result: SAResult | None = None
        self.projection: Projection | None = None
        self.chart: Any = None
        self.spec: dict | None = None
        self.pairs_frame: Any = None
        self.error: str | None = None
        self.cancelled = False
        self._lock = threading.RLock()  # one refresh computes at a time; memo dicts are touched under it
        self._generation = 0
        self._gen_lock = threading.Lock()
        self._cancel = threading.Event()
        self._hold = False
        self._ds: WordDataset | None = None
        for w in (self.models, self.datasets, self.tiers, self.projection_picker):
            w.observe(lambda change: self.refresh(), names="value")
        for w in (self.lines_box, self.search_box, self.view_toggle):
            w.observe(lambda change: self.refresh(), names="value")
        self.cancel_button.on_click(lambda b: self.cancel())
        self._show_counters()
        if auto:
            self.refresh()

    # -- publication controls -------------------------------------------------------
    def _build_publish_controls(self) -> None:
        st = PUBLICATION
        small = W.Layout(width="170px")
        self.pub_width = W.BoundedIntText(value=st.width, min=100, max=4000, description="width", layout=small)
        self.pub_height = W.BoundedIntText(value=st.height, min=100, max=4000, description="height", layout=small)
        self.pub_font = W.BoundedIntText(value=st.font_size, min=4, max=48, description="font size", layout=small)
        self.pub_point = W.BoundedIntText(value=st.point_size, min=1, max=1000, description="point size", layout=small)
        self.pub_dpi = W.BoundedIntText(value=st.dpi, min=36, max=1200, description="DPI", layout=small)
        self.pub_title = W.Checkbox(value=st.title, description="title", indent=False, layout=W.Layout(width="80px"))
        for w in (self.pub_width, self.pub_height, self.pub_font, self.pub_point, self.pub_dpi, self.pub_title):
            w.observe(lambda change: self._publication_changed(), names="value")
        self.export_button = W.Button(description="Prepare downloads", icon="download", layout=W.Layout(width="170px"))
        self.export_button.add_class("snb-export")
        self.export_button.on_click(lambda b: self.prepare_downloads())
        self.downloads = W.HTML()
        self.publish_box = W.VBox([
            W.HTML("<b>Figure for publication</b>"),
            W.HBox([self.pub_width, self.pub_height, self.pub_font]),
            W.HBox([self.pub_point, self.pub_dpi, self.pub_title]),
            W.HBox([self.export_button, self.downloads]),
        ])

    def _publication_changed(self) -> None:
        with _PUBLICATION_LOCK:
            PUBLICATION.width, PUBLICATION.height = int(self.pub_width.value), int(self.pub_height.value)
            PUBLICATION.font_size, PUBLICATION.point_size = int(self.pub_font.value), int(self.pub_point.value)
            PUBLICATION.dpi, PUBLICATION.title = int(self.pub_dpi.value), bool(self.pub_title.value)
        self.downloads.value = ""  # the links showed the old settings

    def publication_chart(self) -> Any:
        """The current map with the publication settings (no navigation, static)."""
        if self.projection is None or self.result is None:
            raise ValueError("nothing to export yet: the panel has no map")
        return publication_chart(self.projection, self.result, dataset=self._ds, settings=PUBLICATION,
                                 lines=self.lines_box.value, selected_concepts=self.selection)

    def prepare_downloads(self, formats: Sequence[str] = ("png", "svg", "pdf", "html")) -> str:
        """Fill the download row with ``<a download>`` links for the current map (never raises; returns the HTML)."""
        try:
            chart = self.publication_chart()
            r = self.result
            name = safe_name(f"alignment-map-{r.provenance.get('model', 'model')}-{r.provenance.get('dataset', 'data')}")
            links = []
            for fmt in formats:
                if fmt == "png":
                    data = base64.b64encode(chart_bytes(chart, "png", scale=PUBLICATION.scale)).decode("ascii")
                    links.append(f'<a download="{html.escape(name)}.png" href="data:image/png;base64,{data}">PNG</a>')
                else:
                    links.append(download_link(chart, fmt, filename=name, label=fmt.upper(),  # type: ignore[arg-type]
                                               svg_fonts="embed"))  # the SVG keeps its CJK glyphs on any machine
            self.downloads.value = " · ".join(links)
        except Exception as exc:  # shown beside the button
            self.downloads.value = _error_html(f"export failed: {type(exc).__name__}: {exc}")
        return self.downloads.value

    # -- state ------------------------------------------------------------------
    @property
    def widget(self) -> "ExplorePanel":
        return self

    @property
    def state(self) -> ExploreState:
        return ExploreState(
            model=self.models.value, dataset=self.datasets.value, thresholds=self.tiers.value,
            projection=self.projection_picker.value, n_boot=self.n_boot, seed=self.seed,
            max_concepts=self.max_concepts, lines=self.lines_box.value, search=self.search_box.value,
            selection=self.selection, view=self.view_toggle.value,
        )

    def select(self, concepts: Sequence[str]) -> None:
        """Start the map with these concepts selected (kept in the saved state)."""
        self.selection = tuple(concepts)
        self.refresh()

    def save_state(self, path: str | os.PathLike) -> Path:
        """Write the panel state (model, dataset, languages, thresholds, projection, search, selection) as JSON."""
        return atomic_write_text(Path(path), json.dumps(self.state.to_json(), indent=1, ensure_ascii=False))

    def load_state(self, path_or_dict: str | os.PathLike | dict) -> None:
        """Set every picker from a saved state, then redraw once (an unknown dataset or model shows a message)."""
        d = path_or_dict if isinstance(path_or_dict, dict) else json.loads(Path(path_or_dict).read_text(encoding="utf-8"))
        self._hold = True
        try:
            if d.get("folder"):
                self.datasets.load_folder(d["folder"])
            if d.get("model"):
                self.models.value = d["model"]
            if d.get("dataset"):
                self.datasets.dropdown.value = d["dataset"]
            if d.get("languages"):
                self.datasets.language_select.value = tuple(lang for lang in d["languages"]
                                                            if lang in self.datasets.language_select.options)
            if d.get("thresholds"):
                self.tiers.value = as_thresholds(d["thresholds"])
            if d.get("projection"):
                pr = d["projection"]
                pp = self.projection_picker
                pp._random_state = int(pr.get("random_state", 0))
                params = pr.get("params") or {}
                for name in ("knn", "decay", "n_neighbors", "min_dist", "perplexity"):
                    if name in params:
                        getattr(pp, name).value = params[name]
                pp.method.value = pr["method"]
                pp._update()
            for key in ("n_boot", "seed"):
                if key in d:
                    setattr(self, key, int(d[key]))
            if "max_concepts" in d:
                self.max_concepts = d["max_concepts"]
            self.lines_box.value = bool(d.get("lines", False))
            self.search_box.value = str(d.get("search", ""))
            self.selection = tuple(d.get("selection") or ())
            self.view_toggle.value = d.get("view", "map") if d.get("view") in ("map", "pairs") else "map"
        finally:
            self._hold = False
        self.refresh()

    @classmethod
    def from_state(cls, path: str | os.PathLike, **options: Any) -> "ExplorePanel":
        """A panel built from a JSON state file (``options`` as in the constructor, e.g. ``cache=``)."""
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        pr = d.get("projection") or {}
        panel = cls(model=d.get("model"), dataset=None if d.get("folder") else d.get("dataset"),
                    languages=d.get("languages"), folder=d.get("folder"), n_boot=d.get("n_boot", 200),
                    seed=d.get("seed", 0), max_concepts=d.get("max_concepts"),
                    projection=ProjectionSettings(pr["method"], pr.get("params") or {}, pr.get("random_state", 0)) if pr else None,
                    thresholds=d.get("thresholds") or DEFAULT_TIERS, search=d.get("search", ""),
                    selection=d.get("selection") or (), auto=False, **options)
        panel.load_state(d)
        return panel

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            c = self._cache_arg
            self._cache = c if isinstance(c, EmbeddingCache) else EmbeddingCache(c)
        return self._cache

    # -- cancelling --------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the running refresh at its next step boundary (safe from any thread)."""
        self._cancel.set()

    def _check(self, generation: int) -> None:
        if self._cancel.is_set():
            raise Cancelled("cancelled")
        if generation != self._generation:
            raise Cancelled("superseded by a newer change")

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

    def _embed(self, s: ExploreState, ds: WordDataset) -> Embedded:
        if s.embed_key not in self._vectors:
            self._step(1, f"embedding {len(ds.all_texts())} texts with {html.escape(str(s.model))} "
                          f"(cached texts are read, not re-encoded)…")
            self.counts["embed"] += 1
            self._vectors.remember(s.embed_key, self._embedder(ds, s.model, cache=self.cache, progress=False))
        return self._vectors[s.embed_key]

    def _sa(self, s: ExploreState, emb: Embedded) -> SAResult:
        if s.sa_key not in self._results:
            self._step(2, f"Semantic Affinity with {s.n_boot} bootstrap resamples…")
            self.counts["sa"] += 1
            self._results.remember(s.sa_key, run_task("sa", emb, n_boot=s.n_boot, seed=s.seed))
        return self._results[s.sa_key]

    def _project(self, s: ExploreState, emb: Embedded) -> Projection:
        if s.projection_key not in self._projections:
            self._step(3, f"{s.projection.method.upper()} projection…")
            self.counts["projection"] += 1
            p = s.projection
            self._projections.remember(s.projection_key, run_task(
                "projection", emb, method=p.method, random_state=p.random_state, n_components=p.n_components,
                options=dict(p.params), projection_cache=self.projection_cache))
        return self._projections[s.projection_key]

    def _pair_frame(self, s: ExploreState, emb: Embedded) -> Any:
        key = (*s.sa_key, s.thresholds)
        if key not in self._pairs:
            self._step(3, "SA per language pair…")
            self._pairs.remember(key, run_task("pair-sa", emb, n_boot=s.n_boot, seed=s.seed, thresholds=s.thresholds).table)
        return self._pairs[key]

    # -- refresh -----------------------------------------------------------------
    def _mark_stale(self, stale: bool) -> None:
        for w in (self.chart_out, self.sa_label, self.table, self.pairs_out):
            (w.add_class if stale else w.remove_class)("snb-stale")

    def refresh(self) -> None:
        """Bring the map, the SA label and the table up to date with the pickers (never raises).

        Safe from any thread: a newer call supersedes a running one at its next step.
        """
        if self._hold:
            return
        with self._gen_lock:
            self._generation += 1
            generation = self._generation
        self._mark_stale(self.result is not None)
        if self.result is not None:
            self.status.value = "<span class='snb-stale-note'>updating…</span>"
        with self._lock:
            self._cancel.clear()
            self.cancel_button.disabled = False
            try:
                self._refresh(generation)
            finally:
                self.cancel_button.disabled = True

    def _refresh(self, generation: int) -> None:
        self.counts["refresh"] += 1
        self.timings = {}
        self.message.value = ""
        self.error = None
        self.cancelled = False
        try:
            self._check(generation)
            s = self.state
            if s.model is None or s.dataset is None:
                raise ValueError("pick a model, a dataset and at least two languages")
            t0 = time.perf_counter()
            self._step(0, f"reading {html.escape(s.dataset.name)}…")
            ds = self._dataset(s)
            t1 = time.perf_counter()
            emb = self._embed(s, ds)
            self._check(generation)
            t2 = time.perf_counter()
            result = self._sa(s, emb).with_thresholds(s.thresholds)
            self._check(generation)
            t3 = time.perf_counter()
            proj = self._project(s, emb)
            self._check(generation)
            t4 = time.perf_counter()
            chart = maps.alignment_map(proj, result, dataset=ds, lines=s.lines, width=self.width, height=self.height,
                                         navigate=self.navigate, search=s.search,
                                         selected_concepts=list(s.selection) or None,
                                         worst_concepts=self.worst_concepts or None)
            spec = chart.to_dict()
            self.counts["chart"] += 1
            t5 = time.perf_counter()
            pairs = self._pair_frame(s, emb) if s.view == "pairs" else None
            self._check(generation)
            t6 = time.perf_counter()
            self.timings = {"dataset": t1 - t0, "embed": t2 - t1, "sa": t3 - t2, "projection": t4 - t3, "chart": t5 - t4,
                            "pairs": t6 - t5, "total": t6 - t0}
            self.result, self.projection, self.chart, self.spec, self._ds = result, proj, chart, spec, ds
            self.pairs_frame = pairs
            self.downloads.value = ""
            self._show(result, spec)
            self._show_view(s.view, pairs)
            self._mark_stale(False)
            self._step(4, f"done in {t6 - t0:.2f} s")
            self.progress.bar_style = "success"
        except Cancelled as exc:
            self.cancelled = True
            if generation == self._generation:  # a superseded refresh leaves the panel to the newer one
                shown = "the previous result (greyed) is still shown" if self.result is not None else "nothing shown yet"
                self.message.value = f"<div class='snb-cancelled'>{html.escape(str(exc))}: {shown}</div>"
                self.status.value = "<span class='snb-stale-note'>cancelled</span>"
                self.progress.bar_style = "warning"
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

    def _show_view(self, view: str, pairs: Any) -> None:
        if view == "pairs" and pairs is not None:
            spec = sa_figures.pair_heatmap(pairs).to_dict()
            self.pairs_out.outputs = ({
                "output_type": "display_data",
                "data": {VEGALITE_MIME: spec, "text/plain": "<language pairs>"},
                "metadata": {VEGALITE_MIME: {"embed_options": {"renderer": "svg", "actions": False}}},
            },)
            self.map_box.children = [self.pairs_out, self.table]
        else:
            self.map_box.children = [self.chart_out, self.table]


    def _show(self, result: SAResult, spec: dict) -> None:
        c, e = result.cosine, result.euclidean
        colour = palette.TIER_COLOURS.get(result.tier, "#999")
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
