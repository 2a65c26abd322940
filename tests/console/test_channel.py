"""The console channel is the CLI's queue under another switch: an action approved there is judged again
when the server runs it, and the channel's switch is read fresh from policy.json on every decision."""

from __future__ import annotations

import pytest
from mcp import Client

from pilot.app.human.desk import ChannelOff, decide
from pilot.app.service.upkeep import upkeep
from pilot.server import build_server
from tests.app.conftest import BTC_SHORT, CREATE, call, write_policy

pytestmark = pytest.mark.anyio


async def test_an_approval_in_the_console_is_judged_again_when_the_server_runs_it(console, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    decided = await decide(console.runtime, parked["confirmation_id"], approve=True, via="console")
    assert decided.record is not None and decided.record.decided_by == "human:console"

    write_policy(  # the human tightens the cap after approving
        console.home,
        maxNotionalUsd=10,
        maxOrderNotionalUsd=10,
        confirm={"aboveNotionalUsd": 1, "consoleChannel": True},
    )
    await upkeep(console.runtime)

    record = await console.runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "executed" and record.result is not None
    assert record.result["status"] == "refused"
    assert {v["rule"] for v in record.result["violations"]} >= {"maxOrderNotionalUsd"}
    assert paper.request_count(CREATE) == 0


async def test_with_only_the_cli_channel_on_the_console_cannot_decide_and_the_other_way_round(console, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert parked["status"] == "pending_confirmation"
    with pytest.raises(ChannelOff) as console_off:
        await decide(console.runtime, parked["confirmation_id"], approve=True, via="console")
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    with pytest.raises(ChannelOff) as cli_off:
        await decide(console.runtime, parked["confirmation_id"], approve=True, via="cli")
    assert (console_off.value.code, cli_off.value.code) == ("console_channel_off", "cli_channel_off")
    record = await console.runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "pending"


async def test_without_either_channel_a_client_without_forms_is_refused_not_parked(console, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1})
    async with Client(build_server(console.runtime)) as client:
        refused = await call(client, "plan_order", BTC_SHORT)
    assert refused["status"] == "refused"
    assert [v["rule"] for v in refused["violations"]] == ["confirm.aboveNotionalUsd"]
