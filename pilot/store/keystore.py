"""The key table: sealed exchange keys and their last check, in a SQLite file of their own (`HOME/keys.db`),
or in the PostgreSQL store the home shares with other hosts (each of which needs the vault's master key).

Rows are never updated in place except to record a permission check or to retire a key. Retiring
erases the ciphertext (a retired secret has no use, and keeping it would only widen what a stolen
file gives away) and, in SQLite, `secure_delete` overwrites the freed pages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pilot.store import sqlite
from pilot.store.database import Database, Row
from pilot.store.errors import DuplicateRecord
from pilot.store.location import StoreLocation, postgres_engine

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
    main_account: bool | None = None  # the exchange's word at this check; not stored (None once read back)


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

    def __init__(self, db: Database) -> None:
        self._db = db

    async def close(self) -> None:
        await self._db.close()

    async def active(self, environment: str) -> StoredKey | None:
        """Return the environment's active key, or None."""
        query = f"SELECT {_COLUMNS} FROM exchange_keys WHERE environment = ? AND retired_at IS NULL"
        async with self._db.read() as tx:
            row = await tx.one(query, (environment,))
        return _to_stored_key(row) if row else None

    async def all_active(self) -> list[StoredKey]:
        """Return every active key, ordered by environment."""
        query = f"SELECT {_COLUMNS} FROM exchange_keys WHERE retired_at IS NULL ORDER BY environment"
        async with self._db.read() as tx:
            return [_to_stored_key(row) for row in await tx.all(query)]

    async def insert(self, key: StoredKey) -> None:
        """Store a new active key; raise ActiveKeyExists if its environment already has one."""
        try:
            await self._db.change(_INSERT, _values(key))
        except DuplicateRecord:
            raise ActiveKeyExists(key.environment) from None

    async def replace(self, old_key_id: str, new: StoredKey, *, at: datetime) -> None:
        """Retire the old key and store the new one in one transaction."""
        try:
            async with self._db.write() as tx:
                await tx.run(_RETIRE, (at.isoformat(), old_key_id))
                await tx.run(_INSERT, _values(new))
        except DuplicateRecord:
            raise ActiveKeyExists(new.environment) from None

    async def retire(self, key_id: str, *, at: datetime) -> None:
        """Mark a key retired and erase its ciphertext; its id and history stay for the record."""
        await self._db.change(_RETIRE, (at.isoformat(), key_id))

    async def record_check(self, key_id: str, check: PermissionCheck) -> None:
        """Save the result of a permission check on an active key."""
        await self._db.change(
            "UPDATE exchange_keys SET checked_at = ?, read_only = ?, permissions = ?, disallowed = ?, ip_bound = ? "
            "WHERE key_id = ? AND retired_at IS NULL",
            (*_check_columns(check), key_id),
        )

    async def rows(self) -> list[Row]:
        """Every row as stored, retired ones too (to move the table to another store)."""
        async with self._db.read() as tx:
            return await tx.all("SELECT * FROM exchange_keys ORDER BY added_at, key_id")


_INSERT = f"INSERT INTO exchange_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_RETIRE = "UPDATE exchange_keys SET retired_at = ?, sealed = NULL WHERE key_id = ? AND retired_at IS NULL"


def _values(key: StoredKey) -> tuple[Any, ...]:
    return (
        key.key_id,
        key.environment,
        key.base_url,
        key.key_hint,
        key.sealed,
        key.added_at.isoformat(),
        *_check_columns(key.check),
    )


async def open_keystore(where: Path | StoreLocation) -> KeyStore:
    """Open the key table: the SQLite file at `where` (created, readable by its owner only), or the
    PostgreSQL store a StoreLocation names (its schema brought up to date)."""
    location = where if isinstance(where, StoreLocation) else StoreLocation(path=where)
    if location.url is not None:
        postgres = postgres_engine()
        database = postgres.PostgresDatabase(location.url)
        try:
            await postgres.migrate(database)
        except BaseException:
            await database.close()
            raise
        return KeyStore(database)
    assert location.path is not None
    return KeyStore(await sqlite.open_private(location.path, _SCHEMA))


def _check_columns(check: PermissionCheck) -> tuple[str, int, str, str, int]:
    return (
        check.checked_at.isoformat(),
        int(check.read_only),
        json.dumps(list(check.permissions)),
        json.dumps(list(check.disallowed)),
        int(check.ip_bound),
    )


def _to_stored_key(row: Row) -> StoredKey:
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
    ) = (row[name.strip()] for name in _COLUMNS.split(","))
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
