"""MTEB result JSON export / import, and a language family / script breakdown of multilingual runs.

MTEB (v1.x results layout) stores one JSON per task and model:
``<folder>/<model name with / as __>/<model revision>/<TaskName>.json`` holding
``task_name``, ``dataset_revision``, ``mteb_version``, ``evaluation_time`` (s),
``kg_co2_emissions`` and ``scores``: split -> list of subset entries, each with
``hf_subset``, ``languages`` and the metric values including ``main_score``.
The model's metadata sits beside it in ``model_meta.json`` (name, revision,
languages, ...).  :func:`write_mteb` writes that layout, :func:`read_mteb`
reads it back (round trip tested), and :func:`bitext_entry` turns a
:class:`~semanscope_nb.metrics.retrieval.BitextResult` into a subset entry
(MTEB's bitext-mining keys: precision, recall, f1, accuracy; main score F1).

Example
-------
>>> import tempfile, numpy as np, semanscope_nb as snb
>>> r = snb.bitext_retrieval(np.eye(4), np.eye(4), ks=(1,), n_boot=0)
>>> res = MtebResult("Tatoeba", "fd5d3d0", {"test": [bitext_entry(r, subset="deu-eng", languages=["deu-Latn", "eng-Latn"])]},
...                  evaluation_time=1.5, model={"name": "org/model", "revision": "abc"})
>>> back = read_mteb(write_mteb([res], tempfile.mkdtemp()))[0]
>>> back == res, back.score("test", "deu-eng"), back.main_score
(True, 1.0, 1.0)
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from semanscope_nb.errors import DatasetError
from semanscope_nb.provenance import atomic_write_json, json_ready
from semanscope_nb.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.metrics.retrieval import BitextResult

MTEB_VERSION = "1.12.0"  # the results layout written here (the field names of MTEB 1.x TaskResult)


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
    mteb_version: str = MTEB_VERSION
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

    def to_mteb_json(self) -> dict[str, Any]:
        """The task JSON as MTEB writes it (model metadata goes to ``model_meta.json``)."""
        return json_ready({"dataset_revision": self.dataset_revision, "task_name": self.task_name,
                           "mteb_version": self.mteb_version, "scores": self.scores,
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


def bitext_entry(result: "BitextResult", *, subset: str = "default", languages: Sequence[str] = ()) -> dict[str, Any]:
    """An MTEB bitext-mining subset entry (source -> target direction) from a BitextResult."""
    if result.f1 is None:
        raise ValueError("MTEB bitext mining needs one gold per query (F1 defined); lexicon induction has several")
    return {"precision": result.precision, "recall": result.recall, "f1": result.f1,
            "accuracy": result.accuracy[result.ks[0]] if result.ks[0] == 1 else result.recall,
            "main_score": result.f1, "hf_subset": subset, "languages": list(languages),
            **{f"f1_at_{k}": v for k, v in result.f1_at.items()}}


def _model_dir(folder: Path, model: Mapping[str, Any]) -> Path:
    name = str(model.get("name") or "unknown-model").replace("/", "__")
    return folder / name / str(model.get("revision") or "no_revision_available")


def write_mteb(results: Sequence[MtebResult], folder: str | os.PathLike) -> str:
    """Write results in MTEB's folder layout (one JSON per task, ``model_meta.json`` per model); returns the folder."""
    folder = Path(folder)
    for r in results:
        d = _model_dir(folder, r.model)
        d.mkdir(parents=True, exist_ok=True)
        atomic_write_json(d / f"{r.task_name}.json", r.to_mteb_json())
        atomic_write_json(d / "model_meta.json", json_ready(r.model))
    return str(folder)


def read_mteb(folder: str | os.PathLike) -> list[MtebResult]:
    """Every task JSON below ``folder`` (MTEB layout), with its ``model_meta.json`` when present."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder")
    out = []
    for p in sorted(folder.rglob("*.json")):
        if p.name == "model_meta.json":
            continue
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DatasetError(f"{p}, line {e.lineno}: not valid JSON ({e.msg})") from None
        meta_p = p.parent / "model_meta.json"
        meta = json.loads(meta_p.read_text(encoding="utf-8")) if meta_p.exists() else {}
        out.append(MtebResult.from_mteb_json(d, model=meta, source=str(p)))
    return out


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
