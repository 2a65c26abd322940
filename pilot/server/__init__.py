"""Pilot's MCP server: thin tools that parse, call one use case, and return its answer.

This package is the only importer of the MCP server SDK. Its modules, by concern:

    build.py           build_server(): the server, its instructions, which tools it exposes
    tool_sets.py       the tool sets of `pilot serve --tools`: read, trade, all
    market_tools.py    read-only tools: market data, account state, the policy in force
    trading_tools.py   plan_order, place_order, close_position, cancel_order, set_leverage, kill switch
    approval_tools.py  reading or withdrawing a parked confirmation (never approving)
    forms.py           asking a human through the client's form, and the typed answer the use cases get
    arguments.py       argument types and their checks: each problem is an ArgumentProblem naming the field
    strict.py          the shim that makes the SDK refuse unknown arguments instead of ignoring them
    input_errors.py    the one edge where an ArgumentProblem becomes the tool's answer (isError, the fix)
    store_refusals.py  the one edge where a failing store (disk full, I/O error) becomes the tool's answer
    environment.py     every answer names its environment (paper, bybit-demo, bybit-testnet, okx-demo)
    schemas.py         what tools/list costs: one-paragraph descriptions, trimmed schemas
    stdio.py           MCP over stdio that answers what it read before it stops at the end of its input
    http.py            Streamable HTTP on loopback (another host only if allowed): Pilot's bearer tokens,
                       Host and Origin checks, one access line per request, idle sessions forgotten, a
                       client that leaves mid-request one log line

Refusals are answers, not errors. No tool can approve a confirmation, change policy.json, or turn the kill
switch off.
"""

from pilot.server.build import build_server
from pilot.server.http import http_app, serve_http

__all__ = ["build_server", "http_app", "serve_http"]
