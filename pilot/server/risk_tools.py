"""Tools around amends, stops and history: plan_amend, cancel_all_orders, set_trading_stop (through the gate,
journaled), and the paged reads get_order_history, get_fills, get_closed_pnl."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures at runtime.

from decimal import Decimal
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from pilot.app.answers.responses import ActionAnswer, PlanAnswer
from pilot.app.facts.reads import ReadAnswer
from pilot.app.orders import amend, protection
from pilot.app.orders.inputs import DROP, decimal_arg
from pilot.app.runtime.runtime import Runtime
from pilot.server import arguments
from pilot.server.arguments import (
    Category,
    Cursor,
    Flag,
    OrderId,
    OrderLinkId,
    Price,
    Qty,
    StopLoss,
    Symbol,
    TakeProfit,
    checked_symbol,
)
from pilot.server.forms import can_reach_human
from pilot.server.market_tools import READ
from pilot.server.trading_tools import CANCEL, PLAN

PAGE = 20


def register_risk_tools(mcp: MCPServer, runtime: Runtime) -> None:
    """plan_amend, cancel_all_orders, set_trading_stop, get_order_history, get_fills, get_closed_pnl."""
    _register_amend_and_stops(mcp, runtime)
    _register_history_reads(mcp, runtime)


def _register_amend_and_stops(mcp: MCPServer, runtime: Runtime) -> None:
    """plan_amend, cancel_all_orders and set_trading_stop: what changes resting orders and a position's stops."""

    @mcp.tool(annotations=PLAN)
    async def plan_amend(
        symbol: Symbol,
        ctx: Context,
        order_id: OrderId = None,
        order_link_id: OrderLinkId = None,
        qty: Qty = None,
        price: Price = None,
        category: Category = "linear",
    ) -> PlanAnswer:
        """Judge a new total qty and/or price for an open order; sends nothing. Answer as plan_order's: a
        plan_id for place_order, or refused with violations and next_safe_action."""
        arguments.order_ids(order_id, order_link_id)
        if qty is None and price is None:
            raise arguments.ArgumentProblem("qty", "give qty, price or both")
        ask = amend.AmendAsk(
            checked_symbol(symbol),
            order_id,
            order_link_id if not order_id else None,
            arguments.optional_amount("qty", qty),
            arguments.optional_amount("price", price),
            category,
        )
        return await amend.plan_amend(runtime, ask, can_reach_human=can_reach_human(runtime, ctx))

    @mcp.tool(annotations=CANCEL)
    async def cancel_all_orders(
        symbol: Symbol | None = None,
        category: Category = "linear",
        include_stops: Annotated[
            Flag, Field(description="Also cancel TP/SL and conditional orders (judged by the stop rules)")
        ] = False,
    ) -> ActionAnswer:
        """Cancel every open order (of one symbol, or all); the positions' stops stay unless include_stops.
        Ordinary orders: every trading state."""
        return await protection.cancel_all_orders(
            runtime, checked_symbol(symbol) if symbol else None, category, include_stops=include_stops
        )

    @mcp.tool(annotations=PLAN)
    async def set_trading_stop(
        symbol: Symbol, stop_loss: StopLoss = None, take_profit: TakeProfit = None
    ) -> ActionAnswer:
        """Set a position's stop_loss and/or take_profit ("0" removes). Closer or new: allowed; farther or
        removed: judged by the loss rules."""
        if stop_loss is None and take_profit is None:
            raise arguments.ArgumentProblem("stop_loss", "give stop_loss, take_profit or both")
        stop = arguments.parsed(lambda: _price("stop_loss", stop_loss))
        target = arguments.parsed(lambda: _price("take_profit", take_profit))
        return await protection.set_trading_stop(runtime, checked_symbol(symbol), stop, target)


def _register_history_reads(mcp: MCPServer, runtime: Runtime) -> None:
    """get_order_history, get_fills and get_closed_pnl: the paged reads of what happened."""

    @mcp.tool(annotations=READ)
    async def get_order_history(
        category: Category = "linear", symbol: Symbol | None = None, cursor: Cursor = None
    ) -> ReadAnswer:
        """Closed orders, newest first, 20 a page; next_cursor gets the next."""
        checked = checked_symbol(symbol) if symbol else None
        return await protection.get_order_history(runtime, category, checked, _cursor(cursor), PAGE)

    @mcp.tool(annotations=READ)
    async def get_fills(
        category: Category = "linear", symbol: Symbol | None = None, cursor: Cursor = None
    ) -> ReadAnswer:
        """Fills, newest first, 20 a page; funding and other rows that trade nothing are in not_fills;
        next_cursor gets the next."""
        checked = checked_symbol(symbol) if symbol else None
        return await protection.get_fills(runtime, category, checked, _cursor(cursor), PAGE)

    @mcp.tool(annotations=READ)
    async def get_closed_pnl(symbol: Symbol | None = None, cursor: Cursor = None) -> ReadAnswer:
        """Realised PnL per closing order, newest first, 20 a page; next_cursor gets the next."""
        checked = checked_symbol(symbol) if symbol else None
        return await protection.get_closed_pnl(runtime, checked, _cursor(cursor), PAGE)


def _price(field: str, value: str | None) -> Decimal | None:
    return decimal_arg(field, value, required=False, positive=False)


def _cursor(value: str | None) -> str | None:
    if value is not None and (len(value) > 500 or not value.isprintable()):
        raise arguments.ArgumentProblem("cursor", "is not a cursor the exchange gave", fixed=DROP)
    return value or None
