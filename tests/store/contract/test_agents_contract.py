"""Agents' heartbeats on both engines (pilot.store.agents), which the dead-man's switch reads across
processes: a call stamped on the store's clock, sessions counted apart from calls, a process that is gone
known at once (its pid on SQLite, its session on PostgreSQL), and the rows of long-gone processes dropped,
never the newest call's."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pilot.store import Store, StoreLocation, holder_id
from pilot.store.agents import FORGET_AFTER
from tests.clocks import FakeClock

from ..support import T0
from .helpers import another_host, gone_holder

pytestmark = pytest.mark.anyio
HERE = holder_id("here")


async def left_behind(location: StoreLocation, home: Path, ticks: FakeClock, *sessions: int) -> list[str]:
    """Processes that beat (each with its open sessions) and are gone: their connection closed (PostgreSQL
    judges by it) and their pids no process has now (as SQLite judges)."""
    host = await another_host(location, home, ticks)
    holders = [gone_holder() for _ in sessions]
    for holder, count in zip(holders, sessions, strict=True):
        await host.agents.beat(holder, now=T0, sessions=count)
    await host.close()
    return holders


async def test_a_call_is_stamped_on_the_store_s_clock_and_a_session_count_alone_keeps_it(
    store: Store, ticks: FakeClock
) -> None:
    await store.agents.beat(HERE, now=T0, sessions=1)
    stamped = ticks.read()
    ticks.advance(5)
    await store.agents.beat(HERE, now=T0 + timedelta(seconds=5), sessions=0, called=False)
    (row,) = await store.agents.all()
    assert row.last_call == stamped and row.last_call_at == T0 and row.sessions == 0
    assert not row.gone  # this process, in this session


async def test_a_process_gone_with_sessions_open_is_known_at_once_and_its_sessions_settled(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    await store.agents.beat(HERE, now=T0, sessions=1)
    (left,) = await left_behind(location, home, ticks, 2)
    rows = {row.holder: row for row in await store.agents.all()}
    assert rows[left].gone and rows[left].sessions == 2 and not rows[HERE].gone
    await store.agents.settled(left)
    rows = {row.holder: row for row in await store.agents.all()}
    assert (rows[left].sessions, rows[HERE].sessions) == (0, 1)


async def test_old_rows_of_gone_processes_are_forgotten_but_never_the_newest_call(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    await left_behind(location, home, ticks, 0)  # an older call
    ticks.advance(1)
    (newest,) = await left_behind(location, home, ticks, 0)
    await store.agents.forget()  # gone a second, not FORGET_AFTER: kept
    assert len(await store.agents.all()) == 2
    ticks.advance(FORGET_AFTER.total_seconds())
    await store.agents.forget()
    assert [row.holder for row in await store.agents.all()] == [newest]
    await store.agents.beat(HERE, now=T0, sessions=1)
    ticks.advance(FORGET_AFTER.total_seconds())
    await store.agents.forget()
    assert [row.holder for row in await store.agents.all()] == [HERE]
