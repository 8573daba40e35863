"""Benchmark (issue 24): TF-IDF embeddings found in the cache need no IDF fit (the first switch after a restart).

In a fresh process each time (what a kernel restart gives: scikit-learn not imported, no fit kept), embed
conceptual-space's words (en, zh, de, fr, es; 120 concepts) with ``tfidf-char`` from a filled cache:

* measured: the encoder as it is now (the corpus hash taken at ``fit``, the IDF fitted only to encode);
* baseline, same run: the same cache hit with the IDF fitted up front, as ``fit`` did before
  (``encoder._fitted_idf()`` right after ``fit``).

Runs interleaved, the minimum of ``--repeats`` each; import of semanscope_nb excluded from the time.

    python bench/bench_tfidf_cache_hit.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ["en", "zh", "de", "fr", "es"]
CHILD = r"""
import sys, time
import semanscope_nb as snb
ds = snb.load_dataset("conceptual-space", languages=%r).subset(range(120))
cache = snb.EmbeddingCache(sys.argv[1])
t = time.perf_counter()
enc = snb.load_model("tfidf-char").fit([w for lang in ds.languages for w in ds.words(lang)])
if sys.argv[2] == "eager":
    enc._fitted_idf()  # what fit() did before: the IDF weights fitted at once
for lang in ds.languages:
    snb.models.embed_texts(enc, ds.words(lang), language=lang, cache=cache)
print(time.perf_counter() - t, "sklearn" in sys.modules)
""" % (LANGS,)


def run(cache: str, mode: str) -> tuple[float, bool]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", CHILD, cache, mode], capture_output=True, text=True, env=env, check=True)
    seconds, sklearn = out.stdout.split()
    return float(seconds), sklearn == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repeat (make_readme.py --run --quick)")
    a = ap.parse_args()
    if a.quick:
        a.repeats = 1
    sys.path.insert(0, str(ROOT / "bench"))
    from _results import row, write_results

    with tempfile.TemporaryDirectory() as tmp:
        run(tmp, "eager")  # fills the cache
        lazy, eager, imported = [], [], set()
        for _ in range(a.repeats):  # interleaved
            s, sk = run(tmp, "lazy")
            lazy.append(s)
            imported.add(sk)
            eager.append(run(tmp, "eager")[0])
    load = os.getloadavg()[0]
    note = (f"{len(LANGS)} languages x 120 concepts of conceptual-space, all in the cache; scikit-learn imported on a hit: "
            f"{sorted(imported)}; load average {load:.1f} on {os.cpu_count()} cores")
    rows = [row("tfidf-char embeddings from the cache in a fresh process (the first switch after a restart), IDF fitted lazily",
                min(lazy), min(eager), baseline_name="the same cache hit with the IDF fitted at fit() (before)",
                threads="default", repeats=a.repeats, clock="wall", target="< 1 s", note=note)]
    write_results("tfidf_cache_hit", rows, script="bench/bench_tfidf_cache_hit.py", args=[f"--repeats={a.repeats}"])


if __name__ == "__main__":
    main()
