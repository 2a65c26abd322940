"""Who may use a console endpoint: a session by its cookie, and on a POST the session's CSRF token.

An endpoint wrapped in `page` calls `session_of` or `posted`; a request that fails them gets the login page
(a whole page's GET), 401 (a fragment, the event stream, a POST) or 403 (a missing or wrong CSRF token).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.console.app_state import console_of
from pilot.console.login import Session, csrf_matches
from pilot.console.rendering import COOKIE, plain

Endpoint = Callable[[Request], Awaitable[Response]]


class NotLoggedIn(Exception):
    pass


def session_of(request: Request) -> Session:
    """The request's session; NotLoggedIn without one."""
    session = console_of(request).sessions.get(request.cookies.get(COOKIE))
    if session is None:
        raise NotLoggedIn
    return session


async def posted(request: Request) -> tuple[Session, dict[str, str]]:
    """The session and form of a POST whose CSRF token matches; NotLoggedIn or PermissionError otherwise."""
    session = session_of(request)
    form = await request.form()
    values = {key: value for key, value in form.items() if isinstance(value, str)}
    given = request.headers.get("x-csrf-token") or values.get("csrf")
    if not csrf_matches(session, given):
        raise PermissionError
    return session, values


def page(handler: Endpoint) -> Endpoint:
    """`handler` with NotLoggedIn and PermissionError answered as a refused request."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except NotLoggedIn:
            fragment = "hx-request" in request.headers or request.url.path == "/events"
            if request.method == "GET" and not fragment:
                wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                back = "" if wanted == "/" else "?" + urlencode({"next": wanted})
                return RedirectResponse("/login" + back, status_code=303)  # and back here once logged in
            return plain(401, "log in first")
        except PermissionError:
            return plain(403, "the form's CSRF token is missing or wrong; reload the page")

    return guarded
