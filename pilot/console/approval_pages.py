"""The Approvals page: parked confirmations and recent decisions (parts polled by htmx), and a decision."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.app.human.desk import HumanError, decide
from pilot.console import decisions
from pilot.console.access import page, posted, session_of
from pilot.console.app_state import console_of
from pilot.console.failure_pages import words
from pilot.console.rendering import flash, plain, render


@page
async def approvals(request: Request) -> Response:
    session = session_of(request)
    view = await decisions.approvals(console_of(request).desk)
    part = request.query_params.get("part")
    if part not in ("pending", "decided") or "hx-request" not in request.headers:
        return render(request, "approvals.html", session=session, view=view, tab="approvals")
    if view.channel_off is not None:
        return Response(status_code=200, headers={"hx-refresh": "true"})  # the whole page says why
    digest = view.pending_digest if part == "pending" else view.decided_digest
    if request.query_params.get("shown") == digest:
        return Response(status_code=204)  # nothing changed: htmx leaves the part as it is
    return render(request, f"approvals_{part}.html", session=session, view=view)


@page
async def approval(request: Request) -> Response:
    """One parked action's own page: the place approval links (URL-mode elicitation, ntfy, Telegram) open."""
    session = session_of(request)
    view = await decisions.one(console_of(request).desk, request.path_params["confirmation_id"])
    status = 200 if view.parked or view.decided else 404
    return render(
        request,
        "approval.html",
        status,
        session=session,
        channel_off=view.channel_off,
        parked=view.parked,
        decided=view.decided,
        now=view.now,
        tab="approvals",
    )


@page
async def approvals_decide(request: Request) -> Response:
    _session, form = await posted(request)
    confirmation_id = request.path_params["confirmation_id"]
    decision = form.get("decision")
    if decision not in ("approve", "reject"):
        return plain(400, "decision must be approve or reject")
    try:
        decided = await decide(
            console_of(request).desk, confirmation_id, approve=decision == "approve", via="console"
        )
    except HumanError as error:
        flash(request, words(error))
    else:
        if decided.record is None:
            flash(request, f"{confirmation_id} expired or was decided meanwhile; nothing changed")
        elif decision == "approve":
            flash(
                request,
                f"Approved (journal seq {decided.seq}). The running server carries it out, "
                "re-checked against the policy then.",
            )
        else:
            flash(request, f"Rejected (journal seq {decided.seq}). It will not run.")
    if form.get("back") == "one":
        return RedirectResponse(f"/approvals/{quote(confirmation_id, safe='')}", status_code=303)
    return RedirectResponse("/approvals", status_code=303)
