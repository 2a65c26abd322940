"""Every tool's answer names the environment it is about (paper, bybit-demo, bybit-testnet), in one place.

The answers are built by the use cases, which know nothing of the server; the server knows which exchange
its Runtime holds. Rather than each tool adding it (and a new tool forgetting), every registered tool is
wrapped once, after registration, so whatever it returns that is a pilot.app Answer carries the field. It
replaces `tool.fn` in the SDK's tool manager, which is not public API (like pilot/server/strict.py); the
test that every tool's answer names the environment fails if an SDK upgrade changes that.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

from pilot.app.answers.responses import Answer


def name_the_environment(mcp: MCPServer, environment: str) -> None:
    """Wrap every registered tool so its Answer says `environment`."""
    for tool in mcp._tool_manager.list_tools():
        tool.fn = _naming(tool.fn, environment)
        tool.is_async = True  # the wrapper is a coroutine function, whatever it wraps


def _naming(fn: Callable[..., Any], environment: str) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def named(*args: Any, **kwargs: Any) -> Any:
        answer = fn(*args, **kwargs)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer.naming(environment) if isinstance(answer, Answer) else answer

    return named
