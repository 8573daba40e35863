"""Benchmark (issue 24): cached changes under 1 s, and Cancel / a newer change that stops the work.

Part 1, cached data (real models, embeddings already in the cache; the first run fills it):

* the first map of a panel for cached data, in a fresh process ("after a restart"), import excluded;
* ``ExplorePanel.from_state`` in a fresh process, import excluded;
* a model switch to cached embeddings, a switch back (memoised), a tier-slider move, a search;
* baseline, same run: the map built the old way, ``maps.alignment_map(...).to_dict()`` (Altair objects,
  inlined rows, jsonschema validation) for the same projection and result.

Part 2, stopping work (``background=True``, the kernel's mode):

* a model change while an uncached model embeds (an empty cache): time from the newer change to the
  new computation starting and to its result, and the process CPU rate before and after;
* Cancel during a t-SNE projection (worker process): time to the worker process being gone, CPU after;
* baselines, same run: the uninterrupted embedding and the uninterrupted t-SNE.

Part 3, as the browser measures them (``--part browser``, not in ``all``: it takes minutes): the long
visit of tests/explore_visit.py in a real JupyterLab and headless chromium, wall-clock from the user's
action to the page showing its result -- a cached model switch (held by the kernel, and read from disk
after a restart), a tier-slider move, Restart Kernel and Run All to the map restored by ``from_state``,
the time from a change made after Cancel to its computation starting, and the kernel's CPU after
Cancel.  Each row's baseline is a measurement of the same visit (the uncached computation of the same
data, or the CPU while the cancelled work ran).  The rows go to bench/results/panel_ux_browser.json
(bench/_results.py), rendered into bench/README.md by bench/make_readme.py, with the load average.

Ratios are against the baselines of the same run.

    python bench/bench_panel_ux.py                      # conceptual-space en,zh,de; use-multilingual / e5-small
    python bench/bench_panel_ux.py --part cached --max-concepts 200
    python bench/bench_panel_ux.py --part browser       # the long browser visit (minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil  # process CPU times and children: what "stops using CPU" means, measured

import semanscope_nb as snb
from semanscope_nb.plots import maps
from semanscope_nb.plots.projection import ProjectionCache, ProjectionSettings  # noqa: F401
from semanscope_nb.widgets import ExplorePanel
from semanscope_nb.widgets.explore import DEBOUNCE

ROOT = Path(__file__).resolve().parents[1]


def cpu_rate(seconds: float) -> float:
    """This process's CPU use (cores busy, all threads) over the next ``seconds``."""
    p = psutil.Process()
    a = sum(p.cpu_times()[:2])
    time.sleep(seconds)
    return (sum(p.cpu_times()[:2]) - a) / seconds


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


_RESTART = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import semanscope_nb as snb
    from semanscope_nb.widgets import ExplorePanel
    from semanscope_nb.plots.projection import ProjectionSettings
    t1 = time.perf_counter()
    a = json.loads(sys.argv[1])
    if __name__ == "__main__":
        if a["state"]:
            t = time.perf_counter(); p = ExplorePanel.from_state(a["state"]); dt = time.perf_counter() - t
        else:
            t = time.perf_counter()
            p = ExplorePanel(model=a["model"], dataset=a["dataset"], languages=a["languages"], n_boot=a["n_boot"],
                             max_concepts=a["max_concepts"], projection=ProjectionSettings(a["method"]))
            dt = time.perf_counter() - t
        print(json.dumps({"import": t1 - t0, "seconds": dt, "error": p.error, "timings": p.timings}))
""")


def restart(args_json: dict) -> dict:
    """Run the panel in a fresh Python process (a restarted kernel) and return what it measured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _RESTART, json.dumps(args_json)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_cached(a) -> None:
    models = a.models.split(",")
    langs = a.languages.split(",")
    common = dict(dataset=a.dataset, languages=langs, n_boot=a.n_boot, max_concepts=a.max_concepts)
    print(f"== cached data: {a.dataset} ({', '.join(langs)}), max_concepts {a.max_concepts}, n_boot {a.n_boot}, "
          f"{a.method}, models {models}")
    t = time.perf_counter()
    warm = ExplorePanel(model=models[0], projection=ProjectionSettings(a.method), **common)
    warm.models.value = models[1]
    warm.models.value = models[0]
    assert warm.error is None, warm.error
    print(f"filling the caches (both models, both projections): {time.perf_counter() - t:.2f} s")

    first = restart({"state": None, "model": models[0], "method": a.method, **common})
    print(f"first map after a restart:        {first['seconds']:.3f} s  (import {first['import']:.2f} s excluded; "
          f"breakdown {', '.join(f'{k} {v:.3f}' for k, v in first['timings'].items())})")
    with tempfile.TemporaryDirectory() as tmp:
        warm.select([warm.result.concept_labels[0]])
        state = warm.save_state(Path(tmp) / "state.json")
        again = restart({"state": str(state)})
    print(f"from_state after a restart:       {again['seconds']:.3f} s  (import {again['import']:.2f} s excluded; "
          f"breakdown {', '.join(f'{k} {v:.3f}' for k, v in again['timings'].items())})")

    panel = ExplorePanel(model=models[0], projection=ProjectionSettings(a.method),
                         **common)  # a fresh memo: the switch reads the disk caches (embeddings, projections)
    switch = timed(lambda: setattr(panel.models, "value", models[1]))
    switch_t = dict(panel.timings)
    back = timed(lambda: setattr(panel.models, "value", models[0]))
    tiers, searches = [], []
    for great in (0.9, 0.8, 0.7):
        updates = panel.counts["update"]
        tiers.append(timed(lambda: setattr(panel.tiers, "value", snb.metrics.TierThresholds(great=great, good=0.5))))
        assert panel.counts["update"] == updates + 1, "a tier move rebuilt the map"
    for word in ("water", "fire", ""):
        searches.append(timed(lambda: setattr(panel.search_box, "value", word)))
    tier = sorted(tiers)[1]
    search = sorted(searches)[1]
    # baseline: the old map, Altair objects with the rows inlined, validated
    old = sorted(timed(lambda: maps.alignment_map(panel.projection, panel.result, dataset=panel._ds, navigate=True,
                                                   worst_concepts=panel.worst_concepts).to_dict())
                 for _ in range(3))[1]
    new = sorted(timed(lambda: maps.alignment_map_spec(panel.projection, panel.result, dataset=panel._ds, navigate=True,
                                                        worst_concepts=panel.worst_concepts)) for _ in range(3))[1]
    print(f"model switch, cached embeddings:  {switch:.3f} s  (breakdown {', '.join(f'{k} {v:.3f}' for k, v in switch_t.items())})")
    print(f"model switch back (memoised):     {back:.3f} s")
    print(f"tier-slider move (median of 3):   {tier:.4f} s  (in place, no new spec)")
    print(f"search change (median of 3):      {search:.4f} s")
    print(f"map spec, named/templated:        {new:.4f} s")
    print(f"baseline: alignment_map().to_dict() {old:.3f} s   ratios: spec {old / new:.1f}x faster, "
          f"tier move {old / tier:.1f}x, cached switch {switch / old:.2f}x the old spec alone")


def part_cancel(a) -> None:
    langs = a.languages.split(",")
    model = a.uncached_model
    print(f"== stopping work: {a.cancel_dataset} ({', '.join(langs)}), uncached model {model}, t-SNE")
    ds = snb.load_dataset(a.cancel_dataset, languages=langs)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        snb.embed(ds, model, cache=snb.EmbeddingCache(Path(tmp) / "full"))
        full = time.perf_counter() - t
        print(f"baseline: uninterrupted embedding of {len(ds.all_texts())} texts (empty cache): {full:.2f} s")
        panel = ExplorePanel(model="random-null", dataset=a.cancel_dataset, languages=langs, n_boot=a.n_boot,
                             projection=ProjectionSettings("pca"), projection_cache=ProjectionCache(),
                             cache=Path(tmp) / "panel", background=True)
        assert panel.wait(120) and panel.error is None, panel.error
        idle = cpu_rate(1.0)
        panel.models.value = model
        time.sleep(a.after)
        busy = cpu_rate(1.0)
        t_change = time.time()
        panel.models.value = "random-null"  # a newer change: everything of random-null is memoised
        assert panel.wait(120)
        t_done = time.time()
        after = cpu_rate(2.0)
        stopped, done = panel.history[-2], panel.history[-1]
        print(f"newer change during the embedding ({a.after + 1:.1f} s in): the abandoned run ended "
              f"{stopped['at'] - t_change:.2f} s after the change ('{stopped['outcome']}'), the new one started "
              f"{done['started'] - t_change:.2f} s after it (debounce {panel._runner.debounce} s) and was shown "
              f"{t_done - t_change:.2f} s after it")
        print(f"process CPU (cores): idle {idle:.2f}, while embedding {busy:.2f}, in the 2 s after {after:.2f}")
        print(f"ratio: new result after {(t_done - t_change) / full:.3f}x the uninterrupted embedding")

        # t-SNE in the worker process, cancelled
        big = ProjectionSettings("tsne", {"perplexity": 30.0})
        emb = snb.embed(ds, "random-null", cache=False)
        t = time.perf_counter()
        snb.run_task("projection", emb, method="tsne", options={"perplexity": 30.0}, projection_cache=None,
                     should_stop=lambda: False)
        tsne = time.perf_counter() - t
        print(f"baseline: uninterrupted t-SNE in the worker: {tsne:.2f} s")
        panel.projection_picker.value = big
        time.sleep(a.after)
        from semanscope_nb.plots.projection import projection_worker

        pid = projection_worker().pid
        busy = sum(psutil.Process(pid).cpu_times()[:2]) if pid else float("nan")
        time.sleep(0.5)
        busy = (sum(psutil.Process(pid).cpu_times()[:2]) - busy) / 0.5 if pid else float("nan")
        t = time.perf_counter()
        panel.cancel()
        assert panel.wait(60)
        stop = time.perf_counter() - t
        gone = pid is None or not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        after = cpu_rate(2.0)
        print(f"Cancel during t-SNE: panel idle {stop:.3f} s after Cancel; worker {pid} gone: {gone}; worker CPU "
              f"before {busy:.2f} cores, this process in the 2 s after {after:.2f}; outcome '{panel.history[-1]['outcome']}'")
        print(f"ratio: stopped after {stop / tsne:.3f}x the uninterrupted t-SNE")


def part_browser(a) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "bench"))
    import explore_visit  # tests/explore_visit.py: the visit tests/test_browser.py asserts on
    from _results import row, write_results
    from _timing import scratch_dir

    cache = snb.EmbeddingCache(scratch_dir("bench-ux-") / "cache")

    def expected_sa(model: str, dataset: str, languages: list[str]) -> str:
        ds = snb.load_dataset(dataset, languages=languages).subset(range(explore_visit.N_CONCEPTS))
        r = snb.dataset_affinity(ds, model, n_boot=explore_visit.N_BOOT, seed=0, cache=cache, progress=False)
        return f"SA cosine {r.cosine.sa:.3f} ± {r.cosine.sem:.3f}"

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        m = explore_visit.long_visit(Path(tmp) / "visit", expected_sa=expected_sa)
    load_after = os.getloadavg()
    load = f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after the visit, 2 cores shared"
    common = dict(threads="kernel default", repeats=1, clock="wall (browser)")
    uncached = ("uncached tfidf-char: embed + SA + PCA + map (same visit, after Cancel)", m["after_embed_cancel_shown"])
    rows = [
        row("browser: model switch to data the kernel holds (use-multilingual, 5 languages x 120 concepts)",
            m["cached_switch_memo"], uncached[1], baseline_name=uncached[0], target="< 1 s", note=load, **common),
        row("browser: model switch after a restart, data cached on disk (tfidf-char)", m["cached_switch_disk"],
            uncached[1], baseline_name=uncached[0], target="< 1 s",
            note=f"the panel's own refresh {m['cached_switch_disk_refresh']:.2f} s; the change reached the refresh after "
                 f"{m['cached_switch_disk_to_refresh']:.2f} s (debounce {DEBOUNCE} s included), the page showed it "
                 f"{m['cached_switch_disk_after_refresh']:.2f} s after the refresh ended; the chart drawn after "
                 f"{m['cached_switch_disk_drawn']:.2f} s (vega-embed {m['cached_switch_disk_render_ms']} ms); {load}",
            **common),
        row("browser: tier-slider move (mouse up to the legend updated in place)", m["tier_move"], m["cached_switch_memo"],
            baseline_name="model switch with a new spec (same visit)", target="< 1 s", note=load, **common),
        row("browser: Restart Kernel and Run All to the map restored by from_state (kernel start and import included)",
            m["restart_to_map"], m["first_map_open"], baseline_name="first open: Run All to the first map, empty cache, en+zh",
            note=f"the panel's own from_state refresh (import excluded) {m['from_state_refresh']:.2f} s; {load}", **common),
        row("browser: first map after a restart, the panel's own refresh (from_state, cached data, import excluded)",
            m["from_state_refresh"], m["first_map_open"], baseline_name="first open: Run All to the first map, empty cache",
            target="< 1 s", note=load, **common),
        row("browser: a change after Cancel (mid-embedding) starts computing", m["after_embed_cancel_start"],
            m["after_embed_cancel_shown"], baseline_name="the same change, until shown", target="< 1 s", note=load, **common),
        row("browser: a change after Cancel (mid-t-SNE) starts computing", m["after_projection_cancel_start"],
            m["after_projection_cancel_shown"], baseline_name="the same change, until shown", target="< 1 s", note=load,
            **common),
        row(f"browser: kernel + worker CPU in the {explore_visit.CPU_WINDOW} s after Cancel mid-embedding",
            m["cpu_after_embed_cancel"], m["cpu_embedding"], unit="cores", baseline_name="while embedding (0.5 s)",
            target="near 0", note=load, **{**common, "clock": "CPU (psutil)"}),
        row(f"browser: kernel + worker CPU in the {explore_visit.CPU_WINDOW} s after Cancel mid-t-SNE",
            m["cpu_after_tsne_cancel"], m["cpu_tsne_running"], unit="cores", baseline_name="while t-SNE ran (0.5 s)",
            target="near 0", note=load, **{**common, "clock": "CPU (psutil)"}),
    ]
    print(load)
    write_results("panel_ux_browser", rows, script="bench/bench_panel_ux.py", args=["--part", "browser"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("cached", "cancel", "all", "browser"), default="all")
    ap.add_argument("--dataset", default="conceptual-space")
    ap.add_argument("--cancel-dataset", default="conceptual-space")
    ap.add_argument("--languages", default="en,zh,de")
    ap.add_argument("--models", default="use-multilingual,multilingual-e5-small")
    ap.add_argument("--uncached-model", default="multilingual-e5-small")
    ap.add_argument("--max-concepts", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--method", default="phate")
    ap.add_argument("--after", type=float, default=2.0, help="seconds into the work before the newer change / Cancel")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if a.part in ("cached", "all"):
        part_cached(a)
    if a.part in ("cancel", "all"):
        part_cancel(a)
    if a.part == "browser":
        part_browser(a)


if __name__ == "__main__":
    main()
