"""ComparePanel: 2-4 (model, dataset, languages, projection) slots side by side, each with its SA legend and verdict.

The panel is thin: each slot gathers a :class:`SlotState`; *Compare* calls
:func:`compare_slots` (each slot keeps one :class:`~semanscope_nb.models.embedded.Embedded`
and runs the ``sa`` and ``projection`` tasks on it, memoised on the slot, plus the
``comparison`` task on the two embeddings when two slots share dataset, languages
and concepts but not the model; all through :func:`~semanscope_nb.runs.tasks.run_task`) and
draws :func:`semanscope_nb.plots.compare.compare_maps`.  Building the panel loads
no model; nothing is computed before *Compare* is pressed (or ``auto=True``).

Example
-------
>>> from semanscope_nb.widgets import ComparePanel
>>> cp = ComparePanel(slots=[{"model": "random-null", "dataset": "edge-cases"},
...                          {"model": "tfidf-char", "dataset": "edge-cases"}], auto=False)
>>> [s.model for s in cp.state]
['random-null', 'tfidf-char']
"""

from __future__ import annotations

import html
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import ipywidgets as W

from semanscope_nb.data.words import WordDataset, load_dataset
from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.models.embedded import Embedded
from semanscope_nb.plots.compare import compare_maps, difference_line
from semanscope_nb.plots.projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
)
from semanscope_nb.runs.tasks import prepare, run_task
from semanscope_nb.widgets.pickers import DatasetChoice, DatasetPicker, ModelPicker, ProjectionPicker, error_html
from semanscope_nb.widgets.warm_up import import_probed_frame_libraries

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
MAX_SLOTS = 4


@dataclass(frozen=True)
class SlotState:
    """One map of the comparison: what a slot's pickers selected."""

    model: str | None
    dataset: DatasetChoice | None
    projection: ProjectionSettings = field(default_factory=lambda: ProjectionSettings("pca"))

    @property
    def title(self) -> str:
        d = self.dataset
        langs = "–".join(d.languages) if d else "?"
        return f"{self.model} · {d.name if d else '?'} ({langs}, {self.projection.method})"


@dataclass
class SlotResult:
    """A slot's computed pieces: its embedded dataset, SA and projection."""

    state: SlotState
    embedded: Embedded
    result: SAResult
    projection: Projection

    @property
    def dataset(self) -> WordDataset:
        return self.embedded.dataset


@dataclass
class Comparison:
    """What :func:`compare_slots` returns: one :class:`SlotResult` per slot and the paired difference, if any."""

    slots: list[SlotResult]
    difference: Mapping[str, Any] | None = None
    difference_slots: tuple[int, int] | None = None

    def chart(self, **options: Any) -> Any:
        """The side-by-side maps (:func:`compare_maps`; ``options`` passed on)."""
        items = {f"{i + 1}. {s.state.title}": (s.projection, s.result, s.dataset) for i, s in enumerate(self.slots)}
        return compare_maps(items, difference=self.difference, **options)


def _slot_dataset(s: SlotState, max_concepts: int | None) -> WordDataset:
    ds = load_dataset(s.dataset.path, languages=s.dataset.languages)
    return ds.subset(range(min(int(max_concepts), len(ds)))) if max_concepts is not None else ds


def compare_slots(
    slots: Sequence[SlotState],
    *,
    n_boot: int = 200,
    seed: int = 0,
    n_perm: int = 1000,
    max_concepts: int | None = None,
    cache: EmbeddingCache | None = None,
    projection_cache: ProjectionCache | None = None,
    memo: dict | None = None,
) -> Comparison:
    """Score and project every slot; add the paired difference of the first two slots sharing dataset and languages.

    ``memo`` (a dict) keeps slot results between calls.

    >>> from semanscope_nb.widgets.pickers import DatasetPicker
    >>> d = DatasetPicker(value="edge-cases", languages=["en", "de"]).value
    >>> c = compare_slots([SlotState("random-null", d), SlotState("tfidf-char", d)], n_boot=20, n_perm=50,
    ...                   max_concepts=15)  # doctest: +SKIP
    >>> c.difference["model_a"]  # doctest: +SKIP
    'random-null'
    """
    if not 2 <= len(slots) <= MAX_SLOTS:
        raise ValueError(f"compare 2 to {MAX_SLOTS} slots, got {len(slots)}")
    memo = memo if memo is not None else {}
    out: list[SlotResult] = []
    for i, s in enumerate(slots):
        if s.model is None or s.dataset is None:
            raise ValueError(f"slot {i + 1}: pick a model, a dataset and at least two languages")
        key = (s, n_boot, seed, max_concepts)
        if key not in memo:
            emb = prepare("sa", _slot_dataset(s, max_concepts), s.model, cache=cache, progress=False)
            r = run_task("sa", emb, n_boot=n_boot, seed=seed)
            p = s.projection
            proj = run_task("projection", emb, method=p.method, random_state=p.random_state, n_components=p.n_components,
                            options=dict(p.params),
                            projection_cache=projection_cache if projection_cache is not None else default_projection_cache())
            memo[key] = SlotResult(s, emb, r, proj)
        out.append(memo[key])
    difference, which = None, None
    for i in range(len(slots)):
        for j in range(i + 1, len(slots)):
            a, b = slots[i], slots[j]
            if which is None and a.dataset == b.dataset and a.model != b.model:
                which = (i, j)
    if which is not None:
        a, b = slots[which[0]], slots[which[1]]
        key = ("diff", a.model, b.model, a.dataset, n_boot, n_perm, seed, max_concepts)
        if key not in memo:
            cmp = run_task("comparison", [out[which[0]].embedded, out[which[1]].embedded], n_boot=n_boot, n_perm=n_perm,
                           seed=seed)
            if cmp.pairs.empty:  # a model without a score (collapsed vectors): no difference to show
                row = None
            else:
                row = {**cmp.pairs.iloc[0].to_dict(), "label": cmp.score_label}
                if row["model_a"] != a.model:  # orient as slot A − slot B
                    row = {**row, "model_a": a.model, "model_b": b.model, "diff": -row["diff"],
                           "ci_low": -row["ci_high"], "ci_high": -row["ci_low"],
                           "score_a": row["score_b"], "score_b": row["score_a"], "sa_a": row["sa_b"], "sa_b": row["sa_a"]}
            memo[key] = row
        difference = memo[key]
    return Comparison(out, difference, which)


class _Slot(W.VBox):
    """One slot's pickers: model, dataset + languages, projection."""

    def __init__(self, *, model: str | None, dataset: str | None, languages: Sequence[str] | None,
                 projection: ProjectionSettings | None, offline_only: bool = True) -> None:
        self.models = ModelPicker(value=model, offline_only=offline_only)
        self.datasets = DatasetPicker(value=dataset, languages=languages)
        self.projection_picker = ProjectionPicker(value=projection or ProjectionSettings("pca"))
        super().__init__([self.models, self.datasets, self.projection_picker],
                         layout=W.Layout(border="1px solid #ddd", padding="4px", margin="2px"))
        self.add_class("snb-compare-slot")

    @property
    def value(self) -> SlotState:
        return SlotState(self.models.value, self.datasets.value, self.projection_picker.value)


class ComparePanel(W.VBox):
    """2-4 slots side by side: maps with their SA legends and verdicts, and the paired difference.

    ``slots``: a list of dicts with ``model``, ``dataset``, ``languages``,
    ``projection`` (a :class:`ProjectionSettings`); other options as in
    :class:`~semanscope_nb.widgets.ExplorePanel`.  *Add* / *Remove* change the
    number of slots (2-4); *Compare* computes.
    """

    def __init__(
        self,
        *,
        slots: Sequence[Mapping[str, Any]] = ({"model": "use-multilingual"}, {"model": "multilingual-e5-small"}),
        n_boot: int = 200,
        seed: int = 0,
        n_perm: int = 1000,
        max_concepts: int | None = None,
        cache: EmbeddingCache | str | os.PathLike | None = None,
        projection_cache: ProjectionCache | None = None,
        offline_only: bool = True,
        auto: bool = False,
    ) -> None:
        import_probed_frame_libraries()  # before any thread of this panel runs (widgets.warm_up)
        if not 2 <= len(slots) <= MAX_SLOTS:
            raise ValueError(f"ComparePanel takes 2 to {MAX_SLOTS} slots, got {len(slots)}")
        self._offline_only = offline_only
        self.slots_box = W.HBox([self._new_slot(s) for s in slots])
        self.add_button = W.Button(description="Add", icon="plus", layout=W.Layout(width="80px"))
        self.remove_button = W.Button(description="Remove", icon="minus", layout=W.Layout(width="90px"))
        self.compare_button = W.Button(description="Compare", icon="play", button_style="primary")
        self.status = W.HTML()
        self.message = W.HTML()
        self.summary = W.HTML()
        self.chart_out = W.Output()
        for w, cls in ((self.summary, "snb-compare-summary"), (self.chart_out, "snb-compare-chart"),
                       (self.message, "snb-message")):
            w.add_class(cls)
        super().__init__([W.HBox([self.compare_button, self.add_button, self.remove_button, self.status]), self.slots_box,
                          self.message, self.summary, self.chart_out])
        self.add_class("snb-compare")
        self.n_boot, self.seed, self.n_perm, self.max_concepts = int(n_boot), int(seed), int(n_perm), max_concepts
        self._cache_arg = cache
        self.projection_cache = projection_cache if projection_cache is not None else default_projection_cache()
        self._memo: dict = {}
        self._lock = threading.RLock()
        self.comparison: Comparison | None = None
        self.spec: dict | None = None
        self.error: str | None = None
        self.add_button.on_click(lambda b: self.add_slot())
        self.remove_button.on_click(lambda b: self.remove_slot())
        self.compare_button.on_click(lambda b: self.refresh())
        self._buttons()
        if auto:
            self.refresh()
        else:  # says why the panel is blank: computing every slot's model on display could take minutes
            self.status.value = ("<span class='snb-compare-waiting'>nothing computed yet: press <b>Compare</b> "
                                 "(each slot embeds its model; an uncached one can take a minute)</span>")

    def _new_slot(self, spec: Mapping[str, Any]) -> _Slot:
        return _Slot(model=spec.get("model"), dataset=spec.get("dataset", "conceptual-space"),
                     languages=spec.get("languages", ("en", "zh")), projection=spec.get("projection"),
                     offline_only=self._offline_only)

    def _buttons(self) -> None:
        n = len(self.slots_box.children)
        self.add_button.disabled, self.remove_button.disabled = n >= MAX_SLOTS, n <= 2

    def add_slot(self, **spec: Any) -> None:
        """Add a slot (up to 4); ``spec`` as one entry of ``slots``."""
        if len(self.slots_box.children) < MAX_SLOTS:
            last = self.slots_box.children[-1].value
            base = {"model": last.model, "dataset": last.dataset.name if last.dataset else None,
                    "languages": last.dataset.languages if last.dataset else None, "projection": last.projection}
            self.slots_box.children = (*self.slots_box.children, self._new_slot({**base, **spec}))
        self._buttons()

    def remove_slot(self) -> None:
        """Remove the last slot (at least 2 stay)."""
        if len(self.slots_box.children) > 2:
            self.slots_box.children = self.slots_box.children[:-1]
        self._buttons()

    @property
    def state(self) -> list[SlotState]:
        return [slot.value for slot in self.slots_box.children]

    @property
    def cache(self) -> EmbeddingCache | None:
        c = self._cache_arg
        return c if isinstance(c, EmbeddingCache) or c is None else EmbeddingCache(c)

    def refresh(self) -> None:
        """Compute and draw the comparison (never raises; errors show in the panel)."""
        with self._lock:
            self.error, self.message.value = None, ""
            self.status.value = "<i>comparing…</i>"
            self.chart_out.add_class("snb-stale")
            try:
                c = compare_slots(self.state, n_boot=self.n_boot, seed=self.seed, n_perm=self.n_perm,
                                  max_concepts=self.max_concepts, cache=self.cache, projection_cache=self.projection_cache,
                                  memo=self._memo)
                spec = c.chart().to_dict()
                self.comparison, self.spec = c, spec
                self._show(c, spec)
                self.status.value = "done"
            except Exception as exc:  # shown in the panel, not as a traceback
                self.error = f"{type(exc).__name__}: {exc}"
                self.message.value = error_html(self.error)
                self.status.value = "<span style='color:#b00020'>failed</span>"
            finally:
                self.chart_out.remove_class("snb-stale")

    def _show(self, c: Comparison, spec: dict) -> None:
        rows = []
        for i, s in enumerate(c.slots):
            r = s.result
            rows.append(f"<div class='snb-compare-verdict'><b>{i + 1}. {html.escape(s.state.title)}</b>: "
                        f"SA {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}, tier <b>{html.escape(r.tier)}</b> "
                        f"(paper: {html.escape(r.paper_tier)}) — {html.escape(r.verdict)}</div>")
        if c.difference is not None:
            a, b = c.difference_slots
            rows.append(f"<div class='snb-compare-difference'>paired difference, slot {a + 1} − slot {b + 1}: "
                        f"{html.escape(difference_line(c.difference))}</div>")
        self.summary.value = "".join(rows)
        self.chart_out.outputs = ({
            "output_type": "display_data",
            "data": {VEGALITE_MIME: spec, "text/plain": "<compare maps>"},
            "metadata": {VEGALITE_MIME: {"embed_options": {"renderer": "svg", "actions": False}}},
        },)
