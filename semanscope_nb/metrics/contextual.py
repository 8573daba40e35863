"""Contextual cross-lingual alignment (paper 001, Liu et al. 2019): anchors, a word aligner, BTSR, BDI with CSLS.

* Anchors (:class:`Anchors`) feed :func:`fit_anchor_alignment` (Procrustes, optionally Meeting-in-the-Middle):
  :func:`iso_type_anchors` (each dictionary word encoded alone), :func:`avg_type_anchors` (the mean contextual
  vector of a word over up to N corpus occurrences, counts per word and the words never found reported) and
  :func:`token_anchors` (aligned word pairs of parallel sentences, from :func:`align_words`).
* :func:`align_words`: SimAlign-style mutual argmax over cosine similarities, optionally ``itermax``.
* :func:`sense_retrieval`: BTSR-style retrieval of contextualized target tokens for contextualized source
  tokens, queries and candidates taken from *different* sentence pairs (checked), with a type-average baseline.
* :func:`lexicon_induction_vectors`: BDI over a full target vocabulary, plain nearest neighbour or CSLS
  (Conneau et al. 2018) computed one block of queries at a time (memory ``block x pool``, never ``N x N``).
* :func:`sense_separation`: a within-language check that senses, not word forms, cluster.

Every encoder argument is one :class:`~semanscope_nb.models.tokens.TokenEncoder` or a mapping
language -> encoder (a different encoder per language).

Example
-------
>>> import numpy as np
>>> S = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]); T = np.array([[0.0, 1.0], [1.0, 0.1]])
>>> align_words(S, T)
[(0, 1), (1, 0)]
>>> r = lexicon_induction_vectors(S, ["a", "b", "c"], T, ["B", "A"], [("a", "A"), ("b", "B")], ks=(1,), n_boot=0)
>>> r.accuracy[1], r.pool_size
(1.0, 2)
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.data.concept_key import item_key, key_order
from semanscope_nb.errors import DatasetError, EmbeddingError
from semanscope_nb.metrics.alignment import fit_alignment
from semanscope_nb.metrics.options import check_confidence, check_ks, check_n_boot, check_seed
from semanscope_nb.metrics.ties import csls_tolerance, dot_tolerance, first_best, working_dtype
from semanscope_nb.models.aligned import Alignment
from semanscope_nb.settings import resolve

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.tokens import TokenEmbeddings, TokenEncoder

__all__ = [
    "Anchors", "BDIResult", "EncodedCorpus", "RetrievalScore", "SenseSeparation", "TokenPairs",
    "align_words", "avg_type_anchors", "check_pool_disjoint", "csls_scores_topk", "encode_corpus", "find_occurrences",
    "fit_anchor_alignment", "iso_type_anchors", "lexicon_induction_vectors", "precision_at_k",
    "sense_retrieval", "sense_separation", "token_anchors", "token_pairs",
]


# --------------------------------------------------------------------------- helpers


def _encoder_for(encoders: Any, language: str) -> "TokenEncoder":
    """The encoder of ``language``: ``encoders`` is one encoder or a mapping language -> encoder."""
    if isinstance(encoders, Mapping):
        if language not in encoders:
            raise ValueError(f"encoders has no encoder for language {language!r} (it has {sorted(encoders)})")
        return encoders[language]
    if not hasattr(encoders, "encode_tokens"):
        raise TypeError(f"encoders must be a token encoder or a mapping language -> token encoder, got {type(encoders).__name__}")
    return encoders


def _encoder_meta(enc: Any) -> dict[str, Any]:
    return {"model": getattr(enc, "model_id", type(enc).__name__), "version": str(getattr(enc, "version", "?"))}


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _unit(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, n, out=np.zeros_like(X), where=n > 0)


def _key(word: str) -> str:
    return word.casefold()


def _check_seed(seed: Any) -> int:
    return check_seed(seed)


def _check_ks(ks: Sequence[int], pool: int) -> tuple[int, ...]:
    ks = check_ks(ks)
    if max(ks) > pool:
        raise ValueError(f"ks={ks}: the largest K exceeds the candidate pool ({pool})")
    return ks


# --------------------------------------------------------------------------- P@K with a bootstrap


@dataclass(frozen=True)
class RetrievalScore(Result):
    """P@K with seeded percentile-bootstrap intervals (queries resampled)."""

    kind = "retrieval-score"
    main_score_name = "p_at_1"

    @property
    def p_at_1(self) -> float:
        """P@1 (NaN when K = 1 was not asked for: a P@5 is never shown under the name P@1)."""
        return float(self.accuracy.get(1, math.nan))

    accuracy: dict[int, float]
    interval: dict[int, Interval]
    n_queries: int
    pool_size: int
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", {k: Interval.of(v) for k, v in self.interval.items()})

    def estimates(self) -> dict[str, Estimate]:
        """``"p@K"`` -> P@K with its percentile interval (``sem``: NaN, the bootstrap keeps only the interval)."""
        return {f"p@{k}": Estimate(v, math.nan, self.interval.get(k, Interval.empty())) for k, v in self.accuracy.items()}

    def summary(self) -> dict[str, Any]:
        """The main score, the counts, and P@K with its interval for every K (``p@K``, ``p@K_ci_low``, ``p@K_ci_high``)."""
        out = super().summary()
        for name, e in self.estimates().items():
            out[name] = e.value
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = e.ci
        return out


def precision_at_k(ranks: Any, *, ks: Sequence[int] = (1, 5), n_boot: int | None = None, seed: int = 0,
                   confidence: float = 0.95, pool_size: int | None = None,
                   keys: Sequence[str] | None = None) -> RetrievalScore:
    """P@K from each query's 0-based rank of its best gold (``-1`` or ``>= pool`` = no gold), bootstrapped.

    ``keys``: what each query is (e.g. its word); the resamples are drawn over the queries in their canonical
    order (:func:`~semanscope_nb.data.concept_key.key_order`), so the same queries in another order get the same
    interval.  None: the queries as given.

    >>> precision_at_k([0, 3, 1, -1], ks=(1, 5), n_boot=0).accuracy
    {1: 0.25, 5: 0.75}
    """
    n_boot = resolve(n_boot, "n_boot")
    r = np.asarray(ranks, dtype=np.int64).ravel()
    if r.size == 0:
        raise ValueError("ranks is empty: no queries to score")
    confidence = check_confidence(confidence)
    n_boot = check_n_boot(n_boot, minimum=1)
    seed = _check_seed(seed)
    ks = check_ks(ks)
    hits = np.stack([(r >= 0) & (r < k) for k in ks], axis=1).astype(np.float64)  # (n, K)
    acc = {k: float(hits[:, j].mean()) for j, k in enumerate(ks)}
    interval = {k: (float("nan"), float("nan")) for k in ks}
    if n_boot:
        from semanscope_nb.metrics.chance import resample_counts  # the package's one draw rule for resamples

        n = len(r)
        if keys is not None and len(keys) != n:
            raise ValueError(f"keys has {len(keys)} entries for {n} queries")
        order = None if keys is None else key_order([str(k) for k in keys])
        means = np.concatenate([c @ hits / n for c in resample_counts(n, int(n_boot), seed=seed, order=order)])
        lo, hi = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2], axis=0)
        interval = {k: (float(lo[j]), float(hi[j])) for j, k in enumerate(ks)}
    return RetrievalScore(acc, interval, int(r.size), int(pool_size if pool_size is not None else -1),
                          {"ks": list(ks), "n_boot": int(n_boot), "seed": seed, "confidence": confidence})


# --------------------------------------------------------------------------- CSLS and nearest neighbour, blocked


def _mean_topk_sim(queries: np.ndarray, corpus: np.ndarray, k: int) -> np.ndarray:
    """Mean cosine of each query row to its k nearest corpus rows (inputs unit-normalised)."""
    k = min(k, corpus.shape[0])
    try:
        import faiss  # faiss-cpu (extra "retrieval"): exact inner-product top-k (IndexFlatIP) in C++ with bounded
        #               heaps, far faster than a NumPy argpartition and never holds the full query x corpus matrix.
    except ImportError:  # the package's own blocked exact top-k (NumPy)
        from semanscope_nb.metrics.search import topk_search

        return (1.0 - topk_search(queries, corpus, k=k, metric="cosine", dtype=np.float32).distances).mean(axis=1)
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(np.ascontiguousarray(corpus, dtype=np.float32))
    sims, _ = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    return sims.astype(np.float64).mean(axis=1)


def csls_scores_topk(queries: Any, corpus: Any, *, k: int = 10, knn: int = 10, method: str = "csls",
                     block: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` corpus rows per query by CSLS (``2cos - r_q - r_c``) or plain cosine (``method="nn"``).

    ``r_c`` is a corpus row's mean cosine to its ``knn`` nearest queries, ``r_q`` a query's to its ``knn``
    nearest corpus rows.  Scores are computed ``block`` query rows at a time: memory ``block x n_corpus``
    (``block=None``: as many rows as keep one float32 block under 32 MB).
    Returns (indices, scores), best first.  Near ties follow :mod:`semanscope_nb.metrics.ties`: scores
    within :func:`~semanscope_nb.metrics.ties.csls_tolerance` (``method="csls"``) or
    :func:`~semanscope_nb.metrics.ties.dot_tolerance` (``"nn"``) of float32 unit vectors of this
    dimension count as tied, and the lower corpus index goes first (MUSE's evaluation orders by
    ``torch.topk``, which has no defined tie order, so the index rule is ours).

    >>> import numpy as np
    >>> idx, _ = csls_scores_topk(np.eye(3), np.eye(3), k=1, knn=1); idx.ravel().tolist()
    [0, 1, 2]
    """
    from semanscope_nb.metrics.search import as_matrix, topk_rows

    # float32 blocks: half the memory and twice the BLAS speed of float64; cosines keep ~1e-7 precision
    Q = _unit(as_matrix(queries, "queries")).astype(np.float32)
    C = _unit(as_matrix(corpus, "corpus")).astype(np.float32)
    if Q.shape[1] != C.shape[1]:
        raise EmbeddingError(f"queries have {Q.shape[1]} dimensions but corpus has {C.shape[1]}")
    if method not in ("csls", "nn"):
        raise ValueError(f"method must be 'csls' or 'nn', got {method!r}")
    if int(k) != k or k < 1 or k > C.shape[0]:
        raise ValueError(f"k must be in 1..{C.shape[0]} (the corpus size), got {k!r}")
    if int(knn) != knn or knn < 1:
        raise ValueError(f"knn must be a positive integer, got {knn!r}")
    if block is None:
        block = max(1, (32 * 2**20) // (4 * C.shape[0]))
    if isinstance(block, bool) or int(block) != block or block < 1:
        raise ValueError(f"block must be a positive integer, got {block!r}")
    block = int(block)
    tol = (csls_tolerance if method == "csls" else dot_tolerance)(Q.shape[1], np.float32)
    if method == "csls":
        r_q = _mean_topk_sim(Q, C, knn).astype(np.float32)
        r_c = _mean_topk_sim(C, Q, knn).astype(np.float32)
    idx = np.empty((Q.shape[0], k), dtype=np.int64)
    val = np.empty((Q.shape[0], k))
    for a in range(0, Q.shape[0], block):
        S = Q[a:a + block] @ C.T
        if method == "csls":
            S *= 2
            S -= r_q[a:a + block, None]
            S -= r_c[None, :]
        np.negative(S, out=S)
        i, d = topk_rows(S, k, tol)
        idx[a:a + block], val[a:a + block] = i, -d
        del S
    return idx, val


@dataclass(frozen=True)
class BDIResult(RetrievalScore):
    """Bilingual lexicon induction: P@K over test source words against a full target vocabulary.

    Beside :class:`RetrievalScore`'s fields: the retrieval ``method`` ("nn" or "csls") and each
    query's top-1 target word (``predictions``).
    """

    kind = "bdi"

    method: str = "nn"
    predictions: tuple[str, ...] = ()


def lexicon_induction_vectors(
    source_vectors: Any, source_words: Sequence[str], target_vectors: Any, target_words: Sequence[str],
    gold: Sequence[tuple[str, str]], *, method: str = "nn", ks: Sequence[int] = (1, 5), knn: int = 10,
    n_boot: int | None = None, seed: int = 0, block: int | None = None, provenance: Mapping[str, Any] | None = None,
) -> BDIResult:
    """BDI (P@K, hit = any gold translation in the top K) of every gold source word against ALL target words.

    ``target_words`` is the candidate pool (its size is reported); ``method`` is ``"nn"`` (cosine) or
    ``"csls"``.  Source words without a gold pair are not queries (but count in CSLS's ``r_c``).

    >>> import numpy as np
    >>> r = lexicon_induction_vectors(np.eye(2), ["x", "y"], np.eye(2), ["X", "Y"], [("x", "X")], n_boot=0, ks=(1,))
    >>> r.accuracy, r.n_queries
    ({1: 1.0}, 1)
    """
    n_boot = resolve(n_boot, "n_boot")
    S = np.asarray(source_vectors, dtype=np.float64)
    T = np.asarray(target_vectors, dtype=np.float64)
    if len(source_words) != len(S):
        raise ValueError(f"source_words has {len(source_words)} words but source_vectors has {len(S)} rows")
    if len(target_words) != len(T):
        raise ValueError(f"target_words has {len(target_words)} words but target_vectors has {len(T)} rows")
    if len(set(target_words)) != len(target_words):
        raise ValueError("target_words holds duplicates: pass the unique target vocabulary")
    golds: dict[str, set[str]] = {}
    for s, t in gold:
        golds.setdefault(s, set()).add(t)
    q_rows = [i for i, w in enumerate(source_words) if w in golds]
    if not q_rows:
        raise DatasetError("gold: none of its source words is in source_words")
    ks = _check_ks(ks, len(target_words))
    idx, _ = csls_scores_topk(S, T, k=max(ks), knn=knn, method=method, block=block)
    ranks = []
    for i in q_rows:
        g = golds[source_words[i]]
        hit = [j for j, c in enumerate(idx[i]) if target_words[c] in g]
        ranks.append(hit[0] if hit else -1)
    score = precision_at_k(ranks, ks=ks, n_boot=n_boot, seed=seed, pool_size=len(target_words),
                           keys=[source_words[i] for i in q_rows])  # a query is its source word
    prov = {"method": method, "knn": knn, "ks": list(ks), "n_boot": n_boot, "seed": seed,
            "data_sha": _sha(list(source_words), list(target_words), sorted(gold)), **dict(provenance or {})}
    return BDIResult(score.accuracy, score.interval, len(q_rows), len(target_words), prov, method=method,
                     predictions=tuple(target_words[idx[i, 0]] for i in q_rows))


# --------------------------------------------------------------------------- encoding a corpus, finding words


@dataclass(frozen=True, eq=False)
class EncodedCorpus:
    """Sentences of one language with their word vectors (:class:`TokenEmbeddings` per sentence)."""

    language: str
    sentences: tuple[str, ...]
    tokens: tuple["TokenEmbeddings", ...]
    provenance: dict[str, Any]


def encode_corpus(encoders: Any, sentences: Sequence[str], language: str, *, layers: Any = "mean") -> EncodedCorpus:
    """Word vectors (mean of layers 1..n, mean of subwords: paper 001, footnote 1) of every sentence."""
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, not one str")
    sentences = tuple(sentences)
    if not sentences:
        raise ValueError("sentences is empty")
    enc = _encoder_for(encoders, language)
    toks = tuple(enc.encode_tokens(list(sentences), language, layers=layers, pooling="word"))
    return EncodedCorpus(language, sentences, toks, {**_encoder_meta(enc), "layers": str(layers), "language": language,
                                                     "data_sha": _sha(sentences), "n_sentences": len(sentences)})


def find_occurrences(corpus: EncodedCorpus, words: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Every (sentence, word index) whose word equals a word of ``words`` (casefolded), in corpus order.

    >>> from types import SimpleNamespace as NS
    >>> c = NS(tokens=[NS(tokens=("The", "bank")), NS(tokens=("a", "Bank", "bank"))])
    >>> find_occurrences(c, ["bank", "river"])
    {'bank': [(0, 1), (1, 1), (1, 2)], 'river': []}
    """
    want: dict[str, list[str]] = {}
    for w in words:
        want.setdefault(_key(w), []).append(w)
    out: dict[str, list[tuple[int, int]]] = {w: [] for w in words}
    for s, te in enumerate(corpus.tokens):
        for j, tok in enumerate(te.tokens):
            for w in want.get(_key(tok), ()):
                out[w].append((s, j))
    return out


# --------------------------------------------------------------------------- anchors


@dataclass(frozen=True, eq=False)
class Anchors:
    """Paired source/target vectors for fitting an alignment; ``pairs[i]`` names row i (word pair)."""

    kind: str
    source_language: str
    target_language: str
    pairs: tuple[tuple[str, str], ...]
    source: np.ndarray
    target: np.ndarray
    counts: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pairs)


def _check_pairs(pairs: Any) -> list[tuple[str, str]]:
    pairs = [tuple(p) for p in (pairs.pairs if hasattr(pairs, "pairs") else pairs)]
    if not pairs or any(len(p) != 2 or not all(isinstance(x, str) and x for x in p) for p in pairs):
        raise ValueError("pairs must be a non-empty list of (source word, target word) strings (or a BilingualDictionary)")
    return pairs  # type: ignore[return-value]


def iso_type_anchors(encoders: Any, pairs: Any, *, source_language: str, target_language: str,
                     layers: Any = "mean") -> Anchors:
    """iso-type anchors: each dictionary word encoded on its own (the whole text is one word)."""
    pairs = _check_pairs(pairs)
    vec = {}
    for lang, side in ((source_language, 0), (target_language, 1)):
        enc = _encoder_for(encoders, lang)
        words = list(dict.fromkeys(p[side] for p in pairs))
        res = enc.encode_tokens(words, lang, layers=layers, spans=[[(0, len(w))] for w in words])
        vec[side] = {w: r.vectors[0] for w, r in zip(words, res)}
    S = np.stack([vec[0][s] for s, _ in pairs]).astype(np.float64)
    T = np.stack([vec[1][t] for _, t in pairs]).astype(np.float64)
    prov = {"source_encoder": _encoder_meta(_encoder_for(encoders, source_language)),
            "target_encoder": _encoder_meta(_encoder_for(encoders, target_language)), "layers": str(layers),
            "data_sha": _sha(pairs)}
    return Anchors("iso", source_language, target_language, tuple(pairs), S, T, {"pairs": len(pairs)}, {}, prov)


def _type_means(corpus: EncodedCorpus, words: Sequence[str], max_occurrences: int, seed: int):
    occ = find_occurrences(corpus, words)
    rng = np.random.default_rng(seed)
    means, counts = {}, {}
    for w, places in occ.items():
        if len(places) > max_occurrences:
            places = [places[i] for i in sorted(rng.choice(len(places), max_occurrences, replace=False))]
        counts[w] = len(places)
        if places:
            means[w] = np.mean([corpus.tokens[s].vectors[j] for s, j in places], axis=0)
    return means, counts


def avg_type_anchors(pairs: Any, source_corpus: EncodedCorpus, target_corpus: EncodedCorpus, *,
                     max_occurrences: int = 20, seed: int = 0) -> Anchors:
    """avg-type anchors: each word's mean contextual vector over up to ``max_occurrences`` corpus occurrences.

    Occurrences beyond the cap are subsampled with ``seed``.  ``counts["per_word"]`` gives the number of
    occurrences used per word; ``missing`` lists the words found nowhere (their pairs are dropped).
    """
    pairs = _check_pairs(pairs)
    if isinstance(max_occurrences, bool) or int(max_occurrences) != max_occurrences or max_occurrences < 1:
        raise ValueError(f"max_occurrences must be a positive integer, got {max_occurrences!r}")
    seed = _check_seed(seed)
    src_words = list(dict.fromkeys(s for s, _ in pairs))
    tgt_words = list(dict.fromkeys(t for _, t in pairs))
    ms, cs = _type_means(source_corpus, src_words, max_occurrences, seed)
    mt, ct = _type_means(target_corpus, tgt_words, max_occurrences, seed + 1)
    kept = [(s, t) for s, t in pairs if s in ms and t in mt]
    missing = {source_corpus.language: tuple(w for w in src_words if cs[w] == 0),
               target_corpus.language: tuple(w for w in tgt_words if ct[w] == 0)}
    counts = {"pairs": len(pairs), "pairs_kept": len(kept), "max_occurrences": int(max_occurrences),
              "per_word": {source_corpus.language: cs, target_corpus.language: ct}}
    prov = {"source": source_corpus.provenance, "target": target_corpus.provenance, "seed": seed,
            "data_sha": _sha(pairs)}
    if not kept:
        return Anchors("avg", source_corpus.language, target_corpus.language, (), np.empty((0, 0)), np.empty((0, 0)),
                       counts, missing, prov)
    S = np.stack([ms[s] for s, _ in kept])
    T = np.stack([mt[t] for _, t in kept])
    return Anchors("avg", source_corpus.language, target_corpus.language, tuple(kept), S, T, counts, missing, prov)


# --------------------------------------------------------------------------- word aligner and token pairs


def align_words(source: Any, target: Any, *, itermax: int = 1, vector_dtype: Any = None) -> list[tuple[int, int]]:
    """SimAlign-style word alignment: pairs (i, j) that are each other's argmax cosine (mutual argmax).

    ``itermax > 1`` repeats the mutual argmax on the words still unaligned (SimAlign's IterMax, without
    its distortion weighting), adding pairs whose both sides are still free.  Sorted by ``i``.
    Each argmax follows :mod:`semanscope_nb.metrics.ties`: cosines within
    :func:`~semanscope_nb.metrics.ties.dot_tolerance` of the best (``u`` of the coarser of the
    inputs' precision and float64) tie, and the lower index wins (as ``np.argmax`` does for
    exact ties).  ``vector_dtype``: the precision the vectors were made in when it is coarser than
    the arrays' own (float32 encoder vectors widened to float64 by a map); None: the arrays' dtypes.

    >>> align_words([[1.0, 0.0], [0.0, 1.0]], [[0.1, 1.0], [1.0, 0.0]])
    [(0, 1), (1, 0)]
    """
    src, tgt = np.atleast_2d(source), np.atleast_2d(target)
    S, T = _unit(src), _unit(tgt)
    if S.shape[1] != T.shape[1]:
        raise EmbeddingError(f"source has {S.shape[1]} dimensions but target has {T.shape[1]}")
    dtypes = (np.asarray(src).dtype, np.asarray(tgt).dtype) + (() if vector_dtype is None else (vector_dtype,))
    tol = dot_tolerance(S.shape[1], working_dtype(*dtypes))
    if isinstance(itermax, bool) or int(itermax) != itermax or itermax < 1:
        raise ValueError(f"itermax must be a positive integer, got {itermax!r}")
    sim = S @ T.T
    out: set[tuple[int, int]] = set()
    free_s, free_t = np.ones(len(S), bool), np.ones(len(T), bool)
    for _ in range(int(itermax)):
        if not free_s.any() or not free_t.any():
            break
        m = np.where(free_s[:, None] & free_t[None, :], sim, -np.inf)
        best_t, best_s = first_best(m, tol, axis=1, largest=True), first_best(m, tol, axis=0, largest=True)
        new = [(i, int(best_t[i])) for i in np.flatnonzero(free_s) if free_t[best_t[i]] and best_s[best_t[i]] == i]
        if not new:
            break
        for i, j in new:
            out.add((int(i), j))
            free_s[i] = free_t[j] = False
    return sorted(out)


@dataclass(frozen=True, eq=False)
class TokenPairs:
    """Aligned word tokens of a parallel corpus: row r is word ``source_words[r]`` of sentence pair ``sentence[r]``."""

    source_language: str
    target_language: str
    sentence: np.ndarray
    source_words: tuple[str, ...]
    target_words: tuple[str, ...]
    source: np.ndarray
    target: np.ndarray
    provenance: dict[str, Any] = field(default_factory=dict)
    sentence_keys: tuple[str, ...] | None = None  # key of sentence pair k (its two sentences): the order draws follow

    def __len__(self) -> int:
        return len(self.source_words)

    def canonical_sentences(self, sentences: Any) -> np.ndarray:
        """``sentences`` (pair ids) in canonical order: by their :attr:`sentence_keys`, then by id (as given
        without keys), so seeded splits of the pairs pick the same sentences whatever the corpus order.

        >>> tp = TokenPairs("en", "de", np.array([0, 1]), ("a", "b"), ("x", "y"), np.eye(2), np.eye(2), {}, ("z", "m"))
        >>> tp.canonical_sentences([0, 1]).tolist()
        [1, 0]
        """
        ids = np.sort(np.asarray(sentences, dtype=np.int64))
        if self.sentence_keys is None:
            return ids
        return ids[key_order([self.sentence_keys[k] for k in ids])]  # the package's one key rule (stable: then by id)

    def canonical_rows(self, rows: Any) -> np.ndarray:
        """``rows`` in canonical order: by their sentence pair's key, then as given (a pair's rows come in the
        aligner's order, a function of the pair alone); without keys the rows as given."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.sentence_keys is None:
            return rows
        return rows[key_order([self.sentence_keys[k] for k in self.sentence[rows].tolist()])]


_WORDLIKE = re.compile(r"\w", re.UNICODE)


def token_pairs(source_corpus: EncodedCorpus, target_corpus: EncodedCorpus, *, itermax: int = 1,
                alignment: Alignment | None = None) -> TokenPairs:
    """Align the words of each parallel sentence pair (:func:`align_words`); words without a letter/digit skipped.

    ``alignment`` (optional) maps the vectors into a shared space before aligning (useful when the two
    languages come from different encoders); the returned vectors are always the original ones.
    """
    if len(source_corpus.tokens) != len(target_corpus.tokens):
        raise ValueError(f"source_corpus has {len(source_corpus.tokens)} sentences but target_corpus has "
                         f"{len(target_corpus.tokens)}: they must be parallel")
    rows_s, rows_t, sent, ws, wt = [], [], [], [], []
    for k, (a, b) in enumerate(zip(source_corpus.tokens, target_corpus.tokens)):
        ia = [i for i, t in enumerate(a.tokens) if _WORDLIKE.search(t) and np.isfinite(a.vectors[i]).all()]
        ib = [j for j, t in enumerate(b.tokens) if _WORDLIKE.search(t) and np.isfinite(b.vectors[j]).all()]
        if not ia or not ib:
            continue
        A, B = a.vectors[ia], b.vectors[ib]
        precision = working_dtype(A.dtype, B.dtype)  # the encoder's: a map widens to float64, the ties stay its
        if alignment is not None:
            A, B = alignment.map_source(A), alignment.map_target(B)
        for i, j in align_words(A, B, itermax=itermax, vector_dtype=precision):
            sent.append(k)
            ws.append(a.tokens[ia[i]].casefold())
            wt.append(b.tokens[ib[j]].casefold())
            rows_s.append(a.vectors[ia[i]])
            rows_t.append(b.vectors[ib[j]])
    if not sent:
        raise DatasetError("no aligned word pairs: the corpora hold no word-like tokens")
    prov = {"source": source_corpus.provenance, "target": target_corpus.provenance, "itermax": itermax,
            "aligner": "mutual argmax (SimAlign)"}
    keys = tuple(item_key(s, t) for s, t in zip(source_corpus.sentences, target_corpus.sentences))
    return TokenPairs(source_corpus.language, target_corpus.language, np.asarray(sent, dtype=np.int64), tuple(ws),
                      tuple(wt), np.asarray(rows_s, dtype=np.float64), np.asarray(rows_t, dtype=np.float64), prov, keys)


def token_anchors(pairs: TokenPairs, *, sentences: Sequence[int] | None = None,
                  exclude_source_words: Sequence[str] = (), exclude_target_words: Sequence[str] = ()) -> Anchors:
    """token anchors: aligned token pairs (of ``sentences`` only, if given), minus excluded words (test words)."""
    ex_s = {_key(w) for w in exclude_source_words}
    ex_t = {_key(w) for w in exclude_target_words}
    allowed = None if sentences is None else set(int(s) for s in sentences)
    keep = [r for r in range(len(pairs)) if (allowed is None or int(pairs.sentence[r]) in allowed)
            and pairs.source_words[r] not in ex_s and pairs.target_words[r] not in ex_t]
    if not keep:
        raise DatasetError("token_anchors: no aligned pairs left after the sentence and word filters")
    words = tuple((pairs.source_words[r], pairs.target_words[r]) for r in keep)
    counts = {"aligned_pairs": len(pairs), "pairs_kept": len(keep), "excluded_source_words": len(ex_s),
              "sentences": len({int(pairs.sentence[r]) for r in keep})}
    return Anchors("token", pairs.source_language, pairs.target_language, words, pairs.source[keep], pairs.target[keep],
                   counts, {}, {**pairs.provenance, "data_sha": _sha(words)})


def fit_anchor_alignment(anchors: Anchors, *, mim: bool = False, test_pairs: Sequence[tuple[str, str]] = (),
                         normalize: bool = True, center: bool = True) -> Alignment:
    """Procrustes (+ MIM) on anchors; raises AssertionError if an anchor's source word is a test source word."""
    if len(anchors) < 2:
        raise DatasetError(f"{anchors.kind} anchors: {len(anchors)} pair(s), need at least 2 to fit an alignment")
    test_src = {_key(s) for s, _ in test_pairs}
    leak = sorted({s for s, _ in anchors.pairs if _key(s) in test_src})
    if leak:  # not a bare assert: survives python -O
        raise AssertionError(f"{anchors.kind} anchors hold {len(leak)} test source word(s), e.g. {leak[:5]}: "
                             "train and test must be disjoint")
    return fit_alignment(anchors.source, anchors.target, source_language=anchors.source_language,
                         target_language=anchors.target_language, normalize=normalize, center=center, mim=mim)


# --------------------------------------------------------------------------- BTSR-style sense retrieval


def _type_average(words: Sequence[str], X: np.ndarray) -> np.ndarray:
    groups: dict[str, list[int]] = {}
    for r, w in enumerate(words):
        groups.setdefault(w, []).append(r)
    out = np.empty_like(X)
    for rows in groups.values():
        out[rows] = X[rows].mean(axis=0)
    return out


def check_pool_disjoint(query_sentences: Any, pool_sentences: Any) -> None:
    """The BTSR guard: raise AssertionError if a query's own sentence pair is in the candidate pool.

    >>> check_pool_disjoint([0, 1], [2, 3])
    """
    shared = set(np.asarray(query_sentences).tolist()) & set(np.asarray(pool_sentences).tolist())
    if shared:  # not a bare assert: survives python -O
        raise AssertionError(f"{len(shared)} query sentence pair(s) are in the candidate pool, e.g. {sorted(shared)[:5]}")


def sense_retrieval(pairs: TokenPairs, *, alignment: Alignment | None = None, pool_size: int = 2000,
                    ks: Sequence[int] = (1, 5), n_boot: int | None = None, seed: int = 0, baseline: bool = False,
                    max_queries: int | None = None) -> RetrievalScore:
    """BTSR-style retrieval: a source token in context retrieves target tokens in context of OTHER sentences.

    The sentence pairs are split in two halves with ``seed``: queries are source tokens of one half,
    candidates a seeded sample of ``pool_size`` target tokens of the other (the pool's true size is
    reported).  A candidate is gold when its aligned pair (source word, target word) equals the query's:
    the same translation choice, our proxy for the same sense.  Queries without a gold in the pool are
    dropped (counted).  No query's own sentence pair is in the pool (checked; AssertionError otherwise).
    ``baseline=True`` replaces every token by its word's mean vector within its half (context removed).
    """
    n_boot = resolve(n_boot, "n_boot")
    seed = _check_seed(seed)
    if isinstance(pool_size, bool) or int(pool_size) != pool_size or pool_size < 1:
        raise ValueError(f"pool_size must be a positive integer, got {pool_size!r}")
    rng = np.random.default_rng(seed)
    # every draw below is over sentence pairs and rows in canonical order (TokenPairs.sentence_keys): the same split,
    # pool and queries whatever order the corpus lists its sentences in
    sents = pairs.canonical_sentences(np.unique(pairs.sentence))
    if len(sents) < 2:
        raise DatasetError("sense_retrieval needs at least 2 sentence pairs")
    perm = rng.permutation(sents)
    q_sents, c_sents = set(perm[: len(perm) // 2].tolist()), set(perm[len(perm) // 2:].tolist())
    q_rows = pairs.canonical_rows(np.flatnonzero(np.isin(pairs.sentence, list(q_sents))))
    c_rows = pairs.canonical_rows(np.flatnonzero(np.isin(pairs.sentence, list(c_sents))))
    if len(c_rows) > pool_size:
        c_rows = c_rows[np.sort(rng.choice(len(c_rows), int(pool_size), replace=False))]
    check_pool_disjoint(pairs.sentence[q_rows], pairs.sentence[c_rows])
    key = [(pairs.source_words[r], pairs.target_words[r]) for r in range(len(pairs))]
    pool_keys: dict[tuple[str, str], list[int]] = {}
    for j, r in enumerate(c_rows):
        pool_keys.setdefault(key[r], []).append(j)
    q_rows = np.array([r for r in q_rows if key[r] in pool_keys], dtype=np.int64)
    n_without_gold = int(np.isin(pairs.sentence, list(q_sents)).sum() - len(q_rows))
    if max_queries is not None and len(q_rows) > max_queries:
        q_rows = q_rows[np.sort(rng.choice(len(q_rows), int(max_queries), replace=False))]
    if not len(q_rows):
        raise DatasetError("sense_retrieval: no query has a gold candidate in the pool (use more sentences or a larger pool)")
    Q, C = pairs.source[q_rows], pairs.target[c_rows]
    if baseline:
        Q = _type_average([pairs.source_words[r] for r in q_rows], Q)
        C = _type_average([pairs.target_words[r] for r in c_rows], C)
    if alignment is not None:
        Q, C = alignment.map_source(Q), alignment.map_target(C)
    check_pool_disjoint(pairs.sentence[q_rows], pairs.sentence[c_rows])  # again, after the query filter
    ks = _check_ks(ks, len(c_rows))
    idx, _ = csls_scores_topk(Q, C, k=max(ks), method="nn")
    ranks = []
    for qi, r in enumerate(q_rows):
        gold = set(pool_keys[key[r]])
        hit = [p for p, j in enumerate(idx[qi]) if j in gold]
        ranks.append(hit[0] if hit else -1)
    s = precision_at_k(ranks, ks=ks, n_boot=n_boot, seed=seed, pool_size=len(c_rows))
    prov = {**s.provenance, "pool_size_requested": int(pool_size), "queries_without_gold": n_without_gold,
            "baseline": "type-average (no context)" if baseline else None, "aligned": alignment is not None,
            "query_sentences": len(q_sents), "candidate_sentences": len(c_sents), "data": pairs.provenance,
            "query_rows": q_rows.tolist(), "pool_rows": c_rows.tolist()}
    return RetrievalScore(s.accuracy, s.interval, s.n_queries, s.pool_size, prov)


# --------------------------------------------------------------------------- within-language sense check


@dataclass(frozen=True)
class SenseSeparation(Result):
    """Mean cosine of same-sense/different-word pairs vs same-word/different-sense pairs, and their gap;
    ``within_word_*`` compares same-word pairs of the same sense with same-word pairs of other senses.
    The main score is ``auc`` (0.5: senses do not separate)."""

    kind = "sense-separation"
    main_score_name = "auc"

    same_sense: float
    same_word_other_sense: float
    gap: float
    auc: float
    n_same_sense: int
    n_same_word: int
    same_word_same_sense: float = float("nan")
    within_word_gap: float = float("nan")
    within_word_auc: float = float("nan")
    provenance: dict[str, Any] = field(default_factory=dict)


def sense_separation(vectors: Any, words: Sequence[str], senses: Sequence[str]) -> SenseSeparation:
    """Do senses separate?  ``gap`` > 0 and ``auc`` > 0.5 when same-sense pairs (different words) are closer
    than same-word pairs of different senses.  ``auc`` = P(a random same-sense pair is more similar).
    ``within_word_auc`` > 0.5: a word's same-sense uses are closer than its other-sense uses.
    Cosines within :func:`~semanscope_nb.metrics.ties.dot_tolerance` of each other count as tied
    (half a win), as in :mod:`semanscope_nb.metrics.ties`.

    >>> import numpy as np
    >>> v = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> s = sense_separation(v, ["bank", "shore", "bank", "money"], ["river", "river", "money", "money"])
    >>> s.auc, s.gap > 0
    (1.0, True)
    """
    raw = np.asarray(vectors)
    X = _unit(np.asarray(raw, dtype=np.float64))
    if not (len(X) == len(words) == len(senses)):
        raise ValueError(f"vectors ({len(X)}), words ({len(words)}) and senses ({len(senses)}) must have one entry per row")
    sim = X @ X.T
    a, b = np.triu_indices(len(X), 1)
    w, s = np.asarray(words), np.asarray(senses)
    same_sense = sim[a, b][(s[a] == s[b]) & (w[a] != w[b])]
    same_word = sim[a, b][(w[a] == w[b]) & (s[a] != s[b])]
    if not len(same_sense) or not len(same_word):
        raise ValueError("need at least one same-sense pair of different words and one same-word pair of different senses")
    tol = dot_tolerance(X.shape[1], working_dtype(raw.dtype))

    def auc_of(pos: np.ndarray, neg: np.ndarray) -> float:
        diff = pos[:, None] - neg[None, :]
        return float((diff > tol).mean() + 0.5 * (np.abs(diff) <= tol).mean())

    ww = sim[a, b][(w[a] == w[b]) & (s[a] == s[b])]
    within = (float(ww.mean()), float(ww.mean() - same_word.mean()), auc_of(ww, same_word)) if len(ww) else (float("nan"),) * 3
    return SenseSeparation(float(same_sense.mean()), float(same_word.mean()), float(same_sense.mean() - same_word.mean()),
                           auc_of(same_sense, same_word), len(same_sense), len(same_word), *within)
