"""The injected clock of the tests, in a module of its own: workers spawned as OS processes import it without
the fixtures' imports (the MCP server, pytest), which cost each process a second or two to start."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pilot.store.monotonic import HostClock, Instant


@dataclass
class FakeClock:
    """A clock the test moves by hand (no sleeps): the wall clock Pilot reads, and the store's clock.

    `advance` is time passing (the wall clock and the store's clock move together); `step` moves the wall
    clock alone, as an NTP correction, a resumed laptop or a human with `date -s` does. The store's clock
    starts at this machine's boot clock when the FakeClock is made, so a process on a real clock (a CLI
    command, a spawned server) reads times near it, and stands still until the test advances it.
    """

    moment: datetime
    ticks: Instant = field(default_factory=lambda: HostClock().read())

    def now(self) -> datetime:
        return self.moment

    def read(self) -> Instant:
        return self.ticks

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)
        self.ticks = self.ticks.plus(timedelta(seconds=seconds))

    def step(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)
