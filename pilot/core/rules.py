"""The checks evaluate(policy, facts) runs, at plan time and again right before sending.

They run in this fixed order; each is a small function returning a Breach (a broken rule) or None:

 0. check_listed              the exchange lists the instrument (unknownSymbol: terminal, never a retry)
 1. check_facts               every fact the decision needs is present (missing: risk-increasing refused)
 2. check_trading_state       halted refuses every new order; reducing refuses anything that grows a position
 3. check_allowed_market      only allowedMarkets may grow (decided from the policy alone)
 4. check_authority           validUntil and maxSessionMinutes: past either, nothing that grows a position
 5. check_reduce_only         a reduce-only order needs a position on the other side
 6. check_message_rate        maxOrderMessagesPerSecond/Minute: the home's creates, amends and cancels
 7. check_qty_step            whole lot steps
 8. check_price_tick          a limit price on the tick
 9. check_price_band          a limit price inside the exchange's price band
10. check_price_collar        priceCollarPct/Ticks: a limit price no farther from mark than the collar, on the
                              side where a mistake costs money
11. check_min_qty             instrument minimum quantity
12. check_max_qty             instrument maximum quantity per order
13. check_reduce_only_qty     a reduce-only order no larger than the position (or than the minimum order)
14. check_min_notional        instrument minimum order value (reduce-only orders are exempt, as on Bybit)
15. check_held_qty            a spot sell of coin held and not already offered
16. check_resting_orders      maxRestingOrdersPerMarket and maxRestingOrders: a limit order rests
17. check_daily_order_cap     orders sent today (UTC) below dailyOrderCap
18. check_order_notional      maxOrderNotionalUsd, at the worst fill
19. check_position_notional   maxNotionalUsd on the coin's exposure the order leaves, at the worst fill: the
                              position with every order pending on its side (resting, or sent with an unknown
                              outcome) filled too, plus the same coin in the other category (gross)
20. check_turnover_day        maxTurnoverUsdPerDay: the notional sent since 00:00 UTC plus this order's
21. check_turnover_24h        maxTurnoverUsd24h: the same over the last 24 hours
22. check_leverage            maxLeverage: the position it leaves over account equity
23. check_liquidation         minLiquidationDistancePct: estimated liquidation distance from mark
24. check_funds               the account's available balance pays for it (margin and fee; a spot buy's coin)
25. check_human_reach         an order that needs a human is not planned for a caller who cannot ask one
26. check_trading_hours       tradingHours: growing orders only inside a UTC window (retry_after: the next one)
27. check_daily_loss          dailyLossLimitUsd/Pct: the day's realised plus unrealised loss below the limit
28. check_drawdown            maxDrawdownUsd/Pct: the equity's drawdown from its peak (the latch is the app's)
29. check_cooldown            cooldown: no growing order for a while after enough losing trades
30. check_open_positions      maxOpenPositions: markets with a non-zero position, this order's included
31. check_loss_per_trade      maxLossPerTradeUsd/Pct: the loss of the position the order leaves at the stops
                              Bybit will then apply (pilot.core.stops), taker fees both ways
32. check_protection          requireStopLoss, and stop_loss / take_profit on the right side of the price (and,
                              for an order that can grow a position, within the price collar)

Checks 4 and 26 to 31 also apply only to orders that can grow the worst-case exposure; 32 requires a stop
only of those (and not of a reduce-only order, which cannot carry one), and checks any stop an order carries.

Checks 17 to 24 apply only to orders that can grow the worst-case exposure (pilot.core.risk): shrinking risk
is never refused by a cap. A reduce-only order grows it when it would leave orders pending on its side free
to open a larger position the other way (closing a long under resting sells). Checks 6, 10 and 16 apply to
every order: the exchange counts every message, a limit price is a limit price, a limit order rests.
The checks of the pre-trade controls (4, 6, 10, 16, 20, 21, 28, 29) pass at once when policy.json leaves
their fields unset, and `checks_for` leaves them out then: an order judged without them pays nothing.
Breaches of the size codes (pilot.core.codes: size_cap and size_grid) carry no next action of their own:
evaluate() gives them all one size (at a price on the tick and inside the band) that satisfies every one of
them at once (see pilot.core.sizing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple

from pilot.core.approval import needs_human
from pilot.core.channels import REACH_A_HUMAN
from pilot.core.codes import Code
from pilot.core.controls import (
    authority_breach,
    drawdown,
    drawdown_reached,
    drawdown_sentence,
    resting_breach,
    throttle,
)
from pilot.core.facts import (
    RESUME_TRADING,
    DayPnl,
    Effect,
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    Side,
    Touch,
    TradingState,
)
from pilot.core.policy import EffectiveLimits, Policy, TradingWindow
from pilot.core.risk import is_risk_reducing, worst_case_size
from pilot.core.stops import Exposure, Fill, LossAtStops, loss_cap, pending_fills, worst_case
from pilot.core.valuation import (
    TAKER_FEE,
    collar_edge,
    liquidation_clear,
    liquidation_distance_pct,
    send_price,
    worst_fill_for,
)
from pilot.core.violations import Breach, NextAction, ToolCall, pct, plain, usd

ZERO = Decimal(0)
CENT = Decimal("0.01")
RETRY_MISSING_FACTS = timedelta(seconds=5)


class Situation(NamedTuple):
    """What follows from (policy, facts) for one order: computed once, read by every check.

    A NamedTuple rather than a frozen dataclass: it is built on every evaluation, and this is the hot path.
    """

    policy: Policy
    facts: Facts
    order: OrderIntent
    rules: InstrumentRules
    touch: Touch
    limits: EffectiveLimits
    reducing: bool
    position_size: Decimal
    price: Decimal  # worst-fill valuation price
    sent_price: Decimal  # the limit price that will be sent (a market order's IOC price)
    after: Decimal  # signed position left if the order and every pending order on its side fill
    pending: Decimal  # quantity already pending on the order's side (resting, or sent with unknown outcome)
    order_notional: Decimal
    after_notional: Decimal  # the position this order leaves, at the worst fill
    coin_notional: Decimal  # that, plus the same coin in the other category (maxNotionalUsd is per coin)

    @property
    def base(self) -> str:
        return self.rules.base


def situate(policy: Policy, facts: Facts, order: OrderIntent | None = None) -> Situation | None:
    """Derive the situation, or None when the rules or the touch are missing (nothing can be priced).
    `order`: another order than facts.order, on the same facts (a size search's probe: the facts are not
    copied for it)."""
    rules, touch = facts.rules, facts.touch
    if rules is None or touch is None:
        return None
    order = order or facts.order
    limits = policy.limits_for(order.symbol)
    position_size = facts.position.size if facts.position is not None else ZERO
    sent = send_price(order, touch, rules, limits.max_slippage_pct, facts.band)
    price = worst_fill_for(order.side, sent, touch.bid)
    pending = facts.pending.on_side(order.side) if facts.pending is not None else ZERO
    after = worst_case_size(position_size, order, pending)
    size_after = abs(after)
    # Positional, in the fields' order: keywords cost a NamedTuple a third of a microsecond on the hot path.
    return Situation(
        policy,
        facts,
        order,
        rules,
        touch,
        limits,
        is_risk_reducing(facts.position.size if facts.position else None, order, facts.pending),
        position_size,
        price,
        sent,
        after,
        pending,
        order.qty * price,
        size_after * price,
        (size_after + (facts.elsewhere or ZERO)) * price,
    )


# --- 1 to 4: who may trade what -------------------------------------------------------------------


def retry_missing(now: datetime, unavailable_until: datetime | None) -> datetime:
    """When to read a missing fact again: in a few seconds, or when the exchange said reads work again."""
    soon = now + RETRY_MISSING_FACTS
    return max(soon, unavailable_until) if unavailable_until is not None else soon


def check_facts(facts: Facts, reducing: bool) -> Breach | None:
    if facts.rules is not None and facts.touch is not None and (reducing or _has_growing_needs(facts)):
        return None  # the common case, kept cheap: evaluate runs on every plan and every send
    needed = ("rules", "touch") if reducing else ("rules", "touch", *GROWING_NEEDS)
    missing = [name for name in needed if getattr(facts, name) is None]
    if not missing:
        return None
    names = ", ".join(_FACT_NAMES[name] for name in missing)
    return Breach(
        rule=Code.FACTS,
        limit="all facts present",
        attempted="missing: " + ", ".join(missing),
        detail=f"could not read {names} for {facts.order.symbol}, so the order cannot be judged",
        next=NextAction.wait(
            "wait until retry_after and call plan_order again; if this persists, the exchange is unreachable",
            retry_missing(facts.now, facts.unavailable_until),
            human="if this goes on, check the exchange's status page and this machine's network",
        ),
    )


def check_listed(policy: Policy, facts: Facts) -> Breach | None:
    """The exchange lists no such instrument: terminal, never a retry (a typo, or the wrong category)."""
    if facts.listed:
        return None
    order = facts.order
    if order.symbol not in policy.allowed_markets:
        return _not_allowed(policy, order.symbol)
    return Breach(
        rule=Code.UNKNOWN_SYMBOL,
        limit=f"a {order.category} instrument the exchange lists",
        attempted=order.symbol,
        detail=f"the exchange lists no {order.category} instrument {order.symbol}",
        next=NextAction.stop(
            f"stop: {order.symbol} does not exist on {order.category}; check the symbol (get_instrument_rules)",
            human=f"correct {order.symbol} in allowedMarkets in policy.json, or trade it in its own category",
        ),
    )


def _has_growing_needs(facts: Facts) -> bool:
    return not (
        facts.position is None
        or facts.equity is None
        or facts.orders_today is None
        or facts.pending is None
        or facts.elsewhere is None
        or facts.funds is None
    )


# What an order that can grow a position also needs (a reducing one needs only the rules and the touch).
GROWING_NEEDS = ("position", "equity", "orders_today", "pending", "elsewhere", "funds")

_FACT_NAMES = {
    "rules": "the instrument rules",
    "touch": "the order book top and mark price",
    "position": "the current position",
    "equity": "the account equity",
    "orders_today": "the count of orders sent today",
    "pending": "the open orders",
    "elsewhere": "the same coin's holding or position in the other category",
    "funds": "the account's available balance",
}


def check_trading_state(s: Situation) -> Breach | None:
    state = s.facts.trading_state
    if state is TradingState.ACTIVE or state.permits(Effect.REDUCE if s.reducing else Effect.GROW):
        return None
    human = RESUME_TRADING
    if state is TradingState.HALTED:
        return Breach(
            rule=Code.TRADING_STATE,
            limit="halted",
            attempted="new order",
            detail="trading is halted: no new orders, only cancels",
            next=NextAction.stop("stop trading; only cancel_order works while halted", human=human),
        )
    options = close_option(s)
    return Breach(
        rule=Code.TRADING_STATE,
        limit="reducing",
        attempted="an order that grows the position",
        detail="trading is reducing: only orders that shrink a position are allowed",
        next=NextAction.stop(
            "do not open or add; only reduce_only orders, close_position, cancels and lower leverage work",
            human=human,
            options=options,
        ),
    )


def check_allowed_market(s: Situation) -> Breach | None:
    if s.reducing or s.order.symbol in s.policy.allowed_markets:
        return None
    return _not_allowed(s.policy, s.order.symbol)


def _not_allowed(policy: Policy, symbol: str) -> Breach:
    """allowedMarkets, decided from the policy alone: never a retry, whatever the exchange could say."""
    allowed = policy.allowed_markets
    listed = ", ".join(allowed) if allowed else "none"
    return Breach(
        rule=Code.ALLOWED_MARKETS,
        limit=listed,
        attempted=symbol,
        detail=f"{symbol} is not on the allowed list ({listed})",
        next=NextAction.stop(
            f"pick one of the allowed markets ({listed})" if allowed else "no market is allowed; stop",
            human=f"add {symbol} to allowedMarkets in policy.json",
        ),
    )


def check_reduce_only(s: Situation) -> Breach | None:
    """A reduce-only order needs a position on the other side; nothing else can make it fill."""
    order = s.order
    if not order.reduce_only or _closes(s.position_size, order.side):
        return None
    held = _describe_position(s.position_size, s.base)
    return Breach(
        rule=Code.REDUCE_ONLY,
        limit=plain(abs(s.position_size)),
        attempted=plain(order.qty),
        detail=f"a reduce-only {order.side} cannot shrink the position ({held})",
        next=NextAction.stop(
            "there is nothing on that side to reduce; check get_positions",
            human=f"nothing: there is no position a reduce-only {order.side} could shrink",
        ),
    )


def check_reduce_only_qty(s: Situation) -> Breach | None:
    """A reduce-only order no larger than the position, or than the instrument's minimum order.

    Bybit truncates a reduce-only order to the position it closes, so the smallest valid order closes a
    position smaller than it (dust); anything larger is refused with the size that closes it.
    """
    order = s.order
    if not order.reduce_only or not _closes(s.position_size, order.side):
        return None
    most = reduce_only_limit(s.position_size, s.rules)
    if order.qty <= most:
        return None
    return _size_breach(
        Code.REDUCE_ONLY_QTY,
        plain(most),
        plain(order.qty),
        f"a reduce-only {order.side} of {plain(order.qty)} {s.base} is larger than the position "
        f"({_describe_position(s.position_size, s.base)})",
    )


def reduce_only_limit(position_size: Decimal, rules: InstrumentRules) -> Decimal:
    """The largest reduce-only order for a position: all of it, or the minimum order when it is less."""
    return max(abs(position_size), rules.min_qty)


def _closes(position_size: Decimal, side: Side) -> bool:
    """Whether an order on `side` works against the position (a sell against a long)."""
    return position_size != 0 and (position_size > 0) == (side is Side.SELL)


# --- 5 to 9: the instrument's rules ---------------------------------------------------------------


def check_qty_step(s: Situation) -> Breach | None:
    step = s.rules.qty_step
    if step <= 0 or s.order.qty % step == 0:
        return None
    return _size_breach(
        Code.QTY_STEP,
        plain(step),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is not a whole number of lot steps ({plain(step)})",
    )


def check_price_tick(s: Situation) -> Breach | None:
    order, tick = s.order, s.rules.tick_size
    if order.order_type is not OrderType.LIMIT or order.limit_price is None:
        return None
    if order.limit_price > 0 and (tick <= 0 or order.limit_price % tick == 0):
        return None
    return _size_breach(
        Code.TICK_SIZE,
        plain(tick),
        plain(order.limit_price),
        f"the limit price {plain(order.limit_price)} is not a positive multiple of the tick {plain(tick)}",
    )


def check_min_qty(s: Situation) -> Breach | None:
    minimum = s.rules.min_qty
    if s.order.qty >= minimum and s.order.qty > 0:
        return None
    return _size_breach(
        Code.MIN_ORDER_QTY,
        plain(minimum),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is below the {s.base} minimum {plain(minimum)}",
    )


def check_max_qty(s: Situation) -> Breach | None:
    maximum = s.rules.max_qty
    if s.order.qty <= maximum:
        return None
    return _size_breach(
        Code.MAX_ORDER_QTY,
        plain(maximum),
        plain(s.order.qty),
        f"{plain(s.order.qty)} {s.base} is above the {s.base} maximum {plain(maximum)} per order",
    )


def check_price_band(s: Situation) -> Breach | None:
    """A limit price inside the exchange's band (spot refuses it outside; linear would move it)."""
    order, band = s.order, s.facts.band
    if band is None or order.order_type is not OrderType.LIMIT or order.limit_price is None:
        return None
    price = order.limit_price
    if order.side is Side.BUY and price > band.buy_limit:
        edge, way = band.buy_limit, "above the highest buy"
    elif order.side is Side.SELL and price < band.sell_limit:
        edge, way = band.sell_limit, "below the lowest sell"
    else:
        return None
    return _size_breach(
        Code.PRICE_BAND,
        plain(edge),
        plain(price),
        f"the limit price {plain(price)} is {way} the exchange accepts now ({plain(edge)})",
    )


def check_min_notional(s: Situation) -> Breach | None:
    minimum = s.rules.min_notional
    notional = s.order.qty * s.sent_price
    if s.order.reduce_only or notional >= minimum:
        return None
    return _size_breach(
        Code.MIN_NOTIONAL,
        plain(minimum),
        plain(notional),
        f"this order would be {usd(notional)} notional, below the {s.order.symbol} minimum {usd(minimum)}",
    )


# --- 10 to 14: the policy's caps (risk-increasing orders only) -----------------------------------


def check_daily_order_cap(s: Situation) -> Breach | None:
    cap, sent = s.policy.daily_order_cap, s.facts.orders_today or 0
    if s.reducing or sent < cap:
        return None
    midnight = _next_midnight(s.facts.now)
    return Breach(
        rule=Code.DAILY_ORDER_CAP,
        limit=str(cap),
        attempted=str(sent + 1),
        detail=f"{sent} orders already sent today (UTC), the cap is {cap}",
        next=NextAction.wait(
            f"wait until the cap resets at {midnight.isoformat()} (00:00 UTC); reducing orders still work",
            midnight,
            human="raise dailyOrderCap in policy.json",
        ),
    )


def check_order_notional(s: Situation) -> Breach | None:
    cap = s.limits.max_order_notional_usd
    if s.reducing or s.order_notional <= cap:
        return None
    return _size_breach(
        Code.MAX_ORDER_NOTIONAL,
        plain(cap),
        plain(s.order_notional),
        f"this order would be {usd(s.order_notional)} notional at its worst fill, above the {usd(cap)} cap per order",
    )


def check_position_notional(s: Situation) -> Breach | None:
    cap = s.limits.max_notional_usd
    if s.reducing or s.coin_notional <= cap:
        return None
    return _size_breach(
        Code.MAX_NOTIONAL,
        plain(cap),
        plain(s.coin_notional),
        f"the position this order leaves would be {usd(s.coin_notional)} notional{_counting(s)}, "
        f"above the {usd(cap)} cap per market",
    )


def check_leverage(s: Situation) -> Breach | None:
    equity, limit = s.facts.equity, s.limits.max_leverage
    if s.reducing or _is_spot(s) or equity is None:
        return None
    if equity > 0 and s.after_notional <= limit * equity:
        return None
    leverage = s.after_notional / equity if equity > 0 else None
    shown = f"{leverage.quantize(Decimal('0.01'))}x" if leverage is not None else "unbounded"
    return _size_breach(
        Code.MAX_LEVERAGE,
        plain(limit),
        plain(leverage.quantize(Decimal("0.0001"))) if leverage is not None else "infinite",
        f"the position this order leaves would be {shown} the account equity of {usd(equity)}, "
        f"above the {plain(limit)}x limit",
    )


def check_liquidation(s: Situation) -> Breach | None:
    equity, minimum = s.facts.equity, s.limits.min_liquidation_distance_pct
    if s.reducing or _is_spot(s) or equity is None or minimum == 0:
        return None
    mmr, mark = s.rules.maintenance_margin_rate, s.touch.mark
    if liquidation_clear(s.after, s.price, equity, mmr, mark, minimum):
        return None
    distance = liquidation_distance_pct(
        s.after, s.price, equity, s.rules.maintenance_margin_rate, s.touch.mark
    )
    if distance is None or distance >= minimum:
        return None
    return _size_breach(
        Code.MIN_LIQUIDATION_DISTANCE,
        plain(minimum),
        plain(distance.quantize(Decimal("0.0001"))),
        f"liquidation would sit {pct(distance)} from mark, closer than the {plain(minimum)}% minimum",
    )


# --- 15 to 17: what the exchange and the approval path would refuse ---------------------------------


def check_held_qty(s: Situation) -> Breach | None:
    """A spot sell is of coin the account holds and has not already offered in open sells."""
    if not _is_spot(s) or s.order.side is not Side.SELL:
        return None
    free = max(s.position_size - s.pending, ZERO)
    if s.order.qty <= free:
        return None
    return _size_breach(
        Code.HELD_QTY,
        plain(free),
        plain(s.order.qty),
        f"a spot sell of {plain(s.order.qty)} {s.base} is more than the {plain(free)} {s.base} held "
        "and not already offered",
    )


def check_funds(s: Situation) -> Breach | None:
    """The account can pay for the order: a spot buy's quote coin, a linear order's margin and fee.

    Linear: the part of the order that opens a position needs its initial margin at the position's leverage,
    and the whole order the taker fee, out of the available balance (Bybit's order cost; it refuses the
    order otherwise, retCode 110007). Only a reduce-only order is exempt, as at Bybit: a plain order that
    shrinks the position still pays its fee, so with no balance left its next action is the reduce-only one.
    """
    funds = s.facts.funds
    if funds is None or s.order.reduce_only or (s.reducing and _is_spot(s)):
        return None
    spot = _is_spot(s)
    if not spot:  # the common case first: the whole order's cost at leverage 1 bounds any opening part's
        whole = s.order.qty * s.sent_price
        if whole + whole * TAKER_FEE <= funds.available_usd:
            return None
    if spot:
        if s.order.side is not Side.BUY:
            return None
        needed, available = s.order.qty * s.sent_price, funds.free_quote
    else:
        closable = abs(s.position_size) if _closes(s.position_size, s.order.side) else ZERO
        opening = max(s.order.qty - closable, ZERO)
        leverage = max(s.facts.position.leverage if s.facts.position else Decimal(1), Decimal(1))
        needed = opening * s.sent_price / leverage + s.order.qty * s.sent_price * TAKER_FEE
        available = funds.available_usd
    if needed <= available:
        return None
    return _size_breach(
        Code.AVAILABLE_BALANCE,
        plain(available.quantize(CENT) if available.is_finite() else available),
        plain(needed.quantize(CENT)),
        f"this order needs {usd(needed)} of the account's available balance, which is {usd(available)}",
    )


def check_human_reach(s: Situation) -> Breach | None:
    """An order that would need a human's approval, planned for a caller who cannot ask one, is a dead end."""
    if s.facts.can_reach_human or not needs_human(
        s.policy.confirm, "place_order", s.order_notional, grows=not s.reducing
    ):
        return None
    above = s.policy.confirm.above_notional_usd
    how = REACH_A_HUMAN
    if "place_order" in s.policy.confirm.actions or above is None:
        return Breach(
            rule=Code.CONFIRMATION_CHANNEL_UNAVAILABLE,
            limit="a way to ask a human",
            attempted="none",
            detail="every order needs a human's approval, and this client cannot ask one",
            next=NextAction.stop("stop: no order can be approved from this client", human=how),
        )
    return _size_breach(
        Code.CONFIRM_ABOVE,
        plain(above),
        plain(s.order_notional),
        f"an order above {usd(above)} needs a human's approval, and this client cannot ask one "
        f"(this one is {usd(s.order_notional)}); a human can: {how}",
    )


# --- 20 to 24: loss rules (risk-increasing orders only) --------------------------------------------


def check_trading_hours(s: Situation) -> Breach | None:
    """Growing orders only inside one of tradingHours' UTC windows; outside, wait for the next one."""
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


def check_daily_loss(s: Situation) -> Breach | None:
    """Past the day's loss limit only orders that shrink a position are allowed, until 00:00 UTC."""
    policy = s.policy
    if s.reducing or (policy.daily_loss_limit_usd is None and policy.daily_loss_limit_pct is None):
        return None
    pnl = s.facts.day_pnl
    if pnl is None:
        return _missing(s.facts, "day_pnl", "the day's realised and unrealised PnL")
    usd_limit = policy.daily_loss_limit_usd
    if (
        usd_limit is not None
        and policy.daily_loss_limit_pct is None
        and -(pnl.realised + pnl.unrealised) < usd_limit
    ):
        return None  # the dollar limit alone, not reached (kept cheap: evaluate runs on every plan)
    loss = day_loss(policy, s.facts.equity, pnl)
    if loss is None or not loss.reached:
        return None
    midnight = _next_midnight(s.facts.now)
    return Breach(
        rule=loss.rule,
        limit=plain(loss.limit.quantize(CENT)),
        attempted=plain(loss.loss.quantize(CENT)),
        detail=f"the day's loss so far is {usd(loss.loss)} (realised {usd(-loss.pnl.realised)}, unrealised "
        f"{usd(-loss.pnl.unrealised)}), at or past the daily loss limit of {usd(loss.limit)}",
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
    """maxOpenPositions: linear markets with a non-zero position once this order (and its side) fills."""
    most = s.policy.max_open_positions
    if most is None or s.reducing or _is_spot(s):
        return None
    markets = s.facts.open_markets
    if markets is None:
        return _missing(s.facts, "open_markets", "the open positions")
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


# --- the platform's pre-trade controls (pilot.core.controls) -----------------------------------------


def check_message_rate(s: Situation) -> Breach | None:
    """maxOrderMessagesPerSecond/Minute: one more message stays within the throttle. Every order counts, a
    reducing one too: the exchange counts every request, and waiting `retry_after` (a second or a minute at
    most) is all it takes."""
    policy = s.policy
    if policy.max_order_messages_per_second is None and policy.max_order_messages_per_minute is None:
        return None
    return throttle(policy, s.facts.messages, s.facts.now)


def check_price_collar(s: Situation) -> Breach | None:
    """priceCollarPct/Ticks: a limit price no farther from mark than the collar on the side where a mistake
    costs money (a buy above mark, a sell below it); the next action is the same order at the edge."""
    order, limits = s.order, s.limits
    if order.order_type is not OrderType.LIMIT or order.limit_price is None:
        return None
    if limits.price_collar_pct is None and limits.price_collar_ticks is None:
        return None
    edge = price_collar(s, order.side)
    price = order.limit_price
    if edge is None or (price <= edge if order.side is Side.BUY else price >= edge):
        return None
    way = "above" if order.side is Side.BUY else "below"
    return _size_breach(
        Code.PRICE_COLLAR,
        plain(edge),
        plain(price),
        f"the limit price {plain(price)} is {way} the price collar's edge {plain(edge)} "
        f"({_collar_words(s.limits)} {way} the mark {plain(s.touch.mark)})",
    )


def price_collar(s: Situation, side: Side) -> Decimal | None:
    """The collar's edge for a price on `side` (a buy's limit, or a sell's: also a long's stop trigger)."""
    limits = s.limits
    return collar_edge(
        s.touch.mark, side, s.rules.tick_size, limits.price_collar_pct, limits.price_collar_ticks
    )


def _collar_words(limits: EffectiveLimits) -> str:
    parts = []
    if limits.price_collar_pct is not None:
        parts.append(f"{plain(limits.price_collar_pct)}%")
    if limits.price_collar_ticks is not None:
        parts.append(f"{limits.price_collar_ticks} ticks")
    return " or ".join(parts)


def check_resting_orders(s: Situation) -> Breach | None:
    """maxRestingOrdersPerMarket and maxRestingOrders: a limit order rests (Pilot sends it GTC); a market
    order is a Limit IOC and never rests. A reducing one is judged too (close_position then closes it)."""
    per_market, total = s.limits.max_resting_orders_per_market, s.policy.max_resting_orders
    if (per_market is None and total is None) or s.order.order_type is not OrderType.LIMIT:
        return None
    resting = s.facts.resting
    if resting is None or (total is not None and resting.total is None):
        return None if s.reducing else _missing(s.facts, "resting", "the orders resting on the account")
    args = {"symbol": s.order.symbol, "category": s.order.category}
    options = (ToolCall("get_open_orders", args, "see the orders resting there"),)
    return resting_breach(s.policy, per_market, resting, s.order.symbol, options)


def check_turnover_day(s: Situation) -> Breach | None:
    """maxTurnoverUsdPerDay: the notional this home sent since 00:00 UTC plus this order at its worst fill."""
    cap, turnover = s.policy.max_turnover_usd_per_day, s.facts.turnover
    sent = turnover.day_usd if turnover is not None else None
    return _turnover(s, cap, sent, Code.MAX_TURNOVER_DAY, "today (UTC)", lambda: _next_midnight(s.facts.now))


def check_turnover_24h(s: Situation) -> Breach | None:
    """maxTurnoverUsd24h: as check_turnover_day, over the last 24 hours."""
    cap, turnover = s.policy.max_turnover_usd_24h, s.facts.turnover
    sent = turnover.rolling_usd if turnover is not None else None
    frees = turnover.rolling_frees_at if turnover is not None else None
    return _turnover(s, cap, sent, Code.MAX_TURNOVER_24H, "in the last 24 hours", lambda: frees)


def _turnover(
    s: Situation,
    cap: Decimal | None,
    sent: Decimal | None,
    rule: Code,
    window: str,
    frees: Callable[[], datetime | None],
) -> Breach | None:
    """A turnover cap over `window`: the notional sent in it (`sent`; None: not read) plus this order at its
    worst fill; refused as a size cap whose room comes back at `frees()` (worked out only for a refusal)."""
    if cap is None or s.reducing:
        return None
    if sent is None:
        return _missing(s.facts, "turnover", f"the notional sent {window}")
    total = sent + s.order_notional
    if total <= cap:
        return None
    return _size_breach(
        rule,
        plain(cap),
        plain(total.quantize(CENT)),
        f"this order's {usd(s.order_notional)} at its worst fill would bring the notional sent {window} "
        f"to {usd(total)}, above the {usd(cap)} allowed",
        retry_after=frees(),
    )


def check_authority(s: Situation) -> Breach | None:
    """validUntil and maxSessionMinutes: past either, only orders that shrink a position pass."""
    policy = s.policy
    if s.reducing or (policy.valid_until is None and policy.max_session_minutes is None):
        return None
    breach = authority_breach(policy, s.facts.now, s.facts.session_age)
    if breach is None or breach.next is None:
        return breach
    return replace(breach, next=replace(breach.next, options=close_option(s)))


def check_drawdown(s: Situation) -> Breach | None:
    """maxDrawdownUsd/Pct: past the drawdown from the window's peak equity, only orders that shrink a
    position pass until the window passes or a human resets it (the latch is the app's: pilot.app.runtime)."""
    policy = s.policy
    if s.reducing or (policy.max_drawdown_usd is None and policy.max_drawdown_pct is None):
        return None
    state, equity = s.facts.drawdown, s.facts.equity
    if state is None or equity is None:
        return _missing(s.facts, "drawdown", "the account equity and its peak")
    if not state.latched and not drawdown_reached(policy, equity, state):
        return None
    found = drawdown(policy, equity, state)
    if found is None:
        return None
    until = state.until
    detail = drawdown_sentence(found)
    if not found.reached:
        was = f" ({usd(state.reached_at_usd)} below the peak then)" if state.reached_at_usd else ""
        detail = f"the drawdown limit was reached in this window{was}; trading stays reducing until it passes"
    when = f"until {until.isoformat()}" if until is not None else "until a human resets it"
    return Breach(
        rule=found.rule,
        limit=plain(found.limit.quantize(CENT)),
        attempted=plain(max(found.drawdown, state.reached_at_usd or ZERO).quantize(CENT)),
        detail=detail,
        next=NextAction(
            tool=None,
            args=None,
            text=f"do not open or add {when}; reducing orders and close_position still work",
            human="reset it with `pilot drawdown reset`, or raise maxDrawdownUsd/Pct in policy.json",
            retry_after=until,
            options=close_option(s),
        ),
    )


def check_cooldown(s: Situation) -> Breach | None:
    """cooldown: after enough losing trades, no order that can grow a position until the cooldown ends."""
    rule = s.policy.cooldown
    if rule is None or s.reducing:
        return None
    state = s.facts.cooldown
    if state is None:
        return _missing(s.facts, "cooldown", "the account's closed trades")
    until = state.until
    if until is None or s.facts.now >= until:
        return None
    within = f" within {rule.within_minutes} minutes" if rule.within_minutes is not None else " in a row"
    return Breach(
        rule=Code.COOLDOWN,
        limit=str(rule.after_losses),
        attempted=str(state.losses),
        detail=f"{state.losses} closed trades were losses{within}: no order that opens or adds for "
        f"{rule.minutes} minutes, until {until.isoformat()}",
        next=NextAction(
            tool=None,
            args=None,
            text=f"wait until {until.isoformat()}; reducing orders and close_position still work",
            human="shorten cooldown.minutes, or raise cooldown.afterLosses, in policy.json",
            retry_after=until,
            options=close_option(s),
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


def outlives(s: Situation) -> bool:
    """Whether the order may fill after the position it now closes is gone: a linear limit order, not
    reduce-only, against the position. If the position's stop (or anything else) closes it first, the
    order then opens a position of its own, and Bybit keeps it resting to do so."""
    order, size = s.order, s.position_size
    if order.category != "linear" or order.reduce_only or order.order_type is not OrderType.LIMIT:
        return False
    return size != 0 and (size > 0) != (order.side is Side.BUY)


def from_flat(s: Situation) -> tuple[Exposure, LossAtStops]:
    """The position the order and the orders pending on its side open once the one held now is gone."""
    pending = pending_fills(s.facts.pending, s.order.side, s.sent_price)
    order = Fill(s.order.signed_qty, s.sent_price, s.order.stop_loss)
    return worst_case(Exposure(ZERO, ZERO), order, pending, s.rules.qty_step, s.facts.venue)


def loss_limit(s: Situation) -> tuple[Decimal, Code] | None:
    """The loss one trade may take (the smaller of the dollar and the equity share), or None: no limit."""
    return loss_cap(s.limits, s.facts.equity)


def check_loss_per_trade(s: Situation) -> Breach | None:
    """maxLossPerTradeUsd/Pct: the position the order leaves may lose at most the cap at the stops that will
    then apply to it (a stop sent with the order becomes the whole position's). The quantity no stop closes
    is requireStopLoss's concern: a position without any stop is not judged here. An order that may outlive
    the position (outlives) is judged as opening one from flat too."""
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
    return _size_breach(
        rule,
        plain(cap.quantize(CENT)),
        plain(at_stops.loss.quantize(CENT)),
        f"the {plain(abs(left.size))} {s.order.symbol} position this order leaves would lose "
        f"{usd(at_stops.loss)} if {stops} hit (from its entry {plain(left.entry.quantize(s.rules.tick_size))} "
        f"with this order at its worst fill {plain(s.sent_price)}, taker fees both ways), above the "
        f"{usd(cap)} a trade may lose",
    )


def stop_reference(s: Situation) -> Decimal:
    """The price a stop must lie beyond: the worst fill, the mark and the touch (below all of them for a buy,
    above for a sell). Bybit checks a stop sent with an order against its base price, the last price for a
    market order, which lies between the bid and the ask."""
    if s.order.side is Side.BUY:
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
    if s.order.side is Side.BUY and stop >= reference:
        return f"a buy's stop_loss must be below {plain(reference)} (its price, the mark and the bid); it is {plain(stop)}"
    if s.order.side is Side.SELL and stop <= reference:
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
    buy = s.order.side is Side.BUY
    edge = price_collar(s, Side.SELL if buy else Side.BUY)  # the stop closes: it is the other side's price
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
    if s.order.side is Side.BUY and target <= fill:
        return f"a buy's take_profit must be above its price {plain(fill)}; it is {plain(target)}"
    if s.order.side is Side.SELL and target >= fill:
        return f"a sell's take_profit must be below its price {plain(fill)}; it is {plain(target)}"
    return None


def check_protection(s: Situation) -> Breach | None:
    """requireStopLoss: a growing order carries a stop; and any stop or take-profit lies on the right side
    (checked on every order that carries one: the exchange refuses it otherwise).

    The next action (a stop that fits, the size sized to pass) is the one sizing.protect() gives.
    """
    order = s.order
    if order.category == "spot":
        return None
    # A stop is required only of an order that can grow the position and can carry one (not reduce-only);
    # a stop or target an order does carry is checked whatever the order does: the exchange checks it too.
    if order.stop_loss is None and s.limits.require_stop_loss and not order.reduce_only:
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
            f"allows ({_collar_words(s.limits)}): at most {plain(edge)}",
        )
    problem = take_profit_problem(s)
    if problem is not None:
        return Breach(Code.TAKE_PROFIT, plain(s.sent_price), plain(order.take_profit or ZERO), problem)
    return None


def _missing(facts: Facts, name: str, what: str) -> Breach:
    """A fact only a loss rule needs could not be read: growing orders wait, as for any missing fact."""
    return Breach(
        rule=Code.FACTS,
        limit="all facts present",
        attempted=f"missing: {name}",
        detail=f"could not read {what}, so the order cannot be judged",
        next=NextAction.wait(
            "wait until retry_after and call plan_order again; if this persists, the exchange is unreachable",
            retry_missing(facts.now, facts.unavailable_until),
            human="if this goes on, check the exchange's status page and this machine's network",
        ),
    )


def _next_midnight(now: datetime) -> datetime:
    return datetime.combine(now.date() + timedelta(days=1), time(0), tzinfo=now.tzinfo)


Check = Callable[[Situation], Breach | None]
CHECKS: tuple[Check, ...] = (
    check_trading_state,
    check_allowed_market,
    check_authority,
    check_reduce_only,
    check_message_rate,
    check_qty_step,
    check_price_tick,
    check_price_band,
    check_price_collar,
    check_min_qty,
    check_max_qty,
    check_reduce_only_qty,
    check_min_notional,
    check_held_qty,
    check_resting_orders,
    check_daily_order_cap,
    check_order_notional,
    check_position_notional,
    check_turnover_day,
    check_turnover_24h,
    check_leverage,
    check_liquidation,
    check_funds,
    check_human_reach,
    check_trading_hours,
    check_daily_loss,
    check_drawdown,
    check_cooldown,
    check_open_positions,
    check_loss_per_trade,
    check_protection,
)


# The checks that can report a size code (pilot.core.codes: size_cap and size_grid). The size searches of
# pilot.core.sizing look only at those codes, so they run only these: a blocker or a protection breach does
# not tell one size from another there. tests/core/test_properties.py holds it: what these report is what
# all the checks report of those codes.
SIZE_CHECKS: tuple[Check, ...] = (
    check_qty_step,
    check_price_tick,
    check_price_band,
    check_price_collar,
    check_min_qty,
    check_max_qty,
    check_reduce_only_qty,
    check_min_notional,
    check_held_qty,
    check_order_notional,
    check_position_notional,
    check_turnover_day,
    check_turnover_24h,
    check_leverage,
    check_liquidation,
    check_funds,
    check_human_reach,
    check_loss_per_trade,
)


def _any_market(policy: Policy, *names: str) -> bool:
    return any(getattr(market, name) is not None for market in policy.markets.values() for name in names)


# The pre-trade controls' checks (issue 27) each pass at once while policy.json leaves their fields unset:
# `checks_for` leaves them out then, so an order judged without them pays nothing for them.
_CONTROLS: dict[Check, Callable[[Policy], bool]] = {
    check_authority: lambda p: p.valid_until is not None or p.max_session_minutes is not None,
    check_message_rate: lambda p: (
        p.max_order_messages_per_second is not None or p.max_order_messages_per_minute is not None
    ),
    check_price_collar: lambda p: (
        p.price_collar_pct is not None
        or p.price_collar_ticks is not None
        or _any_market(p, "price_collar_pct", "price_collar_ticks")
    ),
    check_resting_orders: lambda p: (
        p.max_resting_orders is not None
        or p.max_resting_orders_per_market is not None
        or _any_market(p, "max_resting_orders_per_market")
    ),
    check_turnover_day: lambda p: p.max_turnover_usd_per_day is not None,
    check_turnover_24h: lambda p: p.max_turnover_usd_24h is not None,
    check_drawdown: lambda p: p.max_drawdown_usd is not None or p.max_drawdown_pct is not None,
    check_cooldown: lambda p: p.cooldown is not None,
}
_CHOSEN: dict[int, tuple[Policy, tuple[Check, ...], tuple[Check, ...]]] = {}  # by id, the policy kept alive


def checks_for(policy: Policy) -> tuple[tuple[Check, ...], tuple[Check, ...]]:
    """CHECKS and SIZE_CHECKS without the controls `policy` leaves unset, worked out once per policy."""
    chosen = _CHOSEN.get(id(policy))
    if chosen is not None and chosen[0] is policy:
        return chosen[1], chosen[2]
    if len(_CHOSEN) >= 64:  # policy.json is read on every call: only the latest few are asked again
        _CHOSEN.clear()
    every = tuple(check for check in CHECKS if check not in _CONTROLS or _CONTROLS[check](policy))
    sizes = tuple(check for check in SIZE_CHECKS if check in every)
    _CHOSEN[id(policy)] = (policy, every, sizes)
    return every, sizes


def size_breaches(policy: Policy, facts: Facts, order: OrderIntent) -> list[Breach]:
    """What the size checks report (SIZE_CHECKS, in the order of CHECKS) of `order` on these facts: the
    breaches a smaller or larger order may fix. The facts must let the order be priced (rules and touch)."""
    situation = situate(policy, facts, order)
    assert situation is not None, "sizing searches only an order it could price"
    breaches = []
    for check in checks_for(policy)[1]:
        breach = check(situation)
        if breach is not None:
            breaches.append(breach)
    return breaches


def run_checks(policy: Policy, facts: Facts) -> tuple[Situation | None, list[Breach]]:
    """Run every check in order. Size breaches carry no next action yet: sizing searches with these."""
    unlisted = check_listed(policy, facts)
    if unlisted is not None:
        return None, [unlisted]
    situation = situate(policy, facts)
    reducing = situation.reducing if situation else _reducing(facts)
    missing = check_facts(facts, reducing)
    if missing is not None and facts.order.symbol not in policy.allowed_markets:
        return situation, [_not_allowed(policy, facts.order.symbol)]  # the policy alone decides
    breaches = [missing] if missing else []
    if situation is None:
        return None, breaches
    for check in checks_for(policy)[0]:
        breach = check(situation)
        if breach is not None:
            breaches.append(breach)
    return situation, breaches


def refused_only_for_pending(policy: Policy, facts: Facts, cancellable: Decimal) -> bool:
    """Whether the order is refused only because orders pending on its side count as filled, so that
    cancelling `cancellable` of them (the resting orders a cancel can take off the book) lets it pass.

    The question a close under resting orders asks before it cancels them: the checks answer it themselves,
    so no list of "the rules that bind growing orders" is kept anywhere but in the checks. A halted state, a
    grid breach, or a part of the pending quantity no cancel can reach (a send whose outcome is unknown)
    refuses the order either way; so does a missing fact, which no cancel brings back.
    """
    situation, breaches = run_checks(policy, facts)
    pending = facts.pending
    if not breaches or situation is None or pending is None or cancellable <= 0:
        return False
    if any(breach.rule is Code.FACTS for breach in breaches):
        return False
    return not run_checks(policy, without_cancelled(facts, cancellable))[1]


def without_cancelled(facts: Facts, cancellable: Decimal) -> Facts:
    """The facts once `cancellable` of the orders pending on the order's side are cancelled (a send whose
    outcome is unknown stays: no cancel reaches it)."""
    pending = facts.pending
    if pending is None:
        return facts
    side = facts.order.side
    left = max(pending.on_side(side) - cancellable, ZERO)
    fewer = replace(pending, buy_qty=left) if side is Side.BUY else replace(pending, sell_qty=left)
    if cancellable >= pending.cancellable(side):  # every resting order on the side goes, one by one
        kept = tuple(f for f in pending.fills if f.side is not side or f.unknown)
        fewer = replace(fewer, fills=kept)
    return replace(facts, pending=fewer)


# --- helpers -------------------------------------------------------------------------------------


def _size_breach(
    rule: Code, limit: str, attempted: str, detail: str, retry_after: datetime | None = None
) -> Breach:
    """A breach that one suggested size fixes; evaluate() gives it that size as its next action.
    `retry_after`: when time frees room under this cap (a "nothing fits" then says so)."""
    return Breach(rule=rule, limit=limit, attempted=attempted, detail=detail, retry_after=retry_after)


def _reducing(facts: Facts) -> bool:
    """Whether the order only shrinks the worst-case exposure (pilot.core.risk.is_risk_reducing)."""
    return is_risk_reducing(facts.position.size if facts.position else None, facts.order, facts.pending)


def _counting(s: Situation) -> str:
    counted = []
    if s.pending != 0:
        counted.append(f"{plain(s.pending)} {s.base} of open orders on the same side as filled")
    if s.facts.elsewhere:
        other = "spot holding" if s.rules.category == "linear" else "perpetual position"
        counted.append(f"{plain(s.facts.elsewhere)} {s.base} of {other}")
    return f" (counting {' and '.join(counted)})" if counted else ""


def _is_spot(s: Situation) -> bool:
    return s.rules.category == "spot"


def _describe_position(size: Decimal, base: str) -> str:
    if size == 0:
        return "flat"
    return f"{plain(abs(size))} {base} {'long' if size > 0 else 'short'}"


def close_option(s: Situation) -> tuple[ToolCall, ...]:
    """The close_position call that frees room, when there is a position a close can act on.

    On linear any position can be closed (a minimum-size reduce-only order closes one smaller than it); on
    spot the coin held must make an order the exchange takes. None when confirm.actions names close_position
    and this caller cannot ask a human: the option would be a dead end.
    """
    if s.position_size == 0:
        return ()
    if not s.facts.can_reach_human and needs_human(s.policy.confirm, "close_position"):
        return ()
    if _is_spot(s):
        offered = s.facts.pending.sell_qty if s.facts.pending is not None else ZERO
        free = s.position_size - offered  # coin already offered in open sells cannot be sold again
        if free < s.rules.min_qty or free * s.touch.bid < s.rules.min_notional:
            return ()
    args = {"symbol": s.order.symbol, "category": s.order.category}
    return (
        ToolCall("close_position", args, f"close the {_describe_position(s.position_size, s.base)} position"),
    )


def plan_args(order: OrderIntent, qty: Decimal, price: Decimal | None = None) -> dict[str, object]:
    """Complete plan_order arguments for `order` with another size (and optionally another price)."""
    args: dict[str, object] = {
        "symbol": order.symbol,
        "side": order.side.value,
        "qty": plain(qty),
        "order_type": order.order_type.value,
        "reduce_only": order.reduce_only,
        "category": order.category,
    }
    limit = price if price is not None else order.limit_price
    if order.order_type is OrderType.LIMIT and limit is not None:
        args["price"] = plain(limit)
    if not order.reduce_only:  # a reduce-only order takes none (its position's stop is set_trading_stop's)
        if order.stop_loss is not None:
            args["stop_loss"] = plain(order.stop_loss)
        if order.take_profit is not None:
            args["take_profit"] = plain(order.take_profit)
    return args
