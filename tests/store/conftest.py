from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilot.store import Store, open_store
from tests.clocks import FakeClock

from .support import T0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "pilot.db"


@pytest.fixture
def ticks() -> FakeClock:
    """The store's clock, standing still until a test advances it."""
    return FakeClock(T0)


@pytest.fixture
async def store(db_path: Path, ticks: FakeClock) -> AsyncIterator[Store]:
    async with await open_store(db_path, clock=ticks) as opened:
        yield opened
