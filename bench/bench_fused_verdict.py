"""What the verdict costs beside a plain SA bootstrap, and what the degenerate-vector check costs beside point SA.

Run:  .venv/bin/python bench/bench_fused_verdict.py [--quick] [--tree PATH --name NAME] [--coverage] [--only SECTIONS]

``--tree``: import ``semanscope_nb`` from another checkout (e.g. the main branch, for the
"before" rows); each run writes ``bench/results/<name>.json`` of ratios measured within
that run only (CPU time, minimum of interleaved repeats, BLAS threads stated).

1. Verdict overhead (USE, conceptual-space 481 concepts x 6 languages, 1000 resamples,
   one BLAS thread): ``dataset_affinity`` from the warm cache (every default: chance
   level, artefact-free verdict, surface-form null) -- as a process's first call (the
   baseline's statistics forgotten in memory; read from the on-disk store where the tree
   has one), as the very first call (neither in memory nor on disk) and with the
   baseline's statistics in memory -- and ``affinity_of_words`` with and
   without the surface baseline, against a plain SA + 1000-resample bootstrap (the spreads
   of 1000 multinomial resamples, cosine and Euclidean SA, percentile intervals).
   The pair matrix (``pair_affinity``, every language pair with its own artefact-free gap and
   permutation test) against one verdict pass (``affinity_of_words`` without the surface null).
2. SA + 1000 bootstrap with every verdict statistic (``semantic_affinity``: SA, chance
   level, gap, corrected score, artefact check, Euclidean chance level, language-centred
   SA) at 349 concepts x 2 languages x 512 dims, default BLAS threads, against the product
   floor: one float64 (1000 x 349) @ (349 x 512) product.
   And the surface baseline's own bootstrap on the first 40 concepts (what a quick benchmark runs per data set):
   its exact reduced form (``reduced_words``) against the 4096-dim sparse products.
3. The degenerate-vector check (``degenerate_vector_groups``, what ``find_artefacts``
   runs) at 200,000 concepts x 3 languages x 384 dims, float32, against the point-SA core
   (``Spreads``, the point spreads and the closed-form chance level).
4. The Euclidean chance level by permutation (``euclidean_chance_by_permutation`` at its
   defaults, and ``semantic_affinity(n_boot=0)`` end to end) at 20,000 concepts x 3
   languages x 384 dims, float32 off the unit sphere, against the same point-SA core
   (section ``euclidean``; one BLAS thread).
5. ``--coverage``: the 95% interval of the artefact-free SA and gap when the left-out
   concepts weigh 0 in the full set's counts (the rule of ``RowSubset``) against fresh
   multinomial draws over the kept concepts, on random aligned data with a known
   population value.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _args(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes: 200 resamples, 20,000 concepts for the check")
    ap.add_argument("--tree", default=str(HERE.parent), help="the checkout whose semanscope_nb is measured")
    ap.add_argument("--name", default=None, help="results name (default fused-verdict[-quick])")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--coverage", action="store_true", help="also run the coverage simulation of the subset rule")
    ap.add_argument("--only", default=None,
                    help="comma-separated sections to run: verdict, reduced, floor, degenerate, euclidean (default: all five; "
                         "euclidean is 20,000 concepts with or without --quick)")
    return ap.parse_args(argv)


ARGS = _args(sys.argv[1:])
sys.path.insert(0, ARGS.tree)  # the measured tree's semanscope_nb, not an installed one
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from _results import interleaved_min, row, write_results  # noqa: E402
from _timing import sa_floor_case, scratch_dir  # noqa: E402

import semanscope_nb as snb  # noqa: E402
from semanscope_nb.metrics.affinity import affinity_of_words  # noqa: E402
from semanscope_nb.metrics.chance import NullParts, resample_counts  # noqa: E402
from semanscope_nb.metrics.spreads import AlignedWords, Spreads  # noqa: E402


def plain_sa_bootstrap(aw: AlignedWords, n_boot: int) -> object:
    """The baseline: SA (cosine, Euclidean) on ``n_boot`` multinomial resamples and its percentile intervals, nothing else."""
    s = Spreads(aw)
    out = []
    for c in resample_counts(aw.n_rows, n_boot, seed=0, batch=s.bootstrap_batch(n_boot)):
        r = s.spreads(c, scaled=True)
        out.append(np.stack([r["intra_cos"] / (r["intra_cos"] + r["inter_cos"]), r["intra_euc"] / (r["intra_euc"] + r["inter_euc"])]))
    return np.quantile(np.concatenate(out, axis=1), [0.025, 0.975], axis=1)  # the same code in every measured tree


def blas_threads() -> int:
    return max((i.get("num_threads", 1) for i in threadpool_info()), default=1)


def verdict_rows(n_boot: int, repeat: int) -> list[dict]:
    from semanscope_nb.runs.task_library import aligned_words, unknown_words

    ds = snb.load_dataset("conceptual-space")
    e = snb.embed(ds, "use-multilingual", progress=False)
    aw = aligned_words(e)
    surface = aligned_words(snb.embed(ds, "tfidf-char", progress=False))
    uw = unknown_words(e, aw)
    snb.dataset_affinity(ds, "use-multilingual", n_boot=n_boot, seed=0, progress=False)  # warm: caches, lazy imports
    from semanscope_nb.metrics import chance

    def fresh(f):
        """``f`` with the baseline's statistics of earlier calls forgotten in memory (trees that keep them: issue 21);
        a tree with the on-disk store (chance._SURFACE_STORE) reads them from it, as a fresh process would."""
        def run():
            getattr(chance, "_SURFACE_DONE", {}).clear()
            return f()
        return run


    empty = str(scratch_dir("bench-surface-store-"))

    def cold(f):
        """``f`` with the baseline's statistics neither in memory nor on disk (a store in an emptied folder)."""
        store = getattr(chance, "_SURFACE_STORE", None)
        if store is None:
            return fresh(f)
        own = type(store)(empty)

        def run():
            getattr(chance, "_SURFACE_DONE", {}).clear()
            for old in Path(empty).glob("*.bin"):
                old.unlink()
            chance._SURFACE_STORE = own
            try:
                return f()
            finally:
                chance._SURFACE_STORE = store
        return run

    from semanscope_nb.metrics.pairs import pair_affinity

    with threadpool_limits(1):
        best = interleaved_min({
            "plain": lambda: plain_sa_bootstrap(aw, n_boot),
            "dataset_affinity": fresh(lambda: snb.dataset_affinity(ds, "use-multilingual", n_boot=n_boot, seed=0, progress=False)),
            "dataset_affinity_cold": cold(lambda: snb.dataset_affinity(ds, "use-multilingual", n_boot=n_boot, seed=0, progress=False)),
            "dataset_affinity_known": lambda: snb.dataset_affinity(ds, "use-multilingual", n_boot=n_boot, seed=0, progress=False),
            "stats": lambda: affinity_of_words(aw, n_boot=n_boot, seed=0, unknown_words=uw),
            "stats_surface": fresh(lambda: affinity_of_words(aw, n_boot=n_boot, seed=0, unknown_words=uw, surface=surface)),
            "pairs": lambda: pair_affinity(aw, n_boot=n_boot, n_perm=n_boot, seed=0),
            **({"pairs_surface": cold(lambda: pair_affinity(aw, n_boot=n_boot, n_perm=n_boot, seed=0, surface=surface)),
                "pairs_surface_known": lambda: pair_affinity(aw, n_boot=n_boot, n_perm=n_boot, seed=0, surface=surface)}
               if "surface" in inspect.signature(pair_affinity).parameters else {}),  # trees with the pairs' surface check
        }, repeat=repeat, clock="cpu")
    r = snb.dataset_affinity(ds, "use-multilingual", n_boot=n_boot, seed=0, progress=False)
    base = f"plain SA + {n_boot}-resample bootstrap (spreads of the resamples, percentile intervals)"
    shape = f"USE, conceptual-space {aw.n_rows} x {len(aw.languages)}, {n_boot} resamples"
    n_pairs = len(aw.languages) * (len(aw.languages) - 1) // 2
    note = f"tier {r.tier}; {sum(r.excluded_concepts.values())} concepts left out of the verdict"
    return [
        row(f"`dataset_affinity` (defaults, warm cache: chance level, artefact-free verdict, surface null; first call in "
            f"the process: the baseline's statistics from the on-disk store where the tree has one), {shape}",
            best["dataset_affinity"], best["plain"], baseline_name=base, threads=1, repeats=repeat, clock="cpu",
            target="<= 1.3", note=note),
        row(f"`dataset_affinity` as above, the baseline's statistics neither in the process nor on disk (the very first "
            f"call on this data set, seed and n_boot), {shape}", best["dataset_affinity_cold"], best["plain"],
            baseline_name=base, threads=1, repeats=repeat, clock="cpu", note=note),
        row(f"`dataset_affinity` as above, the baseline's statistics on these concepts already in the process (a benchmark's "
            f"second model on the data set), {shape}", best["dataset_affinity_known"], best["plain"], baseline_name=base, threads=1,
            repeats=repeat, clock="cpu", note=note),
        row(f"`affinity_of_words` with every verdict statistic but the surface null, {shape}", best["stats"], best["plain"],
            baseline_name=base, threads=1, repeats=repeat, clock="cpu"),
        row(f"`affinity_of_words` with every verdict statistic and the surface null (tfidf-char), {shape}",
            best["stats_surface"], best["plain"], baseline_name=base, threads=1, repeats=repeat, clock="cpu"),
        row(f"pair matrix (`pair_affinity`: {n_pairs} language pairs, each with SA, chance level, gap on its artefact-free "
            f"concepts and a permutation test of {n_boot} re-pairings), {shape}", best["pairs"], best["stats"],
            baseline_name="one verdict pass (`affinity_of_words` with every verdict statistic but the surface null)",
            threads=1, repeats=repeat, clock="cpu"),
    ] + ([
        row(f"pair matrix as above with each pair's surface-form check (`surface=` tfidf-char: the baseline's statistics "
            f"on each pair's judged concepts neither in the process nor on disk), {shape}", best["pairs_surface"],
            best["pairs"], baseline_name="the pair matrix without the surface check", threads=1, repeats=repeat,
            clock="cpu"),
        row(f"pair matrix with the surface check, the baseline's statistics of every pair already in the process (a "
            f"benchmark's second model), {shape}", best["pairs_surface_known"], best["pairs"],
            baseline_name="the pair matrix without the surface check", threads=1, repeats=repeat, clock="cpu"),
    ] if "pairs_surface" in best else [])


def reduced_rows(n_boot: int, repeat: int, n: int = 40) -> list[dict]:
    """The surface baseline (tfidf-char) of the first ``n`` concepts: its exact reduced form against the sparse products.

    What a quick benchmark bootstraps per data set: ``verdict_bootstrap`` of the baseline's own words (chance level,
    gap, corrected score) with ``Spreads(aw)`` (reduced: ``reduced_words``) and ``Spreads(aw, reduce=False)`` (the
    4096-dim sparse products).  Trees without the reduced form measure the sparse route twice.
    """
    import inspect

    from semanscope_nb.metrics.artefacts import subset_rows
    from semanscope_nb.metrics.chance import verdict_bootstrap
    from semanscope_nb.runs.task_library import aligned_words

    aw = aligned_words(snb.embed(snb.load_dataset("conceptual-space"), "tfidf-char", progress=False))
    aw = subset_rows(aw, np.arange(aw.n_rows) < n)
    can_reduce = "reduce" in inspect.signature(Spreads).parameters
    kw_sparse = {"reduce": False} if can_reduce else {}
    with threadpool_limits(1):
        best = interleaved_min({
            "reduced": lambda: verdict_bootstrap(aw, n_boot=n_boot, seed=0, spreads=Spreads(aw)),
            "sparse": lambda: verdict_bootstrap(aw, n_boot=n_boot, seed=0, spreads=Spreads(aw, **kw_sparse)),
        }, repeat=repeat, clock="cpu")
    words = sum(v.shape[0] for v in aw.vectors)
    return [row(f"surface baseline (tfidf-char) bootstrap, first {n} concepts of conceptual-space ({words} words, 4096 dims), "
                f"{n_boot} resamples: exact reduced form ({words} dims)", best["reduced"], best["sparse"],
                baseline_name="the same on 4096-dim sparse products", threads=1, repeats=repeat, clock="cpu",
                note="" if can_reduce else "this tree has no reduced form: both sides are the sparse route")]


#: seconds slept (untimed) before each timed SA call of the floor section: longer than OpenBLAS's thread timeout
#: (2**28 cycles, about 0.1 s), so the worker threads the two-thread floor product left spinning are asleep again
SETTLE_S = 0.3


def floor_rows(repeat: int) -> list[dict]:
    """SA + 1000 resamples against the product floor, CPU and wall time, default BLAS threads.

    The floor runs on the default threads (two here); after it, OpenBLAS's idle worker keeps spinning for its
    thread timeout (about 0.1 s of a core) before it sleeps.  A function timed right after the floor is charged
    that spin in CPU time -- SA runs its small-space verdict pinned to one BLAS thread and never wakes that worker,
    so the spin is the floor's, not SA's.  SA is therefore timed after ``SETTLE_S`` of untimed sleep (the floor
    stays hot, as before); the note gives SA's CPU time timed right after the floor as well.
    """
    R, d, B = 349, 512, 1000
    E, C, X, _ = sa_floor_case(R, d, B)  # the same case as bench_sa's
    snb.semantic_affinity(E, n_boot=B, seed=0), C @ X  # warm-up
    threads = blas_threads()
    fns = {"sa": lambda: snb.semantic_affinity(E, n_boot=B, seed=0), "floor": lambda: C @ X}
    unsettled = interleaved_min(fns, repeat=max(repeat, 5), clock="cpu")["sa"]
    out = []
    for clock in ("cpu", "wall"):
        best = interleaved_min(fns, repeat=max(repeat, 5), clock=clock, settle={"sa": SETTLE_S})
        note = (f"SA timed after {SETTLE_S} s of untimed sleep (the floor's spinning BLAS worker asleep); timed right "
                f"after the floor product instead: {unsettled * 1e3:.1f} ms CPU") if clock == "cpu" else \
            f"SA timed after {SETTLE_S} s of untimed sleep"
        out.append(row(f"SA + {B} bootstrap with every verdict statistic (`semantic_affinity`), {R} x 2 x {d}, {clock} time",
                       best["sa"], best["floor"], baseline_name=f"one float64 ({B} x {R}) @ ({R} x {d}) product",
                       threads=f"default ({threads})", repeats=max(repeat, 5), clock=clock, target="<= 10 (aim 5)",
                       note=note))
    from semanscope_nb.metrics import chance as chance_module, spreads as spreads_module

    # a tree that keeps seeded draws between calls (issue 21: chance.seeded_repairings, resample_counts) hands the rows
    # above the warm-up's draws; here every call draws afresh, as a first call for these concepts and seed does
    memos = [m for m in (getattr(chance_module, n, None) for n in ("_REPAIRINGS", "_RESAMPLES")) if m is not None]

    def drawn_afresh():
        for m in memos:
            m.clear()
        return snb.semantic_affinity(E, n_boot=B, seed=0)

    for clock in ("cpu", "wall"):
        best = interleaved_min({"sa": drawn_afresh, "floor": fns["floor"]}, repeat=max(repeat, 5), clock=clock,
                               settle={"sa": SETTLE_S})
        out.append(row(f"SA + {B} bootstrap as above, every seeded draw made afresh (none kept from an earlier call), "
                       f"{clock} time", best["sa"], best["floor"], baseline_name=f"one float64 ({B} x {R}) @ ({R} x {d}) "
                       "product", threads=f"default ({threads})", repeats=max(repeat, 5), clock=clock,
                       note="the rows above: the draws of the warm-up call kept" if memos else "this tree keeps none"))
    probe = getattr(spreads_module, "_free_cpus", None)
    if probe is not None and threads > 1:  # the tree runs a pinned verdict's blocks on a free CPU: that CPU on and off
        def forced(n: int):
            def run():
                spreads_module._free_cpus = lambda: n
                try:
                    return snb.semantic_affinity(E, n_boot=B, seed=0)
                finally:
                    spreads_module._free_cpus = probe
            return run

        for clock in ("wall", "cpu"):
            best = interleaved_min({"second": forced(1), "one": forced(0)}, repeat=max(repeat, 5), clock=clock,
                                   settle={"second": SETTLE_S, "one": SETTLE_S})
            out.append(row(f"SA + {B} bootstrap as above with its blocks and side jobs on a second thread (a free CPU "
                           f"assumed), {clock} time", best["second"], best["one"],
                           baseline_name="the same with no second thread (no free CPU assumed)", threads="pinned 1 + "
                           "a second Python thread", repeats=max(repeat, 5), clock=clock,
                           note="what the free-CPU check chooses between; the same bits either way"))
    return out


def degenerate_rows(n: int, repeat: int) -> list[dict]:
    from semanscope_nb.metrics.artefacts import degenerate_vector_groups

    L, d = 3, 384
    rng = np.random.default_rng(0)
    E = [rng.standard_normal((n, d), dtype=np.float32) for _ in range(L)]
    eye = sp.identity(n, format="csr")
    aw = AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(E), (eye,) * L, tuple(map(str, range(n))))

    def core():
        s = Spreads(aw)
        ones = np.ones((1, n))
        s.spreads(ones, scaled=True)
        NullParts(aw, s).inter(ones)

    import inspect

    fns = {"core": core, "check": lambda: degenerate_vector_groups(aw)}
    if "norms" in inspect.signature(degenerate_vector_groups).parameters:  # the tree takes the verdict's Spreads norms
        with threadpool_limits(1):
            norms = Spreads(aw).norms
        fns["with_norms"] = lambda: degenerate_vector_groups(aw, norms=norms)
    with threadpool_limits(1):
        best = interleaved_min(fns, repeat=repeat, clock="cpu")
    base = "point-SA core (Spreads, point spreads, chance level)"
    out = [row(f"degenerate-vector check (`degenerate_vector_groups`), {n:,} x {L} x {d} float32", best["check"], best["core"],
               baseline_name=base, threads=1, repeats=repeat, clock="cpu", target="<= 0.15")]
    if "with_norms" in best:
        out.append(row(f"degenerate-vector check given the norms of the `Spreads` the verdict builds anyway (as "
                       f"`semantic_affinity` runs it), {n:,} x {L} x {d} float32", best["with_norms"], best["core"],
                       baseline_name=base, threads=1, repeats=repeat, clock="cpu", target="<= 0.15"))
    return out


def euclidean_chance_rows(n: int, repeat: int) -> list[dict]:
    from semanscope_nb.metrics.chance import euclidean_chance_by_permutation

    L, d = 3, 384
    rng = np.random.default_rng(1)
    base = rng.standard_normal((n, d), dtype=np.float32)
    E = [(base + rng.standard_normal((n, d), dtype=np.float32)) * (1 + rng.random((n, 1), dtype=np.float32))
         for _ in range(L)]  # norms between about 28 and 56: off the unit sphere, so the chance level is permuted
    eye = sp.identity(n, format="csr")
    aw = AlignedWords(tuple(f"l{k}" for k in range(L)), tuple(E), (eye,) * L, tuple(map(str, range(n))))
    emb = {f"l{k}": v for k, v in enumerate(E)}

    def core():
        s = Spreads(aw)
        ones = np.ones((1, n))
        s.spreads(ones, scaled=True)
        NullParts(aw, s).inter(ones)

    with threadpool_limits(1):
        best = interleaved_min({"core": core, "chance": lambda: euclidean_chance_by_permutation(aw, seed=0),
                                "sa": lambda: snb.semantic_affinity(emb, n_boot=0)}, repeat=repeat, clock="cpu")
    value = euclidean_chance_by_permutation(aw, seed=0)[0]
    base_name = "point-SA core (Spreads, point spreads, chance level)"
    shape = f"{n:,} x {L} x {d} float32 off the unit sphere"
    return [
        row(f"Euclidean chance level by permutation (`euclidean_chance_by_permutation`, defaults), {shape}",
            best["chance"], best["core"], baseline_name=base_name, threads=1, repeats=repeat, clock="cpu",
            note=f"chance SA {value:.6f}"),
        row(f"`semantic_affinity(n_boot=0)` end to end (with the Euclidean chance level), {shape}",
            best["sa"], best["core"], baseline_name=base_name, threads=1, repeats=repeat, clock="cpu"),
    ]


def coverage_rows(n_data: int = 200, R: int = 120, n_boot: int = 300) -> list[dict]:
    """Coverage of the artefact-free SA and gap intervals: zeroed full-set counts against fresh draws over the kept rows."""
    from semanscope_nb.metrics.artefacts import subset_rows
    from semanscope_nb.metrics.chance import _estimate, null_aware_statistics

    try:
        from semanscope_nb.metrics.chance import verdict_bootstrap
    except ImportError:  # the tree before the fused pass
        return []
    rng = np.random.default_rng(0)
    P, d = 20_000, 16
    base = rng.normal(size=(P, d))
    pop = [base, base + 1.5 * rng.normal(size=(P, d))]
    marked = rng.random(P) < 0.3  # the population's "artefacts": left out of the verdict
    clean = np.flatnonzero(~marked)
    eye = sp.identity(clean.size, format="csr")
    aw_pop = AlignedWords(("en", "de"), tuple(v[clean] for v in pop), (eye, eye), tuple(map(str, clean)))
    s = Spreads(aw_pop)
    truth = null_aware_statistics(s, NullParts(aw_pop, s), np.ones((1, clean.size)))
    hits = {("zeroed", k): 0 for k in ("sa", "delta")} | {("fresh", k): 0 for k in ("sa", "delta")}
    for i in range(n_data):
        take = rng.choice(P, size=R, replace=False)
        eye_r = sp.identity(R, format="csr")
        aw = AlignedWords(("en", "de"), tuple(v[take] for v in pop), (eye_r, eye_r), tuple(map(str, range(R))))
        keep = ~marked[take]
        zeroed = verdict_bootstrap(aw, n_boot=n_boot, seed=i, keep=keep).subset
        sub = subset_rows(aw, keep)
        s2 = Spreads(sub)
        p2 = NullParts(sub, s2)
        point = null_aware_statistics(s2, p2, np.ones((1, sub.n_rows)))
        boot = [null_aware_statistics(s2, p2, c) for c in resample_counts(sub.n_rows, n_boot, seed=i)]
        for k in ("sa", "delta"):
            ci = getattr(zeroed, k).ci
            hits[("zeroed", k)] += ci[0] <= truth[k][0] <= ci[1]
            fresh = _estimate(point[k][0], np.concatenate([b[k] for b in boot]), 0.95).ci
            hits[("fresh", k)] += fresh[0] <= truth[k][0] <= fresh[1]
    out = []
    for k, what in (("sa", "artefact-free SA"), ("delta", "artefact-free gap SA - chance")):
        out.append(row(f"coverage of the 95% interval of the {what}: left-out concepts as zero weights in the full set's "
                       f"counts ({n_data} data sets of {R} concepts, 30% left out, {n_boot} resamples)",
                       hits[("zeroed", k)] / n_data, hits[("fresh", k)] / n_data, unit="share",
                       baseline_name="fresh multinomial draws over the kept concepts", threads="default", repeats=1,
                       clock="n/a", target="ratio about 1 (both near 0.95)"))
    return out


def main() -> int:
    n_boot = 200 if ARGS.quick else 1000
    load = os.getloadavg()
    print(f"tree {ARGS.tree}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    t = time.perf_counter()
    only = set(ARGS.only.split(",")) if ARGS.only else {"verdict", "reduced", "floor", "degenerate", "euclidean"}
    rows = verdict_rows(n_boot, ARGS.repeat) if "verdict" in only else []
    rows += reduced_rows(n_boot, max(ARGS.repeat, 5)) if "reduced" in only else []
    rows += floor_rows(ARGS.repeat) if "floor" in only else []
    rows += degenerate_rows(20_000 if ARGS.quick else 200_000, ARGS.repeat) if "degenerate" in only else []
    rows += euclidean_chance_rows(20_000, ARGS.repeat) if "euclidean" in only else []
    if ARGS.coverage:
        rows += coverage_rows(n_data=60 if ARGS.quick else 200)
    load = os.getloadavg()
    for r in rows:
        r["note"] = ((r.get("note") or "") + f"; load average {load[0]:.1f} at the end").lstrip("; ")
    name = ARGS.name or ("fused-verdict-quick" if ARGS.quick else "fused-verdict")
    args = [Path(a).name if a.startswith("/") else a for a in sys.argv[1:]]  # no home paths in shared results
    write_results(name, rows, script="bench/bench_fused_verdict.py", args=args)
    print(f"{time.perf_counter() - t:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
