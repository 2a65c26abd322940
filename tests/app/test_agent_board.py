"""What the CLI and the console show of each agent (pilot.app.human.agent_board, issue 39 item 5): the room
left to it per market as plan_order would judge its order (its own budget, its switch, its role), whether it
is connected, and its switch turned by a human; after real MCP sessions on the paper exchange."""

from __future__ import annotations

from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.agent_board import CONNECTED_WITHIN, AgentBoard, agent_board, set_agent_switch
from pilot.app.human.agent_desk import NoSuchAgent, add_agent, revoke_agent
from pilot.app.human.desk import ReasonTooLong
from pilot.app.service.dead_man import stdio_ended

from .conftest import call, plan_and_place, write_policy
from .test_agents import stdio_like

pytestmark = pytest.mark.anyio
LOOK = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"}


def sell_room(board: AgentBoard) -> Any:
    assert board.rooms is not None
    [market] = [room for room in board.rooms if room.symbol == "BTCUSDT"]
    return market.sell.room if market.sell is not None else None


async def test_each_agents_room_is_judged_as_its_own_order_would_be(runtime, tmp_path):
    write_policy(tmp_path, agents={"small": {"maxNotionalUsd": 15}})
    for name, role in (("small", "trade"), ("big", "trade"), ("scout", "read")):
        await add_agent(runtime, name, role)
    boards = {board.name: board for board in await agent_board(runtime, runtime)}
    small, big, scout = (sell_room(boards[name]) for name in ("small", "big", "scout"))
    assert 0 < small.notional_usd <= 15 < big.notional_usd <= 25  # its own cap, the account's $25
    assert "maxNotionalUsd" in {code.value for code in small.limited_by}
    assert scout.qty == 0  # a read-only credential may grow nothing
    await set_agent_switch(runtime, "big", True, "look first")
    stopped = {board.name: board for board in await agent_board(runtime, runtime)}
    assert sell_room(stopped["big"]).qty == 0 and sell_room(stopped["small"]).qty == small.qty


async def test_an_agent_is_connected_while_it_calls_and_not_once_quiet_past_the_window(runtime, clock):
    token = await add_agent(runtime, "caller", "trade")
    await add_agent(runtime, "silent", "trade")
    async with stdio_like(runtime, token) as client:
        await call(client, "plan_order", LOOK)
    await stdio_ended(runtime)  # its stdin closed, as `pilot serve` ends its session
    first = {board.name: board.connected for board in await agent_board(runtime)}
    clock.advance((CONNECTED_WITHIN + CONNECTED_WITHIN / 10).total_seconds())
    later = {board.name: board.connected for board in await agent_board(runtime)}
    assert first == {"caller": True, "silent": False}
    assert later == {"caller": False, "silent": False}


async def test_a_humans_switch_per_agent_is_journaled_once_and_a_revoke_stays(runtime):
    await add_agent(runtime, "one", "trade")
    await add_agent(runtime, "two", "trade")
    changes = [
        await set_agent_switch(runtime, "one", True, "why", via="console"),
        await set_agent_switch(runtime, "one", True),
        await set_agent_switch(runtime, "one", False),
    ]
    await revoke_agent(runtime, "two")
    kept = await set_agent_switch(runtime, "two", False)
    with pytest.raises(NoSuchAgent):
        await set_agent_switch(runtime, "nobody", True)
    with pytest.raises(ReasonTooLong):
        await set_agent_switch(runtime, "one", True, "x" * 201)
    switched = await runtime.store.journal.entries(kind=entry_kinds.AGENT_SWITCH)
    assert changes == [True, False, True] and kept is False
    assert [(e.data["agent"], e.data["on"], e.data.get("via")) for e in switched] == [
        ("one", True, "console"),
        ("one", False, None),
        ("two", True, None),
    ]
    boards = {board.name: board for board in await agent_board(runtime)}
    assert boards["two"].revoked and boards["two"].switch is not None and boards["one"].switch is None
    assert boards["one"].refusals_today == 0 and boards["two"].row.role is None


async def test_an_agents_own_daily_loss_limit_reads_the_days_loss_the_account_sets_none_for(
    runtime, paper, tmp_path
):
    write_policy(tmp_path, agents={"careful": {"dailyLossLimitUsd": 1}})
    token = await add_agent(runtime, "careful", "trade")
    async with stdio_like(runtime, token) as client:
        placed = await plan_and_place(client, {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"})
        paper.set_prices("BTCUSDT", bid="90000", ask="90000.1", mark="90000")  # the short loses about $3
        grow = await call(client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.002"})
    assert placed["status"] == "filled"
    assert ("dailyLossLimitUsd", "agent:careful") in {(v["rule"], v["budget"]) for v in grow["violations"]}
    [board] = await agent_board(runtime, runtime)
    [line] = [line for line in board.lines if line.key == "dailyLossLimitUsd"]
    assert line.used is not None and line.used > 1 and line.left == 0


async def test_an_agent_that_only_reads_is_connected_while_its_session_is_open(runtime):
    # Found walking issue 40 as a user: the heartbeat row an agent's calls write was kept only while
    # policy.json set a dead-man's switch, so an agent with a session open that had only read (nothing
    # journaled) was listed not connected, with no last call.
    assert runtime.policy().policy.dead_man_switch is None
    token = await add_agent(runtime, "reader", "read")
    async with stdio_like(runtime, token) as client:
        await call(client, "get_ticker", {"symbol": "BTCUSDT"})
        [board] = await agent_board(runtime)
    await stdio_ended(runtime)
    [after] = await agent_board(runtime)
    assert board.connected and board.row.sessions == 1 and board.last_call_at is not None
    assert after.row.sessions == 0
