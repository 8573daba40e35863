"""Issue 21: the degenerate-vector check imports scipy.sparse.csgraph (0.2 s) only when it has a tie graph to split."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.metrics.artefacts import degenerate_vector_groups
from semanscope_nb.metrics.spreads import AlignedWords


def _words(v: np.ndarray) -> AlignedWords:
    eye = sp.identity(v.shape[0], format="csr")
    names = tuple(f"w{i}" for i in range(v.shape[0]))
    return AlignedWords(("en", "de"), (v, v[::-1].copy()), (eye, eye), names, words=(names, names))


def test_no_tie_no_csgraph_import_and_a_tie_still_groups(monkeypatch):
    v = np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)  # no two rows agree to 1e-6
    monkeypatch.setitem(sys.modules, "scipy.sparse.csgraph", None)  # importing it now raises ImportError
    assert degenerate_vector_groups(_words(v)) == {}, "tie-free vectors: no component search, no import"
    tied = v.copy()
    tied[7] = tied[3]
    with pytest.raises(ImportError):  # a tie needs the connected components: then (and only then) it is imported
        degenerate_vector_groups(_words(tied))
    monkeypatch.delitem(sys.modules, "scipy.sparse.csgraph")
    groups = degenerate_vector_groups(_words(tied))
    assert groups == {"en": [("w3", "w7")], "de": [("w42", "w46")]}
