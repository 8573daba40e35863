"""The verdict a result prints: null-aware tier, artefact exclusion, small samples, round trips."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.metrics.affinity import SAResult
from semanscope_nb.runs.evaluate import aligned_words


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("dataset", ["conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives"])
@pytest.mark.parametrize("languages", [None, ["en", "zh"]], ids=["all-languages", "en-zh"])
def test_seeded_random_vectors_get_the_chance_verdict_on_every_bundled_dataset(dataset, languages):
    r = snb.dataset_affinity(dataset, "random-null", languages=languages, n_boot=300, cache=False, progress=False)
    assert r.tier == "chance", r.verdict
    assert r.verdict.startswith("indistinguishable from chance")
    assert r.verdict_scores.delta.contains(0.0)
    if r.excluded_concepts:  # with the identical strings left in, even random vectors sit above their chance level
        assert not r.chance.delta.contains(0.0) and r.chance.delta.value > 0


def test_identical_strings_inflate_the_paper_tier_but_not_the_verdict():
    # 40% of the concepts are the same string in every language (names, digits, loanwords)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(150):
        if i % 5 < 2:
            rows.append({"en": f"Name{i}", "de": f"Name{i}", "fr": f"Name{i}"})
        else:
            rows.append({"en": f"en{i}", "de": f"de{i}", "fr": f"fr{i}"})
    ds = snb.dataset_from_frame(pd.DataFrame(rows), name="shared-strings")
    r = snb.dataset_affinity(ds, "random-null", n_boot=300, cache=False, progress=False, seed=int(rng.integers(100)))
    assert r.paper_tier in ("good", "great") and r.cosine.sa > 0.55  # the paper's tier is fooled
    assert r.tier == "chance"  # the verdict is not
    assert r.excluded_concepts == {"identical-string": 60}
    assert r.chance_excluding is not None and abs(r.chance_excluding.sa.value - 0.5) < 0.01
    assert any("surface identity: 60 of 150" in n for n in r.diagnostics.notes)
    assert "judged without the 60 identical-string concepts" in r.verdict


@pytest.mark.slow
def test_a_tokenizer_unknown_vector_is_found_and_left_out_of_the_verdict():
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"])
    vectors, _, _ = snb.embed_dataset(ds, "use-multilingual")
    vectors = {lang: dict(v) for lang, v in vectors.items()}  # languages may share one text -> vector map
    zh_words = sorted(ds.words("zh"))
    unk = vectors["zh"][zh_words[0]]
    hit = zh_words[: len(zh_words) // 3]  # a third of the Chinese words become <unk>
    for w in hit:
        vectors["zh"][w] = unk.copy()
    aw = aligned_words(ds, vectors)
    r = snb.metrics.affinity.affinity_of_words(aw, n_boot=300, seed=0)
    assert "degenerate-vector" in r.excluded_concepts and r.excluded_concepts["degenerate-vector"] >= len(hit) // 2
    note = next(n for n in r.diagnostics.notes if n.startswith("degenerate vectors in 'zh'"))
    assert int(note.split(": ")[1].split(" distinct")[0]) >= len(hit)  # the <unk> group (and USE's own few)
    clean = snb.dataset_affinity(ds, "use-multilingual", n_boot=300, progress=False)
    # the verdict rests on the untouched concepts, so it stays close to the clean model's score
    assert abs(r.chance_excluding.sa.value - clean.cosine.sa) < abs(r.cosine.sa - clean.cosine.sa) + 0.02


@pytest.mark.slow
def test_a_verdict_resting_on_a_minority_of_concepts_gives_no_tier():
    # MiniLM is English-only: its tokenizer maps most Chinese words of a dataset to [UNK] or to a few vectors
    ds = snb.load_dataset("conceptual-space", languages=["en", "zh"])
    with pytest.warns(snb.LanguageSupportWarning, match="does not list zh"):
        r = snb.dataset_affinity(ds, "all-minilm-l6-v2", n_boot=200, progress=False)
    judged = r.n_concepts - sum(r.excluded_concepts.values())
    assert judged == r.judged_concepts and judged < r.n_concepts / 2
    assert r.tier == "insufficient", r.verdict
    assert r.verdict.startswith(f"insufficient: only {judged} of {r.n_concepts} concepts")
    use = snb.dataset_affinity(ds, "use-multilingual", n_boot=200, progress=False)
    assert "insufficient" not in use.verdict and use.tier in ("good", "great")  # a few artefacts left out: a tier


@pytest.mark.slow
def test_a_real_model_is_far_above_its_chance_level():
    r = snb.dataset_affinity("edge-cases", "use-multilingual", languages=["en", "de", "zh"], n_boot=300, progress=False)
    assert r.tier == r.paper_tier == "great"
    assert r.chance.delta.ci[0] > 0.1 and 0 < r.chance.corrected.value < 1
    assert r.verdict.startswith("great: SA ")


def test_small_samples_warn_and_report_tier_flips():
    rng = np.random.default_rng(3)
    e = rng.normal(size=(20, 16))
    r = snb.semantic_affinity({"en": e, "de": e + 1.3 * rng.normal(size=e.shape)}, n_boot=400, seed=0)
    note = next(n for n in r.diagnostics.notes if "fewer than 50" in n)
    assert "BCa" in note and "flips in" in note
    assert 0.0 <= r.chance.tier_flip_rate <= 1.0
    bca = snb.semantic_affinity({"en": e, "de": e + 1.3 * rng.normal(size=e.shape)}, n_boot=400, seed=0, method="BCa")
    assert bca.chance is not None and math.isfinite(bca.cosine.ci[0])


def test_a_threshold_inside_the_interval_is_said():
    rng = np.random.default_rng(1)
    for scale in np.linspace(1.5, 4.0, 26):  # find a space whose interval straddles 0.60
        e = rng.normal(size=(40, 16))
        r = snb.semantic_affinity({"en": e, "de": e + scale * rng.normal(size=e.shape)}, n_boot=300, seed=0)
        if r.tier not in ("chance", "below chance") and r.cosine.ci[0] < 0.6 <= r.cosine.ci[1]:
            assert "good or great: the interval straddles 0.60" in r.verdict
            return
    pytest.fail("no straddling case found")


def test_verdict_round_trips_through_json():
    rng = np.random.default_rng(2)
    e = rng.normal(size=(60, 8))
    r = snb.semantic_affinity({"en": e, "de": e + 0.5 * rng.normal(size=e.shape)}, n_boot=200, seed=0)
    back = SAResult.from_dict(__import__("json").loads(__import__("json").dumps(r.to_dict())))
    assert back.tier == r.tier and back.verdict == r.verdict and back.paper_tier == r.paper_tier
    assert back.chance.delta.ci == pytest.approx(r.chance.delta.ci) and back.language_centred_sa == pytest.approx(r.language_centred_sa)
    s = r.summary()
    assert {"sa_null", "delta", "delta_low", "delta_high", "corrected", "paper_tier", "verdict"} <= set(s)


def test_with_thresholds_changes_the_paper_tier_and_keeps_the_chance_verdict():
    r = snb.dataset_affinity("edge-cases", "random-null", languages=["en", "de"], n_boot=200, cache=False, progress=False)
    strict = r.with_thresholds(snb.TierThresholds(great=0.9, good=0.8))
    assert strict.paper_tier == "non-aligned" and strict.tier == "chance"


@pytest.mark.slow
def test_scoring_a_language_the_model_does_not_support_warns():
    from semanscope_nb.models.registry import LanguageSupportWarning

    with pytest.warns(LanguageSupportWarning, match="does not list zh"):
        snb.dataset_affinity("edge-cases", "all-minilm-l6-v2", languages=["en", "zh"], n_boot=0, progress=False)
    assert snb.unsupported_languages("use-multilingual", ["en", "zh", "ka"]) == ["ka"]


def test_a_row_with_too_many_tuples_is_refused_before_anything_is_embedded():
    class MustNotEncode(snb.Encoder):
        model_id = "must-not-encode"

        def _load(self):
            return True

        def _encode(self, texts):
            raise AssertionError("embedding started")

    alts = "|".join(f"w{i}" for i in range(60))
    ds = snb.dataset_from_frame(pd.DataFrame({"en": [alts, "a", "b"], "de": [alts, "c", "d"], "fr": [alts, "e", "f"]}), name="big")
    with pytest.raises(snb.DatasetError, match="MAX_TUPLES_PER_ROW"):
        snb.dataset_affinity(ds, MustNotEncode(), n_boot=0, cache=False, progress=False)


def test_cli_sa_prints_the_verdict_and_the_two_stage_report(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SEMANSCOPE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "semanscope_nb", "sa", "--model", "random-null", "--dataset", "edge-cases",
                          "--languages", "en,de", "--n-boot", "200", "--report", "--worst", "0"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "tier chance   (paper's tier:" in out.stdout and "verdict: indistinguishable from chance" in out.stdout
    assert "Stage 1 (cosine SA, null-aware verdict)" in out.stdout and "Do not use this model" in out.stdout
