"""Streamable HTTP: bearer tokens required, Host and Origin checked against loopback (and the chosen host).

A host other than loopback is refused unless the caller allows it (`pilot serve --allow-remote`): tokens
and orders would cross the network in clear text, so TLS belongs in front (docs/threat-model.md). Client
sessions idle for `session_idle_seconds` are forgotten by the SDK's session manager. A client that goes away
before its request has fully arrived is one log line, not a traceback (`WholeRequests`).

Tokens are Pilot's own (`pilot token issue`, stored hashed), checked by `BearerTokens` in front of the MCP
app. Pilot serves no OAuth: a refused request gets 401 with `WWW-Authenticate: Bearer realm="pilot"` and a
body naming `pilot token issue`, never a pointer to OAuth metadata for an authorization server that does not
exist. Each request is one access line at most (`AccessLog`, logger `pilot.access`; `pilot serve --quiet`
turns it off).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import time
from collections import OrderedDict
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pilot.app.answers.store_faults import StoreError
from pilot.app.runtime.runtime import Holder, Runtime
from pilot.server.build import build_server
from pilot.server.callers import HOLDER_STATE
from pilot.server.middleware import CLIENT_STATE

DEFAULT_SESSION_IDLE_SECONDS = 300
MAX_SESSIONS = 10_000  # sessions remembered with the token that opened them
log = logging.getLogger("pilot.server.http")
access = logging.getLogger("pilot.access")
_CLIENT = CLIENT_STATE  # scope["state"] keys: the token's name, and the JSON-RPC call, for the access line
_CALL = "pilot.call"


class RemoteHostRefused(ValueError):
    """A host other than loopback without an explicit allowance."""


def is_loopback(host: str) -> bool:
    """Whether `host` reaches this machine only: localhost, 127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:  # a name: it may resolve anywhere
        return False


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse a host other than loopback unless `allow_remote`.

    Raises:
        RemoteHostRefused: with one line saying why and what to do instead.
    """
    if not allow_remote and not is_loopback(host):
        raise RemoteHostRefused(
            f"--host {host} is not loopback: bearer tokens and orders would cross the network unencrypted. "
            "Use 127.0.0.1 (a TLS proxy on this machine can forward to it), or add --allow-remote "
            "with TLS in front"
        )


def _bracketed(host: str) -> str:
    """A host as it appears before a port in a Host header: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def http_app(
    runtime: Runtime,
    host: str,
    port: int,
    *,
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS,
    tools: str = "all",
) -> AccessLog:
    """The ASGI app serving /mcp: access line, bearer token, whole bodies, then the SDK's MCP app."""
    mcp = build_server(runtime, tools=tools)
    names = {_bracketed(host), "127.0.0.1", "localhost", "[::1]"}
    hosts = sorted(f"{name}:{port}" for name in names)  # this port only: not localhost:1, not a page's
    origins = sorted(f"http://{name}:{port}" for name in names)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
    app = mcp.streamable_http_app(
        host=host, transport_security=security, session_idle_timeout=session_idle_seconds
    )
    return AccessLog(BearerTokens(WholeRequests(app), runtime))


async def serve_http(
    runtime: Runtime,
    host: str,
    port: int,
    sock: socket.socket | None = None,
    *,
    allow_remote: bool = False,
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS,
    tools: str = "all",
) -> None:
    """Serve http_app on host:port (or on an already bound socket) until cancelled.

    Raises:
        RemoteHostRefused: `host` is not loopback and `allow_remote` is not set.
    """
    import uvicorn

    if sock is not None:
        host, port = sock.getsockname()[:2]
    check_host(host, allow_remote=allow_remote)
    app = http_app(runtime, host, port, session_idle_seconds=session_idle_seconds, tools=tools)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", log_config=None
    )
    await uvicorn.Server(config).serve(sockets=[sock] if sock is not None else None)


class BearerTokens:
    """Let a request through only with `Authorization: Bearer TOKEN` for a token `pilot token issue` made.

    A missing, unknown or revoked token (or one that cannot be checked because the store fails) gets 401
    with a JSON body saying how to get one. No OAuth: nothing points a client at metadata or an
    authorization server. An MCP session belongs to the token that opened it: a request naming a session
    (`mcp-session-id`) opened with another token gets 403, so one token's holder cannot act in another's
    session.
    """

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime
        self._owners: OrderedDict[str, str] = OrderedDict()  # session id -> the token name that opened it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        holder = await self._client(token)
        if holder is None:
            await _unauthorized(send, sent=bool(token))
            return
        name = holder.name
        session = _header(scope, b"mcp-session-id")
        owner = self._owners.get(session) if session else None
        if owner is not None and owner != name:
            await _json_answer(send, 403, _SESSION_OF_ANOTHER)
            return
        state = scope.setdefault("state", {})
        state[_CLIENT], state[HOLDER_STATE] = name, holder

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                opened = _response_header(message, b"mcp-session-id")
                if opened and opened not in self._owners:
                    self._own(opened, name)
            await send(message)

        await self.app(scope, receive, noting)

    def _own(self, session: str, name: str) -> None:
        self._owners[session] = name
        while len(self._owners) > MAX_SESSIONS:  # idle sessions end in minutes: the oldest are long gone
            self._owners.popitem(last=False)

    async def _client(self, token: str | None) -> Holder | None:
        if not token:
            return None
        try:
            return await self.runtime.store.tokens.identify(token)
        except StoreError as error:  # cannot check the token: refuse it (401), one log line, no traceback
            log.warning("a bearer token could not be checked, so it was refused: %s", error)
            return None


def _bearer(scope: Scope) -> str | None:
    value = _header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return str(value.decode("latin-1"))
    return None


def _response_header(message: Message, wanted: bytes) -> str | None:
    for name, value in message.get("headers", []):
        if name.lower() == wanted:
            return str(value.decode("latin-1"))
    return None


_SESSION_OF_ANOTHER = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32001, "message": "this session was opened with another token; initialize your own"},
}


async def _json_answer(send: Send, status: int, body: dict[str, Any]) -> None:
    raw = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def refusal_reason(*, sent: bool) -> str:
    """Why a request's token was refused, in the words both the body and `WWW-Authenticate` carry (clients
    that start OAuth on a 401 show one or the other: the Inspector CLI shows the body with --stored-auth-only)."""
    if not sent:
        return (
            "no bearer token was sent: send `Authorization: Bearer TOKEN` with a token from "
            "`pilot token issue NAME --home HOME`"
        )
    return (
        "this bearer token is not one `pilot token issue` made for this home, or it was revoked: "
        "`pilot token list --home HOME` shows the names; issue a new one"
    )


async def _unauthorized(send: Send, *, sent: bool) -> None:
    reason = refusal_reason(sent=sent)
    body = json.dumps({"error": "invalid_token", "error_description": reason}).encode()
    challenge = f'Bearer realm="pilot", error="invalid_token", error_description="{reason}"'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class AccessLog:
    """One line per HTTP request, after it is answered: client, method, path, status, time, the token's
    name and the MCP call (`tools/call plan_order`). Never a header, a token or an argument."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started, status = time.monotonic(), 0

        async def noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            state = scope.get("state") or {}
            client = scope.get("client") or ("-", 0)
            extra = " ".join(part for part in (state.get(_CALL), state.get(_CLIENT)) if part)
            access.info(
                "%s:%s %s %s %s %d ms%s",
                client[0],
                client[1],
                scope.get("method"),
                scope.get("path"),
                status or "-",
                (time.monotonic() - started) * 1000,
                f" {extra}" if extra else "",
            )


class WholeRequests:
    """Hand the MCP app only requests whose body has fully arrived; a client gone before that is one log line.

    Why: when a client disconnects while its body is on the way, the SDK's 2025-11-25 path logs "Error
    handling POST request" with a traceback, and its 2026-07-28 path lets starlette's ClientDisconnect reach
    uvicorn ("Exception in ASGI application"). Bodies up to the SDK's own limit are read here first (the SDK
    reads them whole too); a larger one is passed on as it arrives for the SDK to refuse (413).
    """

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived: list[Message] = []
        size, complete = 0, False
        while not complete and size <= self.limit:
            message = await receive()
            if message["type"] == "http.disconnect":
                _gone(scope, "before its request had fully arrived; it was not handled")
                return
            arrived.append(message)
            size += len(message.get("body", b""))
            complete = not message.get("more_body", False)

        if complete:
            _note_call(scope, b"".join(message.get("body", b"") for message in arrived))

        async def replay() -> Message:
            return arrived.pop(0) if arrived else await receive()

        try:
            await self.app(scope, replay, send)
        except ClientDisconnect:
            _gone(scope, "while its request was being read")


def _gone(scope: Scope, when: str) -> None:
    client = scope.get("client") or ("unknown", 0)
    log.info("client %s:%s disconnected %s", client[0], client[1], when)


def _note_call(scope: Scope, body: bytes) -> None:
    """Remember which MCP call a request carries (`tools/call plan_order`) for its access line."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack: the SDK answers it (400)
        return
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    call = message["method"] + (f" {name}" if isinstance(name, str) and name.isidentifier() else "")
    scope.setdefault("state", {})[_CALL] = call[:80]
