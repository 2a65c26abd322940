"""The store's own failures; sqlite3 errors are translated here and go no further.

The classes are drawn with every other exception Pilot defines in `pilot/core/errors.py`; what a human is
told of each is `pilot.app.answers.failures.explain`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


class StoreError(Exception):
    """Base of every store failure."""


class StoreBusy(StoreError):
    """The database stayed locked by another connection for longer than the busy timeout."""


class StoreFull(StoreError):
    """The disk (or quota) holding the database is full; the write did not happen. Freeing space fixes it."""


class DuplicateRecord(StoreError):
    """A unique id, key or name is already in use."""


class InvalidTransition(StoreError):
    """The record is missing or not in the state this operation requires."""


class SchemaTooNew(StoreError):
    """The database schema is newer than this version of Pilot understands."""


class StoreCorrupt(StoreError):
    """The database file is not an SQLite database or is damaged; nothing in it can be trusted or used."""


class JournalKeyUnusable(StoreError):
    """The journal key cannot be used; `problem` and `fix` are the key module's own words (no secret)."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} Fix: {fix}")
        self.problem = problem
        self.fix = fix


_CORRUPT = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turn sqlite3 errors raised inside the block into StoreError types."""
    try:
        yield
    except sqlite3.IntegrityError as error:
        if "UNIQUE" in str(error):
            raise DuplicateRecord("a record with this id already exists") from error
        raise StoreError(f"integrity check failed: {error}") from error
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            raise StoreBusy("the database is locked by another process") from error
        if getattr(error, "sqlite_errorname", "") == "SQLITE_FULL":
            raise StoreFull(f"the disk holding the database is full ({error})") from error
        raise StoreError(f"database operation failed: {error}") from error
    except sqlite3.DatabaseError as error:
        if (getattr(error, "sqlite_errorname", "") or "").startswith(_CORRUPT):
            raise StoreCorrupt(f"the database is damaged or not a Pilot database ({error})") from error
        raise StoreError(f"database error: {error}") from error
    except sqlite3.Error as error:
        raise StoreError(f"database error: {error}") from error
