"""The word-only artefact rows are kept per data set (issue 21): the same answer as computing them, never a stale one."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from semanscope_nb.memo import Memo
from semanscope_nb.metrics import artefacts
from semanscope_nb.metrics.spreads import AlignedWords


def _aw(words, rows=None, vectors=None):
    n = len(words[0])
    inc = sp.identity(n, format="csr") if rows is None else rows
    v = np.eye(n) if vectors is None else vectors
    return AlignedWords(("zh", "ja"), (v, v), (inc, inc), tuple("abc"[:n]), words=words)


def _loops(aw):
    """Rows where some alternative has the same surface key in both languages (plain loops)."""
    out = []
    for r in range(aw.n_rows):
        keys = [{artefacts.surface_key(aw.words[k][j], lang) for j in aw.incidence[k][r].indices}
                for k, lang in enumerate(aw.languages)]
        out.append(bool(keys[0] & keys[1]))
    return out


def test_kept_rows_equal_fresh_ones_and_follow_the_words(monkeypatch):
    monkeypatch.setattr(artefacts, "_WORD_ROWS", Memo(64))
    calls = []
    real = artefacts._identical_string_rows
    monkeypatch.setattr(artefacts, "_identical_string_rows", lambda aw: calls.append(1) or real(aw))
    words = (("水", "電話", "山"), ("水", "でんわ", "川"))
    first = artefacts.identical_string_rows(_aw(words))
    assert first.tolist() == _loops(_aw(words)) == [True, False, False]
    first[:] = True  # a caller changing its copy changes nothing kept
    other_vectors = _aw(words, vectors=np.random.default_rng(0).random((3, 3)))
    assert artefacts.identical_string_rows(other_vectors).tolist() == [True, False, False]
    assert len(calls) == 1, "another model's vectors, the same words: kept"
    changed = (("水", "電話", "山"), ("氷", "でんわ", "山"))
    assert artefacts.identical_string_rows(_aw(changed)).tolist() == _loops(_aw(changed)) == [False, False, True]
    swapped = sp.csr_matrix(np.eye(3)[[1, 0, 2]])  # same words, other rows hold them
    aw = _aw(changed, rows=swapped)
    assert artefacts.identical_string_rows(aw).tolist() == _loops(aw)
    assert len(calls) == 3, "other words or other rows: computed"
    kanji = (("水", "電話", "山"), ("氷", "電話機", "川"))
    zh_ja = artefacts.zh_ja_shared_character_rows(_aw(kanji))
    assert zh_ja.tolist() == [False, True, False]
    zh_ja[:] = False
    assert artefacts.zh_ja_shared_character_rows(_aw(kanji)).tolist() == [False, True, False], "kept, as a copy"
