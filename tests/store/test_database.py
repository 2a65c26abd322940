from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pilot.store import SchemaTooNew, open_store

pytestmark = pytest.mark.anyio


async def test_open_creates_the_folder_in_wal_mode_at_the_current_schema(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    conn.close()


async def test_reopening_keeps_data_and_does_not_repeat_migrations(db_path: Path) -> None:
    for _ in range(3):
        async with await open_store(db_path):
            pass
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone() == (1,)
    conn.close()


async def test_a_database_from_a_newer_pilot_is_refused(db_path: Path) -> None:
    async with await open_store(db_path):
        pass
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")
    conn.close()
    with pytest.raises(SchemaTooNew):
        await open_store(db_path)
