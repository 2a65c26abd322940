"""plan_order says what it changed of the asked order and why, and names the market an unknown symbol most
likely meant: asserted on the structured fields (adjustments, did_you_mean), through a real MCP client on the
paper exchange (the article's ETHUSDT: lot step 0.001, tick 0.01)."""

from __future__ import annotations

import pytest
from mcp import Client

from pilot.app.orders.adjustments import nearest_symbol
from tests.app.conftest import call

pytestmark = pytest.mark.anyio


async def test_a_quantity_off_the_lot_step_is_planned_floored_and_the_answer_says_so(server):
    async with Client(server) as client:
        plan = await call(client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.0015"})
    assert plan["status"] == "ok" and plan["order"]["qty"] == "0.001"
    [cut] = plan["adjustments"]
    assert (cut["field"], cut["asked"], cut["planned"], cut["rule"]) == (
        "qty",
        "0.0015",
        "0.001",
        "instrument.qtyStep",
    )


async def test_a_limit_price_off_the_tick_is_put_on_it_on_the_safe_side_and_said(server):
    async with Client(server) as client:
        buy = await call(
            client,
            "plan_order",
            {"symbol": "ETHUSDT", "side": "buy", "qty": "0.001", "order_type": "limit", "price": "3000.129"},
        )
        sell = await call(
            client,
            "plan_order",
            {"symbol": "ETHUSDT", "side": "sell", "qty": "0.001", "order_type": "limit", "price": "3200.121"},
        )
    assert [(a["field"], a["planned"], a["rule"]) for a in buy["adjustments"]] == [
        ("price", "3000.12", "instrument.tickSize")  # down: a buy never pays more
    ]
    assert [(a["field"], a["planned"]) for a in sell["adjustments"]] == [
        ("price", "3200.13")
    ]  # up for a sell


async def test_a_notional_is_said_to_become_a_floored_quantity(server):
    async with Client(server) as client:
        plan = await call(client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "notional_usd": "10"})
    [turned] = plan["adjustments"]
    assert (turned["field"], turned["asked"], turned["planned"]) == (
        "notional_usd",
        "10",
        plan["order"]["qty"],
    )


async def test_an_order_planned_as_asked_carries_no_adjustments_key(server):
    async with Client(server) as client:
        plan = await call(client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.001"})
    assert plan["status"] == "ok" and "adjustments" not in plan


async def test_a_symbol_not_allowed_names_the_nearest_allowed_market(server):
    async with Client(server) as client:
        refused = await call(client, "plan_order", {"symbol": "BTCUSD", "side": "buy", "qty": "0.001"})
        unrelated = await call(client, "plan_order", {"symbol": "DOGEUSDC", "side": "buy", "qty": "1"})
    [violation] = [v for v in refused["violations"] if v["rule"] == "allowedMarkets"]
    assert violation["did_you_mean"] == "BTCUSDT"
    assert all("did_you_mean" not in v for v in unrelated["violations"])  # nothing close: nothing guessed


@pytest.mark.parametrize(
    ("symbol", "nearest"),
    [
        ("BTCUSD", "BTCUSDT"),
        ("ETHUSD", "ETHUSDT"),
        ("SOLUSTD", "SOLUSDT"),
        ("XRPUSDT", None),
        ("BTCUSDT", None),
    ],
)
def test_the_nearest_market_is_a_close_spelling_or_none(symbol, nearest):
    assert nearest_symbol(symbol, ["BTCUSDT", "ETHUSDT", "SOLUSDT"]) == nearest
