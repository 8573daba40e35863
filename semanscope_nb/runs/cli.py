"""The ``semanscope`` console script: models, datasets, sa, benchmark, run, tasks, report.

The library never prints; this module is where output goes to the terminal.
Every failure ends as one ``semanscope: error: ...`` line on stderr naming the
file or argument at fault (exit status 2 for bad arguments and input, 1 for a
run that failed, 130 when interrupted), never as a traceback
(``SEMANSCOPE_DEBUG=1`` adds it).  Warnings are one ``semanscope: warning:``
line each, and what the dataset readers report is printed as ``reader:`` lines.
Every line printed (this module's :func:`print`, argparse's errors) shows control,
bidi and invisible characters as ``\\uXXXX`` (:func:`~semanscope_nb.provenance.visible_text`):
a CSV header cell or file name holding ``ESC ]0;...`` or U+202E cannot retitle,
clear or reorder the user's terminal.

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
import builtins
import json
import os
import signal
import sqlite3
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn, Sequence

from semanscope_nb.errors import ArgumentError, CacheError, SemanscopeError
from semanscope_nb.metrics.affinity import TierThresholds
from semanscope_nb.provenance import package_version, visible_text

if TYPE_CHECKING:
    from semanscope_nb.models.cache import EmbeddingCache

#: reader lines printed per dataset (the rest are in the result's provenance, ``reader_report``)
MAX_REPORT_LINES = 20


def print(*values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False) -> None:
    r"""``builtins.print`` for the terminal: the text through :func:`visible_text` (newlines and tabs kept).

    It shadows the builtin on purpose, so that every line this module prints (report
    lines, notes, warnings, errors, tables) is covered, including lines added later.
    ``--json`` output too: the escape is JSON's own (``\u202e``), so stdout stays JSON
    holding exactly the same values, and raw C1 controls or bidi overrides inside its
    strings cannot act on a terminal either.

    >>> print("a\x1b[2Jb\u202ec")
    a\u001b[2Jb\u202ec
    """
    text = (" " if sep is None else sep).join(map(str, values))
    builtins.print(visible_text(text, keep="\n\t"), end=end, file=file, flush=flush)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``semanscope: error: ...``, exit status 2) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        # the message quotes what the user typed (an unknown choice, a bad value): shown visibly, as every CLI line
        self.exit(2, visible_text(f"semanscope: error: {message} (see '{self.prog} --help')", keep="\t") + "\n")


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {'a positive' if low == 1 else 'a non-negative'} integer, got {value}")
        return value

    return parse


def _workers(text: str) -> int | str:
    """An argparse type: a positive whole number, or ``auto`` (the CPUs free at the start, :func:`~semanscope_nb.runs.grid.auto_workers`)."""
    return "auto" if text.strip().lower() == "auto" else _int_at_least(1)(text)


def _non_empty(text: str) -> str:
    """An argparse type: a non-blank path or name."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty value; give a path or a name")
    return text


def _out_file(text: str) -> str:
    """An argparse type: a file to write (not blank, not an existing folder), refused before any work is done."""
    text = _non_empty(text)
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is a folder; give a file name inside it")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:  # the nearest existing folder above it
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' would be inside '{parent}', which is a file, not a folder")
    return text


def _csv_list(text: str) -> list[str]:
    """An argparse type: a comma-separated list with at least one item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def _check_dataset_paths(names: Sequence[str] | None, option: str) -> None:
    """A dataset argument that is a folder (``x.csv/``) is named here, before anything runs."""
    for name in names or ():
        if Path(name).expanduser().is_dir():
            raise ArgumentError(f"{option} '{name}' is a folder, not a CSV file (give a bundled name or a CSV path)")


def _expected_cache_columns() -> list[str] | None:
    from semanscope_nb.models import cache as cache_module

    try:
        with sqlite3.connect(":memory:") as mem:
            mem.execute(cache_module.VECTORS_SCHEMA)
            return [row[1] for row in mem.execute("PRAGMA table_info(vectors)")]
    except (AttributeError, sqlite3.Error):
        return None


def _check_model_args(models: Sequence[str] | None) -> None:
    """An unknown model id (not a preset) is a bad argument: fail before anything runs."""
    from semanscope_nb.models.registry import get_model_info, preset_names

    presets = set(preset_names())  # e.g. "paper": paper 000's 13 models
    for m in models or ():
        if m not in presets:
            get_model_info(m)


def _check_cache_file(db: Path) -> None:
    """Refuse an SQLite file of another program (other tables, or a ``vectors`` table of another schema)."""
    if db.is_dir():
        raise CacheError(f"embedding cache '{db}' is a folder, not an SQLite file; remove it or pass another --cache-dir")
    if not db.is_file():
        return
    try:
        con = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return  # the cache itself says what it cannot open
    try:
        tables = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = [row[1] for row in con.execute("PRAGMA table_info(vectors)")] if "vectors" in tables else None
    except sqlite3.Error:
        return  # not a database (the cache moves it aside and starts a new one), or locked
    finally:
        con.close()
    from semanscope_nb.models.cache import CACHE_TABLES

    foreign = sorted(t for t in tables if t not in CACHE_TABLES and not t.startswith("sqlite_"))
    expected = _expected_cache_columns()
    wrong = columns is not None and expected is not None and columns != expected
    if foreign or wrong:
        what = f"table(s) {foreign}" if foreign else f"a 'vectors' table with columns {columns} (expected {expected})"
        raise CacheError(
            f"embedding cache '{db}' is not a semanscope cache: it holds {what}; "
            "move the file away or pass --cache-dir to another folder"
        )


def _open_cache(folder: str | None) -> "EmbeddingCache":
    """The embedding cache of ``--cache-dir`` (default: $SEMANSCOPE_CACHE or the user cache), checked first."""
    from semanscope_nb.models.cache import EmbeddingCache, default_cache_dir

    root = Path(folder).expanduser() if folder else default_cache_dir()
    if root.exists() and not root.is_dir():
        where = "--cache-dir" if folder else "the cache folder ($SEMANSCOPE_CACHE or the user cache)"
        raise ArgumentError(f"{where} '{root}' is a file, not a folder")
    _check_cache_file(root / "embeddings.sqlite")
    return EmbeddingCache(root)


def _print_reader_reports(reports: Mapping[str, Sequence[str]]) -> None:
    """What the dataset readers reported (ignored columns, dropped duplicates ...), on stderr."""
    for name, lines in reports.items():
        for line in list(lines)[:MAX_REPORT_LINES]:
            print(f"reader: {line}", file=sys.stderr)
        if len(lines) > MAX_REPORT_LINES:
            print(f"reader: {name}: ... {len(lines) - MAX_REPORT_LINES} more (in the results' provenance, reader_report)",
                  file=sys.stderr)


def _cmd_models(args: argparse.Namespace) -> int:
    from semanscope_nb.models.registry import models_frame

    try:
        df = models_frame(offline=True if args.offline else None, language=args.language, preset=args.preset,
                          needs=args.needs, include_presets=args.all)
    except ValueError as e:  # an unknown preset or needs value: one line naming it
        print(f"semanscope: error: {e}", file=sys.stderr)
        return 2
    cols = ["id", "display_name", "family", "objective", "dims", "languages", "offline", "available"]
    if args.preset or args.needs or args.all:
        cols.insert(2, "needs")
    print(df[cols].to_string(index=False) if not df.empty else "(no models match)")
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from semanscope_nb.data.words import list_datasets, load_dataset
    from semanscope_nb.runs.evaluate import list_folder_datasets

    if args.folder is None:
        infos, skipped = list_datasets(), []
    else:
        if not Path(args.folder).expanduser().is_dir():
            raise ArgumentError(f"--folder '{args.folder}' is not a folder")
        infos, skipped = list_folder_datasets(args.folder)
    for note in skipped:
        print(f"semanscope: warning: {note}", file=sys.stderr)
    failed = 0
    for info in infos:
        try:
            ds = load_dataset(info.path)
        except (SemanscopeError, OSError, ValueError) as exc:  # list the others; name this one
            failed += 1
            print(f"{info.name:<22} ERROR: {_one_line(exc)}")
            continue
        print(f"{info.name:<22} {len(ds):>5} concepts  languages: {','.join(ds.languages)}  ({info.path})")
    return 1 if failed else 0


def _thresholds(args: argparse.Namespace) -> TierThresholds:
    return TierThresholds(great=args.great, good=args.good)


def _cmd_sa(args: argparse.Namespace) -> int:
    from semanscope_nb.models.registry import get_model_info
    from semanscope_nb.provenance import atomic_write_json
    from semanscope_nb.runs.evaluate import dataset_affinity

    from semanscope_nb.settings import resolve

    thresholds = _thresholds(args)
    args.model = resolve(args.model, "default_model")
    get_model_info(args.model)  # an unknown id fails here, before the cache or the data are touched
    _check_dataset_paths([args.dataset], "--dataset")
    cache = _open_cache(args.cache_dir)
    r = dataset_affinity(
        args.dataset, args.model, languages=args.languages, cache=cache,
        n_boot=args.n_boot, seed=args.seed, thresholds=thresholds,
    )
    _print_reader_reports({str(r.provenance.get("dataset")): r.provenance.get("reader_report") or []})
    if args.json:
        print(json.dumps(r.to_dict(), indent=2, ensure_ascii=False))
    else:
        c, e = r.cosine, r.euclidean
        print(f"model {args.model}  dataset {r.provenance['dataset']}  languages {','.join(r.languages)}  concepts {r.n_concepts}")
        print(f"SA cosine    {c.sa:.4f} ± {c.sem:.4f}  95% CI [{c.ci[0]:.4f}, {c.ci[1]:.4f}]  intra {c.intra:.4f}  inter {c.inter:.4f}")
        print(f"SA Euclidean {e.sa:.4f} ± {e.sem:.4f}  intra {e.intra:.4f}  inter {e.inter:.4f}")
        v = r.verdict_scores
        if v is not None:  # the verdict's quantity, labelled; the raw SA is the line above
            judged = r.n_concepts - (sum(r.excluded_concepts.values()) if r.chance_excluding is not None else 0)
            print(f"SA − chance  {v.delta.value:+.4f}  95% CI [{v.delta.ci[0]:+.4f}, {v.delta.ci[1]:+.4f}]  "
                  f"(artefact-free: {judged} of {r.n_concepts} concepts; chance level {v.sa_null.value:.4f})")
        print(f"tier {r.tier}   (paper's tier: {r.paper_tier})   diagnostics: {r.diagnostics.magnitude_band}")
        print(f"verdict: {r.verdict}")
        for note in r.diagnostics.notes:
            print("note:", note)
        if args.report:
            from semanscope_nb.metrics.workflow import diagnostic_report

            print("\n" + diagnostic_report({str(r.provenance.get("dataset")): r}).to_text())
        worst = r.concepts_frame().head(args.worst)
        if len(worst):
            print(f"\nworst-aligned concepts (cosine inter distance):\n{worst.to_string(index=False)}")
    if args.out:
        atomic_write_json(args.out, r.to_dict())
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    """`benchmark` with --backend/--n-jobs/--scheduler/--metrics/--api-model: the joblib grid."""
    from semanscope_nb.models.registry import list_models
    from semanscope_nb.runs.evaluate import format_leaderboard
    from semanscope_nb.runs.grid import resolve_backend, resolve_models, run_grid

    api_ids = _register_api_models(args.api_model or [], api_key_env=args.api_key_env)
    models = args.models
    if models is None and api_ids:
        models = [m.id for m in list_models(offline=True) if m.available] + api_ids
    _check_model_args(models)
    preset_skipped: dict[str, str] = {}
    if models is not None:
        models, preset_skipped = resolve_models(models)
    tasks = args.tasks or args.metrics or ["sa"]
    backend, n_jobs = resolve_backend(args.backend, n_jobs=args.n_jobs, scheduler=args.scheduler)
    _check_dataset_paths(args.datasets, "--datasets")
    cache = _open_cache(args.cache_dir)
    languages = args.languages
    _print_api_cost_estimates(models or [], args, cache)
    show_bar = sys.stderr.isatty()

    def report(model: str, dataset: str, task: str, status: str) -> None:
        if not show_bar:
            print(f"  [{time.strftime('%H:%M:%S')}] {model} x {dataset} [{task}]: {status}", file=sys.stderr, flush=True)

    params = {t: {"n_boot": args.n_boot, "seed": args.seed} for t in tasks if t in ("sa", "pair-sa", "retrieval", "csc", "bdi")}
    for task in ("sa", "pair-sa"):  # both give tiers: one set of thresholds for the verdict and the pair matrix
        if task in params:
            params[task]["thresholds"] = _thresholds(args)
    g = run_grid(models, args.datasets, tasks, languages=languages, max_concepts=args.max_concepts,
                 params=params, backend=backend, n_jobs=n_jobs, scheduler=args.scheduler, cache=cache,
                 out_dir=args.out, force=args.force, progress=show_bar, on_job=report)
    _print_reader_reports(g.reader_reports)
    if "sa" in tasks:
        print(format_leaderboard(g.leaderboard("sa")))
    wide = g.wide()
    if not wide.empty and any(t != "sa" for t in tasks):
        print("\n" + wide.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"\n{len(g.records)} results in {g.seconds:.1f} s on {g.backend}; encoder calls: {g.total_encoder_calls}; "
          f"texts embedded: {g.n_encoded}"
          f"{f'; resumed {len(g.resumed)}' if g.resumed else ''}")
    for m, why in {**preset_skipped, **g.skipped}.items():
        print(f"skipped {m}: {why}")
    for f in g.failures.values():
        print(f"FAILED {f['model']} x {f['dataset']} [{f['task']}]: {f['error']}")
    for f in g.files:
        print("wrote", f)
    return 1 if g.failures else 0


def _register_api_models(specs: Sequence[str], *, api_key_env: str) -> list[str]:
    """Register each ``ID=MODEL@BASE_URL`` of ``--api-model``; returns the ids (a bad spec is an error, its secrets redacted)."""
    from semanscope_nb.models.api import redact_secrets, register_api_model

    api_ids = []
    for spec in specs:
        mid, eq, rest = spec.partition("=")
        cut = rest.find("@http")  # the URL may hold its own '@' (user:key@host): split before the scheme
        name, at, url = (rest[:cut], "@", rest[cut + 1:]) if cut > 0 else ("", "", "")
        if not (eq and at and mid and name and url):
            raise ValueError(f"--api-model {redact_secrets(spec)!r}: expected ID=MODEL@BASE_URL, "
                             "e.g. oai-small=text-embedding-3-small@https://api.openai.com/v1")
        register_api_model(mid, base_url=url, model=name, api_key_env=api_key_env, replace=True)
        api_ids.append(mid)
    return api_ids


def _print_api_cost_estimates(models: Sequence[str], args: argparse.Namespace, cache: Any) -> None:
    """Before any call is made: the estimated cost of embedding the datasets' texts with each API model (stderr)."""
    from semanscope_nb.models.api import estimate_api_cost, is_api_model
    from semanscope_nb.runs.grid import load_word_datasets

    api_models = [m for m in models if is_api_model(m)]
    if api_models:
        loaded = load_word_datasets(args.datasets, args.languages, args.max_concepts)
        texts = list(dict.fromkeys(t for ds in loaded for t in ds.all_texts()))
        for m in api_models:
            print(f"cost estimate {estimate_api_cost(m, texts, cache=cache).describe()}", file=sys.stderr, flush=True)


def _cmd_benchmark(args: argparse.Namespace) -> int:
    """`benchmark`: every model x every dataset x every task on the one grid engine (serial unless asked)."""
    return _cmd_grid(args)


def _cmd_run(args: argparse.Namespace) -> int:
    """`run TASK`: any registered task on one dataset with one model, through run_task (as the grid and panels do)."""
    from semanscope_nb.models.registry import get_model_info
    from semanscope_nb.runs.tasks import get_task, run_task

    task = get_task(args.task)
    models = args.models or [args.model or None]
    for m in models:
        if m is not None:
            get_model_info(m)
    _check_dataset_paths([args.dataset], "--dataset")
    params = _task_params(task, args.param or [])
    if "n_boot" in task.defaults and args.n_boot is not None:
        params.setdefault("n_boot", args.n_boot)
    if "seed" in task.defaults and args.seed is not None:
        params.setdefault("seed", args.seed)
    cache = _open_cache(args.cache_dir)
    if "labelled" in task.data:
        from semanscope_nb.data.bitext import LabelledSplits, read_sib200

        data: Any = LabelledSplits(read_sib200(args.train or args.dataset, "train"), read_sib200(args.dataset, "test"))
        languages = None
    elif task.data == ("sentences",):
        from semanscope_nb.data.sentences import load_sentence_corpus

        data, languages = load_sentence_corpus(args.dataset), None
    else:
        data, languages = args.dataset, args.languages
    model: Any = models if task.inputs == "models" else models[0]
    r = run_task(task, data, model, languages=languages, cache=cache, **params)
    if args.json:
        print(json.dumps(r.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(f"task {task.name}  model {', '.join(str(m) for m in models)}  dataset {r.provenance.get('dataset')}")
        print(f"{task.main_score}: {r.main_score:.4f}")
        for k, v in r.summary().items():
            if k != "main_score" and isinstance(v, (int, float, str)) and not isinstance(v, bool):
                print(f"  {k}: {v:.4f}" if isinstance(v, float) else f"  {k}: {v}")
    if args.out:
        r.save(args.out)
    return 0


def _task_params(task: Any, pairs: Sequence[str]) -> dict[str, Any]:
    """``--param name=value`` pairs: values read as JSON (numbers, lists, true/false), else as text."""
    out: dict[str, Any] = {}
    for item in pairs:
        name, eq, raw = item.partition("=")
        if not eq or not name:
            raise ArgumentError(f"--param {item!r}: expected NAME=VALUE")
        if name not in task.defaults:
            raise ArgumentError(f"--param {name}: task '{task.name}' takes {', '.join(sorted(task.defaults))}")
        try:
            out[name] = json.loads(raw)
        except json.JSONDecodeError:
            out[name] = raw
        if name == "thresholds":  # JSON holds a {"great", "good"} object or a [great, good] pair, the task a TierThresholds
            try:
                out[name] = TierThresholds.of(out[name])
            except (TypeError, ValueError) as exc:
                raise ArgumentError(f"--param thresholds: {exc}") from None
    return out


def build_parser() -> argparse.ArgumentParser:
    """The ``semanscope`` command line: one sub-command per job (``semanscope <command> --help``)."""
    p = _Parser(prog="semanscope", description="Cross-lingual alignment of embedding models (Semantic Affinity).")
    p.add_argument("--version", action="version", version=f"semanscope_nb {package_version('semanscope_nb')}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_listing_commands, _add_sa_command, _add_benchmark_command, _add_run_command, _add_report_command):
        add(sub)
    t = sub.add_parser("tasks", help="list the registered tasks (name, data, main score, parameters)")
    t.set_defaults(func=_cmd_tasks)
    return p


def _add_listing_commands(sub: Any) -> None:
    m = sub.add_parser("models", help="list registered models (nothing is loaded)")
    m.add_argument("--offline", action="store_true", help="only models that work with no hub access")
    m.add_argument("--language", help="only models that support this language code")
    m.add_argument("--preset", help="only the models of a preset ('paper': paper 000's 13 models)")
    m.add_argument("--needs", choices=("nothing", "hub", "key"), help="only models that need this to run")
    m.add_argument("--all", action="store_true", help="also list preset models that need a hub or a key")
    m.set_defaults(func=_cmd_models)

    d = sub.add_parser("datasets", help="list bundled datasets (or the CSVs of a folder)")
    d.add_argument("--folder", type=_non_empty, help="a folder of Semanscope CSV files")
    d.set_defaults(func=_cmd_datasets)


def _add_common_options(q: argparse.ArgumentParser) -> None:
    """Languages, resampling, tiers, cache and path options shared by ``sa`` and ``benchmark``."""
    q.add_argument("--languages", type=_csv_list, help="comma-separated language codes, e.g. en,zh")
    q.add_argument("--n-boot", type=_int_at_least(0), help="bootstrap resamples (default: settings.n_boot, $SEMANSCOPE_N_BOOT)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--great", type=float, default=0.60, help="tier threshold for 'great' (default 0.60), of the verdict and the pair matrix alike")
    q.add_argument("--good", type=float, default=0.50, help="tier threshold for 'good' (default 0.50), of the verdict and the pair matrix alike")
    q.add_argument("--cache-dir", type=_non_empty, help="embedding cache folder (default: $SEMANSCOPE_CACHE or the user cache)")
    q.add_argument("--absolute-paths", action="store_true",
                   help="keep absolute data paths in results (they then reveal your folders; default: "
                   "relative to the data folder, else the file name, beside its sha256)")


def _add_sa_command(sub: Any) -> None:
    s = sub.add_parser("sa", help="Semantic Affinity of one model on one dataset")
    s.add_argument("--model", help="model id (default: settings.default_model, $SEMANSCOPE_MODEL)")
    s.add_argument("--dataset", type=_non_empty, default="conceptual-space", help="bundled dataset name or a CSV path")
    s.add_argument("--json", action="store_true", help="print the full result as JSON")
    s.add_argument("--out", type=_out_file, help="also write the result JSON here")
    s.add_argument("--worst", type=_int_at_least(0), default=10, help="how many worst-aligned concepts to list")
    s.add_argument("--report", action="store_true", help="also print the paper's two-stage diagnostic report (App. A.6)")
    _add_common_options(s)
    s.set_defaults(func=_cmd_sa)


def _add_benchmark_command(sub: Any) -> None:
    b = sub.add_parser("benchmark", help="every model x every dataset -> leaderboard + results/*.csv/json")
    b.add_argument("--models", type=_csv_list, help="comma-separated model ids or presets ('paper': paper 000's 13 models; those needing a hub or a key "
                   "this machine lacks are skipped with the reason) (default: every available offline model)")
    b.add_argument("--datasets", type=_csv_list, help="comma-separated dataset names or CSV paths (default: bundled)")
    b.add_argument("--out", type=_non_empty, default="results", help="results folder (default ./results)")
    b.add_argument("--max-concepts", type=_int_at_least(1), help="use only the first N concepts of each dataset")
    b.add_argument("--force", action="store_true", help="recompute finished jobs instead of resuming")
    # the joblib grid (any of these options switches to it; without them the serial run above is unchanged)
    b.add_argument("--backend", choices=["serial", "loky", "dask"], help="run the jobs through joblib: serial, loky processes, or Dask")
    b.add_argument("--n-jobs", type=_workers, help="worker processes (loky, or a local Dask cluster); 'auto': as many as CPUs "
                   "are free at the start, serial below 2 (./scripts/run.sh passes it; results never depend on it)")
    b.add_argument("--scheduler", type=_non_empty, help="Dask scheduler address (tcp://host:8786) or 'local' for a LocalCluster")
    b.add_argument("--tasks", type=_csv_list, help="comma-separated tasks: sa, pair-sa, retrieval, bdi, csc, projection (default sa)")
    b.add_argument("--metrics", type=_csv_list, help="the old name of --tasks")
    b.add_argument("--api-model", action="append", metavar="ID=MODEL@BASE_URL",
                   help="register an OpenAI-compatible embedding endpoint as model ID (repeatable)")
    b.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key (default OPENAI_API_KEY)")
    _add_common_options(b)
    b.set_defaults(func=_cmd_benchmark)


def _add_run_command(sub: Any) -> None:
    r = sub.add_parser("run", help="run any registered task (see `semanscope tasks`) on one dataset")
    r.add_argument("task", help="task name: sa, pair-sa, permutation, comparison, retrieval, bdi, knn, csc, projection")
    r.add_argument("--model", help="model id (default: settings.default_model)")
    r.add_argument("--models", type=_csv_list, help="comma-separated model ids (the comparison task)")
    r.add_argument("--dataset", type=_non_empty, default="conceptual-space",
                   help="bundled dataset name or CSV path (knn: the SIB-200 language of the test split)")
    r.add_argument("--train", help="knn: the SIB-200 language of the train split (default: the test language)")
    r.add_argument("--param", action="append", metavar="NAME=VALUE", help="a task parameter (repeatable; JSON values)")
    r.add_argument("--json", action="store_true", help="print the full result as JSON")
    r.add_argument("--out", type=_out_file, help="also write the result file here (Result.load reads it back)")
    r.add_argument("--languages", type=_csv_list, help="comma-separated language codes, e.g. en,zh")
    r.add_argument("--n-boot", type=_int_at_least(0), help="bootstrap resamples (default: settings.n_boot)")
    r.add_argument("--seed", type=int)
    r.add_argument("--cache-dir", type=_non_empty, help="embedding cache folder (default: $SEMANSCOPE_CACHE or the user cache)")
    r.add_argument("--absolute-paths", action="store_true",
                   help="keep absolute data paths in results (they then reveal your folders; default: "
                   "relative to the data folder, else the file name, beside its sha256)")
    r.set_defaults(func=_cmd_run)


def _add_report_command(sub: Any) -> None:
    rp = sub.add_parser("report", help="which model for my languages: every measurement side by side -> one HTML file + CSV/JSON")
    rp.add_argument("--models", type=_csv_list, required=True, help="comma-separated model ids, e.g. use-multilingual,multilingual-e5-small")
    rp.add_argument("--languages", type=_csv_list, required=True, help="comma-separated language codes, e.g. en,zh,ja")
    rp.add_argument("--datasets", type=_csv_list, help="comma-separated word datasets or CSV paths (default: conceptual-space,cultural-nuance)")
    rp.add_argument("--out", type=_out_file, default="report.html", help="the HTML file (CSV/JSON of every number beside it)")
    rp.add_argument("--n-boot", type=_int_at_least(0), help="bootstrap resamples (default: settings.n_boot)")
    rp.add_argument("--seed", type=int)
    rp.add_argument("--max-sentences", type=_int_at_least(1), default=1000, help="Tatoeba pairs kept per language (default 1000)")
    rp.add_argument("--bcws-pairs", type=_int_at_least(1), default=100,
                    help="BCWS pairs scored per model with token states, a seeded sample (default 100)")
    rp.add_argument("--work-dir", type=_non_empty, help="job files for resuming (default: <cache>/reports)")
    rp.add_argument("--cache-dir", type=_non_empty, help="embedding cache folder (default: $SEMANSCOPE_CACHE or the user cache)")
    rp.add_argument("--force", action="store_true", help="recompute finished steps instead of resuming")
    rp.add_argument("--no-progress", action="store_true", help="no progress bar")
    rp.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from semanscope_nb.runs.model_report import model_report

    if args.datasets:
        _check_dataset_paths(args.datasets, "--datasets")
    cache = _open_cache(args.cache_dir)
    r = model_report(args.models, languages=args.languages, datasets=args.datasets, n_boot=args.n_boot, seed=args.seed,
                     max_sentences=args.max_sentences, bcws_pairs=args.bcws_pairs, work_dir=args.work_dir, cache=cache, force=args.force,
                     progress=not args.no_progress)
    paths = r.to_html(args.out)
    for sentence in r.recommendations["sentence"]:
        print(sentence)
    print(f"report: {paths['html']}\nnumbers: {paths['csv']} and {paths['json']}")
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    from semanscope_nb.runs.tasks import list_tasks

    for t in list_tasks():
        print(f"{t.name:<12} {'/'.join(t.data):<16} main score {t.main_score:<18} {t.description}")
        print(f"{'':<12} parameters: {', '.join(f'{k}={v!r}' for k, v in t.defaults.items())}")
    return 0


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    """``warnings.showwarning`` for the terminal: one line, no source echo."""
    print(f"semanscope: warning: {_one_line(message)}", file=sys.stderr, flush=True)


def _describe(exc: BaseException, args: argparse.Namespace) -> tuple[int, str]:
    """(exit status, one-line message) for a failure that reached :func:`main`."""
    if isinstance(exc, (SemanscopeError, ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError)):
        if isinstance(exc, OSError) and exc.filename:  # e.g. IsADirectoryError: name the file, not just the errno
            return 2, f"{exc.filename}: {exc.strerror or exc}"
        return 2, _one_line(exc)
    if isinstance(exc, sqlite3.Error):
        folder = getattr(args, "cache_dir", None) or "the default cache folder"
        return 1, f"embedding cache in '{folder}': {type(exc).__name__}: {_one_line(exc)}"
    if isinstance(exc, OSError) and exc.filename:
        return 1, f"{exc.filename}: {exc.strerror or _one_line(exc)}"
    return 1, f"{type(exc).__name__}: {_one_line(exc)}"


class _Terminated(BaseException):
    """SIGTERM reached the command (a BaseException, so no ``except Exception`` swallows it)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``semanscope`` command; returns the exit status (0 ok, 1 run failed, 2 bad input, 130/143 stopped).

    SIGTERM unwinds like Ctrl-C (a grid shuts its worker pool down on the way out) and ends with status 143.
    """
    args = build_parser().parse_args(argv)
    on_main = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _raise_terminated) if on_main else None
    # --absolute-paths: through the environment, so that worker processes (loky, Dask) see it too
    old_abs = os.environ.get("SEMANSCOPE_ABSOLUTE_PATHS")
    if getattr(args, "absolute_paths", False):
        os.environ["SEMANSCOPE_ABSOLUTE_PATHS"] = "1"
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _run(args)
    finally:
        if getattr(args, "absolute_paths", False):
            if old_abs is None:
                os.environ.pop("SEMANSCOPE_ABSOLUTE_PATHS", None)
            else:
                os.environ["SEMANSCOPE_ABSOLUTE_PATHS"] = old_abs
        if on_main:
            signal.signal(signal.SIGTERM, old_term if old_term is not None else signal.SIG_DFL)


def _run(args: argparse.Namespace) -> int:
    """``args.func(args)`` with every failure turned into one stderr line and an exit status."""
    try:
        try:
            return args.func(args)
        except KeyboardInterrupt:
            print("semanscope: interrupted", file=sys.stderr)
            return 130
        except _Terminated:
            print("semanscope: terminated (SIGTERM)", file=sys.stderr)
            return 128 + signal.SIGTERM
        except BrokenPipeError:  # `semanscope ... | head`: the reader went away
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except Exception as exc:  # one line, never a traceback (unless SEMANSCOPE_DEBUG is set)
            status, text = _describe(exc, args)
            print(f"semanscope: error: {text}", file=sys.stderr)
            if os.environ.get("SEMANSCOPE_DEBUG"):
                print(traceback.format_exc(), end="", file=sys.stderr)  # through print: it quotes the same strings
            return status
    except _Terminated:  # SIGTERM while reporting a failure
        return 128 + signal.SIGTERM


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
