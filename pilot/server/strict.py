"""A shim over the MCP SDK: refuse arguments a tool does not take, instead of ignoring them.

Why: MCPServer (mcp 2.3) builds each tool's argument model with pydantic's default `extra="ignore"`, so
`place_order {"plan_id": ..., "qty": "5"}` would run and the agent could believe its size was honoured.
It also reports a missing or mistyped argument as a tool error carrying pydantic's own text. This module
replaces each tool's argument model with a subclass that raises invalid_params instead, naming the field
("qty: place_order does not take 'qty'; its arguments are plan_id"), and marks the published input schema
`additionalProperties: false`.

It reaches into the SDK's tool manager (`mcp._tool_manager`, `tool.fn_metadata.arg_model`), which is not
public API: the tests in tests/app/test_plan_place_mcp.py and tests/adversarial fail if an SDK upgrade
changes that, and `pyproject.toml` pins mcp to 2.3.x.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError, model_validator


def forbid_unknown_arguments(mcp: MCPServer) -> None:
    """Swap every registered tool's argument model for a strict one (see the module docstring)."""
    for tool in mcp._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        allowed = sorted(name for name in base.model_fields if not _is_resolved(tool, name))
        strict = _strict_model(base, tool.name, allowed)
        tool.fn_metadata.arg_model = strict
        tool.parameters["additionalProperties"] = False


def _strict_model(base: type[ArgModelBase], tool: str, allowed: list[str]) -> type[ArgModelBase]:
    # mypy cannot check a base class known only at runtime: the SDK builds `base` per tool.
    class Strict(base):  # type: ignore[valid-type,misc]
        @model_validator(mode="wrap")
        @classmethod
        def _known_only(cls, data: Any, handler: Any) -> Any:
            if isinstance(data, dict):
                unknown = sorted(set(data) - set(allowed))
                if unknown:
                    raise MCPError(
                        code=INVALID_PARAMS,
                        message=f"{unknown[0]}: {tool} does not take {unknown[0]!r}; "
                        f"its arguments are {', '.join(allowed) or 'none'}",
                    )
            try:
                return handler(data)
            except ValidationError as error:
                raise MCPError(code=INVALID_PARAMS, message=argument_problem(error)) from None

    Strict.__name__ = base.__name__
    return Strict


def argument_problem(error: ValidationError) -> str:
    """The first problem pydantic found, as "field: what is wrong" in plain words."""
    first = error.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first["loc"]) or "arguments"
    problem = "is required" if first["type"] == "missing" else first["msg"][:1].lower() + first["msg"][1:]
    return f"{field}: {problem}"


def _is_resolved(tool: Any, name: str) -> bool:
    return name in getattr(tool, "resolved_params", {}) or name == getattr(tool, "context_kwarg", None)
