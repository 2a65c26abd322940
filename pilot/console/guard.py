"""The console's outer wall: a Host on loopback and equal to this server's port, a same-origin POST, and the
security headers on every answer, checked before any route reads the request."""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pilot.console.rendering import plain

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
            await plain(400, "this console answers only on its loopback address")(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD") and headers.get("origin") != f"http://{host}":
            await plain(403, "a request from another origin is refused")(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)
