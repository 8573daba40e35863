"""One settings object, as ``scanpy.settings``: the defaults every function falls back to.

Layer: shared (imported by every layer).

Each setting is read from its environment variable when it is used (so a test
or a notebook that sets ``SEMANSCOPE_CACHE`` is obeyed at once), unless it was
assigned in Python, which wins until :meth:`Settings.reset`.

========================  ==========================  =========================================
setting                   environment variable        default
========================  ==========================  =========================================
``default_model``         ``SEMANSCOPE_MODEL``        ``"use-multilingual"``
``n_boot``                ``SEMANSCOPE_N_BOOT``       1000 bootstrap resamples
``seed``                  ``SEMANSCOPE_SEED``         0
``n_jobs``                ``SEMANSCOPE_N_JOBS``       1 (grids: worker processes)
``cache_dir``             ``SEMANSCOPE_CACHE``        the user cache folder (platformdirs)
``results_dir``           ``SEMANSCOPE_RESULTS``      ``./results``
``figures_dir``           ``SEMANSCOPE_FIGURES``      ``./figures``
``data_dir``              ``SEMANSCOPE_DATA``         the project's ``data/`` folder
``shared_data_dir``       ``SEMANSCOPE_SHARED_DATA``  ``../shared/data`` beside the checkout
``absolute_paths``        ``SEMANSCOPE_ABSOLUTE_PATHS`` False: results name data files relative to
                                                      their data folder (or by file name); True
                                                      keeps absolute paths (results not to share)
``surface_store``         ``SEMANSCOPE_SURFACE_STORE`` True: the surface baseline's bootstrap
                                                      statistics are also kept on disk under
                                                      ``cache_dir`` (False: in memory only)
========================  ==========================  =========================================

Notebooks call :func:`enter_notebook_folder` first in their ``parameters`` cell, so that their
relative paths mean the same under papermill or nbclient as in JupyterLab.

Example
-------
>>> from semanscope_nb.settings import settings
>>> settings.n_boot
1000
>>> settings.n_boot = 200; settings.n_boot
200
>>> settings.reset(); settings.n_boot
1000
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable

from semanscope_nb.errors import ArgumentError

_PACKAGE_DIR = Path(__file__).resolve().parent


def _user_cache() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("semanscope_nb"))


def _positive_int(name: str, value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"settings.{name} must be a positive integer, got {value!r}") from None
    if n < 1 or (isinstance(value, float) and value != n):
        raise ArgumentError(f"settings.{name} must be a positive integer, got {value!r}")
    return n


def _int(name: str, value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"settings.{name} must be an integer, got {value!r}") from None
    if n < 0:
        raise ArgumentError(f"settings.{name} must be >= 0, got {value!r}")
    return n


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(f"settings.{name} must be a non-empty string, got {value!r}")
    return value.strip()


def _path(name: str, value: Any) -> Path:
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ArgumentError(f"settings.{name} must be a folder path, got {value!r}")
    return Path(value).expanduser()


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ArgumentError(f"settings.{name} must be true or false (1/0, yes/no), got {value!r}")


#: name -> (environment variable, converter, default factory)
_SPEC: dict[str, tuple[str, Callable[[str, Any], Any], Callable[[], Any]]] = {
    "default_model": ("SEMANSCOPE_MODEL", _text, lambda: "use-multilingual"),
    "n_boot": ("SEMANSCOPE_N_BOOT", _int, lambda: 1000),
    "seed": ("SEMANSCOPE_SEED", _int, lambda: 0),
    "n_jobs": ("SEMANSCOPE_N_JOBS", _positive_int, lambda: 1),
    "cache_dir": ("SEMANSCOPE_CACHE", _path, _user_cache),
    "results_dir": ("SEMANSCOPE_RESULTS", _path, lambda: Path("results")),
    "figures_dir": ("SEMANSCOPE_FIGURES", _path, lambda: Path("figures")),
    "data_dir": ("SEMANSCOPE_DATA", _path, lambda: _PACKAGE_DIR.parent / "data"),
    "shared_data_dir": ("SEMANSCOPE_SHARED_DATA", _path, lambda: _PACKAGE_DIR.parents[1] / "shared" / "data"),
    "absolute_paths": ("SEMANSCOPE_ABSOLUTE_PATHS", _bool, lambda: False),
    "surface_store": ("SEMANSCOPE_SURFACE_STORE", _bool, lambda: True),
}


class Settings:
    """Package-wide defaults; see the module docstring for each setting and its variable."""

    __slots__ = ("_overrides", "_lock")

    def __init__(self) -> None:
        object.__setattr__(self, "_overrides", {})
        object.__setattr__(self, "_lock", threading.Lock())

    def __getattr__(self, name: str) -> Any:
        spec = _SPEC.get(name)
        if spec is None:
            raise AttributeError(f"settings has no {name!r}; known: {', '.join(_SPEC)}")
        with self._lock:
            if name in self._overrides:
                return self._overrides[name]
        env, convert, default = spec
        raw = os.environ.get(env, "").strip()
        if raw:
            try:
                return convert(name, raw)
            except ArgumentError as exc:
                raise ArgumentError(f"{exc} (from the environment variable {env})") from None
        return default()

    def __setattr__(self, name: str, value: Any) -> None:
        spec = _SPEC.get(name)
        if spec is None:
            raise AttributeError(f"settings has no {name!r}; known: {', '.join(_SPEC)}")
        converted = spec[1](name, value)
        with self._lock:
            self._overrides[name] = converted

    def reset(self, *names: str) -> None:
        """Forget the values assigned in Python (all, or the ones named): back to environment / defaults."""
        with self._lock:
            for n in names or list(self._overrides):
                self._overrides.pop(n, None)

    def as_dict(self) -> dict[str, Any]:
        """Every setting's current value."""
        return {n: getattr(self, n) for n in _SPEC}

    def __dir__(self) -> list[str]:
        return sorted(_SPEC) + ["as_dict", "reset"]

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


settings = Settings()


def resolve(value: Any, name: str) -> Any:
    """``value`` unless it is None, else the setting ``name`` (the one rule for a default argument).

    >>> resolve(None, "seed"), resolve(7, "seed")
    (0, 7)
    """
    return getattr(settings, name) if value is None else value


def enter_notebook_folder(notebook: str) -> Path:
    """Make the folder holding ``notebook`` the working directory, so relative paths resolve against the notebook.

    JupyterLab starts a kernel in its notebook's folder; papermill and nbclient
    start it wherever they run.  Each notebook calls this first in its
    ``parameters`` cell, so a path parameter (a default such as ``"../figures"``
    or papermill's ``-p FIGURES_DIR out/figs``) means the same from any working
    directory.  The folder is the first of these that holds a file named
    ``notebook``: ``SEMANSCOPE_NOTEBOOK_DIR``, the working directory, the
    project's ``notebooks/`` folder (beside this package in a checkout).
    Returns the folder.  (The kernel cannot see which file papermill reads: run a
    copy kept elsewhere with ``--cwd <its folder>`` or ``SEMANSCOPE_NOTEBOOK_DIR``.)

    >>> import tempfile
    >>> here, folder = os.getcwd(), Path(tempfile.mkdtemp())
    >>> _ = (folder / "demo.ipynb").write_text("{}")
    >>> os.environ["SEMANSCOPE_NOTEBOOK_DIR"] = str(folder)
    >>> enter_notebook_folder("demo.ipynb") == folder.resolve() == Path.cwd().resolve()
    True
    >>> os.chdir(here); del os.environ["SEMANSCOPE_NOTEBOOK_DIR"]
    >>> enter_notebook_folder("no-such.ipynb")
    Traceback (most recent call last):
    ...
    semanscope_nb.errors.ArgumentError: no folder holds the notebook 'no-such.ipynb' ...
    """
    if not isinstance(notebook, str) or not notebook.strip() or Path(notebook).name != notebook:
        raise ArgumentError(f"notebook must be a file name such as '00-quickstart.ipynb', got {notebook!r}")
    env = os.environ.get("SEMANSCOPE_NOTEBOOK_DIR", "").strip()
    candidates = ([Path(env).expanduser()] if env else []) + [Path.cwd(), _PACKAGE_DIR.parent / "notebooks"]
    for folder in candidates:
        if (folder / notebook).is_file():
            folder = folder.resolve()
            if Path.cwd().resolve() != folder:
                os.chdir(folder)
            return folder
    raise ArgumentError(f"no folder holds the notebook {notebook!r} (looked in {', '.join(str(c) for c in candidates)}); "
                        "set SEMANSCOPE_NOTEBOOK_DIR to its folder, or run papermill with --cwd <its folder>")
