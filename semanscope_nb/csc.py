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

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from .corpora import SentenceCorpus
from .datasets import language_code
from .encoders import Encoder
from .errors import EmbeddingError, SemanscopeError
from .provenance import json_ready, package_info, utc_now

Kind = Literal["fuzz", "negation"]
NegationMode = Literal["particle", "grammatical", "wrap"]
KIND_CODES = {"fuzz": 1, "negation": 2}
_TRAILING_PUNCT = ".,;:!?…)»\"'"
_VOWELS = set("aeiouyhàâäéèêëîïôöûüùœæAEIOUYHÀÂÄÉÈÊËÎÏÔÖÛÜÙŒÆ")


class UnsupportedLanguageError(SemanscopeError, ValueError):
    """No CSC rule set for a language (the message lists the supported ones)."""


# --------------------------------------------------------------------------- the rule table


@dataclass(frozen=True)
class LanguageRules:
    """How to fuzz and negate sentences of one language.

    ``articles`` are the fuzz terms and ``negations`` the negation particle(s),
    each inserted before a word.  ``auxiliaries`` enable the grammatical mode
    (negation inserted after one of them, compared lower-case without
    punctuation).  ``negation_wrap`` = (before, after) enables the wrap mode
    (French ne ... pas); ``elisions`` maps a term to its form before a vowel or
    h (``ne`` -> ``n'``), glued to the next word.  ``segmentation="character"``
    treats every character as a word (no spaces; a stress test for Chinese).

    >>> LanguageRules("sv", "Swedish", articles=("en", "ett"), negations=("inte",)).code
    'sv'
    """

    code: str
    name: str
    articles: tuple[str, ...]
    negations: tuple[str, ...]
    auxiliaries: tuple[str, ...] = ()
    negation_wrap: tuple[str, str] | None = None
    elisions: tuple[tuple[str, str], ...] = ()
    segmentation: Literal["whitespace", "character"] = "whitespace"
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.articles or not self.negations:
            raise ValueError(f"LanguageRules '{self.code}': articles and negations must each hold at least one term")
        if self.segmentation not in ("whitespace", "character"):
            raise ValueError(f"LanguageRules '{self.code}': segmentation must be 'whitespace' or 'character'")

    def words(self, sentence: str) -> list[str]:
        """The sentence's words (whitespace split, or characters)."""
        return list(sentence.replace(" ", "")) if self.segmentation == "character" else sentence.split()

    def join(self, words: Sequence[str]) -> str:
        return "".join(words) if self.segmentation == "character" else " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))


LANGUAGE_RULES: dict[str, LanguageRules] = {}

_UNSUPPORTED_WHY = {
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "th": "Thai",
}


def register_language_rules(rules: LanguageRules, *, replace: bool = False) -> LanguageRules:
    """Add (or with ``replace=True`` overwrite) a language's rules in :data:`LANGUAGE_RULES`."""
    if rules.code in LANGUAGE_RULES and not replace:
        raise ValueError(f"CSC rules for '{rules.code}' already exist (pass replace=True)")
    LANGUAGE_RULES[rules.code] = rules
    return rules


def supported_languages() -> list[str]:
    """Codes with a CSC rule set."""
    return sorted(LANGUAGE_RULES)


def get_language_rules(language: str) -> LanguageRules:
    """The rules of ``language`` (a code or an English name); a clear error listing the supported ones."""
    if not isinstance(language, str) or not language.strip():
        raise UnsupportedLanguageError(f"language must be a code such as 'en'; supported: {', '.join(supported_languages())}")
    key = language.strip()
    code = key if key in LANGUAGE_RULES else (language_code(key) or key)
    if code in LANGUAGE_RULES:
        return LANGUAGE_RULES[code]
    why = ""
    if code in _UNSUPPORTED_WHY:
        why = (
            f" {_UNSUPPORTED_WHY[code]} has no articles to insert as meaning-neutral noise and no spaces between words, "
            "and its negation must precede a verb, so the insertion algorithm does not transfer; register "
            "LanguageRules(..., segmentation='character') for a character-level stress test (see semanscope_nb.csc)."
        )
    raise UnsupportedLanguageError(
        f"no CSC rule set for language '{language}'.{why} Supported: {', '.join(supported_languages())} "
        "(add one with register_language_rules(LanguageRules(...)))"
    )


def _builtin_rules() -> None:
    en_aux = ("am", "is", "are", "was", "were", "can", "could", "will", "would", "shall", "should", "may", "might",
              "must", "do", "does", "did", "has", "have", "had")
    for r in (
        LanguageRules("en", "English", ("a", "the"), ("not",), auxiliaries=en_aux,
                      notes="paper 002: a/the vs not; grammatical mode after an auxiliary (Wang et al. 2022)"),
        LanguageRules("nl", "Dutch", ("de", "het"), ("niet",), notes="paper 002: de/het vs niet"),
        LanguageRules("de", "German", ("der", "die", "das"), ("nicht",)),
        LanguageRules("fr", "French", ("le", "la", "un", "une"), ("pas",), negation_wrap=("ne", "pas"),
                      elisions=(("ne", "n'"),),
                      notes="default negation inserts 'pas' alone (one token, as the fuzz); negation='wrap' puts "
                            "'ne' before and 'pas' after the word at the insertion point"),
        LanguageRules("es", "Spanish", ("el", "la", "un", "una"), ("no",)),
        LanguageRules("it", "Italian", ("il", "la", "un", "una"), ("non",)),
        LanguageRules("pt", "Portuguese", ("o", "a", "um", "uma"), ("não",)),
    ):
        register_language_rules(r, replace=True)


_builtin_rules()


# --------------------------------------------------------------------------- perturbation


@dataclass(frozen=True)
class Perturbation:
    """One generated sentence: ``term`` inserted at ``position`` (before word ``position``, 0-based)."""

    sentence: int
    kind: str
    position: int
    term: str
    text: str


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _elide(rules: LanguageRules, term: str, next_word: str | None) -> str | None:
    if next_word and next_word[0] in _VOWELS:
        return dict(rules.elisions).get(term)
    return None


def _insert(rules: LanguageRules, words: list[str], position: int, term: str) -> list[str]:
    nxt = words[position] if position < len(words) else None
    elided = _elide(rules, term, nxt)
    if elided is not None and nxt is not None:
        return words[:position] + [elided + nxt] + words[position + 1 :]
    return words[:position] + [term] + words[position:]


def candidate_perturbations(
    sentence: str, *, language: str, kind: Kind, negation: NegationMode = "particle", rules: LanguageRules | None = None
) -> list[tuple[int, str, str]]:
    """Every (position, term, new sentence) combination, unshuffled (positions outer, terms inner).

    >>> [(p, t) for p, t, _ in candidate_perturbations("Manage a team.", language="en", kind="fuzz")]
    [(0, 'a'), (0, 'the'), (1, 'a'), (1, 'the'), (2, 'a'), (2, 'the')]
    >>> [s for _, _, s in candidate_perturbations("It is open.", language="en", kind="negation", negation="grammatical")]
    ['It is not open.']
    """
    rules = rules or get_language_rules(language)
    words = rules.words(" ".join(sentence.split()))
    if not words:
        return []
    if kind == "fuzz":
        return [(p, t, rules.join(_insert(rules, words, p, t))) for p in range(len(words)) for t in rules.articles]
    if kind != "negation":
        raise ValueError(f"kind must be 'fuzz' or 'negation', got {kind!r}")
    if negation == "particle":
        return [(p, t, rules.join(_insert(rules, words, p, t))) for p in range(len(words)) for t in rules.negations]
    if negation == "grammatical":
        if not rules.auxiliaries:
            with_aux = [c for c, r in LANGUAGE_RULES.items() if r.auxiliaries]
            raise UnsupportedLanguageError(
                f"grammatical negation needs auxiliaries; '{rules.code}' has none (defined for: {', '.join(with_aux)}); "
                "use negation='particle' or add auxiliaries= to its LanguageRules"
            )
        aux = {a.lower() for a in rules.auxiliaries}
        points = [i + 1 for i, w in enumerate(words) if w.lower().strip(".,;:!?\"'()") in aux]
        return [(p, t, rules.join(_insert(rules, words, p, t))) for p in points for t in rules.negations]
    if negation == "wrap":
        if rules.negation_wrap is None:
            with_wrap = [c for c, r in LANGUAGE_RULES.items() if r.negation_wrap]
            raise UnsupportedLanguageError(
                f"wrap negation needs negation_wrap=(before, after); '{rules.code}' has none (defined for: {', '.join(with_wrap)})"
            )
        before, after = rules.negation_wrap
        out = []
        for p in range(len(words)):
            w = _insert(rules, words, p, before)  # "ne" before word p (or "n'" glued to it)
            target = p if len(w) == len(words) else p + 1  # index of word p after the insertion
            core = w[target].rstrip(_TRAILING_PUNCT)
            tail = w[target][len(core):]
            if core:  # "pas" goes before trailing punctuation: "mange." -> "mange pas."
                w = w[:target] + [core, after + tail] + w[target + 1 :]
            else:
                w = w[: target + 1] + [after] + w[target + 1 :]
            out.append((p, f"{before} ... {after}", rules.join(w)))
        return out
    raise ValueError(f"negation must be 'particle', 'grammatical' or 'wrap', got {negation!r}")


def perturb_sentence(
    sentence: str,
    *,
    language: str,
    kind: Kind,
    max_per_sentence: int = 3,
    seed: int = 0,
    negation: NegationMode = "particle",
    index: int = 0,
    rules: LanguageRules | None = None,
) -> list[Perturbation]:
    """Up to ``max_per_sentence`` perturbations, drawn by a seeded shuffle of every (position, term) combination.

    The shuffle's random stream depends only on (``seed``, kind, sentence text),
    so a sentence gets the same variants whatever corpus it sits in.

    >>> [p.text for p in perturb_sentence("Run.", language="en", kind="fuzz")]  # one word: one insertion point
    ['a Run.', 'the Run.']
    """
    if not isinstance(max_per_sentence, (int, np.integer)) or max_per_sentence < 1:
        raise ValueError(f"max_per_sentence (X) must be an integer >= 1, got {max_per_sentence!r}")
    combos = candidate_perturbations(sentence, language=language, kind=kind, negation=negation, rules=rules)
    if not combos:
        return []
    rng = np.random.default_rng([int(seed), KIND_CODES[kind], _stable_int(" ".join(sentence.split()))])
    order = rng.permutation(len(combos))[: int(max_per_sentence)]
    return [Perturbation(index, kind, combos[i][0], combos[i][1], combos[i][2]) for i in order]


def perturb_corpus(
    sentences: Sequence[str],
    *,
    language: str,
    max_per_sentence: int = 3,
    seed: int = 0,
    negation: NegationMode = "particle",
) -> list[Perturbation]:
    """Fuzz and negation variants of every sentence (``sentence`` = index into ``sentences``)."""
    rules = get_language_rules(language)
    out: list[Perturbation] = []
    for i, s in enumerate(sentences):
        for kind in ("fuzz", "negation"):
            out.extend(perturb_sentence(s, language=language, kind=kind, max_per_sentence=max_per_sentence, seed=seed,
                                        negation=negation, index=i, rules=rules))
    return out


# --------------------------------------------------------------------------- curves and overlap

KDEMethod = Literal["auto", "binned", "windowed", "direct"]
_BINNED_MIN_SD_STEPS = 4.0  # narrower kernels (in grid steps) use the exact windowed route
_BIN_OVERSAMPLE = 4  # the binned route bins at a quarter of the grid step
_KERNEL_REACH = 8.0  # kernel truncated at 8 sd (relative mass lost < 1e-15)


def _validate_grid(resolution: Any, bandwidth: Any) -> None:
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 10:
        raise ValueError(f"resolution must be an integer >= 10 (grid points over [-1, 1]), got {resolution!r}")
    if bandwidth is None or isinstance(bandwidth, str):
        if isinstance(bandwidth, str) and bandwidth not in ("scott", "silverman"):
            raise ValueError(f"bandwidth must be None, 'scott', 'silverman' or a number > 0, got {bandwidth!r}")
        return
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.number)) or not math.isfinite(bandwidth) or bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0 (scipy's bw_method factor; None = Scott's rule), got {bandwidth!r}")


def _as_sims(values: Any, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError(f"{name} is empty: a curve needs at least one similarity")
    bad = int((~np.isfinite(x)).sum())
    if bad:
        raise ValueError(f"{name} holds {bad} NaN/inf value(s); drop undefined similarities (zero vectors) first")
    return x


def kernel_sd(samples: Any, bandwidth: float | str | None = None) -> float:
    """The Gaussian kernel's standard deviation that ``scipy.stats.gaussian_kde(samples, bw_method=bandwidth)`` uses.

    ``factor * std(samples, ddof=1)``, factor = Scott's ``n**(-1/5)`` (None or
    'scott'), Silverman's ``(3n/4)**(-1/5)``, or the scalar ``bandwidth`` itself
    (scipy's definitions for 1-D data; the tests check them against scipy).
    0.0 for fewer than two distinct values (no KDE exists then).

    >>> round(kernel_sd([0.0, 1.0], 0.5), 4)
    0.3536
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0:
        return 0.0
    n = x.size
    if bandwidth is None or bandwidth == "scott":
        factor = n ** (-1.0 / 5)
    elif bandwidth == "silverman":
        factor = (n * 3.0 / 4.0) ** (-1.0 / 5)
    else:
        factor = float(bandwidth)
    return float(factor * np.std(x, ddof=1))


def _linear_bin(x: np.ndarray, start: float, dx: float, size: int) -> np.ndarray:
    pos = np.clip((x - start) / dx, 0.0, size - 1.0)  # callers pad the bins; this only guards rounding at the edges
    i = np.minimum(np.floor(pos).astype(np.int64), size - 2)
    frac = pos - i
    counts = np.bincount(i, weights=1.0 - frac, minlength=size) + np.bincount(i + 1, weights=frac, minlength=size)
    return counts[:size]


def _windowed_exact(x: np.ndarray, grid: np.ndarray, sd: float) -> np.ndarray:
    """Exact Gaussian sums at the grid points within 8 sd of each sample (narrow kernels)."""
    dx = float(grid[1] - grid[0])
    half = int(math.ceil(_KERNEL_REACH * sd / dx)) + 1
    centre = np.rint((x - grid[0]) / dx).astype(np.int64)
    out = np.zeros(grid.size)
    step = max(1, 2_000_000 // (2 * half + 1))  # bounded memory
    offsets = np.arange(-half, half + 1)
    for a in range(0, x.size, step):
        idx = centre[a : a + step, None] + offsets
        ok = (idx >= 0) & (idx < grid.size)
        vals = np.exp(-0.5 * ((grid[np.clip(idx, 0, grid.size - 1)] - x[a : a + step, None]) / sd) ** 2)
        out += np.bincount(idx[ok], weights=vals[ok], minlength=grid.size)
    return out


def kde_on_grid(
    samples: Any, grid: np.ndarray, *, bandwidth: float | str | None = None, method: KDEMethod = "auto"
) -> tuple[np.ndarray, str]:
    """Gaussian KDE of ``samples`` at the evenly spaced ``grid`` (up to a constant); returns (density, route).

    Routes:

    * ``direct``: ``scipy.stats.gaussian_kde(samples, bw_method=bandwidth).evaluate(grid)`` (the reference).
    * ``binned``: linear binning at a quarter of the grid step (extended to
      cover the data and 8 kernel widths) and one FFT convolution with the same
      kernel (``scipy.signal.fftconvolve``): O(n + m log m) instead of O(n m).
    * ``windowed``: exact Gaussian sums over the grid points within 8 kernel
      widths of each sample (used by ``auto`` when the kernel is narrower than
      4 grid steps, where binning would be coarse).
    * ``auto``: binned, or windowed for narrow kernels.

    Zero spread (all values equal, or one value): no KDE exists (singular
    covariance); the result is the KDE's limit as the kernel shrinks, a point
    mass split linearly between the two nearest grid points (route ``point-mass``).
    """
    import scipy.signal
    import scipy.stats

    if method not in ("auto", "binned", "direct", "windowed"):
        raise ValueError(f"method must be 'auto', 'binned', 'windowed' or 'direct', got {method!r}")
    x = np.asarray(samples, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    dx = float(grid[1] - grid[0])
    sd = kernel_sd(x, bandwidth)
    if sd == 0.0:
        c = float(np.clip(x[0], grid[0], grid[-1]))
        return _linear_bin(np.array([c]), float(grid[0]), dx, grid.size), "point-mass"
    if method == "direct":
        return scipy.stats.gaussian_kde(x, bw_method=bandwidth).evaluate(grid), "direct"
    if method == "windowed" or (method == "auto" and sd < _BINNED_MIN_SD_STEPS * dx):
        return _windowed_exact(x, grid, sd), "windowed"
    h = dx / _BIN_OVERSAMPLE  # bins finer than the grid; every _BIN_OVERSAMPLE-th output is a grid point
    half = int(math.ceil(_KERNEL_REACH * sd / h))
    if method == "auto" and half > 2_000_000:  # absurdly wide kernel: the FFT arrays would be huge
        return scipy.stats.gaussian_kde(x, bw_method=bandwidth).evaluate(grid), "direct"
    lo = min(float(grid[0]), float(x.min())) - half * h
    hi = max(float(grid[-1]), float(x.max())) + half * h
    k_lo = int(math.floor((lo - grid[0]) / h)) - 1
    size = int(math.ceil((hi - grid[0]) / h)) - k_lo + 2
    counts = _linear_bin(x, float(grid[0]) + k_lo * h, h, size)
    kernel = np.exp(-0.5 * ((np.arange(-half, half + 1) * h) / sd) ** 2)
    dens = scipy.signal.fftconvolve(counts, kernel, mode="same")
    dens = dens[-k_lo :: _BIN_OVERSAMPLE][: grid.size]
    return np.clip(dens, 0.0, None), "binned"


@dataclass(frozen=True)
class CSCCurves:
    """The two normalised curves on the grid (each sums to 1) and their overlap (eq. 2)."""

    grid: np.ndarray
    fuzz: np.ndarray
    negation: np.ndarray
    overlap: float
    fuzz_kernel_sd: float
    negation_kernel_sd: float
    routes: tuple[str, str]


def _normalise(d: np.ndarray, name: str) -> np.ndarray:
    total = float(d.sum())
    if not total > 0:
        raise ValueError(f"the {name} density is zero on the whole grid (similarities far outside [-1, 1]?)")
    return d / total


def csc_curves(
    fuzz_sims: Any,
    neg_sims: Any,
    *,
    resolution: int = 2001,
    bandwidth: float | str | None = None,
    method: KDEMethod = "auto",
) -> CSCCurves:
    """Both CSC curves: KDE on ``np.linspace(-1, 1, resolution)``, each normalised to sum 1 (paper eq. 1).

    ``bandwidth`` is scipy's ``bw_method``: None = Scott's rule, 'silverman',
    or a scalar factor (kernel sd = factor x the sample's standard deviation),
    applied to each curve separately.

    >>> c = csc_curves([0.95, 0.9, 0.97, 0.92], [0.5, 0.6, 0.55, 0.4], resolution=201)
    >>> round(float(c.fuzz.sum()), 6), c.overlap < 0.05
    (1.0, True)
    """
    _validate_grid(resolution, bandwidth)
    f = _as_sims(fuzz_sims, "fuzz_sims")
    n = _as_sims(neg_sims, "neg_sims")
    grid = np.linspace(-1.0, 1.0, int(resolution))
    df, rf = kde_on_grid(f, grid, bandwidth=bandwidth, method=method)
    dn, rn = kde_on_grid(n, grid, bandwidth=bandwidth, method=method)
    nf, nn = _normalise(df, "fuzz"), _normalise(dn, "negation")
    overlap = float(min(1.0, np.minimum(nf, nn).sum()))
    return CSCCurves(grid, nf, nn, overlap, kernel_sd(f, bandwidth), kernel_sd(n, bandwidth), (rf, rn))


def csc_overlap(
    fuzz_sims: Any, neg_sims: Any, *, resolution: int = 2001, bandwidth: float | str | None = None, method: KDEMethod = "auto"
) -> float:
    """Overlap of the fuzz and negation curves (paper eq. 1-2), in [0, 1]: lower = better separation.

    >>> csc_overlap([0.9, 0.95, 0.97], [0.9, 0.95, 0.97])
    1.0
    """
    return csc_curves(fuzz_sims, neg_sims, resolution=resolution, bandwidth=bandwidth, method=method).overlap


# --------------------------------------------------------------------------- dataset level


@dataclass
class CSCResult:
    """Concept Separation Curves of one model on one corpus (see :func:`concept_separation`)."""

    model: str
    corpus: str
    language: str
    negation_mode: str
    overlap: float
    ci: tuple[float, float]
    median_fuzz: float
    median_negation: float
    separation: float  # median fuzz - median negation (> 0: negation moves the vector more)
    separation_ci: tuple[float, float]
    n_boot: int
    confidence: float
    seed: int
    curves: CSCCurves
    sentences: list[str]
    perturbations: pd.DataFrame  # sentence, kind, position, term, text, similarity (NaN if dropped), status
    n_dropped: dict[str, int]
    n_without_negation: int
    n_without_fuzz: int
    buckets: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    # -- views ----------------------------------------------------------------
    @property
    def n_sentences(self) -> int:
        return len(self.sentences)

    def sims(self, kind: Kind) -> np.ndarray:
        """The defined similarities of one curve."""
        p = self.perturbations
        return p.loc[(p.kind == kind) & (p.status == "ok"), "similarity"].to_numpy(dtype=np.float64)

    @property
    def n_fuzz(self) -> int:
        return int(self.sims("fuzz").size)

    @property
    def n_negation(self) -> int:
        return int(self.sims("negation").size)

    def sentence_table(self) -> pd.DataFrame:
        """One row per original sentence: counts, mean similarities, their gap, the closest negated variant.

        ``negation_gap`` = mean fuzz similarity - mean negation similarity: negative
        means the negation moved the embedding *less* than inserting an article.
        """
        p = self.perturbations[self.perturbations.status == "ok"]
        rows = []
        for i, s in enumerate(self.sentences):
            q = p[p.sentence == i]
            fz, ng = q[q.kind == "fuzz"], q[q.kind == "negation"]
            best = ng.loc[ng.similarity.idxmax()] if len(ng) else None
            mf = float(fz.similarity.mean()) if len(fz) else math.nan
            mn = float(ng.similarity.mean()) if len(ng) else math.nan
            rows.append({
                "sentence": s, "n_words": len(s.split()), "n_fuzz": len(fz), "n_negation": len(ng),
                "mean_fuzz": mf, "mean_negation": mn, "negation_gap": mf - mn,
                "closest_negation": None if best is None else best.text,
                "closest_negation_similarity": math.nan if best is None else float(best.similarity),
            })
        return pd.DataFrame(rows)

    def insensitive_cases(self, n: int = 10) -> pd.DataFrame:
        """The ``n`` sentences whose negation moved the embedding least relative to fuzzing (smallest gap first)."""
        t = self.sentence_table()
        return t.sort_values("negation_gap", kind="stable", na_position="last").head(n).reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """Flat numbers for a table row."""
        return {
            "model": self.model, "corpus": self.corpus, "language": self.language, "negation_mode": self.negation_mode,
            "overlap": self.overlap, "ci_low": self.ci[0], "ci_high": self.ci[1],
            "median_fuzz": self.median_fuzz, "median_negation": self.median_negation,
            "separation": self.separation, "separation_ci_low": self.separation_ci[0], "separation_ci_high": self.separation_ci[1],
            "n_sentences": self.n_sentences, "n_fuzz": self.n_fuzz, "n_negation": self.n_negation,
            "n_dropped": int(self.n_dropped.get("fuzz", 0) + self.n_dropped.get("negation", 0)),  # variants without a cosine
            "n_zero_originals": int(self.n_dropped.get("original_zero_vectors", 0)),
        }

    # -- serialisation -------------------------------------------------------
    def save(self, path: str | os.PathLike) -> str:
        """Write :meth:`to_dict` as JSON, atomically (readers never see half a file)."""
        from .provenance import atomic_write_json

        return str(atomic_write_json(path, self.to_dict()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CSCResult":
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN -> None); round-trips through :meth:`from_dict`."""
        p = self.perturbations
        d = {
            "model": self.model, "corpus": self.corpus, "language": self.language, "negation_mode": self.negation_mode,
            "overlap": self.overlap, "ci": list(self.ci), "median_fuzz": self.median_fuzz,
            "median_negation": self.median_negation, "separation": self.separation, "separation_ci": list(self.separation_ci),
            "n_boot": self.n_boot, "confidence": self.confidence, "seed": self.seed,
            "curves": {
                "grid": self.curves.grid.tolist(), "fuzz": self.curves.fuzz.tolist(), "negation": self.curves.negation.tolist(),
                "overlap": self.curves.overlap, "fuzz_kernel_sd": self.curves.fuzz_kernel_sd,
                "negation_kernel_sd": self.curves.negation_kernel_sd, "routes": list(self.curves.routes),
            },
            "sentences": list(self.sentences),
            "perturbations": {c: p[c].tolist() for c in ("sentence", "kind", "position", "term", "text", "similarity", "status")},
            "n_dropped": dict(self.n_dropped), "n_without_negation": self.n_without_negation,
            "n_without_fuzz": self.n_without_fuzz, "buckets": self.buckets, "notes": list(self.notes),
            "provenance": self.provenance,
        }
        return json_ready(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CSCResult":
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        c = d["curves"]
        curves = CSCCurves(np.array(c["grid"], dtype=float), np.array(c["fuzz"], dtype=float), np.array(c["negation"], dtype=float),
                           float(c["overlap"]), float(c["fuzz_kernel_sd"]), float(c["negation_kernel_sd"]), tuple(c["routes"]))
        pert = pd.DataFrame(d["perturbations"])
        pert["similarity"] = pert["similarity"].map(num).astype(float)
        return cls(
            model=d["model"], corpus=d["corpus"], language=d["language"], negation_mode=d["negation_mode"],
            overlap=num(d["overlap"]), ci=(num(d["ci"][0]), num(d["ci"][1])), median_fuzz=num(d["median_fuzz"]),
            median_negation=num(d["median_negation"]), separation=num(d["separation"]),
            separation_ci=(num(d["separation_ci"][0]), num(d["separation_ci"][1])), n_boot=int(d["n_boot"]),
            confidence=float(d["confidence"]), seed=int(d["seed"]), curves=curves, sentences=list(d["sentences"]),
            perturbations=pert, n_dropped={k: int(v) for k, v in d["n_dropped"].items()},
            n_without_negation=int(d["n_without_negation"]), n_without_fuzz=int(d["n_without_fuzz"]),
            buckets=[{k: (math.nan if v is None else v) for k, v in b.items()} for b in d.get("buckets", [])],
            notes=list(d.get("notes", [])), provenance=dict(d.get("provenance", {})),
        )




def _cosines(orig: np.ndarray, pert: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise cosine; NaN where either vector is zero (undefined), plus that mask."""
    no = np.linalg.norm(orig, axis=1)
    npt = np.linalg.norm(pert, axis=1)
    zero = (no == 0) | (npt == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", orig, pert) / (no * npt)
    cos = np.clip(cos, -1.0, 1.0)  # float rounding can step just outside [-1, 1]
    cos[zero] = np.nan
    return cos, zero


def _stats_for(fz: np.ndarray, ng: np.ndarray, resolution: int, bandwidth: Any, method: KDEMethod) -> tuple[float, float]:
    if fz.size == 0 or ng.size == 0:
        return math.nan, math.nan
    ov = csc_curves(fz, ng, resolution=resolution, bandwidth=bandwidth, method=method).overlap
    return ov, float(np.median(fz) - np.median(ng))


def _bootstrap(
    fz: np.ndarray, fz_sent: np.ndarray, ng: np.ndarray, ng_sent: np.ndarray, n_sentences: int, *,
    n_boot: int, seed: int, confidence: float, method: str, resolution: int, bandwidth: Any, kde_method: KDEMethod,
) -> tuple[tuple[float, float], tuple[float, float], list[str]]:
    """Intervals of (overlap, separation), resampling original sentences with replacement.

    scipy.stats.bootstrap does the resampling and the interval (BCa by default:
    the overlap of two resampled, noisier curves is biased low, and BCa corrects
    for that bias; 'percentile' and 'basic' are available).  A resample draws
    sentence indices; each drawn sentence brings all its variants.
    """
    import warnings

    import scipy.stats

    def statistic(idx: np.ndarray) -> np.ndarray:
        counts = np.bincount(idx.astype(np.int64), minlength=n_sentences)
        f, g = np.repeat(fz, counts[fz_sent]), np.repeat(ng, counts[ng_sent])
        return np.array(_stats_for(f, g, resolution, bandwidth, kde_method))

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = scipy.stats.bootstrap(
            (np.arange(n_sentences),), statistic, vectorized=False, n_resamples=n_boot, confidence_level=confidence,
            method=method, rng=np.random.default_rng(seed),
        )
    low, high = np.asarray(res.confidence_interval.low, float), np.asarray(res.confidence_interval.high, float)
    dist = np.asarray(res.bootstrap_distribution, float)
    n_empty = int((~np.isfinite(dist[0])).sum())
    if n_empty:
        notes.append(f"{n_empty} of {n_boot} bootstrap resamples had an empty curve")
    for k in range(2):
        if not (np.isfinite(low[k]) and np.isfinite(high[k])):  # degenerate (no spread) or empty resamples
            v = dist[k][np.isfinite(dist[k])]
            if v.size:
                a = (1 - confidence) / 2
                low[k], high[k] = np.quantile(v, a), np.quantile(v, 1 - a)
                notes.append(f"{method} interval undefined for the {('overlap', 'separation')[k]} "
                             f"({'; '.join(str(w.message)[:80] for w in caught) or 'no spread'}); percentile interval used")
    return (float(low[0]), float(high[0])), (float(low[1]), float(high[1])), notes


def _length_buckets(
    edges: Sequence[int], n_words: np.ndarray, fz: np.ndarray, fz_sent: np.ndarray, ng: np.ndarray, ng_sent: np.ndarray,
    resolution: int, bandwidth: Any, method: KDEMethod,
) -> list[dict[str, Any]]:
    e = sorted(set(int(x) for x in edges))
    if len(e) < 1 or e[0] < 0:
        raise ValueError(f"length_buckets must be non-negative word-count edges, got {list(edges)}")
    bounds = list(zip(e, e[1:] + [None]))
    out = []
    for lo, hi in bounds:
        in_b = (n_words >= lo) & (n_words < hi if hi is not None else True)
        f, g = fz[in_b[fz_sent]], ng[in_b[ng_sent]]
        ov, sep = _stats_for(f, g, resolution, bandwidth, method)
        out.append({
            "bucket": f"{lo}-{hi}" if hi is not None else f">={lo}", "min_words": lo, "max_words": None if hi is None else hi - 1,
            "n_sentences": int(in_b.sum()), "n_fuzz": int(f.size), "n_negation": int(g.size), "overlap": ov,
            "median_fuzz": float(np.median(f)) if f.size else math.nan,
            "median_negation": float(np.median(g)) if g.size else math.nan, "separation": sep,
        })
    return out


def _prepare_sentences(sentences: Any, language: str | None) -> tuple[list[str], str, str, str, str, list[str]]:
    """(sentences, language, corpus name, source, sha256, notes) from a corpus, a list or a path."""
    from .corpora import load_sentence_corpus

    if isinstance(sentences, (str, os.PathLike)):
        sentences = load_sentence_corpus(sentences, language=language)
    if isinstance(sentences, SentenceCorpus):
        lang = language or sentences.language
        return list(sentences.sentences), lang, sentences.name, sentences.source, sentences.sha256, list(sentences.report)
    if language is None:
        raise ValueError("language= is required when sentences is a list (e.g. language='en')")
    corpus = SentenceCorpus.from_sentences(list(sentences), language=language, name="sentences")  # raises if empty
    return list(corpus.sentences), language, corpus.name, corpus.source, corpus.sha256, list(corpus.report)


def concept_separation(
    sentences: SentenceCorpus | Sequence[str] | str | os.PathLike,
    model: str | Encoder,
    *,
    language: str | None = None,
    max_per_sentence: int = 3,
    negation: NegationMode = "particle",
    seed: int = 0,
    resolution: int = 2001,
    bandwidth: float | str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: Literal["BCa", "percentile", "basic"] = "BCa",
    min_words: int | None = None,
    max_words: int | None = None,
    length_buckets: Sequence[int] | None = None,
    kde_method: KDEMethod = "auto",
    tfidf_fit: Literal["all", "originals"] = "all",
    cache: Any = None,
    name: str | None = None,
    progress: bool | None = None,
) -> CSCResult:
    """Concept Separation Curves of ``model`` on ``sentences`` (a corpus, a list, a file or a corpus name).

    Perturbs every sentence (seeded), embeds originals and variants through the
    embedding cache (``cache=None``: the default cache; ``False``: none), and
    returns the curves, the overlap with a bootstrap interval over original
    sentences (seeded; ``ci_method`` BCa by default, see :func:`_bootstrap`), the medians and their separation, per-length
    buckets (``length_buckets=(0, 10, 20, 30, 40, 50)`` gives the paper's bins),
    the per-sentence table and provenance.  ``min_words``/``max_words`` keep
    only sentences of that length (the paper's filtered sets).

    A zero vector (e.g. TF-IDF of a text with no known term) has no cosine:
    its similarity is NaN, it is left out of the curves, and ``n_dropped``
    counts it.  A corpus-fitted model (TF-IDF) is fitted on the originals and
    all variants (``tfidf_fit="all"``, so inserted terms are in its vocabulary)
    or on the originals only (``"originals"``: unseen terms are then invisible).

    >>> r = concept_separation(["Manage a team of engineers.", "The shop is open."], "random-null",
    ...                        language="en", n_boot=20, cache=False)
    >>> r.n_fuzz, r.n_negation
    (6, 6)
    """
    from .cache import EmbeddingCache
    from .registry import load_model

    _validate_grid(resolution, bandwidth)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ValueError(f"n_boot must be an integer >= 0, got {n_boot!r}")
    if ci_method not in ("BCa", "percentile", "basic"):
        raise ValueError(f"ci_method must be 'BCa', 'percentile' or 'basic', got {ci_method!r}")
    if tfidf_fit not in ("all", "originals"):
        raise ValueError(f"tfidf_fit must be 'all' or 'originals', got {tfidf_fit!r}")
    texts, lang, corpus_name, source, sha, notes = _prepare_sentences(sentences, language)
    rules = get_language_rules(lang)
    lang = rules.code
    n_before = len(texts)
    if min_words is not None or max_words is not None:
        for nm, v in (("min_words", min_words), ("max_words", max_words)):
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
                raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
        texts = [s for s in texts if (min_words is None or len(rules.words(s)) >= min_words)
                 and (max_words is None or len(rules.words(s)) <= max_words)]
        notes.append(f"length filter {min_words}..{max_words} words kept {len(texts)} of {n_before} sentences")
        if not texts:
            raise ValueError(f"the length filter min_words={min_words}, max_words={max_words} left no sentence of {n_before}")

    perts = perturb_corpus(texts, language=lang, max_per_sentence=max_per_sentence, seed=seed, negation=negation)
    per_kind = {k: {p.sentence for p in perts if p.kind == k} for k in ("fuzz", "negation")}
    n_without_neg = len(texts) - len(per_kind["negation"])
    n_without_fuzz = len(texts) - len(per_kind["fuzz"])
    if n_without_neg:
        notes.append(f"{n_without_neg} sentence(s) got no negated variant (negation={negation!r})")
    if not any(p.kind == "negation" for p in perts):
        raise ValueError(f"no sentence could be negated with negation={negation!r} (e.g. no auxiliary in any sentence)")

    encoder = load_model(model)
    all_texts = list(dict.fromkeys(texts + [p.text for p in perts]))
    if encoder.requires_fit and getattr(encoder, "_idf", None) is None:
        encoder = encoder.fit(all_texts if tfidf_fit == "all" else texts)  # type: ignore[attr-defined]
    enc_lang = lang if encoder.language_dependent else None
    if cache is False:
        before = encoder.calls
        matrix = encoder.encode(all_texts, language=enc_lang)
        emb_stats = {"n_unique": len(all_texts), "n_cached": 0, "n_encoded": len(all_texts), "n_batches": encoder.calls - before}
    else:
        store = cache if cache is not None else EmbeddingCache()
        matrix = store.embed(encoder, all_texts, language=enc_lang, progress=progress)
        emb_stats = asdict(store.last_stats)
    row = {t: i for i, t in enumerate(all_texts)}
    orig = matrix[[row[texts[p.sentence]] for p in perts]].astype(np.float64)
    pv = matrix[[row[p.text] for p in perts]].astype(np.float64)
    sims, zero = _cosines(orig, pv)
    orig_zero = np.linalg.norm(matrix[[row[t] for t in texts]].astype(np.float64), axis=1) == 0
    frame = pd.DataFrame({
        "sentence": [p.sentence for p in perts], "kind": [p.kind for p in perts], "position": [p.position for p in perts],
        "term": [p.term for p in perts], "text": [p.text for p in perts], "similarity": sims,
        "status": np.where(zero, "zero-vector", "ok"),
    })
    kinds = frame.kind.to_numpy()
    n_dropped = {
        "original_zero_vectors": int(orig_zero.sum()),
        "fuzz": int((zero & (kinds == "fuzz")).sum()),
        "negation": int((zero & (kinds == "negation")).sum()),
    }
    if any(n_dropped.values()):
        notes.append(
            f"dropped undefined cosines (zero vectors): {n_dropped['fuzz']} fuzz and {n_dropped['negation']} negation "
            f"variants; {n_dropped['original_zero_vectors']} original sentence(s) embed to zero"
        )
    ok = ~zero
    fz_mask, ng_mask = ok & (kinds == "fuzz"), ok & (kinds == "negation")
    fz, ng = sims[fz_mask], sims[ng_mask]
    sent = frame.sentence.to_numpy()
    if fz.size == 0 or ng.size == 0:
        raise EmbeddingError(
            f"{encoder.model_id}: no defined similarity left for the {'fuzz' if fz.size == 0 else 'negation'} curve "
            f"({n_dropped} zero vectors dropped)"
        )
    curves = csc_curves(fz, ng, resolution=resolution, bandwidth=bandwidth, method=kde_method)
    for kind, route in zip(("fuzz", "negation"), curves.routes):
        if route == "point-mass":
            notes.append(f"every {kind} similarity is the same value: its curve is a point mass (no KDE spread)")
    if n_boot > 0 and len(texts) >= 2:
        ci, sep_ci, boot_notes = _bootstrap(fz, sent[fz_mask], ng, sent[ng_mask], len(texts), n_boot=n_boot, seed=seed,
                                            confidence=confidence, method=ci_method, resolution=resolution,
                                            bandwidth=bandwidth, kde_method=kde_method)
        notes.extend(boot_notes)
        if not ci[0] <= curves.overlap <= ci[1]:
            notes.append(
                f"the overlap {curves.overlap:.4f} lies outside its {ci_method} interval [{ci[0]:.4f}, {ci[1]:.4f}]: resampled "
                "curves are noisier, so their overlap is biased (typically low) and almost every resample fell on one side; "
                "read the interval as indicative (more sentences shrink the bias)"
            )
    else:
        ci = sep_ci = (math.nan, math.nan)
        if n_boot > 0:
            notes.append("one sentence: no bootstrap interval")
    buckets = []
    if length_buckets is not None:
        nw = np.array([len(rules.words(s)) for s in texts])
        buckets = _length_buckets(length_buckets, nw, fz, sent[fz_mask], ng, sent[ng_mask], resolution, bandwidth, kde_method)
    med_f, med_n = float(np.median(fz)), float(np.median(ng))
    params = {
        "max_per_sentence": max_per_sentence, "negation": negation, "seed": seed, "resolution": resolution,
        "bandwidth": bandwidth, "n_boot": n_boot, "confidence": confidence, "ci_method": ci_method, "min_words": min_words, "max_words": max_words,
        "length_buckets": None if length_buckets is None else list(length_buckets), "kde_method": kde_method,
        "kde_routes": list(curves.routes), "tfidf_fit": tfidf_fit if encoder.requires_fit else None,
    }
    provenance = {
        "model": encoder.model_id, "model_version": encoder.version, "model_options": encoder.options,
        "corpus": name or corpus_name, "corpus_source": source, "corpus_sha256": sha, "language": lang,
        "language_rules": rules.to_dict(), "parameters": params, "embedding": emb_stats,
        "packages": package_info(), "created": utc_now(),
    }
    return CSCResult(
        model=encoder.model_id, corpus=name or corpus_name, language=lang, negation_mode=negation,
        overlap=curves.overlap, ci=ci, median_fuzz=med_f, median_negation=med_n, separation=med_f - med_n,
        separation_ci=sep_ci, n_boot=n_boot, confidence=confidence, seed=seed, curves=curves, sentences=texts,
        perturbations=frame, n_dropped=n_dropped, n_without_negation=n_without_neg, n_without_fuzz=n_without_fuzz,
        buckets=buckets, notes=notes, provenance=provenance,
    )


# --------------------------------------------------------------------------- many models x corpora


def csc_table(results: Mapping[tuple[str, str], CSCResult] | Sequence[CSCResult]) -> pd.DataFrame:
    """One row per result (:meth:`CSCResult.summary`), sorted by model then corpus."""
    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    df = pd.DataFrame([r.summary() for r in items])
    return df.sort_values(["model", "corpus"], kind="stable").reset_index(drop=True) if not df.empty else df


@dataclass
class CSCGrid:
    """Every (model, corpus) result of :func:`concept_separation_grid`, and what failed."""

    results: dict[tuple[str, str], CSCResult]
    failures: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def table(self) -> pd.DataFrame:
        return csc_table(self.results)


def concept_separation_grid(
    models: Sequence[str | Encoder], corpora: Sequence[SentenceCorpus], **options: Any
) -> CSCGrid:
    """:func:`concept_separation` for every model on every corpus; a failing pair is recorded, not raised."""
    results, failures = {}, {}
    for m in models:
        mid = m if isinstance(m, str) else m.model_id
        for c in corpora:
            try:
                results[(mid, c.name)] = concept_separation(c, m, **options)
            except Exception as exc:  # one failing pair must not sink the grid
                failures[(mid, c.name)] = f"{type(exc).__name__}: {exc}"
    return CSCGrid(results, failures)
