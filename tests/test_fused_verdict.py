"""Every verdict statistic from one pass: the fused statistics equal the separate computations they replace.

The artefact-free scores are the full set's multinomial resamples with the left-out
concepts weighing 0 (``RowSubset``); the separate computation is a second
``Spreads`` built on ``subset_rows(aw, keep)`` and evaluated on the kept columns of
the same counts.  Both are sums of the same float64 products in another order (the
subset's are the full set's plus a correction on the words of left-out rows), so
they agree to a few units of rounding per term: relative 1e-12 leaves a margin of
about 1000 over the float64 unit roundoff times the concepts summed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from reference import reference_sa
from semanscope_nb.memo import Memo
from semanscope_nb.metrics.artefacts import subset_rows
from semanscope_nb.metrics.chance import (
    NullParts,
    euclidean_chance_by_permutation,
    null_aware_statistics,
    resample_counts,
    subset_statistics,
    surface_null,
    verdict_bootstrap,
)
from semanscope_nb.metrics.row_order import canonical_rows
from semanscope_nb.metrics.spreads import AlignedWords, RowSubset, Spreads, affinity_ratio
from statistics_check import assert_statistics_close

RTOL = 1e-12
KEYS = ("sa", "sa_null", "delta", "corrected", "sa_euclidean", "sa_null_euclidean")


def _aw_with_alternatives(seed: int, R: int = 70, d: int = 12, shared: bool = True, words_fr: int = 50
                          ) -> tuple[AlignedWords, list]:
    """Three languages: one word per row, two alternatives in some rows, and words shared by several rows
    (the French word of row r is that of row r - ``words_fr``)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(R, d))
    rows = []
    for r in range(R):
        de = [f"d{r}"] + ([f"d{r}b"] if r % 4 == 0 else [])
        fr = [f"f{r % words_fr}" if shared else f"f{r}"] + ([f"f{r}x"] if r % 7 == 0 else [])
        rows.append([[f"e{r}"], de, fr])
    vecs, incs, words = [], [], []
    vec_of = {}
    for lang in range(3):
        uniq = list(dict.fromkeys(w for row in rows for w in row[lang]))
        pos = {w: i for i, w in enumerate(uniq)}
        V = np.empty((len(uniq), d))
        for w, i in pos.items():
            r = int("".join(ch for ch in w[1:] if ch.isdigit()))
            V[i] = base[r % R] + (0.3 + 0.4 * lang) * rng.normal(size=d) + (2.0 if lang == 2 else 0.0)
            vec_of[(lang, w)] = V[i].tolist()
        r_idx = [r for r, row in enumerate(rows) for _ in row[lang]]
        c_idx = [pos[w] for row in rows for w in row[lang]]
        incs.append(sp.csr_matrix((np.ones(len(r_idx)), (r_idx, c_idx)), shape=(R, len(uniq))))
        vecs.append(V)
        words.append(tuple(uniq))
    aw = AlignedWords(("en", "de", "fr"), tuple(vecs), tuple(incs), tuple(f"c{r}" for r in range(R)), words=tuple(words))
    return aw, (rows, vec_of)


def _separate(aw: AlignedWords, keep: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """The computation the fused pass replaces: a second Spreads on the kept concepts, on their counts."""
    sub = subset_rows(aw, keep)
    spreads = Spreads(sub)
    return null_aware_statistics(spreads, NullParts(sub, spreads), counts[:, keep])


@pytest.mark.parametrize("share_kept", [0.85, 0.3])  # few left out: the correction route; most left out: the direct one
def test_subset_statistics_equal_a_separate_bootstrap_replicate_for_replicate(share_kept):
    aw, _ = _aw_with_alternatives(1)
    rng = np.random.default_rng(2)
    keep = rng.random(aw.n_rows) < share_kept
    keep[:3] = True
    spreads = Spreads(aw)
    parts = NullParts(aw, spreads)
    subset = RowSubset(spreads, keep)
    assert any(info.get("direct") for info in subset.langs) == (share_kept < 0.5)
    for counts in resample_counts(aw.n_rows, 60, seed=4, batch=25):
        null_aware_statistics(spreads, parts, counts)  # the full set's products for these counts, as the pass makes them
        got = subset_statistics(subset, counts)
        want = _separate(aw, keep, counts)
        for k in KEYS:
            np.testing.assert_allclose(got[k], want[k], rtol=RTOL, atol=0,
                                       err_msg=f"{k}: left-out concepts as zero weights = a separate subset bootstrap")


def _four_languages_with_a_kept_subset() -> tuple[AlignedWords, np.ndarray]:
    """The alternatives data set (en, de) plus two one-word-per-row languages near en (es, it), and ~70% kept rows."""
    aw, _ = _aw_with_alternatives(12, R=50)
    rng = np.random.default_rng(13)
    eye = sp.identity(aw.n_rows, format="csr")
    extra = tuple(aw.vectors[0] + rng.normal(size=aw.vectors[0].shape) for _ in range(2))
    aw = AlignedWords(aw.languages + ("es", "it"), aw.vectors + extra, aw.incidence + (eye, eye), aw.labels)
    return aw, rng.random(aw.n_rows) < 0.7


def test_one_word_per_row_languages_get_the_subset_as_a_part_of_the_full_product():
    """Stacked one-word-per-row languages: the full product is kept rows + the rest, the subset's is the first part."""
    aw, keep = _four_languages_with_a_kept_subset()
    spreads = Spreads(aw)
    parts = NullParts(aw, spreads)
    subset = RowSubset(spreads, keep)
    assert sum("split" in info for info in subset.langs) == 3  # en, es, it
    for counts in [np.ones((1, aw.n_rows)), *resample_counts(aw.n_rows, 40, seed=1, batch=15)]:
        full = null_aware_statistics(spreads, parts, counts)
        got = subset_statistics(subset, counts)
        want = _separate(aw, keep, counts)
        alone = Spreads(aw)  # the full set without the split: the same numbers
        plain = null_aware_statistics(alone, NullParts(aw, alone), counts)
        for k in KEYS:
            np.testing.assert_allclose(got[k], want[k], rtol=RTOL, err_msg=f"{k}: the kept rows' part of the product")
            np.testing.assert_allclose(full[k], plain[k], rtol=RTOL, err_msg=f"{k}: kept + rest = the whole product")


@pytest.mark.parametrize("words_fr", [57, 40])  # 6 of 60 rows hold a shared word: occurrence = intra + a correction; 40
def test_folded_products_of_languages_with_alternatives_equal_the_streamed_ones(words_fr):
    """Stacked languages with alternatives or shared words: their products are counts @ (map @ X), one product of
    all of them per kind, split into kept rows + the rest for the subset; the occurrence products are the intra
    ones plus a product on the rows holding a shared word when those are few.  The streamed route (nothing
    stacked: W = counts @ map, then W @ X block by block) and a separate subset bootstrap give the same numbers."""
    aw, _ = _aw_with_alternatives(21, R=60, words_fr=words_fr)
    rng = np.random.default_rng(22)
    keep = rng.random(aw.n_rows) < 0.75
    keep[[0, 57]] = True, False  # row 0 keeps the word it shares with left-out row 57 (a kept row's weight changes)
    spreads = Spreads(aw)
    assert spreads.fold_languages() == [1, 2]  # de (alternatives) and fr (alternatives, shared words)
    assert (spreads._occurrence_correction() is not None) == (words_fr == 57)
    parts = NullParts(aw, spreads)
    subset = RowSubset(spreads, keep)
    assert sum("fold" in info for info in subset.langs) == 2
    streamed = Spreads(aw, stack_limit=0)
    assert streamed.fold_languages() == []
    s_parts = NullParts(aw, streamed)
    for counts in [np.ones((1, aw.n_rows)), *resample_counts(aw.n_rows, 50, seed=3, batch=20)]:
        full = null_aware_statistics(spreads, parts, counts)
        got = subset_statistics(subset, counts)
        want_full = null_aware_statistics(streamed, s_parts, counts)
        want_sub = _separate(aw, keep, counts)
        for k in KEYS:
            np.testing.assert_allclose(full[k], want_full[k], rtol=RTOL, err_msg=f"{k}: folded = streamed products")
            np.testing.assert_allclose(got[k], want_sub[k], rtol=RTOL, err_msg=f"{k}: kept-row parts = a separate subset")
        if counts.shape[0] > 1:  # occurrence products asked alone (not of the latest spreads call): the same numbers
            for (b1, q1), (b2, q2) in zip(Spreads(aw).occurrence_parts(counts), streamed.occurrence_parts(counts)):
                np.testing.assert_allclose(b1, b2, rtol=RTOL, atol=1e-12 * np.abs(b2).max(), err_msg="occurrence products")
                np.testing.assert_allclose(q1, q2, rtol=RTOL, err_msg="occurrence q sums")


def test_the_subset_point_estimate_is_the_plain_loop_sa_of_the_kept_concepts():
    aw, (rows, vec_of) = _aw_with_alternatives(3)
    keep = np.ones(aw.n_rows, dtype=bool)
    keep[[0, 4, 9, 10, 33]] = False  # rows 0, 4 hold a second alternative; 9, 10 share a word with kept rows
    spreads = Spreads(aw)
    null_aware_statistics(spreads, NullParts(aw, spreads), np.ones((1, aw.n_rows)))
    got = subset_statistics(RowSubset(spreads, keep), np.ones((1, aw.n_rows)))
    ref = reference_sa([rows[r] for r in np.flatnonzero(keep)], vec_of)
    np.testing.assert_allclose(got["sa"][0], ref["cosine"]["sa"], rtol=1e-10, err_msg="plain loops over pairs and tuples")
    np.testing.assert_allclose(got["sa_euclidean"][0], ref["euclidean"]["sa"], rtol=1e-10, err_msg="plain loops, Euclidean")


def test_one_pass_gives_the_full_and_artefact_free_distributions_of_separate_runs():
    aw, _ = _aw_with_alternatives(5, R=80)
    keep = np.arange(aw.n_rows) % 5 != 0
    full, free = {}, {}
    v = verdict_bootstrap(aw, n_boot=90, seed=7, batch=40, keep=keep, distributions=full, subset_distributions=free)
    spreads = Spreads(aw)
    parts = NullParts(aw, spreads)
    want_full = {k: [] for k in KEYS}
    want_free = {k: [] for k in KEYS}
    # another batch size: the same resamples (drawn over the concepts in canonical order, metrics.row_order)
    for counts in resample_counts(aw.n_rows, 90, seed=7, batch=33, order=canonical_rows(aw)):
        for k, x in null_aware_statistics(spreads, parts, counts).items():
            want_full[k].append(x)
        for k, x in _separate(aw, keep, counts).items():
            want_free[k].append(x)
    for k in KEYS:
        np.testing.assert_allclose(full[k], np.concatenate(want_full[k]), rtol=RTOL, err_msg=f"{k}: all concepts")
        np.testing.assert_allclose(free[k], np.concatenate(want_free[k]), rtol=RTOL, err_msg=f"{k}: artefact-free")
    assert v.subset is not None and v.subset.n_boot == 90
    np.testing.assert_allclose(v.subset.delta.sem, np.std(np.concatenate(want_free["delta"]), ddof=1), rtol=1e-10,
                               err_msg="the artefact-free gap's standard error is that of the separate resamples")


def test_the_surface_comparison_rides_the_same_resamples():
    aw, _ = _aw_with_alternatives(8, R=60)
    rng = np.random.default_rng(9)
    spelling = AlignedWords(aw.languages, tuple(v + 1.5 * rng.normal(size=v.shape) for v in aw.vectors), aw.incidence,
                            aw.labels, words=aw.words)
    keep = np.arange(aw.n_rows) >= 6
    v = verdict_bootstrap(aw, n_boot=70, seed=2, keep=keep, surface=spelling)
    # the separate computation: each side on the kept concepts, on the kept columns of the same full-set counts
    m_sub, s_sub = subset_rows(aw, keep), subset_rows(spelling, keep)
    ms, ss = Spreads(m_sub), Spreads(s_sub)
    mp, spp = NullParts(m_sub, ms), NullParts(s_sub, ss)
    diff = np.concatenate([null_aware_statistics(ms, mp, c[:, keep])["corrected"] - null_aware_statistics(ss, spp, c[:, keep])["corrected"]
                           for c in resample_counts(aw.n_rows, 70, seed=2, order=canonical_rows(aw))])
    np.testing.assert_allclose(v.surface.difference.sem, np.std(diff, ddof=1), rtol=1e-10,
                               err_msg="the paired difference's spread = that of separate per-side computations")
    alone = surface_null(aw, spelling, keep=keep, n_boot=70, seed=2)
    for got, want in ((v.surface.difference, alone.difference), (v.surface.surface_corrected, alone.surface_corrected)):
        np.testing.assert_allclose([got.value, got.sem, *got.ci], [want.value, want.sem, *want.ci], rtol=RTOL,
                                   err_msg="surface_null alone draws the verdict's resamples")
    assert v.surface.n_concepts == int(keep.sum())


@pytest.mark.parametrize("share_kept", [0.85, 0.3])  # the correction route / the direct one
def test_subset_statistics_on_sparse_products_equal_a_separate_bootstrap(share_kept):
    """TF-IDF-like words past the reduced form's size take sparse products; so do the subset's corrected words."""
    rng = np.random.default_rng(31)
    R, d = 50, 2048
    vecs = []
    for _ in range(3):
        X = np.zeros((R, d))
        for r in range(R):
            X[r, rng.choice(d, size=10, replace=False)] = rng.random(10)
        vecs.append(X / np.linalg.norm(X, axis=1, keepdims=True))
    eye = sp.identity(R, format="csr")
    aw = AlignedWords(("en", "de", "fr"), tuple(vecs), (eye,) * 3, tuple(f"c{r}" for r in range(R)))
    keep = rng.random(R) < share_kept
    spreads = Spreads(aw, sparse=True)
    assert all(S is not None for S in spreads.sparse)
    subset = RowSubset(spreads, keep)
    assert any("sparse_T" in info for info in subset.langs), "the corrected words go through sparse products"
    parts = NullParts(aw, spreads)
    sub = subset_rows(aw, keep)
    alone = Spreads(sub, sparse=True)
    alone_parts = NullParts(sub, alone)
    for counts in resample_counts(R, 40, seed=6, batch=15):
        null_aware_statistics(spreads, parts, counts)
        got = subset_statistics(subset, counts)
        want = null_aware_statistics(alone, alone_parts, counts[:, keep])
        assert_statistics_close(got, want, "sparse subset products", rtol=RTOL, keys=KEYS)


def test_the_baseline_is_bootstrapped_once_and_a_model_that_is_the_baseline_reads_its_own_statistics(monkeypatch):
    """Issue 21: a benchmark compares every model with the same baseline on the same concepts and resamples."""
    from semanscope_nb.metrics import chance

    aw, _ = _aw_with_alternatives(10, R=60)
    rng = np.random.default_rng(11)
    spelling = AlignedWords(aw.languages, tuple(v + 1.5 * rng.normal(size=v.shape) for v in aw.vectors), aw.incidence,
                            aw.labels, words=aw.words)
    keep = np.arange(aw.n_rows) >= 6
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    first = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    assert len(chance._SURFACE_DONE) == 1
    built = []
    real_spreads = chance.Spreads
    monkeypatch.setattr(chance, "Spreads", lambda a, **kw: built.append(a) or real_spreads(a, **kw))
    other = AlignedWords(aw.languages, tuple(1.1 * v for v in aw.vectors), aw.incidence, aw.labels, words=aw.words)
    again = verdict_bootstrap(other, n_boot=60, seed=3, keep=keep, surface=spelling)
    assert len(built) == 1, "only the model's spreads are built: the baseline's statistics are read"
    fresh = surface_null(other, spelling, keep=keep, n_boot=60, seed=3)
    for got, want in ((again.surface.surface_corrected, first.surface.surface_corrected),
                      (again.surface.difference, fresh.difference)):
        np.testing.assert_allclose([got.value, got.sem, *got.ci], [want.value, want.sem, *want.ci], rtol=RTOL,
                                   err_msg="a read baseline gives the numbers of a fresh bootstrap")
    built.clear()
    other_seed = verdict_bootstrap(other, n_boot=60, seed=4, keep=keep, surface=spelling)
    assert len(built) == 2 and len(chance._SURFACE_DONE) == 2, "another seed: other resamples, bootstrapped anew"
    assert other_seed.surface.surface_corrected.sem != again.surface.surface_corrected.sem
    # the model is the baseline (equal vectors, other arrays): no second pass, and the same numbers as one
    twin = AlignedWords(spelling.languages, tuple(v.copy() for v in spelling.vectors), spelling.incidence, spelling.labels)
    built.clear()
    self_cmp = verdict_bootstrap(spelling, n_boot=60, seed=5, keep=keep, surface=twin)
    assert len(built) == 1
    alone = surface_null(spelling, twin, keep=keep, n_boot=60, seed=5)
    for got, want in ((self_cmp.surface.model_corrected, alone.model_corrected),
                      (self_cmp.surface.surface_corrected, alone.surface_corrected)):
        np.testing.assert_allclose([got.value, got.sem, *got.ci], [want.value, want.sem, *want.ci], rtol=RTOL,
                                   err_msg="the model's own statistics are the baseline's")
    assert self_cmp.surface.difference.value == 0.0 and self_cmp.surface.difference.sem == 0.0


@pytest.mark.parametrize("one_word_per_row", [False, True])  # tuples row by row / every re-pairing at once (Gram)
def test_euclidean_chance_from_one_spreads_equals_rebuilding_the_repaired_concepts(one_word_per_row):
    aw, _ = _aw_with_alternatives(11, R=30)
    aw = AlignedWords(aw.languages, tuple(3.0 * v for v in aw.vectors), aw.incidence, aw.labels)
    if one_word_per_row:
        eye = sp.identity(aw.n_rows, format="csr")
        aw = AlignedWords(aw.languages, tuple(v[: aw.n_rows] + k for k, v in enumerate(aw.vectors)), (eye,) * 3, aw.labels)
    rng = np.random.default_rng(0)
    R = aw.n_rows
    order = canonical_rows(aw)  # the draws re-pair slots; slot s is row order[s] (metrics.row_order)
    sas, inters = [], []
    for _ in range(12):  # the separate computation: rebuild the spreads of each re-paired set of concepts
        perms = [order] + [order[rng.permutation(R)] for _ in range(len(aw.languages) - 1)]
        shuffled = AlignedWords(aw.languages, aw.vectors, tuple(sp.csr_matrix(inc)[p] for inc, p in zip(aw.incidence, perms)),
                                aw.labels)
        s = Spreads(shuffled, stack_limit=0)
        point = s.spreads(np.ones((1, R)), scaled=True)
        sas.append(affinity_ratio(point["intra_euc"][0], point["inter_euc"][0]))
        inters.append(math.ldexp(point["inter_euc"][0], s.exponent))
    got = euclidean_chance_by_permutation(aw, n_perm=12, seed=0)
    np.testing.assert_allclose(got, (np.mean(sas), np.mean(inters)), rtol=RTOL, err_msg="re-pairing from one Spreads")


@pytest.mark.slow
def test_fused_statistics_on_real_embeddings_equal_the_separate_ones():
    """USE on conceptual-space: the verdict's artefact-free concepts, replicate for replicate."""
    import semanscope_nb as snb
    from semanscope_nb.metrics.affinity import _artefact_exclusion
    from semanscope_nb.runs.task_library import aligned_words, unknown_words

    ds = snb.load_dataset("conceptual-space")
    e = snb.embed(ds, "use-multilingual", progress=False)
    aw = aligned_words(e)
    _, _, keep, scorable = _artefact_exclusion(aw, unknown_words=unknown_words(e, aw))
    assert scorable and 0 < (~keep).sum() < aw.n_rows  # the real data set has artefacts to leave out
    free = {}
    verdict_bootstrap(aw, n_boot=60, seed=1, keep=keep, subset_distributions=free)
    want = {k: np.concatenate([_separate(aw, keep, c)[k] for c in resample_counts(aw.n_rows, 60, seed=1, order=canonical_rows(aw))])
            for k in KEYS}  # (the verdict draws over the concepts in canonical order, metrics.row_order)
    for k in KEYS:
        np.testing.assert_allclose(free[k], want[k], rtol=RTOL, err_msg=f"{k}: real vectors, artefact-free")


def test_holding_the_centred_words_changes_no_bit_of_the_euclidean_chance_level(monkeypatch):
    # rows with alternatives take the tuple route; centring every word once (held for the re-pairings) is the
    # same element-wise arithmetic as centring each block again, so the numbers are identical, not just close
    from semanscope_nb.metrics import spreads as spreads_module

    aw, _ = _aw_with_alternatives(5, R=30)
    aw = AlignedWords(aw.languages, tuple(2.0 * v + 1.0 for v in aw.vectors), aw.incidence, aw.labels)
    held = euclidean_chance_by_permutation(aw, n_perm=9, seed=3)
    monkeypatch.setattr(spreads_module, "CENTRED_HOLD_BYTES", 0)
    again = euclidean_chance_by_permutation(aw, n_perm=9, seed=3)
    np.testing.assert_array_equal(held, again, err_msg="held centred words vs per-block centring")


def test_pair_matrix_equals_separate_pair_computations_replicate_for_replicate():
    """pair_affinity's one pass (every language's sums once, a pair's artefacts as zero weights) against, per pair,
    a Spreads of the pair alone on the same counts and a second one on its artefact-free concepts."""
    from semanscope_nb.metrics.artefacts import identical_string_rows, subset_languages
    from semanscope_nb.metrics.pairs import pair_affinity

    aw, _ = _aw_with_alternatives(5)
    words = [list(w) for w in aw.words]
    for i, w in enumerate(words[1]):  # German strings equal to the English ones in some concepts: that pair's artefacts
        if w.startswith("d") and w[1:].isdigit() and int(w[1:]) % 5 == 0:
            words[1][i] = "e" + w[1:]
    aw = AlignedWords(aw.languages, aw.vectors, aw.incidence, aw.labels, words=tuple(map(tuple, words)))
    n_boot, seed = 80, 3
    dists: dict = {}
    table = pair_affinity(aw, n_boot=n_boot, n_perm=60, seed=seed, distributions=dists).table.set_index(["language_a", "language_b"])
    # the pass's resamples (any batch: the same), over the concepts in canonical order
    counts = np.vstack(list(resample_counts(aw.n_rows, n_boot, seed=seed, order=canonical_rows(aw))))
    judged_pairs = 0
    for a, b in [("en", "de"), ("en", "fr"), ("de", "fr")]:
        aw2 = subset_languages(aw, (a, b))
        keep = ~identical_string_rows(aw2)
        s2 = Spreads(aw2)
        alone = null_aware_statistics(s2, NullParts(aw2, s2), counts)
        for k in KEYS:
            np.testing.assert_allclose(dists[f"{a}-{b}"][k], alone[k], rtol=RTOL, err_msg=f"{a}-{b} {k}: all concepts")
        point = null_aware_statistics(s2, NullParts(aw2, s2), np.ones((1, aw.n_rows)))
        np.testing.assert_allclose(table.loc[(a, b), "sa"], point["sa"][0], rtol=RTOL, err_msg=f"{a}-{b}: point SA")
        assert table.loc[(a, b), "n_excluded"] == int((~keep).sum())
        if keep.all():
            assert f"{a}-{b}.judged" not in dists
            np.testing.assert_allclose(table.loc[(a, b), "delta"], point["delta"][0], rtol=RTOL, err_msg=f"{a}-{b}: gap")
            continue
        judged_pairs += 1
        sub = _separate(aw2, keep, counts)
        for k in KEYS:
            np.testing.assert_allclose(dists[f"{a}-{b}.judged"][k], sub[k], rtol=RTOL, err_msg=f"{a}-{b} {k}: artefact-free")
        sub_point = _separate(aw2, keep, np.ones((1, aw.n_rows)))
        for col, k in (("sa_judged", "sa"), ("sa_null", "sa_null"), ("delta", "delta"), ("corrected", "corrected")):
            np.testing.assert_allclose(table.loc[(a, b), col], sub_point[k][0], rtol=RTOL, err_msg=f"{a}-{b}: {col}")
    assert judged_pairs == 1, "the en-de pair must have artefacts for the zero-weight route to be checked"


def test_small_space_blas_pins_threads_only_for_small_spaces_and_restores_them():
    """The verdict of a small space runs on SMALL_SPACE_BLAS_THREADS BLAS threads; a large one keeps the default."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from semanscope_nb.metrics.spreads import SMALL_SPACE_BLAS_THREADS, SMALL_SPACE_NUMBERS, small_space_blas

    def blas() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    small, _ = _aw_with_alternatives(0)
    rows = SMALL_SPACE_NUMBERS // 2 + 1  # 2 languages x 2 dims: just over the limit, no memory (broadcast views)
    eye = sp.identity(rows, format="csr")
    big = AlignedWords(("en", "de"), (np.broadcast_to(np.zeros(2), (rows, 2)),) * 2, (eye, eye), ("x",) * rows)
    with threadpool_limits(2, user_api="blas"):  # a known starting count (a test that needs one)
        before = blas()
        assert before and all(n == 2 for n in before), "no BLAS library to limit"
        with small_space_blas(small):
            assert all(n == SMALL_SPACE_BLAS_THREADS for n in blas()), "a small space: pinned"
        assert blas() == before, "restored on exit"
        with small_space_blas(big):
            assert blas() == before, "a large space: the default stays"


def test_small_space_blas_keeps_its_controller_until_a_module_is_imported(monkeypatch):
    """The threadpoolctl controller (a walk over every loaded library) is made again only after an import (a BLAS
    arrives with one): two pins in a row make one, a new entry in sys.modules makes the next pin make another."""
    import sys
    import types

    import threadpoolctl

    from semanscope_nb.metrics import spreads as spreads_module

    made = []

    class Counting(threadpoolctl.ThreadpoolController):
        def __init__(self) -> None:
            made.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    monkeypatch.setattr(spreads_module, "_blas_controller", None)
    small, _ = _aw_with_alternatives(0)
    for _ in range(2):
        with spreads_module.small_space_blas(small):
            pass
    assert len(made) == 1, "no import between two pins: the controller is reused"
    monkeypatch.setitem(sys.modules, "_semanscope_test_new_module", types.ModuleType("_semanscope_test_new_module"))
    with spreads_module.small_space_blas(small):
        pass
    assert len(made) == 2, "a module imported since: a new controller (it would see a BLAS loaded with it)"


def test_small_space_blas_block_of_another_thread_does_not_restore_the_limit_early():
    """The main thread pins; a worker thread's block enters and leaves meanwhile (JupyterLab subshells): the pin holds
    until the main thread's block ends, and then the count found before it is back (one lock, one count of blocks)."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    from semanscope_nb.metrics.spreads import SMALL_SPACE_BLAS_THREADS, small_space_blas

    def blas() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    small, _ = _aw_with_alternatives(0)

    def worker() -> None:
        with small_space_blas(small):
            pass

    with threadpool_limits(2, user_api="blas"):
        before = blas()
        with small_space_blas(small):
            t = threading.Thread(target=worker)
            t.start()
            t.join(10)
            assert not t.is_alive()
            assert all(n == SMALL_SPACE_BLAS_THREADS for n in blas()), "the worker's exit must not lift the main block's pin"
            with small_space_blas(small):  # nested in the same thread
                pass
            assert all(n == SMALL_SPACE_BLAS_THREADS for n in blas()), "nor a nested block's exit"
        assert blas() == before, "the count found before the first block is back"


_LATE_BLAS = r"""
import numpy as np, scipy.sparse as sp
from threadpoolctl import threadpool_info
from semanscope_nb.metrics.spreads import AlignedWords, small_space_blas
eye = sp.identity(3, format="csr")
small = AlignedWords(("en", "de"), (np.eye(3), np.eye(3)), (eye, eye), ("a", "b", "c"))
with small_space_blas(small):  # the first block: only the BLAS libraries loaded so far exist
    pass
import scipy.linalg, faiss  # BLAS libraries loaded later (scipy's own OpenBLAS; faiss brings another)
with small_space_blas(small):
    print(sorted({i["filepath"].rsplit("/", 1)[-1]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}.items()))
"""


@pytest.mark.slow  # end to end, several seconds: a fresh interpreter imports numpy, scipy and the package
def test_small_space_blas_also_pins_a_late_blas_library_loaded_after_the_first_block():
    # the bug: the threadpoolctl controller was made once and cached, so a BLAS loaded later stayed on its own threads
    import ast
    import subprocess
    import sys

    from semanscope_nb.metrics.spreads import SMALL_SPACE_BLAS_THREADS

    out = subprocess.run([sys.executable, "-c", _LATE_BLAS], capture_output=True, text=True, timeout=300, check=True,
                         env={**__import__("os").environ, "OPENBLAS_NUM_THREADS": "2"}).stdout
    libraries = ast.literal_eval(out.strip().splitlines()[-1])
    assert len(libraries) >= 2 and all(n == SMALL_SPACE_BLAS_THREADS for _, n in libraries), libraries


def _pair_dots_by_loops(both: list[np.ndarray], inv: list[np.ndarray], d: int) -> tuple[np.ndarray, np.ndarray]:
    """sum_{l<m} a_l . a_m (unit halves, centred halves) row by row, a_l = both_l * inv_l: the null's formula as loops."""
    B, L = both[0].shape[0], len(both)
    u, c = np.zeros(B), np.zeros(B)
    for b in range(B):
        for l in range(L):
            for m in range(l + 1, L):
                al, am = both[l][b] * inv[l][b], both[m][b] * inv[m][b]
                u[b] += float(np.dot(al[:d], am[:d]))
                c[b] += float(np.dot(al[d:], am[d:]))
    return u, c


def _pair_dots_bound(both: list[np.ndarray], inv: list[np.ndarray], d: int, half: int) -> np.ndarray:
    """How far the null's pair sum, taken as (||sum_l a_l||^2 - sum_l ||a_l||^2) / 2, may round from the loops: each
    square of d terms of a sum of L rounds by at most (d + L) eps of (sum_l ||a_l||)^2 (Cauchy-Schwarz), the scaling
    by inv and the halving a few ulps more: 4 (d + L) eps (sum_l ||a_l||)^2 per row."""
    cols = slice(0, d) if half == 0 else slice(d, 2 * d)
    scale = sum(np.linalg.norm(np.asarray(b)[:, cols] * i[:, None], axis=1) for b, i in zip(both, inv)) ** 2
    return 4 * (d + len(both)) * np.finfo(np.float64).eps * scale


@pytest.mark.parametrize("L", [4, 6])
@pytest.mark.parametrize("same_counts", [True, False])  # one word per row everywhere / alternatives: per-language counts
def test_dense_null_pair_dots_equal_the_formula_as_loops(L, same_counts):
    """The closed-form null's pair sum on dense parts (4+ languages), replicate for replicate, against plain loops."""
    from semanscope_nb.metrics.chance import _dense_pair_dots

    rng = np.random.default_rng(L + 10 * same_counts)
    B, d = 9, 16
    base = rng.normal(size=(B, 2 * d))
    both = [base + 0.5 * rng.normal(size=(B, 2 * d)) for _ in range(L)]  # correlated: the pair sum is not ~0
    n = rng.integers(20, 40, size=B).astype(float)
    inv = [1.0 / n] * L if same_counts else [1.0 / (n + rng.integers(0, 5, size=B)) for _ in range(L)]
    got = _dense_pair_dots(both, inv, d)
    want = _pair_dots_by_loops(both, inv, d)
    for half, (g, w) in enumerate(zip(got, want)):
        assert np.all(np.abs(g - w) <= _pair_dots_bound(both, inv, d, half)), f"half {half}: off the loops beyond rounding"


def test_null_of_one_word_per_row_languages_equals_the_formula_as_loops():
    """Six one-word-per-row languages (every language's occurrence counts equal: the sum is scaled once): the
    expected cosine inter distance under shuffling, 1 - sum_{l<m} a_l . a_m / K, replicate for replicate."""
    rng = np.random.default_rng(5)
    R, d, L = 40, 8, 6
    eye = sp.identity(R, format="csr")
    base = rng.normal(size=(R, d))
    aw = AlignedWords(tuple("abcefg"), tuple(base + 0.7 * rng.normal(size=(R, d)) for _ in range(L)), (eye,) * L,
                      tuple(map(str, range(R))))
    spreads = Spreads(aw)
    parts = NullParts(aw, spreads)
    K = L * (L - 1) / 2
    for counts in resample_counts(R, 30, seed=3, batch=11):
        got = parts.inter(counts)[0]
        occ = [np.asarray(b) for b, _ in spreads.occurrence_parts(counts)]
        inv = [1.0 / (counts @ a) for a in parts.n_alt]
        u, _ = _pair_dots_by_loops(occ, inv, spreads.d)
        assert np.all(np.abs(got - (1.0 - u / K)) <= _pair_dots_bound(occ, inv, spreads.d, 0) / K + 4 * np.finfo(float).eps), \
            "the null's inter distance off the loops beyond its rounding"


@pytest.mark.parametrize("share_kept", [0.85, 0.3])  # the correction route / the direct one
def test_the_bootstrap_gives_the_permutation_gate_the_kept_concepts_point(share_kept):
    """The verdict's permutation test reads the kept concepts' point spreads from the bootstrap pass (no second
    RowSubset): the same arithmetic on the same parts as ``_gate_point``, and the same numbers as a separate Spreads."""
    from semanscope_nb.metrics.affinity import _gate_point

    aw, _ = _aw_with_alternatives(3)
    keep = np.random.default_rng(4).random(aw.n_rows) < share_kept
    keep[:3] = True
    spreads = Spreads(aw)
    got = verdict_bootstrap(aw, n_boot=20, seed=0, keep=keep, spreads=spreads).subset_point
    np.testing.assert_allclose(got, _gate_point(Spreads(aw), keep), rtol=4 * np.finfo(float).eps,
                               err_msg="the same parts and arithmetic as the gate's own point (a few ulps at most)")
    alone = Spreads(subset_rows(aw, keep)).spreads(np.ones((1, int(keep.sum()))), scaled=True)
    np.testing.assert_allclose(got, (alone["intra_cos"][0], alone["inter_cos"][0]), rtol=RTOL,
                               err_msg="the kept concepts' point spreads = a Spreads of those concepts alone")
    assert verdict_bootstrap(aw, n_boot=20, seed=0).subset_point is None  # every concept kept: no subset point


def test_split_products_reuse_their_arrays_only_while_no_part_is_held():
    """The kept rows' and the whole product of a split (joint one-word-per-row languages, folded languages with
    alternatives) are written into the previous batch's arrays -- unless a part handed out is still alive, which then
    keeps its numbers -- and give the same bits as a Spreads that never reuses one."""
    import weakref

    aw, keep = _four_languages_with_a_kept_subset()
    s = Spreads(aw)
    parts = NullParts(aw, s)
    subset = RowSubset(s, keep)
    assert any("split" in info for info in subset.langs) and any("fold" in info for info in subset.langs)
    c1, c2, c3 = (next(resample_counts(aw.n_rows, 9, seed=s_)) for s_ in (1, 2, 3))
    null_aware_statistics(s, parts, c1)
    subset_statistics(subset, c1)
    slots = sorted(s._spare)
    assert "kept" in slots and any(k.startswith("fold-kept") for k in slots), slots
    first = {k: weakref.ref(v) for k, v in s._spare.items()}  # weak: they do not count as holding the arrays
    null_aware_statistics(s, parts, c2)
    assert all(s._spare[k] is first[k]() for k in first), "nothing held: the second batch writes into the first's arrays"
    held = s.kept_product(c2)  # the kept rows' part of batch 2, kept by the caller
    before = held.copy()
    got = null_aware_statistics(s, parts, c3)
    got_sub = subset_statistics(subset, c3)
    assert s._spare["kept"] is not held, "a held part is alive: the third batch gets a new array"
    np.testing.assert_allclose(held, before, rtol=0, atol=0, err_msg="a held part of an earlier batch was written over")
    fresh = Spreads(aw)
    fresh_sub = RowSubset(fresh, keep)
    want = null_aware_statistics(fresh, NullParts(aw, fresh), c3)
    want_sub = subset_statistics(fresh_sub, c3)
    for k in KEYS:  # the same arithmetic into reused or new arrays: the same bits
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=0, err_msg=f"{k}: all concepts, reused arrays")
        np.testing.assert_allclose(got_sub[k], want_sub[k], rtol=0, atol=0, err_msg=f"{k}: kept concepts, reused arrays")
