"""The Overview page: positions with their stops and PnL, room left, today's loss and orders, the trading state."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pilot.console.access import page, session_of
from pilot.console.app_state import console_of
from pilot.console.overview import overview
from pilot.console.rendering import render


@page
async def overview_page(request: Request) -> Response:
    session = session_of(request)
    console = console_of(request)
    view = await overview(console.desk, console.reader)
    return render(request, "overview.html", session=session, view=view, tab="overview")
