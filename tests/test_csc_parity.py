"""Issue 14: parity with the authors' CSC tool (paper KDE preset, free-form terms, live preview) and the vectorised bootstrap."""

from __future__ import annotations

import html
import math
from dataclasses import replace

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.metrics import csc
from semanscope_nb.metrics.csc.separation import _bootstrap

# --------------------------------------------------------------------------- plain loops, written from the authors' code


def loop_kde(samples, grid, factor):
    """Gaussian KDE as scipy computes it with covariance_factor = factor (the authors' kernel_width), one point at a time."""
    n = len(samples)
    mean = sum(samples) / n
    sd = factor * math.sqrt(sum((x - mean) ** 2 for x in samples) / (n - 1))
    out = []
    for g in grid:
        total = 0.0
        for x in samples:
            total += math.exp(-0.5 * ((g - x) / sd) ** 2)
        out.append(total / (n * sd * math.sqrt(2 * math.pi)))
    return out


def loop_overlap(fuzz, neg, factor, resolution=2001):
    """The authors' density_overlap: grid -1..1 step 2/(resolution-1), each curve normalised to sum 1, sum of minima."""
    grid = [-1.0 + 2.0 * i / (resolution - 1) for i in range(resolution)]
    df, dn = loop_kde(fuzz, grid, factor), loop_kde(neg, grid, factor)
    sf, sn = sum(df), sum(dn)
    return sum(min(a / sf, b / sn) for a, b in zip(df, dn)), [a / sf for a in df]


@pytest.mark.parametrize("case", ["sentence-encoder", "wide", "narrow"])
def test_paper_bandwidth_matches_a_plain_loop_kde(case):
    rng = np.random.default_rng({"sentence-encoder": 1, "wide": 2, "narrow": 3}[case])
    m, s = {"sentence-encoder": ((0.97, 0.9), (0.02, 0.05)), "wide": ((0.5, 0.3), (0.2, 0.25)),
            "narrow": ((0.995, 0.99), (0.002, 0.004))}[case]
    f = np.clip(rng.normal(m[0], s[0], 150), -1, 1)
    n = np.clip(rng.normal(m[1], s[1], 120), -1, 1)
    ref, ref_curve = loop_overlap(f.tolist(), n.tolist(), 0.2, resolution=1001)
    curves = snb.csc_curves(f, n, bandwidth="authors-demo", resolution=1001)
    assert abs(curves.overlap - ref) < 1e-4, (case, curves.overlap, ref)
    assert np.max(np.abs(curves.fuzz - np.array(ref_curve))) < 1e-5
    assert snb.csc_overlap(f, n, bandwidth="authors-demo", method="direct", resolution=1001) == pytest.approx(ref, abs=1e-10)
    assert curves.fuzz_kernel_sd == pytest.approx(0.2 * np.std(f, ddof=1), rel=1e-12)


def test_authors_demo_preset_is_the_fixed_factor_and_differs_from_scott():
    x = np.linspace(0.8, 1.0, 500)
    assert csc.kernel_sd(x, "authors-demo") == pytest.approx(csc.kernel_sd(x, 0.2), rel=1e-15)
    assert csc.kernel_sd(x, None) == pytest.approx(500 ** -0.2 * np.std(x, ddof=1))
    assert csc.kernel_sd(x, "authors-demo") < csc.kernel_sd(x, None)  # n < 3125: the demo's kernel is narrower
    big = np.linspace(0.8, 1.0, 5000)
    assert csc.kernel_sd(big, "authors-demo") > csc.kernel_sd(big, None)  # n > 3125: wider
    assert csc.bandwidth_factor(0.2 ** -5) == pytest.approx(0.2)  # where the two agree
    # the authors' grid, np.arange(-1, 1 + 1/1000, 1/1000), is the default 2001-point grid
    assert np.allclose(np.arange(-1, 1 + 1 / 1000, 1 / 1000), snb.csc_curves([0.9, 0.8], [0.5, 0.6]).grid)
    with pytest.raises(ValueError, match="'authors-demo'"):
        snb.csc_overlap([0.9, 0.8], [0.5, 0.6], bandwidth="papers")


def test_concept_separation_records_the_authors_demo_bandwidth():
    sents = ["The train leaves at noon.", "Water the plants daily.", "Book a table for two."]
    r = snb.concept_separation(sents, "random-null", language="en", bandwidth="authors-demo", n_boot=30, cache=False)
    assert r.provenance["parameters"]["bandwidth"] == "authors-demo"
    assert r.curves.fuzz_kernel_sd == pytest.approx(0.2 * np.std(r.sims("fuzz"), ddof=1))
    back = snb.CSCResult.from_dict(r.to_dict())
    assert back.overlap == r.overlap
    # the old name still works, says where the 0.2 comes from, and is recorded under its new name
    with pytest.warns(DeprecationWarning, match="authors' demo app; paper 002 itself states no bandwidth"):
        old = snb.metrics.concept_separation(sents, "random-null", language="en", bandwidth="paper", n_boot=30, cache=False)
    assert old.provenance["parameters"]["bandwidth"] == "authors-demo"
    np.testing.assert_allclose(old.overlap, r.overlap, rtol=0, atol=0, err_msg="the alias must run the same kernel")
    with pytest.warns(DeprecationWarning, match="authors-demo"):
        assert snb.metrics.csc_overlap([0.9, 0.8, 0.85], [0.5, 0.6, 0.4], bandwidth="paper") == \
            snb.metrics.csc_overlap([0.9, 0.8, 0.85], [0.5, 0.6, 0.4], bandwidth="authors-demo")


# --------------------------------------------------------------------------- free-form terms

SV = ["Jag dricker kaffe varje morgon.", "Hon läser en bok på tåget.", "Vi åker till stan i dag.",
      "Barnen leker i parken.", "Han skriver ett brev."]


def test_swedish_terms_without_built_in_rules():
    with pytest.raises(csc.UnsupportedLanguageError):
        csc.get_language_rules("sv")
    r = snb.concept_separation(SV, "random-null", language="sv", fuzz_terms="en | ett", negation_terms=["inte"],
                               n_boot=40, cache=False)
    assert "sv" not in csc.LANGUAGE_RULES  # nothing registered behind the user's back
    assert r.language == "sv" and 0 <= r.overlap <= 1
    p = r.perturbations
    for row in p.itertuples():
        words = SV[row.sentence].split()
        expected = " ".join(words[: row.position] + [row.term] + words[row.position :])  # plain insertion before word
        assert row.text == expected
        assert row.term in (("en", "ett") if row.kind == "fuzz" else ("inte",))
    for i, s in enumerate(SV):  # X = 3 per kind, fewer only when the sentence offers fewer (position, term) pairs
        n_words = len(s.split())
        assert (p[(p.sentence == i) & (p.kind == "fuzz")].shape[0], p[(p.sentence == i) & (p.kind == "negation")].shape[0]) == (
            min(3, 2 * n_words), min(3, n_words))
    assert r.provenance["parameters"]["fuzz_terms"] == ["en", "ett"]
    assert r.provenance["language_rules"]["negations"] == ["inte"]


def test_from_terms_matches_the_keyword_route():
    rules = csc.LanguageRules.from_terms("en | ett", "inte", code="sv", name="Swedish")
    a = csc.perturb_corpus(SV, language="sv", rules=rules, seed=3)
    b = snb.concept_separation(SV, "random-null", language="sv", fuzz_terms=["en", "ett"], negation_terms="inte",
                               seed=3, n_boot=0, cache=False).perturbations
    assert [p.text for p in a] == b.text.tolist()


def test_terms_replace_a_built_in_languages_own():
    r = snb.concept_separation(["The shop is open.", "Manage a team."], "random-null", language="en",
                               negation_terms="never", n_boot=0, cache=False)
    neg = r.perturbations[r.perturbations.kind == "negation"]
    assert set(neg.term) == {"never"} and set(r.perturbations[r.perturbations.kind == "fuzz"].term) <= {"a", "the"}
    assert csc.get_language_rules("en").negations == ("not",)  # the table is untouched


@pytest.mark.parametrize("kwargs, match", [
    ({"fuzz_terms": "en | ett"}, "negation_terms is missing"),
    ({"fuzz_terms": " | ", "negation_terms": "inte"}, "fuzz_terms holds no term"),
    ({"fuzz_terms": 3, "negation_terms": "inte"}, "fuzz_terms must be"),
])
def test_bad_terms_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        snb.concept_separation(SV, "random-null", language="sv", n_boot=0, cache=False, **kwargs)


# --------------------------------------------------------------------------- the vectorised bootstrap


def test_resampled_stats_match_a_loop_over_resamples():
    rng = np.random.default_rng(7)
    S = 60
    fs, ns = np.repeat(np.arange(S), rng.integers(1, 4, S)), np.repeat(np.arange(S), rng.integers(0, 4, S))
    fz = np.clip(rng.normal(0.97, 0.02, fs.size), -1, 1)
    ng = np.clip(rng.normal(0.9, 0.06, ns.size), -1, 1)
    counts = rng.multinomial(S, np.ones(S) / S, size=20)
    counts[0] = 0
    counts[0, 5] = S  # one sentence drawn S times: its few values, still a KDE
    for bw in (None, "authors-demo", 0.5):
        st = csc.resampled_csc_stats(fz, fs, ng, ns, counts, bandwidth=bw)
        for b in range(counts.shape[0]):
            f, g = np.repeat(fz, counts[b, fs]), np.repeat(ng, counts[b, ns])
            if g.size == 0:
                assert math.isnan(st.overlap[b]) and math.isnan(st.separation[b])
                continue
            ref = snb.csc_overlap(f, g, bandwidth=bw, method="direct") if np.ptp(f) > 0 and np.ptp(g) > 0 else snb.csc_overlap(f, g)
            assert abs(st.overlap[b] - ref) < 1e-4, (bw, b, st.overlap[b], ref)
            assert st.separation[b] == np.median(f) - np.median(g)


def test_bootstrap_interval_holds_the_loop_statistics():
    rng = np.random.default_rng(11)
    S = 30
    fs = ns = np.repeat(np.arange(S), 3)
    fz, ng = np.clip(rng.normal(0.95, 0.03, fs.size), -1, 1), np.clip(rng.normal(0.85, 0.06, ns.size), -1, 1)
    ci, sep_ci, notes = _bootstrap(fz, fs, ng, ns, S, n_boot=300, seed=0, confidence=0.9, method="percentile",
                                   resolution=2001, bandwidth=None, kde_method="auto")
    boot = np.random.default_rng(0)  # the same resamples, drawn as scipy draws them, through the one-resample path
    idx = boot.integers(0, S, (300, S))
    vals = []
    for row in idx:
        c = np.bincount(row, minlength=S)
        vals.append(snb.csc_overlap(np.repeat(fz, c[fs]), np.repeat(ng, c[ns])))
    lo, hi = np.percentile(vals, [5, 95])
    assert ci[0] == pytest.approx(lo, abs=2e-4) and ci[1] == pytest.approx(hi, abs=2e-4)
    assert sep_ci[0] < sep_ci[1] and not notes


# --------------------------------------------------------------------------- preview, panel, progress


def test_preview_cosines_match_a_plain_cosine_loop():
    p = csc.perturbation_preview("Jag dricker kaffe varje morgon.", "random-null", language="sv",
                                 fuzz_terms="en | ett", negation_terms="inte", max_per_sentence=4, cache=False)
    enc = snb.load_model("random-null")
    orig = enc.encode(["Jag dricker kaffe varje morgon."])[0]
    assert len(p.texts) == 8 and set(p.kinds) == {"fuzz", "negation"}
    for text, cos in zip(p.texts, p.cosines):
        v = enc.encode([text])[0]
        ref = sum(a * b for a, b in zip(orig, v)) / math.sqrt(sum(a * a for a in orig) * sum(b * b for b in v))
        assert cos == pytest.approx(ref, abs=1e-6)
    expected = [t.text for k in ("fuzz", "negation") for t in csc.perturb_sentence(
        "Jag dricker kaffe varje morgon.", language="sv", kind=k, max_per_sentence=4,
        rules=csc.LanguageRules.from_terms("en | ett", "inte", code="sv"))]
    assert list(p.texts) == expected  # the variants a corpus run would make


def test_panel_preview_and_model_choice(tmp_path):
    pytest.importorskip("ipywidgets")
    from semanscope_nb.widgets.csc_panel import CSCPanel

    p = CSCPanel(model="random-null", corpus="csc-skills-en", cache=snb.EmbeddingCache(tmp_path / "c"))
    p.language_code.value = "sv"
    p.preview_sentence.value = "Jag dricker kaffe."  # live: no button
    assert p.preview_result is None and "give the terms directly" in p.preview_output.value
    p.fuzz_terms.value, p.negation_terms.value = "en | ett", "inte"
    assert p.preview_result is not None and p.preview_result.language == "sv"
    assert all(html.escape(t) in p.preview_output.value for t in p.preview_result.texts)
    assert f"{p.preview_result.cosines[0]:.4f}" in p.preview_output.value
    p.preview_sentence.value = ""  # (no live preview: loading an st: model here would import torch)
    p.other_model.value = "st:sentence-transformers/LaBSE"
    s = p.state()
    assert s.model == "st:sentence-transformers/LaBSE" and (s.language, s.fuzz_terms, s.negation_terms) == ("sv", "en | ett", "inte")
    assert CSCPanel().with_state(s).state() == s
    p.bandwidth_rule.value = "authors-demo"
    assert p.state().bandwidth == "authors-demo"
    assert CSCPanel().with_state(replace(s, bandwidth="paper")).state().bandwidth == "authors-demo"  # the old name
    assert p.model_picker.dropdown.options  # the explore panel's picker, with registered (offline and API) models


def test_grid_shows_one_progress_bar(capsys):
    corpora = [snb.SentenceCorpus.from_sentences(SV[:3], language="sv", name="a"),
               snb.SentenceCorpus.from_sentences(SV[2:], language="sv", name="b")]
    g = snb.concept_separation_grid(["random-null", "tfidf-word"], corpora, n_boot=20, cache=False, progress=True,
                                    fuzz_terms="en | ett", negation_terms="inte")
    err = capsys.readouterr().err
    assert len(g.results) == 4 and not g.failures
    assert err.count("CSC grid") >= 1 and "4/4" in err and "embedding with" not in err
