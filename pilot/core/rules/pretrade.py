"""The platform's pre-trade controls as checks (the rules themselves are pilot.core.controls): message
throttles, the price collar, resting orders, turnover, authority that expires, drawdown and the cooldown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.controls import (
    authority_breach,
    drawdown,
    drawdown_reached,
    drawdown_sentence,
    resting_breach,
    throttle,
)
from pilot.core.facts import BUY, LIMIT, Side
from pilot.core.policy import EffectiveLimits
from pilot.core.rules.situation import (
    ZERO,
    Situation,
    close_option,
    missing_fact,
    next_midnight,
    size_breach,
)
from pilot.core.valuation import collar_edge
from pilot.core.violations import Breach, NextAction, ToolCall, plain, plain_usd, usd


def check_message_rate(s: Situation) -> Breach | None:
    """maxOrderMessagesPerSecond/Minute: one more message stays within the throttle.

    Every order counts, a reducing one too: the exchange counts every request, and waiting `retry_after` (a
    second or a minute at most) is all it takes.
    """
    policy = s.policy
    if policy.max_order_messages_per_second is None and policy.max_order_messages_per_minute is None:
        return None
    return throttle(policy, s.facts.messages, s.facts.now)


def check_price_collar(s: Situation) -> Breach | None:
    """priceCollarPct/Ticks: a limit price no farther from mark than the collar.

    On the side where a mistake costs money (a buy above mark, a sell below it); the next action is the same
    order at the edge.
    """
    order, limits = s.order, s.limits
    if order.order_type is not LIMIT or order.limit_price is None:
        return None
    if limits.price_collar_pct is None and limits.price_collar_ticks is None:
        return None
    edge = price_collar(s, order.side)
    price = order.limit_price
    if edge is None or (price <= edge if order.side is BUY else price >= edge):
        return None
    way = "above" if order.side is BUY else "below"
    return size_breach(
        Code.PRICE_COLLAR,
        plain(edge),
        plain(price),
        f"the limit price {plain(price)} is {way} the price collar's edge {plain(edge)} "
        f"({collar_words(s.limits)} {way} the mark {plain(s.touch.mark)})",
    )


def price_collar(s: Situation, side: Side) -> Decimal | None:
    """The collar's edge for a price on `side` (a buy's limit, or a sell's: also a long's stop trigger)."""
    limits = s.limits
    return collar_edge(
        s.touch.mark, side, s.rules.tick_size, limits.price_collar_pct, limits.price_collar_ticks
    )


def collar_words(limits: EffectiveLimits) -> str:
    parts = []
    if limits.price_collar_pct is not None:
        parts.append(f"{plain(limits.price_collar_pct)}%")
    if limits.price_collar_ticks is not None:
        parts.append(f"{limits.price_collar_ticks} ticks")
    return " or ".join(parts)


def check_resting_orders(s: Situation) -> Breach | None:
    """maxRestingOrdersPerMarket and maxRestingOrders: a limit order rests.

    Pilot sends a limit order GTC; a market order is a Limit IOC and never rests. A reducing one is judged
    too (close_position then closes it).
    """
    per_market, total = s.limits.max_resting_orders_per_market, s.policy.max_resting_orders
    if (per_market is None and total is None) or s.order.order_type is not LIMIT:
        return None
    resting = s.facts.resting
    if resting is None or (total is not None and resting.total is None):
        return None if s.reducing else missing_fact(s.facts, "resting", "the orders resting on the account")
    args = {"symbol": s.order.symbol, "category": s.order.category}
    options = (ToolCall("get_open_orders", args, "see the orders resting there"),)
    return resting_breach(s.policy, per_market, resting, s.order.symbol, options)


def check_turnover_day(s: Situation) -> Breach | None:
    """maxTurnoverUsdPerDay: the notional sent since 00:00 UTC plus this order's.

    The notional this home sent, this order at its worst fill.
    """
    cap, turnover = s.policy.max_turnover_usd_per_day, s.facts.turnover
    sent = turnover.day_usd if turnover is not None else None
    return _turnover(s, cap, sent, Code.MAX_TURNOVER_DAY, "today (UTC)", lambda: next_midnight(s.facts.now))


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
        return missing_fact(s.facts, "turnover", f"the notional sent {window}")
    total = sent + s.order_notional
    if total <= cap:
        return None
    return size_breach(
        rule,
        plain(cap),
        plain_usd(total),
        f"this order's {usd(s.order_notional)} at its worst fill would bring the notional sent {window} "
        f"to {usd(total)}, above the {usd(cap)} allowed",
        retry_after=frees(),
    )


def check_authority(s: Situation) -> Breach | None:
    """validUntil and maxSessionMinutes: past either, only what shrinks a position."""
    policy = s.policy
    if s.reducing or (policy.valid_until is None and policy.max_session_minutes is None):
        return None
    breach = authority_breach(policy, s.facts.now, s.facts.session_age)
    if breach is None or breach.next is None:
        return breach
    return replace(breach, next=replace(breach.next, options=close_option(s)))


def check_drawdown(s: Situation) -> Breach | None:
    """maxDrawdownUsd/Pct: the equity's fall from its peak (the latch is the app's).

    Past the drawdown from the window's peak equity, only orders that shrink a position pass until the window
    passes or a human resets it (the latch: pilot.app.runtime).
    """
    policy = s.policy
    if s.reducing or (policy.max_drawdown_usd is None and policy.max_drawdown_pct is None):
        return None
    state, equity = s.facts.drawdown, s.facts.equity
    if state is None or equity is None:
        return missing_fact(s.facts, "drawdown", "the account equity and its peak")
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
        limit=plain_usd(found.limit),
        attempted=plain_usd(max(found.drawdown, state.reached_at_usd or ZERO)),
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
    """cooldown: no growing order for a while after enough losing trades.

    After them, no order that can grow a position until the cooldown ends.
    """
    rule = s.policy.cooldown
    if rule is None or s.reducing:
        return None
    state = s.facts.cooldown
    if state is None:
        return missing_fact(s.facts, "cooldown", "the account's closed trades")
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
