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

Ratios are against the baselines of the same run.  Timings in the browser are not measured here.

    python bench/bench_panel_ux.py                      # conceptual-space en,zh,de; use-multilingual / e5-small
    python bench/bench_panel_ux.py --part cached --max-concepts 200
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("cached", "cancel", "all"), default="all")
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


if __name__ == "__main__":
    main()
