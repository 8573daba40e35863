"""The options every statistic takes, checked one way: resample counts, seeds, confidence levels, k.

Layer: metrics (imports only errors).  Each checker raises an
:class:`~semanscope_nb.errors.ArgumentError` (a ``ValueError``) naming the
argument and the value, before any work, and returns the canonical value; so
``seed=True``, ``confidence="0.9"``, ``n_boot=float("nan")`` or ``ks=[2.5]`` get
the same clear line from every task, whichever metric reads them.

A resample or permutation count above :data:`MAX_RESAMPLES` is refused: it is a
typo (``n_boot=10**12`` would run for days or exhaust memory), not a request.

>>> check_n_boot(1000.0), check_seed(7), check_confidence(0.9), check_ks([5, 1, 5])
(1000, 7, 0.9, (1, 5))
>>> check_confidence(0)
Traceback (most recent call last):
...
semanscope_nb.errors.ArgumentError: confidence must be a number in (0, 1), e.g. 0.95, got 0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from semanscope_nb.errors import ArgumentError

#: the largest bootstrap resample or permutation count accepted (more is a typo: days of work)
MAX_RESAMPLES = 10_000_000


def is_whole(x: Any) -> bool:
    """Whether ``x`` is an integer (Python or NumPy), not a bool.

    >>> is_whole(3), is_whole(np.int64(3)), is_whole(True), is_whole(3.0)
    (True, True, False, False)
    """
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _whole_or_integral_float(x: Any) -> bool:
    if is_whole(x):
        return True
    return isinstance(x, (float, np.floating)) and math.isfinite(x) and float(x).is_integer()


def check_n_boot(n_boot: Any, *, name: str = "n_boot", allow_zero: bool = True, minimum: int = 2) -> int:
    """``n_boot`` as an int: 0 (no bootstrap, when ``allow_zero``) or ``minimum`` .. :data:`MAX_RESAMPLES`.

    An integral float (``1000.0``, from a config file) is accepted; a bool, a string,
    NaN or a fraction is not.

    >>> check_n_boot(0), check_n_boot(np.int64(200))
    (0, 200)
    """
    ok = _whole_or_integral_float(n_boot) and ((allow_zero and n_boot == 0) or minimum <= n_boot <= MAX_RESAMPLES)
    if not ok:
        zero = "0 (no bootstrap) or " if allow_zero else ""
        why = " (bootstrap resamples; the standard error needs two)" if minimum == 2 else ""
        raise ArgumentError(f"{name} must be {zero}an integer from {minimum} to {MAX_RESAMPLES:,}{why}, got {n_boot!r}")
    return int(n_boot)


def check_count(name: str, value: Any, *, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int in ``minimum .. maximum`` (a permutation count, a batch size); no upper bound when None.

    >>> check_count("n_perm", 2000, minimum=1, maximum=MAX_RESAMPLES)
    2000
    """
    if not is_whole(value) or value < minimum or (maximum is not None and value > maximum):
        upto = f"an integer from {minimum} to {maximum:,}" if maximum is not None else f"an integer >= {minimum}"
        raise ArgumentError(f"{name} must be {upto}, got {value!r}")
    return int(value)


def check_seed(seed: Any, *, allow_none: bool = False) -> int | None:
    """``seed`` as a non-negative int (it seeds numpy's ``default_rng``); None only when ``allow_none``.

    >>> check_seed(None, allow_none=True), check_seed(0)
    (None, 0)
    """
    if seed is None and allow_none:
        return None
    if not is_whole(seed) or seed < 0:
        alt = " or None" if allow_none else ""
        raise ArgumentError(f"seed must be a non-negative integer{alt} (it seeds numpy's default_rng), got {seed!r}")
    return int(seed)


def check_confidence(confidence: Any) -> float:
    """``confidence`` as a float strictly between 0 and 1 (a number, not a bool or a string).

    >>> check_confidence(np.float32(0.5))
    0.5
    """
    if (isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, (int, float, np.integer, np.floating))
            or not 0 < confidence < 1):
        raise ArgumentError(f"confidence must be a number in (0, 1), e.g. 0.95, got {confidence!r}")
    return float(confidence)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool: True or False (a NumPy bool too); a string or a number is refused, since ``"no"``,
    ``"false"`` or ``"0"`` (from a config file) would otherwise read as True.

    >>> check_flag("surface_null", np.bool_(False))
    False
    >>> check_flag("surface_null", "no")
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.ArgumentError: surface_null must be True or False, got 'no'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_ks(ks: Any, *, name: str = "ks", allow_empty: bool = False) -> tuple[int, ...]:
    """``ks`` (one k or several) as a sorted tuple of distinct positive ints.

    >>> check_ks(5), check_ks((10, 1))
    ((5,), (1, 10))
    """
    items = (ks,) if is_whole(ks) else ks
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ArgumentError(f"{name} must be a positive integer or a list of them, got {ks!r}")
    items = tuple(items)
    if not items and not allow_empty:
        raise ArgumentError(f"{name} must hold at least one k, e.g. {name}=(1, 5, 10)")
    bad = [k for k in items if not is_whole(k) or k < 1]
    if bad:
        raise ArgumentError(f"{name} must be positive integers, got {ks!r} ({bad[0]!r} is not)")
    return tuple(sorted({int(k) for k in items}))


def check_common(params: Any) -> None:
    """Check the options of ``params`` (a task's keyword arguments) that every statistic reads alike, before any
    work: ``n_boot`` (at least 1 here; a task may ask more), ``seed``, ``confidence``, ``n_perm`` and ``ks``.
    None is a default (resolved later) and is not checked.

    >>> check_common({"n_boot": 200, "seed": 0, "metric": "cosine"})
    >>> check_common({"n_boot": 10**12})
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.ArgumentError: n_boot must be 0 (no bootstrap) or an integer from 1 to 10,000,000, got 1000000000000
    """
    value = params.get("n_boot")
    if value is not None:
        check_n_boot(value, minimum=1)
    if params.get("seed") is not None:
        check_seed(params["seed"])
    if params.get("confidence") is not None:
        check_confidence(params["confidence"])
    if params.get("n_perm") is not None:
        check_count("n_perm", params["n_perm"], minimum=1, maximum=MAX_RESAMPLES)
    if params.get("ks") is not None:
        check_ks(params["ks"], allow_empty=True)


__all__ = ["MAX_RESAMPLES", "check_common", "check_confidence", "check_count", "check_flag", "check_ks", "check_n_boot", "check_seed", "is_whole"]
