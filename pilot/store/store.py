"""The Store: a home's database (its SQLite file, or a PostgreSQL database shared by hosts) and its tables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from pilot.store import sqlite
from pilot.store.agents import Agents
from pilot.store.anchor import AnchorFile, anchor_path
from pilot.store.confirmations import Confirmations
from pilot.store.database import Database, Tx
from pilot.store.errors import StoreCorrupt, StoreError
from pilot.store.guards import GuardCheck, OpenReport, prepare
from pilot.store.idempotency import Idempotency
from pilot.store.journal import Journal
from pilot.store.leases import Leases
from pilot.store.location import StoreLocation, postgres_engine
from pilot.store.monotonic import HostClock, StoreClock
from pilot.store.plans import Plans
from pilot.store.sealing import Sealer
from pilot.store.tokens import Tokens


class Store:
    """Access to the journal, plans, idempotency keys, confirmations, tokens, leases and agents' heartbeats
    of one database.

    `opened` says what opening found and did: the journal key in use, guards restored, entries adopted.
    """

    def __init__(self, db: Database, sealer: Sealer, opened: OpenReport, home: Path) -> None:
        self._db = db
        self.database = db  # the engine behind the tables (pilot.store.database), for a move between stores
        self.opened = opened
        self.where = db.where  # the database, as a person may be shown it
        self.engine = db.dialect.name  # "sqlite" or "postgresql"
        # The store's own time: every time limit is measured on it (pilot.store.monotonic).
        clock = self.clock = db.clock
        anchor = AnchorFile(anchor_path(opened.key_path, home), home)
        self.journal = Journal(db, sealer, opened.legacy_entries, clock, anchor)
        self.plans = Plans(db, sealer, clock)
        self.idempotency = Idempotency(db)
        self.confirmations = Confirmations(db, clock)
        self.tokens = Tokens(db)
        self.leases = Leases(db, clock)
        self.agents = Agents(db, clock)

    async def close(self) -> None:
        """Close the connection; the Store is unusable afterwards."""
        await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def home_of(path: Path) -> Path:
    """The Pilot home a database belongs to: the folder holding `journal/`, else the database's own folder."""
    return path.parent.parent if path.parent.name == "journal" else path.parent


async def open_store(
    where: Path | StoreLocation,
    *,
    home: Path | None = None,
    now: datetime | None = None,
    clock: StoreClock | None = None,
) -> Store:
    """Open a home's store: the SQLite file at `where` (normally HOME/journal/pilot.db, created with its
    folder if needed), or the PostgreSQL database a StoreLocation names (its schema brought up to date).

    `home` is the home the store serves (default: the SQLite file's). `clock` is the store's own time
    (default: this machine's boot clock for SQLite, the database server's clock for PostgreSQL,
    pilot.store.monotonic); a test may hand it one it moves. Opening also loads the journal key
    (pilot.keys.seal; created only for a database no entry of which depends on a key yet), restores any
    append-only guard found missing or altered, and adopts entries written before sealing; what it restores
    or adopts is journaled at `now` (default: the system clock). Several processes (on PostgreSQL, several
    hosts) may open the same store at once; every guard of the Store holds across them. Opening checks the
    journal still holds the entry it was anchored at outside the home (pilot.store.anchor):
    `store.journal.rollback` says what was found when it does not.

    Raises:
        StoreCorrupt: the file is not a database or is damaged.
        JournalKeyUnusable: the journal key file cannot be used (its message says the fix).
        SchemaTooNew: a newer Pilot wrote the database.
        StoreError: any other database failure (a server that cannot be reached among them).
    """
    location = where if isinstance(where, StoreLocation) else StoreLocation(path=where)
    at = now or datetime.now(UTC)
    if location.url is None:
        assert location.path is not None
        home = home or home_of(location.path)
        return await _opened(await _open_sqlite(location.path, home, at, clock), home)
    if home is None:
        raise ValueError("a PostgreSQL store is opened for a home (its journal key and anchor)")
    return await _opened(await _open_postgres(location.url, home, at, clock), home)


Opened = tuple[Database, Sealer, OpenReport]


Prepare = Callable[[Tx, int], Awaitable[tuple[Sealer, OpenReport]]]


def _preparer(home: Path, at: datetime, clock: StoreClock, restore: GuardCheck) -> Prepare:
    async def prepared(tx: Tx, from_version: int) -> tuple[Sealer, OpenReport]:
        return await prepare(tx, from_version, home=home, now=at, stamp=clock.read(), restore=restore)

    return prepared


async def _open_sqlite(path: Path, home: Path, at: datetime, clock: StoreClock | None) -> Opened:
    ticks = clock or HostClock()
    try:
        db, (sealer, opened) = await sqlite.connect(
            path, _preparer(home, at, ticks, sqlite.restore_guards), ticks
        )
    except StoreCorrupt as error:
        raise StoreCorrupt(f"{path}: {error}") from error
    return db, sealer, opened


async def _open_postgres(url: str, home: Path, at: datetime, clock: StoreClock | None) -> Opened:
    postgres = postgres_engine()
    database = postgres.PostgresDatabase(url, clock)
    try:
        prepared = await postgres.migrate(
            database, _preparer(home, at, database.clock, postgres.restore_guards)
        )
    except BaseException:
        await database.close()
        raise
    if prepared is None:
        raise StoreError("the database was not prepared")
    sealer, opened = prepared
    return database, sealer, opened


async def _opened(opened: Opened, home: Path) -> Store:
    db, sealer, report = opened
    store = Store(db, sealer, report, home)
    try:
        await store.journal.check_anchor()  # a rollback found is the app's to act on (journal.rollback)
    except BaseException:
        await store.close()
        raise
    return store
