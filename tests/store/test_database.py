from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from pilot.store import (
    STORE_SEALED,
    SchemaTooNew,
    StoreCorrupt,
    new_plan_id,
    open_store,
)
from pilot.store.schema import SCHEMA_VERSION

from .support import T0, make_v1_database, raw, rehash_from

pytestmark = pytest.mark.anyio


async def test_open_creates_the_folder_in_wal_mode_at_the_current_schema(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        versions = conn.execute("SELECT version FROM schema_version").fetchall()
    assert versions == [(version,) for version in range(1, SCHEMA_VERSION + 1)]


async def test_upkeep_finds_stopped_plans_through_an_index_not_by_reading_every_plan(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    with raw(db_path) as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM plans WHERE status = 'claimed' AND outcome_json IS NULL "
            "ORDER BY claimed_at"
        ).fetchall()
    details = [row[-1] for row in plan]
    # SQLite's versions word the plan differently ("SCAN ... USING INDEX", "SEARCH ..."): what holds is that
    # the partial index is used and no step reads the table itself or sorts on the side.
    assert any("plans_unfinished" in detail for detail in details), details
    assert not any(detail == "SCAN plans" or "TEMP B-TREE" in detail for detail in details), details


async def test_reopening_keeps_data_and_does_not_repeat_migrations(db_path: Path) -> None:
    for _ in range(3):
        async with await open_store(db_path) as store:
            await store.journal.append("test.append", {}, now=T0)
    with raw(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT COUNT(*) FROM journal").fetchone() == (3,)


async def test_a_database_from_a_newer_pilot_is_refused(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    with raw(db_path) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")
    with pytest.raises(SchemaTooNew):
        await open_store(db_path)


@pytest.mark.parametrize(
    "damage",
    [b"this is not a database\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4080, b"\x00" * 8192],
    ids=["text", "a mangled header", "zeros"],
)
async def test_a_file_that_is_not_a_database_is_refused_as_corrupt(db_path: Path, damage: bytes) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(damage)
    with pytest.raises(StoreCorrupt) as refused:
        await open_store(db_path)
    assert str(db_path) in str(refused.value)


async def test_damaged_pages_are_reported_as_corrupt_not_as_a_traceback(db_path: Path) -> None:
    async with await open_store(db_path) as store:
        for index in range(400):
            await store.journal.append("test.append", {"index": index, "pad": "x" * 200}, now=T0)
    with raw(db_path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db_path.read_bytes())
    data[8192:16384] = b"\xa5" * 8192  # pages 3 and 4 of the journal's b-tree
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt):
        async with await open_store(db_path) as store:
            await store.journal.verify()


# --- a database written before sealing ----------------------------------------------------------------

LEGACY = [
    ("plan", {"status": "ok"}),
    ("killswitch", {"on": True, "by": "human"}),
    ("order.sent", {"qty": "1"}),
]


async def test_a_database_from_before_sealing_opens_and_its_entries_are_adopted(db_path: Path) -> None:
    make_v1_database(db_path, LEGACY, new_plan_id())

    async with await open_store(db_path, now=T0) as store:
        report = await store.journal.verify()
        marker = await store.journal.get(4)
        killswitch = await store.journal.latest("killswitch")
        appended = await store.journal.append("test.append", {}, now=T0)

    assert (report.ok, report.count, report.unsealed) == (True, 4, 3)
    assert (marker.kind, marker.actor, marker.data["unsealed_before"]) == (STORE_SEALED, "pilot", 3)
    assert store.opened.adopted == 3 and store.opened.legacy_entries == 3
    assert killswitch.seq == 2 and killswitch.seal is None  # entries from before sealing are still read
    assert appended.seq == 5 and appended.seal


async def test_entries_from_before_sealing_cannot_be_rewritten_once_adopted(db_path: Path) -> None:
    make_v1_database(db_path, LEGACY, new_plan_id())
    async with await open_store(db_path, now=T0):
        pass
    with raw(db_path) as conn:
        conn.execute("DROP TRIGGER journal_no_update")
        conn.execute("""UPDATE journal SET data = '{"by":"human","on":false}' WHERE seq = 2""")
        rehash_from(conn, 2)  # a consistent SHA-256 chain, up to and including the sealed entry

    async with await open_store(db_path, now=T0) as store:
        report = await store.journal.verify()
        killswitch = await store.journal.latest("killswitch")

    assert (report.ok, report.first_broken_seq, report.reason) == (False, 4, "seal_mismatch")
    # The entry that vouched for the older ones no longer verifies, so none of them is read as Pilot's.
    assert killswitch is None


async def test_a_plan_open_when_sealing_arrived_must_be_planned_again(db_path: Path) -> None:
    plan_id = new_plan_id()
    make_v1_database(db_path, LEGACY, plan_id)
    async with await open_store(db_path, now=T0) as store:
        claim = await store.plans.claim(plan_id, now=T0)
        rejected = await store.journal.entries(kind="store.plan_rejected")
    assert claim.status == "not_found"
    assert [(entry.plan_id, entry.data["problem"]) for entry in rejected] == [(plan_id, "unsealed")]


def test_a_database_from_before_sealing_is_adopted_once_however_often_it_is_opened(db_path: Path) -> None:
    import anyio

    make_v1_database(db_path, LEGACY, new_plan_id())

    async def reopen() -> None:
        for _ in range(3):
            async with await open_store(db_path, now=T0):
                pass

    anyio.run(reopen)
    with raw(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM journal WHERE kind = ?", (STORE_SEALED,)).fetchone() == (1,)
        assert conn.execute("SELECT COUNT(*) FROM journal_key").fetchone() == (1,)


async def test_a_new_database_another_connection_is_still_creating_opens_once_it_is_done(
    db_path: Path,
) -> None:
    """Two servers starting on one new home: while one holds the new file in a write transaction, SQLite
    refuses the other's switch to WAL at once, without its busy timeout. The second must wait, not fail."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    creator = sqlite3.connect(db_path, isolation_level=None)
    creator.execute("BEGIN IMMEDIATE")
    creator.execute("CREATE TABLE being_created (x)")
    opening = asyncio.ensure_future(open_store(db_path))
    # Still waiting (not failed) well inside the busy timeout; a store that gave up at once raises here.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(opening), timeout=0.2)
    creator.execute("COMMIT")
    creator.close()
    async with await opening:
        pass
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
