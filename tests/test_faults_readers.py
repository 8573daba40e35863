"""Readers never invent, drop or merge rows silently: each bad input is a DatasetError naming file, line and column,
and everything a reader skips or merges on purpose is listed in the result's ``report``."""

from __future__ import annotations

import csv
import gzip
import shutil
from pathlib import Path

import pytest

import semanscope_nb as snb
from reader_faults import fails_with, write_file


# --------------------------------------------------------------------------- Semanscope CSV

# (U+0085, form feed, vertical tab and \x1c-\x1e are control characters, refused as the encoders refuse them:
#  tests/test_faults_reader_audit8.py)
SEPARATORS = ["\u2028", "\u2029"]


@pytest.mark.parametrize("quoted", [False, True], ids=["plain", "quoted"])
@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_csv_splitlines_separator_stays_inside_its_cell(tmp_path, sep, quoted):
    cell = f'"A{sep}B"' if quoted else f"A{sep}B"
    p = write_file(tmp_path / "d.csv", f"english,chinese\n{cell},甲\nsun,日\n")
    ds = snb.read_semanscope_csv(p, on_empty="drop")  # "drop": an invented row split would be dropped, not raised
    assert ds.rows == (((f"A{sep}B",), ("甲",)), (("sun",), ("日",)))
    assert ds.line_numbers == (2, 3)


def test_csv_error_line_is_physical_after_a_separator(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese\nA\u2028B,甲\nred,\n")
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 3: empty cell in column(s) chinese")


def test_csv_quoted_line_break_counts_every_physical_line(tmp_path):
    p = write_file(tmp_path / "d.csv", 'english,chinese,note\nred,红,"two\nlines"\nblue,\n')
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 4: empty cell in column(s) chinese")
    ok = write_file(tmp_path / "ok.csv", 'english,chinese,note\nred,红,"two\nlines"\nblue,蓝\n')
    ds = snb.read_semanscope_csv(ok)
    assert ds.line_numbers == (2, 4) and any("lines 2-3: one row" in m for m in ds.report)


def test_csv_unterminated_quote_names_the_line_it_opened_on(tmp_path):
    p = write_file(tmp_path / "d.csv", 'english,chinese\nred,红\n"blue,蓝\ngreen,绿\nwhite,白\n')
    fails_with(lambda: snb.read_semanscope_csv(p, on_empty="drop"), str(p), "line 3, column 1: unterminated quote", "line 5")
    mid = write_file(tmp_path / "mid.csv", 'english,chinese\nred,"红\nblue,蓝\n')
    fails_with(lambda: snb.read_semanscope_csv(mid), str(mid), "line 2, column 5: unterminated quote")


def test_csv_text_after_a_closing_quote_is_an_error(tmp_path):
    p = write_file(tmp_path / "d.csv", 'english,chinese\n"red"dish,红\n')
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 2, column 6: text after the closing quote", "line 2, column 1")


def test_csv_cell_over_the_field_limit_is_a_dataset_error(tmp_path):
    big = "x" * (csv.field_size_limit() + 10)
    p = write_file(tmp_path / "d.csv", f"english,chinese\nred,红\nblue,{big}\n")
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 3: a cell is longer than the CSV field limit")


def test_csv_hash_cell_is_a_comment_unless_quoted_and_comments_are_reported(tmp_path):
    # the paper's tool reads with pandas comment='#', and its ICML-4 file comments rows out as '#丨,vertical line,'
    p = write_file(tmp_path / "d.csv", 'english,chinese\n#1,一号\n"#hashtag",话题标签\nred,红\n')
    ds = snb.read_semanscope_csv(p)
    assert ds.rows == ((("#hashtag",), ("话题标签",)), (("red",), ("红",)))
    assert f"{p}: 1 comment line(s) skipped (lines 2)" in ds.report


def test_csv_quote_in_a_comment_line_does_not_swallow_rows(tmp_path):
    p = write_file(tmp_path / "d.csv", 'english,chinese\n# see,"the list\nred,红\nblue,蓝\n')
    ds = snb.read_semanscope_csv(p)
    assert ds.rows == ((("red",), ("红",)), (("blue",), ("蓝",))) and ds.line_numbers == (3, 4)


def test_csv_paper_file_reports_its_commented_out_rows(paper_dir):
    ds = snb.read_semanscope_csv(paper_dir / "ICML-4-zinets-SA.csv")
    assert len(ds) == 403
    assert any("19 comment line(s) skipped (lines 4, 5, 6, 7, 8, 9, 10, 11, 34, 39," in m for m in ds.report)


def test_csv_two_spellings_of_one_language_name_both_columns(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese,en\nred,红,crimson\n")
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 1", "'english' (column 1) and 'en' (column 3)")


def test_csv_language_asked_for_twice_is_an_error(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese\nred,红\nblue,蓝\n")
    fails_with(lambda: snb.read_semanscope_csv(p, languages=["en", "english"]), str(p), "names language 'en' twice")


def test_csv_values_under_an_unnamed_column_are_reported(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese,\nred,红,a note\nblue,蓝,\n")
    ds = snb.read_semanscope_csv(p)
    assert any("column(s) 3 have no header name; their values are ignored (lines 2)" in m for m in ds.report)


def test_csv_empty_and_repeated_alternatives_are_reported(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese\nbank||shore,银行|银行\n")
    ds = snb.read_semanscope_csv(p)
    assert ds.rows == ((("bank", "shore"), ("银行",)),)
    assert f"{p}: line 2: column english: empty alternative in 'bank||shore' ignored" in ds.report
    assert f"{p}: line 2: column chinese: repeated alternative in '银行|银行' kept once" in ds.report


def test_csv_nul_character_is_an_error(tmp_path):
    p = write_file(tmp_path / "d.csv", "english,chinese\nred,红\x00\n")
    fails_with(lambda: snb.read_semanscope_csv(p), str(p), "line 2, column 6: NUL character")


# --------------------------------------------------------------------------- word lists


@pytest.mark.parametrize("entry", ["|", " | ", "||"])
def test_word_list_entry_without_a_word_is_an_error(tmp_path, entry):
    en = write_file(tmp_path / "en.txt", f"water\n{entry}\nfire\n")
    zh = write_file(tmp_path / "zh.txt", "水\n土\n火\n")
    fails_with(lambda: snb.read_word_lists({"en": en, "zh": zh}), str(en), "line 2: empty entry")


def test_word_list_empty_line_between_entries_is_an_error(tmp_path):
    en = write_file(tmp_path / "en.txt", "water\n   \nfire\n")
    zh = write_file(tmp_path / "zh.txt", "水\n火\n")
    fails_with(lambda: snb.read_word_lists({"en": en, "zh": zh}), str(en), "line 2: empty line between entries")


def test_word_lists_two_spellings_of_one_language_name_both(tmp_path):
    en = write_file(tmp_path / "en.txt", "water\n")
    en2 = write_file(tmp_path / "english.txt", "fire\n")
    zh = write_file(tmp_path / "zh.txt", "水\n")
    fails_with(lambda: snb.read_word_lists({"en": en, "zh": zh, "english": en2}), f"'en' ({en})", f"'english' ({en2})")


def test_word_list_separator_inside_a_word_does_not_split_it(tmp_path):
    en = write_file(tmp_path / "en.txt", "A\u2028B\nfire\n")
    zh = write_file(tmp_path / "zh.txt", "# comment\n甲\n火\n")
    ds = snb.read_word_lists({"en": en, "zh": zh})
    assert ds.rows == ((("A\u2028B",), ("甲",)), (("fire",), ("火",)))
    assert f"{zh}: 1 comment line(s) skipped (lines 1)" in ds.report


# --------------------------------------------------------------------------- ESS questions

ESS_HEADER = "study\titem_name\ttext\n"


def test_ess_unbalanced_quote_names_its_line(tmp_path):
    p = write_file(tmp_path / "ess.tsv", ESS_HEADER + 'S\tA1\t"How are you?\nS\tA2\tWhy?\n')
    fails_with(lambda: snb.read_ess_questions(path=p), str(p), "line 2, column 6: unterminated quote")


def test_ess_error_lines_are_physical(tmp_path):
    p = write_file(tmp_path / "ess.tsv", ESS_HEADER + 'S\tA1\t"two\nlines"\nS\tA2\n')
    fails_with(lambda: snb.read_ess_questions(path=p), str(p), "line 4: 2 fields")


# --------------------------------------------------------------------------- gzip in the wrong clothes


def _gz(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"))


def _tatoeba(d: Path, eng: bytes | str) -> Path:
    write_file(d / "tatoeba.deu-eng.deu", "Hallo.\n")
    return write_file(d / "tatoeba.deu-eng.eng", eng)


def _sib(d: Path, data: bytes | str) -> Path:
    (d / "eng_Latn").mkdir(exist_ok=True)
    return write_file(d / "eng_Latn" / "test.tsv", data)


GZIP_AS_PLAIN = {
    "csv": (lambda d: write_file(d / "d.csv", _gz("english,chinese\nred,红\n")), lambda p, d: snb.read_semanscope_csv(p)),
    "ess": (lambda d: write_file(d / "ess.tsv", _gz(ESS_HEADER + "S\tA1\tWhy?\n")), lambda p, d: snb.read_ess_questions(path=p)),
    "sib200": (lambda d: _sib(d, _gz("index_id\tcategory\ttext\n1\tsports\tA goal.\n")), lambda p, d: snb.read_sib200("en", "test", folder=d)),
    "tatoeba": (lambda d: _tatoeba(d, _gz("Hello.\n")), lambda p, d: snb.read_tatoeba("de", folder=d)),
    "muse": (lambda d: write_file(d / "en-de.dict", _gz("Haus @ house\n")), lambda p, d: snb.read_muse_dictionary(p)),
}


@pytest.mark.parametrize("reader", sorted(GZIP_AS_PLAIN))
def test_gzip_data_under_a_plain_name_is_named_as_such(tmp_path, reader):
    make, read = GZIP_AS_PLAIN[reader]
    p = make(tmp_path)
    fails_with(lambda: read(p, tmp_path), str(p), "line 1, column 1: gzip-compressed data in a file not named .gz")


PLAIN_AS_GZIP = {
    "csv": (lambda d: write_file(d / "d.csv.gz", "english,chinese\nred,红\n"), snb.read_semanscope_csv),
    "ess": (lambda d: write_file(d / "ess.tsv.gz", ESS_HEADER + "S\tA1\tWhy?\n"), lambda p: snb.read_ess_questions(path=p)),
    "muse": (lambda d: write_file(d / "en-de.dict.gz", "Haus @ house\n"), snb.read_muse_dictionary),
}


@pytest.mark.parametrize("reader", sorted(PLAIN_AS_GZIP))
def test_plain_text_named_gz_is_named_as_such(tmp_path, reader):
    make, read = PLAIN_AS_GZIP[reader]
    p = make(tmp_path)
    fails_with(lambda: read(p), str(p), "line 1, column 1: named .gz but not gzip-compressed")


def test_truncated_gzip_is_a_dataset_error(tmp_path):
    whole = _gz("Haus @ house\n" * 200)
    p = write_file(tmp_path / "en-de.dict.gz", whole[: len(whole) // 2])
    fails_with(lambda: snb.read_muse_dictionary(p), str(p), "damaged gzip file")


# --------------------------------------------------------------------------- MUSE


def test_muse_duplicate_pairs_are_reported_with_their_lines(tmp_path):
    p = write_file(tmp_path / "en-de.dict.gz", _gz("Haus @ house\nHund @ dog\nHaus @ house\n"))
    d = snb.read_muse_dictionary(p)
    assert d.pairs == (("house", "Haus"), ("dog", "Hund"))
    assert f"{p}: duplicate pairs dropped (line 3 = line 1)" in d.report


# --------------------------------------------------------------------------- SIB-200 and Tatoeba


@pytest.fixture
def sib_copy(tmp_path) -> Path:
    """A scratch folder holding copies of the real SIB-200 test split in English and Chinese."""
    src = snb.shared_data_dir() / "sib-200"
    if not (src / "zho_Hans" / "test.tsv").exists():
        pytest.skip(f"SIB-200 not found in {src} (set SEMANSCOPE_SHARED_DATA)")
    for lang in ("eng_Latn", "zho_Hans"):
        (tmp_path / lang).mkdir()
        shutil.copyfile(src / lang / "test.tsv", tmp_path / lang / "test.tsv")
    return tmp_path


def _lines(p: Path) -> list[str]:
    return p.read_text(encoding="utf-8").splitlines(keepends=True)


def test_sib200_duplicate_index_id_is_an_error(sib_copy):
    p = sib_copy / "eng_Latn" / "test.tsv"
    lines = _lines(p)
    p.write_text("".join(lines[:11] + [lines[5]] + lines[11:]), encoding="utf-8")  # line 6 again as line 12
    idx = lines[5].split("\t")[0]
    fails_with(lambda: snb.read_sib200("en", "test", folder=sib_copy), str(p), f"line 12: index_id {idx} repeats line 6")


def test_sib200_id_missing_on_the_source_side_is_an_error(sib_copy):
    p = sib_copy / "zho_Hans" / "test.tsv"
    lines = _lines(p)
    idx = lines[9].split("\t")[0]
    p.write_text("".join(lines[:9] + lines[10:]), encoding="utf-8")
    fails_with(lambda: snb.sib200_parallel("zh", "en", split="test", folder=sib_copy), f"missing from {p}", f"{idx} (line 10)")


def test_sib200_same_id_with_another_label_is_an_error(sib_copy):
    p = sib_copy / "zho_Hans" / "test.tsv"
    lines = _lines(p)
    idx, label, text = lines[3].split("\t")
    lines[3] = "\t".join([idx, "geography" if label != "geography" else "travel", text])
    p.write_text("".join(lines), encoding="utf-8")
    fails_with(lambda: snb.sib200_parallel("zh", "en", split="test", folder=sib_copy), f"index_id {idx}", "on line 4 of", str(p))


def test_sib200_quoted_text_is_unquoted_not_kept_with_csv_escapes(sib_copy):
    t = snb.read_sib200("en", "test", folder=sib_copy)
    added = [x for x in t.texts if x.endswith("he added.")]
    assert added == ['"We now have 4-month-old mice that are non-diabetic that used to be diabetic," he added.']


def test_sib200_unbalanced_quote_is_an_error(tmp_path):
    p = _sib(tmp_path, 'index_id\tcategory\ttext\n1\tsports\t"A goal.\n2\ttravel\tA trip.\n')
    fails_with(lambda: snb.read_sib200("en", "test", folder=tmp_path), str(p), "line 2, column 10: unterminated quote")


def test_tatoeba_carriage_return_line_ends_are_lines(tmp_path):
    write_file(tmp_path / "tatoeba.deu-eng.deu", "Hallo.\rDanke.\r")
    write_file(tmp_path / "tatoeba.deu-eng.eng", "Hello.\rThanks.\r")
    c = snb.read_tatoeba("de", folder=tmp_path)
    assert c.source_texts == ("Hallo.", "Danke.") and c.target_texts == ("Hello.", "Thanks.")
