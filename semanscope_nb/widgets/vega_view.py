"""VegaView: one Vega-Lite chart that stays in the browser, updated in place and reporting clicks back to Python.

Why a widget of its own.  JupyterLab 4 draws Vega-Lite outputs natively, but an
output is a picture: Python cannot reach the view inside it.  Every change
meant sending the whole spec (every point) again and the browser drawing the
map from scratch, and what the user clicked or brushed stayed in the browser.
This widget keeps one Vega view alive:

* ``spec`` (a Vega-Lite dict) is drawn once; a new spec redraws;
* :meth:`update_data` replaces one named dataset in place (a tier change
  rewrites the legend, not the map) and :meth:`set_signal` sets one parameter
  (the search text) -- no redraw;
* the signals named in ``watch`` (a click selection, a brush) come back into
  :attr:`selection` as the user acts, so a panel can save them;
* :attr:`timings` holds what the browser measured (milliseconds from receiving
  a change to the view having run), :attr:`rendered` counts finished draws and
  updates, :attr:`error` says why a draw failed.

Why anywidget: it is the maintained way to ship a small JavaScript module with a
widget (Altair's own ``JupyterChart`` uses it); its JupyterLab 4 extension is in
the wheel, so nothing is fetched at view time.  Why vl-convert's bundle: the
JavaScript (Vega, Vega-Lite, vega-embed, the glue below) comes from
``vl_convert.javascript_bundle``, already a dependency of the exports, built
once and cached on disk (:func:`vega_bundle`) -- no CDN, so it works offline,
and its Vega-Lite is the version Altair writes specs for (no "spec uses
Vega-Lite v5.20, current v5.6" warning from an older renderer).

Layer: widgets.

Example
-------
>>> v = VegaView(spec={"mark": "point"}, watch=["snb_pick"])  # doctest: +SKIP
>>> v.update_data("snb_legend", [{"legend": "SA cosine 0.7"}]); v.data_patch  # doctest: +SKIP
{'snb_legend': [{'legend': 'SA cosine 0.7'}]}
>>> vega_bundle_path().suffix
'.js'
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any, Sequence

import traitlets

from semanscope_nb.provenance import kept_text

#: the Vega-Lite version of the bundle (Altair 5.5 writes v5.20 specs)
BUNDLE_VL_VERSION = "6.4"

#: the glue between the widget model and one vega-embed view; it follows vl-convert's default bundle, which puts
#: ``vegaEmbed``, ``vega`` and ``vegaLite`` on ``window`` (a custom snippet only gets ``vegaEmbed`` resolved)
_GLUE = r"""
const vegaEmbed = window.vegaEmbed;
function plain(v) {
  try { return JSON.parse(JSON.stringify(v === undefined ? null : v)); } catch (e) { return null; }
}
function render({ model, el }) {
  let view = null;
  let token = 0;
  const listeners = [];
  function note(key, ms) {
    const t = Object.assign({}, model.get("timings") || {});
    t[key] = ms; t.at = Date.now();
    model.set("timings", t);
    model.set("rendered", (model.get("rendered") || 0) + 1);
    el.dataset.rendered = String(model.get("rendered"));
    el.dataset[key.replace(/_(\w)/g, (m, c) => c.toUpperCase())] = String(Math.round(ms));
    model.save_changes();
  }
  function fail(e) {
    model.set("error", String(e && e.message ? e.message : e));
    model.save_changes();
  }
  async function patch(timed) {
    if (!view) return;
    const t0 = performance.now();
    const data = model.get("data_patch") || {};
    for (const name of Object.keys(data)) {
      try { view.data(name, data[name]); } catch (e) { fail(e); }
    }
    const signals = model.get("signal_patch") || {};
    for (const name of Object.keys(signals)) {
      try { view.signal(name, signals[name]); } catch (e) { fail(e); }
    }
    await view.runAsync();
    if (timed) note("update_ms", performance.now() - t0);
  }
  function listen() {
    for (const name of model.get("watch") || []) {
      try {
        const handler = (n, value) => {
          const sel = Object.assign({}, model.get("selection") || {});
          sel[n] = plain(value);
          model.set("selection", sel);
          model.save_changes();
        };
        view.addSignalListener(name, handler);
        listeners.push([name, handler]);
      } catch (e) { /* a spec without that signal */ }
    }
  }
  async function draw() {
    const my = ++token;
    const t0 = performance.now();
    const spec = model.get("spec");
    if (view) { view.finalize(); view = null; }
    if (!spec || !Object.keys(spec).length) { el.innerHTML = ""; return; }
    try {
      const res = await vegaEmbed(el, spec, { renderer: model.get("renderer") || "svg", actions: false, mode: "vega-lite" });
      if (my !== token) { res.finalize(); return; }
      view = res.view;
      await patch(false);
      listen();
      model.set("error", "");
      note("render_ms", performance.now() - t0);
    } catch (e) { fail(e); }
  }
  model.on("change:spec", draw);
  model.on("change:renderer", draw);
  model.on("change:data_patch", () => patch(true));
  model.on("change:signal_patch", () => patch(true));
  draw();
  return () => { token++; if (view) view.finalize(); };
}
export default { render };
"""

_BUNDLE_LOCK = threading.Lock()
_BUNDLE: str | None = None


def vega_bundle_path() -> Path:
    """Where the bundled module is cached: ``vega-bundle/<hash>.js`` under the cache folder (``SEMANSCOPE_CACHE``)."""
    from semanscope_nb.settings import settings

    try:
        import vl_convert as vlc

        version = getattr(vlc, "__version__", "") or ""
    except ImportError:  # pragma: no cover - vl-convert is a dependency of the viz extra
        version = "none"
    key = hashlib.sha256(f"{version}|{BUNDLE_VL_VERSION}|{_GLUE}".encode()).hexdigest()[:24]
    return Path(settings.cache_dir) / "vega-bundle" / f"{key}.js"


def vega_bundle() -> str:
    """The widget's JavaScript module: Vega, Vega-Lite, vega-embed and the glue, bundled offline by vl-convert.

    Built once (a few seconds) and kept on disk; later calls read the file.
    """
    global _BUNDLE
    with _BUNDLE_LOCK:
        if _BUNDLE is not None:
            return _BUNDLE
        path = vega_bundle_path()

        def build() -> str:
            import vl_convert as vlc

            return vlc.javascript_bundle(vl_version=BUNDLE_VL_VERSION) + "\n" + _GLUE

        # a file that cannot be read now is never replaced; absent or truncated: built (and kept)
        text = kept_text(path, sound=lambda t: "export" in t[-400:], build=build)
        _BUNDLE = text
        return text


def _anywidget_base() -> type:
    import anywidget

    return anywidget.AnyWidget


try:  # anywidget is part of the viz extra; without it the panels fall back to JupyterLab's Vega-Lite output
    _Base: type = _anywidget_base()
    HAVE_ANYWIDGET = True
except ImportError:  # pragma: no cover - exercised only where anywidget is missing
    import ipywidgets as _W

    _Base = _W.DOMWidget
    HAVE_ANYWIDGET = False


class VegaView(_Base):  # type: ignore[misc, valid-type]
    """A Vega-Lite chart in the notebook whose data and parameters change in place (see the module doc).

    ``spec``: the Vega-Lite dict; ``renderer``: "svg" or "canvas"; ``watch``:
    the signal names whose values come back into :attr:`selection`.
    """

    spec = traitlets.Dict().tag(sync=True)
    data_patch = traitlets.Dict().tag(sync=True)
    signal_patch = traitlets.Dict().tag(sync=True)
    renderer = traitlets.Unicode("svg").tag(sync=True)
    watch = traitlets.List(traitlets.Unicode()).tag(sync=True)
    selection = traitlets.Dict().tag(sync=True)
    timings = traitlets.Dict().tag(sync=True)
    rendered = traitlets.Int(0).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, *, spec: dict | None = None, renderer: str = "svg", watch: Sequence[str] = (), **kwargs: Any) -> None:
        if HAVE_ANYWIDGET:
            kwargs["_esm"] = vega_bundle()
        super().__init__(spec=dict(spec or {}), renderer=renderer, watch=list(watch), **kwargs)

    def show(self, spec: dict, *, renderer: str | None = None) -> None:
        """Draw a new spec (its patches start empty; the selection keeps what the user did until the spec changes it)."""
        with self.hold_sync():
            self.data_patch = {}
            self.signal_patch = {}
            if renderer is not None:
                self.renderer = renderer
            self.spec = spec

    def update_data(self, name: str, rows: list[dict]) -> None:
        """Replace the rows of dataset ``name`` in the drawn view, in place (no redraw)."""
        self.data_patch = {**self.data_patch, name: list(rows)}

    def set_signal(self, name: str, value: Any) -> None:
        """Set the parameter (signal) ``name`` of the drawn view, in place."""
        self.signal_patch = {**self.signal_patch, name: value}

    def current_spec(self) -> dict:
        """The spec with the in-place data patches applied (what the view shows; for exports and tests)."""
        spec = dict(self.spec)
        if self.data_patch:
            spec["datasets"] = {**spec.get("datasets", {}), **self.data_patch}
        if self.signal_patch and spec.get("params"):
            spec["params"] = [{**p, "value": self.signal_patch[p["name"]]} if p.get("name") in self.signal_patch else p
                              for p in spec["params"]]
        return spec
