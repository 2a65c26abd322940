"""Where the master key comes from, and the rules for creating one: only the first time, never silently."""

from __future__ import annotations

import os
from pathlib import Path

from pilot.keys.key_file import refuse_inside_home
from pilot.keys.vault import MASTER_KEY_FILE, Vault, create_master_key, master_key_path, read_master_key


def vault_for_reading(home: Path) -> Vault:
    """Open the vault with the existing master key; a missing or unsafe file is an error, never a new key."""
    return Vault(read_master_key(_checked_path(home)))


def vault_for_writing(home: Path, *, has_stored_keys: bool) -> Vault:
    """Open the vault, creating the master key file only if none exists and no key is stored yet."""
    path = _checked_path(home)
    if not os.path.lexists(path) and not has_stored_keys:
        return Vault(create_master_key(path))
    return Vault(read_master_key(path))


def check_master_key(home: Path, *, has_stored_keys: bool) -> None:
    """Raise MasterKeyError if storing a key now would fail on the master key file; create nothing."""
    path = _checked_path(home)
    if os.path.lexists(path) or has_stored_keys:
        read_master_key(path)


def _checked_path(home: Path) -> Path:
    path = master_key_path()
    refuse_inside_home(MASTER_KEY_FILE, path, home)
    return path
