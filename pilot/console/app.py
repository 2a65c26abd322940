"""The console's web app: Starlette, server-rendered Jinja pages (autoescaped), htmx and Chart.js from the package.

Every request passes `Guard` first (pilot.console.guard): the Host must be this server on loopback (a
DNS-rebinding page cannot talk to it), and a POST must come from this origin. Every page but /login needs a
session (cookie HttpOnly, SameSite=Strict), and every POST needs the session's CSRF token
(pilot.console.access). An agent's bearer token is never read. The routes are listed in pilot.console.routes, each
page's endpoints in its *_pages module; they read the console's state from `app.state.console`
(pilot.console.app_state). A failure Pilot foresees that stops a page (a human's request that cannot be
done, Pilot's database failing) is answered by one exception handler (pilot.console.failure_pages): the
problem and the fix, with the status it calls for.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from pilot.app.human.desk import open_desk
from pilot.app.human.going_live import LIVE, home_kind
from pilot.app.road.clock import Clock
from pilot.console.app_state import Console, Following, Reader
from pilot.console.failure_pages import HANDLERS
from pilot.console.guard import Guard
from pilot.console.login import LoginLimiter
from pilot.console.routes import ROUTES


def build_app(
    home: Path,
    *,
    clock: Clock | None = None,
    limiter: LoginLimiter | None = None,
    reader: Reader | None = None,
    following: Following | None = None,
) -> Starlette:
    """The console for `home` (its journal must exist: `pilot init`).

    `reader` opens a Runtime with an exchange to read (never to write) for the Policy page's room left;
    `following` reads the home's paper exchange wherever it runs at each request instead (Console.follow).
    """
    console = Console(home, clock=clock, open_reader=reader, following=following)
    if limiter is not None:
        console.limiter = limiter
    app = Starlette(routes=ROUTES, lifespan=lifespan, exception_handlers=HANDLERS)
    app.state.console = console
    app.add_middleware(Follow, console=console)
    app.add_middleware(Guard)
    return app


class Follow:
    """Before each request, the console's reader follows the home's paper exchange (Console.follow)."""

    def __init__(self, app: ASGIApp, console: Console) -> None:
        self.app, self.console = app, console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.console.follow()
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Open the console's desk (and its reader, if it has one) for as long as the app runs."""
    console: Console = app.state.console
    async with contextlib.AsyncExitStack() as stack:
        console.runtime = await stack.enter_async_context(open_desk(console.home, clock=console.clock))
        console.live = await home_kind(console.runtime.store.journal) == LIVE
        if console.open_reader is not None:
            console.reader = await stack.enter_async_context(console.open_reader())
        stack.push_async_callback(console.unfollow)
        yield
    console.runtime = console.reader = None
