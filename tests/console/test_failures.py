"""A failure under a console page, in a real Chromium: the page shows the failure's code, the problem and the
fix, with the status it calls for, and never a bare 500.

Pilot's database fails for real: the home lives on a small tmpfs (tests/full_disk.py) that is filled while the
page is open, so the next write on it gets ENOSPC from the kernel.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import expect

from pilot.app.human.desk import kill_switch_state
from tests.full_disk import Disk

from .conftest import Console, FakeClock, logged_in, open_console

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SEEN = 5_000  # ms: the bound on any wait


@pytest.fixture
async def console_on_disk(disk: Disk, paper: Any, clock: FakeClock) -> AsyncIterator[Console]:
    home = disk.path / "home"
    home.mkdir()
    async with open_console(home, paper, clock) as console:
        yield console


async def test_a_full_disk_under_a_page_shows_the_fix_and_the_fixed_disk_lets_it_work(
    console_on_disk, browser, disk
):
    console = console_on_disk
    page = await logged_in(browser, console, at="/kill-switch")
    await expect(page.locator("#switch-state")).to_have_attribute("data-on", "no")
    await page.fill("input[name=reason]", "watching from my phone")
    disk.fill()
    try:
        async with page.expect_response(lambda response: response.request.method == "POST") as posted:
            await page.click("#turn")
        assert (await posted.value).status == 507  # Insufficient Storage: the disk, not the request
        failure = page.locator("#failure")
        await expect(failure).to_have_attribute("data-code", "store_full", timeout=SEEN)
        await expect(failure.locator(".fix")).not_to_be_empty()
        await expect(page.locator("header nav")).to_be_visible()  # still the console, logged in
    finally:
        disk.free()
    assert not (await kill_switch_state(console.runtime)).on  # nothing was recorded, so nothing changed

    await page.goto(console.url + "/kill-switch")  # the fix done, the same request works
    await page.fill("input[name=reason]", "watching from my phone")
    await page.click("#turn")
    await expect(page.locator("#switch-state")).to_have_attribute("data-on", "yes", timeout=SEEN)


async def test_a_request_a_human_cannot_make_shows_its_code_and_fix_on_a_page_of_its_own(console, browser):
    page = await logged_in(browser, console)
    answer = await page.goto(console.url + "/card/no-such-plan")
    assert answer is not None and answer.status == 404
    failure = page.locator("#failure")
    await expect(failure).to_have_attribute("data-code", "unknown_id")
    await expect(failure.locator(".fix")).not_to_be_empty()
