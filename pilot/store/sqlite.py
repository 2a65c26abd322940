"""The embedded engine: one SQLite file per home, one aiosqlite connection per process; pragmas, schema, and
serialised transactions (pilot.store.database is the port it implements)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from pilot.store.database import Database, Dialect, Params, Row, Tx
from pilot.store.errors import SchemaTooNew, translated_errors
from pilot.store.monotonic import HostClock, StoreClock
from pilot.store.schema import MIGRATIONS, SCHEMA_VERSION, TRIGGERS

BUSY_TIMEOUT_SECONDS = 5.0
SQLITE = Dialect("sqlite", sessions=False, lock_row="")

T = TypeVar("T")


def _row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> Row:
    return dict(zip([column[0] for column in cursor.description], values, strict=True))


class SqliteTx:
    """Statements run on the connection while the Database lock is held."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.all(sql, params)
        return rows[0] if rows else None

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        # aiosqlite types every row as sqlite3.Row; the connection's row factory (_row) makes them dicts
        return list(await self._conn.execute_fetchall(sql, params))  # type: ignore[arg-type]

    async def run(self, sql: str, params: Params = ()) -> int:
        """Execute a write and return how many rows it changed."""
        async with self._conn.execute(sql, params) as cursor:
            return cursor.rowcount

    async def stream(self, sql: str, params: Params = ()) -> AsyncGenerator[Row, None]:
        async with self._conn.execute(sql, params) as cursor:
            async for row in cursor:
                yield row  # type: ignore[misc]  # a dict, by the row factory (aiosqlite says sqlite3.Row)


class SqliteDatabase(Database):
    """One connection in autocommit mode; every access holds one asyncio lock.

    The lock keeps tasks of this process from interleaving statements inside each other's
    transactions; `BEGIN IMMEDIATE` plus the busy timeout serialise writers across processes.

    Durability is chosen per write. A durable write (the default) is synced to disk before it returns
    (`synchronous = FULL`): it survives a power cut, and so does every write before it, since the WAL is
    one file written in order. A write made with `durable=False` may be lost to a power cut (never torn:
    the database stays consistent) until the next durable write syncs it; callers use it only where a loss
    is harmless, and say why (a plan that is then not found, a lease its dead holder no longer needs).
    """

    dialect = SQLITE

    def __init__(self, conn: aiosqlite.Connection, clock: StoreClock, where: str) -> None:
        self._conn = conn
        self.clock = clock
        self.where = where
        self._lock = asyncio.Lock()
        self._full: bool | None = None  # the connection's synchronous setting: FULL, NORMAL, not set yet

    async def _durable(self, durable: bool) -> None:
        """Set the connection's synchronous mode for the next commit (lock held; only when it changes)."""
        if self._full is not durable:
            await self._conn.execute_fetchall(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._full = durable

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Tx]:
        """Run reads; a single SELECT sees one consistent snapshot."""
        async with self._lock:
            with translated_errors():
                yield SqliteTx(self._conn)

    @asynccontextmanager
    async def write(self, *, durable: bool = True) -> AsyncIterator[Tx]:
        """Run a read-then-write sequence as one `BEGIN IMMEDIATE` transaction."""
        async with self._lock:
            with translated_errors():
                await self._durable(durable)
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield SqliteTx(self._conn)
                except BaseException:
                    if self._conn.in_transaction:
                        await self._conn.execute("ROLLBACK")
                    raise
                await self._conn.execute("COMMIT")

    async def returning(self, sql: str, params: Params = (), *, durable: bool = True) -> list[Row]:
        """One writing statement, atomic on its own in autocommit mode: a writing statement takes the write
        lock (waiting under the busy timeout) before it reads anything, so it needs no `BEGIN IMMEDIATE`, one
        trip to the connection's thread instead of three (its rows are counted by RETURNING, since a cursor's
        rowcount costs a second trip to close the cursor)."""
        async with self._lock:
            with translated_errors():
                await self._durable(durable)
                return await SqliteTx(self._conn).all(sql, params)

    async def close(self) -> None:
        async with self._lock:
            await self._conn.close()


async def connect(
    path: Path, prepare: Callable[[Tx, int], Awaitable[T]], clock: StoreClock
) -> tuple[SqliteDatabase, T]:
    """Open (creating if needed) the database at `path`, set pragmas and bring the schema up to date.

    `prepare(tx, from_version)` runs in the same transaction as the migrations, so no other connection
    ever sees a schema change without what `prepare` records with it; its result is returned. `clock` is the
    store's clock that `pilot_boot()` and `pilot_micros()` read in statements.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with translated_errors():
        conn = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    database = SqliteDatabase(conn, clock, str(path))
    try:
        with translated_errors():
            await _configure(conn, clock)
        async with database.write() as tx:
            prepared = await prepare(tx, await _migrate(tx))
    except BaseException:
        await database.close()
        raise
    return database, prepared


async def _configure(conn: aiosqlite.Connection, clock: StoreClock) -> None:
    conn.row_factory = _row  # type: ignore[assignment]  # aiosqlite types the factory as making sqlite3.Row
    # The store's clock in statements: read in the connection's thread as each statement runs.
    await conn.create_function("pilot_boot", 0, lambda: clock.read().boot)
    await conn.create_function("pilot_micros", 0, lambda: clock.read().micros)
    await conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
    await _use_wal(conn)
    await conn.execute("PRAGMA synchronous = FULL")  # until a write says otherwise (Database._durable)
    await conn.execute("PRAGMA foreign_keys = ON")


async def _use_wal(conn: aiosqlite.Connection) -> None:
    """Put the database in WAL mode, waiting while another process is creating it.

    Switching a new database to WAL needs it to itself, and SQLite answers "database is locked" at once,
    without its busy timeout, while another connection is opening the same new file (two servers starting on
    one new home). Once one has switched, the mode is the database's and the rest find it set.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or loop.time() >= give_up:
                raise
        await asyncio.sleep(0.01)


async def _migrate(tx: Tx) -> int:
    """Apply the missing migrations and return the version the database had before (0 when new)."""
    await tx.run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = await tx.one("SELECT COALESCE(MAX(version), 0) AS version FROM schema_version")
    current = row["version"] if row else 0
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(f"database schema v{current} is newer than this Pilot (v{SCHEMA_VERSION})")
    for version in range(current + 1, SCHEMA_VERSION + 1):
        for statement in _statements(MIGRATIONS[version - 1]):
            await tx.run(statement)
        await tx.run("INSERT INTO schema_version (version) VALUES (?)", (version,))
    return current


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (triggers contain `;`, so use sqlite's own test)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not pending:
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return statements


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


async def restore_guards(tx: Tx) -> dict[str, str]:
    """Recreate every guard that is missing or differs from `TRIGGERS`; return {name: "missing" | "altered"}."""
    rows = await tx.all("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
    present = {row["name"]: row["sql"] for row in rows}
    found: dict[str, str] = {}
    for name, sql in TRIGGERS.items():
        if _normal(present.get(name)) == _normal(sql):
            continue
        found[name] = "altered" if name in present else "missing"
        await tx.run(f'DROP TRIGGER IF EXISTS "{name}"')
        await tx.run(sql)
    return found


async def open_private(path: Path, schema: str) -> SqliteDatabase:
    """Open (creating if needed, readable by its owner only) a small database of secrets at `path` with
    `schema` (idempotent statements), freed pages overwritten (`secure_delete`). It keeps the default rollback
    journal: it is written rarely, by one command at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    with translated_errors():
        conn = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    try:
        with translated_errors():
            conn.row_factory = _row  # type: ignore[assignment]  # rows as dicts (see _configure)
            await conn.execute("PRAGMA secure_delete = ON")
            await conn.executescript(schema)
    except BaseException:
        await conn.close()
        raise
    return SqliteDatabase(conn, HostClock(), str(path))
