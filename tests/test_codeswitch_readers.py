"""Issue 22: the LinCE and PHINC readers on small files this test writes (good files, and every bad input
they handle, each with an error naming the file and the line).

The project runs *synthetic dictionary code-switching* (``metrics.codeswitch``); these readers are for
users who bring the real code-switched corpora (LinCE, PHINC), which are not in the shared data.
"""

from __future__ import annotations

import gzip
import re

import pytest

from semanscope_nb.data.bitext import read_lince, read_phinc
from semanscope_nb.errors import DatasetError

# --------------------------------------------------------------------------- LinCE: token<TAB>tag, blank line between sentences


def test_lince_good_file_with_comments_crlf_and_no_final_blank_line(tmp_path):
    p = tmp_path / "dev.conll"
    p.write_bytes(b"# sent_enum = 0\r\nyo\tlang2\r\nlove\tlang1\r\ntacos\tlang2\r\n\r\n\r\n"
                   b"#\r\n# sent_enum = 1\r\nok\tlang1\r\n  bye \t lang1 \r\n")
    c = read_lince(p)
    assert c.texts == ("yo love tacos", "ok bye")  # cells are stripped, CRLF and comment lines are fine
    assert c.tags == (("lang2", "lang1", "lang2"), ("lang1", "lang1"))
    assert c.switch_points() == (2, 0) and c.tag_counts() == {"lang1": 3, "lang2": 2}
    assert c.name == "dev" and c.report == ("2 sentences, 5 tokens",) and len(c.sha256) == 64
    assert read_lince(p, name="lince-spa-eng").name == "lince-spa-eng"


def test_lince_gzip_file(tmp_path):
    p = tmp_path / "train.conll.gz"
    p.write_bytes(gzip.compress(b"hola\tlang2\nfriend\tlang1\n"))
    assert read_lince(p).texts == ("hola friend",)


@pytest.mark.parametrize("body,line,what", [
    ("yo\tlang2\nlove lang1\n", 2, "2 tab-separated fields"),  # a space, not a tab
    ("yo\tlang2\n\nlove\n", 3, r"got 1 field\(s\)"),  # a LinCE test file: tokens without tags
    ("yo\tlang2\tNOUN\n", 1, r"got 3 field\(s\)"),  # an extra column
    ("yo\tlang2\n\tlang1\n", 2, "empty token"),
    ("yo\tlang2\nlove\t \n", 2, "empty language tag"),
    ("ok\tlang1\nca\xf1a\tlang2\n".encode("latin-1"), 2, "not valid UTF-8"),
    ("ok\tlang1\nb\x00d\tlang2\n", 2, "NUL character"),
])
def test_lince_bad_input_names_file_and_line(tmp_path, body, line, what):
    p = tmp_path / "bad.conll"
    p.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    with pytest.raises(DatasetError) as exc:
        read_lince(p)
    msg = str(exc.value)
    assert "bad.conll" in msg and re.search(rf"\bline {line}\b", msg) and re.search(what, msg), msg


@pytest.mark.parametrize("body,what", [
    ("", "no sentences"),
    ("# sent_enum = 0\n\n   \n#\n", "no sentences"),
])
def test_lince_file_without_sentences(tmp_path, body, what):
    p = tmp_path / "empty.conll"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"empty\.conll: {what}"):
        read_lince(p)


def test_lince_missing_file(tmp_path):
    with pytest.raises(DatasetError, match=r"nowhere\.conll: file not found"):
        read_lince(tmp_path / "nowhere.conll")


# --------------------------------------------------------------------------- PHINC: header, then (Hinglish, English) rows


def test_phinc_good_file_quoted_cells_blank_rows_and_columns_by_name_or_position(tmp_path):
    p = tmp_path / "phinc.csv"
    p.write_text('id,Sentence,English_Translation\n1,main ghar ja raha hoon,I am going home\n\n'
                 '2,"yaar, kya scene hai","buddy,\nwhat is up"\n', encoding="utf-8")
    by_name = read_phinc(p, source_column="Sentence", target_column="English_Translation")
    by_pos = read_phinc(p, source_column=1, target_column=2)
    assert by_name.source_texts == by_pos.source_texts == ("main ghar ja raha hoon", "yaar, kya scene hai")
    assert by_name.target_texts == ("I am going home", "buddy,\nwhat is up")  # a quoted cell may span lines
    assert (by_name.source_language, by_name.target_language, len(by_name)) == ("hi-en", "en", 2)
    assert by_name.report == ("2 sentence pairs",)


@pytest.mark.parametrize("body,kwargs,message", [
    ("Sentence,English_Translation\nok,fine\nonly one cell\n", {}, r"bad\.csv, line 3: 1 field\(s\), expected at least 2"),
    ("Sentence,English_Translation\nok,fine\n ,empty source\n", {}, r"bad\.csv, line 3: empty sentence cell"),
    ("Sentence,English_Translation\nok,fine\nno translation, \n", {}, r"bad\.csv, line 3: empty translation cell"),
    ("Sentence,English_Translation\nok,fine\n", {"source_column": "Hinglish"}, r"bad\.csv, line 1: no column named 'Hinglish'"),
    ("Sentence,English_Translation\nok,fine\n", {"target_column": 5}, r"bad\.csv, line 1: target_column=5 but the header has 2"),
    ('Sentence,English_Translation\nok,fine\n"never closed,x\nmore,rows\n', {}, r"bad\.csv: line 3, column 1: unterminated quote"),
    ('Sentence,English_Translation\n"ok" x,fine\n', {}, r"bad\.csv: line 2, column \d+: text after the closing quote"),
    (b"Sentence,English_Translation\nok,fine\ncaf\xe9,coffee\n", {}, r"bad\.csv: line 3: not valid UTF-8"),
])
def test_phinc_bad_input_names_file_and_line(tmp_path, body, kwargs, message):
    p = tmp_path / "bad.csv"
    p.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    with pytest.raises(DatasetError, match=message):
        read_phinc(p, **kwargs)


@pytest.mark.parametrize("body,message", [
    ("", r"empty\.csv: empty file"),
    ("Sentence,English_Translation\n\n", r"empty\.csv: a header but no sentence pairs"),
])
def test_phinc_file_without_pairs(tmp_path, body, message):
    p = tmp_path / "empty.csv"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        read_phinc(p)
