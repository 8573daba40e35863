"""Sentence corpora for CSC: one-sentence-per-line files, the ESS questions, the bundled sets, bad input."""

from __future__ import annotations

import pytest

import semanscope_nb as snb
from semanscope_nb.errors import DatasetError


def test_bundled_corpora_sizes_and_languages():
    names = snb.list_sentence_corpora()
    assert names == ["csc-skills-en", "csc-everyday-en", "csc-skills-de", "csc-everyday-de"]
    per_language: dict[str, int] = {}
    for n in names:
        c = snb.load_sentence_corpus(n)
        assert c.language == n.rsplit("-", 1)[1] and len(c.sha256) == 64 and c.report == ()
        assert len(set(c.sentences)) == len(c) and max(c.n_words()) < 10  # short-sentence regime, no duplicates
        per_language[c.language] = per_language.get(c.language, 0) + len(c)
    assert per_language["en"] >= 300 and per_language["de"] >= 300


def test_read_sentences_skips_and_reports(tmp_path):
    p = tmp_path / "mine-en.txt"
    p.write_text("# comment\nThe train leaves at noon.\n\n   \nRun.\nThe train   leaves at noon.\nEat.\n", encoding="utf-8")
    c = snb.read_sentences(p, language="english")
    assert c.sentences == ("The train leaves at noon.", "Run.", "Eat.") and c.language == "en"
    assert c.report[0] == f"{p}: 2 empty line(s) skipped (lines 3, 4)"
    assert "line 6: duplicate of line 2" in c.report[1]
    assert snb.load_sentence_corpus(p).language == "en"  # language from the -en suffix


def test_bad_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(DatasetError, match="empty.txt: no sentences"):
        snb.read_sentences(empty, language="en")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n# only a comment\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="blank.txt: no sentences"):
        snb.read_sentences(blank, language="en")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Caf\xe9 au lait.\n".encode("latin-1"))
    with pytest.raises(DatasetError, match="line 1: not valid UTF-8"):
        snb.read_sentences(latin, language="fr")
    with pytest.raises(DatasetError, match="file not found"):
        snb.read_sentences(tmp_path / "nope.txt", language="en")
    with pytest.raises(DatasetError, match="unknown sentence corpus 'nope'; bundled: csc-skills-en"):
        snb.load_sentence_corpus("nope")
    nolang = tmp_path / "sentences.txt"
    nolang.write_text("Hello there.\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="cannot tell the language"):
        snb.load_sentence_corpus(nolang)
    with pytest.raises(ValueError, match="language must be"):
        snb.read_sentences(nolang, language="")


def test_sample_filter_subset_and_round_trip():
    c = snb.load_sentence_corpus("csc-everyday-en")
    s = c.sample(20, seed=1)
    assert len(s) == 20 and s == c.sample(20, seed=1) and s != c.sample(20, seed=2)
    assert set(s.sentences) <= set(c.sentences) and s.name == "csc-everyday-en[sample20-seed1]"
    assert c.sample(None) is c
    short = c.filter_length(max_words=4)
    assert max(short.n_words()) <= 4 and len(short) < len(c)
    with pytest.raises(DatasetError, match="empty"):
        c.filter_length(min_words=50)
    assert snb.SentenceCorpus.from_dict(s.to_dict()) == s


@pytest.fixture(scope="module")
def ess_dir():
    d = snb.shared_data_dir() / "ess-mcsq"
    if not (d / "ess_requests_unique_en.tsv").exists():
        pytest.skip(f"ESS questions not found at {d} (set SEMANSCOPE_SHARED_DATA)")
    return d


def test_ess_questions(ess_dir):
    en = snb.read_ess_questions("en")
    assert en.name == "ess-en" and en.language == "en" and len(en) == 1425
    assert en.item_ids[0] == "ESS_R01_2002/A1" and en.sentences[0].startswith("On an average weekday")
    assert 'In politics people sometimes talk of "left" and "right".' in en.sentences  # quoted TSV field
    de = snb.load_sentence_corpus("ess-de")
    assert de.language == "de" and len(de) == 1601
    assert sorted(en.n_words())[len(en) // 2] >= 10  # long questions, unlike the bundled sets


def test_ess_bad_files(tmp_path):
    with pytest.raises(DatasetError, match="ESS questions not found"):
        snb.read_ess_questions("en", folder=tmp_path)
    bad = tmp_path / "ess_requests_unique_en.tsv"
    bad.write_text("study\titem\ttext\nS\tA1\tHow are you?\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 1: missing column\(s\) \['item_name'\]"):
        snb.read_ess_questions("en", folder=tmp_path)
    bad.write_text("study\titem_name\ttext\nS\tA1\tHow are you?\nS\tA2\n\nS\tA3\tWhy?\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="line 3: 2 fields, the header has 3"):
        snb.read_ess_questions("en", folder=tmp_path)
    bad.write_text("study\titem_name\ttext\nS\tA1\tHow are you?\n\nS\tA3\tWhy?\n", encoding="utf-8")
    c = snb.read_ess_questions(path=bad)
    assert c.sentences == ("How are you?", "Why?") and c.item_ids == ("S/A1", "S/A3") and "1 empty line(s)" in c.report[0]
