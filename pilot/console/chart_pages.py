"""The Charts page: positions, equity and each day's orders and refusals, drawn by Chart.js from the journal."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pilot.console import charts
from pilot.console.access import page, session_of
from pilot.console.app_state import console_of
from pilot.console.rendering import render


@page
async def charts_page(request: Request) -> Response:
    session = session_of(request)
    console = console_of(request)
    data = await charts.chart_data(console.desk, console.reader)
    return render(
        request, "charts.html", session=session, data=data, reading=console.reader is not None, tab="charts"
    )
