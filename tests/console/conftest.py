"""Fixtures for the console: a home with the real paper exchange, the console served on 127.0.0.1, and the
OS's Chromium driven by Playwright (pointed at the executable; no browser is downloaded).

Chromium is launched once for the package and each test opens fresh contexts in it (their own cookies and
storage), closed when the test ends. The browser lives on one event loop, so the anyio backend of this
package is package-scoped too: its tests share that loop, and the rest of the suite keeps a loop per test.
The tests that drive it are in the xdist group "chromium", so one worker runs them all with one launch.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pilot.app.runtime.runtime import Runtime
from pilot.console.app import build_app
from pilot.console.login import issue_secret
from pilot.console.serving import serving
from pilot.store import open_store
from tests.app.conftest import FakeClock, clock, open_test_runtime, paper, write_policy

__all__ = ["FakeClock", "clock", "paper"]

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str:
    """The OS's Chromium; .ci/run installs it when missing."""
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no Chromium on PATH: install the OS package (apt-get install chromium), as .ci/run does")


@dataclass
class Console:
    url: str
    home: Path
    secret: str
    runtime: Runtime  # the agent's side: the runtime `pilot serve` would hold, on the paper exchange


def serve_console(home: Path, **options: Any) -> contextlib.AbstractAsyncContextManager[str]:
    """The console app for `home` served by uvicorn on a free loopback port in this event loop."""
    return serving(build_app(home, **options))


@contextlib.asynccontextmanager
async def open_console(home: Path, paper: Any, clock: FakeClock) -> AsyncIterator[Console]:
    """A home at `home` with the console served on it, and the agent's runtime on the paper exchange."""
    write_policy(home, confirm={"aboveNotionalUsd": 1000, "consoleChannel": True})
    store = await open_store(home / "journal" / "pilot.db")  # what `pilot init` creates
    await store.close()
    secret = issue_secret(home)
    async with open_test_runtime(home, paper, clock) as runtime:

        @contextlib.asynccontextmanager
        async def reader() -> AsyncIterator[Runtime]:  # the console reads the agent's paper exchange
            yield runtime

        async with serve_console(home, reader=reader) as url:
            yield Console(url=url, home=home, secret=secret, runtime=runtime)


@pytest.fixture
async def console(tmp_path: Path, paper: Any, clock: FakeClock) -> AsyncIterator[Console]:
    async with open_console(tmp_path, paper, clock) as opened:
        yield opened


@pytest.fixture(scope="package")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="package")
async def chromium() -> AsyncIterator[Any]:
    """One Chromium for the package: launching it took most of a page test's time."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield launched
        finally:
            await launched.close()


class FreshContexts:
    """The shared Chromium as one test sees it: every context it opens is new and is closed after the test."""

    def __init__(self, chromium: Any) -> None:
        self._chromium = chromium
        self._opened: list[Any] = []

    async def new_context(self, **options: Any) -> Any:
        context = await self._chromium.new_context(**options)
        self._opened.append(context)
        return context

    async def close(self) -> None:
        for context in self._opened:
            await context.close()


@pytest.fixture
async def browser(chromium: Any) -> AsyncIterator[FreshContexts]:
    contexts = FreshContexts(chromium)
    try:
        yield contexts
    finally:
        await contexts.close()


async def logged_in(
    browser: FreshContexts, console: Console, *, at: str = "/", **context_options: Any
) -> Any:
    """A new page in a new browser context, logged in to the console (which lands on the Overview); it then
    shows the page `at` (the Live page unless told)."""
    context = await browser.new_context(**context_options)
    context.set_default_timeout(10_000)
    page = await context.new_page()
    await page.goto(console.url + "/login")
    await page.fill("#secret", console.secret)
    await page.click("button[type=submit]")
    await page.wait_for_url(console.url + "/overview")
    if at != "/overview":
        await page.goto(console.url + at)
    return page
