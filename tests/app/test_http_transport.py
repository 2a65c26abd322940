"""pilot serve --transport http: bearer tokens issued by the CLI (stored hashed), Host and Origin checks."""

from __future__ import annotations

import socket

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pilot.server import serve_http

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
    assert rebinding.status_code == 421 and foreign.status_code == 403
    assert planned["status"] == "ok"
