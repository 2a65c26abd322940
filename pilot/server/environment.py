"""Every tool's answer names the environment it is about (paper, bybit-demo, bybit-testnet, okx-demo), once.

The answers are built by the use cases, which know nothing of the server; the server knows which exchange
its Runtime holds. Rather than each tool adding it (and a new tool forgetting), every registered tool is
wrapped once, after registration (`sdk.wrap_tools`), so whatever it returns that is a pilot.app Answer
carries the field; the test that every tool's answer names the environment holds it.
"""

from __future__ import annotations

import functools

from mcp.server.mcpserver import MCPServer

from pilot.app.answers.responses import Answer
from pilot.server import sdk


def name_the_environment(mcp: MCPServer, environment: str) -> None:
    """Wrap every registered tool so its Answer says `environment`."""
    sdk.wrap_tools(mcp, lambda _tool, fn: _naming(fn, environment))


def _naming(fn: sdk.ToolFunction, environment: str) -> sdk.ToolFunction:
    @functools.wraps(fn)
    async def named(*args: object, **kwargs: object) -> object:
        answer = await fn(*args, **kwargs)
        return answer.naming(environment) if isinstance(answer, Answer) else answer

    return named
