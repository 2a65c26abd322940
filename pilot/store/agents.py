"""Agents' heartbeats: when an agent's call last reached each process serving a home, and how many MCP
sessions each has open. The dead-man's switch (pilot.app.service.dead_man) reads them across processes: no
call anywhere for so long, or the last session of every process ended.

One row per process (its holder id, "host:pid:token" as the send turn's), written with one statement each
time; none is synced by itself (a heartbeat lost to a power cut was of a process the cut stopped too). A
call is stamped on the store's clock (pilot.store.monotonic), so how long ago it was is real time whatever
the wall clocks did; the wall time beside it is for people reading the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pilot.store.canonical import iso_utc, parse_iso
from pilot.store.database import Database
from pilot.store.monotonic import HostClock, Instant, StoreClock, age, process_gone

FORGET_AFTER = timedelta(days=1)  # a row of a process gone this long no longer says anything


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """One process's row: its agent's last call (None: none yet) on the store's clock and by the wall
    clock, its open sessions, and the boot it ran in."""

    holder: str
    last_call: Instant | None
    last_call_at: datetime | None
    sessions: int
    boot: str | None

    def gone(self, here: Instant) -> bool:
        """Whether the process is certainly gone: an earlier boot's, or this machine's with a pid no
        process has now."""
        return process_gone(self.holder, self.boot, here)


class Agents:
    """The agents table."""

    def __init__(self, db: Database, clock: StoreClock | None = None) -> None:
        self._db = db
        self._clock: StoreClock = clock or HostClock()

    def now(self) -> Instant:
        """The store's time now (what a heartbeat's age is measured against)."""
        return self._clock.read()

    async def beat(self, holder: str, *, now: datetime, sessions: int, called: bool = True) -> None:
        """Note an agent call now (or, with `called` False, only the number of open sessions); `now` is the
        wall time, kept for people."""
        here = self._clock.read()
        micros = here.micros if called else None
        await self._db.change(
            "INSERT INTO agents (holder, last_call_at, boot, call_micros, sessions, seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (holder) DO UPDATE SET sessions = excluded.sessions, seen_at = excluded.seen_at,"
            " boot = excluded.boot,"
            " last_call_at = COALESCE(excluded.last_call_at, agents.last_call_at),"
            " call_micros = COALESCE(excluded.call_micros, agents.call_micros)",
            (holder, iso_utc(now) if called else None, here.boot, micros, sessions, iso_utc(now)),
            durable=False,
        )

    async def all(self) -> list[AgentRecord]:
        async with self._db.read() as tx:
            rows = await tx.all("SELECT holder, last_call_at, boot, call_micros, sessions FROM agents")
        return [
            AgentRecord(
                str(row["holder"]),
                Instant(str(row["boot"]), int(row["call_micros"]))
                if row["boot"] is not None and row["call_micros"] is not None
                else None,
                parse_iso(row["last_call_at"]) if row["last_call_at"] else None,
                int(row["sessions"]),
                str(row["boot"]) if row["boot"] is not None else None,
            )
            for row in rows
        ]

    async def settled(self, holder: str) -> None:
        """The sessions a gone process left open were dealt with: count them as ended."""
        await self._db.change("UPDATE agents SET sessions = 0 WHERE holder = ?", (holder,), durable=False)

    async def forget(self) -> None:
        """Drop the rows of gone processes whose last call is older than FORGET_AFTER and not the newest."""
        here = self._clock.read()
        rows = await self.all()
        newest = min(
            (r for r in rows if r.last_call is not None), key=lambda r: _since(here, r), default=None
        )
        for row in rows:
            since = _since(here, row)
            if row is not newest and row.gone(here) and since >= FORGET_AFTER and not row.sessions:
                await self._db.change("DELETE FROM agents WHERE holder = ?", (row.holder,), durable=False)


def _since(here: Instant, row: AgentRecord) -> timedelta:
    """How long ago the row's last call was (a row without one: as long ago as can be)."""
    since = age(here, row.last_call)
    return timedelta.max if since is None else since
