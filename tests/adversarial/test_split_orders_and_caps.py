"""Attacks on the caps: many small orders instead of one big one, one after another or all at once."""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.server import build_server

from .conftest import CREATE, MODES, TEN_DOLLARS_OF_BTC, write_policy
from .hostile_agent import HostileAgent

pytestmark = pytest.mark.anyio
CAP = Decimal(25)


def position_notional(paper) -> Decimal:
    position = paper.position("BTCUSDT")
    return abs(position.size) * Decimal("80220.1")


@MODES
async def test_five_ten_dollar_orders_stop_at_the_position_cap_and_say_how_much_room_is_left(
    runtime, paper, mode
):
    async with Client(build_server(runtime), mode=mode) as client:
        outcomes = await HostileAgent(client).split_order(TEN_DOLLARS_OF_BTC, 5)
    assert [o.status for o in outcomes] == ["filled", "filled", "refused", "refused", "refused"]
    third = outcomes[2].answer
    [violation] = third["violations"]  # type: ignore[index]
    assert violation["rule"] == "maxNotionalUsd" and Decimal(violation["limit"]) == CAP
    assert Decimal(violation["attempted"]) > CAP
    suggestion = third["next_safe_action"]  # type: ignore[index]
    assert suggestion["tool"] == "plan_order"
    snapshot = third["snapshot"]  # type: ignore[index]
    worst_ask = Decimal(snapshot["ask"]) * Decimal("1.005")  # maxSlippagePct 0.5
    room = Decimal(suggestion["args"]["qty"])
    assert room > 0 and (Decimal(snapshot["position_size"]) + room) * worst_ask <= CAP
    assert paper.request_count(CREATE) == 2
    assert position_notional(paper) <= CAP
    plans = await runtime.store.journal.entries(kind=entry_kinds.PLAN)
    assert [e.data["status"] for e in plans] == ["ok", "ok", "refused", "refused", "refused"]


@MODES
async def test_five_plans_placed_at_once_cannot_walk_past_the_position_cap(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        plan_ids = await agent.plan_many(TEN_DOLLARS_OF_BTC, 5)  # each passes alone: nothing is held yet
        outcomes = await agent.place_all_at_once(plan_ids)
    assert sorted(o.status for o in outcomes) == ["filled", "filled", "refused", "refused", "refused"]
    assert {tuple(o.rules) for o in outcomes if o.status == "refused"} == {("maxNotionalUsd",)}
    assert paper.request_count(CREATE) == 2
    assert position_notional(paper) <= CAP
    refused = await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED)
    assert len(refused) == 3 and len(await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT)) == 2


@MODES
@pytest.mark.parametrize("at_once", [False, True], ids=["in_turn", "at_once"])
async def test_orders_past_the_daily_cap_are_refused_even_when_planned_before_it_was_reached(
    runtime, paper, mode, at_once
):
    write_policy(runtime.home.path, dailyOrderCap=3)
    two_dollars = {**TEN_DOLLARS_OF_BTC, "notional_usd": "2"}
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        plan_ids = await agent.plan_many(two_dollars, 5)
        if at_once:
            outcomes = await agent.place_all_at_once(plan_ids)
        else:
            outcomes = [await agent.place(plan_id) for plan_id in plan_ids]
        another = await agent.attempt("plan_order", two_dollars)
    assert sorted(o.status for o in outcomes) == ["filled"] * 3 + ["refused"] * 2
    assert {tuple(o.rules) for o in outcomes if o.status == "refused"} == {("dailyOrderCap",)}
    assert another.rules == ["dailyOrderCap"] and another.answer["next_safe_action"]["retry_after"]  # type: ignore[index]
    assert paper.request_count(CREATE) == 3


async def test_a_growing_order_dressed_as_a_reducing_one_does_not_escape_the_daily_cap(runtime, paper):
    """Reducing orders are exempt from the cap; a sell that flips a long into a bigger short is not reducing."""
    write_policy(runtime.home.path, dailyOrderCap=1)
    async with Client(build_server(runtime)) as client:
        agent = HostileAgent(client)
        [bought] = await agent.split_order({**TEN_DOLLARS_OF_BTC, "notional_usd": "5"}, 1)
        held = paper.position("BTCUSDT").size
        flip = await agent.attempt("plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": str(held * 3)})
        flip_reduce_only = await agent.attempt(
            "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": str(held * 3), "reduce_only": True}
        )
        reduce = await agent.split_order({"symbol": "BTCUSDT", "side": "sell", "qty": str(held)}, 1)
    assert bought.status == "filled"
    assert flip.rules == ["dailyOrderCap"]
    assert flip_reduce_only.rules == ["reduceOnlyQty"]  # refused, with the size that closes the long
    assert reduce[0].status == "filled"  # closing what is held still works past the cap
    assert paper.request_count(CREATE) == 2 and paper.position("BTCUSDT").size == 0
