"""The guards every open checks: the append-only triggers (restored and journaled when missing), plans that
only move forward and keep their content, and the journal key file (never silently replaced)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from pilot.keys.seal import journal_key_path
from pilot.store import (
    STORE_PLAN_REJECTED,
    STORE_REPAIRED,
    JournalKeyUnusable,
    Store,
    new_plan_id,
    open_store,
)
from pilot.store.schema import TRIGGERS

from .support import T0, drop_triggers, raw, run_in_processes

pytestmark = pytest.mark.anyio


def triggers(db_path: Path) -> dict[str, str]:
    with raw(db_path) as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())


async def create_plan(store: Store, ttl_seconds: int = 60) -> str:
    plan_id = new_plan_id()
    await store.plans.create(
        plan_id=plan_id, payload={"order": {"qty": "0.01"}}, now=T0, ttl_seconds=ttl_seconds
    )
    return plan_id


# --- triggers checked at every open ---------------------------------------------------------------------


async def test_a_new_database_has_every_guard_and_reports_nothing_restored(
    store: Store, db_path: Path
) -> None:
    assert set(triggers(db_path)) == set(TRIGGERS)
    assert store.opened.restored == ()
    assert await store.journal.entries(kind=STORE_REPAIRED) == []


async def test_dropped_and_altered_triggers_are_restored_at_open_and_journaled(
    store: Store, db_path: Path
) -> None:
    await store.journal.append("test.append", {}, now=T0)
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_update", "journal_no_delete", "plans_forward_only")
        drop_triggers(conn, "journal_next_seq_only")
        conn.execute(
            "CREATE TRIGGER journal_next_seq_only BEFORE INSERT ON journal WHEN 0 BEGIN SELECT 1; END"
        )

    async with await open_store(db_path, now=T0) as reopened:
        [repair] = await reopened.journal.entries(kind=STORE_REPAIRED)
        report = await reopened.journal.verify()

    assert set(reopened.opened.restored) == {
        "journal_no_update",
        "journal_no_delete",
        "plans_forward_only",
        "journal_next_seq_only",
    }
    assert repair.actor == "pilot" and repair.seal
    assert repair.data["restored"] == {
        "journal_no_update": "missing",
        "journal_no_delete": "missing",
        "plans_forward_only": "missing",
        "journal_next_seq_only": "altered",
    }
    assert report.ok and report.count == 2
    assert triggers(db_path) == {name: triggers(db_path)[name] for name in TRIGGERS}
    with raw(db_path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM journal")


async def test_guards_in_place_are_not_touched_and_reopening_journals_nothing(db_path: Path) -> None:
    for _ in range(3):
        async with await open_store(db_path, now=T0) as store:
            assert store.opened.restored == ()
    with raw(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM journal").fetchone() == (0,)


# --- plans only move forward ----------------------------------------------------------------------------


async def test_a_used_plan_set_back_to_open_by_raw_sql_is_refused(store: Store, db_path: Path) -> None:
    plan_id = await create_plan(store)
    await store.plans.claim(plan_id, now=T0)
    await store.plans.record_outcome(plan_id, {"status": "filled"}, now=T0)
    with raw(db_path) as conn:
        for status in ("open", "claimed"):
            with pytest.raises(sqlite3.IntegrityError, match="only moves forward"):
                conn.execute("UPDATE plans SET status = ? WHERE plan_id = ?", (status, plan_id))
            with pytest.raises(sqlite3.IntegrityError):  # a full reset, as if never claimed
                conn.execute(
                    "UPDATE plans SET status = ?, claimed_at = NULL, outcome_json = NULL WHERE plan_id = ?",
                    (status, plan_id),
                )
    assert (await store.plans.claim(plan_id, now=T0)).status == "already_used"


@pytest.mark.parametrize("before", ["open", "claimed", "done"])
@pytest.mark.parametrize("after", ["open", "claimed", "done"])
async def test_a_plan_status_only_moves_forward(store: Store, db_path: Path, before: str, after: str) -> None:
    plan_id = await create_plan(store)
    if before != "open":
        await store.plans.claim(plan_id, now=T0)
    if before == "done":
        await store.plans.record_outcome(plan_id, {"status": "filled"}, now=T0)
    allowed = (before, after) in {("open", "claimed"), ("claimed", "done"), ("done", "done")}
    with raw(db_path) as conn:
        try:
            conn.execute("UPDATE plans SET status = ? WHERE plan_id = ?", (after, plan_id))
            moved = True
        except sqlite3.IntegrityError:
            moved = False
    assert moved == allowed


async def test_a_claimed_plan_cannot_reopen_and_an_open_plan_cannot_be_edited(
    store: Store, db_path: Path
) -> None:
    claimed, still_open = await create_plan(store), await create_plan(store)
    await store.plans.claim(claimed, now=T0)
    with raw(db_path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="only moves forward"):
            conn.execute("UPDATE plans SET status = 'open' WHERE plan_id = ?", (claimed,))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE plans SET expires_at = '2100-01-01' WHERE plan_id = ?", (still_open,))
        with pytest.raises(sqlite3.IntegrityError, match="fixed when it is created"):
            conn.execute(
                """UPDATE plans SET payload_json = '{"order":{"qty":"5"}}' WHERE plan_id = ?""", (claimed,)
            )
        with pytest.raises(sqlite3.IntegrityError, match="never deleted"):
            conn.execute("DELETE FROM plans WHERE plan_id = ?", (claimed,))
        with pytest.raises(sqlite3.IntegrityError, match="never replaced"):
            conn.execute(
                "INSERT OR REPLACE INTO plans (plan_id, created_at, expires_at, status, payload_json, seal)"
                " SELECT plan_id, created_at, expires_at, 'open', payload_json, seal FROM plans WHERE plan_id = ?",
                (claimed,),
            )
    assert (await store.plans.claim(claimed, now=T0)).status == "already_used"


async def test_a_plan_edited_behind_the_triggers_is_not_found_and_the_attempt_is_journaled(
    store: Store, db_path: Path
) -> None:
    plan_id = await create_plan(store)
    with raw(db_path) as conn:
        drop_triggers(conn, "plans_fixed_at_creation", "plans_forward_only")
        conn.execute(
            """UPDATE plans SET payload_json = '{"order":{"qty":"5"}}' WHERE plan_id = ?""", (plan_id,)
        )

    claims = [await store.plans.claim(plan_id, now=T0) for _ in range(2)]
    rejected = await store.journal.entries(kind=STORE_PLAN_REJECTED)

    # Never claimed, however often it is tried (the claim's one UPDATE may mark the edited row: nothing
    # reads an edited row as a plan), and every attempt is journaled.
    assert [(c.status, c.plan) for c in claims] == [("not_found", None)] * 2
    assert await store.plans.get(plan_id) is None
    assert [(r.plan_id, r.data["problem"]) for r in rejected] == [(plan_id, "seal_mismatch")] * 2


async def test_a_plan_inserted_by_raw_sql_is_not_found(store: Store, db_path: Path) -> None:
    plan_id = new_plan_id()
    with raw(db_path) as conn:
        conn.execute(
            "INSERT INTO plans (plan_id, created_at, expires_at, status, payload_json, seal)"
            " VALUES (?, '2025-03-01T12:00:00.000000+00:00', '2100-01-01T00:00:00.000000+00:00', 'open', '{}', ?)",
            (plan_id, "0" * 64),
        )
    assert (await store.plans.claim(plan_id, now=T0)).status == "not_found"


# --- the journal key file -------------------------------------------------------------------------------


async def test_the_first_open_creates_a_private_key_outside_the_home(db_path: Path, user_home: Path) -> None:
    async with await open_store(db_path) as store:
        pass
    key = journal_key_path()
    assert key == user_home / ".config" / "pilot" / "journal.key"
    assert store.opened.key_created and store.opened.key_path == key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert not key.is_relative_to(db_path.parent.parent)


async def test_a_missing_key_on_a_journal_that_depends_on_it_is_an_error_never_a_new_key(
    db_path: Path,
) -> None:
    async with await open_store(db_path) as store:
        await store.journal.append("test.append", {}, now=T0)
    journal_key_path().unlink()

    with pytest.raises(JournalKeyUnusable) as refused:
        await open_store(db_path)

    assert "PILOT_JOURNAL_KEY_FILE" in refused.value.fix
    assert not journal_key_path().exists()


async def test_even_an_empty_journal_that_recorded_its_key_never_gets_a_new_one(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    journal_key_path().unlink()
    with pytest.raises(JournalKeyUnusable):
        await open_store(db_path)
    assert not journal_key_path().exists()


async def test_another_key_file_is_refused_naming_both_keys(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await open_store(db_path) as store:
        await store.journal.append("test.append", {}, now=T0)
    monkeypatch.setenv(
        "PILOT_JOURNAL_KEY_FILE", str(tmp_path.parent / f"{tmp_path.name}-other" / "journal.key")
    )
    async with await open_store(tmp_path / "other-home" / "journal" / "pilot.db") as other:
        pass  # creates the other key

    with pytest.raises(JournalKeyUnusable) as refused:
        await open_store(db_path)

    assert store.opened.key_id in refused.value.problem and other.opened.key_id in refused.value.problem


async def test_a_key_others_may_read_is_refused_with_the_chmod_fix(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    os.chmod(journal_key_path(), 0o644)
    with pytest.raises(JournalKeyUnusable) as refused:
        await open_store(db_path)
    assert f"chmod 600 {journal_key_path()}" in refused.value.fix


async def test_a_key_file_inside_the_home_is_refused(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PILOT_JOURNAL_KEY_FILE", str(db_path.parent.parent / "journal.key"))
    with pytest.raises(JournalKeyUnusable, match="inside the Pilot home"):
        await open_store(db_path)
    assert not db_path.exists() or not (db_path.parent.parent / "journal.key").exists()


def test_two_processes_opening_new_homes_at_once_share_one_key(tmp_path: Path) -> None:
    from .support import append_entries

    paths = [str(tmp_path / name / "journal" / "pilot.db") for name in ("one", "two", "three", "four")]
    run_in_processes(append_entries, [(path, "w", 3, T0.isoformat()) for path in paths])

    async def key_ids() -> set[str]:
        ids = set()
        for path in paths:
            async with await open_store(Path(path)) as store:
                assert (await store.journal.verify()).ok
                ids.add(store.opened.key_id)
        return ids

    import anyio

    assert len(anyio.run(key_ids)) == 1
