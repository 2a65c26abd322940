"""Sizing: the largest order that fits every size rule at once, or a plain "nothing fits"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.core.codes import RESIZE_CODES, SIZE_CAP_CODES, Code
from pilot.core.facts import Facts, OrderType
from pilot.core.policy import Policy
from pilot.core.rules import Situation, close_option, plan_args, run_checks
from pilot.core.valuation import ceil_to_step, floor_to_step, price_on_tick
from pilot.core.violations import Breach, NextAction, NothingFits, plain

_HUMAN_FIX = {
    Code.MAX_NOTIONAL: "raise maxNotionalUsd (or markets.{symbol}.maxNotionalUsd) in policy.json",
    Code.MAX_ORDER_NOTIONAL: "raise maxOrderNotionalUsd (or markets.{symbol}.maxOrderNotionalUsd) in policy.json",
    Code.MAX_LEVERAGE: "raise maxLeverage in policy.json, or add equity to the account",
    Code.MIN_LIQUIDATION_DISTANCE: "lower minLiquidationDistancePct in policy.json, or add equity to the account",
}
_CAP_NAME = {
    Code.MAX_NOTIONAL: "the cap",
    Code.MAX_ORDER_NOTIONAL: "the per-order cap",
    Code.MAX_LEVERAGE: "the leverage limit",
    Code.MIN_LIQUIDATION_DISTANCE: "the liquidation-distance minimum",
    Code.MAX_ORDER_QTY: "the instrument's maximum order",
}


def qty_for_notional(notional_usd: Decimal, price: Decimal, qty_step: Decimal) -> Decimal:
    """The quantity worth at most `notional_usd` at `price`, floored to the lot step."""
    if price <= 0:
        return Decimal(0)
    return floor_to_step(notional_usd / price, qty_step)


def suggest(policy: Policy, facts: Facts, situation: Situation) -> NextAction:
    """One next action that fixes every size-related violation at once.

    The answer is a plan_order call with the largest quantity (a whole number of lot steps, at or above
    the instrument minimum, no larger than asked) that passes every size rule, at the same price rounded
    on the safe side; or, when even the minimum does not fit, a stop that gives the room left, the
    minimum, and what frees room.
    """
    rules, order = situation.rules, facts.order
    price = order.limit_price
    if order.order_type is OrderType.LIMIT and price is not None:
        price = price_on_tick(price, rules.tick_size, order.side)
    base = replace(order, limit_price=price)

    def fails(steps: int, codes: frozenset[Code]) -> list[Breach]:
        probe = replace(facts, order=replace(base, qty=steps * rules.qty_step))
        return [b for b in run_checks(policy, probe)[1] if b.rule in codes]

    lowest = _lowest_valid_steps(facts, situation)
    asked = max(int(floor_to_step(order.qty, rules.qty_step) / rules.qty_step), lowest)
    blocking = fails(lowest, RESIZE_CODES)
    if blocking:
        room = _largest(0, asked, lambda k: not fails(k, SIZE_CAP_CODES)) or 0
        return _nothing_fits(situation, blocking[0], room * rules.qty_step, lowest * rules.qty_step)
    best = _largest(lowest, asked, lambda k: not fails(k, RESIZE_CODES)) or lowest
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
    rules = situation.rules
    minimum = rules.min_qty
    if not facts.order.reduce_only and situation.sent_price > 0:
        minimum = max(minimum, rules.min_notional / situation.sent_price)
    return max(int(ceil_to_step(minimum, rules.qty_step) / rules.qty_step), 1)


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


def _nothing_fits(s: Situation, blocking: Breach, room: Decimal, minimum: Decimal) -> NextAction:
    base, symbol = s.base, s.order.symbol
    leaning = s.position_size != 0 and (s.position_size > 0) == (s.order.signed_qty > 0)
    what = _CAP_NAME.get(blocking.rule, blocking.rule.value)
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


@dataclass(frozen=True, slots=True)
class Room:
    """How much more one side of a market may trade now, priced as evaluate() prices it.

    `qty` is the largest market order (not reduce-only) on that side that breaks no size cap, counting the
    position, every pending order on that side as filled, and the worst fill; `notional_usd` is that order
    at its worst fill; `limited_by` are the caps one more lot step would break.
    """

    qty: Decimal
    notional_usd: Decimal
    limited_by: tuple[Code, ...]


def room_left(policy: Policy, facts: Facts) -> Room | None:
    """The room on facts.order's side, or None when a fact a growing order needs is missing.

    Orders that only shrink the position are never capped, so the room is at least what closes it; past
    that, every cap grows with the size and a binary search over whole lot steps finds the largest.
    """
    order = replace(facts.order, order_type=OrderType.MARKET, limit_price=None, reduce_only=False)
    facts = replace(facts, order=replace(order, qty=Decimal(0)))
    situation, breaches = run_checks(policy, facts)
    if situation is None or any(b.rule is Code.FACTS for b in breaches):
        return None
    step = situation.rules.qty_step

    def breaks(steps: int) -> tuple[Code, ...]:
        probe = replace(facts, order=replace(order, qty=steps * step))
        return tuple(b.rule for b in run_checks(policy, probe)[1] if b.rule in SIZE_CAP_CODES)

    shrinking = 0
    if situation.position_size != 0 and (situation.position_size > 0) != (order.side.sign > 0):
        shrinking = max(int(floor_to_step(abs(situation.position_size) - situation.pending, step) / step), 0)
    most = int(floor_to_step(situation.rules.max_qty, step) / step)
    best = min(shrinking, most)
    if best < most and not breaks(best + 1):
        best = _largest(best + 1, most, lambda k: not breaks(k)) or best
    qty = best * step
    return Room(qty=qty, notional_usd=qty * situation.price, limited_by=breaks(best + 1))
