"""The console's state, set once on `app.state` by build_app and read by every endpoint through `console_of`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request

from pilot.app.road.clock import Clock
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.boot import StartupError
from pilot.console.login import LoginLimiter, Sessions

Reader = Callable[[], contextlib.AbstractAsyncContextManager[Runtime]]


@dataclass(frozen=True)
class Following:
    """A reader that follows the home's paper exchange wherever it runs now: `where()` says where it listens
    (None: none runs), `open(url)` opens a Runtime reading it there (never writing)."""

    where: Callable[[], str | None]
    open: Callable[[str], contextlib.AbstractAsyncContextManager[Runtime]]


@dataclass
class Console:
    """The console's state: the home, its desk (a Runtime without an exchange), sessions and limits.

    `open_reader` opens a Runtime with an exchange to read (never to write); the app's lifespan opens it and
    the desk, and closes both. With `following` instead, the reader is the home's paper exchange as it runs
    at each request: opened again when it moved (its server restarted), none while none runs (follow()).
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
    following: Following | None = None
    _followed: tuple[str, contextlib.AsyncExitStack] | None = None
    _turn: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.home)

    async def follow(self) -> None:
        """Read the home's paper exchange where it runs now: the reader opened again if it moved, closed if
        none runs (so pages say so). Nothing when the console reads a fixed exchange."""
        if self.following is None:
            return
        async with self._turn:
            url = self.following.where()
            if self._followed is not None and self._followed[0] == url:
                return
            await self.unfollow()
            if url is not None:
                stack = contextlib.AsyncExitStack()
                try:
                    self.reader = await stack.enter_async_context(self.following.open(url))
                except StartupError:  # it stopped as we opened: none runs, the next request looks again
                    await stack.aclose()
                    return
                self._followed = (url, stack)

    async def unfollow(self) -> None:
        """Close the reader follow() opened, if any."""
        followed, self._followed = self._followed, None
        if followed is not None:
            self.reader = None
            await followed[1].aclose()

    @property
    def desk(self) -> Runtime:
        assert self.runtime is not None, "the console's desk opens with the app"
        return self.runtime


def console_of(request: Request) -> Console:
    """The state of the console app that `request` came to."""
    console: Console = request.app.state.console
    return console
