"""Approval links that send the human to the console's page for one parked action: URL-mode elicitation from
the agent's own client, and the page itself (logged out, the login comes back to it). The agent is a real MCP
client on the paper exchange, the human a real Chromium.

No sleeps: every wait is on a page condition with a bounded timeout.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult
from playwright.async_api import expect

from pilot.app.answers import entry_kinds
from pilot.app.service.upkeep import upkeep
from pilot.server import build_server
from tests.app.conftest import BTC_SHORT, CREATE, call, write_policy

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000


def human_at_the_client(answer: str = "accept") -> Any:
    """The client's side of elicitation: records what it was asked, answers `answer` (never a form's data)."""
    asked: list[Any] = []

    async def callback(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action=answer)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


async def test_url_mode_sends_the_human_to_the_consoles_page_where_the_approval_is_made(
    console, browser, paper
):
    write_policy(
        console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True, "consoleUrl": console.url}
    )
    human = human_at_the_client("accept")
    async with Client(build_server(console.runtime), mode="legacy", elicitation_callback=human) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})

    assert parked["status"] == "pending_confirmation"
    [asked] = human.asked
    link = f"{console.url}/approvals/{parked['confirmation_id']}"
    assert (asked.mode, asked.url, asked.elicitation_id) == ("url", link, parked["confirmation_id"])
    assert paper.request_count(CREATE) == 0  # the client's "accept" only opened a page: nothing approved
    pushed = await console.runtime.store.journal.latest(entry_kinds.CONFIRMATION)
    assert pushed is not None and (pushed.data["event"], pushed.data["channel"]) == ("pushed", "mcp url")

    page = await logged_in(browser, console, at="/approvals/" + parked["confirmation_id"])
    card = page.locator(f"article.parked[data-confirmation='{parked['confirmation_id']}']")
    await expect(card).to_contain_text("0.00031")
    await card.locator("button.approve").click()
    await expect(page.locator("#flash")).to_contain_text("Approved", timeout=SEEN)
    assert page.url == link  # back on the action's own page
    await upkeep(console.runtime)  # what `pilot serve` does every second
    await page.reload()
    await expect(page.locator("#decided .result")).to_have_text("filled", timeout=SEEN)
    record = await console.runtime.store.confirmations.get(parked["confirmation_id"])
    assert record is not None and record.decided_by == "human:console"
    assert paper.request_count(CREATE) == 1


async def test_a_client_declining_to_open_the_page_decides_nothing(console, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(
        build_server(console.runtime), mode="legacy", elicitation_callback=human_at_the_client("decline")
    ) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    record = await console.runtime.store.confirmations.get(parked["confirmation_id"])
    assert parked["status"] == "pending_confirmation" and record is not None and record.status == "pending"
    assert "/approvals/" + parked["confirmation_id"] in parked["next_safe_action"]["human"]


async def test_without_the_console_channel_the_clients_own_form_is_asked(console, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": False})
    human = human_at_the_client("decline")
    async with Client(build_server(console.runtime), mode="legacy", elicitation_callback=human) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        declined = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert declined["status"] == "declined" and [params.mode for params in human.asked] == ["form"]


async def test_a_logged_out_visitor_of_an_actions_page_logs_in_and_comes_back_to_it(console, browser, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:  # no elicitation: parked for the console
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(f"{console.url}/approvals/{parked['confirmation_id']}")
    await page.wait_for_url("**/login?next=*")
    await page.fill("#secret", console.secret)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{console.url}/approvals/{parked['confirmation_id']}")
    await expect(page.locator("article.parked")).to_have_count(1)

    await page.goto(console.url + "/login?next=//evil.example/")  # never another site
    await page.fill("#secret", console.secret)
    await page.click("button[type=submit]")
    await page.wait_for_url(console.url + "/overview")
