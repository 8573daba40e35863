"""The Semanscope CSV reader, word lists, and every malformed input they reject."""

from __future__ import annotations

import pytest

import semanscope_nb as snb

PAPER_FILES = {
    "ICML-1-peterg-SA.csv": (349, ("en", "zh")),
    "ICML-2-cultural-nuance-SA.csv": (340, ("en", "zh")),  # one duplicated row ('mourning') dropped
    "ICML-3-challenge-SA.csv": (177, ("en", "zh")),
    "ICML-4-zinets-SA.csv": (403, ("zh", "en")),  # Chinese first; 19 lines commented out
    "ICML-1-peterg-SA-claude.csv": (349, ("en", "zh", "es", "fr", "de", "ru", "ko", "ar")),
    "ICML-4-zinets-SA-claude.csv": (423, ("zh", "en", "es", "fr", "de", "ru", "ko", "ar")),
}


@pytest.mark.parametrize("name", sorted(PAPER_FILES))
def test_reads_paper_files(paper_dir, name):
    n_rows, langs = PAPER_FILES[name]
    ds = snb.read_semanscope_csv(paper_dir / name)
    assert ds.languages == langs
    assert len(ds) == n_rows
    assert all(all(cell for cell in row) for row in ds.rows)
    assert len(ds.sha256) == 64


def test_paper_file_details(paper_dir):
    z = snb.read_semanscope_csv(paper_dir / "ICML-4-zinets-SA.csv")
    assert z.rows[0] == (("一",), ("one", "unity", "first"))
    assert all(not w.startswith("#") for w in z.words("zh"))
    assert any("column 'human' is not a language" in m for m in z.report)
    c = snb.read_semanscope_csv(paper_dir / "ICML-2-cultural-nuance-SA-claude.csv")
    assert c.groups is not None and c.groups[0] == "social-relations"
    dup = snb.read_semanscope_csv(paper_dir / "ICML-2-cultural-nuance-SA.csv")
    assert any("duplicate of line" in m for m in dup.report)
    sel = snb.read_semanscope_csv(paper_dir / "ICML-1-peterg-SA-claude.csv", languages=["chinese", "de"])
    assert sel.languages == ("zh", "de")


def _write(tmp_path, text, name="d.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def test_alternatives_whitespace_comments(tmp_path):
    p = _write(tmp_path, " English , Chinese ,human\n# a comment\n\n bank | shore ,银行|岸,\nsun,太阳,\n")
    ds = snb.read_semanscope_csv(p)
    assert ds.languages == ("en", "zh")
    assert ds.rows == ((("bank", "shore"), ("银行", "岸")), (("sun",), ("太阳",)))
    assert ds.line_numbers == (4, 5)
    assert ds.words("en") == ["bank", "shore", "sun"]


def test_repeated_word_is_reported(tmp_path):
    p = _write(tmp_path, "english,chinese\nface,脸\nface,面子\n")
    ds = snb.read_semanscope_csv(p)
    assert len(ds) == 2 and ds.words("en") == ["face"]
    assert any("en word 'face' also on line 2" in m for m in ds.report)


def test_word_lists(tmp_path):
    en = _write(tmp_path, "water\n# skip\nfire|flame\n", "en.txt")
    zh = _write(tmp_path, "水\n火\n", "zh.txt")
    ds = snb.read_word_lists({"english": en, "zh": zh})
    assert ds.languages == ("en", "zh") and ds.rows[1] == (("fire", "flame"), ("火",))
    bad = _write(tmp_path, "水\n", "zh2.txt")
    with pytest.raises(snb.DatasetError, match=r"misaligned.*en.txt: 2.*zh2.txt: 1"):
        snb.read_word_lists({"en": en, "zh": bad})


@pytest.mark.parametrize(
    "content, kwargs, match",
    [
        ("english,chinese\nred,\n", {}, r"d.csv: line 2: empty cell in column\(s\) chinese"),
        ("english,chinese\nred, | \n", {}, r"line 2: empty cell"),
        ("english,chinese\n", {}, r"no concept rows"),
        ("", {}, r"empty file"),
        ("# only a comment\n", {}, r"empty file"),
        ("english,human\nred,\n", {}, r"at least two languages"),
        ("english,chinese\nred,红\n", {"languages": ["en", "klingon"]}, r"unknown language column 'klingon'.*english \(en\)"),
        ("english,chinese\nred,红,a,b\n", {}, r"line 2: 4 fields but the header has 2"),
        ("english,english\nred,red\n", {}, r"repeated"),
    ],
)
def test_bad_csv(tmp_path, content, kwargs, match):
    with pytest.raises(snb.DatasetError, match=match):
        snb.read_semanscope_csv(_write(tmp_path, content), **kwargs)


def test_empty_cell_can_be_dropped_and_reported(tmp_path):
    p = _write(tmp_path, "english,chinese\nred,\nblue,蓝\ngreen,绿\n")
    ds = snb.read_semanscope_csv(p, on_empty="drop")
    assert len(ds) == 2 and any("line 2: empty cell" in m for m in ds.report)


def test_non_utf8_file(tmp_path):
    p = _write(tmp_path, "english,german\nred,rot\ngreen,grün\n", encoding="latin-1")
    with pytest.raises(snb.DatasetError, match=r"d.csv: line 3: not valid UTF-8"):
        snb.read_semanscope_csv(p)


def test_missing_file_and_unknown_bundled_name(tmp_path):
    with pytest.raises(snb.DatasetError, match="file not found"):
        snb.read_semanscope_csv(tmp_path / "nope.csv")
    with pytest.raises(snb.DatasetError, match="unknown dataset 'nope'.*bundled"):
        snb.load_dataset("nope")


def test_bundled_datasets_listed_and_loadable():
    infos = snb.list_datasets()
    assert [i.name for i in infos] == ["conceptual-space", "cultural-nuance", "edge-cases", "oracle-primitives"]
    for info in infos:
        ds = snb.load_dataset(info.name)
        assert {"en", "zh"} <= set(ds.languages) and len(ds.languages) >= 4
        assert info.card is not None


def test_select_and_subset(tmp_path):
    p = _write(tmp_path, "english,chinese,german,category\nred,红,rot,colour\nsun,太阳,Sonne,nature\n")
    ds = snb.read_semanscope_csv(p)
    assert ds.select(["de", "en"]).rows[0] == (("rot",), ("red",))
    assert ds.subset([1]).groups == ("nature",)
    with pytest.raises(snb.DatasetError, match="language 'ja' is not in dataset"):
        ds.select(["ja", "en"])
    assert list(ds.to_frame().columns) == ["en", "zh", "de", "group"]


def test_a_column_is_read_by_code_or_name_and_an_unknown_language_is_named():
    from semanscope_nb.data import WordDataset
    from semanscope_nb.errors import DatasetError

    ds = WordDataset("toy", ("en", "de"), ((("cat",), ("Katze",)), (("dog", "hound"), ("Hund",))), source="toy.csv")
    assert ds.column("en") == ds.column("English") == [("cat",), ("dog", "hound")]
    assert ds.column("German") == [("Katze",), ("Hund",)]
    assert ds.words("en") == ["cat", "dog", "hound"]
    with pytest.raises(DatasetError, match="toy.csv: language 'fr' is not in dataset 'toy'; available: en, de"):
        ds.column("fr")


def test_column_resolves_the_language_once_and_names_an_unknown_one(monkeypatch):
    """Issue 21: a column is read with its language resolved once (not once per row: 240k look-ups in a benchmark)."""
    from semanscope_nb.data import words as words_module
    from semanscope_nb.errors import DatasetError

    rows = tuple(((f"w{r}",), (f"x{r}", f"y{r}")) for r in range(50))
    ds = words_module.WordDataset(name="t", languages=("en", "de"), rows=rows)
    calls = []
    real = words_module.language_code
    monkeypatch.setattr(words_module, "language_code", lambda name: calls.append(name) or real(name))
    assert ds.column("German") == [row[1] for row in rows]
    assert calls == ["German"]
    assert ds.texts_by_language()["de"] == [w for r in range(50) for w in (f"x{r}", f"y{r}")]
    with pytest.raises(DatasetError, match="language 'fr' is not in dataset 't'"):
        ds.column("fr")
