"""The Overview page: the trading state and the kill switch (turned on from here), positions with their stops
and PnL, the room left, today's loss and orders, and each agent at a glance (the Agents page has the rest)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pilot.app.human.agent_board import agent_board
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
    agents = await agent_board(console.desk)  # the journal's and the store's say only: no exchange read
    return render(
        request,
        "overview.html",
        session=session,
        view=view,
        agents=agents,
        reason_limit=REASON_LIMIT,
        tab="overview",
    )
