"""The Kill switch page: whether it is on and why, and turning it on or off."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.app.human.desk import HumanError, kill_switch_state, set_kill_switch
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.console.access import page, posted, session_of
from pilot.console.app_state import console_of
from pilot.console.failure_pages import words
from pilot.console.rendering import flash, plain, render


@page
async def kill_switch(request: Request) -> Response:
    session = session_of(request)
    state = await kill_switch_state(console_of(request).desk)
    return render(
        request, "killswitch.html", session=session, state=state, limit=REASON_LIMIT, tab="kill-switch"
    )


@page
async def kill_switch_set(request: Request) -> Response:
    _session, form = await posted(request)
    turn = form.get("turn")
    if turn not in ("on", "off"):
        return plain(400, "turn must be on or off")
    try:
        change = await set_kill_switch(
            console_of(request).desk, turn == "on", form.get("reason", ""), via="console"
        )
    except HumanError as error:
        flash(request, words(error))
    else:
        flash(
            request,
            f"The kill switch is {turn}" + ("" if change.changed else " already; nothing changed") + ".",
        )
    back = "/overview" if form.get("back") == "overview" else "/kill-switch"  # only these: no open redirect
    return RedirectResponse(back, status_code=303)
