"""Dataset-level alignment runs: held-out P@K and SA before and after alignment, and maps of both spaces.

Layer: runs.  Imports metrics, plots (projection) and :mod:`semanscope_nb.runs.evaluate`.

Example
-------
>>> import semanscope_nb as snb
>>> report = snb.alignment_report   # held-out P@K and SA before/after an alignment; see notebook 06
>>> report.__module__
'semanscope_nb.runs.alignment'
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import pandas as pd

from semanscope_nb.data.dictionaries import BilingualDictionary, DictionarySplit
from semanscope_nb.data.words import WordDataset
from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.metrics.retrieval import BitextResult
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.results import Estimate, Interval, Result
from semanscope_nb.settings import resolve

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.cache import EmbeddingCache


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class AlignmentReport(Result):
    """Held-out P@K (both directions) and SA, before and after alignment (one table row per stage).

    The table's ``*_ci`` cells are :class:`~semanscope_nb.results.Interval` values.  The main
    score is the best stage's P at the first K asked for (P@1 by default).
    """

    kind = "alignment-report"
    main_score_name = "best_p_at_k"

    table: pd.DataFrame
    retrieval: dict[str, BitextResult]
    affinity: dict[str, SAResult]
    test_dictionary: str
    n_test_pairs: int
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def best_p_at_k(self) -> float:
        """The highest P at the first K (forward direction) over the stages."""
        values = [r.accuracy[r.ks[0]] for r in self.retrieval.values()]
        return float(max(values)) if values else math.nan

    def estimates(self) -> dict[str, Estimate]:
        """``"<stage>:sa"`` and ``"<stage>:<statistic>"`` (forward retrieval) for every stage."""
        out = {}
        for stage, r in self.retrieval.items():
            out.update({f"{stage}:{name}": e for name, e in r.estimates().items()})
        for stage, sa in self.affinity.items():
            out[f"{stage}:sa"] = sa.cosine.estimate
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AlignmentReport":
        report = super().from_dict(d)
        table = report.table.copy()
        for column in table.columns:
            if str(column).endswith("_ci"):
                table[column] = pd.Series([Interval.of(v) for v in table[column]], index=table.index, dtype=object)
        return replace(report, table=table)


def alignment_report(
    models: Mapping[str, str | Encoder] | Sequence[str],
    test: BilingualDictionary | DictionarySplit,
    *,
    ks: Sequence[int] = (1, 5),
    n_boot: int | None = None,
    seed: int = 0,
    cache: "EmbeddingCache | None | Literal[False]" = None,
) -> AlignmentReport:
    """P@K and SA of each model on the held-out dictionary (e.g. ``{"before": base, "after": aligned_id}``).

    P@K is lexicon induction over the test dictionary (queries: its source
    words; candidates: its target words; a hit on any gold translation counts),
    in both directions.  SA treats each test source word as a concept whose
    translations are ``|`` alternatives.
    """
    n_boot = resolve(n_boot, "n_boot")
    from semanscope_nb.metrics.retrieval import lexicon_induction
    from semanscope_nb.runs.evaluate import dataset_affinity

    d = test.test if isinstance(test, DictionarySplit) else test
    if not isinstance(models, Mapping):
        models = {m if isinstance(m, str) else m.model_id: m for m in models}
    ds = d.as_dataset(name=d.name)
    rows, ret, aff = [], {}, {}
    for stage, model in models.items():
        # the dataset the SA below reads and the retrieval task would read: the same queries and candidates in the
        # same order, so near-tied candidates are decided alike (the tie rule's lower index) on every path
        r = lexicon_induction(ds, model, source=d.source_language, target=d.target_language, ks=ks,
                              n_boot=n_boot, seed=seed, cache=cache)
        sa = dataset_affinity(ds, model, cache=cache, n_boot=n_boot, seed=seed)
        ret[stage], aff[stage] = r, sa
        row: dict[str, Any] = {"stage": stage, "model": r.provenance.get("model")}
        for k in r.ks:
            row[f"P@{k}"] = r.accuracy[k]
            row[f"P@{k}_ci"] = Interval.of(r.intervals.get(f"accuracy@{k}"))
        for k in r.reverse.ks:
            row[f"reverse P@{k}"] = r.reverse.accuracy[k]
        row.update({"SA": sa.cosine.sa, "SA_ci": sa.cosine.ci, "SA_euclidean": sa.euclidean.sa, "tier": sa.tier,
                    "n_queries": r.n_queries, "n_candidates": r.n_corpus})
        rows.append(row)
    return AlignmentReport(pd.DataFrame(rows), ret, aff, d.name, len(d.pairs))


def dataset_map(
    dataset: WordDataset | str | os.PathLike,
    model: str | Encoder,
    *,
    languages: Sequence[str] | None = None,
    method: str = "pca",
    random_state: int = 0,
    n_boot: int | None = None,
    seed: int | None = None,
    cache: "EmbeddingCache | None | Literal[False]" = None,
) -> tuple[Any, "SAResult"]:
    """(2-D projection, SA result) of ``model`` on ``dataset``: the inputs of one alignment map.

    Feed two of these (before / after) to :func:`semanscope_nb.plots.retrieval_charts.alignment_pair`.
    """
    from semanscope_nb.runs.tasks import prepare, run_task

    emb = prepare("sa", dataset, model, languages=languages, cache=cache)
    sa = run_task("sa", emb, n_boot=n_boot, seed=seed)
    proj = run_task("projection", emb, method=method, random_state=random_state, projection_cache=False)
    return proj, sa
