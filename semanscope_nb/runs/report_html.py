"""The model-selection report as one self-contained HTML file, with the CSV and JSON of every number beside it.

Charts are Altair specs embedded by vega-embed from the inline bundle of the
installed vl-convert (:func:`~semanscope_nb.plots.export.vega_bundle`, as
:func:`~semanscope_nb.plots.export.chart_to_html` does): the page loads
nothing from the network.  Every string reaching the page goes through
:func:`html.escape`, a text after :func:`~semanscope_nb.provenance.visible_text` (a
bidi override in a dataset name cannot reverse the page's sentences), an
attribute with such characters as character references (the ``data-id`` stays
the CSV's id); every spec through :func:`~semanscope_nb.plots.export.script_json`,
and the names the charts draw as labels through ``visible_text`` too.
Every number is plain text (copyable) in a ``<span data-id=...>`` whose id is
the ``id`` of its row in ``<stem>-numbers.csv`` (:func:`report_numbers`).

Example
-------
>>> import tempfile, pathlib, semanscope_nb as snb
>>> r = snb.model_report(["random-null", "tfidf-char"], languages=["en", "zh"], datasets=["edge-cases"], n_boot=10,
...                      tatoeba=False, sib200=False, csc=False, work_dir=tempfile.mkdtemp(), progress=False)
>>> paths = save_report(r, pathlib.Path(tempfile.mkdtemp()) / "report.html")
>>> sorted(paths), "cdn" in pathlib.Path(paths["html"]).read_text().lower()
(['csv', 'html', 'json', 'report'], False)
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from semanscope_nb.provenance import INVISIBLE_CHARS, atomic_write_text, csv_text, json_ready, path_inside, visible_text

# --------------------------------------------------------------------------- every number, with provenance

#: (section, table attribute, id columns, value columns); a value ``v`` has its interval in ``v_low`` / ``v_high`` when present
NUMBER_SECTIONS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("verdict", "verdicts", ("language_set", "dataset", "model"), ("sa", "sa_judged", "chance", "gap")),
    ("pairs", "pairs", ("language_set", "dataset", "model", "pair"), ("sa", "chance", "gap")),
    ("retrieval", "retrieval", ("language_set", "corpus", "model", "direction", "measure"), ("value",)),
    ("signal", "signal", ("language_set", "corpus", "model"), ("true_mean", "random_mean", "ks_stat", "ks_p", "cohen_d", "auc")),
    ("misses", "miss_counts", ("language_set", "corpus", "model", "class"), ("share", "near_threshold")),
    ("knn", "knn", ("language_set", "dataset", "model"), ("macro_f1", "accuracy", "majority_macro_f1", "random_macro_f1")),
    ("csc", "csc", ("language_set", "corpus", "model"), ("overlap",)),
    ("contextual", "contextual", ("language_set", "dataset", "model"), ("rho", "human_rho")),
    ("comparison", "comparisons", ("language_set", "measurement", "model_a", "model_b"), ("diff", "p_value", "p_holm")),
    ("bands", "bands", ("language_set", "measurement", "model"), ("score", "band")),
    ("cost", "costs", ("model",), ("dims", "encode_seconds", "size_mb")),
)


def number_id(section: str, keys: Sequence[Any], column: str) -> str:
    """The id of one number of the report (the HTML's ``data-id``, the CSV's ``id``)."""
    return "|".join([section, *(str(k) for k in keys), column])


def report_numbers(report: Any) -> pd.DataFrame:
    """Every number of ``report``: id, section, model, dataset, measure, value, interval and provenance."""
    params = json.dumps(json_ready(report.parameters), sort_keys=True)
    sha = report.provenance.get("datasets", {})
    versions = report.provenance.get("model_versions", {})
    pkg = report.provenance.get("semanscope_nb", "")
    rows = []
    for section, attr, id_cols, value_cols in NUMBER_SECTIONS:
        table = getattr(report, attr)
        for r in table.to_dict("records"):
            keys = [r[c] for c in id_cols]
            ds = r.get("dataset") or r.get("corpus") or ""
            for col in value_cols:
                v = r.get(col)
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    continue
                if section == "retrieval":
                    measure = r["measure"]
                elif section == "misses":
                    measure = f"share {r['class']}" if col == "share" else col
                else:
                    measure = col
                rows.append({"id": number_id(section, keys, col), "section": section, "language_set": r.get("language_set", ""),
                             "model": r.get("model", r.get("model_a", "")), "dataset": ds, "measure": measure, "value": float(v),
                             "ci_low": _f(r.get(f"{col}_low")), "ci_high": _f(r.get(f"{col}_high")),
                             "model_version": versions.get(r.get("model", ""), ""), "dataset_sha256": sha.get(ds, ""),
                             "parameters": params, "semanscope_nb_version": pkg})
    return pd.DataFrame(rows)


def _f(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--accent:#2456a6;--bad:#a4262c;--good:#1e7b34}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans','Noto Sans CJK SC','Noto Sans CJK JP',sans-serif;
color:var(--fg);max-width:1180px;margin:0 auto;padding:24px;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em} h2{border-bottom:2px solid var(--line);padding-bottom:.2em;margin-top:1.6em}
h3{margin-top:1.2em} .muted{color:var(--muted)} nav.toc{background:#f5f7fa;border:1px solid var(--line);padding:10px 18px;border-radius:6px}
nav.toc ul{margin:.2em 0;padding-left:1.2em} table{border-collapse:collapse;margin:.5em 0 1em;font-size:.88em}
th,td{border:1px solid var(--line);padding:3px 7px;vertical-align:top;text-align:left} th{background:#f0f3f8}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums} .ci{color:var(--muted)}
.rec{background:#eef5ff;border-left:5px solid var(--accent);padding:10px 14px;font-size:1.08em;margin:.8em 0}
.tier-chance,.tier-below{color:var(--bad);font-weight:600} .tier-great,.tier-good{color:var(--good);font-weight:600}
.missing{background:#fff7e6;border-left:4px solid #d08a00;padding:6px 12px;margin:.4em 0}
.chart{margin:.5em 0 1em} code{background:#f3f3f3;padding:0 3px}
@media print{nav.toc{display:none} body{max-width:none;padding:0;font-size:10pt} h2{page-break-before:always}
 h2.first{page-break-before:avoid} table,.chart{page-break-inside:avoid} a{color:inherit;text-decoration:none}}
"""

LOADER = """
document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (el) {
  var spec = JSON.parse(el.textContent);
  vegaEmbed('#' + el.getAttribute('data-chart'), spec, {actions: false, renderer: 'svg'}).catch(function (e) {
    document.getElementById(el.getAttribute('data-chart')).textContent = 'chart failed: ' + e;
  });
});
"""


def format_number(v: Any) -> str:
    """The text a number shows in the report: integers as such, tiny values in scientific notation, else 4 decimals.

    Anything that is no finite number (None, NaN of any float type, an infinity) shows as ``n/a``.

    >>> format_number(0.123456), format_number(3.0), format_number(2.5e-9), format_number(float("nan"))
    ('0.1235', '3', '2.500e-09', 'n/a')
    >>> import numpy as np; format_number(np.float32("nan")), format_number(float("inf"))
    ('n/a', 'n/a')
    """
    if not _finite(v):
        return "n/a"
    v = float(v)
    if v.is_integer() and abs(v) < 1e12:
        return str(int(v))
    if 0 < abs(v) < 1e-3:
        return f"{v:.3e}"
    return f"{v:.4f}"


def _e(x: Any) -> str:
    """HTML text: control, bidi and invisible characters shown as ``\\uXXXX`` (the reader sees them), then escaped."""
    return html.escape(visible_text(x), quote=True)


def _a(x: Any) -> str:
    """An attribute value (an id, a link): exact in the DOM, yet no raw control or bidi character in the file.

    A bidi, invisible or separator character becomes a character reference, which
    the browser (and :func:`html.unescape`) reads back as the same character, so a
    ``data-id`` equals the id in the numbers file.  A control character or lone
    surrogate gets :func:`visible_text`'s escape instead: a reference to one is an
    HTML parse error (NUL and C1 are even read as other characters).
    """
    def ref(m: Any) -> str:
        c = m.group()
        return visible_text(c) if c <= "\x9f" or "\ud800" <= c <= "\udfff" else f"&#x{ord(c):x};"

    return INVISIBLE_CHARS.sub(ref, html.escape(str(x), quote=True))


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _num(section: str, row: dict, keys: Sequence[str], col: str, *, ci: bool = True) -> str:
    v = row.get(col)
    if not _finite(v):
        return "<td class='num'>n/a</td>"
    ident = number_id(section, [row[k] for k in keys], col)
    text = f"<span data-id='{_a(ident)}'>{format_number(v)}</span>"
    lo, hi = row.get(f"{col}_low"), row.get(f"{col}_high")
    if ci and _finite(lo) and _finite(hi):  # half an interval is no interval
        text += f"<span class='ci'> [{format_number(lo)}, {format_number(hi)}]</span>"
    return f"<td class='num'>{text}</td>"


def _table(df: pd.DataFrame, section: str, keys: Sequence[str], columns: Sequence[tuple[str, str, str]]) -> str:
    """``columns``: (column, header, 'num' | 'text' | 'tier')."""
    if df.empty:
        return "<p class='muted'>(no rows)</p>"
    head = "".join(f"<th>{_e(h)}</th>" for _, h, _ in columns)
    body = []
    for r in df.to_dict("records"):
        cells = []
        for col, _, how in columns:
            if how == "num":
                cells.append(_num(section, r, keys, col))
            elif how == "tier":
                t = str(r.get(col, ""))
                cells.append(f"<td class='tier-{_a(t.split()[0] if t else '')}'>{_e(t)}</td>")
            else:
                cells.append(f"<td>{_e(r.get(col, ''))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _charts(report: Any, label: str) -> dict[str, Any]:
    """Altair charts of one language set: SA beside chance, the pair matrix, the signal-vs-noise densities."""
    import altair as alt

    out: dict[str, Any] = {}
    v = report.verdicts[(report.verdicts.language_set == label)]
    if len(v):
        base = alt.Chart(v[["dataset", "model", "sa", "sa_low", "sa_high", "chance"]])
        out["verdict"] = (
            base.mark_errorbar().encode(x=alt.X("sa_low:Q", title="SA (cosine) with interval; tick = chance level",
                                                scale=alt.Scale(zero=False)), x2="sa_high:Q", y=alt.Y("model:N", title=None))
            + base.mark_point(filled=True, size=60).encode(x="sa:Q", y="model:N", tooltip=["model", "sa", "chance"])
            + base.mark_tick(color="#a4262c", thickness=2).encode(x="chance:Q", y="model:N")
        ).properties(width=420, height=alt.Step(22)).facet(row=alt.Row("dataset:N", title=None))
    p = report.pairs[(report.pairs.language_set == label) & (report.pairs.dataset == report.datasets[0])]
    if len(p):
        out["pairs"] = alt.Chart(p[["model", "language_a", "language_b", "sa", "gap", "verdict"]]).mark_rect().encode(
            x=alt.X("language_a:N", title=None), y=alt.Y("language_b:N", title=None),
            color=alt.Color("gap:Q", title="SA - chance", scale=alt.Scale(scheme="redyellowgreen", domainMid=0)),
            tooltip=["model", "language_a", "language_b", "sa", "gap", "verdict"],
        ).properties(width=110, height=110).facet(column=alt.Column("model:N", title=None))
    c = report.cosines[report.cosines.language_set == label]
    if len(c):
        out["signal"] = alt.Chart(c).transform_density(
            "cosine", groupby=["corpus", "model", "pairs"], as_=["cosine", "density"]
        ).mark_area(opacity=0.5).encode(
            x=alt.X("cosine:Q"), y=alt.Y("density:Q", stack=None),
            color=alt.Color("pairs:N", title="pairs", scale=alt.Scale(domain=["true", "random"], range=["#1e7b34", "#a4262c"])),
        ).properties(width=170, height=90).facet(row=alt.Row("corpus:N", title=None), column=alt.Column("model:N", title=None))
    return out


def _chart_html(name: str, chart: Any) -> str:
    from semanscope_nb.plots.export import script_json, visible_spec

    # the names the charts draw (facet headers, axis labels: SVG text) shown as visible_text, as in the page's own
    # text and the exports: a bidi override cannot reverse them; the numbers files keep them exact
    spec = visible_spec(chart.to_dict())
    return (f"<div class='chart' id='{_a(name)}'></div>"
            f"<script type='application/json' data-chart='{_a(name)}'>{script_json(spec)}</script>")


def _contextual_html(report: Any, sid: str, table: pd.DataFrame) -> list[str]:
    """The BCWS section: rho with its interval per model with token states, the human bound, the provenance."""
    out = [f"<h3 id='{sid}-contextual'>Contextual similarity (BCWS, en-zh words in context)</h3>",
           ("<p class='muted'>Spearman's rho between the cosine of the two target words' contextual vectors (mean of layers "
           "1..n, mean of the word's subwords) and the mean human score, on a seeded sample of "
           f"{_e(report.parameters.get('bcws_pairs', ''))} BCWS pairs (Chinese converted to Simplified script with OpenCC t2s), "
           "with a bootstrap interval over pairs; the human upper bound is the annotators' leave-one-out agreement on the same "
           "pairs. Models without token states are listed under Missing data with what would fill the row.</p>")]
    out.append(_table(table, "contextual", ("language_set", "dataset", "model"), [
        ("dataset", "dataset", "text"), ("model", "model", "text"), ("token_encoder", "token states from", "text"),
        ("rho", "Spearman rho [interval]", "num"), ("human_rho", "human upper bound", "num"), ("n_pairs", "pairs", "text")]))
    return out


#: (anchor, heading) of the sections of each language set, in page order
SET_SECTIONS = (("verdict", "Verdict"), ("pairs", "Pair matrix"), ("retrieval", "Retrieval"), ("signal", "Signal vs noise"),
                ("misses", "Miss taxonomy"), ("knn", "kNN classification"), ("csc", "CSC overlap"),
                ("contextual", "Contextual similarity (BCWS)"), ("comparison", "Comparison across models"),
                ("missing", "Missing data"))


def report_html(report: Any, *, title: str | None = None, numbers_file: str = "numbers.csv") -> str:
    """The report as one HTML page (see the module docstring)."""
    from semanscope_nb.plots.export import vega_bundle

    title = title or "Which model for " + " / ".join(", ".join(s) for s in report.language_sets) + "?"
    toc, parts = [], []
    for si, s in enumerate(report.language_sets):
        sid = f"set-{si}"
        toc.append(f"<li><a href='#{sid}'>{_e(', '.join(s))}</a><ul>"
                   + "".join(f"<li><a href='#{sid}-{k}'>{_e(t)}</a></li>" for k, t in SET_SECTIONS) + "</ul></li>")
        parts.append("\n".join(_language_set_html(report, s, sid=sid, first=si == 0)))
    toc.append("<li><a href='#cost'>Cost</a></li><li><a href='#skipped'>Skipped</a></li><li><a href='#provenance'>Provenance</a></li>"
               "<li><a href='#method'>Method</a></li>")
    body = "\n".join(parts + _closing_sections_html(report, numbers_file))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><style>{CSS}</style><script>{vega_bundle()}</script></head><body>"
            f"<h1>{_e(title)}</h1><p class='muted'>Models: {_e(', '.join(report.models))}. Word datasets: {_e(', '.join(report.datasets))}. "
            "Every number below is plain text: select and copy.</p>"
            f"<nav class='toc'><b>Contents</b><ul>{''.join(toc)}</ul></nav>{body}<script>{LOADER}</script></body></html>")


def _language_set_html(report: Any, languages: Sequence[str], *, sid: str, first: bool) -> list[str]:
    """The HTML blocks of one language set, section by section (:data:`SET_SECTIONS`)."""
    label = "-".join(languages)
    charts = _charts(report, label)

    def one(df: pd.DataFrame) -> pd.DataFrame:
        return df[df.language_set == label]

    h = [f"<h2 id='{sid}' class='{'first' if first else ''}'>Languages {_e(', '.join(languages))}</h2>"]
    rec = one(report.recommendations)
    if len(rec):
        r = rec.iloc[0]
        h.append(f"<div class='rec'><b>Recommendation.</b> {_e(r['sentence'])}"
                 + (f"<br><span class='muted'>Steps: {_e(r['steps'])}</span>" if r["steps"] else "") + "</div>")
    h += _verdict_html(one(report.verdicts), sid, charts)
    h += _pairs_and_retrieval_html(one(report.pairs), one(report.retrieval), one(report.signal), sid, charts)
    h += _misses_html(report, one(report.miss_counts), one(report.misses), sid)
    h += _scores_html(one(report.knn), one(report.csc), sid)
    h += _contextual_html(report, sid, one(report.contextual))
    h += _comparison_html(one(report.bands), one(report.comparisons), one(report.missing), sid)
    return h


def _verdict_html(vt: pd.DataFrame, sid: str, charts: dict[str, Any]) -> list[str]:
    h = [f"<h3 id='{sid}-verdict'>Verdict (SA beside its chance level)</h3>",
         _table(vt, "verdict", ("language_set", "dataset", "model"), [
             ("dataset", "dataset", "text"), ("model", "model", "text"), ("tier", "null-aware tier", "tier"),
             ("sa", "SA (all concepts)", "num"), ("sa_judged", "SA (judged)", "num"), ("chance", "chance level", "num"),
             ("gap", "gap (judged SA - chance)", "num"), ("paper_tier", "paper tier", "text")])]
    for r in vt.to_dict("records"):
        h.append(f"<p><b>{_e(r['model'])}</b> on {_e(r['dataset'])}: {_e(r['verdict'])}"
                 + (f"<br><span class='muted'>Notes (artefacts, diagnostics): {_e(r['artefacts'])}</span>" if r["artefacts"] else "") + "</p>")
    if "verdict" in charts:
        h.append(_chart_html(f"{sid}-chart-verdict", charts["verdict"]))
    return h


def _pairs_and_retrieval_html(pairs: pd.DataFrame, retrieval: pd.DataFrame, signal: pd.DataFrame, sid: str,
                              charts: dict[str, Any]) -> list[str]:
    h = [f"<h3 id='{sid}-pairs'>Pair matrix (which language pairs fail)</h3>",
         _table(pairs, "pairs", ("language_set", "dataset", "model", "pair"), [
             ("dataset", "dataset", "text"), ("model", "model", "text"), ("pair", "pair", "text"), ("verdict", "verdict", "tier"),
             ("sa", "SA", "num"), ("chance", "chance", "num"), ("gap", "gap", "num")])]
    if "pairs" in charts:
        h.append(_chart_html(f"{sid}-chart-pairs", charts["pairs"]))
    h.append(f"<h3 id='{sid}-retrieval'>Retrieval (both directions)</h3>")
    h.append(_table(retrieval, "retrieval", ("language_set", "corpus", "model", "direction", "measure"), [
        ("corpus", "corpus", "text"), ("model", "model", "text"), ("direction", "direction", "text"), ("measure", "measure", "text"),
        ("value", "value [interval]", "num"), ("n_queries", "queries", "text")]))
    h.append(f"<h3 id='{sid}-signal'>Signal vs noise (true vs random pair cosines)</h3>")
    h.append(_table(signal, "signal", ("language_set", "corpus", "model"), [
        ("corpus", "corpus", "text"), ("model", "model", "text"), ("true_mean", "mean cos, true pairs", "num"),
        ("random_mean", "mean cos, random pairs", "num"), ("ks_stat", "KS statistic", "num"), ("ks_p", "KS p-value", "num"),
        ("cohen_d", "Cohen's d", "num"), ("auc", "AUC P(true > random)", "num")]))
    if "signal" in charts:
        h.append(_chart_html(f"{sid}-chart-signal", charts["signal"]))
    return h


def _misses_html(report: Any, counts: pd.DataFrame, examples: pd.DataFrame, sid: str) -> list[str]:
    h = [f"<h3 id='{sid}-misses'>Miss taxonomy (forward direction)</h3>",
         "<p class='muted'>Classes, first rule that holds: <b>surface</b> (the predicted target shares a word of 2+ characters "
         "or a CJK character bigram with the query); <b>near semantic</b> (cosine of predicted and gold target at or above the "
         f"{report.parameters.get('near_quantile', 0.95):.0%} quantile of random target-pair cosines of the same model: <i>near_threshold</i>); "
         "<b>topic</b> (same SIB-200 label; not available on corpora without labels); <b>far</b>. Shares are of all queries, "
         "with Wilson intervals.</p>",
         _table(counts, "misses", ("language_set", "corpus", "model", "class"), [
             ("corpus", "corpus", "text"), ("model", "model", "text"), ("class", "class", "text"), ("n", "misses", "text"),
             ("share", "share of queries", "num"), ("near_threshold", "near_threshold", "num")])]
    if len(examples):
        h.append("<details><summary>Five examples per class</summary>")
        h.append(_table(examples, "", (), [("corpus", "corpus", "text"), ("model", "model", "text"), ("class", "class", "text"),
                                           ("query", "query", "text"), ("predicted", "predicted", "text"), ("gold", "gold", "text")]))
        h.append("</details>")
    return h


def _scores_html(knn: pd.DataFrame, csc: pd.DataFrame, sid: str) -> list[str]:
    return [f"<h3 id='{sid}-knn'>kNN classification (SIB-200 topics)</h3>",
            _table(knn, "knn", ("language_set", "dataset", "model"), [
                ("dataset", "dataset", "text"), ("model", "model", "text"), ("k", "k", "text"), ("macro_f1", "macro F1", "num"),
                ("accuracy", "accuracy", "num"), ("majority_macro_f1", "majority baseline macro F1", "num"),
                ("random_macro_f1", "random baseline macro F1", "num"), ("n_test", "test items", "text")]),
            f"<h3 id='{sid}-csc'>CSC overlap (lower = better)</h3>",
            _table(csc, "csc", ("language_set", "corpus", "model"), [
                ("corpus", "corpus", "text"), ("model", "model", "text"), ("overlap", "overlap", "num"),
                ("n_sentences", "sentences", "text")])]


def _comparison_html(bands: pd.DataFrame, comparisons: pd.DataFrame, missing: pd.DataFrame, sid: str) -> list[str]:
    h = [f"<h3 id='{sid}-comparison'>Comparison across models (paired tests, Holm, rank bands)</h3>",
         _table(bands, "bands", ("language_set", "measurement", "model"), [
             ("measurement", "measurement", "text"), ("model", "model", "text"), ("band", "rank band", "num"), ("score", "score", "num")]),
         _table(comparisons, "comparison", ("language_set", "measurement", "model_a", "model_b"), [
             ("measurement", "measurement", "text"), ("model_a", "model a", "text"), ("model_b", "model b", "text"),
             ("diff", "a - b", "num"), ("p_value", "p", "num"), ("p_holm", "p (Holm)", "num"), ("significant", "significant", "text")]),
         f"<h3 id='{sid}-missing'>Missing data</h3>"]
    if len(missing):
        h.extend(f"<div class='missing'><b>{_e(r['section'])}</b>: {_e(r['what'])}. Would fill it: {_e(r['would_fill'])}</div>"
                 for r in missing.to_dict("records"))
    else:
        h.append("<p class='muted'>Nothing missing.</p>")
    return h


def _closing_sections_html(report: Any, numbers_file: str) -> list[str]:
    """Cost, skipped work, provenance and method: once per report, after the language sets."""
    return ["<h2 id='cost'>Cost (measured on this machine)</h2>",
            _table(report.costs, "cost", ("model",), [("model", "model", "text"), ("display_name", "name", "text"),
                                                      ("dims", "dimensions", "num"), ("encode_seconds", "encode seconds / 1000 texts", "num"),
                                                      ("size_mb", "package size (MB)", "num"), ("measured", "timed at (UTC)", "text")]),
            "<h2 id='skipped'>Skipped</h2>",
            _table(report.skipped, "", (), [("what", "what", "text"), ("language_set", "language set", "text"), ("reason", "reason", "text")]),
            "<h2 id='provenance'>Provenance</h2>",
            _table(report.dataset_info, "", (), [("dataset", "dataset", "text"), ("kind", "kind", "text"), ("sha256", "SHA-256", "text"),
                                                 ("source", "source", "text")]),
            f"<p>Models and versions: {_e(', '.join(f'{m} {v}' for m, v in report.provenance.get('model_versions', {}).items()))}. "
            f"Parameters: <code>{_e(json.dumps(json_ready(report.parameters), sort_keys=True))}</code>. "
            f"semanscope_nb {_e(report.provenance.get('semanscope_nb', ''))}; created {_e(report.provenance.get('created', ''))}. "
            f"Every number with its interval and provenance: <a href='{_a(numbers_file)}'>{_e(numbers_file)}</a> (and .json).</p>",
            "<h2 id='method'>Method</h2>",
            f"<p><b>Recommendation rule.</b> {_e(report.recommendations['rule'].iloc[0] if len(report.recommendations) else '')}</p>",
            "<p><b>Miss classes</b>: surface, near semantic, topic, far (defined in the miss taxonomy sections). "
            f"<b>Intervals</b>: bootstrap percentile at "
            f"{_e(report.parameters.get('confidence'))} (SA, gap, retrieval, signal, kNN, CSC, differences); Wilson for miss shares. "
            "p-values and counts carry no interval.</p>"]


def save_report(report: Any, path: str | os.PathLike, *, title: str | None = None) -> dict[str, str]:
    """Write ``report`` as ``path`` (HTML), ``<stem>-numbers.csv`` / ``<stem>-numbers.json`` and ``<stem>.report.json``.

    The file names are made safe (:func:`~semanscope_nb.provenance.safe_name`) and
    kept inside ``path``'s folder (:func:`~semanscope_nb.provenance.path_inside`);
    every file is written atomically.
    """
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    stem = p.stem or "report"
    html_path = path_inside(folder, f"{stem}.html")
    csv_path = path_inside(folder, f"{stem}-numbers.csv")
    json_path = path_inside(folder, f"{stem}-numbers.json")
    rep_path = path_inside(folder, f"{stem}.report.json")
    nums = report_numbers(report)
    atomic_write_text(csv_path, csv_text(nums))
    atomic_write_text(json_path, json.dumps(json_ready({"provenance": report.provenance, "numbers": nums.to_dict("records")}),
                                            ensure_ascii=False, indent=1))
    atomic_write_text(html_path, report_html(report, title=title, numbers_file=csv_path.name))
    report.save(rep_path)
    return {"html": str(html_path), "csv": str(csv_path), "json": str(json_path), "report": str(rep_path)}
