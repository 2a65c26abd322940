"""Secret key files kept outside a Pilot home: one set of rules for the vault's master key and the journal key.

A key file is exactly 32 random bytes in a regular file (never a symlink) that the user owns and nobody else
may read (mode 0600), in a folder with mode 0700. Pilot creates one atomically and never overwrites one: a
file that other things depend on is restored from a backup, not replaced.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pilot.keys.errors import KeysError

KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class KeyFileKind:
    """Which key file a message is about: its name in sentences, its variable and the error it raises."""

    noun: str  # "master key", "journal key"
    env_var: str
    default: Path
    error: Callable[[Path, str, str], KeysError]  # (path, problem, fix)

    def path(self, environ: Mapping[str, str]) -> Path:
        """The file's path: the environment variable if set, else the per-user default."""
        configured = environ.get(self.env_var, "").strip()
        return Path(configured or self.default).expanduser().absolute()


def refuse_inside_home(kind: KeyFileKind, path: Path, home: Path) -> None:
    """Raise the kind's error if the key file would travel with a copy of the home."""
    if path.parent.resolve().is_relative_to(home.resolve()):
        raise kind.error(
            path,
            f"is inside the Pilot home {home}, so a copy of the home would carry its own key",
            f"move the file out of the home and set {kind.env_var} to its new path.",
        )


def read_key_file(kind: KeyFileKind, path: Path, *, missing: tuple[str, str]) -> bytes:
    """Read a key file, refusing a symlink, a loose mode, another owner or a wrong length.

    `missing` is the (problem, fix) to report when the file is not there.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise kind.error(path, *missing) from None
    _check_file_status(kind, path, info)
    data = _read_no_follow(path)
    if len(data) != KEY_BYTES:
        raise kind.error(
            path,
            f"holds {info.st_size} bytes, a {kind.noun} is exactly {KEY_BYTES}",
            "restore the original file from your backup; never edit it by hand.",
        )
    return data


def create_key_file(path: Path) -> bytes:
    """Create a new random key file with mode 0600 in a folder with mode 0700, and return the key.

    The file appears complete or not at all (written aside, then hard-linked into place), so a process
    that reads it at the same moment never sees it half written.

    Raises:
        FileExistsError: something is already at `path`; it is left untouched.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    aside = path.with_name(f".{path.name}.{secrets.token_hex(8)}.new")
    descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            os.fchmod(file.fileno(), 0o600)  # independent of the umask
            file.write(key)
            file.flush()
            os.fsync(file.fileno())
        os.link(aside, path)  # atomic, and never replaces an existing file
        _sync_folder(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)
    return key


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _check_file_status(kind: KeyFileKind, path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise kind.error(
            path, "is a symbolic link", f"put the real file at that path, or set {kind.env_var} to it."
        )
    if not stat.S_ISREG(info.st_mode):
        raise kind.error(path, "is not a regular file", f"set {kind.env_var} to the {kind.noun} file.")
    if info.st_uid != os.getuid():
        raise kind.error(path, "belongs to another user", "run Pilot as the user who owns the file.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise kind.error(
            path,
            f"has mode {stat.S_IMODE(info.st_mode):04o}, others may read it",
            f"run `chmod 600 {path}`.",
        )


def _read_no_follow(path: Path) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as file:
        return file.read(KEY_BYTES + 1)
