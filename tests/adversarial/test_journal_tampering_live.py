"""Someone who can write the database file (but not read the journal key) changes it under a running server,
between two of its ledger's reads.

- Rows forged after the ledger's mark (a human's "kill switch off", a lookup that says an unsettled send
  filled) are not Pilot's: the server's next judgement, and a server started afterwards, ignore them.
- The database replaced by an earlier copy of itself while the server runs (a restore through SQLite's
  backup API): the ledger's mark is gone, it reads afresh and counts what the journal now holds, sees that
  the journal no longer holds the entry it was anchored at (pilot.store.anchor) and refuses growing orders;
  the next upkeep round turns the kill switch on with what it found.
"""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.app.answers import entry_kinds
from pilot.app.human.kill_switch import activate_kill_switch
from pilot.app.orders.inputs import PlanRequest
from pilot.app.orders.place import place_order
from pilot.app.orders.plan import plan_order
from pilot.app.service.upkeep import upkeep
from pilot.core.facts import OrderType, Side
from tests.store.support import forge_entry, raw

from .conftest import CREATE, write_policy
from .one_home import Venue, market, open_test_runtime, restated, rules_of, seen, until

pytestmark = pytest.mark.anyio
BAD_SEAL = "0" * 64  # the seal trigger wants one; without the key, no right one can be written


async def test_a_forged_kill_switch_off_between_two_judgements_is_never_obeyed(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path)
    venue = Venue.of(paper)
    async with open_test_runtime(tmp_path, venue, clock) as server:
        assert (await plan_order(server, market(Side.BUY, "0.0001"))).status == "ok"  # the ledger is warm
        await activate_kill_switch(server, "stop")
        planned_before = await plan_order(server, market(Side.BUY, "0.0001"))
        with raw(tmp_path / "journal" / "pilot.db") as conn:
            forge_entry(
                conn,
                entry_kinds.KILL_SWITCH,
                {"on": False, "by": "human", "reason": ""},
                actor="human",
                seal=BAD_SEAL,
            )
        warm = await plan_order(server, market(Side.BUY, "0.0001"))
        async with open_test_runtime(tmp_path, venue, clock) as started_after:
            fresh = await plan_order(started_after, market(Side.BUY, "0.0001"))
        report = await server.store.journal.verify()
    assert planned_before.status == "refused"
    for answer in (warm, fresh):
        assert answer.status == "refused" and rules_of(answer) == {"tradingState"}
    assert not report.ok and report.reason == "seal_mismatch"
    assert paper.request_count(CREATE) == 0


async def test_a_forged_lookup_that_settles_a_held_send_does_not_free_its_exposure(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    """A send is held at the exchange (outcome unknown); a forged order.resolved says it filled: the next
    order that would pass the cap only without it is still refused, by the warm server and a fresh one."""
    write_policy(tmp_path)
    venue = Venue.of(paper)
    # The create is held past the timeout (its outcome unknown); the reads, a loaded machine's included, are not.
    async with open_test_runtime(tmp_path, venue, clock, timeout_seconds=1.5) as sender:
        plan = await plan_order(sender, market(Side.BUY, "0.0002"))
        assert plan.plan_id is not None
        paper.add_fault(CREATE, "latency", delay_ms=4000)
        placed = await place_order(sender, plan.plan_id)
        assert placed.status == "outcome_unknown" and placed.order_link_id
        with raw(tmp_path / "journal" / "pilot.db") as conn:
            settled = {"status": "filled", "order_link_id": placed.order_link_id, "filled_qty": "0.0002"}
            forge_entry(conn, entry_kinds.ORDER_RESOLVED, settled, actor="pilot", seal=BAD_SEAL)
            forge_entry(
                conn,
                entry_kinds.ORDER_OUTCOME,
                {**settled, "plan_id": plan.plan_id},
                actor="agent",
                seal=BAD_SEAL,
            )
        warm = await plan_order(sender, market(Side.BUY, "0.0002"))
        held_when_judged = paper.position("BTCUSDT").size
        async with open_test_runtime(tmp_path, venue, clock) as started_after:
            fresh = await plan_order(started_after, market(Side.BUY, "0.0002"))
            held_when_fresh_judged = paper.position("BTCUSDT").size
        await until(lambda: paper.working == 0)
    assert held_when_judged == 0 and held_when_fresh_judged == 0, "the exchange executed before the checks"
    for answer in (warm, fresh):
        assert answer.status == "refused" and "maxNotionalUsd" in rules_of(answer)
        assert answer.snapshot is not None and Decimal(answer.snapshot.pending_qty["buy"]) == Decimal(
            "0.0002"
        )


async def test_the_database_restored_from_an_earlier_copy_under_a_running_server(
    tmp_path: Path, paper: Any, clock: Any
) -> None:
    write_policy(tmp_path, dailyOrderCap=3, maxNotionalUsd=1000)
    db_path, copy_path = tmp_path / "journal" / "pilot.db", tmp_path / "earlier.db"
    async with open_test_runtime(tmp_path, Venue.of(paper), clock) as server:
        first = await plan_order(server, market(Side.BUY, "0.0001"))
        assert first.plan_id is not None and (await place_order(server, first.plan_id)).status == "filled"
        _copy(db_path, copy_path)  # a backup, taken while the server runs
        for _ in range(2):
            later = await plan_order(server, market(Side.BUY, "0.0001"))
            assert later.plan_id is not None and (await place_order(server, later.plan_id)).status == "filled"
        capped = await plan_order(server, market(Side.BUY, "0.0001"))
        _copy(copy_path, db_path)  # ... restored over the live database while the server runs
        restored = seen(await server.ledger.state(clock.now()))
        journal = await restated(server.store.journal, clock.now())
        again = await plan_order(server, market(Side.BUY, "0.0001"))
        reducing = await plan_order(server, reduce_only_sell("0.0001"))
        report = await server.store.journal.verify()
        await upkeep(server)  # the running server's next round journals what it found
        switched = (await server.journal_state()).kill_switch
        after = await server.store.journal.verify()
    assert rules_of(capped) == {"dailyOrderCap"}
    assert restored == journal and restored[2] == 1  # what the journal now holds: one send today
    # The journal lost two sends it was anchored at: growing orders stop at once (issue 25; before, the
    # count restarted and this order passed), reducing ones still work.
    assert again.status == "refused" and rules_of(again) == {"tradingState"}
    assert reducing.status == "ok"
    assert not report.ok and report.reason == "tail_missing"
    assert switched is not None and switched.data["on"] and switched.data["by"] == "pilot"
    assert switched.data["rollback"]["reason"] == "tail_missing" and after.ok


def reduce_only_sell(qty: str) -> PlanRequest:
    return PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal(qty), None, None, True, "linear")


def _copy(source: Path, target: Path) -> None:
    """SQLite's online backup: the target becomes a page-for-page copy of the source, under its locks."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
