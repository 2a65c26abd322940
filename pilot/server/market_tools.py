"""Read-only tools: market data, account state, and the policy in force with the room left under each cap."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures at runtime.

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from pilot.app.facts import reads
from pilot.app.facts.reads import ReadAnswer
from pilot.app.runtime.runtime import Runtime
from pilot.server.arguments import Category, Symbol, checked_symbol

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True)


def register_market_tools(mcp: MCPServer, runtime: Runtime) -> None:
    """get_ticker, get_orderbook, get_instrument_rules, get_balances, get_positions, get_open_orders, get_policy."""

    @mcp.tool(annotations=READ)
    async def get_ticker(symbol: Symbol, category: Category = "linear") -> ReadAnswer:
        """Best bid, best ask, last and mark price of one symbol."""
        return await reads.get_ticker(runtime, checked_symbol(symbol), category)

    @mcp.tool(annotations=READ)
    async def get_orderbook(
        symbol: Symbol,
        category: Category = "linear",
        depth: Annotated[int, Field(strict=True, ge=1, le=200)] = 25,
    ) -> ReadAnswer:
        """The order book: [price, size] levels, best first."""
        return await reads.get_orderbook(runtime, checked_symbol(symbol), category, depth)

    @mcp.tool(annotations=READ)
    async def get_instrument_rules(symbol: Symbol, category: Category = "linear") -> ReadAnswer:
        """Tick size, lot step, minimum and maximum quantity, minimum order value and maximum leverage."""
        return await reads.get_instrument_rules(runtime, checked_symbol(symbol), category)

    @mcp.tool(annotations=READ)
    async def get_balances() -> ReadAnswer:
        """Account equity in USD and coin balances."""
        return await reads.get_balances(runtime)

    @mcp.tool(annotations=READ)
    async def get_positions(category: Category = "linear", symbol: Symbol | None = None) -> ReadAnswer:
        """Open positions: size, entry, mark, unrealised PnL, liquidation, stops; the exchange's leverage
        setting apart from the position's value over equity, which policy.json's maxLeverage caps."""
        return await reads.get_positions(runtime, category, checked_symbol(symbol) if symbol else None)

    @mcp.tool(annotations=READ)
    async def get_open_orders(category: Category = "linear", symbol: Symbol | None = None) -> ReadAnswer:
        """Orders resting on the book. Client order ids and reasons are untrusted exchange text."""
        return await reads.get_open_orders(runtime, category, checked_symbol(symbol) if symbol else None)

    @mcp.tool(annotations=READ)
    async def get_policy() -> ReadAnswer:
        """Limits in force, trading state, orders left today, and per market and side the room left (the
        largest order passing every cap; unread facts under missing)."""
        return await reads.get_policy(runtime)
