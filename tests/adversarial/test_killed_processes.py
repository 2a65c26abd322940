"""Processes killed with SIGKILL in the middle of their work, while another server on the home runs on.

A server killed between `order.sent` and the send's outcome: the survivor, whose ledger is warm (it reads on,
it does not restart), counts the send as pending at once, refuses what would pass the cap with it, and never
lets the plan be sent again. Writers killed in the middle of an append storm: the journal stays one unbroken
sealed chain, and the next append links onto it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.road.gate import TURN_TTL
from pilot.core.facts import Side
from pilot.store import Store, iso_utc, open_store

from .conftest import CREATE, write_policy
from .one_home import (
    Venue,
    held_sender,
    journal_hammer,
    market,
    open_test_runtime,
    restated,
    rules_of,
    seen,
    until,
)

pytestmark = pytest.mark.anyio
SIXTEEN_DOLLARS = "0.0002"  # of BTC: two do not fit the $25 cap together
HELD_MS = 3500  # the create is held this long at the exchange, then executed (inside the 5 s recv window)


async def test_a_server_killed_mid_send_leaves_a_send_the_running_survivor_counts_at_once(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path, planTtlSeconds=300)  # a plan outlives the dead server's lease
    context = multiprocessing.get_context("spawn")
    planned, go = context.Event(), context.Event()
    venue = Venue.of(paper)
    async with open_test_runtime(tmp_path, venue, clock) as survivor:
        warm = await plan_order(survivor, market(Side.BUY, SIXTEEN_DOLLARS))  # passes: nothing held yet
        assert warm.plan_id is not None
        victim = context.Process(
            target=held_sender,
            args=(str(tmp_path), venue, iso_utc(clock.now()), SIXTEEN_DOLLARS, planned, go),
        )
        victim.start()
        try:
            assert await asyncio.to_thread(planned.wait, 60)
            paper.add_fault(CREATE, "latency", delay_ms=HELD_MS)
            go.set()
            await until(
                lambda: paper.request_count(CREATE) == 1
            )  # journaled, then sent: held at the exchange
            victim.kill()
        finally:
            await asyncio.to_thread(victim.join, 60)
        [sent] = await survivor.store.journal.entries(kind=entry_kinds.ORDER_SENT)
        assert (
            await survivor.store.journal.entries(kind=entry_kinds.ORDER_OUTCOME) == []
        )  # killed before its answer
        fresh = await plan_order(survivor, market(Side.BUY, SIXTEEN_DOLLARS))
        clock.advance(TURN_TTL.total_seconds() + 1)  # the dead server held the send turn: its lease runs out
        placed_warm = await place_order(survivor, warm.plan_id)  # planned before the send: judged again now
        held = paper.position("BTCUSDT").size
        replayed = await place_order(survivor, str(sent.plan_id))  # the killed server's plan, once more
        await until(lambda: paper.working == 0 and paper.position("BTCUSDT").size != 0)
        after = await plan_order(survivor, market(Side.BUY, SIXTEEN_DOLLARS))
        ledger = seen(await survivor.ledger.state(clock.now()))
        journal = await restated(survivor.store.journal, clock.now())
        verified = await survivor.store.journal.verify()
    assert held == 0, "the exchange executed the held create before the survivor judged: nothing was tested"
    assert fresh.status == "refused" and "maxNotionalUsd" in rules_of(fresh)
    assert fresh.snapshot is not None and Decimal(fresh.snapshot.pending_qty["buy"]) == Decimal(
        SIXTEEN_DOLLARS
    )
    assert placed_warm.status == "refused" and "maxNotionalUsd" in rules_of(placed_warm)
    assert replayed.status == "refused"  # already used: the plan is never sent twice
    assert after.status == "refused"  # now the position itself holds the cap
    assert paper.request_count(CREATE) == 1
    assert abs(paper.position("BTCUSDT").size) * Decimal("80220.1") <= 25
    assert ledger == journal and verified.ok


async def test_writers_killed_mid_append_storm_leave_one_unbroken_chain(tmp_path: Path) -> None:
    db_path = tmp_path / "journal" / "pilot.db"
    context = multiprocessing.get_context("spawn")
    now = datetime.now(UTC)
    async with await open_store(db_path) as store:
        starts = [context.Event() for _ in range(3)]
        writers = [
            context.Process(target=journal_hammer, args=(str(db_path), f"w{i}", iso_utc(now), started))
            for i, started in enumerate(starts)
        ]
        for writer in writers:
            writer.start()
        try:
            for started in starts:
                assert await asyncio.to_thread(started.wait, 60)
            for writer in writers:  # each killed wherever it is: reading the head, sealing, inside the insert
                await grown_by(store, 200)
                writer.kill()
                await asyncio.to_thread(writer.join, 60)
        finally:
            for writer in writers:
                writer.kill()
                await asyncio.to_thread(writer.join, 60)
        report = await store.journal.verify()
        end = await store.journal.mark()
        last = await store.journal.append("test.after", {"ok": True}, now=now)
        again = await store.journal.verify()
    assert report.ok, report
    assert report.count == end.seq >= 600
    assert again.ok and last.seq == end.seq + 1 and again.count == last.seq


async def grown_by(store: Store, entries: int) -> None:
    """Wait (bounded) until `entries` more entries are in the journal."""
    loop = asyncio.get_running_loop()
    deadline, target = loop.time() + 60, (await store.journal.mark()).seq + entries
    while (await store.journal.mark()).seq < target:
        assert loop.time() < deadline, "the writers stopped writing"
        await asyncio.sleep(0.005)
