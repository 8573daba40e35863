"""The built-in tasks: each a short function from :class:`Embedded` values to a result.

Each function reads the vectors an :class:`~semanscope_nb.models.embedded.Embedded`
holds, calls the pure functions of :mod:`semanscope_nb.metrics` (or
:mod:`semanscope_nb.plots.projection`) and stamps the embedding's provenance on
the result.  :mod:`semanscope_nb.runs.tasks` registers them.

Example
-------
>>> import semanscope_nb as snb
>>> emb = snb.embed("edge-cases", "random-null", languages=["en", "zh"], cache=False)
>>> aligned_words(emb).n_rows == len(emb.dataset)
True
"""

from __future__ import annotations

import itertools

from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from semanscope_nb.data.datasets import fit_corpus
from semanscope_nb.data.words import WordDataset
from semanscope_nb.errors import ArgumentError
from semanscope_nb.memo import Memo
from semanscope_nb.metrics.affinity import DEFAULT_TIERS, SAResult, TierThresholds, affinity_of_words, check_row_tuples
from semanscope_nb.metrics.options import check_flag, check_ks, check_n_boot
from semanscope_nb.metrics.spreads import AlignedWords, csr_of_dense
from semanscope_nb.models.embedded import Embedded


def aligned_words(embedded: Embedded) -> AlignedWords:
    """Unique-word vectors and row incidence per language of an embedded word dataset."""
    dataset = embedded.dataset
    if not isinstance(dataset, WordDataset):
        raise ArgumentError(f"'{embedded.name}' is not a word dataset (it is {type(dataset).__name__})")
    shell = _word_shell(dataset)
    vecs = tuple(embedded.matrix(lang, list(uniq)) for lang, uniq in zip(dataset.languages, shell.words))
    return AlignedWords(shell.languages, vecs, shell.incidence, shell.labels, shell.groups, shell.words, shell.concept_keys)


def _word_shell(dataset: WordDataset) -> AlignedWords:
    """The incidence, labels and unique words per language of ``dataset`` (no vectors): what :func:`aligned_words` adds them to."""
    incs, words = [], []
    for lang in dataset.languages:
        uniq = dataset.words(lang)
        pos = {w: i for i, w in enumerate(uniq)}
        cells = dataset.column(lang)
        r_idx = np.repeat(np.arange(len(cells)), [len(c) for c in cells])
        c_idx = np.fromiter((pos[w] for c in cells for w in c), dtype=np.int64, count=r_idx.size)
        incs.append(sp.csr_matrix((np.ones(r_idx.size), (r_idx, c_idx)), shape=(len(cells), len(uniq))))
        words.append(tuple(uniq))
    labels = tuple(" / ".join(cell[0] for cell in row[:2]) for row in dataset.rows)
    return AlignedWords(dataset.languages, (), tuple(incs), labels, dataset.groups, tuple(words), dataset.concept_keys)


def _stamp(result: Any, embedded: Embedded, **extra: Any) -> Any:
    return result.with_provenance(**dict(embedded.provenance), **extra)


# --------------------------------------------------------------------------- Semantic Affinity and its verdict


def check_sa(dataset: WordDataset, params: dict) -> None:
    """Refuse, before embedding, a row too large to score (see :func:`check_row_tuples`) and a ``surface_null`` that
    is not a bool (``"no"`` would read as True)."""
    if "surface_null" in params:
        check_flag("surface_null", params["surface_null"])
    check_row_tuples(dataset.rows, languages=dataset.languages)


def sa_task(
    embedded: Embedded,
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    on_zero: str = "drop",
    method: str = "percentile",
    surface_null: bool = True,
    should_stop: Any = None,
) -> SAResult:
    """SA with its bootstrap, chance level and null-aware verdict (paper 000).

    The verdict excludes the concepts of words the model's tokenizer maps to
    unknown tokens only (:meth:`~semanscope_nb.models.encoders.Encoder.unknown_token_words`).
    ``surface_null``: also embed the dataset with the surface-form baseline
    ('tfidf-char', through the same cache; cheap) and say whether the model beats
    it on the same concepts (:attr:`SAResult.surface`).  ``should_stop``: asked between bootstrap batches.
    """
    surface_null = check_flag("surface_null", surface_null)
    aw = aligned_words(embedded)
    surface = _surface_words(embedded, should_stop, own=aw) if surface_null else None
    result = affinity_of_words(aw, n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds,
                               on_zero=on_zero, method=method, unknown_words=unknown_words(embedded, aw), surface=surface,
                               should_stop=should_stop)
    return _stamp(result, embedded)


#: the surface-form baseline of the verdict: character n-gram TF-IDF (it sees spelling only)
SURFACE_BASELINE = "tfidf-char"
#: the baseline's word vectors of recent data sets are kept (as sparse rows: TF-IDF is 0.4% non-zero) while they hold
#: at most this many bytes in all: a benchmark scores every model on each data set, and re-reading 4096-dim rows from
#: the cache was a good part of a warm run.  TF-IDF is a deterministic function of the data set's texts, so a kept
#: copy is the one a read would give
SURFACE_KEPT_BYTES = 64 * 2**20
_SURFACES = Memo(SURFACE_KEPT_BYTES, sizeof=lambda kept: kept[2])  # (shell, sparse rows, bytes) by data set


def _baseline_encoder(dataset: WordDataset) -> Any:
    """The surface baseline's encoder prepared on ``dataset`` as :func:`embed` prepares it (its IDF corpus hash; no fit)."""
    from semanscope_nb.models.registry import load_model

    return load_model(SURFACE_BASELINE).prepare(fit_corpus(dataset))  # as embed() does


def _is_the_baseline(embedded: Embedded, baseline: Any = None) -> bool:
    """Whether ``embedded`` holds the surface baseline's own vectors of its data set (same cache key as :func:`embed` gives)."""
    if embedded.model_id != SURFACE_BASELINE:
        return False
    baseline = baseline if baseline is not None else _baseline_encoder(embedded.dataset)
    return not baseline.language_dependent and baseline.cache_key == embedded.model_key


def _baseline_identity(dataset: WordDataset, baseline: Any, *, cached: bool) -> bytes:
    """What determines the baseline's aligned words on ``dataset``, without them.

    The baseline encoder's cache key (model id, version, every option, the fitted IDF corpus's hash), the data set's
    content hash, languages, rows (every word of every cell: the incidence, the labels and which words are embedded)
    and groups, and whether the vectors come through the embedding cache (float32) or straight from the encoder.
    """
    import hashlib

    h = hashlib.blake2b(digest_size=20)
    for part in (baseline.cache_key, dataset.sha256, "cache:float32" if cached else "no-cache", repr(tuple(dataset.languages)),
                 repr(dataset.groups)):
        h.update(str(part).encode())
        h.update(b"\x00")
    parts: list[bytes] = []  # the rows' bytes hashed in one update: the same digest as one update per word, 40% sooner
    put = parts.append
    for row in dataset.rows:  # words hold no control characters that could make two row lists encode alike: lengths too
        for cell in row:
            put(f"{len(cell)}:".encode())
            for w in cell:
                b = w.encode()
                put(f"{len(b)}:".encode())
                put(b)
        put(b"\x1d")
    h.update(b"".join(parts))
    return h.digest()


def _surface_words(embedded: Embedded, should_stop: Any = None, *, own: AlignedWords | None = None) -> AlignedWords:
    """The surface baseline's aligned words on ``embedded``'s data set (embedded through the same cache, or kept).

    ``own``: ``aligned_words(embedded)`` when the caller has it; when ``embedded`` is the baseline itself (same
    cache key), those are its words and the cache is not read a second time.  Otherwise the words' vectors are
    a :class:`~semanscope_nb.metrics.chance.BaselineVectors`: read (from memory or the cache) only when the verdict
    does not find the baseline's statistics by what determines them (a fresh process with the store filled reads none).
    """
    from semanscope_nb.metrics.chance import BaselineVectors

    ds = embedded.dataset
    key = (SURFACE_BASELINE, tuple(ds.languages), ds.rows)
    baseline = _baseline_encoder(ds)
    if own is not None and _is_the_baseline(embedded, baseline):
        if _SURFACES.get(key) is None:
            _keep_words(key, own)
        return own  # the baseline's model job: the vectors it read are the ones a second read would give
    kept = _SURFACES.get(key)
    # own's incidence, labels, groups and words are _word_shell(ds)'s (aligned_words of the same data set): not built twice
    shell = kept[0] if kept is not None else own if own is not None else _word_shell(ds)
    cache = embedded.cache if embedded.cache is not None else False
    dims = (baseline.options or {}).get("n_features") if not baseline.language_dependent else None
    vectors = BaselineVectors(_baseline_identity(ds, baseline, cached=cache is not False),
                              lambda: _baseline_vectors(ds, key, cache, should_stop), n_languages=len(shell.languages),
                              dims=dims if isinstance(dims, int) else None)
    return AlignedWords(shell.languages, vectors, shell.incidence, shell.labels, shell.groups, shell.words,
                        ds.concept_keys)  # (this data set's keys: a kept shell may come from another file of the same rows)


def _baseline_vectors(ds: WordDataset, key: tuple, cache: Any, should_stop: Any) -> tuple[np.ndarray, ...]:
    """The baseline's word vectors per language on ``ds``: kept in memory, else embedded through ``cache`` (and kept)."""
    from semanscope_nb.models.embedded import embed

    kept = _SURFACES.get(key)
    if kept is not None:
        vectors = tuple(m.toarray() for m in kept[1])  # the same float32 numbers as read (zeros are exact)
        for v in vectors:
            v.flags.writeable = False
        return vectors
    words = aligned_words(embed(ds, SURFACE_BASELINE, cache=cache, progress=False, should_stop=should_stop))
    _keep_words(key, words)
    return words.vectors


def _keep_words(key: tuple, words: AlignedWords) -> None:
    rows = tuple(csr_of_dense(v) for v in words.vectors)
    size = sum(int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes) for m in rows)
    shell = AlignedWords(words.languages, (), words.incidence, words.labels, words.groups, words.words, words.concept_keys)
    _SURFACES.put(key, (shell, rows, size))  # not kept when larger than SURFACE_KEPT_BYTES on its own


#: suffix of the embedding cache's token-entry key under which a model's unknown-token answers are kept
UNKNOWN_TOKEN_KEY = "|unknown-token-words"
#: suffix of the token-entry key under which a model's answer for a whole word set is kept: entry = the set's digest
#: (:func:`_word_set_entry`), meta "set", blob = the set's unknown-token words as a JSON list.  One row to read instead of
#: one per word (2,739 rows on conceptual-space: ~20 ms of a first call); the per-word answers stay the source
UNKNOWN_SET_KEY = "|unknown-token-word-sets"


def _word_set_entry(words: Sequence[str]) -> str:
    """The token entry of a sorted word set: ``"blake2b:" +`` the hex digest of its JSON list (unambiguous for any text).

    >>> _word_set_entry(["a", "b"]) == _word_set_entry(["a", "b"]) != _word_set_entry(["ab"])
    True
    """
    import hashlib
    import json

    return "blake2b:" + hashlib.blake2b(json.dumps(list(words), ensure_ascii=False).encode("utf-8", "surrogatepass"),
                                        digest_size=20).hexdigest()


def _stored_unknown_set(cache: Any, key: str, entry: str, wanted: set[str]) -> set[str] | None:
    """The unknown-token words of the set ``wanted`` kept under ``entry``, or None (not kept, or unusable: warned).

    A row whose digest does not match is dropped and named by the cache itself (:meth:`EmbeddingCache.get_token_entries`);
    a sound row that does not hold a JSON list of words of the set (never written by :func:`unknown_words`) is named
    here as damaged and is written over by the answer computed again.
    """
    import json
    import warnings

    from semanscope_nb.errors import CacheWarning

    stored = cache.get_token_entries(key, [entry]).get(entry)
    if stored is None:
        return None
    meta, blob = stored
    try:
        words = json.loads(blob.decode("utf-8", "surrogatepass")) if meta == "set" else None
    except (UnicodeDecodeError, ValueError):
        words = None
    if isinstance(words, list) and all(isinstance(w, str) for w in words) and wanted.issuperset(words):
        return set(words)
    warnings.warn(f"embedding cache '{cache.path}': the unknown-token entry {entry} of {key} is damaged (meta {meta!r}, "
                  f"{len(blob)} bytes); answering from the per-word entries and writing it again", CacheWarning,
                  stacklevel=3)
    return None


def unknown_words(embedded: Embedded, aw: AlignedWords | None = None) -> dict[str, tuple[str, ...]]:
    """Language -> the words the embedding's tokenizer maps to unknown tokens only (empty when it cannot say).

    The answers are kept in the embedding's cache beside its vectors (token entries under the
    model's cache key + :data:`UNKNOWN_TOKEN_KEY`; meta "1" or "0"), so a warm cache answers
    without loading the tokenizer (USE's SentencePiece port takes seconds to read); the answer
    for the whole word set is kept too (:data:`UNKNOWN_SET_KEY`), so a warm cache answers in one
    read.  A cache that cannot be written (read-only, full, locked) only means asking the
    tokenizer (or the per-word entries) again next time.
    """
    aw = aw if aw is not None else aligned_words(embedded)
    out: dict[str, tuple[str, ...]] = {}
    hook = getattr(embedded.encoder, "unknown_token_words", None)
    if hook is None or aw.words is None:
        return out
    cache = embedded.cache
    key = embedded.encoder.cache_key + UNKNOWN_TOKEN_KEY
    known: dict[str, bool] = {}
    if cache is not None:
        wanted = {w for words in aw.words for w in words}
        ordered = sorted(wanted)
        set_key, set_entry = embedded.encoder.cache_key + UNKNOWN_SET_KEY, _word_set_entry(ordered)
        unknown = _stored_unknown_set(cache, set_key, set_entry, wanted)
        if unknown is not None:  # the whole set's answer: the same words the per-word entries give
            for lang, words in zip(aw.languages, aw.words):
                hit = tuple(w for w in words if w in unknown)
                if hit:
                    out[lang] = hit
            return out
        known = {w: meta == "1" for w, (meta, _) in cache.get_token_entries(key, ordered).items() if meta in ("0", "1")}
    for lang, words in zip(aw.languages, aw.words):
        missing = [w for w in dict.fromkeys(words) if w not in known]
        if missing:
            flags = hook(missing)
            if flags is None:
                return {}
            answers = {w: bool(f) for w, f in zip(missing, flags)}
            known.update(answers)
            if cache is not None:
                cache.put_token_entries(key, [(w, "1" if f else "0", b"") for w, f in answers.items()])
        hit = tuple(w for w in words if known[w])
        if hit:
            out[lang] = hit
    if cache is not None:  # saves work only: never a wait or an error (the per-word entries answer without it)
        import json

        blob = json.dumps(sorted(w for w in wanted if known[w]), ensure_ascii=False).encode("utf-8", "surrogatepass")
        cache.put_token_entries(set_key, [(set_entry, "set", blob)], best_effort=True)
    return out


#: the pair matrix's permutations per pair when not given (and n_boot is smaller): a lone true pair among N needs
#: n_perm above N / alpha
PAIR_N_PERM = 2000


def pair_sa_task(embedded: Embedded, *, n_boot: int, seed: int, confidence: float = 0.95,
                 thresholds: TierThresholds = DEFAULT_TIERS, n_perm: int | None = None, alpha: float = 0.05,
                 surface_null: bool = True, on_zero: str = "drop", should_stop: Any = None) -> Any:
    """SA of every language pair, each with its own chance level, artefact exclusion and FDR-controlled verdict.

    ``n_perm=None``: with two languages (one pair) ``n_boot``, the verdict's own test (``sa``'s permutation gate
    draws ``n_boot`` re-pairings), so the pair's p-value and verdict are the ``sa`` task's; with more,
    ``max(n_boot, PAIR_N_PERM)``.  ``surface_null`` (as ``sa``'s): each pair is compared with the surface-form
    baseline of its two languages -- the one the ``sa`` task of those two languages embeds (its IDF fitted on their
    words), so a pair's row and the verdict of its two languages are one answer -- and a pair that does not beat
    it is 'not above surface form'.  ``on_zero`` (as ``sa``'s): the concepts holding a word with an all-zero vector
    are dropped from the pairs of that language ('drop'), or raise ('error').
    """
    from semanscope_nb.metrics.pairs import pair_affinity

    n_boot = check_n_boot(n_boot, allow_zero=False, minimum=1)  # before n_perm is derived from it
    surface_null = check_flag("surface_null", surface_null)
    if n_perm is None:
        n_perm = n_boot if len(embedded.languages) == 2 else max(n_boot, PAIR_N_PERM)
        n_perm = max(int(n_perm), 1)
    aw = aligned_words(embedded)  # the verdict's artefacts: unknown-token words too (as sa_task)
    surface = None
    if surface_null:  # each pair's baseline as sa_task of its two languages builds it (same words, same key)
        languages = list(embedded.languages)
        surface = {}
        for a, b in itertools.combinations(languages, 2):
            pair = embedded.select([a, b])
            surface[a, b] = _surface_words(pair, should_stop, own=aligned_words(pair))
    return _stamp(pair_affinity(aw, n_boot=n_boot, seed=seed, confidence=confidence, thresholds=thresholds, n_perm=n_perm,
                                alpha=alpha, should_stop=should_stop, unknown_words=unknown_words(embedded, aw),
                                surface=surface, on_zero=on_zero), embedded)


def permutation_task(embedded: Embedded, *, n_perm: int = 1000, seed: int) -> Any:
    """Where the observed SA of the judged concepts falls among ``n_perm`` shuffled translation pairings.

    The verdict's own test (:func:`~semanscope_nb.metrics.affinity.judged_permutation_test`): the concepts the
    ``sa`` task judges (zero vectors dropped, identical strings, unknown-token words and degenerate vectors left
    out), so with ``n_perm = n_boot`` and the same seed its p-value is the verdict's (``SAResult.permutation``).
    """
    from semanscope_nb.metrics.affinity import judged_permutation_test

    aw = aligned_words(embedded)
    return _stamp(judged_permutation_test(aw, n_perm=n_perm, seed=seed, unknown_words=unknown_words(embedded, aw)),
                  embedded)


def comparison_task(embeddeds: Sequence[Embedded], *, n_boot: int, n_perm: int = 10000, seed: int,
                    confidence: float = 0.95, alpha: float = 0.05) -> Any:
    """Paired comparison of several models on the same concepts (Holm-corrected, rank bands)."""
    from semanscope_nb.metrics.compare import compare_models

    names = [e.model_id for e in embeddeds]
    if len(set(names)) < len(names):
        raise ArgumentError(f"comparison: each model once, got {names}")
    first = embeddeds[0]
    for e in embeddeds[1:]:
        if e.dataset.sha256 != first.dataset.sha256 or e.languages != first.languages:
            raise ArgumentError(f"comparison: '{e.model_id}' was embedded on other data than '{first.model_id}'")
    aws = {e.model_id: aligned_words(e) for e in embeddeds}
    unknown = {e.model_id: unknown_words(e, aws[e.model_id]) for e in embeddeds}  # the verdict's artefacts (sa_task)
    result = compare_models(aws, n_boot=n_boot, n_perm=n_perm, seed=seed, confidence=confidence, alpha=alpha,
                            unknown_words=unknown, on_zero="drop")  # as the sa task: zero-vector concepts dropped
    prov = {k: v for k, v in first.provenance.items() if not k.startswith("model")}
    return result.with_provenance(**prov, models={e.model_id: {"model_version": e.model_version, "model_options": dict(e.model_options)}
                                                  for e in embeddeds})


# --------------------------------------------------------------------------- retrieval, BDI, kNN


def language_pairs_of(languages: Sequence[str], source: str | None, targets: Sequence[str] | None, *, name: str) -> list[tuple[str, str]]:
    """(source, target) pairs: ``source`` (default en, else the first language) to each of ``targets`` (default: all others)."""
    langs = list(languages)
    src = source or ("en" if "en" in langs else langs[0])
    if src not in langs:
        raise ArgumentError(f"source language '{src}' is not in dataset '{name}' ({', '.join(langs)})")
    tgts = list(targets) if targets else [lang for lang in langs if lang != src]
    missing = [t for t in tgts if t not in langs]
    if missing:
        raise ArgumentError(f"target language(s) {missing} not in dataset '{name}' ({', '.join(langs)})")
    return [(src, t) for t in tgts if t != src]


def retrieval_task(embedded: Embedded, *, source: str | None = None, targets: Sequence[str] | None = None,
                   ks: Sequence[int] = (1, 5, 10), n_boot: int, seed: int, confidence: float = 0.95) -> Any:
    """Retrieval: a word dataset's every (source, target) pair (hit = any gold translation), or a parallel corpus row by row."""
    from semanscope_nb.data.bitext import ParallelCorpus
    from semanscope_nb.metrics.retrieval import RetrievalSet, bitext_retrieval, lexicon_induction

    ds = embedded.dataset
    ks = sorted({1, *check_ks(ks, allow_empty=True)})  # the task's main score is P@1: always scored, whatever other ks are asked for
    per_pair = {}
    if isinstance(ds, ParallelCorpus):
        src = embedded.matrix(ds.source_language, list(ds.source_texts))
        tgt = embedded.matrix(ds.target_language, list(ds.target_texts))
        # the sentences as labels: the bootstrap resamples the pairs in their canonical order (data.concept_key), as
        # text_retrieval / tatoeba_retrieval do, so a corpus's rows in another order give the same interval on every path
        r = bitext_retrieval(src, tgt, ks=ks, n_boot=n_boot, seed=seed, confidence=confidence,
                             source_labels=list(ds.source_texts), target_labels=list(ds.target_texts),
                             names=(ds.source_language, ds.target_language))
        per_pair[f"{ds.source_language}->{ds.target_language}"] = r
    else:
        for s, t in language_pairs_of(ds.languages, source, targets, name=ds.name):
            per_pair[f"{s}->{t}"] = lexicon_induction(ds, embedded.encoder, source=s, target=t, ks=ks, n_boot=n_boot, seed=seed,
                                                      confidence=confidence, cache=embedded.cache if embedded.cache is not None else False)
    return _stamp(RetrievalSet(per_pair), embedded)


def bdi_pair(dataset: WordDataset, params: Mapping[str, Any]) -> tuple[str, str]:
    """The bdi task's (source, target) on ``dataset`` (also its check, before embedding): a language that is not in
    it, or a target that is the source, is an :class:`~semanscope_nb.errors.ArgumentError`."""
    source, target = params.get("source"), params.get("target")
    pairs = language_pairs_of(dataset.languages, source, [target] if target else None, name=dataset.name)
    if not pairs:  # the target is the source (given, or the default 'en' / first language)
        raise ArgumentError(f"bdi: source and target are the same language '{target or source}'")
    return pairs[0]


def bdi_task(embedded: Embedded, *, source: str | None = None, target: str | None = None, method: str = "nn",
             ks: Sequence[int] = (1, 5), knn: int = 10, n_boot: int, seed: int) -> Any:
    """Bilingual lexicon induction against the whole target vocabulary (nearest neighbour or CSLS)."""
    from semanscope_nb.metrics.contextual import lexicon_induction_vectors

    ds = embedded.dataset
    src, tgt = bdi_pair(ds, {"source": source, "target": target})
    pair = ds.select([src, tgt])
    gold = sorted({(s, t) for row in pair.rows for s in row[0] for t in row[1]})
    sw, tw = pair.words(src), pair.words(tgt)
    ks = sorted({1, *check_ks(ks, allow_empty=True)})  # the task's main score is P@1: always scored, whatever other ks are asked for
    result = lexicon_induction_vectors(embedded.matrix(src, sw), sw, embedded.matrix(tgt, tw), tw, gold, method=method, ks=ks,
                                       knn=knn, n_boot=n_boot, seed=seed, provenance={"source": src, "target": tgt})
    return _stamp(result, embedded)


def knn_task(embedded: Embedded, *, ks: Sequence[int] = (1, 5, 10), metric: str = "cosine", logistic: bool = True,
             n_boot: int, seed: int, confidence: float = 0.95) -> Any:
    """kNN classification of the test split from the labelled train split (MINERS), with baselines."""
    from semanscope_nb.metrics.classification import knn_classification, test_row_keys

    tr, te = embedded.dataset.train, embedded.dataset.test
    result = knn_classification(embedded.matrix(tr.language, list(tr.texts)), list(tr.labels),
                                embedded.matrix(te.language, list(te.texts)), list(te.labels), ks=ks, metric=metric,
                                logistic=logistic, n_boot=n_boot, seed=seed, confidence=confidence,
                                train_language=tr.language, test_language=te.language,
                                test_keys=test_row_keys(te.texts, te.labels))
    return _stamp(result, embedded, train_dataset=tr.name, test_dataset=te.name)


# --------------------------------------------------------------------------- CSC and projections


def csc_sample(corpus: Any, params: dict) -> Any:
    """The sentences CSC scores: the corpus, or a seeded sample of ``max_sentences``."""
    n = params.get("max_sentences")
    return corpus.sample(n, seed=params["seed"]) if n else corpus


def csc_texts(corpus: Any, params: dict) -> dict[str, list[str]]:
    """The originals and perturbed sentences the CSC task embeds (so a grid or a panel embeds them ahead)."""
    from semanscope_nb.metrics.csc.perturbation import perturb_corpus
    from semanscope_nb.metrics.csc.separation import rules_for

    language = params.get("language") or corpus.language
    rules = rules_for(language, fuzz_terms=params.get("fuzz_terms"), negation_terms=params.get("negation_terms"))
    texts = list(csc_sample(corpus, params).sentences)
    perts = perturb_corpus(texts, language=language, max_per_sentence=params["max_per_sentence"], seed=params["seed"],
                           negation=params["negation"], rules=rules)
    return {corpus.language: list(dict.fromkeys(texts + [p.text for p in perts]))}


def csc_task(embedded: Embedded, *, max_sentences: int | None = None, max_per_sentence: int = 3, negation: str = "particle",
             n_boot: int, seed: int, confidence: float = 0.95, language: str | None = None,
             bandwidth: float | str | None = None, min_words: int | None = None, max_words: int | None = None,
             fuzz_terms: str | None = None, negation_terms: str | None = None) -> Any:
    """Concept Separation Curves (paper 002): overlap of fuzz and negation similarity curves (lower = better)."""
    from semanscope_nb.metrics.csc.separation import concept_separation

    corpus = embedded.dataset
    sample = csc_sample(corpus, {"max_sentences": max_sentences, "seed": seed})
    result = concept_separation(sample, embedded.encoder, language=language or corpus.language, max_per_sentence=max_per_sentence,
                                negation=negation, seed=seed, n_boot=n_boot, confidence=confidence, bandwidth=bandwidth,
                                min_words=min_words, max_words=max_words, fuzz_terms=fuzz_terms, negation_terms=negation_terms,
                                cache=embedded.cache if embedded.cache is not None else False, progress=False)
    return _stamp(result, embedded)


def projection_task(embedded: Embedded, *, method: str = "phate", random_state: int = 0, n_components: int = 2,
                    options: dict | None = None, projection_cache: Any = None, should_stop: Any = None) -> Any:
    """A 2-D (or 3-D) map of every unique (language, word), the paper's PHATE by default.

    ``options``: the method's own parameters (e.g. ``{"knn": 15}``); ``projection_cache``: a
    :class:`~semanscope_nb.plots.projection.ProjectionCache` (None: the process-wide one, on disk).
    ``should_stop``: PHATE / UMAP / t-SNE then run in a worker process that is ended when it says stop.
    """
    from semanscope_nb.plots.projection import ProjectionSettings, project_dataset

    settings = ProjectionSettings(method=method, random_state=random_state, n_components=n_components, params=dict(options or {}))
    return _stamp(project_dataset(embedded.dataset, embedded.vectors, settings=settings, cache=projection_cache,
                                  should_stop=should_stop), embedded)
