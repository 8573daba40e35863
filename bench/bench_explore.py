"""Benchmark: from a model-dropdown change to updated chart data in the ExplorePanel.

Measures, on one dataset (default: conceptual-space, en-zh, all concepts):

* cold embedding of the dataset (empty cache)                    -- the baseline a cache saves
* dropdown change to a model whose embeddings are cached, projection not cached
* dropdown change with the projection cached (a fresh panel sharing the projection cache)
* dropdown back to a model the panel has seen (everything memoised)
* tier-slider change (must run neither SA nor the projection)
* model change in the panel, cold (empty embedding cache: model load + encode + SA + projection)
  and warm (embeddings cached), each as wall time from the dropdown change to the new chart data
* projection switch (PHATE -> PCA, -> UMAP, -> t-SNE: uncached; back to PHATE: memoised)
* word search (the chart only)

each with its breakdown (dataset read, embed lookup, SA + bootstrap, projection, chart spec),
and ratios against the uncached dropdown change measured in the same run.

    python bench/bench_explore.py                    # full dataset, n_boot 200 (the panel's default)
    python bench/bench_explore.py --max-concepts 100 --n-boot 1000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import semanscope_nb as snb
from semanscope_nb.plots.projection import ProjectionCache
from semanscope_nb.widgets import ExplorePanel


def fmt(t: dict[str, float]) -> str:
    keys = ("dataset", "embed", "sa", "projection", "chart", "total")
    return "  ".join(f"{k} {t.get(k, 0.0):7.3f}s" for k in keys)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="conceptual-space")
    ap.add_argument("--languages", default="en,zh")
    ap.add_argument("--models", default="use-multilingual,multilingual-e5-small")
    ap.add_argument("--max-concepts", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--method", default="phate")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the cheap (memoised / tier) steps")
    args = ap.parse_args()
    models = args.models.split(",")
    langs = args.languages.split(",")
    ds = snb.load_dataset(args.dataset, languages=langs)
    if args.max_concepts:
        ds = ds.subset(range(min(args.max_concepts, len(ds))))
    n_texts = len(ds.all_texts())
    print(f"dataset {ds.name} ({', '.join(langs)}): {len(ds)} concepts, {n_texts} texts; n_boot {args.n_boot}; "
          f"projection {args.method}; models {models}")

    with tempfile.TemporaryDirectory() as tmp:
        cache = snb.EmbeddingCache(tmp)
        cold = {}
        for m in models:  # baseline: cold embedding (model load + encode + store)
            t0 = time.perf_counter()
            snb.embed_dataset(ds, m, cache=cache, progress=False)
            cold[m] = time.perf_counter() - t0
            print(f"cold embed {m:<24} {cold[m]:7.3f}s  (model load + encode {n_texts} texts + store)")

        pc = ProjectionCache()
        settings = snb.ProjectionSettings(args.method)
        panel = ExplorePanel(model=models[0], dataset=args.dataset, languages=langs, max_concepts=args.max_concepts,
                             n_boot=args.n_boot, cache=cache, projection=settings, projection_cache=pc)
        print(f"\nfirst draw  {models[0]:<24} {fmt(panel.timings)}")

        t0 = time.perf_counter()
        panel.models.value = models[1]
        wall_uncached = time.perf_counter() - t0
        uncached = dict(panel.timings)
        print(f"dropdown -> {models[1]:<24} {fmt(uncached)}   [embeddings cached, projection NOT cached; wall {wall_uncached:.3f}s]")
        assert panel.error is None, panel.error

        # projection cached: a new panel (empty memo) sharing the projection cache; embeddings from sqlite, SA recomputed
        panel2 = ExplorePanel(model=models[0], dataset=args.dataset, languages=langs, max_concepts=args.max_concepts,
                              n_boot=args.n_boot, cache=cache, projection=settings, projection_cache=pc)
        computed_before = pc.computed
        t0 = time.perf_counter()
        panel2.models.value = models[1]
        wall_cached = time.perf_counter() - t0
        cached = dict(panel2.timings)
        assert pc.computed == computed_before, "projection was recomputed"
        print(f"dropdown -> {models[1]:<24} {fmt(cached)}   [embeddings cached, projection cached; wall {wall_cached:.3f}s]")

        memo, tier = [], []
        for i in range(args.repeats):
            t0 = time.perf_counter()
            panel.models.value = models[0] if i % 2 == 0 else models[1]
            memo.append(time.perf_counter() - t0)
        counts = dict(panel.counts)
        for i in range(args.repeats):
            t0 = time.perf_counter()
            panel.tiers.value = snb.TierThresholds(great=0.6 + 0.01 * (i + 1), good=0.5)
            tier.append(time.perf_counter() - t0)
        assert panel.counts["sa"] == counts["sa"] and panel.counts["projection"] == counts["projection"]
        print(f"dropdown back to a seen model (memoised), median of {args.repeats}: {statistics.median(memo):.3f}s")
        print(f"tier slider (no SA, no projection),    median of {args.repeats}: {statistics.median(tier):.3f}s  "
              f"[SA runs {counts['sa']}, projection runs {counts['projection']} before and after]")

        # model change in the panel: cold (a fresh cache folder: model load + encode) vs warm (embeddings cached)
        with tempfile.TemporaryDirectory() as tmp2:
            cold_panel = ExplorePanel(model=models[0], dataset=args.dataset, languages=langs, max_concepts=args.max_concepts,
                                      n_boot=args.n_boot, cache=snb.EmbeddingCache(tmp2), projection=settings,
                                      projection_cache=pc)
            t0 = time.perf_counter()
            cold_panel.models.value = models[1]
            wall_cold_change = time.perf_counter() - t0
            assert cold_panel.error is None, cold_panel.error
            print(f"\nmodel change COLD (empty cache) -> {models[1]:<14} {fmt(cold_panel.timings)}   [wall {wall_cold_change:.3f}s]")
        print(f"model change WARM (embeddings cached, projection cached)  wall {wall_cached:.3f}s; "
              f"cold / warm = {wall_cold_change / wall_cached:.1f}x")

        proj = {}
        for method in ("pca", "umap", "tsne", args.method):
            t0 = time.perf_counter()
            panel.projection_picker.method.value = method
            proj[method] = time.perf_counter() - t0
            assert panel.error is None, panel.error
            print(f"projection switch -> {method:<6} {fmt(panel.timings)}   [wall {proj[method]:.3f}s"
                  f"{'; memoised' if method == args.method else ''}]")
        search = []
        for i, word in enumerate(("water", "fire", "")[: max(1, args.repeats)]):
            t0 = time.perf_counter()
            panel.search_box.value = word
            search.append(time.perf_counter() - t0)
        print(f"word search (chart only),              median of {len(search)}: {statistics.median(search):.3f}s")

        base = wall_uncached
        print("\nratios (against the dropdown change with an uncached projection, same run):")
        print(f"  cold embed {models[1]} / uncached dropdown : {cold[models[1]] / base:6.2f}")
        print(f"  cached-projection dropdown / uncached    : {wall_cached / base:6.3f}")
        print(f"  memoised dropdown / uncached             : {statistics.median(memo) / base:6.4f}")
        print(f"  tier slider / uncached                   : {statistics.median(tier) / base:6.4f}")
        print(f"  projection share of the uncached change  : {uncached['projection'] / uncached['total']:6.2%}")
        print(f"  SA+bootstrap share of the cached change  : {cached['sa'] / cached['total']:6.2%}")
        print(f"  cold model change / uncached             : {wall_cold_change / base:6.2f}")
        for method, t in proj.items():
            print(f"  projection switch to {method:<6} / uncached : {t / base:6.3f}")
        print(f"  word search / uncached                   : {statistics.median(search) / base:6.4f}")


if __name__ == "__main__":
    main()
