"""What the CSC perturbations do to one sentence, with each variant's cosine to the original (the authors' live example).

Layer: metrics.  Imports the CSC rooms beside it and the models layer.

>>> p = perturbation_preview("Jag dricker kaffe varje morgon.", "random-null", language="sv",
...                          fuzz_terms="en | ett", negation_terms="inte", cache=False)
>>> p.frame()[["kind", "term"]].value_counts().sort_index().to_dict()
{('fuzz', 'en'): 2, ('fuzz', 'ett'): 1, ('negation', 'inte'): 3}
>>> bool(((p.frame().cosine >= -1) & (p.frame().cosine <= 1)).all())
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.metrics.csc.languages import LanguageRules, NegationMode
from semanscope_nb.metrics.csc.perturbation import perturb_sentence
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.results import Result


@dataclass(frozen=True)
class PerturbationPreview(Result):
    """The variants of one sentence and their cosine similarity to it (NaN where a vector is zero).

    The main score is the mean cosine of the negated variants (lower: the model hears the negation).
    """

    kind = "csc-preview"
    main_score_name = "mean_negation"

    sentence: str
    model: str
    language: str
    kinds: tuple[str, ...]
    positions: tuple[int, ...]
    terms: tuple[str, ...]
    texts: tuple[str, ...]
    cosines: tuple[float, ...]
    rules: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_negation(self) -> float:
        """Mean cosine of the negated variants to the sentence (NaN if there are none)."""
        return self.mean_cosine("negation")

    def frame(self) -> pd.DataFrame:
        """One row per variant: kind, position, term, text, cosine."""
        return pd.DataFrame({"kind": list(self.kinds), "position": list(self.positions), "term": list(self.terms),
                             "text": list(self.texts), "cosine": list(self.cosines)})

    def mean_cosine(self, kind: str) -> float:
        """Mean cosine of one kind's variants (NaN if it has none)."""
        v = [c for k, c in zip(self.kinds, self.cosines) if k == kind and not math.isnan(c)]
        return float(np.mean(v)) if v else math.nan


def perturbation_preview(
    sentence: str,
    model: str | Encoder,
    *,
    language: str,
    fuzz_terms: str | Sequence[str] | None = None,
    negation_terms: str | Sequence[str] | None = None,
    max_per_sentence: int = 3,
    seed: int = 0,
    negation: NegationMode = "particle",
    cache: Any = None,
) -> PerturbationPreview:
    """Perturb ``sentence`` exactly as :func:`concept_separation` does and embed it with ``model``.

    Terms, ``language``, ``max_per_sentence``, ``seed`` and ``negation`` mean
    what they mean there (the variants are the ones a corpus run gives this
    sentence).  ``cache``: an :class:`~semanscope_nb.EmbeddingCache`, None
    (the default cache) or False (none).  A corpus-fitted model (TF-IDF) is
    fitted on the sentence and its variants.
    """
    from semanscope_nb.metrics.csc.separation import pair_cosines, rules_for
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.registry import load_model

    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError(f"sentence must be a non-empty string, got {sentence!r}")
    rules: LanguageRules = rules_for(language, fuzz_terms=fuzz_terms, negation_terms=negation_terms)
    text = " ".join(sentence.split())
    perts = [p for kind in ("fuzz", "negation")
             for p in perturb_sentence(text, language=rules.code, kind=kind, max_per_sentence=max_per_sentence, seed=seed,
                                       negation=negation, rules=rules)]
    encoder = load_model(model)
    texts = list(dict.fromkeys([text] + [p.text for p in perts]))
    encoder = encoder.prepare(texts)
    lang = rules.code if encoder.language_dependent else None
    if cache is False:
        matrix = encoder.encode(texts, language=lang)
    else:
        store = cache if cache is not None else EmbeddingCache()
        matrix = store.embed(encoder, texts, language=lang, progress=False)
    row = {t: i for i, t in enumerate(texts)}
    if perts:
        orig = np.repeat(matrix[[0]].astype(np.float64), len(perts), axis=0)
        cos, _ = pair_cosines(orig, matrix[[row[p.text] for p in perts]].astype(np.float64))
    else:
        cos = np.zeros(0)
    return PerturbationPreview(
        sentence=text, model=encoder.model_id, language=rules.code, kinds=tuple(p.kind for p in perts),
        positions=tuple(p.position for p in perts), terms=tuple(p.term for p in perts), texts=tuple(p.text for p in perts),
        cosines=tuple(float(c) for c in cos), rules=rules.to_dict(),
    )
