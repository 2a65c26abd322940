"""The store's port: what the tables need from a database engine, so SQLite and PostgreSQL stand in alike.

The tables (journal, plans, leases, idempotency keys, confirmations, tokens, exchange keys) are written once
against this port; `pilot.store.sqlite` (the embedded default, one file per home) and `pilot.store.postgres`
(one server for several hosts) implement it. Nothing of either driver crosses it:

- a row is a plain dict, column name to value (text, integers, bytes, None);
- a statement is written once with `?` placeholders, and each engine binds them its way;
- the store's clock appears in a statement as `pilot_boot()` and `pilot_micros()` (pilot.store.monotonic): SQLite
  answers them from the clock of this machine (or the one a test hands the store), PostgreSQL from its
  server's, so a claim, a lease or an approval is decided on the store's clock inside the one statement that
  makes it;
- a failure is a StoreError (pilot.store.errors), translated by the engine.

Where the engines differ in what they can promise, the `Dialect` says so, and the table picks its statement.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from pilot.store.monotonic import StoreClock

Row = dict[str, Any]
Params = Sequence[Any]


class Tx(Protocol):
    """Statements run while the Database is held (inside one transaction, for `Database.write`)."""

    async def one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def run(self, sql: str, params: Params = ()) -> int:
        """Execute a write and return how many rows it changed."""
        ...

    def stream(self, sql: str, params: Params = ()) -> AsyncGenerator[Row, None]:
        """The rows one by one, without holding them all in memory."""
        ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What an engine can promise beyond the statements both understand.

    `sessions`: a holder of a lease or a claim is judged alive by its database session (PostgreSQL: a
    session-bound advisory lock that ends with its connection, whatever host it runs on), recorded in a
    `session` column and judged inside the statement; without it (SQLite, one machine) by its process on this
    machine (pilot.store.monotonic.process_gone). `lock_row`: the clause that makes a statement's read of a
    row wait for, and hold off, a concurrent update of it (PostgreSQL reads a snapshot; SQLite's one writer
    at a time needs none).
    """

    name: str
    sessions: bool
    lock_row: str


class Database(ABC):
    """One connection to a store's database, used by one process; every access holds it in turn.

    Durability is chosen per write. A durable write (the default) is on disk before it returns, and so is
    every write before it. A write made with `durable=False` may be lost to a power cut (never torn) until
    the next durable write; callers use it only where a loss is harmless, and say why.
    """

    dialect: Dialect
    clock: StoreClock  # the store's clock as this process reads it (for stamps a statement cannot make)
    where: str  # the database, as it may be shown to a person (never a password)

    @abstractmethod
    def read(self) -> AbstractAsyncContextManager[Tx]:
        """Run reads; a single SELECT sees one consistent snapshot."""

    @abstractmethod
    def write(self, *, durable: bool = True) -> AbstractAsyncContextManager[Tx]:
        """Run a read-then-write sequence as one transaction."""

    @abstractmethod
    async def returning(self, sql: str, params: Params = (), *, durable: bool = True) -> list[Row]:
        """Run one writing statement with a RETURNING clause as a transaction of its own: the rows it wrote."""

    async def change(self, sql: str, params: Params = (), *, durable: bool = True) -> int:
        """Run one writing statement as a transaction of its own and return how many rows it changed.

        The rows are counted by `RETURNING 1` (`sql` must not have its own): one trip to the database.
        """
        return len(await self.returning(sql + " RETURNING 1", params, durable=durable))

    @abstractmethod
    async def close(self) -> None:
        """Close the connection; the Database is unusable afterwards."""
