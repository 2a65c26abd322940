"""The same hostile agent against `pilot serve` as an MCP host launches it: a subprocess over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from pilot.app.answers import entry_kinds
from pilot.store import open_store
from tests.scenarios import ARTICLE, policy_with

from .conftest import BTC_SHORT, CONFIRM_EVERY_ORDER
from .hostile_agent import APPROVING_TOOLS, HostileAgent

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


async def test_over_stdio_the_agent_can_neither_approve_nor_forge_nor_lift_the_kill_switch(tmp_path):
    # Planned while the CLI channel was on (a human could be reached); placed after a human turned it off.
    with_cli = {"confirm": {**CONFIRM_EVERY_ORDER["confirm"], "cliChannel": True}}
    (tmp_path / "policy.json").write_text(json.dumps(policy_with(**with_cli)))
    serve = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pilot", "serve", "--home", str(tmp_path), "--scenario", str(ARTICLE)],
        cwd=str(REPO),
    )
    async with Client(serve) as client:  # declares no elicitation: no human can be asked
        agent = HostileAgent(client)
        names = await agent.tool_names()
        guesses = await agent.call_approving_tools()
        plan = await agent.plan(BTC_SHORT)
        (tmp_path / "policy.json").write_text(json.dumps(policy_with(**CONFIRM_EVERY_ORDER)))
        smuggled = await agent.place_with_smuggled_arguments(plan["plan_id"])
        forged = await agent.place_forged(("plan_" + "A" * 32, "' OR 1=1 --"))
        placed = await agent.place(plan["plan_id"])
        replayed = await agent.place(plan["plan_id"])
        await agent.attempt("activate_kill_switch", {"reason": "stdio"})
        lift = await agent.turn_kill_switch_off()
        growing = await agent.attempt("plan_order", BTC_SHORT)

    assert not names & set(APPROVING_TOOLS)
    assert all(guess.unknown_tool for guess in guesses)
    assert all(outcome.invalid_argument for outcome in smuggled)
    assert forged[0].rules == ["planNotFound"] and forged[1].invalid_argument
    assert placed.rules == ["confirmationChannelUnavailable"]
    assert replayed.rules == ["planAlreadyUsed"]
    assert not [o for o in lift if o.status == "done" and o.answer["data"]["kill_switch"] != "on"]  # type: ignore[index]
    assert growing.rules[0] == "tradingState"  # the kill switch, before any size the policy would cut
    async with await open_store(tmp_path / "journal" / "pilot.db") as store:
        assert (
            await store.journal.entries(kind=entry_kinds.ORDER_SENT) == []
        )  # nothing ever left for the exchange
        switches = await store.journal.entries(kind=entry_kinds.KILL_SWITCH)
        assert {(e.data["on"], e.actor) for e in switches} == {(True, "agent")}
        assert (await store.journal.verify()).ok
