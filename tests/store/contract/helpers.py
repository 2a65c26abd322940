"""What the contract tests share: a second host on the same store, and a holder that is gone."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from pilot.store import Store, StoreClock, StoreLocation, open_store


async def another_host(location: StoreLocation, home: Path, clock: StoreClock | None) -> Store:
    """A second connection to the same store, as a process on another host (or another process here) has.

    `home` is the test's home: a host of its own would have one too, with the same journal key."""
    return await open_store(location, home=home, clock=clock)


def gone_holder() -> str:
    """A holder id naming a process that no longer exists on this machine (what SQLite judges a holder by).
    On PostgreSQL a holder is judged by its session: close the store it acted through."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return f"{socket.gethostname()}:{int(finished.stdout)}:gone"
