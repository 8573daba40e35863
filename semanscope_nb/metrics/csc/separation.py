"""The CSC pipeline: perturb, embed, compare, KDE, overlap, bootstrap; results and grids.

Layer: metrics.  Imports the CSC rooms beside it, the models layer and the data layer.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.data.concept_key import item_key, key_order
from semanscope_nb.data.sentences import SentenceCorpus
from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.metrics.csc.bootstrap import full_sample_curves, resampled_csc_stats
from semanscope_nb.metrics.csc.curves import csc_curves
from semanscope_nb.metrics.csc.kde import (
    CSCCurves,
    KDEMethod,
    validate_grid,
    resolve_bandwidth,
)
from semanscope_nb.metrics.csc.languages import (
    Kind,
    LanguageRules,
    NegationMode,
    UnsupportedLanguageError,
    get_language_rules,
)
from semanscope_nb.metrics.csc.perturbation import perturb_corpus
from semanscope_nb.metrics.options import check_confidence, check_n_boot, check_seed, is_whole
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.provenance import json_ready, package_info, shareable_report, shareable_source, utc_now
from semanscope_nb.settings import resolve


@dataclass(frozen=True)
class CSCResult(Result):
    """Concept Separation Curves of one model on one corpus (see :func:`concept_separation`)."""

    kind = "csc"
    main_score_name = "overlap"

    model: str
    corpus: str
    language: str
    negation_mode: str
    overlap: float
    ci: Interval
    median_fuzz: float
    median_negation: float
    separation: float  # median fuzz - median negation (> 0: negation moves the vector more)
    separation_ci: Interval
    n_boot: int
    confidence: float
    seed: int
    curves: CSCCurves
    sentences: list[str]
    perturbations: pd.DataFrame  # sentence, kind, position, term, text, similarity (NaN if dropped), status
    n_dropped: dict[str, int]
    n_without_negation: int
    n_without_fuzz: int
    buckets: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ci", Interval.of(self.ci))
        object.__setattr__(self, "separation_ci", Interval.of(self.separation_ci))

    # -- views ----------------------------------------------------------------
    def estimates(self) -> dict[str, Estimate]:
        """The overlap and the separation with their bootstrap intervals (``sem``: NaN, only the interval is kept)."""
        return {"overlap": Estimate(self.overlap, math.nan, self.ci),
                "separation": Estimate(self.separation, math.nan, self.separation_ci)}

    @property
    def n_sentences(self) -> int:
        return len(self.sentences)

    def sims(self, kind: Kind) -> np.ndarray:
        """The defined similarities of one curve."""
        p = self.perturbations
        return p.loc[(p.kind == kind) & (p.status == "ok"), "similarity"].to_numpy(dtype=np.float64)

    @property
    def n_fuzz(self) -> int:
        return int(self.sims("fuzz").size)

    @property
    def n_negation(self) -> int:
        return int(self.sims("negation").size)

    def sentence_table(self) -> pd.DataFrame:
        """One row per original sentence: counts, mean similarities, their gap, the closest negated variant.

        ``negation_gap`` = mean fuzz similarity - mean negation similarity: negative
        means the negation moved the embedding *less* than inserting an article.
        """
        p = self.perturbations[self.perturbations.status == "ok"]
        rows = []
        for i, s in enumerate(self.sentences):
            q = p[p.sentence == i]
            fz, ng = q[q.kind == "fuzz"], q[q.kind == "negation"]
            best = ng.loc[ng.similarity.idxmax()] if len(ng) else None
            mf = float(fz.similarity.mean()) if len(fz) else math.nan
            mn = float(ng.similarity.mean()) if len(ng) else math.nan
            rows.append({
                "sentence": s, "n_words": len(s.split()), "n_fuzz": len(fz), "n_negation": len(ng),
                "mean_fuzz": mf, "mean_negation": mn, "negation_gap": mf - mn,
                "closest_negation": None if best is None else best.text,
                "closest_negation_similarity": math.nan if best is None else float(best.similarity),
            })
        return pd.DataFrame(rows)

    def insensitive_cases(self, n: int = 10) -> pd.DataFrame:
        """The ``n`` sentences whose negation moved the embedding least relative to fuzzing (smallest gap first)."""
        t = self.sentence_table()
        return t.sort_values("negation_gap", kind="stable", na_position="last").head(n).reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """Flat numbers for a table row."""
        return {
            "model": self.model, "corpus": self.corpus, "language": self.language, "negation_mode": self.negation_mode,
            "overlap": self.overlap, "ci_low": self.ci[0], "ci_high": self.ci[1],
            "median_fuzz": self.median_fuzz, "median_negation": self.median_negation,
            "separation": self.separation, "separation_ci_low": self.separation_ci[0], "separation_ci_high": self.separation_ci[1],
            "n_sentences": self.n_sentences, "n_fuzz": self.n_fuzz, "n_negation": self.n_negation,
            "n_dropped": int(self.n_dropped.get("fuzz", 0) + self.n_dropped.get("negation", 0)),  # variants without a cosine
            "n_zero_originals": int(self.n_dropped.get("original_zero_vectors", 0)),
        }

    # -- serialisation (save / load: see Result) ---------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN -> None); round-trips through :meth:`from_dict`."""
        p = self.perturbations
        d = {
            "model": self.model, "corpus": self.corpus, "language": self.language, "negation_mode": self.negation_mode,
            "overlap": self.overlap, "ci": list(self.ci), "median_fuzz": self.median_fuzz,
            "median_negation": self.median_negation, "separation": self.separation, "separation_ci": list(self.separation_ci),
            "n_boot": self.n_boot, "confidence": self.confidence, "seed": self.seed,
            "curves": {
                "grid": self.curves.grid.tolist(), "fuzz": self.curves.fuzz.tolist(), "negation": self.curves.negation.tolist(),
                "overlap": self.curves.overlap, "fuzz_kernel_sd": self.curves.fuzz_kernel_sd,
                "negation_kernel_sd": self.curves.negation_kernel_sd, "routes": list(self.curves.routes),
            },
            "sentences": list(self.sentences),
            "perturbations": {c: p[c].tolist() for c in ("sentence", "kind", "position", "term", "text", "similarity", "status")},
            "n_dropped": dict(self.n_dropped), "n_without_negation": self.n_without_negation,
            "n_without_fuzz": self.n_without_fuzz, "buckets": self.buckets, "notes": list(self.notes),
            "provenance": self.provenance,
        }
        return json_ready(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CSCResult":
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        c = d["curves"]
        curves = CSCCurves(np.array(c["grid"], dtype=float), np.array(c["fuzz"], dtype=float), np.array(c["negation"], dtype=float),
                           float(c["overlap"]), float(c["fuzz_kernel_sd"]), float(c["negation_kernel_sd"]), tuple(c["routes"]))
        pert = pd.DataFrame(d["perturbations"])
        pert["similarity"] = pert["similarity"].map(num).astype(float)
        return cls(
            model=d["model"], corpus=d["corpus"], language=d["language"], negation_mode=d["negation_mode"],
            overlap=num(d["overlap"]), ci=Interval.of(d["ci"]), median_fuzz=num(d["median_fuzz"]),
            median_negation=num(d["median_negation"]), separation=num(d["separation"]),
            separation_ci=Interval.of(d["separation_ci"]), n_boot=int(d["n_boot"]),
            confidence=float(d["confidence"]), seed=int(d["seed"]), curves=curves, sentences=list(d["sentences"]),
            perturbations=pert, n_dropped={k: int(v) for k, v in d["n_dropped"].items()},
            n_without_negation=int(d["n_without_negation"]), n_without_fuzz=int(d["n_without_fuzz"]),
            buckets=[{k: (math.nan if v is None else v) for k, v in b.items()} for b in d.get("buckets", [])],
            notes=list(d.get("notes", [])), provenance=dict(d.get("provenance", {})),
        )




def pair_cosines(orig: np.ndarray, pert: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise cosine; NaN where either vector is zero (undefined), plus that mask."""
    no = np.linalg.norm(orig, axis=1)
    npt = np.linalg.norm(pert, axis=1)
    zero = (no == 0) | (npt == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", orig, pert) / (no * npt)
    cos = np.clip(cos, -1.0, 1.0)  # float rounding can step just outside [-1, 1]
    cos[zero] = np.nan
    return cos, zero


def _stats_for(fz: np.ndarray, ng: np.ndarray, resolution: int, bandwidth: Any, method: KDEMethod) -> tuple[float, float]:
    if fz.size == 0 or ng.size == 0:
        return math.nan, math.nan
    ov = csc_curves(fz, ng, resolution=resolution, bandwidth=bandwidth, method=method).overlap
    return ov, float(np.median(fz) - np.median(ng))


_BOOT_BATCH = 500  # resamples per vectorised call (memory: batch x grid window)


def _bootstrap(
    fz: np.ndarray, fz_sent: np.ndarray, ng: np.ndarray, ng_sent: np.ndarray, n_sentences: int, *,
    n_boot: int, seed: int, confidence: float, method: str, resolution: int, bandwidth: Any, kde_method: KDEMethod,
    order: np.ndarray | None = None,
) -> tuple[tuple[float, float], tuple[float, float], list[str]]:
    """Intervals of (overlap, separation), resampling original sentences with replacement.

    scipy.stats.bootstrap does the resampling and the interval (BCa by default:
    the overlap of two resampled, noisier curves is biased low, and BCa corrects
    for that bias; 'percentile' and 'basic' are available).  A resample draws
    sentence indices; each drawn sentence brings all its variants.  The
    statistic is vectorised over resamples (:func:`resampled_csc_stats`: one
    batched FFT per batch of resamples, no Python loop), so scipy calls it once
    per ``_BOOT_BATCH`` resamples and once for BCa's jackknife.  Its
    full-sample value is the reported point when ``kde_method="auto"``
    (:func:`csc_curves`' default route); an explicit ``kde_method`` draws the point by that
    route, and a note gives how far it lies from the bootstrap's statistic.  ``order``: the
    sentences in canonical order (slot ``s`` of a resample is sentence ``order[s]``;
    :func:`~semanscope_nb.data.concept_key.key_order`), None: as given.
    """
    import warnings

    import scipy.stats

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.moveaxis(np.asarray(idx), axis, -1).astype(np.int64)
        lead = idx.shape[:-1]
        flat = idx.reshape(-1, idx.shape[-1])
        rows = flat.shape[0]
        counts = np.bincount((flat + n_sentences * np.arange(rows)[:, None]).ravel(),
                             minlength=rows * n_sentences).reshape(rows, n_sentences)
        st = resampled_csc_stats(fz, fz_sent, ng, ng_sent, counts, resolution=resolution, bandwidth=bandwidth)
        return np.stack([st.overlap.reshape(lead), st.separation.reshape(lead)])

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = scipy.stats.bootstrap(
            (np.arange(n_sentences) if order is None else np.asarray(order),), statistic, vectorized=True, n_resamples=n_boot, confidence_level=confidence, batch=_BOOT_BATCH,
            method=method, rng=np.random.default_rng(seed),
        )
    low, high = np.asarray(res.confidence_interval.low, float), np.asarray(res.confidence_interval.high, float)
    dist = np.asarray(res.bootstrap_distribution, float)
    n_empty = int((~np.isfinite(dist[0])).sum())
    if n_empty:
        notes.append(f"{n_empty} of {n_boot} bootstrap resamples had an empty curve")
    for k in range(2):
        if not (np.isfinite(low[k]) and np.isfinite(high[k])):  # degenerate (no spread) or empty resamples
            v = dist[k][np.isfinite(dist[k])]
            if v.size:
                a = (1 - confidence) / 2
                low[k], high[k] = np.quantile(v, a), np.quantile(v, 1 - a)
                notes.append(f"{method} interval undefined for the {('overlap', 'separation')[k]} "
                             f"({'; '.join(str(w.message)[:80] for w in caught) or 'no spread'}); percentile interval used")
    return (float(low[0]), float(high[0])), (float(low[1]), float(high[1])), notes


def _length_buckets(
    edges: Sequence[int], n_words: np.ndarray, fz: np.ndarray, fz_sent: np.ndarray, ng: np.ndarray, ng_sent: np.ndarray,
    resolution: int, bandwidth: Any, method: KDEMethod,
) -> list[dict[str, Any]]:
    e = sorted(set(int(x) for x in edges))
    if len(e) < 1 or e[0] < 0:
        raise ValueError(f"length_buckets must be non-negative word-count edges, got {list(edges)}")
    bounds = list(zip(e, e[1:] + [None]))
    out = []
    for lo, hi in bounds:
        in_b = (n_words >= lo) & (n_words < hi if hi is not None else True)
        f, g = fz[in_b[fz_sent]], ng[in_b[ng_sent]]
        ov, sep = _stats_for(f, g, resolution, bandwidth, method)
        out.append({
            "bucket": f"{lo}-{hi}" if hi is not None else f">={lo}", "min_words": lo, "max_words": None if hi is None else hi - 1,
            "n_sentences": int(in_b.sum()), "n_fuzz": int(f.size), "n_negation": int(g.size), "overlap": ov,
            "median_fuzz": float(np.median(f)) if f.size else math.nan,
            "median_negation": float(np.median(g)) if g.size else math.nan, "separation": sep,
        })
    return out


def rules_for(
    language: str, *, fuzz_terms: str | Sequence[str] | None = None, negation_terms: str | Sequence[str] | None = None
) -> LanguageRules:
    """The rules a CSC run uses: the table entry of ``language``, with any directly given terms replacing its own.

    A language without a table entry needs both ``fuzz_terms`` and
    ``negation_terms`` (it is then split on whitespace).

    >>> rules_for("sv", fuzz_terms="en | ett", negation_terms="inte").articles
    ('en', 'ett')
    >>> rules_for("en", negation_terms="never").negations, rules_for("en", negation_terms="never").articles
    (('never',), ('a', 'the'))
    """
    if fuzz_terms is None and negation_terms is None:
        try:
            return get_language_rules(language)
        except UnsupportedLanguageError as exc:
            raise UnsupportedLanguageError(
                f"{exc}; or give the terms directly: fuzz_terms='en | ett', negation_terms='inte'") from None
    try:
        base = get_language_rules(language)
    except UnsupportedLanguageError:
        if fuzz_terms is None or negation_terms is None:
            missing = "fuzz_terms" if fuzz_terms is None else "negation_terms"
            raise UnsupportedLanguageError(
                f"language {language!r} has no built-in CSC rules, so both fuzz_terms and negation_terms are needed "
                f"({missing} is missing), e.g. fuzz_terms='en | ett', negation_terms='inte'"
            ) from None
        return LanguageRules.from_terms(fuzz_terms, negation_terms, code=language)
    return LanguageRules.from_terms(base.articles if fuzz_terms is None else fuzz_terms,
                                    base.negations if negation_terms is None else negation_terms, base=base)


def _prepare_sentences(sentences: Any, language: str | None) -> tuple[list[str], str, str, str, str, list[str]]:
    """(sentences, language, corpus name, source, sha256, notes) from a corpus, a list or a path."""
    from semanscope_nb.data.sentences import load_sentence_corpus

    if isinstance(sentences, (str, os.PathLike)):
        sentences = load_sentence_corpus(sentences, language=language)
    if isinstance(sentences, SentenceCorpus):
        lang = language or sentences.language
        return list(sentences.sentences), lang, sentences.name, sentences.source, sentences.sha256, list(sentences.report)
    if language is None:
        raise ValueError("language= is required when sentences is a list (e.g. language='en')")
    corpus = SentenceCorpus.from_sentences(list(sentences), language=language, name="sentences")  # raises if empty
    return list(corpus.sentences), language, corpus.name, corpus.source, corpus.sha256, list(corpus.report)


def concept_separation(
    sentences: SentenceCorpus | Sequence[str] | str | os.PathLike,
    model: str | Encoder,
    *,
    language: str | None = None,
    max_per_sentence: int = 3,
    negation: NegationMode = "particle",
    seed: int = 0,
    resolution: int = 2001,
    bandwidth: float | str | None = None,
    n_boot: int | None = None,
    confidence: float = 0.95,
    ci_method: Literal["BCa", "percentile", "basic"] = "BCa",
    min_words: int | None = None,
    max_words: int | None = None,
    length_buckets: Sequence[int] | None = None,
    kde_method: KDEMethod = "auto",
    tfidf_fit: Literal["originals", "all"] = "originals",
    cache: Any = None,
    name: str | None = None,
    progress: bool | None = None,
    fuzz_terms: str | Sequence[str] | None = None,
    negation_terms: str | Sequence[str] | None = None,
) -> CSCResult:
    """Concept Separation Curves of ``model`` on ``sentences`` (a corpus, a list, a file or a corpus name).

    Perturbs every sentence (seeded), embeds originals and variants through the
    embedding cache (``cache=None``: the default cache; ``False``: none), and
    returns the curves, the overlap with a bootstrap interval over original
    sentences (seeded; ``ci_method`` BCa by default, see :func:`_bootstrap`), the medians and their separation, per-length
    buckets (``length_buckets=(0, 10, 20, 30, 40, 50)`` gives the paper's bins),
    the per-sentence table and provenance.  ``min_words``/``max_words`` keep
    only sentences of that length (the paper's filtered sets).

    ``fuzz_terms`` / ``negation_terms`` (a ``"the | a"`` string or a list, as
    the authors' tool takes them) replace the language's built-in terms, and
    make any whitespace-separated language usable without registering rules:
    ``language="sv", fuzz_terms="en | ett", negation_terms="inte"``.  Give both
    for a language without built-in rules; for a built-in one, either (the
    other keeps its table entry).  ``bandwidth="authors-demo"`` is the fixed
    kernel factor 0.2 of the authors' demo app (paper 002 states no bandwidth;
    ``"paper"`` is a deprecated alias; see :func:`csc_curves` for how it
    differs from Scott's rule).

    A zero vector (e.g. TF-IDF of a text with no known term) has no cosine:
    its similarity is NaN, it is left out of the curves, and ``n_dropped``
    counts it.  A corpus-fitted model (TF-IDF) is fitted on the original
    sentences only (``tfidf_fit="originals"``, the default: a normal
    fit/transform split, as the paper runs its baseline; an inserted term the
    originals never use is then invisible).  ``tfidf_fit="all"`` fits on the
    originals and every variant: the inserted "not" and articles become
    frequent, their IDF drops, and the baseline can no longer separate
    negation (on ESS-en the overlap rises from about 0.35 to 0.95).

    >>> r = concept_separation(["Manage a team of engineers.", "The shop is open."], "random-null",
    ...                        language="en", n_boot=20, cache=False)
    >>> r.n_fuzz, r.n_negation
    (6, 6)
    """
    n_boot = resolve(n_boot, "n_boot")
    bandwidth = _checked_options(resolution=resolution, bandwidth=bandwidth, confidence=confidence, n_boot=n_boot,
                                 ci_method=ci_method, tfidf_fit=tfidf_fit, seed=seed, length_buckets=length_buckets)
    n_boot, seed = int(n_boot), int(seed)  # checked by _checked_options (whole numbers: 20.0 reads as 20)
    texts, lang, corpus_name, source, sha, notes = _prepare_sentences(sentences, language)
    notes = shareable_report(notes, source)  # the reader's lines name the file as results may show it
    rules = rules_for(lang, fuzz_terms=fuzz_terms, negation_terms=negation_terms)
    lang = rules.code
    texts = _length_filtered(texts, rules, min_words=min_words, max_words=max_words, notes=notes)
    perts = perturb_corpus(texts, language=lang, max_per_sentence=max_per_sentence, seed=seed, negation=negation,
                           rules=rules)
    n_without_fuzz, n_without_neg = _sentences_without_variants(len(texts), perts, negation=negation, notes=notes)

    encoder, frame, orig_zero, emb_stats = _perturbation_cosines(model, texts, perts, language=lang, tfidf_fit=tfidf_fit,
                                                                 cache=cache, progress=progress)
    fz, fz_sent, ng, ng_sent, n_dropped = _defined_similarities(frame, orig_zero, model_id=encoder.model_id, notes=notes)
    curves = csc_curves(fz, ng, resolution=resolution, bandwidth=bandwidth, method=kde_method)
    notes += [f"every {kind} similarity is the same value: its curve is a point mass (no KDE spread)"
              for kind, route in zip(("fuzz", "negation"), curves.routes) if route == "point-mass"]
    ci, sep_ci = _overlap_intervals(curves.overlap, fz, fz_sent, ng, ng_sent, n_sentences=len(texts), n_boot=n_boot,
                                    seed=seed, confidence=confidence, ci_method=ci_method, resolution=resolution,
                                    bandwidth=bandwidth, kde_method=kde_method, notes=notes,
                                    order=key_order([item_key(t) for t in texts]))  # the sentences by content
    buckets = [] if length_buckets is None else _length_buckets(
        length_buckets, np.array([len(rules.words(s)) for s in texts]), fz, fz_sent, ng, ng_sent, resolution, bandwidth, kde_method)
    med_f, med_n = float(np.median(fz)), float(np.median(ng))
    options = dict(max_per_sentence=max_per_sentence, negation=negation, seed=seed, resolution=resolution, bandwidth=bandwidth,
                   n_boot=n_boot, confidence=confidence, ci_method=ci_method, min_words=min_words, max_words=max_words,
                   length_buckets=None if length_buckets is None else list(length_buckets), kde_method=kde_method)
    provenance = _csc_provenance(encoder, rules, curves, options, corpus=name or corpus_name, source=source, sha=sha,
                                 tfidf_fit=tfidf_fit, embedding=emb_stats)
    return CSCResult(
        model=encoder.model_id, corpus=name or corpus_name, language=lang, negation_mode=negation,
        overlap=curves.overlap, ci=ci, median_fuzz=med_f, median_negation=med_n, separation=med_f - med_n,
        separation_ci=sep_ci, n_boot=n_boot, confidence=confidence, seed=seed, curves=curves, sentences=texts,
        perturbations=frame, n_dropped=n_dropped, n_without_negation=n_without_neg, n_without_fuzz=n_without_fuzz,
        buckets=buckets, notes=notes, provenance=provenance,
    )


def _csc_provenance(encoder: Any, rules: LanguageRules, curves: Any, options: dict[str, Any], *, corpus: str, source: str,
                    sha: str, tfidf_fit: str, embedding: dict[str, Any]) -> dict[str, Any]:
    """What made a CSC result: model and version, corpus and its hash, language rules, every parameter, packages."""
    params = {**options, "fuzz_terms": list(rules.articles), "negation_terms": list(rules.negations),
              "kde_routes": list(curves.routes), "tfidf_fit": tfidf_fit if encoder.requires_fit else None}
    return {
        "model": encoder.model_id, "model_version": encoder.version, "model_options": encoder.options,
        "corpus": corpus, "corpus_source": shareable_source(source), "corpus_sha256": sha, "language": rules.code,
        "language_rules": rules.to_dict(), "parameters": params, "embedding": embedding,
        "packages": package_info(), "created": utc_now(),
    }


def _sentences_without_variants(n_sentences: int, perts: Sequence[Any], *, negation: str, notes: list[str]
                                ) -> tuple[int, int]:
    """(sentences with no fuzz variant, sentences with no negated variant); no negated variant at all is an error."""
    per_kind = {k: {p.sentence for p in perts if p.kind == k} for k in ("fuzz", "negation")}
    n_without_neg = n_sentences - len(per_kind["negation"])
    if n_without_neg:
        notes.append(f"{n_without_neg} sentence(s) got no negated variant (negation={negation!r})")
    if not per_kind["negation"]:
        raise ValueError(f"no sentence could be negated with negation={negation!r} (e.g. no auxiliary in any sentence)")
    return n_sentences - len(per_kind["fuzz"]), n_without_neg


def check_length_buckets(edges: Any) -> tuple[int, ...] | None:
    """``length_buckets`` (word-count edges of the per-length buckets) as a tuple of increasing non-negative ints.

    >>> check_length_buckets((0, 10, 20)), check_length_buckets(None)
    ((0, 10, 20), None)
    """
    if edges is None:
        return None
    ok = isinstance(edges, (list, tuple, np.ndarray)) and len(edges) > 0 and all(is_whole(e) and e >= 0 for e in edges)
    if not ok or any(b <= a for a, b in zip(edges, list(edges)[1:])):
        raise ArgumentError(f"length_buckets must be increasing non-negative word counts (the bucket edges), e.g. "
                            f"(0, 10, 20, 30), got {edges!r}")
    return tuple(int(e) for e in edges)


def _checked_options(*, resolution: int, bandwidth: Any, confidence: float, n_boot: Any, ci_method: str,
                     tfidf_fit: str, seed: Any = 0, length_buckets: Any = None) -> Any:
    """The resolved KDE bandwidth, after checking every numeric and named option of :func:`concept_separation`
    (``n_boot``, ``seed`` and ``confidence`` by the rules every statistic applies: :mod:`semanscope_nb.metrics.options`)."""
    validate_grid(resolution, bandwidth)
    check_confidence(confidence)
    check_n_boot(n_boot)
    check_seed(seed)
    check_length_buckets(length_buckets)
    if ci_method not in ("BCa", "percentile", "basic"):
        raise ArgumentError(f"ci_method must be 'BCa', 'percentile' or 'basic', got {ci_method!r}")
    if tfidf_fit not in ("all", "originals"):
        raise ArgumentError(f"tfidf_fit must be 'all' or 'originals', got {tfidf_fit!r}")
    return resolve_bandwidth(bandwidth)


def _length_filtered(texts: list[str], rules: LanguageRules, *, min_words: int | None, max_words: int | None,
                     notes: list[str]) -> list[str]:
    """The sentences of ``min_words``..``max_words`` words (the paper's filtered sets); a note says how many were kept."""
    if min_words is None and max_words is None:
        return texts
    for nm, v in (("min_words", min_words), ("max_words", max_words)):
        if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
    kept = [s for s in texts if (min_words is None or len(rules.words(s)) >= min_words)
            and (max_words is None or len(rules.words(s)) <= max_words)]
    notes.append(f"length filter {min_words}..{max_words} words kept {len(kept)} of {len(texts)} sentences")
    if not kept:
        raise ValueError(f"the length filter min_words={min_words}, max_words={max_words} left no sentence of {len(texts)}")
    return kept


def _perturbation_cosines(model: Any, texts: list[str], perts: Sequence[Any], *, language: str, tfidf_fit: str,
                          cache: Any, progress: bool | None) -> tuple[Any, pd.DataFrame, np.ndarray, dict[str, Any]]:
    """(encoder, one row per variant with its cosine to its original, which originals embed to zero, embedding stats)."""
    from semanscope_nb.models.cache import resolve_cache
    from semanscope_nb.models.registry import load_model

    encoder = load_model(model)
    all_texts = list(dict.fromkeys(texts + [p.text for p in perts]))
    encoder = encoder.prepare(all_texts if tfidf_fit == "all" else texts)
    enc_lang = language if encoder.language_dependent else None
    store = resolve_cache(cache)
    if store is None:
        before = encoder.calls
        matrix = encoder.encode(all_texts, language=enc_lang)
        emb_stats = {"n_unique": len(all_texts), "n_cached": 0, "n_encoded": len(all_texts), "n_batches": encoder.calls - before}
    else:
        matrix = store.embed(encoder, all_texts, language=enc_lang, progress=progress)
        emb_stats = asdict(store.last_stats)
    row = {t: i for i, t in enumerate(all_texts)}
    orig = matrix[[row[texts[p.sentence]] for p in perts]].astype(np.float64)
    pv = matrix[[row[p.text] for p in perts]].astype(np.float64)
    sims, zero = pair_cosines(orig, pv)
    orig_zero = np.linalg.norm(matrix[[row[t] for t in texts]].astype(np.float64), axis=1) == 0
    frame = pd.DataFrame({
        "sentence": [p.sentence for p in perts], "kind": [p.kind for p in perts], "position": [p.position for p in perts],
        "term": [p.term for p in perts], "text": [p.text for p in perts], "similarity": sims,
        "status": np.where(zero, "zero-vector", "ok"),
    })
    return encoder, frame, orig_zero, emb_stats


def _defined_similarities(frame: pd.DataFrame, orig_zero: np.ndarray, *, model_id: str, notes: list[str]
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """(fuzz cosines, their sentences, negation cosines, their sentences, dropped counts): zero vectors left out."""
    kinds = frame.kind.to_numpy()
    zero = frame.status.to_numpy() == "zero-vector"
    n_dropped = {
        "original_zero_vectors": int(orig_zero.sum()),
        "fuzz": int((zero & (kinds == "fuzz")).sum()),
        "negation": int((zero & (kinds == "negation")).sum()),
    }
    if any(n_dropped.values()):
        notes.append(
            f"dropped undefined cosines (zero vectors): {n_dropped['fuzz']} fuzz and {n_dropped['negation']} negation "
            f"variants; {n_dropped['original_zero_vectors']} original sentence(s) embed to zero"
        )
    sims, sent = frame.similarity.to_numpy(), frame.sentence.to_numpy()
    fz_mask, ng_mask = ~zero & (kinds == "fuzz"), ~zero & (kinds == "negation")
    if not fz_mask.any() or not ng_mask.any():
        raise EmbeddingError(
            f"{model_id}: no defined similarity left for the {'fuzz' if not fz_mask.any() else 'negation'} curve "
            f"({n_dropped} zero vectors dropped)"
        )
    return sims[fz_mask], sent[fz_mask], sims[ng_mask], sent[ng_mask], n_dropped


def _overlap_intervals(overlap: float, fz: np.ndarray, fz_sent: np.ndarray, ng: np.ndarray, ng_sent: np.ndarray, *,
                       n_sentences: int, n_boot: int, seed: int, confidence: float, ci_method: str, resolution: int,
                       bandwidth: Any, kde_method: KDEMethod, notes: list[str], order: np.ndarray | None = None,
                       ) -> tuple[tuple[float, float], tuple[float, float]]:
    """Bootstrap intervals of the overlap and the separation over original sentences (NaN without resamples)."""
    if n_boot == 0 or n_sentences < 2:
        if n_boot > 0:
            notes.append("one sentence: no bootstrap interval")
        return (math.nan, math.nan), (math.nan, math.nan)
    ci, sep_ci, boot_notes = _bootstrap(fz, fz_sent, ng, ng_sent, n_sentences, n_boot=n_boot, seed=seed,
                                        confidence=confidence, method=ci_method, resolution=resolution,
                                        bandwidth=bandwidth, kde_method=kde_method, order=order)
    notes.extend(boot_notes)
    if kde_method != "auto":
        centre = full_sample_curves(fz, ng, resolution=resolution, bandwidth=bandwidth).overlap
        notes.append(f"kde_method={kde_method!r}: the overlap {overlap:.6f} is drawn by that route; the bootstrap interval "
                     f"is built around the FFT route's full-sample overlap {centre:.6f}")
    if not ci[0] <= overlap <= ci[1]:
        notes.append(
            f"the overlap {overlap:.4f} lies outside its {ci_method} interval [{ci[0]:.4f}, {ci[1]:.4f}]: resampled "
            "curves are noisier, so their overlap is biased (typically low) and almost every resample fell on one side; "
            "read the interval as indicative (more sentences shrink the bias)"
        )
    return ci, sep_ci


# --------------------------------------------------------------------------- many models x corpora


def csc_table(results: Mapping[tuple[str, str], CSCResult] | Sequence[CSCResult]) -> pd.DataFrame:
    """One row per result (:meth:`CSCResult.summary`), sorted by model then corpus."""
    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    df = pd.DataFrame([r.summary() for r in items])
    return df.sort_values(["model", "corpus"], kind="stable").reset_index(drop=True) if not df.empty else df


@dataclass(frozen=True)
class CSCGrid(Result):
    """Every (model, corpus) result of :func:`concept_separation_grid`, and what failed.

    The main score is the mean overlap over the results (lower = better separation).
    """

    kind = "csc-grid"
    main_score_name = "mean_overlap"

    results: dict[tuple[str, str], CSCResult]
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def table(self) -> pd.DataFrame:
        return csc_table(self.results)

    @property
    def mean_overlap(self) -> float:
        """Mean overlap over the (model, corpus) results that ran (NaN when none did)."""
        values = [r.overlap for r in self.results.values() if math.isfinite(r.overlap)]
        return float(np.mean(values)) if values else math.nan

    def summary(self) -> dict[str, Any]:
        return {"main_score": self.main_score, "n_results": len(self.results), "n_failures": len(self.failures)}

    def estimates(self) -> dict[str, Estimate]:
        """``"model | corpus"`` -> that result's overlap estimate."""
        return {f"{m} | {c}": r.estimates()["overlap"] for (m, c), r in self.results.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the (model, corpus) keys become ``model`` / ``corpus`` entries of two lists."""
        return json_ready({
            "results": [{"model": m, "corpus": c, "result": r.to_dict()} for (m, c), r in self.results.items()],
            "failures": [{"model": m, "corpus": c, "error": e} for (m, c), e in self.failures.items()],
            "provenance": self.provenance,
        })

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CSCGrid":
        return cls(
            results={(e["model"], e["corpus"]): CSCResult.from_dict(e["result"]) for e in d["results"]},
            failures={(e["model"], e["corpus"]): str(e["error"]) for e in d.get("failures", [])},
            provenance=dict(d.get("provenance") or {}),
        )


def concept_separation_grid(
    models: Sequence[str | Encoder], corpora: Sequence[SentenceCorpus], *, progress: bool | None = None, **options: Any
) -> CSCGrid:
    """:func:`concept_separation` for every model on every corpus; a failing pair is recorded, not raised.

    ``progress=True`` shows one tqdm bar over the (model, corpus) jobs (and no
    per-job embedding bars); False shows nothing; None leaves each job's own
    embedding bar (shown for more than 500 new texts).

    >>> g = concept_separation_grid(["random-null"], [SentenceCorpus.from_sentences(
    ...     ["The train leaves at noon.", "Water the plants daily."], language="en", name="two")],
    ...     n_boot=0, cache=False, progress=False)
    >>> list(g.results), g.failures
    ([('random-null', 'two')], {})
    """
    if progress not in (None, True, False):
        raise ValueError(f"progress must be True, False or None, got {progress!r}")
    jobs = [(m, c) for m in models for c in corpora]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="CSC grid", unit="job")
    results, failures = {}, {}
    try:
        for m, c in jobs:
            mid = m if isinstance(m, str) else m.model_id
            if bar is not None:
                bar.set_postfix_str(f"{mid} · {c.name}", refresh=False)
            try:
                results[(mid, c.name)] = concept_separation(c, m, progress=False if progress is not None else None, **options)
            except Exception as exc:  # one failing pair must not sink the grid
                failures[(mid, c.name)] = f"{type(exc).__name__}: {exc}"
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return CSCGrid(results, failures)
