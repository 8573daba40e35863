"""Issue 20: token and reader edges.

- NUL and the other control characters follow one rule in every encoder: the text is refused with an
  error naming it (the e5 NumPy engine used to stop reading at a NUL and embed ``hello`` for
  ``hello\\x00world again``);
- word spans in a mixed-script text follow each script's rule (jieba used to split a Russian word in a
  Chinese text into letters);
- one binary ``*.csv`` in a folder is listed as bad with its error, the good files stay usable, and the
  dataset picker never keeps showing the previous folder's list.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semanscope_nb.data.catalog import list_datasets, list_folder_datasets
from semanscope_nb.errors import EmbeddingError
from semanscope_nb.models import load_model
from semanscope_nb.models.registry import list_models
from semanscope_nb.models.tokens import E5TokenEncoder, word_spans

LOCAL_MODELS = [m.id for m in list_models(offline=True, available=True)]
CONTROLS = ["\x00", "\x07", "\x1b", "\x7f", "\x85"]


# --------------------------------------------------------------------------- control characters


def test_every_local_model_is_registered_here():
    assert {"use-multilingual", "multilingual-e5-small", "all-minilm-l6-v2", "wordllama-l2-supercat", "tfidf-char",
            "tfidf-word", "random-null"} <= set(LOCAL_MODELS)


@pytest.mark.parametrize("model_id", LOCAL_MODELS)
@pytest.mark.parametrize("ch", CONTROLS)
def test_control_character_is_refused_by_every_encoder_before_any_engine_sees_it(model_id, ch):
    enc = load_model(model_id)  # may be a shared instance another test has used
    loaded, calls = enc.loaded, enc.calls
    with pytest.raises(EmbeddingError, match=rf"{model_id}: texts\[1\] .* control character U\+{ord(ch):04X} at position 5"):
        enc.encode(["water", f"hello{ch}world again"])
    assert enc.loaded == loaded and enc.calls == calls  # refused before loading or encoding anything


@pytest.mark.parametrize("ch", CONTROLS)
def test_control_character_is_refused_by_the_token_encoder(ch):
    enc = E5TokenEncoder()
    with pytest.raises(EmbeddingError, match=rf"texts\[0\] .* U\+{ord(ch):04X}"):
        enc.encode_tokens([f"hello{ch}world again"], "en", cache=False)
    assert not enc.loaded


@pytest.mark.slow
def test_real_engines_refuse_nul_and_embed_tab_and_newline():
    """The e5 NumPy engine itself refuses a NUL (it used to cut the text there); tab, line feed and carriage
    return stay allowed and give finite vectors on every local encoder."""
    from semanscope_nb.models.e5_numpy import E5Numpy

    engine = E5Numpy()
    with pytest.raises(EmbeddingError, match="U\\+0000 at position 5"):
        engine.tokenize("hello\x00world again")
    ids, _ = engine.tokenize("hello\tworld\nagain\r")
    assert len(ids) >= 3
    texts = ["hello\tworld", "line one\nline two\r", "water"]
    for model_id in LOCAL_MODELS:
        enc = load_model(model_id).prepare(texts)
        v = enc.encode(texts)
        assert v.shape[0] == 3 and np.isfinite(v).all(), model_id
    [r] = E5TokenEncoder().encode_tokens(["hello\tworld again"], "en", cache=False)
    assert r.tokens == ("hello", "world", "again") and np.isfinite(r.vectors).all()


# --------------------------------------------------------------------------- mixed scripts


@pytest.mark.parametrize("language", ["zh", "ja", "ru", "en", None])
def test_mixed_script_text_keeps_each_scripts_words(language):
    text = "Hello 世界 Привет"
    assert [text[a:b] for a, b in word_spans(text, language)] == ["Hello", "世界", "Привет"]


def test_scripts_without_a_space_between_them_split_at_the_script_boundary():
    text = "Привет世界, iPhone手机"
    assert [text[a:b] for a, b in word_spans(text, "zh")] == ["Привет", "世界", "iPhone", "手机"]
    assert [text[a:b] for a, b in word_spans(text, "ru")] == ["Привет", "世界", "iPhone", "手机"]


def test_pure_chinese_and_japanese_text_is_segmented_as_before():
    import jieba

    zh = "我爱北京天安门"
    assert word_spans(zh, "zh") == [(s, e) for _, s, e in jieba.tokenize(zh)]
    ja = "東京に住んでいます"
    assert [ja[a:b] for a, b in word_spans(ja, "ja")] == ["東京", "に", "住ん", "で", "い", "ます"]


# --------------------------------------------------------------------------- folders with a bad file


def _folder(root: Path, name: str, *, binary: bool) -> Path:
    d = root / name
    d.mkdir()
    (d / f"{name}-words.csv").write_text("english,german\nwater,Wasser\nfire,Feuer\n", encoding="utf-8")
    if binary:
        (d / "broken.csv").write_bytes(bytes(range(256)) * 8)  # NUL and every other byte
        (d / "latin1.csv").write_bytes("\xe9nglish,german\nwater,Wasser\n".encode("latin-1"))
    return d


def test_binary_csv_is_listed_as_bad_and_the_good_files_stay_usable(tmp_path):
    from semanscope_nb.data.words import load_dataset

    d = _folder(tmp_path, "mine", binary=True)
    infos = {i.name: i for i in list_datasets(d)}
    assert set(infos) == {"broken", "latin1", "mine-words"}
    assert infos["broken"].error == "broken.csv: binary data (a NUL byte at byte 0), not a CSV text file"
    assert infos["latin1"].error.startswith("latin1.csv: line 1 is not UTF-8 text (byte 0xe9 at character column 1)")
    assert infos["mine-words"].error is None and infos["mine-words"].languages == ("en", "de")
    assert load_dataset(infos["mine-words"].path).languages == ("en", "de")
    found, notes = list_folder_datasets(d)
    assert [i.name for i in found] == ["mine-words"]
    assert len(notes) == 2 and all("skipped" in n for n in notes) and "broken.csv: binary data" in notes[0]


def test_binary_junk_without_a_nul_is_not_a_language():
    from semanscope_nb.data.languages import language_code

    junk = bytes(range(1, 256)).decode("latin-1")
    assert language_code(junk) is None


def test_picker_lists_the_good_files_names_the_bad_and_never_keeps_a_stale_list(tmp_path, monkeypatch):
    from semanscope_nb.widgets import pickers
    from semanscope_nb.widgets.pickers import DatasetPicker

    first, second = _folder(tmp_path, "first", binary=False), _folder(tmp_path, "second", binary=True)
    p = DatasetPicker(folder=first)
    assert "first-words" in p.infos and p.message.value == ""
    p.load_folder(second)  # a folder holding a binary file
    assert "second-words" in p.infos and "first-words" not in p.infos
    assert "broken.csv: binary data" in p.message.value and "latin1.csv" in p.message.value
    assert [k for k, v in p.sources.items() if v == "folder"] == ["second-words"]

    def unreadable(folder):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(pickers, "list_folder_datasets", unreadable)
    p.load_folder(first)  # a folder that cannot be listed: the previous folder's files go, the bundled stay
    assert set(p.sources.values()) == {"bundled"} and "cannot be listed" in p.message.value
    assert [o[1] for o in p.dropdown.options] == list(p.infos)
