"""Tool argument types and checks. A bad argument is an ArgumentProblem naming the field, what is wrong and,
when Pilot can tell it for certain, the value that fixes it; pilot/server/input_errors.py turns it into the
tool's answer (a result with isError, so the model sees it and corrects its call)."""

# No `from __future__ import annotations`: the SDK reads these annotations at runtime.

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Literal, TypeVar

from pydantic import BeforeValidator, Field

from pilot.app.orders.inputs import NO_FIX, InvalidInput, decimal_arg, symbol_arg, text_arg

T = TypeVar("T")

DECIMAL_ACCEPTED = 'a decimal string of ASCII digits and at most one dot, such as "0.001"'
# What each field accepts, for the `limit` of an invalidArgument violation.
ACCEPTED = {
    "qty": DECIMAL_ACCEPTED,
    "notional_usd": DECIMAL_ACCEPTED,
    "price": DECIMAL_ACCEPTED,
    "leverage": DECIMAL_ACCEPTED,
    "symbol": 'a symbol in capitals as the exchange spells it, such as "BTCUSDT" (Bybit) or "BTC-USDT" (OKX)',
    "side": '"buy" or "sell"',
    "order_type": '"market" or "limit"',
    "category": '"linear" or "spot"',
    "reduce_only": "true or false",
    "order_id": "an order id (or order_link_id) from get_open_orders",
    "order_link_id": "an order id (or order_link_id) from get_open_orders",
    "plan_id": "a plan_id from plan_order",
    "confirmation_id": "a confirmation_id from a pending_confirmation answer",
    "idempotency_key": "1 to 64 letters, digits, '_', '-', ':' or '.'",
    "stop_loss": DECIMAL_ACCEPTED,
    "take_profit": DECIMAL_ACCEPTED,
    "cursor": "the next_cursor of the previous page",
}


class ArgumentProblem(Exception):
    """One bad argument: `field`, the `problem` in plain words, what is `accepted`, and the `fixed` value
    (or DROP, or NO_FIX). `drop` lists every field the fixed call leaves out (all the unknown ones).

    Deliberately not a ValueError: pydantic passes it through its validators unchanged, so it reaches the
    server's edge whether it was raised while the SDK validated the arguments, in a resolver or in a tool.
    """

    def __init__(
        self,
        field: str,
        problem: str,
        *,
        fixed: object = NO_FIX,
        accepted: str | None = None,
        drop: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
        self.fixed = fixed
        self.accepted = accepted or ACCEPTED.get(field, "see the tool's input schema")
        self.drop = drop


def parsed(parse: Callable[[], T]) -> T:
    """Run an argument check; its InvalidInput becomes an ArgumentProblem with the same field and fix."""
    try:
        return parse()
    except InvalidInput as error:
        raise ArgumentProblem(error.field, error.message, fixed=error.fixed) from None


def _no_numbers(field: str) -> BeforeValidator:
    """Refuse a JSON number for an amount, showing (and fixing it to) the string to send instead."""

    def check(value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            parsed(lambda: decimal_arg(field, value))
        return value

    return BeforeValidator(check)


Qty = Annotated[
    str | None,
    _no_numbers("qty"),
    Field(description='Base units, e.g. "0.001"'),
]
Notional = Annotated[
    str | None, _no_numbers("notional_usd"), Field(description='Or the order value in USD, e.g. "50"')
]
Price = Annotated[
    str | None,
    _no_numbers("price"),
    Field(description="Limit price; order_type limit only"),
]
StopLoss = Annotated[
    str | None,
    _no_numbers("stop_loss"),
    Field(description="Stop-loss price"),
]
TakeProfit = Annotated[str | None, _no_numbers("take_profit"), Field(description="Take-profit price")]
Cursor = Annotated[str | None, Field(description="A next_cursor")]
# A switch takes only JSON's true or false: pydantic's lax bool reads "yes", "on", "1" or 1 as true, so a
# model's guess would decide, say, whether cancel_all_orders removes the positions' stops too.
Flag = Annotated[bool, Field(strict=True)]
Leverage = Annotated[str, _no_numbers("leverage"), Field(description='A decimal string, e.g. "2"')]
Symbol = Annotated[str, Field(description='e.g. "BTCUSDT"')]
Category = Literal["linear", "spot"]
IdempotencyKey = Annotated[str | None, Field(description="Same key, same arguments: the first answer again")]
OrderId = Annotated[str | None, Field(description="The exchange's order id")]
OrderLinkId = Annotated[str | None, Field(description="Or the client order id")]
PlanId = Annotated[str, Field(description="The plan_id from plan_order")]
ConfirmationId = Annotated[str, Field(description="From a pending_confirmation answer")]


def amount(field: str, value: str) -> Decimal:
    """A required decimal amount."""
    checked = parsed(lambda: decimal_arg(field, value))
    assert checked is not None, "decimal_arg returns a value when one is required"
    return checked


def optional_amount(field: str, value: str | None) -> Decimal | None:
    return parsed(lambda: decimal_arg(field, value, required=False))


def checked_symbol(value: str) -> str:
    return parsed(lambda: symbol_arg(value))


def order_ids(order_id: str | None, order_link_id: str | None) -> None:
    """At least one id, each a plain identifier."""
    if not order_id and not order_link_id:
        raise ArgumentProblem("order_id", "give order_id or order_link_id (get_open_orders lists both)")
    for field, value in (("order_id", order_id), ("order_link_id", order_link_id)):
        if value is not None:
            _identifier(field, value)


def _identifier(field: str, value: str) -> str:
    return parsed(lambda: text_arg(field, value))


def plan_id(value: str) -> str:
    return parsed(lambda: text_arg("plan_id", value, longest=80, extra=""))


def confirmation_id(value: str) -> str:
    return parsed(lambda: text_arg("confirmation_id", value))


def idempotency_key(value: str | None) -> str | None:
    return None if value is None else parsed(lambda: text_arg("idempotency_key", value))
