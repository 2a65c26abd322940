"""The Agents page (issue 39, item 5), in Chromium: each agent connected or not, its orders and refusals
today, its budget and what is left, the room left to it per market (as its own get_policy answers it), its
orders and refusals opening their receipts, and a switch per agent a human turns on and off here, stopping
that agent alone. The agents are real MCP client sessions on the paper exchange."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from pilot.app.answers import entry_kinds
from pilot.app.human.agent_board import set_agent_switch
from pilot.app.human.agent_desk import add_agent
from tests.app.conftest import BTC_SHORT, call, plan_and_place, write_policy
from tests.app.test_agents import stdio_like

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SMALL = {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"}  # about $6.5, inside the capped agent's $15
ETH = {"symbol": "ETHUSDT", "side": "sell", "qty": "0.002"}
PHONE = {"width": 390, "height": 844}


async def test_the_agents_page_shows_each_agent_and_a_human_stops_one_alone(console, browser):
    confirm = {"aboveNotionalUsd": 1000, "consoleChannel": True}
    budget = {"dailyOrderCap": 3, "maxNotionalUsd": 15}
    write_policy(console.home, confirm=confirm, agents={"capped": budget})
    capped = await add_agent(console.runtime, "capped", "trade")
    free = await add_agent(console.runtime, "free", "trade")
    await add_agent(console.runtime, "idle", "read")
    async with stdio_like(console.runtime, capped) as client:
        placed = await plan_and_place(client, SMALL)
        over = await call(client, "plan_order", BTC_SHORT)  # about $20: above its own $15
        own = await call(client, "get_policy")
    async with stdio_like(console.runtime, free) as client:
        await plan_and_place(client, ETH)  # another market: capped's room in BTCUSDT stays as it was told
    assert placed["status"] == "filled" and over["status"] == "refused"

    page = await logged_in(browser, console, at="/agents")
    section = page.locator("#agent-capped")
    for name, value in (
        ("orders-today", "1"),
        ("refusals-today", "1"),
        ("connected", "yes"),
        ("switch", "off"),
    ):
        await expect(section).to_have_attribute(f"data-{name}", value)
    await expect(section).to_have_attribute("data-orders-left", str(min(3 - 1, 20 - 2)))
    await expect(page.locator("#agent-idle")).to_have_attribute("data-connected", "no")
    await expect(page.locator("#agent-free")).to_have_attribute("data-refusals-today", "0")
    cap = section.locator("table.budget tr[data-key=dailyOrderCap]")
    await expect(cap).to_have_attribute("data-used", "1")
    await expect(cap).to_have_attribute("data-left", "2")
    sell = own["data"]["markets"]["BTCUSDT"]["room"]["sell"]
    cell = section.locator("table.rooms tr[data-market=BTCUSDT] .room-sell")
    await expect(cell).to_have_attribute("data-qty", sell["qty"])
    assert sell["qty"] != "0" and "maxNotionalUsd" in sell["limited_by"]  # its own $15 binds, not the $25
    await expect(cell).to_have_attribute("data-limited-by", " ".join(sell["limited_by"]))

    rows = section.locator("ol.recent > li")
    await expect(rows).to_have_count(2)  # its refused plan, its send
    await rows.nth(1).locator("summary").click()
    await expect(rows.nth(1).locator("article.card")).to_have_attribute("data-card", placed["plan_id"])

    await section.locator("input[name=reason]").fill("look at it")
    await section.locator("button.turn").click()
    await expect(page.locator("#agent-capped")).to_have_attribute("data-switch", "on")
    await expect(page.locator("#agent-free")).to_have_attribute("data-switch", "off")
    async with stdio_like(console.runtime, capped) as client:
        held = await call(client, "plan_order", SMALL)
    async with stdio_like(console.runtime, free) as client:
        passes = await call(client, "plan_order", SMALL)
    assert held["violations"][0]["held_by"][0]["source"] == "agentKillSwitch"
    assert passes["status"] == "ok"

    await page.locator("#agent-capped button.turn").click()
    await expect(page.locator("#agent-capped")).to_have_attribute("data-switch", "off")
    switched = await console.runtime.store.journal.entries(kind=entry_kinds.AGENT_SWITCH)
    assert [(e.data["agent"], e.data["on"], e.data["by"], e.data["via"], e.actor) for e in switched] == [
        ("capped", True, "human", "console", "human"),
        ("capped", False, "human", "console", "human"),
    ]
    assert switched[0].data["reason"] == "look at it"

    await page.goto(console.url + "/overview")
    glance = page.locator("#agents tr[data-agent=capped]")
    await expect(glance).to_have_attribute("data-orders-today", "1")
    await expect(glance).to_have_attribute("data-switch", "off")


async def test_an_agents_switch_without_the_csrf_token_or_from_another_origin_changes_nothing(
    console, browser
):
    await add_agent(console.runtime, "bot", "trade")
    page = await logged_in(browser, console, at="/agents")
    csrf = await page.locator("#agent-bot input[name=csrf]").get_attribute("value")
    url = console.url + "/agents/bot/switch"
    missing = await page.request.post(
        url, form={"turn": "on"}, headers={"Origin": console.url}, max_redirects=0
    )
    foreign = await page.request.post(
        url, form={"turn": "on", "csrf": csrf}, headers={"Origin": "http://evil.example"}, max_redirects=0
    )
    assert (missing.status, foreign.status) == (403, 403)
    assert await console.runtime.store.journal.entries(kind=entry_kinds.AGENT_SWITCH) == []
    done = await page.request.post(
        url, form={"turn": "on", "csrf": csrf}, headers={"Origin": console.url}, max_redirects=0
    )
    assert done.status == 303
    assert len(await console.runtime.store.journal.entries(kind=entry_kinds.AGENT_SWITCH)) == 1


async def test_the_agents_page_fits_a_phone_and_shows_no_none_or_false(console, browser):
    budget = {"dailyOrderCap": 3, "maxTurnoverUsdPerDay": 100, "markets": {"BTCUSDT": {"maxNotionalUsd": 15}}}
    write_policy(console.home, agents={"capped": budget, "planned": {"dailyOrderCap": 1}})
    capped = await add_agent(console.runtime, "capped", "trade")
    await add_agent(console.runtime, "scout", "read")
    async with stdio_like(console.runtime, capped) as client:
        await plan_and_place(client, SMALL)
    await set_agent_switch(console.runtime, "capped", True, "enough for today")
    page = await logged_in(browser, console, at="/agents", viewport=PHONE)
    await expect(page.locator("section.agent")).to_have_count(3)  # "planned" has a budget, no credential yet
    assert await page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    words = set((await page.locator("main").inner_text()).replace("·", " ").split())
    assert not {"None", "False", "True", "null"} & words, await page.locator("main").inner_text()
