"""What must not open or act through the console: an agent's bearer token, a POST without the CSRF token or
from another origin, a foreign Host, guessing the secret; and what must not run in it: an agent's `<script>`."""

from __future__ import annotations

import http.client
from urllib.parse import urlencode, urlsplit

import anyio
import pytest
from mcp import Client
from playwright.async_api import expect

from pilot.app.answers import entry_kinds
from pilot.app.human.desk import issue_token, kill_switch_state
from pilot.server import build_server
from tests.app.conftest import call

from .conftest import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("chromium")]  # one launch: see conftest.py
SCRIPT = "<script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"


async def test_an_agents_bearer_token_does_not_open_the_console(console, browser):
    token = await issue_token(console.runtime, "agent")
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(console.url + "/login")
    await page.fill("#secret", token)
    await page.click("button[type=submit]")
    await expect(page.locator("#login-error")).to_be_visible()
    assert page.url == console.url + "/login"

    as_bearer = await context.request.get(
        console.url + "/", headers={"Authorization": f"Bearer {token}"}, max_redirects=0
    )
    assert as_bearer.status == 303 and as_bearer.headers["location"] == "/login"
    events = await context.request.get(console.url + "/events", headers={"Authorization": f"Bearer {token}"})
    assert events.status == 401


async def test_a_post_without_the_csrf_token_or_from_another_origin_changes_nothing(console, browser):
    page = await logged_in(browser, console)
    await page.goto(console.url + "/kill-switch")
    csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    assert csrf

    missing = await page.request.post(
        console.url + "/kill-switch", form={"turn": "on"}, headers={"Origin": console.url}, max_redirects=0
    )
    wrong = await page.request.post(
        console.url + "/kill-switch",
        form={"turn": "on", "csrf": csrf + "x"},
        headers={"Origin": console.url},
        max_redirects=0,
    )
    foreign = await page.request.post(
        console.url + "/kill-switch",
        form={"turn": "on", "csrf": csrf},
        headers={"Origin": "http://evil.example"},
        max_redirects=0,
    )
    assert (missing.status, wrong.status, foreign.status) == (403, 403, 403)
    assert not (await kill_switch_state(console.runtime)).on

    done = await page.request.post(  # the same request, with the token and from the page's origin, works
        console.url + "/kill-switch",
        form={"turn": "on", "csrf": csrf},
        headers={"Origin": console.url},
        max_redirects=0,
    )
    assert done.status == 303 and (await kill_switch_state(console.runtime)).on


async def test_the_cookie_is_httponly_and_samesite_strict(console, browser):
    page = await logged_in(browser, console)
    [cookie] = await page.context.cookies()
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert await page.evaluate("document.cookie") == ""


async def plain_request(
    url: str, method: str, path: str, headers: dict[str, str], form: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    """One HTTP request with exactly these headers (Host included), outside any browser."""

    def send() -> tuple[int, dict[str, str]]:
        where = urlsplit(url)
        connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
        try:
            body = urlencode(form) if form is not None else None
            connection.putrequest(method, path, skip_host=True)
            sent = {"Host": where.netloc, **headers}
            if body is not None:
                sent["Content-Type"] = "application/x-www-form-urlencoded"
                sent["Content-Length"] = str(len(body))
            for name, value in sent.items():
                connection.putheader(name, value)
            connection.endheaders(body.encode() if body is not None else None)
            response = connection.getresponse()
            response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}
        finally:
            connection.close()

    return await anyio.to_thread.run_sync(send)


async def test_a_foreign_host_is_refused_before_anything_is_read(console):
    rebound, _ = await plain_request(console.url, "GET", "/login", {"Host": "evil.example"})
    other_port, _ = await plain_request(console.url, "GET", "/login", {"Host": "127.0.0.1:1"})
    loopback, _ = await plain_request(console.url, "GET", "/login", {})
    assert (rebound, other_port, loopback) == (400, 400, 200)


async def test_guessing_the_secret_is_rate_limited_but_the_right_secret_always_logs_in(console):
    """Issue 25: five wrong secrets from any local process locked the human out for a minute, again and
    again. The secret is 256 bits: the lockout protected nothing. Guesses are still answered 429."""
    origin = {"Origin": console.url}
    statuses = [
        (await plain_request(console.url, "POST", "/login", origin, {"secret": f"guess{n}"}))[0]
        for n in range(6)
    ]
    right, headers = await plain_request(console.url, "POST", "/login", origin, {"secret": console.secret})
    again, _ = await plain_request(console.url, "POST", "/login", origin, {"secret": "guess7"})
    assert statuses == [401] * 5 + [429]
    assert right == 303 and "pilot_console=" in headers.get("set-cookie", "")
    assert again == 429


async def test_an_agents_script_renders_as_text_and_never_runs(console, browser):
    async with Client(build_server(console.runtime)) as client:
        await call(client, "activate_kill_switch", {"reason": SCRIPT})
    await console.runtime.store.journal.append(  # an order link id and exchange text as they could come back
        entry_kinds.ORDER_OUTCOME,
        {"status": "rejected", "order": {"symbol": "BTCUSDT", "orderLinkId": SCRIPT}, "detail": SCRIPT},
        now=console.runtime.now(),
    )
    page = await logged_in(browser, console)
    rows = page.locator("#entries li")
    await expect(rows.first.locator(".summary")).to_contain_text("<script>window.pwned = 1</script>")
    await expect(rows.nth(1).locator(".summary")).to_contain_text(SCRIPT)
    await rows.first.locator("summary").click()
    await expect(rows.first.locator("pre.entry-data")).to_contain_text("<script>")
    await page.goto(console.url + "/kill-switch")
    await expect(page.locator("#switch-state .reason")).to_have_text(SCRIPT)
    assert await page.evaluate("window.pwned") is None
    assert await page.locator("main script, main img").count() == 0
