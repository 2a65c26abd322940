"""Who may trade what: the instrument is listed and the facts are there, the trading state, the allowed
markets, and a reduce-only order against a position no larger than it."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.facts import ACTIVE, Effect, Facts, InstrumentRules, TradingState
from pilot.core.holds import blocking, held_by, resume_trading
from pilot.core.policy import Policy
from pilot.core.rules.situation import (
    Situation,
    close_option,
    closes,
    describe_position,
    retry_missing,
    size_breach,
)
from pilot.core.violations import Breach, NextAction, plain


def check_facts(facts: Facts, reducing: bool) -> Breach | None:
    """Every fact the decision needs is present (missing: a growing order waits).

    An order that only shrinks the exposure needs the rules and the touch alone.
    """
    if facts.rules is not None and facts.touch is not None and (reducing or has_growing_needs(facts)):
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
    """The exchange lists the instrument (unknownSymbol: terminal, never a retry).

    A symbol it does not list is a typo or the wrong category: asking again never helps.
    """
    if facts.listed:
        return None
    order = facts.order
    if order.symbol not in policy.allowed_markets:
        return not_allowed(policy, order.symbol, unlisted_in=order.category)
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


def has_growing_needs(facts: Facts) -> bool:
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
    """Halted refuses every new order; reducing anything that grows a position."""
    state = s.facts.trading_state
    if state is ACTIVE:
        return None
    effect = Effect.REDUCE if s.reducing else Effect.GROW
    if state.permits(effect):
        return None
    holds = blocking(s.facts.holds, state, effect)
    human = resume_trading(holds)
    if state is TradingState.HALTED:
        return Breach(
            rule=Code.TRADING_STATE,
            limit="halted",
            attempted="new order",
            detail=f"trading is halted: no new orders, only cancels ({held_by(holds)})",
            next=NextAction.stop("stop trading; only cancel_order works while halted", human=human),
            held_by=holds,
        )
    options = close_option(s)
    return Breach(
        rule=Code.TRADING_STATE,
        limit="reducing",
        attempted="an order that grows the position",
        detail=f"trading is reducing: only orders that shrink a position are allowed ({held_by(holds)})",
        next=NextAction.stop(
            "do not open or add; only reduce_only orders, close_position, cancels and lower leverage work",
            human=human,
            options=options,
        ),
        held_by=holds,
    )


def check_allowed_market(s: Situation) -> Breach | None:
    """Only allowedMarkets may grow (decided from the policy alone)."""
    if s.reducing or s.order.symbol in s.policy.allowed_markets:
        return None
    return not_allowed(s.policy, s.order.symbol)


def not_allowed(policy: Policy, symbol: str, unlisted_in: str | None = None) -> Breach:
    """allowedMarkets, decided from the policy alone: never a retry, whatever the exchange could say.

    `unlisted_in`: the category in which the exchange lists no such market, when it said so; then allowing
    it would not help, and the human line says so instead of asking for it to be added.
    """
    allowed = policy.allowed_markets
    listed = ", ".join(allowed) if allowed else "none"
    detail = f"{symbol} is not on the allowed list ({listed})"
    human = f"add {symbol} to allowedMarkets in policy.json"
    if unlisted_in is not None:
        detail += f", and the exchange lists no {unlisted_in} instrument {symbol}"
        human = f"nothing in policy.json: the exchange lists no {unlisted_in} {symbol} (check the symbol)"
    return Breach(
        rule=Code.ALLOWED_MARKETS,
        limit=listed,
        attempted=symbol,
        detail=detail,
        next=NextAction.stop(
            f"pick one of the allowed markets ({listed})" if allowed else "no market is allowed; stop",
            human=human,
        ),
    )


def check_reduce_only(s: Situation) -> Breach | None:
    """A reduce-only order needs a position on the other side.

    Nothing else can make it fill.
    """
    order = s.order
    if not order.reduce_only or closes(s.position_size, order.side):
        return None
    held = describe_position(s.position_size, s.base)
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
    """A reduce-only order no larger than the position (or than the minimum order).

    Bybit truncates a reduce-only order to the position it closes, so the smallest valid order closes a
    position smaller than it (dust); anything larger is refused with the size that closes it.
    """
    order = s.order
    if not order.reduce_only or not closes(s.position_size, order.side):
        return None
    most = reduce_only_limit(s.position_size, s.rules)
    if order.qty <= most:
        return None
    return size_breach(
        Code.REDUCE_ONLY_QTY,
        plain(most),
        plain(order.qty),
        f"a reduce-only {order.side} of {plain(order.qty)} {s.base} is larger than the position "
        f"({describe_position(s.position_size, s.base)})",
    )


def reduce_only_limit(position_size: Decimal, rules: InstrumentRules) -> Decimal:
    """The largest reduce-only order for a position: all of it, or the minimum order when it is less."""
    return max(abs(position_size), rules.min_qty)
