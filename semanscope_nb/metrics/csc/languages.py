"""Per-language rules for Concept Separation Curves: which articles fuzz and which particle negates.

The table :data:`LANGUAGE_RULES` is user-extendable (:func:`register_language_rules`);
see :mod:`semanscope_nb.metrics.csc` for the rules of each built-in language.

Layer: metrics.  Imports :mod:`semanscope_nb.errors` and the data layer only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, Sequence

from semanscope_nb.data.languages import language_code
from semanscope_nb.errors import UnsupportedLanguageError

Kind = Literal["fuzz", "negation"]
NegationMode = Literal["particle", "grammatical", "wrap"]
KIND_CODES = {"fuzz": 1, "negation": 2}
TRAILING_PUNCT = ".,;:!?…)»\"'"
VOWELS = set("aeiouyhàâäéèêëîïôöûüùœæAEIOUYHÀÂÄÉÈÊËÎÏÔÖÛÜÙŒÆ")


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

    @classmethod
    def from_terms(
        cls, fuzz_terms: str | Sequence[str], negation_terms: str | Sequence[str], *, code: str = "custom",
        name: str | None = None, base: "LanguageRules | None" = None,
        segmentation: Literal["whitespace", "character"] | None = None,
    ) -> "LanguageRules":
        """Rules from free-form terms, as the authors' tool takes them (``"the | a"``, ``"not"``).

        Each of ``fuzz_terms`` / ``negation_terms`` is a ``|``-separated string
        or a list of strings.  ``base`` keeps that language's other rules
        (auxiliaries, wrap, elisions); otherwise the language is split on
        whitespace.  Nothing is registered (see :func:`register_language_rules`).

        >>> r = LanguageRules.from_terms("en | ett", ["inte"], code="sv", name="Swedish")
        >>> r.articles, r.negations, r.segmentation
        (('en', 'ett'), ('inte',), 'whitespace')
        """
        arts, negs = parse_terms(fuzz_terms, "fuzz_terms"), parse_terms(negation_terms, "negation_terms")
        if base is not None:
            return replace(base, articles=arts, negations=negs, name=name or base.name,
                           segmentation=segmentation or base.segmentation,
                           notes=f"terms given directly: fuzz {' | '.join(arts)}; negation {' | '.join(negs)}")
        if not isinstance(code, str) or not code.strip():
            raise ValueError(f"code must be a non-empty string such as 'sv', got {code!r}")
        return cls(code.strip(), name or code.strip(), arts, negs, segmentation=segmentation or "whitespace",
                   notes=f"terms given directly: fuzz {' | '.join(arts)}; negation {' | '.join(negs)}")

    def words(self, sentence: str) -> list[str]:
        """The sentence's words (whitespace split, or characters)."""
        return list(sentence.replace(" ", "")) if self.segmentation == "character" else sentence.split()

    def join(self, words: Sequence[str]) -> str:
        return "".join(words) if self.segmentation == "character" else " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))


def parse_terms(terms: Any, name: str = "terms") -> tuple[str, ...]:
    """``"the | a"`` or ``["the", "a"]`` as a tuple of stripped, non-empty, distinct terms (order kept).

    >>> parse_terms(" the |a | the")
    ('the', 'a')
    """
    if isinstance(terms, str):
        parts = terms.split("|")
    elif isinstance(terms, (list, tuple)) and all(isinstance(t, str) for t in terms):
        parts = list(terms)
    else:
        raise ValueError(f"{name} must be a '|'-separated string ('the | a') or a list of strings, got {terms!r}")
    out = tuple(dict.fromkeys(t.strip() for t in parts if t.strip()))
    if not out:
        raise ValueError(f"{name} holds no term (got {terms!r}); give at least one, e.g. 'the | a'")
    return out


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
            "LanguageRules(..., segmentation='character') for a character-level stress test (see semanscope_nb.metrics.csc)."
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


