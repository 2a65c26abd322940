"""The Store: one SQLite database per Pilot home, and the tables the use cases work with."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from pilot.store.confirmations import Confirmations
from pilot.store.database import Database, connect
from pilot.store.idempotency import Idempotency
from pilot.store.journal import Journal
from pilot.store.plans import Plans
from pilot.store.tokens import Tokens


class Store:
    """Access to the journal, plans, idempotency keys, confirmations and tokens of one database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.journal = Journal(db)
        self.plans = Plans(db)
        self.idempotency = Idempotency(db)
        self.confirmations = Confirmations(db)
        self.tokens = Tokens(db)

    async def close(self) -> None:
        """Close the connection; the Store is unusable afterwards."""
        await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def open_store(path: Path) -> Store:
    """Open the database at `path` (normally HOME/journal/pilot.db), creating it and its folder if needed.

    Several processes may open the same file at once; every guarantee of the Store holds across them.
    """
    return Store(await connect(path))
