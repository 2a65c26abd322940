"""The kill switch thrown in another process reaches a running server's very next judgement (its ledger is
warm: it reads on from where it was), whoever throws it: another server's agent, or the human with the CLI
(`pilot kill-switch on|off`, its own process and store connection)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.core.facts import OrderType, Side
from pilot.store import iso_utc
from tests.store.support import run_in_processes

from .conftest import CREATE, write_policy
from .one_home import Venue, agent_turns_the_kill_switch_on, market, open_test_runtime, rules_of

pytestmark = pytest.mark.anyio


async def human(home: Path, *args: str) -> dict[str, Any]:
    """`pilot kill-switch ARGS --home HOME --format json` in a process of its own; exit code 0 expected."""
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pilot", "kill-switch", *args, "--home", str(home), "--format", "json"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def reduce_only_sell(qty: str) -> PlanRequest:
    return PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal(qty), None, None, True, "linear")


async def test_a_switch_thrown_elsewhere_stops_a_running_servers_next_plan_and_place(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path)
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        opened = await plan_order(server, market(Side.BUY, "0.0001"))
        assert opened.plan_id is not None
        assert (await place_order(server, opened.plan_id)).status == "filled"  # a position to reduce
        earlier = await plan_order(server, market(Side.BUY, "0.0001"))  # planned before the switch
        assert earlier.plan_id is not None

        [seq] = await asyncio.to_thread(
            run_in_processes,
            agent_turns_the_kill_switch_on,
            [(str(tmp_path), Venue.of(paper), iso_utc(clock.now()))],
        )
        assert seq > 0
        after_agent = await plan_order(server, market(Side.BUY, "0.0001"))
        placed_earlier = await place_order(server, earlier.plan_id)
        reducing = await plan_order(server, reduce_only_sell("0.0001"))

        off = await human(tmp_path, "off", "--reason", "checked")
        after_off = await plan_order(server, market(Side.BUY, "0.0001"))

        on = await human(tmp_path, "on", "--reason", "again")
        after_on = await plan_order(server, market(Side.BUY, "0.0001"))
        state = (await server.journal_state()).kill_switch_on

    assert after_agent.status == "refused" and rules_of(after_agent) == {"tradingState"}
    assert placed_earlier.status == "refused" and "tradingState" in rules_of(placed_earlier)
    assert reducing.status == "ok"  # risk-reducing orders keep working
    assert off and after_off.status == "ok"
    assert on and after_on.status == "refused" and rules_of(after_on) == {"tradingState"}
    assert state is True
    assert paper.request_count(CREATE) == 1
