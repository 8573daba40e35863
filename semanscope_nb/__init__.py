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
# (altair, phate, umap and ipywidgets load lazily, inside the functions that need them)
from . import charts, export, projection
from .charts import (
    alignment_map,
    leaderboard_table,
    leaderboard_wide,
    map_frame,
    map_grid,
    sa_heatmap,
    sa_legend_text,
    tier_bar_chart,
    worst_concepts_chart,
)
from .export import chart_to_html, register_cjk_fonts, save_chart, save_figures, setup_notebook
from .projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
    project,
    project_dataset,
)
# --- end issue 3 ---
# --- concept separation exports (issue 4) ---
# (csc_charts imports altair only inside its functions)
from .corpora import (
    SentenceCorpus,
    list_sentence_corpora,
    load_sentence_corpus,
    read_ess_questions,
    read_sentences,
)
from .csc import (
    LANGUAGE_RULES,
    CSCCurves,
    CSCGrid,
    CSCResult,
    LanguageRules,
    Perturbation,
    UnsupportedLanguageError,
    concept_separation,
    concept_separation_grid,
    csc_curves,
    csc_overlap,
    csc_table,
    get_language_rules,
    perturb_corpus,
    perturb_sentence,
    register_language_rules,
    supported_languages,
)
from .csc_charts import csc_chart, csc_grid, csc_heatmap, csc_length_chart
# --- end issue 4 ---
# --- retrieval and alignment exports (issue 5) ---
from .align import (
    AlignedEncoder,
    AlignedModel,
    Alignment,
    AlignmentReport,
    BilingualDictionary,
    DictionarySplit,
    align_model,
    alignment_report,
    cedict_dictionary,
    dataset_map,
    fit_alignment,
    meeting_in_the_middle,
    procrustes,
    read_muse_dictionary,
    split_dictionary,
)
from .classify import ClassificationResult, classification_frame, knn_classification, sib200_classification, text_classification
from .ensemble import DistFuse, FusedDistances
from .parallel import LabelledTexts, ParallelCorpus, read_sib200, read_tatoeba, sib200_parallel
from .retrieval import (
    BitextResult,
    DistanceProvider,
    EmbeddingDistances,
    TopK,
    bitext_retrieval,
    lexicon_induction,
    retrieval_frame,
    tatoeba_retrieval,
    text_retrieval,
    topk_search,
)
# --- end issue 5 ---
# --- scale-out exports (issue 6) ---
from .api_models import (
    ApiCostEstimate,
    ApiModelError,
    OpenAIEmbeddingEncoder,
    estimate_api_cost,
    estimate_tokens,
    register_api_model,
)
from .grid import GridBackendError, GridResult, Metric, get_metric, list_metrics, register_metric, run_grid
# --- end issue 6 ---

try:
    from importlib.metadata import version as _version

    __version__ = _version("semanscope_nb")
except Exception:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"
