"""Logging in with the home's console secret (rate limited) and logging out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.console.access import page, posted
from pilot.console.app_state import console_of
from pilot.console.login import secret_matches
from pilot.console.rendering import COOKIE, render

LANDING = "/overview"


def landing(wanted: object) -> str:
    """Where a login leads: the page that sent the visitor to log in (a path on this console, never another
    site), else the overview."""
    if not isinstance(wanted, str) or not wanted.startswith("/") or wanted.startswith(("//", "/\\")):
        return LANDING
    if len(wanted) <= 300 and all(c.isprintable() and not c.isspace() for c in wanted):
        return wanted
    return LANDING


async def login_form(request: Request) -> Response:
    return render(request, "login.html", error=None, next=landing(request.query_params.get("next")))


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
            refused = render(
                request,
                "login.html",
                429,
                error=f"too many attempts; try again in {wait} s",
                next=landing(form.get("next")),
            )
            refused.headers["retry-after"] = str(wait)
            return refused
        return render(
            request,
            "login.html",
            401,
            error="that is not this home's console secret",
            next=landing(form.get("next")),
        )
    session_id, _session = console.sessions.open()
    response = RedirectResponse(landing(form.get("next")), status_code=303)
    response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict", path="/")
    return response


@page
async def logout(request: Request) -> Response:
    await posted(request)
    console_of(request).sessions.close(request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
