"""One truth across paths the other one-truth files do not cross: the model-selection report's rank bands against
its own verdicts and the comparison they come from.  Each test names the paths it crosses; decisions are compared
exactly, floats within a tolerance derived from the arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from semanscope_nb.data import load_dataset
from semanscope_nb.runs.model_report import model_report

MODELS = ["random-null", "tfidf-char"]
U64 = 2.0 ** -53
#: the band table holds the comparison's score, the verdict table the sa task's gap: one quantity, SA - chance on the
#: same judged concepts and resamples, whose spread means the two functions sum in other groupings.  Each mean is within
#: gamma_{n+d} of exact (n = 80 words, d = 4096 TF-IDF dims), each SA = I / (I + X) moves by at most about twice
#: that (I + X > 0.5 here), and the gap is the difference of two SAs: 8 (n + d) u < 4e-12 bounds the two paths' gap
GAP_ATOL = 8 * (80 + 4096) * U64


@pytest.fixture(scope="module")
def small_words():
    # 40 real concepts of edge-cases (identical strings among them, so the verdict leaves some out): the bands and
    # the verdict must agree on the artefact-free gap, not on the raw SA
    return load_dataset("edge-cases", languages=["en", "de"]).subset(range(40))


def _report(models, ds, tmp_path):
    return model_report(models, languages=["en", "de"], datasets=[ds], n_boot=100, seed=0, n_perm=200, tatoeba=False,
                        sib200=False, csc=False, contextual=False, work_dir=tmp_path / "work", progress=False)


@pytest.mark.parametrize("models", [
    pytest.param(MODELS, id="two-models", marks=pytest.mark.slow),  # two models' SA, pair matrix and comparison: ~2 s
    pytest.param(MODELS[1:], id="one-model"),  # ~0.4 s
])
def test_a_reports_sa_rank_band_scores_the_verdicts_gap_with_its_interval(models, small_words, tmp_path):
    # path A: the report's band table (and its numbers CSV, rendered from it); path B: the report's verdict table,
    # i.e. the sa task's verdict_scores (and the comparison task, which ranks by the same gap).  Before the fix a
    # band row held the raw all-concept SA as its score beside the gap's interval: 0.53 "in" [0.013, 0.026], a point
    # outside its own interval, and with one model the raw SA where two models give the gap
    r = _report(models, small_words, tmp_path)
    meas = f"SA ({small_words.name})"
    bands = r.bands[r.bands.measurement == meas].set_index("model")
    verdicts = r.verdicts.set_index("model")
    assert sorted(bands.index) == sorted(models)
    for m in models:
        b, v = bands.loc[m], verdicts.loc[m]
        np.testing.assert_allclose([b["score"], b["score_low"], b["score_high"]], [v["gap"], v["gap_low"], v["gap_high"]],
                                   rtol=0, atol=GAP_ATOL, err_msg=f"{m}: the band's score is the verdict's gap")
        assert b["score_low"] <= b["score"] <= b["score_high"], m
        assert not math.isclose(b["score"], v["sa"]), "the raw SA is the verdict table's, not the band's"
    # the bands are ranked by that score: a better band never holds a lower score than a worse one's best
    by_band = bands.groupby("band")["score"]
    assert (by_band.min().shift(1).dropna().to_numpy() >= by_band.max().iloc[1:].to_numpy()).all() if len(by_band) > 1 else True
    numbers = r.numbers().set_index("id")
    for m in models:
        row = numbers.loc[f"bands|en-de|{meas}|{m}|score"]
        np.testing.assert_array_equal([row["value"], row["ci_low"], row["ci_high"]], bands.loc[m, ["score", "score_low", "score_high"]].to_numpy(float),
                                      err_msg="the numbers CSV is rendered from the band table")


# --------------------------------------------------------------------------- the leaderboard's shading vs the verdict


def _shaded_rows(html: str, column: int) -> dict[int, str]:
    """Row number -> the background colour the Styler's CSS gives the cell (row, ``column``)."""
    import re

    out = {}
    for selectors, props in re.findall(r"([^{}]+)\{([^{}]*)\}", html.split("</style>")[0]):
        colour = re.search(r"background-color:\s*(#[0-9a-fA-F]{6})", props)
        for m in re.finditer(r"_row(\d+)_col(\d+)", selectors):
            if colour and int(m.group(2)) == column:
                out[int(m.group(1))] = colour.group(1).lower()
    return out


def test_the_leaderboards_avg_sa_is_shaded_by_the_verdicts_tier(small_words):
    # path A: leaderboard_table's shading of Avg SA (the paper's Tables D.1 layout); path B: the verdict of the same
    # result (and model_means, whose tier the tier bar chart colours).  Before the fix the shading was the paper's
    # tier of the raw mean SA: random vectors (SA 0.503, verdict "chance") were shaded "good" and TF-IDF
    # ("not above surface form") "good" too
    import semanscope_nb as snb
    from semanscope_nb.plots.leaderboard import leaderboard_table, leaderboard_wide
    from semanscope_nb.plots.palette import TIER_COLOURS
    from semanscope_nb.plots.sa_figures import model_means
    from semanscope_nb.runs.evaluate import leaderboard

    results = {(m, small_words.name): snb.run_task("sa", snb.embed(small_words, m, cache=False), n_boot=200, seed=0)
               for m in MODELS}
    table = leaderboard(results)
    wide = leaderboard_wide(table)
    shaded = _shaded_rows(leaderboard_table(table).to_html(), list(wide.columns).index("Avg SA"))
    means = model_means(table).set_index("name")
    verdict_of = {str(table.loc[table.model == m, "display_name"].iloc[0]): results[(m, small_words.name)].tier for m in MODELS}
    assert verdict_of == {"Random vectors (null)": "chance", "TF-IDF char n-grams": "not above surface form"}
    for i, name in enumerate(wide.index):
        assert means.loc[name, "tier"] == verdict_of[name]  # one dataset: model_means' tier is the verdict's
        assert shaded[i] == TIER_COLOURS[verdict_of[name]].lower(), (name, shaded[i])


# --------------------------------------------------------------------------- the effect-size floor: one near-tie rule


def test_the_effect_size_floor_ties_as_the_tier_thresholds_tie():
    # the verdict, the pair matrix (metrics.pairs) and the pooled model means (plots.sa_figures) compute the
    # chance-corrected score by other groupings of the same float64 sums and all decide the floor through
    # null_aware_tier; the SA tiers already tie a value within THRESHOLD_TOLERANCE below a threshold with it
    # (reaches).  Before the fix the floor compared with a bare >=: a score 1e-16 under 0.02 (one path's rounding
    # of an exact 0.02) was 'chance' on that path and the paper's tier on another, and the surface comparison the same
    from semanscope_nb.metrics.affinity import TierThresholds
    from semanscope_nb.metrics.chance import MIN_CORRECTED, SurfaceComparison, null_aware_tier
    from semanscope_nb.metrics.ties import THRESHOLD_TOLERANCE
    from semanscope_nb.results import Estimate, Interval

    tied, below = MIN_CORRECTED - 1e-16, MIN_CORRECTED - 10 * THRESHOLD_TOLERANCE
    assert tied != MIN_CORRECTED  # a float of its own, one rounding away
    assert TierThresholds().classify(0.6 - 1e-16) == "great"  # the rule the floor now follows
    gap = (0.01, 0.05)  # above 0: only the floor decides
    assert [null_aware_tier("good", gap, corrected=c) for c in (MIN_CORRECTED, tied, below, math.nan)] == \
        ["good", "good", "chance", "chance"]

    def surface(difference: float) -> SurfaceComparison:
        e = Estimate(0.1, 0.02, Interval(0.05, 0.15))
        return SurfaceComparison(model_corrected=e, surface_corrected=e, difference=Estimate(difference, 0.01, Interval(0.001, 0.05)),
                                 n_concepts=40, n_boot=200)

    assert [surface(c).above for c in (MIN_CORRECTED, tied, below)] == [True, True, False]


# --------------------------------------------------------------------------- model means over datasets: the surface gate


def test_a_model_mean_over_datasets_is_not_above_surface_form_when_its_verdicts_are_not():
    # path A: model_means over two datasets (Figure 1's tier bar chart, the leaderboard's shading); path B: the
    # verdict of each dataset.  TF-IDF over character n-grams is the surface baseline itself (surface difference 0):
    # every verdict says "not above surface form"; before the fix the pooled rule stopped at the chance gates and
    # gave it the paper's tier "good"
    import pandas as pd

    import semanscope_nb as snb
    from semanscope_nb.plots.leaderboard import leaderboard_tiers
    from semanscope_nb.plots.sa_figures import model_means
    from semanscope_nb.runs.evaluate import leaderboard

    results = {}
    for name in ("edge-cases", "conceptual-space"):
        ds = load_dataset(name, languages=["en", "de"]).subset(range(60))
        results[("tfidf-char", name)] = snb.run_task("sa", snb.embed(ds, "tfidf-char", cache=False), n_boot=200, seed=0)
    assert {r.tier for r in results.values()} == {"not above surface form"}
    assert {r.paper_tier for r in results.values()} == {"good"}  # the tier the pooled rule gave before the fix
    table = leaderboard(results)
    means = model_means(table)
    assert means["tier"].tolist() == ["not above surface form"]
    assert leaderboard_tiers(table) == {"TF-IDF char n-grams": "not above surface form"}

    # the gate is the verdict's (metrics.chance.above_surface): a mean difference that reaches the floor keeps the tier
    def row(dataset, surface_difference):
        return {"model": "m", "dataset": dataset, "sa_cosine": 0.56, "sem_cosine": 0.01, "sa_null": 0.5, "delta": 0.06,
                "delta_low": 0.04, "delta_high": 0.08, "corrected": 0.12, "sa_verdict_basis": 0.56, "tier": "good",
                "surface_difference": surface_difference}

    for diffs, tier in (((0.05, 0.03), "good"), ((0.03, 0.0), "not above surface form"), ((0.04, 0.0), "good"),
                        ((0.05, math.nan), "good")):  # NaN: a run without the surface baseline, no gate (as the verdict)
        assert model_means(pd.DataFrame([row("a", diffs[0]), row("b", diffs[1])]))["tier"].tolist() == [tier], diffs


# --------------------------------------------------------------------------- the permutation task vs the verdict's gate


def test_the_permutation_task_is_the_verdicts_permutation_test():
    # path A: the permutation task (snb.dataset_permutation_test, `semanscope run permutation`); path B: the
    # verdict's gate (SAResult.permutation: n_perm = n_boot re-pairings of the judged concepts, the bootstrap's seed).
    # Before the fix the task re-paired all concepts, identical strings included (one vector in any model): random
    # vectors on edge-cases en-de got p = 0.0199, "above chance" at the verdict's one-sided level 0.025, where the
    # verdict says chance; and for a real alignment two p-values for one question
    import semanscope_nb as snb

    emb = snb.embed(load_dataset("edge-cases", languages=["en", "fr"]).subset(range(60)), "tfidf-char", cache=False)
    sa = snb.run_task("sa", emb, n_boot=200, seed=0, surface_null=False)
    assert sa.excluded_concepts.get("identical-string", 0) > 0 and sa.permutation is not None
    task = snb.run_task("permutation", emb, n_perm=200, seed=0)
    function = snb.dataset_permutation_test(emb, n_perm=200, seed=0)
    for t in (task, function):
        assert t.p_value == sa.permutation.p_value  # the same seeded re-pairings of the same concepts: a count, exact
        assert t.provenance["excluded_concepts"] == sa.excluded_concepts
        np.testing.assert_allclose(t.sa, sa.permutation.sa, rtol=0, atol=0, err_msg="the same judged concepts' SA")

    null = snb.embed(load_dataset("edge-cases", languages=["en", "de"]), "random-null", cache=False)
    verdict = snb.run_task("sa", null, n_boot=200, seed=0)
    p = snb.run_task("permutation", null, n_perm=200, seed=0).p_value
    assert verdict.tier == "chance" and verdict.excluded_concepts == {"identical-string": 8}
    assert p >= (1 - verdict.confidence) / 2, p  # no evidence of alignment on either path


# --------------------------------------------------------------------------- the benchmark CLI's thresholds


def test_the_benchmark_clis_thresholds_reach_the_pair_matrix_as_they_reach_the_verdict(tmp_path, capsys):
    # path A: `semanscope benchmark --tasks sa,pair-sa --great G --good g`, its sa job; path B: its pair-sa job, the
    # same pair.  Before the fix --great/--good went to the sa task only: the one pair en-de had the paper's tier
    # "great" (0.540 >= 0.53) in the verdict and "good" (default 0.60) in the pair matrix of the same run
    import json

    from semanscope_nb.results import Result
    from semanscope_nb.runs.cli import main

    out = tmp_path / "out"
    status = main(["benchmark", "--models", "tfidf-char", "--datasets", "edge-cases", "--languages", "en,de",
                   "--max-concepts", "40", "--tasks", "sa,pair-sa", "--great", "0.53", "--good", "0.5", "--n-boot", "200",
                   "--seed", "0", "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    capsys.readouterr()
    assert status == 0
    jobs, params = {}, {}
    for f in (out / "runs").glob("*.json"):
        d = json.loads(f.read_text(encoding="utf-8"))
        jobs[d["kind"]] = Result.from_saved({"kind": d["kind"], **d["result"]})
        params[d["kind"]] = d["job"]["params"]
    sa, pairs = jobs["sa"], jobs["pair-sa"]
    row = pairs.table.iloc[0]
    assert sa.thresholds.great == 0.53 and sa.paper_tier == "great"
    np.testing.assert_allclose(row["sa"], sa.cosine.sa, rtol=1e-12, err_msg="one pair: the same SA (test_one_truth's RTOL)")
    assert (row["paper_tier"], row["verdict"]) == (sa.paper_tier, sa.tier)
    assert params["pair-sa"]["thresholds"] == params["sa"]["thresholds"] == {"great": 0.53, "good": 0.5}


@pytest.mark.slow  # four SA runs with the surface baseline on 140 concepts, through the CLI and the function: seconds
def test_the_run_clis_thresholds_param_gives_the_functions_tiers(tmp_path, capsys):
    # path A: `semanscope run sa|pair-sa --param thresholds=...` (JSON: an object or a pair); path B: run_task with
    # TierThresholds.  Before the fix the CLI passed the JSON object on: sa refused it ("thresholds must be a
    # TierThresholds, got dict") and pair-sa failed with AttributeError: custom tiers were unreachable from `run`
    import json

    import semanscope_nb as snb
    from semanscope_nb.metrics.affinity import TierThresholds
    from semanscope_nb.runs.cli import main

    T = TierThresholds(great=0.52, good=0.5)
    common = ["--model", "tfidf-char", "--dataset", "edge-cases", "--languages", "en,de", "--n-boot", "200", "--seed", "0",
              "--json", "--cache-dir", str(tmp_path / "cache")]
    shown = {}
    for task, value in (("sa", '{"great": 0.52, "good": 0.5}'), ("pair-sa", "[0.52, 0.5]")):
        assert main(["run", task, "--param", f"thresholds={value}", *common]) == 0
        shown[task] = json.loads(capsys.readouterr().out)
    emb = snb.embed("edge-cases", "tfidf-char", languages=["en", "de"], cache=snb.EmbeddingCache(tmp_path / "cache"))
    sa = snb.run_task("sa", emb, n_boot=200, seed=0, thresholds=T)
    pair = snb.run_task("pair-sa", emb, n_boot=200, seed=0, thresholds=T).table.iloc[0]
    assert sa.paper_tier == "great"  # 0.527 reaches 0.52: the custom threshold decides it (default: 'good')
    assert (shown["sa"]["paper_tier"], shown["sa"]["tier"], shown["sa"]["thresholds"]) == \
        (sa.paper_tier, sa.tier, {"great": 0.52, "good": 0.5})
    columns = shown["pair-sa"]["table"]["columns"]
    row = dict(zip(columns, shown["pair-sa"]["table"]["rows"][0]))
    assert (row["paper_tier"], row["verdict"]) == (pair["paper_tier"], pair["verdict"]) == (sa.paper_tier, sa.tier)
    # bad thresholds: a clear error naming the option, exit status 2 (bad input), nothing computed
    assert main(["run", "sa", "--param", 'thresholds={"great": 0.4, "good": 0.5}', *common]) == 2
    assert "--param thresholds: TierThresholds: great (0.4) must be >= good (0.5)" in capsys.readouterr().err
