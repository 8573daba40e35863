"""An embedded dataset is a value: :func:`embed` gives an :class:`Embedded` that every score takes.

``embed(dataset, model)`` is the one place that resolves a cache argument and
prepares an encoder (:meth:`Encoder.prepare`: TF-IDF fits its IDF on the
dataset's texts).  The result holds the dataset, each unique text's vector per
language, the encoder's id, version and options, what the cache did, the
reader's report and the provenance every score built on it carries.  Panels,
grids and notebooks keep an ``Embedded`` and pass it on, so nothing is embedded
twice and every path stamps the same provenance.

Datasets of every kind work: a word dataset (:class:`~semanscope_nb.data.WordDataset`,
or a bundled name / CSV path), a sentence corpus, a parallel corpus or a
labelled split.  Each says which texts it needs per language
(``texts_by_language()``).

Layer: models.

Example
-------
>>> import semanscope_nb as snb
>>> emb = snb.embed("edge-cases", "random-null", languages=["en", "zh"], cache=False)
>>> emb.model_id, emb.languages, emb.matrix("en").shape[0] == len(emb.dataset.words("en"))
('random-null', ('en', 'zh'), True)
>>> sorted(emb.provenance)[:4]
['created', 'dataset', 'dataset_sha256', 'dataset_source']
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from semanscope_nb.errors import ArgumentError, EmbeddingError
from semanscope_nb.models.cache import EmbeddingCache, resolve_cache
from semanscope_nb.models.cancel import ShouldStop, check_stop
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.provenance import package_info, shareable_report, shareable_source, utc_now
from semanscope_nb.settings import settings


@dataclass(frozen=True, eq=False)
class Embedded:
    """A dataset with the vector of each of its unique texts, per language, under one model.

    ``vectors[language][text]`` is a float32 vector.  ``encoder`` is the
    prepared encoder (kept to embed more texts, e.g. CSC's perturbations,
    through the same cache; it is not part of the value's identity).
    """

    dataset: Any
    vectors: Mapping[str, Mapping[str, np.ndarray]]
    model_id: str
    model_version: str
    model_options: Mapping[str, Any]
    model_key: str
    stats: Mapping[str, int]
    provenance: Mapping[str, Any]
    encoder: Encoder = field(repr=False)
    cache: EmbeddingCache | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        n = sum(len(v) for v in self.vectors.values())
        return f"Embedded(model={self.model_id!r}, dataset={self.name!r}, languages={list(self.languages)}, texts={n}, dim={self.dim})"

    # -- what it holds ---------------------------------------------------------------------------

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.vectors)

    @property
    def name(self) -> str:
        return str(getattr(self.dataset, "name", "texts"))

    @property
    def dim(self) -> int:
        for per_lang in self.vectors.values():
            for v in per_lang.values():
                return int(v.shape[0])
        return 0

    def texts(self, language: str) -> list[str]:
        """The texts of ``language`` this value holds, in the dataset's order."""
        return list(self._lang(language))

    def matrix(self, language: str, texts: Sequence[str] | None = None) -> np.ndarray:
        """The vectors of ``texts`` (default: every text of ``language``, in order) as one float32 array."""
        table = self._lang(language)
        wanted = list(table) if texts is None else list(texts)
        missing = [t for t in wanted if t not in table]
        if missing:
            raise EmbeddingError(f"{self.name}: {len(missing)} text(s) of '{language}' were not embedded, e.g. {missing[0]!r}")
        if not wanted:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([table[t] for t in wanted])

    def _lang(self, language: str) -> Mapping[str, np.ndarray]:
        if language not in self.vectors:
            raise ArgumentError(f"language '{language}' is not in {self.name} (has {', '.join(self.vectors)})")
        return self.vectors[language]

    # -- derived values (nothing is embedded again) ------------------------------------------------

    def select(self, languages: Sequence[str]) -> "Embedded":
        """The same vectors for a subset of the languages (a word dataset is narrowed too)."""
        langs = list(dict.fromkeys(languages))
        for lang in langs:
            self._lang(lang)
        ds = self.dataset.select(langs) if hasattr(self.dataset, "select") else self.dataset
        vectors = {lang: self.vectors[lang] for lang in langs}
        prov = {**self.provenance, "languages": langs}
        if hasattr(ds, "sha256"):
            prov["dataset_sha256"] = ds.sha256
        return replace(self, dataset=ds, vectors=vectors, provenance=prov)

    def extend(self, texts_by_language: Mapping[str, Sequence[str]], *, progress: bool | None = None,
               should_stop: ShouldStop | None = None) -> "Embedded":
        """A copy that also holds ``texts_by_language`` (embedded with the same encoder and cache; ``should_stop`` as in :func:`embed`)."""
        vectors = {lang: dict(v) for lang, v in self.vectors.items()}
        stats = dict(self.stats)
        for lang, texts in texts_by_language.items():
            have = vectors.setdefault(lang, {})
            new = [t for t in dict.fromkeys(texts) if t not in have]
            if not new:
                continue
            matrix, part = _embed_texts(self.encoder, new, language=lang, store=self.cache, progress=progress,
                                        should_stop=should_stop)
            have.update(zip(new, matrix))
            for k in stats:
                stats[k] += part.get(k, 0)
        return replace(self, vectors=vectors, stats=stats, provenance={**self.provenance, "embedding": stats})


def embed(
    dataset: Any,
    model: "str | Encoder | None" = None,
    *,
    languages: Sequence[str] | None = None,
    cache: EmbeddingCache | str | os.PathLike | None | Literal[False] = None,
    progress: bool | None = None,
    should_stop: ShouldStop | None = None,
) -> Embedded:
    """Embed every unique text of ``dataset`` once with ``model`` (default: ``settings.default_model``).

    ``dataset``: a word dataset, a bundled name or CSV path, a sentence corpus,
    a parallel corpus or a labelled split.  ``languages`` narrows a word
    dataset.  ``cache``: None (the default cache), a folder, an
    :class:`EmbeddingCache`, or False (no cache).  A text shared by two
    languages is embedded once, unless the model is language-dependent.
    """
    from semanscope_nb.data import as_dataset, fit_corpus
    from semanscope_nb.models.registry import load_model, warn_unsupported

    ds = as_dataset(dataset, languages=languages)
    by_language = {lang: list(dict.fromkeys(texts)) for lang, texts in ds.texts_by_language().items()}
    model = settings.default_model if model is None else model
    warn_unsupported(model, list(by_language))
    check_stop(should_stop, f"embedding {ds.name}")
    encoder = load_model(model).prepare(fit_corpus(ds))  # a corpus-fitted model: the whole dataset's texts, whatever is selected
    store = resolve_cache(cache)
    stats = {"n_unique": 0, "n_cached": 0, "n_encoded": 0, "n_batches": 0}
    if encoder.language_dependent:
        groups: dict[str | None, list[str]] = dict(by_language)
    else:
        groups = {None: list(dict.fromkeys(t for texts in by_language.values() for t in texts))}
    by_group: dict[str | None, dict[str, np.ndarray]] = {}
    for lang, texts in groups.items():
        if not texts:
            by_group[lang] = {}
            continue
        matrix, part = _embed_texts(encoder, texts, language=lang, store=store, progress=progress, should_stop=should_stop)
        for k in stats:
            stats[k] += part.get(k, 0)
        by_group[lang] = dict(zip(texts, matrix))
    vectors = {
        lang: {t: by_group[lang if encoder.language_dependent else None][t] for t in texts}
        for lang, texts in by_language.items()
    }
    provenance = {
        "model": encoder.model_id,
        "model_version": encoder.version,
        "model_options": dict(encoder.options),
        "dataset": ds.name,
        "dataset_source": shareable_source(getattr(ds, "source", "<memory>")),
        "dataset_sha256": ds.sha256,
        "languages": list(by_language),
        "reader_report": shareable_report(getattr(ds, "report", ()), getattr(ds, "source", None)),
        "embedding": dict(stats),
        "packages": package_info(),
        "created": utc_now(),
    }
    return Embedded(ds, vectors, encoder.model_id, encoder.version, dict(encoder.options), encoder.cache_key, stats, provenance,
                    encoder, store)


#: texts per encoder call when there is no cache but a ``should_stop`` to ask between calls
UNCACHED_STOP_BATCH = 128


def _embed_texts(
    encoder: Encoder, texts: list[str], *, language: str | None, store: EmbeddingCache | None, progress: bool | None,
    should_stop: ShouldStop | None = None,
) -> tuple[np.ndarray, dict[str, int]]:
    lang = language if encoder.language_dependent else None
    if store is None:
        before = encoder.calls
        if should_stop is None:
            matrix = encoder.encode(texts, language=lang)
        else:  # batches, so that a stop request is honoured between them
            parts = []
            for a in range(0, len(texts), UNCACHED_STOP_BATCH):
                check_stop(should_stop, f"embedding with {encoder.model_id}")
                parts.append(encoder.encode(texts[a : a + UNCACHED_STOP_BATCH], language=lang))
            matrix = np.concatenate(parts) if parts else encoder.encode(texts, language=lang)
        return matrix, {"n_unique": len(texts), "n_cached": 0, "n_encoded": len(texts), "n_batches": encoder.calls - before}
    matrix, s = store.embed_with_stats(encoder, texts, progress=progress, language=lang, should_stop=should_stop)
    return matrix, {"n_unique": s.n_unique, "n_cached": s.n_cached, "n_encoded": s.n_encoded, "n_batches": s.n_batches}
