"""Readers for parallel sentence data: the Tatoeba test set and SIB-200 (FLORES-200 topics).

Both live outside the project (``shared_data_dir()/"tatoeba"`` and
``shared_data_dir()/"sib-200"``; pass ``folder=`` to read a copy elsewhere).

* Tatoeba (LASER/XTREME similarity-search test set): ``tatoeba.<xxx>-eng.<xxx>``
  and ``tatoeba.<xxx>-eng.eng``, 1000 lines each, line i of one translating line
  i of the other.  The English side differs per language pair.
* SIB-200: ``<lang>/{train,dev,test}.tsv`` with header ``index_id, category,
  text`` (701 / 99 / 204 rows, 7 topics).  ``index_id`` and the row order are the
  same in every language, so the splits are sentence-parallel too.

Example
-------
>>> import semanscope_nb as snb
>>> c = snb.read_tatoeba("de", limit=3)  # doctest: +SKIP
>>> c.source_language, c.target_language, len(c)  # doctest: +SKIP
('de', 'en', 3)
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semanscope_nb.data.words import _read_text, shared_data_dir
from semanscope_nb.errors import DatasetError

#: Tatoeba three-letter codes <-> the ISO 639-1 codes the rest of the package uses
TATOEBA_CODES = {
    "deu": "de", "fra": "fr", "spa": "es", "nld": "nl", "ita": "it", "por": "pt", "eng": "en",
    "cmn": "zh", "jpn": "ja", "ara": "ar", "kor": "ko", "rus": "ru",
}
#: SIB-200 (FLORES-200) folder names <-> ISO 639-1 codes
SIB200_CODES = {
    "eng_Latn": "en", "deu_Latn": "de", "fra_Latn": "fr", "spa_Latn": "es", "nld_Latn": "nl", "zho_Hans": "zh",
    "zho_Hant": "zh-TW", "jpn_Jpan": "ja", "arb_Arab": "ar", "kor_Hang": "ko", "rus_Cyrl": "ru",
}
SIB200_SPLITS = ("train", "dev", "test")


def tatoeba_dir(folder: str | os.PathLike | None = None) -> Path:
    """The Tatoeba folder (``folder`` or ``shared_data_dir()/"tatoeba"``)."""
    return Path(folder) if folder is not None else shared_data_dir() / "tatoeba"


def sib200_dir(folder: str | os.PathLike | None = None) -> Path:
    """The SIB-200 folder (``folder`` or ``shared_data_dir()/"sib-200"``)."""
    return Path(folder) if folder is not None else shared_data_dir() / "sib-200"


@dataclass(frozen=True)
class ParallelCorpus:
    """Aligned sentence lists: ``source_texts[i]`` translates ``target_texts[i]``."""

    name: str
    source_language: str
    target_language: str
    source_texts: tuple[str, ...]
    target_texts: tuple[str, ...]
    source: str
    sha256: str
    ids: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.source_texts)

    def head(self, n: int) -> "ParallelCorpus":
        """The first ``n`` pairs."""
        return ParallelCorpus(self.name, self.source_language, self.target_language, self.source_texts[:n],
                              self.target_texts[:n], self.source, self.sha256, self.ids[:n] if self.ids else None)


def _read_lines(path: Path) -> tuple[list[str], str]:
    """Lines of a UTF-8 text file (no trailing empty line) and the file's SHA-256."""
    text, sha = _read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip("\r") for ln in lines], sha


def _tatoeba_code(language: str) -> str:
    lang = language.strip()
    if lang in TATOEBA_CODES:
        return lang
    back = {iso: code for code, iso in TATOEBA_CODES.items()}
    if lang in back:
        return back[lang]
    raise DatasetError(f"unknown Tatoeba language '{language}'; known: {', '.join(sorted(TATOEBA_CODES))} (or ISO codes)")


def tatoeba_languages(folder: str | os.PathLike | None = None) -> list[str]:
    """Tatoeba codes with both files present in the folder."""
    d = tatoeba_dir(folder)
    out = []
    for p in sorted(d.glob("tatoeba.*-eng.eng")):
        code = p.name.split(".")[1].split("-")[0]
        if (d / f"tatoeba.{code}-eng.{code}").exists():
            out.append(code)
    return out


def read_tatoeba(language: str, *, folder: str | os.PathLike | None = None, limit: int | None = None) -> ParallelCorpus:
    """Read the Tatoeba test pairs of ``language`` (``deu`` or ``de``) -> English, aligned by line.

    Differing line counts or an empty line are errors naming the file and line.
    """
    code = _tatoeba_code(language)
    d = tatoeba_dir(folder)
    if not d.is_dir():
        raise DatasetError(f"Tatoeba folder '{d}' not found (set SEMANSCOPE_SHARED_DATA or pass folder=)")
    src_path, eng_path = d / f"tatoeba.{code}-eng.{code}", d / f"tatoeba.{code}-eng.eng"
    src, sha_s = _read_lines(src_path)
    eng, sha_e = _read_lines(eng_path)
    if len(src) != len(eng):
        raise DatasetError(f"Tatoeba files are misaligned: {src_path} has {len(src)} lines, {eng_path} has {len(eng)}")
    for path, lines in ((src_path, src), (eng_path, eng)):
        empty = [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
        if empty:
            raise DatasetError(f"{path}: line {empty[0]}: empty sentence ({len(empty)} empty line(s))")
    if limit is not None:
        if int(limit) != limit or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        src, eng = src[:limit], eng[:limit]
    sha = hashlib.sha256(f"{sha_s}\0{sha_e}".encode()).hexdigest()
    return ParallelCorpus(f"tatoeba-{code}-eng", TATOEBA_CODES.get(code, code), "en", tuple(src), tuple(eng),
                          f"{src_path} | {eng_path}", sha)


@dataclass(frozen=True)
class LabelledTexts:
    """One SIB-200 split of one language: ids, topic labels and sentences, in file order."""

    language: str  # ISO code when known, else the folder name
    split: str
    ids: tuple[str, ...]
    labels: tuple[str, ...]
    texts: tuple[str, ...]
    source: str
    sha256: str

    def __len__(self) -> int:
        return len(self.texts)

    def head(self, n: int) -> "LabelledTexts":
        return LabelledTexts(self.language, self.split, self.ids[:n], self.labels[:n], self.texts[:n], self.source, self.sha256)

    def sample(self, n: int, *, seed: int = 0) -> "LabelledTexts":
        """``n`` rows drawn without replacement (seeded), kept in file order (the files are sorted by topic)."""
        if n >= len(self):
            return self
        keep = np.sort(np.random.default_rng(seed).choice(len(self), size=n, replace=False))
        pick = lambda xs: tuple(xs[i] for i in keep)  # noqa: E731
        return LabelledTexts(self.language, self.split, pick(self.ids), pick(self.labels), pick(self.texts), self.source, self.sha256)


def _sib_folder(language: str) -> str:
    lang = language.strip()
    if lang in SIB200_CODES:
        return lang
    back = {iso: code for code, iso in SIB200_CODES.items()}
    if lang in back:
        return back[lang]
    return lang  # any other FLORES code the user has on disk


def sib200_languages(folder: str | os.PathLike | None = None) -> list[str]:
    """SIB-200 language folders present (each with a train.tsv)."""
    d = sib200_dir(folder)
    return sorted(p.parent.name for p in d.glob("*/train.tsv"))


def read_sib200(language: str, split: str = "train", *, folder: str | os.PathLike | None = None) -> LabelledTexts:
    """Read ``<folder>/<language>/<split>.tsv`` (``language``: ``eng_Latn`` or ``en``).

    A missing column, a short row or an empty label/text is an error naming file and line.
    """
    if split not in SIB200_SPLITS:
        raise ValueError(f"split must be one of {SIB200_SPLITS}, got {split!r}")
    code = _sib_folder(language)
    path = sib200_dir(folder) / code / f"{split}.tsv"
    if not path.exists():
        have = ", ".join(sib200_languages(folder)) or "none"
        raise DatasetError(f"{path}: file not found (SIB-200 languages present: {have}; set SEMANSCOPE_SHARED_DATA or pass folder=)")
    lines, sha = _read_lines(path)
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    want = ["index_id", "category", "text"]
    if header is None or [h.strip() for h in header[:3]] != want:
        raise DatasetError(f"{path}: line 1: header must start with {want}, got {header}")
    ids, labels, texts = [], [], []
    for line_no, row in enumerate(reader, start=2):
        if not row or not any(f.strip() for f in row):
            continue
        if len(row) < 3:
            raise DatasetError(f"{path}: line {line_no}: {len(row)} field(s), expected 3 (index_id, category, text)")
        for col, val in zip(want, row[:3]):
            if not val.strip():
                raise DatasetError(f"{path}: line {line_no}: empty '{col}'")
        ids.append(row[0].strip())
        labels.append(row[1].strip())
        texts.append("\t".join(row[2:]).strip())
    if not texts:
        raise DatasetError(f"{path}: no rows after the header")
    return LabelledTexts(SIB200_CODES.get(code, code), split, tuple(ids), tuple(labels), tuple(texts), str(path), sha)


def sib200_parallel(
    source_language: str, target_language: str = "eng_Latn", *, split: str = "test", folder: str | os.PathLike | None = None
) -> ParallelCorpus:
    """SIB-200 sentences of two languages aligned by ``index_id`` (a FLORES-200 bitext)."""
    a = read_sib200(source_language, split, folder=folder)
    b = read_sib200(target_language, split, folder=folder)
    by_id = dict(zip(b.ids, b.texts))
    missing = [i for i in a.ids if i not in by_id]
    if missing:
        raise DatasetError(f"{b.source}: {len(missing)} index_id(s) of {a.source} missing, e.g. {missing[:5]}")
    return ParallelCorpus(
        f"sib200-{split}-{_sib_folder(source_language)}-{_sib_folder(target_language)}", a.language, b.language,
        a.texts, tuple(by_id[i] for i in a.ids), f"{a.source} | {b.source}",
        hashlib.sha256((a.sha256 + b.sha256).encode()).hexdigest(), ids=a.ids,
    )
