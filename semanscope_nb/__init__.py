"""semanscope_nb: how well does a multilingual embedding model align meaning across languages?

The package is layered; each layer imports only the ones below it::

    widgets   ipywidgets panels (thin: gather a state object, call the layers below)
    runs      the task registry (run_task), benchmark grids, results on disk, the CLI
    plots     projections, Altair charts per metric, export
    metrics   Semantic Affinity, CSC, search / retrieval / classification, fusion, alignment maths
    models    encoders, registry, HTTP models, aligned models, the embedding cache, embed() -> Embedded
    data      readers: word datasets, sentence corpora, bitext, dictionaries
    errors, results, settings, provenance   (imported by every layer)

The top level holds the names a notebook user types; every other public name
lives in its layer (``snb.metrics.chance_level``, ``snb.plots.pair_heatmap``).
Names that used to be here still work for one release, with a
``DeprecationWarning`` naming their new place.

>>> import semanscope_nb as snb
>>> emb = snb.embed("edge-cases", "random-null", languages=["en", "zh"], cache=False)
>>> snb.run_task("sa", emb, n_boot=200).tier
'chance'
"""

import importlib as _importlib
import warnings as _warnings

from semanscope_nb import data, errors, metrics, models, plots, provenance, results, runs
from semanscope_nb.data import list_datasets, load_dataset
from semanscope_nb.errors import SemanscopeError
from semanscope_nb.metrics import bitext_retrieval, concept_separation, procrustes, semantic_affinity
from semanscope_nb.models import EmbeddingCache, embed, list_models, load_model
from semanscope_nb.models.embedded import Embedded
from semanscope_nb.plots import alignment_map, project, save_chart, setup_notebook
from semanscope_nb.results import Interval, Result
from semanscope_nb.runs.model_report import ModelReport
from semanscope_nb.runs import (
    compare_on_dataset,
    dataset_affinity,
    dataset_permutation_test,
    language_pairs,
    list_tasks,
    model_report,
    run_grid,
    run_task,
)
from semanscope_nb.settings import settings

try:
    from importlib.metadata import version as _version

    __version__ = _version("semanscope_nb")
except Exception:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = [
    # setting up and data
    "settings", "load_dataset", "list_datasets", "load_model", "list_models", "EmbeddingCache", "embed", "Embedded",
    # scores
    "run_task", "list_tasks", "dataset_affinity", "semantic_affinity", "language_pairs", "compare_on_dataset",
    "dataset_permutation_test", "bitext_retrieval", "concept_separation", "procrustes", "run_grid", "model_report",
    # charts
    "project", "alignment_map", "save_chart", "setup_notebook",
    # results and errors
    "Result", "Interval", "SemanscopeError", "ModelReport",
    # the layers
    "data", "models", "metrics", "plots", "runs", "widgets", "errors", "results", "provenance",
]

#: the layers searched, in order, for a name that used to live at the top level
_LAYERS = ("errors", "results", "data", "models", "metrics", "plots", "runs")
_SUBMODULES = {"charts": "semanscope_nb.plots.charts", "export": "semanscope_nb.plots.export",
               "projection": "semanscope_nb.plots.projection"}


def __getattr__(name: str):
    """Old top-level names: found in their layer, with a DeprecationWarning saying where they live now."""
    if name == "widgets":
        return _importlib.import_module("semanscope_nb.widgets")
    if name in _SUBMODULES:
        value, where = _importlib.import_module(_SUBMODULES[name]), _SUBMODULES[name]
    else:
        layer = next((lay for lay in _LAYERS if name in getattr(globals()[lay], "__all__", ())), None)
        if layer is None:
            raise AttributeError(f"module 'semanscope_nb' has no attribute {name!r}")
        value, where = getattr(globals()[layer], name), f"semanscope_nb.{layer}.{name}"
    _warnings.warn(f"semanscope_nb.{name} moved to {where}; the old name works until version 0.3",
                   DeprecationWarning, stacklevel=2)
    return value
