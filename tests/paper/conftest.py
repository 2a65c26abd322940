"""Moving paper markets for the tests: the packaged default scenario (Bybit's real filters) with paths put in.

Every exchange here runs at speed 0 unless a test says otherwise: its market stands still until the test
advances it (`paper.advance(ms)`), so prices, fills and funding depend only on what the test does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from pilot.paper import PaperExchange, start_paper_exchange
from pilot.paper.scenario import scenario_document

HOURLY_TAPE = (
    "bybit-btcusdt-1h-2024-01-30.json"  # ccxt's recorded BTCUSDT 1h klines (its `source` says where)
)
CRASH_TAPE = "bybit-testnet-btcusdt-mark-1d-2022-11.json"
HOUR_MS = 3_600_000


def world(prices: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """The default scenario with some symbols' prices replaced and top-level fields set."""
    document = copy.deepcopy(scenario_document())
    document["prices"].update(copy.deepcopy(prices or {}))
    document.update(top)
    return document


def with_funding(document: dict[str, Any], rate: str, interval_min: int = 480) -> dict[str, Any]:
    for instrument in document["instruments"]:
        if instrument["category"] == "linear":
            instrument["fundingRate"], instrument["fundingInterval"] = rate, interval_min
    return document


def walk(seed: int = 7, start: str = "80000", **extra: Any) -> dict[str, Any]:
    """BTC-like: 1% an hour, a step a second."""
    return {
        "walk": {
            "start": start,
            "volatilityPct": "1",
            "perMs": HOUR_MS,
            "stepMs": 1000,
            "seed": seed,
            **extra,
        }
    }


def tape(file: str = HOURLY_TAPE, **extra: Any) -> dict[str, Any]:
    return {"tape": {"file": file, **extra}}


def still(document: dict[str, Any], **options: Any) -> PaperExchange:
    """A paper exchange on `document` whose market moves only when advanced."""
    return start_paper_exchange(document, speed=0, **options)


def tape_rows(file: str) -> list[list[str]]:
    """A packaged tape's rows, oldest first, read straight from its file."""
    from importlib import resources

    text = resources.files("pilot.paper").joinpath("tapes", file).read_text()
    return sorted(json.loads(text)["list"], key=lambda row: int(row[0]))


def bar_points(row: list[str]) -> list[Decimal]:
    """What a replay visits in one kline: open, the extreme against the close's direction, the other, close."""
    open_, high, low, close = (Decimal(value) for value in row[1:5])
    return [open_, low, high, close] if close >= open_ else [open_, high, low, close]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hourly() -> Iterator[PaperExchange]:
    """BTCUSDT replays the hourly tape at its own pace (a point every 15 minutes), funding off."""
    with still(world({"BTCUSDT": tape()})) as paper:
        yield paper
