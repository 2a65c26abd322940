"""The console's web app: Starlette, server-rendered Jinja pages (autoescaped), htmx and Chart.js from the package.

Every request passes `Guard` first: the Host must be this server on loopback (a DNS-rebinding page cannot
talk to it), and a POST must come from this origin. Every page but /login needs a session (cookie HttpOnly,
SameSite=Strict), and every POST needs the session's CSRF token. An agent's bearer token is never read.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pilot.app.human.desk import (
    HumanError,
    decide,
    kill_switch_state,
    open_desk,
    policy_text,
    set_kill_switch,
    text_digest,
    write_policy,
)
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.app.runtime.clock import Clock
from pilot.app.runtime.runtime import Runtime
from pilot.console import charts, desk, feed, limits
from pilot.console.login import LoginLimiter, Session, Sessions, csrf_matches, secret_matches
from pilot.core.policy import PolicyInvalid, parse_policy

COOKIE = "pilot_console"
STATIC = Path(__file__).parent / "static"
POLL_SECONDS = 0.2
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
LOOPBACK_NAMES = {"localhost"}


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        name, _, port = value.partition(":")
    return name.lower(), int(port) if port.isdigit() else None


class Guard:
    """Host on loopback and equal to this server's port; a same-origin Origin on anything but GET/HEAD."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        host = headers.get("host", "")
        name, port = _split_host(host)
        server_port = (scope.get("server") or (None, None))[1]
        if not _loopback(name) or (server_port is not None and port != server_port):
            await _plain(400, "this console answers only on its loopback address")(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD") and headers.get("origin") != f"http://{host}":
            await _plain(403, "a request from another origin is refused")(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)


def _plain(status: int, text: str) -> Response:
    return PlainTextResponse(text, status_code=status)


@dataclass
class Console:
    """The console's state: the home, its desk (a Runtime without an exchange), sessions and limits."""

    home: Path
    clock: Clock | None = None
    sessions: Sessions = field(init=False)
    limiter: LoginLimiter = field(default_factory=LoginLimiter)
    runtime: Runtime | None = None
    reader: Runtime | None = None
    flashes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.home)

    @property
    def desk(self) -> Runtime:
        assert self.runtime is not None, "the console's desk opens with the app"
        return self.runtime


TEMPLATES = Environment(
    loader=PackageLoader("pilot.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


class NotLoggedIn(Exception):
    pass


Reader = Callable[[], contextlib.AbstractAsyncContextManager[Runtime]]


def build_app(
    home: Path,
    *,
    clock: Clock | None = None,
    limiter: LoginLimiter | None = None,
    reader: Reader | None = None,
) -> Starlette:
    """The console for `home` (its journal must exist: `pilot init`).

    `reader` opens a Runtime with an exchange to read (never to write) for the Policy page's room left.
    """
    console = Console(home, clock=clock)
    if limiter is not None:
        console.limiter = limiter

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            console.runtime = await stack.enter_async_context(open_desk(home, clock=clock))
            if reader is not None:
                console.reader = await stack.enter_async_context(reader())
            yield
        console.runtime = console.reader = None

    def render(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        session: Session | None = values.pop("session", None)
        # a fragment fetched by htmx (a poll, a card) never takes the message meant for the next whole page
        whole_page = session is not None and "hx-request" not in request.headers
        flash = console.flashes.pop(request.cookies.get(COOKIE, ""), None) if whole_page else None
        body = TEMPLATES.get_template(template).render(
            request=request, session=session, csrf=session.csrf if session else "", flash=flash, **values
        )
        return HTMLResponse(body, status_code=status)

    def session_of(request: Request) -> Session:
        session = console.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            raise NotLoggedIn
        return session

    async def posted(request: Request) -> tuple[Session, dict[str, str]]:
        """The session and form of a POST whose CSRF token matches; NotLoggedIn or PermissionError otherwise."""
        session = session_of(request)
        form = await request.form()
        values = {key: value for key, value in form.items() if isinstance(value, str)}
        given = request.headers.get("x-csrf-token") or values.get("csrf")
        if not csrf_matches(session, given):
            raise PermissionError
        return session, values

    def flash(request: Request, text: str) -> None:
        console.flashes[request.cookies.get(COOKIE, "")] = text

    def page(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except NotLoggedIn:
                fragment = "hx-request" in request.headers or request.url.path == "/events"
                if request.method == "GET" and not fragment:
                    return RedirectResponse("/login", status_code=303)
                return _plain(401, "log in first")
            except PermissionError:
                return _plain(403, "the form's CSRF token is missing or wrong; reload the page")

        return guarded

    # --- login ---------------------------------------------------------------------------------------

    async def login_form(request: Request) -> Response:
        return render(request, "login.html", error=None)

    async def login(request: Request) -> Response:
        wait = console.limiter.retry_after()
        if wait:
            refused = render(request, "login.html", 429, error=f"too many attempts; try again in {wait} s")
            refused.headers["retry-after"] = str(wait)
            return refused
        form = await request.form()
        given = form.get("secret")
        if not isinstance(given, str) or not secret_matches(home, given.strip()):
            console.limiter.failed()
            return render(request, "login.html", 401, error="that is not this home's console secret")
        session_id, _session = console.sessions.open()
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict", path="/")
        return response

    @page
    async def logout(request: Request) -> Response:
        await posted(request)
        console.sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # --- live -------------------------------------------------------------------------------------------

    @page
    async def live(request: Request) -> Response:
        session = session_of(request)
        filters = feed.Filters.of(request.query_params)
        before_text = request.query_params.get("before", "")
        before = int(before_text) if before_text.isdigit() else None
        rows, older = await feed.page(console.desk, filters, before)
        top = await feed.newest_seq(console.desk)
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
        filters = feed.Filters.of(request.query_params)
        resume = request.headers.get("last-event-id") or request.query_params.get("after", "")
        after = int(resume) if resume.isdigit() else await feed.newest_seq(console.desk)
        row_template = TEMPLATES.get_template("row.html")

        async def stream() -> AsyncIterator[str]:
            last = after
            yield "retry: 1000\n\n"
            while True:
                if console.sessions.get(request.cookies.get(COOKIE)) is None:
                    return
                for row in await feed.since(console.desk, last):
                    last = row.seq
                    if feed.matches(row, filters):
                        html = row_template.render(row=row).replace("\n", " ")
                        yield f"id: {row.seq}\nevent: entry\ndata: {html}\n\n"
                await asyncio.sleep(POLL_SECONDS)

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )

    @page
    async def card(request: Request) -> Response:
        session_of(request)
        name = request.path_params["card"]
        try:
            found = await feed.card_for(console.desk, name)
        except HumanError as error:
            return render(request, "problem.html", 404, problem=error.problem, fix=error.fix)
        return render(request, "card.html", card=found)

    @page
    async def entry(request: Request) -> Response:
        session_of(request)
        text = await feed.entry_json(console.desk, int(request.path_params["seq"]))
        if text is None:
            return render(request, "problem.html", 404, problem="no such entry", fix="reload the page")
        return render(request, "entry.html", text=text)

    # --- approvals --------------------------------------------------------------------------------------

    @page
    async def approvals(request: Request) -> Response:
        session = session_of(request)
        view = await desk.approvals(console.desk)
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
    async def approvals_decide(request: Request) -> Response:
        _session, form = await posted(request)
        confirmation_id = request.path_params["confirmation_id"]
        decision = form.get("decision")
        if decision not in ("approve", "reject"):
            return _plain(400, "decision must be approve or reject")
        try:
            decided = await decide(
                console.desk, confirmation_id, approve=decision == "approve", via="console"
            )
        except HumanError as error:
            flash(request, f"{error.problem}; {error.fix}")
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
        return RedirectResponse("/approvals", status_code=303)

    # --- kill switch ------------------------------------------------------------------------------------

    @page
    async def kill_switch(request: Request) -> Response:
        session = session_of(request)
        state = await kill_switch_state(console.desk)
        return render(
            request, "killswitch.html", session=session, state=state, limit=REASON_LIMIT, tab="kill-switch"
        )

    @page
    async def kill_switch_set(request: Request) -> Response:
        _session, form = await posted(request)
        turn = form.get("turn")
        if turn not in ("on", "off"):
            return _plain(400, "turn must be on or off")
        try:
            change = await set_kill_switch(console.desk, turn == "on", form.get("reason", ""), via="console")
        except HumanError as error:
            flash(request, f"{error.problem}; {error.fix}")
        else:
            flash(
                request,
                f"The kill switch is {turn}" + ("" if change.changed else " already; nothing changed") + ".",
            )
        return RedirectResponse("/kill-switch", status_code=303)

    # --- policy and charts ----------------------------------------------------------------------------

    @page
    async def policy(request: Request) -> Response:
        session = session_of(request)
        view = await limits.policy_view(console.desk, console.reader)
        return render(request, "policy.html", session=session, view=view, tab="policy")

    @page
    async def charts_page(request: Request) -> Response:
        session = session_of(request)
        data = await charts.chart_data(console.desk)
        return render(request, "charts.html", session=session, data=data, tab="charts")

    @page
    async def policy_edit_form(request: Request) -> Response:
        session = session_of(request)
        text = policy_text(console.desk)
        return render(
            request, "policy_edit.html", session=session, draft=text, base=text_digest(text), tab="policy"
        )

    @page
    async def policy_edit(request: Request) -> Response:
        session, form = await posted(request)
        draft, base = form.get("draft", "").replace("\r\n", "\n"), form.get("base", "")
        current = policy_text(console.desk)
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
            written = await write_policy(console.desk, draft, base_digest=base, via="console")
        except HumanError as error:
            return render(request, "policy_edit.html", 409, problem=f"{error.problem}; {error.fix}", **values)
        flash(request, f"policy.json written (journal seq {written.seq}); version {written.to_version}.")
        return RedirectResponse("/policy", status_code=303)

    routes = [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", live, methods=["GET"]),
        Route("/events", events, methods=["GET"]),
        Route("/card/{card}", card, methods=["GET"]),
        Route("/entry/{seq:int}", entry, methods=["GET"]),
        Route("/approvals", approvals, methods=["GET"]),
        Route("/approvals/{confirmation_id}", approvals_decide, methods=["POST"]),
        Route("/kill-switch", kill_switch, methods=["GET"]),
        Route("/kill-switch", kill_switch_set, methods=["POST"]),
        Route("/policy", policy, methods=["GET"]),
        Route("/policy/edit", policy_edit_form, methods=["GET"]),
        Route("/policy/edit", policy_edit, methods=["POST"]),
        Route("/charts", charts_page, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.console = console
    app.add_middleware(Guard)
    return app
