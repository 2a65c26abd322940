"""Streamable HTTP: bearer tokens required, Host and Origin checked against loopback (and the chosen host).

A host other than loopback is refused unless the caller allows it (`pilot serve --allow-remote`): tokens
and orders would cross the network in clear text, so TLS belongs in front (README, Threat model). Client
sessions idle for `session_idle_seconds` are forgotten by the SDK's session manager. A client that goes away
before its request has fully arrived is one log line, not a traceback (`WholeRequests`).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pilot.app.runtime import Runtime
from pilot.server.build import build_server

DEFAULT_SESSION_IDLE_SECONDS = 300
log = logging.getLogger("pilot.server.http")


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


def http_app(
    runtime: Runtime, host: str, port: int, *, session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS
) -> Any:
    """The ASGI app serving /mcp."""
    mcp = build_server(runtime, http_base_url=f"http://{host}:{port}")
    hosts = sorted({f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"})
    origins = sorted({f"http://{host}:*", "http://127.0.0.1:*", "http://localhost:*"})
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
    app = mcp.streamable_http_app(
        host=host, transport_security=security, session_idle_timeout=session_idle_seconds
    )
    return WholeRequests(app)


async def serve_http(
    runtime: Runtime,
    host: str,
    port: int,
    sock: socket.socket | None = None,
    *,
    allow_remote: bool = False,
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS,
) -> None:
    """Serve http_app on host:port (or on an already bound socket) until cancelled.

    Raises:
        RemoteHostRefused: `host` is not loopback and `allow_remote` is not set.
    """
    import uvicorn

    if sock is not None:
        host, port = sock.getsockname()[:2]
    check_host(host, allow_remote=allow_remote)
    app = http_app(runtime, host, port, session_idle_seconds=session_idle_seconds)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock] if sock is not None else None)


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

        async def replay() -> Message:
            return arrived.pop(0) if arrived else await receive()

        try:
            await self.app(scope, replay, send)
        except ClientDisconnect:
            _gone(scope, "while its request was being read")


def _gone(scope: Scope, when: str) -> None:
    client = scope.get("client") or ("unknown", 0)
    log.info("client %s:%s disconnected %s", client[0], client[1], when)
