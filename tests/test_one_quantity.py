"""One quantity everywhere (issue 19): comparisons, rank bands, pairs, model means, the legend and the leaderboard
compare the verdict's artefact-free, chance-corrected score, checked against plain loops."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from reference import reference_sa

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import affinity_of_words
from semanscope_nb.metrics.artefacts import find_artefacts, subset_languages
from semanscope_nb.metrics.compare import compare_models
from semanscope_nb.metrics.pairs import pair_affinity
from semanscope_nb.metrics.spreads import AlignedWords


def _string_vector(word: str, d: int, salt: str = "") -> np.ndarray:
    """A random-null encoder: a fixed random vector per string (identical strings -> identical vectors)."""
    seed = int.from_bytes(hashlib.sha256((salt + word).encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=d)


def _words_with_identical(R: int, n_identical: int, langs=("en", "de")) -> tuple[tuple[str, ...], ...]:
    """Row r: 'w{r}_{lang}' in each language, except the first n_identical rows, which share one string."""
    return tuple(tuple(f"name{r}" if r < n_identical else f"w{r}_{lang}" for r in range(R)) for lang in langs)


def _aw(vectors, words, langs=("en", "de")) -> AlignedWords:
    R = len(words[0])
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(langs), tuple(vectors), tuple(eye for _ in langs), tuple(f"c{r}" for r in range(R)), words=words)


def _random_null(words, d=16, salt=""):
    return [np.array([_string_vector(w, d, salt) for w in ws]) for ws in words]


def _real(words, seed, d=16, noise=0.8, offset=2.0):
    """A weak real model with a language offset: each concept's latent vector plus noise plus a per-language shift;
    an identical string gets one vector in both languages (an encoder sees the same text)."""
    rng = np.random.default_rng(seed)
    R = len(words[0])
    latent = rng.normal(size=(R, d))
    out = []
    for k, ws in enumerate(words):
        shift = offset * rng.normal(size=d) / math.sqrt(d) * math.sqrt(d)
        out.append(latent + noise * rng.normal(size=(R, d)) + shift)
    for r in range(R):
        if all(ws[r] == words[0][r] for ws in words):
            for k in range(1, len(words)):
                out[k][r] = out[0][r]
    return out


def _plain_delta(vectors, keep) -> tuple[float, float, float]:
    """(SA, chance level, SA - chance) on the kept rows, one word per row, by plain loops (paper formula + closed form)."""
    idx = [r for r in range(len(keep)) if keep[r]]
    L = len(vectors)
    rows = [[[f"w{r}"] for _ in range(L)] for r in idx]
    vec = {(k, f"w{r}"): list(vectors[k][r]) for k in range(L) for r in idx}
    ref = reference_sa(rows, vec)["cosine"]
    means = []
    for k in range(L):
        acc = [0.0] * len(vectors[k][0])
        for r in idx:
            v = vectors[k][r]
            n = math.sqrt(sum(x * x for x in v))
            acc = [a + x / n for a, x in zip(acc, v)]
        means.append([a / len(idx) for a in acc])
    dots = [sum(a * b for a, b in zip(means[i], means[j])) for i in range(L) for j in range(i + 1, L)]
    null = ref["intra"] / (ref["intra"] + 1 - sum(dots) / len(dots))
    return ref["sa"], null, ref["sa"] - null


# --------------------------------------------------------------------------- compare_models


def test_compare_models_scores_are_the_artefact_free_gap_from_plain_loops():
    R, n_id = 60, 20
    words = _words_with_identical(R, n_id)
    a = _random_null(words)
    b = _real(words, seed=1)
    b[1][30] = b[1][31]  # a degenerate vector in model b only: two distinct words share it
    models = {"random": _aw(a, words), "real": _aw(b, words)}
    assert not find_artefacts(models["random"]).excluded_rows[30]
    c = compare_models(models, n_boot=200, n_perm=200, seed=0)
    keep = [r >= n_id and r not in (30, 31) for r in range(R)]
    assert c.excluded_concepts == R - sum(keep) == n_id + 2
    assert any(f"{n_id + 2} of {R} concepts excluded for all models" in n for n in c.notes)
    s = c.scores.set_index("model")
    for name, vecs in (("random", a), ("real", b)):
        sa, null, delta = _plain_delta(vecs, keep)
        np.testing.assert_allclose([s.loc[name, "score"], s.loc[name, "sa_judged"], s.loc[name, "sa_null"]], [delta, sa, null],
                                   rtol=1e-9, err_msg="closed forms in float64 vs plain loops: only summation order differs")
        raw = reference_sa([[[f"w{r}"], [f"w{r}"]] for r in range(R)],
                           {(k, f"w{r}"): list(vecs[k][r]) for k in range(2) for r in range(R)})["cosine"]["sa"]
        np.testing.assert_allclose(s.loc[name, "sa"], raw, rtol=1e-9, err_msg="the raw all-concept SA stays beside it")
        assert s.loc[name, "ci_low"] <= s.loc[name, "score"] <= s.loc[name, "ci_high"]
    row = c.pairs.iloc[0]
    assert row["diff"] == pytest.approx(row.score_a - row.score_b, abs=1e-15)
    assert c.score_label == "SA − chance (artefact-free)"


def test_raw_sa_and_the_corrected_score_rank_a_planted_pair_in_opposite_orders():
    # random vectors on a list with 40% identical strings beat a weak real model on raw SA; on the verdict's quantity
    # the real model is ahead, significantly
    R, n_id = 150, 60
    words = _words_with_identical(R, n_id)
    models = {"random": _aw(_random_null(words), words), "real": _aw(_real(words, seed=3), words)}
    raw = compare_models(models, n_boot=300, n_perm=1000, seed=0, score="sa")
    cor = compare_models(models, n_boot=300, n_perm=1000, seed=0)
    assert raw.scores.model.tolist() == ["random", "real"] and bool(raw.pairs.significant.iloc[0])
    assert cor.scores.model.tolist() == ["real", "random"] and bool(cor.pairs.significant.iloc[0])
    assert cor.bands == [["real"], ["random"]]
    # the raw SA stays beside the score, and is the same number in both
    np.testing.assert_allclose(cor.scores.set_index("model").sa.sort_index(), raw.scores.set_index("model").score.sort_index(),
                               rtol=1e-12, err_msg="the same all-concept SA")


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_random_vectors_are_never_ranked_significantly_above_a_real_model():
    above = 0
    for seed in range(8):
        R, n_id = 100, 40
        words = _words_with_identical(R, n_id)
        models = {"random": _aw(_random_null(words, salt=str(seed)), words), "real": _aw(_real(words, seed=seed, noise=1.5), words)}
        c = compare_models(models, n_boot=200, n_perm=500, seed=seed)
        first = c.pairs.iloc[0]
        above += first.model_a == "random" and bool(first.significant)
    assert above == 0


# --------------------------------------------------------------------------- language pairs


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_pairs_of_random_languages_survive_fdr_on_at_most_about_five_percent_of_seeds():
    langs = tuple(f"l{k}" for k in range(12))
    seeds = range(40)
    with_fdr = without = 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        R = 30
        eye = sp.identity(R, format="csr")
        aw = AlignedWords(langs, tuple(rng.normal(size=(R, 8)) for _ in langs), tuple(eye for _ in langs),
                          tuple(map(str, range(R))))
        t = pair_affinity(aw, n_boot=0, n_perm=199, seed=seed).table
        assert len(t) == 66
        with_fdr += bool(t.survives.any())
        without += bool((t.p_value < 0.05).any())
    # Benjamini-Hochberg controls the family-wise rate under the global null: ~5% of seeds, here at most 4 of 40;
    # uncorrected p-values show a pair "above chance" on most seeds
    assert with_fdr <= 4, with_fdr
    assert without >= 30, without


def test_a_pair_with_identical_strings_is_not_good():
    R, n_id = 120, 70
    langs = ("en", "de", "zh")
    words = (tuple(f"name{r}" if r < n_id else f"e{r}" for r in range(R)),
             tuple(f"name{r}" if r < n_id else f"d{r}" for r in range(R)),
             tuple(f"z{r}" for r in range(R)))
    aw = _aw(_random_null(words), words, langs)
    t = pair_affinity(aw, n_boot=300, n_perm=500, seed=0).table.set_index(["language_a", "language_b"])
    en_de = t.loc[("en", "de")]
    assert en_de.paper_tier in ("good", "great")  # the raw SA is inflated by the 70 shared strings
    # 50 of 120 concepts left: too few for a tier, as the verdict of en, de says (one rule: metrics.pairs)
    assert en_de.n_excluded == n_id and en_de.verdict == "insufficient" and not en_de.survives
    two = affinity_of_words(subset_languages(aw, ("en", "de")), n_boot=300, seed=0)
    assert two.tier == en_de.verdict
    assert t.loc[("en", "zh"), "n_excluded"] == 0
    # the pair's judged numbers from plain loops on its own artefact-free concepts
    sa, null, delta = _plain_delta(_random_null(words)[:2], [r >= n_id for r in range(R)])
    np.testing.assert_allclose([en_de.sa_judged, en_de.sa_null, en_de.delta], [sa, null, delta], rtol=1e-9,
                               err_msg="closed forms vs plain loops")


def _plain_bh(p: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values by the textbook loop: min over k >= i of p_(k) m / k, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adj = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        adj[i] = running
    return adj


def test_pair_p_values_are_the_permutation_test_and_bh_is_the_textbook_rule():
    rng = np.random.default_rng(4)
    R = 40
    e = rng.normal(size=(R, 8))
    arrays = {"en": e, "de": e + 0.5 * rng.normal(size=e.shape), "fr": e + 1.5 * rng.normal(size=e.shape),
              "xx": rng.normal(size=e.shape)}
    langs = tuple(arrays)
    eye = sp.identity(R, format="csr")
    aw = AlignedWords(langs, tuple(arrays.values()), tuple(eye for _ in langs), tuple(map(str, range(R))))
    res = pair_affinity(aw, n_boot=200, n_perm=400, seed=1)
    t = res.table
    from semanscope_nb.metrics.artefacts import subset_languages
    from semanscope_nb.metrics.chance import permutation_test

    for r in t.itertuples():
        assert r.p_value == permutation_test(subset_languages(aw, (r.language_a, r.language_b)), n_perm=400, seed=1).p_value
    np.testing.assert_allclose(t.p_fdr, _plain_bh(t.p_value.tolist()), rtol=1e-12, err_msg="statsmodels vs the textbook loop")
    assert t.survives.tolist() == (t.p_fdr < 0.05).tolist()
    v = t.set_index(["language_a", "language_b"])
    assert v.loc[("en", "de"), "survives"] and v.loc[("en", "de"), "verdict"] in ("good", "great")
    assert not v.loc[("en", "xx"), "survives"] and v.loc[("en", "xx"), "verdict"] == "chance"
    spec = snb.plots.pair_heatmap(t).to_dict()
    marks = {(row["language_a"], row["language_b"]): row["mark"] for row in _rows(spec)}
    assert marks[("en", "de")] == "✓ FDR" and marks[("en", "xx")] == "≈ chance"


def _rows(spec):
    data = spec.get("data", {})
    if "values" in data:
        return data["values"]
    return next(iter(spec["datasets"].values()))


# --------------------------------------------------------------------------- model means, legend, leaderboard


def _sa_with_exclusion(seed=0):
    R, n_id = 80, 20
    words = _words_with_identical(R, n_id)
    vecs = _real(words, seed=seed, noise=0.6, offset=0.0)
    return snb.metrics.affinity.affinity_of_words(_aw(vecs, words), n_boot=200, seed=0)


def test_model_means_legend_and_leaderboard_show_the_verdicts_numbers():
    r = _sa_with_exclusion()
    v = r.verdict_scores
    assert r.chance_excluding is not None and v is r.chance_excluding
    text = snb.plots.sa_legend_text(r)
    assert f"SA − chance (artefact-free) {v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}]" in text
    assert f"SA cosine {r.cosine.sa:.3f}" in text  # the raw SA stays
    row = {"model": "m", "dataset": "d", **r.summary()}
    weak = {**row, "model": "w", "sa_cosine": row["sa_cosine"] + 0.05, "delta": row["delta"] - 0.1,
            "delta_low": row["delta_low"] - 0.1, "delta_high": row["delta_high"] - 0.1, "tier": "good"}
    table = pd.DataFrame([weak, row])
    from semanscope_nb.plots.sa_figures import model_means
    from semanscope_nb.plots.leaderboard import leaderboard_wide

    means = model_means(table)
    assert means.model.tolist() == ["m", "w"]  # ranked by the verdict's gap, not by the higher raw SA of "w"
    assert means.set_index("model").loc["m", "tier"] == r.tier
    assert means.set_index("model").loc["m", "delta"] == v.delta.value
    wide = leaderboard_wide(table)
    assert wide.index.tolist() == ["m", "w"] and "Avg SA − chance (artefact-free)" in wide
    from semanscope_nb.runs.evaluate import format_leaderboard

    board = format_leaderboard(table)
    assert "SA − chance (artefact-free)" in board.splitlines()[0]
    assert f"{v.delta.value:+.3f} [{v.delta.ci[0]:+.3f}, {v.delta.ci[1]:+.3f}] -20" in board
    assert board.splitlines()[2].startswith("m ")
