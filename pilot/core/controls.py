"""The platform's pre-trade controls, stated once: message throttles, resting orders, drawdown, the cooldown
after losses, and authority that expires.

Each is a pure function of the policy and facts the app gathered (no clock, no store): the checks in
pilot.core.rules run them for an order, and the use cases that send without evaluate() (cancels, the
dead-man's switch, set_leverage) ask the same functions, so each rule is written here only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.facts import ClosedTrade, DrawdownState, RestingOrders
from pilot.core.policy import Cooldown, Policy
from pilot.core.violations import Breach, NextAction, ToolCall, usd

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
HUNDRED = Decimal(100)


# --- throttles -------------------------------------------------------------------------------------


def throttle(policy: Policy, messages: Sequence[timedelta], now: datetime) -> Breach | None:
    """The message throttle one more create, amend or cancel would break now, or None.

    `messages` are the ages of the ones this home sent in the last minute, newest first (every process of
    the home: they come from its journal). Bybit counts requests per account in a rolling window; so does
    this: with N allowed per window, one more passes unless the N-th newest is still inside the window, and
    then waiting until it leaves is enough (`retry_after`).
    """
    second, minute = policy.max_order_messages_per_second, policy.max_order_messages_per_minute
    count = len(messages)
    if (second is None or count < second or messages[second - 1] >= SECOND) and (
        minute is None or count < minute or messages[minute - 1] >= MINUTE
    ):
        return None  # has_room in both windows, inlined: the common case, asked on every order's judgement
    for cap, window, code, per in (
        (second, SECOND, Code.MAX_ORDER_MESSAGES_PER_SECOND, "second"),
        (minute, MINUTE, Code.MAX_ORDER_MESSAGES_PER_MINUTE, "minute"),
    ):
        if cap is None or has_room(messages, cap, window):
            continue
        sent = sent_within(messages, window)  # at least `cap`: they filled the window
        retry = now + (window - messages[cap - 1])
        return Breach(
            rule=code,
            limit=str(cap),
            attempted=str(sent + 1),
            detail=f"{sent} creates, amends and cancels were sent from this home in the last {per}; "
            f"the most policy.json allows is {cap} a {per}",
            next=NextAction.wait(
                f"wait until {retry.isoformat()} and call again: one message leaves the window by then",
                retry,
                human=f"raise {code.value} in policy.json",
            ),
        )
    return None


def sent_within(messages: Sequence[timedelta], window: timedelta) -> int:
    """How many of `messages` (ages, newest first) are younger than `window`: a binary search, since a
    throttle's window can hold tens of thousands."""
    return bisect_left(messages, window)


def has_room(messages: Sequence[timedelta], cap: int | None, window: timedelta) -> bool:
    """Whether one more message fits `cap` a `window`: fewer than `cap` sent, or the cap-th newest already
    out of the window (None: no cap). throttle's shortcut restates it (tests/core/test_fast_paths.py holds
    the two alike)."""
    return cap is None or len(messages) < cap or messages[cap - 1] >= window


# --- resting orders --------------------------------------------------------------------------------


def resting_breach(
    policy: Policy,
    per_market: int | None,
    resting: RestingOrders,
    symbol: str,
    options: tuple[ToolCall, ...] = (),
) -> Breach | None:
    """maxRestingOrdersPerMarket (`per_market`, the market's limit) and maxRestingOrders: an order that
    would rest while the market, or the account, already holds that many; None when it fits or a count
    the rule needs is unknown (the caller decides what a missing count means)."""
    for most, count, code, where in (
        (per_market, resting.market, Code.MAX_RESTING_ORDERS_PER_MARKET, f"on {symbol}"),
        (policy.max_resting_orders, resting.total, Code.MAX_RESTING_ORDERS, "on the account"),
    ):
        if most is None or count is None or count < most:
            continue
        field = code.value + (f" (or markets.{symbol}.{code.value})" if code.value.endswith("Market") else "")
        return Breach(
            rule=code,
            limit=str(most),
            attempted=str(count + 1),
            detail=f"{count} ordinary orders rest {where} already; policy.json allows at most {most}",
            next=NextAction.stop(
                f"no order may rest {where} now: cancel one of them first (cancel_order), or send this one "
                "as a market order, which never rests",
                human=f"raise {field} in policy.json",
                options=options,
            ),
        )
    return None


# --- drawdown --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Drawdown:
    """The equity set against its peak: which limit binds, the limit and the drawdown now (USD)."""

    rule: Code
    limit: Decimal
    drawdown: Decimal
    peak: Decimal
    equity: Decimal

    @property
    def reached(self) -> bool:
        """At or past the limit; at its peak (no drawdown) never, whatever the limit."""
        return self.drawdown > 0 and self.drawdown >= self.limit


def drawdown(policy: Policy, equity: Decimal | None, state: DrawdownState) -> Drawdown | None:
    """The drawdown from the peak equity of the window (the peak seen so far, or the equity now if higher),
    against the binding limit: the smaller of maxDrawdownUsd and maxDrawdownPct of the peak. None when
    policy.json sets neither or the equity is unknown."""
    if equity is None:
        return None
    peak = equity if state.peak is None or state.peak < equity else state.peak
    found = _drawdown_limit(policy, peak)
    if found is None:
        return None
    return Drawdown(found[1], found[0], peak - equity, peak, equity)


def drawdown_reached(policy: Policy, equity: Decimal, state: DrawdownState) -> bool:
    """Whether the drawdown now is at or past its limit: drawdown(...).reached without its numbers, as the
    check asks on every growing order's judgement (tests/core/test_fast_paths.py holds the two alike)."""
    peak = state.peak
    if peak is None or peak <= equity:
        return False  # at its peak: no drawdown at all
    # at or past the smaller limit is at or past either one (kept to a few operations: asked on every
    # growing order's judgement)
    usd, pct, fallen = policy.max_drawdown_usd, policy.max_drawdown_pct, peak - equity
    return (usd is not None and fallen >= usd) or (pct is not None and fallen * HUNDRED >= peak * pct)


def _drawdown_limit(policy: Policy, peak: Decimal) -> tuple[Decimal, Code] | None:
    """The binding drawdown limit for this peak: the smaller of the dollar one and the share of the peak."""
    usd, pct = policy.max_drawdown_usd, policy.max_drawdown_pct
    if pct is None:
        return None if usd is None else (usd, Code.MAX_DRAWDOWN_USD)
    share = max(peak, Decimal(0)) * pct / HUNDRED
    if usd is not None and usd <= share:
        return usd, Code.MAX_DRAWDOWN_USD
    return share, Code.MAX_DRAWDOWN_PCT


def drawdown_window(policy: Policy) -> timedelta | None:
    """The rolling window the peak is taken over (None: the UTC day)."""
    hours = policy.drawdown_window_hours
    return timedelta(hours=hours) if hours is not None else None


# --- cooldown --------------------------------------------------------------------------------------


def losses_counted(cooldown: Cooldown, trades: Sequence[ClosedTrade]) -> tuple[int, ClosedTrade | None]:
    """The losing trades the cooldown counts, newest first, and the newest of them (None: no loss).

    In a row (no `withinMinutes`): the losses before the first trade that was not one. Within a window: the
    losses closed within `withinMinutes` before the newest loss, by the exchange's own times (a trade's
    time is only ever set against another's).
    """
    losses = [trade for trade in trades if trade.pnl < 0]
    if not losses:
        return 0, None
    newest = losses[0]
    if cooldown.within_minutes is None:
        streak = 0
        for trade in trades:
            if trade.pnl >= 0:
                break
            streak += 1
        return streak, newest if streak else None
    window = timedelta(minutes=cooldown.within_minutes)
    return sum(1 for trade in losses if newest.at - trade.at <= window), newest


def cooldown_due(cooldown: Cooldown, trades: Sequence[ClosedTrade]) -> ClosedTrade | None:
    """The losing trade that starts a cooldown (the newest of enough losses), or None."""
    count, newest = losses_counted(cooldown, trades)
    return newest if count >= cooldown.after_losses else None


# --- authority ---------------------------------------------------------------------------------------


def authority_breach(policy: Policy, now: datetime, session_age: timedelta | None) -> Breach | None:
    """validUntil and maxSessionMinutes: past either, only what shrinks a position passes. The next action
    says who extends it and how; the caller adds the reducing ways out (close_position) it knows."""
    until, most = policy.valid_until, policy.max_session_minutes
    expired = until is not None and now >= until
    # in seconds, not as a timedelta: asked on every growing order's judgement while maxSessionMinutes is set
    over = most is not None and session_age is not None and session_age.total_seconds() >= most * 60
    if not (expired or over):
        return None  # within its authority
    if expired and until is not None:
        return Breach(
            rule=Code.VALID_UNTIL,
            limit=until.isoformat(),
            attempted=now.isoformat(),
            detail=f"policy.json gives authority to open or add until {until.isoformat()}; it is "
            f"{now.isoformat()}",
            next=NextAction.stop(
                "do not open or add: the authority expired; reduce_only orders, close_position, cancels and "
                "lower leverage still work",
                human="a human extends validUntil in policy.json (a later UTC time, or null for none)",
            ),
        )
    if most is not None and session_age is not None:
        minutes = int(session_age.total_seconds() // 60)
        return Breach(
            rule=Code.MAX_SESSION_MINUTES,
            limit=str(most),
            attempted=str(minutes),
            detail=f"this session has lasted {minutes} minutes; policy.json gives a session authority to "
            f"open or add for {most}",
            next=NextAction.stop(
                "do not open or add in this session; reduce_only orders, close_position and cancels still work",
                human="a human starts a new session (restarts the agent's MCP client), or raises "
                "maxSessionMinutes in policy.json",
            ),
        )
    return None


def drawdown_sentence(found: Drawdown) -> str:
    """The drawdown in words, with its numbers."""
    return (
        f"the equity {usd(found.equity)} is {usd(found.drawdown)} below its peak {usd(found.peak)}, at or "
        f"past the drawdown limit of {usd(found.limit)}"
    )
