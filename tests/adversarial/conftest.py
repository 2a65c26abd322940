"""Fixtures for the hostile agent: a temp home, the real paper exchange on loopback, and an injected clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pilot.app.runtime import Runtime
from pilot.exchange.sim import start_paper_exchange
from tests.app.conftest import FakeClock, open_test_runtime, write_policy

CREATE = "/v5/order/create"
# Each plan below is worth about $10 at its worst fill; the policy caps a position at $25.
TEN_DOLLARS_OF_BTC = {"symbol": "BTCUSDT", "side": "buy", "notional_usd": "10"}
BTC_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}
CONFIRM_EVERY_ORDER = {"confirm": {"aboveNotionalUsd": 1, "actions": []}}
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paper() -> Any:
    with start_paper_exchange() as exchange:
        yield exchange


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
async def runtime(tmp_path: Path, paper: Any, clock: FakeClock) -> AsyncIterator[Runtime]:
    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, paper, clock) as opened:
        yield opened


__all__ = ["BTC_SHORT", "CONFIRM_EVERY_ORDER", "CREATE", "MODES", "TEN_DOLLARS_OF_BTC", "write_policy"]
