"""One result shape: every score is a frozen :class:`Result` with ``main_score``, ``summary()``,
``to_dict`` / ``from_dict`` and ``save`` / ``load``; every interval is an :class:`Interval`.

Layer: shared (imported by every layer, imports nothing of the package but provenance).

A result written with ``save`` names its kind, so :meth:`Result.load` gives back
the right class without the caller saying which (as mteb's ``TaskResult`` does
for its own files).

Example
-------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Coin(Result):
...     kind = "coin-example"
...     main_score_name = "heads"
...     heads: float = 0.5
...     ci: Interval = Interval(0.4, 0.6)
>>> c = Coin(heads=0.52, ci=Interval(0.45, 0.59))
>>> c.main_score, c.ci.contains(0.5), Coin.from_dict(c.to_dict()) == c
(0.52, True, True)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Mapping, NamedTuple

import numpy as np
import pandas as pd

from semanscope_nb.errors import DatasetError
from semanscope_nb.provenance import atomic_write_json, json_ready, regular_file

#: bump when the JSON layout of results changes incompatibly
RESULT_FORMAT = 1


class Interval(NamedTuple):
    """A confidence interval ``[low, high]`` (a tuple, so ``lo, hi = r.ci`` and ``r.ci[0]`` work).

    >>> ci = Interval(0.2, 0.4)
    >>> ci.contains(0.3), round(ci.width, 3), Interval.of([0.1, None])
    (True, 0.2, Interval(low=0.1, high=nan))
    """

    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in the closed interval (False when either end is NaN)."""
        return bool(self.low <= x <= self.high)

    def excludes_zero(self) -> bool:
        """Whether the whole interval lies on one side of 0 (the usual "significant" reading)."""
        return bool(self.low > 0 or self.high < 0)

    @classmethod
    def of(cls, x: Any) -> "Interval":
        """An interval from a pair (tuple, list, array); None or NaN ends become NaN."""
        if isinstance(x, Interval):
            return x
        if x is None:
            return cls(math.nan, math.nan)
        lo, hi = x
        return cls(_num(lo), _num(hi))

    @classmethod
    def empty(cls) -> "Interval":
        return cls(math.nan, math.nan)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error (the bootstrap std: the paper's "±") and its interval.

    >>> e = Estimate(0.61, 0.01, Interval(0.59, 0.63))
    >>> e.contains(0.6), Estimate.from_dict(e.to_dict()) == e
    (True, True)
    """

    value: float
    sem: float
    ci: Interval

    def __post_init__(self) -> None:
        if not isinstance(self.ci, Interval):
            object.__setattr__(self, "ci", Interval.of(self.ci))

    def contains(self, x: float) -> bool:
        return self.ci.contains(x)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "sem": self.sem, "ci": list(self.ci)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Estimate":
        return cls(_num(d.get("value")), _num(d.get("sem")), Interval.of(d.get("ci")))


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


_KINDS: dict[str, type["Result"]] = {}


@dataclass(frozen=True)
class Result:
    """Base of every result: frozen, with ``main_score``, ``summary()``, JSON round trip and files.

    A subclass sets ``kind`` (a unique tag written to its files) and
    ``main_score_name`` (the field or property that ranks models), and may
    override :meth:`summary` (the flat numbers of a leaderboard row),
    :meth:`to_dict` / :meth:`from_dict` (the default converts dataclass fields:
    arrays to lists, intervals to pairs, nested results to dicts).
    """

    kind: ClassVar[str] = ""
    main_score_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        kind = cls.__dict__.get("kind")
        if kind:
            if kind in _KINDS and _KINDS[kind].__qualname__ != cls.__qualname__:
                raise TypeError(f"result kind {kind!r} is already used by {_KINDS[kind].__qualname__}")
            _KINDS[kind] = cls

    # -- scores ---------------------------------------------------------------------------------

    @property
    def main_score(self) -> float:
        """The number that ranks models on this result (``main_score_name`` says which).

        An :class:`Estimate` gives its value; a result without a score (a map:
        empty ``main_score_name``) gives NaN.
        """
        if not self.main_score_name:
            return math.nan
        value = getattr(self, self.main_score_name)
        if isinstance(value, Estimate):
            value = value.value
        return math.nan if value is None else float(value)

    def summary(self) -> dict[str, Any]:
        """The flat numbers of a leaderboard row (default: the main score and every scalar field)."""
        out: dict[str, Any] = {"main_score": self.main_score}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (int, float, str, bool, np.generic)) and not isinstance(v, Interval):
                out[f.name] = v.item() if isinstance(v, np.generic) else v
        return out

    def estimates(self) -> dict[str, Estimate]:
        """Every :class:`Estimate` field of this result, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Estimate)}

    def with_provenance(self, **extra: Any) -> "Result":
        """A copy whose ``provenance`` also holds ``extra`` (and what this result keeps in memory only, beside its fields)."""
        out = replace(self, provenance={**getattr(self, "provenance", {}), **extra})
        names = {f.name for f in fields(self)}
        for k, v in vars(self).items():  # e.g. SAResult's bootstrap values for with_thresholds: never written to a file
            if k not in names:
                object.__setattr__(out, k, v)
        return out

    # -- JSON and files -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict that :meth:`from_dict` turns back into an equal result."""
        return json_ready({f.name: _encode(getattr(self, f.name)) for f in fields(self)})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Result":
        hints = typing.get_type_hints(cls)
        kw = {}
        for f in fields(cls):
            if f.name in d:
                kw[f.name] = _decode(d[f.name], hints.get(f.name, Any))
        return cls(**kw)

    def save(self, path: str | os.PathLike) -> str:
        """Write this result as JSON, atomically; :meth:`Result.load` reads it back."""
        return str(atomic_write_json(path, self.saved_dict()))

    def saved_dict(self) -> dict[str, Any]:
        """What :meth:`save` writes: ``kind``, ``format`` and :meth:`to_dict` (:meth:`from_saved` reads it back)."""
        return {"kind": self.kind, "format": RESULT_FORMAT, **self.to_dict()}

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Result":
        """A result written by :meth:`save` (on ``Result`` itself: whatever kind the file names).

        The file must be what :meth:`save` writes: strict JSON (no ``NaN`` / ``Infinity``
        tokens, no key twice), a ``format`` this version reads, no key the result does
        not write, every field of the type its class declares, and every derived key
        (a tier, a count) equal to what the fields give (a sentence, such as a verdict's
        wording, is not compared); anything else is a
        :class:`~semanscope_nb.errors.DatasetError` naming the file and the key.

        >>> import tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "r.json"
        >>> _ = bad.write_text('{"kind": "sa", "format": 99}')
        >>> Result.load(bad)
        Traceback (most recent call last):
        ...
        semanscope_nb.errors.DatasetError: r.json: result format 99 is newer than this version of semanscope_nb reads (format 1); upgrade semanscope_nb to read it
        """
        p = Path(path)
        try:
            d = json.loads(regular_file(p).read_text(encoding="utf-8"), parse_constant=_no_constant,  # a FIFO: refused, never read
                           object_pairs_hook=_unique_keys)
        except _NotStrictJSON as exc:
            raise DatasetError(f"{p.name}: not a semanscope_nb result file (not strict JSON: {exc})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{p.name}: not a semanscope_nb result file ({type(exc).__name__}: {exc})") from None
        except RecursionError:
            raise DatasetError(f"{p.name}: not a semanscope_nb result file (nested too deeply)") from None
        return cls.from_saved(d, source=p.name)

    @classmethod
    def from_saved(cls, d: Any, *, source: str = "<memory>") -> "Result":
        """The result in ``d``, a dict as :meth:`saved_dict` gives (and :meth:`save` writes), checked as :meth:`load` checks a file.

        ``source`` names where ``d`` came from in every error.

        >>> Result.from_saved({"kind": "sa", "format": 1, "n_concepts": "many"}, source="job 7")
        Traceback (most recent call last):
        ...
        semanscope_nb.errors.DatasetError: job 7: a damaged 'sa' result (field 'n_concepts': expected a whole number, got 'many')
        """
        name = source
        if not isinstance(d, dict):
            raise DatasetError(f"{name}: not a semanscope_nb result file (no 'kind')")
        if "format" in d:
            version = d["format"]
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise DatasetError(f"{name}: 'format' must be a whole number >= 1, got {version!r}")
            if version > RESULT_FORMAT:
                raise DatasetError(f"{name}: result format {version} is newer than this version of semanscope_nb reads "
                                   f"(format {RESULT_FORMAT}); upgrade semanscope_nb to read it")
        if "kind" not in d and cls.__dict__.get("kind"):
            d = {"kind": cls.kind, **d}  # written by a class's own save() before results named their kind
        if "kind" not in d:
            raise DatasetError(f"{name}: not a semanscope_nb result file (no 'kind')")
        kind = d.get("kind")
        target = _KINDS.get(kind)
        if target is None:
            raise DatasetError(f"{name}: unknown result kind {kind!r}; known: {', '.join(sorted(_KINDS))}")
        if cls is not Result and not issubclass(target, cls):
            raise DatasetError(f"{name}: holds a {kind!r} result, not a {cls.kind!r} result")
        body = {k: v for k, v in d.items() if k not in ("kind", "format")}
        hints = typing.get_type_hints(target)
        names = {f.name for f in fields(target)}
        problem = next((pr for pr in (_json_problem(body[k], hints.get(k, Any), k) for k in body if k in names) if pr), None)
        if problem:
            raise DatasetError(f"{name}: a damaged {kind!r} result ({problem})")
        try:
            result = target.from_dict(body)
            problem = _type_problem(result, target, "")
            again = result.to_dict()
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise DatasetError(f"{name}: a damaged {kind!r} result ({type(exc).__name__}: {exc})") from None
        if problem:
            raise DatasetError(f"{name}: a damaged {kind!r} result ({problem})")
        unknown = sorted(k for k in body if k not in names and k not in again)
        if unknown:
            raise DatasetError(f"{name}: key(s) {', '.join(map(repr, unknown))} are not part of a {kind!r} result "
                               f"(written by another program or a newer version?); nothing was loaded")
        for k in sorted(k for k in body if k not in names):  # derived keys (a tier, a count): what the fields give
            if _is_prose(body[k]) or _is_prose(again[k]):
                continue  # a sentence (a verdict's wording) may be reworded by a later version: not a decision to check
            if not _same_json(body[k], again[k]):
                raise DatasetError(f"{name}: a damaged {kind!r} result (key {k!r} says {body[k]!r:.80} but the result's "
                                   f"own numbers give {again[k]!r:.80})")
        return result


class _NotStrictJSON(ValueError):
    """A result file holding what strict JSON has not (``NaN``, ``Infinity``, a key twice)."""


def _no_constant(token: str) -> Any:
    raise _NotStrictJSON(f"{token} is not a JSON number (save() writes null for a missing number)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _NotStrictJSON(f"key {k!r} appears twice in one object")
        out[k] = v
    return out


def _json_problem(value: Any, hint: Any, where: str) -> str | None:
    """What is wrong with the JSON ``value`` read for a field declared ``hint`` (its shape), or None.

    Catches what a lenient ``from_dict`` would coerce silently (``tuple("en")``, ``list({...})``).
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        problems = [_json_problem(value, a, where) for a in args if a is not type(None)]
        return None if any(pr is None for pr in problems) else problems[0]
    if hint in (bool, int, float, str):
        return _type_problem(value, hint, where)
    if origin in (list, tuple) or hint in (list, tuple, np.ndarray, Interval):
        if value is None and hint is Interval:
            return None
        if not isinstance(value, list):
            return f"field {where!r}: expected a list, got {value!r:.60}"
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return next((pr for pr in (_json_problem(x, a, f"{where}[{i}]") for i, (x, a) in enumerate(zip(value, args))) if pr), None)
        item = args[0] if args else Any
        return next((pr for pr in (_json_problem(x, item, f"{where}[{i}]") for i, x in enumerate(value)) if pr), None)
    if origin in (dict, Mapping) and args and typing.get_origin(args[0]) is tuple:
        return None  # keyed by tuples: the class writes its own layout (a list of records)
    if origin in (dict, Mapping) or hint in (dict, Estimate, pd.DataFrame) or (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        if not isinstance(value, dict):
            return f"field {where!r}: expected a mapping, got {value!r:.60}"
        if origin in (dict, Mapping) and len(args) == 2:
            return next((pr for pr in (_json_problem(x, args[1], f"{where}[{k!r}]") for k, x in value.items()) if pr), None)
    return None


def _is_prose(x: Any) -> bool:
    return isinstance(x, str) and any(c.isspace() for c in x.strip())


def _same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values agree (numbers to 1e-9 relative, NaN written as null)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return a == b


def _type_problem(value: Any, hint: Any, where: str) -> str | None:
    """What is wrong with ``value`` as a ``hint`` (a result read from a file), or None.

    Checks the types a result's fields declare: numbers, whole numbers, strings,
    flags, their tuples / lists / dicts, nested dataclasses; other hints are not checked.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    name = where or "the result"
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        problems = [_type_problem(value, a, where) for a in args if a is not type(None)]
        return None if any(pr is None for pr in problems) else problems[0]
    if hint is Any or hint is None:
        return None
    if hint is bool:
        return None if isinstance(value, (bool, np.bool_)) else f"field {name!r}: expected true or false, got {value!r:.60}"
    if hint is int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return None
        return f"field {name!r}: expected a whole number, got {value!r:.60}"
    if hint is float:
        if value is None or (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))):
            return None
        return f"field {name!r}: expected a number, got {value!r:.60}"
    if hint is str:
        return None if isinstance(value, str) else f"field {name!r}: expected a string, got {value!r:.60}"
    if hint is np.ndarray:
        if isinstance(value, np.ndarray) and (value.dtype != object or all(
                x is None or isinstance(x, (str, int, float, np.generic)) for x in value.ravel())):
            return None
        return f"field {name!r}: expected an array of numbers or labels, got {value!r:.60}"
    if hint is Interval or hint is Estimate:
        inner = list(value) if isinstance(value, Interval) else [value.value, value.sem, *value.ci] if isinstance(value, Estimate) else None
        if inner is None:
            return f"field {name!r}: expected an interval, got {value!r:.60}"
        return next((pr for pr in (_type_problem(x, float, where) for x in inner) if pr), None)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, hint):
            return f"field {name!r}: expected a {hint.__name__}, got {value!r:.60}"
        sub = typing.get_type_hints(hint)
        for f in fields(hint):
            pr = _type_problem(getattr(value, f.name), sub.get(f.name, Any), f"{where}.{f.name}" if where else f.name)
            if pr:
                return pr
        return None
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return f"field {name!r}: expected a list, got {value!r:.60}"
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                return f"field {name!r}: expected {len(args)} items, got {len(value)}"
            items = list(zip(value, args))
        else:
            items = [(x, args[0] if args else Any) for x in value]
        return next((pr for pr in (_type_problem(x, a, f"{where}[{i}]") for i, (x, a) in enumerate(items)) if pr), None)
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, Mapping):
            return f"field {name!r}: expected a mapping, got {value!r:.60}"
        vt = args[1] if len(args) == 2 else Any
        return next((pr for pr in (_type_problem(x, vt, f"{where}[{k!r}]") for k, x in value.items()) if pr), None)
    return None


def result_kinds() -> dict[str, type[Result]]:
    """Every registered result kind -> its class."""
    return dict(_KINDS)


def _encode(v: Any) -> Any:
    if isinstance(v, pd.DataFrame):
        return {"columns": [str(c) for c in v.columns], "rows": v.to_numpy(dtype=object).tolist()}
    if isinstance(v, Result):
        return v.to_dict()
    if isinstance(v, Estimate):
        return v.to_dict()
    if isinstance(v, Interval):
        return list(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _encode(getattr(v, f.name)) for f in fields(v)}
    if isinstance(v, Mapping):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    return v


def _decode(v: Any, hint: Any) -> Any:
    """Turn JSON back into the annotated type (Interval, Estimate, nested dataclass, array, tuple, dict)."""
    if v is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        for a in args:
            if a is type(None):
                continue
            try:
                return _decode(v, a)
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
        return v
    if hint is Interval:
        return Interval.of(v)
    if hint is pd.DataFrame:
        return pd.DataFrame(v["rows"], columns=v["columns"]).infer_objects()
    if hint is float:
        return _num(v)
    if hint is np.ndarray:
        return np.array([math.nan if x is None else x for x in v]) if isinstance(v, list) and v and not isinstance(v[0], list) else np.array(v)
    if isinstance(hint, type) and issubclass(hint, Result):
        return hint.from_dict(v)
    if isinstance(hint, type) and hint is Estimate:
        return Estimate.from_dict(v)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        sub = typing.get_type_hints(hint)
        return hint(**{k: _decode(x, sub.get(k, Any)) for k, x in v.items()})
    if origin in (tuple,) and isinstance(v, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(x, args[0]) for x in v)
        if args and len(args) == len(v):
            return tuple(_decode(x, a) for x, a in zip(v, args))
        return tuple(v)
    if origin in (list,) and isinstance(v, list):
        return [_decode(x, args[0]) if args else x for x in v]
    if origin in (dict, Mapping) and isinstance(v, dict):
        kt, vt = args if args else (Any, Any)
        return {(int(k) if kt is int else k): _decode(x, vt) for k, x in v.items()}
    return v


__all__ = ["Estimate", "Interval", "RESULT_FORMAT", "Result", "result_kinds"]
