"""Paper 001's Figure 1 redrawn: word similarity in context (Spearman's rho) against the number of parallel
sentences an alignment was learned from, one line per anchor setting, with the model as it is, the
no-context baseline and the human upper bound as horizontal references.  Returns a chart; shows nothing.

The input is the table of :func:`semanscope_nb.runs.word_similarity.word_similarity_sweep` (rows with
``dataset, n_sentences, anchors, signal, mapping, rho, ci_low, ci_high``; ``n_sentences = 0`` marks rows
learned from nothing).

Example
-------
>>> import pandas as pd
>>> t = pd.DataFrame({"dataset": "bcws", "n_sentences": [0, 100, 300], "anchors": ["none", "avg", "avg"],
...                   "signal": ["-", "wa", "wa"], "mapping": ["orig", "procrustes", "procrustes"],
...                   "rho": [0.5, 0.4, 0.45], "ci_low": [0.45, 0.35, 0.4], "ci_high": [0.55, 0.45, 0.5]})
>>> spec = word_similarity_sweep_chart(t, human=0.83).to_dict()
>>> sorted({layer["mark"]["type"] for layer in spec["layer"]})
['area', 'line', 'rule', 'text']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from semanscope_nb.errors import ArgumentError

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["word_similarity_sweep_chart"]

_NEEDED = ("dataset", "n_sentences", "anchors", "signal", "mapping", "rho", "ci_low", "ci_high")


def word_similarity_sweep_chart(table: pd.DataFrame, *, dataset: str = "bcws", mappings: tuple[str, ...] = ("procrustes", "MIM"),
                human: Any = None, title: str | None = None, width: int = 320, height: int = 260) -> alt.LayerChart:
    """rho vs training sentences (log axis) per anchor setting (``anchors signal``), one dash per mapping,
    95 % bands; references: the unaligned model (``orig``), ``no context`` and ``human`` (a float or an
    :class:`~semanscope_nb.metrics.word_similarity.AnnotatorAgreement`) as labelled rules.
    """
    import altair as alt  # lazy: `import semanscope_nb` does not import Altair

    missing = [c for c in _NEEDED if c not in table.columns]
    if missing:
        raise ArgumentError(f"table lacks column(s) {missing}: pass word_similarity_sweep(...).table")
    t = table[table["dataset"] == dataset]
    if not len(t):
        raise ArgumentError(f"table has no rows for dataset {dataset!r} (it has {sorted(set(table['dataset']))})")
    curve = t[(t["n_sentences"] > 0) & t["mapping"].isin(mappings)].copy()
    curve["setting"] = curve["anchors"] + "-type " + curve["signal"]
    curve.loc[curve["anchors"] == "token", "setting"] = "token " + curve["signal"]
    refs = [(str(m), float(r)) for m, r in zip(t.loc[t["n_sentences"] == 0, "mapping"], t.loc[t["n_sentences"] == 0, "rho"])]
    if human is not None:
        refs.append(("human upper bound", float(getattr(human, "rho", human))))
    ref = pd.DataFrame(refs, columns=["reference", "rho"])
    # ticks at the sizes measured, short ("300", "1k", "3k"), and one more dropped if two still touch: Vega's own
    # log ticks ("4,000" next to "10,000") ran into each other on a narrow chart
    sizes = sorted({int(n) for n in curve["n_sentences"]})
    x = alt.X("n_sentences:Q", scale=alt.Scale(type="log"), title="parallel sentences used to learn the map",
              axis=alt.Axis(values=sizes, format="~s", labelOverlap="greedy", labelSeparation=4))
    y = alt.Y("rho:Q", title="Spearman's rho", scale=alt.Scale(zero=False))
    colour = alt.Color("setting:N", title="anchors, signal")
    dash = alt.StrokeDash("mapping:N", title="mapping", sort=list(mappings))
    base = alt.Chart(curve)
    band = base.mark_area(opacity=0.12).encode(x=x, y="ci_low:Q", y2="ci_high:Q", color=colour,
                                               detail="mapping:N")
    lines = base.mark_line(point=True).encode(
        x=x, y=y, color=colour, strokeDash=dash,
        tooltip=["setting", "mapping", "n_sentences", alt.Tooltip("rho:Q", format=".3f"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f"), "n_anchors:Q"]
        if "n_anchors" in curve.columns else ["setting", "mapping", "n_sentences", alt.Tooltip("rho:Q", format=".3f")])
    rules = alt.Chart(ref).mark_rule(color="#555", strokeDash=[2, 2]).encode(y="rho:Q", tooltip=["reference", "rho"])
    labels = alt.Chart(ref).mark_text(align="left", dx=4, dy=-6, fontSize=10, color="#333").encode(
        y="rho:Q", x=alt.value(2), text=alt.Text("reference:N"))
    name = {"bcws": "BCWS (en-zh)", "scws": "SCWS (en)"}.get(dataset, dataset)
    return alt.layer(band, lines, rules, labels).properties(
        title=title or f"{name}: word similarity in context vs parallel sentences (paper 001, Figure 1's shape)",
        width=width, height=height)
