"""Concept Separation Curves (paper 002): overlap vs a direct implementation, perturbations, bad input, real models."""

from __future__ import annotations

import doctest
import hashlib
import json
import math

import numpy as np
import pytest
import scipy.stats

import semanscope_nb as snb
from semanscope_nb.errors import DatasetError
from semanscope_nb.metrics import csc
from semanscope_nb.models.encoders import Encoder

# --------------------------------------------------------------------------- the reference, straight from the paper


def reference_overlap(fuzz, neg, resolution=2001, bw_method=None):
    """Eq. 1-2 written out: scipy KDE on a grid over [-1, 1], normalise each curve to sum 1, sum the pointwise minimum."""
    grid = [-1.0 + 2.0 * i / (resolution - 1) for i in range(resolution)]
    d_f = scipy.stats.gaussian_kde(np.asarray(fuzz, float), bw_method=bw_method)(grid)
    d_n = scipy.stats.gaussian_kde(np.asarray(neg, float), bw_method=bw_method)(grid)
    total_f = sum(d_f)
    total_n = sum(d_n)
    overlap = 0.0
    for i in range(resolution):
        overlap += min(d_f[i] / total_f, d_n[i] / total_n)
    return overlap


def _samples(rng, case):
    spec = {
        "tight-near-1": ((0.98, 0.005, 300), (0.95, 0.02, 280)),
        "wide": ((0.5, 0.2, 200), (0.3, 0.25, 150)),
        "large-n": ((0.97, 0.02, 10_000), (0.9, 0.05, 10_000)),
        "small-n": ((0.9, 0.05, 7), (0.85, 0.05, 5)),
        "skewed": ((0.99, 0.003, 500), (0.9, 0.1, 500)),
    }[case]
    f, n = (np.clip(rng.normal(m, s, k), -1, 1) for m, s, k in spec)
    if case == "skewed":
        f = 1 - np.abs(f - 0.99) * 5
    return f, n


@pytest.mark.parametrize("case", ["tight-near-1", "wide", "large-n", "small-n", "skewed"])
@pytest.mark.parametrize("bandwidth", [None, "silverman", 0.4])
def test_overlap_matches_direct_reference_on_random_samples(case, bandwidth):
    rng = np.random.default_rng(abs(hash((case, str(bandwidth)))) % 2**32)
    f, n = _samples(rng, case)
    ref = reference_overlap(f, n, bw_method=bandwidth)
    direct = snb.csc_overlap(f, n, bandwidth=bandwidth, method="direct")
    fast = snb.csc_overlap(f, n, bandwidth=bandwidth)  # auto: binned / windowed
    assert direct == pytest.approx(ref, abs=1e-12)
    assert abs(fast - ref) < 1e-3, (case, bandwidth, fast, ref)
    assert 0.0 <= fast <= 1.0


@pytest.mark.parametrize("method", ["binned", "windowed"])
def test_each_fast_route_agrees_with_scipy(method):
    rng = np.random.default_rng(7)
    f, n = np.clip(rng.normal(0.95, 0.03, 2000), -1, 1), np.clip(rng.normal(0.9, 0.05, 1500), -1, 1)
    ref = reference_overlap(f, n)
    assert abs(snb.csc_overlap(f, n, method=method) - ref) < 1e-3
    c = snb.csc_curves(f, n, method=method)
    assert c.routes == (method, method)
    assert c.fuzz.sum() == pytest.approx(1.0) and c.negation.sum() == pytest.approx(1.0)


def test_kernel_width_is_scipys():
    rng = np.random.default_rng(1)
    x = rng.normal(0.9, 0.05, 123)
    for bw in (None, "scott", "silverman", 0.25, 2.0):
        expected = math.sqrt(scipy.stats.gaussian_kde(x, bw_method=bw).covariance[0, 0])
        assert csc.kernel_sd(x, bw) == pytest.approx(expected, rel=1e-12)


def test_overlap_is_one_for_identical_and_near_zero_for_far_apart():
    rng = np.random.default_rng(0)
    x = np.clip(rng.normal(0.9, 0.05, 400), -1, 1)
    assert snb.csc_overlap(x, x.copy()) == pytest.approx(1.0, abs=1e-9)
    assert snb.csc_overlap(x, x.copy(), method="direct") == pytest.approx(1.0, abs=1e-9)
    far = np.clip(rng.normal(-0.5, 0.02, 300), -1, 1)
    near_one = np.clip(rng.normal(0.95, 0.01, 300), -1, 1)
    assert snb.csc_overlap(near_one, far) < 1e-6
    assert reference_overlap(near_one, far) < 1e-6


def test_zero_spread_curve_is_a_point_mass():
    same = [1.0, 1.0, 1.0, 1.0]
    c = snb.csc_curves(same, same)
    assert c.routes == ("point-mass", "point-mass") and c.overlap == pytest.approx(1.0)
    assert c.fuzz.sum() == pytest.approx(1.0) and c.fuzz[-1] == pytest.approx(1.0)
    assert snb.csc_overlap(same, np.random.default_rng(0).normal(0.2, 0.05, 50)) < 1e-9
    assert snb.csc_overlap([0.5], [0.5]) == pytest.approx(1.0)  # one value each: a point mass, not an error


@pytest.mark.parametrize("bandwidth", [0, -0.1, float("nan"), float("inf"), "foo", True])
def test_bad_bandwidth(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        snb.csc_overlap([0.9, 0.8], [0.5, 0.6], bandwidth=bandwidth)


@pytest.mark.parametrize("resolution", [9, 0, -5, 10.5, True])
def test_bad_resolution(resolution):
    with pytest.raises(ValueError, match="resolution"):
        snb.csc_overlap([0.9, 0.8], [0.5, 0.6], resolution=resolution)


def test_resolution_10_is_accepted_and_empty_or_nan_similarities_are_not():
    assert 0 <= snb.csc_overlap([0.9, 0.8], [0.5, 0.6], resolution=10) <= 1
    with pytest.raises(ValueError, match="fuzz_sims is empty"):
        snb.csc_overlap([], [0.5])
    with pytest.raises(ValueError, match="neg_sims holds 1 NaN"):
        snb.csc_overlap([0.5, 0.6], [0.5, float("nan")])
    with pytest.raises(ValueError, match="method"):
        snb.csc_overlap([0.9, 0.8], [0.5, 0.6], method="fast")


# --------------------------------------------------------------------------- perturbations, hand-worked


def test_fuzz_candidates_every_position_and_article():
    got = csc.candidate_perturbations("Manage a team.", language="en", kind="fuzz")
    assert got == [
        (0, "a", "a Manage a team."), (0, "the", "the Manage a team."),
        (1, "a", "Manage a a team."), (1, "the", "Manage the a team."),
        (2, "a", "Manage a a team."), (2, "the", "Manage a the team."),
    ]
    neg = csc.candidate_perturbations("Manage a team.", language="en", kind="negation")
    assert [t for _, _, t in neg] == ["not Manage a team.", "Manage not a team.", "Manage a not team."]


def test_up_to_x_applied_each_one_new_sentence():
    s = "Manage a team of engineers."  # 5 words: 10 fuzz and 5 negation combinations
    cand_f = csc.candidate_perturbations(s, language="en", kind="fuzz")
    cand_n = csc.candidate_perturbations(s, language="en", kind="negation")
    assert len(cand_f) == 10 and len(cand_n) == 5
    for x in (1, 3, 5):
        fz = snb.perturb_sentence(s, language="en", kind="fuzz", max_per_sentence=x, seed=4)
        assert len(fz) == x
        assert len({(p.position, p.term) for p in fz}) == x  # no combination twice
        for p in fz:
            assert (p.position, p.term, p.text) in cand_f
            words = p.text.split()
            assert words.pop(p.position) == p.term and " ".join(words) == s  # removing the term gives the original
    assert len(snb.perturb_sentence(s, language="en", kind="negation", max_per_sentence=50)) == 5  # fewer than X available
    with pytest.raises(ValueError, match="max_per_sentence"):
        snb.perturb_sentence(s, language="en", kind="fuzz", max_per_sentence=0)


def test_one_word_sentence_has_one_insertion_point():
    fz = snb.perturb_sentence("Run.", language="en", kind="fuzz", max_per_sentence=3)
    ng = snb.perturb_sentence("Run.", language="en", kind="negation", max_per_sentence=3)
    assert sorted(p.text for p in fz) == ["a Run.", "the Run."] and {p.position for p in fz} == {0}
    assert [p.text for p in ng] == ["not Run."]


def test_german_dutch_spanish_rules():
    de = csc.candidate_perturbations("Der Zug fährt.", language="de", kind="fuzz")
    assert len(de) == 9 and {t for _, t, _ in de} == {"der", "die", "das"}
    assert [t for _, _, t in csc.candidate_perturbations("Ik werk.", language="nl", kind="negation")] == ["niet Ik werk.", "Ik niet werk."]
    assert [t for _, _, t in csc.candidate_perturbations("Ella canta.", language="Spanish", kind="negation")][1] == "Ella no canta."


def test_french_particle_and_wrap_modes():
    assert [t for _, _, t in csc.candidate_perturbations("Je mange.", language="fr", kind="negation")] == ["pas Je mange.", "Je pas mange."]
    wrap = [t for _, _, t in csc.candidate_perturbations("Je mange une pomme.", language="fr", kind="negation", negation="wrap")]
    assert wrap[1] == "Je ne mange pas une pomme."
    assert wrap[3] == "Je mange une ne pomme pas."  # "pas" before the final full stop
    elided = [t for _, _, t in csc.candidate_perturbations("Il aime le chocolat.", language="fr", kind="negation", negation="wrap")]
    assert elided[1] == "Il n'aime pas le chocolat."


def test_grammatical_negation_after_auxiliaries():
    got = csc.candidate_perturbations("The shop is open and we can help.", language="en", kind="negation", negation="grammatical")
    assert [(p, t) for p, _, t in got] == [(3, "The shop is not open and we can help."), (7, "The shop is open and we can not help.")]
    assert csc.candidate_perturbations("Manage a team.", language="en", kind="negation", negation="grammatical") == []
    with pytest.raises(snb.UnsupportedLanguageError, match="defined for: en"):
        csc.candidate_perturbations("Ich kann schwimmen.", language="de", kind="negation", negation="grammatical")
    with pytest.raises(snb.UnsupportedLanguageError, match="defined for: fr"):
        csc.candidate_perturbations("I eat.", language="en", kind="negation", negation="wrap")


def test_seeded_and_independent_of_corpus_order():
    s = ["Manage a team of engineers today.", "The train leaves at noon from platform two."]
    a = snb.perturb_corpus(s, language="en", seed=1)
    assert a == snb.perturb_corpus(s, language="en", seed=1)
    b = snb.perturb_corpus(s[::-1], language="en", seed=1)
    texts = lambda ps, i: [p.text for p in ps if p.sentence == i]  # noqa: E731
    assert texts(a, 0) == texts(b, 1) and texts(a, 1) == texts(b, 0)
    draws = {tuple(p.text for p in snb.perturb_corpus(s, language="en", seed=k)) for k in range(6)}
    assert len(draws) > 1  # the seed changes the selection


def test_unsupported_language_errors_list_supported_ones():
    with pytest.raises(snb.UnsupportedLanguageError) as exc:
        snb.perturb_sentence("我喝茶", language="zh", kind="fuzz")
    msg = str(exc.value)
    assert "Chinese has no articles" in msg and "en, es, fr" in msg and "segmentation='character'" in msg
    with pytest.raises(snb.UnsupportedLanguageError, match="no CSC rule set for language 'xx'.*Supported: de, en"):
        snb.get_language_rules("xx")
    assert snb.get_language_rules("English").code == "en"


def test_rule_table_is_user_extendable():
    rules = snb.LanguageRules("sv", "Swedish", articles=("en", "ett"), negations=("inte",))
    try:
        snb.register_language_rules(rules)
        assert "sv" in snb.supported_languages()
        assert [p.text for p in snb.perturb_sentence("Jag simmar.", language="sv", kind="negation", max_per_sentence=5)]
        with pytest.raises(ValueError, match="already exist"):
            snb.register_language_rules(rules)
        zh = snb.LanguageRules("zh-test", "Chinese stress test", articles=("的",), negations=("不",), segmentation="character")
        snb.register_language_rules(zh)
        got = csc.candidate_perturbations("我喝茶", language="zh-test", kind="negation")
        assert [t for _, _, t in got] == ["不我喝茶", "我不喝茶", "我喝不茶"]
    finally:
        snb.LANGUAGE_RULES.pop("sv", None)
        snb.LANGUAGE_RULES.pop("zh-test", None)
    with pytest.raises(ValueError, match="at least one term"):
        snb.LanguageRules("xx", "X", articles=(), negations=("no",))


# --------------------------------------------------------------------------- dataset level with plumbing fakes


class BagEncoder(Encoder):
    """Plumbing fake: sum of seeded word vectors; texts in ``zero`` embed to 0; 'not' ignored in texts with 'cat'."""

    model_id = "bag-fake"

    def __init__(self, zero=(), dim=32):
        super().__init__()
        self.zero, self.dim = set(zero), dim

    def _word(self, w):
        seed = int.from_bytes(hashlib.blake2b(w.lower().strip(".").encode(), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).normal(size=self.dim)

    def _encode(self, texts):
        out = []
        for t in texts:
            if t in self.zero:
                out.append(np.zeros(self.dim))
                continue
            words = [w for w in t.split() if not (w == "not" and "cat" in t)]
            out.append(sum(self._word(w) for w in words))
        return np.array(out)


SENTS = ["The cat sleeps on the sofa.", "Manage a team of engineers.", "Plan the weekly budget.",
         "The train leaves at noon.", "Water the plants every morning.", "Run."]


def test_dataset_level_result_and_counts():
    r = snb.concept_separation(SENTS, BagEncoder(), language="en", n_boot=200, seed=3, cache=False)
    n_words = [len(s.split()) for s in SENTS]
    assert r.n_fuzz == sum(min(3, 2 * n) for n in n_words) and r.n_negation == sum(min(3, n) for n in n_words)
    assert r.n_dropped == {"original_zero_vectors": 0, "fuzz": 0, "negation": 0}
    assert r.median_fuzz == pytest.approx(np.median(r.sims("fuzz")))
    assert r.separation == pytest.approx(r.median_fuzz - r.median_negation)
    assert r.overlap == pytest.approx(reference_overlap(r.sims("fuzz"), r.sims("negation")), abs=1e-3)
    assert 0 <= r.overlap <= 1 and r.ci[0] <= r.ci[1]
    # the cat sentence ignores its negation: the most negation-insensitive case, similarity exactly 1
    worst = r.insensitive_cases(2)
    assert worst.sentence[0] == "The cat sleeps on the sofa." and worst.closest_negation_similarity[0] == pytest.approx(1.0)
    assert worst.negation_gap[0] < 0
    table = r.sentence_table()
    assert list(table.n_fuzz) == [min(3, 2 * n) for n in n_words]
    p = r.provenance
    assert p["model"] == "bag-fake" and p["parameters"]["max_per_sentence"] == 3 and len(p["corpus_sha256"]) == 64
    assert p["language_rules"]["articles"] == ["a", "the"] and "semanscope_nb" in p["packages"]


def test_seeded_bootstrap_is_reproducible():
    kw = dict(language="en", n_boot=150, cache=False)
    a = snb.concept_separation(SENTS, BagEncoder(), seed=5, **kw)
    b = snb.concept_separation(SENTS, BagEncoder(), seed=5, **kw)
    c = snb.concept_separation(SENTS, BagEncoder(), seed=6, **kw)
    assert a.ci == b.ci and a.overlap == b.overlap
    assert c.ci != a.ci  # another seed: other perturbations and resamples
    pct = snb.concept_separation(SENTS, BagEncoder(), seed=5, ci_method="percentile", **kw)
    assert pct.overlap == a.overlap and pct.provenance["parameters"]["ci_method"] == "percentile"


def test_zero_vectors_are_dropped_and_reported_never_scored():
    sents = ["Nothing to see.", "Plan the weekly budget.", "The train leaves at noon."]
    perts = snb.perturb_corpus(sents, language="en", seed=0)
    one_variant = next(p.text for p in perts if p.sentence == 1 and p.kind == "fuzz")
    enc = BagEncoder(zero={"Nothing to see.", one_variant})
    r = snb.concept_separation(sents, enc, language="en", n_boot=50, seed=0, cache=False)
    assert r.n_dropped == {"original_zero_vectors": 1, "fuzz": 3 + 1, "negation": 3}
    dropped = r.perturbations[r.perturbations.status == "zero-vector"]
    assert len(dropped) == 7 and dropped.similarity.isna().all()  # NaN, not -1 or 0
    assert r.n_fuzz == 9 - 4 and r.n_negation == 9 - 3
    assert any("zero vectors" in n for n in r.notes)
    assert r.summary()["n_dropped"] == 7


def test_real_tfidf_zero_vector_is_dropped():
    """A text with no known term (only punctuation) is a zero TF-IDF vector: its cosines are undefined."""
    r = snb.concept_separation(["Manage a team.", "Plan the budget.", "?!"], "tfidf-word", language="en", n_boot=30, cache=False)
    assert r.n_dropped == {"original_zero_vectors": 1, "fuzz": 2, "negation": 1}
    assert r.n_fuzz == 6 and r.n_negation == 6


def test_length_filter_and_buckets():
    r = snb.concept_separation(SENTS, BagEncoder(), language="en", n_boot=0, cache=False, min_words=4,
                               length_buckets=(0, 5, 6))
    assert r.sentences == [s for s in SENTS if len(s.split()) >= 4]
    assert [b["bucket"] for b in r.buckets] == ["0-5", "5-6", ">=6"]
    assert sum(b["n_sentences"] for b in r.buckets) == r.n_sentences
    assert sum(b["n_fuzz"] for b in r.buckets) == r.n_fuzz
    assert math.isnan(r.ci[0])  # n_boot=0: no interval
    with pytest.raises(ValueError, match="left no sentence"):
        snb.concept_separation(SENTS, BagEncoder(), language="en", cache=False, min_words=40)
    with pytest.raises(ValueError, match="min_words"):
        snb.concept_separation(SENTS, BagEncoder(), language="en", cache=False, min_words=0)


def test_bad_dataset_input():
    enc = BagEncoder()
    with pytest.raises(DatasetError, match="holds no sentences"):
        snb.concept_separation([], enc, language="en", cache=False)
    with pytest.raises(DatasetError, match="holds no sentences"):
        snb.concept_separation(["", "   "], enc, language="en", cache=False)
    with pytest.raises(ValueError, match="language= is required"):
        snb.concept_separation(SENTS, enc, cache=False)
    with pytest.raises(snb.UnsupportedLanguageError, match="Supported"):
        snb.concept_separation(SENTS, enc, language="tlh", cache=False)
    with pytest.raises(ValueError, match="bandwidth"):
        snb.concept_separation(SENTS, enc, language="en", bandwidth=0, cache=False)
    with pytest.raises(ValueError, match="resolution"):
        snb.concept_separation(SENTS, enc, language="en", resolution=5, cache=False)
    with pytest.raises(ValueError, match="n_boot"):
        snb.concept_separation(SENTS, enc, language="en", n_boot=-1, cache=False)
    with pytest.raises(ValueError, match="no sentence could be negated"):
        snb.concept_separation(["Manage a team."], enc, language="en", negation="grammatical", cache=False)
    # empty lines are skipped and reported; one-word sentences are fine
    r = snb.concept_separation(["Run.", "", "Eat.", "  "], enc, language="en", n_boot=20, cache=False)
    assert r.sentences == ["Run.", "Eat."] and r.n_fuzz == 4 and r.n_negation == 2
    assert any("2 empty item(s) skipped" in n for n in r.notes)


def test_result_round_trips_through_json_and_is_written_atomically(tmp_path):
    r = snb.concept_separation(SENTS, BagEncoder(), language="en", n_boot=50, cache=False, length_buckets=(0, 5))
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    back = snb.CSCResult.from_dict(d)
    assert back.summary() == r.summary() and back.buckets[0]["n_sentences"] == r.buckets[0]["n_sentences"]
    assert np.array_equal(back.curves.fuzz, r.curves.fuzz)
    assert back.sentence_table().equals(r.sentence_table())
    path = r.save(tmp_path / "out" / "r.json")
    assert snb.CSCResult.load(path).overlap == r.overlap
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_runs_through_the_cache(tmp_path):
    cache = snb.EmbeddingCache(tmp_path / "c")
    enc = BagEncoder()
    snb.concept_separation(SENTS, enc, language="en", n_boot=10, cache=cache)
    calls = enc.calls
    r = snb.concept_separation(SENTS, enc, language="en", n_boot=10, cache=cache)
    assert enc.calls == calls and r.provenance["embedding"]["n_encoded"] == 0


def test_grid_records_failures():
    corpora = [snb.SentenceCorpus.from_sentences(SENTS + ["The shop is open."], language="en", name="a"),
               snb.SentenceCorpus.from_sentences(["Manage a team."], language="en", name="b")]
    g = snb.concept_separation_grid([BagEncoder()], corpora, n_boot=10, cache=False, negation="grammatical")
    assert ("bag-fake", "b") in g.failures and "no sentence could be negated" in g.failures[("bag-fake", "b")]
    assert list(g.table.corpus) == ["a"]


def test_docstring_examples_run():
    import semanscope_nb.data.sentences
    import semanscope_nb.plots.csc_charts

    for module in (csc, semanscope_nb.data.sentences, semanscope_nb.plots.csc_charts):
        res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert res.attempted > 0 and res.failed == 0, module.__name__
    assert "zh-stress" not in snb.LANGUAGE_RULES


# --------------------------------------------------------------------------- real models


@pytest.fixture(scope="module")
def english40():
    return snb.load_sentence_corpus("csc-everyday-en").sample(40, seed=0)


@pytest.mark.slow
def test_use_on_40_english_sentences(english40, shared_cache_dir):
    cache = snb.EmbeddingCache(shared_cache_dir)
    use = snb.concept_separation(english40, "use-multilingual", n_boot=500, seed=0, cache=cache, progress=False)
    tfidf = snb.concept_separation(english40, "tfidf-word", n_boot=500, seed=0, cache=cache, progress=False)
    null = snb.concept_separation(english40, "random-null", n_boot=500, seed=0, cache=cache, progress=False)
    print(f"\nUSE on 40 everyday-en sentences: overlap {use.overlap:.4f} CI {use.ci}, separation {use.separation:.4f}; "
          f"tfidf-word {tfidf.overlap:.4f} (sep {tfidf.separation:.4f}); random-null {null.overlap:.4f}")
    for r in (use, tfidf, null):
        assert 0.0 <= r.overlap <= 1.0 and 0.0 <= r.ci[0] <= r.ci[1] <= 1.0
        assert sum(r.n_dropped.values()) == 0
        # a percentile-type interval need not contain a biased estimate: when it does not, the result says so
        inside = r.ci[0] <= r.overlap <= r.ci[1]
        assert inside != any("lies outside its BCa interval" in n for n in r.notes)
        # the toolkit's overlap on real similarities equals eq. 1-2 written out with scipy
        assert abs(r.overlap - reference_overlap(r.sims("fuzz"), r.sims("negation"))) < 1e-3
    # robust on these corpora (checked on all four bundled sets before writing this test): USE moves a sentence
    # much further for "not" than for an article; a bag of words barely tells them apart; noise cannot at all
    assert use.ci[0] <= use.overlap <= use.ci[1]  # USE's bootstrap spread dwarfs its bias on these sentences
    assert use.separation > tfidf.separation
    assert use.ci[1] < null.ci[0]


def test_tfidf_fitted_on_originals_cannot_see_an_unseen_negation():
    """With the IDF fitted on the originals only, "not" is out of vocabulary: every negated variant equals its original."""
    sents = ["Manage a team.", "Plan the budget.", "Water the plants."]
    r = snb.concept_separation(sents, "tfidf-word", language="en", n_boot=0, cache=False, tfidf_fit="originals")
    assert np.allclose(r.sims("negation"), 1.0, atol=1e-6)  # equal vectors, up to float32 rounding
    assert r.curves.negation[-2:].sum() > 0.999  # the whole negated curve sits at similarity 1
    seen = snb.concept_separation(sents, "tfidf-word", language="en", n_boot=0, cache=False, tfidf_fit="all")  # fit on all texts
    assert np.all(seen.sims("negation") < 1.0)
