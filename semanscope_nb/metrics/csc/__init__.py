"""Concept Separation Curves (paper 002): does an embedding move more for a negation than for an article?

Pipeline, per sentence (paper section 3.2): the insertion points are *before
each word*; every (point, term) combination is listed, shuffled with a seed and
up to ``X`` (default 3) are applied, each giving one new sentence.  Fuzzing
inserts an article (surface noise), negation inserts the negation particle
(a meaning change); one algorithm for both.  Each new sentence is compared with
its original by cosine similarity; a Gaussian KDE of each set of similarities
on a grid over [-1, 1], normalised to sum 1 (eq. 1), gives the two curves, and
their overlap is the sum of the pointwise minimum (eq. 2): 0 = perfectly
separated, 1 = the model cannot tell a negation from an article.

Language rules live in one user-extendable table (:data:`LANGUAGE_RULES`,
:func:`register_language_rules`):

======  ================  ==========  ===========================================
code    fuzz (articles)   negation    notes
======  ================  ==========  ===========================================
en      a, the            not         + grammatical mode: "not" after an auxiliary
nl      de, het           niet        the paper's Dutch rules
de      der, die, das     nicht
fr      le, la, un, une   pas         ``negation="wrap"``: ne ... pas around a word
es      el, la, un, una   no
it      il, la, un, una   non
pt      o, a, um, uma     não
======  ================  ==========  ===========================================

French: the paper keeps a negation to as many inserted tokens as a fuzz (one),
so the default French negation inserts **"pas" alone** (as colloquial French
does, "je sais pas"); ``negation="wrap"`` inserts the written form **"ne"
before the word at the insertion point and "pas" after it** ("Je ne mange pas",
"n'" before a vowel), which is grammatical when that word is the verb but adds
two tokens, so its overlap is not comparable with the one-token modes.

Any other whitespace-separated language works without registering anything:
give the terms directly, as the authors' tool takes them
(``concept_separation(..., language="sv", fuzz_terms="en | ett",
negation_terms="inte")``, or ``LanguageRules.from_terms("en | ett", "inte",
code="sv")``); for a built-in language they replace its own terms.
:func:`perturbation_preview` shows what the perturbations do to one typed
sentence, with each variant's cosine to it.

Kernel width: ``bandwidth=None`` (Scott's rule, ``n**(-1/5)`` x the std of
each curve) is the default; ``bandwidth="authors-demo"`` is the fixed factor
0.2 of the authors' demo app (see :func:`csc_curves`; paper 002 itself states
no bandwidth; ``"paper"`` is a deprecated alias).

Chinese, Japanese, Korean, Thai: **not supported** out of the box, and asking
for them raises an error that says why: there is no article to insert as
meaning-neutral noise, and there are no spaces, so "before each word" needs a
segmenter; 不/没 also belong before a verb or adjective (没 for 有 and
completed events), so inserting them before every position mostly makes
ungrammatical strings, which measures robustness to garbage, not negation.
A user who wants that stress test can register it (character positions):

>>> import semanscope_nb as snb
>>> _ = snb.register_language_rules(snb.LanguageRules(
...     "zh-stress", "Chinese (stress test)", articles=("的",), negations=("不",), segmentation="character"), replace=True)
>>> [p.text for p in snb.perturb_sentence("我喝茶", language="zh-stress", kind="negation", max_per_sentence=5)]
['我喝不茶', '不我喝茶', '我不喝茶']
>>> del snb.LANGUAGE_RULES["zh-stress"]  # (keep the table as shipped)

English grammatical negation (the paper's check after Wang et al. 2022):
``negation="grammatical"`` inserts "not" right *after* each auxiliary
(is/are/can/should/do/...), so "The shop is open." -> "The shop is not open.";
a sentence with no auxiliary gets no negated variant (counted in
``result.n_without_negation``).  Other languages have no auxiliary list and
raise a clear error in that mode (add ``auxiliaries=`` to their rules).

Example
-------
>>> r = snb.concept_separation(["The train leaves at noon.", "Water the plants daily.", "Book a table for two."],
...                            "random-null", language="en", n_boot=50, cache=False)
>>> 0.0 <= r.overlap <= 1.0, r.n_sentences
(True, 3)
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.metrics.csc.bootstrap import ResampledStats, resampled_csc_stats
from semanscope_nb.metrics.csc.curves import csc_curves, csc_overlap
from semanscope_nb.metrics.csc.kde import (
    AUTHORS_DEMO_BANDWIDTH,
    PAPER_BANDWIDTH,
    CSCCurves,
    bandwidth_factor,
    kde_on_grid,
    kernel_sd,
)
from semanscope_nb.metrics.csc.languages import (
    LANGUAGE_RULES,
    LanguageRules,
    UnsupportedLanguageError,
    get_language_rules,
    parse_terms,
    register_language_rules,
    supported_languages,
)
from semanscope_nb.metrics.csc.perturbation import Perturbation, candidate_perturbations, perturb_corpus, perturb_sentence
from semanscope_nb.metrics.csc.preview import PerturbationPreview, perturbation_preview
from semanscope_nb.metrics.csc.separation import (
    CSCGrid,
    CSCResult,
    concept_separation,
    concept_separation_grid,
    csc_table,
    rules_for,
)

__all__ = _public_names(globals())
