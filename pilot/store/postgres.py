"""The server engine: one PostgreSQL database for several hosts, over psycopg 3 (its only importer).

It implements the port of pilot.store.database the way a database shared by hosts must:

- **The store's clock is the server's.** `pilot_boot()` and `pilot_micros()` read the server's clock inside
  the statement that decides (a claim, a lease, an approval), so no host's clock decides anything. What a
  statement cannot stamp itself (a journal entry's reading, covered by its seal; a plan's end, covered by its
  seal) is stamped with `ServerClock`, this process's reading of the server's clock: the server's reading at
  the last exchange with it (at most a second ago) carried on by this host's monotonic clock.
- **A holder is alive while its session is.** Each connection takes a session-bound advisory lock on a key of
  its own (its session, `pilot.session`); the lock ends with the connection, on whatever host, so a lease or a
  claim whose session is gone is free at once (`pilot_session_gone`), and a holder that lost its connection
  holds nothing on the new one.
- **Serialisation is the database's.** A writer that loses the race for a journal seq gets a unique-key
  conflict and reads the head again; a read that a decision rests on locks the row it reads (`lock_row`).

A connection lost (the server restarted, the network cut) fails the statement in flight (StoreError: nothing
was sent) and is made again at the next use. The URL is never shown with its password (`redacted`).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import lru_cache
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row

from pilot.store.database import Database, Dialect, Params, Row, Tx
from pilot.store.errors import DuplicateRecord, SchemaTooNew, StoreBusy, StoreError, StoreFull
from pilot.store.location import redacted
from pilot.store.monotonic import Instant, StoreClock
from pilot.store.postgres_schema import (
    FUNCTIONS,
    GRANTS,
    GUARDED_TABLES,
    GUARDS,
    MIGRATIONS,
    SCHEMA_VERSION,
    SERVER_BOOT,
    SERVER_MICROS,
)

POSTGRES = Dialect("postgresql", sessions=True, lock_row=" FOR SHARE")
LOCK_TIMEOUT = "5s"  # as SQLite's busy timeout: a statement that waits longer on a lock is StoreBusy
CONNECT_TIMEOUT_SECONDS = 10
RESYNC_SECONDS = 1.0
MIGRATION_LOCK = 0x50494C4F54  # "PILOT": opens take turns to bring the schema up to date
T = TypeVar("T")


class ServerClock:
    """This process's reading of the server's clock (see the module docstring): never backwards."""

    def __init__(self) -> None:
        self._base: Instant | None = None
        self._at_ns = 0
        self._last: Instant | None = None

    def read(self) -> Instant:
        if self._base is None:
            raise StoreError("the database server's clock has not been read yet")
        now = Instant(self._base.boot, self._base.micros + (time.monotonic_ns() - self._at_ns) // 1000)
        last = self._last
        if last is not None and last.boot == now.boot and last.micros > now.micros:
            return last
        self._last = now
        return now

    def due(self) -> bool:
        return self._base is None or time.monotonic_ns() - self._at_ns > RESYNC_SECONDS * 1e9

    def set(self, boot: str, micros: int, sent_ns: int, received_ns: int) -> None:
        """The server read `micros` between `sent_ns` and `received_ns` of this host's monotonic clock."""
        self._base = Instant(boot, micros + (received_ns - sent_ns) // 2000)
        self._at_ns = received_ns


@lru_cache(maxsize=512)
def _bind(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (a literal `%` doubled): Pilot's statements hold no `?` in text."""
    return sql.replace("%", "%%").replace("?", "%s")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class PostgresTx:
    """Statements on the connection while the Database is held."""

    def __init__(self, conn: psycopg.AsyncConnection[Row], sql: Callable[[str], str]) -> None:
        self._conn = conn
        self._sql = sql

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))
        return await cursor.fetchone() if cursor.description else None

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))
        return await cursor.fetchall() if cursor.description else []

    async def run(self, sql: str, params: Params = ()) -> int:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))
        return cursor.rowcount

    async def stream(self, sql: str, params: Params = ()) -> AsyncGenerator[Row, None]:
        async with self._conn.cursor() as cursor:
            async for row in cursor.stream(self._sql(sql), tuple(params)):
                yield row


class PostgresDatabase(Database):
    """One connection per process, in autocommit mode; every access holds one asyncio lock.

    `clock`: None for the server's clock (always, outside tests); a clock a test hands the store stands in
    for it in every statement too, so a test can move time without sleeping.
    """

    dialect = POSTGRES

    def __init__(self, url: str, clock: StoreClock | None = None) -> None:
        self._url = url
        self.where = redacted(url)
        self._server = clock is None
        self._server_clock = ServerClock()
        self.clock: StoreClock = self._server_clock if clock is None else clock
        self._conn: psycopg.AsyncConnection[Row] | None = None
        self._lock = asyncio.Lock()
        self._full: bool | None = None  # synchronous_commit on, off, not set yet
        self.session = ""

    def _sql(self, sql: str) -> str:
        if not self._server:  # a test's clock: its reading stands where the server's would be read
            here = self.clock.read()
            sql = sql.replace("pilot_boot()", _literal(here.boot)).replace("pilot_micros()", str(here.micros))
        return _bind(sql)

    async def _connection(self) -> psycopg.AsyncConnection[Row]:
        """The connection, made (again) if there is none or it broke, with its own session lock."""
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._conn = None
        conn = await psycopg.AsyncConnection.connect(
            self._url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
        try:
            first, second = secrets.randbelow(2**31), secrets.randbelow(2**31)
            session = f"{first}:{second}"
            await conn.execute("SELECT pg_advisory_lock(%s::int4, %s::int4)", (first, second))
            await conn.execute(
                "SELECT set_config('pilot.session', %s, false), set_config('lock_timeout', %s, false)",
                (session, LOCK_TIMEOUT),
            )
        except BaseException:
            await conn.close()
            raise
        self._conn, self._full, self.session = conn, None, session
        return conn

    async def _ready(self) -> psycopg.AsyncConnection[Row]:
        conn = await self._connection()
        if self._server and self._server_clock.due():
            await self._sync_clock(conn)
        return conn

    async def _sync_clock(self, conn: psycopg.AsyncConnection[Row]) -> None:
        sent = time.monotonic_ns()
        cursor = await conn.execute(f"SELECT {SERVER_BOOT} AS boot, {SERVER_MICROS} AS micros")
        row = await cursor.fetchone()
        received = time.monotonic_ns()
        if row is not None and row["boot"] is not None:
            self._server_clock.set(str(row["boot"]), int(row["micros"]), sent, received)

    async def _durable(self, conn: psycopg.AsyncConnection[Row], durable: bool) -> None:
        """Set the session's synchronous_commit for the next commits (lock held; only when it changes)."""
        if self._full is not durable:
            await conn.execute(f"SET synchronous_commit = {'on' if durable else 'off'}")
            self._full = durable

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Tx]:
        async with self._lock:
            with self._translated():
                yield PostgresTx(await self._ready(), self._sql)

    @asynccontextmanager
    async def write(self, *, durable: bool = True) -> AsyncIterator[Tx]:
        async with self._lock:
            with self._translated():
                conn = await self._ready()
                await self._durable(conn, durable)
                async with conn.transaction():
                    yield PostgresTx(conn, self._sql)

    @asynccontextmanager
    async def schema(self) -> AsyncIterator[Tx]:
        """A transaction whose statements are taken as written (the schema's own, which define the clock's
        functions rather than call them)."""
        async with self._lock:
            with self._translated():
                conn = await self._ready()
                await self._durable(conn, True)
                async with conn.transaction():
                    yield PostgresTx(conn, _bind)

    async def returning(self, sql: str, params: Params = (), *, durable: bool = True) -> list[Row]:
        async with self._lock:
            with self._translated():
                conn = await self._ready()
                await self._durable(conn, durable)
                return await PostgresTx(conn, self._sql).all(sql, params)

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                if not conn.broken:
                    # The session ends now for every host, not when the server gets round to the closed socket.
                    await conn.execute("SELECT pg_advisory_unlock_all()")
            except psycopg.Error:
                pass  # closing anyway: the server ends the session with the connection
            finally:
                await conn.close()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as error:
            raise _translated(error, self.where) from error
        except OSError as error:  # a connection refused before the driver wraps it
            raise StoreError(
                f"the database at {self.where} cannot be reached ({type(error).__name__})"
            ) from error


def _translated(error: psycopg.Error, where: str) -> StoreError:
    """psycopg's errors as the store's own (pilot.store.errors); the database's message says which rule."""
    message = (error.diag.message_primary if error.diag else None) or type(error).__name__
    if isinstance(error, pg_errors.UniqueViolation):
        return DuplicateRecord(f"a record with this id already exists ({message})")
    if isinstance(
        error,
        pg_errors.LockNotAvailable
        | pg_errors.QueryCanceled
        | pg_errors.DeadlockDetected
        | pg_errors.SerializationFailure,
    ):
        return StoreBusy(f"the database at {where} was held by another host for too long ({message})")
    if isinstance(error, pg_errors.DiskFull | pg_errors.OutOfMemory):
        return StoreFull(f"the database server at {where} is out of space ({message})")
    if isinstance(error, pg_errors.IntegrityConstraintViolation):
        return StoreError(f"integrity check failed: {message}")
    if isinstance(error, pg_errors.InsufficientPrivilege):
        return StoreError(f"the database at {where} refused this role: {message}")
    if isinstance(error, psycopg.OperationalError):
        return StoreError(f"the database at {where} cannot be reached or closed the connection ({message})")
    return StoreError(f"database operation failed: {message}")


async def migrate(
    database: PostgresDatabase, prepare: Callable[[Tx, int], Awaitable[T]] | None = None
) -> T | None:
    """Bring the database's schema up to date (opens take turns, on any host), then run `prepare(tx,
    from_version)` (still in turn); its result is returned."""
    async with database.schema() as tx:
        await tx.one("SELECT pg_advisory_xact_lock(?::int8)", (MIGRATION_LOCK,))
        from_version = await _migrate(tx)
    if prepare is None:
        return None
    async with database.write() as tx:
        await tx.one("SELECT pg_advisory_xact_lock(?::int8)", (MIGRATION_LOCK,))
        return await prepare(tx, from_version)


async def _migrate(tx: Tx) -> int:
    """Apply the missing migrations and return the version the database had before (0 when new). A role
    that may only use the tables opens a database that is up to date without creating anything."""
    found = await tx.one("SELECT to_regclass('schema_version') IS NOT NULL AS present")
    if not (found and found["present"]):
        await tx.run("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    row = await tx.one("SELECT COALESCE(MAX(version), 0) AS version FROM schema_version")
    current = int(row["version"]) if row else 0
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(f"database schema v{current} is newer than this Pilot (v{SCHEMA_VERSION})")
    for version in range(current + 1, SCHEMA_VERSION + 1):
        await tx.run(MIGRATIONS[version - 1])
        await tx.run("INSERT INTO schema_version (version) VALUES (?)", (version,))
    return current


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


_QUALIFIED = re.compile(r" ON [A-Za-z_][A-Za-z0-9_$]*\.")


async def restore_guards(tx: Tx) -> dict[str, str]:
    """Check every guard (trigger: present, enabled, as written) and its function; recreate what differs.
    Returns {name: "missing" | "altered"}. Recreating needs the tables' owner: a host's role that finds a
    guard gone cannot open the store (StoreError, the fix: open it once as the owner)."""
    rows = await tx.all(
        "SELECT t.tgname AS name, t.tgenabled AS enabled, pg_get_triggerdef(t.oid) AS sql FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND pg_table_is_visible(c.oid)"
        f" AND c.relname IN ({', '.join('?' * len(GUARDED_TABLES))})",
        GUARDED_TABLES,
    )
    present = {row["name"]: (row["enabled"], _QUALIFIED.sub(" ON ", row["sql"])) for row in rows}
    functions = await tx.all(
        "SELECT proname AS name, prosrc AS body FROM pg_proc WHERE pg_function_is_visible(oid)"
        f" AND proname IN ({', '.join('?' * len(FUNCTIONS))})",
        tuple(FUNCTIONS),
    )
    bodies = {row["name"]: _normal(row["body"]) for row in functions}
    found: dict[str, str] = {}
    for name, sql in FUNCTIONS.items():
        if bodies.get(name) != _body(sql):
            found[name] = "altered" if name in bodies else "missing"
    for name, sql in GUARDS.items():
        state = present.get(name)
        if state is not None and state[0] == "O" and _normal(state[1]) == _normal(sql):
            continue
        found[name] = "altered" if state is not None else "missing"
    if found:
        await _restore(tx, found)
    return found


def _body(sql: str) -> str:
    """A function's body as written between its $$ quotes, spacing aside."""
    return _normal(sql.split("$$")[1])


async def _restore(tx: Tx, found: dict[str, str]) -> None:
    for name, sql in FUNCTIONS.items():
        if name in found:
            await tx.run(sql)
    for name, sql in GUARDS.items():
        if name in found:
            table = sql.split(" ON ", 1)[1].split(" ", 1)[0]
            await tx.run(f'DROP TRIGGER IF EXISTS "{name}" ON {table}')
            await tx.run(sql)


async def grant(database: PostgresDatabase, role: str) -> None:
    """Give `role` what a host needs and no more (pilot.store.postgres_schema.GRANTS); as the tables' owner."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", role):
        raise StoreError(f"{role!r} is not a plain role name (letters, digits and _, 63 at most)")
    async with database.write() as tx:
        schema = await tx.one("SELECT current_schema() AS name")
        if schema is None or schema["name"] is None:
            raise StoreError("the connection has no schema to grant on (check search_path)")
        await tx.run(f'GRANT USAGE ON SCHEMA "{schema["name"]}" TO "{role}"')
        for privileges, table in GRANTS:
            await tx.run(f'REVOKE ALL ON {table} FROM "{role}"')
            await tx.run(f'GRANT {privileges} ON {table} TO "{role}"')
