"""The Store: one SQLite database per Pilot home, and the tables the use cases work with."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from pilot.store.anchor import AnchorFile, anchor_path
from pilot.store.confirmations import Confirmations
from pilot.store.database import Database, Tx, connect
from pilot.store.errors import StoreCorrupt
from pilot.store.guards import OpenReport, prepare
from pilot.store.idempotency import Idempotency
from pilot.store.journal import Journal
from pilot.store.leases import Leases
from pilot.store.monotonic import HostClock, StoreClock
from pilot.store.plans import Plans
from pilot.store.sealing import Sealer
from pilot.store.tokens import Tokens


class Store:
    """Access to the journal, plans, idempotency keys, confirmations, tokens and leases of one database.

    `opened` says what opening found and did: the journal key in use, guards restored, entries adopted.
    """

    def __init__(
        self, db: Database, sealer: Sealer, opened: OpenReport, clock: StoreClock, home: Path
    ) -> None:
        self._db = db
        self.opened = opened
        self.clock = clock  # the store's own time: every time limit is measured on it (pilot.store.monotonic)
        anchor = AnchorFile(anchor_path(opened.key_path, home), home)
        self.journal = Journal(db, sealer, opened.legacy_entries, clock, anchor)
        self.plans = Plans(db, sealer, clock)
        self.idempotency = Idempotency(db)
        self.confirmations = Confirmations(db, clock)
        self.tokens = Tokens(db)
        self.leases = Leases(db, clock)

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


async def open_store(path: Path, *, now: datetime | None = None, clock: StoreClock | None = None) -> Store:
    """Open the database at `path` (normally HOME/journal/pilot.db), creating it and its folder if needed.

    `clock` is the store's own time (default: this machine's boot clock, pilot.store.monotonic.HostClock); a
    test may hand it one it moves. Opening also loads the journal key (pilot.keys.seal; created only for a database no entry of which
    depends on a key yet), restores any append-only guard found missing or altered, and adopts entries
    written before sealing; what it restores or adopts is journaled at `now` (default: the system clock).
    Several processes may open the same file at once; every guard of the Store holds across them. Opening
    checks the journal still holds the entry it was anchored at outside the home (pilot.store.anchor):
    `store.journal.rollback` says what was found when it does not.

    Raises:
        StoreCorrupt: the file is not a database or is damaged.
        JournalKeyUnusable: the journal key file cannot be used (its message says the fix).
        SchemaTooNew: a newer Pilot wrote the database.
        StoreError: any other database failure.
    """
    at, ticks = now or datetime.now(UTC), clock or HostClock()

    async def prepared(tx: Tx, from_version: int) -> tuple[Sealer, OpenReport]:
        return await prepare(tx, from_version, home=home_of(path), now=at, stamp=ticks.read())

    try:
        db, (sealer, opened) = await connect(path, prepared)
    except StoreCorrupt as error:
        raise StoreCorrupt(f"{path}: {error}") from error
    store = Store(db, sealer, opened, ticks, home_of(path))
    try:
        await store.journal.check_anchor()  # a rollback found is the app's to act on (journal.rollback)
    except BaseException:
        await store.close()
        raise
    return store
