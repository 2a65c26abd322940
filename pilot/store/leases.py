"""Leases: named locks that hold across every process opening the database, and expire if the holder dies.

A lease is taken by one conditional write (a single statement, atomic, holding the database's write lock),
so two processes (or two connections of one) can never both hold it. It carries an expiry: a holder that
crashed releases it by running out of time, never by someone guessing that it died. A server-based store
would give the same guarantee with its own primitive (a PostgreSQL advisory lock, which its session's end
releases). Neither write is synced to disk by itself: a lease lost to a power cut was held by a process the
power cut stopped too, and a release lost to one runs out.
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
        """Take (or renew) lease `name` for `holder` until `now + ttl`; False while someone else holds it.

        One conditional upsert decides: it inserts a free lease, or takes over one that is ours or expired.
        """
        at, until = iso_utc(now), iso_utc(now + ttl)
        changed = await self._db.change(
            "INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at"
            " WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at",
            (name, holder, at, until),
            durable=False,
        )
        return changed == 1

    async def release(self, name: str, holder: str) -> bool:
        """Give lease `name` back if `holder` still holds it; return whether it did."""
        changed = await self._db.change(
            "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder), durable=False
        )
        return changed == 1

    async def holder(self, name: str, *, now: datetime) -> str | None:
        """Who holds lease `name` now, if anyone."""
        async with self._db.read() as tx:
            row = await tx.one(
                "SELECT holder FROM leases WHERE name = ? AND expires_at > ?", (name, iso_utc(now))
            )
        return str(row["holder"]) if row else None
