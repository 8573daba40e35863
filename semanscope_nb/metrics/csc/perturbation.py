"""Seeded sentence perturbation for CSC: insert an article (fuzz) or a negation before a word.

Layer: metrics.  Imports the CSC language rules and the data layer only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from semanscope_nb.data.concept_key import text_seed
from semanscope_nb.metrics.csc.languages import (
    TRAILING_PUNCT,
    VOWELS,
    KIND_CODES,
    LANGUAGE_RULES,
    Kind,
    LanguageRules,
    NegationMode,
    UnsupportedLanguageError,
    get_language_rules,
)

# --------------------------------------------------------------------------- perturbation


@dataclass(frozen=True)
class Perturbation:
    """One generated sentence: ``term`` inserted at ``position`` (before word ``position``, 0-based)."""

    sentence: int
    kind: str
    position: int
    term: str
    text: str


def _elide(rules: LanguageRules, term: str, next_word: str | None) -> str | None:
    if next_word and next_word[0] in VOWELS:
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
            core = w[target].rstrip(TRAILING_PUNCT)
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
    rng = np.random.default_rng([int(seed), KIND_CODES[kind], text_seed(" ".join(sentence.split()))])
    order = rng.permutation(len(combos))[: int(max_per_sentence)]
    return [Perturbation(index, kind, combos[i][0], combos[i][1], combos[i][2]) for i in order]


def perturb_corpus(
    sentences: Sequence[str],
    *,
    language: str,
    max_per_sentence: int = 3,
    seed: int = 0,
    negation: NegationMode = "particle",
    rules: LanguageRules | None = None,
) -> list[Perturbation]:
    """Fuzz and negation variants of every sentence (``sentence`` = index into ``sentences``).

    ``rules`` overrides the table entry of ``language`` (e.g. ``LanguageRules.from_terms(...)``).
    """
    rules = rules or get_language_rules(language)
    out: list[Perturbation] = []
    for i, s in enumerate(sentences):
        for kind in ("fuzz", "negation"):
            out.extend(perturb_sentence(s, language=language, kind=kind, max_per_sentence=max_per_sentence, seed=seed,
                                        negation=negation, index=i, rules=rules))
    return out


