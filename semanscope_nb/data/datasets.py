"""Any dataset the toolkit scores, from whatever the user passes: :func:`as_dataset`.

A dataset is a value with ``name``, ``source``, ``sha256``, ``report`` and
``texts_by_language()`` (what must be embedded, per language): a
:class:`~semanscope_nb.data.words.WordDataset`, a
:class:`~semanscope_nb.data.sentences.SentenceCorpus`, a
:class:`~semanscope_nb.data.bitext.ParallelCorpus` or
:class:`~semanscope_nb.data.bitext.LabelledSplits` (a labelled train and test split).

Example
-------
>>> as_dataset("edge-cases", languages=["en", "zh"]).languages
('en', 'zh')
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from semanscope_nb.data.bitext import LabelledSplits, LabelledTexts, ParallelCorpus
from semanscope_nb.data.sentences import SentenceCorpus
from semanscope_nb.data.words import WordDataset, load_dataset
from semanscope_nb.errors import ArgumentError

DATASET_TYPES = (WordDataset, SentenceCorpus, ParallelCorpus, LabelledSplits)


def as_dataset(dataset: Any, *, languages: Sequence[str] | None = None) -> Any:
    """``dataset`` as a dataset value: a bundled name or CSV path is read as a word dataset,
    a (train, test) pair of labelled splits becomes :class:`LabelledSplits`.

    ``languages`` narrows a word dataset (codes or names, in that order); for
    other kinds it must be None.
    """
    if isinstance(dataset, (str, os.PathLike)):
        dataset = load_dataset(dataset)
    if isinstance(dataset, (tuple, list)) and len(dataset) == 2 and all(isinstance(d, LabelledTexts) for d in dataset):
        dataset = LabelledSplits(*dataset)
    if not isinstance(dataset, DATASET_TYPES):
        raise ArgumentError(
            f"dataset must be a bundled name, a CSV path, a WordDataset, SentenceCorpus, ParallelCorpus, LabelledSplits or a "
            f"(train, test) pair of LabelledTexts, "
            f"got {type(dataset).__name__}"
        )
    if languages is not None:
        if isinstance(languages, str):
            languages = [t.strip() for t in languages.split(",") if t.strip()]
        if not isinstance(dataset, WordDataset):
            raise ArgumentError(f"languages= narrows a word dataset; {type(dataset).__name__} '{dataset.name}' has its own")
        dataset = dataset.select(languages)
    return dataset


def fit_corpus(dataset: Any) -> list[str]:
    """The texts a corpus-fitted model (TF-IDF) is fitted on for ``dataset``: a word dataset's
    :meth:`~semanscope_nb.data.words.WordDataset.fit_corpus` (the whole file's, whatever languages or concepts were
    selected), else every text it holds, language by language.  Every path that prepares an encoder for a dataset
    (``embed``, the surface baseline, the grid's and the report's job keys) asks here, so all of them fit one model.

    >>> fit_corpus(as_dataset("edge-cases", languages=["zh", "en"])) == fit_corpus(as_dataset("edge-cases"))
    True
    """
    if isinstance(dataset, WordDataset):
        return dataset.fit_corpus()
    by_language = {lang: list(dict.fromkeys(texts)) for lang, texts in dataset.texts_by_language().items()}
    return [t for texts in by_language.values() for t in texts]
