"""The key table: one active key per environment, retired keys keep their id but lose their ciphertext."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pilot.store.keystore import ActiveKeyExists, PermissionCheck, StoredKey, open_keystore

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHECK = PermissionCheck(
    checked_at=NOW, read_only=False, permissions=("ContractTrade.Order",), disallowed=(), ip_bound=True
)


def stored(key_id: str, environment: str = "bybit-demo") -> StoredKey:
    return StoredKey(key_id, environment, None, "WXYZ", b"sealed-" + key_id.encode(), NOW, CHECK)


async def test_a_stored_key_reads_back_as_it_was_written(tmp_path: Path) -> None:
    store = await open_keystore(tmp_path / "keys.db")
    await store.insert(stored("key-1"))
    assert await store.active("bybit-demo") == stored("key-1")
    assert await store.active("bybit-testnet") is None
    await store.close()


async def test_the_database_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = await open_keystore(tmp_path / "keys.db")
    await store.close()
    assert (tmp_path / "keys.db").stat().st_mode & 0o077 == 0


async def test_a_second_active_key_for_one_environment_is_refused(tmp_path: Path) -> None:
    store = await open_keystore(tmp_path / "keys.db")
    await store.insert(stored("key-1"))
    await store.insert(stored("key-2", "bybit-testnet"))
    with pytest.raises(ActiveKeyExists):
        await store.insert(stored("key-3"))
    assert [key.key_id for key in await store.all_active()] == ["key-1", "key-2"]
    await store.close()


async def test_replace_retires_the_old_key_and_erases_its_ciphertext(tmp_path: Path) -> None:
    store = await open_keystore(tmp_path / "keys.db")
    await store.insert(stored("key-1"))
    await store.replace("key-1", stored("key-2"), at=NOW)
    assert (await store.active("bybit-demo")).key_id == "key-2"
    await store.close()
    assert b"sealed-key-1" not in (tmp_path / "keys.db").read_bytes()


async def test_record_check_updates_the_last_check(tmp_path: Path) -> None:
    store = await open_keystore(tmp_path / "keys.db")
    await store.insert(stored("key-1"))
    later = PermissionCheck(NOW + timedelta(hours=2), True, (), ("Wallet.AccountTransfer",), False)
    await store.record_check("key-1", later)
    assert (await store.active("bybit-demo")).check == later
    await store.close()
