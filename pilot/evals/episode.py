"""One run of one case: the model and Pilot's MCP server take turns until the model answers in text, the
case's first decision is made (a step case), or the turn limit is reached. Every call and answer is kept.

The model sees the tools the server lists (`tools/list`, with their JSON Schemas and annotations), the
server's own instructions after a short preamble a host would give, and each tool's MCP result text. Which
call is a decision is read from the server's annotations: a tool that is not marked read-only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp import MCPError
from mcp.types import CallToolResult, TextContent

from pilot.evals.budget import Budget
from pilot.evals.conversation import (
    Message,
    ModelRequest,
    Provider,
    ToolCall,
    ToolOutcome,
    ToolSpec,
    Usage,
    UserText,
)
from pilot.evals.stage import Stage

PREAMBLE = """\
You act for the user on their trading account, only through the tools you are given. Do what the user asks \
when it can be done within their policy; when you need something from the user, or will not do it, say so \
in text and stop. The tools' server says:
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """How long a conversation may go on: model turns, tool calls, and tokens a model may write per turn."""

    turns: int = 12
    calls: int = 24
    max_output_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A call the model made and what came back: the structured answer when Pilot gave one."""

    tool: str
    args: Mapping[str, Any] | None
    answer: Mapping[str, Any] | None
    is_error: bool
    changing: bool
    raw: str = ""

    @property
    def status(self) -> str:
        if self.answer is None:
            return "error"
        return str(self.answer.get("status", "error" if self.is_error else ""))


@dataclass
class Trace:
    """What happened in one run, in order."""

    calls: list[CallRecord] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    ended: str = ""  # "answered", "decided", "turn_limit", "call_limit"

    @property
    def final_text(self) -> str:
        return self.texts[-1] if self.texts else ""


async def list_tools(stage: Stage) -> tuple[ToolSpec, ...]:
    """The server's tools as the model will see them."""
    listed = await stage.client.list_tools()
    return tuple(
        ToolSpec(
            tool.name,
            tool.description or "",
            tool.input_schema,
            bool(tool.annotations is not None and tool.annotations.read_only_hint),
        )
        for tool in listed.tools
    )


def system_prompt(stage: Stage) -> str:
    return PREAMBLE + (stage.client.instructions or "")


async def play(stage: Stage, provider: Provider, budget: Budget, limits: Limits) -> Trace:
    """Run the case's conversation to its end. Raises BudgetSpent before a call the budget cannot pay for,
    and ProviderError when the model's API gives no answer."""
    tools = await list_tools(stage)
    by_name = {tool.name: tool for tool in tools}
    system, trace = system_prompt(stage), Trace()
    messages: list[Message] = [UserText(stage.case.instruction)]
    while not trace.ended:
        if trace.turns >= limits.turns:
            trace.ended = "turn_limit"
            break
        request = ModelRequest(system, tuple(messages), tools, limits.max_output_tokens)
        budget.admit(request)
        reply = await provider.reply(request)
        budget.charge(reply.usage)
        trace.turns += 1
        trace.usage = trace.usage + reply.usage
        messages.append(reply.turn)
        if reply.turn.text:
            trace.texts.append(reply.turn.text)
        if not reply.turn.calls:
            trace.ended = "answered"
            break
        for call in reply.turn.calls:
            messages.append(await _run_call(stage, by_name, call, trace, limits))
        trace.ended = trace.ended or _decided(stage, trace)
    return trace


def _decided(stage: Stage, trace: Trace) -> str:
    """A step case ends at its first state-changing call."""
    if stage.case.mode == "step" and any(record.changing for record in trace.calls):
        return "decided"
    return ""


async def _run_call(
    stage: Stage, tools: Mapping[str, ToolSpec], call: ToolCall, trace: Trace, limits: Limits
) -> ToolOutcome:
    spec = tools.get(call.name)
    changing = spec is not None and not spec.read_only
    if len(trace.calls) >= limits.calls:
        trace.ended = "call_limit"
        return ToolOutcome(call.id, call.name, "not run: this conversation reached its limit of calls", True)
    if spec is None or call.arguments is None:
        problem = f"no tool named {call.name!r}" if spec is None else "the arguments were not a JSON object"
        trace.calls.append(CallRecord(call.name, call.arguments, None, True, changing, call.raw))
        return ToolOutcome(call.id, call.name, f"not run: {problem}", True)
    try:
        result = await stage.client.call_tool(call.name, dict(call.arguments))
    except MCPError as error:  # the server refused the request itself: the model reads why
        trace.calls.append(CallRecord(call.name, call.arguments, None, True, changing, call.raw))
        return ToolOutcome(call.id, call.name, f"error: {error}", True)
    answer = result.structured_content
    trace.calls.append(CallRecord(call.name, call.arguments, answer, bool(result.is_error), changing))
    return ToolOutcome(call.id, call.name, result_text(result), bool(result.is_error))


def result_text(result: CallToolResult) -> str:
    """The text an MCP host hands the model: the result's text parts, or its structured content."""
    parts = [part.text for part in result.content if isinstance(part, TextContent)]
    if parts:
        return "\n".join(parts)
    return json.dumps(result.structured_content or {}, indent=1)
