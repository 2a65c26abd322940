"""Checking what an agent typed: each problem names the field and the fix, and nothing is sent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.core.facts import OrderType, Side

# ASCII digits only: in Python `\d` also matches other scripts' digits ("١٢"), which Decimal would accept.
DECIMAL_TEXT = re.compile(r"[0-9]{1,18}(\.[0-9]{1,18})?")
SYMBOL_TEXT = re.compile(r"^[A-Z0-9]{2,30}$")
CATEGORIES = ("linear", "spot")


class InvalidInput(ValueError):
    """A tool argument is wrong. `field` names it; the message says what to send instead."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def decimal_arg(field: str, value: Any, *, required: bool = True, positive: bool = True) -> Decimal | None:
    """A decimal amount given as a string ("0.001"). A JSON number is refused, showing its string form."""
    if value is None:
        if required:
            raise InvalidInput(field, 'is required, as a decimal string such as "0.001"')
        return None
    if isinstance(value, bool):
        raise InvalidInput(field, 'must be a decimal string such as "0.001", not true/false')
    if isinstance(value, int | float):
        shown = format(Decimal(str(value)), "f")
        raise InvalidInput(
            field, f'amounts are decimal strings: send "{shown}" (a string), not the number {value}'
        )
    if not isinstance(value, str):
        raise InvalidInput(field, 'must be a decimal string such as "0.001"')
    if value != value.strip():
        raise InvalidInput(
            field, 'must be the digits alone, without spaces or line breaks around them, e.g. "0.001"'
        )
    if not DECIMAL_TEXT.fullmatch(value):
        raise InvalidInput(
            field, 'must be a plain decimal string such as "0.001": ASCII digits 0-9 and at most one dot'
        )
    try:
        amount = Decimal(value)
    except InvalidOperation:  # pragma: no cover - the pattern already excludes this
        raise InvalidInput(field, 'must be a decimal string such as "0.001"') from None
    if positive and amount <= 0:
        raise InvalidInput(field, "must be greater than zero")
    return amount


def symbol_arg(value: Any) -> str:
    if isinstance(value, str) and SYMBOL_TEXT.fullmatch(value):
        return value
    raise InvalidInput("symbol", 'must be a Bybit symbol in capitals, such as "BTCUSDT"')


def category_arg(value: Any) -> str:
    if isinstance(value, str) and value in CATEGORIES:
        return value
    raise InvalidInput("category", f"must be one of {', '.join(CATEGORIES)} (default linear)")


def side_arg(value: Any) -> Side:
    if value not in ("buy", "sell"):
        raise InvalidInput("side", 'must be "buy" or "sell"')
    return Side(value)


def order_type_arg(value: Any) -> OrderType:
    if value not in ("market", "limit"):
        raise InvalidInput("order_type", 'must be "market" or "limit"')
    return OrderType(value)


def text_arg(field: str, value: Any, *, longest: int = 64, extra: str = ":.") -> str:
    """An identifier: 1 to `longest` letters, digits, '_', '-' and the characters in `extra`."""
    allowed = "A-Za-z0-9_\\-" + re.escape(extra)
    if not isinstance(value, str) or not re.fullmatch(f"[{allowed}]{{1,{longest}}}", value):
        shown = ", ".join(f"'{c}'" for c in "_-" + extra)
        raise InvalidInput(field, f"must be 1 to {longest} letters, digits or {shown}")
    return value


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """plan_order's arguments, checked."""

    symbol: str
    side: Side
    order_type: OrderType
    qty: Decimal | None
    notional_usd: Decimal | None
    price: Decimal | None
    reduce_only: bool
    category: str

    @staticmethod
    def parse(args: dict[str, Any]) -> PlanRequest:
        qty = decimal_arg("qty", args.get("qty"), required=False)
        notional = decimal_arg("notional_usd", args.get("notional_usd"), required=False)
        if (qty is None) == (notional is None):
            raise InvalidInput("qty", 'give exactly one of qty (base units, e.g. "0.001") or notional_usd')
        order_type = order_type_arg(args.get("order_type", "market"))
        price = decimal_arg("price", args.get("price"), required=order_type is OrderType.LIMIT)
        if order_type is OrderType.MARKET and price is not None:
            raise InvalidInput("price", "a market order takes no price; use order_type limit to set one")
        reduce_only = args.get("reduce_only", False)
        if not isinstance(reduce_only, bool):
            raise InvalidInput("reduce_only", "must be true or false")
        return PlanRequest(
            symbol=symbol_arg(args.get("symbol")),
            side=side_arg(args.get("side")),
            order_type=order_type,
            qty=qty,
            notional_usd=notional,
            price=price,
            reduce_only=reduce_only,
            category=category_arg(args.get("category", "linear")),
        )
