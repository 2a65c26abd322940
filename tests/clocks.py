"""The injected clock of the tests, in a module of its own: workers spawned as OS processes import it without
the fixtures' imports (the MCP server, pytest), which cost each process a second or two to start."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass
class FakeClock:
    """A clock the test moves by hand (no sleeps)."""

    moment: datetime

    def now(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)
