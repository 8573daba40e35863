"""MTEB results written the way mteb 2.x reads them, our models inside mteb, and a family / script breakdown.

MTEB stores one JSON per task and model:
``<cache>/results/<model name with / as __>/<revision>/<TaskName>.json`` holding
``task_name``, ``dataset_revision``, ``mteb_version``, ``evaluation_time`` (s),
``kg_co2_emissions`` and ``scores``: split -> list of subset entries, each with
``hf_subset``, ``languages`` and the metric values including ``main_score``.
Beside it ``model_meta.json`` holds every field of mteb's ``ModelMeta``.

What this module follows, checked against mteb 2.26 (``tests/test_mteb.py``):

* **Languages** are ISO 639-3 + ISO 15924 script (``deu-Latn``, ``cmn-Hans``), as
  task metadata writes them; :func:`mteb_language` converts any code with
  langcodes.  With a ``task``, :func:`mteb_subset` takes the subset name and its
  languages from the task's own metadata (``de``, ``en`` -> ``deu-eng``).
* **mteb_version** is the installed mteb's version, or :data:`MTEB_VERSION` (the
  release whose layout is written here) when mteb is not installed.
* **model_meta.json** carries every ``ModelMeta`` field, filled from the model
  registry (:func:`mteb_model_meta`); what the registry does not know is null.
* **Scores** on disk are rounded to 6 decimals, as ``TaskResult.to_disk`` rounds
  them; the full values go to ``full_precision/<TaskName>.json`` beside the task
  file (a folder ``ResultCache`` never reads) and :func:`read_mteb` uses them.
* :func:`write_mteb` ``(results, cache=<mteb cache>)`` writes into
  ``<cache>/results``, where ``mteb.ResultCache(<cache>)`` looks.

:class:`MtebEncoder` (from :func:`mteb_model`) runs any registry model inside
``mteb.evaluate`` through the embedding cache; :func:`tatoeba_task` is mteb's own
Tatoeba bitext-mining task on the local Tatoeba files (no hub download).

Example
-------
>>> import tempfile, numpy as np, semanscope_nb as snb
>>> r = snb.bitext_retrieval(np.eye(4), np.eye(4), ks=(1,), n_boot=0)
>>> entry = bitext_entry(r, languages=["de", "en"])
>>> entry["hf_subset"], entry["languages"]
('deu-eng', ['deu-Latn', 'eng-Latn'])
>>> res = MtebResult("Tatoeba", "fd5d3d0", {"test": [entry]}, evaluation_time=1.5, model=mteb_model_meta("random-null"))
>>> back = read_mteb(write_mteb([res], cache=tempfile.mkdtemp()))[0]
>>> back == res, back.score("test", "deu-eng"), back.main_score, back.model["name"]
(True, 1.0, 1.0, 'semanscope_nb/random-null')
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.errors import ArgumentError, DatasetError, UnknownModelError
from semanscope_nb.provenance import atomic_write_json, ensure_inside, json_ready, regular_file
from semanscope_nb.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.metrics.retrieval import BitextResult
    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder

#: the mteb release whose result layout this module writes when mteb is not installed (with mteb installed,
#: :func:`mteb_version` is its version).  mteb 2.x loads a file of version >= 1.11 without converting it;
#: tests/test_mteb.py checks this one loads in the installed mteb and is not newer than it.
MTEB_VERSION = "2.26.24"
#: decimals of the scores on disk (mteb's ``TaskResult.to_disk`` rounds with ``round(value, 6)``)
SCORE_DECIMALS = 6
#: the folder beside a task file that holds its full-precision scores (``ResultCache`` reads ``*/*/*.json`` only)
FULL_PRECISION_DIR = "full_precision"
#: the fields of mteb 2.26's ``ModelMeta`` in its order; ``model_meta.json`` holds each one (tests/test_mteb.py
#: compares this with the installed mteb)
MODEL_META_FIELDS = (
    "loader", "loader_kwargs", "name", "revision", "release_date", "languages", "n_parameters", "n_active_parameters_override",
    "n_embedding_parameters", "memory_usage_mb", "max_tokens", "embed_dim", "license", "open_weights", "public_training_code",
    "public_training_data", "framework", "reference", "similarity_fn_name", "use_instructions", "training_datasets",
    "adapted_from", "superseded_by", "modalities", "model_type", "citation", "contacts", "experiment_kwargs", "output_dtypes",
    "extra_requirements_groups",
)
#: values of the fields mteb gives a default; every other field is null when unknown
_META_DEFAULTS: dict[str, Any] = {"loader_kwargs": {}, "framework": [], "modalities": ["text"], "model_type": ["dense"]}
#: our registry's SPDX licence ids -> mteb's licence names (lower case); anything else is written as null
_LICENSES = {"apache-2.0": "apache-2.0", "mit": "mit", "bsd-3-clause": "bsd-3-clause", "cc-by-4.0": "cc-by-4.0",
             "cc-by-sa-4.0": "cc-by-sa-4.0", "gpl-3.0": "gpl-3.0", "mpl-2.0": "mpl-2.0", "cc0-1.0": "cc0-1.0"}
_NAME_PREFIX = "semanscope_nb/"  # mteb names are "organisation/model"; ours run through this package


def mteb_version() -> str:
    """The version of the mteb whose layout is written: the installed mteb's, else :data:`MTEB_VERSION`.

    >>> int(mteb_version().split(".")[0]) >= 2
    True
    """
    try:
        return importlib.metadata.version("mteb")
    except importlib.metadata.PackageNotFoundError:
        return MTEB_VERSION


# --------------------------------------------------------------------------- languages and subsets


@functools.lru_cache(maxsize=1)
def _individual_languages() -> dict[str, str]:
    """Macrolanguage -> the individual language langcodes folds into it (zh -> cmn, fa -> pes), when there is one."""
    from langcodes.data_dicts import NORMALIZED_MACROLANGUAGES  # individual -> macrolanguage, e.g. cmn -> zh

    out: dict[str, str] = {}
    for individual, macro in NORMALIZED_MACROLANGUAGES.items():
        out[macro] = "" if macro in out else individual  # two candidates (Akan, Mandingo): keep the macrolanguage
    return {m: i for m, i in out.items() if i}


def mteb_language(code: str) -> str:
    """``code`` (BCP 47 or ISO 639) as MTEB writes a language: ISO 639-3 + ISO 15924 script.

    langcodes resolves the code and its likely script; a macrolanguage becomes the
    individual language langcodes folds into it, as MTEB writes Chinese (``cmn``).

    >>> mteb_language("de"), mteb_language("zh"), mteb_language("zh-TW"), mteb_language("deu-Latn")
    ('deu-Latn', 'cmn-Hans', 'cmn-Hant', 'deu-Latn')
    """
    import langcodes  # ISO 639 / 15924 data and likely scripts (CLDR), instead of a hand table

    if not isinstance(code, str) or not code.strip():
        raise ArgumentError(f"a language code must be a non-empty string, got {code!r}")
    try:
        lang = langcodes.Language.get(code.strip())
        alpha3 = langcodes.Language.get(lang.language).to_alpha3()
    except (LookupError, ValueError) as exc:  # LanguageTagError is a ValueError; unknown codes raise LookupError
        raise ArgumentError(f"'{code}' is not a language code langcodes knows ({exc})") from None
    alpha3 = _individual_languages().get(lang.language, alpha3)
    script = lang.script or lang.maximize().script
    if not script:
        raise ArgumentError(f"'{code}': langcodes knows no script for it; pass one, e.g. '{code}-Latn'")
    return f"{alpha3}-{script}"


def _macro(code: str) -> str:
    """The language part of a code, individual languages folded into their macrolanguage (cmn -> zh, ara -> ar)."""
    import langcodes

    return langcodes.standardize_tag(code.split("-")[0], macro=True)


def _task_subsets(task: Any) -> dict[str, list[str]] | None:
    """Subset -> languages of an mteb task (an instance or a name mteb knows); None if mteb is not installed."""
    if task is None:
        return None
    if isinstance(task, str):
        if importlib.util.find_spec("mteb") is None:
            return None
        import mteb

        try:
            task = mteb.get_task(task)
        except KeyError as exc:
            raise ArgumentError(f"mteb knows no task {task!r} ({exc.args[0] if exc.args else exc}); pass the task object "
                                "or task=None") from None
    return {s: list(langs) for s, langs in task.metadata.hf_subsets_to_langscripts.items()}


def mteb_subset(languages: Sequence[str], *, task: Any = None) -> tuple[str, list[str]]:
    """The subset name and its languages for ``languages`` (e.g. source and target), as ``task`` names them.

    ``task``: an mteb task or its name; its metadata gives the subset whose
    languages match (``de``, ``en`` -> ``deu-eng`` with ``["deu-Latn", "eng-Latn"]``
    for Tatoeba; languages are compared with macrolanguages folded, script only
    to break a tie).  Without a task, or without mteb installed, the subset is the
    ISO 639-3 codes joined by ``-`` and the languages those of :func:`mteb_language`.

    >>> mteb_subset(["de", "en"])
    ('deu-eng', ['deu-Latn', 'eng-Latn'])
    """
    codes = [mteb_language(c) for c in languages]
    if not codes:
        raise ArgumentError("languages is empty: an MTEB subset needs at least one language")
    default = ("-".join(c.split("-")[0] for c in codes), codes)
    subsets = _task_subsets(task)
    if subsets is None:
        return default
    wanted = [_macro(c) for c in codes]
    hits = [(s, langs) for s, langs in subsets.items() if len(langs) == len(codes) and [_macro(x) for x in langs] == wanted]
    if len(hits) > 1:  # e.g. cmn-Hans and cmn-Hant subsets: the script decides
        hits = [(s, langs) for s, langs in hits if [x.split("-")[-1] for x in langs] == [c.split("-")[-1] for c in codes]] or hits
    if not hits:
        name = task if isinstance(task, str) else task.metadata.name
        some = ", ".join(list(subsets)[:6])
        raise ArgumentError(f"task {name!r} has no subset for {list(languages)} (as {codes}); its subsets include {some}")
    return hits[0][0], list(hits[0][1])


# --------------------------------------------------------------------------- model metadata


def _safe(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9._-]`` replaced by ``-`` (a path part, no separators)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.")
    return out or "unnamed"


def _name_part(model_id: str) -> str:
    """The part of an mteb name after ``semanscope_nb/``: the id, a local folder by its name only (no paths in results)."""
    target = model_id.removeprefix("st:")
    if os.path.isabs(target) or Path(target).is_dir():
        return _safe("st-" + Path(target).name)  # the folder's fingerprint is in the revision
    return _safe(model_id)


def _model_revision(key: str, version: str) -> str:
    """The revision an encoder's vectors are filed under: its version, plus a short hash of its whole cache key."""
    return f"{_safe(version)}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}"


def _encoder_meta(model: Any) -> tuple[Any, str, str, str, int | None]:
    """(registry info or None, id, version, cache key, dims) of a registry id, an Encoder or a DistFuse ensemble."""
    from semanscope_nb.metrics.fusion import DistFuse
    from semanscope_nb.models.encoders import Encoder
    from semanscope_nb.models.registry import get_model_info, load_model

    if isinstance(model, DistFuse):
        prov = json.dumps(model.provenance(), sort_keys=True, default=str)
        return None, model.id, "distfuse", prov, None
    if isinstance(model, str):
        info = get_model_info(model)
        encoder = load_model(model)  # builds the encoder object; nothing is loaded or contacted
    elif isinstance(model, Encoder):
        encoder = model
        try:
            info = get_model_info(encoder.model_id)
        except UnknownModelError:  # an encoder the registry does not list: nothing is known about it
            info = None
    else:
        raise ArgumentError(f"model must be a registry id, an Encoder or a DistFuse ensemble, got {type(model).__name__}")
    dims = info.dims if info is not None else None
    return info, encoder.model_id, encoder.version, encoder.cache_key, dims


def mteb_model_meta(model: "str | Encoder | Any") -> dict[str, Any]:
    """Every field of mteb's ``ModelMeta`` for ``model`` (registry id, Encoder or DistFuse), from the registry.

    ``name`` is ``semanscope_nb/<id>`` (the model as this package runs it;
    ``adapted_from`` names the original), ``revision`` the encoder's version plus
    a hash of its cache key (every option that changes the vectors).  What the
    registry does not record is None (JSON null), never a guess.

    >>> m = mteb_model_meta("use-multilingual")
    >>> m["name"], m["embed_dim"], m["languages"][:2], m["license"], m["release_date"]
    ('semanscope_nb/use-multilingual', 512, ['eng-Latn', 'cmn-Hans'], 'apache-2.0', None)
    """
    info, model_id, version, key, dims = _encoder_meta(model)
    meta: dict[str, Any] = {f: copy.deepcopy(_META_DEFAULTS.get(f)) for f in MODEL_META_FIELDS}
    meta["name"] = _NAME_PREFIX + _name_part(model_id)
    meta["revision"] = _model_revision(key, version)
    meta["embed_dim"] = dims
    if info is not None:
        langs = info.languages
        meta.update({
            "languages": None if isinstance(langs, str) else list(dict.fromkeys(mteb_language(c) for c in langs)),
            "n_parameters": info.n_parameters, "max_tokens": info.max_tokens, "release_date": info.release_date,
            "license": _LICENSES.get(str(info.licence).strip().lower()), "open_weights": info.open_weights,
            "framework": list(info.frameworks), "reference": info.reference, "similarity_fn_name": info.similarity,
            "use_instructions": info.use_instructions, "adapted_from": info.upstream,
        })
    return meta


def _complete_meta(model: Mapping[str, Any]) -> dict[str, Any]:
    """A ``model`` dict with every ModelMeta field (missing ones null); the name must be ``organisation/model``."""
    unknown = sorted(set(model) - set(MODEL_META_FIELDS))
    if unknown:
        raise ArgumentError(f"model metadata has fields mteb's ModelMeta does not know: {unknown} (known: {list(MODEL_META_FIELDS)})")
    name = model.get("name")
    if not isinstance(name, str) or "/" not in name:
        raise ArgumentError(f"model name must be 'organisation/model' as mteb requires, got {name!r} "
                            "(mteb_model_meta(model_id) gives a complete entry)")
    out = {f: copy.deepcopy(model.get(f, _META_DEFAULTS.get(f))) for f in MODEL_META_FIELDS}
    out["revision"] = out["revision"] or "no_revision_available"  # mteb's folder name for an unknown revision
    return json_ready(out)


# --------------------------------------------------------------------------- results


def _round_scores(x: Any, decimals: int = SCORE_DECIMALS) -> Any:
    """Every float in ``x`` rounded to ``decimals`` (Python's ``round``, as mteb's ``TaskResult._round_scores``)."""
    if isinstance(x, float):
        return round(x, decimals)
    if isinstance(x, dict):
        return {k: _round_scores(v, decimals) for k, v in x.items()}
    if isinstance(x, list):
        return [_round_scores(v, decimals) for v in x]
    return x


@dataclass(frozen=True)
class MtebResult(Result):
    """One task's MTEB result for one model.

    :attr:`main_score` is the ``main_score`` of the first split's first subset;
    :meth:`score` reads any split and subset.  ``to_dict`` / ``save`` write this
    package's result file; :meth:`to_mteb_json` / :func:`write_mteb` write MTEB's layout.
    """

    kind = "mteb"
    main_score_name = "first_main_score"

    task_name: str
    dataset_revision: str
    scores: dict[str, list[dict[str, Any]]]
    evaluation_time: float
    model: dict[str, Any] = field(default_factory=dict)
    mteb_version: str = field(default_factory=mteb_version)
    kg_co2_emissions: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def score(self, split: str, subset: str = "default") -> float:
        """The ``main_score`` of one split and subset."""
        for e in self.scores.get(split, []):
            if e.get("hf_subset") == subset:
                return float(e["main_score"])
        raise KeyError(f"{self.task_name}: no subset {subset!r} in split {split!r}")

    @property
    def first_main_score(self) -> float:
        """The ``main_score`` of the first subset of the first split (NaN when there is none)."""
        for entries in self.scores.values():
            for e in entries:
                return math.nan if e.get("main_score") is None else float(e["main_score"])
        return math.nan

    def summary(self) -> dict[str, Any]:
        """``main_score`` plus one ``<split>/<subset>`` column per subset entry."""
        out: dict[str, Any] = {"main_score": self.main_score, "task_name": self.task_name}
        for split, entries in self.scores.items():
            for e in entries:
                out[f"{split}/{e.get('hf_subset')}"] = math.nan if e.get("main_score") is None else float(e["main_score"])
        return out

    def to_mteb_json(self, *, rounded: bool = True) -> dict[str, Any]:
        """The task JSON as MTEB writes it (scores rounded to 6 decimals unless ``rounded=False``; the model's metadata goes to ``model_meta.json``)."""
        scores = json_ready(self.scores)
        return json_ready({"dataset_revision": self.dataset_revision, "task_name": self.task_name,
                           "mteb_version": self.mteb_version, "scores": _round_scores(scores) if rounded else scores,
                           "evaluation_time": self.evaluation_time, "kg_co2_emissions": self.kg_co2_emissions})

    @classmethod
    def from_mteb_json(cls, d: Mapping[str, Any], *, model: Mapping[str, Any] | None = None, source: str = "<dict>") -> "MtebResult":
        """Read a task JSON (``source`` names the file in errors)."""
        missing = [k for k in ("task_name", "scores") if k not in d]
        if missing:
            raise DatasetError(f"{source}: not an MTEB result (missing {', '.join(missing)})")
        scores = d["scores"]
        if not isinstance(scores, Mapping):
            raise DatasetError(f"{source}: 'scores' must map split -> list of subset entries")
        for split, entries in scores.items():
            if not isinstance(entries, list):
                raise DatasetError(f"{source}: scores[{split!r}] must be a list of subset entries")
            for i, e in enumerate(entries):
                if "main_score" not in e or "hf_subset" not in e:
                    raise DatasetError(f"{source}: scores[{split!r}][{i}] lacks 'main_score' or 'hf_subset'")
        ev = d.get("evaluation_time")
        return cls(task_name=str(d["task_name"]), dataset_revision=str(d.get("dataset_revision", "")),
                   scores={s: [dict(e) for e in v] for s, v in scores.items()},
                   evaluation_time=math.nan if ev is None else float(ev), model=dict(model or {}),
                   mteb_version=str(d.get("mteb_version", "")), kg_co2_emissions=d.get("kg_co2_emissions"))


def bitext_entry(
    result: "BitextResult",
    *,
    subset: str | None = None,
    languages: Sequence[str] = (),
    task: Any = None,
) -> dict[str, Any]:
    """An MTEB bitext-mining subset entry (source -> target direction) from a BitextResult.

    ``languages`` (source, target) in any code (``"de"``, ``"deu-Latn"``) are
    written as MTEB writes them; ``subset`` defaults to the name ``task`` (an mteb
    task or its name, e.g. ``"Tatoeba"``) gives those languages (:func:`mteb_subset`),
    or ``"default"`` when no languages are given.  Keys: precision, recall, f1,
    accuracy, main_score (F1, as MTEB), f1_at_<k>.

    >>> import numpy as np, semanscope_nb as snb
    >>> e = bitext_entry(snb.bitext_retrieval(np.eye(3), np.eye(3), ks=(1,), n_boot=0), languages=["zh", "en"])
    >>> e["hf_subset"], e["languages"], e["main_score"]
    ('cmn-eng', ['cmn-Hans', 'eng-Latn'], 1.0)
    """
    if result.f1 is None:
        raise ValueError("MTEB bitext mining needs one gold per query (F1 defined); lexicon induction has several")
    if subset is None:
        subset, langs = mteb_subset(languages, task=task) if languages else ("default", [])
    else:
        langs = [mteb_language(c) for c in languages]
    return {"precision": result.precision, "recall": result.recall, "f1": result.f1,
            "accuracy": result.accuracy[result.ks[0]] if result.ks[0] == 1 else result.recall,
            "main_score": result.f1, "hf_subset": subset, "languages": langs,
            **{f"f1_at_{k}": v for k, v in result.f1_at.items()}}


def _model_dir(folder: Path, meta: Mapping[str, Any]) -> Path:
    """``<folder>/<name with / as __>/<revision>`` as mteb's ``ResultCache`` builds it, from sanitised parts."""
    name = "__".join(_safe(part) for part in str(meta["name"]).replace(" ", "_").split("/"))
    return folder / name / _safe(str(meta["revision"]))


def write_mteb(
    results: Sequence[MtebResult],
    folder: str | os.PathLike | None = None,
    *,
    cache: str | os.PathLike | None = None,
) -> str:
    """Write results in MTEB's layout; returns the results folder.

    ``cache=<folder>`` writes into ``<folder>/results``, where
    ``mteb.ResultCache(<folder>)`` reads; ``folder=`` names the results folder
    itself.  Per result: ``<model>/<revision>/<TaskName>.json`` (scores rounded
    as mteb rounds them), the full values in ``full_precision/<TaskName>.json``
    beside it, and ``model_meta.json`` with every ModelMeta field.  Every file is
    written atomically.  Names are sanitised into single path parts (``..``, ``/``
    and absolute paths cannot leave the folder); a task named ``model_meta`` or
    ``full_precision``, and two tasks or models that would share a file, are
    refused (``ArgumentError``) before anything is written.

    >>> import tempfile
    >>> res = MtebResult("Tatoeba", "r1", {"test": [{"main_score": 1 / 3, "hf_subset": "deu-eng", "languages": []}]}, 1.0,
    ...                  model={"name": "org/model", "revision": "v1"})
    >>> cache = Path(tempfile.mkdtemp())
    >>> root = write_mteb([res], cache=cache)
    >>> sorted(p.relative_to(cache).as_posix() for p in Path(root).rglob("*.json"))
    ['results/org__model/v1/Tatoeba.json', 'results/org__model/v1/full_precision/Tatoeba.json', 'results/org__model/v1/model_meta.json']
    >>> json.loads((Path(root) / "org__model" / "v1" / "Tatoeba.json").read_text())["scores"]["test"][0]["main_score"]
    0.333333
    """
    if (folder is None) == (cache is None):
        raise ArgumentError("pass folder= (the results folder) or cache= (an mteb cache folder: results go to <cache>/results)")
    root = Path(cache) / "results" if cache is not None else Path(folder)
    plan = _mteb_plan(root, results)  # every name checked before anything is written
    for r, meta, d, task_file in plan:
        atomic_write_json(d / task_file, r.to_mteb_json())
        atomic_write_json(d / FULL_PRECISION_DIR / task_file, r.to_mteb_json(rounded=False))
        atomic_write_json(d / MODEL_META_FILE, meta)
    return str(root)


#: the file beside a model's task files that holds its ModelMeta (mteb's name)
MODEL_META_FILE = "model_meta.json"
#: task names that would be written over this layout's own files
RESERVED_TASK_NAMES = (Path(MODEL_META_FILE).stem, FULL_PRECISION_DIR)


def _read_json_or_none(path: Path) -> Any:
    """The JSON in ``path``; None when it is missing or damaged (then it is written over).

    A file that cannot be read now (permission denied, a lock, an I/O error, a folder or FIFO under its
    name) is not damage: the ``OSError`` is raised, so nothing is written over a file whose owner was not
    checked.
    """
    try:
        return json.loads(regular_file(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:  # read and not JSON (UnicodeDecodeError included): damage
        return None


def _mteb_plan(root: Path, results: Sequence[MtebResult]) -> list[tuple[MtebResult, dict[str, Any], Path, str]]:
    """(result, metadata, model folder, task file) per result; refuses what would leave ``root`` or overwrite another's file.

    Refused (``ArgumentError`` naming the result): a task whose file name would be
    the metadata's or the full-precision folder's; two task names, or two models,
    that sanitise to the same file or folder (in this call, or against the files
    already there).
    """
    plan = []
    owners: dict[Path, tuple[str, str]] = {}
    tasks: dict[Path, str] = {}
    for i, r in enumerate(results):
        meta = _complete_meta(r.model)
        d = ensure_inside(root, _model_dir(root, meta), what=f"results[{i}]: model {meta['name']!r} revision {meta['revision']!r}")
        stem = _safe(r.task_name)
        if stem.casefold() in RESERVED_TASK_NAMES:
            raise ArgumentError(f"results[{i}]: task name {r.task_name!r} would be written over this layout's own "
                                f"'{stem}' ({MODEL_META_FILE} and {FULL_PRECISION_DIR}/ sit beside the task files); rename the task")
        task_file = f"{stem}.json"
        ensure_inside(root, d / task_file, what=f"results[{i}]: task {r.task_name!r}")
        model = (str(meta["name"]), str(meta["revision"]))
        on_disk = _read_json_or_none(d / MODEL_META_FILE)
        if isinstance(on_disk, dict) and (str(on_disk.get("name")), str(on_disk.get("revision"))) != model:
            on_disk = (str(on_disk.get("name")), str(on_disk.get("revision")))
        else:
            on_disk = None
        other = owners.setdefault(d, model) if on_disk is None else on_disk
        if other != model:
            raise ArgumentError(f"results[{i}]: model {other[0]!r} revision {other[1]!r} and model {model[0]!r} revision "
                                f"{model[1]!r} both map to the folder '{d.relative_to(root)}'; rename one")
        task_on_disk = _read_json_or_none(d / task_file)
        earlier = tasks.setdefault(d / task_file, r.task_name)
        if isinstance(task_on_disk, dict) and task_on_disk.get("task_name") not in (None, r.task_name):
            earlier = str(task_on_disk["task_name"])
        if earlier != r.task_name:
            raise ArgumentError(f"results[{i}]: tasks {earlier!r} and {r.task_name!r} both map to the file "
                                f"'{(d / task_file).relative_to(root)}'; rename one")
        plan.append((r, meta, d, task_file))
    return plan


def _full_precision(d: dict[str, Any], sidecar: Path) -> dict[str, Any]:
    """``d`` with each subset entry replaced by its full-precision twin when the twin rounds to exactly that entry."""
    try:
        full = json.loads(sidecar.read_text(encoding="utf-8"))
        full_scores = full["scores"]
    except (OSError, ValueError, KeyError, TypeError):
        return d  # no usable sidecar: the rounded values stand
    scores = {}
    for split, entries in d["scores"].items():
        twins = {e.get("hf_subset"): e for e in full_scores.get(split, []) if isinstance(e, dict)}
        scores[split] = [twins[e.get("hf_subset")] if _round_scores(twins.get(e.get("hf_subset"))) == e else e for e in entries]
    return {**d, "scores": scores}


def _read_result_json(p: Path) -> Any:
    """The JSON of a results file; a FIFO or device, bytes that are not UTF-8 or text that is not JSON is a
    :class:`DatasetError` naming the file (and line)."""
    if p.exists() and not p.is_file():  # a FIFO would block the read for ever
        raise DatasetError(f"{p}: not a regular file (a FIFO, socket or device)")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{p}, line {e.lineno}: not valid JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{p}: not UTF-8 text (byte {e.start})") from None


def read_mteb(folder: str | os.PathLike, *, full_precision: bool = True) -> list[MtebResult]:
    """Every task JSON below ``folder`` (MTEB layout), with its ``model_meta.json`` when present.

    ``full_precision``: a subset whose full-precision value (written by
    :func:`write_mteb`) rounds to the stored one is read at full precision.

    >>> import tempfile
    >>> res = MtebResult("T", "r1", {"test": [{"main_score": 1 / 3, "hf_subset": "default", "languages": []}]}, 1.0,
    ...                  model={"name": "org/model", "revision": "v1"})
    >>> root = write_mteb([res], tempfile.mkdtemp())
    >>> read_mteb(root)[0].score("test"), read_mteb(root, full_precision=False)[0].score("test")
    (0.3333333333333333, 0.333333)
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder")
    out = []
    for p in sorted(folder.rglob("*.json")):
        if p.name == MODEL_META_FILE or p.parent.name == FULL_PRECISION_DIR or p.is_dir():
            continue  # a folder named *.json is no task file (its files are listed on their own)
        d = _read_result_json(p)
        meta_p = p.parent / MODEL_META_FILE
        meta = _read_result_json(meta_p) if meta_p.exists() else {}
        result = MtebResult.from_mteb_json(d, model=meta, source=str(p))
        sidecar = p.parent / FULL_PRECISION_DIR / p.name
        if full_precision and sidecar.exists():
            result = MtebResult.from_mteb_json(_full_precision(d, sidecar), model=meta, source=str(p))
        out.append(result)
    return out


# --------------------------------------------------------------------------- our models inside mteb


class MtebEncoder:
    """A registry model as an mteb 2.x encoder (``mteb.models.EncoderProtocol``), embedding through the cache.

    ``mteb.evaluate(MtebEncoder(model="use-multilingual"), tasks)`` encodes only
    the texts the embedding cache lacks; the vectors are exactly the ones every
    score of this package uses.  The constructor follows mteb's loader signature
    (``model_name, revision, device=...``), so :attr:`mteb_model_meta`'s
    ``loader`` rebuilds it.  Similarities are mteb's own functions
    (``mteb.similarity_functions``) for the registry's similarity (cosine).

    A corpus-fitted baseline (TF-IDF) must come prepared (``encoder.prepare(corpus)``),
    and a language-dependent (aligned) model cannot run here: mteb does not say
    which language a batch is in.

    >>> m = MtebEncoder(model="random-null", cache=False)
    >>> m.encode([{"text": ["water"]}, {"text": ["Wasser", "eau"]}]).shape, m.n_texts, m.n_encoded
    ((3, 512), 3, 3)
    """

    def __init__(
        self,
        model_name: str | None = None,
        revision: str | None = None,
        *,
        device: str | None = None,
        model: "str | Encoder | None" = None,
        cache: "EmbeddingCache | str | os.PathLike | None | bool" = None,
        batch_size: int = 128,
        **kwargs: Any,
    ) -> None:
        from semanscope_nb.models.cache import resolve_cache
        from semanscope_nb.models.registry import load_model

        target = model if model is not None else model_name
        if target is None:
            raise ArgumentError("MtebEncoder needs model= (a registry id or an Encoder)")
        if isinstance(target, str) and target.startswith(_NAME_PREFIX):
            raise ArgumentError(f"{target!r} is an mteb name; pass model=<registry id> (the loader_kwargs of mteb_model_meta do)")
        self.encoder = load_model(target)
        if self.encoder.language_dependent:
            raise ArgumentError(f"{self.encoder.model_id} embeds each language differently, and mteb does not say which "
                                "language a batch is in: evaluate it with this package's own functions")
        if not self.encoder.prepared:
            raise ArgumentError(f"{self.encoder.model_id} must be fitted on a corpus first: pass model=encoder.prepare(corpus)")
        self.cache = resolve_cache(cache)
        self.batch_size = batch_size
        self.similarity_fn_name = mteb_model_meta(self.encoder)["similarity_fn_name"]
        self.n_texts = 0  # texts mteb asked for
        self.n_encoded = 0  # of which the model encoded (the rest came from the cache)
        self._meta: Any = None

    @property
    def mteb_model_meta(self) -> Any:
        """mteb's ``ModelMeta`` of the model: :func:`mteb_model_meta` with this class as loader."""
        if self._meta is None:
            from mteb.models import ModelMeta

            fields = {**mteb_model_meta(self.encoder), "loader": MtebEncoder, "loader_kwargs": {"model": self.encoder.model_id}}
            self._meta = ModelMeta.model_validate(fields)
        return self._meta

    @mteb_model_meta.setter
    def mteb_model_meta(self, value: Any) -> None:  # ModelMeta.load_model sets it on the model it built
        self._meta = value

    def encode(self, inputs: Any, *, task_metadata: Any = None, hf_split: str = "", hf_subset: str = "",
               prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
        """The vectors of every text in ``inputs`` (an mteb dataloader of ``{"text": [...]}`` batches), float32."""
        texts: list[str] = []
        for i, batch in enumerate(inputs):
            if "text" not in batch:
                raise ArgumentError(f"batch {i} has no 'text' column (columns: {sorted(batch)}): MtebEncoder embeds text only")
            texts.extend(str(t) for t in batch["text"])
        self.n_texts += len(texts)
        if self.cache is None:
            before = self.encoder.texts_encoded
            vectors = self.encoder.encode(texts) if texts else np.zeros((0, 0), np.float32)
            self.n_encoded += self.encoder.texts_encoded - before
            return vectors
        vectors, stats = self.cache.embed_with_stats(self.encoder, texts, batch_size=self.batch_size, progress=False)
        self.n_encoded += stats.n_encoded
        return vectors

    def _similarity_functions(self) -> tuple[Any, Any]:
        from mteb.similarity_functions import cos_sim, dot_score, pairwise_cos_sim, pairwise_dot_score

        if self.similarity_fn_name not in (None, "cosine", "dot"):
            raise ArgumentError(f"{self.encoder.model_id}: mteb has no similarity function {self.similarity_fn_name!r}")
        return (dot_score, pairwise_dot_score) if self.similarity_fn_name == "dot" else (cos_sim, pairwise_cos_sim)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Every pairwise similarity (mteb's function for the model's similarity)."""
        return self._similarity_functions()[0](embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Similarities of row i with row i."""
        return self._similarity_functions()[1](embeddings1, embeddings2)

    def __repr__(self) -> str:
        return f"MtebEncoder({self.encoder.model_id!r}, cache={'off' if self.cache is None else 'on'})"


def mteb_model(
    model: "str | Encoder",
    *,
    cache: "EmbeddingCache | str | os.PathLike | None | bool" = None,
) -> MtebEncoder:
    """``model`` (a registry id, ``st:`` or API model, or an Encoder) as an mteb encoder using the embedding cache.

    >>> m = mteb_model("random-null", cache=False)
    >>> m.encode([{"text": ["water", "Wasser"]}]).shape
    (2, 512)
    """
    return MtebEncoder(model=model, cache=cache)


def tatoeba_task(
    languages: Sequence[str] = ("de",),
    *,
    folder: str | os.PathLike | None = None,
    limit: int | None = None,
) -> Any:
    """mteb's Tatoeba bitext-mining task on the local Tatoeba files (``read_tatoeba``), with no hub download.

    The task is mteb's own ``TatoebaBitextMining`` (its evaluator, metrics and
    name), with the subsets of ``languages`` (each against English, e.g. ``deu-eng``)
    and its dataset built in memory; ``dataset_revision`` is the SHA-256 of the
    files read, so these results are not merged with results on mteb's hub copy.
    Sentence 1 is the non-English side, as in mteb's Tatoeba.

    >>> from semanscope_nb.data.bitext import tatoeba_dir
    >>> ready = importlib.util.find_spec("mteb") is not None and (tatoeba_dir() / "tatoeba.deu-eng.deu").exists()
    >>> not ready or tatoeba_task(["de"], limit=10).hf_subsets == ["deu-eng"]
    True
    """
    import mteb
    from datasets import Dataset, DatasetDict

    from semanscope_nb.data.bitext import read_tatoeba, tatoeba_dir
    from semanscope_nb.provenance import shareable_source

    base = type(mteb.get_task("Tatoeba"))
    corpora: dict[str, Any] = {}
    eval_langs: dict[str, list[str]] = {}
    for language in languages:
        corpus = read_tatoeba(language, folder=folder, limit=limit)
        subset, langs = mteb_subset([corpus.source_language, corpus.target_language], task="Tatoeba")
        corpora[subset], eval_langs[subset] = corpus, langs
    if not corpora:
        raise ArgumentError("languages is empty: name at least one Tatoeba language, e.g. ['de']")
    revision = hashlib.sha256("\0".join(f"{s}:{c.sha256}" for s, c in corpora.items()).encode()).hexdigest()
    metadata = base.metadata.model_copy(update={
        "eval_langs": eval_langs,
        "dataset": {"path": shareable_source(tatoeba_dir(folder)), "revision": revision},
    })

    class LocalTatoeba(base):  # type: ignore[misc, valid-type]
        """mteb's Tatoeba task reading the local files (built in memory; nothing is downloaded)."""

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            if self.data_loaded:
                return
            self.dataset = {s: DatasetDict({"test": Dataset.from_dict({"sentence1": list(c.source_texts),
                                                                       "sentence2": list(c.target_texts)})})
                            for s, c in corpora.items()}
            self.data_loaded = True

    LocalTatoeba.metadata = metadata
    return LocalTatoeba()


# --------------------------------------------------------------------------- language family / script breakdown

#: top-level families (Glottolog) of the languages the bundled / shared data hold; written by hand because
#: langcodes (names, scripts) carries no family data
LANGUAGE_FAMILIES = {
    "en": "Indo-European", "de": "Indo-European", "fr": "Indo-European", "es": "Indo-European", "nl": "Indo-European",
    "it": "Indo-European", "pt": "Indo-European", "ru": "Indo-European", "hi": "Indo-European",
    "zh": "Sino-Tibetan", "ja": "Japonic", "ko": "Koreanic", "ar": "Afro-Asiatic", "tr": "Turkic", "fi": "Uralic",
    "id": "Austronesian", "sw": "Atlantic-Congo",
}


def text_script(text: str) -> str:
    """The dominant Unicode script of ``text``'s letters (first word of each letter's Unicode name).

    >>> text_script("Hello"), text_script("你好吗"), text_script("Привет"), text_script("こんにちは")
    ('Latin', 'Han', 'Cyrillic', 'Hiragana')
    """
    counts: dict[str, int] = {}
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        word = name.split(" ")[0] if name else "Unknown"
        script = {"CJK": "Han", "LATIN": "Latin", "CYRILLIC": "Cyrillic", "ARABIC": "Arabic", "HIRAGANA": "Hiragana",
                  "KATAKANA": "Katakana", "HANGUL": "Hangul", "DEVANAGARI": "Devanagari", "GREEK": "Greek",
                  "HEBREW": "Hebrew", "THAI": "Thai"}.get(word, word.title())
        counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.get) if counts else "Unknown"


def language_breakdown(
    frame: pd.DataFrame,
    *,
    language_column: str = "language",
    score_column: str = "main_score",
    sample_texts: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Mean / std / count of ``score_column`` per language family and per script.

    The script comes from ``sample_texts[language]`` (Unicode names, standard
    library), else from langcodes' likely script when it is installed, else
    "unknown"; the family from :data:`LANGUAGE_FAMILIES` ("unknown" if absent).
    Returns rows with ``group`` ("family" / "script"), ``value``, ``n``, ``mean``, ``std``.

    >>> df = pd.DataFrame({"language": ["de", "fr", "zh"], "main_score": [0.9, 0.8, 0.6]})
    >>> t = language_breakdown(df, sample_texts={"de": ["Haus"], "fr": ["maison"], "zh": ["房子"]})
    >>> t[["group", "value", "n"]].values.tolist()
    [['family', 'Indo-European', 2], ['family', 'Sino-Tibetan', 1], ['script', 'Han', 1], ['script', 'Latin', 2]]
    """
    for c in (language_column, score_column):
        if c not in frame.columns:
            raise KeyError(f"frame has no column {c!r} (columns: {list(frame.columns)})")
    try:
        import langcodes  # optional: likely script of a language code
    except ImportError:
        langcodes = None

    def script(lang: str) -> str:
        if sample_texts and sample_texts.get(lang):
            return text_script(" ".join(sample_texts[lang]))
        if langcodes is not None:
            try:
                return str(langcodes.Language.get(lang).maximize().script or "unknown")
            except Exception:
                return "unknown"
        return "unknown (no sample texts; langcodes not installed)"

    df = frame[[language_column, score_column]].copy()
    base = df[language_column].astype(str).str.split("[-_]").str[0]
    df["family"] = base.map(lambda x: LANGUAGE_FAMILIES.get(x, "unknown"))
    df["script"] = df[language_column].astype(str).map(script)
    rows = []
    for group in ("family", "script"):
        for value, g in df.groupby(group, sort=True):
            rows.append({"group": group, "value": value, "n": int(len(g)), "mean": float(g[score_column].mean()),
                         "std": float(g[score_column].std(ddof=1)) if len(g) > 1 else math.nan})
    return pd.DataFrame(rows)
