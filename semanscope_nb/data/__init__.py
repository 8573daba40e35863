"""Data layer: readers of everything the toolkit scores, and nothing that embeds.

Rooms:

* :mod:`~semanscope_nb.data.words` -- word datasets: :class:`WordDataset`, Semanscope CSVs, word lists, ``load_dataset``.
* :mod:`~semanscope_nb.data.catalog` -- the data folders, the bundled datasets and dataset listings.
* :mod:`~semanscope_nb.data.languages` -- language names and headers to ISO codes, codes to English names.
* :mod:`~semanscope_nb.data.csv_reader` -- the delimited-text engine every reader uses (strict UTF-8, located errors).
* :mod:`~semanscope_nb.data.sentences` -- sentence corpora (one sentence a line, ESS questions) for CSC.
* :mod:`~semanscope_nb.data.bitext` -- parallel, labelled and code-switched corpora (Tatoeba, SIB-200, LinCE, PHINC).
* :mod:`~semanscope_nb.data.dictionaries` -- bilingual dictionaries (MUSE, CC-CEDICT) and seeded splits.
* :mod:`~semanscope_nb.data.word_similarity` -- word similarity in context: BCWS (en-zh) and SCWS (en) for paper 001.
* :mod:`~semanscope_nb.data.reference` -- paper 000's published SA tables (reference numbers, not our runs).
* :mod:`~semanscope_nb.data.cedict` -- CC-CEDICT coverage checks of the bundled datasets.

May import: :mod:`semanscope_nb.errors`, :mod:`semanscope_nb.provenance` and itself.

Example
-------
>>> import semanscope_nb as snb
>>> ds = snb.data.load_dataset("edge-cases", languages=["en", "zh"])
>>> ds.languages, len(ds) > 100
(('en', 'zh'), True)
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.data.bitext import (
    LabelledSplits,
    LabelledTexts,
    ParallelCorpus,
    TaggedSentences,
    read_lince,
    read_phinc,
    read_sib200,
    read_tatoeba,
    sib200_parallel,
)
from semanscope_nb.data.catalog import bundled_data_dir, list_datasets, shared_data_dir
from semanscope_nb.data.datasets import DATASET_TYPES, as_dataset, fit_corpus
from semanscope_nb.data.dictionaries import (
    BilingualDictionary,
    DictionarySplit,
    cedict_dictionary,
    read_muse_dictionary,
    split_dictionary,
)
from semanscope_nb.data.languages import LANGUAGE_NAMES, language_code, language_name
from semanscope_nb.data.reference import paper_counts, paper_file, paper_model_order, paper_tables
from semanscope_nb.data.sentences import (
    SentenceCorpus,
    list_sentence_corpora,
    load_sentence_corpus,
    read_ess_questions,
    read_sentences,
)
from semanscope_nb.data.word_similarity import ContextPairs, read_bcws, read_scws
from semanscope_nb.data.words import WordDataset, dataset_from_frame, load_dataset, read_semanscope_csv, read_word_lists

__all__ = _public_names(globals())
