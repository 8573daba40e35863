"""The ExplorePanel's saved state: a JSON Schema, its bounds, and a reader whose errors name the field.

Why a JSON Schema: the state is a small JSON file, and a JSON Schema (:data:`STATE_SCHEMA`,
draft 7) is its contract in the file's own terms (types, required keys, bounds), readable
without this package.  Why fastjsonschema to check it: it compiles the schema to a
Python function once, imports in ~20 ms (``jsonschema`` takes seconds to import,
compiling URI grammars, which made ``from_state`` after a restart slow), is
maintained, and is already installed with Jupyter (nbformat depends on it).  Its
error carries the path of the failing field, the rule and the value, which is
what a message must name.  Rules a schema cannot say (great >= good; a known
projection parameter) are checked after it, by the same value objects the panel uses.

Bounds: ``n_boot`` from 0 to :data:`MAX_N_BOOT` (a panel's bootstrap runs while
the user waits); ``max_concepts`` at least 2; ``search`` at most 200 characters;
at most :data:`MAX_SELECTION` selected concepts.

Layer: widgets.

Example
-------
>>> read_state({"version": 1, "model": "random-null", "n_boot": 100})["n_boot"]
100
>>> read_state({"n_boot": 2000000})
Traceback (most recent call last):
...
semanscope_nb.widgets.panel_state.StateError: panel state: field 'n_boot': 2000000 is greater than the maximum of 50000
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from semanscope_nb.errors import ArgumentError
from semanscope_nb.provenance import regular_file

#: the largest bootstrap a saved panel state may ask for
MAX_N_BOOT = 50_000
#: the most concepts a saved selection may hold
MAX_SELECTION = 5_000

_NUMBER_PAIR = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}

#: the JSON Schema of a saved ExplorePanel state (``ExplorePanel.save_state`` writes it)
STATE_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "semanscope_nb ExplorePanel state",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "version": {"type": "integer", "enum": [1]},
        "model": {"type": ["string", "null"], "minLength": 1, "maxLength": 200},
        "dataset": {"type": ["string", "null"], "minLength": 1, "maxLength": 300},
        "folder": {"type": ["string", "null"], "maxLength": 4096},
        "languages": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1, "maxLength": 40},
                      "maxItems": 200},
        "thresholds": {"type": "object", "additionalProperties": False, "required": ["great", "good"],
                       "properties": {"great": {"type": "number", "minimum": 0, "maximum": 1},
                                      "good": {"type": "number", "minimum": 0, "maximum": 1}}},
        "projection": {"type": "object", "additionalProperties": False, "required": ["method"],
                       "properties": {"method": {"type": "string", "enum": ["phate", "umap", "tsne", "pca"]},
                                      "params": {"type": "object"},
                                      "random_state": {"type": "integer", "minimum": 0}}},
        "n_boot": {"type": "integer", "minimum": 0, "maximum": MAX_N_BOOT},
        "seed": {"type": "integer", "minimum": 0},
        "max_concepts": {"type": ["integer", "null"], "minimum": 2},
        "lines": {"type": "boolean"},
        "search": {"type": "string", "maxLength": 200},
        "selection": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_SELECTION},
        "brush": {"type": ["object", "null"], "additionalProperties": False,
                  "properties": {"x": _NUMBER_PAIR, "y": _NUMBER_PAIR}},
        "brushed_words": {"type": "array", "items": {"type": "string"}},
        "view": {"type": "string", "enum": ["map", "pairs"]},
    },
}


class StateError(ArgumentError):
    """A saved panel state that cannot be used: not JSON, not an object, or a field out of its schema."""


_KIND = {list: "a JSON list", str: "a string", int: "a number", float: "a number", bool: "true/false", type(None): "null"}
_VALIDATOR: Any = None


def _validator() -> Any:
    global _VALIDATOR
    if _VALIDATOR is None:
        import fastjsonschema

        _VALIDATOR = fastjsonschema.compile(STATE_SCHEMA)
    return _VALIDATOR


def _where_and_what(error: Any) -> tuple[str, str]:
    """The failing field (dotted) and what is wrong with it, from a fastjsonschema error."""
    path = [str(p) for p in error.path[1:]]  # path[0] is "data", the whole state
    rule, expected, value = error.rule, error.rule_definition, error.value
    if rule == "type" and not path:
        return "", f"must be a JSON object, got {_KIND.get(type(value), type(value).__name__)}"
    if rule == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return ".".join(path), f"{value!r} is not of type {' or '.join(repr(k) for k in kinds)}"
    if rule == "required":
        missing = [k for k in expected if k not in value]
        return ".".join(path + missing[:1]), "is required"
    if rule == "additionalProperties":
        known = error.definition.get("properties", {})
        extra = sorted(k for k in value if k not in known)
        return ".".join(path + extra[:1]), f"is not a known key (known: {', '.join(sorted(known))})"
    if rule == "maximum":
        return ".".join(path), f"{value!r} is greater than the maximum of {expected!r}"
    if rule == "minimum":
        return ".".join(path), f"{value!r} is less than the minimum of {expected!r}"
    if rule == "enum":
        return ".".join(path), f"{value!r} is not one of {expected!r}"
    return ".".join(path), error.message.split(" ", 1)[1] if " " in error.message else error.message


def read_state(source: "str | os.PathLike | dict", *, what: str | None = None) -> dict[str, Any]:
    """The saved state in ``source`` (a JSON file or a dict), checked against :data:`STATE_SCHEMA`.

    Raises :class:`StateError` naming the file and the first failing field:
    a truncated or non-JSON file, a JSON list, a projection without its method,
    ``"selection": 5``, ``"n_boot"`` above :data:`MAX_N_BOOT`, great < good.
    """
    import fastjsonschema

    if not isinstance(source, (str, os.PathLike)):  # an already parsed state (a dict, or whatever a caller passed)
        data, name = source, what or "panel state"
    else:
        path = Path(source)
        name = what or f"panel state '{path}'"
        try:
            text = regular_file(path).read_text(encoding="utf-8")  # a FIFO or folder: refused, never read
        except OSError as exc:
            raise StateError(f"{name}: cannot read it ({exc.strerror or exc})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = "; the file looks truncated" if not text.rstrip().endswith(("}", "]")) else ""
            raise StateError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){hint}") from None
    try:
        _validator()(data)
    except fastjsonschema.JsonSchemaValueException as error:
        field, message = _where_and_what(error)
        where = (f"field '{field}' " if message.startswith("is ") else f"field '{field}': ") if field else ""
        raise StateError(f"{name}: {where}{message}") from None
    th = data.get("thresholds")
    if th and th["great"] < th["good"]:
        raise StateError(f"{name}: field 'thresholds': great ({th['great']}) must be >= good ({th['good']})")
    pr = data.get("projection")
    if pr:
        from semanscope_nb.plots.projection import DEFAULTS, EXTRA_PARAMS

        unknown = sorted(set(pr.get("params") or {}) - set(DEFAULTS[pr["method"]]) - EXTRA_PARAMS[pr["method"]])
        if unknown:
            raise StateError(f"{name}: field 'projection.params': unknown parameter(s) {unknown} for {pr['method']}")
    return data
