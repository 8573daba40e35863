"""semanscope_nb: how well does a multilingual embedding model align meaning across languages?

The package is layered; each layer imports only the ones below it::

    widgets   ipywidgets panels (thin: gather a state object, call the layers below)
    runs      dataset-level evaluation, benchmark grids, results on disk, the CLI
    plots     projections, Altair charts per metric, export
    metrics   Semantic Affinity, CSC, search / retrieval / classification, fusion, alignment maths
    models    encoders, registry, HTTP models, aligned models, the embedding cache
    data      readers: word datasets, sentence corpora, bitext, dictionaries
    errors, provenance   (imported by every layer)

Every public name is available here (``snb.semantic_affinity``) and in its layer
(``snb.metrics.semantic_affinity``).

>>> import semanscope_nb as snb
>>> r = snb.dataset_affinity("conceptual-space", "use-multilingual", languages=["en", "zh"])  # doctest: +SKIP
>>> print(r.cosine.sa, r.cosine.sem, r.tier)  # doctest: +SKIP
"""

from semanscope_nb import data, errors, metrics, models, plots, provenance, runs
from semanscope_nb._api import public_names as _public_names
from semanscope_nb.data import (
    LANGUAGE_NAMES,
    BilingualDictionary,
    DictionarySplit,
    LabelledTexts,
    ParallelCorpus,
    SentenceCorpus,
    WordDataset,
    bundled_data_dir,
    cedict_dictionary,
    dataset_from_frame,
    language_code,
    list_datasets,
    list_sentence_corpora,
    load_dataset,
    load_sentence_corpus,
    read_ess_questions,
    read_muse_dictionary,
    read_semanscope_csv,
    read_sentences,
    read_sib200,
    read_tatoeba,
    read_word_lists,
    shared_data_dir,
    sib200_parallel,
    split_dictionary,
)
from semanscope_nb.errors import (
    CacheError,
    DatasetError,
    EmbeddingError,
    ModelLoadError,
    SemanscopeError,
    UnknownModelError,
)
from semanscope_nb.metrics import (
    DEFAULT_TIERS,
    LANGUAGE_RULES,
    AlignedWords,
    Artefacts,
    BitextResult,
    ChanceLevel,
    ClassificationResult,
    CSCCurves,
    CSCGrid,
    CSCResult,
    DiagnosticReport,
    DistanceProvider,
    DistanceScores,
    DistFuse,
    EmbeddingDistances,
    FusedDistances,
    LanguageRules,
    ModelComparison,
    NullAwareScores,
    PermutationTest,
    Perturbation,
    SAResult,
    TierThresholds,
    TopK,
    UnsupportedLanguageError,
    affinity_ratio,
    align_model,
    bitext_retrieval,
    chance_level,
    classification_frame,
    compare_models,
    concept_separation,
    concept_separation_grid,
    csc_curves,
    csc_overlap,
    csc_table,
    diagnostic_report,
    find_artefacts,
    fit_alignment,
    get_language_rules,
    knn_classification,
    language_centred,
    lexicon_induction,
    meeting_in_the_middle,
    null_aware_bootstrap,
    pair_affinity,
    permutation_test,
    perturb_corpus,
    perturb_sentence,
    procrustes,
    register_language_rules,
    retrieval_frame,
    semantic_affinity,
    sib200_classification,
    supported_languages,
    tatoeba_retrieval,
    text_classification,
    text_retrieval,
    topk_search,
)
from semanscope_nb.models import (
    DEFAULT_MODEL,
    AlignedEncoder,
    AlignedModel,
    Alignment,
    ApiCostEstimate,
    ApiModelError,
    CacheWarning,
    E5TokenEncoder,
    EmbeddingCache,
    EmbedStats,
    Encoder,
    ModelInfo,
    OpenAIEmbeddingEncoder,
    TokenEmbeddings,
    TransformersTokenEncoder,
    default_cache_dir,
    estimate_api_cost,
    estimate_tokens,
    get_model_info,
    list_models,
    load_model,
    load_token_encoder,
    models_frame,
    register_api_model,
    register_model,
    word_spans,
)
from semanscope_nb.plots import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    alignment_map,
    chart_bytes,
    chart_to_html,
    charts,
    compare_maps,
    csc_chart,
    csc_grid,
    csc_heatmap,
    csc_length_chart,
    default_projection_cache,
    download_link,
    export,
    language_colours,
    leaderboard_table,
    leaderboard_wide,
    map_3d,
    map_frame,
    map_grid,
    pair_heatmap,
    project,
    project_dataset,
    projection,
    register_cjk_fonts,
    sa_heatmap,
    sa_legend_text,
    save_chart,
    save_figures,
    setup_notebook,
    tier_bar_chart,
    worst_concepts_chart,
)
from semanscope_nb.runs import (
    AlignmentReport,
    BenchmarkResult,
    GridBackendError,
    GridResult,
    LanguageSupportWarning,
    Metric,
    alignment_report,
    compare_on_dataset,
    dataset_affinity,
    dataset_map,
    dataset_permutation_test,
    embed_dataset,
    format_leaderboard,
    get_metric,
    language_pairs,
    leaderboard,
    list_metrics,
    register_metric,
    run_benchmark,
    run_grid,
    two_stage_report,
    unsupported_languages,
    with_rank_bands,
)

try:
    from importlib.metadata import version as _version

    __version__ = _version("semanscope_nb")
except Exception:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = _public_names(globals(), modules=("data", "errors", "metrics", "models", "plots", "provenance", "runs", "charts", "export", "projection"))
