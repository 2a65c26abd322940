"""The one edge where a failing store becomes an answer: a StoreError that reaches a tool is that tool's answer.

Why here: every tool's use case may touch the store, and on a full disk or an I/O error the SDK would turn
the exception into a bare "Error executing tool". Below this edge a StoreError can only mean nothing was
sent (pilot.app.road.gate answers for itself once a request has left), so the answer is "refused" with rule
storeUnavailable and a next action to stop until a human fixes the disk: a retry would fail the same way.
The database's own words go to the server's log, one line, never to the agent.

Every registered tool is wrapped once, after registration (`sdk.wrap_tools`); the tests in
tests/app/test_store_faults.py hold every tool's answer to a full disk.
"""

from __future__ import annotations

import functools
import logging

from mcp.server.mcpserver import MCPServer

from pilot.app.answers import store_faults
from pilot.app.answers.responses import PlanAnswer, ToolAnswer, next_out, violations_out
from pilot.app.answers.store_faults import StoreError
from pilot.app.facts.reads import ReadAnswer
from pilot.server import sdk

log = logging.getLogger("pilot.server")


def answer_store_faults(mcp: MCPServer) -> None:
    """Wrap every registered tool so a StoreError becomes its answer (see the module docstring)."""
    sdk.wrap_tools(mcp, _answering)


def _answering(tool: sdk.ToolFacts, fn: sdk.ToolFunction) -> sdk.ToolFunction:
    @functools.wraps(fn)
    async def answering(**arguments: object) -> object:
        try:
            return await fn(**arguments)
        except StoreError as error:
            log.warning("%s: Pilot's database failed, nothing was sent: %s", tool.name, error)
            return answer_for(tool.answer_type, error)

    return answering


def answer_for(answer_type: object, error: StoreError) -> ToolAnswer | PlanAnswer | ReadAnswer:
    """The answer of a tool of `answer_type` that stopped on a store failure before sending anything."""
    refused = store_faults.refusal(error)
    if isinstance(answer_type, type) and issubclass(answer_type, ToolAnswer):
        return answer_type.from_refusal(refused)
    if answer_type is PlanAnswer:
        return PlanAnswer(
            status="refused",
            violations=violations_out(refused.violations),
            next_safe_action=next_out(refused.next_safe_action),
        )
    if answer_type is ReadAnswer:
        return ReadAnswer(status="unavailable", detail=refused.detail)
    raise error
