"""The ``semanscope`` console script: models, datasets, sa, benchmark.

The library never prints; this module is where output goes to the terminal.

Example
-------
>>> from semanscope_nb.runs.cli import main
>>> main(["datasets"])  # doctest: +ELLIPSIS
conceptual-space         481 concepts  languages: en,zh,de,fr,es,ja  (...)
...
0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Sequence

from semanscope_nb.errors import SemanscopeError
from semanscope_nb.metrics.affinity import TierThresholds
from semanscope_nb.provenance import package_version


def _csv_list(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _cmd_models(args: argparse.Namespace) -> int:
    from semanscope_nb.models.registry import models_frame

    df = models_frame(offline=True if args.offline else None, language=args.language)
    cols = ["id", "display_name", "family", "objective", "dims", "languages", "offline", "available"]
    print(df[cols].to_string(index=False) if not df.empty else "(no models match)")
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from semanscope_nb.data.words import list_datasets, load_dataset

    for info in list_datasets(args.folder):
        ds = load_dataset(info.path)
        print(f"{info.name:<22} {len(ds):>5} concepts  languages: {','.join(ds.languages)}  ({info.path})")
    return 0


def _thresholds(args: argparse.Namespace) -> TierThresholds:
    return TierThresholds(great=args.great, good=args.good)


def _cmd_sa(args: argparse.Namespace) -> int:
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.provenance import atomic_write_json
    from semanscope_nb.runs.evaluate import dataset_affinity

    cache = EmbeddingCache(args.cache_dir) if args.cache_dir else None
    r = dataset_affinity(
        args.dataset, args.model, languages=_csv_list(args.languages), cache=cache,
        n_boot=args.n_boot, seed=args.seed, thresholds=_thresholds(args),
    )
    if args.json:
        print(json.dumps(r.to_dict(), indent=2, ensure_ascii=False))
    else:
        c, e = r.cosine, r.euclidean
        print(f"model {args.model}  dataset {r.provenance['dataset']}  languages {','.join(r.languages)}  concepts {r.n_concepts}")
        print(f"SA cosine    {c.sa:.4f} ± {c.sem:.4f}  95% CI [{c.ci[0]:.4f}, {c.ci[1]:.4f}]  intra {c.intra:.4f}  inter {c.inter:.4f}")
        print(f"SA Euclidean {e.sa:.4f} ± {e.sem:.4f}  intra {e.intra:.4f}  inter {e.inter:.4f}")
        print(f"tier {r.tier}   diagnostics: {r.diagnostics.magnitude_band}")
        for note in r.diagnostics.notes:
            print("note:", note)
        worst = r.concepts_frame().head(args.worst)
        if len(worst):
            print(f"\nworst-aligned concepts (cosine inter distance):\n{worst.to_string(index=False)}")
    if args.out:
        atomic_write_json(args.out, r.to_dict())
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    """`benchmark` with --backend/--n-jobs/--scheduler/--metrics/--api-model: the joblib grid."""
    from semanscope_nb.models.api import (
        estimate_api_cost,
        is_api_model,
        register_api_model,
    )
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.registry import list_models
    from semanscope_nb.runs.evaluate import format_leaderboard
    from semanscope_nb.runs.grid import _load_datasets, run_grid

    api_ids = []
    for spec in args.api_model or []:
        mid, eq, rest = spec.partition("=")
        name, at, url = rest.rpartition("@")
        if not (eq and at and mid and name and url):
            raise ValueError(f"--api-model {spec!r}: expected ID=MODEL@BASE_URL, e.g. oai-small=text-embedding-3-small@https://api.openai.com/v1")
        register_api_model(mid, base_url=url, model=name, api_key_env=args.api_key_env, replace=True)
        api_ids.append(mid)
    models = _csv_list(args.models)
    if models is None and api_ids:
        models = [m.id for m in list_models(offline=True) if m.available] + api_ids
    metrics = _csv_list(args.metrics) or ["sa"]
    backend = args.backend or ("dask" if args.scheduler else ("loky" if args.n_jobs else "serial"))
    cache = EmbeddingCache(args.cache_dir) if args.cache_dir else EmbeddingCache()
    languages = _csv_list(args.languages)
    api_models = [m for m in (models or []) if is_api_model(m)]
    if api_models:
        loaded = _load_datasets(_csv_list(args.datasets), languages, args.max_concepts)
        texts = list(dict.fromkeys(t for ds in loaded for t in ds.all_texts()))
        for m in api_models:
            print(f"cost estimate {estimate_api_cost(m, texts, cache=cache).describe()}", file=sys.stderr, flush=True)
    show_bar = sys.stderr.isatty()

    def report(model: str, dataset: str, metric: str, status: str) -> None:
        if not show_bar:
            print(f"  [{time.strftime('%H:%M:%S')}] {model} x {dataset} [{metric}]: {status}", file=sys.stderr, flush=True)

    params = {"sa": {"n_boot": args.n_boot, "seed": args.seed}} if "sa" in metrics else None
    g = run_grid(models, _csv_list(args.datasets), metrics, languages=languages, max_concepts=args.max_concepts,
                 params=params, backend=backend, n_jobs=args.n_jobs, scheduler=args.scheduler, cache=cache,
                 out_dir=args.out, force=args.force, progress=show_bar, on_job=report)
    if "sa" in metrics:
        sa = g.leaderboard("sa")
        if not sa.empty:
            sa = sa.assign(tier=[_thresholds(args).classify(v) for v in sa.sa_cosine])
        print(format_leaderboard(sa))
    wide = g.wide()
    if not wide.empty and any(m != "sa" for m in metrics):
        print("\n" + wide.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"\n{len(g.records)} results in {g.seconds:.1f} s on {g.backend}; texts embedded: {g.n_encoded}"
          f"{f'; resumed {len(g.resumed)}' if g.resumed else ''}")
    for m, why in g.skipped.items():
        print(f"skipped {m}: {why}")
    for f in g.failures.values():
        print(f"FAILED {f['model']} x {f['dataset']} [{f['metric']}]: {f['error']}")
    for f in g.files:
        print("wrote", f)
    return 1 if g.failures else 0


def _cmd_benchmark(args: argparse.Namespace) -> int:
    if args.backend or args.n_jobs or args.scheduler or args.metrics or args.api_model:
        return _cmd_grid(args)
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.runs.evaluate import format_leaderboard, run_benchmark

    def report(model: str, dataset: str, status: str) -> None:
        print(f"  [{time.strftime('%H:%M:%S')}] {model} x {dataset}: {status}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    res = run_benchmark(
        _csv_list(args.models), _csv_list(args.datasets), languages=_csv_list(args.languages),
        n_boot=args.n_boot, seed=args.seed, thresholds=_thresholds(args),
        cache=EmbeddingCache(args.cache_dir) if args.cache_dir else None, out_dir=args.out,
        max_concepts=args.max_concepts, force=args.force, on_job=report,
    )
    print(format_leaderboard(res.table))
    print(f"\n{len(res.results)} results in {time.perf_counter() - t0:.1f} s; encoder calls: {res.total_encoder_calls}"
          f"{f'; resumed {len(res.resumed)}' if res.resumed else ''}")
    for m, why in res.skipped.items():
        print(f"skipped {m}: {why}")
    for (m, d), err in res.failures.items():
        print(f"FAILED {m} x {d}: {err}")
    for f in res.files:
        print("wrote", f)
    return 1 if res.failures else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="semanscope", description="Cross-lingual alignment of embedding models (Semantic Affinity).")
    p.add_argument("--version", action="version", version=f"semanscope_nb {package_version('semanscope_nb')}")
    sub = p.add_subparsers(dest="command", required=True)

    m = sub.add_parser("models", help="list registered models (nothing is loaded)")
    m.add_argument("--offline", action="store_true", help="only models that work with no hub access")
    m.add_argument("--language", help="only models that support this language code")
    m.set_defaults(func=_cmd_models)

    d = sub.add_parser("datasets", help="list bundled datasets (or the CSVs of a folder)")
    d.add_argument("--folder", help="a folder of Semanscope CSV files")
    d.set_defaults(func=_cmd_datasets)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--languages", help="comma-separated language codes, e.g. en,zh")
        q.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("--great", type=float, default=0.60, help="tier threshold for 'great' (default 0.60)")
        q.add_argument("--good", type=float, default=0.50, help="tier threshold for 'good' (default 0.50)")
        q.add_argument("--cache-dir", help="embedding cache folder (default: $SEMANSCOPE_CACHE or the user cache)")

    s = sub.add_parser("sa", help="Semantic Affinity of one model on one dataset")
    s.add_argument("--model", default="use-multilingual")
    s.add_argument("--dataset", default="conceptual-space", help="bundled dataset name or a CSV path")
    s.add_argument("--json", action="store_true", help="print the full result as JSON")
    s.add_argument("--out", help="also write the result JSON here")
    s.add_argument("--worst", type=int, default=10, help="how many worst-aligned concepts to list")
    common(s)
    s.set_defaults(func=_cmd_sa)

    b = sub.add_parser("benchmark", help="every model x every dataset -> leaderboard + results/*.csv/json")
    b.add_argument("--models", help="comma-separated model ids (default: every available offline model)")
    b.add_argument("--datasets", help="comma-separated dataset names or CSV paths (default: bundled)")
    b.add_argument("--out", default="results", help="results folder (default ./results)")
    b.add_argument("--max-concepts", type=int, help="use only the first N concepts of each dataset")
    b.add_argument("--force", action="store_true", help="recompute finished jobs instead of resuming")
    # the joblib grid (any of these options switches to it; without them the serial run above is unchanged)
    b.add_argument("--backend", choices=["serial", "loky", "dask"], help="run the jobs through joblib: serial, loky processes, or Dask")
    b.add_argument("--n-jobs", type=int, help="worker processes (loky, or a local Dask cluster)")
    b.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786) or 'local' for a LocalCluster")
    b.add_argument("--metrics", help="comma-separated grid metrics: sa, retrieval, csc (default sa)")
    b.add_argument("--api-model", action="append", metavar="ID=MODEL@BASE_URL",
                   help="register an OpenAI-compatible embedding endpoint as model ID (repeatable)")
    b.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key (default OPENAI_API_KEY)")
    common(b)
    b.set_defaults(func=_cmd_benchmark)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SemanscopeError, ValueError, FileNotFoundError) as exc:
        print(f"semanscope: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
