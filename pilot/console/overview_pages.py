"""The Overview page: the trading state and the kill switch (turned on from here), positions with their stops
and PnL, the room left, today's loss and orders."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.console.access import page, session_of
from pilot.console.app_state import console_of
from pilot.console.overview import overview
from pilot.console.rendering import render


@page
async def overview_page(request: Request) -> Response:
    session = session_of(request)
    console = console_of(request)
    view = await overview(console.desk, console.reader)
    return render(
        request, "overview.html", session=session, view=view, reason_limit=REASON_LIMIT, tab="overview"
    )
