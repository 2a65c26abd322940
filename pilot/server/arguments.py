"""Tool argument types and checks. A bad argument is JSON-RPC invalid_params naming the field and the fix."""

# No `from __future__ import annotations`: the SDK reads these annotations at runtime.

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import BeforeValidator, Field

from pilot.app.inputs import InvalidInput, decimal_arg, symbol_arg, text_arg

T = TypeVar("T")


def parsed(parse: Callable[[], T]) -> T:
    """Run an argument check; its InvalidInput becomes invalid_params with the same message."""
    try:
        return parse()
    except InvalidInput as error:
        raise MCPError(code=INVALID_PARAMS, message=str(error)) from None


def _no_numbers(field: str) -> BeforeValidator:
    """Refuse a JSON number for an amount, showing the string to send instead."""

    def check(value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            parsed(lambda: decimal_arg(field, value))
        return value

    return BeforeValidator(check)


Qty = Annotated[
    str | None,
    _no_numbers("qty"),
    Field(description='Quantity in base units, a decimal string such as "0.001"'),
]
Notional = Annotated[
    str | None, _no_numbers("notional_usd"), Field(description='Order value in USD instead of qty, e.g. "20"')
]
Price = Annotated[
    str | None,
    _no_numbers("price"),
    Field(description='Limit price, a decimal string; required for order_type "limit"'),
]
Leverage = Annotated[
    str, _no_numbers("leverage"), Field(description='Leverage as a decimal string, e.g. "2"')
]
Symbol = Annotated[str, Field(description='Bybit symbol, e.g. "BTCUSDT"')]
Category = Annotated[Literal["linear", "spot"], Field(description="Bybit category; default linear")]
IdempotencyKey = Annotated[
    str | None, Field(description="Optional: the same key with the same arguments replays the first answer")
]
OrderId = Annotated[str | None, Field(description="The exchange's order id")]
OrderLinkId = Annotated[str | None, Field(description="Or the client order id")]
PlanId = Annotated[str, Field(description="The plan_id from plan_order; nothing else can be given")]
ConfirmationId = Annotated[str, Field(description="The id returned with status pending_confirmation")]


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
        raise MCPError(code=INVALID_PARAMS, message="order_id: give order_id or order_link_id")
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
