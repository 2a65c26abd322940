"""Idempotency keys: a retried tool call gets the first call's answer instead of acting twice."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pilot.store.canonical import canonical_hash, canonical_json, iso_utc
from pilot.store.database import Database
from pilot.store.errors import InvalidTransition

BeginStatus = Literal["new", "replay", "conflict", "in_progress"]


@dataclass(frozen=True)
class IdempotencyBegin:
    """How `begin` ended.

    - "new": the caller owns the key; run the action, then `complete` (or `abandon`).
    - "replay": the same tool and args already finished; `response` is the first answer.
    - "conflict": the key was first used by another call; `first_tool` names its tool (args stay private).
    - "in_progress": the same call is still running elsewhere; ask again later.
    """

    status: BeginStatus
    response: dict[str, Any] | None = None
    first_tool: str | None = None


class Idempotency:
    """The idempotency table; `begin` is atomic across tasks and processes."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def begin(self, key: str, *, tool: str, args: Mapping[str, Any], now: datetime) -> IdempotencyBegin:
        """Claim `key` for this call, or report what an earlier call with the same key did."""
        args_hash = canonical_hash(args)
        # One insert decides who owns a new key, on any engine: a second caller's insert does nothing.
        if await self._db.change(
            "INSERT INTO idempotency (key, tool, args_hash, state, created_at) VALUES (?, ?, ?, 'pending', ?)"
            " ON CONFLICT (key) DO NOTHING",
            (key, tool, args_hash, iso_utc(now)),
        ):
            return IdempotencyBegin("new")
        async with self._db.read() as tx:
            row = await tx.one(
                "SELECT tool, args_hash, state, response_json FROM idempotency WHERE key = ?", (key,)
            )
        if row is None:  # forgotten (abandoned) since: ask again
            return await self.begin(key, tool=tool, args=args, now=now)
        if (row["tool"], row["args_hash"]) != (tool, args_hash):
            return IdempotencyBegin("conflict", first_tool=row["tool"])
        if row["state"] == "pending":
            return IdempotencyBegin("in_progress")
        return IdempotencyBegin("replay", response=json.loads(row["response_json"]))

    async def complete(self, key: str, response: Mapping[str, Any], *, now: datetime) -> None:
        """Store the answer of the call that owns `key`; later calls with the key replay it.

        Raises:
            InvalidTransition: the key is unknown or already complete.
        """
        changed = await self._db.change(
            "UPDATE idempotency SET state = 'done', response_json = ?, completed_at = ?"
            " WHERE key = ? AND state = 'pending'",
            (canonical_json(response), iso_utc(now), key),
        )
        if changed != 1:
            raise InvalidTransition(f"idempotency key {key!r} is not pending")

    async def abandon(self, key: str) -> bool:
        """Forget a pending key so a retry with it runs afresh; return whether one was forgotten.

        Only for a call that ended before any exchange contact: after a request may have been
        sent, `complete` the key with the (possibly unknown) outcome instead, or a retry could
        send the order twice. Completed keys are never forgotten.
        """
        changed = await self._db.change("DELETE FROM idempotency WHERE key = ? AND state = 'pending'", (key,))
        return changed == 1
