"""Plans: single-use tickets that survive restarts; one claim wins, across tasks and processes."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pilot.store.canonical import canonical_json, iso_utc, parse_iso
from pilot.store.database import Database, Tx
from pilot.store.errors import InvalidTransition

PlanStatus = Literal["open", "claimed", "done"]
ClaimStatus = Literal["claimed", "not_found", "expired", "already_used"]


def new_plan_id() -> str:
    """Return a fresh, unguessable plan id (192 random bits)."""
    return "plan_" + secrets.token_urlsafe(24)


@dataclass(frozen=True)
class PlanRecord:
    """A stored plan; `payload` holds the order, the snapshot and whatever else the app planned."""

    plan_id: str
    created_at: datetime
    expires_at: datetime
    status: PlanStatus
    payload: dict[str, Any]
    claimed_at: datetime | None
    outcome: dict[str, Any] | None
    outcome_at: datetime | None


@dataclass(frozen=True)
class ClaimResult:
    """How a claim ended. `plan` is set unless the plan was not found."""

    status: ClaimStatus
    plan: PlanRecord | None = None


def _optional_time(text: str | None) -> datetime | None:
    return parse_iso(text) if text else None


def _record(row: sqlite3.Row) -> PlanRecord:
    return PlanRecord(
        plan_id=row["plan_id"],
        created_at=parse_iso(row["created_at"]),
        expires_at=parse_iso(row["expires_at"]),
        status=row["status"],
        payload=json.loads(row["payload_json"]),
        claimed_at=_optional_time(row["claimed_at"]),
        outcome=json.loads(row["outcome_json"]) if row["outcome_json"] else None,
        outcome_at=_optional_time(row["outcome_at"]),
    )


def _json_or_none(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


class Plans:
    """The plans table: open -> claimed -> done, never back."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self, *, plan_id: str, payload: Mapping[str, Any], now: datetime, ttl_seconds: int
    ) -> PlanRecord:
        """Store an open plan that can be claimed until `now + ttl_seconds`.

        `order_json` and `snapshot_json` copy `payload["order"]` and `payload["snapshot"]` for
        people reading the database by hand; `payload_json` is the record of truth.

        Raises:
            DuplicateRecord: the plan id is taken.
        """
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        expires_at = now + timedelta(seconds=ttl_seconds)
        async with self._db.write() as tx:
            await tx.run(
                "INSERT INTO plans (plan_id, created_at, expires_at, status, order_json, snapshot_json,"
                " payload_json) VALUES (?, ?, ?, 'open', ?, ?, ?)",
                (
                    plan_id,
                    iso_utc(now),
                    iso_utc(expires_at),
                    _json_or_none(payload.get("order")),
                    _json_or_none(payload.get("snapshot")),
                    canonical_json(payload),
                ),
            )
            return await _load(tx, plan_id)

    async def claim(self, plan_id: str, *, now: datetime) -> ClaimResult:
        """Claim an open, unexpired plan. Exactly one of any number of concurrent claimers wins.

        The single conditional UPDATE decides; the read that follows only explains a loss.
        """
        async with self._db.write() as tx:
            changed = await tx.run(
                "UPDATE plans SET status = 'claimed', claimed_at = ?"
                " WHERE plan_id = ? AND status = 'open' AND expires_at > ?",
                (iso_utc(now), plan_id, iso_utc(now)),
            )
            row = await tx.one("SELECT * FROM plans WHERE plan_id = ?", (plan_id,))
        if row is None:
            return ClaimResult("not_found")
        if changed == 1:
            return ClaimResult("claimed", _record(row))
        return ClaimResult("expired" if row["status"] == "open" else "already_used", _record(row))

    async def record_outcome(self, plan_id: str, outcome: Mapping[str, Any], *, now: datetime) -> None:
        """Record what happened to a claimed plan and mark it done; a later call replaces the outcome.

        Raises:
            InvalidTransition: the plan does not exist or was never claimed.
        """
        async with self._db.write() as tx:
            changed = await tx.run(
                "UPDATE plans SET status = 'done', outcome_json = ?, outcome_at = ?"
                " WHERE plan_id = ? AND status IN ('claimed', 'done')",
                (canonical_json(outcome), iso_utc(now), plan_id),
            )
        if changed != 1:
            raise InvalidTransition(f"plan {plan_id} is not claimed; its outcome cannot be recorded")

    async def get(self, plan_id: str) -> PlanRecord | None:
        """Return the plan, if it exists."""
        async with self._db.read() as tx:
            row = await tx.one("SELECT * FROM plans WHERE plan_id = ?", (plan_id,))
        return _record(row) if row else None


async def _load(tx: Tx, plan_id: str) -> PlanRecord:
    row = await tx.one("SELECT * FROM plans WHERE plan_id = ?", (plan_id,))
    assert row is not None, "a plan read back in its own transaction"
    return _record(row)
