"""Open orders and unresolved sends count as filled for the caps: resting orders cannot walk past a cap."""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.server import build_server
from tests.scenarios import article_scenario

from .conftest import CREATE, call, open_test_runtime, plan_and_place, write_policy

pytestmark = pytest.mark.anyio
# About $10 each at 70,000, far below the 80,220 market: they rest on the book (GTC) instead of filling.
RESTING_BUY = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.00014", "order_type": "limit", "price": "70000"}


async def test_resting_limit_orders_count_towards_the_position_cap(server, paper):
    async with Client(server, raise_exceptions=True) as client:
        for _ in range(2):
            plan = await call(client, "plan_order", RESTING_BUY)
            assert (await call(client, "place_order", {"plan_id": plan["plan_id"]}))["status"] == "open"
        third = await call(client, "plan_order", RESTING_BUY)
    assert [v["rule"] for v in third["violations"]] == ["maxNotionalUsd"]
    assert third["violations"][0]["attempted"] == "29.4"  # 0.00042 BTC at 70,000: two resting and this one
    assert third["next_safe_action"]["args"]["qty"] == "0.00007"
    assert paper.request_count(CREATE) == 2


async def test_a_send_with_an_unknown_outcome_counts_until_a_lookup_finds_it(tmp_path, paper, clock):
    write_policy(tmp_path)
    short = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00025"}  # about $20
    async with open_test_runtime(tmp_path, paper, clock, timeout_seconds=0.25) as runtime:
        async with Client(build_server(runtime), raise_exceptions=True) as client:
            plan = await call(client, "plan_order", short)
            paper.add_fault(CREATE, "latency", delay_ms=600)  # executed after the client has given up
            unknown = await call(client, "place_order", {"plan_id": plan["plan_id"]})
            assert unknown["status"] == "outcome_unknown"
            again = await call(client, "plan_order", short)  # $40 if the first one filled: refused
            assert [v["rule"] for v in again["violations"]] == ["maxNotionalUsd"]
            paper.clear_faults()
            for _ in range(2000):  # until the delayed create lands on the exchange (600 ms; bounded)
                if paper.orders():
                    break
                await call(client, "get_ticker", {"symbol": "BTCUSDT"})
            after = await call(client, "plan_order", short)
        resolved = await runtime.store.journal.entries(kind=entry_kinds.ORDER_RESOLVED)
    assert [v["rule"] for v in after["violations"]] == ["maxNotionalUsd"]  # now it is a real position
    assert [entry.data["order_link_id"] for entry in resolved] == [unknown["order_link_id"]]
    assert paper.request_count(CREATE) == 1


LONG = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0003"}  # about $24 at 80,220
# Sells far above the market rest on the book (GTC); 0.0003 at 81,000 is $24.30.
RESTING_SELL = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0003", "order_type": "limit", "price": "81000"}


async def test_closing_under_resting_sells_cancels_the_ones_that_would_reopen_past_the_cap(server, paper):
    """Issue 11: long 0.0003, two resting sells of 0.0003, close_position: 0.0006 of sells were left behind,
    a $48.60 short once the price reached them."""
    async with Client(server, raise_exceptions=True) as client:
        assert (await plan_and_place(client, LONG))["status"] == "filled"
        for _ in range(2):
            assert (await plan_and_place(client, RESTING_SELL))["status"] == "open"
        own_close = await call(
            client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0003", "reduce_only": True}
        )
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
        paper.set_prices("BTCUSDT", bid="81000", ask="81000.1", mark="81000")  # the rest of the sells fill
    assert [v["rule"] for v in own_close["violations"]] == ["maxNotionalUsd"]  # a bare reduce-only is refused
    assert closed["status"] == "filled"
    assert [(c["side"], c["qty"], c["price"]) for c in closed["cancelled_first"]] == [
        ("sell", "0.0003", "81000")
    ]
    assert len(paper.open_orders("BTCUSDT")) == 0
    assert abs(paper.position("BTCUSDT").size) * Decimal(81000) <= 25  # the one sell left filled: $24.30


async def test_the_same_coin_held_on_spot_counts_towards_the_linear_cap(tmp_path, clock):
    """Issue 11: linear and spot of one coin were capped separately, about twice the per-market exposure."""
    from pilot.paper import start_paper_exchange

    scenario = article_scenario()
    scenario["balances"] = {"USDT": "1000", "BTC": "0.0002"}  # $16 of BTC held on spot
    write_policy(tmp_path)
    with start_paper_exchange(scenario) as paper:
        async with (
            open_test_runtime(tmp_path, paper, clock) as runtime,
            Client(build_server(runtime), raise_exceptions=True) as client,
        ):
            short = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0002"})
            policy = (await call(client, "get_policy"))["data"]["markets"]["BTCUSDT"]
    assert [v["rule"] for v in short["violations"]] == ["maxNotionalUsd"]
    assert short["snapshot"]["elsewhere_qty"] == "0.0002"
    assert short["next_safe_action"]["args"]["qty"] == "0.00011"  # 0.00031 in all, $24.87
    assert policy["room"]["sell"]["qty"] == "0.00011"


async def test_closing_under_resting_sells_past_the_daily_loss_limit_cancels_them_and_closes(
    tmp_path, paper, clock
):
    """Issue 22: close_position kept its own list of the rules that bind only growing orders and missed the
    daily loss limits, so under the loss latch a close held back by resting sells was refused, where the
    same close under the kill switch cancels them and closes."""
    write_policy(tmp_path, maxNotionalUsd=100, maxOrderNotionalUsd=100, dailyLossLimitUsd=1)
    async with (
        open_test_runtime(tmp_path, paper, clock) as runtime,
        Client(build_server(runtime), raise_exceptions=True) as client,
    ):
        assert (await plan_and_place(client, LONG))["status"] == "filled"
        for _ in range(2):
            assert (await plan_and_place(client, RESTING_SELL))["status"] == "open"
        paper.set_prices("BTCUSDT", bid="70000", ask="70000.1", mark="70000")  # about $3 lost: past $1
        growing = await call(client, "plan_order", LONG)
        closed = await call(client, "close_position", {"symbol": "BTCUSDT"})
    assert {v["rule"] for v in growing["violations"]} == {"tradingState", "dailyLossLimitUsd"}  # latched
    assert closed["status"] == "filled"
    assert [(c["side"], c["qty"]) for c in closed["cancelled_first"]] == [("sell", "0.0003")]
    assert paper.position("BTCUSDT").size == 0
    assert [(o.side, o.qty) for o in paper.open_orders("BTCUSDT")] == [("Sell", Decimal("0.0003"))]
