"""`pilot agent list` (issue 39, item 5): each agent's role, switch, whether it is connected, its budget and
what is left of it, its orders and refusals today, read from the home's store and journal by the CLI in a
process of its own making (click's runner), after real MCP sessions of several agents traded on the home.

The oracles are the sessions' own answers: what each agent was told (sent, refused) and the fills the
exchange reported, counted here apart from the ledger the command reads."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pilot.app.human.agent_desk import add_agent
from pilot.app.runtime.runtime import Runtime
from pilot.server import build_server
from tests.app.conftest import call
from tests.scenarios import ARTICLE_POLICY

from .conftest import pilot, pilot_json

pytestmark = pytest.mark.anyio
SMALL_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"}  # about $6.5
BIG_SHORT = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.00031"}  # about $20
BUDGET = {"dailyOrderCap": 2, "maxTurnoverUsdPerDay": 50, "maxNotionalUsd": 15}


@asynccontextmanager
async def agent_session(runtime: Runtime, credential: str) -> Any:
    """A real MCP client session whose server takes its agent from the credential, as stdio's does."""
    runtime.credential = credential
    async with Client(build_server(runtime), raise_exceptions=True) as client:
        yield client


async def filled_usd(client: Client, plan: dict[str, Any]) -> Decimal:
    """Place a plan that passed; the notional it filled, as its answer reports the fill."""
    placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert placed["status"] == "filled", placed
    fill = placed["fill"]
    return Decimal(fill["filled_qty"]) * Decimal(fill["avg_price"])


async def test_agent_list_counts_each_agents_orders_refusals_and_budget_left(home: Path, runtime: Runtime):
    (home / "policy.json").write_text(json.dumps({**ARTICLE_POLICY, "agents": {"capped": BUDGET}}))
    capped = await add_agent(runtime, "capped", "trade")
    free = await add_agent(runtime, "free", "trade")
    scout = await add_agent(runtime, "scout", "read")
    await add_agent(runtime, "idle", "trade")
    async with agent_session(runtime, capped) as client:
        plan = await call(client, "plan_order", SMALL_SHORT)
        spent = await filled_usd(client, plan)
        again = await call(client, "place_order", {"plan_id": plan["plan_id"]})  # a plan is used once
        over = await call(client, "plan_order", BIG_SHORT)  # above its own $15
    async with agent_session(runtime, scout) as client:
        looked = await call(client, "plan_order", SMALL_SHORT)
    async with agent_session(runtime, free) as client:
        await filled_usd(client, await call(client, "plan_order", SMALL_SHORT))
    async with agent_session(runtime, capped) as client:
        told = (await call(client, "get_policy"))["data"]["markets"]  # the room it is told it has
    assert over["status"] == again["status"] == looked["status"] == "refused"
    before = await pilot_json("agent", "list", "--home", str(home))  # reads the home's paper exchange
    [shown] = [agent for agent in before["agents"] if agent["name"] == "capped"]
    for symbol, market in told.items():
        for side in ("buy", "sell"):
            room = shown["rooms"][symbol][side]
            assert (room["qty"], room["limited_by"]) == (
                market["room"][side]["qty"],
                market["room"][side]["limited_by"],
            )
    stopped = await pilot("agent", "stop", "capped", "--home", str(home))
    assert stopped.exit_code == 0, stopped.output

    listed = await pilot_json("agent", "list", "--home", str(home))
    agents = {agent["name"]: agent for agent in listed["agents"]}
    counts = {
        name: (a["orders_today"], a["refusals_today"], a["switch"], a["connected"])
        for name, a in agents.items()
    }
    assert counts == {
        "capped": (1, 2, "on", True),
        "free": (1, 0, "off", True),
        "scout": (0, 1, "off", True),
        "idle": (0, 0, "off", False),
    }
    cap = ARTICLE_POLICY["dailyOrderCap"]
    assert agents["free"]["orders_left_today"] == cap - 2  # the account's cap, spent by both sends
    assert agents["capped"]["orders_left_today"] == min(2 - 1, cap - 2)
    limits = {(limit["key"], limit["market"]): limit for limit in agents["capped"]["limits"]}
    assert (limits["dailyOrderCap", None]["used"], limits["dailyOrderCap", None]["left"]) == ("1", "1")
    turnover = limits["maxTurnoverUsdPerDay", None]
    assert Decimal(turnover["used"]) == spent and Decimal(turnover["left"]) == 50 - spent
    assert (
        limits["maxNotionalUsd", None]["binding"] == "15" and limits["maxNotionalUsd", None]["left"] is None
    )
    assert agents["idle"]["last_call_at"] is None and agents["capped"]["last_call_at"] is not None
    assert agents["free"]["limits"] == []
    assert [entry["kind"] for entry in agents["capped"]["recent"]] == ["plan", "place.refused", "order.sent"]
    assert agents["capped"]["rooms"]["BTCUSDT"]["buy"]["limited_by"] == [
        "tradingState"
    ]  # stopped: only shrinking


async def test_agent_list_in_text_names_every_agent_on_a_line_of_its_own(home: Path, runtime: Runtime):
    await add_agent(runtime, "first", "trade")
    await add_agent(runtime, "second", "reduce")
    listed = await pilot("agent", "list", "--home", str(home))
    assert listed.exit_code == 0, listed.output
    names = [line.split("\t")[0] for line in listed.stdout.splitlines() if not line.startswith("\t")]
    assert names == ["first", "second"]
