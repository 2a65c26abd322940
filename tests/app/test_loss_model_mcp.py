"""Issue 36 through a real MCP client on the paper exchange: one loss model for spot and linear.

Each figure the tests check is worked out here from the world's numbers (the oracle), not read back from Pilot:
the loss of a position at its stops is what it cost, taker fee in, less what its stops sell it for, fee out;
on spot the coin no stop sells can fall to zero.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client

from pilot.server import build_server

from .conftest import call, write_policy

pytestmark = pytest.mark.anyio
FEE = Decimal("0.00055")  # Bybit's taker fee, both ways


def loss_at(qty: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    """A long of `qty` bought at `entry` sold at `stop`: the loss, taker fees both ways."""
    return qty * (entry - stop) + qty * FEE * (entry + stop)


async def test_a_spot_buy_under_the_loss_cap_passes_only_with_a_stop_and_the_stop_sells_on_the_way_down(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxLossPerTradeUsd=5, maxNotionalUsd=1000, maxOrderNotionalUsd=1000)
    buy = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.1", "category": "spot"}
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", buy)
        print(refused["violations"], refused["next_safe_action"])
        fix = refused["next_safe_action"]
        planned = await call(client, "plan_order", fix["args"])
        print(planned["status"], planned["order"])
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        print(placed)
        print(await call(client, "get_open_orders", {"symbol": "ETHUSDT", "category": "spot"}))
        print(await call(client, "get_balances", {}))
        again = await call(client, "plan_order", {**buy, "qty": "0.01"})
        print("again", again["violations"], again["next_safe_action"])
        stop = Decimal(fix["args"]["stop_loss"])
        paper.set_prices("ETHUSDT", bid=stop - 5, ask=stop - Decimal("4.99"), mark=stop - 5)
        print(await call(client, "get_open_orders", {"symbol": "ETHUSDT", "category": "spot"}))
        print(await call(client, "get_balances", {}))
