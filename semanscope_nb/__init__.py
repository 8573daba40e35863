"""semanscope_nb: how well does a multilingual embedding model align meaning across languages?

>>> import semanscope_nb as snb
>>> r = snb.dataset_affinity("conceptual-space", "use-multilingual", languages=["en", "zh"])  # doctest: +SKIP
>>> print(r.cosine.sa, r.cosine.sem, r.tier)  # doctest: +SKIP
"""

from .cache import CacheWarning, EmbeddingCache, EmbedStats, default_cache_dir
from .datasets import (
    LANGUAGE_NAMES,
    WordDataset,
    bundled_data_dir,
    dataset_from_frame,
    language_code,
    list_datasets,
    load_dataset,
    read_semanscope_csv,
    read_word_lists,
    shared_data_dir,
)
from .encoders import Encoder
from .errors import (
    CacheError,
    DatasetError,
    EmbeddingError,
    ModelLoadError,
    SemanscopeError,
    UnknownModelError,
)
from .evaluate import (
    BenchmarkResult,
    dataset_affinity,
    embed_dataset,
    format_leaderboard,
    leaderboard,
    run_benchmark,
)
from .registry import DEFAULT_MODEL, ModelInfo, get_model_info, list_models, load_model, models_frame, register_model
from .sa import (
    DEFAULT_TIERS,
    AlignedWords,
    DistanceScores,
    SAResult,
    TierThresholds,
    affinity_ratio,
    semantic_affinity,
)

# --- interactive layer exports (issue 3) ---
# --- end issue 3 ---
# --- concept separation exports (issue 4) ---
# --- end issue 4 ---
# --- retrieval and alignment exports (issue 5) ---
# --- end issue 5 ---
# --- scale-out exports (issue 6) ---
# --- end issue 6 ---

try:
    from importlib.metadata import version as _version

    __version__ = _version("semanscope_nb")
except Exception:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"
