"""Confirmations: actions parked until a human approves them, then run at most once.

A confirmation may be decided, and an approved one run, for its time to live on the store's clock
(pilot.store.monotonic), whichever process (the server, the CLI, the console) asks and whatever its wall clock
says; `expires_at` is when that is by the wall clock that parked it, for people to read.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pilot.store.canonical import canonical_json, iso_utc, parse_iso
from pilot.store.database import Database, Row
from pilot.store.errors import InvalidTransition
from pilot.store.monotonic import HostClock, Instant, StoreClock

ConfirmationStatus = Literal[
    "pending", "approved", "rejected", "cancelled", "expired", "executing", "executed"
]


def new_confirmation_id() -> str:
    """Return a fresh, unguessable confirmation id (192 random bits)."""
    return "cfm_" + secrets.token_urlsafe(24)


@dataclass(frozen=True)
class ConfirmationRecord:
    """A parked action and where it stands.

    pending -> approved -> executing -> executed, or pending -> rejected | cancelled. A pending
    record whose time to live is over (on the store's clock) is reported as "expired" wherever the caller
    passes `now`.
    """

    confirmation_id: str
    created_at: datetime
    expires_at: datetime
    status: ConfirmationStatus
    tool: str
    action: dict[str, Any]
    summary: str
    decided_by: str | None
    decided_at: datetime | None
    claimed_at: datetime | None
    result: dict[str, Any] | None
    result_at: datetime | None


def _optional_time(text: str | None) -> datetime | None:
    return parse_iso(text) if text else None


def _ended(row: Row, here: Instant) -> bool:
    """Whether its time to live is over on the store's clock (one parked before that clock, or in an
    earlier boot, is over)."""
    return (
        row["boot"] != here.boot
        or not isinstance(row["expires_micros"], int)
        or row["expires_micros"] <= here.micros
    )


def _record(row: Row, here: Instant | None = None) -> ConfirmationRecord:
    record = ConfirmationRecord(
        confirmation_id=row["confirmation_id"],
        created_at=parse_iso(row["created_at"]),
        expires_at=parse_iso(row["expires_at"]),
        status=row["status"],
        tool=row["tool"],
        action=json.loads(row["action_json"]),
        summary=row["summary"],
        decided_by=row["decided_by"],
        decided_at=_optional_time(row["decided_at"]),
        claimed_at=_optional_time(row["claimed_at"]),
        result=json.loads(row["result_json"]) if row["result_json"] else None,
        result_at=_optional_time(row["result_at"]),
    )
    if here is not None and record.status == "pending" and _ended(row, here):
        return dataclasses.replace(record, status="expired")
    return record


class Confirmations:
    """The confirmations table. Every transition is one conditional UPDATE, so each happens once."""

    def __init__(self, db: Database, clock: StoreClock | None = None) -> None:
        self._db = db
        self._clock: StoreClock = clock or HostClock()

    async def park(
        self,
        *,
        confirmation_id: str,
        tool: str,
        action: Mapping[str, Any],
        summary: str,
        now: datetime,
        ttl_seconds: int,
    ) -> ConfirmationRecord:
        """Store a pending action that a human may decide for `ttl_seconds` of the store's clock (until
        `now + ttl_seconds` by the wall clock `now` comes from)."""
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        life = timedelta(seconds=ttl_seconds)
        rows = await self._db.returning(
            "INSERT INTO confirmations (confirmation_id, created_at, expires_at, status, tool, action_json,"
            " summary, boot, expires_micros) VALUES (?, ?, ?, 'pending', ?, ?, ?, pilot_boot(), pilot_micros() + ?)"
            " RETURNING *",
            (
                *(confirmation_id, iso_utc(now), iso_utc(now + life), tool, canonical_json(action)),
                *(summary, ttl_seconds * 1_000_000),
            ),
        )
        return _record(rows[0])

    async def get(self, confirmation_id: str, *, now: datetime | None = None) -> ConfirmationRecord | None:
        """Return the confirmation; with `now`, an overdue pending one reads as "expired"."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT * FROM confirmations WHERE confirmation_id = ?", (confirmation_id,))
        return _record(row, self._clock.read() if now is not None else None) if row else None

    async def list(
        self, *, status: ConfirmationStatus | None = None, now: datetime | None = None
    ) -> list[ConfirmationRecord]:
        """Return confirmations, oldest first, optionally only those with `status` as of `now`."""
        async with self._db.read() as tx:
            rows = await tx.all("SELECT * FROM confirmations ORDER BY created_at, confirmation_id")
        here = self._clock.read() if now is not None else None
        records = [_record(row, here) for row in rows]
        return [record for record in records if status is None or record.status == status]

    async def decide(
        self, confirmation_id: str, *, approve: bool, actor: str, now: datetime
    ) -> ConfirmationRecord | None:
        """Approve or reject a pending, unexpired confirmation; None if it is not decidable."""
        return await self._transition(
            "status = ?, decided_by = ?, decided_at = ?",
            ("approved" if approve else "rejected", actor, iso_utc(now)),
            confirmation_id,
            "status = 'pending' AND boot = pilot_boot() AND expires_micros > pilot_micros()",
        )

    async def cancel(self, confirmation_id: str, *, now: datetime) -> ConfirmationRecord | None:
        """Withdraw a pending, unexpired confirmation; None if there is none to withdraw."""
        return await self._transition(
            "status = 'cancelled', decided_at = ?",
            (iso_utc(now),),
            confirmation_id,
            "status = 'pending' AND boot = pilot_boot() AND expires_micros > pilot_micros()",
        )

    async def claim_approved(self, confirmation_id: str, *, now: datetime) -> ConfirmationRecord | None:
        """Move an approved confirmation to "executing" so its action runs once; None if not claimable.

        The ttl bounds the whole approve-and-run window: an approval is not run after `expires_at`,
        since the market it was approved for has moved on.
        """
        return await self._transition(
            "status = 'executing', claimed_at = ?",
            (iso_utc(now),),
            confirmation_id,
            "status = 'approved' AND boot = pilot_boot() AND expires_micros > pilot_micros()",
        )

    async def record_result(self, confirmation_id: str, result: Mapping[str, Any], *, now: datetime) -> None:
        """Record what running the action did and mark it "executed".

        Raises:
            InvalidTransition: the confirmation is not executing.
        """
        changed = await self._db.change(
            "UPDATE confirmations SET status = 'executed', result_json = ?, result_at = ?"
            " WHERE confirmation_id = ? AND status = 'executing'",
            (canonical_json(result), iso_utc(now), confirmation_id),
        )
        if changed != 1:
            raise InvalidTransition(f"confirmation {confirmation_id} is not executing")

    async def _transition(
        self, assignments: str, values: tuple[Any, ...], confirmation_id: str, guard: str
    ) -> ConfirmationRecord | None:
        """One conditional update: `guard` names the status it needs and ends with the store clock's test
        (decided as the statement runs: on a server-based store, on the server's clock)."""
        rows = await self._db.returning(
            f"UPDATE confirmations SET {assignments} WHERE confirmation_id = ? AND {guard} RETURNING *",
            (*values, confirmation_id),
        )
        return _record(rows[0]) if len(rows) == 1 else None
