"""Logging in with the home's console secret (rate limited) and logging out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.console.access import page, posted
from pilot.console.app_state import console_of
from pilot.console.login import secret_matches
from pilot.console.rendering import COOKIE, render


async def login_form(request: Request) -> Response:
    return render(request, "login.html", error=None)


async def login(request: Request) -> Response:
    """The right secret always logs in: it is 256 bits, so guessing is hopeless and a lockout would only let
    any local process lock the human out. Wrong ones are rate limited (429 past the limit), to keep a
    guessing loop from costing anything."""
    console = console_of(request)
    form = await request.form()
    given = form.get("secret")
    if not isinstance(given, str) or not secret_matches(console.home, given.strip()):
        wait = console.limiter.retry_after()
        console.limiter.failed()
        if wait:
            refused = render(request, "login.html", 429, error=f"too many attempts; try again in {wait} s")
            refused.headers["retry-after"] = str(wait)
            return refused
        return render(request, "login.html", 401, error="that is not this home's console secret")
    session_id, _session = console.sessions.open()
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict", path="/")
    return response


@page
async def logout(request: Request) -> Response:
    await posted(request)
    console_of(request).sessions.close(request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
