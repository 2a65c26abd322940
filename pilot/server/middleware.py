"""What every tool call counts for before its tool runs: the session it belongs to, and the dead-man's switch.

One SDK middleware (`MCPServer(middleware=...)`, the SDK's public hook around every inbound message) does it
for tools/call, whatever the tool and whether its arguments hold: the call touches its session (whose age
judges maxSessionMinutes, through `SESSION_STARTED` while the call runs) and is the agent's heartbeat for the
dead-man's switch (pilot.app.service.dead_man), or one log line when the store cannot record it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from pilot.app.answers.store_faults import StoreError
from pilot.app.runtime.runtime import ACTING, Runtime
from pilot.app.runtime.sessions import SESSION_STARTED
from pilot.app.service.dead_man import agent_called
from pilot.server.callers import CALLER, caller_of

CLIENT_STATE = "pilot.client"  # the ASGI scope["state"] key under which the HTTP server names the token
log = logging.getLogger("pilot.server")


class EveryCall:
    """The middleware: each tools/call touches its session and beats for the dead-man's switch."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        key, expires = session_key(ctx.request)
        runtime = self.runtime
        caller = await caller_of(runtime, ctx.request)
        agent = caller.holder.name if caller.holder is not None and caller.holder.role else None
        started = runtime.sessions.touch(key, runtime.store.clock.read(), expires=expires, agent=agent)
        token = SESSION_STARTED.set(started)  # its age judges maxSessionMinutes (pilot.app.runtime.sessions)
        calling, acting = CALLER.set(caller), ACTING.set(caller.holder)  # who acts (pilot.server.callers)
        try:
            await _beat(runtime, agent)
            return await call_next(ctx)
        finally:
            ACTING.reset(acting)
            CALLER.reset(calling)
            SESSION_STARTED.reset(token)


async def _beat(runtime: Runtime, agent: str | None) -> None:
    """The agent's heartbeat: the dead-man's switch counts silence from here. The store failing to record it
    is one log line: the call goes on to its tool, which answers the store fault itself if it lasts."""
    try:
        await agent_called(runtime, agent)
    except StoreError as error:
        log.warning("the agent's heartbeat could not be recorded: %s", error)


def session_key(request: object) -> tuple[str, bool]:
    """The session a call belongs to, and whether it ends by being idle: over stdio the connection, which is
    the process's (protocol 2026-07-28 has no sessions of its own, so the connection is the one there is);
    an HTTP session's Mcp-Session-Id (protocol 2025-11-25); for a 2026-07-28 client over HTTP, its bearer
    token's calls. `request` is the HTTP request the call came in (a Starlette Request), None over stdio."""
    if request is None:
        return "stdio", False
    headers: Mapping[str, str] = getattr(request, "headers", None) or {}
    session_id = headers.get("mcp-session-id")
    if session_id:
        return f"http:{session_id}", True
    state: Mapping[str, object] = (getattr(request, "scope", None) or {}).get("state") or {}
    return f"token:{state.get(CLIENT_STATE, 'unknown')}", True
