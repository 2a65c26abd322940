"""`pilot kill-switch`: the human's switch, journaled as the human, read back by the server's runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.orders.plan import plan_order
from pilot.app.runtime.runtime import Runtime

from .conftest import btc, pilot

pytestmark = pytest.mark.anyio


async def test_on_and_off_are_journaled_with_actor_human(home: Path, runtime: Runtime) -> None:
    switched_on = await pilot("kill-switch", "on", "--reason", "going to bed", "--home", str(home))
    on_in_server = await runtime.kill_switch_on()
    switched_off = await pilot("kill-switch", "off", "--home", str(home))

    assert switched_on.exit_code == 0 and switched_off.exit_code == 0
    entries = await runtime.store.journal.entries(kind=entry_kinds.KILL_SWITCH)
    assert [(e.actor, e.data) for e in entries] == [
        ("human", {"on": True, "by": "human", "reason": "going to bed"}),
        ("human", {"on": False, "by": "human", "reason": ""}),
    ]
    assert on_in_server and not await runtime.kill_switch_on()


async def test_while_on_a_growing_order_is_refused(home: Path, runtime: Runtime) -> None:
    await pilot("kill-switch", "on", "--home", str(home))

    answer = await plan_order(runtime, btc())

    assert answer.status == "refused"
    assert answer.violations and answer.violations[0].rule == "tradingState"


async def test_status_reads_the_journal_and_writes_nothing(home: Path, runtime: Runtime) -> None:
    before = await pilot("kill-switch", "status", "--home", str(home))
    await pilot("kill-switch", "on", "--home", str(home))
    after = await pilot("kill-switch", "status", "--home", str(home))

    assert before.exit_code == 0 and after.exit_code == 0
    assert len(await runtime.store.journal.entries()) == 1
