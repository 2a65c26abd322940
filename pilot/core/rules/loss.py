"""The loss rules: trading hours, the day's loss, open positions, and the loss a trade may take at its
stops."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple

from pilot.core.codes import Code
from pilot.core.facts import DayPnl
from pilot.core.policy import Policy, TradingWindow
from pilot.core.rules.protective import stop_problem
from pilot.core.rules.situation import (
    CENT,
    ZERO,
    Situation,
    close_option,
    is_spot,
    missing_fact,
    next_midnight,
    outlives,
    size_breach,
)
from pilot.core.stops import Exposure, Fill, LossAtStops, loss_cap, pending_fills, worst_case
from pilot.core.violations import Breach, NextAction, ToolCall, plain, usd


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
        limit=plain(loss.limit.quantize(CENT)),
        attempted=plain(loss.loss.quantize(CENT)),
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
    order, that loses most. Spot has no position stops: there the order stands alone."""
    order = s.order
    linear = order.category == "linear"
    base = Exposure.of(s.facts.position) if linear else Exposure(ZERO, ZERO)
    pending = pending_fills(s.facts.pending, order.side, s.sent_price) if linear else []
    carried = order.stop_loss if stop is None else stop
    signed = order.signed_qty if qty is None else qty * order.side.sign
    return worst_case(base, Fill(signed, s.sent_price, carried), pending, s.rules.qty_step, s.facts.venue)


def from_flat(s: Situation) -> tuple[Exposure, LossAtStops]:
    """The position the order and the orders pending on its side open once the one held now is gone."""
    pending = pending_fills(s.facts.pending, s.order.side, s.sent_price)
    order = Fill(s.order.signed_qty, s.sent_price, s.order.stop_loss)
    return worst_case(Exposure(ZERO, ZERO), order, pending, s.rules.qty_step, s.facts.venue)


def loss_limit(s: Situation) -> tuple[Decimal, Code] | None:
    """The loss one trade may take (the smaller of the dollar and the equity share), or None: no limit."""
    return loss_cap(s.limits, s.facts.equity)


def check_loss_per_trade(s: Situation) -> Breach | None:
    """maxLossPerTradeUsd/Pct: the loss of the position it leaves, at its stops.

    The position the order leaves may lose at most the cap at the stops that will then apply to it (a stop
    sent with the order becomes the whole position's). The quantity no stop closes is requireStopLoss's
    concern: a position without any stop is not judged here. An order that may outlive the position
    (outlives) is judged as opening one from flat too.
    """
    if (s.reducing and not outlives(s)) or stop_problem(s) is not None:
        return None
    limit = loss_limit(s)
    if limit is None:
        return None
    left, at_stops = from_flat(s) if s.reducing else position_left(s)
    if not s.reducing and outlives(s):
        flat = from_flat(s)
        if flat[1].loss > at_stops.loss:
            left, at_stops = flat
    if at_stops.uncovered >= abs(left.size):
        return None
    cap, rule = limit
    if at_stops.loss <= cap:
        return None
    stops = (
        f"its stop at {plain(left.stop_loss)} is" if left.stop_loss is not None else "its partial stops are"
    )
    return size_breach(
        rule,
        plain(cap.quantize(CENT)),
        plain(at_stops.loss.quantize(CENT)),
        f"the {plain(abs(left.size))} {s.order.symbol} position this order leaves would lose "
        f"{usd(at_stops.loss)} if {stops} hit (from its entry {plain(left.entry.quantize(s.rules.tick_size))} "
        f"with this order at its worst fill {plain(s.sent_price)}, taker fees both ways), above the "
        f"{usd(cap)} a trade may lose",
    )
