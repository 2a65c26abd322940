"""Agents' heartbeats on SQLite's one machine (the rest is the contract, tests/store/contract): a process of
an earlier boot is gone, whatever host its holder names."""

from __future__ import annotations

import pytest

from pilot.store import Instant, Store
from tests.clocks import FakeClock

from .support import T0

pytestmark = pytest.mark.anyio


async def test_a_process_of_an_earlier_boot_is_gone_whatever_host_it_names(
    store: Store, ticks: FakeClock
) -> None:
    ticks.ticks = Instant("an-earlier-boot", 1_000_000)
    await store.agents.beat("elsewhere:1:old", now=T0, sessions=2)
    ticks.ticks = Instant("this-boot", 60_000_000)  # a minute into this boot
    await store.agents.beat("elsewhere:2:this-boot", now=T0, sessions=1, called=False)
    rows = {row.holder: row for row in await store.agents.all()}
    assert rows["elsewhere:1:old"].gone and not rows["elsewhere:2:this-boot"].gone
