"""Sizing: the largest order that fits every size rule at once, or a plain "nothing fits"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from pilot.core.facts import Facts, OrderType
from pilot.core.policy import Policy
from pilot.core.rules import Situation, close_option, judge, plan_args
from pilot.core.valuation import round_price_safe
from pilot.core.violations import SIZE_RULES, NextAction, NothingFits, Violation, plain

# Rules a different size can fix, beyond the caps: lot step, tick, instrument minimums.
RESIZE_RULES = SIZE_RULES | {
    "instrument.qtyStep",
    "instrument.tickSize",
    "instrument.minOrderQty",
    "instrument.minNotionalValue",
}
CAP_RULES = frozenset({"maxOrderNotionalUsd", "maxNotionalUsd", "maxLeverage", "minLiquidationDistancePct"})

_HUMAN_FIX = {
    "maxNotionalUsd": "raise maxNotionalUsd (or markets.{symbol}.maxNotionalUsd) in policy.json",
    "maxOrderNotionalUsd": "raise maxOrderNotionalUsd (or markets.{symbol}.maxOrderNotionalUsd) in policy.json",
    "maxLeverage": "raise maxLeverage in policy.json, or add equity to the account",
    "minLiquidationDistancePct": "lower minLiquidationDistancePct in policy.json, or add equity to the account",
}
_CAP_NAME = {
    "maxNotionalUsd": "the cap",
    "maxOrderNotionalUsd": "the per-order cap",
    "maxLeverage": "the leverage limit",
    "minLiquidationDistancePct": "the liquidation-distance minimum",
}


def qty_for_notional(notional_usd: Decimal, price: Decimal, qty_step: Decimal) -> Decimal:
    """The quantity worth at most `notional_usd` at `price`, floored to the lot step."""
    if price <= 0:
        return Decimal(0)
    return _floor(notional_usd / price, qty_step)


def suggest(policy: Policy, facts: Facts, situation: Situation) -> NextAction:
    """One next action that fixes every size-related violation at once.

    The answer is a plan_order call with the largest quantity (a whole number of lot steps, at or above
    the instrument minimum, no larger than asked) that passes every size rule, at the same price rounded
    on the safe side; or, when even the minimum does not fit, a stop that gives the room left, the
    minimum, and what frees room.
    """
    rules, order = facts.rules, facts.order
    assert rules is not None
    price = order.limit_price
    if order.order_type is OrderType.LIMIT and price is not None and rules.tick_size > 0:
        price = max(round_price_safe(price, rules.tick_size, order.side), rules.tick_size)
    base = replace(order, limit_price=price)

    def fails(steps: int, rule_set: frozenset[str]) -> list[Violation]:
        probe = replace(facts, order=replace(base, qty=steps * rules.qty_step))
        return [v for v in judge(policy, probe)[1] if v.rule in rule_set]

    lowest = _lowest_valid_steps(facts, situation)
    asked = max(int(_floor(order.qty, rules.qty_step) / rules.qty_step), lowest)
    blocking = fails(lowest, RESIZE_RULES)
    if blocking:
        room = _largest(0, asked, lambda k: not fails(k, CAP_RULES | {"instrument.maxOrderQty"})) or 0
        return _nothing_fits(situation, blocking[0], room * rules.qty_step, lowest * rules.qty_step)
    best = _largest(lowest, asked, lambda k: not fails(k, RESIZE_RULES)) or lowest
    qty = best * rules.qty_step
    if qty < order.qty:
        text = f"reduce size to at most {plain(qty)} {rules.base}"
    elif qty > order.qty:
        text = f"raise size to the minimum {plain(qty)} {rules.base}"
    else:
        text = (
            f"use the price {plain(price)} (rounded to the tick)"
            if price
            else f"use {plain(qty)} {rules.base}"
        )
    return NextAction.call("plan_order", plan_args(base, qty, price), text)


def _lowest_valid_steps(facts: Facts, situation: Situation) -> int:
    """The fewest lot steps that meet the instrument's minimum quantity and minimum order value."""
    rules = facts.rules
    assert rules is not None
    minimum = rules.min_qty
    if not facts.order.reduce_only and situation.sent_price > 0:
        minimum = max(minimum, rules.min_notional / situation.sent_price)
    return max(int(_ceil(minimum, rules.qty_step) / rules.qty_step), 1)


def _largest(low: int, high: int, passes: Callable[[int], bool]) -> int | None:
    """The largest k in [low, max(low, high)] with passes(k), or None if not even low passes.

    Assumes passes is true up to some k and false above it (every size rule grows with the size).
    """
    if not passes(low):
        return None
    high = max(low, high)
    while low < high:
        middle = (low + high + 1) // 2
        if passes(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _nothing_fits(s: Situation, blocking: Violation, room: Decimal, minimum: Decimal) -> NextAction:
    base, symbol = s.base, s.order.symbol
    leaning = s.position_size != 0 and (s.position_size > 0) == (s.order.signed_qty > 0)
    what = _CAP_NAME.get(blocking.rule, blocking.rule)
    text = (
        f"no {base} order fits under {what}: the room left is {plain(max(room, Decimal(0)))} {base}, "
        f"below the {base} minimum {plain(minimum)}; "
    )
    human = _HUMAN_FIX.get(blocking.rule, "").format(symbol=symbol) or None
    numbers = NothingFits(rule=blocking.rule, room=max(room, Decimal(0)), minimum=minimum)
    if leaning:
        return NextAction.stop(
            text + "close_position or a reducing order frees room",
            human=human,
            options=close_option(s),
            nothing_fits=numbers,
        )
    return NextAction.stop(
        text + "pick another market, or ask a human to change policy.json", human=human, nothing_fits=numbers
    )


def _floor(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_FLOOR) * step if step > 0 else value


def _ceil(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_CEILING) * step if step > 0 else value
