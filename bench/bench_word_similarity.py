"""Paper 001 on the real files: BCWS (Figure 1) and SCWS (Table 4) for multilingual-e5-small, before and after
every en -> zh map, the BCWS human upper bound, and the sense-testing BTSR; with the timings.

Run:  .venv/bin/python bench/bench_word_similarity.py [--quick] [--json out.json]

Defaults are the full data: all 2,091 BCWS and 2,003 SCWS pairs, maps learned from 100 / 300 / 1,000 / all
2,004 offline en-zh parallel pairs, 2,000 MUSE pairs for the iso-type dictionary anchors, 1,000 bootstrap
resamples; the sense BTSR learns its maps from the first 500 pairs and draws queries and pool from the
other 1,504.  The first run encodes ~12k sentences and ~15k words alone (token cache: later runs reuse it).

Ratios measured in the same run:

1. the pair bootstrap of rho (1,000 resamples of the 2,091 BCWS pairs) ranked in blocks with
   ``scipy.stats.rankdata(axis=1)`` against the plain loop of ``scipy.stats.spearmanr`` per resample (the
   baseline), on the same resamples: time ratio, and the two intervals must agree;
2. the stages of the sweep (encoding the test sets, the words alone, the training data; fitting and scoring
   every map) as shares of its total.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pandas as pd

pd.set_option("display.width", 220)
pd.set_option("display.max_columns", 30)


def bootstrap_ratio(cosines: np.ndarray, scores: np.ndarray, n_boot: int = 1000, seed: int = 0) -> None:
    from scipy.stats import spearmanr

    from semanscope_nb.metrics.word_similarity import _boot_rho

    t = time.perf_counter()
    ci, _ = _boot_rho(cosines, scores, n_boot, seed, 0.95)
    t_vec = time.perf_counter() - t
    rng = np.random.default_rng(seed)
    n = len(cosines)
    idx = np.concatenate([rng.integers(0, n, size=(min(200, n_boot - a), n)) for a in range(0, n_boot, 200)])
    t = time.perf_counter()
    loop = np.array([spearmanr(cosines[i], scores[i]).statistic for i in idx])
    t_loop = time.perf_counter() - t
    lo, hi = np.percentile(loop, [2.5, 97.5])
    same = np.allclose([ci.low, ci.high], [lo, hi], rtol=1e-10, atol=1e-12)
    print(f"pair bootstrap of rho, {n_boot} resamples x {n} pairs: vectorised {t_vec:.2f} s, "
          f"scipy.stats.spearmanr loop {t_loop:.2f} s, ratio loop/vectorised {t_loop / t_vec:.1f}x; "
          f"same interval: {same} ([{ci.low:.4f}, {ci.high:.4f}] vs [{lo:.4f}, {hi:.4f}])")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small: 200 BCWS / 150 SCWS pairs, maps from 100/300 pairs")
    ap.add_argument("--json", help="write the sweep and the sense results here")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--sense-train", type=int, default=500)
    a = ap.parse_args()

    from semanscope_nb.metrics.word_similarity import paired_cosines
    from semanscope_nb.models.tokens import load_token_encoder
    from semanscope_nb.runs.btsr import sense_retrieval_en_zh
    from semanscope_nb.runs.word_similarity import (
        PAPER_001_SCWS,
        encode_targets,
        prepare_en_zh_training,
        word_similarity_sweep,
    )

    enc = load_token_encoder("multilingual-e5-small")
    kw = {"sizes": (100, 300), "bcws_pairs": 200, "scws_pairs": 150, "n_dict_pairs": 300} if a.quick else {}
    t0 = time.perf_counter()
    sweep = word_similarity_sweep(encoders=enc, n_boot=a.n_boot, seed=0, progress=True, **kw)
    wall = time.perf_counter() - t0
    t = sweep.table
    fmt = lambda r: f"{r['rho']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
    print(f"\nsweep: {wall:.0f} s wall")
    for name in ("bcws", "scws"):
        for m in ("orig", "no context", "orig (Traditional script)"):
            sel = t[(t["dataset"] == name) & (t["mapping"] == m)]
            if len(sel):
                print(f"  {name} {m:26s} rho {fmt(sel.iloc[0])}  ({int(sel.iloc[0]['n_pairs'])} pairs)")
    h = sweep.human
    print(f"  bcws human upper bound (leave-one-out, {h.n_annotators} annotators): {h.rho:.3f} [{h.ci.low:.3f}, {h.ci.high:.3f}]")
    maps = t[t["n_sentences"] > 0].copy()
    maps["rho [CI]"] = [fmt(r) for _, r in maps.iterrows()]
    maps["setting"] = maps["anchors"] + "-" + maps["signal"] + " " + maps["mapping"]
    for name in ("bcws", "scws"):
        print(f"\n{name}: rho [95% CI] by map (columns: parallel pairs learned from)")
        print(maps[maps["dataset"] == name].pivot_table(index="setting", columns="n_sentences", values="rho [CI]",
                                                        aggfunc="first").to_string())
    largest = int(maps["n_sentences"].max())
    print(f"\nSCWS vs paper 001 Table 4 (multi en -> multi zh, x100; ours: maps from {largest} pairs)")
    for (setting, mapping), paper in PAPER_001_SCWS["multi en->multi zh"].items():
        if setting == "orig":
            r = t[(t["dataset"] == "scws") & (t["mapping"] == "orig")].iloc[0]
        else:
            kind, signal = setting.split("-")
            sel = maps[(maps["dataset"] == "scws") & (maps["anchors"] == kind) & (maps["signal"] == signal)
                       & (maps["mapping"] == mapping) & (maps["n_sentences"] == largest)]
            if not len(sel):
                print(f"  {setting} {mapping}: paper {paper}; not run offline")
                continue
            r = sel.iloc[0]
        inside = 100 * r["ci_low"] <= paper <= 100 * r["ci_high"]
        print(f"  {setting} {mapping}: paper {paper}; ours {100 * r['rho']:.1f} [{100 * r['ci_low']:.1f}, "
              f"{100 * r['ci_high']:.1f}]; gap {100 * r['rho'] - paper:+.1f}; paper inside our CI: {inside}")
    print("\nsweep stages (s, share of the sweep):")
    total = sweep.timings["total"]
    for k, v in sweep.timings.items():
        if k != "total":
            print(f"  {k:26s} {v:8.1f}  {v / total:6.1%}")
    print(f"  {'total':26s} {total:8.1f}")

    from semanscope_nb.data.word_similarity import read_bcws

    b = read_bcws().converted("t2s")
    if a.quick:
        b = b.sample(200, seed=0)
    V1, V2 = encode_targets(b, enc)
    print()
    bootstrap_ratio(paired_cosines(V1, V2), b.scores, n_boot=a.n_boot)

    t1 = time.perf_counter()
    training = prepare_en_zh_training(enc, n_sentences=600 if a.quick else None, n_dict_pairs=300 if a.quick else 2000)
    n_train = 200 if a.quick else a.sense_train
    _, items, results = sense_retrieval_en_zh(training, n_train=n_train, n_boot=a.n_boot, seed=0)
    t_sense = time.perf_counter() - t1
    c = items.counts
    print(f"\nsense BTSR ({t_sense:.0f} s): {c['queries']} queries that test sense (of {c['query_candidates']} validated "
          f"query tokens; {c['dropped_no_gold']} without gold, {c['dropped_no_hard_distractor']} without a hard "
          f"distractor), pool {items.pool_size}, maps from {n_train} pairs")
    for name, r in results.items():
        lo, hi = r.difference_interval[1]
        print(f"  {name:18s} P@1 {r.accuracy[1]:.3f} [{r.interval[1].low:.3f}, {r.interval[1].high:.3f}]  "
              f"no-context {r.baseline_accuracy[1]:.3f} [{r.baseline_interval[1].low:.3f}, {r.baseline_interval[1].high:.3f}]  "
              f"gain {r.difference[1]:+.3f} [{lo:+.3f}, {hi:+.3f}]  P@5 {r.accuracy[5]:.3f} vs {r.baseline_accuracy[5]:.3f}")
    print(items.examples(10).to_string())
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"sweep": sweep.to_dict(), "sense": {k: v.to_dict() for k, v in results.items()},
                       "sense_counts": c, "wall_seconds": {"sweep": wall, "sense": t_sense}}, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
