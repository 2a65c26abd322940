"""A suggested plan_order call, made unchanged: the order it names on the same facts (stop and target
included), as an agent that follows next_safe_action sends it."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from pilot.core.facts import Facts, OrderIntent, OrderType, Side


def replay(f: Facts, args: dict[str, Any]) -> Facts:
    """The suggested call's order on the same facts."""
    order = OrderIntent(
        symbol=args["symbol"],
        side=Side(args["side"]),
        qty=Decimal(args["qty"]),
        order_type=OrderType(args["order_type"]),
        limit_price=Decimal(args["price"]) if "price" in args else None,
        reduce_only=args["reduce_only"],
        category=args["category"],
        stop_loss=Decimal(args["stop_loss"]) if "stop_loss" in args else None,
        take_profit=Decimal(args["take_profit"]) if "take_profit" in args else None,
    )
    return replace(f, order=order)
