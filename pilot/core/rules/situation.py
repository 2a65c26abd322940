"""The situation every check reads (what follows from the policy and the facts for one order, worked out
once), and what the checks of several families share: breaches of a size code or a missing fact, the close
that frees room, an order's plan_order arguments."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple

from pilot.core.agent_budgets import share_after
from pilot.core.approval import needs_human
from pilot.core.codes import Code
from pilot.core.facts import BUY, LIMIT, SELL, Facts, InstrumentRules, OrderIntent, Side, Touch
from pilot.core.policy import EffectiveLimits, Policy
from pilot.core.risk import is_risk_reducing, worst_case_size
from pilot.core.valuation import send_price, worst_fill_for
from pilot.core.violations import Breach, NextAction, ToolCall, plain

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
        _counted(facts, order, after) * price,
    )


def _counted(facts: Facts, order: OrderIntent, after: Decimal) -> Decimal:
    """The base quantity maxNotionalUsd counts: the coin's gross exposure the order leaves (this category
    and the other), or in an agent's own judgement its share of this market (pilot.core.agent_budgets)."""
    if facts.agent_held is not None:
        return share_after(facts.agent_held, order.signed_qty, after)
    return abs(after) + (facts.elsewhere or ZERO)


def retry_missing(now: datetime, unavailable_until: datetime | None) -> datetime:
    """When to read a missing fact again: in a few seconds, or when the exchange said reads work again."""
    soon = now + RETRY_MISSING_FACTS
    return max(soon, unavailable_until) if unavailable_until is not None else soon


def size_breach(
    rule: Code, limit: str, attempted: str, detail: str, retry_after: datetime | None = None
) -> Breach:
    """A breach that one suggested size fixes; evaluate() gives it that size as its next action.
    `retry_after`: when time frees room under this cap (a "nothing fits" then says so)."""
    return Breach(rule=rule, limit=limit, attempted=attempted, detail=detail, retry_after=retry_after)


def missing_fact(facts: Facts, name: str, what: str) -> Breach:
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


def next_midnight(now: datetime) -> datetime:
    return datetime.combine(now.date() + timedelta(days=1), time(0), tzinfo=now.tzinfo)


def is_spot(s: Situation) -> bool:
    return s.rules.category == "spot"


def closes(position_size: Decimal, side: Side) -> bool:
    """Whether an order on `side` works against the position (a sell against a long)."""
    return position_size != 0 and (position_size > 0) == (side is SELL)


def describe_position(size: Decimal, base: str) -> str:
    if size == 0:
        return "flat"
    return f"{plain(abs(size))} {base} {'long' if size > 0 else 'short'}"


def outlives(s: Situation) -> bool:
    """Whether the order may fill after the position it now closes is gone: a linear limit order, not
    reduce-only, against the position. If the position's stop (or anything else) closes it first, the
    order then opens a position of its own, and Bybit keeps it resting to do so."""
    order, size = s.order, s.position_size
    if order.category != "linear" or order.reduce_only or order.order_type is not LIMIT:
        return False
    return size != 0 and (size > 0) != (order.side is BUY)


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
    if is_spot(s):
        offered = s.facts.pending.sell_qty if s.facts.pending is not None else ZERO
        free = s.position_size - offered  # coin already offered in open sells cannot be sold again
        if free < s.rules.min_qty or free * s.touch.bid < s.rules.min_notional:
            return ()
    args = {"symbol": s.order.symbol, "category": s.order.category}
    return (
        ToolCall("close_position", args, f"close the {describe_position(s.position_size, s.base)} position"),
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
    if order.order_type is LIMIT and limit is not None:
        args["price"] = plain(limit)
    if not order.reduce_only:  # a reduce-only order takes none (its position's stop is set_trading_stop's)
        if order.stop_loss is not None:
            args["stop_loss"] = plain(order.stop_loss)
        if order.take_profit is not None:
            args["take_profit"] = plain(order.take_profit)
    return args
