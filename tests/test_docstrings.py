"""Every module of the package has a runnable docstring example, and every example prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import semanscope_nb

MODULES = sorted(
    ["semanscope_nb"]
    + [m.name for m in pkgutil.walk_packages(semanscope_nb.__path__, "semanscope_nb.") if m.name != "semanscope_nb.__main__"]
)


def test_every_layer_is_walked():
    for layer in ("data", "models", "metrics", "plots", "runs", "widgets"):
        assert f"semanscope_nb.{layer}" in MODULES
    assert len(MODULES) >= 35


#: modules whose examples load real model weights (the fast tier, `-m "not slow"`, leaves them out)
REAL_MODEL_EXAMPLES = {"semanscope_nb.models.tokens"}
#: modules whose examples run a whole pipeline (several seconds each): slow tier too
PIPELINE_EXAMPLES = {"semanscope_nb.runs.model_report", "semanscope_nb.runs.report_html", "semanscope_nb.runs.mteb",
                     "semanscope_nb.plots.compare", "semanscope_nb.plots.export"}


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in REAL_MODEL_EXAMPLES | PIPELINE_EXAMPLES else m for m in MODULES])
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
