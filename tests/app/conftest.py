"""Fixtures for use-case and MCP tests: a temp home, the real paper exchange on loopback, an injected clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pilot.app.runtime import Home, Runtime
from pilot.exchange.bybit import BybitExchange
from pilot.exchange.sim import PaperExchange, start_paper_exchange
from pilot.server import build_server
from pilot.store import open_store

POLICY: dict[str, Any] = {
    "allowedMarkets": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
    "maxNotionalUsd": 25,
    "maxOrderNotionalUsd": 25,
    "maxLeverage": 3,
    "minLiquidationDistancePct": 20,
    "dailyOrderCap": 20,
    "maxSlippagePct": 0.5,
    "planTtlSeconds": 60,
}


@dataclass
class FakeClock:
    """A clock the test moves by hand (no sleeps)."""

    moment: datetime

    def now(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


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


def write_policy(home: Path, **changes: Any) -> None:
    (home / "policy.json").write_text(json.dumps({**POLICY, **changes}, indent=2))


@pytest.fixture
async def runtime(tmp_path: Path, paper: PaperExchange, clock: FakeClock) -> AsyncIterator[Runtime]:
    write_policy(tmp_path)
    adapter = BybitExchange.connect(
        "paper", api_key=paper.api_key, api_secret=paper.api_secret, base_url=paper.url
    )
    store = await open_store(Home(tmp_path).database_path)
    try:
        yield Runtime(home=Home(tmp_path), store=store, exchange=adapter, clock=clock)
    finally:
        await store.close()
        await adapter.close()


@pytest.fixture
def server(runtime: Runtime) -> Any:
    return build_server(runtime)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content
