"""Shared fixtures for the key tests: a home folder and a master key file outside it, both in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def master_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "pilot" / "master.key"
    monkeypatch.setenv("PILOT_MASTER_KEY_FILE", str(path))
    return path
