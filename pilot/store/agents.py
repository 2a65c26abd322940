"""Agents' heartbeats: when an agent's call last reached each process serving a home, and how many MCP
sessions each has open. The dead-man's switch (pilot.app.service.dead_man) reads them across processes: no
call anywhere for so long, or the last session of every process ended.

One row per process (its holder id, "host:pid:token" as the send turn's), written with one statement each
time; none is synced by itself (a heartbeat lost to a power cut was of a process the cut stopped too). A
call is stamped on the store's clock (pilot.store.monotonic), so how long ago it was is real time whatever
the wall clocks did; the wall time beside it is for people reading the table.

Whether a process is gone is the store's judgement, as for a lease's holder (pilot.store.leases): on SQLite,
whose processes share one machine, a process of an earlier boot or a pid no process has now; on PostgreSQL,
whose processes may run on other hosts, one whose database session ended (`pilot_session_gone`, recorded
beside the holder at every beat), judged in the statement that reads the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pilot.store.canonical import iso_utc, parse_iso
from pilot.store.database import Database, Row
from pilot.store.monotonic import HostClock, Instant, StoreClock, age, process_gone

FORGET_AFTER = timedelta(days=1)  # a row of a process gone this long no longer says anything

# A beat keeps the boot beside the call it stamps (a beat without a call keeps both as they were), so the
# last call's reading stays whole even when the store's clock began a new boot since (a PostgreSQL server's
# restart). A server-based store records the beating process's session too.
_BEAT = (
    "INSERT INTO agents (holder, last_call_at, boot, call_micros, sessions, seen_at{column})"
    " VALUES (?, ?, ?, ?, ?, ?{value})"
    " ON CONFLICT (holder) DO UPDATE SET sessions = excluded.sessions, seen_at = excluded.seen_at,"
    " boot = CASE WHEN excluded.call_micros IS NULL AND agents.call_micros IS NOT NULL"
    " THEN agents.boot ELSE excluded.boot END,"
    " last_call_at = COALESCE(excluded.last_call_at, agents.last_call_at),"
    " call_micros = COALESCE(excluded.call_micros, agents.call_micros){update}"
)
_BEAT_HERE = _BEAT.format(column="", value="", update="")
_BEAT_IN_SESSION = _BEAT.format(
    column=", session", value=", pilot_session()", update=", session = excluded.session"
)
_READ = "SELECT holder, last_call_at, boot, call_micros, sessions FROM agents"
_READ_IN_SESSION = (
    "SELECT holder, last_call_at, boot, call_micros, sessions, pilot_session_gone(session) AS gone"
    " FROM agents"
)


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """One process's row: its agent's last call (None: none yet) on the store's clock and by the wall
    clock, its open sessions, the boot it ran in, and whether the process is certainly gone (as the store
    judged it when the row was read)."""

    holder: str
    last_call: Instant | None
    last_call_at: datetime | None
    sessions: int
    boot: str | None
    gone: bool


class Agents:
    """The agents table."""

    def __init__(self, db: Database, clock: StoreClock | None = None) -> None:
        self._db = db
        self._clock: StoreClock = clock or HostClock()
        sessions = db.dialect.sessions
        self._beat = _BEAT_IN_SESSION if sessions else _BEAT_HERE
        # Changes that only a gone process's row may take: on a server, one whose session is still gone
        # as the statement runs (a process that came back beat again since, and keeps its row).
        self._if_gone = " AND pilot_session_gone(session)" if sessions else ""

    def now(self) -> Instant:
        """The store's time now (what a heartbeat's age is measured against)."""
        return self._clock.read()

    async def beat(self, holder: str, *, now: datetime, sessions: int, called: bool = True) -> None:
        """Note an agent call now (or, with `called` False, only the number of open sessions); `now` is the
        wall time, kept for people."""
        here = self._clock.read()
        micros = here.micros if called else None
        await self._db.change(
            self._beat,
            (holder, iso_utc(now) if called else None, here.boot, micros, sessions, iso_utc(now)),
            durable=False,
        )

    async def all(self) -> list[AgentRecord]:
        """Every process's row, each judged gone or not as it is read."""
        sessions = self._db.dialect.sessions
        async with self._db.read() as tx:
            rows = await tx.all(_READ_IN_SESSION if sessions else _READ)
        here = self._clock.read()
        return [_record(row, bool(row["gone"]) if sessions else _process_gone(row, here)) for row in rows]

    async def settled(self, holder: str) -> None:
        """The sessions a gone process left open were dealt with: count them as ended."""
        await self._db.change(
            f"UPDATE agents SET sessions = 0 WHERE holder = ?{self._if_gone}", (holder,), durable=False
        )

    async def forget(self) -> None:
        """Drop the rows of gone processes whose last call is older than FORGET_AFTER and not the newest."""
        here = self._clock.read()
        rows = await self.all()
        newest = min(
            (r for r in rows if r.last_call is not None), key=lambda r: _since(here, r), default=None
        )
        for row in rows:
            since = _since(here, row)
            if row is not newest and row.gone and since >= FORGET_AFTER and not row.sessions:
                await self._db.change(
                    f"DELETE FROM agents WHERE holder = ?{self._if_gone}", (row.holder,), durable=False
                )


def _record(row: Row, gone: bool) -> AgentRecord:
    boot, micros = row["boot"], row["call_micros"]
    return AgentRecord(
        str(row["holder"]),
        Instant(str(boot), int(micros)) if boot is not None and micros is not None else None,
        parse_iso(row["last_call_at"]) if row["last_call_at"] else None,
        int(row["sessions"]),
        str(boot) if boot is not None else None,
        gone,
    )


def _process_gone(row: Row, here: Instant) -> bool:
    """SQLite's judgement: the process ran in an earlier boot, or on this machine with a pid gone now."""
    return process_gone(str(row["holder"]), row["boot"], here)


def _since(here: Instant, row: AgentRecord) -> timedelta:
    """How long ago the row's last call was (a row without one: as long ago as can be)."""
    since = age(here, row.last_call)
    return timedelta.max if since is None else since
