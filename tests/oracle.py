"""What an order costs and which loss rules it meets, restated here apart from pilot.core.

The property tests check evaluate() against these functions, and tests/strategies.py draws its cases by them
(a stop built from the order's size and the loss limit, a day's loss set against the daily limit), so a case
lands on the side of a rule's limit it was drawn for without asking the code under test.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext

from pilot.core.facts import Facts, OrderIntent, OrderType, Position, Side
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
    """_worst_from the position held; and, for a resting (limit) order that is not reduce-only and goes
    against the position, from flat too: if the position is closed first (by its stop, say), Bybit keeps
    the order, which then opens a position of its own."""
    order, held = f.order, f.position.size
    after = position_after(f)
    shrinks = held != 0 and (after == 0 or ((after > 0) == (held > 0) and abs(after) < abs(held)))
    losses = [] if shrinks else [_worst_from(policy, f, f.position)]  # what shrinks is never capped
    against = held != 0 and (held > 0) != (order.side is Side.BUY)
    if order.order_type is OrderType.LIMIT and not order.reduce_only and against:
        losses.append(_worst_from(policy, f, Position.flat(order.symbol)))
    return max(losses, default=Decimal(0))


def _worst_from(policy: Policy, f: Facts, position: Position) -> Decimal:
    """The loss a growing linear order is judged at, by brute force: the order fills at its worst entry; each
    order pending on its side fills not at all, in full, or up to where the position reaches a partial leg's
    size (between those the loss is linear); and whichever of the filled stop-carrying orders fills last sets
    the whole stop, or none does (the rest of an order filled after its first part brings no stop) and the
    position's stop now applies. The largest loss of all those ways: exact, as its cost and the stops'
    proceeds give it (the average entry has no end: worked at 60 digits, rounded once)."""
    with localcontext(Context(prec=60)):
        worst = _worst_wide(policy, f, position)
    return +worst


def _worst_wide(policy: Policy, f: Facts, position: Position) -> Decimal:
    size, cost, whole, legs, _ = _after(position, worst_entry(policy, f), f.order)
    if size == 0:
        return Decimal(0)
    side, fill = f.order.side, worst_entry(policy, f)
    known = [p for p in f.pending.fills if p.side is side]
    lots = [(p.qty, p.price or fill, p.stop_loss) for p in known]
    rest = f.pending.on_side(side) - sum((p.qty for p in known), Decimal(0))
    if rest > 0:
        lots.append((rest, fill, None))
    if (size > 0) != (side is Side.BUY):
        lots = []  # the order shrank the position: its side's pending orders only shrink or flip it (no stops)
    edges = sorted(_leg_edges(legs))
    worst = Decimal(0)
    for amounts in _amounts(lots, abs(size), edges, f.rules.qty_step):
        taken = [(a, price, stop) for a, (_, price, stop) in zip(amounts, lots, strict=True) if a > 0]
        total = abs(size) + sum(a for a, _, _ in taken)
        entry = (cost + sum(a * price for a, price, _ in taken)) / total
        carriers = [stop for _, _, stop in taken if stop is not None]
        if f.order.stop_loss is not None and (size > 0) == (side is Side.BUY):
            carriers.append(f.order.stop_loss)  # a stop sent with an order that only shrinks it sets nothing
        for last in [*carriers, whole]:  # a filled order carrying a stop may not have set it (a later part)
            worst = max(worst, sweep_loss(total if size > 0 else -total, entry, last, legs)[0])
    return worst


def _after(position, fill: Decimal, order: OrderIntent):
    """(signed size, cost, whole stop, legs, flipped) once the order fills on top of the position."""
    signed = order.qty * order.side.sign
    size, entry = position.size, position.entry_price
    whole, legs = position.stop_loss, [(leg.price, leg.qty) for leg in position.partial_stops]
    after = size + signed
    if size == 0 or (size > 0) == (signed > 0):
        return after, abs(size) * entry + abs(signed) * fill, order.stop_loss or whole, legs, False
    if after == 0 or (after > 0) != (size > 0):
        return after, abs(after) * fill, order.stop_loss, [], True
    return after, abs(after) * entry, whole, legs, False


def _leg_edges(legs: list) -> list[Decimal]:
    """The position sizes at which one more partial leg is used up (sums of the legs' sizes)."""
    edges, total = [], Decimal(0)
    for _, qty in legs:
        total += qty
        edges.append(total)
    sums = set(edges)
    for i in range(len(legs)):  # any subset would do; two legs at most in the strategies
        for j in range(i + 1, len(legs)):
            sums.add(legs[i][1] + legs[j][1])
        sums.add(legs[i][1])
    return sorted(sums)


def _amounts(lots: list, start: Decimal, edges: list[Decimal], step: Decimal):
    """Every combination of fill amounts worth judging: each lot none, one lot step (enough for its stop to
    be the one that applies) or all of it, and then any one lot cut where the position reaches a leg edge
    instead (the loss is linear in each amount between those)."""
    for picks in itertools.product(*[sorted({Decimal(0), min(step, qty), qty}) for qty, _, _ in lots]):
        amounts = list(picks)
        yield amounts
        for i, (qty, _, _) in enumerate(lots):
            others = start + sum(amounts) - amounts[i]
            for edge in edges:
                if others < edge < others + qty:
                    yield [*amounts[:i], edge - others, *amounts[i + 1 :]]


# --- the pre-trade controls of issue 27, restated from docs/policy.md -----------------------------------


def collar_limit(policy: Policy, f: Facts, buy: bool) -> Decimal | None:
    """The farthest price on the tick a collar lets a buy's (buy) or a sell's limit lie from mark: the nearer
    of priceCollarPct percent and priceCollarTicks ticks, a buy's rounded down, a sell's up; one tick at least."""
    limits = policy.limits_for(f.order.symbol)
    tick, mark = f.rules.tick_size, f.touch.mark
    away = []
    if limits.price_collar_pct is not None:
        away.append(mark * limits.price_collar_pct / 100)
    if limits.price_collar_ticks is not None:
        away.append(tick * limits.price_collar_ticks)
    if not away:
        return None
    if buy:
        return max(((mark + min(away)) / tick).to_integral_value(ROUND_FLOOR) * tick, tick)
    return max(((mark - min(away)) / tick).to_integral_value(ROUND_CEILING) * tick, tick)


def in_window(ages: tuple, window: object) -> int:
    """How many of the messages (their ages) were sent inside the window before now."""
    return sum(1 for age in ages if age < window)


def drawdown_now(policy: Policy, equity: Decimal, peak: Decimal | None) -> tuple[Decimal, Decimal] | None:
    """(drawdown, limit) from the window's peak (the equity now when higher, or when none was seen)."""
    top = equity if peak is None or equity > peak else peak
    limits = []
    if policy.max_drawdown_usd is not None:
        limits.append(policy.max_drawdown_usd)
    if policy.max_drawdown_pct is not None:
        limits.append(max(top, Decimal(0)) * policy.max_drawdown_pct / 100)
    return (top - equity, min(limits)) if limits else None


# --- one loss model for spot and linear (issue 36), restated from docs/policy.md -------------------------
#
# maxLossPerTradeUsd/Pct: the position an order leaves may lose at most the cap, at the stops that will then
# apply to it. On a perpetual some of it under no stop has no bound: refused. A limit order that is not
# reduce-only, beside a position, may rest and fill once the position is gone (its stop hit, or closed):
# judged from flat too. On spot the position is the coin held (valued at the bid: what it cost is not
# known), the buy at its worst fill and the buys resting; each stop order sells its own quantity at its
# trigger, highest first; the coin no stop sells can fall to zero. A spot sell is never judged.

UNBOUNDED = Decimal("Infinity")


def judged_loss(policy: Policy, f: Facts) -> Decimal:
    """The loss the loss limit judges the order at (UNBOUNDED where some of a perpetual position has no
    stop), or 0 for an order the rule leaves alone (one that only shrinks the position, a spot sell)."""
    if f.order.category == "spot":
        return Decimal(0) if f.order.side is Side.SELL else spot_loss(policy, f)
    order, held = f.order, f.position.size
    against = held != 0 and (held > 0) != (order.side is Side.BUY)
    shrinks = order.reduce_only or (against and order.qty + f.pending.on_side(order.side) <= abs(held))
    rests = order.order_type is OrderType.LIMIT and not order.reduce_only and held != 0
    losses = [] if shrinks else [_bounded_from(policy, f, f.position)]
    if rests:
        losses.append(_bounded_from(policy, f, Position.flat(order.symbol)))
    return max(losses, default=Decimal(0))


def _bounded_from(policy: Policy, f: Facts, position: Position) -> Decimal:
    """_worst_from, or UNBOUNDED when any way of filling leaves some of the position under no stop."""
    return UNBOUNDED if _any_open(policy, f, position) else _worst_from(policy, f, position)


def _any_open(policy: Policy, f: Facts, position: Position) -> bool:
    """Whether some way the order and the pending orders on its side fill (the ways _worst_from weighs)
    leaves quantity no stop closes."""
    size, _, whole, legs, _ = _after(position, worst_entry(policy, f), f.order)
    if size == 0:
        return False
    side, fill = f.order.side, worst_entry(policy, f)
    known = [p for p in f.pending.fills if p.side is side]
    lots = [(p.qty, p.price or fill, p.stop_loss) for p in known]
    rest = f.pending.on_side(side) - sum((p.qty for p in known), Decimal(0))
    if rest > 0:
        lots.append((rest, fill, None))
    if (size > 0) != (side is Side.BUY):
        lots = []
    for amounts in _amounts(lots, abs(size), sorted(_leg_edges(legs)), f.rules.qty_step):
        taken = [(a, stop) for a, (_, _, stop) in zip(amounts, lots, strict=True) if a > 0]
        total = abs(size) + sum(a for a, _ in taken)
        carriers = [stop for _, stop in taken if stop is not None]
        if f.order.stop_loss is not None and (size > 0) == (side is Side.BUY):
            carriers.append(f.order.stop_loss)
        for last in [*carriers, whole]:
            if sweep_loss(total if size > 0 else -total, Decimal(1), last, legs)[1] > 0:
                return True
    return False


def arrived(qty: Decimal, step: Decimal) -> Decimal:
    """What a spot buy's stop sells: the coin that arrived, the taker fee paid in it taken off, on the step."""
    return (qty * (1 - TAKER) / step).to_integral_value(ROUND_FLOOR) * step


def spot_loss(policy: Policy, f: Facts) -> Decimal:
    """A spot buy's loss at the stops: what the coin held, the buy and the buys resting cost, taker fee in,
    less what the stops sell it for, fee out; each stop sells its own quantity (a buy's, the coin that
    arrived), the highest first, and the rest is sold at nothing."""
    bid, entry = f.touch.bid, worst_entry(policy, f)
    held = max(f.position.size, Decimal(0))
    cost, total = held * bid, held
    legs = [(leg.price, leg.qty) for leg in f.position.partial_stops]
    step = f.rules.qty_step
    cost, total = cost + f.order.qty * entry, total + f.order.qty
    if f.order.stop_loss is not None:
        legs.append((f.order.stop_loss, arrived(f.order.qty, step)))
    known = [p for p in f.pending.fills if p.side is Side.BUY]
    for p in known:
        cost, total = cost + p.qty * (p.price or entry), total + p.qty
        if p.stop_loss is not None:
            legs.append((p.stop_loss, arrived(p.qty, step)))
    rest = f.pending.buy_qty - sum((p.qty for p in known), Decimal(0))
    if rest > 0:
        cost, total = cost + rest * entry, total + rest
    sold, proceeds = Decimal(0), Decimal(0)
    for price, qty in sorted(legs, key=lambda leg: -leg[0]):
        take = min(qty, total - sold)
        proceeds, sold = proceeds + take * price, sold + take
    return cost * (1 + TAKER) - proceeds * (1 - TAKER)
