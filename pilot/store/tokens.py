"""Bearer tokens for the HTTP transport, and agents' credentials; only their SHA-256 is stored.

A token with a role is an agent's credential (`pilot agent add NAME --role read|reduce|trade`): the name
it was issued to is the agent's, over HTTP as its bearer token and over stdio as the credential the
client's configuration carries (PILOT_AGENT_TOKEN or PILOT_AGENT_TOKEN_FILE). A token without one
(`pilot token issue`) lets a client in without naming an agent, as before agents existed.
"""

from __future__ import annotations

import builtins
import hmac
import secrets
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from pilot.store.canonical import iso_utc, parse_iso, sha256_hex
from pilot.store.database import Database


@dataclass(frozen=True, slots=True)
class Holder:
    """Whom a token was issued to: its name, and its role when it is an agent's credential (None: not)."""

    name: str
    role: str | None = None


# The agent whose call is being served (set by the server for each call; None: no named agent). The journal
# names it on every entry the call appends as the agent's (`actor` "agent:NAME"), so whatever reads the
# journal (receipts, the console, the ledger's per-agent counts) knows who acted.
ACTING: ContextVar[Holder | None] = ContextVar("pilot_acting_agent", default=None)


def acting_actor(actor: str) -> str:
    """`actor` as the journal records it: "agent" becomes "agent:NAME" while a named agent acts."""
    holder = ACTING.get()
    if actor != "agent" or holder is None or holder.role is None:
        return actor
    return f"agent:{holder.name}"


def agent_of(actor: str) -> str | None:
    """The agent's name a journal entry's actor names (None: not a named agent's)."""
    return actor.removeprefix("agent:") if actor.startswith("agent:") else None


class Tokens:
    """Named bearer tokens. A token is shown once, at issue; the database cannot reproduce it."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def issue(self, name: str, *, now: datetime, role: str | None = None) -> str:
        """Create a token for `name` (an agent's credential with `role`) and return it; this is the only
        time it is visible.

        Raises:
            DuplicateRecord: `name` already has a token (revoke it first).
        """
        token = "pilot_" + secrets.token_urlsafe(32)
        await self._db.change(
            "INSERT INTO tokens (name, token_hash, created_at, role) VALUES (?, ?, ?, ?)",
            (name, sha256_hex(token), iso_utc(now), role),
        )
        return token

    async def verify(self, token: str) -> str | None:
        """Return the name the token was issued to, or None for an unknown or revoked token."""
        holder = await self.identify(token)
        return holder.name if holder is not None else None

    async def identify(self, token: str) -> Holder | None:
        """Whom the token was issued to (its name and role), or None for an unknown or revoked token."""
        digest = sha256_hex(token)
        async with self._db.read() as tx:
            row = await tx.one("SELECT name, token_hash, role FROM tokens WHERE token_hash = ?", (digest,))
        if row is None or not hmac.compare_digest(row["token_hash"], digest):
            return None
        return Holder(str(row["name"]), str(row["role"]) if row["role"] is not None else None)

    async def revoke(self, name: str) -> bool:
        """Delete the token of `name`; return whether there was one."""
        changed = await self._db.change("DELETE FROM tokens WHERE name = ?", (name,))
        return changed == 1

    async def list(self) -> list[tuple[str, datetime]]:
        """Return (name, created_at) of every token, by name."""
        async with self._db.read() as tx:
            rows = await tx.all("SELECT name, created_at FROM tokens ORDER BY name")
        return [(row["name"], parse_iso(row["created_at"])) for row in rows]

    async def agents(self) -> builtins.list[tuple[Holder, datetime]]:
        """Every agent's credential (a token with a role) and when it was issued, by name."""
        async with self._db.read() as tx:
            rows = await tx.all(
                "SELECT name, role, created_at FROM tokens WHERE role IS NOT NULL ORDER BY name"
            )
        return [(Holder(row["name"], row["role"]), parse_iso(row["created_at"])) for row in rows]
