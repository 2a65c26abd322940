"""The journal as evidence: whoever can write the database but not read the journal key cannot append,
rewrite or rehash an entry unseen; a deleted tail is seen only against an anchor kept elsewhere."""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot.store import Anchor, Store, open_store
from pilot.store.canonical import canonical_json

from .support import T0, drop_triggers, forge_entry, raw, rehash_from, rows

pytestmark = pytest.mark.anyio

KILL_SWITCH_OFF_BY_HUMAN = {"on": False, "by": "human", "reason": "all clear"}


async def append_many(store: Store, count: int) -> None:
    for index in range(count):
        await store.journal.append("test.append", {"index": index}, now=T0 + timedelta(seconds=index))


async def switch_on(store: Store) -> None:
    await store.journal.append("killswitch", {"on": True, "by": "agent"}, now=T0)


# --- forgery ------------------------------------------------------------------------------------------


async def test_a_forged_row_with_a_made_up_seal_fails_verify_and_is_never_obeyed(
    store: Store, db_path: Path
) -> None:
    await switch_on(store)
    await append_many(store, 3)
    with raw(db_path) as conn:  # no trigger needs dropping: the row takes the next seq and carries a "seal"
        text = canonical_json(KILL_SWITCH_OFF_BY_HUMAN)
        forged = forge_entry(
            conn,
            "killswitch",
            KILL_SWITCH_OFF_BY_HUMAN,
            actor="human",
            seal=hashlib.sha256(text.encode()).hexdigest(),
        )

    report = await store.journal.verify()
    latest = await store.journal.latest("killswitch")

    assert (report.ok, report.first_broken_seq, report.reason, report.count) == (
        False,
        forged,
        "seal_mismatch",
        4,
    )
    assert latest.data["on"] is True and latest.seq == 1
    assert await store.journal.get(forged) is None


async def test_a_forged_row_without_a_seal_is_refused_and_behind_the_guards_fails_verify(
    store: Store, db_path: Path
) -> None:
    await switch_on(store)
    with raw(db_path) as conn, pytest.raises(Exception, match="must carry a seal"):
        forge_entry(conn, "killswitch", KILL_SWITCH_OFF_BY_HUMAN, actor="human", seal=None)
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_sealed_only")
        forged = forge_entry(conn, "killswitch", KILL_SWITCH_OFF_BY_HUMAN, actor="human", seal=None)

    report = await store.journal.verify()

    assert (report.ok, report.first_broken_seq, report.reason) == (False, forged, "unsealed_entry")
    assert (await store.journal.latest("killswitch")).data["on"] is True
    assert [entry.seq for entry in await store.journal.entries()] == [1]


async def test_an_entry_copied_from_elsewhere_in_the_journal_does_not_verify_at_its_new_place(
    store: Store, db_path: Path
) -> None:
    await store.journal.append("killswitch", KILL_SWITCH_OFF_BY_HUMAN, now=T0, actor="human")
    await switch_on(store)
    with raw(db_path) as conn:
        _seq, _at, kind, actor, _plan, data, _prev, _hash, seal = rows(conn)[0]
        forged = forge_entry(conn, kind, json.loads(data), actor=actor, seal=seal)  # replay the "off" entry

    report = await store.journal.verify()

    assert (report.first_broken_seq, report.reason) == (forged, "seal_mismatch")
    assert (await store.journal.latest("killswitch")).seq == 2


# --- rehash ---------------------------------------------------------------------------------------------


async def test_a_full_rehash_without_the_key_fails_verify_at_the_first_changed_entry(
    store: Store, db_path: Path
) -> None:
    await append_many(store, 10)
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_update")
        conn.execute("""UPDATE journal SET data = '{"index":300}' WHERE seq = 3""")
        rehash_from(conn, 1)  # every hash and link consistent again, as plain SHA-256 allows

    report = await store.journal.verify()

    assert (report.ok, report.first_broken_seq, report.reason, report.count) == (False, 3, "seal_mismatch", 2)
    assert await store.journal.get(3) is None and (await store.journal.get(4)) is None


async def test_stripping_every_seal_to_pass_as_a_journal_from_before_sealing_fails_verify(
    store: Store, db_path: Path
) -> None:
    await append_many(store, 5)
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_update", "journal_key_no_delete")
        conn.execute("UPDATE journal SET seal = NULL")
        conn.execute("DELETE FROM journal_key")

    async with await open_store(db_path, now=T0) as reopened:  # restores the key record and says so
        report = await reopened.journal.verify()
        entries = await reopened.journal.entries(kind="test.append")

    # The journal's own anchor (seq 5, outside the home) no longer matches its stripped seal.
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 5, "anchor_mismatch")
    assert reopened.opened.adopted == 0 and "journal_key" in reopened.opened.restored
    assert entries == []


# --- a deleted tail --------------------------------------------------------------------------------------


async def test_a_deleted_tail_fails_verify_by_the_journals_own_anchor_and_by_one_kept_elsewhere(
    store: Store, db_path: Path
) -> None:
    """A shorter chain is still a valid chain: before issue 25 only an anchor kept by a human showed the cut.
    The store anchors the journal itself now, beside the journal key (pilot.store.anchor)."""
    await append_many(store, 10)
    anchor = await store.journal.anchor()
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_delete")
        conn.execute("DELETE FROM journal WHERE seq > 7")

    without = await store.journal.verify()
    with_anchor = await store.journal.verify(anchor)

    assert anchor.seq == 10
    assert (without.ok, without.first_broken_seq, without.reason, without.count) == (
        False,
        8,
        "tail_missing",
        7,
    )
    assert (with_anchor.ok, with_anchor.first_broken_seq, with_anchor.reason) == (False, 8, "tail_missing")
    assert with_anchor.count == 7


async def test_a_deleted_tail_written_over_again_fails_the_anchor_at_its_seq(
    store: Store, db_path: Path
) -> None:
    await append_many(store, 10)
    anchor = await store.journal.anchor()
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_delete")
        conn.execute("DELETE FROM journal WHERE seq > 7")
    await append_many(store, 5)  # Pilot itself writes seq 8..12, sealed, over the gap

    report = await store.journal.verify(anchor)
    own = await store.journal.verify()

    # The journal's own anchor stayed at the entry it named (it moves only along the chain it anchored).
    assert (own.ok, own.first_broken_seq, own.reason) == (False, 10, "anchor_mismatch")
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 10, "anchor_mismatch")
    assert store.journal.rollback is not None and store.journal.rollback.reason == "anchor_mismatch"


async def test_an_older_anchor_still_matches_as_the_journal_grows(store: Store) -> None:
    await append_many(store, 4)
    anchor = await store.journal.anchor()
    await append_many(store, 6)

    report = await store.journal.verify(anchor)

    assert (report.ok, report.count, report.anchored) == (True, 10, True)


async def test_an_anchor_reads_back_from_its_printed_form(store: Store) -> None:
    assert await store.journal.anchor() is None
    await append_many(store, 2)
    anchor = await store.journal.anchor()
    assert Anchor.parse(str(anchor)) == anchor
    for bad in ("", "2", "0:" + "a" * 64, "2:" + "A" * 64, "2:" + "a" * 63, "x:" + "a" * 64, "٢:" + "a" * 64):
        with pytest.raises(ValueError):
            Anchor.parse(bad)


# --- any change to any row is found ----------------------------------------------------------------------

FIELDS = ("at", "kind", "actor", "plan_id", "data", "prev_hash", "hash", "seal")
ENTRIES = 6


def test_any_single_character_changed_in_any_field_of_any_row_is_found(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    db_path = tmp_path_factory.mktemp("tamper") / "journal" / "pilot.db"
    with asyncio.Runner() as runner:
        store = runner.run(_journal_to_tamper(db_path))
        try:
            _tamper_and_verify(runner, store, db_path)
        finally:
            runner.run(store.close())


async def _journal_to_tamper(db_path: Path) -> Store:
    store = await open_store(db_path, now=T0)
    for index in range(ENTRIES):
        plan_id = f"plan_{index}" if index % 2 else None
        data = {"index": index, "qty": "0.0002", "note": "ünïcödé"}
        await store.journal.append("order.sent", data, now=T0 + timedelta(seconds=index), plan_id=plan_id)
    with raw(db_path) as conn:
        drop_triggers(conn, "journal_no_update")
    return store


def _tamper_and_verify(runner: asyncio.Runner, store: Store, db_path: Path) -> None:
    @given(
        seq=st.integers(1, ENTRIES),
        field=st.sampled_from(FIELDS),
        position=st.integers(0, 500),
        replacement=st.characters(codec="utf-8", exclude_characters="\x00"),
    )
    def tamper_once(seq: int, field: str, position: int, replacement: str) -> None:
        with raw(db_path) as conn:
            (original,) = conn.execute(f"SELECT {field} FROM journal WHERE seq = ?", (seq,)).fetchone()
            text = original or ""
            index = position % (len(text) + 1)
            changed = text[:index] + replacement + text[index + 1 :]
            if changed == text:
                changed = text + replacement
            conn.execute(f"UPDATE journal SET {field} = ? WHERE seq = ?", (changed, seq))
        try:
            report = runner.run(store.journal.verify())
            read_back = runner.run(store.journal.get(seq))
        finally:
            with raw(db_path) as conn:
                conn.execute(f"UPDATE journal SET {field} = ? WHERE seq = ?", (original, seq))
        assert (report.ok, report.first_broken_seq) == (False, seq)
        assert read_back is None
        assert runner.run(store.journal.verify()).ok

    tamper_once()


def test_every_cut_tail_is_caught_by_the_journals_own_anchor_and_a_kept_one_when_it_reaches_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    db_path = tmp_path_factory.mktemp("tail") / "journal" / "pilot.db"
    with asyncio.Runner() as runner:
        store = runner.run(_journal_to_tamper(db_path))
        try:
            anchors = [runner.run(_anchor_at(store, seq)) for seq in range(1, ENTRIES + 1)]
            _cut_and_verify(runner, store, db_path, anchors)
        finally:
            runner.run(store.close())


async def _anchor_at(store: Store, seq: int) -> Anchor:
    entry = await store.journal.get(seq)
    return Anchor(entry.seq, entry.seal)


def _cut_and_verify(runner: asyncio.Runner, store: Store, db_path: Path, anchors: list[Anchor]) -> None:
    @given(anchored=st.integers(1, ENTRIES), first_cut=st.integers(1, ENTRIES))
    def cut_once(anchored: int, first_cut: int) -> None:
        with raw(db_path) as conn:
            drop_triggers(conn, "journal_no_delete", "journal_next_seq_only")
            kept = conn.execute("SELECT * FROM journal WHERE seq >= ?", (first_cut,)).fetchall()
            conn.execute("DELETE FROM journal WHERE seq >= ?", (first_cut,))
        try:
            alone = runner.run(store.journal.verify())
            with_anchor = runner.run(store.journal.verify(anchors[anchored - 1]))
        finally:
            with raw(db_path) as conn:
                conn.executemany(f"INSERT INTO journal VALUES ({', '.join('?' * len(kept[0]))})", kept)
        assert (alone.ok, alone.reason, alone.first_broken_seq) == (False, "tail_missing", first_cut)
        assert alone.count == first_cut - 1
        if first_cut <= anchored:
            assert (with_anchor.ok, with_anchor.reason, with_anchor.first_broken_seq) == (
                False,
                "tail_missing",
                first_cut,
            )
        else:  # the kept anchor is there; the journal's own, at the last entry, is not
            assert (with_anchor.ok, with_anchor.first_broken_seq) == (False, first_cut)

    cut_once()
