"""A BTSR that tests sense (paper 001, section 4) on the offline en-zh parallel sentences.

Paper 001 builds BTSR from word-aligned parallel sentences: a source word in one sentence pair must
retrieve its translation *in the same sense* among target tokens of other sentence pairs, senses being
collapsed when they share a translation.  Here:

1. **Items.** Aligned word pairs (mutual argmax of the model's own vectors, :func:`~semanscope_nb.metrics.
   contextual.token_pairs`) kept only when the pair is in MUSE en-zh (the dictionary validates the aligner)
   and the English word is a content word (not in scikit-learn's English stop-word list: paper 001 draws
   its words from WordNet, whose entries are content words).
2. **Senses are translations** (the paper's collapse rule), with synonyms and spelling variants merged.
   Two items ``(s, t)`` and ``(s', t')`` carry the same sense when their English sides are *one word*
   (equal, one Snowball stem as *bank*/*banks*, or spelling variants: ``difflib`` ratio >= 0.9, as
   *organisation*/*organization*) or share at least two MUSE translations, *and* their Chinese sides are
   one word, share a character (这/这个, 游客/旅游) or share at least two MUSE English translations.  One
   shared translation is not enough: that is exactly what a polysemous word gives.  So *hit*/打 and
   *play*/打 are two senses of 打, *bank*/银行 and *bank*/河岸 two senses of *bank*, while *big*/大,
   *large*/大 and *large*/巨大 are one.  A heuristic: it can still split true synonyms that share no
   character and only one MUSE entry (全部/所有), which then count as different senses.
3. **Pool.** The sentence pairs not used for training are split with ``seed`` into a query half and a pool
   half (disjoint: checked).  The pool holds the Chinese tokens of every validated item of the pool half.
4. **Queries that test sense.** An English token of the query half is a query when the pool holds at least
   one gold (same sense) *and* one hard distractor: the same Chinese word in another sense, or a Chinese
   word of another sense of the same English word.  Word identity cannot tell these apart: the
   no-context baseline (each token replaced by its word's average vector over its half) ties them.

Example
-------
>>> same_sense(("hit", "打"), ("play", "打"), {"hit": {"打", "击"}, "play": {"打", "玩"}}, {"打": {"hit", "play"}})
False
>>> same_sense(("big", "大"), ("large", "大"), {"big": {"大", "巨大"}, "large": {"大", "巨大"}}, {})
True
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from semanscope_nb.errors import DatasetError
from semanscope_nb.metrics.btsr import SenseRetrievalScore, sense_retrieval_scores
from semanscope_nb.metrics.contextual import check_pool_disjoint
from semanscope_nb.settings import resolve

__all__ = ["SenseItems", "same_sense", "sense_items", "sense_retrieval_en_zh", "sense_retrieval_table"]


@functools.lru_cache(maxsize=100_000)
def _stem(word: str) -> str:
    """The Snowball English stem (bank/banks/banking -> bank): snowballstemmer, as Sphinx uses it, pure Python.
    A new stemmer object per uncached word keeps this safe from any thread."""
    import snowballstemmer

    return snowballstemmer.stemmer("english").stemWord(word)


def same_sense(a: tuple[str, str], b: tuple[str, str], translations: Mapping[str, set], back: Mapping[str, set]) -> bool:
    """Whether two (English, Chinese) items carry one sense under the translation rule (module docstring, 2).

    >>> same_sense(("bank", "银行"), ("bank", "河岸"), {"bank": {"银行", "河岸"}}, {"银行": {"bank"}, "河岸": {"bank", "shore"}})
    False
    """
    (s, t), (s2, t2) = a, b
    en_ok = (s == s2 or _stem(s) == _stem(s2) or difflib.SequenceMatcher(None, s, s2).ratio() >= 0.9
             or len(translations.get(s, set()) & translations.get(s2, set())) >= 2)
    zh_ok = t == t2 or bool(set(t) & set(t2)) or len(back.get(t, set()) & back.get(t2, set())) >= 2
    return en_ok and zh_ok


@dataclass(frozen=True, eq=False)
class SenseItems:
    """The sense-testing queries and their pool, with gold by sense and the hard distractors counted."""

    query_rows: np.ndarray
    pool_rows: np.ndarray
    gold: np.ndarray
    hard: np.ndarray
    query_items: tuple[tuple[str, str], ...]
    pool_items: tuple[tuple[str, str], ...]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def pool_size(self) -> int:
        return len(self.pool_rows)

    def examples(self, n: int = 5) -> pd.DataFrame:
        """A few queries with their gold and hard-distractor items (what the task asks)."""
        out = []
        for q in range(min(n, len(self.query_rows))):
            golds = sorted({self.pool_items[c] for c in np.flatnonzero(self.gold[q])})
            hard = sorted({self.pool_items[c] for c in np.flatnonzero(self.hard[q])})
            out.append({"query": "/".join(self.query_items[q]), "gold": ", ".join("/".join(g) for g in golds[:4]),
                        "hard distractors": ", ".join("/".join(h) for h in hard[:4])})
        return pd.DataFrame(out)


def sense_items(token_pairs: Any, dictionary: Any, *, exclude_sentences: Sequence[int] = (), seed: int = 0,
                max_queries: int | None = None) -> SenseItems:
    """Build the sense-testing queries and the pool from aligned tokens (``TokenPairs``) and a dictionary.

    ``exclude_sentences``: sentence pairs used to learn maps (neither queries nor pool).
    """
    valid, translations, back = _translation_maps(dictionary)
    tp = token_pairs
    excluded = {int(x) for x in exclude_sentences}
    items = [(tp.source_words[r], tp.target_words[r]) for r in range(len(tp))]
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # a fixed, well-known list (318 words)

    rows = np.array([r for r in range(len(tp)) if items[r] in valid and int(tp.sentence[r]) not in excluded
                     and items[r][0] not in ENGLISH_STOP_WORDS], dtype=np.int64)
    # the draws are over sentence pairs and rows in canonical order (TokenPairs.sentence_keys): the same queries and pool
    # whatever order the corpus lists its sentences in (and the pool's order, which breaks index ties, with them)
    rows = tp.canonical_rows(rows)
    sents = tp.canonical_sentences(np.unique(tp.sentence[rows])) if len(rows) else np.array([], dtype=np.int64)
    if len(sents) < 2:
        raise DatasetError("sense_items: fewer than 2 sentence pairs hold a dictionary-validated aligned word")
    perm = np.random.default_rng(seed).permutation(sents)
    q_sents = set(perm[: len(perm) // 2].tolist())
    q_rows = rows[np.isin(tp.sentence[rows], list(q_sents))]
    p_rows = rows[~np.isin(tp.sentence[rows], list(q_sents))]
    check_pool_disjoint(tp.sentence[q_rows], tp.sentence[p_rows])
    p_items = [items[r] for r in p_rows]
    labels = _PoolLabels(p_items, translations, back)
    keep, golds, hards = [], [], []
    n_no_gold = n_no_hard = 0
    for r in q_rows:
        g, h = labels.of(items[r])
        if not g.any():
            n_no_gold += 1
            continue
        if not h.any():
            n_no_hard += 1
            continue
        keep.append(int(r))
        golds.append(g)
        hards.append(h)
    if max_queries is not None and len(keep) > max_queries:
        pick = np.sort(np.random.default_rng(seed + 1).choice(len(keep), int(max_queries), replace=False))
        keep, golds, hards = [keep[i] for i in pick], [golds[i] for i in pick], [hards[i] for i in pick]
    if not keep:
        raise DatasetError("sense_items: no query has both a gold and a hard distractor in the pool (more sentences?)")
    counts = {"validated_items": len(rows), "query_candidates": len(q_rows), "pool": len(p_rows),
              "queries": len(keep), "dropped_no_gold": n_no_gold, "dropped_no_hard_distractor": n_no_hard,
              "query_sentences": len(q_sents), "pool_sentences": int(len(sents) - len(q_sents)),
              "excluded_sentences": len(excluded)}
    return SenseItems(np.asarray(keep, dtype=np.int64), p_rows, np.stack(golds), np.stack(hards),
                      tuple(items[r] for r in keep), tuple(p_items), counts)


def _translation_maps(dictionary: Any) -> tuple[set[tuple[str, str]], dict[str, set], dict[str, set]]:
    """(valid (source, target) pairs, source -> its targets, target -> its sources), sources casefolded."""
    pairs = [(s.casefold(), t) for s, t in dictionary.pairs]
    translations: dict[str, set] = {}
    back: dict[str, set] = {}
    for s, t in pairs:
        translations.setdefault(s, set()).add(t)
        back.setdefault(t, set()).add(s)
    return set(pairs), translations, back


class _PoolLabels:
    """Which pool items are golds (same sense) and which hard distractors (a shared word, another sense) of a query."""

    def __init__(self, p_items: list[tuple[str, str]], translations: dict[str, set], back: dict[str, set]) -> None:
        self.p_items, self.translations, self.back = p_items, translations, back
        self.by_src: dict[str, list[int]] = {}
        self.by_tgt: dict[str, list[int]] = {}
        for j, (s, t) in enumerate(p_items):
            self.by_src.setdefault(s, []).append(j)
            self.by_tgt.setdefault(t, []).append(j)
        self._same: dict[tuple, bool] = {}

    def same(self, a: tuple[str, str], b: tuple[str, str]) -> bool:
        key = (a, b)
        if key not in self._same:
            self._same[key] = same_sense(a, b, self.translations, self.back)
        return self._same[key]

    def of(self, it: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
        """(gold mask, hard-distractor mask) over the pool for the query item ``it``."""
        near = sorted(set(self.by_src.get(it[0], [])) | set(self.by_tgt.get(it[1], [])))  # share a word with the query
        g = np.zeros(len(self.p_items), dtype=bool)
        h = np.zeros(len(self.p_items), dtype=bool)
        for j in near:
            (g if self.same(it, self.p_items[j]) else h)[j] = True
        # a gold may also share no word with the query (big/大 vs large/巨大): its English side then shares
        # translations with the query's, so only items whose source is such a word need checking
        related = {s2 for t2 in self.translations.get(it[0], ()) for s2 in self.back.get(t2, ())} - {it[0]}
        for s2 in related:
            for j in self.by_src.get(s2, ()):
                if not g[j] and not h[j] and self.same(it, self.p_items[j]):
                    g[j] = True
        return g, h


def _type_average(words: Sequence[str], X: np.ndarray) -> np.ndarray:
    groups: dict[str, list[int]] = {}
    for r, w in enumerate(words):
        groups.setdefault(w, []).append(r)
    out = np.empty_like(X)
    for rows in groups.values():
        out[rows] = X[rows].mean(axis=0)
    return out


def sense_retrieval_table(token_pairs: Any, items: SenseItems, maps: Mapping[str, Any] | None = None, *,
                          ks: Sequence[int] = (1, 5), n_boot: int | None = None, seed: int = 0) -> tuple[pd.DataFrame, dict[str, SenseRetrievalScore]]:
    """Score every map (``{"orig": None, name: Alignment, ...}``) on the same items: contextual vs no-context
    P@K, their paired difference, the pool size and the query count on every row."""
    n_boot = resolve(n_boot, "n_boot")
    tp = token_pairs
    maps = {"orig": None, **dict(maps or {})}
    # the baseline's type averages: each word's mean over its own half (query half / pool half)
    all_q = np.flatnonzero(~np.isin(tp.sentence, tp.sentence[items.pool_rows]))
    q_avg_src = _type_average([tp.source_words[r] for r in all_q], tp.source[all_q])
    where_q = {int(r): i for i, r in enumerate(all_q)}
    Qc, Cc = tp.source[items.query_rows], tp.target[items.pool_rows]
    Qb = q_avg_src[[where_q[int(r)] for r in items.query_rows]]
    Cb = _type_average([tp.target_words[r] for r in items.pool_rows], Cc)
    rows, results = [], {}
    for name, al in maps.items():
        q, c, bq, bc = (Qc, Cc, Qb, Cb) if al is None else (al.map_source(Qc), al.map_target(Cc), al.map_source(Qb),
                                                            al.map_target(Cb))
        # token vectors are float32 by contract (TokenEmbeddings), widened to float64 by token_pairs and the maps:
        # their ties are float32's (metrics.ties), on every map
        r = sense_retrieval_scores(q, c, items.gold, baseline_queries=bq, baseline_candidates=bc, ks=ks,
                                   n_boot=n_boot, seed=seed, provenance={"map": name, **items.counts},
                                   vector_dtype=np.float32)
        results[name] = r
        row: dict[str, Any] = {"map": name, "queries": r.n_queries, "pool": r.pool_size}
        for k in r.accuracy:
            row[f"P@{k}"] = r.accuracy[k]
            row[f"P@{k} lo"], row[f"P@{k} hi"] = r.interval[k]
            row[f"P@{k} no-context"] = r.baseline_accuracy[k]
            row[f"P@{k} no-context lo"], row[f"P@{k} no-context hi"] = r.baseline_interval[k]
            row[f"P@{k} gain"] = r.difference[k]
            row[f"P@{k} gain lo"], row[f"P@{k} gain hi"] = r.difference_interval[k]
        rows.append(row)
    return pd.DataFrame(rows), results


def sense_retrieval_en_zh(training: Any, *, n_train: int = 1000, ks: Sequence[int] = (1, 5), n_boot: int | None = None,
                          seed: int = 0, max_queries: int | None = None,
                          max_occurrences: int = 20) -> tuple[pd.DataFrame, SenseItems, dict[str, SenseRetrievalScore]]:
    """The sense-testing BTSR on the prepared en-zh data (:func:`~semanscope_nb.runs.word_similarity.
    prepare_en_zh_training`): maps learned from the first ``n_train`` sentence pairs, queries and pool from the
    others (never the training pairs), every map scored beside ``orig`` and the no-context baseline.

    Returns (table: one row per map with P@K, the no-context P@K, their paired gain, each with its 95 %
    interval, the query count and pool size; the items; the results by map name).
    """
    n_boot = resolve(n_boot, "n_boot")
    from semanscope_nb.runs.word_similarity import fit_en_zh_maps

    if not 2 <= n_train < len(training.parallel):
        raise DatasetError(f"n_train={n_train}: need 2 <= n_train < {len(training.parallel)} (the pairs prepared), "
                           "so that sentences are left for the queries and the pool")
    items = sense_items(training.token_pairs, training.dictionary, exclude_sentences=range(n_train), seed=seed,
                        max_queries=max_queries)
    maps, _, _ = fit_en_zh_maps(training, n_train, max_occurrences=max_occurrences, seed=seed)
    named = {f"{kind}-{signal} {mapping}": al for (kind, signal, mapping), al in maps.items()}
    table, results = sense_retrieval_table(training.token_pairs, items, named, ks=ks, n_boot=n_boot, seed=seed)
    table.insert(1, "n_train", [0] + [n_train] * (len(table) - 1))
    return table, items, results
