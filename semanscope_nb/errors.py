"""Exceptions raised by semanscope_nb: each names the file, row, column or argument at fault.

Example
-------
>>> import semanscope_nb as snb
>>> try:
...     snb.load_model("use-multilingul")
... except snb.UnknownModelError as e:
...     "use-multilingual" in str(e)
True
"""

from __future__ import annotations


class SemanscopeError(Exception):
    """Base class of every error this package raises on purpose."""


class DatasetError(SemanscopeError, ValueError):
    """A dataset file or table is malformed (the message names file, line and column)."""


class EmbeddingError(SemanscopeError, ValueError):
    """Embeddings are unusable: NaN/inf, zero vectors, mixed dimensions, misaligned rows."""


class UnknownModelError(SemanscopeError, KeyError):
    """A model id is not in the registry (the message lists known ids and the closest match)."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ""


class ModelLoadError(SemanscopeError, RuntimeError):
    """A registered model could not be loaded (missing extra, no hub access, bad folder)."""


class CacheError(SemanscopeError, OSError):
    """The embedding cache folder cannot be used (the message names the folder)."""
