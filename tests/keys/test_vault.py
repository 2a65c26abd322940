"""The vault: AES-256-GCM bound to its row, under a master key file that must be private and real."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pilot.keys.errors import MasterKeyError
from pilot.keys.vault import (
    SealBroken,
    Vault,
    associated_data,
    create_master_key,
    master_key_path,
    read_master_key,
)

SECRET = b'{"api_key": "AKEY", "api_secret": "ASECRET"}'


def test_a_sealed_secret_opens_with_the_same_master_key_and_row() -> None:
    master = os.urandom(32)
    sealed = Vault(master).seal(SECRET, associated_data("key-1", "bybit-demo", "bybit"))
    assert SECRET not in sealed
    assert Vault(master).open(sealed, associated_data("key-1", "bybit-demo", "bybit")) == SECRET


@pytest.mark.parametrize(
    "other_row",
    [("key-2", "bybit-demo", "bybit"), ("key-1", "bybit-testnet", "bybit"), ("key-1", "bybit-demo", "paper")],
    ids=["another key id", "another environment", "another exchange"],
)
def test_a_ciphertext_moved_to_another_row_does_not_open(other_row: tuple[str, str, str]) -> None:
    vault = Vault(os.urandom(32))
    sealed = vault.seal(SECRET, associated_data("key-1", "bybit-demo", "bybit"))
    with pytest.raises(SealBroken):
        vault.open(sealed, associated_data(*other_row))


def test_another_master_key_does_not_open_the_ciphertext() -> None:
    sealed = Vault(os.urandom(32)).seal(SECRET, b"row")
    with pytest.raises(SealBroken):
        Vault(os.urandom(32)).open(sealed, b"row")


def test_each_seal_uses_a_fresh_nonce() -> None:
    vault = Vault(os.urandom(32))
    assert vault.seal(SECRET, b"row") != vault.seal(SECRET, b"row")


def test_the_master_key_path_comes_from_the_environment_or_defaults_under_the_user_config() -> None:
    assert master_key_path({"PILOT_MASTER_KEY_FILE": "/srv/pilot/master.key"}) == Path(
        "/srv/pilot/master.key"
    )
    assert master_key_path({}) == Path("~/.config/pilot/master.key").expanduser()


def test_a_new_master_key_file_is_private_in_a_private_folder(tmp_path: Path) -> None:
    path = tmp_path / "config" / "pilot" / "master.key"
    key = create_master_key(path)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_master_key(path) == key


def test_an_existing_master_key_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    key = create_master_key(path)
    with pytest.raises(MasterKeyError):
        create_master_key(path)
    assert read_master_key(path) == key


def test_a_master_key_readable_by_others_is_refused_with_the_chmod_fix(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    create_master_key(path)
    path.chmod(0o644)
    with pytest.raises(MasterKeyError) as refused:
        read_master_key(path)
    assert str(path) in str(refused.value)
    assert f"chmod 600 {path}" in refused.value.fix


def test_a_symlinked_master_key_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.key"
    create_master_key(real)
    link = tmp_path / "master.key"
    link.symlink_to(real)
    with pytest.raises(MasterKeyError, match="symbolic link"):
        read_master_key(link)


@pytest.mark.parametrize("length", [0, 31, 33, 64])
def test_a_master_key_of_the_wrong_length_is_refused(tmp_path: Path, length: int) -> None:
    path = tmp_path / "master.key"
    path.write_bytes(b"k" * length)
    path.chmod(0o600)
    with pytest.raises(MasterKeyError, match=f"holds {length} bytes"):
        read_master_key(path)


def test_a_missing_master_key_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.key"
    with pytest.raises(MasterKeyError) as refused:
        read_master_key(path)
    assert str(path) in str(refused.value)
    assert "PILOT_MASTER_KEY_FILE" in refused.value.fix
