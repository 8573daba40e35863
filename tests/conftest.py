from __future__ import annotations

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
