"""The store's clock: one monotonic time that every process of a home reads alike, for every time limit.

Wall clocks step (NTP corrections, a resumed laptop, `date -s`) and differ between processes, so no limit is
measured by comparing two of their readings. The store measures every life (a plan's, a lease's, a send's)
on its own clock instead and stamps every journal entry with a reading of it beside the wall time.

A reading is an `Instant`: the boot it was taken in and the microseconds since that boot began. For SQLite,
whose every process runs on one machine (WAL needs shared memory), that is the machine's boot clock
(CLOCK_BOOTTIME on Linux: it never steps and keeps counting while the machine sleeps). Two instants of one
boot subtract to the real time between them whatever the wall clocks did; an instant of an earlier boot is
at least as old as this boot (`age`). A store on a server would read its server's clock instead
(PostgreSQL's clock_timestamp(), one clock for every host): the rest of Pilot asks the store, never a clock
of its own, whenever a limit is a length of time.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Protocol, runtime_checkable

BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True, slots=True)
class Instant:
    """A reading of the store's clock: which boot, and microseconds since that boot began."""

    boot: str
    micros: int

    def plus(self, length: timedelta) -> Instant:
        return Instant(self.boot, self.micros + micros_of(length))

    def as_json(self) -> dict[str, object]:
        return {"boot": self.boot, "micros": self.micros}


def micros_of(length: timedelta) -> int:
    """A length of time in whole microseconds, as the store's clock counts it."""
    return (length.days * 86_400 + length.seconds) * 1_000_000 + length.microseconds


def age(now: Instant, then: Instant | None) -> timedelta | None:
    """The real time from `then` to `now`: exact within one boot (never negative); for an instant of an
    earlier boot, at least the time this boot has run; None when there is no reading (a record written
    before the store kept one)."""
    if then is None:
        return None
    if then.boot != now.boot:
        return timedelta(microseconds=now.micros)
    return timedelta(microseconds=max(now.micros - then.micros, 0))


@runtime_checkable
class StoreClock(Protocol):
    def read(self) -> Instant:
        """The store's time now."""
        ...


class HostClock:
    """This machine's boot clock, as every process on it reads it."""

    def read(self) -> Instant:
        return Instant(boot_id(), _boot_micros())


def _boot_micros() -> int:
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    if clock is not None:
        return time.clock_gettime_ns(clock) // 1000
    return time.monotonic_ns() // 1000  # macOS: CLOCK_MONOTONIC, which counts sleep there too


@cache
def boot_id() -> str:
    """This boot of this machine: the kernel's boot id on Linux, else the boot time the system reports
    (BSD and macOS: `sysctl kern.boottime`), read once per process."""
    try:
        return BOOT_ID_FILE.read_text().strip()
    except OSError:
        pass
    try:
        booted = subprocess.run(
            ["sysctl", "-n", "kern.boottime"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        booted = ""
    if not booted:  # the boot time by the wall clock, to a minute: one value per boot unless it steps
        booted = str(round((time.time() - _boot_micros() / 1_000_000) / 60))
    return f"{socket.gethostname()}@{booted}"


def process_gone(holder: str, holder_boot: str | None, here: Instant) -> bool:
    """Whether the process named by a holder id ("host:pid:token", see `holder_id`) no longer exists.

    True only when that is certain: it ran in an earlier boot, or on this machine with a pid no process
    has now. A pid reused by another process reads as alive (the record's own expiry still ends it).
    """
    if holder_boot is not None and holder_boot != here.boot:
        return True
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it exists
        return False
    return False


def holder_id(token: str) -> str:
    """A name for this process as a holder of leases and claims: host, pid and a token of the caller's."""
    return f"{socket.gethostname()}:{os.getpid()}:{token}"
