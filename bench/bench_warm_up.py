"""Benchmark (issue 24): the first change after a kernel restart, with and without the panel's import warm-up.

After a restart, ``ExplorePanel.from_state`` shows the first map from the caches (the SA from the
``SAStore``), so nothing has imported scikit-learn, ``scipy.stats``, statsmodels or OpenCC yet. The
next change whose SA is not stored (another model, with cached embeddings) imports them on the spot.
The panel now starts that import in a daemon thread once its first map is shown
(``semanscope_nb.widgets.warm_up``). Each run is a fresh Python process (a restart): the first map,
4 s of the user looking at it, then the switch; "off" replaces the warm-up with a no-op.

    python bench/bench_warm_up.py              # conceptual-space en,zh,de, 120 concepts, USE -> e5-small, 3 repeats

Second row (``--early``, on by default): a switch to data cached entirely (embeddings, projection and SA
on disk: USE -> tfidf-char, 5 languages x 120 concepts, PCA, the browser visit's), made ``--early-after``
seconds after the first map, in the kernel's mode (background, debounce), while the warm-up runs.  The
warm-up now pauses while the panel computes and imports in small steps; "before" emulates the warm-up as
it was (scipy.stats, scikit-learn, statsmodels, OpenCC in four unpaused imports); "off" has none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results

CHILD = r"""
import json, sys, time
mode, store = sys.argv[1], sys.argv[2]
import semanscope_nb as snb
from semanscope_nb.widgets import explore
from semanscope_nb.plots.projection import ProjectionSettings
if mode == "off":
    explore.warm_up_imports = lambda *a, **k: None
p = explore.ExplorePanel(model="use-multilingual", dataset="conceptual-space", languages=["en", "zh", "de"],
                         max_concepts=120, n_boot=200, projection=ProjectionSettings("phate"),
                         sa_store=explore.SAStore(store), background=False)
assert p.error is None, p.error
if mode == "fill":
    p.models.value = "multilingual-e5-small"   # fills the embedding and projection caches for the second model
    sys.exit(0)
time.sleep(4)  # the user looks at the first map
t = time.perf_counter(); p.models.value = "multilingual-e5-small"; dt = time.perf_counter() - t
assert p.error is None, p.error
print(json.dumps({"seconds": dt, "timings": p.timings}))
"""


EARLY = r"""
import json, sys, time
mode, store, after = sys.argv[1], sys.argv[2], float(sys.argv[3])
import semanscope_nb as snb
from semanscope_nb.widgets import explore, warm_up
from semanscope_nb.plots.projection import ProjectionSettings
if mode == "off":
    explore.warm_up_imports = lambda *a, **k: None
elif mode == "before":  # the warm-up as it was: four coarse imports, never paused
    explore.warm_up_imports = lambda *a, **k: warm_up.warm_up_imports(
        ("scipy.stats", "sklearn.feature_extraction.text", "statsmodels.stats.multitest", "opencc"))
p = explore.ExplorePanel(model="use-multilingual", dataset="conceptual-space", languages=["en", "zh", "de", "fr", "es"],
                         max_concepts=120, n_boot=200, projection=ProjectionSettings("pca"),
                         sa_store=explore.SAStore(store), background=mode != "fill")
assert p.wait(600) and p.error is None, p.error
if mode == "fill":
    p.models.value = "tfidf-char"   # fills every cache of the second model, its SA included
    assert p.error is None, p.error
    sys.exit(0)
time.sleep(after)  # the user acts soon after the first map, while the warm-up imports
t = time.perf_counter(); p.models.value = "tfidf-char"; assert p.wait(120); dt = time.perf_counter() - t
assert p.error is None and p.counts["sa_disk"] == 2, (p.error, p.counts)
print(json.dumps({"seconds": dt, "refresh": p.timings.get("total")}))
"""


def early(a, env: dict) -> dict:
    """Change to shown of a fully cached switch soon after the first map: warm-up paused (now), as before, off."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        subprocess.run([sys.executable, "-c", EARLY, "fill", str(store), "0"], check=True, env=env)
        times: dict[str, list[float]] = {"now": [], "before": [], "off": []}
        refresh: dict[str, list[float]] = {k: [] for k in times}
        for _ in range(a.repeat):
            for mode in times:  # interleaved
                out = subprocess.run([sys.executable, "-c", EARLY, mode, str(store), str(a.early_after)], check=True,
                                     env=env, capture_output=True, text=True).stdout
                got = json.loads(out.strip().splitlines()[-1])
                times[mode].append(got["seconds"])
                refresh[mode].append(got["refresh"])
    print(f"cached switch {a.early_after} s after the first map: " + ", ".join(
        f"{k} {['%.3f' % x for x in v]}" for k, v in times.items()))
    return {k: (min(v), min(refresh[k])) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--early-after", type=float, default=0.5, help="seconds between the first map and the cached switch")
    ap.add_argument("--only-early", action="store_true", help="only the second row (a fully cached switch, early)")
    a = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    rows = []
    if a.early_after > 0:
        e = early(a, env)
        rows.append(row(
            f"a model switch to data cached on disk {a.early_after} s after the first map after a restart (kernel mode: "
            "debounce included), the warm-up pausing while the panel computes", e["now"][0], e["before"][0],
            baseline_name="the same with the warm-up as before (four unpaused imports)", threads="default (2 cores)",
            repeats=a.repeat, clock="wall", target="< 1 s",
            note=f"no warm-up at all: {e['off'][0]:.3f} s; the panel's refresh: now {e['now'][1]:.3f} s, before "
                 f"{e['before'][1]:.3f} s, off {e['off'][1]:.3f} s; use-multilingual -> tfidf-char, conceptual-space "
                 "5 languages x 120 concepts, PCA; each run a fresh process"))
    if a.only_early:
        write_results("warm-up-early", rows, script="bench/bench_warm_up.py", args=sys.argv[1:])
        return
    with tempfile.TemporaryDirectory() as tmp:
        store, template = Path(tmp) / "store", Path(tmp) / "template"
        subprocess.run([sys.executable, "-c", CHILD, "fill", str(store)], check=True, env=env)
        # keep only the first model's stored SA: the switch must compute the second model's SA
        subprocess.run([sys.executable, "-c", CHILD.replace('p.models.value = "multilingual-e5-small"   # fills',
                                                            'pass  # fills'), "fill", str(template)], check=True, env=env)
        times: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(a.repeat):
            for mode in ("off", "on"):  # interleaved
                shutil.rmtree(store, ignore_errors=True)
                shutil.copytree(template, store)
                out = subprocess.run([sys.executable, "-c", CHILD, mode, str(store)], check=True, env=env,
                                     capture_output=True, text=True).stdout
                times[mode].append(json.loads(out.strip().splitlines()[-1])["seconds"])
    on, off = min(times["on"]), min(times["off"])
    print(f"first change after a restart (SA not stored): warm-up {on:.3f} s, none {off:.3f} s "
          f"(all: on {['%.3f' % x for x in times['on']]}, off {['%.3f' % x for x in times['off']]})")
    write_results("warm-up", rows + [row(
        "first model switch after a restart, cached embeddings, SA not stored (conceptual-space en,zh,de, 120 concepts, "
        "n_boot 200), with the panel's import warm-up", on, off, baseline_name="the same switch without the warm-up",
        threads="default (2 cores)", repeats=a.repeat, clock="wall", target="< 1 s",
        note="4 s between the first map and the switch; each run a fresh process")],
        script="bench/bench_warm_up.py", args=sys.argv[1:])


if __name__ == "__main__":
    main()
