"""Who serves a paper state file: the lock one running paper exchange holds on it, what the holder wrote
there (its process id and URL), and the URL a server attaches to. Apart from pilot.paper.state (the account
on disk) so that a server attaching to a running exchange reads the lock without importing the exchange."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any


class StateError(ValueError):
    """A state file that cannot be used with this scenario (unreadable, another version, unknown symbols)."""


class StateInUse(StateError):
    """Another running paper exchange serves this state file (its process id and URL, when it wrote them)."""

    def __init__(self, path: Path, *, pid: int | None, url: str | None) -> None:
        holder = f"process {pid}" if pid else "another process"
        where = f", serving {url}" if url else ""
        super().__init__(f"{path} is in use by a running paper exchange ({holder}{where})")
        self.path = path
        self.pid = pid
        self.url = url


class StateLock:
    """The exclusive right to serve one state file, held from acquire() to release() (or the process's end)."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = Path(state_path)
        self.path = self.state_path.with_name(self.state_path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting.

        Raises:
            StateInUse: another paper exchange holds it.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StateInUse(self.state_path, pid=holder.get("pid"), url=holder.get("url")) from None
        self._fd = fd
        self.note(None)

    def note(self, url: str | None, keys: tuple[str, ...] = ()) -> None:
        """Say who holds the lock (this process, the URL it serves and the fingerprints of the keys it takes:
        `key_fingerprint`) for whoever is refused next or attaches."""
        if self._fd is None:
            return
        text = json.dumps({"pid": os.getpid(), "url": url, "keys": list(keys)}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text, 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let another paper exchange serve the file (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor releases the flock


def read_holder(state_path: Path) -> dict[str, Any]:
    """What the exchange holding `state_path`'s lock wrote there (pid, url, keys); empty if nothing or no
    file."""
    path = state_path.with_name(state_path.name + ".lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return {}
    try:
        return _holder(fd)
    finally:
        os.close(fd)


def _holder(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    pid, url, keys = data.get("pid"), data.get("url"), data.get("keys")
    return {
        "pid": pid if isinstance(pid, int) else None,
        "url": url if isinstance(url, str) else None,
        "keys": tuple(str(key) for key in keys) if isinstance(keys, list) else None,  # None: not said
    }


def key_fingerprint(api_key: str, api_secret: str) -> str:
    """What a running paper exchange says of a key it takes, so a server can tell before attaching whether
    its scenario's key is one of them (a paper key's digest: never the secret itself)."""
    return hashlib.sha256(f"{api_key}\n{api_secret}".encode()).hexdigest()[:16]


def serves_key(state_path: Path, api_key: str, api_secret: str) -> bool | None:
    """Whether the running paper exchange that serves `state_path` takes this key, as it said in the lock
    file (None: it said nothing of its keys, as one of an earlier version)."""
    keys = read_holder(Path(state_path)).get("keys")
    if keys is None:
        return None
    return key_fingerprint(api_key, api_secret) in keys


def serving_url(state_path: Path) -> str | None:
    """The URL of the running paper exchange that serves `state_path` (a `pilot serve` embedding it, or a
    `pilot sim --home`), or None when none does. Read from what the holder wrote in the lock file, without
    taking the lock (a probe that took it could refuse an exchange starting at that instant)."""
    holder = read_holder(Path(state_path))
    pid, url = holder.get("pid"), holder.get("url")
    if not url or not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)  # a holder that died leaves its words behind; the system released its lock
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, under another user
    return str(url)
