"""Benchmark the model-selection report: cold and warm, against the same measurements run one at a time.

    python bench/bench_model_report.py                    # offline models x en,zh,ja x the bundled data (the budget)
    python bench/bench_model_report.py --shared           # also Tatoeba and SIB-200 from the shared data folder
    python bench/bench_model_report.py --n-boot 200       # a quicker look

Four runs, each in a fresh Python process (so each pays imports and model loading, as a user does):

* ``report cold``: ``snb.model_report`` with an empty embedding cache and no job files;
* ``report warm``: the same call again (cache filled, job files present: it resumes);
* ``one at a time cold``: the same measurements as the notebooks run them, one call each
  (``run_task`` sa / pair-sa per model and dataset, comparison per dataset, csc per model, and with
  ``--shared`` retrieval on Tatoeba / SIB-200 and kNN on SIB-200), empty cache;
* ``one at a time warm``: the same again on the filled cache (notebooks keep no job files).

Ratios are report / one-at-a-time for the same state (cold vs cold, warm vs warm), in wall time
and in CPU time (user + system of the child process).  The machine load (1-minute load average)
is printed beside each time: on a shared 2-core machine it moves every wall-clock number, so the
CPU time is the steadier one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import row, write_results
from _timing import scratch_dir

MODELS = ["use-multilingual", "multilingual-e5-small", "tfidf-char", "random-null"]
LANGUAGES = ["en", "zh", "ja"]
DATASETS = ["conceptual-space", "cultural-nuance"]


def _report(args: argparse.Namespace) -> None:
    import semanscope_nb as snb

    r = snb.model_report(MODELS, languages=LANGUAGES, datasets=DATASETS, n_boot=args.n_boot, seed=0, tatoeba=args.shared,
                         sib200=args.shared, contextual=args.shared, bcws_pairs=args.bcws_pairs, work_dir=args.work, progress=False)
    r.to_html(Path(args.work) / "report.html")
    print(json.dumps({"reused": r.provenance["jobs_reused"], "computed": r.provenance["jobs_computed"],
                      "recommendation": r.recommendations["sentence"].tolist()}))


def _one_at_a_time(args: argparse.Namespace) -> None:
    import semanscope_nb as snb
    from semanscope_nb.data.bitext import LabelledSplits, read_sib200, read_tatoeba

    cache = snb.EmbeddingCache()
    kw = {"n_boot": args.n_boot, "seed": 0, "cache": cache, "progress": False}
    for ds in DATASETS:
        for m in MODELS:
            snb.run_task("sa", ds, m, languages=LANGUAGES, **kw)
            snb.run_task("pair-sa", ds, m, languages=LANGUAGES, **kw)
        snb.run_task("comparison", ds, MODELS, languages=LANGUAGES, n_perm=2000, **kw)
    from semanscope_nb.data.sentences import load_sentence_corpus

    for m in MODELS:
        snb.run_task("csc", load_sentence_corpus("csc-everyday-en"), m, max_sentences=40, **kw)
    if args.shared:
        corpora = [read_tatoeba("zh", limit=1000)]
        from semanscope_nb.data.bitext import sib200_parallel

        corpora.append(sib200_parallel("zh", "eng_Latn", split="test"))
        for c in corpora:
            for m in MODELS:
                snb.run_task("retrieval", c, m, **kw)
        for lang in ("en", "zh"):
            splits = LabelledSplits(read_sib200(lang, "train"), read_sib200(lang, "test"))
            for m in MODELS:
                snb.run_task("knn", splits, m, logistic=False, **kw)
        from semanscope_nb.runs.model_report import bcws_sample
        from semanscope_nb.runs.word_similarity import evaluate_word_similarity

        evaluate_word_similarity(bcws_sample(args.bcws_pairs, seed=0), "multilingual-e5-small", n_boot=args.n_boot, seed=0, cache=cache)
    print(json.dumps({"done": True}))


def _timed(phase: str, args: argparse.Namespace, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--phase", phase, "--n-boot", str(args.n_boot), "--bcws-pairs", str(args.bcws_pairs),
           "--work", str(args.work)]
    if args.shared:
        cmd.append("--shared")
    load0 = os.getloadavg()[0]
    import resource

    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"{phase} failed:\n{out.stderr[-3000:]}")
    last = out.stdout.strip().splitlines()[-1]
    return {"seconds": seconds, "cpu_seconds": cpu, "load_before": load0, "load_after": os.getloadavg()[0], **json.loads(last)}


def record(results: dict, args: argparse.Namespace) -> None:
    """Write bench/results/model-report(-shared).json: cold and warm report, wall and CPU, against the same-run baseline.

    The baseline is the same measurements one call at a time (same state) when that side ran; with
    ``--only report`` the warm run is compared with the cold run, and the cold run with its own CPU time
    (the ratio then says how much the machine's load stretched the wall clock).
    """
    c, w = results["report cold"], results["report warm"]
    data = "bundled data" + (" + Tatoeba/SIB-200/BCWS" if args.shared else "")
    note = (f"{len(MODELS)} offline models x {','.join(LANGUAGES)} x {data}, n_boot={args.n_boot}; 1-min load average "
            f"{c['load_before']:.1f}->{c['load_after']:.1f} cold, {w['load_before']:.1f}->{w['load_after']:.1f} warm, on {os.cpu_count()} "
            f"cores shared with other sessions; warm reused {w['reused']} job files, computed {w['computed']}")
    rows = []
    for state, budget in (("cold", "< 600 s (10 min)"), ("warm", "< 60 s (1 min)")):
        r = results[f"report {state}"]
        base = results.get(f"one at a time {state}")
        for clock, key in (("wall", "seconds"), ("cpu", "cpu_seconds")):
            if base is not None:
                b, bname = base[key], f"same measurements one call at a time, {state}"
            elif state == "warm":
                b, bname = c[key], "report cold"
            elif clock == "wall":
                b, bname = c["cpu_seconds"], "its own CPU time (user + sys)"
            else:
                continue
            rows.append(row(f"model report {state}, {'wall' if clock == 'wall' else 'CPU (user + sys)'}", r[key], b, baseline_name=bname,
                            threads="default (2 cores)", repeats=1, clock=clock, target=budget if clock == "wall" else None,
                            note=note))
    write_results("model-report" + ("-shared" if args.shared else ""), rows, script="bench/bench_model_report.py",
                  args=sys.argv[1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--shared", action="store_true", help="also Tatoeba, SIB-200 and BCWS (shared data)")
    p.add_argument("--bcws-pairs", type=int, default=100, help="BCWS pairs (with --shared; the report's default)")
    p.add_argument("--only", choices=["report", "one-at-a-time"], help="run one side only (cold and warm)")
    p.add_argument("--phase", choices=["report", "one-at-a-time"], help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase == "report":
        return _report(args)
    if args.phase == "one-at-a-time":
        return _one_at_a_time(args)
    root = scratch_dir("bench-model-report-")
    results = {}
    sides = [("report", "report"), ("one at a time", "one-at-a-time")]
    for name, phase in [x for x in sides if args.only in (None, x[1])]:
        env = {**os.environ, "SEMANSCOPE_CACHE": str(root / f"cache-{phase}"), "HF_HUB_OFFLINE": "1"}
        args.work = root / f"work-{phase}"
        results[f"{name} cold"] = _timed(phase, args, env)
        print(f"{name} cold: {results[f'{name} cold']['seconds']:.1f} s wall, {results[f'{name} cold']['cpu_seconds']:.1f} s CPU "
              f"(load {results[f'{name} cold']['load_before']:.1f})", flush=True)
        results[f"{name} warm"] = _timed(phase, args, env)
        print(f"{name} warm: {results[f'{name} warm']['seconds']:.1f} s wall, {results[f'{name} warm']['cpu_seconds']:.1f} s CPU "
              f"(load {results[f'{name} warm']['load_before']:.1f})", flush=True)
    if "report cold" in results:
        record(results, args)
    print()
    print(f"offline models {MODELS} x {LANGUAGES} x {DATASETS}" + (" + Tatoeba/SIB-200" if args.shared else "")
          + f", n_boot={args.n_boot}")
    if args.only is not None:
        return None
    for state in ("cold", "warm"):
        a, b = results[f"report {state}"]["seconds"], results[f"one at a time {state}"]["seconds"]
        print(f"{state}: report {a:7.1f} s   one at a time {b:7.1f} s   ratio {a / b:.2f}")
        a, b = results[f"report {state}"]["cpu_seconds"], results[f"one at a time {state}"]["cpu_seconds"]
        print(f"{state} (CPU): report {a:7.1f} s   one at a time {b:7.1f} s   ratio {a / b:.2f}")
    w = results["report warm"]
    print(f"warm report reused {w['reused']} job files, computed {w['computed']}")
    print("recommendation:", *w["recommendation"])


if __name__ == "__main__":
    main()
