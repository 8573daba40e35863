"""Small ipywidgets pickers: model, dataset (+ languages), tier thresholds, projection.

Each picker *is* an ``ipywidgets.VBox`` (display it directly, or use ``.widget``,
which returns the picker itself) with a ``value`` trait holding a small, plain
state value.  Observe it like any widget: ``picker.observe(callback, names="value")``.
No picker computes anything or loads a model: they read registry metadata and
file headers only.  No callback raises: a bad folder, an unknown language or an
invalid threshold is shown in the picker's ``message`` and the picker stays usable.

Example
-------
>>> from semanscope_nb.widgets import ModelPicker, TierThresholdsPicker
>>> mp = ModelPicker(value="use-multilingual")
>>> mp.value
'use-multilingual'
>>> tp = TierThresholdsPicker(); tp.good_slider.value = 0.7; tp.value.great >= tp.value.good
True
"""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import ipywidgets as W
import traitlets

from semanscope_nb.data.catalog import DatasetInfo, list_datasets, list_folder_datasets
from semanscope_nb.data.languages import language_code
from semanscope_nb.errors import DatasetError
from semanscope_nb.metrics.affinity import DEFAULT_TIERS, TierThresholds
from semanscope_nb.models.registry import DEFAULT_MODEL, get_model_info, list_models
from semanscope_nb.plots.projection import PROJECTION_METHODS, ProjectionSettings

_WIDE = W.Layout(width="420px")
_DESC = {"description_width": "110px"}


def _languages_text(languages: Any) -> str:
    if isinstance(languages, str):
        return languages
    langs = list(languages)
    return ", ".join(langs) if len(langs) <= 8 else ", ".join(langs[:8]) + f", ... ({len(langs)})"


class _AnyButNone(traitlets.Any):
    """``traitlets.Any`` that sends ``None`` through the ``validate`` hooks too (``Any`` lets ``None`` past them)."""

    allow_none = False


class ModelPicker(W.VBox):
    """Dropdown of registered models with family / objective / languages shown; loads no model.

    Interface (other panels rely on it):

    * ``ModelPicker(*, value=None, offline_only=True, language=None, models=None)``;
      ``value=None`` picks ``DEFAULT_MODEL`` if listed, else the first model.
      ``language`` keeps only models that support that language code;
      ``models`` (a list of ids) restricts the list further.
    * ``.value`` -- the selected model id (``str``); settable; observable
      (``picker.observe(cb, names="value")``).
    * ``.widget`` -- the picker itself (it is an ``ipywidgets.VBox``).
    * ``.dropdown`` -- the underlying ``ipywidgets.Dropdown``; ``.info`` -- the metadata ``HTML``.

    >>> ModelPicker(language="zh").value
    'use-multilingual'
    """

    value = traitlets.Unicode(allow_none=True)

    def __init__(
        self,
        *,
        value: str | None = None,
        offline_only: bool = True,
        language: str | None = None,
        models: Sequence[str] | None = None,
        description: str = "Model",
    ) -> None:
        infos = list_models(offline=True if offline_only else None, language=language)
        if models is not None:
            wanted = list(models)
            infos = [m for m in infos if m.id in wanted] or [get_model_info(m) for m in wanted]
        if value is not None and value not in [m.id for m in infos]:
            infos.append(get_model_info(value))  # raises UnknownModelError with suggestions
        self.infos = {m.id: m for m in infos}
        options = [(f"{m.display_name}  [{m.id}]" + ("" if m.available else "  (not installed)"), m.id) for m in infos]
        if value is None:
            value = DEFAULT_MODEL if DEFAULT_MODEL in self.infos else (options[0][1] if options else None)
        self.dropdown = W.Dropdown(options=options, value=value, description=description, layout=_WIDE, style=_DESC)
        self.info = W.HTML()
        super().__init__([self.dropdown, self.info])
        self.add_class("snb-model-picker")
        self.value = value
        traitlets.link((self.dropdown, "value"), (self, "value"))
        self.observe(self._show_info, names="value")
        self._show_info()

    @property
    def widget(self) -> "ModelPicker":
        return self

    @property
    def model_info(self):
        """The selected model's :class:`~semanscope_nb.ModelInfo` (metadata only)."""
        return self.infos.get(self.value) if self.value else None

    def _show_info(self, change: Any = None) -> None:
        m = self.model_info
        if m is None:
            self.info.value = "<i>no model matches the filters</i>"
            return
        avail = "" if m.available else f" &middot; <b>not installed</b> (needs {html.escape(', '.join(m.requires))})"
        self.info.value = (
            f"<div style='font-size:90%;margin-left:115px'>{html.escape(m.family)} &middot; "
            f"{html.escape(m.objective)} &middot; languages: {html.escape(_languages_text(m.languages))}"
            f"{' &middot; ' + str(m.dims) + ' dims' if m.dims else ''}{avail}</div>"
        )


@dataclass(frozen=True)
class DatasetChoice:
    """What the dataset picker selected: a dataset file and the languages to compare."""

    name: str
    path: str
    languages: tuple[str, ...]
    source: str = "bundled"  # or "folder"


class DatasetPicker(W.VBox):
    """Bundled datasets or a folder of your own Semanscope CSVs, plus a language selection.

    ``.value`` is a :class:`DatasetChoice` (or ``None`` until two languages are
    selected).  A folder that does not exist, or holds no CSV, shows a message in
    ``.message``; a malformed file is reported by whoever loads it (the panel).
    Only file headers are read here.

    >>> DatasetPicker(value="edge-cases", languages=["en", "zh"]).value.languages
    ('en', 'zh')
    """

    value = traitlets.Any(allow_none=True)

    def __init__(
        self,
        *,
        value: str | None = None,
        folder: str | os.PathLike | None = None,
        languages: Sequence[str] | None = ("en", "zh"),
        description: str = "Dataset",
    ) -> None:
        self.infos: dict[str, DatasetInfo] = {}
        self.sources: dict[str, str] = {}
        self.dropdown = W.Dropdown(description=description, layout=_WIDE, style=_DESC)
        self.folder_text = W.Text(
            value=str(folder) if folder else "", description="Your CSVs", placeholder="folder of Semanscope CSV files",
            layout=_WIDE, style=_DESC,
        )
        self.folder_button = W.Button(description="Load folder", layout=W.Layout(width="110px"))
        self.language_select = W.SelectMultiple(description="Languages", rows=4, layout=W.Layout(width="260px"), style=_DESC)
        self.message = W.HTML()
        super().__init__([self.dropdown, W.HBox([self.folder_text, self.folder_button]), self.language_select, self.message])
        self.add_class("snb-dataset-picker")
        self._wanted_languages = tuple(languages) if languages else None
        self._refresh_options(folder)
        if value is not None:
            if value not in self.infos:
                raise DatasetError(f"dataset '{value}' is neither bundled nor in the folder; available: {', '.join(self.infos)}")
            self.dropdown.value = value
        self._fill_languages()
        self.dropdown.observe(lambda c: self._fill_languages(), names="value")
        self.language_select.observe(lambda c: self._update_value(), names="value")
        self.folder_button.on_click(lambda b: self.load_folder(self.folder_text.value))
        self.folder_text.observe(lambda c: None, names="value")
        self._update_value()

    @property
    def widget(self) -> "DatasetPicker":
        return self

    def load_folder(self, folder: str | os.PathLike | None) -> None:
        """List the CSVs of ``folder`` next to the bundled datasets (a bad folder shows a message, never raises)."""
        keep = self.dropdown.value
        keep_languages = tuple(self.language_select.value)
        self._loading = True  # the options reset moves the dropdown through other datasets: no value change for those
        try:
            self._refresh_options(folder)
            if keep in self.infos:
                self.dropdown.value = keep
        except Exception as exc:  # shown in the picker, not raised into the kernel log
            self.message.value = error_html(f"folder '{folder}': {type(exc).__name__}: {exc}")
        finally:
            self._loading = False
        try:
            info = self.infos.get(self.dropdown.value)
            if info is not None and keep_languages and all(lang in info.languages for lang in keep_languages):
                self._filling = True
                try:
                    self._set_language_options(info.languages)
                    self.language_select.value = keep_languages
                finally:
                    self._filling = False
                self._update_value()
            else:
                self._fill_languages()
        except Exception as exc:
            self.message.value = error_html(f"folder '{folder}': {type(exc).__name__}: {exc}")

    def _refresh_options(self, folder: str | os.PathLike | None) -> None:
        infos = {d.name: d for d in list_datasets()}
        sources = {name: "bundled" for name in infos}
        self.message.value = ""
        if folder:  # whatever happens, the options below are rebuilt: never the previous folder's list
            root = Path(folder).expanduser()
            try:
                is_dir = root.is_dir()
                found, skipped = list_folder_datasets(root) if is_dir else ([], [])
            except Exception as exc:  # noqa: BLE001 - an unreadable folder: a message, the bundled datasets stay
                self.message.value = error_html(f"folder '{root}' cannot be listed: {type(exc).__name__}: {exc}")
                is_dir, found, skipped = None, [], []
            if is_dir is False:
                self.message.value = error_html(f"folder '{root}' does not exist")
            elif is_dir:
                if not found:
                    self.message.value = error_html(f"folder '{root}' holds no {'usable ' if skipped else ''}*.csv file")
                if skipped:
                    self.message.value += "".join(error_html(note) for note in skipped)
                for d in found:
                    key = d.name if d.name not in infos else f"{d.name} ({root.name})"
                    infos[key] = d
                    sources[key] = "folder"
        self.infos, self.sources = infos, sources
        options = [(k if sources[k] == "bundled" else f"{k}  [your folder]", k) for k in infos]
        self.dropdown.options = options
        if options and self.dropdown.value not in infos:
            self.dropdown.value = options[0][1]

    def _fill_languages(self) -> None:
        if getattr(self, "_loading", False):
            return
        info = self.infos.get(self.dropdown.value)
        langs = info.languages if info else ()
        current = tuple(self.language_select.value)
        if not current and self._wanted_languages:
            current = tuple(language_code(lang) or lang for lang in self._wanted_languages)
            unknown = [w for w, c in zip(self._wanted_languages, current) if c not in langs]
            if unknown and info is not None:
                self.message.value = error_html(
                    f"language(s) {', '.join(map(str, unknown))} not in '{self.dropdown.value}' "
                    f"(it has {', '.join(langs)}); pick the languages below"
                )
        self._filling = True  # one value change per dataset switch, not one per intermediate widget state
        try:
            self._set_language_options(langs)
            chosen = tuple(lang for lang in current if lang in langs)
            if len(chosen) < 2:
                chosen = tuple(langs[:2])
            self.language_select.value = chosen
        finally:
            self._filling = False
        self._update_value()

    def _set_language_options(self, langs: Sequence[str]) -> None:
        """New language options; the selection is cleared first, so the browser never gets an index past the
        new options (ipywidgets' SelectMultiple view logs "Cannot set properties of undefined" otherwise)."""
        if list(self.language_select.options) == list(langs):
            return
        self.language_select.value = ()
        self.language_select.options = list(langs)

    def _update_value(self) -> None:
        if getattr(self, "_filling", False):
            return
        info = self.infos.get(self.dropdown.value)
        langs = tuple(self.language_select.value)
        if info is None or len(langs) < 2:
            if info is not None:
                self.message.value = error_html("select at least two languages")
            self.value = None
            return
        if "select at least two" in self.message.value:
            self.message.value = ""
        order = [lang for lang in info.languages if lang in langs]  # file order, stable
        self.value = DatasetChoice(self.dropdown.value, info.path, tuple(order), self.sources[self.dropdown.value])



class NumberField(W.HBox):
    """A text field for one number: typed text is parsed and range-checked before it is used.

    ``.value`` is the last valid number (an ``int`` for ``kind=int``).  Typing
    something that is not a number, or is outside ``[min, max]``, shows a message
    beside the field and puts the last valid value back; nothing downstream sees
    it.  Setting ``.value`` in code is checked the same way (a ``traitlets.TraitError``
    names the field and the previous value stays).  A comma is read as a
    decimal point.

    What the field shows is what is used: a float is shown with ``fmt`` when
    that text reads back as the very value, else with the shortest text that
    does (``repr``), so typing 0.605 into a ``{:.2f}`` field shows "0.605",
    never "0.60" while 0.605 is used.

    >>> g = NumberField(value=0.6, min=0.0, max=1.0, fmt="{:.2f}"); g.text.value
    '0.60'
    >>> g.text.value = "0.605"; g.value, g.text.value
    (0.605, '0.605')
    >>> f = NumberField(value=15, min=2, max=200, kind=int, description="knn")
    >>> f.text.value = "abc"; f.value, "not a number" in f.message.value
    (15, True)
    >>> f.text.value = " 30 "; f.value, f.message.value
    (30, '')
    """

    value = traitlets.Any()

    def __init__(self, *, value: float, min: float, max: float, kind: type = float, description: str = "",
                 width: str = "180px", fmt: str | None = None, name: str | None = None) -> None:
        self.kind, self.min, self.max = kind, min, max
        self.fmt = fmt or ("{:d}" if kind is int else "{:g}")
        self.description = name or description  # what messages call the field
        self.text = W.Text(description=description, continuous_update=False, layout=W.Layout(width=width))
        self.message = W.HTML()
        super().__init__([self.text, self.message])
        self.add_class("snb-number-field")
        self.value = value
        self.text.value = self._show(self.value)
        self.text.observe(self._typed, names="value")
        self.observe(lambda change: self._write(self._show(change["new"])), names="value")

    def _show(self, v: Any) -> str:
        """``v`` as shown: ``fmt`` if that reads back as ``v`` exactly, else the shortest exact text (one rule)."""
        text = self.fmt.format(v)
        if self.kind is float and isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                exact = float(text) == float(v)
            except ValueError:
                exact = False
            if not exact:
                return repr(float(v))
        return text

    def parse(self, raw: Any) -> float | int:
        """``raw`` (text or a number) as a number of this field's kind within its range, else a ValueError saying why."""
        if isinstance(raw, str):
            text = raw.strip().replace(",", ".")
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"{self.description or 'value'}: '{raw.strip()}' is not a number") from None
        elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError(f"{self.description or 'value'}: {raw!r} is not a number")
        else:
            number = float(raw)
        if not math.isfinite(number):
            raise ValueError(f"{self.description or 'value'}: {raw!r} is not a finite number")
        if self.kind is int and number != int(number):
            raise ValueError(f"{self.description or 'value'}: {raw!r} is not a whole number")
        if not self.min <= number <= self.max:
            raise ValueError(f"{self.description or 'value'}: {self._show(self.kind(number))} is outside "
                             f"[{self._show(self.kind(self.min))}, {self._show(self.kind(self.max))}]")
        return self.kind(number)

    @traitlets.validate("value")
    def _valid(self, proposal: Any) -> Any:
        try:
            return self.parse(proposal["value"])
        except ValueError as exc:
            raise traitlets.TraitError(str(exc)) from None

    def _typed(self, change: Any) -> None:
        if getattr(self, "_writing", False):  # our own write-back of the shown text
            return
        try:
            new = self.parse(change["new"])
        except ValueError as exc:  # shown beside the field; the last valid value stays, in the field too
            self.message.value = error_html(f"{exc}; kept {self._show(self.value)}")
            self._write(self._show(self.value))
            return
        self.message.value = ""
        if new != self.value:
            self.value = new
        self._write(self._show(self.value))  # normalise what was typed (" 30 " -> "30"), or what an observer put back

    def _write(self, text: str) -> None:
        self._writing = True
        try:
            self.text.value = text
        finally:
            self._writing = False


class TierThresholdsPicker(W.VBox):
    """Two sliders (great, good) that always satisfy great >= good.

    Raising *good* above *great* drags *great* up with it, and lowering *great*
    below *good* drags *good* down.  Each slider has a text field
    (:class:`NumberField`) for typing a value: a number outside [0, 1], text that
    is no number, or a great below good shows a message under the sliders and
    the previous thresholds stay.  The fields show the thresholds in use: two
    decimals ("0.60"), or as many as the value has ("0.605"), never a rounding
    of it (:class:`NumberField`'s rule).  ``.value`` is a :class:`semanscope_nb.TierThresholds`;
    assigning anything else that is not a valid (great, good) pair raises
    ``traitlets.TraitError`` before it is stored.

    >>> t = TierThresholdsPicker(); t.great_slider.value = 0.4; (t.value.great, t.value.good)
    (0.4, 0.4)
    """

    value = _AnyButNone()

    def __init__(self, *, value: TierThresholds | dict | tuple = DEFAULT_TIERS, step: float = 0.01) -> None:
        kw = dict(min=0.0, max=1.0, step=step, readout=False, continuous_update=False, layout=W.Layout(width="300px"),
                  style=_DESC)
        value = as_thresholds(value)
        self.great_slider = W.FloatSlider(value=value.great, description="great if SA ≥", **kw)
        self.good_slider = W.FloatSlider(value=value.good, description="good if SA ≥", **kw)
        # typed values go through a checked text field (a slider's own readout clamps or drops bad input silently)
        self.great_text = NumberField(value=value.great, min=0.0, max=1.0, width="70px", fmt="{:.2f}", name="great")
        self.good_text = NumberField(value=value.good, min=0.0, max=1.0, width="70px", fmt="{:.2f}", name="good")
        self.message = W.HTML()
        super().__init__([W.HBox([self.great_slider, self.great_text]), W.HBox([self.good_slider, self.good_text]),
                          self.message])
        self.add_class("snb-tier-sliders")
        self.great_text.text.add_class("snb-great-text")
        self.good_text.text.add_class("snb-good-text")
        self.value = value
        self.great_slider.observe(self._great_moved, names="value")
        self.good_slider.observe(self._good_moved, names="value")
        self.great_text.observe(lambda c: self._typed("great", c["new"]), names="value")
        self.good_text.observe(lambda c: self._typed("good", c["new"]), names="value")

    def _typed(self, which: str, number: float) -> None:
        """A typed threshold: used if great >= good still holds, else a message and the previous value stays."""
        if getattr(self, "_syncing", False):
            return
        great = number if which == "great" else self.value.great
        good = number if which == "good" else self.value.good
        if great < good:
            show = self.great_text._show  # the fields' own rule: what is shown reads back as what is used
            self.message.value = error_html(f"great ({show(great)}) must be ≥ good ({show(good)}); the tiers still use "
                                             f"great ≥ {show(self.value.great)}, good ≥ {show(self.value.good)}")
            self._show_fields(self.value)
            return
        self.message.value = ""
        try:
            self.value = TierThresholds(great=great, good=good)
        except (ValueError, traitlets.TraitError) as exc:
            self.message.value = error_html(str(exc))
            self._show_fields(self.value)

    def _show_fields(self, v: TierThresholds) -> None:
        self._syncing = True
        try:
            self.great_text.value, self.good_text.value = v.great, v.good
        finally:
            self._syncing = False

    @property
    def widget(self) -> "TierThresholdsPicker":
        return self

    def _great_moved(self, change: Any) -> None:
        try:
            if self.great_slider.value < self.good_slider.value and not getattr(self, "_syncing", False):
                self._drag(self.good_slider, self.great_slider.value)
            self._set()
        except Exception as exc:  # shown under the sliders, not raised into the kernel log
            self.message.value = error_html(f"{type(exc).__name__}: {exc}")

    def _good_moved(self, change: Any) -> None:
        try:
            if self.good_slider.value > self.great_slider.value and not getattr(self, "_syncing", False):
                self._drag(self.great_slider, self.good_slider.value)
            self._set()
        except Exception as exc:
            self.message.value = error_html(f"{type(exc).__name__}: {exc}")

    def _drag(self, slider: W.FloatSlider, value: float) -> None:
        self._syncing = True
        try:
            slider.value = value
        finally:
            self._syncing = False

    def _set(self) -> None:
        if getattr(self, "_syncing", False):
            return
        great, good = round(self.great_slider.value, 6), round(self.good_slider.value, 6)
        try:
            new = TierThresholds(great=great, good=good)  # NaN or out of range: a ValueError naming the threshold
        except ValueError as exc:
            self.message.value = error_html(f"{exc}; the tiers still use great ≥ {self.value.great}, good ≥ {self.value.good}")
            return
        self.message.value = ""
        for field in (self.great_text, self.good_text):  # a valid pair: earlier messages about typed text are stale
            field.message.value = ""
        if (great, good) != (self.value.great, self.value.good):
            self.value = new

    @traitlets.validate("value")
    def _valid_value(self, proposal: Any) -> TierThresholds:
        """Only a valid pair is stored: a TierThresholds, ``{"great", "good"}`` or ``(great, good)`` with great >= good."""
        try:
            return as_thresholds(proposal["value"])
        except (ValueError, TypeError) as exc:
            raise traitlets.TraitError(f"TierThresholdsPicker.value: {exc}") from None

    @traitlets.observe("value")
    def _value_set(self, change: Any) -> None:  # setting .value moves the sliders and the fields
        v = change["new"]
        if (self.great_slider.value, self.good_slider.value) != (v.great, v.good):
            # one value change, not one per slider: the slider observers stand by while both move
            self._syncing = True
            try:
                if v.good > self.great_slider.value:  # order the moves so great >= good holds throughout
                    self.great_slider.value = v.great
                    self.good_slider.value = v.good
                else:
                    self.good_slider.value = v.good
                    self.great_slider.value = v.great
            finally:
                self._syncing = False
        if hasattr(self, "great_text"):
            self._show_fields(v)


def as_thresholds(value: Any) -> TierThresholds:
    """A :class:`TierThresholds` from itself, a ``{"great", "good"}`` mapping or a ``(great, good)`` pair.

    >>> as_thresholds((0.7, 0.5))
    TierThresholds(great=0.7, good=0.5)
    """
    return TierThresholds.of(value)  # the one reading of thresholds (the CLI's --param thresholds=... reads it too)


#: Also exported as widgets.TierThresholds; the dataclass of that name lives in semanscope_nb.metrics.affinity.
TierThresholdsWidget = TierThresholdsPicker


class ProjectionPicker(W.VBox):
    """Projection method and its main parameters; ``.value`` is a :class:`ProjectionSettings`.

    PHATE: knn, decay; UMAP: n_neighbors, min_dist; t-SNE: perplexity; PCA: none.

    >>> p = ProjectionPicker(); p.method.value = "umap"; p.value.method
    'umap'
    """

    value = traitlets.Any()

    def __init__(self, *, value: ProjectionSettings | None = None) -> None:
        value = value or ProjectionSettings()
        self.method = W.Dropdown(options=list(PROJECTION_METHODS), value=value.method, description="Projection",
                                 layout=W.Layout(width="260px"), style=_DESC)
        p = value.params
        self.knn = NumberField(value=p.get("knn", 15), min=2, max=200, kind=int, description="knn")
        self.decay = NumberField(value=p.get("decay", 40), min=1, max=200, kind=int, description="decay")
        self.n_neighbors = NumberField(value=p.get("n_neighbors", 15), min=2, max=200, kind=int, description="neighbours")
        self.min_dist = NumberField(value=p.get("min_dist", 0.1), min=0.0, max=1.0, description="min_dist")
        self.perplexity = NumberField(value=p.get("perplexity", 30.0), min=2.0, max=100.0, description="perplexity")
        self.params_box = W.HBox()
        self.message = W.HTML()
        super().__init__([self.method, self.params_box, self.message])
        self.add_class("snb-projection-picker")
        self._random_state = value.random_state
        self.value = value
        for w in (self.method, self.knn, self.decay, self.n_neighbors, self.min_dist, self.perplexity):
            w.observe(lambda c: self._update(), names="value")
        self._update()

    @property
    def widget(self) -> "ProjectionPicker":
        return self

    def restore(self, *, method: str, params: Mapping[str, Any], random_state: int) -> None:
        """Show a saved projection: its method, the parameters it names (others keep their fields) and its seed.

        >>> p = ProjectionPicker(); p.restore(method="umap", params={"n_neighbors": 9}, random_state=3)
        >>> p.value.method, p.value.params["n_neighbors"], p.value.random_state
        ('umap', 9, 3)
        """
        self._random_state = int(random_state)
        for name in ("knn", "decay", "n_neighbors", "min_dist", "perplexity"):
            if name in params:
                getattr(self, name).value = params[name]
        self.method.value = method
        self._update()

    def _update(self) -> None:
        try:
            self._apply()
        except Exception as exc:  # shown under the picker, not raised into the kernel log
            self.message.value = error_html(f"{type(exc).__name__}: {exc}")
        else:
            self.message.value = ""

    def _apply(self) -> None:
        m = self.method.value
        shown = {"phate": [self.knn, self.decay], "umap": [self.n_neighbors, self.min_dist],
                 "tsne": [self.perplexity], "pca": []}[m]
        self.params_box.children = shown
        params = {
            "phate": {"knn": self.knn.value, "decay": self.decay.value},
            "umap": {"n_neighbors": self.n_neighbors.value, "min_dist": float(self.min_dist.value)},
            "tsne": {"perplexity": float(self.perplexity.value)},
            "pca": {},
        }[m]
        new = ProjectionSettings(method=m, params=params, random_state=self._random_state)
        if new != self.value:
            self.value = new


def error_html(text: str) -> str:
    return f"<div class='snb-error' style='color:#b00020'>⚠ {html.escape(text)}</div>"
