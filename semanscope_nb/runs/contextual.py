"""Paper 001's comparison on the shared data: iso-type vs avg-type vs token anchors, orig vs Procrustes vs MIM,
evaluated on BTSR-style sense retrieval and on lexicon induction (nearest neighbour and CSLS).

For each target language L (``de``: Tatoeba deu-eng; ``zh``: SIB-200 zho_Hans-eng_Latn, since the shared
Tatoeba has no Chinese) and English:

1. a seeded sample of ``n_sentences`` parallel pairs is encoded (word vectors, mean of layers 1..n);
   half of the pairs (the *anchor half*) may give anchors, the other half (the *evaluation half*) is only
   used by BTSR;
2. a MUSE ``en-L`` test split (``n_test_words`` source words, seeded) is held out; every anchor set drops
   its words and the fit asserts it;
3. anchors: avg-type (dictionary words found in the anchor half, plus any ``extra_corpus``), iso-type (the
   same pairs, words encoded alone), token (aligned words of the anchor half);
4. every anchor set fits Procrustes and Procrustes+MIM; ``orig`` is no map at all;
5. BTSR on the evaluation half (contextual tokens and a type-average baseline) and BDI over a target pool
   (the test golds plus a seeded sample of the MUSE target vocabulary; ``bdi_pool=None``: all of it).

Example
-------
>>> from semanscope_nb.runs.contextual import resolve_encoders
>>> sorted(resolve_encoders({"en": "multilingual-e5-small", "de": "multilingual-e5-small"}, ["en", "de"]))
['de', 'en']
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from semanscope_nb.data.bitext import read_tatoeba, sib200_parallel
from semanscope_nb.data.dictionaries import read_muse_dictionary, split_dictionary
from semanscope_nb.metrics.contextual import (
    Anchors,
    EncodedCorpus,
    avg_type_anchors,
    encode_corpus,
    find_occurrences,
    fit_anchor_alignment,
    iso_type_anchors,
    lexicon_induction_vectors,
    sense_retrieval,
    token_anchors,
    token_pairs,
)
from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.settings import resolve

__all__ = ["ContextualReport", "contextual_comparison", "parallel_sample", "resolve_encoders"]


def resolve_encoders(encoders: Any, languages: Sequence[str]) -> dict[str, Any]:
    """language -> token encoder, from one id/encoder or a mapping language -> id/encoder (loaded lazily)."""
    from semanscope_nb.models.tokens import load_token_encoder

    def one(e: Any) -> Any:
        return load_token_encoder(e) if isinstance(e, str) else e

    if isinstance(encoders, Mapping):
        missing = [lang for lang in languages if lang not in encoders]
        if missing:
            raise ValueError(f"encoders has no entry for language(s) {missing}")
        cache: dict[Any, Any] = {}
        return {lang: cache.setdefault(encoders[lang], one(encoders[lang])) if isinstance(encoders[lang], str)
                else encoders[lang] for lang in languages}
    enc = one(encoders)
    return {lang: enc for lang in languages}


def parallel_sample(language: str, n: int, *, seed: int = 0):
    """(L sentences, English sentences, corpus) for ``de`` (Tatoeba) or ``zh`` (SIB-200 test+dev), seeded sample."""
    if language == "zh":
        parts = [sib200_parallel("zho_Hans", "eng_Latn", split=s) for s in ("test", "dev")]
        src = sum((list(p.source_texts) for p in parts), [])
        eng = sum((list(p.target_texts) for p in parts), [])
        meta = {"name": "sib200-zho_Hans-eng_Latn(test+dev)", "sha256": parts[0].sha256 + parts[1].sha256}
    else:
        c = read_tatoeba(language)
        src, eng, meta = list(c.source_texts), list(c.target_texts), {"name": c.name, "sha256": c.sha256}
    if n > len(src):
        raise ValueError(f"n={n} exceeds the {len(src)} parallel pairs of {meta['name']}")
    pick = np.sort(np.random.default_rng(seed).choice(len(src), n, replace=False))
    return [src[i] for i in pick], [eng[i] for i in pick], meta


@dataclass(frozen=True)
class ContextualReport(Result):
    """The comparison table plus the anchors and what was dropped (per language).

    One table row per (language, anchors, mapping, task) with ``P@K`` and its
    interval as ``P@K lo`` / ``P@K hi``.  The main score is the best BDI P@1
    (nearest neighbour or CSLS, any anchors and mapping).
    """

    kind = "contextual-report"
    main_score_name = "best_bdi_p_at_1"

    table: pd.DataFrame
    anchors: dict[str, dict[str, Anchors]]
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def best_bdi_p_at_1(self) -> float:
        """The highest P@1 over the BDI rows (NaN when there are none)."""
        t = self.table
        if t.empty or "task" not in t or "P@1" not in t:
            return math.nan
        bdi = t.loc[t["task"].astype(str).str.startswith("BDI"), "P@1"].dropna()
        return float(bdi.max()) if len(bdi) else math.nan

    def estimates(self) -> dict[str, Estimate]:
        """``"en-de|avg|procrustes|BDI-csls|P@1"`` -> P@K with its interval, for every row (``sem``: NaN)."""
        out = {}
        for r in self.table.to_dict("records"):
            row = "|".join(str(r[c]) for c in ("language", "anchors", "mapping", "task"))
            for k in (1, 5):
                if f"P@{k}" in r:
                    out[f"{row}|P@{k}"] = Estimate(r[f"P@{k}"], math.nan, Interval(r[f"P@{k} lo"], r[f"P@{k} hi"]))
        return out


def _row(language, anchors, mapping, task, score) -> dict[str, Any]:
    out = {"language": f"en-{language}", "anchors": anchors, "mapping": mapping, "task": task,
           "n_queries": score.n_queries, "pool": score.pool_size}
    for k in (1, 5):
        out[f"P@{k}"] = score.accuracy[k]
        out[f"P@{k} lo"], out[f"P@{k} hi"] = score.interval[k]
    return out


def contextual_comparison(
    languages: Sequence[str] = ("de", "zh"),
    *,
    encoders: Any = "multilingual-e5-small",
    n_sentences: int = 300,
    n_test_words: int = 100,
    n_anchor_words: int = 300,
    bdi_pool: int | None = 1000,
    btsr_pool: int = 1000,
    max_occurrences: int = 20,
    extra_corpus: Mapping[str, Sequence[str]] | None = None,
    n_boot: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> ContextualReport:
    """Run the comparison (see the module docstring); ``encoders`` may differ per language (a mapping)."""
    n_boot = resolve(n_boot, "n_boot")
    rows, notes, all_anchors = [], [], {}
    encs = resolve_encoders(encoders, ["en", *languages])
    say = print if progress else (lambda *a, **k: None)
    for lang in languages:
        src_l, src_en, meta = parallel_sample(lang, n_sentences, seed=seed)
        say(f"en-{lang}: encoding {2 * n_sentences} sentences")
        c_en = encode_corpus(encs, src_en, "en")
        c_l = encode_corpus(encs, src_l, lang)
        pairs = token_pairs(c_en, c_l)
        half = set(np.random.default_rng(seed + 1).permutation(n_sentences)[: n_sentences // 2].tolist())
        d = read_muse_dictionary(f"en-{lang}")
        test_pairs = list(split_dictionary(d, n_train=0, n_test=n_test_words, seed=seed).test.pairs)
        test_src = {s for s, _ in test_pairs}
        # avg-type corpus: the anchor half (+ extra sentences); avg/iso anchor pairs: dictionary pairs found there
        anchor_idx = sorted(half)
        extra = dict(extra_corpus or {})
        corp_en = _anchor_corpus(c_en, anchor_idx, extra.get("en", ()), encs)
        corp_l = _anchor_corpus(c_l, anchor_idx, extra.get(lang, ()), encs)
        found = _dictionary_pairs_in_context(d, test_src, corp_en, corp_l, lang=lang, n_anchor_words=n_anchor_words,
                                             notes=notes)
        say(f"en-{lang}: {len(found)} dictionary pairs found in context; iso/avg/token anchors")
        anchors = {
            "avg": avg_type_anchors(found, corp_en, corp_l, max_occurrences=max_occurrences, seed=seed),
            "iso": iso_type_anchors(encs, found, source_language="en", target_language=lang),
            "token": token_anchors(pairs, sentences=anchor_idx, exclude_source_words=test_src),
        }
        all_anchors[lang] = anchors
        notes.append(f"en-{lang}: anchors iso={len(anchors['iso'])}, avg={len(anchors['avg'])}, token={len(anchors['token'])}")
        maps = _anchor_alignments(anchors, test_pairs, lang=lang, notes=notes)
        # evaluation pairs: only the other half of the sentences
        eval_pairs = _subset(pairs, [i for i in range(n_sentences) if i not in half])
        src_words, pool_words = _bdi_words(d, test_pairs, bdi_pool=bdi_pool, seed=seed)
        say(f"en-{lang}: encoding {len(src_words)} + {len(pool_words)} words for BDI")
        S = _iso_vectors(encs["en"], src_words, "en")
        T = _iso_vectors(encs[lang], pool_words, lang)
        rows += _evaluation_rows(lang, maps, S, T, src_words, pool_words, test_pairs, eval_pairs, btsr_pool=btsr_pool,
                                 n_boot=n_boot, seed=seed)
        notes.append(f"en-{lang}: parallel data {meta['name']}; BDI pool {len(pool_words)} of {len(d.target_words())} target words")
    prov = {"encoders": {k: {"model": getattr(e, "model_id", "?"), "version": str(getattr(e, "version", "?"))}
                         for k, e in encs.items()},
            "parameters": {"languages": list(languages), "n_sentences": n_sentences, "n_test_words": n_test_words,
                           "n_anchor_words": n_anchor_words, "bdi_pool": bdi_pool, "btsr_pool": btsr_pool,
                           "max_occurrences": max_occurrences, "n_boot": n_boot, "seed": seed}}
    return ContextualReport(pd.DataFrame(rows), all_anchors, notes, prov)


def _evaluation_rows(lang: str, maps: Mapping[tuple[str, str], Any], S: np.ndarray, T: np.ndarray, src_words: list[str],
                     pool_words: list[str], test_pairs: list[tuple[str, str]], eval_pairs: Any, *, btsr_pool: int,
                     n_boot: int, seed: int) -> list[dict[str, Any]]:
    """BDI (nn, CSLS) and BTSR (token and type-average) rows of every alignment of one language."""
    rows = []
    for (kind, mapping), al in maps.items():
        Sm, Tm = (S, T) if al is None else (al.map_source(S), al.map_target(T))
        for method in ("nn", "csls"):
            r = lexicon_induction_vectors(Sm, src_words, Tm, pool_words, test_pairs, method=method, ks=(1, 5),
                                          n_boot=n_boot, seed=seed)
            rows.append(_row(lang, kind, mapping, f"BDI-{method}", r))
        for base in (False, True):
            r = sense_retrieval(eval_pairs, alignment=al, pool_size=btsr_pool, ks=(1, 5), n_boot=n_boot, seed=seed,
                                baseline=base)
            rows.append(_row(lang, kind, mapping, "BTSR-type-avg" if base else "BTSR", r))
    return rows


def _dictionary_pairs_in_context(d: Any, test_src: set[str], corp_en: EncodedCorpus, corp_l: EncodedCorpus, *, lang: str,
                                 n_anchor_words: int, notes: list[str]) -> list[tuple[str, str]]:
    """The first ``n_anchor_words`` non-test dictionary pairs whose two words both occur in the anchor corpus."""
    cand = [(s, t) for s, t in d.pairs if s not in test_src]
    occ_s = find_occurrences(corp_en, list(dict.fromkeys(s for s, _ in cand)))
    occ_t = find_occurrences(corp_l, list(dict.fromkeys(t for _, t in cand)))
    found_all = [(s, t) for s, t in cand if occ_s[s] and occ_t[t]]
    found = found_all[:n_anchor_words]
    notes.append(f"en-{lang}: {len(found_all)} of {len(cand)} non-test dictionary pairs occur in the anchor corpus "
                 f"(both words); {len(found)} used")
    if len(found) < 2:
        raise ValueError(f"en-{lang}: only {len(found)} dictionary pairs occur in the anchor corpus: raise n_sentences")
    return found


def _anchor_alignments(anchors: Mapping[str, Any], test_pairs: list[tuple[str, str]], *, lang: str,
                       notes: list[str]) -> dict[tuple[str, str], Any]:
    """(anchor kind, mapping) -> fitted alignment: Procrustes and MIM per anchor kind, plus no mapping at all."""
    maps: dict[tuple[str, str], Any] = {("none", "orig"): None}
    for kind, a in anchors.items():
        for mim in (False, True):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                maps[(kind, "MIM" if mim else "procrustes")] = fit_anchor_alignment(a, mim=mim, test_pairs=test_pairs)
            notes += [f"en-{lang} {kind}{'+MIM' if mim else ''}: {w.message}" for w in caught]
    return maps


def _bdi_words(d: Any, test_pairs: list[tuple[str, str]], *, bdi_pool: int | None, seed: int) -> tuple[list[str], list[str]]:
    """(source words, target pool): the test golds plus a seeded sample of the rest of the target vocabulary."""
    vocab = d.target_words()
    gold_t = list(dict.fromkeys(t for _, t in test_pairs))
    others = [w for w in vocab if w not in set(gold_t)]
    if bdi_pool is not None and bdi_pool < len(vocab):
        k = max(0, bdi_pool - len(gold_t))
        others = [others[i] for i in np.sort(np.random.default_rng(seed + 2).choice(len(others), k, replace=False))]
    return list(dict.fromkeys(s for s, _ in test_pairs)), gold_t + others


def _anchor_corpus(corpus: EncodedCorpus, rows: Sequence[int], extra: Sequence[str], encs: Any) -> EncodedCorpus:
    """The anchor half of an encoded corpus (no re-encoding) plus any extra sentences (encoded here)."""
    sents = [corpus.sentences[i] for i in rows]
    toks = [corpus.tokens[i] for i in rows]
    prov = {**corpus.provenance, "rows": "anchor half", "n_sentences": len(rows)}
    if extra:
        more = encode_corpus(encs, list(extra), corpus.language)
        sents += list(more.sentences)
        toks += list(more.tokens)
        prov["extra"] = more.provenance
    return EncodedCorpus(corpus.language, tuple(sents), tuple(toks), prov)


def _iso_vectors(enc: Any, words: list[str], language: str) -> np.ndarray:
    res = enc.encode_tokens(words, language, spans=[[(0, len(w))] for w in words])
    return np.stack([r.vectors[0] for r in res]).astype(np.float64)


def _subset(pairs, sentences: Sequence[int]):
    from dataclasses import replace

    keep = np.flatnonzero(np.isin(pairs.sentence, list(sentences)))
    return replace(pairs, sentence=pairs.sentence[keep], source_words=tuple(pairs.source_words[r] for r in keep),
                   target_words=tuple(pairs.target_words[r] for r in keep), source=pairs.source[keep],
                   target=pairs.target[keep])
