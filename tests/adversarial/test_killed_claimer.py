"""A server killed (SIGKILL) after claiming a plan and taking the send turn, before sending anything.

Issue 25 measured the plan stuck for about three and a half minutes ("its first use is still in progress")
and the send turn held by the dead process until its lease ran out (two minutes; another server's
place_order waited a minute and answered sendTurnBusy). A process that is gone cannot send: the running
server's next upkeep round releases the plan, and its next place_order takes the turn at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.service.upkeep import upkeep
from pilot.core.facts import Side
from tests.app.test_sends_are_never_orphaned import claiming_child

from .conftest import CREATE, write_policy
from .one_home import Venue, market, open_test_runtime, rules_of, until

pytestmark = pytest.mark.anyio
TICKERS = "/v5/market/tickers"


async def test_a_server_killed_between_its_claim_and_its_send_frees_the_plan_and_the_turn_at_once(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path, maxNotionalUsd=1000, maxOrderNotionalUsd=1000)
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as survivor:
        victims = await plan_order(survivor, market(Side.BUY, "0.0001"))
        mine = await plan_order(survivor, market(Side.BUY, "0.0001"))
        assert victims.plan_id is not None and mine.plan_id is not None
        paper.add_fault(TICKERS, "latency", delay_ms=4000)  # the victim's re-check reads are held
        child = claiming_child(tmp_path, paper, victims.plan_id)
        try:
            await until(lambda: paper.working > 0)  # claimed, in the send turn, reading fresh facts
            child.kill()
        finally:
            await asyncio.to_thread(child.wait, 10)
        await upkeep(survivor)  # one round of the running server's upkeep; no time passes
        released = await survivor.store.plans.get(victims.plan_id)
        again = await place_order(survivor, victims.plan_id)
        placed = await asyncio.wait_for(place_order(survivor, mine.plan_id), timeout=10)
    assert released is not None and released.outcome == {"status": "refused"}
    assert again.status == "refused" and rules_of(again) == {"planAlreadyUsed"}
    assert again.next_safe_action is not None and again.next_safe_action.tool == "plan_order"
    assert placed.status == "filled", placed
    assert paper.request_count(CREATE) == 1
