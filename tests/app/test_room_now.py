"""get_policy's room left is what plan_order would judge now, in every state that bounds it: the trading state
(the kill switch, halted), the daily order cap, and the confirmation threshold (the part no human must
approve). The oracle is plan_order itself, through a real MCP client on the paper exchange: the room plans,
one lot step more is refused for the rules the room names, and the part without approval plans without one.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from .conftest import BTC_SHORT, call, plan_and_place, write_policy

pytestmark = pytest.mark.anyio


async def kill_switch(client: Any, home: Path) -> None:
    await call(client, "activate_kill_switch", {"reason": "enough"})


async def halted(client: Any, home: Path) -> None:
    write_policy(home, tradingState="halted")


async def daily_cap_reached(client: Any, home: Path) -> None:
    write_policy(home, dailyOrderCap=1)


async def approval_above_10(client: Any, home: Path) -> None:
    write_policy(home, confirm={"aboveNotionalUsd": 10, "consoleChannel": True})


async def every_order_approved(client: Any, home: Path) -> None:
    write_policy(home, confirm={"actions": ["place_order"], "consoleChannel": True})


STATES = [kill_switch, halted, daily_cap_reached, approval_above_10, every_order_approved]


@pytest.mark.parametrize("state", STATES, ids=[state.__name__ for state in STATES])
async def test_the_room_is_what_plan_order_passes_now_and_one_lot_more_is_refused(server, runtime, state):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client, BTC_SHORT)  # a short to buy back: the room that only shrinks it
        await state(client, runtime.home.path)
        markets = (await call(client, "get_policy"))["data"]["markets"]
        for symbol, market in markets.items():
            rules = (await call(client, "get_instrument_rules", {"symbol": symbol}))["data"]
            step, least = Decimal(rules["qty_step"]), Decimal(rules["min_order_qty"])
            for side, room in market["room"].items():
                order = {"symbol": symbol, "side": side}
                qty = Decimal(room["qty"])
                if qty >= least:
                    assert (await call(client, "plan_order", {**order, "qty": str(qty)}))["status"] == "ok"
                over = await call(client, "plan_order", {**order, "qty": str(qty + step)})
                assert over["status"] == "refused", (state.__name__, symbol, side, room)
                assert {v["rule"] for v in over["violations"]} >= set(room["limited_by"]) > set()
                free = room.get("without_approval")
                if free is not None and Decimal(free["qty"]) >= least:
                    alone = await call(client, "plan_order", {**order, "qty": free["qty"]})
                    assert alone["status"] == "ok" and alone["needs_confirmation"] is False
                    more = str(Decimal(free["qty"]) + step)
                    asks = await call(client, "plan_order", {**order, "qty": more})
                    assert asks["status"] == "ok" and asks["needs_confirmation"] is True


async def test_with_the_kill_switch_on_only_the_room_that_shrinks_a_position_is_left(server, runtime):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client, BTC_SHORT)
        await call(client, "activate_kill_switch", {"reason": "enough"})
        markets = (await call(client, "get_policy"))["data"]["markets"]

    btc, eth = markets["BTCUSDT"]["room"], markets["ETHUSDT"]["room"]
    assert btc["buy"]["qty"] == "0.00031"  # buying the short back: all of it, and not one step more
    assert btc["buy"]["limited_by"][0] == "tradingState"
    assert btc["sell"]["qty"] == "0" and btc["sell"]["limited_by"][0] == "tradingState"
    assert eth["buy"]["qty"] == eth["sell"]["qty"] == "0"
    assert eth["buy"]["limited_by"] == eth["sell"]["limited_by"] == ["tradingState"]


async def test_the_room_says_how_much_needs_no_approval(server, runtime):
    write_policy(runtime.home.path, confirm={"aboveNotionalUsd": 10, "consoleChannel": True})
    async with Client(server, raise_exceptions=True) as client:
        eth = (await call(client, "get_policy"))["data"]["markets"]["ETHUSDT"]["room"]["buy"]

    free = eth["without_approval"]
    assert Decimal(free["notional_usd_at_worst_fill"]) <= 10 < Decimal(eth["notional_usd_at_worst_fill"])
    assert free["limited_by"] == ["confirm.aboveNotionalUsd"]
    assert Decimal(free["qty"]) < Decimal(eth["qty"])
