"""The console's state, set once on `app.state` by build_app and read by every endpoint through `console_of`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request

from pilot.app.road.clock import Clock
from pilot.app.runtime.runtime import Runtime
from pilot.console.login import LoginLimiter, Sessions

Reader = Callable[[], contextlib.AbstractAsyncContextManager[Runtime]]


@dataclass
class Console:
    """The console's state: the home, its desk (a Runtime without an exchange), sessions and limits.

    `open_reader` opens a Runtime with an exchange to read (never to write); the app's lifespan opens it and
    the desk, and closes both.
    """

    home: Path
    clock: Clock | None = None
    open_reader: Reader | None = None
    sessions: Sessions = field(init=False)
    limiter: LoginLimiter = field(default_factory=LoginLimiter)
    runtime: Runtime | None = None
    reader: Runtime | None = None
    flashes: dict[str, str] = field(default_factory=dict)
    live: bool = False  # a live home (real money): every page carries the LIVE banner

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.home)

    @property
    def desk(self) -> Runtime:
        assert self.runtime is not None, "the console's desk opens with the app"
        return self.runtime


def console_of(request: Request) -> Console:
    """The state of the console app that `request` came to."""
    console: Console = request.app.state.console
    return console
