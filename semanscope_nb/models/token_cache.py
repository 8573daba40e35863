"""How token-level vectors are kept in the embedding cache: the entry key and the (meta, blob) serialisation.

Layer: models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from semanscope_nb.models.token_pooling import TokenEmbeddings
from semanscope_nb.models.word_spans import Span


# ------------------------------------------------------------------------------------------------
# encoders
# ------------------------------------------------------------------------------------------------
def token_cache(cache: Any) -> Any:
    """The cache to use, by the one rule of :func:`~semanscope_nb.models.cache.resolve_cache`."""
    from semanscope_nb.models.cache import resolve_cache

    return resolve_cache(cache)


def entry_key(text: str, spans: Sequence[Span] | None, layers: Any, pooling: str, special_tokens: bool) -> str:
    """What a token-level cache entry is keyed on (beside the model): text, word spans, layers, pooling.

    >>> entry_key("a b", [(0, 1), (2, 3)], "mean", "word", False)
    '["a b", [[0, 1], [2, 3]], "mean", "word", false]'
    """
    span_key = None if spans is None else [[int(a), int(b)] for a, b in spans]
    # layers as given ("mean", 3, [1, 2]); anything JSON cannot hold keys by its repr (an invalid choice is
    # never stored: resolve_layers rejects it by name before anything is encoded)
    return json.dumps([text, span_key, layers, pooling, bool(special_tokens)], ensure_ascii=False, default=repr)


def token_embeddings(text: str, toks: tuple[str, ...], offs: np.ndarray, vec: np.ndarray, counts: np.ndarray,
                      layers: tuple[int, ...], pooling: str, model_id: str, dims: int) -> TokenEmbeddings:
    arrays = [np.ascontiguousarray(offs, dtype=np.int64).reshape(len(toks), 2),
              np.ascontiguousarray(vec, dtype=np.float32).reshape(len(toks), dims),
              np.ascontiguousarray(counts, dtype=np.int64).reshape(len(toks))]
    for a in arrays:
        a.setflags(write=False)
    return TokenEmbeddings(text, toks, arrays[0], arrays[1], arrays[2], tuple(layers), pooling, model_id)


def to_entry(r: TokenEmbeddings) -> tuple[str, bytes]:
    """(meta JSON, blob) of one result: offsets and counts as little-endian int64, vectors as float32."""
    meta = json.dumps({"tokens": list(r.tokens), "layers": list(r.layers), "dims": r.dims}, ensure_ascii=False)
    blob = (r.offsets.astype("<i8").tobytes() + r.n_subwords.astype("<i8").tobytes() + r.vectors.astype("<f4").tobytes())
    return meta, blob


def from_entry(text: str, meta: str, blob: bytes, *, pooling: str, model_id: str) -> TokenEmbeddings:
    m = json.loads(meta)
    n, dims = len(m["tokens"]), int(m["dims"])
    offs = np.frombuffer(blob, dtype="<i8", count=2 * n).reshape(n, 2)
    counts = np.frombuffer(blob, dtype="<i8", count=n, offset=16 * n)
    vec = np.frombuffer(blob, dtype="<f4", count=n * dims, offset=24 * n).reshape(n, dims)
    return token_embeddings(text, tuple(m["tokens"]), offs, vec, counts, tuple(m["layers"]), pooling, model_id, dims)
