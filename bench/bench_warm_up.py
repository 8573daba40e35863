"""Benchmark (issue 24): the first change after a kernel restart, with and without the panel's import warm-up.

After a restart, ``ExplorePanel.from_state`` shows the first map from the caches (the SA from the
``SAStore``), so nothing has imported scikit-learn, ``scipy.stats``, statsmodels or OpenCC yet. The
next change whose SA is not stored (another model, with cached embeddings) imports them on the spot.
The panel now starts that import in a daemon thread once its first map is shown
(``semanscope_nb.widgets.warm_up``). Each run is a fresh Python process (a restart): the first map,
4 s of the user looking at it, then the switch; "off" replaces the warm-up with a no-op.

    python bench/bench_warm_up.py              # conceptual-space en,zh,de, 120 concepts, USE -> e5-small, 3 repeats
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
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
    write_results("warm-up", [row(
        "first model switch after a restart, cached embeddings, SA not stored (conceptual-space en,zh,de, 120 concepts, "
        "n_boot 200), with the panel's import warm-up", on, off, baseline_name="the same switch without the warm-up",
        threads="default (2 cores)", repeats=a.repeat, clock="wall", target="< 1 s",
        note="4 s between the first map and the switch; each run a fresh process")],
        script="bench/bench_warm_up.py", args=sys.argv[1:])


if __name__ == "__main__":
    main()
