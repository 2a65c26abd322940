"""A shim over the MCP SDK: refuse arguments a tool does not take, instead of ignoring them, and report
every argument the SDK's validation rejects as an ArgumentProblem (field, problem, fix).

Why: MCPServer (mcp 2.3) builds each tool's argument model with pydantic's default `extra="ignore"`, so
`place_order {"plan_id": ..., "qty": "5"}` would run and the agent could believe its size was honoured.
It also reports a missing or mistyped argument as pydantic's own text. This module replaces each tool's
argument model with a subclass that raises ArgumentProblem instead, naming the field ("qty: place_order
does not take 'qty'; its arguments are plan_id") with the call that fixes it, and marks the published
input schema `additionalProperties: false`.

The swap is made on the SDK's records of the tools (`sdk.strict_arguments`): the tests in
tests/app/test_plan_place_mcp.py and tests/adversarial fail if an SDK upgrade changes how that works.
"""

from __future__ import annotations

import functools
from typing import Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ModelWrapValidatorHandler, ValidationError, model_validator

from pilot.app.orders.inputs import DROP, NO_FIX
from pilot.server import sdk
from pilot.server.arguments import ArgumentProblem


def forbid_unknown_arguments(mcp: MCPServer) -> None:
    """Swap every registered tool's argument model for a strict one (see the module docstring)."""
    sdk.strict_arguments(mcp, _strict_model)


def _strict_model(tool: str, base: type[BaseModel], allowed: list[str]) -> type[BaseModel]:
    # One strict model per tool's argument model: servers built in one process share their tools' argument
    # models (sdk.add_tool), and a pydantic class costs about a millisecond to build. Bounded as those
    # records are: one entry per tool function.
    return _strict_model_of(tool, base, tuple(allowed))


@functools.cache
def _strict_model_of(tool: str, base: type[BaseModel], allowed: tuple[str, ...]) -> type[BaseModel]:
    # mypy cannot check a base class known only at runtime: the SDK builds `base` per tool.
    class Strict(base):  # type: ignore[valid-type,misc]
        @model_validator(mode="wrap")
        @classmethod
        def _known_only(
            cls: type[BaseModel], data: object, handler: ModelWrapValidatorHandler[BaseModel]
        ) -> BaseModel:
            if isinstance(data, dict):
                unknown = sorted(set(data) - set(allowed))
                if unknown:
                    takes = ", ".join(allowed) or "none"
                    raise ArgumentProblem(
                        unknown[0],
                        f"{tool} does not take {unknown[0]!r}; its arguments are {takes}",
                        fixed=DROP,
                        accepted=f"only its arguments: {takes}",
                        drop=tuple(unknown),
                    )
            try:
                return handler(data)
            except ValidationError as error:
                raise argument_problem(error) from None

    Strict.__name__ = base.__name__
    return Strict


def argument_problem(error: ValidationError) -> ArgumentProblem:
    """The first problem pydantic found, in plain words, with its fix when one is certain."""
    first = error.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first["loc"]) or "arguments"
    kind, context, given = first["type"], first.get("ctx") or {}, first.get("input")
    if kind == "missing":
        return ArgumentProblem(field, "is required")
    problem = first["msg"][:1].lower() + first["msg"][1:]
    if kind == "literal_error":
        choices = [choice.strip("'") for choice in str(context.get("expected", "")).split(" or ")]
        choices = [part.strip("'") for choice in choices for part in choice.split(", ")]
        same = [c for c in choices if isinstance(given, str) and given.strip().lower() == c.lower()]
        return ArgumentProblem(
            field, problem, fixed=same[0] if same else NO_FIX, accepted=f"one of {', '.join(choices)}"
        )
    if kind == "int_type":  # a depth given as a string ("5") is certain; true or 5.5 is no guess of ours
        text = given.strip() if isinstance(given, str) else ""
        whole = isinstance(given, float) and given.is_integer()
        fixed = int(text) if text.isascii() and text.isdigit() else int(given) if whole else NO_FIX
        return ArgumentProblem(field, "is a whole number: send it as one", fixed=fixed)
    if kind == "bool_type":  # a switch given as a string or a number: "true" and "false" are certain
        word = given.strip().lower() if isinstance(given, str) else None
        fixed = {"true": True, "false": False}.get(word or "", NO_FIX)
        return ArgumentProblem(field, "is a switch: send JSON true or false", fixed=fixed)
    bound = _bound(kind, context, given)
    return ArgumentProblem(field, problem, fixed=bound, accepted=_accepted(kind, context) or None)


def _bound(kind: str, context: dict[str, Any], given: Any) -> Any:
    """For a whole number out of range, the nearest one in range (a depth of 500 becomes 200)."""
    if not isinstance(given, int) or isinstance(given, bool):
        return NO_FIX
    if kind in ("less_than_equal", "less_than") and isinstance(context.get("le", context.get("lt")), int):
        return context.get("le", context.get("lt", 0) - 1)
    if kind in ("greater_than_equal", "greater_than") and isinstance(
        context.get("ge", context.get("gt")), int
    ):
        return context.get("ge", context.get("gt", 0) + 1)
    return NO_FIX


def _accepted(kind: str, context: dict[str, Any]) -> str:
    if "max_length" in context:
        return f"at most {context['max_length']} characters"
    for key, words in (("le", "at most"), ("lt", "below"), ("ge", "at least"), ("gt", "above")):
        if key in context:
            return f"{words} {context[key]}"
    return ""
