"""Sizing: the largest order that fits every size rule at once, or a plain "nothing fits"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

from pilot.core.approval import needs_human
from pilot.core.codes import NO_HUMAN_FIX, RESIZE_CODES, SIZE_CAP_CODES, Code
from pilot.core.facts import Facts, InstrumentRules, OrderIntent, OrderType, Side
from pilot.core.policy import Policy
from pilot.core.rules import (
    Situation,
    close_option,
    collared_stop,
    judged_position,
    loss_limit,
    outlives,
    plan_args,
    position_left,
    price_collar,
    reduce_only_limit,
    refused_only_for_pending,
    run_checks,
    situate,
    size_breaches,
    stop_problem,
    stop_reference,
    take_profit_problem,
)
from pilot.core.rules.situation import closes
from pilot.core.stops import farthest_stop
from pilot.core.valuation import ceil_to_step, floor_to_step, inside_band, inside_collar, price_on_tick
from pilot.core.violations import Breach, NextAction, NothingFits, ToolCall, plain, plain_usd

# Where a stop goes when policy.json requires one and no loss limit says how far: this share of the price.
DEFAULT_STOP_DISTANCE = Decimal("0.02")
LOSS_CODES = frozenset({Code.MAX_LOSS_PER_TRADE_USD, Code.MAX_LOSS_PER_TRADE_PCT})
# What a stop's loss counts as where the position would be left unbounded: more than any cap.
UNBOUNDED_LOSS = Decimal("Infinity")
RAISE_LOSS = "raise maxLossPerTradeUsd/Pct in policy.json"


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
        inside = inside_band(price, order.side, facts.band, rules.tick_size)
        inside = inside_collar(inside, order.side, price_collar(situation, order.side))
        price = price_on_tick(inside, rules.tick_size, order.side)
    base = replace(order, limit_price=price)

    # One judgement at many sizes: each probe is an order built from the fields read once (dataclasses.replace
    # reads every field's definition again on each call), judged by the size checks alone on the same facts.
    order_fields = base.field_values()

    def fails(steps: int, codes: frozenset[Code]) -> list[Breach]:
        probe = OrderIntent(**{**order_fields, "qty": steps * rules.qty_step})
        return [b for b in size_breaches(policy, facts, probe) if b.rule in codes]

    # The minimums are met at the price the suggestion sends (a limit moved into the band), not the one asked.
    moved = situate(policy, replace(facts, order=base)) if base != order else None
    lowest = _lowest_valid_steps(facts, moved or situation)
    asked = max(int(floor_to_step(order.qty, rules.qty_step) / rules.qty_step), lowest)
    blocking = fails(lowest, RESIZE_CODES)
    if blocking and situation.reducing and not order.reduce_only and rules.category != "spot":
        # No plain order of it fits (a minimum order value above a cap's room), but it only shrinks the
        # position: made reduce-only it needs no minimum value and no cap stops it (found by the worlds).
        closing = _as_reduce_only(policy, facts, situation, base, max(order.qty, rules.min_qty))
        if closing.tool is not None:
            return closing
    if blocking:
        room = largest(0, asked, lambda k: not fails(k, SIZE_CAP_CODES)) or 0
        return _nothing_fits(situation, blocking[0], room * rules.qty_step, lowest * rules.qty_step)
    best = largest(lowest, asked, lambda k: not fails(k, RESIZE_CODES)) or lowest
    qty = best * rules.qty_step
    if qty > order.qty and _raising_grows(policy, facts, situation, replace(base, qty=qty)):
        # Raised to the minimum, an order that shrank the position would flip it: close it instead.
        return _as_reduce_only(policy, facts, situation, base)
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


def _raising_grows(policy: Policy, facts: Facts, situation: Situation, raised: OrderIntent) -> bool:
    if not situation.reducing or facts.order.reduce_only:
        return False
    probe = situate(policy, replace(facts, order=raised))
    return probe is not None and not probe.reducing


def _as_reduce_only(
    policy: Policy, facts: Facts, situation: Situation, base: OrderIntent, qty: Decimal | None = None
) -> NextAction:
    """The same order made reduce-only (linear), sized to pass: it closes what there is (or `qty` of it) and
    never flips.

    Spot takes no reduce-only orders: there a position smaller than the minimum cannot be sold at all.
    """
    rules = situation.rules
    if rules.category == "spot":
        return NextAction.stop(
            f"no {rules.base} sell fits: the {plain(abs(situation.position_size))} {rules.base} held is below "
            f"the minimum order {plain(rules.min_qty)}",
            human=f"add to the {rules.base} holding, or convert the small balance in the exchange's app",
        )
    most = reduce_only_limit(situation.position_size, rules)
    closing = replace(base, reduce_only=True, qty=min(qty, most) if qty is not None else most)
    variant = replace(facts, order=closing)
    variant_situation, breaches = run_checks(policy, variant)
    if not breaches:
        text = (
            f"make it reduce-only: {plain(closing.qty)} {rules.base} closes the "
            f"{plain(abs(situation.position_size))} {rules.base} position and never opens one"
        )
        return NextAction.call("plan_order", plan_args(closing, closing.qty), text)
    if variant_situation is not None and all(b.rule in RESIZE_CODES for b in breaches):
        return suggest(policy, variant, variant_situation)
    return NextAction.stop(
        f"no {rules.base} order that only shrinks the position fits",
        human="see the violations: only a human can change what refuses them",
    )


def reducing_alternative(policy: Policy, facts: Facts, situation: Situation | None) -> NextAction | None:
    """When an order that would grow the position is refused, the same order cut to only shrink it, if that
    passes: reduce-only on linear (at most the position), on spot a sell of no more than is held.

    Rules that stop growing orders (tradingState reducing, allowedMarkets, dailyOrderCap, the caps) let it
    through, and a reduce-only order needs no minimum order value; None when nothing of the order shrinks
    the position or the cut order is refused too.
    """
    if situation is None or (situation.reducing and facts.order.reduce_only):
        return None
    order, rules, size = facts.order, situation.rules, situation.position_size
    if size == 0 or (size > 0) != (order.side is Side.SELL):
        return None
    if rules.category == "spot":
        free = floor_to_step(max(size - situation.pending, Decimal(0)), rules.qty_step)
        cut = replace(order, reduce_only=False, qty=min(order.qty, free))
    else:  # a reduce-only order carries no stop or target (the position's stay as they are)
        most = reduce_only_limit(size, rules)
        cut = replace(order, reduce_only=True, qty=min(order.qty, most), stop_loss=None, take_profit=None)
    if cut.qty <= 0:
        return None
    variant = replace(facts, order=cut)
    variant_situation, breaches = run_checks(policy, variant)
    if variant_situation is not None and not variant_situation.reducing and cut.reduce_only:
        # Closing all of it would leave the orders pending on its side free to open more the other way:
        # the largest close that still shrinks the worst case (it only grows with the size).
        step = rules.qty_step

        def shrinks(steps: int) -> bool:
            probe = situate(policy, replace(facts, order=replace(cut, qty=steps * step)))
            return probe is not None and probe.reducing

        steps = largest(1, int(floor_to_step(cut.qty, step) / step), shrinks) if step > 0 else None
        if steps is not None:
            cut = replace(cut, qty=steps * step)
            variant = replace(facts, order=cut)
            variant_situation, breaches = run_checks(policy, variant)
    if variant_situation is None or not variant_situation.reducing:
        return None
    if breaches:
        if not all(b.rule in RESIZE_CODES for b in breaches):
            return None
        action = suggest(policy, variant, variant_situation)
        if action.tool != "plan_order" or action.args is None:
            return None
        # Raised to the instrument's minimum, a close can stop shrinking the worst case (orders pending on
        # its side): offer it only if it passes as suggested, or the agent would be sent round in a loop.
        args = action.args
        price = Decimal(str(args["price"])) if "price" in args else cut.limit_price
        suggested = replace(variant, order=replace(cut, qty=Decimal(str(args["qty"])), limit_price=price))
        return action if not run_checks(policy, suggested)[1] else None
    what = "a reduce-only" if cut.reduce_only else "a"
    text = (
        f"this order would grow the position; {what} {cut.side} of {plain(cut.qty)} {rules.base} only "
        "shrinks it, and passes"
    )
    return NextAction.call("plan_order", plan_args(cut, cut.qty), text)


def closing_qty(size: Decimal, asked: Decimal | None, rules: InstrumentRules) -> Decimal:
    """How much one close_position sends: what was asked (all by default), at most one maximum order.

    On linear a position smaller than the minimum order (dust) is closed by a minimum-size reduce-only
    order, which the exchange cuts to the position; on spot only what is held (`size`: free) can be sold.
    """
    wanted = abs(size) if asked is None else min(asked, abs(size))
    amount = min(floor_to_step(wanted, rules.qty_step), rules.max_qty)
    if rules.category == "linear" and abs(size) < rules.min_qty:
        return rules.min_qty
    return amount


def close_instead(policy: Policy, facts: Facts, situation: Situation | None) -> NextAction | None:
    """For an order meant to shrink the position (reduce-only, or against it) that nothing of plan_order
    lets through, close_position when it would close as much: it waits on no confirmation threshold (only on
    confirm.actions naming it), and first cancels the resting orders on its side that would open a position
    the other way once this one is closed (newest first, only while they would). None when it would not
    pass either."""
    if situation is None or facts.pending is None:
        return None
    order, size, rules = facts.order, situation.position_size, situation.rules
    if size == 0 or (size > 0) != (order.side is Side.SELL):
        return None
    if not facts.can_reach_human and needs_human(policy.confirm, "close_position"):
        return None
    linear = rules.category == "linear"
    qty = closing_qty(size if linear else size - situation.pending, order.qty, rules)
    if qty <= 0:
        return None
    close = OrderIntent(
        order.symbol, order.side, qty, OrderType.MARKET, reduce_only=linear, category=order.category
    )
    closing = replace(facts, order=close, can_reach_human=True)  # a close asks a human only when named
    cancellable = facts.pending.cancellable(order.side) if linear else Decimal(0)
    if run_checks(policy, closing)[1] and not refused_only_for_pending(policy, closing, cancellable):
        return None
    args: dict[str, object] = {"symbol": order.symbol, "category": order.category}
    if qty < abs(size):
        args["qty"] = plain(qty)
    text = (
        f"close_position closes {plain(qty)} {situation.base} at market (a reduce-only Limit IOC within "
        "maxSlippagePct), first cancelling the resting orders on its side that would reopen the position"
    )
    return NextAction.call("close_position", args, text)


def with_close_option(
    policy: Policy, facts: Facts, situation: Situation | None, action: NextAction
) -> NextAction:
    """A reduce-only order cut smaller than asked, with the other way out as an option: close_position closes
    what was asked, cancelling the resting orders that made the cut necessary."""
    if (
        action.tool != "plan_order"
        or action.args is None
        or Decimal(str(action.args["qty"])) >= facts.order.qty
    ):
        return action
    close = close_instead(policy, facts, situation)
    if close is None or close.tool is None or close.args is None:
        return action
    return replace(action, options=(*action.options, ToolCall(close.tool, close.args, "or " + close.text)))


def _lowest_valid_steps(facts: Facts, situation: Situation) -> int:
    """The fewest lot steps that meet the instrument's minimum quantity and minimum order value."""
    rules = situation.rules
    minimum = rules.min_qty
    if not facts.order.reduce_only and situation.sent_price > 0:
        minimum = max(minimum, rules.min_notional / situation.sent_price)
    return max(int(ceil_to_step(minimum, rules.qty_step) / rules.qty_step), 1)


def largest(low: int, high: int, passes: Callable[[int], bool]) -> int | None:
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
    cap = blocking.rule.cap
    what = cap.name if cap else blocking.rule.value
    text = (
        f"no {base} order fits under {what}: the room left is {plain(max(room, Decimal(0)))} {base}, "
        f"below the {base} minimum {plain(minimum)}; "
    )
    human = (cap.human if cap else NO_HUMAN_FIX).format(symbol=symbol)
    numbers = NothingFits(rule=blocking.rule, room=max(room, Decimal(0)), minimum=minimum)
    if blocking.retry_after is not None:  # time frees room under this cap (turnover): say when
        text += f"room grows again at {blocking.retry_after.isoformat()}; "
    if leaning:
        stop = NextAction.stop(
            text + "close_position or a reducing order frees room",
            human=human,
            options=close_option(s),
            nothing_fits=numbers,
        )
    else:
        stop = NextAction.stop(
            text + "pick another market, or ask a human to change policy.json",
            human=human,
            nothing_fits=numbers,
        )
    return replace(stop, retry_after=blocking.retry_after)


def stop_for_qty(s: Situation, qty: Decimal, cap: Decimal) -> Decimal | None:
    """The farthest stop the order can carry with `qty` so that the position the loss limit judges it by
    loses at most `cap` at its stops (rules.judged_position: on a perpetual the stop becomes the whole
    position's; on spot it sells what the order bought), on the tick beyond the price; None when no stop
    beyond the price fits (a wider stop pending on the same side, or coin held under no stop, say)."""
    if qty <= 0:
        return None
    long = s.order.side is Side.BUY

    def loss(stop: Decimal) -> Decimal:
        at_stops = judged_position(s, stop, qty)[1]
        return UNBOUNDED_LOSS if at_stops.unbounded else at_stops.loss

    return farthest_stop(loss, cap, long, stop_reference(s), s.rules.tick_size)


def _default_stop(s: Situation) -> Decimal | None:
    """A stop DEFAULT_STOP_DISTANCE beyond the reference price, on the tick towards it."""
    reference, tick = stop_reference(s), s.rules.tick_size
    if s.order.side is Side.BUY:
        stop = ceil_to_step(reference * (1 - DEFAULT_STOP_DISTANCE), tick)
        return stop if 0 < stop < reference else None
    stop = floor_to_step(reference * (1 + DEFAULT_STOP_DISTANCE), tick)
    return stop if stop > reference else None


def protect(policy: Policy, facts: Facts, situation: Situation) -> NextAction:
    """The next action for a missing or misplaced stop (requireStopLoss, or a position the order would leave
    with no bound under the loss limit), or a take-profit on the wrong side: the same order with a stop that
    fits (the farthest the loss limit allows for the quantity the answer gives, the asked one or the
    instrument's minimum, else 2% beyond the price) and without the misplaced take-profit, sized to pass by
    the one sizing path. An order that turns the position round is offered the reduce-only close too."""
    order = situation.order
    if order.stop_loss is None and situation.reducing and outlives(situation):
        # It closes now but may rest on once the position is gone: reduce-only, it only ever closes.
        return _as_reduce_only(policy, facts, situation, order, order.qty)
    stop = order.stop_loss if stop_problem(situation) is None else None
    fitted = None
    if stop is None:
        limit = loss_limit(situation)
        qty = max(order.qty, _lowest_valid_steps(facts, situation) * situation.rules.qty_step)
        fitted = stop_for_qty(situation, qty, limit[0]) if limit is not None else None
    # The coin held past the cap leaves no buy that fits, unless a stop that fits was found: a stop leg
    # larger than the coin held sells the buy's coin too, at its price, and may lower the loss.
    held = _held_unstopped(situation) if fitted is None else None
    if held is not None:
        return held
    stop = stop or fitted or _default_stop(situation)
    if stop is not None:
        stop = collared_stop(situation, stop)  # no farther than the price collar allows
    target = order.take_profit if take_profit_problem(situation) is None else None
    if stop is None:
        return NextAction.stop(
            f"no stop_loss fits beyond the price {plain(stop_reference(situation))}",
            human="nothing: the price is too close to zero for a stop on the tick",
        )
    variant_order = replace(order, stop_loss=stop, take_profit=target)
    variant = replace(facts, order=variant_order)
    variant_situation, breaches = run_checks(policy, variant)
    if not breaches:
        dropped = " and without the take_profit" if target != order.take_profit else ""
        text = f"add a stop_loss at {plain(stop)}{dropped}"
        action = NextAction.call("plan_order", plan_args(variant_order, variant_order.qty), text)
    elif variant_situation is not None and all(b.rule in RESIZE_CODES for b in breaches):
        action = suggest(policy, variant, variant_situation)
        if order.stop_loss is None or stop_problem(situation) is not None:
            action = _refitted(policy, facts, variant, action)
    else:
        return NextAction.stop(
            f"no order with a stop_loss at {plain(stop)} passes",
            human="see the violations: only a human can change what refuses them",
        )
    return _with_flip_close(policy, facts, situation, action)


def stop_first(policy: Policy, facts: Facts, situation: Situation) -> NextAction:
    """The answer to an order without a stop that the loss limit refuses: the order with a stop that fits
    (protect). Where a size without a stop fits too (on spot, a buy whose whole value is within the cap), it
    is offered beside it, or instead when no order with a stop passes."""
    action = protect(policy, facts, situation)
    if action.tool is not None and situation.rules.category != "spot":
        return action  # on a perpetual no size without a stop fits, but what only shrinks (the flip's close)
    cut = suggest(policy, facts, situation)
    if cut.tool != "plan_order" or cut.args is None:
        return action
    if action.tool is None:
        return cut
    option = ToolCall(cut.tool, cut.args, "or without a stop: " + cut.text)
    return replace(action, options=(*action.options, option))


def _refitted(policy: Policy, facts: Facts, variant: Facts, action: NextAction) -> NextAction:
    """A stop Pilot chose, fitted to the size asked, once the size is cut by another rule: the farthest stop
    that fits the size given instead (no size rule depends on the stop), where that order passes."""
    args = action.args
    if action.tool != "plan_order" or args is None or "stop_loss" not in args:
        return action
    qty = Decimal(str(args["qty"]))
    cut = replace(
        variant.order, qty=qty, limit_price=Decimal(str(args["price"])) if "price" in args else None
    )
    probe = situate(policy, replace(facts, order=cut))
    limit = loss_limit(probe) if probe is not None else None
    if probe is None or limit is None or qty >= variant.order.qty:
        return action
    stop = stop_for_qty(probe, qty, limit[0])
    if stop is None:
        return action
    stop = collared_stop(probe, stop)
    refit = replace(cut, stop_loss=stop)
    if run_checks(policy, replace(facts, order=refit))[1]:
        return action
    return replace(
        action,
        args={**args, "stop_loss": plain(stop)},
        text=f"{action.text}, with the stop_loss at {plain(stop)}",
    )


def _with_flip_close(policy: Policy, facts: Facts, situation: Situation, action: NextAction) -> NextAction:
    """For an order that turns the position round (a sell larger than the long), the reduce-only close of
    the position as an option beside the flip with its stop: the flip keeps what the agent asked for (the
    other side, now bounded by a stop); the close is the way to be flat instead."""
    order, size = situation.order, situation.position_size
    if action.tool is None or not closes(size, order.side) or order.qty <= abs(size):
        return action
    if situation.rules.category == "spot":
        return action
    close = _as_reduce_only(policy, facts, situation, replace(order, stop_loss=None, take_profit=None))
    if close.tool is None or close.args is None:
        return action
    option = ToolCall(close.tool, close.args, "or close the position instead: " + close.text)
    return replace(action, options=(*action.options, option))


def _held_unstopped(s: Situation) -> NextAction | None:
    """On spot, a buy refused because the coin already held (and the buys resting) would lose more than the
    loss limit without this order: no stop this order carries covers that coin (a spot stop sells what its
    order bought), so no buy fits until the coin held has a stop of its own or is sold. (Asked only where no
    stop fits the buy: a leg of the coin held larger than it sells the buy's coin too, which may lower the
    loss below the cap.)"""
    if s.rules.category != "spot" or s.order.side is not Side.BUY:
        return None
    limit = loss_limit(s)
    if limit is None:
        return None
    at_stops = position_left(s, None, Decimal(0))[1]
    if at_stops.loss <= limit[0]:
        return None
    return NextAction.stop(
        f"no {s.base} buy fits: the {plain(s.position_size)} {s.base} held (with the buys resting) would lose "
        f"{plain_usd(at_stops.loss)} USD at its stops, its whole value where no stop sells it, "
        f"above the {plain_usd(limit[0])} USD a trade may lose; a stop sent with a buy protects "
        "only what that buy fills",
        human=f"give the {s.base} held a stop-loss order of its own (a spot TP/SL order), or sell it "
        f"(close_position), or {RAISE_LOSS}",
        options=close_option(s),
    )


def with_stop_option(facts: Facts, situation: Situation, action: NextAction, policy: Policy) -> NextAction:
    """A size suggestion for a loss breach, with the other way out as an option: the quantity asked, with
    the stop that fits it (offered only when that order passes)."""
    limit = loss_limit(situation)
    if limit is None:
        return action
    order = situation.order
    # The quantity asked, or the instrument's minimum where it asked less: the stop is fitted to the size
    # the answer gives (a stop that fits a size below the minimum may not fit the minimum).
    qty = max(order.qty, _lowest_valid_steps(facts, situation) * situation.rules.qty_step)
    stop = stop_for_qty(situation, qty, limit[0])
    if stop is None:
        return action
    stop = collared_stop(situation, stop)  # nearer than the farthest that fits: it fits too
    variant_order = replace(order, stop_loss=stop, qty=qty)
    if run_checks(policy, replace(facts, order=variant_order))[1]:
        return action
    whose = (
        "it sells what this buy fills"
        if situation.rules.category == "spot"
        else "it becomes the stop of the whole position"
    )
    if (
        action.tool is None
    ):  # no size fits at the stop asked (the position's own loss there): a closer stop does
        text = f"{'keep' if qty == order.qty else 'raise to'} {plain(qty)} {situation.rules.base} with the stop_loss at {plain(stop)}: {whose}"
        return NextAction.call("plan_order", plan_args(variant_order, qty), text)
    option = ToolCall(
        "plan_order",
        plan_args(variant_order, qty),
        f"or keep {plain(qty)} {situation.rules.base} with the stop_loss at {plain(stop)}",
    )
    return replace(action, options=(*action.options, option))
