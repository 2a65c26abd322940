from __future__ import annotations

import sqlite3
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from pilot.store import GENESIS_HASH, Store, iso_utc, open_store

from .support import T0, append_entries, run_in_processes

pytestmark = pytest.mark.anyio


async def append_many(store: Store, count: int, kind: str = "test.append") -> None:
    for index in range(count):
        await store.journal.append(kind, {"index": index}, now=T0 + timedelta(seconds=index))


def tamper(db_path: Path, sql: str, params: tuple = ()) -> None:
    """Edit the journal the way an attacker with file access would: drop the guards, then write."""
    with sqlite3.connect(db_path) as conn:
        conn.execute("DROP TRIGGER journal_no_update")
        conn.execute("DROP TRIGGER journal_no_delete")
        conn.execute(sql, params)
    conn.close()


async def test_chain_verifies_after_many_appends(store: Store) -> None:
    await append_many(store, 300)
    report = await store.journal.verify()
    assert (report.count, report.ok, report.first_broken_seq, report.reason) == (300, True, None, None)


async def test_first_entry_links_to_the_genesis_hash_and_each_next_to_its_predecessor(store: Store) -> None:
    first = await store.journal.append("a", {}, now=T0)
    second = await store.journal.append("b", {}, now=T0)
    assert (first.seq, first.prev_hash) == (1, GENESIS_HASH)
    assert (second.seq, second.prev_hash) == (2, first.hash)


async def test_data_reads_back_as_canonical_json(store: Store) -> None:
    written = await store.journal.append(
        "order.sent", {"qty": Decimal("0.50"), "at": T0}, now=T0, plan_id="p1"
    )
    read = await store.journal.get(written.seq)
    assert read == written
    assert read.data == {"qty": "0.50", "at": iso_utc(T0)}


async def test_entry_edited_behind_the_triggers_is_the_first_broken_seq(store: Store, db_path: Path) -> None:
    await append_many(store, 20)
    tamper(db_path, "UPDATE journal SET data = ? WHERE seq = 7", ('{"index":700}',))
    report = await store.journal.verify()
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 7, "hash_mismatch")
    assert report.count == 6


async def test_an_entry_read_once_then_edited_is_not_served_from_what_was_read(
    store: Store, db_path: Path
) -> None:
    """Reads remember rows they verified; a row changed since is verified afresh, and skipped."""
    await append_many(store, 5)
    assert [e.data["index"] for e in await store.journal.entries()] == [0, 1, 2, 3, 4]
    tamper(db_path, "UPDATE journal SET data = ? WHERE seq = 3", ('{"index":700}',))
    assert [e.data["index"] for e in await store.journal.entries()] == [0, 1, 3, 4]
    assert await store.journal.get(3) is None


async def test_entry_rehashed_behind_the_triggers_breaks_the_next_link(store: Store, db_path: Path) -> None:
    await append_many(store, 10)
    tamper(db_path, "UPDATE journal SET hash = ? WHERE seq = 4", ("f" * 64,))
    report = await store.journal.verify()
    assert (report.first_broken_seq, report.reason) == (4, "hash_mismatch")


async def test_entry_deleted_behind_the_triggers_shows_as_a_seq_gap(store: Store, db_path: Path) -> None:
    await append_many(store, 10)
    tamper(db_path, "DELETE FROM journal WHERE seq = 5")
    report = await store.journal.verify()
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 6, "seq_gap")


async def test_update_and_delete_are_refused(store: Store, db_path: Path) -> None:
    await append_many(store, 3)
    with sqlite3.connect(db_path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE journal SET kind = 'x' WHERE seq = 2")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM journal WHERE seq = 3")
    conn.close()
    assert (await store.journal.verify()).ok


async def test_insert_or_replace_cannot_overwrite_an_entry(store: Store, db_path: Path) -> None:
    await append_many(store, 3)
    row = ("2025-01-01T00:00:00.000000+00:00", "forged", "agent", None, "{}", "0" * 64, "0" * 64, "0" * 64)
    with sqlite3.connect(db_path) as conn:
        for verb in ("INSERT OR REPLACE", "REPLACE", "INSERT OR IGNORE"):
            with pytest.raises(sqlite3.IntegrityError, match="next seq"):
                conn.execute(
                    f"{verb} INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal)"
                    " VALUES (2, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
    conn.close()
    assert (await store.journal.get(2)).kind == "test.append"


async def test_entries_filter_by_plan_kind_prefix_and_time(store: Store) -> None:
    await store.journal.append("plan.created", {}, now=T0, plan_id="p1")
    await store.journal.append("order.sent", {}, now=T0 + timedelta(minutes=1), plan_id="p1")
    await store.journal.append("order.filled", {}, now=T0 + timedelta(minutes=2), plan_id="p2")
    await store.journal.append("killswitch", {}, now=T0 + timedelta(minutes=3))

    def kinds(entries: list) -> list[str]:
        return [entry.kind for entry in entries]

    assert kinds(await store.journal.entries(plan_id="p1")) == ["plan.created", "order.sent"]
    assert kinds(await store.journal.entries(kind_prefix="order.")) == ["order.sent", "order.filled"]
    assert kinds(await store.journal.entries(kind=("killswitch", "plan.created"))) == [
        "plan.created",
        "killswitch",
    ]
    window = await store.journal.entries(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3))
    assert kinds(window) == ["order.sent", "order.filled"]
    assert kinds(await store.journal.entries(limit=2, newest_first=True)) == ["killswitch", "order.filled"]


async def test_latest_returns_the_newest_entry_of_any_given_kind(store: Store) -> None:
    assert await store.journal.latest("killswitch") is None
    await store.journal.append("killswitch", {"state": "halted"}, now=T0)
    await store.journal.append("killswitch.cleared", {"state": "active"}, now=T0)
    await store.journal.append("order.sent", {}, now=T0)
    assert (await store.journal.latest("killswitch")).data == {"state": "halted"}
    assert (await store.journal.latest(("killswitch", "killswitch.cleared"))).data == {"state": "active"}


async def test_read_on_gives_what_any_connection_appended_after_a_mark(store: Store, db_path: Path) -> None:
    await append_many(store, 3)
    mark = await store.journal.mark()
    async with await open_store(db_path) as other:
        await other.journal.append("killswitch", {"on": True}, now=T0)
        await other.journal.append("test.append", {"index": 9}, now=T0)
    read = await store.journal.read_on(mark, frozenset({"killswitch"}))
    assert read is not None
    entries, end = read
    assert ([e.seq for e in entries], end.seq) == ([4], 5)
    assert await store.journal.read_on(end, frozenset({"killswitch"})) == ([], end)


async def test_read_on_says_when_the_journal_no_longer_holds_the_mark(store: Store, db_path: Path) -> None:
    await append_many(store, 3)
    mark = await store.journal.mark()
    tamper(db_path, "DELETE FROM journal WHERE seq = 3")
    assert await store.journal.read_on(mark, frozenset({"test.append"})) is None
    await store.journal.append("test.append", {"index": "new"}, now=T0)  # seq 3 again, another entry
    assert await store.journal.read_on(mark, frozenset({"test.append"})) is None


async def test_concurrent_appends_from_tasks_and_connections_keep_the_chain(db_path: Path) -> None:
    stores = [await open_store(db_path) for _ in range(3)]
    async with anyio.create_task_group() as group:
        for writer in range(12):
            group.start_soon(append_many, stores[writer % 3], 10)
    report = await stores[0].journal.verify()
    for store in stores:
        await store.close()
    assert (report.count, report.ok) == (120, True)


def test_appends_from_two_processes_racing_to_create_the_database_keep_the_chain(db_path: Path) -> None:
    run_in_processes(append_entries, [(str(db_path), name, 100, iso_utc(T0)) for name in ("one", "two")])
    report = anyio.run(_verify, db_path)
    assert (report.count, report.ok) == (200, True)


async def _verify(db_path: Path):
    async with await open_store(db_path) as store:
        return await store.journal.verify()
