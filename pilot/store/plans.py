"""Plans: single-use tickets that survive restarts; one claim wins, across tasks and processes.

A plan lives its time to live on the store's clock (pilot.store.monotonic), not the wall clock: a clock stepped
back does not lengthen it, nor one stepped forward cut it short. Its `expires_at` is the wall time that
life ends at, for people to read. A claim records who made it (a holder id, pilot.store.monotonic.holder_id) and
when, on the same clock, so a plan whose claimer is gone is known at once (`abandoned`).

A plan's id, times and payload are sealed with the journal key when it is created (pilot.store.sealing).
Triggers keep them fixed and let the status only move forward (open, claimed, done); the seal covers the
case where the triggers were dropped: a plan whose seal does not verify (forged, edited, or written before
sealing) is not found by `claim` or `get`, and a claim of one is journaled as `store.plan_rejected`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pilot.store.canonical import canonical_json, iso_utc, parse_iso
from pilot.store.chain import STORE_ACTOR, STORE_PLAN_REJECTED
from pilot.store.database import Database, Row, Tx
from pilot.store.errors import InvalidTransition
from pilot.store.journal import append_entry
from pilot.store.monotonic import HostClock, Instant, StoreClock, age, process_gone
from pilot.store.sealing import Sealer

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
    claimed_by: str | None = None
    claimed: Instant | None = None  # when, on the store's clock
    ends: Instant | None = None  # when its life ends, on the store's clock (None: a plan from before it)
    claimer_gone: bool = False  # the claimer's session had ended when this was read (a server-based store)


def _instant(boot: object, micros: object) -> Instant | None:
    return Instant(boot, micros) if isinstance(boot, str) and isinstance(micros, int) else None


@dataclass(frozen=True)
class ClaimResult:
    """How a claim ended. `plan` is set unless the plan was not found."""

    status: ClaimStatus
    plan: PlanRecord | None = None


def _optional_time(text: str | None) -> datetime | None:
    return parse_iso(text) if text else None


def _record(row: Row) -> PlanRecord:
    return PlanRecord(
        plan_id=row["plan_id"],
        created_at=parse_iso(row["created_at"]),
        expires_at=parse_iso(row["expires_at"]),
        status=row["status"],
        payload=json.loads(row["payload_json"]),
        claimed_at=_optional_time(row["claimed_at"]),
        outcome=json.loads(row["outcome_json"]) if row["outcome_json"] else None,
        outcome_at=_optional_time(row["outcome_at"]),
        claimed_by=row["claimed_by"],
        claimed=_instant(row["boot"], row["claimed_micros"]),
        ends=_instant(row["boot"], row["expires_micros"]),
        claimer_gone=bool(row.get("claimer_gone")),
    )


def _json_or_none(value: object) -> str | None:
    return None if value is None else canonical_json(value)


def _plan_text(
    plan_id: str,
    created_at: str,
    expires_at: str,
    payload_json: str,
    boot: str | None = None,
    expires_micros: int | None = None,
) -> str:
    """What a plan's seal covers: everything about it that must never change (its end on the store's
    clock too, for a plan that has one)."""
    fields: dict[str, str | int | None] = {
        "plan_id": plan_id,
        "created_at": created_at,
        "expires_at": expires_at,
    }
    if boot is not None:
        fields |= {"boot": boot, "expires_micros": expires_micros}
    return canonical_json({**fields, "payload_json": payload_json})


class Plans:
    """The plans table: open -> claimed -> done, never back."""

    def __init__(self, db: Database, sealer: Sealer, clock: StoreClock | None = None) -> None:
        self._db = db
        self._sealer = sealer
        self._clock: StoreClock = clock or HostClock()

    def _sealed(self, row: Row) -> bool:
        text = _plan_text(
            row["plan_id"],
            row["created_at"],
            row["expires_at"],
            row["payload_json"],
            row["boot"],
            row["expires_micros"],
        )
        return self._sealer.plan_matches(text, row["seal"])

    async def create(
        self, *, plan_id: str, payload: Mapping[str, Any], now: datetime, ttl_seconds: int
    ) -> PlanRecord:
        """Store an open plan that can be claimed for `ttl_seconds` of the store's clock from now; its
        `expires_at` says when that is by the wall clock `now` comes from.

        `order_json` and `snapshot_json` copy `payload["order"]` and `payload["snapshot"]` for
        people reading the database by hand; `payload_json` is the record of truth.

        Raises:
            DuplicateRecord: the plan id is taken.
        """
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        life = timedelta(seconds=ttl_seconds)
        created_at, expires_at = iso_utc(now), iso_utc(now + life)
        ends = self._clock.read().plus(life)
        payload_json = canonical_json(payload)
        seal = self._sealer.plan(
            _plan_text(plan_id, created_at, expires_at, payload_json, ends.boot, ends.micros)
        )
        # Not durable: a plan lost to a power cut is not found, and the agent plans again.
        rows = await self._db.returning(
            "INSERT INTO plans (plan_id, created_at, expires_at, status, order_json, snapshot_json,"
            " payload_json, seal, boot, expires_micros) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?) RETURNING *",
            (
                plan_id,
                created_at,
                expires_at,
                _json_or_none(payload.get("order")),
                _json_or_none(payload.get("snapshot")),
                payload_json,
                seal,
                ends.boot,
                ends.micros,
            ),
            durable=False,
        )
        return _record(rows[0])

    async def claim(self, plan_id: str, *, now: datetime, holder: str = "") -> ClaimResult:
        """Claim an open plan whose life has not ended on the store's clock. Exactly one of any number of
        concurrent claimers wins. `holder` names the claimer (pilot.store.monotonic.holder_id), so a plan
        whose claimer is gone can be told from one in use (`abandoned`).

        The single conditional UPDATE decides; when it changed nothing, a read explains why. A plan whose
        seal does not verify is "not_found" (even if the update marked it claimed: nothing else reads it)
        and the attempt is journaled. A plan made before plans had the store's clock has ended.
        """
        at, here = iso_utc(now), self._clock.read()
        session = ", claimed_session = pilot_session()" if self._db.dialect.sessions else ""
        # Not durable by itself: nothing is sent on a claim before a durable write (the order.sent entry),
        # which syncs the claim with it; a claim lost to a power cut before that sent nothing. Decided on the
        # store's clock as the statement runs (the database server's, for a server-based store).
        claimed = await self._db.returning(
            f"UPDATE plans SET status = 'claimed', claimed_at = ?, claimed_by = ?, claimed_micros = pilot_micros()"
            f"{session} WHERE plan_id = ? AND status = 'open' AND boot = pilot_boot()"
            " AND expires_micros > pilot_micros() RETURNING *",
            (at, holder, plan_id),
            durable=False,
        )
        row = claimed[0] if claimed else await self._row(plan_id)
        if row is None:
            return ClaimResult("not_found")
        if not self._sealed(row):
            async with self._db.write() as tx:
                await _journal_rejected(tx, self._sealer, row, now, here)
            return ClaimResult("not_found")
        record = _record(row)
        if claimed:
            return ClaimResult("claimed", record)
        return ClaimResult("expired" if row["status"] == "open" else "already_used", record)

    async def record_outcome(self, plan_id: str, outcome: Mapping[str, Any], *, now: datetime) -> None:
        """Record what happened to a claimed plan and mark it done; a later call replaces the outcome.

        Raises:
            InvalidTransition: the plan does not exist or was never claimed.
        """
        # Not durable: a claimed plan left without its outcome by a power cut is given it again from the
        # journal and the exchange at start-up (pilot.app.service.upkeep).
        changed = await self._db.change(
            "UPDATE plans SET status = 'done', outcome_json = ?, outcome_at = ?"
            " WHERE plan_id = ? AND status IN ('claimed', 'done')",
            (canonical_json(outcome), iso_utc(now), plan_id),
            durable=False,
        )
        if changed != 1:
            raise InvalidTransition(f"plan {plan_id} is not claimed; its outcome cannot be recorded")

    async def _row(self, plan_id: str) -> Row | None:
        async with self._db.read() as tx:
            return await tx.one("SELECT * FROM plans WHERE plan_id = ?", (plan_id,))

    async def get(self, plan_id: str) -> PlanRecord | None:
        """Return the plan, if it exists and its seal verifies."""
        row = await self._row(plan_id)
        return _record(row) if row and self._sealed(row) else None

    async def unfinished(self) -> list[PlanRecord]:
        """Claimed plans with no outcome recorded yet, oldest first (a use in progress, or one that stopped)."""
        # A server-based store says whether each claimer's session is still there (pilot.store.database).
        gone = ", pilot_session_gone(claimed_session) AS claimer_gone" if self._db.dialect.sessions else ""
        async with self._db.read() as tx:
            rows = await tx.all(
                f"SELECT *{gone} FROM plans WHERE status = 'claimed' AND outcome_json IS NULL ORDER BY claimed_at"
            )
        return [_record(row) for row in rows if self._sealed(row)]

    def alive(self, plan: PlanRecord) -> bool:
        """Whether an open plan's life has not ended yet, on the store's clock (what `claim` decides on)."""
        here, ends = self._clock.read(), plan.ends
        return (
            plan.status == "open"
            and ends is not None
            and ends.boot == here.boot
            and here.micros < ends.micros
        )

    def abandoned(self, plan: PlanRecord, older_than: timedelta) -> bool:
        """Whether no live use can still hold a claimed `plan`: its claimer is gone (certain: its process on
        this machine, for SQLite; its database session, judged by the server when the plan was read, for a
        server-based store, whose claimers may run on any host), or the claim is `older_than` on the store's
        clock (one made before claims were stamped counts as old)."""
        here = self._clock.read()
        claimed = plan.claimed
        if plan.claimer_gone:
            return True
        local = not self._db.dialect.sessions
        if (
            local
            and plan.claimed_by
            and process_gone(plan.claimed_by, claimed.boot if claimed else None, here)
        ):
            return True
        since = age(here, claimed)
        return since is None or since >= older_than


async def _journal_rejected(tx: Tx, sealer: Sealer, row: Row, now: datetime, stamp: Instant) -> None:
    problem = "unsealed" if row["seal"] is None else "seal_mismatch"
    reason = f"a plan whose seal does not verify ({problem}) was presented; it was refused as unknown"
    data = {"problem": problem, "reason": reason}
    await append_entry(
        tx,
        sealer,
        STORE_PLAN_REJECTED,
        data,
        now=now,
        stamp=stamp,
        actor=STORE_ACTOR,
        plan_id=row["plan_id"],
    )
