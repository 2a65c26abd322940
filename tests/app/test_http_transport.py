"""pilot serve --transport http: bearer tokens issued by the CLI (stored hashed), Host and Origin checks,
loopback unless allowed, idle sessions forgotten, and a client that leaves is one log line."""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pilot.server import serve_http
from pilot.server.http import RemoteHostRefused, check_host, http_app, is_loopback, refusal_reason

from .conftest import BTC_SHORT, call

pytestmark = pytest.mark.anyio
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


async def test_http_needs_a_valid_token_and_a_loopback_host(runtime):
    token = await runtime.store.tokens.issue("tester", now=runtime.now())
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections queue in the backlog until uvicorn accepts them: no waiting loop needed
    port = listener.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve_http, runtime, "127.0.0.1", port, listener)
        async with httpx2.AsyncClient(timeout=10) as http:
            no_token = await http.post(url, json=INITIALIZE, headers=headers)
            wrong = await http.post(
                url, json=INITIALIZE, headers={**headers, "Authorization": "Bearer pilot_nope"}
            )
            rebinding = await http.post(
                url,
                json=INITIALIZE,
                headers={**headers, "Authorization": f"Bearer {token}", "Host": "evil.example"},
            )
            foreign = await http.post(
                url,
                json=INITIALIZE,
                headers={**headers, "Authorization": f"Bearer {token}", "Origin": "http://evil.example"},
            )
        authorised = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10)
        async with authorised as http, Client(streamable_http_client(url, http_client=http)) as client:
            planned = await call(client, "plan_order", BTC_SHORT)
        tasks.cancel_scope.cancel()
    assert (no_token.status_code, wrong.status_code) == (401, 401)
    # the reason is in the body and in the challenge (the Inspector CLI shows the body with --stored-auth-only)
    assert no_token.json()["error_description"] == refusal_reason(sent=False)
    assert wrong.json()["error_description"] == refusal_reason(sent=True)
    assert refusal_reason(sent=True) in wrong.headers["www-authenticate"]
    assert rebinding.status_code == 421 and foreign.status_code == 403
    assert planned["status"] == "ok"


def _listener() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


class _Records(logging.Handler):
    """Every log record while serving; `gone` is set once Pilot's one line about a disconnect arrives."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.gone = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if record.name == "pilot.server.http":
            self.gone.set()


@pytest.mark.parametrize("protocol", [None, "2025-11-25", "2026-07-28"])
async def test_a_client_that_leaves_halfway_through_its_request_is_one_log_line_without_a_traceback(
    runtime, protocol, caplog
):
    caplog.set_level(logging.INFO)
    token = await runtime.store.tokens.issue("tester", now=runtime.now())
    listener = _listener()
    port = listener.getsockname()[1]
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) + 100}\r\n"
        + (f"MCP-Protocol-Version: {protocol}\r\n" if protocol else "")
        + "\r\n"
    )
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_http, runtime, "127.0.0.1", port, listener)
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(head.encode() + body)  # 100 bytes short of what it announced
            await stream.aclose()
            with anyio.fail_after(10):
                await records.gone.wait()
            served = list(records.records)  # before stopping the server, which logs its own way
            tasks.cancel_scope.cancel()
    finally:
        root.removeHandler(records)
    ours = [r for r in served if r.name == "pilot.server.http"]
    assert len(ours) == 1 and ours[0].exc_info is None
    assert [r for r in served if r.exc_info or r.levelno >= logging.ERROR] == []


def _session_manager(app: Any) -> Any:
    """The SDK's session manager behind Pilot's layers (access log, tokens, whole requests): its /mcp route."""
    while not hasattr(app, "routes"):
        app = app.app
    [route] = [r for r in app.routes if getattr(r, "path", None) == "/mcp"]
    return route.endpoint.session_manager


async def test_idle_sessions_are_forgotten_after_five_minutes_or_the_configured_time(runtime):
    assert _session_manager(http_app(runtime, "127.0.0.1", 8765)).session_idle_timeout == 300
    assert (
        _session_manager(http_app(runtime, "127.0.0.1", 8765, session_idle_seconds=42)).session_idle_timeout
        == 42
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "pilot.example", "[::]"])
async def test_serving_beyond_loopback_is_refused_unless_allowed(runtime, host):
    with pytest.raises(RemoteHostRefused):
        await serve_http(runtime, host, 8765)
    check_host(host, allow_remote=True)  # allowed explicitly: `pilot serve --allow-remote`


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost"])
def test_loopback_hosts_need_no_allowance(host):
    assert is_loopback(host)
    check_host(host, allow_remote=False)


async def _initialized(http: Any, url: str, token: str) -> str:
    """Open an MCP session with `token`; return its session id."""
    opened = await http.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})
    assert opened.status_code == 200, opened.text
    return opened.headers["mcp-session-id"]


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


async def test_the_holes_issue_25_found_over_http_are_closed(runtime, caplog):
    """A Host or Origin of loopback on another port (a page on localhost:3000, a rebinding to port 1), a
    session opened with token A used with token B, and a JSON body 100,000 arrays deep: each is refused with
    a 4xx and no traceback (before: accepted, accepted, served, and a 500 with a RecursionError)."""
    caplog.set_level(logging.INFO)
    first = await runtime.store.tokens.issue("first", now=runtime.now())
    second = await runtime.store.tokens.issue("second", now=runtime.now())
    listener = _listener()
    port = listener.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    deep = b"[" * 100_000 + b"]" * 100_000
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve_http, runtime, "127.0.0.1", port, listener)
        async with httpx2.AsyncClient(timeout=30) as http:
            session = await _initialized(http, url, first)
            as_first = {**HEADERS, "Authorization": f"Bearer {first}", "mcp-session-id": session}
            as_second = {**as_first, "Authorization": f"Bearer {second}"}
            own = await http.post(url, json=TOOLS_LIST, headers=as_first)
            borrowed = await http.post(url, json=TOOLS_LIST, headers=as_second)
            other_port = await http.post(url, json=TOOLS_LIST, headers={**as_first, "Host": "localhost:1"})
            page = await http.post(
                url, json=TOOLS_LIST, headers={**as_first, "Origin": "http://localhost:3000"}
            )
            same = await http.post(
                url, json=TOOLS_LIST, headers={**as_first, "Origin": f"http://127.0.0.1:{port}"}
            )
            nested = await http.post(url, content=deep, headers=as_first)
        tasks.cancel_scope.cancel()
    assert (own.status_code, same.status_code) == (200, 200)
    assert borrowed.status_code == 403
    assert (other_port.status_code, page.status_code) == (421, 403)
    assert nested.status_code == 400 and nested.json()["error"]["code"] == -32700
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []
