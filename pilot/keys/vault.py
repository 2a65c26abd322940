"""Encryption of stored keys: AES-256-GCM under a sub-key that HKDF-SHA256 derives from a master key file.

The master key file lives outside the Pilot home (default `~/.config/pilot/master.key`, or the path in
PILOT_MASTER_KEY_FILE), so a copy of the home folder alone does not open the keys stored in it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from pilot.keys.errors import MasterKeyError
from pilot.keys.key_file import KEY_BYTES, KeyFileKind, create_key_file, read_key_file

MASTER_KEY_ENV = "PILOT_MASTER_KEY_FILE"
DEFAULT_MASTER_KEY_FILE = Path("~/.config/pilot/master.key")
MASTER_KEY_BYTES = KEY_BYTES
NONCE_BYTES = 12
_SUBKEY_INFO = b"pilot/keys/exchange-credentials/v1"


class SealBroken(Exception):
    """The ciphertext does not open: wrong master key, or associated data that does not match."""


MASTER_KEY_FILE = KeyFileKind("master key", MASTER_KEY_ENV, DEFAULT_MASTER_KEY_FILE, MasterKeyError)


def master_key_path(environ: Mapping[str, str] = os.environ) -> Path:
    """Return the master key file's path: PILOT_MASTER_KEY_FILE if set, else the per-user default."""
    return MASTER_KEY_FILE.path(environ)


def read_master_key(path: Path) -> bytes:
    """Read the master key, refusing a symlink, a loose mode, another owner or a wrong length."""
    return read_key_file(
        MASTER_KEY_FILE,
        path,
        missing=(
            "not found, but keys are stored that were encrypted with it",
            f"restore the file from your backup, or set {MASTER_KEY_ENV} to where it is. "
            "Without it, delete the stored keys with `pilot keys delete` and add them again.",
        ),
    )


def create_master_key(path: Path) -> bytes:
    """Create a new random 256-bit master key file with mode 0600 in a directory with mode 0700."""
    try:
        return create_key_file(path)
    except FileExistsError:
        raise MasterKeyError(path, "appeared while Pilot was creating it", "run the command again.") from None


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
