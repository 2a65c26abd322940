"""Servers built in one process share the SDK's records of the tools' signatures (built once per process,
pilot/server/sdk.py's add_tool), never what each server makes of them: its runtime, its environment in
every description, its strict argument models, its trimmed schemas."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from pilot.paper import PaperExchange
from pilot.server import build_server
from tests.app.conftest import call, open_test_runtime, venue_on, write_policy
from tests.clocks import FakeClock

pytestmark = pytest.mark.anyio


async def test_servers_on_two_venues_built_in_turn_each_answer_for_their_own_runtime(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        servers: dict[str, Any] = {}
        runtimes: dict[str, Any] = {}
        for round_ in range(3):  # built again and again: nothing a server rewrites piles up on the records
            for name in ("bybit", "okx"):
                venue = stack.enter_context(venue_on(name, paper))
                home = tmp_path / f"{name}-{round_}"
                home.mkdir()
                venue.write_policy(home)
                runtime = await stack.enter_async_context(open_test_runtime(home, venue.endpoint, clock))
                runtimes[f"{name}-{round_}"] = runtime
                servers[f"{name}-{round_}"] = build_server(runtime, tools="all" if round_ else "read")
        listings = {key: await tools_of(server) for key, server in servers.items()}

        for key, listed in listings.items():
            environment = runtimes[key].environment
            for tool in listed.values():
                assert tool.description.count(environment) == 1, (key, tool.name)
                assert tool.input_schema.get("additionalProperties") is False, (key, tool.name)
        assert listings["bybit-1"] == listings["bybit-2"]
        assert len(listings["bybit-0"]) < len(listings["bybit-1"])  # "read" left out what "all" keeps
        assert {n: t.input_schema for n, t in listings["okx-2"].items()} == {
            n: t.input_schema for n, t in listings["bybit-2"].items()
        }

        # a tool called on one server acts on its own runtime's home only
        async with Client(servers["bybit-1"]) as client:
            switched = await call(client, "activate_kill_switch", {"reason": "one server"})
        assert switched["environment"] == "paper"
        async with Client(servers["okx-1"]) as client:
            policy = await call(client, "get_policy")
        assert policy["environment"] == "okx-demo"
        assert policy["data"]["kill_switch"] is False
        async with Client(servers["bybit-2"]) as client:
            assert (await call(client, "get_policy"))["data"]["kill_switch"] is False
        async with Client(servers["bybit-1"]) as client:
            assert (await call(client, "get_policy"))["data"]["kill_switch"] is True


async def tools_of(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_each_servers_forms_ask_by_its_own_homes_policy(
    tmp_path: Path, paper: PaperExchange, clock: FakeClock
) -> None:
    """A tool that may ask a human (its form's resolver a server's own) asks by the policy of the home of
    the server it was called on, whichever server was built first."""
    human = answering_yes()
    async with contextlib.AsyncExitStack() as stack:
        servers = {}
        for name, confirm in (("asks", {"actions": ["set_leverage"]}), ("free", {"actions": []})):
            home = tmp_path / name
            home.mkdir()
            write_policy(home, confirm=confirm)
            runtime = await stack.enter_async_context(open_test_runtime(home, paper, clock))
            servers[name] = build_server(runtime)
        leverage = {"symbol": "BTCUSDT", "leverage": "1"}
        async with Client(servers["free"], elicitation_callback=human) as client:
            free = await call(client, "set_leverage", leverage)
        assert (free["status"], len(human.seen)) == ("done", 0)
        async with Client(servers["asks"], elicitation_callback=human) as client:
            asked = await call(client, "set_leverage", leverage)
        assert (asked["status"], len(human.seen)) == ("done", 1)


def answering_yes() -> Any:
    seen: list[str] = []

    async def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    callback.seen = seen  # type: ignore[attr-defined]
    return callback
