"""Every use of the MCP SDK's private API, in one module.

mcp 2.3 has public ways to register tools, remove one, list them for a client, call one, and wrap every
inbound message (`MCPServer(middleware=...)`, used by pilot/server/middleware.py). It has none for what Pilot
does once, after its tools are registered, to the SDK's own records of them (`mcp._tool_manager`'s `Tool`s,
which the SDK reads live on every tools/list and tools/call):

    wrap_tools        wrap every tool's function: store faults answered, the environment named
                      (pilot/server/store_refusals.py, environment.py)
    strict_arguments  swap every tool's argument model for one that refuses what the tool does not take
                      (pilot/server/strict.py)
    reshape_listings  trim what tools/list shows of every tool (pilot/server/schemas.py)
    serve_streams     run the low-level server on streams of Pilot's own (pilot/server/stdio.py)
    own_logging       build MCPServer without its logging set-up where the root logger has its handler
                      already (pilot/server/build.py)
    add_tool          register a tool from the records built for the same function before, in this process
                      (pilot/server/build.py's PilotServer.add_tool)

The modules named beside each say what and why in Pilot's words, and hold no SDK internals themselves:
`tests/server/test_sdk_edge.py` fails if `_tool_manager`, a `Tool` record's private fields or an SDK module
whose name starts with `_` is reached anywhere else. `pyproject.toml` pins mcp to 2.3.x; the tests that
every answer names its environment, that unknown arguments are refused and that a store fault is each tool's
answer fail if an upgrade moves any of this.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver import server as mcpserver_module
from mcp.server.mcpserver.resolve import build_resolver_plans, find_resolved_parameters
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.shared.message import SessionMessage
from mcp.types import ToolAnnotations
from pydantic import BaseModel

ToolFunction = Callable[..., Awaitable[object]]


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What a wrapper of a tool's function may need to know of the tool: its name and the type its answers
    are validated against (a pilot.app answer model, usually)."""

    name: str
    answer_type: object


@dataclass(frozen=True, slots=True)
class Listing:
    """What tools/list shows of one tool that Pilot reshapes."""

    description: str
    input_schema: dict[str, Any]
    annotations: ToolAnnotations | None
    output_schema: dict[str, Any] | None


def _records(mcp: MCPServer) -> list[Tool]:
    return mcp._tool_manager.list_tools()


# The record the SDK built for each tool function, by the function's code, with what it was built from.
# Every server's tools are closures over its own Runtime with the same signatures, and building a record
# (pydantic's argument model and JSON schemas of the arguments and the answer) was most of building a
# server: about 0.1 s each time, paid by every `pilot serve` start and every test that builds a server.
# A form's resolver in a tool's annotations is the server's own (a bound method of its Resolvers): the
# record is reused, and its resolvers taken again from the function (the SDK's own two steps for them).
# Bounded: one entry per tool function Pilot defines (about thirty), whatever the number of servers.
_BUILT: dict[object, tuple[tuple[str, ...], Tool]] = {}
# A Resolve marker's repr names only its address: the one part of a signature that differs per server.
_RESOLVE_AT = re.compile(r"<mcp\.server\.mcpserver\.resolve\.Resolve object at 0x[0-9a-fA-F]+>")


def add_tool(mcp: MCPServer, fn: Callable[..., Any], options: dict[str, Any]) -> None:
    """Register `fn` on `mcp` as the SDK's ToolManager.add_tool does (a name registered already is kept),
    from the record built before for the same code, defaults, annotations and `options`, if any: the one
    difference between two servers' records is then the function, and what Pilot rewrites later on each
    server (strict_arguments, reshape_listings, wrap_tools) is the server's own copy."""
    made_of = (
        repr(fn.__defaults__),
        repr(fn.__kwdefaults__),
        _RESOLVE_AT.sub("Resolve", repr(fn.__annotations__)),
        repr(sorted(options.items())),
    )
    cached = _BUILT.get(fn.__code__)
    if cached is not None and cached[0] == made_of:
        built = cached[1]
    else:
        built = Tool.from_function(fn, **options)
        _BUILT[fn.__code__] = (made_of, built)
    tools = mcp._tool_manager._tools
    if built.name not in tools:
        tools[built.name] = _own_copy(built, fn)


def _resolvers_of(built: Tool, fn: Callable[..., Any]) -> dict[str, Any]:
    """`fn`'s own resolvers and their plans, as Tool.from_function finds them (none: the record's empty ones)."""
    if not built.resolved_params:
        return {"resolved_params": {}, "resolver_plans": {}}
    resolved = find_resolved_parameters(fn)
    model = built.fn_metadata.arg_model
    names = {field.alias or name for name, field in model.model_fields.items()}
    return {"resolved_params": resolved, "resolver_plans": build_resolver_plans(resolved, names)}


def _own_copy(built: Tool, fn: Callable[..., Any]) -> Tool:
    # Shallow copies: Pilot's rewriters above set a schema's top-level keys (strict_arguments) or replace a
    # schema whole (reshape_listings), never a nested part; copying the nested parts cost as much as the
    # SDK's building did.
    schema = built.fn_metadata.output_schema
    metadata = built.fn_metadata.model_copy(
        update={"output_schema": None if schema is None else dict(schema)}
    )
    own = {
        "fn": fn,
        "parameters": dict(built.parameters),
        "fn_metadata": metadata,
        "meta": None if built.meta is None else dict(built.meta),
        **_resolvers_of(built, fn),
    }
    return built.model_copy(update=own)


def tool_names(mcp: MCPServer) -> list[str]:
    """The names of the tools registered on `mcp`, in registration order."""
    return [tool.name for tool in _records(mcp)]


def wrap_tools(mcp: MCPServer, wrap: Callable[[ToolFacts, ToolFunction], ToolFunction]) -> None:
    """Replace every registered tool's function by `wrap(facts, function)` (its signature kept by the
    wrapper, as `functools.wraps` keeps it; the SDK has already read it)."""
    for tool in _records(mcp):
        tool.fn = wrap(ToolFacts(tool.name, tool.fn_metadata.output_model), _awaitable(tool.fn))


def _awaitable(fn: Callable[..., object]) -> ToolFunction:
    if not inspect.iscoroutinefunction(fn):  # the SDK would run it on a worker thread, the wrappers not
        raise TypeError(f"{getattr(fn, '__name__', fn)}: a Pilot tool is a coroutine function (async def)")
    return fn


def strict_arguments(
    mcp: MCPServer, make_strict: Callable[[str, type[BaseModel], list[str]], type[BaseModel]]
) -> None:
    """Give every tool the argument model `make_strict(tool, model, takes)` builds on its own (`takes`: the
    arguments a caller may send, those filled by the server left out), and say in its input schema that it
    takes nothing else."""
    for tool in _records(mcp):
        base = tool.fn_metadata.arg_model
        takes = sorted(name for name in base.model_fields if not _filled_by_the_server(tool, name))
        strict = make_strict(tool.name, base, takes)
        if not issubclass(strict, ArgModelBase):
            raise TypeError(f"{tool.name}: an argument model must extend the tool's own ({base.__name__})")
        tool.fn_metadata.arg_model = strict
        tool.parameters["additionalProperties"] = False


def _filled_by_the_server(tool: Tool, name: str) -> bool:
    """A parameter the SDK fills itself: the Context, or one a resolver (a form) answers."""
    return name in tool.resolved_params or name == tool.context_kwarg


def reshape_listings(mcp: MCPServer, reshape: Callable[[Listing], Listing]) -> None:
    """Show every tool in tools/list as `reshape` has it (the SDK reads these records on every tools/list)."""
    for tool in _records(mcp):
        before = Listing(tool.description, tool.parameters, tool.annotations, tool.fn_metadata.output_schema)
        after = reshape(before)
        tool.description, tool.parameters, tool.annotations = (
            after.description,
            after.input_schema,
            after.annotations,
        )
        if after.output_schema is not before.output_schema:
            tool.fn_metadata.output_schema = after.output_schema
            tool.__dict__.pop("output_schema", None)  # the SDK caches it on first read


async def serve_streams(
    mcp: MCPServer,
    incoming: ObjectReceiveStream[SessionMessage | Exception],
    outgoing: ObjectSendStream[SessionMessage],
) -> None:
    """Run `mcp`'s low-level server on these streams until `incoming` ends (the SDK's stdio, on Pilot's own
    pipes: pilot/server/stdio.py)."""
    lowlevel = mcp._lowlevel_server
    await lowlevel.run(incoming, outgoing, lowlevel.create_initialization_options())


@contextlib.contextmanager
def own_logging() -> Iterator[None]:
    """MCPServer() built without its logging set-up, where the root logger has a handler already.

    MCPServer's constructor calls configure_logging, which imports rich and builds a rich console handler,
    then hands it to logging.basicConfig, which does nothing where the root logger has a handler (`pilot
    serve` sets its own first): rich was a start's largest import no server uses. Elsewhere (no handler
    yet) the SDK sets up its logging as ever.
    """
    if not logging.getLogger().handlers:
        yield
        return
    sdk_configure = mcpserver_module.configure_logging
    mcpserver_module.configure_logging = _leave_logging
    try:
        yield
    finally:
        mcpserver_module.configure_logging = sdk_configure


def _leave_logging(level: str = "INFO") -> None:
    """What configure_logging does where the root logger has a handler: nothing."""
