"""The Live page: the journal's entries newest first, paged and filtered, new ones streamed as server-sent
events, and the receipt card or raw entry behind a row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pilot.console import feed
from pilot.console.access import page, session_of
from pilot.console.app_state import Console, console_of
from pilot.console.rendering import COOKIE, TEMPLATES, render

POLL_SECONDS = 0.2


@page
async def live(request: Request) -> Response:
    session = session_of(request)
    desk = console_of(request).desk
    filters = feed.Filters.of(request.query_params)
    before_text = request.query_params.get("before", "")
    before = int(before_text) if before_text.isdigit() else None
    rows, older = await feed.page(desk, filters, before)
    top = await feed.newest_seq(desk)
    return render(
        request,
        "live.html",
        session=session,
        rows=rows,
        filters=filters,
        older=urlencode({**filters.query(), "before": older}) if older else None,
        searched=older,
        page_size=feed.PAGE,
        paged=before is not None,
        top=top,
        events="/events?" + urlencode(filters.query()),
        tab="live",
    )


@page
async def events(request: Request) -> Response:
    session_of(request)
    console = console_of(request)
    filters = feed.Filters.of(request.query_params)
    resume = request.headers.get("last-event-id") or request.query_params.get("after", "")
    after = int(resume) if resume.isdigit() else await feed.newest_seq(console.desk)
    return StreamingResponse(
        _entries(console, request.cookies.get(COOKIE), filters, after),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},
    )


async def _entries(
    console: Console, session_id: str | None, filters: feed.Filters, after: int
) -> AsyncIterator[str]:
    """The entries after `after` that match `filters` as events, until the session is closed."""
    row_template = TEMPLATES.get_template("row.html")
    last = after
    yield "retry: 1000\n\n"
    while True:
        if console.sessions.get(session_id) is None:
            return
        for row in await feed.since(console.desk, last):
            last = row.seq
            if feed.matches(row, filters):
                html = row_template.render(row=row).replace("\n", " ")
                yield f"id: {row.seq}\nevent: entry\ndata: {html}\n\n"
        await asyncio.sleep(POLL_SECONDS)


@page
async def card(request: Request) -> Response:
    session_of(request)
    name = request.path_params["card"]
    found = await feed.card_for(console_of(request).desk, name)  # none: 404 (console.failure_pages)
    return render(request, "card.html", card=found)


@page
async def entry(request: Request) -> Response:
    session_of(request)
    text = await feed.entry_json(console_of(request).desk, int(request.path_params["seq"]))
    if text is None:
        return render(request, "problem.html", 404, problem="no such entry", fix="reload the page")
    return render(request, "entry.html", text=text)
