"""Protection: requireStopLoss, and a stop-loss or take-profit on the right side of the price and inside the
price collar."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.facts import BUY, SELL
from pilot.core.rules.pretrade import collar_words, price_collar
from pilot.core.rules.situation import ZERO, Situation, outlives
from pilot.core.violations import Breach, plain


def stop_reference(s: Situation) -> Decimal:
    """The price a stop must lie beyond: the worst fill, the mark and the touch (below all of them for a buy,
    above for a sell). Bybit checks a stop sent with an order against its base price, the last price for a
    market order, which lies between the bid and the ask."""
    if s.order.side is BUY:
        return min(s.sent_price, s.touch.mark, s.touch.bid)
    return max(s.sent_price, s.touch.mark, s.touch.ask)


def stop_problem(s: Situation) -> str | None:
    """Why the order's stop_loss cannot be sent as it is, or None."""
    stop, tick = s.order.stop_loss, s.rules.tick_size
    if stop is None:
        return None
    reference = stop_reference(s)
    if stop <= 0 or (tick > 0 and stop % tick != 0):
        return f"the stop_loss {plain(stop)} is not a positive multiple of the tick {plain(tick)}"
    if s.order.side is BUY and stop >= reference:
        return f"a buy's stop_loss must be below {plain(reference)} (its price, the mark and the bid); it is {plain(stop)}"
    if s.order.side is SELL and stop <= reference:
        return f"a sell's stop_loss must be above {plain(reference)} (its price, the mark and the ask); it is {plain(stop)}"
    return None


def collared_stop(s: Situation, stop: Decimal) -> Decimal:
    """`stop` moved no farther from mark than the price collar allows, for an order that can grow the
    position (its stop becomes the whole position's: a mistake there costs money); as it is otherwise."""
    limits = s.limits
    pct, ticks = limits.price_collar_pct, limits.price_collar_ticks
    if s.reducing or (pct is None and ticks is None):
        return stop
    mark = s.touch.mark
    off = abs(mark - stop)  # inside the collar: within both distances (no division: every growing order's)
    if (pct is None or off * 100 <= mark * pct) and (ticks is None or off <= ticks * s.rules.tick_size):
        return stop  # inside the collar (a stop on the tick inside it is inside its edge on the tick too)
    buy = s.order.side is BUY
    edge = price_collar(s, SELL if buy else BUY)  # the stop closes: it is the other side's price
    if edge is None:
        return stop
    return max(stop, edge) if buy else min(stop, edge)


def take_profit_problem(s: Situation) -> str | None:
    """Why the order's take_profit cannot be sent as it is, or None."""
    target, tick, fill = s.order.take_profit, s.rules.tick_size, s.sent_price
    if target is None:
        return None
    if target <= 0 or (tick > 0 and target % tick != 0):
        return f"the take_profit {plain(target)} is not a positive multiple of the tick {plain(tick)}"
    if s.order.side is BUY and target <= fill:
        return f"a buy's take_profit must be above its price {plain(fill)}; it is {plain(target)}"
    if s.order.side is SELL and target >= fill:
        return f"a sell's take_profit must be below its price {plain(fill)}; it is {plain(target)}"
    return None


def stop_required(s: Situation) -> bool:
    """Whether requireStopLoss refuses the order for want of a stop: a growing order (or one that may outlive
    the position it closes) that carries none and could (not reduce-only; on spot, a buy)."""
    order = s.order
    if order.stop_loss is not None or not s.limits.require_stop_loss or order.reduce_only:
        return False
    if order.category == "spot" and order.side is not BUY:
        return False
    return not s.reducing or outlives(s)


def check_protection(s: Situation) -> Breach | None:
    """requireStopLoss, and a stop_loss / take_profit on the right side of the price.

    A growing order carries a stop; any stop or take-profit lies on the right side (checked on every order
    that carries one: the exchange refuses it otherwise). The next action (a stop that fits, the size sized
    to pass) is the one sizing.protect() gives.
    """
    order = s.order
    # A stop is required only of an order that can grow the position and can carry one (not reduce-only;
    # on spot a buy: a sell only ever sells coin held); a stop or target an order does carry is checked
    # whatever the order does: the exchange checks it too.
    carries = not order.reduce_only and (order.category != "spot" or order.side is BUY)
    if order.stop_loss is None and s.limits.require_stop_loss and carries:
        if not s.reducing:
            return Breach(
                rule=Code.REQUIRE_STOP_LOSS,
                limit="a stop_loss",
                attempted="none",
                detail="policy.json requires a stop_loss on every order that opens or adds to a position",
            )
        if outlives(s):  # the next action (sizing.protect) makes it reduce-only, sized to pass
            return Breach(
                rule=Code.REQUIRE_STOP_LOSS,
                limit="a stop_loss, or reduce_only",
                attempted="none",
                detail="this order closes the position now, but left resting it opens one without a stop "
                "once the position is gone (its stop, say): policy.json requires a stop on every position",
            )
    problem = stop_problem(s)
    if problem is not None:
        return Breach(Code.STOP_LOSS, plain(stop_reference(s)), plain(order.stop_loss or ZERO), problem)
    stop = order.stop_loss
    edge = collared_stop(s, stop) if stop is not None else None
    if stop is not None and edge is not None and edge != stop:
        return Breach(
            Code.PRICE_COLLAR_STOP,
            plain(edge),
            plain(stop),
            f"the stop_loss {plain(stop)} is farther from the mark {plain(s.touch.mark)} than the price collar "
            f"allows ({collar_words(s.limits)}): at most {plain(edge)}",
        )
    problem = take_profit_problem(s)
    if problem is not None:
        return Breach(Code.TAKE_PROFIT, plain(s.sent_price), plain(order.take_profit or ZERO), problem)
    return None
