"""What an agent reads of a position and of where it would be liquidated says which number is which: the
exchange's leverage setting apart from the multiple of equity policy.json's maxLeverage caps, and a
liquidation as a price and its distance from the mark. Through a real MCP client on the paper exchange,
which starts with a 0.0003 BTC short at the exchange's leverage 10."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from mcp import Client

from pilot.core.valuation import Liquidation
from pilot.paper import start_paper_exchange
from tests.scenarios import TEST_POLICY, article_scenario

from .conftest import call

pytestmark = pytest.mark.anyio


@pytest.fixture
def paper() -> Any:
    scenario = article_scenario()
    scenario["positions"] = [
        {"symbol": "BTCUSDT", "side": "Sell", "size": "0.0003", "avgPrice": "80220", "leverage": "10"}
    ]
    with start_paper_exchange(scenario) as exchange:
        yield exchange


async def test_get_positions_tells_the_exchanges_leverage_from_the_multiple_the_policy_caps(server):
    async with Client(server, raise_exceptions=True) as client:
        [row] = (await call(client, "get_positions", {"symbol": "BTCUSDT"}))["data"]
        equity = Decimal((await call(client, "get_balances"))["data"]["total_equity_usd"])
    assert "leverage" not in row
    assert row["exchange_leverage"] == "10"
    assert Decimal(row["policy_max_leverage"]) == TEST_POLICY["maxLeverage"]
    on_equity = Decimal(row["position_value"]) / equity
    assert abs(Decimal(row["leverage_on_equity"]) - on_equity) <= Decimal("0.005")
    assert Decimal(row["leverage_on_equity"]) < Decimal(row["policy_max_leverage"])  # within the cap


async def test_a_plan_gives_its_liquidation_as_a_price_and_its_distance_from_the_mark(server):
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001"})
    assert plan["status"] == "ok", plan
    price, distance = Decimal(plan["liquidation_price"]), Decimal(plan["liquidation_distance_pct"])
    mark = Decimal(plan["snapshot"]["mark"])
    assert price > mark  # a short is liquidated above the mark
    assert abs((price - mark) / mark * 100 - distance) < Decimal("0.01")


@pytest.mark.parametrize(
    ("distance", "within"), [("0.5", True), ("99.99", True), ("100", False), ("1239.87", False)]
)
def test_a_liquidation_past_twice_the_mark_is_out_of_reach(distance, within):
    assert Liquidation(Decimal("1000"), Decimal(distance)).within_reach is within
