"""Audit 8 of the CSV / word-list readers: every defect below was reproduced on the code before its fix.

- a header cell names a language only when it is a code, a tag or a whole language name (no fuzzy match), and the
  reserved column names (``id``, ``index``, ``no`` ...) are never languages: ``id`` was read as Indonesian;
- the column of a byte that is not UTF-8 is the character column of its line (it mixed a byte offset with a
  character offset);
- a cell holding a control character is refused by the reader, naming file, line and column (the encoders' rule,
  one predicate), not later by the encoder without a location;
- a header with fewer than two languages names the columns that are not language names (a misspelt ``chinse``);
- a word of invisible characters only is an empty cell; a byte-order mark inside a word is removed and reported.
"""

from __future__ import annotations


import pytest

import semanscope_nb as snb
from reader_faults import fails_with, write_file
from semanscope_nb.data import read_semanscope_csv, read_word_lists
from semanscope_nb.data.csv_reader import find_control_character
from semanscope_nb.data.languages import RESERVED_COLUMNS, header_language_code, language_code
from semanscope_nb.errors import DatasetError, EmbeddingError
from semanscope_nb.models.encoders import check_text_characters

ROWS = [("water", "水"), ("fire", "火"), ("sun", "日"), ("moon", "月")]


# --------------------------------------------------------------------------- 1. header cells that are not languages


@pytest.mark.parametrize("column", ["id", "index", "ID", "idx", "row", "no", "number", "concept_id", "key", "nr"])
def test_a_row_number_column_is_not_a_language(tmp_path, column):
    body = "".join(f"{i + 1},{en},{zh}\n" for i, (en, zh) in enumerate(ROWS))
    p = write_file(tmp_path / "d.csv", f"{column},english,chinese\n{body}")
    ds = read_semanscope_csv(p)
    assert ds.languages == ("en", "zh")
    assert ds.rows[0] == (("water",), ("水",))
    assert f"{p}: column '{column}' is not a language; ignored" in ds.report


def test_a_header_is_a_language_only_when_the_whole_cell_names_one(tmp_path):
    # langcodes.find matched a prefix: 'english;chinese' was English, 'index' Da'a Kaili (kzf)
    assert language_code("english;chinese") is None and language_code("index") is None
    p = write_file(tmp_path / "semi.csv", "english;chinese\n" + "".join(f"{en};{zh}\n" for en, zh in ROWS))
    fails_with(lambda: read_semanscope_csv(p), str(p), "needs at least two languages, got []",
           "'english;chinese' (column 1)")
    # what a header or a user could name before still names the same language
    legit = {"zh-CN": "zh", "zh_Hant": "zh-Hant", "eng": "en", "English": "en", "Chinese": "zh", "german": "de",
             "deutsch": "de", "Français": "fr", "francés": "fr", "中文": "zh", "ქართული": "ka", "kat": "ka",
             "Brazilian Portuguese": "pt-BR", "chinese (traditional)": "zh-Hant", "indonesian": "id", "ind": "id"}
    assert {h: header_language_code(h) for h in legit} == legit
    assert {h: language_code(h) for h in legit} == legit
    # 'id' and 'no' are ISO 639-1 codes (Indonesian, Norwegian): a user may name them, a header cell may not
    assert language_code("id") == "id" and language_code("no") == "no"
    assert {h: header_language_code(h) for h in RESERVED_COLUMNS} == dict.fromkeys(RESERVED_COLUMNS)
    q = write_file(tmp_path / "ind.csv", "indonesian,english\nair,water\napi,fire\n")
    assert read_semanscope_csv(q).languages == ("id", "en")


# --------------------------------------------------------------------------- 2. the column of a byte that is not UTF-8


def test_the_column_of_a_bad_byte_is_its_character_column(tmp_path):
    p = write_file(tmp_path / "latin1.csv", "english,chinese\n水水水水水水水水水水,x\n".encode() + b"caf\xe9,y\n")
    msg = fails_with(lambda: read_semanscope_csv(p), f"{p}: line 3: not valid UTF-8", "character column 4 ")
    assert "column 24" not in msg
    # the file's BOM is not a character of line 1
    q = write_file(tmp_path / "bom.csv", "\ufeff".encode() + b"caf\xe9,chinese\n")
    fails_with(lambda: read_semanscope_csv(q), f"{q}: line 1: not valid UTF-8", "character column 4 ")


# --------------------------------------------------------------------------- 3. control characters


def test_a_control_character_in_a_cell_is_refused_by_the_reader(tmp_path):
    p = write_file(tmp_path / "bel.csv", "english,chinese\nwater,水\nho\x07ouse,房\n")
    msg = fails_with(lambda: read_semanscope_csv(p), str(p), "line 3, column 1 (english)",
                 "control character U+0007 at character 3 of the cell")
    assert "\x07" not in msg
    # a quoted cell over two lines: the line of the character
    q = write_file(tmp_path / "multi.csv", 'english,chinese\nwater,水\nred,"红\n\x1b色"\n')
    fails_with(lambda: read_semanscope_csv(q), str(q), "line 4, column 2 (chinese)", "U+001B")
    # word lists: the file, the line and the character column
    en = write_file(tmp_path / "en.txt", "water\nho\x7fouse\n")
    zh = write_file(tmp_path / "zh.txt", "水\n房\n")
    fails_with(lambda: read_word_lists({"en": en, "zh": zh}), f"{en}: line 2, column 3", "U+007F")
    # a column that is not a language is not read, so it is not checked
    ok = write_file(tmp_path / "notes.csv", "english,chinese,notes\nwater,水,a\x07b\nfire,火,\n")
    assert read_semanscope_csv(ok).languages == ("en", "zh")


CC_SEPARATORS = ["\u0085", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("quoted", [False, True], ids=["plain", "quoted"])
@pytest.mark.parametrize("sep", CC_SEPARATORS, ids=[f"U+{ord(s):04X}" for s in CC_SEPARATORS])
def test_a_splitlines_separator_that_is_a_control_character_is_refused_on_its_physical_line(tmp_path, sep, quoted):
    # replaces tests/test_faults_readers.py::test_csv_splitlines_separator_stays_inside_its_cell for these six: the
    # encoders refuse them, so the reader does, on the cell's physical line (no invented row split)
    cell = f'"A{sep}B"' if quoted else f"A{sep}B"
    p = write_file(tmp_path / "d.csv", f"english,chinese\n{cell},甲\nsun,日\n")
    fails_with(lambda: read_semanscope_csv(p), str(p), "line 2, column 1 (english)", f"U+{ord(sep):04X}")


def test_u2028_and_u2029_stay_inside_their_cell(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese\nA\u2028B,甲\u2029乙\nsun,日\n")
    ds = read_semanscope_csv(p)
    assert ds.rows[0] == (("A\u2028B",), ("甲\u2029乙",)) and ds.line_numbers == (2, 3)


def test_the_reader_and_the_encoders_share_one_control_character_rule():
    for ch in [chr(c) for c in range(0x2100)] + ["\ufeff", "\U0001f600"]:
        text = f"a{ch}b"
        try:
            check_text_characters([text])
            encoder_refuses = False
        except EmbeddingError:
            encoder_refuses = True
        assert (find_control_character(text) >= 0) == encoder_refuses, f"U+{ord(ch):04X}"


# --------------------------------------------------------------------------- 4. a header with fewer than two languages


def test_a_misspelt_language_header_names_the_columns_that_are_not_languages(tmp_path):
    p = write_file(tmp_path / "typo_header.csv", "english,chinse,notes\nwater,水,x\nfire,火,y\n")
    fails_with(lambda: read_semanscope_csv(p), str(p), "dataset 'typo_header' needs at least two languages, got ['en']",
           "the header's other columns are not language names: 'chinse' (column 2), 'notes' (column 3)")


# --------------------------------------------------------------------------- 5. invisible characters


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", "\u2060", "\u200b \u2060"])
def test_a_word_of_invisible_characters_only_is_an_empty_cell(tmp_path, invisible):
    body = "".join(f"{en},{zh}\n" for en, zh in ROWS)
    p = write_file(tmp_path / "d.csv", f"english,chinese\n{body}{invisible},{invisible}\n")
    fails_with(lambda: read_semanscope_csv(p), str(p), "line 6: empty cell in column(s) english, chinese")
    ds = read_semanscope_csv(p, on_empty="drop")
    assert len(ds) == 4 and any("line 6: empty cell" in m and "row dropped" in m for m in ds.report)
    en = write_file(tmp_path / "en.txt", f"water\n{invisible}\n")
    zh = write_file(tmp_path / "zh.txt", "水\n火\n")
    fails_with(lambda: read_word_lists({"en": en, "zh": zh}), f"{en}: line 2: empty entry")


def test_a_byte_order_mark_inside_a_word_or_a_header_cell_is_removed_and_reported(tmp_path):
    p = write_file(tmp_path / "bom_word.csv", "english,german\nwater,Wasser\n\ufefffire,Feuer\nsun,Son\ufeffne\n")
    ds = read_semanscope_csv(p)
    assert ds.rows == ((("water",), ("Wasser",)), (("fire",), ("Feuer",)), (("sun",), ("Sonne",)))
    notes = [m for m in ds.report if "U+FEFF" in m]
    assert any(f"{p}: line 3: column english:" in m for m in notes), ds.report
    assert any(f"{p}: line 4: column german:" in m for m in notes), ds.report
    assert not any("\ufeff" in m for m in ds.report)
    q = write_file(tmp_path / "bom_header.csv", "english,\ufeffchinese\nwater,水\nfire,火\n")
    ds = read_semanscope_csv(q)
    assert ds.languages == ("en", "zh") and any("U+FEFF" in m and "column 2" in m for m in ds.report), ds.report


def test_the_catalog_lists_the_languages_the_reader_reads_and_counts_characters(tmp_path):
    # list_datasets read headers with language_code: an 'id' column was listed as Indonesian while the reader ignores
    # it; and its UTF-8 error counted bytes as the column ("café" in Latin-1 after two multi-byte letters)
    from semanscope_nb.data.catalog import list_datasets

    (tmp_path / "ids.csv").write_text("id,english,chinese\n1,water,水\n2,fire,火\n", encoding="utf-8")
    (tmp_path / "bad.csv").write_bytes("ü,ö,caf".encode("utf-8") + b"\xe9" + b",x\n")
    infos = {i.name: i for i in list_datasets(tmp_path)}
    assert infos["ids"].languages == ("en", "zh") == snb.load_dataset(tmp_path / "ids.csv").languages
    assert "byte 0xe9 at character column 8" in infos["bad"].error


def test_a_language_that_is_not_a_string_and_a_name_too_long_for_a_file_are_named_errors():
    from semanscope_nb.errors import ArgumentError

    with pytest.raises(ArgumentError, match=r"languages: None is not a language code"):
        snb.load_dataset("edge-cases").select([None, "zh"])
    with pytest.raises(ArgumentError, match=r"languages: None is not a language code"):
        snb.dataset_affinity("edge-cases", "random-null", languages=[None, "zh"], n_boot=0, cache=False)
    with pytest.raises(DatasetError, match=r"\(5000 characters\) is not a dataset name or a path this file system can open"):
        snb.load_dataset("x" * 5000)
    with pytest.raises(DatasetError, match=r"\(5000 characters\)"):
        snb.dataset_affinity("x" * 5000, "random-null", n_boot=0, cache=False)
