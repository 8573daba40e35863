"""BCWS / SCWS readers, Spearman's rho with its bootstrap, the leave-one-out human upper bound (paper 001).

The metric tests compare against deliberately plain implementations written here: ranks with ties
averaged by loops, Pearson of the ranks, cosines by loops, the bootstrap resample by resample.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from semanscope_nb.data.word_similarity import ContextPairs, read_bcws, read_scws
from semanscope_nb.errors import ArgumentError, DatasetError, EmbeddingError
from semanscope_nb.metrics.word_similarity import (
    AnnotatorAgreement,
    WordSimilarityScore,
    annotator_agreement,
    contextual_word_similarity,
    spearman_rho,
)
from semanscope_nb.results import Interval, Result

# --------------------------------------------------------------------------- plain reference implementations


def plain_ranks(values):
    """1-based ranks, tied values sharing the average of the ranks they span (loops, no library)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + 1 + j + 1) / 2
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    return ranks


def plain_spearman(x, y):
    """Spearman's rho = Pearson correlation of the tie-averaged ranks (written out)."""
    rx, ry = plain_ranks(list(x)), plain_ranks(list(y))
    n = len(rx)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else float("nan")


def plain_tie_groups(values, tol):
    """The near-tie rule's groups by a loop: sorted values, a new group wherever the gap to the previous exceeds tol."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out, group = [0.0] * len(values), 0
    for pos, i in enumerate(order):
        if pos and values[i] - values[order[pos - 1]] > tol:
            group += 1
        out[i] = float(group)
    return out


def plain_cosine(a, b):
    dot = sum(p * q for p, q in zip(a, b))
    return dot / math.sqrt(sum(p * p for p in a)) / math.sqrt(sum(q * q for q in b))


def plain_loo(annotators):
    """Leave-one-out agreement: each annotator's rho vs the mean of the others, then their mean."""
    n, k = len(annotators), len(annotators[0])
    per = []
    for j in range(k):
        mine = [annotators[i][j] for i in range(n)]
        others = [round(sum(annotators[i][m] for m in range(k) if m != j) / (k - 1), 9) for i in range(n)]  # ties: 9 decimals
        per.append(plain_spearman(mine, others))
    return sum(per) / k, per


# --------------------------------------------------------------------------- readers: good files


def bcws_text(n=3, *, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = rng.integers(0, 11, size=11).astype(float)
        out += ["n v", f"他把<銀行{i}>的門關了。", f"The <bank{i}> closed -> early.", " ".join(f"{v:.1f}" for v in s) + f" {s.mean():.2f}"]
    return "\n".join(out) + "\n"


def test_read_bcws_small_file(tmp_path):
    p = tmp_path / "bcws.txt"
    p.write_text(bcws_text(3), encoding="utf-8")
    d = read_bcws(p)
    assert (d.name, d.language1, d.language2, len(d), d.n_annotators) == ("bcws", "zh", "en", 3, 11)
    assert d.targets1 == ("銀行0", "銀行1", "銀行2") and d.targets2 == ("bank0", "bank1", "bank2")
    assert d.sentences2[0] == "The bank0 closed -> early."  # the lone '>' of the arrow is plain text
    assert d.lines == (1, 5, 9) and d.pos[0] == ("n", "v")
    np.testing.assert_allclose(d.annotators.mean(axis=1), d.scores, atol=0.005 + 1e-12,
                               err_msg="the printed average is the mean rounded to 2 decimals")
    t = d.converted("t2s")
    assert t.targets1 == ("银行0", "银行1", "银行2") and t.sentences1[0] == "他把银行0的门关了。"
    assert t.targets2 == d.targets2 and t.name == "bcws-t2s"
    back = t.converted("s2t")
    assert back.targets1 == d.targets1
    assert d.head(2).targets2 == ("bank0", "bank1") and d.subset([2, 0]).lines == (9, 1)
    assert len(d.sample(2, seed=1)) == 2 and d.sample(10) is d


def test_read_scws_small_file(tmp_path):
    p = tmp_path / "scws.txt"
    p.write_text("the river bank was muddy\t2\t7.25\nshe robbed a bank\t3\t7.25\n"
                 "A cat\t1\t1.0\nA B C dog\t3\t1.0\n\n", encoding="utf-8")
    d = read_scws(p)
    assert (len(d), d.language1, d.language2, d.annotators) == (2, "en", "en", None)
    assert d.targets1 == ("bank", "cat") and d.targets2 == ("bank", "dog")
    assert d.spans1[0] == (10, 14) and d.lines == (1, 3)
    np.testing.assert_allclose(d.scores, [7.25, 1.0], rtol=0, atol=0, err_msg="scores parse exactly")


# --------------------------------------------------------------------------- readers: bad input, each named


BCWS_GOOD = ["n v", "他把<銀行>關了。", "The <bank> closed.", "5 5 5 5 5 5 5 5 5 5 5 5.00"]


@pytest.mark.parametrize("lines, line_no, words", [
    (BCWS_GOOD[:3], None, "not a multiple of 4"),
    (["n"] + BCWS_GOOD[1:], 1, "POS tags"),
    ([BCWS_GOOD[0], "他把銀行關了。"] + BCWS_GOOD[2:], 2, "exactly one target"),
    ([BCWS_GOOD[0], "<他>把<銀行>關了。"] + BCWS_GOOD[2:], 2, "found 2"),
    (BCWS_GOOD[:2] + ["The bank closed."] + BCWS_GOOD[3:], 3, "English sentence"),
    (BCWS_GOOD[:2] + ["The < > closed."] + BCWS_GOOD[3:], 3, "blank"),
    (BCWS_GOOD[:3] + ["5 5 5 5 5 5 5 5 5 5 5"], 4, "11 annotator scores"),
    (BCWS_GOOD[:3] + ["5 5 5 5 5 5 5 5 5 5 5 6.0"], 4, "not the average"),
    (BCWS_GOOD[:3] + ["5 5 5 5 5 x 5 5 5 5 5 5.0"], 4, "field 6 is not a number"),
    (BCWS_GOOD[:3] + ["5 5 5 5 5 5 5 5 5 5 12 5.6363"], 4, "outside 0..10"),
    (BCWS_GOOD + BCWS_GOOD[:2] + ["The <bank> closed."] + ["1 1 1 1 1 1 1 1 1 1 1 nan"], 8, "outside 0..10"),
])
def test_bcws_bad_input_names_file_and_line(tmp_path, lines, line_no, words):
    p = tmp_path / "bad-bcws.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        read_bcws(p)
    msg = str(e.value)
    assert "bad-bcws.txt" in msg and words in msg, msg
    if line_no is not None:
        assert f"line {line_no}:" in msg, msg


@pytest.mark.parametrize("text, line_no, words", [
    ("a b\t0\t1.0\n", None, "odd"),
    ("a b\t0\t1.0\nc d\t1\n", 2, "3 tab-separated fields"),
    ("a b\tx\t1.0\nc d\t1\t1.0\n", 1, "not an integer"),
    ("a b\t0\t1.0\nc d\t2\t1.0\n", 2, "outside the sentence's 2 tokens"),
    ("a b\t0\t1.0\nc  d\t1\t1.0\n", 2, "token 1 is empty"),
    ("a b\t0\t1.0\nc d\t1\t2.0\n", 1, "different scores"),
    ("a b\t0\t1.0\nc d\t1\tlots\n", 2, "not a number"),
    ("a b\t0\t1.0 2.0\nc d\t1\t1.0\n", 1, "one score"),
    ("\t0\t1.0\nc d\t1\t1.0\n", 1, "sentence is empty"),
    ("\n\n", None, "empty"),
])
def test_scws_bad_input_names_file_and_line(tmp_path, text, line_no, words):
    p = tmp_path / "bad-scws.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        read_scws(p)
    msg = str(e.value)
    assert "bad-scws.txt" in msg and words in msg, msg
    if line_no is not None:
        assert f"line {line_no}" in msg or f"lines {line_no}-" in msg, msg


def test_readers_missing_file_and_bad_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMANSCOPE_SHARED_DATA", str(tmp_path))
    with pytest.raises(DatasetError, match="bcws.txt: file not found.*SEMANSCOPE_SHARED_DATA"):
        read_bcws()
    with pytest.raises(DatasetError, match=r"contextual[/\\]scws.txt: file not found"):
        read_scws()
    p = tmp_path / "scws.txt"
    p.write_bytes(b"caf\xe9 b\t0\t1.0\nc d\t1\t1.0\n")
    with pytest.raises(DatasetError, match="scws.txt.*line 1"):
        read_scws(p)


# --------------------------------------------------------------------------- Spearman, cosine, bootstrap


def test_spearman_matches_plain_ranks_with_ties():
    rng = np.random.default_rng(3)
    for trial in range(20):
        n = int(rng.integers(3, 40))
        x = rng.integers(0, 6, size=n).astype(float)  # many ties on both sides
        y = x + rng.integers(-3, 4, size=n)
        want = plain_spearman(x, y)
        got = spearman_rho(x, y)
        if math.isnan(want):
            assert math.isnan(got)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"rho of tie-averaged ranks, trial {trial}")
    rows_x, rows_y = rng.normal(size=(5, 30)), rng.normal(size=(5, 30))
    np.testing.assert_allclose(spearman_rho(rows_x, rows_y), [plain_spearman(a, b) for a, b in zip(rows_x, rows_y)],
                               rtol=1e-12, atol=1e-12, err_msg="one rho per row, as separate calls give")
    assert math.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))  # a constant sample has no order


def test_word_similarity_matches_loops_and_its_bootstrap_resamples():
    rng = np.random.default_rng(0)
    n, dims = 80, 12
    a = rng.normal(size=(n, dims))
    b = a + rng.normal(scale=1.5, size=(n, dims))
    cos = [plain_cosine(a[i], b[i]) for i in range(n)]
    human = np.round(np.array(cos) * 5 + rng.normal(scale=0.5, size=n), 1)  # rounded: ties among the scores
    r = contextual_word_similarity(a, b, human, n_boot=150, seed=7)
    np.testing.assert_allclose(r.cosines, cos, rtol=1e-12, err_msg="cosines, row by row")
    np.testing.assert_allclose(r.rho, plain_spearman(cos, human), rtol=1e-12, err_msg="rho as the paper defines it")
    # the bootstrap: the same resamples (one block of <= 200 rows from the seeded generator), ranked one by one
    idx = np.random.default_rng(7).integers(0, n, size=(150, n))
    boot = [plain_spearman([cos[i] for i in row], [human[i] for i in row]) for row in idx]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    np.testing.assert_allclose([r.ci.low, r.ci.high], [lo, hi], rtol=1e-10, err_msg="percentile interval of the same resamples")
    np.testing.assert_allclose(r.sem, np.std(boot, ddof=1), rtol=1e-10, err_msg="bootstrap std")
    assert isinstance(r, Result) and isinstance(r.ci, Interval) and r.ci.contains(r.rho) and r.main_score == r.rho
    again = contextual_word_similarity(a, b, human, n_boot=150, seed=7)
    assert again.ci == r.ci  # seeded: the same interval
    other = contextual_word_similarity(a, b, human, n_boot=150, seed=8)
    assert other.ci != r.ci


def test_word_similarity_after_an_alignment_maps_each_side_as_its_language():
    from semanscope_nb.metrics.alignment import fit_alignment

    rng = np.random.default_rng(1)
    en = rng.normal(size=(60, 6))
    R = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    zh = en @ R + 0.3 * rng.normal(size=(60, 6))
    al = fit_alignment(en, zh, source_language="en", target_language="zh", mim=True)
    human = rng.uniform(0, 10, size=60)
    r = contextual_word_similarity(zh, en, human, alignment=al, languages=("zh", "en"), n_boot=0)
    A, B = al.map_target(zh), al.map_source(en)
    want = plain_spearman([plain_cosine(A[i], B[i]) for i in range(60)], human)
    np.testing.assert_allclose(r.rho, want, rtol=1e-12, err_msg="zh side mapped as target, en as source")
    assert r.provenance["alignment"]["mim"] is True and math.isnan(r.ci.low)
    with pytest.raises(ArgumentError, match="languages="):
        contextual_word_similarity(zh, en, human, alignment=al, n_boot=0)


def test_word_similarity_bad_input():
    a = np.ones((5, 3))
    with pytest.raises(ArgumentError, match="one row per pair"):
        contextual_word_similarity(a, a, [1, 2, 3], n_boot=0)
    b = a.copy()
    b[3] = np.nan
    with pytest.raises(EmbeddingError, match="vectors2: row 3 holds NaN"):
        contextual_word_similarity(a, b, [1, 2, 3, 4, 5], n_boot=0)
    b = a.copy()
    b[2] = 0
    with pytest.raises(EmbeddingError, match="pair 2 has a zero vector"):
        contextual_word_similarity(a, b, [1, 2, 3, 4, 5], n_boot=0)
    with pytest.raises(ArgumentError, match="n_boot"):
        contextual_word_similarity(a, a, [1, 2, 3, 4, 5], n_boot=-1)
    with pytest.raises(ArgumentError, match="scores: entry 1"):
        contextual_word_similarity(a, a, [1, np.nan, 3, 4, 5], n_boot=0)


def test_annotator_agreement_matches_plain_loo():
    rng = np.random.default_rng(2)
    truth = rng.uniform(0, 10, size=40)
    S = np.clip(np.round(truth[:, None] + rng.normal(scale=2.0, size=(40, 5))), 0, 10)
    a = annotator_agreement(S, n_boot=60, seed=4)
    want, per = plain_loo(S.tolist())
    np.testing.assert_allclose(a.rho, want, rtol=1e-12, err_msg="mean leave-one-out rho")
    np.testing.assert_allclose(a.per_annotator, per, rtol=1e-12, err_msg="each annotator vs the others' mean")
    idx = np.random.default_rng(4).integers(0, 40, size=(60, 40))
    boot = [plain_loo(S[row].tolist())[0] for row in idx]
    np.testing.assert_allclose([a.ci.low, a.ci.high], np.percentile(boot, [2.5, 97.5]), rtol=1e-10,
                               err_msg="the same resamples of pairs")
    assert a.n_annotators == 5 and a.n_pairs == 40
    with pytest.raises(ArgumentError, match="annotators"):
        annotator_agreement(S[:, :1])


def test_results_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    r = contextual_word_similarity(a, b, rng.uniform(size=20), n_boot=20, provenance={"dataset": "toy"})
    back = Result.load(r.save(tmp_path / "r.json"))
    assert isinstance(back, WordSimilarityScore) and back.ci == r.ci and back.provenance["dataset"] == "toy"
    np.testing.assert_allclose(back.cosines, r.cosines, rtol=1e-15, err_msg="JSON keeps float64")
    h = annotator_agreement(rng.uniform(size=(10, 3)), n_boot=10)
    hb = Result.load(h.save(tmp_path / "h.json"))
    assert isinstance(hb, AnnotatorAgreement) and hb.rho == h.rho and hb.summary()["n_annotators"] == 3


def test_context_pairs_sample_rejects_bad_n():
    d = ContextPairs("t", "en", "en", ("a",) * 3, ((0, 1),) * 3, ("b",) * 3, ((0, 1),) * 3, np.arange(3.0), None,
                     (1, 3, 5), "t", "0")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        d.sample(0)


# --------------------------------------------------------------------------- presets, chart


@pytest.mark.slow  # tries to load the hub models (torch + transformers), which fails offline as it should
def test_paper_settings_need_a_hub_and_download_nothing(monkeypatch):
    from semanscope_nb.errors import ModelLoadError
    from semanscope_nb.runs.word_similarity import PAPER_001_SETTINGS, paper_001_encoders

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert [s.name for s in PAPER_001_SETTINGS.values() if s.offline] == ["offline-e5-small"]
    encs = paper_001_encoders("mono-en->mono-zh")  # built, nothing loaded
    assert encs["en"].model_id == "hf:bert-base-cased" and encs["zh"].model_id == "hf:bert-base-chinese"
    with pytest.raises(ModelLoadError, match="bert-base-cased"):
        encs["en"].encode_tokens(["a test"], "en", cache=False)
    multi = paper_001_encoders("multi-en->multi-zh")
    assert multi["en"] is multi["zh"]  # one shared model, built once
    with pytest.raises(ArgumentError, match="unknown paper-001 setting 'bert'.*offline-e5-small"):
        paper_001_encoders("bert")


def test_sweep_chart_layers_and_references():
    import pandas as pd

    from semanscope_nb.plots.word_similarity_charts import word_similarity_sweep_chart

    rows = [("bcws", 0, "none", "-", "orig", 0.5), ("bcws", 0, "none", "-", "no context", 0.3)]
    for n in (100, 300):
        for kind, sig in (("avg", "wa"), ("token", "sa")):
            for m in ("procrustes", "MIM"):
                rows.append(("bcws", n, kind, sig, m, 0.4 + n / 1000))
    t = pd.DataFrame(rows, columns=["dataset", "n_sentences", "anchors", "signal", "mapping", "rho"])
    t["ci_low"], t["ci_high"], t["n_anchors"] = t["rho"] - 0.05, t["rho"] + 0.05, 10
    spec = word_similarity_sweep_chart(t, human=0.83).to_dict()
    data = spec["datasets"]
    curve = next(v for v in data.values() if v and "setting" in v[0])
    refs = next(v for v in data.values() if v and "reference" in v[0])
    assert {r["setting"] for r in curve} == {"avg-type wa", "token sa"} and len(curve) == 8
    assert {r["reference"] for r in refs} == {"orig", "no context", "human upper bound"}
    assert spec["layer"][1]["encoding"]["x"]["scale"]["type"] == "log"
    with pytest.raises(ArgumentError, match="no rows for dataset 'scws'"):
        word_similarity_sweep_chart(t, dataset="scws")
    with pytest.raises(ArgumentError, match="lacks column"):
        word_similarity_sweep_chart(t.drop(columns="ci_low"))


# --------------------------------------------------------------------------- the real files, a small model budget


@pytest.mark.slow
def test_real_files_read_and_score_with_e5_small():
    from semanscope_nb.data.word_similarity import contextual_data_dir
    from semanscope_nb.runs.word_similarity import encode_targets, evaluate_word_similarity

    folder = contextual_data_dir()
    for name in ("bcws.txt", "scws.txt"):
        if not (folder / name).exists():
            pytest.skip(f"{folder / name} not found (set SEMANSCOPE_SHARED_DATA)")
    bcws, scws = read_bcws(), read_scws()
    assert (len(bcws), len(scws), bcws.n_annotators) == (2091, 2003, 11)
    assert (bcws.targets1[0], bcws.targets2[0], bcws.scores[0]) == ("降低", "cut", 2.05)
    assert scws.targets1[:2] == ("Brazil", "Brazil") and scws.targets2[:2] == ("nut", "triple")
    assert bcws.lines[376] == 1505 and bcws.sentences2[376].startswith("-> refer to: List of architecture schools in brazil")  # the stray '>'
    # the human upper bound on all 2,091 pairs against the plain leave-one-out
    h = annotator_agreement(bcws.annotators, n_boot=0)
    _, per = plain_loo(bcws.annotators.tolist())
    np.testing.assert_allclose(h.per_annotator, per, rtol=1e-12, err_msg="real annotators, plain LOO")
    # a small model budget: 150 BCWS pairs (Chinese converted to Simplified) and 100 SCWS pairs
    small = bcws.converted("t2s").sample(150, seed=0)
    assert all(a == b for a, b in zip(small.targets2, [bcws.targets2[i] for i in range(len(bcws)) if bcws.lines[i] in small.lines]))
    r = evaluate_word_similarity(small, "multilingual-e5-small", n_boot=200, seed=0)
    V1, V2 = encode_targets(small, "multilingual-e5-small")  # from the cache now
    cos = [plain_cosine(V1[i], V2[i]) for i in range(len(small))]
    d, u = V1.shape[1], 2.0 ** -24  # float32 vectors: cosines within 2 (d + 2) u / (1 - d u) tie (metrics.ties)
    groups = plain_tie_groups(cos, 2 * (d + 2) * u / (1 - d * u))
    np.testing.assert_allclose(r.rho, plain_spearman(groups, small.scores.tolist()), rtol=1e-9,
                               err_msg="rho of the real vectors' tie-grouped cosines, by loops")
    assert r.n_pairs == 150 and r.ci.low > 0  # e5-small's cosines rank BCWS pairs as humans do, beyond noise
    assert r.provenance["dataset"] == "bcws-t2s" and r.provenance["encoders"]["zh"]["model"] == "multilingual-e5-small"
    s = evaluate_word_similarity(scws.sample(100, seed=0), "multilingual-e5-small", n_boot=200, seed=0)
    assert s.n_pairs == 100 and s.ci.low > 0 and s.ci.contains(s.rho)
    alone = evaluate_word_similarity(small, "multilingual-e5-small", context=False, n_boot=0)
    assert alone.provenance["context"] is False and np.isfinite(alone.rho)


def test_sweep_result_round_trips(tmp_path):
    import pandas as pd

    from semanscope_nb.runs.word_similarity import WordSimilaritySweep

    t = pd.DataFrame([{"dataset": "bcws", "n_sentences": 0, "anchors": "none", "signal": "-", "mapping": "orig", "rho": 0.5,
                       "ci_low": 0.4, "ci_high": 0.6, "sem": 0.05, "n_pairs": 9, "n_anchors": None},
                      {"dataset": "bcws", "n_sentences": 100, "anchors": "avg", "signal": "wa", "mapping": "MIM", "rho": 0.55,
                       "ci_low": 0.45, "ci_high": 0.65, "sem": 0.05, "n_pairs": 9, "n_anchors": 300}])
    h = annotator_agreement(np.random.default_rng(0).uniform(size=(9, 3)), n_boot=5)
    s = WordSimilaritySweep(t, h, ("a note",), {"total": 1.0}, {"seed": 0})
    back = Result.load(s.save(tmp_path / "sweep.json"))
    assert isinstance(back, WordSimilaritySweep) and isinstance(back.human, AnnotatorAgreement)
    assert back.best_bcws_rho == 0.55 and back.row("bcws", "MIM", anchors="avg", signal="wa")["n_anchors"] == 300
    assert back.notes == ("a note",) and back.human.rho == h.rho
    with pytest.raises(KeyError, match="no row for scws"):
        back.row("scws")
