"""The Agents page: each agent (pilot.app.human.agent_board: connected, its switch, its budget and what is
left, the room left to it per market, its orders and refusals today), and a switch per agent that a human
turns on or off here, as on the Kill switch page (a session, the form's CSRF token, a same-origin POST)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.app.human.agent_board import AgentBoard, MarketRoom, agent_board, set_agent_switch
from pilot.app.human.desk import HumanError
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.console.access import page, posted, session_of
from pilot.console.app_state import console_of
from pilot.console.failure_pages import words
from pilot.console.feed import Row, row_of
from pilot.console.overview import RoomLine, RoomSide
from pilot.console.rendering import flash, plain, render
from pilot.core.room import RoomNow
from pilot.core.violations import plain as number


@page
async def agents(request: Request) -> Response:
    session = session_of(request)
    console = console_of(request)
    boards = await agent_board(console.desk, console.reader)
    return render(
        request,
        "agents.html",
        session=session,
        boards=boards,
        rows={board.name: recent_rows(board) for board in boards},
        rooms={board.name: room_lines(board) for board in boards},
        read=console.reader is not None,
        limit=REASON_LIMIT,
        tab="agents",
    )


@page
async def agent_switch(request: Request) -> Response:
    _session, form = await posted(request)
    name = request.path_params["name"]
    turn = form.get("turn")
    if turn not in ("on", "off"):
        return plain(400, "turn must be on or off")
    try:
        changed = await set_agent_switch(
            console_of(request).desk, name, turn == "on", form.get("reason", ""), via="console"
        )
    except HumanError as error:
        flash(request, words(error))
    else:
        flash(request, f"{name}'s switch is {turn}" + ("" if changed else " already; nothing changed") + ".")
    back = "/overview" if form.get("back") == "overview" else "/agents"  # only these: no open redirect
    return RedirectResponse(back, status_code=303)


def recent_rows(board: AgentBoard) -> list[Row]:
    """Its orders and refusals as the Live page's rows (each opens its receipt card or its entry)."""
    return [row_of(entry) for entry in board.recent]


def room_lines(board: AgentBoard) -> list[RoomLine] | None:
    """The room left to it per market as the Overview's room rows (None: no exchange read)."""
    if board.rooms is None:
        return None
    return [_line(market) for market in board.rooms]


def _line(market: MarketRoom) -> RoomLine:
    return RoomLine(market.symbol, "", _side(market.buy), _side(market.sell), "")


def _side(judged: RoomNow | None) -> RoomSide | None:
    if judged is None:
        return None
    room, free = judged.room, judged.without_approval
    return RoomSide(
        qty=number(room.qty),
        notional_usd=f"{room.notional_usd:.2f}",
        limited_by=tuple(code.value for code in room.limited_by),
        approval_above_qty=number(free.qty) if free is not None else None,
        approval_above_usd=f"{free.notional_usd:.2f}" if free is not None else None,
    )
