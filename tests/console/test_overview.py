"""The console a trader reads at a glance, in Chromium at desk (1280 px) and phone (390 px) widths: the
Overview's positions with their stops, take-profit and PnL, the room left, today's loss against its limit,
orders against the daily cap and the trading state; pages without None or False; one Live row per parked
order; charts that follow fills. The agent is a real MCP client on the paper exchange.
"""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, Decimal

import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.app.answers import entry_kinds
from pilot.server import build_server
from tests.app.conftest import BTC_SHORT, call, plan_and_place, write_policy

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000
DESK, PHONE = {"width": 1280, "height": 860}, {"width": 390, "height": 844}
WITH_STOPS = {**BTC_SHORT, "stop_loss": "81000", "take_profit": "78000"}


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
async def test_the_overview_shows_positions_stops_pnl_room_loss_orders_and_state(
    console, browser, paper, viewport
):
    write_policy(
        console.home, dailyLossLimitUsd=50, confirm={"aboveNotionalUsd": 1000, "consoleChannel": True}
    )
    async with Client(build_server(console.runtime)) as client:
        placed = await plan_and_place(client, WITH_STOPS)
        policy = await call(client, "get_policy")
        positions = await call(client, "get_positions")
    assert placed["status"] == "filled", placed
    page = await logged_in(browser, console, at="/overview", viewport=viewport)

    row = page.locator("#positions tr[data-market=BTCUSDT]")
    await expect(row.locator(".size")).to_have_text("-0.00031")
    await expect(row.locator(".stop-loss")).to_contain_text("81000")
    await expect(row.locator(".take-profit")).to_have_text("78000")
    await expect(row.locator(".pnl")).not_to_have_text("—")
    [held] = [p for p in positions["data"] if p["symbol"] == "BTCUSDT"]
    for cell, figure in ((".entry", "entry_price"), (".liquidation", "liquidation_price")):
        await expect(row.locator(cell)).to_be_visible()  # on the phone too: nothing that matters is dropped
        await expect(row.locator(cell)).to_have_text(held[figure])
    await expect(row).to_have_attribute("data-protected", "yes")
    room = policy["data"]["markets"]["ETHUSDT"]["room"]
    buy = page.locator("#rooms tr[data-market=ETHUSDT] .room-buy")
    await expect(buy).to_have_attribute("data-qty", room["buy"]["qty"])
    await expect(buy).to_contain_text(room["buy"]["qty"])
    await expect(buy).to_have_attribute("data-limited-by", " ".join(room["buy"]["limited_by"]))
    await expect(page.locator("#orders-today")).to_have_attribute("data-sent", "1")
    await expect(page.locator("#orders-today")).to_have_text("1 of 20")
    await expect(page.locator("#day-loss")).to_contain_text("of $50")
    await expect(page.locator("#trading-state")).to_have_attribute("data-state", "active")
    assert (
        await page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
    )  # nothing sideways

    async with Client(build_server(console.runtime)) as client:
        await call(client, "activate_kill_switch", {"reason": "enough"})
    await page.reload()
    await expect(page.locator("#trading-state")).to_have_attribute("data-state", "reducing")
    await expect(page.locator("#trading-state")).to_contain_text("kill switch on")
    await expect(page.locator("#kill-switch")).to_have_attribute("data-by", "agent")
    await expect(page.locator("#kill-switch .reason")).to_have_text("enough")  # why, in the agent's words


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
async def test_the_kill_switch_turned_on_from_the_overview_leaves_only_the_room_that_shrinks(
    console, browser, paper, viewport
):
    async with Client(build_server(console.runtime)) as client:
        await plan_and_place(client)  # a BTC short: buying it back only shrinks it
    page = await logged_in(browser, console, at="/overview", viewport=viewport)
    switch = page.locator("#kill-switch")
    await expect(switch).to_have_attribute("data-on", "no")
    await expect(page.locator("#rooms tr[data-market=ETHUSDT] .room-buy")).not_to_have_attribute(
        "data-qty", "0"
    )

    await switch.locator("input[name=reason]").fill("leaving for the day")
    await page.click("#kill-switch-on")
    await page.wait_for_url(console.url + "/overview")
    await expect(switch).to_have_attribute("data-on", "yes")
    await expect(switch).to_have_attribute("data-by", "human")
    await expect(switch.locator(".reason")).to_have_text("leaving for the day")
    await expect(switch.locator("time")).to_have_count(1)
    await expect(switch.locator("button")).to_have_count(0)  # off is the Kill switch page's, a human's only
    await expect(page.locator("#turn-off-link")).to_have_attribute("href", "/kill-switch")
    eth, btc = (page.locator(f"#rooms tr[data-market={symbol}]") for symbol in ("ETHUSDT", "BTCUSDT"))
    for side in (eth.locator(".room-buy"), eth.locator(".room-sell"), btc.locator(".room-sell")):
        await expect(side).to_have_attribute("data-qty", "0")
        await expect(side).to_have_attribute("data-limited-by", re.compile(r"^tradingState\b"))
    await expect(btc.locator(".room-buy")).to_have_attribute("data-qty", "0.00031")  # closing the short
    assert await page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
async def test_a_position_without_a_stop_is_marked_and_the_room_says_what_needs_approval(
    console, browser, paper, viewport
):
    write_policy(console.home, confirm={"aboveNotionalUsd": 10, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:
        await plan_and_place(client, {**BTC_SHORT, "qty": "0.0001"})  # $8: under the threshold, no stop
        policy = await call(client, "get_policy")
    page = await logged_in(browser, console, at="/overview", viewport=viewport)

    row = page.locator("#positions tr[data-market=BTCUSDT]")
    await expect(row).to_have_attribute("data-protected", "no")
    await expect(row.locator(".no-stop")).to_be_visible()
    free = policy["data"]["markets"]["ETHUSDT"]["room"]["buy"]["without_approval"]
    buy = page.locator("#rooms tr[data-market=ETHUSDT] .room-buy")
    await expect(buy).to_have_attribute("data-approval-above", free["qty"])
    await expect(buy.locator(".needs-approval")).to_contain_text(free["qty"])


async def test_without_an_exchange_the_overview_says_how_to_get_positions(tmp_path, console, browser):
    from .conftest import serve_console

    async with serve_console(console.home) as url:
        page = await logged_in(
            browser, console.__class__(url, console.home, console.secret, console.runtime), at="/overview"
        )
        await expect(page.locator("#no-exchange")).to_contain_text("--exchange")
        await expect(page.locator("#orders-today")).to_have_text("0 of 20")


async def test_no_page_shows_none_or_false(console, browser, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:
        await call(client, "plan_order", {"symbol": "BTCUSD", "side": "buy", "qty": "0.001"})  # no facts read
        plan = await call(client, "plan_order", BTC_SHORT)
        await call(client, "place_order", {"plan_id": plan["plan_id"]})  # parked
    page = await logged_in(browser, console)
    for row in await page.locator("#entries li.kind-plan summary").all():
        await row.click()
    await expect(page.locator("#entries article.card")).to_have_count(2, timeout=SEEN)
    texts = [await page.locator("main").inner_text()]
    for path in ("/approvals", "/overview", "/policy"):
        await page.goto(console.url + path)
        texts.append(await page.locator("main").inner_text())
    for text in texts:
        words = set(text.replace("·", " ").split())
        assert not {"None", "False", "True", "null"} & words, text


async def test_a_parked_order_is_one_row_on_the_live_page_as_it_arrives_and_after_a_reload(
    console, browser, paper
):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    page = await logged_in(browser, console)
    await expect(page.locator("#live-state")).to_have_attribute("data-connected", "yes", timeout=SEEN)
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", BTC_SHORT)
        await call(client, "place_order", {"plan_id": plan["plan_id"]})
    parking = page.locator(f"#entries li[data-event='parked:{plan['plan_id']}']")
    await expect(page.locator("#entries li")).to_have_count(2, timeout=SEEN)  # the plan and its parking
    await expect(parking).to_have_count(1)
    await page.reload()
    await expect(parking).to_have_count(1)
    await expect(parking.locator(".also")).to_contain_text("#")  # the rows that restate it, named


async def test_the_position_chart_follows_each_fill_with_shorts_below_zero(console, browser, paper):
    async with Client(build_server(console.runtime)) as client:
        for _ in range(2):  # two buys of 0.002 ETH: the position is 0.004 ETH after the second fill
            await plan_and_place(client, {"symbol": "ETHUSDT", "side": "buy", "qty": "0.002"})
        await plan_and_place(client)  # a BTC short from flat
    page = await logged_in(browser, console, at="/charts")
    await expect(page.locator("#charts-state")).to_have_attribute("data-drawn", "yes")
    series = dict(
        await page.evaluate(
            "Chart.getChart('chart-positions').data.datasets.map(set => [set.label, set.data.map(p => p.y)])"
        )
    )
    assert series["ETHUSDT"][0] == 0 and series["ETHUSDT"][-1] == pytest.approx(0.004 * 3100, rel=0.01)
    assert series["BTCUSDT"][0] == 0 and series["BTCUSDT"][-1] == pytest.approx(-0.00031 * 80220, rel=0.01)


async def test_the_overview_shows_what_spot_lost_of_the_day_and_what_is_counted(console, browser, paper):
    write_policy(console.home, dailyLossLimitUsd=50, maxNotionalUsd=200, maxOrderNotionalUsd=200)
    spot = {"symbol": "BTCUSDT", "category": "spot"}
    async with Client(build_server(console.runtime)) as client:
        assert (await plan_and_place(client, {**spot, "side": "buy", "qty": "0.001"}))["status"] == "filled"
        paper.set_prices("BTCUSDT", bid="78300", ask="78300.1", mark="78300")  # a round trip's loss
        held = paper.balance("BTC").quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
        assert (await plan_and_place(client, {**spot, "side": "sell", "qty": str(held)}))[
            "status"
        ] == "filled"
        day = (await call(client, "get_policy"))["data"]["loss_rules"]["day_loss"]
    assert Decimal(day["spot_realised_pnl_usd"]) < 0
    page = await logged_in(browser, console, at="/overview")
    await expect(page.locator("#day-loss-spot-realised")).to_have_text(day["spot_realised_pnl_usd"])
    await expect(page.locator("#day-loss-counted")).to_have_text(day["counted"])


async def test_the_overview_says_when_the_private_stream_is_down_and_why(console, browser):
    """As `pilot serve` journals the streams' trouble (pilot.app.service.boot.journal_stream_troubles)."""
    journal, now = console.runtime.store.journal, console.runtime.clock.now()
    down = {"channel": "private", "state": "down", "reason": "the connection ended"}
    await journal.append(entry_kinds.STREAM_STATE, down, now=now, actor="pilot", durable=False)
    unreadable = {"channel": "private", "topic": "position", "count": 2}
    await journal.append(entry_kinds.STREAM_UNREADABLE, unreadable, now=now, actor="pilot", durable=False)
    page = await logged_in(browser, console, at="/overview")
    await expect(page.locator("#stream-trouble-1")).to_contain_text("the connection ended")
    await expect(page.locator("#stream-trouble-2")).to_contain_text("position")
    up = {"channel": "private", "state": "up"}
    await journal.append(entry_kinds.STREAM_STATE, up, now=now, actor="pilot", durable=False)
    await page.reload()
    await expect(page.locator("#stream-trouble-1")).to_contain_text("position")  # the down line is gone
    await expect(page.locator(".stream-trouble")).to_have_count(1)
