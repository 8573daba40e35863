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
from semanscope_nb.provenance import atomic_write_json, json_ready

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
        body = {"kind": self.kind, "format": RESULT_FORMAT, **self.to_dict()}
        return str(atomic_write_json(path, body))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Result":
        """A result written by :meth:`save` (on ``Result`` itself: whatever kind the file names)."""
        p = Path(path)
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{p.name}: not a semanscope_nb result file ({type(exc).__name__}: {exc})") from None
        if not isinstance(d, dict):
            raise DatasetError(f"{p.name}: not a semanscope_nb result file (no 'kind')")
        if "kind" not in d and cls.__dict__.get("kind"):
            d = {"kind": cls.kind, **d}  # written by a class's own save() before results named their kind
        if "kind" not in d:
            raise DatasetError(f"{p.name}: not a semanscope_nb result file (no 'kind')")
        kind = d.get("kind")
        target = _KINDS.get(kind)
        if target is None:
            raise DatasetError(f"{p.name}: unknown result kind {kind!r}; known: {', '.join(sorted(_KINDS))}")
        if cls is not Result and not issubclass(target, cls):
            raise DatasetError(f"{p.name}: holds a {kind!r} result, not a {cls.kind!r} result")
        body = {k: v for k, v in d.items() if k not in ("kind", "format")}
        try:
            return target.from_dict(body)
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{p.name}: a damaged {kind!r} result ({type(exc).__name__}: {exc})") from None


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
