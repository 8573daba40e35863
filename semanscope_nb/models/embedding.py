"""Embed texts through the cache and load an encoder (fitting it first when it needs a corpus).

Layer: models.  Imports the registry and the cache beside it.

Example
-------
>>> import semanscope_nb as snb
>>> enc = snb.models.load_encoder("random-null", ["a", "b"])
>>> snb.models.embed_texts(enc, ["a", "b", "a"], cache=False).shape[0]
3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Sequence

import numpy as np

from semanscope_nb.errors import EmbeddingError

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder


def load_encoder(model: "str | Encoder | None", fit_corpus: Sequence[str]) -> "Encoder":
    """``model`` loaded (``None``: ``settings.default_model``) and prepared on ``fit_corpus`` (TF-IDF fits its vocabulary)."""
    from semanscope_nb.models.registry import load_model

    return load_model(model).prepare(fit_corpus)


def embed_texts(
    encoder: "Encoder", texts: Sequence[str], *, language: str | None = None, cache: "EmbeddingCache | None | Literal[False]" = None
) -> np.ndarray:
    """Vectors of ``texts`` through the embedding cache (``cache=None``: the default cache; False: none)."""
    from semanscope_nb.models.cache import resolve_cache

    texts = list(texts)
    if not texts:
        raise EmbeddingError("no texts to embed (empty list)")
    if not encoder.language_dependent:
        language = None
    store = resolve_cache(cache)
    if store is None:
        return encoder.encode(texts, language=language)
    return store.embed(encoder, texts, language=language)

