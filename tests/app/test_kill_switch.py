"""The kill switch: an agent can turn it on, never off; while on, only what shrinks a position works. On
Bybit's wire and on OKX's (tests/okx_front)."""

from __future__ import annotations

import pytest
from mcp import Client

from pilot.app.answers import entry_kinds

from .conftest import BTC_SHORT, CREATE, call, plan_and_place

pytestmark = pytest.mark.anyio


async def test_the_kill_switch_refuses_growing_orders_and_still_lets_a_position_close(
    venue_server, venue, venue_runtime
):
    paper, runtime = venue.paper, venue_runtime
    async with Client(venue_server, raise_exceptions=True) as client:
        await plan_and_place(client, venue.args(BTC_SHORT))
        switched = await call(client, "activate_kill_switch", {"reason": "test"})
        assert switched["status"] == "done" and switched["data"]["kill_switch"] == "on"

        refused = await call(
            client, "plan_order", venue.args({"symbol": "ETHUSDT", "side": "buy", "qty": "0.001"})
        )
        assert [v["rule"] for v in refused["violations"]] == ["tradingState"]
        assert refused["next_safe_action"]["tool"] is None
        assert refused["snapshot"]["trading_state"] == "reducing"

        closed = await call(client, "close_position", {"symbol": venue.sym("BTCUSDT")})
        policy = await call(client, "get_policy")
    assert closed["status"] == "filled" and paper.position("BTCUSDT").size == 0
    assert policy["data"]["kill_switch"] is True and policy["data"]["trading_state"] == "reducing"
    assert paper.request_count(CREATE) == 2
    assert [e.data["on"] for e in await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)] == [True]


async def test_a_plan_made_before_the_kill_switch_is_refused_at_send(venue_server, venue):
    paper = venue.paper
    async with Client(venue_server, raise_exceptions=True) as client:
        plan = await call(
            client, "plan_order", venue.args({"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001"})
        )
        await call(client, "activate_kill_switch", {})
        refused = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert [v["rule"] for v in refused["violations"]] == ["tradingState"]
    assert paper.request_count(CREATE) == 0


async def test_no_tool_can_turn_the_kill_switch_off(server):
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    switches = [name for name in tools if "kill" in name]
    assert switches == ["activate_kill_switch"]
    assert set(tools["activate_kill_switch"].input_schema["properties"]) == {"reason", "idempotency_key"}
