"""`pilot agent revoke NAME` from the human's command line (found walking issue 40's agents as a user): the
desk the CLI opens has no exchange, and the revoke's cancel of the agent's resting orders asked it for one,
so every revoke ended in a traceback after cutting the credential. It now cancels them on the home's paper
exchange when one runs (or `--exchange`), and with none it still cuts the credential, ends the plans, says
the orders were not looked at, and a second revoke with an exchange finishes the job."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilot.app.human.agent_desk import add_agent
from pilot.app.runtime.runtime import Runtime
from tests.app.conftest import call

from .conftest import pilot, pilot_json
from .test_agent_list import agent_session

pytestmark = pytest.mark.anyio
RESTING = {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001", "order_type": "limit", "price": "50000"}


async def test_revoke_cancels_the_agents_resting_order_and_plan_on_the_homes_running_paper_exchange(
    home: Path, runtime: Runtime
):
    credential = await add_agent(runtime, "gone", "trade")
    async with agent_session(runtime, credential) as client:
        placed = await call(
            client, "place_order", {"plan_id": (await call(client, "plan_order", RESTING))["plan_id"]}
        )
        unused = await call(client, "plan_order", RESTING)
    assert placed["status"] == "open", placed

    revoked = await pilot_json("agent", "revoke", "gone", "--home", str(home))

    assert revoked["orders_looked_at"] is True
    assert revoked["cancelled"] == [placed["order_id"]] and revoked["plans_ended"] == [unused["plan_id"]]
    assert await runtime.exchange.get_open_orders("linear") == []


async def test_revoke_with_no_exchange_running_ends_the_credential_and_can_be_run_again(home: Path):
    added = await pilot("agent", "add", "gone", "--role", "trade", "--home", str(home))
    assert added.exit_code == 0, added.output

    first = await pilot_json("agent", "revoke", "gone", "--home", str(home))
    again = await pilot_json("agent", "revoke", "gone", "--home", str(home))
    never = await pilot("agent", "revoke", "nobody", "--home", str(home))

    assert first["orders_looked_at"] is False and first["cancelled"] == []
    assert again["journal_seq"] == first["journal_seq"]  # the one revoke, not journaled twice
    assert never.exit_code == 2
    listed = await pilot_json("agent", "list", "--home", str(home))
    assert [(a["name"], a["revoked"]) for a in listed["agents"]] == [("gone", True)]
