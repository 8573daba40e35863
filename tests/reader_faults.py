"""Helpers of the reader fault tests (tests/test_faults_readers.py, tests/test_faults_reader_audit8.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semanscope_nb.errors import DatasetError


def write_file(path: Path, text: str | bytes) -> Path:
    """``text`` (UTF-8 when a str, else the bytes as given) written to ``path``."""
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def fails_with(call, *parts: str) -> str:
    """Run ``call``; it must raise DatasetError whose message holds every one of ``parts``."""
    with pytest.raises(DatasetError) as err:
        call()
    msg = str(err.value)
    missing = [p for p in parts if p not in msg]
    assert not missing, f"{missing} not in: {msg}"
    return msg
