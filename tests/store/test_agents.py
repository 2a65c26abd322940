"""Agents' heartbeats (pilot.store.agents), which the dead-man's switch reads across processes: a call stamped
on the store's clock, sessions counted apart from calls, a process of an earlier boot known gone, and the
rows of long-gone processes dropped, never the newest call's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pilot.store import Instant, Store, holder_id
from pilot.store.agents import FORGET_AFTER
from tests.clocks import FakeClock

from .support import T0

pytestmark = pytest.mark.anyio
HERE = holder_id("here")


async def test_a_call_is_stamped_on_the_store_s_clock_and_a_session_count_alone_keeps_it(
    store: Store, ticks: FakeClock
) -> None:
    await store.agents.beat(HERE, now=T0, sessions=1)
    stamped = ticks.read()
    ticks.advance(5)
    await store.agents.beat(HERE, now=T0 + timedelta(seconds=5), sessions=0, called=False)
    (row,) = await store.agents.all()
    assert row.last_call == stamped and row.last_call_at == T0 and row.sessions == 0
    assert not row.gone(store.agents.now())  # this process, in this boot


async def test_a_process_of_an_earlier_boot_is_gone_and_its_old_row_is_forgotten_but_not_the_newest(
    store: Store, ticks: FakeClock
) -> None:
    this_boot = Instant("this-boot", 60_000_000)  # a minute into this boot
    ticks.ticks = Instant("an-earlier-boot", 1_000_000)
    await store.agents.beat("elsewhere:1:old", now=T0, sessions=0)
    await store.agents.beat("elsewhere:2:left-open", now=T0, sessions=2)
    ticks.ticks = this_boot
    here = store.agents.now()
    rows = {row.holder: row for row in await store.agents.all()}
    assert rows["elsewhere:1:old"].gone(here) and rows["elsewhere:2:left-open"].gone(here)
    await store.agents.settled("elsewhere:2:left-open")  # its sessions were dealt with
    await store.agents.forget()  # gone at least a minute, not FORGET_AFTER: kept
    assert len(await store.agents.all()) == 2
    await store.agents.beat(HERE, now=T0 + FORGET_AFTER, sessions=1)
    ticks.advance(FORGET_AFTER.total_seconds())
    await store.agents.forget()
    assert [row.holder for row in await store.agents.all()] == [HERE]
