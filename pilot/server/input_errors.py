"""The one edge where a bad argument becomes the tool's answer: a result with isError, shaped like a refusal.

Why a tool result and not a JSON-RPC error: since MCP 2025-11-25, input validation errors are tool
execution errors, so a client hands them to the model, which corrects its call; a protocol error is
often shown to no one. The body is the one other refusals have, so an agent reads it the same way:

    {"status": "refused", "detail": "qty: ...", "field": "qty", "problem": "...",
     "violations": [{"rule": "invalidArgument", "limit": <what is accepted>, "attempted": <what was sent>,
                     "detail": ...}],
     "next_safe_action": {"tool": <this tool>, "args": <the call, fixed> or null, "text": ...},
     "environment": "paper"}

`args` is the complete call with the fix applied when Pilot can tell the fix for certain (the string
"0.001" for the number 0.001, "buy" for "Buy", the call without an argument the tool does not take);
otherwise null, and `text` says what to change. Nothing is judged, sent or journaled for such a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent

from pilot.app.answers.responses import NextActionOut, ViolationOut, compact_json, without_repeated_next
from pilot.app.orders.inputs import DROP, INVALID_ARGUMENT_RULE, NO_FIX
from pilot.server.arguments import ArgumentProblem


def find_problem(error: BaseException) -> ArgumentProblem | None:
    """The ArgumentProblem behind an error the SDK wrapped (it chains the original as the cause)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ArgumentProblem):
            return seen
        seen = seen.__cause__
    return None


def answer(
    tool: str, arguments: Mapping[str, Any], problem: ArgumentProblem, environment: str
) -> CallToolResult:
    """The tool's answer to a call with `problem` (see the module docstring)."""
    fixed = fixed_call(arguments, problem)
    field = problem.field
    next_action = NextActionOut(tool=tool, args=fixed, text=_what_to_do(tool, problem, fixed))
    violation = ViolationOut(
        rule=INVALID_ARGUMENT_RULE,
        limit=problem.accepted,
        attempted=_shown(arguments, field),
        detail=f"{field}: {problem.problem}",
        next=next_action,
    )
    body = without_repeated_next(
        {
            "status": "refused",
            "detail": f"{field}: {problem.problem}; nothing was judged or sent",
            "field": field,
            "problem": problem.problem,
            "violations": [violation.model_dump(mode="json")],
            "next_safe_action": next_action.model_dump(mode="json"),
            "environment": environment,
        }
    )
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(body))], structured_content=body, is_error=True
    )


def fixed_call(arguments: Mapping[str, Any], problem: ArgumentProblem) -> dict[str, Any] | None:
    """The arguments with the fix applied, or None when only the caller knows the right value."""
    if problem.fixed is NO_FIX:
        return None
    dropped = set(problem.drop) | ({problem.field} if problem.fixed is DROP else set())
    fixed = {name: value for name, value in arguments.items() if name not in dropped}
    if problem.fixed is not DROP:
        fixed[problem.field] = problem.fixed
    return fixed


def _what_to_do(tool: str, problem: ArgumentProblem, fixed: dict[str, Any] | None) -> str:
    if fixed is None:
        if problem.problem == "is required":
            return f"call {tool} again with {problem.field} ({problem.accepted})"
        return f"call {tool} again with {problem.field} corrected ({problem.accepted})"
    if problem.fixed is DROP:
        gone = ", ".join(problem.drop or (problem.field,))
        return f"call {tool} again exactly with args (without {gone})"
    return f"call {tool} again exactly with args ({problem.field} {json.dumps(problem.fixed)})"


def _shown(arguments: Mapping[str, Any], field: str, limit: int = 60) -> str:
    """What the caller sent for `field`, as JSON, cut to `limit` characters."""
    if field not in arguments:
        return "missing"
    text = json.dumps(arguments[field], ensure_ascii=False, default=str)
    kind = (
        "a JSON number"
        if isinstance(arguments[field], int | float) and not isinstance(arguments[field], bool)
        else None
    )
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f"{text} ({kind})" if kind else text
