"""The Policy and Charts pages in Chromium: limits and room left as the agent's get_policy values them, an
invalid policy.json's problems with their fixes, and charts drawn from the journal."""

from __future__ import annotations

import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.server import build_server
from tests.app.conftest import call, plan_and_place, write_policy

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
DESK, PHONE = {"width": 1280, "height": 860}, {"width": 390, "height": 844}


async def test_the_policy_page_shows_the_room_left_that_get_policy_computes(console, browser, paper):
    async with Client(build_server(console.runtime)) as client:
        await plan_and_place(client)
        policy = await call(client, "get_policy")
    page = await logged_in(browser, console)
    await page.goto(console.url + "/policy")
    await expect(page.locator("#policy-version")).to_have_text(policy["data"]["policy_version"])
    room = policy["data"]["markets"]["BTCUSDT"]["room"]
    row = page.locator("#room tr[data-market=BTCUSDT]")
    for side in ("buy", "sell"):
        cell = row.locator(f".room-{side}")
        await expect(cell).to_have_attribute("data-qty", room[side]["qty"])
        await expect(cell).to_have_attribute("data-limited-by", " ".join(room[side]["limited_by"]))
    await expect(page.locator("#limits tr[data-market=ETHUSDT] td").nth(1)).to_have_text("25")
    await expect(page.locator("#console-channel")).to_have_text("on")


async def test_an_invalid_policy_shows_each_problem_with_its_fix(console, browser):
    (console.home / "policy.json").write_text('{"maxNotionalUSD": 25, "confirm": {"consoleChannel": "yes"}}')
    page = await logged_in(browser, console)
    await page.goto(console.url + "/policy")
    issues = page.locator("#policy-invalid li.issue")
    await expect(issues).to_have_count(2)
    await expect(issues.filter(has_text="maxNotionalUSD")).to_contain_text("maxNotionalUsd")
    await expect(issues.filter(has_text="confirm.consoleChannel")).to_contain_text("Fix:")
    # none of the fail-closed stand-in's values is shown as if in force ("never by size", $100 caps)
    await expect(page.locator("#limits")).to_have_count(0)
    await expect(page.locator("main")).not_to_contain_text("never by size")
    await expect(page.locator("#policy-invalid")).to_contain_text("no channel outside the client is open")


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
async def test_the_charts_are_drawn_by_chart_js_from_the_journal_on_axes_a_trader_reads_right(
    console, browser, paper, viewport
):
    async with Client(build_server(console.runtime)) as client:
        await plan_and_place(client)
        await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0005"})  # refused
        await plan_and_place(client, {"symbol": "BTCUSDT", "side": "buy", "qty": "0.0001"})
    page = await logged_in(browser, console, viewport=viewport)
    await page.goto(console.url + "/charts")
    await expect(page.locator("#charts-state")).to_have_attribute("data-drawn", "yes")
    charts = await page.evaluate(
        "['chart-positions', 'chart-equity', 'chart-days'].map(id => Chart.getChart(id).data.datasets"
        ".map(set => [set.label, set.data.map(p => typeof p === 'number' ? p : p.y)]))"
    )
    positions, equity, days = charts
    assert [label for label, _ in positions] == ["BTCUSDT"]
    assert positions[0][1][0] == 0 and positions[0][1][-1] < 0  # flat before the first fill, short after
    assert len(equity[0][1]) == 3
    assert dict(days) == {"orders sent": [2], "maxNotionalUsd": [1], "maxOrderNotionalUsd": [1]}
    # fees of a few cents on $1000 do not fill the chart: the axis spans at least 1 % of the equity
    low, high = await page.evaluate(
        "[Chart.getChart('chart-equity').scales.y.min, Chart.getChart('chart-equity').scales.y.max]"
    )
    values = equity[0][1]
    assert low <= min(values) and max(values) <= high and high - low >= 0.01 * max(values)
    change = await page.locator("#equity-change").get_attribute("data-change")
    assert change is not None and float(change) == pytest.approx(values[-1] - values[0], abs=0.005)
    assert await page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]


async def test_a_policy_draft_is_checked_shown_as_a_diff_and_written_only_on_confirm(console, browser):
    kept = console.home / "kept-policy.json"  # policy.json may be a link to a file kept elsewhere
    (console.home / "policy.json").rename(kept)
    (console.home / "policy.json").symlink_to(kept)
    before = kept.read_text()
    page = await logged_in(browser, console)
    await page.goto(console.url + "/policy/edit")
    await page.fill("#draft", before.replace('"maxNotionalUsd": 25', '"maxNotionalUSD": 20'))
    await page.click("#preview-policy")
    await expect(page.locator("#draft-invalid li.issue")).to_contain_text("maxNotionalUsd")  # typo: its fix
    assert (console.home / "policy.json").read_text() == before

    await page.fill("#draft", before.replace('"maxNotionalUsd": 25', '"maxNotionalUsd": 20'))
    await page.click("#preview-policy")
    await expect(page.locator("#draft-diff pre.diff")).to_contain_text('+  "maxNotionalUsd": 20')
    assert (console.home / "policy.json").read_text() == before  # shown, not written
    await page.click("#write-policy")
    await expect(page.locator("#limits tr[data-market=ETHUSDT] td").nth(1)).to_have_text("20")
    assert console.runtime.policy().policy.max_notional_usd == 20  # what the server reads next
    assert (console.home / "policy.json").is_symlink() and '"maxNotionalUsd": 20' in kept.read_text()
    [entry] = await console.runtime.store.journal.entries(kind="policy.changed")
    assert entry.actor == "human" and entry.data["via"] == "console"
    assert entry.data["to_version"] == console.runtime.policy().version


async def test_a_draft_of_a_file_changed_meanwhile_is_not_written(console, browser):
    page = await logged_in(browser, console)
    await page.goto(console.url + "/policy/edit")
    draft = (await page.input_value("#draft")).replace('"maxNotionalUsd": 25', '"maxNotionalUsd": 20')
    await page.fill("#draft", draft)
    await page.click("#preview-policy")
    changed = (console.home / "policy.json").read_text().replace('"dailyOrderCap": 20', '"dailyOrderCap": 5')
    (console.home / "policy.json").write_text(changed)  # someone else edits the file meanwhile
    await page.click("#write-policy")
    await expect(page.locator("#edit-problem")).to_be_visible()
    assert (console.home / "policy.json").read_text() == changed


async def test_no_page_scrolls_sideways_on_a_phone(console, browser, paper):
    write_policy(console.home, confirm={"aboveNotionalUsd": 1, "consoleChannel": True})
    async with Client(build_server(console.runtime)) as client:
        plan = await call(client, "plan_order", {"symbol": "BTCUSDT", "side": "sell", "qty": "0.0001"})
        parked = await call(client, "place_order", {"plan_id": plan["plan_id"]})
    page = await logged_in(browser, console, at="/overview", viewport=PHONE)
    paths = ["/overview", "/", "/approvals", f"/approvals/{parked['confirmation_id']}", "/kill-switch"]
    for path in [*paths, "/policy", "/policy/edit", "/charts"]:
        await page.goto(console.url + path)
        assert await page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"], path
