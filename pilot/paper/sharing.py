"""One home's paper exchange shared by every server on the home, in a process of its own.

Each `pilot serve` on the home holds a shared lock on FILE.users (FILE being the home's state file) for as
long as it runs; the exchange, started by the first of them (`pilot sim --home HOME --idle-exit SECONDS`),
tries for that lock exclusively now and then. While any server holds it, the exchange is in use; once
nobody has held it for SECONDS, the exchange keeps the exclusive lock (so a server starting at that
instant waits, then starts a new one) and stops. flock: the system drops a lock when its process ends,
however it ends, so a server that crashed never keeps the exchange alive.

`stop_serving` asks the process serving a state file to stop (SIGTERM, which `pilot sim` takes as Ctrl+C;
SIGINT itself is ignored by a process started in the background) and waits until its lock is free:
`pilot sim stop --home HOME`, and tests that started one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pilot.paper.lock import StateInUse, StateLock, read_holder


def users_path(state_path: Path) -> Path:
    """The lock every server using the home's exchange holds shared."""
    return state_path.with_name(state_path.name + ".users")


class UserHold:
    """A server's share of the home's exchange: the exchange does not stop while one is held."""

    def __init__(self, state_path: Path) -> None:
        self.path = users_path(Path(state_path))
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take a share, waiting while an exchange that found itself unused is stopping (a moment)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._fd = fd

    def release(self) -> None:
        """Give the share back (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class IdleWatch:
    """The exchange's side: whether no server has held a share for `grace_seconds` (monotonic time)."""

    def __init__(
        self, state_path: Path, grace_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = users_path(Path(state_path))
        self.log = log_path(Path(state_path))
        self.grace = grace_seconds
        self._clock = clock
        self._idle_since: float | None = None
        self._fd: int | None = None

    def unused(self) -> bool:
        """True once no share has been held for the grace: the exclusive lock is then kept until exit."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._idle_since = None
            return False
        now = self._clock()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since >= self.grace:
            return True
        fcntl.flock(self._fd, fcntl.LOCK_UN)  # not yet: a server may take its share meanwhile
        return False

    def wait_until_unused(self, interval_seconds: float = 1.0) -> None:
        """Return once unused() says so, looking every `interval_seconds` (and keeping the exchange's log
        within LOG_LIMIT_BYTES meanwhile: a home's exchange may serve for weeks)."""
        pause = threading.Event()
        while not self.unused():
            rotate_log(self.log)
            pause.wait(interval_seconds)


LOG_LIMIT_BYTES = 256 * 1024  # the home exchange's log (HOME/paper/exchange.log) is rotated past this size


def log_path(state_path: Path) -> Path:
    """Where the home's exchange writes what it says (its banner, its errors): beside its state file."""
    return Path(state_path).with_name("exchange.log")


def rotate_log(log: Path, limit: int = LOG_LIMIT_BYTES) -> bool:
    """Once `log` holds `limit` bytes or more, keep them as LOG.1 (the one before is dropped) and start it
    empty; True if it did. Copied, then cut in place: the exchange writing it appends (O_APPEND) through a
    descriptor it was started with, which goes on writing at the new end."""
    try:
        if log.stat().st_size < limit:
            return False
        shutil.copyfile(log, log.with_name(log.name + ".1"))
        os.truncate(log, 0)
    except OSError:  # gone, or not ours to rotate: it is only a log
        return False
    return True


def stop_serving(state_path: Path, timeout_seconds: float = 30.0) -> int | None:
    """Ask the process serving `state_path` to stop and wait until the file is free; its pid, or None if
    none served it.

    Raises:
        TimeoutError: it still serves after `timeout_seconds`.
    """
    pid = read_holder(Path(state_path)).get("pid")
    if not isinstance(pid, int) or _free(state_path):
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_seconds
    pause = threading.Event()
    while not _free(state_path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the paper exchange (process {pid}) still serves {state_path}")
        pause.wait(0.05)
    return pid


def _free(state_path: Path) -> bool:
    """Whether no exchange serves the file (taking its lock for an instant, so only where none may start)."""
    lock = StateLock(Path(state_path))
    try:
        lock.acquire()
    except StateInUse:
        return False
    lock.release()
    return True
