"""Secrets of the phone channels (the Telegram bot token, an ntfy access token), sealed like exchange keys.

Each is one file, `HOME/channels/NAME.sealed` (mode 0600): AES-256-GCM under the master key (pilot.keys.vault),
bound to its name, so a copy of the home alone does not open it and a file renamed to another channel does
not open either. policy.json names who may approve; only these files hold what lets Pilot reach them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pilot.keys.vault import SealBroken
from pilot.keys.vault_files import vault_for_reading, vault_for_writing

ChannelSecret = Literal["telegram", "ntfy"]
FOLDER = "channels"


class SecretUnreadable(Exception):
    """A stored channel secret does not open under this master key."""


def secret_path(home: Path, name: ChannelSecret) -> Path:
    return Path(home) / FOLDER / f"{name}.sealed"


def store_secret(home: Path, name: ChannelSecret, secret: str) -> Path:
    """Seal `secret` for channel `name` (replacing any stored one); the file written."""
    stored = any(path.exists() for path in _sealed_files(home)) or (Path(home) / "keys.db").exists()
    vault = vault_for_writing(home, has_stored_keys=stored)
    path = secret_path(home, name)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(vault.seal(secret.encode("utf-8"), _associated(name)))
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)
    return path


def load_secret(home: Path, name: ChannelSecret) -> str | None:
    """The secret stored for channel `name`, or None when none is.

    Raises:
        SecretUnreadable: the file does not open (another master key, a file moved from another channel).
        MasterKeyError: the master key file is missing or unsafe.
    """
    path = secret_path(home, name)
    try:
        sealed = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return vault_for_reading(home).open(sealed, _associated(name)).decode("utf-8")
    except SealBroken:
        raise SecretUnreadable(f"{path} does not open under this master key") from None


def delete_secret(home: Path, name: ChannelSecret) -> bool:
    """Forget channel `name`'s secret; whether there was one."""
    try:
        secret_path(home, name).unlink()
    except FileNotFoundError:
        return False
    return True


def _sealed_files(home: Path) -> list[Path]:
    return [secret_path(home, "telegram"), secret_path(home, "ntfy")]


def _associated(name: str) -> bytes:
    return "\x00".join(("pilot-channel-secret", name)).encode()
