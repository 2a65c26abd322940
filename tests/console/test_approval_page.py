"""One parked action's page on a desk (1280 px) and a phone (390 px): the decision comes first, on the first
screen, with a countdown to the expiry that ticks on the page; the order's fields follow. The agent is a real
MCP client on the paper exchange, the human a real Chromium. No sleeps: every wait is bounded on a condition.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.server import build_server
from tests.app.conftest import BTC_SHORT, call, write_policy

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000
DESK, PHONE = {"width": 1280, "height": 860}, {"width": 390, "height": 844}
TTL = 300


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
async def test_the_decision_comes_first_with_a_countdown_that_ticks(console, browser, paper, viewport):
    write_policy(
        console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True, "pendingTtlSeconds": TTL}
    )
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert parked["status"] == "pending_confirmation"

    for path in (f"/approvals/{parked['confirmation_id']}", "/approvals"):
        page = await logged_in(browser, console, at=path, viewport=viewport)
        card = page.locator(f"article.parked[data-confirmation='{parked['confirmation_id']}']")
        approve, reject = card.locator("button.approve"), card.locator("button.reject")
        fields = card.locator("dl.order-fields")
        for button in (approve, reject):
            box = await button.bounding_box()
            assert box is not None and box["y"] + box["height"] <= viewport["height"], path  # no scrolling
            fields_box = await fields.bounding_box()
            assert fields_box is not None and box["y"] < fields_box["y"], path  # before the 11 fields
        countdown = card.locator(".countdown")
        left = int(await countdown.get_attribute("data-left") or 0)
        assert 0 < left <= TTL
        await expect(countdown).not_to_have_attribute("data-left", str(left), timeout=SEEN)  # it ticks
        assert 0 < int(await countdown.get_attribute("data-left") or 0) < left
        assert await page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]


async def test_the_liquidation_is_the_plans_estimate_and_says_when_it_is_out_of_reach(
    console, browser, paper
):
    """A short's liquidation can sit over twice the mark away (1239.87 % in a newcomer's walk): the card
    gives the plan's price and distance, and says whether a move can reach it, as `pilot journal --card`
    words it (pilot.core.valuation.Liquidation), instead of a bare percentage "from mark"."""
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    assert parked["status"] == "pending_confirmation" and plan["liquidation_price"] is not None
    page = await logged_in(browser, console, at=f"/approvals/{parked['confirmation_id']}", viewport=PHONE)
    card = page.locator(f"article.parked[data-confirmation='{parked['confirmation_id']}']")
    estimate = card.locator("dd.liquidation-estimate")
    await expect(estimate).to_have_attribute("data-price", plan["liquidation_price"])
    distance = Decimal(await estimate.get_attribute("data-distance-pct") or "NaN")
    assert distance.quantize(Decimal("0.01")) == Decimal(plan["liquidation_distance_pct"])
    reach = "yes" if distance < 100 else "no"
    await expect(estimate).to_have_attribute("data-within-reach", reach)
    await expect(card.locator(".headline .liquidation")).to_have_count(1 if reach == "yes" else 0)
