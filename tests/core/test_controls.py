"""Properties of the pre-trade controls (issue 27), checked against a restatement in tests/oracle.py and here,
not against pilot.core.controls: the price collar, the message throttles, resting orders, drawdown, the
cooldown after losses, turnover, and authority that expires.

A passing order meets every control; a refusal by one names it with its numbers and a next action that
replays to pass, or is terminal with a human's part and, where waiting helps, when; an order that only
shrinks a position is refused by none of them but the ones docs/refusals.md names (the throttle, the collar on
its limit price, resting orders).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from pilot.core.codes import RESIZE_CODES, Code
from pilot.core.controls import losses_counted
from pilot.core.evaluate import evaluate
from pilot.core.facts import ClosedTrade, Facts, OrderType, Side, TradingState
from pilot.core.policy import Cooldown, Policy
from pilot.core.risk import is_risk_reducing
from pilot.core.rules import CHECKS, check_price_collar, checks_for, run_checks, situate, size_breaches
from tests.core.suggested import replay
from tests.oracle import collar_limit, drawdown_now, in_window, worst_price
from tests.strategies import NOW, control_cases

SECOND, MINUTE = timedelta(seconds=1), timedelta(minutes=1)
CONTROL_CODES = {
    Code.PRICE_COLLAR,
    Code.PRICE_COLLAR_STOP,
    Code.MAX_ORDER_MESSAGES_PER_SECOND,
    Code.MAX_ORDER_MESSAGES_PER_MINUTE,
    Code.MAX_RESTING_ORDERS_PER_MARKET,
    Code.MAX_RESTING_ORDERS,
    Code.MAX_DRAWDOWN_USD,
    Code.MAX_DRAWDOWN_PCT,
    Code.COOLDOWN,
    Code.MAX_TURNOVER_DAY,
    Code.MAX_TURNOVER_24H,
    Code.VALID_UNTIL,
    Code.MAX_SESSION_MINUTES,
}
# What may refuse an order that only shrinks a position, of these (docs/refusals.md, "What can stop a reducing
# action"): every message counts at the exchange, a limit price is a limit price, a limit order rests.
MAY_REFUSE_REDUCING = {
    Code.PRICE_COLLAR,
    Code.MAX_ORDER_MESSAGES_PER_SECOND,
    Code.MAX_ORDER_MESSAGES_PER_MINUTE,
    Code.MAX_RESTING_ORDERS_PER_MARKET,
    Code.MAX_RESTING_ORDERS,
}


def open_case(policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Only the size rules and the controls left to refuse: the market allowed, the order cap open."""
    policy = policy.model_copy(
        update={"allowed_markets": (*policy.allowed_markets, f.order.symbol), "daily_order_cap": 50}
    )
    return policy, replace(f, orders_today=0, trading_state=TradingState.ACTIVE)


def reducing(f: Facts) -> bool:
    return is_risk_reducing(f.position.size, f.order, f.pending)


def codes(policy: Policy, f: Facts) -> set[Code]:
    return {v.rule for v in evaluate(policy, f).violations}


# --- every control at once ------------------------------------------------------------------------------


# Half the cases keep every control inside its limit, where most orders pass and the assertions run; the
# other half lets each lie past it one time in eight, where the orders that still pass (reducing) are.
@given(st.booleans().flatmap(lambda others_past: control_cases(others_past=others_past)))
def test_a_passing_order_meets_every_control(case):
    policy, f = open_case(*case)
    action = evaluate(policy, f).next_safe_action
    if action is not None and action.tool == "plan_order":
        f = replay(f, action.args)
    assume(evaluate(policy, f).passed)
    order = f.order
    if order.order_type is OrderType.LIMIT:
        edge = collar_limit(policy, f, order.side is Side.BUY)
        if edge is not None:
            assert order.limit_price <= edge if order.side is Side.BUY else order.limit_price >= edge
        for cap, count in (
            (policy.limits_for(order.symbol).max_resting_orders_per_market, f.resting.market),
            (policy.max_resting_orders, f.resting.total),
        ):
            assert cap is None or count < cap
    for cap, window in (
        (policy.max_order_messages_per_second, SECOND),
        (policy.max_order_messages_per_minute, MINUTE),
    ):
        assert cap is None or in_window(f.messages, window) < cap
    if reducing(f):
        return
    found = drawdown_now(policy, f.equity, f.drawdown.peak)
    if found is not None:
        assert found[0] < found[1] and not f.drawdown.latched
    if policy.cooldown is not None:
        assert f.cooldown.until is None or f.cooldown.until <= f.now
    notional = order.qty * worst_price(policy, f)
    if policy.max_turnover_usd_per_day is not None:
        assert f.turnover.day_usd + notional <= policy.max_turnover_usd_per_day
    if policy.max_turnover_usd_24h is not None:
        assert f.turnover.rolling_usd + notional <= policy.max_turnover_usd_24h
    if policy.valid_until is not None:
        assert f.now < policy.valid_until
    if policy.max_session_minutes is not None:
        assert f.session_age < timedelta(minutes=policy.max_session_minutes)


@given(
    control_cases(others_past=False),
    st.sampled_from(["collar", "messages", "resting", "drawdown", "cooldown", "turnover", "authority"]),
)
def test_a_control_past_its_limit_refuses_a_growing_order_with_its_code(case, which):
    policy, f = open_case(*case)
    policy, f = open_case(*control_cases_past(policy, f, which))
    assume(not reducing(f))
    found = codes(policy, f)
    expected = {
        "collar": {Code.PRICE_COLLAR},
        "messages": {Code.MAX_ORDER_MESSAGES_PER_SECOND, Code.MAX_ORDER_MESSAGES_PER_MINUTE},
        "resting": {Code.MAX_RESTING_ORDERS_PER_MARKET, Code.MAX_RESTING_ORDERS},
        "drawdown": {Code.MAX_DRAWDOWN_USD, Code.MAX_DRAWDOWN_PCT},
        "cooldown": {Code.COOLDOWN},
        "turnover": {Code.MAX_TURNOVER_DAY, Code.MAX_TURNOVER_24H},
        "authority": {Code.VALID_UNTIL, Code.MAX_SESSION_MINUTES},
    }[which]
    assert found & expected, (which, found)


def control_cases_past(policy: Policy, f: Facts, which: str) -> tuple[Policy, Facts]:
    """The case as drawn (every control inside its limit) is kept; `which` is then set past its limit by the
    restated rule, so the property does not trust the strategy for the side it lies on."""
    if which == "collar":
        policy = policy.model_copy(update={"price_collar_ticks": 1, "price_collar_pct": None})
        buy, tick = f.order.side is Side.BUY, f.rules.tick_size
        edge = collar_limit(policy, f, buy)
        price = edge + tick if buy else max(edge - tick, tick)
        assume(price != edge)
        order = replace(f.order, order_type=OrderType.LIMIT, limit_price=price)
        return policy, replace(f, order=order)
    if which == "messages":
        policy = policy.model_copy(update={"max_order_messages_per_second": 2})
        return policy, replace(f, messages=(timedelta(milliseconds=10), timedelta(milliseconds=900)))
    if which == "resting":
        policy = policy.model_copy(update={"max_resting_orders_per_market": 1})
        price = f.order.limit_price or f.touch.bid
        order = replace(f.order, order_type=OrderType.LIMIT, limit_price=price)
        return policy, replace(f, order=order, resting=replace(f.resting, market=1))
    if which == "drawdown":
        policy = policy.model_copy(update={"max_drawdown_usd": Decimal(10)})
        return policy, replace(f, drawdown=replace(f.drawdown, peak=f.equity + 10))
    if which == "cooldown":
        policy = policy.model_copy(update={"cooldown": Cooldown(afterLosses=2, minutes=30)})
        return policy, replace(f, cooldown=replace(f.cooldown, losses=2, until=f.now + MINUTE))
    if which == "turnover":
        notional = f.order.qty * worst_price(policy, f)
        policy = policy.model_copy(update={"max_turnover_usd_24h": Decimal(1000)})
        return policy, replace(
            f, turnover=replace(f.turnover, rolling_usd=Decimal(1000) - notional + Decimal("0.01"))
        )
    policy = policy.model_copy(update={"valid_until": f.now})
    return policy, f


@given(control_cases())
def test_a_control_refusal_leads_to_a_pass_or_ends_with_a_human_and_when_waiting_helps(case):
    policy, f = open_case(*case)
    result = evaluate(policy, f)
    ours = [v for v in result.violations if v.rule in CONTROL_CODES]
    assume(ours)
    action = result.next_safe_action
    assert action is not None
    if action.tool == "plan_order":
        assert evaluate(policy, replay(f, action.args)).passed
    elif action.tool is None:
        assert action.human
    for violation in ours:
        assert violation.limit and violation.attempted and violation.detail
        waits = violation.rule in {
            Code.MAX_ORDER_MESSAGES_PER_SECOND,
            Code.MAX_ORDER_MESSAGES_PER_MINUTE,
            Code.COOLDOWN,
        }
        if waits:
            assert violation.next.retry_after is not None and violation.next.retry_after > f.now


@given(control_cases(others_past=False))
def test_an_order_that_only_shrinks_a_position_is_refused_by_no_control_but_the_named_ones(case):
    policy, f = open_case(*case)
    held = f.position.size
    assume(held != 0)
    side = Side.SELL if held > 0 else Side.BUY
    order = replace(f.order, side=side, reduce_only=True, qty=min(f.order.qty, abs(held)), stop_loss=None)
    f = replace(f, order=order)
    assume(reducing(f))
    # every control past its limit at once
    policy = policy.model_copy(
        update={
            "max_drawdown_usd": Decimal(1),
            "cooldown": Cooldown(afterLosses=1, minutes=60),
            "max_turnover_usd_per_day": Decimal("0.01"),
            "valid_until": f.now,
            "max_session_minutes": 1,
        }
    )
    f = replace(
        f,
        drawdown=replace(f.drawdown, peak=f.equity + 100, latched=True, until=f.now + MINUTE),
        cooldown=replace(f.cooldown, losses=1, until=f.now + MINUTE),
        session_age=timedelta(hours=1),
    )
    assert not (codes(policy, f) & (CONTROL_CODES - MAY_REFUSE_REDUCING))


# --- the price collar ----------------------------------------------------------------------------------


@given(control_cases(past=("collar",), others_past=False))
def test_past_the_collar_the_next_action_is_the_same_order_at_its_edge(case):
    policy, f = open_case(*case)
    result = evaluate(policy, f)
    assume([v.rule for v in result.violations] == [Code.PRICE_COLLAR])
    action = result.next_safe_action
    assert action is not None
    if action.tool is None:  # at the edge the price values the order higher: no size fits the caps there
        assert action.nothing_fits is not None and action.nothing_fits.rule is not Code.PRICE_COLLAR
        return
    assert action.tool == "plan_order"
    edge = collar_limit(policy, f, f.order.side is Side.BUY)
    assert Decimal(action.args["price"]) == edge
    qty, step = Decimal(action.args["qty"]), f.rules.qty_step
    raised = qty * edge >= f.rules.min_notional > (qty - step) * edge  # to the minimum value at the edge
    assert (qty <= f.order.qty or raised) and action.args["side"] == f.order.side.value
    assert evaluate(policy, replay(f, action.args)).passed
    tick = f.rules.tick_size
    beyond = edge + tick if f.order.side is Side.BUY else edge - tick
    assume(beyond > 0)
    assert Code.PRICE_COLLAR in codes(policy, replay(f, {**action.args, "price": str(beyond)}))


@given(control_cases(others_past=False), st.integers(1, 50))
def test_a_growing_order_s_stop_beyond_the_collar_is_moved_to_its_edge(case, ticks_out):
    policy, f = open_case(*case)
    policy = policy.model_copy(update={"price_collar_ticks": 20, "price_collar_pct": None})
    buy, tick, mark = f.order.side is Side.BUY, f.rules.tick_size, f.touch.mark
    edge = collar_limit(policy, f, not buy)  # a long's stop sells: the sell side's edge below the mark
    stop = edge - ticks_out * tick if buy else edge + ticks_out * tick
    assume(stop > 0)
    f = replace(f, order=replace(f.order, order_type=OrderType.MARKET, limit_price=None, stop_loss=stop))
    assume(not reducing(f))
    result = evaluate(policy, f)
    assert Code.PRICE_COLLAR_STOP in {v.rule for v in result.violations}
    action = result.next_safe_action
    if action is not None and action.tool == "plan_order" and "stop_loss" in action.args:
        moved = Decimal(action.args["stop_loss"])
        assert (moved >= edge) if buy else (moved <= edge)
        assert abs(mark - moved) <= 20 * tick + tick


# --- the throttles -------------------------------------------------------------------------------------


@given(control_cases(past=("messages",), others_past=False))
def test_a_throttled_order_passes_once_retry_after_has_passed_and_not_before(case):
    policy, f = open_case(*case)
    result = evaluate(policy, f)
    throttled = [
        v
        for v in result.violations
        if v.rule in (Code.MAX_ORDER_MESSAGES_PER_SECOND, Code.MAX_ORDER_MESSAGES_PER_MINUTE)
    ]
    assume(throttled)
    retry = throttled[0].next.retry_after
    waited = retry - f.now
    assert (
        timedelta(0)
        < waited
        <= (SECOND if throttled[0].rule is Code.MAX_ORDER_MESSAGES_PER_SECOND else MINUTE)
    )

    def later(by: timedelta) -> Facts:
        ages = tuple(age + by for age in f.messages if age + by < MINUTE)
        return replace(f, now=f.now + by, messages=ages)

    assert throttled[0].rule not in codes(policy, later(waited))
    assert throttled[0].rule in codes(policy, later(waited - timedelta(microseconds=1)))


# --- drawdown, cooldown, turnover, authority ------------------------------------------------------------


@given(control_cases(past=("drawdown",), others_past=False))
def test_past_the_drawdown_growing_orders_wait_for_the_window_or_a_human(case):
    policy, f = open_case(*case)
    assume(not reducing(f))
    drawn = [
        v for v in evaluate(policy, f).violations if v.rule in (Code.MAX_DRAWDOWN_USD, Code.MAX_DRAWDOWN_PCT)
    ]
    assert drawn
    assert drawn[0].next.tool is None and drawn[0].next.retry_after == f.drawdown.until
    if not f.drawdown.latched:
        dd, limit = drawdown_now(policy, f.equity, f.drawdown.peak)
        assert dd >= limit and Decimal(drawn[0].limit) == limit.quantize(Decimal("0.01"))


@given(control_cases(past=("turnover",), others_past=False))
def test_the_turnover_cut_is_the_largest_and_nothing_fits_says_when_room_comes_back(case):
    policy, f = open_case(*case)
    assume(not reducing(f))
    result = evaluate(policy, f)
    assume(any(v.rule in (Code.MAX_TURNOVER_DAY, Code.MAX_TURNOVER_24H) for v in result.violations))
    action = result.next_safe_action
    assert action is not None
    if action.tool == "plan_order" and Decimal(action.args["qty"]) < f.order.qty:
        assume(action.args["reduce_only"] == f.order.reduce_only)
        bigger = replay(f, {**action.args, "qty": str(Decimal(action.args["qty"]) + f.rules.qty_step)})
        assert not evaluate(policy, bigger).passed
    elif action.tool is None and action.nothing_fits is not None:
        if action.nothing_fits.rule is Code.MAX_TURNOVER_DAY:
            midnight = datetime.combine(f.now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
            assert action.retry_after == midnight
        elif action.nothing_fits.rule is Code.MAX_TURNOVER_24H:
            assert action.retry_after == f.turnover.rolling_frees_at


@given(control_cases(past=("authority",), others_past=False))
def test_past_its_authority_a_growing_order_is_refused_and_told_who_extends_it(case):
    policy, f = open_case(*case)
    assume(not reducing(f))
    found = [
        v for v in evaluate(policy, f).violations if v.rule in (Code.VALID_UNTIL, Code.MAX_SESSION_MINUTES)
    ]
    assert found
    assert found[0].next.tool is None and found[0].next.human
    expired = policy.valid_until is not None and f.now >= policy.valid_until
    assert (found[0].rule is Code.VALID_UNTIL) == expired


@given(control_cases(past=("cooldown",), others_past=False))
def test_in_a_cooldown_growing_orders_wait_until_it_ends(case):
    policy, f = open_case(*case)
    assume(not reducing(f))
    found = [v for v in evaluate(policy, f).violations if v.rule is Code.COOLDOWN]
    assert found and found[0].next.retry_after == f.cooldown.until
    assert Code.COOLDOWN not in codes(policy, replace(f, now=f.cooldown.until))


TRADE_PNLS = st.lists(st.integers(-500, 500), max_size=12)
GAPS = st.lists(st.integers(0, 3600), max_size=12)


@given(TRADE_PNLS, GAPS, st.integers(1, 5), st.none() | st.integers(1, 120))
def test_losses_are_counted_in_a_row_or_within_the_window_before_the_newest(pnls, gaps, after, within):
    trades, at = [], NOW
    for index, pnl in enumerate(pnls):  # newest first, each one `gaps` seconds older than the one before
        at -= timedelta(seconds=gaps[index] if index < len(gaps) else 60)
        trades.append(ClosedTrade(at, Decimal(pnl), f"o{index}"))
    rule = Cooldown(afterLosses=after, withinMinutes=within, minutes=10)
    count, newest = losses_counted(rule, trades)
    losses = [t for t in trades if t.pnl < 0]
    if within is None:
        expected = next((i for i, t in enumerate(trades) if t.pnl >= 0), len(trades))
    else:
        expected = sum(1 for t in losses if losses[0].at - t.at <= timedelta(minutes=within)) if losses else 0
    assert count == expected
    if within is None:
        assert newest == (trades[0] if count else None)
    else:
        assert newest == (losses[0] if losses else None)


@given(control_cases())
def test_the_size_searches_see_every_size_code_of_the_controls(case):
    policy, f = open_case(*case)
    situation, breaches = run_checks(policy, f)
    assume(situation is not None)
    everything = [b.rule for b in breaches if b.rule in RESIZE_CODES]
    assert [b.rule for b in size_breaches(policy, f, f.order)] == everything


@given(control_cases())
def test_a_control_left_out_of_the_policy_is_left_out_of_the_judgement_and_would_have_passed(case):
    """checks_for leaves out the checks of the controls policy.json does not set (so the common order pays
    nothing for them): each of those passes on these facts."""
    policy, f = open_case(*case)
    situation = situate(policy, f)
    assume(situation is not None)
    chosen, sizes = checks_for(policy)
    assert [c for c in CHECKS if c in chosen] == list(chosen) and set(sizes) <= set(chosen)
    assert all(check(situation) is None for check in CHECKS if check not in chosen)


def test_a_collar_set_for_one_market_only_is_judged():
    policy = Policy(allowed_markets=("BTCUSDT",), markets={"BTCUSDT": {"priceCollarPct": 1}})
    assert check_price_collar in checks_for(policy)[0]
    assert check_price_collar not in checks_for(Policy(allowed_markets=("BTCUSDT",)))[0]
