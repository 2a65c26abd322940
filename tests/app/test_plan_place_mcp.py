"""plan_order and place_order through a real MCP client on the paper exchange: the plan-then-send lifecycle.
The tests that take `venue` run on Bybit's wire and on OKX's (the OKX front over the same paper exchange)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import anyio
import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, call, open_test_runtime, plan_and_place, write_policy

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


@MODES
async def test_refused_order_becomes_a_fill_by_replaying_the_next_safe_action(venue_server, venue, mode):
    paper = venue.paper
    async with Client(venue_server, mode=mode, raise_exceptions=True) as client:
        refused = await call(
            client, "plan_order", venue.args({"symbol": "BTCUSDT", "side": "sell", "qty": "0.0005"})
        )
        assert refused["status"] == "refused" and refused.get("plan_id") is None
        assert refused["violations"][0]["rule"] == "maxOrderNotionalUsd"
        suggestion = refused["next_safe_action"]
        assert suggestion["tool"] == "plan_order" and suggestion["args"]["qty"] == "0.00031"

        planned = await call(client, suggestion["tool"], suggestion["args"])
        assert planned["status"] == "ok" and planned["order"]["qty"] == "0.00031"
        assert planned["order"]["time_in_force"] == "IOC" and planned["needs_confirmation"] is False
        assert paper.request_count(CREATE) == 0

        placed = await call(client, "place_order", {"plan_id": planned["plan_id"]})
    assert placed["status"] == "filled" and placed["fill"]["filled_qty"] == "0.00031"
    assert placed["sent"]["qty"] == "0.00031" and placed["sent"]["price"] == planned["order"]["price"]
    assert paper.request_count(CREATE) == 1
    assert paper.position("BTCUSDT").size == -paper.orders()[0].qty


async def test_twenty_concurrent_place_orders_on_one_plan_send_exactly_one_order(venue_server, venue):
    paper = venue.paper
    answers: list[dict[str, Any]] = []
    async with Client(venue_server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))

        async def place() -> None:
            answers.append(await call(client, "place_order", {"plan_id": plan["plan_id"]}))

        async with anyio.create_task_group() as tasks:
            for _ in range(20):
                tasks.start_soon(place)
        later = await call(client, "place_order", {"plan_id": plan["plan_id"]})

    assert paper.request_count(CREATE) == 1 and len(paper.orders()) == 1
    filled = [a for a in answers if a["status"] == "filled"]
    refused = [a for a in answers if a["status"] == "refused"]
    assert len(filled) == 1 and len(refused) == 19
    for answer in [*refused, later]:
        assert [v["rule"] for v in answer["violations"]] == ["planAlreadyUsed"]
        assert answer["next_safe_action"]["tool"] == "get_open_orders" and answer.get("sent") is None
    # once the first use has finished, a refusal names the order it became
    assert filled[0]["order_id"] in later["violations"][0]["detail"]


async def test_an_expired_plan_is_refused_with_a_next_action_that_plans_the_same_order(
    venue_server, venue, clock
):
    paper = venue.paper
    async with Client(venue_server, raise_exceptions=True) as client:
        plan = await call(
            client, "plan_order", venue.args({**BTC_SHORT, "order_type": "limit", "price": "80300"})
        )
        clock.advance(61)
        expired = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert expired["status"] == "refused"
        assert [v["rule"] for v in expired["violations"]] == ["planExpired"]
        again = expired["next_safe_action"]
        assert again["tool"] == "plan_order"
        replanned = await call(client, again["tool"], again["args"])
    assert replanned["status"] == "ok" and replanned["order"] == plan["order"]
    assert paper.request_count(CREATE) == 0


async def test_a_policy_tightened_after_planning_refuses_at_send_with_a_fresh_next_action(
    venue_server, venue, venue_runtime
):
    paper = venue.paper
    async with Client(venue_server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
        venue.write_policy(venue_runtime.home.path, maxOrderNotionalUsd=10)
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert refused["status"] == "refused" and refused.get("sent") is None
        assert refused["violations"][0]["rule"] == "maxOrderNotionalUsd"
        assert refused["violations"][0]["limit"] == "10"
        fresh = refused["next_safe_action"]
        assert fresh["tool"] == "plan_order" and fresh["args"]["qty"] == "0.00012"
        assert paper.request_count(CREATE) == 0
        replanned = await call(client, fresh["tool"], fresh["args"])
        placed = await call(client, "place_order", {"plan_id": replanned["plan_id"]})
    assert placed["status"] == "filled" and placed["fill"]["filled_qty"] == "0.00012"
    assert paper.request_count(CREATE) == 1


async def test_a_plan_refused_at_send_and_placed_again_points_to_re_planning_not_to_a_lookup(
    server, paper, runtime
):
    async with Client(server, raise_exceptions=True) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        write_policy(runtime.home.path, maxOrderNotionalUsd=10)
        await call(client, "place_order", {"plan_id": plan["plan_id"]})
        again = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert [v["rule"] for v in again["violations"]] == ["planAlreadyUsed"]
    assert again["next_safe_action"]["tool"] == "plan_order"
    assert again["next_safe_action"]["args"]["qty"] == BTC_SHORT["qty"]
    assert paper.request_count(CREATE) == 0


async def test_a_plan_survives_a_restart_and_is_redeemed_exactly_once(tmp_path, venue, clock):
    paper = venue.paper
    venue.write_policy(tmp_path)
    async with (
        open_test_runtime(tmp_path, venue.endpoint, clock) as before,
        Client(build_server(before), raise_exceptions=True) as client,
    ):
        plan = await call(client, "plan_order", venue.args(BTC_SHORT))
    async with (
        open_test_runtime(tmp_path, venue.endpoint, clock) as after,
        Client(build_server(after), raise_exceptions=True) as client,
    ):
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        again = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    async with (
        open_test_runtime(tmp_path, venue.endpoint, clock) as third,
        Client(build_server(third), raise_exceptions=True) as client,
    ):
        third_try = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        sent = await third.store.journal.entries(kind=entry_kinds.ORDER_SENT)
    assert placed["status"] == "filled"
    assert again["violations"][0]["rule"] == third_try["violations"][0]["rule"] == "planAlreadyUsed"
    assert paper.request_count(CREATE) == 1 and [e.plan_id for e in sent] == [plan["plan_id"]]


@MODES
@pytest.mark.parametrize(
    ("tool", "args", "field", "shown"),
    [
        ("plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": 0.0005}, "qty", '"0.0005"'),
        ("plan_order", {"symbol": "BTCUSDT", "side": "buy", "notional_usd": 20}, "notional_usd", '"20"'),
        (
            "plan_order",
            {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": 80000.5},
            "price",
            '"80000.5"',
        ),
        ("set_leverage", {"symbol": "BTCUSDT", "leverage": 2}, "leverage", '"2"'),
        ("close_position", {"symbol": "BTCUSDT", "qty": 1e-05}, "qty", '"0.00001"'),
    ],
)
async def test_a_json_number_for_an_amount_is_an_error_result_with_the_fixed_call(
    server, paper, mode, tool, args, field, shown
):
    async with Client(server, mode=mode) as client:
        result = await client.call_tool(tool, args)
        fixed = result.structured_content["next_safe_action"]
        again = await client.call_tool(fixed["tool"], fixed["args"])
    body = result.structured_content
    assert result.is_error and body["status"] == "refused" and body["field"] == field
    assert [v["rule"] for v in body["violations"]] == ["invalidArgument"]
    assert body["violations"][0]["attempted"].endswith("(a JSON number)")
    assert fixed["tool"] == tool and fixed["args"] == {**args, field: json.loads(shown)}
    assert not again.is_error  # the fixed call is a valid call (judged like any other)
    assert body["environment"] == "paper"


@MODES
@pytest.mark.parametrize("extra", [{"qty": "1"}, {"price": "1"}, {"side": "buy"}])
async def test_place_order_refuses_any_argument_but_the_plan_id_and_keeps_the_plan(
    server, paper, mode, extra
):
    async with Client(server, mode=mode) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        result = await client.call_tool("place_order", {"plan_id": plan["plan_id"], **extra})
        body = result.structured_content
        assert result.is_error and body["field"] == next(iter(extra))
        assert body["violations"][0]["rule"] == "invalidArgument"
        assert body["next_safe_action"]["args"] == {"plan_id": plan["plan_id"]}
        assert paper.request_count(CREATE) == 0
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled" and placed["sent"]["qty"] == BTC_SHORT["qty"]
    assert paper.request_count(CREATE) == 1


async def test_an_unknown_plan_id_is_refused_and_nothing_is_sent(server, paper):
    async with Client(server, raise_exceptions=True) as client:
        answer = await call(client, "place_order", {"plan_id": "plan_doesnotexist"})
        first = await plan_and_place(client)
    assert [v["rule"] for v in answer["violations"]] == ["planNotFound"]
    assert first["status"] == "filled" and paper.request_count(CREATE) == 1


async def test_get_policy_reports_the_version_orders_left_and_room_under_each_cap(venue_server, venue):
    async with Client(venue_server, raise_exceptions=True) as client:
        await plan_and_place(client, venue.args(BTC_SHORT))  # 0.00031 BTC short, $24.87 at mark
        policy = (await call(client, "get_policy"))["data"]
    assert policy["policy_version"].startswith("sha256:") and policy["valid"] is True
    assert (policy["orders_sent_today"], policy["orders_left_today"]) == (1, 19)
    btc = policy["markets"][venue.sym("BTCUSDT")]
    assert btc["position_size"] == "-0.00031" and btc["missing"] == []
    assert btc["room"]["sell"]["qty"] == "0" and btc["room"]["sell"]["limited_by"] == ["maxNotionalUsd"]
    assert btc["room"]["buy"]["qty"] == "0.00031"  # buying back is never capped; one step more opens a long


async def test_the_room_get_policy_reports_is_what_plan_order_accepts_and_one_lot_more_is_refused(
    venue_server, venue
):
    resting = venue.args(
        {"symbol": "ETHUSDT", "side": "buy", "qty": "0.003", "order_type": "limit", "price": "3000"}
    )
    async with Client(venue_server, raise_exceptions=True) as client:
        assert (await plan_and_place(client, resting))["status"] == "open"  # pending exposure counts too
        markets = (await call(client, "get_policy"))["data"]["markets"]
        for symbol, market in markets.items():
            rules = (await call(client, "get_instrument_rules", {"symbol": symbol}))["data"]
            for side, room in market["room"].items():
                qty, step = Decimal(room["qty"]), Decimal(rules["qty_step"])
                order = {"symbol": symbol, "side": side}
                if qty >= Decimal(rules["min_order_qty"]):
                    fits = await call(client, "plan_order", {**order, "qty": str(qty)})
                    assert fits["status"] == "ok", (symbol, side, fits)
                over = await call(client, "plan_order", {**order, "qty": str(qty + step)})
                assert over["status"] == "refused", (symbol, side)
                assert {v["rule"] for v in over["violations"]} >= set(room["limited_by"]), (
                    symbol,
                    side,
                    over,
                )


async def test_get_policy_reports_an_unreadable_position_as_null_and_names_it_missing(server, paper):
    async with Client(server, raise_exceptions=True) as client:
        await plan_and_place(client)
        paper.add_fault("/v5/position/list", "http_5xx", every=True)
        btc = (await call(client, "get_policy"))["data"]["markets"]["BTCUSDT"]
    assert btc["position_size"] is None and btc["position_notional_usd_at_mark"] is None
    assert btc["missing"] == ["position"] and btc["room"] is None
