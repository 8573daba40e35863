from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))  # for tests/reference.py

from semanscope_nb.data.catalog import shared_data_dir  # noqa: E402
from semanscope_nb.models.encoders import Encoder  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own default cache unless it asks for the shared one."""
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory) -> Path:
    """One cache for the whole session, so real models embed each word once."""
    return tmp_path_factory.mktemp("shared-cache")


@pytest.fixture(scope="session")
def paper_dir() -> Path:
    d = shared_data_dir() / "semanscope"
    if not d.is_dir():
        pytest.skip(f"paper datasets not found at {d} (set SEMANSCOPE_SHARED_DATA)")
    return d


class DictEncoder(Encoder):
    """Plumbing fake: fixed vectors per text, counting calls (unit tests only)."""

    model_id = "dict-fake"

    def __init__(self, table: dict[str, list[float]], version: str = "1") -> None:
        super().__init__()
        self.table = table
        self._version = version

    @property
    def version(self) -> str:
        return self._version

    def _encode(self, texts):
        return np.array([self.table[t] for t in texts], dtype=np.float64)


@pytest.fixture
def dict_encoder():
    return DictEncoder


# --------------------------------------------------------------------------- the fast tier
# `pytest -m "not slow"` must run no real model and no notebook. A test that loads model weights or executes a
# notebook without the `slow` mark fails here, naming what it loaded (SEMANSCOPE_TIER_REPORT=<file> lists instead).

def _real_encoder_classes() -> list[type]:
    from semanscope_nb.models import encoders, tokens

    return [encoders.USEEncoder, encoders.E5Encoder, encoders.WordLlamaEncoder, encoders.SentenceTransformerEncoder,
            tokens.E5TokenEncoder, tokens.TransformersTokenEncoder]


_HEAVY: list[str] = []  # what the running test (its fixtures included) loaded


@pytest.fixture(scope="session", autouse=True)
def _record_heavy_work():
    """Record every model-weight load and notebook run, whichever fixture or test causes it."""
    import nbclient

    with pytest.MonkeyPatch.context() as mp:
        for cls in _real_encoder_classes():
            original = cls.__dict__.get("_load")
            if original is None:
                continue

            def load(self, _original=original, _name=cls.__name__):
                _HEAVY.append(f"model weights ({_name})")
                return _original(self)

            mp.setattr(cls, "_load", load)
        execute = nbclient.NotebookClient.execute

        def run_notebook(self, *a, **kw):
            _HEAVY.append("a notebook")
            return execute(self, *a, **kw)

        mp.setattr(nbclient.NotebookClient, "execute", run_notebook)
        yield


def pytest_runtest_setup(item):
    _HEAVY.clear()


def pytest_runtest_teardown(item, nextitem):
    if not _HEAVY or item.get_closest_marker("slow") or item.get_closest_marker("browser"):
        return
    what = ", ".join(sorted(set(_HEAVY)))
    _HEAVY.clear()
    report = os.environ.get("SEMANSCOPE_TIER_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as fh:
            fh.write(f"{item.nodeid}\t{what}\n")
    else:
        pytest.fail(f"{item.nodeid} loads {what}: mark it @pytest.mark.slow (the fast tier runs no real model)", pytrace=False)
