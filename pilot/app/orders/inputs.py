"""Checking what an agent typed: each problem names the field and the fix, and nothing is sent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.core.codes import Code
from pilot.core.facts import OrderType, Side
from pilot.core.policy import SYMBOL_PATTERN

# ASCII digits only: in Python `\d` also matches other scripts' digits ("١٢"), which Decimal would accept.
DECIMAL_TEXT = re.compile(r"[0-9]{1,18}(\.[0-9]{1,18})?")
CATEGORIES = ("linear", "spot")


# The rule of every answer to a call with a bad argument (the server's edge builds it: pilot/server/input_errors.py).
INVALID_ARGUMENT_RULE = Code.INVALID_ARGUMENT.value


class _Fix:
    """A sentinel for what the fixed call does with a field: leave the call unfixable, or drop the field."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_FIX = _Fix("NO_FIX")  # no call Pilot could write fixes it: the message says what to send
DROP = _Fix("DROP")  # the same call without this field is the fixed one


class InvalidInput(ValueError):
    """A tool argument is wrong. `field` names it; the message says what to send instead.

    `fixed` is the value that makes the call right when Pilot can tell it for certain (the string "0.001"
    for the number 0.001, "buy" for "Buy"), DROP when the field must go, NO_FIX when only the caller knows.
    """

    def __init__(self, field: str, message: str, *, fixed: Any = NO_FIX) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.fixed = fixed


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
            field,
            f'amounts are decimal strings: send "{shown}" (a string), not the number {value}',
            fixed=shown if DECIMAL_TEXT.fullmatch(shown) else NO_FIX,
        )
    if not isinstance(value, str):
        raise InvalidInput(field, 'must be a decimal string such as "0.001"')
    if value != value.strip():
        stripped = value.strip()
        raise InvalidInput(
            field,
            'must be the digits alone, without spaces or line breaks around them, e.g. "0.001"',
            fixed=stripped if DECIMAL_TEXT.fullmatch(stripped) else NO_FIX,
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
    """A market's symbol in the venue's spelling (pilot.core.policy.SYMBOL_PATTERN, the policy's rule too)."""
    if isinstance(value, str) and SYMBOL_PATTERN.fullmatch(value):
        return value
    upper = value.upper() if isinstance(value, str) and value.isascii() else None
    raise InvalidInput(
        "symbol",
        'must be a symbol in capitals as the exchange spells it, such as "BTCUSDT" (Bybit) or "BTC-USDT" (OKX)',
        fixed=upper if upper and SYMBOL_PATTERN.fullmatch(upper) else NO_FIX,
    )


def one_of(field: str, value: Any, choices: tuple[str, ...], hint: str = "") -> str:
    """`value` if it is one of `choices`; else InvalidInput, fixed when only its case was wrong."""
    if isinstance(value, str) and value in choices:
        return value
    same = [choice for choice in choices if isinstance(value, str) and value.strip().lower() == choice]
    quoted = " or ".join(f'"{choice}"' for choice in choices)
    raise InvalidInput(field, f"must be {quoted}{hint}", fixed=same[0] if same else NO_FIX)


def category_arg(value: Any) -> str:
    return one_of("category", value, CATEGORIES, " (default linear)")


def side_arg(value: Any) -> Side:
    return Side(one_of("side", value, ("buy", "sell")))


def order_type_arg(value: Any) -> OrderType:
    return OrderType(one_of("order_type", value, ("market", "limit"), ' (default "market")'))


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
    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None

    @staticmethod
    def parse(args: dict[str, Any]) -> PlanRequest:
        qty = decimal_arg("qty", args.get("qty"), required=False)
        notional = decimal_arg("notional_usd", args.get("notional_usd"), required=False)
        if (qty is None) == (notional is None):
            raise InvalidInput("qty", 'give exactly one of qty (base units, e.g. "0.001") or notional_usd')
        order_type = order_type_arg(args.get("order_type", "market"))
        price = decimal_arg("price", args.get("price"), required=order_type is OrderType.LIMIT)
        if order_type is OrderType.MARKET and price is not None:
            raise InvalidInput("price", 'a market order takes no price; use order_type "limit" to set one')
        reduce_only = args.get("reduce_only", False)
        if not isinstance(reduce_only, bool):
            raise InvalidInput("reduce_only", "must be true or false")
        category = category_arg(args.get("category", "linear"))
        stop_loss = decimal_arg("stop_loss", args.get("stop_loss"), required=False)
        take_profit = decimal_arg("take_profit", args.get("take_profit"), required=False)
        side = side_arg(args.get("side"))
        for field, value in (("stop_loss", stop_loss), ("take_profit", take_profit)):
            if value is not None and category == "spot" and side is Side.SELL:
                raise InvalidInput(
                    field, "a spot sell takes no stop_loss or take_profit: it sells coin held", fixed=DROP
                )
            if value is not None and reduce_only:
                raise InvalidInput(
                    field,
                    "a reduce-only order takes none: set the position's with set_trading_stop",
                    fixed=DROP,
                )
        return PlanRequest(
            symbol=symbol_arg(args.get("symbol")),
            side=side,
            order_type=order_type,
            qty=qty,
            notional_usd=notional,
            price=price,
            reduce_only=reduce_only,
            category=category,
            stop_loss=stop_loss,
            take_profit=take_profit,
        )
