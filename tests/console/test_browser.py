"""The console through the OS's Chromium: log in, watch an agent's order arrive live, approve a parked order
and see it filled, turn the kill switch on and see the next plan refused. The agent is a real MCP client on
the paper exchange; the console is a separate store connection on the same home, as `pilot console` is.

No sleeps: every wait is on a page condition with a bounded timeout.
"""

from __future__ import annotations

import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.app.answers import entry_kinds
from pilot.app.service.upkeep import upkeep
from pilot.server import build_server
from tests.app.conftest import BTC_SHORT, CREATE, call, plan_and_place, write_policy

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000  # ms: the bound on any wait (the one-second figure is measured by benchmarks/bench_console.py)


async def test_an_agents_order_appears_live_and_opens_into_its_receipt_card(console, browser, paper):
    page = await logged_in(browser, console)
    await expect(page.locator("#live-state")).to_have_attribute("data-connected", "yes", timeout=SEEN)

    async with Client(build_server(console.runtime)) as client:
        placed = await plan_and_place(client)
    assert placed["status"] == "filled"

    outcome = page.locator("#entries li.kind-order-outcome").first
    await expect(outcome.locator(".status")).to_have_text("filled", timeout=SEEN)
    plan_row = page.locator("#entries li.kind-plan").first
    await expect(plan_row.locator(".symbol")).to_have_text("BTCUSDT")
    await plan_row.locator("summary").click()
    card = plan_row.locator("article.card")
    await expect(card.locator(".card-status")).to_have_text("filled", timeout=SEEN)
    await expect(card).to_have_attribute("data-card", placed["plan_id"])

    await page.goto(console.url + "/?kind=order.outcome")  # the kind filter
    await expect(page.locator("#entries li")).to_have_count(1)
    await page.goto(console.url + "/?market=ETHUSDT")  # the market filter
    await expect(page.locator("#entries li")).to_have_count(0)


async def test_a_parked_order_approved_in_the_console_is_filled_when_the_server_runs_it(
    console, browser, paper
):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    page = await logged_in(browser, console)
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert parked["status"] == "pending_confirmation"
    confirmation_id = parked["confirmation_id"]

    await page.goto(console.url + "/approvals")
    card = page.locator(f"article.parked[data-confirmation='{confirmation_id}']")
    await expect(card).to_contain_text("0.00031")  # the server's record of the order
    await card.locator("button.approve").click()
    await expect(page.locator("#flash")).to_contain_text("Approved", timeout=SEEN)
    assert paper.request_count(CREATE) == 0  # approving sends nothing; the server does, re-checked

    async with Client(build_server(console.runtime)) as client:  # a new one appears on the open page
        plan = await call(client, "plan_order", {**BTC_SHORT, "qty": "0.0001"})
        second = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    await expect(
        page.locator(f"article.parked[data-confirmation='{second['confirmation_id']}']")
    ).to_contain_text("0.0001", timeout=SEEN)

    await upkeep(console.runtime)  # what `pilot serve` does every second
    decided = page.locator(f"ul.decided li[data-confirmation='{confirmation_id}']")
    await expect(decided.locator(".result")).to_have_text("filled", timeout=SEEN)
    await expect(decided.locator(".status")).to_have_text("executed")
    assert paper.request_count(CREATE) == 1
    record = await console.runtime.store.confirmations.get(confirmation_id)
    assert record is not None and record.decided_by == "human:console"

    await page.goto(console.url + "/?kind=plan")  # its receipt card says where the human decided
    first = page.locator("#entries li.kind-plan").last
    await first.locator("summary").click()
    card = first.locator("article.card")
    await expect(card.locator(".card-status")).to_have_text("filled", timeout=SEEN)
    await expect(card.locator(".approval")).to_have_count(
        2
    )  # parked, approved (the server's run restates it)
    await expect(card.locator(".approval").last).to_contain_text("console: approved by human")


async def test_the_console_channel_off_shows_the_fix_and_decides_nothing(console, browser, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "cliChannel": True})
    page = await logged_in(browser, console)
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    await page.goto(console.url + "/approvals")
    await expect(page.locator("#channel-off")).to_contain_text("consoleChannel")
    csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    answer = await page.request.post(
        f"{console.url}/approvals/{parked['confirmation_id']}",
        form={"csrf": csrf or "", "decision": "approve"},
        headers={"Origin": console.url},
        max_redirects=0,
    )
    assert answer.status == 303
    record = await console.runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.status == "pending"


async def test_the_kill_switch_turned_on_in_the_console_refuses_the_next_plan(console, browser, paper):
    page = await logged_in(browser, console)
    await page.goto(console.url + "/kill-switch")
    await expect(page.locator("#switch-state")).to_have_attribute("data-on", "no")
    await page.fill("input[name=reason]", "watching from my phone")
    await page.click("#turn")
    await expect(page.locator("#switch-state")).to_have_attribute("data-on", "yes", timeout=SEEN)

    async with Client(build_server(console.runtime)) as client:
        refused = await call(client, "plan_order", BTC_SHORT)
    assert refused["status"] == "refused" and refused.get("plan_id") is None
    assert [v["rule"] for v in refused["violations"]] == ["tradingState"]
    latest = await console.runtime.store.journal.latest(entry_kinds.KILL_SWITCH)
    assert latest is not None and latest.actor == "human"
    assert dict(latest.data) == {
        "on": True,
        "by": "human",
        "reason": "watching from my phone",
        "via": "console",
    }

    await page.click("#turn")  # and off again, as the human
    await expect(page.locator("#switch-state")).to_have_attribute("data-on", "no", timeout=SEEN)
    async with Client(build_server(console.runtime)) as client:
        assert (await call(client, "plan_order", BTC_SHORT))["status"] == "ok"
