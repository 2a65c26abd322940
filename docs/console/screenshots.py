"""Make docs/console/*.png: every console page at desktop (1280 px) and phone (390 px) width, on a paper-exchange
story.

    .venv/bin/python docs/console/screenshots.py

A real MCP client (the agent) fills a BTC short with its stop and an ETH buy without one, is refused one order,
and has one parked for a human; the console reads the same home and exchange, as `pilot console` does beside
a running `pilot serve`. Then the agent turns the kill switch on, and the Overview and the Kill switch page are
taken again (`overview-kill-switch-*.png`, `kill-switch-*.png`). Needs the OS's Chromium (as tests/console do).
tests/console/test_screenshots.py holds that every image this writes is in docs/console/ at its width.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import Client
from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pilot.app.human.desk import init_home  # noqa: E402
from pilot.app.road.clock import SystemClock  # noqa: E402
from pilot.app.runtime.runtime import Home, Runtime, assemble_runtime  # noqa: E402
from pilot.console.app import build_app  # noqa: E402
from pilot.console.login import issue_secret  # noqa: E402
from pilot.console.serving import serving  # noqa: E402
from pilot.exchange.bybit.adapter import BybitExchange  # noqa: E402
from pilot.paper import start_paper_exchange  # noqa: E402
from pilot.server import build_server  # noqa: E402
from pilot.store import open_store  # noqa: E402
from tests.scenarios import ARTICLE, ARTICLE_POLICY  # noqa: E402

OUT = Path(__file__).parent
SIZES = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
PAGES = {
    "overview": "/overview",
    "live": "/",
    "approvals": "/approvals",
    "approval": "/approvals/{parked}",
    "policy": "/policy",
    "charts": "/charts",
}
AFTER_THE_KILL_SWITCH = {"overview-kill-switch": "/overview", "kill-switch": "/kill-switch"}


async def call(client: Client, tool: str, args: dict[str, object]) -> dict[str, Any]:
    return (await client.call_tool(tool, args)).structured_content or {}


async def story(client: Client) -> str:
    """An agent's session: a short with its stop, a buy without one, a refusal, and one order parked for a
    human (its id)."""
    short = {
        "symbol": "BTCUSDT",
        "side": "sell",
        "qty": "0.0001",
        "stop_loss": "82000",
        "take_profit": "77000",
    }
    plan = await call(client, "plan_order", short)
    await call(client, "place_order", {"plan_id": plan["plan_id"]})
    plan = await call(client, "plan_order", {"symbol": "ETHUSDT", "side": "buy", "qty": "0.002"})  # no stop
    await call(client, "place_order", {"plan_id": plan["plan_id"]})
    await call(
        client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0005"}
    )  # refused: over the caps
    plan = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0002"})
    parked = await call(
        client, "place_order", {"plan_id": plan["plan_id"]}
    )  # parked: above $10 a human approves
    return str(parked["confirmation_id"])


async def shoot(url: str, secret: str, pages: dict[str, str], browser: Any) -> None:
    """Log in at each size and take each page (the phone's whole length, the desktop's first screen)."""
    for size, viewport in SIZES.items():
        context = await browser.new_context(viewport=viewport, device_scale_factor=1)
        page = await context.new_page()
        await page.goto(url + "/login")
        await page.fill("#secret", secret)
        await page.click("button[type=submit]")
        await page.wait_for_url(url + "/overview")
        for name, path in pages.items():
            await page.goto(url + path)
            if name == "live":
                await page.wait_for_selector("#live-state[data-connected=yes]")
                first_plan = page.locator("#entries li.kind-plan").first
                await first_plan.locator("summary").click()
                await first_plan.locator("article.card").wait_for()
            if name == "charts":
                await page.wait_for_selector("#charts-state[data-drawn=yes]", state="attached")
            target = OUT / f"{name}-{size}.png"
            await page.screenshot(path=str(target), full_page=size == "phone")
            print(target.relative_to(ROOT))
        await context.close()


@contextlib.asynccontextmanager
async def agent_home(folder: Path, paper: Any) -> AsyncIterator[tuple[Runtime, str]]:
    """A home with the screenshots' policy and the agent's runtime on the paper exchange, and the console's
    login secret."""
    await init_home(folder)
    policy = {
        **ARTICLE_POLICY,
        "dailyLossLimitUsd": 50,
        "confirm": {"aboveNotionalUsd": 10, "consoleChannel": True},
    }
    (folder / "policy.json").write_text(json.dumps(policy, indent=2))
    secret = issue_secret(folder)
    adapter = BybitExchange.connect(
        "paper", api_key=paper.api_key, api_secret=paper.api_secret, base_url=paper.url
    )
    store = await open_store(Home(folder).database_path)
    try:
        yield assemble_runtime(folder, store, adapter, SystemClock()), secret
    finally:
        await store.close()
        await adapter.close()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder, start_paper_exchange(ARTICLE) as paper:
        home = Path(folder)
        async with agent_home(home, paper) as (runtime, secret):

            @contextlib.asynccontextmanager
            async def reader() -> AsyncIterator[Runtime]:
                yield runtime

            async with Client(build_server(runtime)) as client:
                parked = await story(client)
            pages = {name: path.format(parked=parked) for name, path in PAGES.items()}
            async with serving(build_app(home, reader=reader)) as url, async_playwright() as playwright:
                executable = shutil.which("chromium") or shutil.which("chromium-browser")
                browser = await playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
                await shoot(url, secret, pages, browser)
                async with Client(build_server(runtime)) as client:
                    await call(client, "activate_kill_switch", {"reason": "three losses in a row: stopping"})
                await shoot(url, secret, AFTER_THE_KILL_SWITCH, browser)
                await browser.close()


if __name__ == "__main__":
    asyncio.run(main())
