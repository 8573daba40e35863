"""Semantic Affinity of every language pair, each with its own chance level, under false-discovery-rate control.

One aggregate can hide failing pairs: a "good" model may have a dozen language
pairs below their chance level.  :func:`pair_affinity` answers the paper's
diagnostic question "which language pairs fail" directly, with the verdict's
quantity and two safeguards a table of many pairs needs:

* **Artefacts per pair.**  Each pair is judged on its own artefact-free concepts:
  a concept whose strings are identical in *these two* languages (names,
  loanwords, shared characters), or that holds a degenerate vector in one of
  them, is left out of that pair's chance-corrected score (``n_excluded``): it weighs 0 in
  the counts of the resamples every pair shares (one bootstrap pass for the whole matrix, the
  verdict's rule for a subset; see :func:`_pair_rows`).
* **Multiplicity.**  With 12 languages there are 66 pairs; at a 5% level some
  pair of random vectors would look "above chance" almost every time.  Each
  pair's ``p_value`` comes from the **permutation test** of its artefact-free
  concepts (:func:`~semanscope_nb.metrics.chance.permutation_test`: exact for tiny
  pairs, otherwise ``(1 + hits) / (1 + n_perm)``; valid at any sample size, where
  the bootstrap interval is liberal), and the false discovery rate across pairs is
  controlled by Benjamini-Hochberg (``statsmodels.stats.multitest.multipletests``,
  ``method="fdr_bh"``, a well-kept implementation): ``p_fdr`` is the adjusted
  p-value and ``survives`` says whether the pair is above chance at ``alpha``.

A pair's ``verdict`` follows the verdict's rule (:attr:`~semanscope_nb.metrics.affinity.SAResult.tier`, in its
order) for its two languages, so a pair and :func:`~semanscope_nb.metrics.affinity.affinity_of_words` of those
two languages agree:

1. "undefined" (NaN, with a ``note``) when the pair has collapsed vectors (no SA); a whole input with fewer than
   3 concepts raises, as every statistic does (:mod:`semanscope_nb.metrics.degenerate`).  A word with an all-zero
   vector raises, or with ``on_zero="drop"`` (the ``pair-sa`` task's, as the ``sa`` task's) its concepts are
   dropped from the pairs of its language before anything else, as the verdict of those two languages drops them.
2. "insufficient" when artefacts were left out and fewer than
   :data:`~semanscope_nb.metrics.affinity.MIN_JUDGED_SHARE` of its concepts are left, or too few to score (fewer
   than 3, or a language with fewer than 2 distinct words), whatever the interval says: the verdict's rule,
   checked before anything else.
3. "undetermined" below :data:`~semanscope_nb.metrics.degenerate.MIN_VERDICT_BOOT` resamples or with too few
   concepts for a re-pairing test to reach the level.
4. "below chance" when the bootstrap interval of its artefact-free gap lies below 0; "chance" when it holds 0,
   when its FDR-adjusted permutation p is not below ``(1 - confidence) / 2`` (the verdict's one-sided level; the
   pair's own p when it is the only pair) or ``alpha``, or when its chance-corrected score is under
   :data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`.
5. "not above surface form" when a surface-form baseline is given (``surface=``; the ``pair-sa`` task's
   ``surface_null``, on by default as in the ``sa`` task) and the pair does not beat it on its judged concepts:
   the verdict's comparison (:class:`~semanscope_nb.metrics.chance.SurfaceSide`, the code the verdict runs; the
   same resamples the pair rows share), reported in ``surface_corrected``, ``surface_difference``,
   ``surface_difference_low`` / ``surface_difference_high`` and ``surface_concepts`` (NaN without a baseline).
6. Otherwise the *lower* of the paper's tiers of its SA on all its concepts and on its artefact-free ones, so
   exclusion can only lower a verdict.

The smallest permutation p-value is ``1 / (1 + n_perm)``: a lone true pair among N needs it below
``alpha / N``, so ``n_perm`` should exceed ``N / alpha`` (a note says so when it does not).

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.chance`,
:mod:`semanscope_nb.metrics.artefacts` and :mod:`semanscope_nb.errors`.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from semanscope_nb.metrics.spreads import AlignedWords
>>> rng = np.random.default_rng(0); eye = sp.identity(80, format="csr"); e = rng.normal(size=(80, 8))
>>> aw = AlignedWords(("en", "de", "xx"), (e, e + 0.2 * rng.normal(size=e.shape), rng.normal(size=e.shape)),
...                   (eye, eye, eye), tuple(map(str, range(80))))
>>> pairs = pair_affinity(aw, n_boot=200, n_perm=200, seed=0)
>>> pairs.table.set_index(["language_a", "language_b"]).verdict.to_dict()
{('en', 'de'): 'great', ('en', 'xx'): 'chance', ('de', 'xx'): 'chance'}
>>> pairs.table.survives.tolist()
[True, False, False]
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    MIN_JUDGED_SHARE,
    AlignedWords,
    TierThresholds,
    sa_percentile_estimate,
)
from semanscope_nb.metrics.artefacts import (
    degenerate_vector_groups,
    identical_string_rows,
    rows_with_words,
    subset_languages,
    subset_rows,
    zero_vectors,
)
from semanscope_nb.metrics.chance import (
    BELOW_CHANCE_TIER,
    CHANCE_TIER,
    INSUFFICIENT_TIER,
    UNCONFIRMED_BY_PERMUTATION,
    SURFACE_TIER,
    NullParts,
    SurfaceComparison,
    SurfaceSide,
    above_chance_gate,
    check_count,
    null_aware_scores,
    null_aware_tier,
    permutation_test,
    resample_counts,
    statistics_from_parts,
    subset_statistics,
)
from semanscope_nb.metrics.degenerate import (
    MIN_BOOT_CONCEPTS,
    MIN_VERDICT_BOOT,
    UNDETERMINED_TIER,
    collapsed_note,
    require_concepts,
    too_few_to_test,
)
from semanscope_nb.metrics.options import check_confidence, check_n_boot, check_seed
from semanscope_nb.metrics.spreads import RowSubset, Spreads, on_small_space_blas
from semanscope_nb.metrics.row_order import canonical_rows
from semanscope_nb.errors import EmbeddingError
from semanscope_nb.models.cancel import check_stop
from semanscope_nb.results import Estimate, Interval, Result

#: the verdict of a pair without a defined score (collapsed vectors, fewer than 3 artefact-free concepts)
UNDEFINED_TIER = "undefined"


@dataclass(frozen=True)
class PairAffinity(Result):
    """SA per language pair: ``table`` holds one row per pair (SA, interval, chance level, gap, verdict).

    Columns: language_a, language_b; ``sa`` (the raw SA of all the pair's concepts)
    with ``ci_low`` / ``ci_high`` and ``sem``; ``n_concepts``, ``n_excluded``
    (artefacts of this pair) and, on the artefact-free concepts, ``sa_judged``,
    ``sa_null``, ``delta`` (SA minus chance: the verdict's quantity) with
    ``delta_low`` / ``delta_high`` and ``delta_sem``, ``corrected``; ``p_value``
    (permutation test), ``p_fdr`` (Benjamini-Hochberg), ``survives``; against the surface-form baseline
    (NaN when none was given) ``surface_corrected``, ``surface_difference`` with ``surface_difference_low`` /
    ``surface_difference_high``, ``surface_concepts``; ``paper_tier``, ``verdict``, ``note``.  :meth:`estimates` gives the intervals
    as :class:`~semanscope_nb.results.Estimate` values.
    """

    kind = "pair-sa"
    main_score_name = "lowest_sa"

    table: pd.DataFrame
    n_boot: int
    seed: int | None
    confidence: float
    provenance: dict[str, Any] = field(default_factory=dict)
    n_perm: int = 0
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def lowest_sa(self) -> float:
        """The SA of the worst-aligned pair (the main score: a model is as good as its weakest pair)."""
        return float(self.table["sa"].min()) if len(self.table) else math.nan

    def __len__(self) -> int:
        return len(self.table)

    def estimates(self) -> dict[str, Estimate]:
        """``"a-b"`` -> the pair's SA, ``"a-b.delta"`` -> its gap to chance (value, bootstrap std, interval)."""
        out = {}
        nan = math.nan
        for r in self.table.to_dict("records"):
            pair = f"{r['language_a']}-{r['language_b']}"
            out[pair] = Estimate(r["sa"], r.get("sem", nan), Interval(r["ci_low"], r["ci_high"]))
            out[f"{pair}.delta"] = Estimate(r["delta"], r.get("delta_sem", nan), Interval(r["delta_low"], r["delta_high"]))
        return out


def _pair_rows(aw: AlignedWords, excluded: dict[tuple[int, int], np.ndarray], *, n_boot: int, n_perm: int,
               seed: int | None, confidence: float, should_stop: Any = None,
               distributions: dict[str, dict[str, np.ndarray]] | None = None,
               surfaces: Mapping[tuple[int, int], AlignedWords] | None = None
               ) -> tuple[list[dict[str, Any]], list[SurfaceComparison | None]]:
    """Every pair's numbers from one bootstrap pass: raw SA on all its concepts, the gap and permutation p on its artefact-free ones.

    One :class:`~semanscope_nb.metrics.spreads.Spreads` of all languages and one multinomial
    draw per resample (``resample_counts(R, n_boot, seed)``, the verdict's): each batch's
    products with the vectors give every language's weighted sums once, and a pair's SA,
    chance level, gap and corrected score follow from its two languages' sums and its own
    per-row inter sums (:meth:`Spreads.from_parts`, :func:`~semanscope_nb.metrics.chance.null_inter`).
    A pair's artefact concepts weigh 0 in those same counts
    (:class:`~semanscope_nb.metrics.spreads.RowSubset` on the pair's languages), as in the verdict.

    ``surfaces``: pair -> the surface baseline's words of its two languages.  Each pair with a score is then compared
    with its baseline by the verdict's rule (:class:`~semanscope_nb.metrics.chance.SurfaceSide`, as
    :func:`~semanscope_nb.metrics.chance.verdict_bootstrap`): on its judged concepts the baseline can embed, on these
    same counts.  Returns the rows and, per row, its :class:`~semanscope_nb.metrics.chance.SurfaceComparison` (None
    when not asked or not possible).
    """
    R, L = aw.n_rows, len(aw.languages)
    spreads = Spreads(aw)
    NullParts(aw, spreads)  # the spreads keep the occurrence products of each batch (the chance level's)
    n_alt = [a.astype(np.float64) for a in spreads.alternatives]
    ones = np.ones((1, R))
    rows: list[dict[str, Any]] = []
    live: list[tuple[dict[str, Any], tuple[int, int], np.ndarray, RowSubset | None]] = []
    for i, j in itertools.combinations(range(L), 2):
        row, entry = _pair_setup(aw, spreads, excluded[i, j], i, j)
        rows.append(row)
        if entry is not None:
            live.append(entry)
    sides = [_surface_side(aw, spreads, surfaces, entry, excluded, seed=seed, n_boot=n_boot) for entry in live]
    batch = spreads.bootstrap_batch(n_boot) if n_boot else 1

    def statistics(counts: np.ndarray, *, point: bool = False) -> list[tuple[dict, dict | None, np.ndarray | None]]:
        spreads.spreads(counts, scaled=True)  # every language's products, once for all pairs
        intra, occ = spreads.intra_parts(counts), spreads.occurrence_parts(counts)
        out = []
        for (_, (i, j), row_stack, sub), side in zip(live, sides):
            full = statistics_from_parts(spreads, counts @ row_stack, [intra[i], intra[j]], [occ[i], occ[j]],
                                         [counts @ n_alt[i], counts @ n_alt[j]])
            part = subset_statistics(sub, counts) if sub is not None else None
            mine = None
            if side is not None:  # the model on the compared concepts, and the baseline, on these counts
                on, model_rows = side
                mine = (full if model_rows is None else part if model_rows is sub
                        else subset_statistics(model_rows, counts))["corrected"]
                if not point:
                    on.add(counts, batch=batch)
            out.append((full, part, mine))
        return out

    points = statistics(ones, point=True)
    dists: list[tuple[dict[str, list], dict[str, list], list]] = [({}, {}, []) for _ in live]
    if n_boot and live:
        for counts in resample_counts(R, n_boot, seed=seed, batch=batch, order=canonical_rows(aw)):
            check_stop(should_stop, "bootstrap")
            for (d_full, d_sub, d_mine), (full, sub, mine) in zip(dists, statistics(counts)):
                for k, v in full.items():
                    d_full.setdefault(k, []).append(v)
                for k, v in (sub or {}).items():
                    d_sub.setdefault(k, []).append(v)
                if mine is not None:
                    d_mine.append(mine)
    comparisons: dict[int, SurfaceComparison | None] = {}
    for (row, _, _, _), side, (_, _, p_mine), (_, _, d_mine) in zip(live, sides, points, dists):
        if side is not None:
            comparisons[id(row)] = side[0].comparison(float(p_mine[0]), np.concatenate(d_mine) if n_boot else None,
                                                      confidence=confidence)
    kw = {"n_boot": n_boot, "confidence": confidence}
    for (row, (i, j), _, sub), (p_full, p_sub, _), (d_full, d_sub, _) in zip(live, points, dists):
        pair = f"{aw.languages[i]}-{aw.languages[j]}"
        keep_full = {} if distributions is not None else None
        full = null_aware_scores(p_full, d_full if n_boot else None, distributions=keep_full, **kw)
        raw = full.sa  # the raw SA's interval by the SA's own rule (SAResult.cosine), not the gap's point-holding one
        if n_boot:
            raw = sa_percentile_estimate(full.sa.value, np.concatenate(d_full["sa"]), confidence=confidence)
        row.update(sa=raw.value, ci_low=raw.ci[0], ci_high=raw.ci[1], sem=raw.sem)
        v = full
        if sub is not None:
            keep_sub = {} if distributions is not None else None
            v = null_aware_scores(p_sub, d_sub if n_boot else None, distributions=keep_sub, **kw)
            if distributions is not None:
                distributions[f"{pair}.judged"] = keep_sub
        if distributions is not None:
            distributions[pair] = keep_full
        if row["_undefined"]:
            continue
        judged = subset_rows(subset_languages(aw, (aw.languages[i], aw.languages[j])), ~excluded[i, j]) if sub is not None \
            else subset_languages(aw, (aw.languages[i], aw.languages[j]))
        perm = permutation_test(judged, n_perm=n_perm, seed=seed)
        row.update(sa_judged=v.sa.value, sa_null=v.sa_null.value, delta=v.delta.value, delta_low=v.delta.ci[0],
                   delta_high=v.delta.ci[1], delta_sem=v.delta.sem, corrected=v.corrected.value, p_value=perm.p_value)
    return [_with_nan_where_undefined(row) for row in rows], [comparisons.get(id(row)) for row in rows]


def _surface_side(aw: AlignedWords, spreads: Spreads, surfaces: Mapping[tuple[int, int], AlignedWords] | None,
                  entry: tuple[dict[str, Any], tuple[int, int], np.ndarray, RowSubset | None],
                  excluded: dict[tuple[int, int], np.ndarray], *, seed: int | None, n_boot: int
                  ) -> tuple[SurfaceSide, RowSubset | None] | None:
    """A scored pair's surface comparison, set up as the verdict of its two languages sets it up (None: not asked).

    (the baseline's side, the model's rows on the compared concepts: the pair's judged subset when they are its judged
    concepts, None when they are all concepts, else a :class:`RowSubset` of them); a pair whose baseline has fewer than
    3 comparable concepts gets a note and no comparison, as the verdict.
    """
    row, (i, j), row_stack, sub = entry
    if surfaces is None or row["_undefined"]:
        return None
    out = excluded[i, j]
    model = subset_languages(aw, (aw.languages[i], aw.languages[j]))
    side = SurfaceSide(model, surfaces[i, j], ~out if out.any() else None, seed=seed, n_boot=n_boot)
    if side.rows is None:
        row["note"] = "; ".join(filter(None, [row["note"], f"no surface-form comparison: {side.note}"]))
        return None
    if side.rows.all():
        return side, None
    if sub is not None and np.array_equal(side.rows, ~out):
        return side, sub
    return side, RowSubset(spreads, side.rows, languages=(i, j), row_stack=row_stack)


def _with_nan_where_undefined(row: dict[str, Any]) -> dict[str, Any]:
    """A pair without SA gets NaN numbers; one without a verdict NaN verdict numbers and the reason as its note."""
    nan = math.nan
    undefined = row.pop("_undefined")
    row.setdefault("sa", nan)
    for k in ("ci_low", "ci_high", "sem"):
        row.setdefault(k, nan)
    if undefined:
        row.update(sa_judged=nan, sa_null=nan, delta=nan, delta_low=nan, delta_high=nan, delta_sem=nan, corrected=nan,
                   p_value=nan, note=undefined)
    return row


def _pair_verdict(r: Any, *, n_boot: int, confidence: float, thresholds: TierThresholds,
                  surface: SurfaceComparison | None = None) -> str:
    """One pair's verdict by :attr:`SAResult.tier`'s rule for the pair's two languages, with ``p_fdr`` as its p-value.

    In :meth:`SAResult._decision`'s order: no SA (collapsed vectors): 'undefined'; artefacts left out and fewer
    than :data:`~semanscope_nb.metrics.affinity.MIN_JUDGED_SHARE` of the concepts left, or too few left to score:
    'insufficient', whatever the rest says; no artefact-free score otherwise: 'undefined'; too few resamples or
    concepts to call: 'undetermined'; then the verdict's gate
    (:func:`~semanscope_nb.metrics.chance.above_chance_gate` on the gap's interval and the FDR-adjusted
    permutation p, which is the pair's own p when it is the only pair; ``survives`` as well), the effect-size
    floor (:data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`), the surface-form baseline (``surface``, the pair's
    :class:`~semanscope_nb.metrics.chance.SurfaceComparison`: 'not above surface form' when the model does not beat
    it), and the lower of the paper's tiers of the SA on all the pair's concepts and on its artefact-free ones
    (:meth:`TierThresholds.verdict_tier`).
    """
    if not math.isfinite(r.sa):
        return UNDEFINED_TIER  # no SA at all: the verdict's paper tier of a NaN SA
    left = r.n_concepts - r.n_excluded
    if r.n_excluded and (left < MIN_JUDGED_SHARE * r.n_concepts or not math.isfinite(r.p_value)):
        return INSUFFICIENT_TIER  # none, a minority or too few to score left without the artefacts, as in the verdict
    if not math.isfinite(r.p_value):
        return UNDEFINED_TIER
    if n_boot < MIN_VERDICT_BOOT or too_few_to_test(left, 2, confidence=confidence):
        return UNDETERMINED_TIER
    delta_ci = (r.delta_low, r.delta_high)
    gate = above_chance_gate(delta_ci, p_value=r.p_fdr, confidence=confidence)
    if gate in (CHANCE_TIER, BELOW_CHANCE_TIER):
        return gate
    if gate == UNCONFIRMED_BY_PERMUTATION or not r.survives:
        return CHANCE_TIER
    if null_aware_tier("", delta_ci, corrected=r.corrected) == CHANCE_TIER:  # a real but negligible gap
        return CHANCE_TIER
    if surface is not None and not surface.above:
        return SURFACE_TIER
    return thresholds.verdict_tier(r.sa, r.sa_judged)


def _pair_setup(aw: AlignedWords, spreads: Spreads, out: np.ndarray, i: int, j: int
                ) -> tuple[dict[str, Any], tuple[dict[str, Any], tuple[int, int], np.ndarray, RowSubset | None] | None]:
    """(the pair's row, with why it has no verdict if so; what the shared pass needs of it, None when it has no SA)."""
    R = aw.n_rows
    a, b = aw.languages[i], aw.languages[j]
    aw2 = subset_languages(aw, (a, b))
    row: dict[str, Any] = {"language_a": a, "language_b": b, "n_concepts": R, "n_excluded": int(out.sum()), "note": ""}
    s2 = Spreads(aw2, stack_limit=0)  # the pair's per-row inter sums (a point: no rows kept)
    p2 = s2.spreads(np.ones((1, R)), scaled=True)
    collapsed = collapsed_note(p2["intra_cos"][0], p2["inter_cos"][0])
    undefined = collapsed
    left = R - int(out.sum())
    if not undefined and left < MIN_BOOT_CONCEPTS:
        undefined = (f"only {left} of {R} concepts are left without the artefacts of this pair (identical strings or "
                     f"degenerate vectors); at least {MIN_BOOT_CONCEPTS} are needed, so the pair has no verdict")
    if not undefined and out.any():
        words_left = [int((np.asarray(sp.csr_matrix(inc)[~out].sum(axis=0)).ravel() > 0).sum()) for inc in aw2.incidence]
        if min(words_left) < 2:  # the verdict's 'unscorable' (metrics.affinity._artefact_exclusion's rule)
            undefined = (f"the {left} of {R} concepts left without the artefacts of this pair hold fewer than 2 distinct "
                         "words in a language: too few to score, so the pair has no verdict")
    if not undefined and out.any():
        s1 = Spreads(subset_rows(aw2, ~out), stack_limit=0).spreads(np.ones((1, left)), scaled=True)
        undefined = collapsed_note(s1["intra_cos"][0], s1["inter_cos"][0])
    row["_undefined"] = undefined
    if collapsed:  # no SA at all
        return row, None
    # tuples, cosine and Euclidean inter sums per row, the last in units of the shared spreads' scale (exact)
    row_stack = np.stack([s2.tuples, s2.row_cos, np.ldexp(s2.row_euc_scaled, s2.exponent - spreads.exponent)], axis=1)
    sub = RowSubset(spreads, ~out, languages=(i, j), row_stack=row_stack) if out.any() and not undefined else None
    return row, (row, (i, j), row_stack, sub)


def _exclusions(aw: AlignedWords, unknown_words: Mapping[str, Sequence[str]] | None) -> dict[tuple[int, int], np.ndarray]:
    """(i, j) -> the pair's artefact concepts: identical strings in the two languages, degenerate vectors, unknown tokens."""
    degenerate = degenerate_vector_groups(aw)  # once per language, not once per pair
    deg_rows = {lang: rows_with_words(aw, lang, {w for g in groups for w in g}) for lang, groups in degenerate.items()}
    no_rows = np.zeros(aw.n_rows, dtype=bool)
    # the words the model's tokenizer maps to unknown tokens only: left out of a pair as the verdict leaves them out
    unk_rows = {lang: rows_with_words(aw, lang, set(words)) for lang, words in (unknown_words or {}).items()
                if lang in aw.languages}
    excluded = {}
    for (i, a), (j, b) in itertools.combinations(enumerate(aw.languages), 2):
        excluded[i, j] = (identical_string_rows(subset_languages(aw, (a, b))) | deg_rows.get(a, no_rows)
                          | deg_rows.get(b, no_rows) | unk_rows.get(a, no_rows) | unk_rows.get(b, no_rows))
    return excluded


def _pair_without(aw: AlignedWords, pair: tuple[int, int], dropped: np.ndarray, *,
                  unknown_words: Mapping[str, Sequence[str]] | None,
                  surfaces: Mapping[tuple[int, int], AlignedWords] | None, **kw: Any
                  ) -> tuple[dict[str, Any], SurfaceComparison | None]:
    """The row of a pair whose two languages hold all-zero vectors: scored without those concepts, on its own pass.

    The verdict of the two languages (``on_zero="drop"``, the ``sa`` task's) drops them before anything else, so
    its resamples are drawn over the concepts left: the pair is scored alone on them (its artefacts and its
    surface baseline on the same concepts), not in the shared pass.
    """
    i, j = pair
    a, b = aw.languages[i], aw.languages[j]
    words = subset_rows(subset_languages(aw, (a, b)), ~dropped)
    what = (f"{int(dropped.sum())} concept(s) holding an all-zero vector in {a} or {b} were dropped before scoring "
            f"the pair, as the verdict of {a}, {b} drops them")
    if words.n_rows < MIN_BOOT_CONCEPTS:
        nan = math.nan
        return ({"language_a": a, "language_b": b, "n_concepts": words.n_rows, "n_excluded": 0, "sa": nan,
                 "ci_low": nan, "ci_high": nan, "sem": nan, "sa_judged": nan, "sa_null": nan, "delta": nan,
                 "delta_low": nan, "delta_high": nan, "delta_sem": nan, "corrected": nan, "p_value": nan,
                 "note": f"{what}; only {words.n_rows} left, at least {MIN_BOOT_CONCEPTS} are needed"}, None)
    own = None if surfaces is None else {(0, 1): subset_rows(surfaces[i, j], ~dropped)}
    rows, comparisons = _pair_rows(words, _exclusions(words, unknown_words), surfaces=own, **kw)
    row = rows[0]
    row["note"] = "; ".join(filter(None, [what, row["note"]]))
    return row, comparisons[0]


def _pair_surfaces(aw: AlignedWords, surface: AlignedWords | Mapping[tuple[str, str], AlignedWords] | None
                   ) -> dict[tuple[int, int], AlignedWords] | None:
    """(i, j) -> the surface baseline's words of the pair's two languages, checked against the model's concepts."""
    if surface is None:
        return None
    out = {}
    for (i, a), (j, b) in itertools.combinations(enumerate(aw.languages), 2):
        if isinstance(surface, AlignedWords):
            missing = [lang for lang in (a, b) if lang not in surface.languages]
            if missing:
                raise EmbeddingError(f"surface: the baseline lacks language(s) {missing} of the model's {list(aw.languages)}")
            words = subset_languages(surface, (a, b))
        elif isinstance(surface, Mapping):
            words = surface.get((a, b))
            if words is None:
                raise EmbeddingError(f"surface: no baseline words for the pair ({a!r}, {b!r})")
        else:
            raise TypeError(f"surface must be AlignedWords or a mapping (a, b) -> AlignedWords, got {type(surface).__name__}")
        if not isinstance(words, AlignedWords) or tuple(words.languages) != (a, b):
            got = list(words.languages) if isinstance(words, AlignedWords) else type(words).__name__
            raise EmbeddingError(f"surface: the baseline of the pair ({a!r}, {b!r}) holds {got}, not those two languages")
        same_labels = tuple(words.labels) == tuple(aw.labels) or not isinstance(surface, AlignedWords)  # a pair's own
        if words.n_rows != aw.n_rows or not same_labels:  # words are labelled by its two languages' words
            raise EmbeddingError(f"surface: the baseline of the pair ({a!r}, {b!r}) holds {words.n_rows} concepts that "
                                 f"are not the model's {aw.n_rows} (the same rows are needed)")
        out[i, j] = words
    return out


@on_small_space_blas  # a small space's products run on SMALL_SPACE_BLAS_THREADS (metrics.spreads)
def pair_affinity(
    aw: AlignedWords,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    thresholds: TierThresholds = DEFAULT_TIERS,
    n_perm: int = 2000,
    alpha: float = 0.05,
    should_stop: Any = None,
    distributions: dict[str, dict[str, np.ndarray]] | None = None,
    unknown_words: Mapping[str, Sequence[str]] | None = None,
    surface: AlignedWords | Mapping[tuple[str, str], AlignedWords] | None = None,
    on_zero: str = "error",
) -> PairAffinity:
    """One row per language pair: raw SA and interval, the artefact-free gap to chance, FDR-controlled p, the verdict.

    See the module docstring for the rules; ``n_perm`` permutations per pair
    (exact enumeration when a pair has at most that many re-pairings), ``alpha``
    the false discovery rate.  Fewer than 3 concepts raise
    :class:`~semanscope_nb.errors.EmbeddingError`.  ``should_stop`` (see
    :mod:`semanscope_nb.models.cancel`) is asked between bootstrap batches.

    Every pair is scored on the same multinomial resamples in one pass (the verdict's
    rule: a pair's artefact concepts weigh 0 in the counts over all concepts; see
    :func:`_pair_rows`).  ``distributions``: a dict that receives, per pair ``"a-b"``, the
    bootstrap distributions of all its concepts (keys of
    :func:`~semanscope_nb.metrics.chance.null_aware_statistics`) and, under ``"a-b.judged"``,
    those of its artefact-free concepts when it has artefacts.  ``unknown_words``: language -> the words the
    model's tokenizer maps to unknown tokens only (as :func:`~semanscope_nb.metrics.affinity.affinity_of_words`
    takes them); their concepts are artefacts of every pair of that language.

    ``surface``: the surface-form baseline (character n-gram TF-IDF) on the same concepts, as
    :func:`~semanscope_nb.metrics.affinity.affinity_of_words` takes it -- one :class:`AlignedWords` of all the
    languages, or ``(a, b)`` -> the baseline's words of that pair (its two languages, in the order of ``aw``:
    the ``pair-sa`` task passes each pair the baseline fitted on those two languages, the one the verdict of
    the two would use).  Each pair is then compared with it by the verdict's rule
    (:class:`~semanscope_nb.metrics.chance.SurfaceComparison` on its judged concepts, the same resamples) and a
    pair that does not beat it is 'not above surface form'; the columns ``surface_corrected`` (the baseline's
    chance-corrected score), ``surface_difference`` with ``surface_difference_low`` / ``surface_difference_high``
    (model minus baseline) and ``surface_concepts`` (the concepts compared) are NaN without it.

    ``on_zero``: a word with an all-zero vector (cosine undefined) raises ('error', as
    :func:`~semanscope_nb.metrics.affinity.affinity_of_words`), or ('drop', the ``sa`` and ``pair-sa`` tasks') the
    concepts holding one are dropped from the pairs of that language, each such pair scored on the concepts left as
    the verdict of its two languages scores them (``n_concepts`` counts them; a ``note`` says so).
    """
    from statsmodels.stats.multitest import multipletests

    n_boot = check_n_boot(n_boot)  # as semantic_affinity: 0 (no bootstrap: no verdict) or 2 .. MAX_RESAMPLES
    seed = check_seed(seed, allow_none=True)
    confidence = check_confidence(confidence)
    check_count("n_perm", n_perm, minimum=1)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not isinstance(thresholds, TierThresholds):  # as semantic_affinity: checked before any work
        raise TypeError(f"thresholds must be a TierThresholds, got {type(thresholds).__name__}")
    require_concepts(aw.n_rows, minimum=MIN_BOOT_CONCEPTS, what="pair_affinity")
    zero_rows = zero_vectors(aw, on_zero=on_zero).language_rows  # the verdict's rule (metrics.artefacts)
    surfaces = _pair_surfaces(aw, surface)
    kw = {"n_boot": n_boot, "n_perm": n_perm, "seed": seed, "confidence": confidence, "should_stop": should_stop,
          "distributions": distributions}
    rows, comparisons = _pair_rows(aw, _exclusions(aw, unknown_words), surfaces=surfaces, **kw)
    no_rows = np.zeros(aw.n_rows, dtype=bool)
    for k, ((i, a), (j, b)) in enumerate(itertools.combinations(enumerate(aw.languages), 2)):
        dropped = zero_rows.get(a, no_rows) | zero_rows.get(b, no_rows)
        if dropped.any():  # the verdict of these two drops the concepts first (sa task): so does their row
            rows[k], comparisons[k] = _pair_without(aw, (i, j), dropped, unknown_words=unknown_words,
                                                    surfaces=surfaces, **kw)
    table = pd.DataFrame(rows)
    nan = math.nan
    for name, read in (("surface_corrected", lambda c: c.surface_corrected.value),
                       ("surface_difference", lambda c: c.difference.value),
                       ("surface_difference_low", lambda c: c.difference.ci[0]),
                       ("surface_difference_high", lambda c: c.difference.ci[1]),
                       ("surface_concepts", lambda c: float(c.n_concepts))):
        table[name] = [float(read(c)) if c is not None else nan for c in comparisons]
    p = table["p_value"].to_numpy(dtype=float)
    ok = np.isfinite(p)
    table["p_fdr"] = np.nan
    if ok.any():
        table.loc[ok, "p_fdr"] = multipletests(p[ok], alpha=alpha, method="fdr_bh")[1]
    table["survives"] = (table["p_fdr"] < alpha).to_numpy() & ok
    verdicts, papers = [], []
    for r, comparison in zip(table.itertuples(), comparisons):
        papers.append(thresholds.classify(r.sa))
        verdicts.append(_pair_verdict(r, n_boot=n_boot, confidence=confidence, thresholds=thresholds, surface=comparison))
    table["paper_tier"] = papers
    table["verdict"] = verdicts
    notes = []
    n_pairs = int(ok.sum())
    if n_pairs and 1.0 / (1 + n_perm) > alpha / n_pairs:
        notes.append(f"with {n_pairs} pairs a lone pair above chance needs p <= {alpha / n_pairs:.2g}, but {n_perm} "
                     f"permutations cannot go below {1 / (1 + n_perm):.2g}: raise n_perm above {math.ceil(n_pairs / alpha)}")
    if (table["n_excluded"] > 0).any():
        notes.append(f"{int((table['n_excluded'] > 0).sum())} pairs were judged without their artefact concepts "
                     "(identical strings in the two languages, or degenerate vectors): see n_excluded")
    if 0 <= n_boot < MIN_VERDICT_BOOT:
        from semanscope_nb.metrics.degenerate import rough_interval_note

        notes.append(rough_interval_note(n_boot) or "")
    return PairAffinity(table, n_boot=n_boot, seed=seed, confidence=confidence, n_perm=int(n_perm), alpha=float(alpha),
                        notes=notes)
