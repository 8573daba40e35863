"""Every docstring example in the core modules runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "semanscope_nb",
    "semanscope_nb.sa",
    "semanscope_nb.datasets",
    "semanscope_nb.cache",
    "semanscope_nb.registry",
    "semanscope_nb.encoders",
    "semanscope_nb.evaluate",
    "semanscope_nb.provenance",
    "semanscope_nb.cedict",
    "semanscope_nb.projection",
    "semanscope_nb.charts",
    "semanscope_nb.export",
    "semanscope_nb.widgets",
    "semanscope_nb.widgets.pickers",
    "semanscope_nb.widgets.explore",
    "semanscope_nb.widgets.csc_panel",
    "semanscope_nb.csc",
    "semanscope_nb.csc_charts",
    "semanscope_nb.corpora",
    "semanscope_nb.retrieval",
    "semanscope_nb.retrieval_charts",
    "semanscope_nb.classify",
    "semanscope_nb.ensemble",
    "semanscope_nb.align",
    "semanscope_nb.parallel",
    "semanscope_nb.grid",
    "semanscope_nb.api_models",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
