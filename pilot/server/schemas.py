"""What tools/list costs the model: one concise description per tool, input schemas without pydantic's titles,
and output schemas trimmed to what a client validates.

Why: every client sends tools/list to the model on every turn. Pydantic's full output schemas (every nested
model, title and description) made it about 60 KB of JSON, most of it describing answers the model reads
anyway. A client validates a result's structuredContent against the output schema, and that needs only
the top-level fields and their JSON types: nested objects, and the values `status` can take (each tool's
description and docs/tools.md list them), are still checked by Pilot itself, which builds every answer from a
pydantic model. `benchmarks/bench_tools_list.py`
prints the size; tests/app/test_tools_list.py holds it under 20 KB.

The SDK reads its records of the tools live on every tools/list; `sdk.reshape_listings` rewrites them once,
after registration.
"""

from __future__ import annotations

import inspect
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from pilot.server import sdk

_JSON_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
# What MCP assumes of a hint left out (the spec's ToolAnnotations defaults): saying it again costs bytes.
_DEFAULT_HINTS = {
    "read_only_hint": False,
    "destructive_hint": True,
    "idempotent_hint": False,
    "open_world_hint": True,
}


def compact_schemas(mcp: MCPServer) -> None:
    """Trim every registered tool's description and schemas (see the module docstring)."""
    sdk.reshape_listings(mcp, compact)


def compact(listing: sdk.Listing) -> sdk.Listing:
    """One tool's listing: its description on one line, no titles, only the hints that differ from MCP's
    defaults, and its output schema's top-level types."""
    annotations = listing.annotations
    full = listing.output_schema
    return sdk.Listing(
        description=one_paragraph(listing.description),
        input_schema=without_titles(listing.input_schema),
        annotations=None if annotations is None else without_default_hints(annotations),
        output_schema=None if full is None else top_level_types(full),
    )


def without_default_hints(annotations: ToolAnnotations) -> ToolAnnotations | None:
    """The annotations with only the hints that differ from what MCP assumes when one is left out (None
    when every hint is the default one: nothing to say)."""
    given = annotations.model_dump(exclude_none=True)
    differing = {key: value for key, value in given.items() if _DEFAULT_HINTS.get(key) != value}
    return ToolAnnotations(**differing) if differing else None


def one_paragraph(text: str) -> str:
    """A docstring as one line of plain sentences, without its indentation."""
    return " ".join(inspect.cleandoc(text).split())


def without_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without pydantic's generated `title` keywords (field names already say it)."""
    trimmed: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs"):
            trimmed[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            trimmed[key] = _untitled(value)
    return _types_listed(trimmed)


def _untitled(value: object) -> object:
    if isinstance(value, list):
        return [_untitled(item) for item in value]
    return without_titles(value) if isinstance(value, dict) else value


def _types_listed(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of plain typed members (`str | None`) written as one `type` list: the same schema, shorter."""
    members = schema.get("anyOf")
    if not isinstance(members, list) or not all(
        isinstance(m, dict)
        and isinstance(m.get("type"), str)
        and m["type"] != "array"
        and m["type"] != "object"
        for m in members
    ):
        return schema
    merged: dict[str, Any] = {}
    for member in members:
        for key, value in member.items():
            if key != "type" and merged.get(key, value) != value:
                return schema  # members that disagree on a keyword stay apart
            if key != "type":
                merged[key] = value
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    if rest.get("default", 0) is None and (rest.get("description") or merged.get("description")):
        del rest["default"]  # optional already: `required` leaves it out, and null is among its types
    return {**merged, **rest, "type": [m["type"] for m in members]}


def top_level_types(schema: dict[str, Any]) -> dict[str, Any]:
    """The object schema's top-level fields with their JSON types; `required` kept. An answer leaves a null
    field out (pilot.app.answers.responses), so a field that is not required is never null when present:
    its types say so without "null"."""
    required = list(schema.get("required") or ())
    properties = {
        name: _types(sub, schema, nullable=name in required)
        for name, sub in schema.get("properties", {}).items()
    }
    compact: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        compact["required"] = required
    return compact


def _types(sub: dict[str, Any], root: dict[str, Any], *, nullable: bool) -> dict[str, Any]:
    found: list[str] = []
    _collect(sub, root, found)
    kinds = [kind for kind in _JSON_TYPES if kind in found and (nullable or kind != "null")]
    return {"type": kinds[0] if len(kinds) == 1 else kinds}


def _collect(sub: dict[str, Any], root: dict[str, Any], found: list[str]) -> None:
    if "$ref" in sub:
        target = root.get("$defs", {}).get(sub["$ref"].rsplit("/", 1)[-1], {})
        found.append(target.get("type", "object") if isinstance(target.get("type"), str) else "object")
    kind = sub.get("type")
    if isinstance(kind, str):
        found.append(kind)
    elif isinstance(kind, list):
        found.extend(kind)
    if "enum" in sub and kind is None:
        found.extend(_json_type(value) for value in sub["enum"])
    for member in sub.get("anyOf", []) + sub.get("oneOf", []):
        _collect(member, root, found)
    if not found and not any(key in sub for key in ("$ref", "type", "anyOf", "oneOf", "enum")):
        found.extend(_JSON_TYPES)  # Any: every type


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object"
