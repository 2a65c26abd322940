"""The tools that plan or change state: plan_order, place_order, close_position, cancel_order, set_leverage,
activate_kill_switch. Each parses, calls one use case, and returns its answer."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures at runtime.

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.types import ToolAnnotations
from pydantic import Field

from pilot.app.answers.responses import ActionAnswer, OrderAnswer, PlanAnswer
from pilot.app.human import kill_switch
from pilot.app.orders import cancel_and_leverage, close, place, plan
from pilot.app.orders.idempotency import idempotent
from pilot.app.orders.inputs import PlanRequest
from pilot.app.runtime.runtime import Runtime
from pilot.server import arguments
from pilot.server.arguments import (
    Category,
    Flag,
    IdempotencyKey,
    Leverage,
    Notional,
    OrderId,
    OrderLinkId,
    PlanId,
    Price,
    Qty,
    StopLoss,
    Symbol,
    TakeProfit,
    checked_symbol,
    parsed,
)
from pilot.server.forms import Confirmation, Resolvers, can_reach_human, channel, send_to_console

PLAN = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
TRADE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
SAFE_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Cancels take orders off the exchange (cancel_all_orders may take the stops too): destructive, idempotent.
CANCEL = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True
)


def register_trading_tools(mcp: MCPServer, runtime: Runtime, resolvers: Resolvers) -> None:
    """plan_order and the state-changing tools; those that may need a human ask through `resolvers`."""
    _register_plan_order(mcp, runtime)
    _register_place_order(mcp, runtime, resolvers)
    _register_close_position(mcp, runtime, resolvers)
    _register_cancel_order(mcp, runtime, resolvers)
    _register_set_leverage(mcp, runtime, resolvers)
    _register_activate_kill_switch(mcp, runtime)


def _register_plan_order(mcp: MCPServer, runtime: Runtime) -> None:
    @mcp.tool(annotations=PLAN)
    async def plan_order(
        symbol: Symbol,
        side: Literal["buy", "sell"],
        ctx: Context,
        qty: Qty = None,
        notional_usd: Notional = None,
        order_type: Literal["market", "limit"] = "market",
        price: Price = None,
        reduce_only: Flag = False,
        category: Category = "linear",
        stop_loss: StopLoss = None,
        take_profit: TakeProfit = None,
    ) -> PlanAnswer:
        """Judge an order on live facts; sends nothing. Give qty or notional_usd (stop_loss, take_profit go
        with it). Answer: ok with a single-use plan_id and the exact order, or refused with violations and
        next_safe_action."""
        args = {
            "symbol": symbol,
            "side": side,
            "qty": qty,
            "notional_usd": notional_usd,
            "order_type": order_type,
            "price": price,
            "reduce_only": reduce_only,
            "category": category,
            "stop_loss": stop_loss,
            "take_profit": take_profit,
        }
        request = parsed(lambda: PlanRequest.parse(args))
        return await plan.plan_order(runtime, request, can_reach_human=can_reach_human(runtime, ctx))


def _register_place_order(mcp: MCPServer, runtime: Runtime, resolvers: Resolvers) -> None:
    @mcp.tool(annotations=TRADE)
    async def place_order(
        plan_id: PlanId, confirmation: Annotated[Confirmation, Resolve(resolvers.for_plan)], ctx: Context
    ) -> OrderAnswer:
        """Send the planned order (or amend) once, judged again on fresh facts. Answer: filled, open, rejected,
        outcome_unknown (look it up, never resend), refused, declined or pending_confirmation."""
        answer = await place.place_order(runtime, arguments.plan_id(plan_id), channel(confirmation))
        return await send_to_console(runtime, ctx, answer)


def _register_close_position(mcp: MCPServer, runtime: Runtime, resolvers: Resolvers) -> None:
    @mcp.tool(annotations=TRADE)
    async def close_position(
        symbol: Symbol,
        confirmation: Annotated[Confirmation, Resolve(resolvers.for_close)],
        ctx: Context,
        qty: Qty = None,
        category: Category = "linear",
        idempotency_key: IdempotencyKey = None,
    ) -> OrderAnswer:
        """Shrink or close a position (all of it without qty): a reduce-only Limit IOC at the worst price
        within maxSlippagePct."""
        amount = arguments.optional_amount("qty", qty)
        checked = checked_symbol(symbol)
        answer = await idempotent(
            runtime,
            arguments.idempotency_key(idempotency_key),
            "close_position",
            {"symbol": symbol, "qty": qty, "category": category},
            lambda: close.close_position(runtime, checked, amount, category, channel(confirmation)),
            OrderAnswer,
        )
        return await send_to_console(runtime, ctx, answer)


def _register_cancel_order(mcp: MCPServer, runtime: Runtime, resolvers: Resolvers) -> None:
    @mcp.tool(annotations=TRADE)
    async def cancel_order(
        symbol: Symbol,
        confirmation: Annotated[Confirmation, Resolve(resolvers.for_cancel)],
        ctx: Context,
        order_id: OrderId = None,
        order_link_id: OrderLinkId = None,
        category: Category = "linear",
        idempotency_key: IdempotencyKey = None,
    ) -> ActionAnswer:
        """Cancel one open order. Works in every trading state."""
        arguments.order_ids(order_id, order_link_id)
        checked = checked_symbol(symbol)
        answer = await idempotent(
            runtime,
            arguments.idempotency_key(idempotency_key),
            "cancel_order",
            {"symbol": symbol, "order_id": order_id, "order_link_id": order_link_id, "category": category},
            lambda: cancel_and_leverage.cancel_order(
                runtime, checked, order_id, order_link_id, category, channel(confirmation)
            ),
            ActionAnswer,
        )
        return await send_to_console(runtime, ctx, answer)


def _register_set_leverage(mcp: MCPServer, runtime: Runtime, resolvers: Resolvers) -> None:
    @mcp.tool(annotations=TRADE)
    async def set_leverage(
        symbol: Symbol,
        leverage: Leverage,
        confirmation: Annotated[Confirmation, Resolve(resolvers.for_leverage)],
        ctx: Context,
        category: Category = "linear",
        idempotency_key: IdempotencyKey = None,
    ) -> ActionAnswer:
        """Set leverage. Lowering is always allowed (unless halted); raising must fit maxLeverage."""
        value = arguments.amount("leverage", leverage)
        checked = checked_symbol(symbol)
        answer = await idempotent(
            runtime,
            arguments.idempotency_key(idempotency_key),
            "set_leverage",
            {"symbol": symbol, "leverage": leverage, "category": category},
            lambda: cancel_and_leverage.set_leverage(
                runtime, checked, value, category, channel(confirmation)
            ),
            ActionAnswer,
        )
        return await send_to_console(runtime, ctx, answer)


def _register_activate_kill_switch(mcp: MCPServer, runtime: Runtime) -> None:
    @mcp.tool(annotations=SAFE_WRITE)
    async def activate_kill_switch(
        reason: Annotated[str, Field(description="Why, in a few words", max_length=200)] = "",
        idempotency_key: IdempotencyKey = None,
    ) -> ActionAnswer:
        """Turn the kill switch on: from then on only orders that shrink positions work. Only a human can
        turn it off."""
        return await idempotent(
            runtime,
            arguments.idempotency_key(idempotency_key),
            "activate_kill_switch",
            {"reason": reason},
            lambda: kill_switch.activate_kill_switch(runtime, reason),
            ActionAnswer,
        )
