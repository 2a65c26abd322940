"""A kill switch (or loss limit) entry appended while a ledger reads the journal afresh never hides the one
before it (found here as a bug, fixed in pilot/app/runtime/ledger.py: a fresh read reads on from its mark at once).

A fresh read takes the journal's end (`mark`), then the newest kill switch and loss limit entries with
separate queries, leaving out what is newer than `mark`. When an entry of the same kind was appended between
those reads, the one left out had hidden the older one, and that judgement saw the switch off: 15 of 40
plans placed by freshly started servers filled while another process's agent kept switching it on.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.kill_switch import activate_kill_switch
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.ledger import Ledger
from pilot.app.runtime.runtime import Home, assemble_runtime
from pilot.core.facts import Side
from pilot.store import iso_utc, open_store
from tests.venue import connect_adapter

from .conftest import CREATE, write_policy
from .one_home import Venue, kill_switch_hammer, market

pytestmark = pytest.mark.anyio
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PLANS = 40


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (entry_kinds.KILL_SWITCH, {"on": True, "by": "agent", "reason": "stop"}),
        (entry_kinds.LOSS_LIMIT, {"on": True, "by": "pilot", "day": T0.date().isoformat()}),
    ],
    ids=["kill_switch", "loss_limit"],
)
async def test_an_entry_appended_while_the_ledger_reads_afresh_does_not_hide_the_one_before(
    tmp_path: Path, kind: str, data: dict[str, Any]
) -> None:
    """The smallest reproduction: one connection, two tasks; the append queues behind the ledger's first read
    (the end of the journal) and runs before its second (the newest entry of the kind)."""
    async with await open_store(tmp_path / "journal" / "pilot.db", now=T0) as store:
        journal = store.journal
        first = await journal.append(kind, data, now=T0, actor="agent")
        ledger = Ledger(journal)  # a server's first judgement (or one after its clock was set back)
        state, second = await asyncio.gather(
            ledger.state(T0), journal.append(kind, data, now=T0, actor="agent")
        )
        newest = state.kill_switch if kind == entry_kinds.KILL_SWITCH else state.loss_limit
        assert newest is not None, (
            f"{kind} entries {first.seq} and {second.seq} are on; the ledger saw neither"
        )
        assert newest.seq in (first.seq, second.seq)


async def test_servers_that_just_started_never_send_a_growing_order_while_the_kill_switch_is_on(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """Plans made before the kill switch; then, while another process's agent keeps switching it on, each
    plan is placed by a server that has just started (its ledger reads the journal afresh)."""
    write_policy(tmp_path, maxNotionalUsd=1000, dailyOrderCap=1000)
    venue = Venue.of(paper)
    context = multiprocessing.get_context("spawn")
    started, stop = context.Event(), context.Event()
    adapter = connect_adapter(venue.url, venue.api_key, venue.api_secret)
    async with await open_store(Home(tmp_path).database_path) as store:
        first = assemble_runtime(tmp_path, store, adapter, clock)
        plans = [await plan_order(first, market(Side.BUY, "0.0001")) for _ in range(PLANS)]
        assert {p.status for p in plans} == {"ok"}
        await activate_kill_switch(first, "stop")
        agent = context.Process(
            target=kill_switch_hammer, args=(str(tmp_path), venue, iso_utc(clock.now()), started, stop)
        )
        agent.start()
        try:
            assert await asyncio.to_thread(started.wait, 60)
            placed = []
            for plan in plans:
                assert plan.plan_id is not None
                just_started = assemble_runtime(tmp_path, store, adapter, clock)  # a fresh ledger
                placed.append((await place_order(just_started, plan.plan_id)).status)
        finally:
            stop.set()
            await asyncio.to_thread(agent.join, 60)
            await adapter.close()
    sent = paper.request_count(CREATE)
    assert sent == 0, f"{sent} of {PLANS} growing orders were sent under the kill switch: {placed}"
    assert set(placed) == {"refused"}
