"""The key table: one SQLite file (`HOME/keys.db`) holding sealed exchange keys and their last check.

Rows are never updated in place except to record a permission check or to retire a key. Retiring
erases the ciphertext (a retired secret has no use, and keeping it would only widen what a stolen
file gives away) and `secure_delete` overwrites the freed pages.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiosqlite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchange_keys (
    key_id        TEXT PRIMARY KEY,
    environment   TEXT NOT NULL,
    base_url      TEXT,
    key_hint      TEXT NOT NULL,
    sealed        BLOB,
    added_at      TEXT NOT NULL,
    checked_at    TEXT NOT NULL,
    read_only     INTEGER NOT NULL,
    permissions   TEXT NOT NULL,
    disallowed    TEXT NOT NULL,
    ip_bound      INTEGER NOT NULL,
    retired_at    TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS one_active_key_per_environment
    ON exchange_keys (environment) WHERE retired_at IS NULL;
"""

_COLUMNS = (
    "key_id, environment, base_url, key_hint, sealed, added_at, "
    "checked_at, read_only, permissions, disallowed, ip_bound"
)


class ActiveKeyExists(Exception):
    """An environment already has an active key; retire it first."""


@dataclass(frozen=True, slots=True)
class PermissionCheck:
    """What the last look at the key's permissions found, and when."""

    checked_at: datetime
    read_only: bool
    permissions: tuple[str, ...]
    disallowed: tuple[str, ...]
    ip_bound: bool


@dataclass(frozen=True, slots=True)
class StoredKey:
    key_id: str
    environment: str
    base_url: str | None
    key_hint: str  # the last four characters of the API key, never more
    sealed: bytes  # empty once the key is retired
    added_at: datetime
    check: PermissionCheck

    def __repr__(self) -> str:
        return f"StoredKey(key_id={self.key_id!r}, environment={self.environment!r}, sealed=<{len(self.sealed)} bytes>)"


class KeyStore:
    """Async access to the key table. Create with `open_keystore`; close when done."""

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._db = connection

    async def close(self) -> None:
        await self._db.close()

    async def active(self, environment: str) -> StoredKey | None:
        """Return the environment's active key, or None."""
        query = f"SELECT {_COLUMNS} FROM exchange_keys WHERE environment = ? AND retired_at IS NULL"
        async with self._db.execute(query, (environment,)) as cursor:
            row = await cursor.fetchone()
        return _to_stored_key(row) if row else None

    async def all_active(self) -> list[StoredKey]:
        """Return every active key, ordered by environment."""
        query = f"SELECT {_COLUMNS} FROM exchange_keys WHERE retired_at IS NULL ORDER BY environment"
        async with self._db.execute(query) as cursor:
            return [_to_stored_key(row) for row in await cursor.fetchall()]

    async def insert(self, key: StoredKey) -> None:
        """Store a new active key; raise ActiveKeyExists if its environment already has one."""
        try:
            await self._insert(key)
            await self._db.commit()
        except aiosqlite.IntegrityError:
            await self._db.rollback()
            raise ActiveKeyExists(key.environment) from None

    async def replace(self, old_key_id: str, new: StoredKey, *, at: datetime) -> None:
        """Retire the old key and store the new one in one transaction."""
        try:
            await self._retire(old_key_id, at)
            await self._insert(new)
            await self._db.commit()
        except aiosqlite.IntegrityError:
            await self._db.rollback()
            raise ActiveKeyExists(new.environment) from None

    async def retire(self, key_id: str, *, at: datetime) -> None:
        """Mark a key retired and erase its ciphertext; its id and history stay for the record."""
        await self._retire(key_id, at)
        await self._db.commit()

    async def record_check(self, key_id: str, check: PermissionCheck) -> None:
        """Save the result of a permission check on an active key."""
        await self._db.execute(
            "UPDATE exchange_keys SET checked_at = ?, read_only = ?, permissions = ?, disallowed = ?, ip_bound = ? "
            "WHERE key_id = ? AND retired_at IS NULL",
            (*_check_columns(check), key_id),
        )
        await self._db.commit()

    async def _insert(self, key: StoredKey) -> None:
        await self._db.execute(
            f"INSERT INTO exchange_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key.key_id,
                key.environment,
                key.base_url,
                key.key_hint,
                key.sealed,
                key.added_at.isoformat(),
                *_check_columns(key.check),
            ),
        )

    async def _retire(self, key_id: str, at: datetime) -> None:
        await self._db.execute(
            "UPDATE exchange_keys SET retired_at = ?, sealed = NULL WHERE key_id = ? AND retired_at IS NULL",
            (at.isoformat(), key_id),
        )


async def open_keystore(path: Path) -> KeyStore:
    """Open (creating if needed) the key database at `path`, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    connection = await aiosqlite.connect(path)
    try:
        await connection.execute("PRAGMA secure_delete = ON")
        await connection.executescript(_SCHEMA)
        await connection.commit()
    except BaseException:
        await connection.close()
        raise
    return KeyStore(connection)


def _check_columns(check: PermissionCheck) -> tuple[str, int, str, str, int]:
    return (
        check.checked_at.isoformat(),
        int(check.read_only),
        json.dumps(list(check.permissions)),
        json.dumps(list(check.disallowed)),
        int(check.ip_bound),
    )


def _to_stored_key(row: aiosqlite.Row | tuple) -> StoredKey:
    (
        key_id,
        environment,
        base_url,
        hint,
        sealed,
        added_at,
        checked_at,
        read_only,
        permissions,
        disallowed,
        ip,
    ) = row
    return StoredKey(
        key_id=key_id,
        environment=environment,
        base_url=base_url,
        key_hint=hint,
        sealed=bytes(sealed or b""),
        added_at=datetime.fromisoformat(added_at),
        check=PermissionCheck(
            checked_at=datetime.fromisoformat(checked_at),
            read_only=bool(read_only),
            permissions=tuple(json.loads(permissions)),
            disallowed=tuple(json.loads(disallowed)),
            ip_bound=bool(ip),
        ),
    )
