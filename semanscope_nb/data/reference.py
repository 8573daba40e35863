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

PAPER_TABLES_FILE = "paper-000-tables.csv"
#: the paper's dataset keys and the project's bundled datasets written on the same themes (not the same rows)
PAPER_DATASETS = {"DS1": "conceptual-space", "DS2": "cultural-nuance", "DS3": "edge-cases", "DS4": "oracle-primitives"}
#: the paper's file stems (Table C.1), as in ``../shared/data/semanscope``
PAPER_FILES = {"DS1": "ICML-1-peterg", "DS2": "ICML-2-cultural-nuance", "DS3": "ICML-3-challenge", "DS4": "ICML-4-zinets"}


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
