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

A pair's ``verdict`` follows the verdict's rule (:attr:`~semanscope_nb.metrics.affinity.SAResult.tier`)
for its two languages, so a pair and :func:`~semanscope_nb.metrics.affinity.semantic_affinity` of those
two languages agree: a paper tier only when the bootstrap interval of its artefact-free gap lies above 0,
its FDR-adjusted permutation p lies below ``(1 - confidence) / 2`` (the verdict's one-sided level; the
pair's own p when it is the only pair) and below ``alpha``, and its chance-corrected score reaches
:data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`; that tier is the *lower* of the paper's tiers of
its SA on all its concepts and on its artefact-free ones, so exclusion can only lower a verdict.
"insufficient" instead of a tier when fewer than
:data:`~semanscope_nb.metrics.affinity.MIN_JUDGED_SHARE` of its concepts are left without its artefacts;
"below chance" when the interval lies below 0; "chance" otherwise (with fewer than that share left the
verdict says "insufficient" for these two as well: none of the three gives a tier); "undetermined" below
:data:`~semanscope_nb.metrics.degenerate.MIN_VERDICT_BOOT` resamples; "undefined"
(NaN, with a ``note``) when the pair has collapsed vectors or fewer than 3
artefact-free concepts (a whole input with fewer than 3 concepts raises, as every
statistic does: :mod:`semanscope_nb.metrics.degenerate`).  The smallest permutation
p-value is ``1 / (1 + n_perm)``: a lone true pair among N needs it below
``alpha / N``, so ``n_perm`` should exceed ``N / alpha`` (a note says so when it does not).

Layer: metrics.  Imports :mod:`semanscope_nb.metrics.chance` and
:mod:`semanscope_nb.metrics.artefacts`.

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

from semanscope_nb.metrics.affinity import (
    DEFAULT_TIERS,
    MIN_JUDGED_SHARE,
    AlignedWords,
    TierThresholds,
    sa_percentile_estimate,
)
from semanscope_nb.metrics.artefacts import degenerate_vector_groups, identical_string_rows, rows_with_words, subset_languages, subset_rows
from semanscope_nb.metrics.chance import (
    BELOW_CHANCE_TIER,
    CHANCE_TIER,
    INSUFFICIENT_TIER,
    UNCONFIRMED_BY_PERMUTATION,
    NullParts,
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
    (permutation test), ``p_fdr`` (Benjamini-Hochberg), ``survives``;
    ``paper_tier``, ``verdict``, ``note``.  :meth:`estimates` gives the intervals
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
               distributions: dict[str, dict[str, np.ndarray]] | None = None) -> list[dict[str, Any]]:
    """Every pair's numbers from one bootstrap pass: raw SA on all its concepts, the gap and permutation p on its artefact-free ones.

    One :class:`~semanscope_nb.metrics.spreads.Spreads` of all languages and one multinomial
    draw per resample (``resample_counts(R, n_boot, seed)``, the verdict's): each batch's
    products with the vectors give every language's weighted sums once, and a pair's SA,
    chance level, gap and corrected score follow from its two languages' sums and its own
    per-row inter sums (:meth:`Spreads.from_parts`, :func:`~semanscope_nb.metrics.chance.null_inter`).
    A pair's artefact concepts weigh 0 in those same counts
    (:class:`~semanscope_nb.metrics.spreads.RowSubset` on the pair's languages), as in the verdict.
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

    def statistics(counts: np.ndarray) -> list[tuple[dict, dict | None]]:
        spreads.spreads(counts, scaled=True)  # every language's products, once for all pairs
        intra, occ = spreads.intra_parts(counts), spreads.occurrence_parts(counts)
        out = []
        for _, (i, j), row_stack, sub in live:
            full = statistics_from_parts(spreads, counts @ row_stack, [intra[i], intra[j]], [occ[i], occ[j]],
                                         [counts @ n_alt[i], counts @ n_alt[j]])
            out.append((full, subset_statistics(sub, counts) if sub is not None else None))
        return out

    points = statistics(ones)
    dists: list[tuple[dict[str, list], dict[str, list]]] = [({}, {}) for _ in live]
    if n_boot and live:
        for counts in resample_counts(R, n_boot, seed=seed, batch=spreads.bootstrap_batch(n_boot)):
            check_stop(should_stop, "bootstrap")
            for (d_full, d_sub), (full, sub) in zip(dists, statistics(counts)):
                for k, v in full.items():
                    d_full.setdefault(k, []).append(v)
                for k, v in (sub or {}).items():
                    d_sub.setdefault(k, []).append(v)
    kw = {"n_boot": n_boot, "confidence": confidence}
    for (row, (i, j), _, sub), (p_full, p_sub), (d_full, d_sub) in zip(live, points, dists):
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
    return [_with_nan_where_undefined(row) for row in rows]


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


def _pair_verdict(r: Any, *, n_boot: int, confidence: float, thresholds: TierThresholds) -> str:
    """One pair's verdict by :attr:`SAResult.tier`'s rule for the pair's two languages, with ``p_fdr`` as its p-value.

    No score: 'undefined'; too few resamples or concepts to call: 'undetermined'; then the verdict's gate
    (:func:`~semanscope_nb.metrics.chance.above_chance_gate` on the gap's interval and the FDR-adjusted
    permutation p, which is the pair's own p when it is the only pair; ``survives`` as well), the effect-size
    floor (:data:`~semanscope_nb.metrics.chance.MIN_CORRECTED`), and the lower of the paper's tiers of the SA on
    all the pair's concepts and on its artefact-free ones (:meth:`TierThresholds.verdict_tier`), which needs
    :data:`~semanscope_nb.metrics.affinity.MIN_JUDGED_SHARE` of its concepts left ('insufficient' otherwise, as
    the verdict).  One difference stays: a pair with fewer left that is not above chance says 'chance' or 'below
    chance' where :attr:`SAResult.tier` says 'insufficient' (none gives a tier).
    """
    if not math.isfinite(r.p_value):
        return UNDEFINED_TIER
    if n_boot < MIN_VERDICT_BOOT or too_few_to_test(r.n_concepts - r.n_excluded, 2, confidence=confidence):
        return UNDETERMINED_TIER
    delta_ci = (r.delta_low, r.delta_high)
    gate = above_chance_gate(delta_ci, p_value=r.p_fdr, confidence=confidence)
    if gate in (CHANCE_TIER, BELOW_CHANCE_TIER):
        return gate
    if gate == UNCONFIRMED_BY_PERMUTATION or not r.survives:
        return CHANCE_TIER
    if null_aware_tier("", delta_ci, corrected=r.corrected) == CHANCE_TIER:  # a real but negligible gap
        return CHANCE_TIER
    if r.n_excluded and r.n_concepts - r.n_excluded < MIN_JUDGED_SHARE * r.n_concepts:
        return INSUFFICIENT_TIER  # a tier needs most of the concepts left, as in the verdict
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
        s1 = Spreads(subset_rows(aw2, ~out), stack_limit=0).spreads(np.ones((1, left)), scaled=True)
        undefined = collapsed_note(s1["intra_cos"][0], s1["inter_cos"][0])
    row["_undefined"] = undefined
    if collapsed:  # no SA at all
        return row, None
    # tuples, cosine and Euclidean inter sums per row, the last in units of the shared spreads' scale (exact)
    row_stack = np.stack([s2.tuples, s2.row_cos, np.ldexp(s2.row_euc_scaled, s2.exponent - spreads.exponent)], axis=1)
    sub = RowSubset(spreads, ~out, languages=(i, j), row_stack=row_stack) if out.any() and not undefined else None
    return row, (row, (i, j), row_stack, sub)


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
    """
    from statsmodels.stats.multitest import multipletests

    n_boot = check_n_boot(n_boot, allow_zero=False, minimum=1)
    seed = check_seed(seed, allow_none=True)
    confidence = check_confidence(confidence)
    check_count("n_perm", n_perm, minimum=1)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    require_concepts(aw.n_rows, minimum=MIN_BOOT_CONCEPTS, what="pair_affinity")
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
    rows = _pair_rows(aw, excluded, n_boot=n_boot, n_perm=n_perm, seed=seed, confidence=confidence, should_stop=should_stop,
                      distributions=distributions)
    table = pd.DataFrame(rows)
    p = table["p_value"].to_numpy(dtype=float)
    ok = np.isfinite(p)
    table["p_fdr"] = np.nan
    if ok.any():
        table.loc[ok, "p_fdr"] = multipletests(p[ok], alpha=alpha, method="fdr_bh")[1]
    table["survives"] = (table["p_fdr"] < alpha).to_numpy() & ok
    verdicts, papers = [], []
    for r in table.itertuples():
        papers.append(thresholds.classify(r.sa))
        verdicts.append(_pair_verdict(r, n_boot=n_boot, confidence=confidence, thresholds=thresholds))
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
