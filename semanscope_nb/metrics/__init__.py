"""Metrics layer: pure computations on vectors (and the dataset-free pipelines that embed then score).

Rooms:

* :mod:`~semanscope_nb.metrics.spreads` -- the SA formula and its vectorised parts (D_intra, D_inter).
* :mod:`~semanscope_nb.metrics.row_order` -- the canonical order of concepts every random draw over them follows.
* :mod:`~semanscope_nb.metrics.affinity` -- Semantic Affinity (paper 000): bootstrap, tiers, the null-aware verdict.
* :mod:`~semanscope_nb.metrics.paper_sem` -- the original Semanscope tool's delta-method ± (not a sampling error).
* :mod:`~semanscope_nb.metrics.chance` -- the chance level of SA, the permutation test, the null-aware bootstrap.
* :mod:`~semanscope_nb.metrics.artefacts` -- identical strings, degenerate vectors, language offsets.
* :mod:`~semanscope_nb.metrics.compare` -- model vs model: paired bootstrap and permutation test, Holm, rank bands.
* :mod:`~semanscope_nb.metrics.pairs` -- SA per language pair with its own chance level.
* :mod:`~semanscope_nb.metrics.workflow` -- the paper's two-stage diagnostic workflow (App. A.6).
* :mod:`~semanscope_nb.metrics.csc` -- Concept Separation Curves (paper 002): language rules,
  perturbation, KDE and overlap, the separation pipeline.
* :mod:`~semanscope_nb.metrics.search` -- exact blocked top-k search over distance providers.
* :mod:`~semanscope_nb.metrics.retrieval` -- bitext retrieval and lexicon induction (MINERS / MTEB).
* :mod:`~semanscope_nb.metrics.classification` -- kNN retrieval classification (MINERS).
* :mod:`~semanscope_nb.metrics.codeswitch` -- synthetic dictionary code-switching at a controlled switch rate (not MINERS' CS data).
* :mod:`~semanscope_nb.metrics.contextual` -- contextual (token-level) alignment of paper 001: anchors,
  word alignment, BDI with CSLS, sense retrieval (BTSR).
* :mod:`~semanscope_nb.metrics.word_similarity` -- word similarity in context (paper 001: BCWS, SCWS): Spearman's
  rho with a pair bootstrap, the leave-one-out human upper bound.
* :mod:`~semanscope_nb.metrics.btsr` -- a BTSR whose gold is a sense: tie-aware P@K beside the no-context baseline.
* :mod:`~semanscope_nb.metrics.fusion` -- DistFuse: several models' distances fused into one.
* :mod:`~semanscope_nb.metrics.alignment` -- Procrustes, Meeting-in-the-Middle, fitting an aligned model (paper 001).

May import: the models and data layers, :mod:`semanscope_nb.errors`, :mod:`semanscope_nb.provenance`
and itself.  A new metric is a module here with a pure function that returns a result dataclass
(``to_dict`` / ``from_dict``), re-exported below and from :mod:`semanscope_nb`.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> en = rng.normal(size=(50, 8)); de = en + 0.01 * rng.normal(size=(50, 8))
>>> snb.metrics.bitext_retrieval(en, de, n_boot=0).accuracy[1]
1.0
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    AlignedWords,
    DistanceScores,
    SAResult,
    TierThresholds,
    affinity_ratio,
    semantic_affinity,
)
from semanscope_nb.metrics.alignment import align_model, fit_alignment, meeting_in_the_middle, procrustes
from semanscope_nb.metrics.artefacts import Artefacts, find_artefacts, language_centred
from semanscope_nb.metrics.btsr import SenseRetrievalScore, expected_hits, sense_retrieval_scores
from semanscope_nb.metrics.chance import (
    ChanceLevel,
    NullAwareScores,
    PermutationTest,
    chance_level,
    null_aware_bootstrap,
    permutation_test,
)
from semanscope_nb.metrics.classification import (
    ClassificationResult,
    classification_frame,
    knn_classification,
    sib200_classification,
    text_classification,
)
from semanscope_nb.metrics.codeswitch import (
    CodeSwitched,
    code_switch,
    code_switched_classification,
    code_switched_retrieval,
)
from semanscope_nb.metrics.compare import ModelComparison, compare_models
from semanscope_nb.metrics.contextual import (
    Anchors,
    BDIResult,
    EncodedCorpus,
    RetrievalScore,
    SenseSeparation,
    TokenPairs,
    align_words,
    avg_type_anchors,
    csls_scores_topk,
    encode_corpus,
    find_occurrences,
    fit_anchor_alignment,
    iso_type_anchors,
    lexicon_induction_vectors,
    precision_at_k,
    sense_retrieval,
    sense_separation,
    token_anchors,
    token_pairs,
)
from semanscope_nb.metrics.csc import (
    LANGUAGE_RULES,
    CSCCurves,
    CSCGrid,
    CSCResult,
    LanguageRules,
    Perturbation,
    PerturbationPreview,
    UnsupportedLanguageError,
    concept_separation,
    concept_separation_grid,
    csc_curves,
    csc_overlap,
    csc_table,
    get_language_rules,
    perturb_corpus,
    perturb_sentence,
    perturbation_preview,
    register_language_rules,
    rules_for,
    supported_languages,
)
from semanscope_nb.metrics.fusion import DISTFUSE_PRESETS, DistFuse, FusedDistances
from semanscope_nb.metrics.pairs import pair_affinity
from semanscope_nb.metrics.paper_sem import DeltaMethodSEM, delta_method_sem, tool_sem
from semanscope_nb.metrics.retrieval import (
    BitextResult,
    BuccPool,
    MiningResult,
    best_f1_threshold,
    bitext_retrieval,
    bucc_mining,
    bucc_pool,
    diagonal_ranks,
    lexicon_induction,
    margin_mining,
    ratio_margin,
    retrieval_frame,
    tatoeba_retrieval,
    text_retrieval,
)
from semanscope_nb.metrics.search import DistanceProvider, EmbeddingDistances, TopK, topk_search
from semanscope_nb.metrics.word_similarity import (
    AnnotatorAgreement,
    WordSimilarityScore,
    annotator_agreement,
    contextual_word_similarity,
    spearman_rho,
)
from semanscope_nb.metrics.workflow import DiagnosticReport, diagnostic_report

__all__ = _public_names(globals(), modules=('csc',))
