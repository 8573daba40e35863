"""Issue 22: the original Semanscope tool's "±" (a delta-method error propagation), pinned to its formula.

The reference below is the tool's computation written out as plain code, read from
``digital-duck/semanscope``, ``semanscope/components/semantic_affinity.py`` (commit e102edd):
``compute_horizontal_spread`` (pdist over each language's unique words; mean of the
per-language spreads; their SEM over languages), the per-tuple vertical spreads (pdist
over the tuple's languages), and ``compute_semantic_affinity``'s propagation through
SR = V / H and SA = 1 / (1 + SR).  It works from the dataset's rows and a word -> vector
table, enumerates every tuple with itertools.product and every pair with scipy's pdist,
so it shares no code with ``semanscope_nb.metrics.paper_sem``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist

import semanscope_nb as snb
from semanscope_nb.metrics.paper_sem import (
    DeltaMethodSEM,
    delta_method_sem,
    language_intra_spreads,
    tool_sem,
    tuple_inter_spreads,
)
from semanscope_nb.metrics.spreads import AlignedWords


def tool_formula(rows, vectors, metric):
    """The tool's SA and ± for ``rows`` (row -> language -> list of alternatives) and ``vectors`` (language -> word -> vector).

    Returns (SA, sem_SA, horizontal spreads per language).  Line by line as in the tool,
    except that each word keeps its own vector (the tool gives every alternative of a row
    the vector of the row's first alternative in the horizontal spread).
    """
    languages = list(vectors)

    def spread(d):
        return np.sqrt(np.mean(d ** 2)) if metric == "euclidean" else np.mean(d)

    # compute_horizontal_spread: unique words per language, pdist, spread; mean and SEM over languages
    horizontal = []
    for lang in languages:
        unique = list(dict.fromkeys(w for row in rows for w in row[lang]))
        horizontal.append(spread(pdist(np.array([vectors[lang][w] for w in unique]), metric=metric)))
    horizontal_spread = np.mean(horizontal)
    horizontal_spread_sem = np.std(horizontal, ddof=1) / np.sqrt(len(horizontal))
    # expand_multi_meaning_translations + per-tuple vertical spreads, normalised by the horizontal spread
    vertical_spreads = []
    for row in rows:
        for combo in itertools.product(*[row[lang] for lang in languages]):
            e = np.array([vectors[lang][w] for lang, w in zip(languages, combo)])
            vertical_spreads.append(spread(pdist(e, metric=metric)) / horizontal_spread)
    semantic_ratio = np.mean(vertical_spreads)
    semantic_affinity = 1.0 / (1.0 + semantic_ratio)
    n = len(vertical_spreads)
    vertical_spread_sem = np.std(vertical_spreads, ddof=1) / np.sqrt(n) if n > 1 else 0.0
    avg_vertical_spread_unnormalized = semantic_ratio * horizontal_spread
    vertical_spread_unnormalized_sem = vertical_spread_sem * horizontal_spread
    if semantic_ratio > 0 and horizontal_spread > 0:
        rel_err_vertical = vertical_spread_unnormalized_sem / avg_vertical_spread_unnormalized
        rel_err_horizontal = horizontal_spread_sem / horizontal_spread
        sem_sr = semantic_ratio * np.sqrt(rel_err_vertical ** 2 + rel_err_horizontal ** 2)
    else:
        sem_sr = 0.0
    sem_sa = sem_sr / ((1.0 + semantic_ratio) ** 2)
    return semantic_affinity, sem_sa, horizontal


def aligned_from_rows(rows, vectors):
    """AlignedWords (unique words per language, row incidence) built from the same rows and vector table."""
    languages = tuple(vectors)
    vecs, incs = [], []
    for lang in languages:
        unique = list(dict.fromkeys(w for row in rows for w in row[lang]))
        pos = {w: i for i, w in enumerate(unique)}
        r_idx = [r for r, row in enumerate(rows) for _ in row[lang]]
        c_idx = [pos[w] for row in rows for w in row[lang]]
        incs.append(sp.csr_matrix((np.ones(len(r_idx)), (r_idx, c_idx)), shape=(len(rows), len(unique))))
        vecs.append(np.array([vectors[lang][w] for w in unique]))
    return AlignedWords(languages, tuple(vecs), tuple(incs), tuple(str(r) for r in range(len(rows))))


def random_rows(rng, n_rows, languages, dim=12, max_alts=3, shift=0.6):
    """Rows with 1..max_alts alternatives per language and words shared across rows, vectors near a concept vector."""
    concept = rng.normal(size=(n_rows, dim))
    vectors = {lang: {} for lang in languages}
    rows = []
    for r in range(n_rows):
        row = {}
        for k, lang in enumerate(languages):
            alts = []
            for a in range(int(rng.integers(1, max_alts + 1))):
                word = f"{lang}-{r}-{a}" if rng.random() > 0.1 or r == 0 else f"{lang}-0-0"  # some words repeat
                if word not in alts:
                    alts.append(word)
                if word not in vectors[lang]:
                    vectors[lang][word] = concept[r] + shift * rng.normal(size=dim) + k * 0.3
            row[lang] = alts
        rows.append(row)
    return rows, vectors


@pytest.mark.parametrize("seed,languages", [(0, ("en", "zh")), (1, ("en", "zh")), (2, ("en", "de", "zh")), (3, ("zh", "en"))])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_delta_method_matches_the_tools_formula_on_random_vectors(seed, languages, metric):
    rng = np.random.default_rng(seed)
    rows, vectors = random_rows(rng, 40, languages)
    sa_ref, sem_ref, horizontal = tool_formula(rows, vectors, metric)
    got = tool_sem(aligned_from_rows(rows, vectors), distance=metric)
    # float64 sums over ~1e3 pairs and tuples: agreement to ~1e-13 relative; 1e-10 leaves room, not slack
    np.testing.assert_allclose(got.sa, sa_ref, rtol=1e-10, err_msg="SA = 1/(1+SR) must equal the tool's")
    np.testing.assert_allclose(got.sem, sem_ref, rtol=1e-10, err_msg="the ± must equal the tool's propagation")
    np.testing.assert_allclose(got.intra_by_language, horizontal, rtol=1e-10, err_msg="per-language horizontal spreads")
    np.testing.assert_allclose(got.within_term ** 2 + got.between_language_term ** 2, got.sem ** 2, rtol=1e-12,
                               err_msg="the two terms add in quadrature")
    assert got.n_tuples == sum(math.prod(len(row[lang]) for lang in languages) for row in rows)


def test_between_language_term_for_two_languages_is_half_the_difference_and_does_not_shrink():
    rng = np.random.default_rng(5)
    rows, vectors = random_rows(rng, 480, ("en", "zh"), max_alts=1)
    vectors["zh"] = {w: 0.4 * v + 2.0 for w, v in vectors["zh"].items()}  # zh words sit closer together (cosine)
    few = rows[:30]
    r = tool_sem(aligned_from_rows(few, vectors))
    h = r.intra_by_language
    sr = r.inter_mean / np.mean(h)
    expected = sr * (abs(h[0] - h[1]) / 2 / np.mean(h)) / (1 + sr) ** 2
    np.testing.assert_allclose(r.between_language_term, expected, rtol=1e-12,
                               err_msg="two languages: sem_H = sd(h; ddof=1)/sqrt(2) = |h1 - h2| / 2")
    # 16 times more concepts from the same source: a sampling error shrinks about 4-fold; the between term does not
    many = tool_sem(aligned_from_rows(rows, vectors))
    assert many.within_term < r.within_term / 2.5
    assert many.between_language_term > 0.7 * r.between_language_term
    assert many.between_share > r.between_share
    print(f"\n30 concepts: within {r.within_term:.4f}, between {r.between_language_term:.4f}; "
          f"480: within {many.within_term:.4f}, between {many.between_language_term:.4f}")


def test_delta_method_sem_edge_cases_and_bad_input():
    one = delta_method_sem([0.5, 0.7], [0.4])
    assert one.within_term == 0.0 and one.between_language_term > 0 and one.n_tuples == 1  # the tool: one tuple, sem_V = 0
    same = delta_method_sem([0.6, 0.6], [0.0, 0.0])
    assert same.sa == 1.0 and same.sem == 0.0  # SR = 0: the tool propagates nothing
    with pytest.raises(ValueError, match="at least 2"):
        delta_method_sem([0.5], [0.1, 0.2])
    with pytest.raises(ValueError, match="at least one tuple"):
        delta_method_sem([0.5, 0.6], [])
    with pytest.raises(ValueError, match="finite"):
        delta_method_sem([0.5, float("nan")], [0.1])
    with pytest.raises(ValueError, match="distance"):
        delta_method_sem([0.5, 0.6], [0.1], distance="manhattan")
    r = delta_method_sem([0.5, 0.7], [0.3, 0.4, 0.5], distance="euclidean")
    assert isinstance(r, DeltaMethodSEM) and DeltaMethodSEM.from_dict(r.to_dict()) == r and r.main_score == r.sem


def test_spreads_survive_large_magnitudes():
    rng = np.random.default_rng(3)
    rows, vectors = random_rows(rng, 20, ("en", "zh"))
    aw = aligned_from_rows(rows, vectors)
    big = AlignedWords(aw.languages, tuple(v * 1e150 for v in aw.vectors), aw.incidence, aw.labels)
    for metric in ("cosine", "euclidean"):
        scale = 1e150 if metric == "euclidean" else 1.0
        np.testing.assert_allclose(language_intra_spreads(big, distance=metric), language_intra_spreads(aw, distance=metric) * scale,
                                   rtol=1e-12, err_msg="power-of-two scaling keeps large vectors exact")
        np.testing.assert_allclose(tuple_inter_spreads(big, distance=metric), tuple_inter_spreads(aw, distance=metric) * scale,
                                   rtol=1e-12, err_msg="power-of-two scaling keeps large vectors exact")


def test_semantic_affinity_sem_delta_hook():
    rng = np.random.default_rng(11)
    en = rng.normal(size=(60, 16))
    zh = 0.5 * (en + 0.8 * rng.normal(size=(60, 16))) + 1.0
    boot = snb.metrics.semantic_affinity({"en": en, "zh": zh}, n_boot=100, seed=0)
    delta = snb.metrics.semantic_affinity({"en": en, "zh": zh}, n_boot=100, seed=0, sem="delta")
    rows = [{"en": [f"e{i}"], "zh": [f"z{i}"]} for i in range(60)]
    table = {"en": {f"e{i}": en[i] for i in range(60)}, "zh": {f"z{i}": zh[i] for i in range(60)}}
    for dist in ("cosine", "euclidean"):
        sa_ref, sem_ref, _ = tool_formula(rows, table, dist)
        b, d = getattr(boot, dist), getattr(delta, dist)
        np.testing.assert_allclose(d.sa, sa_ref, rtol=1e-10, err_msg="same SA either way")
        np.testing.assert_allclose(d.sem, sem_ref, rtol=1e-10, err_msg="sem='delta' puts the tool's ± in .sem")
        assert d.ci == b.ci and d.sa == b.sa  # the interval stays the bootstrap's
        assert "between-language" in d.note and "not sampling noise" in d.note
        assert d.sem != b.sem
    assert delta.provenance["parameters"]["sem"] == "delta" and "sem" not in boot.provenance["parameters"]
    with pytest.raises(ValueError, match="sem must be 'bootstrap'"):
        snb.metrics.semantic_affinity({"en": en, "zh": zh}, n_boot=0, sem="propagated")


@pytest.mark.slow
def test_delta_method_on_real_use_vectors_matches_the_tool(paper_dir, shared_cache_dir):
    """DS4 (v0), the file with '|' alternatives, embedded by the real USE model: ours equals the tool's formula."""
    from semanscope_nb.data.reference import paper_file
    from semanscope_nb.runs.task_library import aligned_words

    ds = snb.load_dataset(paper_file("DS4", folder=paper_dir), languages=["en", "zh"])
    emb = snb.embed(ds, "use-multilingual", languages=["en", "zh"], cache=snb.EmbeddingCache(shared_cache_dir), progress=False)
    aw = aligned_words(emb)
    rows = [{"en": list(row[0]), "zh": list(row[1])} for row in ds.rows]
    table = {lang: {w: emb.vectors[lang][w].astype(np.float64) for w in ds.words(lang)} for lang in ("en", "zh")}
    for metric in ("cosine", "euclidean"):
        sa_ref, sem_ref, horizontal = tool_formula(rows, table, metric)
        got = tool_sem(aw, distance=metric)
        np.testing.assert_allclose(got.sa, sa_ref, rtol=1e-9, err_msg="SA on real vectors")
        np.testing.assert_allclose(got.sem, sem_ref, rtol=1e-9, err_msg="the tool's ± on real vectors")
        print(f"\nDS4 v0 USE {metric}: SA {got.sa:.4f}, tool's ± {got.sem:.4f} = sqrt(within {got.within_term:.4f}^2 + "
              f"between-language {got.between_language_term:.4f}^2), intra spreads {np.round(horizontal, 4)}")
        # on DS4 USE squeezes the Chinese single characters together: the between-language term dominates the ±
        assert got.between_language_term > got.within_term
    res = snb.run_task("sa", emb, n_boot=200, seed=0)
    assert res.cosine.sem < tool_sem(aw).sem  # the tool's ± is not the sampling error and is far wider here
