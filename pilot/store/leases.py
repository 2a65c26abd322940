"""Leases: named locks that hold across every process opening the database, and end when the holder dies.

A lease is taken by one conditional write (a single statement, atomic, holding the database's write lock),
so two processes (or two connections of one) can never both hold it. It lasts `ttl` on the store's clock
(pilot.store.monotonic), never on a wall clock: a holder whose clock runs ahead or behind, or steps, keeps the
lease as long as any other. A holder that crashed loses it at once when that is certain (its process is gone
from this machine, or it ran in an earlier boot), else when the ttl runs out; never because someone guessed.
A store on PostgreSQL gives the same guarantee with its own primitives: the server's clock, and each holder's
session, whose advisory lock ends with its connection (pilot.store.postgres). Neither write is synced to disk
by itself: a lease lost to a power cut was held by a process the power cut stopped too, and a release lost to
one runs out.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pilot.store.canonical import iso_utc
from pilot.store.database import Database
from pilot.store.monotonic import HostClock, StoreClock, micros_of, process_gone

_TAKE = (
    "INSERT INTO leases (name, holder, acquired_at, expires_at, boot, expires_micros)"
    " VALUES (?, ?, ?, ?, pilot_boot(), pilot_micros() + ?)"
    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at,"
    " expires_at = excluded.expires_at, boot = excluded.boot, expires_micros = excluded.expires_micros"
    " WHERE leases.holder = excluded.holder OR leases.boot IS NOT excluded.boot"
    " OR leases.expires_micros <= pilot_micros() OR leases.holder = ?"
)
# A server-based store records the taker's session and judges the holder's in the same statement.
_TAKE_IN_SESSION = (
    "INSERT INTO leases (name, holder, acquired_at, expires_at, boot, expires_micros, session)"
    " VALUES (?, ?, ?, ?, pilot_boot(), pilot_micros() + ?, pilot_session())"
    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at,"
    " expires_at = excluded.expires_at, boot = excluded.boot, expires_micros = excluded.expires_micros,"
    " session = excluded.session"
    " WHERE leases.holder = excluded.holder OR leases.boot IS DISTINCT FROM excluded.boot"
    " OR leases.expires_micros <= pilot_micros() OR pilot_session_gone(leases.session)"
)


class Leases:
    """The leases table."""

    def __init__(self, db: Database, clock: StoreClock | None = None) -> None:
        self._db = db
        self._clock: StoreClock = clock or HostClock()

    async def try_acquire(self, name: str, holder: str, *, now: datetime, ttl: timedelta) -> bool:
        """Take (or renew) lease `name` for `holder` for `ttl` of the store's clock; False while someone
        else holds it. `now` (a wall time) is recorded for people reading the table, and decides nothing.

        One conditional upsert decides: it inserts a free lease, or takes over one that is ours, expired,
        or held by a holder that is gone: on a server-based store, one whose session ended (judged in the same
        statement); on SQLite, a process gone from this machine (then a second upsert, conditional on that
        same holder).
        """
        if self._db.dialect.sessions:
            changed = await self._db.change(
                _TAKE_IN_SESSION,
                (name, holder, iso_utc(now), iso_utc(now + ttl), micros_of(ttl)),
                durable=False,
            )
            return changed == 1
        if await self._take(name, holder, now, ttl, gone=""):
            return True
        async with self._db.read() as tx:
            row = await tx.one("SELECT holder, boot FROM leases WHERE name = ?", (name,))
        if row is None or not process_gone(str(row["holder"]), row["boot"], self._clock.read()):
            return False
        return await self._take(name, holder, now, ttl, gone=str(row["holder"]))

    async def _take(self, name: str, holder: str, now: datetime, ttl: timedelta, *, gone: str) -> bool:
        changed = await self._db.change(
            _TAKE, (name, holder, iso_utc(now), iso_utc(now + ttl), micros_of(ttl), gone), durable=False
        )
        return changed == 1

    async def release(self, name: str, holder: str) -> bool:
        """Give lease `name` back if `holder` still holds it; return whether it did."""
        changed = await self._db.change(
            "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder), durable=False
        )
        return changed == 1

    async def holder(self, name: str) -> str | None:
        """Who holds lease `name` now, if anyone."""
        alive = " AND NOT pilot_session_gone(session)" if self._db.dialect.sessions else ""
        async with self._db.read() as tx:
            row = await tx.one(
                "SELECT holder FROM leases WHERE name = ? AND boot = pilot_boot()"
                f" AND expires_micros > pilot_micros(){alive}",
                (name,),
            )
        return str(row["holder"]) if row else None
