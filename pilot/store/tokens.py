"""Bearer tokens for the HTTP transport; only their SHA-256 is stored."""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime

from pilot.store.canonical import iso_utc, parse_iso, sha256_hex
from pilot.store.database import Database


class Tokens:
    """Named bearer tokens. A token is shown once, at issue; the database cannot reproduce it."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def issue(self, name: str, *, now: datetime) -> str:
        """Create a token for `name` and return it; this is the only time it is visible.

        Raises:
            DuplicateRecord: `name` already has a token (revoke it first).
        """
        token = "pilot_" + secrets.token_urlsafe(32)
        await self._db.change(
            "INSERT INTO tokens (name, token_hash, created_at) VALUES (?, ?, ?)",
            (name, sha256_hex(token), iso_utc(now)),
        )
        return token

    async def verify(self, token: str) -> str | None:
        """Return the name the token was issued to, or None for an unknown or revoked token."""
        digest = sha256_hex(token)
        async with self._db.read() as tx:
            row = await tx.one("SELECT name, token_hash FROM tokens WHERE token_hash = ?", (digest,))
        if row is None or not hmac.compare_digest(row["token_hash"], digest):
            return None
        return str(row["name"])

    async def revoke(self, name: str) -> bool:
        """Delete the token of `name`; return whether there was one."""
        changed = await self._db.change("DELETE FROM tokens WHERE name = ?", (name,))
        return changed == 1

    async def list(self) -> list[tuple[str, datetime]]:
        """Return (name, created_at) of every token, by name."""
        async with self._db.read() as tx:
            rows = await tx.all("SELECT name, created_at FROM tokens ORDER BY name")
        return [(row["name"], parse_iso(row["created_at"])) for row in rows]
