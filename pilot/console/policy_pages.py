"""The Policy page: the limits in force with the room left under each, and editing policy.json (checked,
shown as a diff, written only on confirm and only over the file the draft was made from)."""

from __future__ import annotations

import difflib
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pilot.app.human.desk import HumanError, policy_text, text_digest, write_policy
from pilot.console import limits
from pilot.console.access import page, posted, session_of
from pilot.console.app_state import console_of
from pilot.console.failure_pages import words
from pilot.console.rendering import flash, render
from pilot.core.policy import PolicyInvalid, parse_policy


@page
async def policy(request: Request) -> Response:
    session = session_of(request)
    console = console_of(request)
    view = await limits.policy_view(console.desk, console.reader)
    return render(request, "policy.html", session=session, view=view, tab="policy")


@page
async def policy_edit_form(request: Request) -> Response:
    session = session_of(request)
    text = policy_text(console_of(request).desk)
    return render(
        request, "policy_edit.html", session=session, draft=text, base=text_digest(text), tab="policy"
    )


@page
async def policy_edit(request: Request) -> Response:
    session, form = await posted(request)
    desk = console_of(request).desk
    draft, base = form.get("draft", "").replace("\r\n", "\n"), form.get("base", "")
    current = policy_text(desk)
    values: dict[str, Any] = {"session": session, "draft": draft, "base": base, "tab": "policy"}
    try:
        loaded = parse_policy(draft)
    except PolicyInvalid as invalid:
        return render(request, "policy_edit.html", 422, issues=invalid.issues, **values)
    if form.get("step") != "write":
        diff = "\n".join(
            difflib.unified_diff(
                current.splitlines(),
                draft.splitlines(),
                "policy.json (now)",
                "policy.json (draft)",
                lineterm="",
            )
        )
        return render(request, "policy_edit.html", diff=diff, version=loaded.version, **values)
    try:
        written = await write_policy(desk, draft, base_digest=base, via="console")
    except HumanError as error:
        return render(request, "policy_edit.html", 409, problem=words(error), **values)
    flash(request, f"policy.json written (journal seq {written.seq}); version {written.to_version}.")
    return RedirectResponse("/policy", status_code=303)
