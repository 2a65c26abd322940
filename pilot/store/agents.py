"""Agents' heartbeats: when an agent's call last reached each process serving a home, and how many MCP
sessions each has open. The dead-man's switch (pilot.app.service.dead_man) reads them across processes: no
call anywhere for so long, or the last session of every process ended.

One row per process (its holder id, "host:pid:token" as the send turn's), written with one statement each
time; none is synced by itself (a heartbeat lost to a power cut was of a process the cut stopped too).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from pilot.store.canonical import iso_utc, parse_iso
from pilot.store.database import Database

FORGET_AFTER = timedelta(days=1)  # a row of a process gone this long no longer says anything


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """One process's row: its last agent call (None: none yet), its open sessions, and when it last wrote."""

    holder: str
    last_call_at: datetime | None
    sessions: int
    seen_at: datetime

    @property
    def gone(self) -> bool:
        """Whether the process is certainly gone: on this machine, with a pid no process has now."""
        return process_gone(self.holder)


class Agents:
    """The agents table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def beat(self, holder: str, *, now: datetime, sessions: int, called: bool = True) -> None:
        """Note an agent call at `now` (or, with `called` False, only the number of open sessions)."""
        at = iso_utc(now)
        await self._db.change(
            "INSERT INTO agents (holder, last_call_at, sessions, seen_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (holder) DO UPDATE SET sessions = excluded.sessions, seen_at = excluded.seen_at,"
            " last_call_at = COALESCE(excluded.last_call_at, agents.last_call_at)",
            (holder, at if called else None, sessions, at),
            durable=False,
        )

    async def all(self) -> list[AgentRecord]:
        async with self._db.read() as tx:
            rows = await tx.all("SELECT holder, last_call_at, sessions, seen_at FROM agents")
        return [
            AgentRecord(
                str(row["holder"]),
                parse_iso(row["last_call_at"]) if row["last_call_at"] else None,
                int(row["sessions"]),
                parse_iso(row["seen_at"]),
            )
            for row in rows
        ]

    async def settled(self, holder: str) -> None:
        """The sessions a gone process left open were dealt with: count them as ended."""
        await self._db.change("UPDATE agents SET sessions = 0 WHERE holder = ?", (holder,), durable=False)

    async def forget(self, *, now: datetime) -> None:
        """Drop the rows of processes gone for over FORGET_AFTER, keeping the newest call of any."""
        async with self._db.read() as tx:
            newest = await tx.one("SELECT MAX(last_call_at) AS last FROM agents")
        await self._db.change(
            "DELETE FROM agents WHERE seen_at < ? AND sessions = 0 AND (last_call_at IS NULL OR last_call_at < ?)",
            (iso_utc(now - FORGET_AFTER), (newest["last"] if newest else None) or ""),
            durable=False,
        )


def process_gone(holder: str) -> bool:
    """Whether the process named by a holder id ("host:pid:token") no longer exists: certain only on this
    machine, with a pid no process has now (a pid reused by another process reads as alive)."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it exists
        return False
    return False
