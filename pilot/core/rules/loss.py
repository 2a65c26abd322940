"""The loss rules: trading hours, the day's loss, open positions, and the loss a trade may take at its
stops."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple

from pilot.core.codes import Code
from pilot.core.facts import LIMIT, SELL, DayPnl
from pilot.core.policy import Policy, TradingWindow
from pilot.core.rules.protective import stop_problem, stop_required
from pilot.core.rules.situation import (
    ZERO,
    Situation,
    close_option,
    is_spot,
    missing_fact,
    next_midnight,
    outlives,
    size_breach,
)
from pilot.core.stops import (
    FLAT,
    SPOT_FLAT,
    UNBOUNDED,
    Exposure,
    Fill,
    LossAtStops,
    loss_cap,
    pending_fills,
    spot_fill,
    unit_loss,
    worse,
    worst_case,
)
from pilot.core.venues import WHOLE_POSITION
from pilot.core.violations import Breach, NextAction, ToolCall, plain, plain_usd, usd


def check_trading_hours(s: Situation) -> Breach | None:
    """tradingHours: a growing order only inside a UTC window (retry_after: the next)."""
    windows = s.policy.trading_hours
    now = s.facts.now
    if s.reducing or not windows or inside_hours(windows, now):
        return None
    opens = next_window_start(windows, now)
    listed = ", ".join(f"{w.start}-{w.end}" for w in windows)
    return Breach(
        rule=Code.TRADING_HOURS,
        limit=listed,
        attempted=now.strftime("%H:%M"),
        detail=f"it is {now.strftime('%H:%M')} UTC, outside the trading hours ({listed} UTC)",
        next=NextAction(
            tool=None,
            args=None,
            text=f"wait until trading opens at {opens.isoformat()}; reducing orders still work",
            human="change tradingHours in policy.json",
            retry_after=opens,
        ),
    )


def inside_hours(windows: tuple[TradingWindow, ...], now: datetime) -> bool:
    """Whether `now` (UTC) lies in one of the windows: [start, end), wrapping past midnight if end < start."""
    minute = now.hour * 60 + now.minute
    for window in windows:
        start, end = window.start_minute, window.end_minute
        if (start < end and start <= minute < end) or (start > end and (minute >= start or minute < end)):
            return True
    return False


def next_window_start(windows: tuple[TradingWindow, ...], now: datetime) -> datetime:
    """The next moment after `now` at which a window opens."""
    day = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    starts = []
    for window in windows:
        at = day + timedelta(minutes=window.start_minute)
        starts.append(at if at > now else at + timedelta(days=1))
    return min(starts)


class DayLoss(NamedTuple):
    """The day's loss set against the daily loss limit: which field binds, the limit, and the loss (USD)."""

    rule: Code
    limit: Decimal
    loss: Decimal
    pnl: DayPnl

    @property
    def reached(self) -> bool:
        return self.loss >= self.limit


def day_loss(policy: Policy, equity: Decimal | None, pnl: DayPnl) -> DayLoss | None:
    """The binding daily loss limit and the loss so far, or None when policy.json sets none.

    The percentage is of the day's starting equity: equity now minus the day's PnL (deposits aside). With
    equity unknown only the dollar limit applies.
    """
    usd, pct, total = policy.daily_loss_limit_usd, policy.daily_loss_limit_pct, pnl.total
    if pct is None or equity is None:  # (on every growing order's judgement: kept to a few operations)
        return None if usd is None else DayLoss(Code.DAILY_LOSS_LIMIT_USD, usd, -total, pnl)
    share = max(equity - total, ZERO) * pct / 100
    if usd is not None and usd <= share:
        return DayLoss(Code.DAILY_LOSS_LIMIT_USD, usd, -total, pnl)
    return DayLoss(Code.DAILY_LOSS_LIMIT_PCT, share, -total, pnl)


def day_loss_reached(policy: Policy, equity: Decimal | None, pnl: DayPnl) -> bool:
    """Whether the day's loss is at or past its limit: day_loss(...).reached, kept to a few operations for
    the dollar limit alone (asked on every growing order's judgement; tests/core/test_fast_paths.py holds
    the two alike)."""
    usd = policy.daily_loss_limit_usd
    if usd is not None and policy.daily_loss_limit_pct is None:
        return -(pnl.realised + pnl.unrealised) >= usd
    loss = day_loss(policy, equity, pnl)
    return loss is not None and loss.reached


def day_loss_parts(pnl: DayPnl) -> str:
    """The day's loss in its parts, as losses: realised and unrealised, and what of them spot lost."""
    parts = f"realised {usd(-pnl.realised)}, unrealised {usd(-pnl.unrealised)}"
    if pnl.spot_realised or pnl.spot_unrealised:
        parts += (
            f"; of which spot: realised {usd(-pnl.spot_realised)}, unrealised {usd(-pnl.spot_unrealised)}"
        )
    return parts


def check_daily_loss(s: Situation) -> Breach | None:
    """dailyLossLimitUsd/Pct: the day's realised plus unrealised loss below the limit.

    On every product, as pilot.core.day_pnl defines it. Past it only orders that shrink a position are
    allowed, until 00:00 UTC.
    """
    policy = s.policy
    if s.reducing or (policy.daily_loss_limit_usd is None and policy.daily_loss_limit_pct is None):
        return None
    pnl = s.facts.day_pnl
    if pnl is None:
        return missing_fact(s.facts, "day_pnl", "the day's realised and unrealised PnL")
    if not day_loss_reached(policy, s.facts.equity, pnl):
        return None
    loss = day_loss(policy, s.facts.equity, pnl)
    if loss is None:
        return None
    midnight = next_midnight(s.facts.now)
    return Breach(
        rule=loss.rule,
        limit=plain_usd(loss.limit),
        attempted=plain_usd(loss.loss),
        detail=f"the day's loss so far is {usd(loss.loss)} ({day_loss_parts(loss.pnl)}), at or past the daily "
        f"loss limit of {usd(loss.limit)}",
        next=NextAction(
            tool=None,
            args=None,
            text=f"do not open or add until {midnight.isoformat()} (00:00 UTC); reducing orders and "
            "close_position still work",
            human="reset it with `pilot loss-limit reset`, or raise dailyLossLimitUsd/Pct in policy.json",
            retry_after=midnight,
            options=close_option(s),
        ),
    )


def check_open_positions(s: Situation) -> Breach | None:
    """maxOpenPositions: markets with a non-zero position, this order's included.

    Linear markets, once this order (and its side) fills.
    """
    most = s.policy.max_open_positions
    if most is None or s.reducing or is_spot(s):
        return None
    markets = s.facts.open_markets
    if markets is None:
        return missing_fact(s.facts, "open_markets", "the open positions")
    others = sorted(markets - {s.order.symbol})
    count = len(others) + (1 if s.after != 0 else 0)
    if count <= most:
        return None
    options = tuple(
        ToolCall("close_position", {"symbol": symbol, "category": "linear"}, f"close the {symbol} position")
        for symbol in others
    )
    return Breach(
        rule=Code.MAX_OPEN_POSITIONS,
        limit=str(most),
        attempted=str(count),
        detail=f"this order would leave positions open in {count} markets ({', '.join(others)} and "
        f"{s.order.symbol}), above the limit of {most}",
        next=NextAction.stop(
            "do not open a position in another market; close one first if your task allows",
            human="raise maxOpenPositions in policy.json",
            options=options,
        ),
    )


def position_left(
    s: Situation, stop: Decimal | None = None, qty: Decimal | None = None
) -> tuple[Exposure, LossAtStops]:
    """The position the order leaves at its worst, with its loss at the stops the venue will then apply
    (pilot.core.stops.worst_case): the order filled at its worst fill with `stop` (default: the stop it
    carries) and `qty` (default: its own), and the orders pending on its side filled as far, and in the
    order, that loses most. On spot the position is the coin held (Exposure.held): its stops are the spot
    stop orders that sell it, and what none sells can lose its whole value."""
    order = s.order
    base = Exposure.held(s.facts.position, s.touch.bid) if is_spot(s) else Exposure.of(s.facts.position)
    pending = pending_fills(s.facts.pending, order.side, s.sent_price)
    carried = order.stop_loss if stop is None else stop
    signed = order.signed_qty if qty is None else qty * order.side.sign
    fill = Fill(signed, s.sent_price, carried)
    if is_spot(s):  # a spot stop sells the coin that arrived: the fee paid in it has none
        step = s.rules.qty_step
        fill, pending = spot_fill(fill, step), [spot_fill(one, step) for one in pending]
    return worst_case(base, fill, pending, s.rules.qty_step, s.facts.venue.scope(order.category))


def from_flat(
    s: Situation, stop: Decimal | None = None, qty: Decimal | None = None
) -> tuple[Exposure, LossAtStops]:
    """The position the order and the orders pending on its side open once the one held now is gone."""
    order = s.order
    pending = pending_fills(s.facts.pending, order.side, s.sent_price)
    signed = order.signed_qty if qty is None else qty * order.side.sign
    fill = Fill(signed, s.sent_price, order.stop_loss if stop is None else stop)
    flat = SPOT_FLAT if is_spot(s) else FLAT
    return worst_case(flat, fill, pending, s.rules.qty_step, s.facts.venue.scope(order.category))


def may_rest(s: Situation) -> bool:
    """Whether the order may rest on the book and fill after the position it now meets is gone: a linear
    limit order that is not reduce-only, beside a position (whose own stop, or a close, may take it away
    first). Added to a position, its quantity is covered by the position's stop only while that stands;
    against it, it may open a position of its own (outlives)."""
    order = s.order
    if order.category != "linear" or order.reduce_only or order.order_type is not LIMIT:
        return False
    return s.position_size != 0


def judged_position(
    s: Situation, stop: Decimal | None = None, qty: Decimal | None = None
) -> tuple[Exposure, LossAtStops]:
    """The position the loss limit judges the order by, at its stops (`stop` and `qty` as for position_left):
    the one it leaves; for an order that may rest (may_rest), the worse of that and the one it opens from
    flat once the position now is gone; for an order that only shrinks the position now but may outlive it
    (outlives), the one it opens from flat alone. Unbounded is worse than any figure."""
    if s.reducing and outlives(s):
        return from_flat(s, stop, qty)
    left = position_left(s, stop, qty)
    if s.reducing or not may_rest(s):
        return left
    flat = from_flat(s, stop, qty)
    return max(left, flat, key=lambda case: worse(case[1]))


def opened_loss(s: Situation) -> Decimal | None:
    """judged_position's loss where no pending fill can change it, worked out without building the worst
    case: a perpetual order opening a position from flat, its stop the whole position's, nothing pending on
    its side (tests/core/test_fast_paths.py holds the two alike). None: not that case (a position held,
    orders pending on its side, spot, a stop covering only its own fill, no stop)."""
    order, stop = s.order, s.order.stop_loss
    if stop is None or s.position_size != 0 or s.pending != 0 or is_spot(s) or order.category == "spot":
        return None
    pending = s.facts.pending
    if (pending is not None and pending.fills) or s.facts.venue.order_stop is not WHOLE_POSITION:
        return None
    signed = order.signed_qty
    return abs(signed) * unit_loss(signed > 0, s.sent_price, stop) if signed != 0 else ZERO


def loss_limit(s: Situation) -> tuple[Decimal, Code] | None:
    """The loss one trade may take (the smaller of the dollar and the equity share), or None: no limit."""
    return loss_cap(s.limits, s.facts.equity)


def check_loss_per_trade(s: Situation) -> Breach | None:
    """maxLossPerTradeUsd/Pct: the loss of the position it leaves, at its stops.

    The position the order leaves may lose at most the cap at the stops that will then apply to it (on a
    perpetual a stop sent with the order becomes the whole position's; on spot it sells the quantity that
    filled, and what no stop sells can lose its whole value). A perpetual position left with some of it
    under no stop has no bound: refused (attempted "unbounded"), whatever the order's size, and the next
    action gives the order a stop that fits. An order that may rest or outlive the position is judged as
    opening one from flat too (judged_position).
    """
    if (s.reducing and not outlives(s)) or stop_problem(s) is not None or stop_required(s):
        return None  # (requireStopLoss refuses an order without a stop, with one that fits this limit)
    if is_spot(s) and s.order.side is SELL:
        return None  # a spot sell only sells coin held (account.heldQty refuses more)
    limit = loss_limit(s)
    if limit is None:
        return None
    cap, rule = limit
    opened = opened_loss(s)
    if opened is not None and opened <= cap:
        return None
    left, at_stops = judged_position(s)
    if at_stops.unbounded:
        return size_breach(
            rule,
            plain_usd(cap),
            UNBOUNDED,
            f"the {plain(abs(left.size))} {s.order.symbol} position this order may leave would have "
            f"{plain(at_stops.uncovered)} of it under no stop: its loss is unbounded, above the {usd(cap)} a "
            "trade may lose",
        )
    if at_stops.loss <= cap:
        return None
    return size_breach(
        rule,
        plain_usd(cap),
        plain_usd(at_stops.loss),
        f"the {plain(abs(left.size))} {s.order.symbol} position this order leaves would lose "
        f"{usd(at_stops.loss)} if {_stops_words(left)} hit (from its entry "
        f"{plain(left.entry.quantize(s.rules.tick_size))} with this order at its worst fill "
        f"{plain(s.sent_price)}, taker fees both ways), above the {usd(cap)} a trade may lose",
    )


def _stops_words(left: Exposure) -> str:
    if left.floor is not None:
        return "its stops (the coin no stop sells losing its whole value) were"
    return (
        f"its stop at {plain(left.stop_loss)} is" if left.stop_loss is not None else "its partial stops are"
    )
