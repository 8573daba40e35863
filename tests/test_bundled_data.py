"""Checks of the bundled evaluation datasets in data/ and of their cards."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from semanscope_nb.data.cedict import cedict_check, read_dataset_pairs

DATA = Path(__file__).resolve().parent.parent / "data"
LANGUAGES = {"english", "chinese", "german", "french", "spanish", "japanese"}
MINIMUM_ROWS = {
    "conceptual-space": 320,
    "cultural-nuance": 160,
    "edge-cases": 90,
    "oracle-primitives": 160,
}
CEDICT_LINE = re.compile(
    r"CC-CEDICT check \(semanscope_nb\.cedict\): total (\d+), matched (\d+), "
    r"headword-only (\d+), missing (\d+) \(coverage ([\d.]+)%, headword coverage ([\d.]+)%\)"
)


def _read(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with open(DATA / f"{name}.csv", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(line for line in fh if not line.startswith("#"))
        rows = list(reader)
        header = list(reader.fieldnames or [])
    return header, rows


def _card(name: str) -> str:
    return (DATA / f"{name}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(MINIMUM_ROWS))
def test_dataset_shape(name: str) -> None:
    header, rows = _read(name)
    assert header == [h.strip().lower() for h in header]
    assert "chinese" in header and "category" in header
    languages = [h for h in header if h in LANGUAGES]
    assert "english" in languages
    assert len(rows) >= MINIMUM_ROWS[name]
    for row in rows:
        assert None not in row, f"extra cells in {row}"
        for lang in languages:
            cell = row[lang]
            assert cell and cell.strip() == cell, f"empty or padded {lang} cell in {row}"
            assert all(alt and alt.strip() == alt for alt in cell.split("|")), row
        assert row["category"].strip(), row
    keys = [tuple(row[lang] for lang in languages) for row in rows]
    assert len(keys) == len(set(keys)), "duplicate rows"
    pairs = [(row["english"], row["chinese"]) for row in rows]
    assert len(pairs) == len(set(pairs)), "duplicate (english, chinese) pairs"


def test_oracle_primitives_layout() -> None:
    header, rows = _read("oracle-primitives")
    assert header[:2] == ["chinese", "english"]
    assert "japanese" not in header
    for row in rows:
        assert len(row["chinese"]) == 1, row
    assert len({row["chinese"] for row in rows}) == len(rows)


@pytest.mark.parametrize("name", sorted(MINIMUM_ROWS))
def test_card_matches_data(name: str) -> None:
    _, rows = _read(name)
    card = _card(name)
    rows_line = re.search(r"Rows: \*\*(\d+)\*\*", card)
    alt_line = re.search(r"Rows with `\|` alternatives in at least one language: \*\*(\d+)\*\*", card)
    assert rows_line and int(rows_line.group(1)) == len(rows)
    languages = [h for h in rows[0] if h in LANGUAGES]
    with_alternatives = sum(any("|" in row[lang] for lang in languages) for row in rows)
    assert alt_line and int(alt_line.group(1)) == with_alternatives
    assert "MIT, as the project" in card


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("name", sorted(MINIMUM_ROWS))
def test_card_cedict_numbers(name: str) -> None:
    found = CEDICT_LINE.search(_card(name))
    assert found, f"{name}.md has no CC-CEDICT line"
    total, matched, headword_only, missing = (int(g) for g in found.groups()[:4])
    report = cedict_check(read_dataset_pairs(DATA / f"{name}.csv"))
    assert (total, matched, headword_only, missing) == (
        report.total,
        report.matched,
        report.headword_only,
        report.missing,
    )
    assert found.group(5) == f"{100 * report.coverage:.1f}"
    assert found.group(6) == f"{100 * report.headword_coverage:.1f}"


def test_conceptual_space_coverage_is_high() -> None:
    report = cedict_check(read_dataset_pairs(DATA / "conceptual-space.csv"))
    assert report.headword_coverage >= 0.85


def test_cedict_check_statuses() -> None:
    report = cedict_check(
        [
            ("red", "红色"),  # definition "red (color)"
            ("to walk", "走路"),  # leading "to " ignored
            ("sky|heaven", "天空|天"),  # any alternative may match
            ("blue", "红色"),  # headword, wrong meaning
            ("nonsense", "龘龘龘龘"),  # not a headword
        ]
    )
    assert [s.status for s in report.statuses] == [
        "matched",
        "matched",
        "matched",
        "headword_only",
        "missing",
    ]
    assert (report.total, report.matched, report.headword_only, report.missing) == (5, 3, 1, 1)
    assert report.coverage == pytest.approx(3 / 5)
    assert report.headword_coverage == pytest.approx(4 / 5)
    assert report.statuses[0].english == "red" and report.statuses[0].chinese == "红色"


def test_cedict_check_whole_words_only() -> None:
    # "bore" must not match inside "bored": whole words only.
    assert cedict_check([("bore", "无聊")]).statuses[0].status == "headword_only"
    assert cedict_check([]).coverage == 0.0
