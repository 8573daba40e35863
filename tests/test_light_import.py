"""Issue 21: the package imports light (heavy extras and language tables load on first use), and repeated work of a
benchmark run is done once (TF-IDF fits shared per corpus, the embedding phase looks cached texts up by key only)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

HEAVY = ("altair", "torch", "sklearn", "statsmodels", "opencc", "umap", "phate", "ipywidgets",
         "langcodes", "language_data", "vl_convert", "faiss", "numba", "sentence_transformers", "joblib")


def test_import_semanscope_nb_loads_no_heavy_dependency_nor_language_tables():
    code = ("import sys, json, semanscope_nb; "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [], f"imported with the package: {out.stdout}"


def test_language_names_still_resolve_on_first_use():
    from semanscope_nb.data.languages import LANGUAGE_NAMES, language_code, language_name

    assert LANGUAGE_NAMES["zh"] == "Chinese" and dict(LANGUAGE_NAMES)["de"] == "German"
    assert "en" in LANGUAGE_NAMES and len(LANGUAGE_NAMES) == len(list(LANGUAGE_NAMES))
    assert language_name("ka") == "Georgian" and language_code("Georgian") == "ka"
    try:
        LANGUAGE_NAMES["xx-not-a-code"]
    except KeyError:
        pass
    else:
        raise AssertionError("an unknown code must raise KeyError")


def test_tfidf_fits_on_the_same_corpus_are_shared_and_encode_the_same():
    from semanscope_nb.models import encoders

    corpus = ["water", "fire", "Wasser", "Feuer", "水", "火"]
    base = encoders.TfidfEncoder()
    a, b = base.fit(corpus), base.fit(list(reversed(corpus)) + ["water"])  # the same set of texts
    # the IDF weights are fitted when first needed (_fitted_idf), once per corpus
    assert a.corpus_hash == b.corpus_hash and a._fitted_idf() is b._fitted_idf(), "one fit per corpus"
    c = base.fit(corpus + ["earth"])
    assert c._fitted_idf() is not a._fitted_idf() and c.corpus_hash != a.corpus_hash
    word = encoders.TfidfEncoder(analyzer="word", ngram_range=(1, 1), n_features=None, model_id="tfidf-word").fit(corpus)
    assert word._fitted_idf() is not a._fitted_idf(), "other options: another fit"
    fresh = encoders.TfidfEncoder()
    fresh.corpus_hash, fresh._idf = a.corpus_hash, fresh._fit_idf(sorted(set(corpus)))  # fitted anew, not from the shared fits
    np.testing.assert_array_equal(a.encode(["water", "Feuer"]), fresh.encode(["water", "Feuer"]),
                                  err_msg="a shared fit encodes bit for bit as a fresh one")


def test_a_warm_cache_embeds_tfidf_without_fitting_it(tmp_path, monkeypatch):
    """Issue 21: the corpus fixes the cache key; the IDF weights are fitted only when a text must be embedded."""
    from semanscope_nb.models import encoders
    from semanscope_nb.models.cache import EmbeddingCache

    corpus = ["water", "fire", "Wasser", "Feuer", "水", "火"]
    cache = EmbeddingCache(tmp_path)
    cold = encoders.TfidfEncoder().fit(corpus)
    assert cold._idf is None, "fitting fixes the corpus only"
    want = cache.embed(cold, corpus)
    assert cold._idf is not None
    monkeypatch.setattr(encoders, "_TFIDF_FITS", {})  # a fresh process
    fits = []
    monkeypatch.setattr(encoders.TfidfEncoder, "_fit_idf", lambda self, texts: fits.append(texts))
    warm = encoders.TfidfEncoder().fit(list(reversed(corpus)))
    assert warm.cache_key == cold.cache_key
    got = cache.embed(warm, corpus)
    assert fits == [] and warm._idf is None, "every vector read from the cache: no fit"
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg="the same vectors, read back")


def test_the_embedding_phase_reads_no_cached_vector(tmp_path):
    from semanscope_nb.models.registry import load_model
    from semanscope_nb.runs.grid import _CountingCache

    enc = load_model("random-null")
    with _CountingCache(tmp_path) as full:
        full.embed(enc, ["water", "fire"])
    with _CountingCache(tmp_path, presence_only=True) as probe:
        read = []
        probe.get = lambda *a, **k: read.append(a) or ({}, 0)  # would read blobs: must not be called when all are cached
        out, stats = probe.embed_with_stats(enc, ["water", "fire", "water"])
        assert read == [] and out.shape == (3, 0) and stats.n_cached == 2 and stats.n_encoded == 0
        assert probe.totals["n_cached"] == 2
    with _CountingCache(tmp_path, presence_only=True) as probe:
        out, stats = probe.embed_with_stats(enc, ["water", "earth"])  # one missing: the normal path encodes it
        assert stats.n_encoded == 1 and out.shape == (2, 512) and enc.calls >= 2
    with _CountingCache(tmp_path) as full:
        np.testing.assert_array_equal(full.embed(enc, ["earth"]), enc.encode(["earth"]))
