"""Encryption of stored keys: AES-256-GCM under a sub-key that HKDF-SHA256 derives from a master key file.

The master key file lives outside the Pilot home (default `~/.config/pilot/master.key`, or the path in
PILOT_MASTER_KEY_FILE), so a copy of the home folder alone does not open the keys stored in it.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from pilot.keys.errors import MasterKeyError

MASTER_KEY_ENV = "PILOT_MASTER_KEY_FILE"
DEFAULT_MASTER_KEY_FILE = Path("~/.config/pilot/master.key")
MASTER_KEY_BYTES = 32
NONCE_BYTES = 12
_SUBKEY_INFO = b"pilot/keys/exchange-credentials/v1"


class SealBroken(Exception):
    """The ciphertext does not open: wrong master key, or associated data that does not match."""


def master_key_path(environ: Mapping[str, str] = os.environ) -> Path:
    """Return the master key file's path: PILOT_MASTER_KEY_FILE if set, else the per-user default."""
    configured = environ.get(MASTER_KEY_ENV, "").strip()
    return Path(configured or DEFAULT_MASTER_KEY_FILE).expanduser().absolute()


def read_master_key(path: Path) -> bytes:
    """Read the master key, refusing a symlink, a loose mode, another owner or a wrong length."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise MasterKeyError(
            path,
            "not found, but keys are stored that were encrypted with it",
            f"restore the file from your backup, or set {MASTER_KEY_ENV} to where it is. "
            "Without it, delete the stored keys with `pilot keys delete` and add them again.",
        ) from None
    _check_file_status(path, info)
    data = _read_no_follow(path)
    if len(data) != MASTER_KEY_BYTES:
        raise MasterKeyError(
            path,
            f"holds {info.st_size} bytes, a master key is exactly {MASTER_KEY_BYTES}",
            "restore the original file from your backup; never edit it by hand.",
        )
    return data


def create_master_key(path: Path) -> bytes:
    """Create a new random 256-bit master key file with mode 0600 in a directory with mode 0700."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(MASTER_KEY_BYTES)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise MasterKeyError(path, "appeared while Pilot was creating it", "run the command again.") from None
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(file.fileno(), 0o600)  # independent of the umask
        file.write(key)
        file.flush()
        os.fsync(file.fileno())
    return key


def _check_file_status(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise MasterKeyError(
            path, "is a symbolic link", f"put the real file at that path, or set {MASTER_KEY_ENV} to it."
        )
    if not stat.S_ISREG(info.st_mode):
        raise MasterKeyError(path, "is not a regular file", f"set {MASTER_KEY_ENV} to the master key file.")
    if info.st_uid != os.getuid():
        raise MasterKeyError(path, "belongs to another user", "run Pilot as the user who owns the file.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise MasterKeyError(
            path,
            f"has mode {stat.S_IMODE(info.st_mode):04o}, others may read it",
            f"run `chmod 600 {path}`.",
        )


def _read_no_follow(path: Path) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as file:
        return file.read(MASTER_KEY_BYTES + 1)


def associated_data(key_id: str, environment: str, exchange: str) -> bytes:
    """Bind a ciphertext to its row: a copy moved to another key id or environment does not open."""
    return "\x00".join(("pilot-key", key_id, environment, exchange)).encode()


class Vault:
    """Seals and opens small secrets with AES-256-GCM; each seal is a fresh nonce plus the ciphertext."""

    __slots__ = ("_aead",)

    def __init__(self, master_key: bytes) -> None:
        subkey = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_SUBKEY_INFO).derive(master_key)
        self._aead = AESGCM(subkey)

    def __repr__(self) -> str:
        return "Vault(<sealed>)"

    def seal(self, plaintext: bytes, associated: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plaintext, associated)

    def open(self, sealed: bytes, associated: bytes) -> bytes:
        try:
            return self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], associated)
        except (InvalidTag, ValueError):
            raise SealBroken from None
