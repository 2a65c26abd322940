"""Order checks in Bybit's order and with Bybit's retCodes (linear first, spot second in each pair)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.paper.market import Quote, floor_to
from pilot.paper.orders import CONDITIONAL, FALL, RISE, TRIGGER_BY, ZERO, SimOrder
from pilot.paper.scenario import InstrumentSpec

LINK_ID = re.compile(r"^[A-Za-z0-9_-]{1,36}$")
TIME_IN_FORCE = ("GTC", "IOC", "FOK", "PostOnly")
TPSL_MODES = ("Full", "Partial")


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
    smp_type: str = "None"  # self-match prevention (enum.mdx smpType), echoed in the order's views


SMP_TYPES = frozenset({"None", "CancelMaker", "CancelTaker", "CancelBoth"})  # enum.mdx smpType


def parse_new_order(category: str, params: dict[str, Any]) -> NewOrder:
    """Check presence and shape of the create parameters (10001 / 170130)."""
    bad = pick(category, 10001, 170130)
    side = params.get("side")
    order_type = params.get("orderType")
    if side not in ("Buy", "Sell"):
        raise SimReject(bad, "params error: side invalid")
    if order_type not in ("Market", "Limit"):
        raise SimReject(bad, "params error: orderType invalid")
    qty = wire_decimal(params.get("qty"), "qty", bad)
    price = None
    if order_type == "Limit":
        price = wire_decimal(params.get("price"), "price", bad)
    tif = "IOC" if order_type == "Market" else str(params.get("timeInForce") or "GTC")
    if tif not in TIME_IN_FORCE:
        raise SimReject(bad, "params error: timeInForce invalid")
    link = str(params.get("orderLinkId") or "")
    if link and not LINK_ID.match(link):
        raise SimReject(bad, "params error: orderLinkId invalid")
    # create-order.mdx: reduceOnly is "Valid for linear, inverse & option"; spot takes the order and leaves
    # the flag aside, as it does triggerDirection (ccxt sends reduceOnly=true with every stopLossPrice and
    # takeProfitPrice order, spot's tpslOrder included, and Bybit takes those: ccxt/ccxt#19000, #26378)
    reduce_only = is_true(params.get("reduceOnly")) and category != "spot"
    unit = str(
        params.get("marketUnit") or ("quoteCoin" if category == "spot" and side == "Buy" else "baseCoin")
    )
    smp = str(params.get("smpType") or "None")
    if smp not in SMP_TYPES:
        raise SimReject(bad, "params error: smpType invalid")
    return NewOrder(
        category,
        str(params.get("symbol") or ""),
        side,
        order_type,
        qty,
        price,
        tif,
        link,
        reduce_only,
        unit,
        smp,
    )


PLAIN_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
PARAMETER_ERROR = (10001, "Request parameter error.")


def wire_decimal(value: Any, name: str, code: int) -> Decimal:
    """An order's `qty` or `price` as Bybit takes it: a string of plain digits. A JSON number, or a string
    such as "1E-3", is refused with 10001 "Request parameter error." before anything else is checked, as
    Bybit answers clients that send them (sieblyio/bybit-api#282, JKorf/Bybit.Net#267)."""
    if value is not None and not isinstance(value, bool) and not isinstance(value, str):
        raise SimReject(*PARAMETER_ERROR)
    if isinstance(value, str) and value and not PLAIN_NUMBER.match(value):
        raise SimReject(*PARAMETER_ERROR)
    return to_decimal(value, name, code)


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


def last_price(quote: Quote, instrument: InstrumentSpec) -> Decimal:
    """The paper exchange's last traded price: the mid, floored to the tick."""
    return floor_to(quote.mid, instrument.tick_size)


def is_true(value: Any) -> bool:
    """A boolean parameter as pybit and raw JSON send it."""
    return value in (True, "true", "True", 1, "1")


def given(params: dict[str, Any], name: str) -> bool:
    """Whether a parameter was sent with a value ("" and null mean "not sent", as Bybit reads them)."""
    return params.get(name) not in (None, "")


def price_or_zero(params: dict[str, Any], name: str, instrument: InstrumentSpec) -> Decimal:
    """A price parameter where "0" means none (takeProfit, stopLoss): ZERO, or a price on the tick."""
    value = params.get(name)
    if value in (None, "", "0", 0):
        return ZERO
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        raise SimReject(10001, f"params error: {name} invalid") from None
    if not price.is_finite() or price < 0:
        raise SimReject(10001, f"params error: {name} cannot be less than 0")
    if price:
        check_price(instrument, price)
    return price


def trigger_by(params: dict[str, Any], name: str, default: str = "LastPrice") -> str:
    """tpTriggerBy / slTriggerBy / triggerBy: one of enum.mdx's triggerBy values (10001 otherwise)."""
    value = str(params.get(name) or default)
    if value not in TRIGGER_BY:
        raise SimReject(10001, f"params error: {name} invalid")
    return value


@dataclass(frozen=True, slots=True)
class Leg:
    """One side of a TP/SL as sent: its trigger price (ZERO: cancel / none), what triggers it, and the order
    it becomes (Market, or Limit at `limit_price`: Partial mode only)."""

    price: Decimal
    trigger_by: str
    order_type: str = "Market"
    limit_price: Decimal = ZERO


@dataclass(frozen=True, slots=True)
class Tpsl:
    """TP/SL as sent with a create, an amend or to trading-stop; None for a side that was not sent."""

    mode: str
    take_profit: Leg | None
    stop_loss: Leg | None

    @property
    def legs(self) -> tuple[tuple[str, Leg], ...]:
        """("tp", leg) and ("sl", leg) for the sides that were sent."""
        sides = (("tp", self.take_profit), ("sl", self.stop_loss))
        return tuple((side, leg) for side, leg in sides if leg is not None)


TPSL_NAMES = {"tp": ("takeProfit", "tpTriggerBy", "tpOrderType", "tpLimitPrice")}
TPSL_NAMES["sl"] = ("stopLoss", "slTriggerBy", "slOrderType", "slLimitPrice")


def parse_tpsl(params: dict[str, Any], instrument: InstrumentSpec, *, mode_required: bool = False) -> Tpsl:
    """Read takeProfit / stopLoss with their trigger, order type and limit price (create-order.mdx,
    trading-stop.mdx): tpslMode Full (the default on create) or Partial; a Limit TP/SL only in Partial mode,
    with its limit price on the tick; 10001 for anything else."""
    if mode_required and not given(params, "tpslMode"):
        raise SimReject(10001, "params error: tpslMode is required")
    mode = str(params.get("tpslMode") or "Full")
    if mode not in TPSL_MODES:
        raise SimReject(10001, "params error: tpslMode invalid")
    legs: dict[str, Leg | None] = {}
    for side, (name, trigger, kind, limit) in TPSL_NAMES.items():
        if not given(params, name):
            legs[side] = None
            continue
        order_type = str(params.get(kind) or "Market")
        if order_type not in ("Market", "Limit"):
            raise SimReject(10001, f"params error: {kind} invalid")
        if order_type == "Limit" and mode == "Full":
            raise SimReject(10001, f"{kind} only support Market when tpSlMode is Full")
        limit_price = price_or_zero(params, limit, instrument) if order_type == "Limit" else ZERO
        if order_type == "Limit" and not limit_price:
            raise SimReject(10001, f"params error: {limit} is required for a Limit {name}")
        legs[side] = Leg(
            price_or_zero(params, name, instrument), trigger_by(params, trigger), order_type, limit_price
        )
    return Tpsl(mode, legs["tp"], legs["sl"])


def check_tpsl_side(buy: bool, take_profit: Decimal, stop_loss: Decimal, base: Decimal) -> None:
    """A take-profit beyond the base price in the position's favour, a stop-loss against it (10001), as
    Bybit checks TP/SL on create, in trading-stop and in an amend. `buy`: the position is (or will be) long."""
    side = "Buy" if buy else "Sell"
    if take_profit and (take_profit <= base if buy else take_profit >= base):
        way = "higher" if buy else "lower"
        raise SimReject(
            10001, f"TakeProfit:{take_profit} set for {side} position should be {way} than base_price:{base}"
        )
    if stop_loss and (stop_loss >= base if buy else stop_loss <= base):
        way = "lower" if buy else "higher"
        raise SimReject(
            10001, f"StopLoss:{stop_loss} set for {side} position should be {way} than base_price:{base}"
        )


@dataclass(frozen=True, slots=True)
class Trigger:
    """A conditional order's trigger (create-order.mdx): price, direction (1 rise, 2 fall) and price type."""

    price: Decimal
    direction: int
    by: str


def parse_trigger(category: str, params: dict[str, Any], instrument: InstrumentSpec) -> Trigger | None:
    """triggerPrice / triggerDirection / triggerBy on a linear create: None for an ordinary order (spot's:
    spot_stops.spot_trigger)."""
    if params.get("triggerPrice") in (None, "", "0", 0):
        return None
    price = to_decimal(params.get("triggerPrice"), "triggerPrice", 10001)
    check_price(instrument, price)
    try:
        direction = int(params.get("triggerDirection") or 0)
    except (TypeError, ValueError):
        direction = 0
    if direction not in (RISE, FALL):
        raise SimReject(10001, "params error: triggerDirection must be 1 (rise) or 2 (fall)")
    return Trigger(price, direction, trigger_by(params, "triggerBy"))


def check_trigger_direction(trigger: Decimal, direction: int, current: Decimal, by: str) -> None:
    """A rising trigger above the market, a falling one below it (110092 / 110093, error.mdx)."""
    if direction == RISE and trigger <= current:
        raise SimReject(110092, f"expect Rising, but trigger_price[{trigger}] <= current[{current}]??{by}")
    if direction == FALL and trigger >= current:
        raise SimReject(110093, f"expect Falling, but trigger_price[{trigger}] >= current[{current}]??{by}")


ORDER_FILTERS = ("Order", "StopOrder", "OpenOrder", "tpslOrder", "OcoOrder", "BidirectionalTpslOrder")


def order_filter_of(
    category: str, order_filter: str | None, stop_order_type: str | None = None
) -> Callable[[SimOrder], bool]:
    """The orders an orderFilter names (open-order.mdx, order-list.mdx, cancel-all.mdx): none sent, every
    kind; `Order` (and cancel-all's `OpenOrder`) the ordinary orders; `StopOrder` the conditional and
    TP/SL orders, with stopOrderType `Stop` the conditional ones only. An order keeps its kind after it
    triggers. On spot `StopOrder` names the conditional orders and `tpslOrder` the spot TP/SL orders
    (spot_stops.py); OcoOrder and BidirectionalTpslOrder name nothing on paper."""
    if not order_filter:
        return lambda order: True
    if order_filter not in ORDER_FILTERS:
        raise SimReject(pick(category, 10001, 170130), "params error: orderFilter invalid")
    if order_filter in ("Order", "OpenOrder"):
        return lambda order: not order.stop_order_type
    if category == "spot" and order_filter in ("StopOrder", "tpslOrder"):
        kind = CONDITIONAL if order_filter == "StopOrder" else "tpslOrder"
        return lambda order: order.stop_order_type == kind
    if order_filter == "StopOrder" and stop_order_type == CONDITIONAL:
        return lambda order: order.stop_order_type == CONDITIONAL
    if order_filter == "StopOrder":
        return lambda order: bool(order.stop_order_type)
    return lambda order: False
