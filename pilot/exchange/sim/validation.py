"""Order checks in Bybit's order and with Bybit's retCodes (linear first, spot second in each pair)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.exchange.sim.market import Quote
from pilot.exchange.sim.scenario import InstrumentSpec

LINK_ID = re.compile(r"^[A-Za-z0-9_-]{1,36}$")
TIME_IN_FORCE = ("GTC", "IOC", "FOK", "PostOnly")


class SimReject(Exception):
    """A definite refusal: the retCode and retMsg the paper exchange answers with (HTTP 200)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def pick(category: str, linear_code: int, spot_code: int) -> int:
    return spot_code if category == "spot" else linear_code


@dataclass(frozen=True, slots=True)
class NewOrder:
    """A create request after parsing: Decimal numbers, Bybit's names."""

    category: str
    symbol: str
    side: str
    order_type: str
    qty: Decimal
    price: Decimal | None
    time_in_force: str
    order_link_id: str
    reduce_only: bool
    market_unit: str


def parse_new_order(category: str, params: dict[str, Any]) -> NewOrder:
    """Check presence and shape of the create parameters (10001 / 170130)."""
    bad = pick(category, 10001, 170130)
    side = params.get("side")
    order_type = params.get("orderType")
    if side not in ("Buy", "Sell"):
        raise SimReject(bad, "params error: side invalid")
    if order_type not in ("Market", "Limit"):
        raise SimReject(bad, "params error: orderType invalid")
    qty = to_decimal(params.get("qty"), "qty", bad)
    price = None
    if order_type == "Limit":
        price = to_decimal(params.get("price"), "price", bad)
    tif = "IOC" if order_type == "Market" else str(params.get("timeInForce") or "GTC")
    if tif not in TIME_IN_FORCE:
        raise SimReject(bad, "params error: timeInForce invalid")
    link = str(params.get("orderLinkId") or "")
    if link and not LINK_ID.match(link):
        raise SimReject(bad, "params error: orderLinkId invalid")
    reduce_only = params.get("reduceOnly") in (True, "true", "True", 1, "1")
    if reduce_only and category == "spot":
        raise SimReject(bad, "params error: reduceOnly is not supported for spot")
    unit = str(
        params.get("marketUnit") or ("quoteCoin" if category == "spot" and side == "Buy" else "baseCoin")
    )
    return NewOrder(
        category, str(params.get("symbol") or ""), side, order_type, qty, price, tif, link, reduce_only, unit
    )


def to_decimal(value: Any, name: str, code: int) -> Decimal:
    if value is None or isinstance(value, bool):
        raise SimReject(code, f"params error: {name} is required")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise SimReject(code, f"params error: {name} invalid") from None
    if not number.is_finite() or number <= 0:
        raise SimReject(code, f"params error: {name} must be positive")
    return number


def check_qty(instrument: InstrumentSpec, qty: Decimal) -> None:
    spot = instrument.category == "spot"
    if qty % instrument.qty_step != 0:
        raise SimReject(
            170137 if spot else 10001,
            "Order quantity has too many decimals."
            if spot
            else f"Qty invalid: qty {qty} is not a multiple of qtyStep {instrument.qty_step}",
        )
    if not spot and qty < instrument.min_order_qty:  # spot: minOrderQty is deprecated and no longer checked
        raise SimReject(
            10001, f"The number of contracts is below the minimum: min_qty:{instrument.min_order_qty}"
        )
    if qty > instrument.max_order_qty:
        raise SimReject(
            170124 if spot else 10001,
            "Order amount too large."
            if spot
            else f"The number of contracts exceeds maximum limit allowed: max_qty:{instrument.max_order_qty}",
        )


def check_price(instrument: InstrumentSpec, price: Decimal) -> None:
    if price % instrument.tick_size != 0:
        spot = instrument.category == "spot"
        raise SimReject(
            170134 if spot else 10001,
            "Order price has too many decimals."
            if spot
            else f"Price invalid: price {price} is not a multiple of tickSize {instrument.tick_size}",
        )


def price_limits(instrument: InstrumentSpec, quote: Quote) -> tuple[Decimal, Decimal]:
    """(buyLmt, sellLmt): the highest buy and the lowest sell price accepted right now.

    Bybit's formulas (account/set-price-limit.mdx) with the paper exchange's one reference price, the
    mark, standing for both mark and index (and no premium):
    buy = min(mark x (1 + Y), max(index, mark x (1 + X))), sell = max(mark x (1 - Y), min(index, mark x (1 - X))).
    """
    x, y = instrument.price_limit_ratio_x, instrument.price_limit_ratio_y
    tick = instrument.tick_size
    mark = quote.mark
    buy = min(mark * (1 + y), max(mark, mark * (1 + x)))
    sell = max(mark * (1 - y), min(mark, mark * (1 - x)))
    buy = (buy / tick).to_integral_value(rounding="ROUND_FLOOR") * tick
    sell = (sell / tick).to_integral_value(rounding="ROUND_CEILING") * tick
    return buy, max(sell, tick)


def apply_price_limit(instrument: InstrumentSpec, quote: Quote, side: str, price: Decimal) -> Decimal:
    """The price an order outside the band gets, per category as Bybit does by default.

    Spot rejects it (170193 buy above, 170194 sell below); derivatives move it to the band's edge
    (set-price-limit.mdx: futures modifyEnable = true by default).
    """
    buy_limit, sell_limit = price_limits(instrument, quote)
    spot = instrument.category == "spot"
    if side == "Buy" and price > buy_limit:
        if spot:
            raise SimReject(170193, f"Buy order price cannot be higher than {buy_limit}.")
        return buy_limit
    if side == "Sell" and price < sell_limit:
        if spot:
            raise SimReject(170194, f"Sell order price cannot be lower than {sell_limit}.")
        return sell_limit
    return price


def check_notional(instrument: InstrumentSpec, qty: Decimal, price: Decimal) -> None:
    if qty * price < instrument.min_notional:
        spot = instrument.category == "spot"
        raise SimReject(
            170140 if spot else 110094,
            "Order value exceeded lower limit."
            if spot
            else f"The order value is below the minimum: {instrument.min_notional}",
        )
