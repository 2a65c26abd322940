from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilot.store import Store, open_store


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "pilot.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    async with await open_store(db_path) as opened:
        yield opened
