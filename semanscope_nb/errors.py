"""Every exception and warning semanscope_nb raises on purpose: one type per kind of mistake.

Each message names the file, row, column or argument at fault.

=========================  ==========================================================
type                       raised when
=========================  ==========================================================
``ArgumentError``          an argument has a bad value or type (names the argument)
``UnknownNameError``       a name is not registered: model, dataset, task, language,
                           preset, result kind (lists the known names, closest first)
``DatasetError``           a data file or table is malformed (file, line, column)
``EmbeddingError``         vectors are unusable: NaN/inf, zero, mixed dimensions
``ModelLoadError``         a registered model cannot be loaded (extra, hub, folder)
``ApiModelError``          an HTTP embedding endpoint refused or failed
``CacheError``             the embedding cache folder cannot be used
``UnsupportedLanguageError``  a method has no rule for a language (CSC negation in zh)
``GridBackendError``       a grid's execution backend cannot be used
``Cancelled``              work stopped on request (Cancel pressed, a newer change)
=========================  ==========================================================

Warnings: ``CacheWarning`` (damage rebuilt, vectors not stored),
``JobFileWarning`` (a damaged job file recomputed), ``LanguageSupportWarning``
(a model scored on a language it does not list); all are ``SemanscopeWarning``.

Every error is a ``SemanscopeError`` and also the built-in type a caller would
expect (``ValueError`` for bad values, ``KeyError`` for unknown names, ``OSError``
for the cache), so ``except ValueError`` keeps working.

Example
-------
>>> import semanscope_nb as snb
>>> try:
...     snb.load_model("use-multilingul")
... except snb.UnknownNameError as e:
...     "use-multilingual" in str(e)
True
"""

from __future__ import annotations


class SemanscopeError(Exception):
    """Base class of every error this package raises on purpose."""


class ArgumentError(SemanscopeError, ValueError):
    """An argument has a bad value or type (the message names the argument)."""


class UnknownNameError(SemanscopeError, KeyError, ValueError):
    """A name is not registered (model, dataset, task, language, preset); the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ""


#: the unknown-model case of :class:`UnknownNameError` (kept under its old name)
UnknownModelError = UnknownNameError


class DatasetError(SemanscopeError, ValueError):
    """A dataset file or table is malformed (the message names file, line and column)."""


class EmbeddingError(SemanscopeError, ValueError):
    """Embeddings are unusable: NaN/inf, zero vectors, mixed dimensions, misaligned rows."""


class ModelLoadError(SemanscopeError, RuntimeError):
    """A registered model could not be loaded (missing extra, no hub access, bad folder)."""


class ApiModelError(SemanscopeError, RuntimeError):
    """An HTTP embedding endpoint failed for good (bad key, unknown model, retries exhausted)."""


class CacheError(SemanscopeError, OSError):
    """The embedding cache folder cannot be used (the message names the folder)."""


class UnsupportedLanguageError(SemanscopeError, ValueError):
    """A method has no rule for this language (the message says why and what would work)."""


class GridBackendError(SemanscopeError, RuntimeError):
    """The execution backend cannot be used (unreachable scheduler, bad backend options)."""


class Cancelled(SemanscopeError):
    """Work stopped on request: Cancel was pressed, or a newer change superseded it (not a failure).

    Raised between embedding batches, bootstrap batches and while a projection
    runs in its worker process, by whoever checks a ``should_stop`` callable
    (see :mod:`semanscope_nb.models.cancel`).
    """


class SemanscopeWarning(UserWarning):
    """Base class of this package's warnings."""


class CacheWarning(SemanscopeWarning):
    """The cache found damage it is rebuilding, or cannot store new vectors (read-only, disk full)."""


class JobFileWarning(SemanscopeWarning):
    """A job file in ``results/runs/`` is damaged, truncated or not its job's; the job is computed again."""


class LanguageSupportWarning(SemanscopeWarning):
    """A model is scored on a language its registry entry does not list."""


__all__ = [
    "ApiModelError", "ArgumentError", "CacheError", "CacheWarning", "Cancelled", "DatasetError", "EmbeddingError",
    "GridBackendError", "JobFileWarning", "LanguageSupportWarning", "ModelLoadError", "SemanscopeError",
    "SemanscopeWarning", "UnknownModelError", "UnknownNameError", "UnsupportedLanguageError",
]
