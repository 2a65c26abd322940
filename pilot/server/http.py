"""Streamable HTTP: bearer tokens required, Host and Origin checked against loopback (and the chosen host)."""

from __future__ import annotations

import socket
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from pilot.app.runtime import Runtime
from pilot.server.build import build_server


def http_app(runtime: Runtime, host: str, port: int) -> Any:
    """The ASGI app serving /mcp."""
    mcp = build_server(runtime, http_base_url=f"http://{host}:{port}")
    hosts = sorted({f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"})
    origins = sorted({f"http://{host}:*", "http://127.0.0.1:*", "http://localhost:*"})
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
    return mcp.streamable_http_app(host=host, transport_security=security)


async def serve_http(runtime: Runtime, host: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve http_app on host:port (or on an already bound socket) until cancelled."""
    import uvicorn

    if sock is not None:
        host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        http_app(runtime, host, port), host=host, port=port, log_level="warning", lifespan="on"
    )
    await uvicorn.Server(config).serve(sockets=[sock] if sock is not None else None)
