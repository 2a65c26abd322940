"""Every tool's answer names the environment it is about (paper, bybit-demo, bybit-testnet, okx-demo), once.

The answers are built by the use cases, which know nothing of the server; the server knows which exchange
its Runtime holds. Rather than each tool adding it (and a new tool forgetting), every registered tool is
wrapped once, after registration (`sdk.wrap_tools`), so whatever it returns that is a pilot.app Answer
carries the field; the test that every tool's answer names the environment holds it.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from mcp.server.mcpserver import MCPServer

from pilot.app.answers.responses import Answer
from pilot.app.runtime.runtime import environment_label, is_live
from pilot.server import sdk


def name_the_environment(mcp: MCPServer, environment: str) -> None:
    """Wrap every registered tool so its Answer says `environment` (and, live, `live: true`)."""
    sdk.wrap_tools(mcp, lambda _tool, fn: _naming(fn, environment))


def answer_environment(environment: str) -> str:
    """What an answer's `environment` says: the environment, and LIVE after mainnet's, real money."""
    return environment_label(environment)


def label(environment: str) -> str:
    """How tools/list's descriptions end: the environment the server trades, LIVE for real money. Short:
    it is paid for once per tool in every tools/list (tests/app/test_tools_list.py holds the size)."""
    return f" [LIVE {environment}]" if is_live(environment) else f" [{environment}]"


def describe_the_environment(mcp: MCPServer, environment: str) -> None:
    """End every tool's description in tools/list with the environment it trades (`label`)."""
    suffix = label(environment)
    sdk.reshape_listings(
        mcp, lambda listing: replace(listing, description=(listing.description or "") + suffix)
    )


def _naming(fn: sdk.ToolFunction, environment: str) -> sdk.ToolFunction:
    @functools.wraps(fn)
    async def named(*args: object, **kwargs: object) -> object:
        answer = await fn(*args, **kwargs)
        if not isinstance(answer, Answer):
            return answer
        return answer.naming(answer_environment(environment))

    return named
