"""The dead-man's switch for a server that crashed: its agent left an order resting, the server was killed
with SIGKILL (no session end, no upkeep), and the next server to start on the home cancels the order before
any agent calls it, because the dead server's heartbeat row still says a session was open."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.service.upkeep import upkeep
from pilot.store import iso_utc

from .conftest import write_policy
from .one_home import Venue, open_test_runtime, resting_agent

pytestmark = pytest.mark.anyio


async def test_the_next_server_to_start_cancels_what_a_killed_one_s_agent_left_resting(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path, deadManSwitch={"onSessionEnd": True, "reducing": True}, maxNotionalUsd=100)
    context = multiprocessing.get_context("spawn")
    rested = context.Event()
    victim = context.Process(
        target=resting_agent, args=(str(tmp_path), Venue.of(paper), iso_utc(clock.now()), "70000", rested)
    )
    victim.start()
    try:
        assert await asyncio.to_thread(rested.wait, 60)
        victim.kill()
    finally:
        await asyncio.to_thread(victim.join, 60)
    assert [o.price for o in paper.orders() if o.leaves_qty > 0] == [70000]
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as survivor:
        await upkeep(survivor)  # pilot serve's start-up round, before any agent call
        fired = await survivor.store.journal.entries(kind=entry_kinds.DEAD_MAN)
        state = await survivor.journal_state()
    assert [o for o in paper.orders() if o.leaves_qty > 0] == []
    assert len(fired) == 1 and fired[0].data["why"] == "session_end" and fired[0].data["reducing"] is True
    assert state.kill_switch_on
