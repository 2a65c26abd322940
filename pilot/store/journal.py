"""The append-only, hash-chained journal: what happened, in order, and proof it was not edited."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pilot.store.canonical import canonical_hash, canonical_json, iso_utc, parse_iso
from pilot.store.database import Database

GENESIS_HASH = "0" * 64


@dataclass(frozen=True)
class JournalEntry:
    """One journal row; `data` is the canonical JSON read back, so Decimals arrive as strings."""

    seq: int
    at: datetime
    kind: str
    actor: str
    plan_id: str | None
    data: dict[str, Any]
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class ChainReport:
    """The result of `Journal.verify`.

    `reason` is a stable code: "seq_gap", "prev_hash_mismatch", "hash_mismatch" or "unreadable_data".
    """

    count: int
    ok: bool
    first_broken_seq: int | None = None
    reason: str | None = None


def entry_hash(
    seq: int, at: str, kind: str, actor: str, plan_id: str | None, data: Any, prev_hash: str
) -> str:
    """Hash the fields of an entry; `at` is the stored ISO text and `data` the parsed JSON."""
    fields = {"seq": seq, "at": at, "kind": kind, "actor": actor, "plan_id": plan_id}
    return canonical_hash({**fields, "data": data, "prev_hash": prev_hash})


def _entry(row: sqlite3.Row) -> JournalEntry:
    return JournalEntry(
        seq=row["seq"],
        at=parse_iso(row["at"]),
        kind=row["kind"],
        actor=row["actor"],
        plan_id=row["plan_id"],
        data=json.loads(row["data"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
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


class Journal:
    """Insert-only log. Appends from every task and process form one unbroken chain."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(
        self,
        kind: str,
        data: Mapping[str, Any],
        *,
        now: datetime,
        actor: str = "agent",
        plan_id: str | None = None,
    ) -> JournalEntry:
        """Append one entry linked to the current last one and return it as stored."""
        at, data_json = iso_utc(now), canonical_json(data)
        parsed = json.loads(data_json)
        async with self._db.write() as tx:
            last = await tx.one("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1")
            seq, prev_hash = (last["seq"] + 1, last["hash"]) if last else (1, GENESIS_HASH)
            digest = entry_hash(seq, at, kind, actor, plan_id, parsed, prev_hash)
            await tx.run(
                "INSERT INTO journal (seq, at, kind, actor, plan_id, data, prev_hash, hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (seq, at, kind, actor, plan_id, data_json, prev_hash, digest),
            )
        return JournalEntry(seq, parse_iso(at), kind, actor, plan_id, parsed, prev_hash, digest)

    async def entries(
        self,
        *,
        plan_id: str | None = None,
        kind: str | tuple[str, ...] | None = None,
        kind_prefix: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[JournalEntry]:
        """Return entries matching every given filter, in seq order; time bounds are [since, until)."""
        clauses, params = _filters(plan_id, kind, kind_prefix)
        clauses, params = _add_time_bounds(clauses, params, since, until)
        sql = "SELECT * FROM journal" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        sql += " ORDER BY seq " + ("DESC" if newest_first else "ASC")
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        async with self._db.read() as tx:
            return [_entry(row) for row in await tx.all(sql, params)]

    async def get(self, seq: int) -> JournalEntry | None:
        """Return the entry with this seq, if there is one."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT * FROM journal WHERE seq = ?", (seq,))
        return _entry(row) if row else None

    async def latest(self, kind: str | tuple[str, ...]) -> JournalEntry | None:
        """Return the newest entry of the given kind (or kinds)."""
        found = await self.entries(kind=kind, limit=1, newest_first=True)
        return found[0] if found else None

    async def count(self, kind: str, *, since: datetime, until: datetime) -> int:
        """Count entries of `kind` with `since <= at < until`."""
        clauses, params = _add_time_bounds(["kind = ?"], [kind], since, until)
        async with self._db.read() as tx:
            row = await tx.one(f"SELECT COUNT(*) AS n FROM journal WHERE {' AND '.join(clauses)}", params)
        return row["n"] if row else 0

    async def verify(self) -> ChainReport:
        """Recompute every hash and link from the first entry to the last.

        Finds rows edited or removed behind the triggers' back (e.g. by raw SQL with the triggers
        dropped) and gaps in seq. It cannot detect a deleted tail: a chain cut short after its last
        surviving entry is still a valid chain. Anchor the latest hash elsewhere to catch that.
        """
        count, expected_seq, prev_hash = 0, 1, GENESIS_HASH
        async with self._db.read() as tx, aclosing(tx.stream("SELECT * FROM journal ORDER BY seq")) as rows:
            async for row in rows:
                problem = _check_row(row, expected_seq, prev_hash)
                if problem:
                    return ChainReport(count=count, ok=False, first_broken_seq=row["seq"], reason=problem)
                count, expected_seq, prev_hash = count + 1, row["seq"] + 1, row["hash"]
        return ChainReport(count=count, ok=True)


def _check_row(row: sqlite3.Row, expected_seq: int, prev_hash: str) -> str | None:
    if row["seq"] != expected_seq:
        return "seq_gap"
    if row["prev_hash"] != prev_hash:
        return "prev_hash_mismatch"
    try:
        data = json.loads(row["data"])
    except (TypeError, ValueError):
        return "unreadable_data"
    recomputed = entry_hash(row["seq"], row["at"], row["kind"], row["actor"], row["plan_id"], data, prev_hash)
    return None if recomputed == row["hash"] else "hash_mismatch"


def _add_time_bounds(
    clauses: list[str], params: list[Any], since: datetime | None, until: datetime | None
) -> tuple[list[str], list[Any]]:
    if since is not None:
        clauses.append("at >= ?")
        params.append(iso_utc(since))
    if until is not None:
        clauses.append("at < ?")
        params.append(iso_utc(until))
    return clauses, params
