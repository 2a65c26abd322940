"""A journal rolled back by someone who can write the home (an agent whose file tools reach it, a backup
restored by mistake) is evident without a human's help.

The home traded twice and the agent turned the kill switch on. Then the journal is rolled back one of four
ways: its tail cut (the switch and the second order deleted, triggers dropped first), the database swapped
for an older genuine copy of itself, every row deleted, or the database files deleted. Each way is seen by
`pilot journal verify`, by `pilot doctor`'s journal check and by `pilot kill-switch status`, and a server
started on it refuses growing orders while reducing ones still work, until the human has looked and turned
the switch off (`pilot kill-switch off`); the journal keeps what was found.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.human.kill_switch import activate_kill_switch
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.service.boot import open_runtime
from pilot.app.service.doctor import check_journal
from pilot.core.facts import OrderType, Side
from pilot.store.schema import TRIGGERS
from tests.cli.conftest import pilot
from tests.scenarios import ARTICLE
from tests.store.support import drop_triggers, raw

from .conftest import write_policy
from .one_home import market, rules_of

pytestmark = pytest.mark.anyio


def database(home: Path) -> Path:
    return home / "journal" / "pilot.db"


def deleting(home: Path, where: str, *params: Any) -> None:
    """Delete journal rows behind the guard's back and put the guard back, leaving no trace of its absence."""
    with raw(database(home)) as conn:
        drop_triggers(conn, "journal_no_delete")
        conn.execute(f"DELETE FROM journal {where}", params)
        conn.execute(TRIGGERS["journal_no_delete"])


def cut_tail(home: Path, copy: Path) -> None:
    """Delete every entry after the first order's outcome (the second order and the switch go)."""
    with raw(database(home)) as conn:
        kept = conn.execute("SELECT MIN(seq) FROM journal WHERE kind = 'order.outcome'").fetchone()[0]
    deleting(home, "WHERE seq > ?", kept)


def swap_for_older_copy(home: Path, copy: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{database(home)}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(copy, database(home))


def empty(home: Path, copy: Path) -> None:
    deleting(home, "")


def delete_files(home: Path, copy: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database(home)}{suffix}").unlink(missing_ok=True)


ROLLBACKS: dict[str, Callable[[Path, Path], None]] = {
    "cut_tail": cut_tail,
    "older_copy": swap_for_older_copy,
    "emptied": empty,
    "deleted": delete_files,
}


def reduce_only_sell(qty: str) -> PlanRequest:
    return PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal(qty), None, None, True, "linear")


async def traded_and_switched(home: Path, paper: Any, clock: Any) -> Path:
    """Two orders, a copy of the database between them, then the agent's kill switch. Returns the copy."""
    copy = home.parent / f"{home.name}-copy.db"
    async with open_runtime(home, paper_url=paper.url, scenario=ARTICLE, clock=clock) as server:
        for index in range(2):
            plan = await plan_order(server, market(Side.BUY, "0.0001"))
            assert plan.plan_id is not None, plan
            assert (await place_order(server, plan.plan_id)).status == "filled"
            if index == 0:
                with raw(database(home)) as conn, sqlite3.connect(copy) as target:
                    conn.backup(target)
        await activate_kill_switch(server, "the agent stops everything")
    return copy


@pytest.mark.parametrize("how", list(ROLLBACKS))
async def test_a_rolled_back_journal_is_seen_and_a_fresh_server_refuses_growing_orders_until_a_human_looks(
    tmp_path: Path, paper: Any, clock: Any, how: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write_policy(home, dailyOrderCap=3)
    copy = await traded_and_switched(home, paper, clock)
    ROLLBACKS[how](home, copy)

    verified = await pilot("journal", "verify", "--home", str(home), "--format", "json")
    doctor = await check_journal(database(home))
    status = await pilot("kill-switch", "status", "--home", str(home), "--format", "json")
    async with open_runtime(home, paper_url=paper.url, scenario=ARTICLE, clock=clock) as server:
        growing = await plan_order(server, market(Side.BUY, "0.0001"))
        reducing = await plan_order(server, reduce_only_sell("0.0001"))
    doctor_after_start = await check_journal(database(home))  # the finding is journaled; no human looked yet
    off = await pilot("kill-switch", "off", "--reason", "looked: restored a backup", "--home", str(home))
    async with open_runtime(home, paper_url=paper.url, scenario=ARTICLE, clock=clock) as server:
        after_looking = await plan_order(server, market(Side.BUY, "0.0001"))
    seen_after = await pilot("journal", "verify", "--home", str(home), "--format", "json")
    doctor_after_off = await check_journal(database(home))

    assert verified.exit_code != 0, verified.output  # 1: the anchored entry is gone; 2: the file itself is
    assert not doctor.ok, doctor
    assert status.exit_code != 0 or json.loads(status.stdout)["on"] is True, status.output
    assert growing.status == "refused" and rules_of(growing) == {"tradingState"}, growing
    assert reducing.status == "ok", reducing
    assert not doctor_after_start.ok, doctor_after_start
    assert off.exit_code == 0, off.output
    assert after_looking.status == "ok", after_looking
    assert seen_after.exit_code == 0, seen_after.output
    assert doctor_after_off.ok, doctor_after_off


async def test_a_journal_rolled_back_under_a_running_server_takes_no_growing_send(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """The server's own agent turns the kill switch on; an earlier copy of the journal, from before the switch,
    is restored under the running server before its ledger read the switch. The plan it placed next was
    judged with the switch off and filled (found by the cap-invariant state machine); the send is journaled
    only while the journal holds the entry it was anchored at, so it is judged again and refused."""
    from .one_home import Venue, open_test_runtime

    write_policy(tmp_path, dailyOrderCap=3)
    copy = tmp_path / "copy.db"
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        plan = await plan_order(server, market(Side.BUY, "0.0001"))
        assert plan.plan_id is not None
        with raw(database(tmp_path)) as conn, sqlite3.connect(copy) as target:
            conn.backup(target)
        await activate_kill_switch(server, "stop")
        with sqlite3.connect(copy) as earlier, raw(database(tmp_path)) as conn:
            earlier.backup(conn)
        placed = await place_order(server, plan.plan_id)
    assert placed.status == "refused" and rules_of(placed) == {"tradingState"}, placed
    assert paper.request_count("/v5/order/create") == 0
