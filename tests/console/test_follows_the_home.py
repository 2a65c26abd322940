"""The console follows the home's paper exchange (issue 39): started before any server, it says none runs;
once one does, it reads it; when it stops and another starts (on another port), the console reads the new one
without being restarted, in Chromium, through `pilot console`'s own way of finding it (following_home)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.app.runtime.runtime import Home
from pilot.app.service.boot import open_runtime
from pilot.cli.console import following_home
from pilot.paper import start_paper_exchange
from pilot.server import build_server
from tests.app.conftest import plan_and_place
from tests.scenarios import ARTICLE

from .conftest import logged_in, serve_console

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py


async def test_the_console_follows_the_homes_exchange_through_a_restart(console: Any, browser: Any) -> None:
    home = console.home
    state = Home(home).paper_state_path
    async with serve_console(home, following=following_home(home)) as url:
        page = await logged_in(
            browser, console.__class__(url, home, console.secret, console.runtime), at="/overview"
        )
        await expect(page.locator("#no-exchange")).to_be_visible()  # started before any server

        with start_paper_exchange(ARTICLE, state_path=state) as first:
            async with (
                open_runtime(home, paper_url=first.url, scenario=ARTICLE) as agent,
                Client(build_server(agent)) as client,
            ):
                assert (await plan_and_place(client))["status"] == "filled"
            await page.reload()
            await expect(page.locator("#positions")).to_contain_text("BTCUSDT")

        await page.reload()
        await expect(page.locator("#no-exchange")).to_be_visible()  # it stopped: the page says none runs

        with start_paper_exchange(ARTICLE, state_path=state):  # another port: the console opens it again
            await page.reload()
            await expect(page.locator("#positions")).to_contain_text("-0.00031")
            await expect(page.locator("#exchange-problem")).to_have_count(0)
