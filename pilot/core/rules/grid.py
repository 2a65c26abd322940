"""The instrument's grid: whole lot steps, a price on the tick and inside the band, the minimum and maximum
quantity and the minimum order value."""

from __future__ import annotations

from pilot.core.codes import Code
from pilot.core.facts import BUY, LIMIT, SELL
from pilot.core.rules.situation import Situation, size_breach
from pilot.core.violations import Breach, plain, usd


def check_qty_step(s: Situation) -> Breach | None:
    """Whole lot steps."""
    step = s.rules.qty_step
    if step <= 0 or s.order.qty % step == 0:
        return None
    return size_breach(
        Code.QTY_STEP,
        plain(step),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is not a whole number of lot steps ({plain(step)})",
    )


def check_price_tick(s: Situation) -> Breach | None:
    """A limit price on the tick."""
    order, tick = s.order, s.rules.tick_size
    if order.order_type is not LIMIT or order.limit_price is None:
        return None
    if order.limit_price > 0 and (tick <= 0 or order.limit_price % tick == 0):
        return None
    return size_breach(
        Code.TICK_SIZE,
        plain(tick),
        plain(order.limit_price),
        f"the limit price {plain(order.limit_price)} is not a positive multiple of the tick {plain(tick)}",
    )


def check_min_qty(s: Situation) -> Breach | None:
    """The instrument's minimum quantity."""
    minimum = s.rules.min_qty
    if s.order.qty >= minimum and s.order.qty > 0:
        return None
    return size_breach(
        Code.MIN_ORDER_QTY,
        plain(minimum),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is below the {s.base} minimum {plain(minimum)}",
    )


def check_max_qty(s: Situation) -> Breach | None:
    """The instrument's maximum quantity per order."""
    maximum = s.rules.max_qty
    if s.order.qty <= maximum:
        return None
    return size_breach(
        Code.MAX_ORDER_QTY,
        plain(maximum),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is above the {s.base} maximum {plain(maximum)} per order",
    )


def check_price_band(s: Situation) -> Breach | None:
    """A limit price inside the exchange's price band.

    Spot refuses one outside it; linear would move it.
    """
    order, band = s.order, s.facts.band
    if band is None or order.order_type is not LIMIT or order.limit_price is None:
        return None
    price = order.limit_price
    if order.side is BUY and price > band.buy_limit:
        edge, way = band.buy_limit, "above the highest buy"
    elif order.side is SELL and price < band.sell_limit:
        edge, way = band.sell_limit, "below the lowest sell"
    else:
        return None
    return size_breach(
        Code.PRICE_BAND,
        plain(edge),
        plain(price),
        f"the limit price {plain(price)} is {way} the exchange accepts now ({plain(edge)})",
    )


def check_min_notional(s: Situation) -> Breach | None:
    """The instrument's minimum order value (reduce-only orders exempt, as on Bybit)."""
    minimum = s.rules.min_notional
    notional = s.order.qty * s.sent_price
    if s.order.reduce_only or notional >= minimum:
        return None
    return size_breach(
        Code.MIN_NOTIONAL,
        plain(minimum),
        plain(notional),
        f"this order would be {usd(notional)} notional, below the {s.order.symbol} minimum {usd(minimum)}",
    )
