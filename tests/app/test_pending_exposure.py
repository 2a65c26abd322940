"""Open orders and unresolved sends count as filled for the caps: resting orders cannot walk past a cap."""

from __future__ import annotations

import pytest
from mcp import Client

from pilot.app import kinds
from pilot.server import build_server

from .conftest import CREATE, call, open_test_runtime, write_policy

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
        resolved = await runtime.store.journal.entries(kind=kinds.ORDER_RESOLVED)
    assert [v["rule"] for v in after["violations"]] == ["maxNotionalUsd"]  # now it is a real position
    assert [entry.data["order_link_id"] for entry in resolved] == [unknown["order_link_id"]]
    assert paper.request_count(CREATE) == 1
