"""The journal on both engines: one sealed chain from every writer, insert-only by the database, forged rows
never read as Pilot's, conditional appends, and reading on from a mark."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pilot.store import GENESIS_HASH, Mark, Preempted, Store, StoreLocation, Unless, canonical_json, iso_utc
from pilot.store.chain import entry_hash
from tests.clocks import FakeClock

from ..support import T0
from .helpers import another_host
from .outsider import Outsider

pytestmark = pytest.mark.anyio


async def test_appends_from_two_hosts_form_one_unbroken_sealed_chain(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    other = await another_host(location, home, ticks)
    try:

        async def write(journal_store: Store, writer: str) -> None:
            for index in range(25):
                await journal_store.journal.append("test.append", {"i": index}, now=T0, actor=writer)

        await asyncio.gather(write(store, "a"), write(other, "b"))
    finally:
        await other.close()
    entries = await store.journal.entries()
    assert [entry.seq for entry in entries] == list(range(1, 51))
    assert [entry.prev_hash for entry in entries[1:]] == [entry.hash for entry in entries[:-1]]
    assert entries[0].prev_hash == GENESIS_HASH
    report = await store.journal.verify()
    assert (report.ok, report.count) == (True, 50)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE journal SET data = '{\"on\":false}' WHERE seq = 1",
        "DELETE FROM journal WHERE seq = 1",
        "DELETE FROM journal",
        "INSERT INTO journal (seq, at, kind, actor, data, prev_hash, hash, seal) "
        "VALUES (5, 'x', 'k', 'a', '{}', 'p', 'h', 's')",
    ],
    ids=["update", "delete one", "delete all", "a gap in seq"],
)
async def test_the_database_refuses_to_change_or_remove_an_entry(
    store: Store, outsider: Outsider, statement: str
) -> None:
    await store.journal.append("kill_switch", {"on": True}, now=T0)
    with pytest.raises(Exception):  # noqa: B017 - sqlite3's or psycopg's refusal: either is the database's
        outsider.execute(statement)
    assert (await store.journal.verify()).count == 1


async def test_an_unsealed_entry_is_refused_by_the_database(store: Store, outsider: Outsider) -> None:
    digest = entry_hash(1, iso_utc(T0), "kill_switch", "human", None, {"on": False}, GENESIS_HASH)
    with pytest.raises(Exception):  # noqa: B017
        outsider.execute(
            "INSERT INTO journal (seq, at, kind, actor, data, prev_hash, hash, seal) VALUES (1, ?, ?, ?, ?, ?, ?, NULL)",
            (iso_utc(T0), "kill_switch", "human", canonical_json({"on": False}), GENESIS_HASH, digest),
        )


async def test_a_row_forged_without_the_journal_key_is_never_read_and_verify_names_it(
    store: Store, outsider: Outsider
) -> None:
    on = await store.journal.append("kill_switch", {"on": True}, now=T0, actor="human")
    data = {"on": False}
    digest = entry_hash(2, iso_utc(T0), "kill_switch", "human", None, data, on.hash)
    outsider.execute(
        "INSERT INTO journal (seq, at, kind, actor, data, prev_hash, hash, seal) VALUES (2, ?, ?, ?, ?, ?, ?, ?)",
        (iso_utc(T0), "kill_switch", "human", canonical_json(data), on.hash, digest, "0" * 64),
    )
    latest = await store.journal.latest("kill_switch")
    assert latest is not None and latest.seq == 1 and latest.data == {"on": True}
    report = await store.journal.verify()
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 2, "seal_mismatch")


async def test_a_conditional_append_is_refused_once_an_entry_of_its_kinds_follows(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    judged = await store.journal.append("order.sent", {"n": 1}, now=T0)
    other = await another_host(location, home, ticks)
    try:
        switch = await other.journal.append("kill_switch", {"on": True}, now=T0, actor="human")
    finally:
        await other.close()
    with pytest.raises(Preempted) as preempted:
        await store.journal.append(
            "order.sent", {"n": 2}, now=T0, unless=Unless(judged.seq, frozenset({"kill_switch"}))
        )
    assert preempted.value.seqs == (switch.seq,)
    assert [entry.seq for entry in await store.journal.entries(kind="order.sent")] == [judged.seq]


async def test_a_send_is_journaled_only_while_its_turn_is_held(store: Store) -> None:
    from datetime import timedelta

    mark = await store.journal.append("order.sent", {"n": 1}, now=T0)
    assert await store.leases.try_acquire("send-turn", "me", now=T0, ttl=timedelta(minutes=2))
    unless = Unless(mark.seq, frozenset({"kill_switch"}), turn=("send-turn", "me"))
    held = await store.journal.append("order.sent", {"n": 2}, now=T0, unless=unless)
    await store.leases.release("send-turn", "me")
    assert await store.leases.try_acquire("send-turn", "someone else", now=T0, ttl=timedelta(minutes=2))
    with pytest.raises(Preempted) as preempted:
        await store.journal.append(
            "order.sent", {"n": 3}, now=T0, unless=Unless(held.seq, unless.kinds, unless.turn)
        )
    assert preempted.value.turn_lost
    assert len(await store.journal.entries(kind="order.sent")) == 2


async def test_reading_on_from_a_mark_sees_every_host_s_appends_and_nothing_before(
    store: Store, location: StoreLocation, home: Path, ticks: FakeClock
) -> None:
    await store.journal.append("kill_switch", {"on": True}, now=T0)
    mark = await store.journal.mark()
    other = await another_host(location, home, ticks)
    try:
        for index in range(3):
            await other.journal.append("order.sent" if index != 1 else "note", {"i": index}, now=T0)
    finally:
        await other.close()
    read = await store.journal.read_on(mark, frozenset({"order.sent"}))
    assert read is not None
    entries, end = read
    assert [entry.data["i"] for entry in entries] == [0, 2]
    assert end.seq == mark.seq + 3
    assert await store.journal.read_on(Mark(mark.seq, "f" * 64), frozenset({"order.sent"})) is None


async def test_every_entry_carries_the_store_clock_s_reading(store: Store, ticks: FakeClock) -> None:
    first = await store.journal.append("a", {}, now=T0)
    ticks.advance(90)
    second = await store.journal.append("b", {}, now=T0)
    assert first.clock is not None and second.clock is not None
    assert second.clock.micros - first.clock.micros == 90_000_000
    assert json.loads(canonical_json(second.clock.as_json()))["micros"] == second.clock.micros
