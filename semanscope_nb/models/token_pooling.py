"""Token vectors to word vectors: the result type, the layer choice and subword pooling (paper 001: average
the hidden layers of each subword, then the word's subwords).

Layer: models.

>>> resolve_layers("mean", 12)
(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from semanscope_nb.models.encoders import check_text_characters
from semanscope_nb.models.word_spans import Span

NOT_IN_TEXT: Span = (-1, -1)  # offsets of positions that come from no character of the text (<s>, </s>, prefix)


# ------------------------------------------------------------------------------------------------
# result
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TokenEmbeddings:
    """One text's token (``pooling="token"``) or word (``pooling="word"``) vectors.

    ``tokens[i]`` is the subword piece or the word ``text[start:end]``; ``offsets[i] = (start, end)``
    indexes ``text`` (``(-1, -1)`` for special and prefix positions, kept only with ``special_tokens=True``);
    ``vectors`` is float32 (n, dims); ``n_subwords[i]`` counts the subwords averaged into row i (1 for
    tokens; a word no subword overlaps has 0 and a NaN row); ``layers`` are the hidden-state indices
    averaged (0 = embedding output).
    """

    text: str
    tokens: tuple[str, ...]
    offsets: np.ndarray
    vectors: np.ndarray
    n_subwords: np.ndarray
    layers: tuple[int, ...]
    pooling: str
    model_id: str

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def spans(self) -> list[Span]:
        """``offsets`` as a list of ``(start, end)`` tuples."""
        return [(int(a), int(b)) for a, b in self.offsets]

    def to_frame(self):
        """A pandas table: token, start, end, n_subwords (vectors left out)."""
        import pandas as pd

        return pd.DataFrame({"token": list(self.tokens), "start": self.offsets[:, 0], "end": self.offsets[:, 1],
                             "n_subwords": self.n_subwords})



# ------------------------------------------------------------------------------------------------
# argument checks
# ------------------------------------------------------------------------------------------------
def resolve_layers(layers: str | int | Iterable[int], n_layers: int) -> tuple[int, ...]:
    """Hidden-state indices for a layer choice: 0 = embedding output, ``n_layers`` = last.

    ``"mean"`` -> 1..n (the paper's mean of the transformer layers), ``"last"`` -> n, an int (negative
    counts from the end, -1 = last) or a list of ints.

    >>> resolve_layers("mean", 6), resolve_layers(-2, 6), resolve_layers([0, -1], 6)
    ((1, 2, 3, 4, 5, 6), (5,), (0, 6))
    """
    top = n_layers

    def one(v: Any) -> int:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"layers must be 'mean', 'last', an int or a list of ints, got {v!r}")
        i = int(v)
        if not -(top + 1) <= i <= top:
            raise ValueError(f"layers={i} is out of range: this model has hidden states 0..{top} "
                             f"(0 = embedding output, {top} = last; negative counts from the end)")
        return i % (top + 1)

    if isinstance(layers, str):
        if layers == "mean":
            return tuple(range(1, top + 1))
        if layers == "last":
            return (top,)
        raise ValueError(f"layers must be 'mean', 'last', an int or a list of ints, got {layers!r}")
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, (bool, np.bool_)):
        return (one(layers),)
    try:
        chosen = tuple(one(v) for v in layers)
    except TypeError:
        raise ValueError(f"layers must be 'mean', 'last', an int or a list of ints, got {layers!r}") from None
    if not chosen:
        raise ValueError("layers is an empty list: name at least one layer")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"layers lists a layer twice: {list(layers)}")
    return chosen


def check_token_texts(texts: Any, *, who: str = "encoder") -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not one str: wrap it as [text]")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}") from None
    if not texts:
        raise ValueError("texts is empty: pass at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
    check_text_characters(texts, who=who)  # the rule of Encoder.encode: no control characters
    return texts


def check_spans(spans: Any, texts: list[str]) -> list[list[Span]]:
    if isinstance(spans, (str, bytes)) or not hasattr(spans, "__len__"):
        raise ValueError("spans must be one list of (start, end) pairs per text")
    if len(spans) != len(texts):
        raise ValueError(f"spans has {len(spans)} lists for {len(texts)} texts: give one list of (start, end) per text")
    out = []
    for i, (text, row) in enumerate(zip(texts, spans)):
        checked = []
        for j, pair in enumerate(row):
            try:
                s, e = pair
                ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (s, e))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"spans[{i}][{j}] must be a pair of ints (start, end), got {pair!r}")
            s, e = int(s), int(e)
            if not 0 <= s < e <= len(text):
                raise ValueError(f"spans[{i}][{j}] = ({s}, {e}) is out of range for texts[{i}] "
                                 f"(need 0 <= start < end <= {len(text)})")
            checked.append((s, e))
        out.append(checked)
    return out


def pool_words(offsets: np.ndarray, states: np.ndarray, words: list[Span]) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the subword rows overlapping each word span (a subword shared by two words counts in both).

    Subwords in text order (starts and ends non-decreasing, as tokenizers give them) make each word's
    subwords one contiguous run: two binary searches and a float64 running sum, O(tokens + words) memory.
    Otherwise an overlap matrix is built in blocks of 256 words.
    """
    dims = states.shape[1]
    if not words:
        return np.zeros((0, dims)), np.zeros(0, dtype=np.int64)
    w = np.asarray(words, dtype=np.int64).reshape(-1, 2)
    valid = offsets[:, 1] > offsets[:, 0]  # drops <s>, </s>, prefix pieces and empty spans
    ts, te, st = offsets[valid, 0], offsets[valid, 1], states[valid]
    if (np.diff(ts) >= 0).all() and (np.diff(te) >= 0).all():
        lo = np.searchsorted(te, w[:, 0], side="right")  # first subword ending after the word starts
        hi = np.searchsorted(ts, w[:, 1], side="left")  # subwords starting before the word ends
        counts = np.maximum(hi - lo, 0)
        csum = np.zeros((len(st) + 1, dims))
        np.cumsum(st, axis=0, out=csum[1:])
        with np.errstate(invalid="ignore", divide="ignore"):
            vec = (csum[np.maximum(hi, lo)] - csum[lo]) / counts[:, None]
        return vec, counts.astype(np.int64)
    vec, counts = np.empty((len(w), dims)), np.empty(len(w), dtype=np.int64)
    for a in range(0, len(w), 256):
        b = w[a:a + 256]
        member = (ts[None, :] < b[:, 1:2]) & (te[None, :] > b[:, 0:1])
        counts[a:a + 256] = member.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            vec[a:a + 256] = (member.astype(np.float64) @ st) / counts[a:a + 256, None]
    return vec, counts
