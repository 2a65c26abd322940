"""Answers the console's endpoints give: a Jinja page (autoescaped) with the session's flash, or plain text."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from pilot.console.app_state import console_of
from pilot.console.login import Session
from pilot.core.codes import Code
from pilot.core.violations import plain as plain_decimal

COOKIE = "pilot_console"
TEMPLATES = Environment(
    loader=PackageLoader("pilot.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


# What a parked order's fields are called on the page (a field that is false or absent is not shown).
TEMPLATES.globals["ORDER_LABELS"] = {
    "symbol": "market",
    "category": "category",
    "side": "side",
    "qty": "quantity",
    "order_type": "type",
    "price": "price sent",
    "time_in_force": "time in force",
    "reduce_only": "reduce-only",
    "stop_loss": "stop-loss",
    "take_profit": "take-profit",
    "leverage": "leverage",
    "order_id": "order id",
    "order_link_id": "client order id",
}


def because(code: str) -> str:
    """What a rule's code means, as docs/refusals.md's table says it (the code itself if it is not one)."""
    try:
        return Code(code).refused_because
    except ValueError:
        return code


def duration(seconds: int) -> str:
    """A countdown as a person reads it: "4 min 05 s", "42 s"."""
    minutes, rest = divmod(max(int(seconds), 0), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


TEMPLATES.filters["because"] = because
TEMPLATES.filters["duration"] = duration
TEMPLATES.filters["number"] = plain_decimal  # a Decimal as answers write it: no exponent, no trailing zeros


def render(
    request: Request, template: str, status: int = 200, *, session: Session | None = None, **values: object
) -> HTMLResponse:
    """`template` rendered with `values`; a whole page for a session also takes the flash left for it."""
    # a fragment fetched by htmx (a poll, a card) never takes the message meant for the next whole page
    whole_page = session is not None and "hx-request" not in request.headers
    flashes = console_of(request).flashes
    flash = flashes.pop(request.cookies.get(COOKIE, ""), None) if whole_page else None
    body = TEMPLATES.get_template(template).render(
        request=request,
        session=session,
        csrf=session.csrf if session else "",
        flash=flash,
        live=console_of(request).live,
        **values,
    )
    return HTMLResponse(body, status_code=status)


def flash(request: Request, text: str) -> None:
    """Leave `text` for the next whole page this request's session loads."""
    console_of(request).flashes[request.cookies.get(COOKIE, "")] = text


def plain(status: int, text: str) -> Response:
    return PlainTextResponse(text, status_code=status)
