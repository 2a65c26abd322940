"""A live home's receipt cards in the console (Chromium): the card says LIVE, from the journal's first entry,
and names the agent whose plan it is. The agent is a real MCP client of a named agent on the paper exchange
standing in for Bybit mainnet (tests/live/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from pilot.app.service.boot import open_runtime
from pilot.console.login import issue_secret
from pilot.paper import PaperExchange
from tests.app.conftest import call
from tests.live.conftest import live_home, mainnet, master_key_file
from tests.live.test_live_server import stopped_order, turn_on
from tests.live.test_receipts_and_phone import as_agent

from .conftest import Console, logged_in, serve_console

__all__ = ["live_home", "mainnet", "master_key_file"]
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000  # ms: the bound on any wait


async def test_a_live_homes_card_says_live_and_names_the_agent(
    live_home: Path, mainnet: PaperExchange, browser
):
    await turn_on(live_home)
    async with (
        open_runtime(live_home, exchange="bybit") as runtime,
        await as_agent(runtime, "scalper") as client,
    ):
        plan = await call(client, "plan_order", stopped_order(mainnet))
        placed = await call(client, "place_order", {"plan_id": plan["plan_id"]})
        assert placed["status"] == "filled", placed
        secret = issue_secret(live_home)
        async with serve_console(live_home) as url:
            page = await logged_in(browser, Console(url, live_home, secret, runtime), at="/")
            plan_row = page.locator("#entries li.kind-plan").first
            await plan_row.locator("summary").click()
            card = plan_row.locator("article.card")
            await expect(card).to_have_attribute("data-card", placed["plan_id"], timeout=SEEN)
            await expect(card).to_have_attribute("data-home", "live")
            await expect(card).to_have_attribute("data-agent", "scalper")
            await expect(card.locator(".card-live")).to_be_visible()
