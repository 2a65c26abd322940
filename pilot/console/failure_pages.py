"""What a console page shows when a failure Pilot foresees stops it: the failure map's problem and fix.

`build_app` registers `failure_page` once, as Starlette's exception handler for `FORESEEN` (a human's request
that cannot be done, an exchange or journal key, Pilot's database failing), so no page catches them to
word them itself: a whole page shows the problem and the fix under the console's header, a fragment fetched
by htmx the same in one line, each with the failure's code (`data-code`) and the status it calls for. A page
that keeps the human on a form (the kill switch, a decision, a policy draft) catches a `HumanError` to show
it there, in the same words (`words`).
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ExceptionHandler

from pilot.app.answers.failures import FORESEEN, Failure, explain
from pilot.app.human.desk import HumanError
from pilot.console.app_state import console_of
from pilot.console.rendering import COOKIE, render
from pilot.core.errors import ErrorCode

log = logging.getLogger("pilot.console")

# A human's request that cannot be done is the request's fault (400) unless one of these says better.
_REQUEST_STATUS = {
    ErrorCode.UNKNOWN_ID: 404,
    ErrorCode.AMBIGUOUS_ID: 404,
    ErrorCode.CLI_CHANNEL_OFF: 403,
    ErrorCode.CONSOLE_CHANNEL_OFF: 403,
    ErrorCode.TELEGRAM_CHANNEL_OFF: 403,
    ErrorCode.TOKEN_EXISTS: 409,
    ErrorCode.POLICY_CHANGED_MEANWHILE: 409,
}
INSUFFICIENT_STORAGE, UNAVAILABLE = 507, 503


async def failure_page(request: Request, error: Exception) -> Response:
    """The page for `error`, one of FORESEEN, raised by an endpoint (see the module docstring)."""
    failure = explain(error)
    if failure is None:  # pragma: no cover - registered for FORESEEN only, each of which explain() words
        raise error
    if not isinstance(error, HumanError):  # Pilot's own trouble: its own text goes to the log, never the page
        log.warning("%s %s: %s", request.method, request.url.path, error)
    status = status_of(error, failure)
    if "hx-request" in request.headers:
        return render(request, "problem.html", status, failure=failure)
    session = console_of(request).sessions.get(request.cookies.get(COOKIE))
    return render(request, "failure.html", status, session=session, failure=failure)


def status_of(error: Exception, failure: Failure) -> int:
    """A human's request: 400, 403, 404 or 409 as it calls for; the disk full: 507; else Pilot cannot serve
    the request now (503)."""
    if isinstance(error, HumanError):
        return _REQUEST_STATUS.get(failure.code, 400)
    return INSUFFICIENT_STORAGE if failure.code is ErrorCode.STORE_FULL else UNAVAILABLE


def words(error: HumanError) -> str:
    """The problem and its fix in one line, for a page that shows them on its own form."""
    failure = explain(error)
    return f"{failure.problem}; {failure.fix}"


HANDLERS: dict[type[Exception], ExceptionHandler] = dict.fromkeys(FORESEEN, failure_page)
