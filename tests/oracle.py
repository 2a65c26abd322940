"""What an order costs and which loss rules it meets, restated here apart from pilot.core.

The property tests check evaluate() against these functions, and tests/strategies.py draws its cases by them
(a stop built from the order's size and the loss limit, a day's loss set against the daily limit), so a case
lands on the side of a rule's limit it was drawn for without asking the code under test.
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from pilot.core.facts import Facts, OrderIntent, OrderType, Side
from pilot.core.policy import Policy, TradingWindow

# Bybit's standard (non-VIP) taker fee for linear perpetuals, restated: paid on the way in and on the way out.
TAKER = Decimal("0.00055")
CENT = Decimal("0.01")


def worst_price(policy: Policy, f: Facts) -> Decimal:
    """The price a cap values the order at (issue 2, deliverable 5): the highest it can fill at."""
    order, tick = f.order, f.rules.tick_size
    slip = policy.limits_for(order.symbol).max_slippage_pct / 100
    if order.side is Side.BUY:
        if order.order_type is OrderType.LIMIT:
            return order.limit_price
        return (f.touch.ask * (1 + slip) / tick).to_integral_value(ROUND_CEILING) * tick
    if order.order_type is OrderType.LIMIT:
        return max(order.limit_price, f.touch.bid)
    return f.touch.bid


def worst_entry(policy: Policy, f: Facts) -> Decimal:
    """The fill that makes the stop cost most: a buy at its highest possible price, a sell at its lowest."""
    order, tick = f.order, f.rules.tick_size
    if order.order_type is OrderType.LIMIT:
        return order.limit_price
    slip = policy.limits_for(order.symbol).max_slippage_pct / 100
    if order.side is Side.BUY:
        return (f.touch.ask * (1 + slip) / tick).to_integral_value(ROUND_CEILING) * tick
    return max((f.touch.bid * (1 - slip) / tick).to_integral_value(ROUND_FLOOR) * tick, tick)


def stop_reference(policy: Policy, f: Facts) -> Decimal:
    """What a stop must lie beyond: below the worst entry, the mark and the bid for a buy; above them and the
    ask for a sell (Bybit checks a stop against the last price, between the bid and the ask)."""
    entry, touch = worst_entry(policy, f), f.touch
    if f.order.side is Side.BUY:
        return min(entry, touch.mark, touch.bid)
    return max(entry, touch.mark, touch.ask)


def trade_loss(qty: Decimal, entry: Decimal, stop: Decimal) -> Decimal:
    return qty * (abs(entry - stop) + TAKER * (entry + stop))


def trade_loss_limit(policy: Policy, f: Facts) -> Decimal | None:
    limits = policy.limits_for(f.order.symbol)
    found = []
    if limits.max_loss_per_trade_usd is not None:
        found.append(limits.max_loss_per_trade_usd)
    if limits.max_loss_per_trade_pct is not None:
        found.append(max(f.equity, Decimal(0)) * limits.max_loss_per_trade_pct / 100)
    return min(found) if found else None


def day_limit(policy: Policy, f: Facts) -> Decimal | None:
    pnl = f.day_pnl.realised + f.day_pnl.unrealised
    found = []
    if policy.daily_loss_limit_usd is not None:
        found.append(policy.daily_loss_limit_usd)
    if policy.daily_loss_limit_pct is not None:
        found.append(max(f.equity - pnl, Decimal(0)) * policy.daily_loss_limit_pct / 100)
    return min(found) if found else None


def in_hours(windows: tuple[TradingWindow, ...], at: datetime) -> bool:
    minute = at.hour * 60 + at.minute
    for window in windows:
        start = int(window.start[:2]) * 60 + int(window.start[3:])
        end = int(window.end[:2]) * 60 + int(window.end[3:])
        inside = start <= minute < end if start < end else (minute >= start or minute < end)
        if inside:
            return True
    return False


def position_after(f: Facts) -> Decimal:
    """The position a (not reduce-only) order leaves with every order pending on its side filled too."""
    signed = f.order.qty if f.order.side is Side.BUY else -f.order.qty
    return f.position.size + signed + f.pending.on_side(f.order.side) * f.order.side.sign


def leaves(position: Decimal, order: OrderIntent) -> Decimal:
    """The position an order leaves when it fills: a reduce-only order stops at zero."""
    after = position + (order.qty if order.side is Side.BUY else -order.qty)
    if order.reduce_only and (after == 0 or (after > 0) != (position > 0)):
        return Decimal(0)
    return after


def worst(position: Decimal, buys: Decimal, sells: Decimal) -> Decimal:
    return max(abs(position + buys), abs(position - sells))


# --- the loss at a position's stops, restated (issue 23) -----------------------------------------------
#
# Bybit runs stops on the whole position: a stop-loss sent with an order (tpslMode Full) becomes the stop of
# all of the position once the order fills; partial stops close their own size. The loss a trade may take is
# the loss of the position the order leaves, at the stops that will then apply. Restated here as a sweep:
# the price runs from the entry against the position, and at each stop level what triggers there closes.


def lots_after(
    policy: Policy, f: Facts, *, bare: bool = False
) -> list[tuple[Decimal, Decimal, Decimal | None]]:
    """The fills a growing linear order's worst case assumes, in order: (signed qty, price, whole stop).
    `bare`: only the pending orders without a stop of their own fill (the ones carrying one never do)."""
    side, sign = f.order.side, f.order.side.sign
    fill = worst_entry(policy, f)
    known = [p for p in f.pending.fills if p.side is side]
    lots = [(p.qty * sign, p.price or fill, p.stop_loss) for p in known if not (bare and p.stop_loss)]
    rest = f.pending.on_side(side) - sum((p.qty for p in known), Decimal(0))
    if rest > 0:
        lots.append((rest * sign, fill, None))
    lots.append((f.order.qty * sign, fill, f.order.stop_loss))
    return lots


def stops_after(
    policy: Policy, f: Facts, *, bare: bool = False
) -> tuple[Decimal, Decimal, Decimal | None, list]:
    """(signed size, average entry, whole stop, partial legs as (price, qty)) after every lot fills."""
    size, cost = f.position.size, abs(f.position.size) * f.position.entry_price
    whole, legs = f.position.stop_loss, [(leg.price, leg.qty) for leg in f.position.partial_stops]
    carried: list[Decimal] = []
    for qty, price, stop in lots_after(policy, f, bare=bare):
        before, size = size, size + qty
        if before == 0 or (before > 0) == (qty > 0):
            cost += abs(qty) * price
        elif size == 0 or (size > 0) != (before > 0):
            cost, whole, legs, carried = abs(size) * price, None, [], []  # closed or flipped: stops cancelled
        else:
            cost -= abs(qty) * (cost / abs(before))
        if stop is not None and size != 0 and (size > 0) == (qty > 0):
            carried.append(stop)
    if carried:
        whole = min(carried) if size > 0 else max(carried)
    entry = cost / abs(size) if size else Decimal(0)
    return size, entry, whole, legs


def sweep_loss(size: Decimal, entry: Decimal, whole: Decimal | None, legs: list) -> tuple[Decimal, Decimal]:
    """(loss of what the stops close, quantity left open) as the price runs from the entry through them."""
    long = size > 0
    levels = sorted({price for price, _ in legs} | ({whole} if whole is not None else set()), reverse=long)
    left, loss = abs(size), Decimal(0)
    for level in levels:
        closing = left if level == whole else min(left, sum(q for p, q in legs if p == level))
        if whole is not None and level == whole:
            closing = left
        per_unit = (entry - level if long else level - entry) + TAKER * (entry + level)
        loss += closing * per_unit
        left -= closing
        if left == 0 or level == whole:
            break
    return loss, left


def worst_stops_loss(policy: Policy, f: Facts) -> Decimal:
    """The loss a growing linear order is judged at: every pending order filling (the widest stop any carries
    applying), or, for an order without a stop, only the pending ones without a stop filling too."""
    losses = [sweep_loss(*stops_after(policy, f))[0]]
    if f.order.stop_loss is None:
        losses.append(sweep_loss(*stops_after(policy, f, bare=True))[0])
    return max(losses)
