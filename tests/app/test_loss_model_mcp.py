"""Issue 36 through a real MCP client on the paper exchange: one loss model for spot and linear, on every path.

Each figure is worked out here from the world's numbers (the oracle), not read back from Pilot: a position's
loss at its stops is what it cost, taker fee in, less what its stops sell it for, fee out; on spot the coin no
stop sells can fall to zero; on a perpetual a position with no stop has no bound. The article's scenario:
ETHUSDT bid 3100.00, ask 3100.01 (linear step 0.001, spot basePrecision 0.00001), maxSlippagePct 0.5, so a
market buy's worst fill is 3100.01 x 1.005 on the tick and a market sell's 3100.00 x 0.995.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import pytest
from mcp import Client

from pilot.server import build_server

from .conftest import CREATE, call, write_policy

pytestmark = pytest.mark.anyio
FEE = Decimal("0.00055")  # Bybit's taker fee, both ways
TICK = Decimal("0.01")
STEP = Decimal("0.00001")  # spot ETHUSDT's basePrecision
BUY_WORST = (Decimal("3100.01") * Decimal("1.005") / TICK).to_integral_value(ROUND_CEILING) * TICK  # 3115.52
SELL_WORST = (Decimal("3100.00") * Decimal("0.995") / TICK).to_integral_value(ROUND_FLOOR) * TICK  # 3084.50
CAP = Decimal(5)
ROOMY = {
    "maxNotionalUsd": 2000,
    "maxOrderNotionalUsd": 2000,
    "maxLeverage": 5,
    "minLiquidationDistancePct": 0,
}


def long_loss(qty: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    return qty * (entry - stop) + qty * FEE * (entry + stop)


def spot_loss(qty: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    """A spot buy of `qty` at `entry` whose stop sells the coin that arrived (the fee paid in it taken off,
    on the 0.00001 step); the fee's dust can fall to nothing."""
    arrived = (qty * (1 - FEE) / STEP).to_integral_value(ROUND_FLOOR) * STEP
    return qty * entry * (1 + FEE) - arrived * stop * (1 - FEE)


def short_loss(qty: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    return qty * (stop - entry) + qty * FEE * (entry + stop)


def rules(answer: dict[str, Any]) -> dict[str, str]:
    return {v["rule"]: v["attempted"] for v in answer.get("violations") or []}


async def test_a_spot_buy_under_the_cap_passes_only_with_a_stop_that_bounds_it_and_the_stop_sells_on_a_fall(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxLossPerTradeUsd=5, **ROOMY)
    buy = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.1", "category": "spot"}
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        refused = await call(client, "plan_order", buy)
        whole = Decimal("0.1") * BUY_WORST * (1 + FEE)  # no stop: the coin can fall to nothing
        assert rules(refused) == {"maxLossPerTradeUsd": str(whole.quantize(Decimal("0.01")))}
        fix = refused["next_safe_action"]
        assert fix["tool"] == "plan_order" and fix["args"]["qty"] == "0.1"
        stop = Decimal(fix["args"]["stop_loss"])
        assert (
            spot_loss(Decimal("0.1"), BUY_WORST, stop)
            <= CAP
            < spot_loss(Decimal("0.1"), BUY_WORST, stop - TICK)
        )
        planned = await call(client, "plan_order", fix["args"])
        assert planned["status"] == "ok"
        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
        assert placed["status"] == "filled" and placed["sent"]["stop_loss"] == fix["args"]["stop_loss"]
        assert placed["protection"]["stop_loss"] == fix["args"]["stop_loss"]
        assert placed["protection"]["missing_stop"] is False
        orders = (await call(client, "get_open_orders", {"symbol": "ETHUSDT", "category": "spot"}))["data"]
        assert [(o["side"], o["stop_type"], o["trigger_price"]) for o in orders] == [
            ("Sell", "tpslOrder", fix["args"]["stop_loss"])
        ]
        usdt_before = paper.balance("USDT")
        paper.set_prices("ETHUSDT", bid=stop, ask=stop + TICK, mark=stop)  # the last price reaches the stop
    # the stop sold what the buy brought, at the bid: the trade lost at most the cap
    assert paper.balance("ETH") < Decimal("0.0001")  # the fee's dust
    lost = Decimal(1000) - paper.balance("USDT") - paper.balance("ETH") * stop
    assert paper.balance("USDT") > usdt_before and 0 < lost <= CAP


async def test_a_spot_buy_whose_whole_value_is_within_the_cap_needs_no_stop(runtime, paper, tmp_path):
    write_policy(tmp_path, maxLossPerTradeUsd=5, **ROOMY)
    qty = Decimal("0.0015")  # 0.0015 x 3115.52 x 1.00055 = $4.68
    assert qty * BUY_WORST * (1 + FEE) <= CAP
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        buy = {"symbol": "ETHUSDT", "side": "buy", "qty": str(qty), "category": "spot"}
        assert (await call(client, "plan_order", buy))["status"] == "ok"
        more = await call(client, "plan_order", {**buy, "qty": "0.0017"})
        assert set(rules(more)) == {"maxLossPerTradeUsd"}
        options = [o["args"] for o in more["next_safe_action"]["options"]]
        assert any("stop_loss" not in o and Decimal(o["qty"]) * BUY_WORST * (1 + FEE) <= CAP for o in options)


async def test_the_flip_of_a_stopped_long_into_an_unstopped_short_is_refused_and_carries_a_stop_that_fits(
    runtime, paper, tmp_path
):
    """The issue's flip: a long of 0.03 ETHUSDT with its stop, turned by one market sell of 0.06 into a short
    with no stop, lost $27.42 against a $5 cap. Refused now; the flip offered carries a stop that bounds the
    short, and its close is the option."""
    write_policy(tmp_path, maxLossPerTradeUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        opened = await call(
            client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.03", "stop_loss": "3000"}
        )
        assert (await call(client, "place_order", {"plan_id": opened["plan_id"]}))["status"] == "filled"
        flip = {"symbol": "ETHUSDT", "side": "sell", "qty": "0.06"}
        refused = await call(client, "plan_order", flip)
        assert rules(refused) == {"maxLossPerTradeUsd": "unbounded"}
        fix = refused["next_safe_action"]
        assert (fix["tool"], fix["args"]["qty"], fix["args"]["side"]) == ("plan_order", "0.06", "sell")
        stop = Decimal(fix["args"]["stop_loss"])
        assert short_loss(Decimal("0.03"), SELL_WORST, stop) <= CAP
        [close] = fix["options"]
        assert (close["args"]["qty"], close["args"]["reduce_only"]) == ("0.03", True)
        for args in (fix["args"], close["args"]):
            assert (await call(client, "plan_order", args))["status"] == "ok"
        planned = await call(client, "plan_order", fix["args"])
        assert (await call(client, "place_order", {"plan_id": planned["plan_id"]}))["status"] == "filled"
        short = paper.position("ETHUSDT")
        assert (short.size, short.stop_loss) == (Decimal("-0.03"), stop)  # the order's stop is the short's
        paper.set_prices("ETHUSDT", bid=stop, ask=stop + TICK, mark=stop)  # the last price reaches it
        assert paper.position("ETHUSDT").size == 0
        closed = (await call(client, "get_closed_pnl", {"symbol": "ETHUSDT"}))["data"]["rows"][0]
    assert -Decimal(closed["closed_pnl"]) <= CAP


async def test_an_add_that_may_rest_without_a_stop_is_refused_and_an_amend_cannot_turn_a_position_round(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxLossPerTradeUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        opened = await call(
            client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.03", "stop_loss": "3000"}
        )
        assert (await call(client, "place_order", {"plan_id": opened["plan_id"]}))["status"] == "filled"
        # a limit buy below the price may fill once the stop has closed the long: then it has no stop
        add = {"symbol": "ETHUSDT", "side": "buy", "qty": "0.01", "order_type": "limit", "price": "2990"}
        refused = await call(client, "plan_order", add)
        assert rules(refused) == {"maxLossPerTradeUsd": "unbounded"}
        fix = refused["next_safe_action"]["args"]
        stop = Decimal(fix["stop_loss"])
        assert long_loss(Decimal("0.01"), Decimal(2990), stop) <= CAP  # from flat, once the long is gone
        assert (await call(client, "plan_order", fix))["status"] == "ok"
        # a sell resting against the long, grown by an amend past it: the short it would leave has no stop
        resting = paper.leave_resting_order("linear", "ETHUSDT", "Sell", "0.02", "3200", "another-1")
        amend = {"symbol": "ETHUSDT", "order_id": resting.order_id, "qty": "0.06"}
        refused = await call(client, "plan_amend", amend)
        assert rules(refused)["maxLossPerTradeUsd"] == "unbounded"
        nxt = refused["next_safe_action"]
        assert nxt["tool"] == "cancel_order" and "stop_loss" in nxt["options"][0]["args"]
    assert paper.request_count(CREATE) == 1  # only the stopped long was ever sent


async def test_a_spot_stop_is_not_cancelled_past_the_cap_and_close_position_sells_the_coin_it_holds(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, maxLossPerTradeUsd=5, **ROOMY)
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        planned = await call(
            client,
            "plan_order",
            {"symbol": "ETHUSDT", "side": "buy", "qty": "0.1", "category": "spot", "stop_loss": "3075"},
        )
        assert (await call(client, "place_order", {"plan_id": planned["plan_id"]}))["status"] == "filled"
        [stop] = (await call(client, "get_open_orders", {"symbol": "ETHUSDT", "category": "spot"}))["data"]
        cancel = {"symbol": "ETHUSDT", "category": "spot", "order_id": stop["order_id"]}
        refused = await call(client, "cancel_order", cancel)
        # without it the ~0.1 ETH held would lose its whole value, about $310
        assert refused["status"] == "refused" and Decimal(rules(refused)["maxLossPerTradeUsd"]) > 300
        assert refused["next_safe_action"]["options"][0]["tool"] == "close_position"
        all_stops = await call(
            client, "cancel_all_orders", {"symbol": "ETHUSDT", "category": "spot", "include_stops": True}
        )
        assert all_stops["status"] == "refused"
        sold = await call(client, "close_position", {"symbol": "ETHUSDT", "category": "spot"})
        assert sold["status"] == "filled"
        assert [c["order_id"] for c in sold["cancelled_first"]] == [stop["order_id"]]
    assert paper.balance("ETH") < Decimal("0.0001")
