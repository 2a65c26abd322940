"""The append-only, hash-chained, sealed journal: what happened, in order, and proof it was not edited.

What the hash and seal of an entry cover, and how the chain is checked, is in pilot.store.chain.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pilot.store.anchor import AnchorFile, HeadAnchor, Rollback
from pilot.store.canonical import canonical_json, iso_utc, parse_iso, sha256_hex
from pilot.store.chain import (
    GENESIS_HASH,
    Anchor,
    ChainReport,
    ChainWalk,
    entry_text_of,
    is_seal,
    row_clock,
    row_text,
)
from pilot.store.database import Database, Dialect, Row, Tx
from pilot.store.errors import DuplicateRecord
from pilot.store.monotonic import HostClock, Instant, StoreClock
from pilot.store.sealing import Sealer
from pilot.store.tokens import acting_actor


@dataclass(frozen=True)
class JournalEntry:
    """One journal row; `data` is the canonical JSON read back, so Decimals arrive as strings."""

    seq: int
    at: datetime
    kind: str
    actor: str
    plan_id: str | None
    data: Mapping[str, Any]
    prev_hash: str
    hash: str
    seal: str | None = None  # None only on entries written before sealing
    clock: Instant | None = None  # the store clock's reading (pilot.store.monotonic); None on older entries


def _entry(row: Row, data: Any) -> JournalEntry:
    return JournalEntry(
        seq=row["seq"],
        at=parse_iso(row["at"]),
        kind=row["kind"],
        actor=row["actor"],
        plan_id=row["plan_id"],
        data=data,
        prev_hash=row["prev_hash"],
        hash=row["hash"],
        seal=row["seal"],
        clock=row_clock(row),
    )


def _filters(
    plan_id: str | None, kind: str | tuple[str, ...] | None, kind_prefix: str | None
) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if plan_id is not None:
        clauses.append("plan_id = ?")
        params.append(plan_id)
    if kind is not None:
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)
        clauses.append(f"kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if kind_prefix is not None:
        clauses.append("substr(kind, 1, ?) = ?")
        params.extend([len(kind_prefix), kind_prefix])
    return clauses, params


@dataclass(frozen=True, slots=True)
class Mark:
    """A place in the journal: an entry's seq and its hash as stored (to read on from, or append after)."""

    seq: int
    hash: str


START = Mark(0, GENESIS_HASH)  # before the first entry
_HEAD = "SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1"
_INSERT = (
    "INSERT INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash, seal, boot, micros)"
    " SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
)


@dataclass(frozen=True, slots=True)
class Unless:
    """A condition on an append: none of `kinds` was appended after seq `after` (by any process), and, with
    `turn`, the lease of that name (pilot.store.leases) is still its holder's: unexpired on the store's clock
    and, on a store that judges holders by their session, taken in this very session (a connection lost and
    made again holds nothing it held before). The lease is the fencing token of the send turn: a holder that
    lost it while paused or cut off cannot journal a send someone else's judgement did not see."""

    after: int
    kinds: frozenset[str]
    turn: tuple[str, str] | None = None  # (lease name, holder)


class Preempted(Exception):
    """An append made `Unless` an entry of the given kinds came after a seq, and one did (or the journal no
    longer holds the entry it was anchored at: `seqs` empty, `Journal.rollback` set; or its turn was no
    longer held: `turn_lost`): nothing was appended. `seqs` are those entries (as stored: the caller reads
    them again through the journal, which keeps only genuine ones)."""

    def __init__(self, seqs: tuple[int, ...], *, turn_lost: bool = False) -> None:
        what = "the send turn was lost" if turn_lost else f"entries {', '.join(map(str, seqs))} came first"
        super().__init__(what)
        self.seqs = seqs
        self.turn_lost = turn_lost


class _Draft:
    """An entry to append, sealed for whichever place it takes."""

    def __init__(
        self,
        sealer: Sealer,
        kind: str,
        data: Mapping[str, Any],
        now: datetime,
        actor: str,
        plan_id: str | None,
        stamp: Instant | None,
    ) -> None:
        self.sealer, self.kind, self.actor, self.plan_id = sealer, kind, actor, plan_id
        self.at, self.data_json, self.stamp = iso_utc(now), canonical_json(data), stamp
        self.parsed = json.loads(self.data_json)

    def after(self, head: Mark) -> tuple[JournalEntry, tuple[Any, ...]]:
        """The entry as it reads when appended after `head`, and the insert's values."""
        seq, stamp = head.seq + 1, self.stamp
        text = entry_text_of(
            seq, self.at, self.kind, self.actor, self.plan_id, self.data_json, head.hash, stamp
        )
        digest, seal = sha256_hex(text), self.sealer.entry(text)
        entry = JournalEntry(
            seq,
            parse_iso(self.at),
            self.kind,
            self.actor,
            self.plan_id,
            self.parsed,
            head.hash,
            digest,
            seal,
            stamp,
        )
        boot, micros = (stamp.boot, stamp.micros) if stamp is not None else (None, None)
        values = (
            *(seq, self.at, self.kind, self.actor, self.plan_id, self.data_json, head.hash, digest, seal),
            *(boot, micros),
        )
        return entry, values


def _head(row: Row | None) -> Mark:
    return Mark(row["seq"], row["hash"]) if row else START


async def append_entry(
    tx: Tx,
    sealer: Sealer,
    kind: str,
    data: Mapping[str, Any],
    *,
    now: datetime,
    stamp: Instant,
    actor: str,
    plan_id: str | None = None,
) -> JournalEntry:
    """Append one sealed entry inside an open write transaction: one read of the head, one insert."""
    draft = _Draft(sealer, kind, data, now, actor, plan_id, stamp)
    entry, values = draft.after(_head(await tx.one(_HEAD)))
    await tx.run(_INSERT, values)
    return entry


# Rows verified once and kept, so a row read again (the ledger reads on past this process's own appends) is
# not verified twice. The bound holds memory: a plan's row reads back as several KiB, and 4,096 of them held
# about 20 MiB that a long session grew into; the ledger reads its own appends back within a few calls, so
# the newest 512 are what it asks for again (bench_long_session prints the bound).
VERIFIED_ROWS_KEPT = 512


class Journal:
    """Insert-only log. Appends from every task and process form one unbroken, sealed chain.

    Reads return only what Pilot wrote: a row whose seal does not verify (forged or edited behind the
    triggers) is skipped by `entries`, `latest`, `get` and `read_on`, so a forged "kill switch off" is never
    obeyed; `verify` names it.
    """

    def __init__(
        self,
        db: Database,
        sealer: Sealer,
        legacy_entries: int = 0,
        clock: StoreClock | None = None,
        anchor: AnchorFile | None = None,
    ) -> None:
        self._db = db
        self._sealer = sealer
        self.clock: StoreClock = clock or HostClock()  # every entry carries its reading
        self._anchor = anchor  # the head, kept outside the home (pilot.store.anchor)
        self._anchoring = asyncio.Lock()
        # Set when the journal no longer holds its anchored entry (found at open, by `check_anchor`, or as an
        # append went to advance the anchor); the anchor stays as it was, as evidence, until `reanchor`.
        self.rollback: Rollback | None = None
        self._legacy_entries = legacy_entries  # seqs 1..n predate sealing and carry no seal
        # Rows already verified, as they were read: every plan reads the last minutes' sends and outcomes
        # again, and checking each one's hash and seal every time cost more than the rest of a plan.
        self._verified: dict[int, tuple[tuple[Any, ...], JournalEntry]] = {}
        self._head: Mark | None = None  # the newest entry this Journal appended or saw, to append after

    def _genuine(self, row: Row) -> JournalEntry | None:
        """The row as an entry if Pilot wrote it: its hash and seal verify, or it predates sealing.

        A row read again exactly as it was when verified is not verified twice; any difference, an edit
        made since included, is verified afresh.
        """
        raw = tuple(row.values())
        known = self._verified.get(row["seq"])
        if known is not None and known[0] == raw:
            return known[1]
        entry = self._verify(row)
        if entry is not None:
            self._remember(raw, entry)
        return entry

    def _remember(self, raw: tuple[Any, ...], entry: JournalEntry) -> None:
        if len(self._verified) >= VERIFIED_ROWS_KEPT:
            self._verified.pop(next(iter(self._verified)))  # the one kept longest
        self._verified[entry.seq] = (raw, entry)

    def _verify(self, row: Row) -> JournalEntry | None:
        read = row_text(row)
        if read is None:
            return None
        text, data = read
        if sha256_hex(text) != row["hash"]:
            return None
        genuine = (
            row["seq"] <= self._legacy_entries
            if row["seal"] is None
            else self._sealer.entry_matches(text, row["seal"])
        )
        try:
            return _entry(row, data) if genuine else None
        except (TypeError, ValueError):  # an `at` that is not a time: not something Pilot wrote
            return None

    def _all_genuine(self, rows: list[Row]) -> list[JournalEntry]:
        return [entry for entry in map(self._genuine, rows) if entry is not None]

    async def append(
        self,
        kind: str,
        data: Mapping[str, Any],
        *,
        now: datetime,
        actor: str = "agent",
        plan_id: str | None = None,
        durable: bool = True,
        unless: Unless | None = None,
    ) -> JournalEntry:
        """Append one entry linked to the current last one, sealed, and return it as stored.

        One statement, in the usual case: the entry is sealed for the place after the last head this
        Journal saw, and inserted only if that is still the head (checked under the database's write lock).
        If another process appended since, the head is read again and the entry sealed for the new place.
        `durable=False` only for an entry whose loss to a power cut is harmless (pilot.store.database).
        `unless`: the entry is appended only if, at that moment, no entry of `unless.kinds` follows
        `unless.after`; else nothing is appended and Preempted names them. The condition is checked in the
        same statement as the insert, so whichever of the two entries the database took first comes first.

        Raises:
            Preempted: `unless` was given and such an entry is there.
        """
        actor = acting_actor(actor)
        draft = _Draft(self._sealer, kind, data, now, actor, plan_id, self.clock.read())
        # A conditional entry also waits on the journal still holding its anchored entry: a journal rolled
        # back under a running server takes no growing send (pilot.store.anchor).
        anchored = self._anchor.read() if unless is not None and self._anchor is not None else None
        head = self._head
        while True:
            if head is None:
                head = await self.mark()
            entry, values = draft.after(head)
            sql, params = _conditional_insert(self._db.dialect, values, head, unless, anchored)
            try:
                changed = await self._db.change(sql, params, durable=durable)
            except DuplicateRecord:  # a server-based store: another host took this seq in the same instant
                changed = 0
            if changed == 1:
                self._head = Mark(entry.seq, entry.hash)
                self._remember(values, entry)  # the row as it reads back (SELECT * order): known genuine
                if durable:
                    await self._advance_anchor(entry)
                return entry
            if unless is not None:
                await self._why_not(unless, anchored)
            head = None

    async def _why_not(self, unless: Unless, anchored: HeadAnchor | None) -> None:
        """Raise Preempted when a conditional insert failed on its condition (rather than on a moved head)."""
        found = await self._following(unless)
        if found:
            raise Preempted(found)
        if unless.turn is not None and not await self._holds(*unless.turn):
            raise Preempted((), turn_lost=True)
        if anchored is not None and (lost := await self._lost(anchored)) is not None:
            self.rollback = lost
            raise Preempted(())

    async def _advance_anchor(self, entry: JournalEntry) -> None:
        """Anchor the journal at `entry` (durable, so never ahead of what survives a power cut), if it still
        holds the entry anchored before; else note the rollback and leave the anchor as evidence."""
        anchor = self._anchor
        if anchor is None or self.rollback is not None or entry.seal is None:
            return
        async with self._anchoring:
            current = anchor.read()
            if current is not None and current.seq >= entry.seq:
                return
            if current is not None and (lost := await self._lost(current)) is not None:
                self.rollback = lost
                return
            anchor.advance(HeadAnchor(entry.seq, entry.hash, entry.seal))

    async def _lost(self, anchored: HeadAnchor) -> Rollback | None:
        """How the journal lost its anchored entry, or None when it holds it."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT hash, seal FROM journal WHERE seq = ?", (anchored.seq,))
            head = _head(await tx.one(_HEAD))
        if row is None:
            return Rollback(anchored, head.seq, "tail_missing")
        if row["hash"] != anchored.hash or row["seal"] != anchored.seal:
            return Rollback(anchored, head.seq, "anchor_mismatch")
        return None

    @property
    def sealer(self) -> Sealer:
        return self._sealer

    def anchored(self) -> Anchor | None:
        """The entry this journal is anchored at outside the home, if it is (pilot.store.anchor)."""
        own = self._anchor.read() if self._anchor is not None else None
        return Anchor(own.seq, own.seal) if own is not None else None

    async def check_anchor(self) -> Rollback | None:
        """Whether the journal still holds the entry it was anchored at; the rollback found, if not (kept in
        `rollback`; cleared once the anchor holds again, after a process journaled the finding and anchored
        the journal anew, `reanchor`). A journal never anchored (a home from before anchors) is anchored at
        its newest sealed entry now."""
        anchor = self._anchor
        if anchor is None:
            return self.rollback
        async with self._anchoring:
            current = anchor.read()
            if current is None:
                head = await self._sealed_head()
                if head is not None and self.rollback is None:
                    anchor.advance(head)
            else:
                self.rollback = await self._lost(current)
        return self.rollback

    async def reanchor(self) -> None:
        """Anchor the journal at its newest entry whatever the anchor said: once a rollback found has been
        journaled (the evidence is then in the journal), so the next check compares with what it holds now."""
        if self._anchor is None:
            return
        async with self._anchoring:
            head = await self._sealed_head()
            self._anchor.replace(head)
            self.rollback = None

    async def _sealed_head(self) -> HeadAnchor | None:
        async with self._db.read() as tx:
            row = await tx.one("SELECT seq, hash, seal FROM journal ORDER BY seq DESC LIMIT 1")
        if row is None or not (isinstance(row["seal"], str) and is_seal(row["seal"])):
            return None
        return HeadAnchor(row["seq"], row["hash"], row["seal"])

    async def _holds(self, lease: str, holder: str) -> bool:
        own = " AND session = pilot_session()" if self._db.dialect.sessions else ""
        async with self._db.read() as tx:
            row = await tx.one(
                "SELECT 1 AS held FROM leases WHERE name = ? AND holder = ? AND boot = pilot_boot()"
                f" AND expires_micros > pilot_micros(){own}",
                (lease, holder),
            )
        return row is not None

    async def _following(self, unless: Unless) -> tuple[int, ...]:
        kinds = tuple(unless.kinds)
        async with self._db.read() as tx:
            rows = await tx.all(
                f"SELECT seq FROM journal WHERE seq > ? AND kind IN ({', '.join('?' * len(kinds))})"
                " ORDER BY seq",
                (unless.after, *kinds),
            )
        return tuple(row["seq"] for row in rows)

    async def entries(
        self,
        *,
        plan_id: str | None = None,
        kind: str | tuple[str, ...] | None = None,
        kind_prefix: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after: int | None = None,
        limit: int | None = None,
        newest_first: bool = False,
        or_since: Instant | None = None,
    ) -> list[JournalEntry]:
        """Return entries matching every given filter, in seq order; time bounds are [since, until), and
        `after` keeps only entries with a greater seq. `or_since` widens `since`: entries stamped at or
        after that reading of the store's clock (in its boot) are taken too, whatever their wall time."""
        clauses, params = _filters(plan_id, kind, kind_prefix)
        clauses, params = _add_time_bounds(clauses, params, since, until, or_since)
        if after is not None:
            clauses.append("seq > ?")
            params.append(after)
        sql = "SELECT * FROM journal" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        sql += " ORDER BY seq " + ("DESC" if newest_first else "ASC")
        async with self._db.read() as tx:
            if limit is None:
                return self._all_genuine(await tx.all(sql, params))
            rows = await tx.all(sql + " LIMIT ?", [*params, limit])
            found = self._all_genuine(rows)
            if len(found) < len(rows):  # forged rows took places in the limit: read on past them
                found = self._all_genuine(await tx.all(sql, params))[:limit]
        return found

    async def mark(self) -> Mark:
        """Where the journal ends now (START when it is empty)."""
        async with self._db.read() as tx:
            return _head(await tx.one(_HEAD))

    async def read_on(self, mark: Mark, kinds: frozenset[str]) -> tuple[list[JournalEntry], Mark] | None:
        """The entries of `kinds` appended after `mark` that Pilot wrote, in seq order, and the new end.

        One read, of the rows after `mark` only (every process's appends included: seqs are taken in
        commit order). None when the journal no longer holds `mark` as it was (the database was replaced
        or cut short): the caller reads what it needs afresh.
        """
        async with self._db.read() as tx:
            rows = await tx.all("SELECT * FROM journal WHERE seq >= ? ORDER BY seq", (mark.seq,))
        if mark.seq > 0:
            if not rows or (rows[0]["seq"], rows[0]["hash"]) != (mark.seq, mark.hash):
                return None
            rows = rows[1:]
        if not rows:
            return [], mark
        self._head = end = _head(rows[-1])
        return self._all_genuine([row for row in rows if row["kind"] in kinds]), end

    async def get(self, seq: int) -> JournalEntry | None:
        """Return the entry with this seq, if there is one and Pilot wrote it."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT * FROM journal WHERE seq = ?", (seq,))
        return self._genuine(row) if row else None

    async def latest(self, kind: str | tuple[str, ...]) -> JournalEntry | None:
        """Return the newest entry of the given kind (or kinds) that Pilot wrote."""
        found = await self.entries(kind=kind, limit=1, newest_first=True)
        return found[0] if found else None

    async def anchor(self) -> Anchor | None:
        """The newest entry's seq and seal, to keep outside Pilot; None if the journal is empty or unsealed."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT seq, seal FROM journal ORDER BY seq DESC LIMIT 1")
        if row is None or not (isinstance(row["seal"], str) and is_seal(row["seal"])):
            return None
        return Anchor(row["seq"], row["seal"])

    async def verify(self, anchor: Anchor | None = None) -> ChainReport:
        """Recompute every hash, seal and link from the first entry to the last; check the journal's own
        anchor (pilot.store.anchor), and `anchor` if given.

        Finds rows edited, inserted, rehashed or removed behind the triggers' back (raw SQL with the
        triggers dropped) and gaps in seq. A chain alone cannot show a deleted tail (cut short after its
        last surviving entry, it is still a valid chain); an anchor does: a journal that ends before the
        anchored seq, or holds another entry there, is broken.
        """
        anchors = (anchor,) if anchor is not None else ()
        own = self.anchored()
        if own is not None:
            anchors = (*anchors, own)
        walk = ChainWalk(self._sealer, anchors)
        async with self._db.read() as tx, aclosing(tx.stream("SELECT * FROM journal ORDER BY seq")) as rows:
            async for row in rows:
                broken = walk.step(row)
                if broken:
                    return broken
        return walk.finish()


def _conditional_insert(
    dialect: Dialect,
    values: tuple[Any, ...],
    head: Mark,
    unless: Unless | None,
    anchored: HeadAnchor | None = None,
) -> tuple[str, tuple[Any, ...]]:
    """The insert of an entry sealed for the place after `head`: only while `head` is the last entry, and,
    with `unless`, while no entry of its kinds follows its seq, its turn is held, and the journal still holds
    `anchored`."""
    sql = (
        _INSERT + " WHERE (SELECT COALESCE(MAX(seq), 0) FROM journal) = ?"
        " AND COALESCE((SELECT hash FROM journal WHERE seq = ?), '') = ?"
    )
    params: tuple[Any, ...] = (*values, head.seq, head.seq, "" if head.seq == 0 else head.hash)
    if unless is not None:
        kinds = tuple(unless.kinds)
        sql += (
            " AND NOT EXISTS (SELECT 1 FROM journal WHERE seq > ?"
            f" AND kind IN ({', '.join('?' * len(kinds))}))"
        )
        params = (*params, unless.after, *kinds)
    if unless is not None and unless.turn is not None:
        own = " AND session = pilot_session()" if dialect.sessions else ""
        sql += (
            " AND EXISTS (SELECT 1 FROM leases WHERE name = ? AND holder = ? AND boot = pilot_boot()"
            f" AND expires_micros > pilot_micros(){own}{dialect.lock_row})"
        )
        params = (*params, *unless.turn)
    if anchored is not None:
        sql += " AND EXISTS (SELECT 1 FROM journal WHERE seq = ? AND hash = ?)"
        params = (*params, anchored.seq, anchored.hash)
    return sql, params


def _add_time_bounds(
    clauses: list[str],
    params: list[Any],
    since: datetime | None,
    until: datetime | None,
    or_since: Instant | None = None,
) -> tuple[list[str], list[Any]]:
    if since is not None and or_since is not None:
        clauses.append("(at >= ? OR (boot = ? AND micros >= ?))")
        params.extend([iso_utc(since), or_since.boot, or_since.micros])
    elif since is not None:
        clauses.append("at >= ?")
        params.append(iso_utc(since))
    if until is not None:
        clauses.append("at < ?")
        params.append(iso_utc(until))
    return clauses, params
