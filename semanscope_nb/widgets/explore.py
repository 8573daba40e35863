"""ExplorePanel: pick a model, a dataset and tiers; see the alignment map and the scores change.

Also: a Cancel button that stops the work itself, the stale map and SA label
greyed (``snb-stale``) with "updating…" while a new result computes, a word
search wired to the map, the per-language-pair heatmap (*view* toggle), a
download row (PNG/SVG/PDF/HTML) using the publication settings
(:data:`PUBLICATION`, kept while the kernel runs) whose figures carry the
current selection and search labels, and the panel state -- clicked and
brushed concepts included -- saved to / restored from a small JSON file
(``save_state`` / ``load_state`` / ``from_state``, checked against
:data:`~semanscope_nb.widgets.panel_state.STATE_SCHEMA`).

The panel is thin: it gathers an :class:`ExploreState`, keeps one
:class:`~semanscope_nb.models.embedded.Embedded` per (model, dataset) and runs the
registered tasks on it through :func:`~semanscope_nb.runs.tasks.run_task` (``sa``,
``projection``, ``pair-sa``: the same function the CLI and the grid call, so the
same checks and the same provenance), then draws the map from
:func:`~semanscope_nb.plots.maps.alignment_map_spec`.  Each stage is memoised on
exactly the inputs it depends on, so a change recomputes only what it affects:

====================  =====  ===  ==========  ======================================
change                embed  SA   projection  map
====================  =====  ===  ==========  ======================================
model / dataset       yes    yes  yes         new spec (the layout from a template)
projection settings   -      -    yes         new spec
bootstrap settings    -      yes  -           new spec
tier sliders          -      -    -           the legend's rows, in place
search text           -      -    -           the search parameter, in place
lines checkbox        -      -    -           new spec
====================  =====  ===  ==========  ======================================

**Stopping work.**  In a kernel, changes are computed in one background thread,
so the notebook stays responsive: a change waits ``debounce`` seconds (five quick
clicks give one computation), a newer change or Cancel stops the running one
through a :class:`~semanscope_nb.models.cancel.CancelToken` -- between embedding
batches, between bootstrap batches, and by ending the projection's worker
process (:class:`~semanscope_nb.plots.projection.ProjectionWorker`) -- so its CPU
use stops, not only its display.  Outside a kernel (scripts, tests) a change
computes before the assignment returns (``background=False``); :meth:`wait`
waits for the background work either way.

**The map** is a :class:`~semanscope_nb.widgets.vega_view.VegaView`: the spec
goes to the browser once per new map; a tier change rewrites only the legend's
dataset, a search only its parameter; clicks and brushes come back into
:attr:`ExplorePanel.selection` and :attr:`ExplorePanel.brush`.  When several
concepts are clicked together (shift-click), their word labels are placed apart
jointly (:func:`~semanscope_nb.plots.maps.selection_label_rows`) and the points'
rows are replaced in the drawn view, in place.  A model or dataset switch draws
a new spec: the scale domains and the legend's height belong to the spec
(compiled into Vega's scales), not to its data.

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
>>> panel.tiers.great_slider.value = 0.2; panel.wait(); panel.counts["sa"]  # doctest: +SKIP
1
"""

from __future__ import annotations

import base64
import hashlib
import html
import inspect
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import ipywidgets as W
import numpy as np

from semanscope_nb.data.words import WordDataset, load_dataset
from semanscope_nb.errors import Cancelled
from semanscope_nb.memo import Memo
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    SAResult,
    TierThresholds,
)
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.cancel import CancelToken
from semanscope_nb.models.embedded import Embedded
from semanscope_nb.plots import maps, palette, sa_figures
from semanscope_nb.plots.export import chart_bytes, download_link, notebook_output
from semanscope_nb.plots.legend import sa_legend_text, verdict_sentence
from semanscope_nb.plots.projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
)
from semanscope_nb.provenance import atomic_write_text, regular_file, safe_name
from semanscope_nb.runs.tasks import prepare, run_task
from semanscope_nb.widgets.panel_state import StateError, read_state
from semanscope_nb.widgets.pickers import (
    DatasetChoice,
    DatasetPicker,
    ModelPicker,
    NumberField,
    ProjectionPicker,
    TierThresholdsPicker,
    error_html,
    as_thresholds,
)
from semanscope_nb.widgets.vega_view import HAVE_ANYWIDGET, VegaView
from semanscope_nb.widgets.warm_up import import_probed_frame_libraries, warm_up_imports

VEGALITE_MIME = "application/vnd.vegalite.v5+json"


def _prepare_sa(dataset: WordDataset, model: str, *, cache: Any = None, progress: bool | None = False,
                should_stop: Callable[[], bool] | None = None) -> Embedded:
    """The panel's embedding step: the ``sa`` task's checks, then :func:`semanscope_nb.embed` (one Embedded for every view)."""
    return prepare("sa", dataset, model, cache=cache, progress=progress, should_stop=should_stop)


SVG_MAX_POINTS = 3000
#: seconds a control change waits for the next one before computing (five quick clicks: one computation).
#: A quarter of the 1 s a cached change may take; with it the browser visit's three quick model changes and its
#: three Ctrl-clicks of languages each complete one computation (tests/test_browser.py, the long visit).
DEBOUNCE = 0.25


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
    #: the brushed box in data units, ``(("x", (x0, x1)), ("y", (y0, y1)))`` (hashable), or None
    brush: tuple | None = None

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
            "brush": {k: list(v) for k, v in self.brush} if self.brush else None,
        }


def _brush_key(brush: Any) -> tuple | None:
    """A brush ``{"x": [x0, x1], "y": [y0, y1]}`` as a hashable, ordered tuple (None when empty or malformed)."""
    if not isinstance(brush, dict):
        return None
    try:
        out = tuple((axis, (float(min(brush[axis])), float(max(brush[axis])))) for axis in ("x", "y") if axis in brush)
    except (TypeError, ValueError):
        return None
    return out if len(out) == 2 else None


class _Runner:
    """The panel's one background thread: debounced requests, the newest wins, the running one is told to stop.

    ``request()`` (from any thread) cancels the running computation's token and
    schedules a new one ``debounce`` seconds after the last request; ``cancel()``
    also drops the scheduled one; ``wait()`` blocks until nothing runs or waits.
    The thread ends when idle and starts again on the next request.
    """

    def __init__(self, work: Callable[[int, CancelToken], None], *, debounce: float) -> None:
        self._work, self.debounce = work, float(debounce)
        self._cond = threading.Condition()
        self._pending = False
        self._busy = False
        self._last = 0.0
        self.generation = 0
        self._token: CancelToken | None = None
        self._thread: threading.Thread | None = None
        self.started = 0  # computations started (one per settled burst of changes)

    def request(self) -> int:
        with self._cond:
            self.generation += 1
            self._pending, self._last = True, time.monotonic()
            if self._token is not None:
                self._token.cancel("superseded by a newer change")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="snb-explore-refresh", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return self.generation

    def cancel(self) -> None:
        with self._cond:
            self._pending = False
            if self._token is not None:
                self._token.cancel("cancelled")
            self._cond.notify_all()

    @property
    def token(self) -> CancelToken | None:
        return self._token

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending and (wait := self._last + self.debounce - time.monotonic()) > 0:
                    self._cond.wait(wait)
                if not self._pending:
                    self._thread = None
                    self._cond.notify_all()
                    return
                self._pending, self._busy = False, True
                generation, token = self.generation, CancelToken()
                self._token = token
                self.started += 1
            try:
                self._work(generation, token)
            except BaseException:  # noqa: BLE001 - the work shows its own errors; the thread must survive them
                pass
            finally:
                with self._cond:
                    self._token, self._busy = None, False
                    self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)


def _in_kernel() -> bool:
    """True inside an IPython kernel (a notebook): widget messages must keep flowing while work runs."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


_STYLE = ("<style>.snb-stale{opacity:.4;filter:grayscale(1);transition:opacity .2s}"
          ".snb-stale-note{color:#a15c00;font-style:italic}</style>")


def publication_chart(projection: Projection, result: SAResult, *, dataset: WordDataset | None = None,
                      settings: PublicationSettings | None = None, lines: bool = False,
                      selected_concepts: Sequence[str] | None = None, search: str = "") -> Any:
    """The static alignment map for export: the publication size, fonts, point size and title choice.

    The ``selected_concepts`` are highlighted and labelled in every language and
    the words matching ``search`` are labelled: the figure shows what the panel showed.

    >>> import semanscope_nb as snb
    >>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    >>> emb = snb.embed(ds, "random-null", cache=False)
    >>> p = snb.run_task("projection", emb, method="pca")
    >>> r = snb.run_task("sa", emb, n_boot=20)
    >>> spec = publication_chart(p, r, dataset=ds, settings=PublicationSettings(width=300)).to_dict()
    >>> spec["vconcat"][1]["width"]  # the SA legend is a header above the map, never over its points
    300
    """
    st = settings or PUBLICATION
    chart = maps.alignment_map(projection, result, dataset=dataset, lines=lines, width=st.width, height=st.height,
                               point_size=st.point_size, title=None if st.title else "",
                               selected_concepts=list(selected_concepts) if selected_concepts else None, search=search)
    f = st.font_size
    return (chart.configure_axis(labelFontSize=f, titleFontSize=f).configure_legend(labelFontSize=f, titleFontSize=f)
            .configure_title(fontSize=f + 2, subtitleFontSize=f).configure_text(fontSize=f))


class SAStore:
    """SA results on disk, so a restart or a new panel reads the SA of data it has seen instead of recomputing it.

    One JSON file per result (:meth:`SAResult.to_dict`), written atomically, named by a
    SHA-256 key over everything the result depends on: the dataset's languages and
    concept cells and keys (the order resamples are drawn in, :mod:`semanscope_nb.metrics.row_order`), every vector's
    bytes, ``n_boot``, ``seed`` and the source of :mod:`semanscope_nb.metrics` (a changed metric is a new key, never a
    stale result).  Each file also holds its key
    and a SHA-256 digest of its content: a damaged file (not JSON, copied over another key's, changed) is a miss,
    recomputed and rewritten; a file that cannot be read now is a miss left as it is; a read-only folder only
    loses the saving.  Default folder:
    ``sa-results/`` beside the embedding cache.

    >>> import tempfile, semanscope_nb as snb
    >>> ds = snb.load_dataset("edge-cases", languages=["en", "de"]).subset(range(12))
    >>> emb = snb.embed(ds, "random-null", cache=False)
    >>> store = SAStore(tempfile.mkdtemp())
    >>> r = snb.run_task("sa", emb, n_boot=20)
    >>> store.put(emb, r, n_boot=20, seed=0); store.get(emb, n_boot=20, seed=0).cosine.sa == r.cosine.sa
    True
    """

    _code: str | None = None

    def __init__(self, folder: str | os.PathLike | None = None) -> None:
        if folder is None:
            from semanscope_nb.models.cache import default_cache_dir

            folder = default_cache_dir() / "sa-results"
        self.folder = Path(folder)
        self.hits = self.misses = self.errors = 0
        self._held: set[str] = set()  # keys whose file could not be read now: never overwritten

    @classmethod
    def _code_fingerprint(cls) -> str:
        if cls._code is None:
            h = hashlib.sha256(b"sa-store 1")
            package = Path(__file__).resolve().parents[1]
            # the metrics, and the concept key the resamples are ordered by (data.concept_key, metrics.row_order)
            for path in [*sorted((package / "metrics").glob("*.py")), package / "data" / "concept_key.py"]:
                h.update(path.name.encode() + path.read_bytes())
            cls._code = h.hexdigest()
        return cls._code

    def key(self, emb: Embedded, *, n_boot: int, seed: int) -> str:
        """The file name (hex) of the SA of ``emb`` with this bootstrap."""
        h = hashlib.sha256(self._code_fingerprint().encode())
        ds = emb.dataset
        h.update(json.dumps([str(getattr(ds, "name", "")), list(emb.languages), int(n_boot), int(seed)]).encode())
        # the concepts' keys: the order the resamples are drawn in (another file's columns give other keys)
        h.update(json.dumps(list(getattr(ds, "concept_keys", ())), ensure_ascii=False).encode())
        for lang in emb.languages:
            h.update(json.dumps([list(cell) for cell in ds.column(lang)], ensure_ascii=False).encode())
            for word, vec in emb.vectors[lang].items():
                h.update(word.encode() + b"\0" + np.ascontiguousarray(vec).tobytes())
        return h.hexdigest()[:40]

    @staticmethod
    def _digest(key: str, body: Mapping[str, Any]) -> str:
        """SHA-256 of what a file claims: its key and its result (canonical JSON: sorted keys, floats as repr)."""
        return hashlib.sha256((key + "\0" + json.dumps(body, sort_keys=True, ensure_ascii=False)).encode()).hexdigest()

    def get(self, emb: Embedded, *, n_boot: int, seed: int) -> SAResult | None:
        """The stored result, or None (absent, unreadable now, or damaged).

        A file that was read and is not what it claims (not JSON, another key's file copied over it,
        changed after it was written, of an older layout) is damage: a miss, recomputed and rewritten.
        A file that cannot be read *now* (permission denied, a lock, an I/O error, a folder or FIFO under
        its name) is not damage: a miss whose file :meth:`put` leaves as it is.
        """
        key = self.key(emb, n_boot=n_boot, seed=seed)
        path = self.folder / f"{key}.json"
        try:
            text = regular_file(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError:  # a condition, not damage: computed, and the file is never overwritten
            self._held.add(key)
            self.errors += 1
            return None
        self._held.discard(key)
        try:
            d = json.loads(text)
            body = {k: v for k, v in d.items() if k not in ("store_key", "store_digest")}
            if d.get("store_key") != key or d.get("store_digest") != self._digest(key, body):
                raise ValueError("another result's file, changed after it was written, or an older layout")
            # the bootstrap SA values beside the result: the tier slider then recounts the flip rate as on a fresh one
            result = SAResult.from_dict(body).with_bootstrap_sa_values(body.get("bootstrap_sa_values") or {})
        except Exception:  # noqa: BLE001 - read and damaged (or older): a miss; the result is recomputed and rewritten
            self.errors += 1
            return None
        self.hits += 1
        return result

    def put(self, emb: Embedded, result: SAResult, *, n_boot: int, seed: int) -> None:
        """Store ``result`` (never raises: a read-only or full disk only loses the saving; a file that could not
        be read now is left as it is)."""
        key = self.key(emb, n_boot=n_boot, seed=seed)
        if key in self._held:
            return
        body = json.loads(json.dumps({**result.to_dict(), "bootstrap_sa_values": result.bootstrap_sa_values()},
                                     ensure_ascii=False))  # as it reads back, so the digest is of what get() sees
        try:
            atomic_write_text(self.folder / f"{key}.json",
                              json.dumps({**body, "store_key": key, "store_digest": self._digest(key, body)},
                                         ensure_ascii=False))
        except OSError:
            self.errors += 1


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
    ``selection`` / ``brush`` (start with these concepts clicked, this box brushed),
    ``background`` (compute in a background thread; None: when running in a kernel),
    ``debounce`` (seconds a change waits for the next), ``templates`` (the map's
    :class:`~semanscope_nb.plots.maps.SpecTemplates`; default: the process-wide one),
    ``sa_store`` (an :class:`SAStore`; True: the default folder; False: SA results in memory only),
    ``embedder`` (a replacement for the embedding step,
    ``(dataset, model, cache=, progress=, should_stop=) -> Embedded``; plumbing).
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
        brush: dict | None = None,
        embedder: Callable[..., Any] | None = None,
        auto: bool = True,
        background: bool | None = None,
        debounce: float = DEBOUNCE,
        templates: maps.SpecTemplates | None = None,
        sa_store: "SAStore | None | bool" = True,
    ) -> None:
        import_probed_frame_libraries()  # before any thread of this panel runs (widgets.warm_up)
        if not (cache is None or isinstance(cache, (EmbeddingCache, str, os.PathLike))):
            raise TypeError(f"cache must be an EmbeddingCache, a folder path (str or Path) or None, got {type(cache).__name__}")
        self._build_controls(model=model, dataset=dataset, folder=folder, languages=languages, offline_only=offline_only,
                             thresholds=thresholds, projection=projection, search=search, height=height)
        self._build_publish_controls()
        self._tag_widgets()
        super().__init__([W.HTML(_STYLE), self.controls_box, W.HBox([self.progress, self.cancel_button, self.status]), self.message,
                          self.sa_label, self.view_toggle, self.map_box, self.counters, self.publish_box])
        self.add_class("snb-explore")
        self.n_boot, self.seed, self.max_concepts = int(n_boot), int(seed), max_concepts
        self.width, self.height, self.worst_concepts, self.navigate = width, height, int(worst_concepts), navigate
        #: the concepts clicked on the map (or set by :meth:`select`), saved with the state
        self.selection: tuple[str, ...] = tuple(selection)
        #: the brushed box (data units) and the words inside it, saved with the state
        self.brush: tuple | None = _brush_key(brush)
        self.brushed_words: tuple[str, ...] = ()
        self._embedder = embedder or _prepare_sa
        self._cache_arg = cache
        self._cache: EmbeddingCache | None = None
        self.projection_cache = projection_cache if projection_cache is not None else default_projection_cache()
        self.templates = templates
        #: SA results kept on disk across restarts (``sa_store=False``: none)
        self.sa_store: SAStore | None = (SAStore() if sa_store is True else sa_store or None)
        self._init_state()
        self.background = _in_kernel() if background is None else bool(background)
        self._runner = _Runner(self._background_refresh, debounce=debounce)
        self._connect()
        self._show_counters()
        if auto:
            self.refresh()

    def _build_controls(self, *, model: str | None, dataset: str | None, folder: Any, languages: Sequence[str] | None,
                        offline_only: bool, thresholds: Any, projection: ProjectionSettings | None, search: str,
                        height: int) -> None:
        """The pickers, the status line and the outputs (map, pair view, table); nothing is computed."""
        self.models = ModelPicker(value=model, offline_only=offline_only)
        self.datasets = DatasetPicker(value=dataset, folder=folder, languages=languages)
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
        self.use_view = HAVE_ANYWIDGET
        # the map: a VegaView updated in place (anywidget), else JupyterLab's own Vega-Lite output
        self.chart_out = (VegaView(watch=[maps.PARAM_NAMES["pick"], maps.PARAM_NAMES["brush"]],
                                   layout=W.Layout(min_height=f"{height + 60}px"))
                          if self.use_view else W.Output(layout=W.Layout(min_height=f"{height + 60}px")))
        self.pairs_out = W.Output()
        self.table = W.HTML()
        self.worst_rows = W.VBox()
        self._worst_heading = W.HTML("<b style='font-size:90%'>worst-aligned concepts (click to select)</b>")
        self._worst_pool: list[W.HBox] = []
        self.controls_box = W.VBox([self.models, self.datasets,
                                    W.HBox([self.tiers, W.VBox([self.projection_picker, self.lines_box, self.search_box])])])
        self.table_box = W.HBox([self.table, self.worst_rows])
        self.map_box = W.VBox([self.chart_out, self.table_box])  # the navigable map is ~900 px wide: the table goes below

    def _connect(self) -> None:
        """Every control change refreshes; a click or brush on the map selects; Cancel cancels."""
        for w in (self.models, self.datasets, self.tiers, self.projection_picker, self.lines_box, self.search_box,
                  self.view_toggle):
            w.observe(lambda change: self.refresh(), names="value")
        if self.use_view:
            self.chart_out.observe(self._view_selection, names="selection")
        self.cancel_button.on_click(lambda b: self.cancel())

    def _tag_widgets(self) -> None:
        """CSS classes the style sheet, the browser tests and the notebooks find the parts by."""
        for w, cls in ((self.sa_label, "snb-sa-label"), (self.counters, "snb-counters"), (self.message, "snb-message"),
                       (self.chart_out, "snb-chart"), (self.status, "snb-status"), (self.table, "snb-table"),
                       (self.pairs_out, "snb-pairs"), (self.cancel_button, "snb-cancel"), (self.search_box, "snb-search"),
                       (self.view_toggle, "snb-view"), (self.downloads, "snb-downloads"), (self.worst_rows, "snb-worst-rows")):
            w.add_class(cls)

    def _init_state(self) -> None:
        """Empty memos, counters, the shown result and the locks of the refresh machinery."""
        self._datasets, self._vectors = Memo(8), Memo(8)
        self._results, self._projections = Memo(16), Memo(16)
        self._pairs = Memo(8)
        self.counts = {"refresh": 0, "dataset": 0, "embed": 0, "sa": 0, "projection": 0, "chart": 0, "errors": 0,
                       "redraw": 0, "update": 0, "cancelled": 0, "sa_disk": 0, "labels_placed": 0}
        self.timings: dict[str, float] = {}
        #: one line per refresh (generation, outcome, seconds): what ran, what was stopped and why
        self.history: list[dict[str, Any]] = []
        self.result: SAResult | None = None
        self.projection: Projection | None = None
        self.chart: Any = None
        self.spec: dict | None = None
        self.pairs_frame: Any = None
        self.error: str | None = None
        self.cancelled = False
        self._drawn: dict[str, Any] = {}
        #: the background import of the libraries a later change may need, started after the first map
        self.warm_up: threading.Thread | None = None
        self._computing = 0  # refreshes running (any thread)
        self._lock = threading.RLock()  # one refresh computes at a time; memo dicts are touched under it
        self._generation = 0
        self._gen_lock = threading.Lock()
        self._view_lock = threading.Lock()  # the drawn spec and its in-place patches (a redraw, a click's labels)
        self._token: CancelToken | None = None  # the running synchronous refresh's
        self._hold = False
        self._ds: WordDataset | None = None

    # -- publication controls -------------------------------------------------------
    def _build_publish_controls(self) -> None:
        st = PUBLICATION
        self.pub_width = NumberField(value=st.width, min=100, max=4000, kind=int, description="width")
        self.pub_height = NumberField(value=st.height, min=100, max=4000, kind=int, description="height")
        self.pub_font = NumberField(value=st.font_size, min=4, max=48, kind=int, description="font size")
        self.pub_point = NumberField(value=st.point_size, min=1, max=1000, kind=int, description="point size")
        self.pub_dpi = NumberField(value=st.dpi, min=36, max=1200, kind=int, description="DPI")
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
        """The current map with the publication settings (static), the selection and the search labels included."""
        if self.projection is None or self.result is None:
            raise ValueError("nothing to export yet: the panel has no map")
        return publication_chart(self.projection, self.result, dataset=self._ds, settings=PUBLICATION,
                                 lines=self.lines_box.value, selected_concepts=self.selection, search=self.search_box.value)

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
            self.downloads.value = error_html(f"export failed: {type(exc).__name__}: {exc}")
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
            selection=self.selection, view=self.view_toggle.value, brush=self.brush,
        )

    def select(self, concepts: Sequence[str]) -> None:
        """Select these concepts on the map (highlighted and labelled; kept in the saved state and the exports)."""
        self.selection = tuple(concepts)
        self.refresh()

    def save_state(self, path: str | os.PathLike) -> Path:
        """Write the panel state (model, dataset, languages, thresholds, projection, search, clicks, brush) as JSON."""
        d = self.state.to_json()
        d["brushed_words"] = list(self.brushed_words)
        return atomic_write_text(Path(path), json.dumps(d, indent=1, ensure_ascii=False))

    def load_state(self, path_or_dict: str | os.PathLike | dict) -> None:
        """Set every picker from a saved state, then redraw once (an unknown dataset or model shows a message).

        The state is checked first (:func:`~semanscope_nb.widgets.panel_state.read_state`): a bad file or
        field raises :class:`~semanscope_nb.widgets.panel_state.StateError` naming it, shows the same
        message in the panel, and leaves the panel as it was.
        """
        try:
            d = read_state(path_or_dict)
        except StateError as exc:
            self.message.value = error_html(str(exc))
            raise
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
                self.projection_picker.restore(method=pr["method"], params=pr.get("params") or {},
                                               random_state=int(pr.get("random_state", 0)))
            for key in ("n_boot", "seed"):
                if key in d:
                    setattr(self, key, int(d[key]))
            if "max_concepts" in d:
                self.max_concepts = d["max_concepts"]
            self.lines_box.value = bool(d.get("lines", False))
            self.search_box.value = str(d.get("search", ""))
            self.selection = tuple(d.get("selection") or ())
            self.brush = _brush_key(d.get("brush"))
            self.brushed_words = tuple(d.get("brushed_words") or ())
            self.view_toggle.value = d.get("view", "map") if d.get("view") in ("map", "pairs") else "map"
        finally:
            self._hold = False
        self.refresh()

    @classmethod
    def from_state(cls, path: str | os.PathLike, **options: Any) -> "ExplorePanel":
        """A panel built from a JSON state file (``options`` as in the constructor, e.g. ``cache=``).

        The file is checked first: a bad one raises :class:`~semanscope_nb.widgets.panel_state.StateError`
        naming the file and the field.
        """
        d = read_state(path)
        pr = d.get("projection") or {}
        panel = cls(model=d.get("model"), dataset=None if d.get("folder") else d.get("dataset"),
                    languages=d.get("languages"), folder=d.get("folder"), n_boot=d.get("n_boot", 200),
                    seed=d.get("seed", 0), max_concepts=d.get("max_concepts"),
                    projection=ProjectionSettings(pr["method"], pr.get("params") or {}, pr.get("random_state", 0)) if pr else None,
                    thresholds=d.get("thresholds") or DEFAULT_TIERS, search=d.get("search", ""),
                    selection=d.get("selection") or (), brush=d.get("brush"), auto=False, **options)
        panel.load_state(d)
        return panel

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            c = self._cache_arg
            self._cache = c if isinstance(c, EmbeddingCache) else EmbeddingCache(c)
        return self._cache

    # -- the browser's selections -------------------------------------------------------
    def _view_selection(self, change: Any) -> None:
        """Clicks and brushes reported by the map (any thread): kept as the panel's selection and brush."""
        try:
            sel = change["new"] or {}
            pick = sel.get(maps.PARAM_NAMES["pick"])
            if isinstance(pick, dict) or pick is None:
                concepts = [str(c) for c in ((pick or {}).get("concept") or [])]
                if tuple(concepts) != self.selection:
                    self.selection = tuple(dict.fromkeys(concepts))
                    self._drawn["selection"] = self.selection  # the browser shows it already: no redraw
                    self._place_selected_labels(self.selection)
            if maps.PARAM_NAMES["brush"] in sel:
                self.brush = _brush_key(sel[maps.PARAM_NAMES["brush"]])
                self._drawn["brush"] = self.brush
                self.brushed_words = self._words_in(self.brush)
        except Exception as exc:  # a malformed report from the browser: noted, never raised into the kernel log
            self.message.value = error_html(f"selection from the map not understood: {type(exc).__name__}: {exc}")

    def _place_selected_labels(self, selection: tuple[str, ...]) -> None:
        """The labels of the clicked concepts placed apart jointly (several shift-clicked ones), sent to the drawn
        view in place (the points' rows, no redraw); one concept: each concept's own placement again.

        Any thread: the spec is read and replaced under ``_view_lock``, so a redraw in between is never patched with
        the rows of the map it replaced.
        """
        with self._view_lock:
            spec = self.spec
        if spec is None or not self.use_view:
            return
        joint = len(selection) > 1
        if not joint and not self._drawn.get("joint_labels"):
            return  # the drawn rows hold each concept's own placement already
        rows = maps.selection_label_rows(spec, selection)
        if rows is None:
            return
        with self._view_lock:
            if self.spec is not spec:  # a newer map was drawn meanwhile: it placed its own labels
                return
            self.spec = {**spec, "datasets": {**spec["datasets"], maps.DATA_NAMES["points"]: rows}}
            self._drawn["joint_labels"] = joint
            self.chart_out.update_data(maps.DATA_NAMES["points"], rows)
            self.counts["labels_placed"] += 1

    def _words_in(self, brush: tuple | None, projection: Projection | None = None) -> tuple[str, ...]:
        """The words whose points lie in the brushed box (the map's x and y; the shown projection by default)."""
        p = projection if projection is not None else self.projection
        if brush is None or p is None or p.words is None:
            return ()
        (_, (x0, x1)), (_, (y0, y1)) = brush
        xs, ys = p.coords[:, 0], p.coords[:, 1]
        inside = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
        return tuple(f"{w} ({lang})" for w, lang, keep in zip(p.words, p.languages or [""] * len(p.words), inside) if keep)

    # -- cancelling --------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the running refresh now (its embedding, bootstrap or projection process) and drop a waiting one.

        Safe from any thread; the previous result stays shown, greyed.
        """
        self._runner.cancel()
        token = self._token
        if token is not None:
            token.cancel("cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no refresh runs or waits (True), or ``timeout`` seconds passed (False)."""
        ok = self._runner.wait(timeout)
        with self._lock:  # a synchronous refresh on another thread
            pass
        return ok

    def _check(self, generation: int, token: CancelToken | None = None) -> None:
        if token is not None and token.cancelled:
            raise Cancelled(token.reason or "cancelled")
        if generation != self._generation:
            raise Cancelled("superseded by a newer change")

    # -- stages (each memoised on what it depends on) -----------------------------
    def _dataset(self, s: ExploreState) -> WordDataset:
        key = (s.dataset.path, s.dataset.languages, s.max_concepts)
        ds = self._datasets.get(key)
        if ds is None:
            self.counts["dataset"] += 1
            ds = load_dataset(s.dataset.path, languages=s.dataset.languages)
            if s.max_concepts is not None:
                ds = ds.subset(range(min(int(s.max_concepts), len(ds))))
            self._datasets.put(key, ds)
        return ds

    def _embed(self, s: ExploreState, ds: WordDataset, token: CancelToken | None) -> Embedded:
        emb = self._vectors.get(s.embed_key)
        if emb is None:
            self._step(1, f"embedding {len(ds.all_texts())} texts with {html.escape(str(s.model))} "
                          f"(cached texts are read, not re-encoded)…")
            self.counts["embed"] += 1
            stop = {"should_stop": token} if token is not None and _takes_stop(self._embedder) else {}
            emb = self._vectors.put(s.embed_key, self._embedder(ds, s.model, cache=self.cache, progress=False, **stop))
        return emb

    def _sa(self, s: ExploreState, emb: Embedded, token: CancelToken | None) -> SAResult:
        stored = self._results.get(s.sa_key)
        if stored is None:
            self.counts["sa"] += 1
            stored = self.sa_store.get(emb, n_boot=s.n_boot, seed=s.seed) if self.sa_store is not None else None
            if stored is None:
                self._step(2, f"Semantic Affinity with {s.n_boot} bootstrap resamples…")
                stored = run_task("sa", emb, n_boot=s.n_boot, seed=s.seed, should_stop=token)
                if self.sa_store is not None:
                    self.sa_store.put(emb, stored, n_boot=s.n_boot, seed=s.seed)
            else:
                self.counts["sa_disk"] += 1
            self._results.put(s.sa_key, stored)
        return stored

    def _project(self, s: ExploreState, emb: Embedded, token: CancelToken | None) -> Projection:
        proj = self._projections.get(s.projection_key)
        if proj is None:
            self._step(3, f"{s.projection.method.upper()} projection…")
            self.counts["projection"] += 1
            p = s.projection
            proj = self._projections.put(s.projection_key, run_task(
                "projection", emb, method=p.method, random_state=p.random_state, n_components=p.n_components,
                options=dict(p.params), projection_cache=self.projection_cache, should_stop=token))
        return proj

    def _pair_frame(self, s: ExploreState, emb: Embedded, token: CancelToken | None) -> Any:
        key = (*s.sa_key, s.thresholds)
        table = self._pairs.get(key)
        if table is None:
            self._step(3, "SA per language pair…")
            table = self._pairs.put(key, run_task("pair-sa", emb, n_boot=s.n_boot, seed=s.seed, thresholds=s.thresholds,
                                               should_stop=token).table)
        return table

    # -- refresh -----------------------------------------------------------------
    def _mark_stale(self, stale: bool) -> None:
        for w in (self.chart_out, self.sa_label, self.table, self.pairs_out):
            (w.add_class if stale else w.remove_class)("snb-stale")

    def refresh(self) -> None:
        """Bring the map, the SA label and the table up to date with the pickers (never raises).

        Safe from any thread: a newer call stops a running one (its work, not only its display).
        In the background mode (a kernel) this returns at once; :meth:`wait` waits for the result.
        """
        if self._hold:
            return
        with self._gen_lock:
            self._generation += 1
            generation = self._generation
            if self._token is not None:
                self._token.cancel("superseded by a newer change")
        self._mark_stale(self.result is not None)
        if self.result is not None:
            self.status.value = "<span class='snb-stale-note'>updating…</span>"
        self.cancel_button.disabled = False
        if self.background:
            self._runner.request()
            return
        token = CancelToken()
        with self._lock:
            self._token = token
            try:
                self._refresh(generation, token)
            finally:
                self._token = None
                self.cancel_button.disabled = True

    def _background_refresh(self, generation: int, token: CancelToken) -> None:
        with self._lock:
            try:
                self._refresh(self._generation, token)  # the newest state, whatever the burst of changes was
            finally:
                if not self._runner._pending:
                    self.cancel_button.disabled = True

    def _busy(self) -> bool:
        """Whether a change waits or computes (the import warm-up pauses meanwhile: widgets.warm_up)."""
        r = self._runner
        return self._computing > 0 or r._pending or r._busy

    def _refresh(self, generation: int, token: CancelToken | None = None) -> None:
        self._computing += 1
        try:
            self._refresh_counted(generation, token)
        finally:
            self._computing -= 1

    def _refresh_counted(self, generation: int, token: CancelToken | None = None) -> None:
        self.counts["refresh"] += 1
        self.timings = {}
        self.message.value = ""
        self.error = None
        self.cancelled = False
        t_start = time.perf_counter()
        outcome = "done"
        try:
            self._compute_and_show(generation, token)
        except Cancelled as exc:
            outcome = f"stopped: {exc}"
            self._show_cancelled(exc, generation)
        except Exception as exc:  # shown in the panel, not as a traceback
            outcome = "failed"
            self._show_failure(exc)
        seconds = time.perf_counter() - t_start
        self.history.append({"generation": generation, "outcome": outcome, "seconds": seconds,
                             "started": time.time() - seconds, "at": time.time()})
        del self.history[:-50]
        try:
            self._show_counters()
        except Exception:  # the counters are a footnote: never let them raise into the kernel log
            pass

    def _compute_and_show(self, generation: int, token: CancelToken | None) -> None:
        """Dataset, embeddings, SA, projection, map (and the pair view), each stage timed; checks for a stop between them."""
        self._check(generation, token)
        s = self.state
        if s.model is None or s.dataset is None:
            raise ValueError("pick a model, a dataset and at least two languages")
        t0 = time.perf_counter()
        self._step(0, f"reading {html.escape(s.dataset.name)}…")
        ds = self._dataset(s)
        t1 = time.perf_counter()
        emb = self._embed(s, ds, token)
        self._check(generation, token)
        t2 = time.perf_counter()
        result = self._sa(s, emb, token).with_thresholds(s.thresholds)
        self._check(generation, token)
        t3 = time.perf_counter()
        proj = self._project(s, emb, token)
        self._check(generation, token)
        t4 = time.perf_counter()
        how = self._draw(s, result, proj, ds)
        self.counts["chart"] += 1
        t5 = time.perf_counter()
        pairs = self._pair_frame(s, emb, token) if s.view == "pairs" else None
        self._check(generation, token)
        t6 = time.perf_counter()
        self.timings = {"dataset": t1 - t0, "embed": t2 - t1, "sa": t3 - t2, "projection": t4 - t3, "chart": t5 - t4,
                        "pairs": t6 - t5, "total": t6 - t0}
        self.result, self.projection, self._ds = result, proj, ds
        self.pairs_frame = pairs
        self.downloads.value = ""
        self._show(result)
        self._show_view(s.view, pairs)
        self._mark_stale(False)
        self._step(4, f"done in {t6 - t0:.2f} s" + (" (map updated in place)" if how == "update" else ""))
        self.progress.bar_style = "success"
        if self.warm_up is None:  # once, after the first map: what a later change may import (widgets.warm_up)
            self.warm_up = warm_up_imports(busy=self._busy)

    def _show_cancelled(self, exc: Cancelled, generation: int) -> None:
        self.cancelled = True
        self.counts["cancelled"] += 1
        if generation == self._generation:  # a superseded refresh leaves the panel to the newer one
            shown = "the previous result (greyed) is still shown" if self.result is not None else "nothing shown yet"
            self.message.value = f"<div class='snb-cancelled'>{html.escape(str(exc))}: {shown}</div>"
            self.status.value = "<span class='snb-stale-note'>cancelled</span>"
            self.progress.bar_style = "warning"

    def _show_failure(self, exc: Exception) -> None:
        self.counts["errors"] += 1
        self.error = f"{type(exc).__name__}: {exc}"
        self.message.value = error_html(self.error)
        self.progress.bar_style = "danger"
        self.status.value = "<span style='color:#b00020'>failed</span>"

    def _step(self, k: int, text: str) -> None:
        self.progress.value = k
        self.progress.bar_style = "info"
        self.status.value = f"<span style='font-size:90%'>{text}</span>"

    # -- drawing ---------------------------------------------------------------------
    def _legend_rows(self, result: SAResult) -> list[dict]:
        detail = verdict_sentence(result)
        return [{"legend": sa_legend_text(result), **({"verdict": detail} if detail else {})}]

    def _draw(self, s: ExploreState, result: SAResult, proj: Projection, ds: WordDataset) -> str:
        """Show the map of ``s``: in place when only the tiers or the search changed ("update"), else a new spec ("redraw")."""
        base = (s.projection_key, s.sa_key, s.lines, self.width, self.height, self.worst_concepts, repr(self.navigate))
        rows = self._legend_rows(result)
        lines = rows[0]["legend"].count("\n")
        with self._view_lock:
            return self._draw_locked(s, result, proj, ds, base=base, rows=rows, lines=lines)

    def _draw_locked(self, s: ExploreState, result: SAResult, proj: Projection, ds: WordDataset, *, base: tuple,
                     rows: list[dict], lines: int) -> str:
        d = self._drawn
        if (self.spec is not None and d.get("base") == base and d.get("selection") == s.selection
                and d.get("brush") == s.brush and d.get("legend_lines") == lines and self.use_view):
            spec = dict(self.spec)
            if d.get("legend") != rows:
                spec["datasets"] = {**spec["datasets"], maps.DATA_NAMES["legend"]: rows}
                self.chart_out.update_data(maps.DATA_NAMES["legend"], rows)
            if d.get("search") != s.search:
                spec["params"] = [{**p, "value": s.search} if p.get("name") == maps.PARAM_NAMES["search"] else p
                                  for p in spec.get("params", [])]
                self.chart_out.set_signal(maps.PARAM_NAMES["search"], s.search)
            self.spec = spec
            d.update(legend=rows, search=s.search)
            self.counts["update"] += 1
            return "update"
        brush = {k: list(v) for k, v in s.brush} if s.brush else None
        spec = maps.alignment_map_spec(
            proj, result, dataset=ds, lines=s.lines, width=self.width, height=self.height, navigate=self.navigate,
            search=s.search, selected_concepts=list(s.selection) or None, brush=brush,
            worst_concepts=self.worst_concepts or None, templates=self.templates)
        self.spec, self.chart = spec, None
        self._drawn = {"base": base, "selection": s.selection, "brush": s.brush, "legend_lines": lines, "legend": rows,
                       "search": s.search, "joint_labels": len(s.selection) > 1}
        renderer = "svg" if len(proj) <= SVG_MAX_POINTS else "canvas"
        if self.use_view:
            self.chart_out.show(spec, renderer=renderer)
        else:  # JupyterLab's built-in Vega-Lite renderer, offline
            self.chart_out.outputs = (notebook_output(spec, text="<alignment map>", renderer=renderer),)
        if s.brush:
            self.brushed_words = self._words_in(s.brush, proj)
        self.counts["redraw"] += 1
        return "redraw"

    def _show_view(self, view: str, pairs: Any) -> None:
        if view == "pairs" and pairs is not None:
            spec = sa_figures.pair_heatmap(pairs).to_dict(validate=False)
            self.pairs_out.outputs = (notebook_output(spec, text="<language pairs>"),)
            self.map_box.children = [self.pairs_out, self.table_box]
        else:
            self.map_box.children = [self.chart_out, self.table_box]

    def _show(self, result: SAResult) -> None:
        c, e = result.cosine, result.euclidean
        colour = palette.TIER_COLOURS.get(result.tier, "#999")
        prov = result.provenance
        self.sa_label.value = (
            f"<div style='font-size:120%'><b>{html.escape(str(prov.get('model')))}</b> on "
            f"<b>{html.escape(str(prov.get('dataset')))}</b> ({html.escape(', '.join(result.languages))}, {result.n_concepts} concepts): "
            f"<span class='snb-sa-value'>SA cosine {c.sa:.3f} ± {c.sem:.3f}</span> · SA Euclidean {e.sa:.3f} · "
            f"tier <span class='snb-tier' style='background:{colour};color:white;padding:0 6px;border-radius:3px'>"
            f"{result.tier}</span> <span style='font-size:80%;color:#666'>(paper: {result.paper_tier})</span></div>"
            f"<div class='snb-verdict' style='font-size:90%'>{html.escape(result.verdict)}</div>"
        )
        rows = [("SA cosine", f"{c.sa:.3f} ± {c.sem:.3f}"), ("95% CI", f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]"),
                ("SA Euclidean", f"{e.sa:.3f} ± {e.sem:.3f}"), ("D_intra / D_inter (cos)", f"{c.intra:.3f} / {c.inter:.3f}"),
                ("tier (null-aware)", result.tier), ("paper tier", result.paper_tier)]
        v = result.verdict_scores  # the one accessor the legend, the verdict and the exports read
        if v is not None:
            rows += [("chance level", f"{v.sa_null.value:.3f} [{v.sa_null.ci[0]:.3f}, {v.sa_null.ci[1]:.3f}]"),
                     ("SA − chance", f"{v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}]"),
                     ("chance-corrected", f"{v.corrected.value:.3f}"), ("verdict on", result.verdict_basis)]
        rows.append(("concepts", str(result.n_concepts)))
        self.table.value = (
            "<table class='snb-scores' style='font-size:90%'>"
            + "".join(f"<tr><td>{k}</td><td><b class='snb-score'>{html.escape(v)}</b></td></tr>" for k, v in rows)
            + "</table>" + "".join(f"<div style='font-size:85%;color:#666'>note: {html.escape(n)}</div>"
                                   for n in result.diagnostics.notes)
        )
        self._show_worst(result)

    def _show_worst(self, result: SAResult) -> None:
        """The worst-aligned concepts as buttons: a click selects that concept on the map.

        The rows are made once and relabelled on later results (a new widget costs a comm and a view
        in the browser: creating eight rows on every change took 50 ms of a cached model switch).
        """
        worst = result.concepts_frame().head(8)
        pool = self._worst_pool
        while len(pool) < len(worst):
            b = W.Button(layout=W.Layout(width="240px", height="26px"))
            b.add_class("snb-worst-row")
            b.on_click(lambda button: self.select([button.description]))
            pool.append(W.HBox([b, W.HTML()]))
        for row, concept, inter in zip(pool, worst["concept"], worst["inter_cosine"]):
            b, value = row.children
            if b.description != str(concept):
                b.description, b.tooltip = str(concept), f"select '{concept}' on the map"
            text = f"<span style='font-size:90%'>{inter:.3f}</span>"
            if value.value != text:
                value.value = text
        shown = pool[:len(worst)]
        if list(self.worst_rows.children[1:]) != shown:
            self.worst_rows.children = [self._worst_heading, *shown]

    def _show_counters(self) -> None:
        st = self.projection_cache.stats()
        self.counters.value = (
            "<span style='font-size:80%;color:#777'>"
            f"embeddings computed: <span class='snb-count-embed'>{self.counts['embed']}</span> · "
            f"SA computed: <span class='snb-count-sa'>{self.counts['sa']}</span> · "
            f"projections requested: <span class='snb-count-projection'>{self.counts['projection']}</span> · "
            f"projection cache: <span class='snb-count-proj-computed'>{st['computed']}</span> computed, "
            f"{st['hits']} hits · charts drawn: <span class='snb-count-chart'>{self.counts['chart']}</span> "
            f"(new specs <span class='snb-count-redraw'>{self.counts['redraw']}</span>, in place "
            f"<span class='snb-count-update'>{self.counts['update']}</span>) · stopped: "
            f"<span class='snb-count-cancelled'>{self.counts['cancelled']}</span> · refreshes: "
            f"<span class='snb-count-refresh'>{self.counts['refresh']}</span></span>"
        )


def _takes_stop(fn: Callable[..., Any]) -> bool:
    """Whether an embedder accepts ``should_stop=`` (a plumbing replacement may not)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "should_stop" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
