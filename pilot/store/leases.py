"""Leases: named locks that hold across every process opening the database, and expire if the holder dies.

A lease is taken by one conditional write inside a `BEGIN IMMEDIATE` transaction, so two processes (or two
connections of one) can never both hold it. It carries an expiry: a holder that crashed releases it by
running out of time, never by someone guessing that it died. A server-based store would give the same
guarantee with its own primitive (a PostgreSQL advisory lock, which its session's end releases).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pilot.store.canonical import iso_utc
from pilot.store.database import Database


class Leases:
    """The leases table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def try_acquire(self, name: str, holder: str, *, now: datetime, ttl: timedelta) -> bool:
        """Take (or renew) lease `name` for `holder` until `now + ttl`; False while someone else holds it."""
        at, until = iso_utc(now), iso_utc(now + ttl)
        async with self._db.write() as tx:
            await tx.run(
                "INSERT OR IGNORE INTO leases (name, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
                (name, holder, at, until),
            )
            changed = await tx.run(
                "UPDATE leases SET holder = ?, acquired_at = ?, expires_at = ?"
                " WHERE name = ? AND (holder = ? OR expires_at <= ?)",
                (holder, at, until, name, holder, at),
            )
        return changed == 1

    async def release(self, name: str, holder: str) -> bool:
        """Give lease `name` back if `holder` still holds it; return whether it did."""
        async with self._db.write() as tx:
            changed = await tx.run("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
        return changed == 1

    async def holder(self, name: str, *, now: datetime) -> str | None:
        """Who holds lease `name` now, if anyone."""
        async with self._db.read() as tx:
            row = await tx.one(
                "SELECT holder FROM leases WHERE name = ? AND expires_at > ?", (name, iso_utc(now))
            )
        return str(row["holder"]) if row else None
