"""Published reference numbers: paper 000's Tables D.1 / D.2 (SA and its ± for 13 models x 4 datasets).

The numbers live in ``data/paper-000-tables.csv`` (card: ``data/paper-000-tables.md``).

Example
-------
>>> from semanscope_nb.data.reference import paper_tables
>>> t = paper_tables()
>>> t.shape[0], t.loc[(t.model == "USE") & (t.dataset == "DS1") & (t.distance == "cosine"), "sa"].item()
(104, 0.767)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from semanscope_nb.data.catalog import bundled_data_dir
from semanscope_nb.errors import ArgumentError

PAPER_TABLES_FILE = "paper-000-tables.csv"
#: the paper's dataset keys and the project's bundled datasets written on the same themes (not the same rows)
PAPER_DATASETS = {"DS1": "conceptual-space", "DS2": "cultural-nuance", "DS3": "edge-cases", "DS4": "oracle-primitives"}
#: the paper's file stems (Table C.1), as in ``../shared/data/semanscope``
PAPER_FILES = {"DS1": "ICML-1-peterg", "DS2": "ICML-2-cultural-nuance", "DS3": "ICML-3-challenge", "DS4": "ICML-4-zinets"}
#: the versions of the paper's files in the public repository, the one the paper used first (see :func:`paper_file`)
PAPER_FILE_VERSIONS = ("v0", "later")
_VERSION_PATTERNS = {"v0": "v0/{stem}-v0-SA.csv", "later": "{stem}-SA.csv"}

#: paper 002 (Concept Separation Curves), Table 3: the TF-IDF baseline's overlap on the ESS questions (English),
#: with the paper's sample sizes: 94 ESS sentences (Table 2) and up to X = 3 perturbations of each kind per
#: sentence (section 3.2).  The paper states no kernel bandwidth.
PAPER_002_ESS_TFIDF = {"overlap": 0.4516, "n_sentences": 94, "max_per_sentence": 3}


def paper_tables(
    *,
    distance: Literal["cosine", "euclidean"] | None = None,
    path: str | Path | None = None,
) -> pd.DataFrame:
    """Tables D.1 (cosine) and D.2 (Euclidean) as a DataFrame.

    Columns: ``model, dataset, distance, sa, pm`` plus ``table, dataset_name,
    words, avg_sa``; rows in the paper's order.  ``distance`` keeps one table.

    >>> paper_tables(distance="euclidean").model.nunique()
    13
    """
    if distance not in (None, "cosine", "euclidean"):
        raise ValueError(f"distance must be 'cosine', 'euclidean' or None, got {distance!r}")
    p = Path(path) if path is not None else bundled_data_dir() / PAPER_TABLES_FILE
    if not p.exists():
        raise FileNotFoundError(f"path: the paper's table file {p} does not exist")
    df = pd.read_csv(p, dtype={"table": str, "model": str, "dataset": str})
    need = {"model", "dataset", "distance", "sa", "pm"}
    if missing := need - set(df.columns):
        raise ValueError(f"path: {p} lacks the columns {sorted(missing)}")
    if distance is not None:
        df = df[df["distance"] == distance].reset_index(drop=True)
    front = ["model", "dataset", "distance", "sa", "pm"]
    return df[front + [c for c in df.columns if c not in front]]


def paper_model_order(*, distance: Literal["cosine", "euclidean"] = "cosine") -> list[str]:
    """The paper's models in its table's row order (best average SA first, as in Figure 1).

    >>> paper_model_order()[:3]
    ['LaBSE', 'Sentence-BERT', 'USE']
    """
    return list(dict.fromkeys(paper_tables(distance=distance)["model"]))


def paper_file(dataset: str, *, version: Literal["v0", "later"] = "v0", folder: str | Path | None = None) -> Path:
    """The path of one of the paper's four files (``dataset``: DS1..DS4) in ``folder`` (default: shared data's ``semanscope``).

    ``version="v0"`` is the earlier ``v0/<stem>-v0-SA.csv``, whose row and
    expanded-tuple counts (349, 341, 177 rows; 769 tuples for zinets) are the
    ones Table D.1 prints in brackets, so the files the published numbers
    were computed on; ``"later"`` is ``<stem>-SA.csv``, the repository's later
    revision (zinets: 403 rows once its ``#`` lines are skipped).  The path
    is returned whether or not the file exists.

    >>> paper_file("DS4", folder="/data/semanscope").as_posix()
    '/data/semanscope/v0/ICML-4-zinets-v0-SA.csv'
    >>> paper_file("DS1", version="later", folder="/data/semanscope").name
    'ICML-1-peterg-SA.csv'
    """
    if dataset not in PAPER_FILES:
        raise ArgumentError(f"dataset must be one of {list(PAPER_FILES)}, got {dataset!r}")
    if version not in _VERSION_PATTERNS:
        raise ArgumentError(f"version must be one of {list(PAPER_FILE_VERSIONS)}, got {version!r}")
    if folder is None:
        from semanscope_nb.data.catalog import shared_data_dir

        folder = shared_data_dir() / "semanscope"
    return Path(folder) / _VERSION_PATTERNS[version].format(stem=PAPER_FILES[dataset])


def paper_counts() -> dict[str, int]:
    """The count Table D.1 prints in brackets per dataset (rows for DS1-DS3, expanded tuples for DS4).

    >>> paper_counts()
    {'DS1': 349, 'DS2': 341, 'DS3': 177, 'DS4': 769}
    """
    t = paper_tables(distance="cosine")
    return {k: int(v) for k, v in t.groupby("dataset", sort=True)["words"].first().items()}
