"""Aligned models: a base encoder followed by a language-specific linear map into a shared space.

Layer: models.  Imports the encoder base class and the registry beside it; the maps
themselves are fitted in :mod:`semanscope_nb.metrics.alignment`.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> en = rng.normal(size=(40, 6)); R = np.linalg.qr(rng.normal(size=(6, 6)))[0]
>>> a = snb.fit_alignment(en, en @ R, source_language="en", target_language="de", normalize=False, center=False)
>>> np.allclose(a.transform(en, "en"), en @ R)   # the rotation is recovered exactly
True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from semanscope_nb.errors import EmbeddingError
from semanscope_nb.models.encoders import Encoder

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.registry import ModelInfo


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
        """Source-language vectors in the shared space (an all-zero vector stays zero, see :meth:`_keep_zero`)."""
        out = self._prep(X, self.source_mean, "source vectors") @ self.W
        return self._keep_zero(X, out @ self.mim_source if self.mim_source is not None else out)

    def map_target(self, Y: Any) -> np.ndarray:
        """Target-language vectors in the shared space (preprocessed the same way, not rotated; zero stays zero)."""
        out = self._prep(Y, self.target_mean, "target vectors")
        return self._keep_zero(Y, out @ self.mim_target if self.mim_target is not None else out)

    @staticmethod
    def _keep_zero(X: Any, out: np.ndarray) -> np.ndarray:
        """``out`` with the rows whose input is all zeros set back to zero.

        A zero vector is the base model saying "no vector" (an out-of-vocabulary word); every statistic drops or
        refuses it.  Centring would turn it into minus the mean -- one spurious vector shared by every such word --
        so the aligned model keeps it zero and its unknown words are dropped exactly as the base model's are.
        """
        zero = ~np.any(np.asarray(X) != 0, axis=1)
        if zero.any():
            out[zero] = 0.0
        return out

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




class AlignedEncoder(Encoder):
    """A base model followed by a language-specific map into a shared space (language-dependent).

    ``vector_tolerance`` None: the base model's, stretched by the map (not computed).
    """

    language_dependent = True
    vector_tolerance = None

    def __init__(self, base: str | Encoder, alignment: Alignment, *, model_id: str, dictionary: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        from semanscope_nb.models.registry import load_model

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

    def unknown_token_words(self, texts: Sequence[str]) -> list[bool] | None:
        """The base model's answer: the aligned model reads texts with the base model's tokenizer, so a word that is
        unknown tokens only there is the same nothing after the map (the verdict excludes its concept alike)."""
        return self.base.unknown_token_words(texts)

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
        from semanscope_nb.models.registry import load_model

        return load_model(self.model_id)  # type: ignore[return-value]

