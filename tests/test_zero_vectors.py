"""All-zero vectors: one rule (metrics.artefacts.zero_vectors) for the verdict, the pair matrix and the model comparison.

An all-zero vector has no direction, so every cosine with it is undefined.  ``on_zero="error"`` raises naming the
language (and the model), ``"drop"`` (the tasks' choice) drops the concepts holding one before the resamples are
drawn -- in the verdict, in each pair of the pair matrix, and for every model of a comparison -- so the comparison's
score of a model equals its verdict's when nothing else is left out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.metrics.affinity import affinity_of_words
from semanscope_nb.metrics.artefacts import zero_vectors
from semanscope_nb.metrics.compare import compare_models
from semanscope_nb.metrics.spreads import AlignedWords


def _words(seed: int, R: int = 40, d: int = 16, noise: float = 0.3, zero: dict[str, list[int]] | None = None) -> AlignedWords:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(R, d))
    vecs = {lang: base + noise * rng.normal(size=(R, d)) for lang in ("en", "de", "fr")}
    for lang, rows in (zero or {}).items():
        vecs[lang][rows] = 0.0
    eye = sp.identity(R, format="csr")
    return AlignedWords(("en", "de", "fr"), tuple(vecs.values()), (eye,) * 3, tuple(f"c{i}" for i in range(R)),
                        words=tuple(tuple(f"{lang}{i}" for i in range(R)) for lang in ("en", "de", "fr")))


def test_zero_vectors_against_a_loop():
    aw = _words(0, zero={"de": [3, 7], "fr": [7, 11]})
    z = zero_vectors(aw)
    want_rows = [any(not np.any(aw.vectors[k][r] != 0) for k in range(3)) for r in range(aw.n_rows)]
    assert z.rows.tolist() == want_rows
    assert z.counts(aw.languages) == {"en": 0, "de": 2, "fr": 2}
    assert sorted(z.language_rows) == ["de", "fr"] and np.flatnonzero(z.language_rows["de"]).tolist() == [3, 7]
    with pytest.raises(EmbeddingError, match=r"model 'm', language 'de': 2 all-zero"):
        zero_vectors(aw, on_zero="error", model="m")
    with pytest.raises(ValueError, match="on_zero"):
        zero_vectors(aw, on_zero="ignore")


def test_comparison_raises_by_default_and_names_the_model():
    good, holed = _words(1), _words(1, zero={"de": [5]})
    with pytest.raises(EmbeddingError, match="model 'holed', language 'de'"):
        compare_models({"good": good, "holed": holed}, n_boot=50, n_perm=50, seed=0)
    with pytest.raises(ValueError, match="on_zero"):
        compare_models({"good": good, "holed": holed}, n_boot=50, n_perm=50, seed=0, on_zero="nan")


def test_comparison_drops_zero_vector_concepts_as_the_verdict_does():
    """Both models hold the zero vectors on the same concepts: each model's comparison score and interval are its
    verdict's (on_zero='drop'), where before the fix the model got NaN ("collapsed")."""
    a, b = _words(2, zero={"de": [5, 9]}), _words(3, noise=0.6, zero={"fr": [5], "en": [9]})
    c = compare_models({"a": a, "b": b}, n_boot=200, n_perm=200, seed=0, on_zero="drop")
    assert any("2 of 40 concepts dropped" in n for n in c.notes)
    for name, aw in (("a", a), ("b", b)):
        row = c.scores.set_index("model").loc[name]
        assert math.isfinite(row.score) and row.n_concepts == 38
        v = affinity_of_words(aw, n_boot=200, seed=0, on_zero="drop").verdict_scores.delta
        assert row.score == pytest.approx(v.value, rel=1e-12, abs=1e-14)
        assert (row.ci_low, row.ci_high) == pytest.approx(v.ci, rel=1e-12, abs=1e-14)


def test_comparison_drops_the_union_for_every_model():
    a, b = _words(4, zero={"de": [1]}), _words(5, zero={"en": [2]})
    c = compare_models({"a": a, "b": b}, n_boot=100, n_perm=100, seed=0, on_zero="drop")
    assert set(c.scores.n_concepts) == {38} and c.scores.score.notna().all()
