"""Fixtures for the hostile agent: a temp home, the real paper exchange on loopback, and an injected clock."""

from __future__ import annotations

import pytest

# The same fixtures as the use-case tests: a temp home, the paper exchange, an injected clock.
from tests.app.conftest import anyio_backend, clock, paper, runtime, write_policy

CREATE = "/v5/order/create"
# Each plan below is worth about $10 at its worst fill; the policy caps a position at $25.
TEN_DOLLARS_OF_BTC = {"symbol": "BTCUSDT", "side": "buy", "notional_usd": "10"}
BTC_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}
CONFIRM_EVERY_ORDER = {"confirm": {"aboveNotionalUsd": 1, "actions": []}}
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


__all__ = [
    "BTC_SHORT",
    "CONFIRM_EVERY_ORDER",
    "CREATE",
    "MODES",
    "TEN_DOLLARS_OF_BTC",
    "anyio_backend",
    "clock",
    "paper",
    "runtime",
    "write_policy",
]
