"""Plain SQL on a store's database from outside Pilot (sqlite3 or psycopg), with Pilot's `?` placeholders."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pilot.store import StoreLocation


class Outsider:
    """One connection, autocommit: each statement stands alone, as someone with a shell would run it."""

    def __init__(self, run: Any, engine: str) -> None:
        self._run = run
        self.engine = engine

    @classmethod
    @contextmanager
    def of(cls, location: StoreLocation) -> Iterator[Outsider]:
        if location.url is None:
            assert location.path is not None
            conn = sqlite3.connect(location.path, isolation_level=None)
            try:
                yield cls(lambda sql, params: conn.execute(sql, params).fetchall(), "sqlite")
            finally:
                conn.close()
            return
        import psycopg

        with psycopg.connect(location.url, autocommit=True) as pg:

            def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                cursor = pg.execute(sql.replace("?", "%s"), tuple(params))
                return cursor.fetchall() if cursor.description else []

            yield cls(run, "postgresql")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self._run(sql, params))

    def drop_trigger(self, name: str, table: str) -> None:
        if self.engine == "sqlite":
            self.execute(f"DROP TRIGGER IF EXISTS {name}")
        else:
            self.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
