"""Synthetic dictionary code-switching at controlled rates, and retrieval / classification on it.

This is not MINERS' code-switching data: real code-switched text (LinCE, PHINC;
read them with :func:`semanscope_nb.data.bitext.read_lince` /
:func:`~semanscope_nb.data.bitext.read_phinc`) mixes languages by grammar and
habit, while this module switches words by dictionary lookup.  Its numbers are
not comparable with MINERS' CS results.

:func:`code_switch` rewrites sentences of the dictionary's source language by
replacing words with their dictionary translation: every *switchable* word (a
word token whose lower-cased form is in the dictionary) is switched
independently with probability ``rate`` (seeded), so the realised share of
switched switchable words is ``rate`` up to binomial sampling noise.  Both
shares are reported: of switchable words and of all word tokens (the
dictionary's coverage caps the latter).  A word with several translations takes
the first one listed (MUSE lists them by frequency), or a seeded random one
(``choice="random"``).  Spacing and punctuation are kept; only word spans change.
Each text's draws come from a generator of the seed and the text alone
(:func:`~semanscope_nb.data.concept_key.text_seed`): a sentence is switched the
same way wherever it stands in the list and whatever other sentences are beside it.

:func:`code_switched_retrieval` runs bitext retrieval of code-switched
sentences against the other language at several rates;
:func:`code_switched_classification` trains kNN on clean SIB-200 sentences and
tests on code-switched ones.

Example
-------
>>> from semanscope_nb.data.dictionaries import BilingualDictionary
>>> d = BilingualDictionary("toy", "en", "de", (("house", "Haus"), ("red", "rot"), ("the", "das")))
>>> cs = code_switch(["The red house.", "A red car"], d, rate=1.0, seed=0)
>>> cs.texts, cs.n_switched, cs.n_switchable
(('das rot Haus.', 'A rot car'), 4, 4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from semanscope_nb.data.concept_key import text_seed
from semanscope_nb.errors import DatasetError
from semanscope_nb.provenance import json_ready, shareable_source
from semanscope_nb.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.data.bitext import ParallelCorpus
    from semanscope_nb.data.dictionaries import BilingualDictionary

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)


@dataclass(frozen=True)
class CodeSwitched(Result):
    """Code-switched sentences, the switch counts and the parameters that made them.

    The main score is :attr:`switch_share`, the realised share of switched switchable words (~``rate``).
    """

    kind = "code-switched"
    main_score_name = "switch_share"

    texts: tuple[str, ...]
    originals: tuple[str, ...]
    rate: float
    seed: int
    n_words: int
    n_switchable: int
    n_switched: int
    switched_per_text: tuple[int, ...]
    dictionary: str
    source_language: str
    target_language: str
    choice: str
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def switch_share(self) -> float:
        """Switched / switchable words (the controlled quantity; ~``rate``)."""
        return self.n_switched / self.n_switchable if self.n_switchable else float("nan")

    @property
    def word_share(self) -> float:
        """Switched / all word tokens."""
        return self.n_switched / self.n_words if self.n_words else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (round-trips through :meth:`from_dict`)."""
        return json_ready({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CodeSwitched":
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}  # a saved file also names its kind and format
        for f in ("texts", "originals", "switched_per_text"):
            kw[f] = tuple(kw[f])
        kw["provenance"] = dict(kw.get("provenance") or {})
        return cls(**kw)


def _lookup(dictionary: "BilingualDictionary") -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for s, t in dictionary.pairs:
        key = s.strip().lower()
        if key and " " not in key:  # single-word entries only: we switch word tokens
            table.setdefault(key, []).append(t.strip())
    return table


def code_switch(
    texts: Sequence[str],
    dictionary: "BilingualDictionary",
    *,
    rate: float,
    seed: int,
    choice: Literal["first", "random"] = "first",
) -> CodeSwitched:
    """Switch each dictionary-covered word of ``texts`` with probability ``rate`` (seeded); see the module doc."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"rate must be a number in [0, 1], got {rate!r}")
    if choice not in ("first", "random"):
        raise ValueError(f"choice must be 'first' or 'random', got {choice!r}")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str")
    table = _lookup(dictionary)
    if not table:
        raise DatasetError(f"dictionary {dictionary.name!r} has no single-word entries to switch with")
    out, per_text = [], []
    n_words = n_switchable = n_switched = 0
    for t in texts:
        rng = np.random.default_rng([int(seed), text_seed(t)])  # this text's own draws (module docstring)
        pieces, last, k = [], 0, 0
        for m in _WORD.finditer(t):
            n_words += 1
            cands = table.get(m.group(0).lower())
            if cands is None:
                continue
            n_switchable += 1
            # one uniform draw per switchable word (and one more for the translation under choice="random"),
            # in the text's word order: the same seed and text give the same sentence
            if rng.random() < rate:
                repl = cands[0] if choice == "first" else cands[int(rng.integers(len(cands)))]
                pieces.append(t[last : m.start()])
                pieces.append(repl)
                last = m.end()
                k += 1
        pieces.append(t[last:])
        out.append("".join(pieces))
        per_text.append(k)
        n_switched += k
    return CodeSwitched(
        texts=tuple(out), originals=tuple(texts), rate=float(rate), seed=int(seed), n_words=n_words,
        n_switchable=n_switchable, n_switched=n_switched, switched_per_text=tuple(per_text),
        dictionary=dictionary.name, source_language=dictionary.source_language,
        target_language=dictionary.target_language, choice=choice,
        provenance={"dictionary_sha256": getattr(dictionary, "sha256", None), "dictionary_source": shareable_source(dictionary.source)},
    )


def code_switched_retrieval(
    corpus: "ParallelCorpus",
    dictionary: "BilingualDictionary",
    model: Any = None,
    *,
    rates: Sequence[float] = (0.0, 0.25, 0.5),
    seed: int = 0,
    switch_side: Literal["source", "target"] = "target",
    **kwargs: Any,
) -> pd.DataFrame:
    """Bitext retrieval of code-switched sentences at each rate: one row per (rate, direction).

    ``switch_side`` is the side of ``corpus`` written in the dictionary's source
    language (Tatoeba: English is the target side); it is code-switched and
    retrieved against the other side.  Further keyword arguments go to
    :func:`~semanscope_nb.metrics.retrieval.text_retrieval` (``n_boot``, ``cache``, ``ks`` ...).
    """
    from semanscope_nb.metrics.retrieval import text_retrieval

    if switch_side not in ("source", "target"):
        raise ValueError(f"switch_side must be 'source' or 'target', got {switch_side!r}")
    switch_texts = corpus.target_texts if switch_side == "target" else corpus.source_texts
    other = corpus.source_texts if switch_side == "target" else corpus.target_texts
    other_lang = corpus.source_language if switch_side == "target" else corpus.target_language
    frames = []
    for rate in rates:
        cs = code_switch(switch_texts, dictionary, rate=rate, seed=seed)
        cs_lang = f"{dictionary.source_language}-{dictionary.target_language}"
        r = text_retrieval(list(cs.texts), list(other), model, source_language=None, target_language=None,
                           name=f"{corpus.name}+cs", **kwargs)
        df = r.to_frame()
        df["direction"] = [f"{cs_lang}(cs)->{other_lang}", f"{other_lang}->{cs_lang}(cs)"][: len(df)]
        df.insert(0, "rate", rate)
        df.insert(1, "switch_share", cs.switch_share)
        df.insert(2, "word_share", cs.word_share)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def code_switched_classification(
    dictionary: "BilingualDictionary | None" = None,
    model: Any = None,
    *,
    language: str = "en",
    rates: Sequence[float] = (0.0, 0.25, 0.5),
    seed: int = 0,
    folder: Any = None,
    limit_train: int | None = None,
    limit_test: int | None = None,
    ks: Sequence[int] = (1, 5, 10),
    n_boot: int = 0,
    cache: Any = None,
) -> pd.DataFrame:
    """kNN topic classification on SIB-200: train on clean ``language`` sentences, test on code-switched ones.

    One row per (rate, k): accuracy, macro F1, and the shares actually switched.
    ``limit_train`` / ``limit_test`` draw that many rows at random (seeded by
    ``seed``), the same rows :func:`~semanscope_nb.metrics.classification.sib200_classification`
    draws for ``max_train`` / ``max_test`` (one helper:
    :func:`~semanscope_nb.data.bitext.limited_splits`; the files are sorted by
    topic, so their first rows are not a fair sample).  What was drawn is in
    ``frame.attrs["provenance"]["sample"]``.
    """
    from semanscope_nb.data.bitext import limited_splits, read_sib200
    from semanscope_nb.metrics.classification import knn_classification
    from semanscope_nb.models.embedding import embed_texts, load_encoder

    if dictionary is None:
        raise ValueError("dictionary is missing: e.g. read_muse_dictionary('en-de') or cedict_dictionary()")
    train = read_sib200(language, "train", folder=folder)
    test = read_sib200(language, "test", folder=folder)
    train, test, sample = limited_splits(train, test, max_train=limit_train, max_test=limit_test, seed=seed)
    tr_texts, tr_labels = list(train.texts), list(train.labels)
    te_texts, te_labels = list(test.texts), list(test.labels)
    enc = load_encoder(model, list(dict.fromkeys(tr_texts + te_texts)))
    X_tr = embed_texts(enc, tr_texts, language=language, cache=cache)
    rows = []
    for rate in rates:
        cs = code_switch(te_texts, dictionary, rate=rate, seed=seed)
        X_te = embed_texts(enc, list(cs.texts), language=None, cache=cache)
        r = knn_classification(X_tr, tr_labels, X_te, te_labels, ks=ks, n_boot=n_boot, seed=seed, logistic=False,
                               train_language=language, test_language=f"{language}-{dictionary.target_language}(cs)")
        for k in r.ks:
            rows.append({"model": enc.model_id, "rate": rate, "switch_share": cs.switch_share, "word_share": cs.word_share,
                         "k": k, "accuracy": r.accuracy[k], "macro_f1": r.macro_f1[k]})
    frame = pd.DataFrame(rows)
    frame.attrs["provenance"] = {"sample": sample, "seed": seed, "language": language,
                                 "dictionary": f"{dictionary.source_language}-{dictionary.target_language}"}
    return frame
