"""Attacks with tools the agent was not given, forged plan ids, and the kill switch it may not turn off."""

from __future__ import annotations

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds
from pilot.server import build_server

from .conftest import BTC_SHORT, CREATE, MODES
from .hostile_agent import MALFORMED_FORGERIES, WELL_FORMED_FORGERIES, HostileAgent

pytestmark = pytest.mark.anyio


@MODES
async def test_tools_that_do_not_exist_fail_and_reach_nothing(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        calls = [
            await agent.attempt(name, args)
            for name, args in [
                ("create_order", {"symbol": "BTCUSDT", "side": "Buy", "qty": "1"}),
                ("bybit_place_order", {"category": "linear", "symbol": "BTCUSDT"}),
                ("execute", {"command": "pilot kill-switch off"}),
                ("place_order ", {"plan_id": "x"}),
                ("PLACE_ORDER", {"plan_id": "x"}),
                ("../place_order", {"plan_id": "x"}),
            ]
        ]
    assert all(outcome.unknown_tool for outcome in calls), calls
    assert paper.request_count(CREATE) == 0
    assert await runtime.store.journal.entries() == []  # no use case ran


@MODES
async def test_forged_plan_ids_are_refused_or_invalid_and_never_send(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        real = (await agent.plan(BTC_SHORT))["plan_id"]
        well_formed = await agent.place_forged(WELL_FORMED_FORGERIES)
        malformed = await agent.place_forged(MALFORMED_FORGERIES)
        look_alikes = await agent.place_forged((real.upper(), real[:-1], real + "0"))
        padded = await agent.place_forged((real + "\n", " " + real, real + " "))
        assert paper.request_count(CREATE) == 0
        placed = await agent.place(real)
        reused = await agent.place(real)
        by_order_id = await agent.place(placed.answer["order_id"])  # type: ignore[index]
        by_link_id = await agent.place(placed.answer["order_link_id"])  # type: ignore[index]
    assert [o.rules for o in well_formed] == [["planNotFound"]] * len(WELL_FORMED_FORGERIES)
    assert all(o.invalid_argument and o.field == "plan_id" for o in malformed), malformed
    assert [o.rules for o in look_alikes] == [["planNotFound"]] * 3
    assert all(o.invalid_argument and o.field == "plan_id" for o in padded), padded
    assert placed.status == "filled"
    assert reused.rules == ["planAlreadyUsed"]
    assert reused.answer["next_safe_action"]["tool"] == "get_open_orders"  # type: ignore[index]
    assert by_order_id.rules == ["planNotFound"] and by_link_id.rules == ["planNotFound"]
    assert paper.request_count(CREATE) == 1
    refused = await runtime.store.journal.entries(kind=entry_kinds.PLACE_REFUSED)
    rules = sorted(e.data["violations"][0]["rule"] for e in refused)  # malformed ids reach no use case
    assert rules == ["planAlreadyUsed"] + ["planNotFound"] * (len(WELL_FORMED_FORGERIES) + 3 + 2)


@MODES
async def test_a_plan_id_of_the_wrong_type_is_an_invalid_argument_and_never_sends(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        real = (await agent.plan(BTC_SHORT))["plan_id"]
        wrong = [
            await agent.attempt("place_order", args)
            for args in (
                {},
                {"plan_id": None},
                {"plan_id": 1},
                {"plan_id": [real]},
                {"plan_id": {"id": real}},
            )
        ]
        placed = await agent.place(real)
    assert all(o.invalid_argument and o.field == "plan_id" for o in wrong), wrong
    assert placed.status == "filled"
    assert paper.request_count(CREATE) == 1


@MODES
async def test_the_agent_cannot_turn_the_kill_switch_off(runtime, paper, mode):
    async with Client(build_server(runtime), mode=mode) as client:
        agent = HostileAgent(client)
        on = await agent.attempt("activate_kill_switch", {"reason": "testing"})
        attempts = await agent.turn_kill_switch_off()
        policy = await agent.attempt("get_policy")
        growing = await agent.attempt("plan_order", BTC_SHORT)
    assert on.status == "done"
    shown = [
        "unknown" if o.unknown_tool else "invalid" if o.invalid_argument else o.answer["data"]["kill_switch"]  # type: ignore[index]
        for o in attempts
    ]
    assert shown == ["unknown"] * 4 + ["invalid"] * 3 + ["on", "on"] + ["invalid"]
    assert policy.answer["data"]["kill_switch"] is True  # type: ignore[index]
    assert policy.answer["data"]["trading_state"] == "reducing"  # type: ignore[index]
    assert growing.rules == ["tradingState"]
    switches = await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)
    assert [(e.data["on"], e.actor) for e in switches] == [(True, "agent")] * 3
    assert paper.request_count(CREATE) == 0
