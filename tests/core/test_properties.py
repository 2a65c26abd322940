"""Invariants of evaluate(): what passes never breaks a cap, and every suggested size is exact."""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from pilot.core.approval import may_need_human, needs_human
from pilot.core.codes import RESIZE_CODES, SIZE_CAP_CODES, Code
from pilot.core.evaluate import evaluate
from pilot.core.facts import Facts, PendingOrders, Side, TradingState
from pilot.core.policy import CONFIRMABLE_TOOLS, ConfirmRule, Policy
from pilot.core.risk import is_risk_reducing
from pilot.core.rules import run_checks, size_breaches
from pilot.core.valuation import liquidation_clear, liquidation_distance_pct, round_price_safe, send_price
from tests.core.suggested import replay
from tests.oracle import leaves, worst, worst_price
from tests.strategies import facts, policies, sizing_cases


@given(policies(), facts())
def test_evaluate_never_raises_on_valid_facts_and_uses_only_the_documented_rule_codes(policy, f):
    violations = evaluate(policy, f).violations
    assert all(isinstance(v.rule, Code) and v.detail and v.next.text for v in violations)


@given(policies(), facts(reduce_only=False))  # caps drawn on their own: most orders then fit nothing
def test_nothing_fits_only_when_the_smallest_valid_order_breaks_a_size_rule(policy, f):
    policy, f = open_case(policy, f)
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.nothing_fits is not None)
    numbers = action.nothing_fits
    assert numbers.room < numbers.minimum
    smallest = replay(f, {**_args(f), "qty": str(numbers.minimum)})
    assert numbers.rule in {
        v.rule for v in evaluate(policy, smallest).violations
    }  # the named rule really blocks it


def _args(f: Facts) -> dict:
    args = {
        "symbol": f.order.symbol,
        "side": f.order.side.value,
        "order_type": f.order.order_type.value,
        "reduce_only": f.order.reduce_only,
        "category": f.order.category,
    }
    if f.order.limit_price is not None:  # on the tick, as the sizing rounds it
        args["price"] = str(
            max(round_price_safe(f.order.limit_price, f.rules.tick_size, f.order.side), f.rules.tick_size)
        )
    return args


def open_case(policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """Bias towards orders only size can break: the market allowed, the day's cap open, trading active."""
    policy = policy.model_copy(
        update={"allowed_markets": (*policy.allowed_markets, f.order.symbol), "daily_order_cap": 50}
    )
    return policy, replace(f, orders_today=0, trading_state=TradingState.ACTIVE)


def passing_case(policy: Policy, f: Facts) -> tuple[Policy, Facts]:
    """An open case with the suggested size taken, when there is one."""
    policy, f = open_case(policy, f)
    action = evaluate(policy, f).next_safe_action
    if action is not None and action.tool == "plan_order":
        f = replay(f, action.args)
    return policy, f


@given(sizing_cases(state=TradingState.ACTIVE))
def test_a_passing_order_never_breaks_a_cap_at_worst_fill(case):
    policy, f = passing_case(*case)
    assume(evaluate(policy, f).passed)
    if is_risk_reducing(f.position.size, f.order, f.pending):
        return
    limits = policy.limits_for(f.order.symbol)
    price = worst_price(policy, f)
    after = leaves(f.position.size, f.order)  # and, in the worst case, every open order on its side:
    after += f.pending.on_side(f.order.side) * f.order.side.sign
    assert f.order.symbol in policy.allowed_markets
    assert f.order.qty * price <= limits.max_order_notional_usd
    assert (abs(after) + f.elsewhere) * price <= limits.max_notional_usd
    assert abs(after) * price <= limits.max_leverage * f.equity
    distance = liquidation_distance_pct(after, price, f.equity, f.rules.maintenance_margin_rate, f.touch.mark)
    assert distance is None or distance >= limits.min_liquidation_distance_pct
    assert f.orders_today < policy.daily_order_cap


@given(sizing_cases(reduce_only=False))
def test_a_suggested_plan_passes_when_replayed_on_the_same_facts(case):
    policy, f = open_case(*case)
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.tool == "plan_order")
    assert evaluate(policy, replay(f, action.args)).passed


@given(sizing_cases(reduce_only=False))
def test_the_suggested_size_is_maximal_one_more_lot_step_fails(case):
    policy, f = open_case(*case)
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.tool == "plan_order" and Decimal(action.args["qty"]) < f.order.qty)
    # A growing order turned into a reduce-only close is sized to the largest close that still shrinks the
    # worst case, which the next test bounds by the position; here: the same order, resized.
    assume(action.args["reduce_only"] == f.order.reduce_only)
    bigger = replay(f, {**action.args, "qty": str(Decimal(action.args["qty"]) + f.rules.qty_step)})
    assert any(v.rule in RESIZE_CODES for v in evaluate(policy, bigger).violations)


@given(
    policies(),
    facts(),
    st.sampled_from(["maxNotionalUsd", "maxOrderNotionalUsd", "maxLeverage", "min"]),
    st.sampled_from([Decimal("0.5"), Decimal("0.9"), Decimal("0.99")]),
)
def test_tightening_any_limit_never_turns_a_refusal_into_a_pass(policy, f, which, factor):
    assume(not evaluate(policy, f).passed)
    if which == "min":
        tighter = policy.model_copy(
            update={
                "min_liquidation_distance_pct": min(
                    policy.min_liquidation_distance_pct / factor, Decimal(1000)
                )
            }
        )
    elif which == "maxLeverage":
        tighter = policy.model_copy(update={"max_leverage": max(Decimal(1), policy.max_leverage * factor)})
    else:
        field = {"maxNotionalUsd": "max_notional_usd", "maxOrderNotionalUsd": "max_order_notional_usd"}[which]
        tighter = policy.model_copy(update={field: getattr(policy, field) * factor})
    assert not evaluate(tighter, f).passed


@given(
    policies(),
    facts(reduce_only=True, held=True),
    st.sampled_from([TradingState.ACTIVE, TradingState.REDUCING]),
)
def test_a_reduce_only_order_that_does_not_raise_the_worst_case_is_never_refused_by_a_cap(policy, f, state):
    size = f.position.size  # drawn long or short, never flat
    qty = min(f.order.qty, abs(size))
    side = Side.SELL if size > 0 else Side.BUY
    f = replace(f, order=replace(f.order, side=side, qty=qty), trading_state=state)
    pending = f.pending
    after = leaves(size, f.order) + pending.on_side(side) * side.sign
    assume(abs(after) <= worst(size, pending.buy_qty, pending.sell_qty))
    rules = {v.rule for v in evaluate(policy, f).violations}
    assert not rules & (SIZE_CAP_CODES | {Code.TRADING_STATE, Code.ALLOWED_MARKETS, Code.DAILY_ORDER_CAP})


# The share of an exposure a cap below it allows: 10^(k/1000) for k from -7000 to -1 (1e-7 to 0.998).
BELOW = st.integers(-7000, -1).map(lambda k: Decimal(10) ** (Decimal(k) / 1000))


@given(
    policies(),
    facts(reduce_only=True),
    st.integers(1, 5000),
    st.booleans(),
    st.integers(1, 500),
    BELOW,
)
def test_a_close_that_frees_resting_orders_to_reopen_past_the_cap_is_refused(
    policy, f, held, long, beyond, below
):
    """Closing a long under resting sells leaves them free to open a short: the worst case counts them.

    Drawn straight into that region (a position, more resting on its closing side than it and the other
    side together, and maxNotionalUsd below the exposure that leaves), instead of filtering random facts
    down to it.
    """
    step = f.rules.qty_step
    size = held * step if long else -held * step
    side = Side.SELL if size > 0 else Side.BUY
    other = f.pending.on_side(Side.BUY if long else Side.SELL)
    closing = abs(size) + other + beyond * step
    pending = (
        PendingOrders(sell_qty=closing, buy_qty=other)
        if long
        else PendingOrders(buy_qty=closing, sell_qty=other)
    )
    f = replace(
        f,
        order=replace(f.order, side=side, qty=abs(size)),
        position=replace(f.position, size=size),
        pending=pending,
        trading_state=TradingState.ACTIVE,
    )
    after = f.pending.on_side(side) * side.sign  # the position is closed; the resting orders remain
    price = worst_price(policy, f)
    exposure = (abs(after) + f.elsewhere) * price
    cap = max((exposure * below).quantize(Decimal("0.01"), rounding=ROUND_FLOOR), Decimal("0.01"))
    policy = policy.model_copy(update={"max_notional_usd": cap})
    assume(abs(after) > worst(size, f.pending.buy_qty, f.pending.sell_qty))
    assume(exposure > policy.limits_for(f.order.symbol).max_notional_usd)
    rules = {v.rule for v in evaluate(policy, f).violations}
    assert Code.MAX_NOTIONAL in rules


@given(policies(), facts(state=TradingState.HALTED))
def test_halted_refuses_every_new_order(policy, f):
    assert Code.TRADING_STATE in {v.rule for v in evaluate(policy, f).violations}


@given(policies(), facts(state=TradingState.REDUCING))
def test_reducing_refuses_whatever_can_grow_a_position(policy, f):
    rules = {v.rule for v in evaluate(policy, f).violations}
    assert ("tradingState" in rules) == (not is_risk_reducing(f.position.size, f.order, f.pending))


@given(sizing_cases(reduce_only=False))
def test_suggested_sizes_are_whole_lots_never_above_the_ask_unless_it_was_below_the_minimum(case):
    policy, f = open_case(*case)
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.tool == "plan_order")
    qty, step = Decimal(action.args["qty"]), f.rules.qty_step
    assert qty % step == 0
    assert qty >= f.rules.min_qty
    floored = (f.order.qty / step).to_integral_value(ROUND_FLOOR) * step
    if action.args["reduce_only"] and not f.order.reduce_only:
        # The order made reduce-only (it would grow or flip the position as asked, or raised to the minimum):
        # it closes at most the whole position (a dust position by the minimum order), never more.
        assert qty <= max(abs(f.position.size), f.rules.min_qty)
        return
    if qty > floored:  # only to reach the instrument minimum: one lot less would be below it
        smaller = qty - step
        price = send_price(
            replay(f, action.args).order, f.touch, f.rules, policy.limits_for(f.order.symbol).max_slippage_pct
        )
        assert smaller < f.rules.min_qty or smaller * price < f.rules.min_notional


@given(
    above=st.none() | st.decimals(min_value=Decimal("0.01"), max_value=Decimal(10**9), places=2),
    actions=st.lists(st.sampled_from(CONFIRMABLE_TOOLS), unique=True),
    tool=st.sampled_from(CONFIRMABLE_TOOLS),
    notional=st.none() | st.decimals(min_value=Decimal(0), max_value=Decimal(10**12), places=2),
)
def test_an_action_that_may_not_need_a_human_never_does(above, actions, tool, notional):
    confirm = ConfirmRule.model_validate({"aboveNotionalUsd": above, "actions": actions})
    if may_need_human(confirm, tool):
        assert needs_human(confirm, tool, Decimal(10**13))  # some order of it does
    else:
        assert not needs_human(confirm, tool, notional)


@given(
    above=st.none() | st.decimals(min_value=Decimal("0.01"), max_value=Decimal(10**9), places=2),
    actions=st.lists(st.sampled_from(CONFIRMABLE_TOOLS), unique=True),
    tool=st.sampled_from(CONFIRMABLE_TOOLS),
    notional=st.none() | st.decimals(min_value=Decimal(0), max_value=Decimal(10**12), places=2),
)
def test_an_order_that_only_shrinks_the_exposure_waits_for_a_human_only_when_its_tool_is_named(
    above, actions, tool, notional
):
    confirm = ConfirmRule.model_validate({"aboveNotionalUsd": above, "actions": actions})
    assert needs_human(confirm, tool, notional, grows=False) == (tool in actions)


@given(policies(), facts())
def test_the_size_searches_see_every_size_code_the_checks_report(policy, f):
    # sizing runs only SIZE_CHECKS: no other check may report a size_cap or size_grid code
    situation, breaches = run_checks(policy, f)
    assume(situation is not None)
    everything = [b.rule for b in breaches if b.rule in RESIZE_CODES]
    assert [b.rule for b in size_breaches(policy, f, f.order)] == everything


def _amounts(low: str, high: str, places: int) -> st.SearchStrategy[Decimal]:
    return st.decimals(Decimal(low), Decimal(high), places=places, allow_nan=False, allow_infinity=False)


@given(
    size=_amounts("-50", "50", 5),
    price=_amounts("0.0001", "200000", 4),
    equity=_amounts("0", "1000000", 2),
    mmr=_amounts("0", "0.5", 4),
    mark=_amounts("0.0001", "200000", 4),
    minimum=_amounts("0", "99", 2),
)
def test_the_liquidation_fast_pass_agrees_with_the_distance_worked_out(
    size, price, equity, mmr, mark, minimum
):
    """liquidation_clear (the check's division-free test) passes only what the distance passes, and passes
    whatever lies a hundredth of a point beyond the minimum (so it is the path taken, not a formality)."""
    distance = liquidation_distance_pct(size, price, equity, mmr, mark)
    if liquidation_clear(size, price, equity, mmr, mark, minimum):
        assert distance is None or distance >= minimum
    elif distance is not None and distance >= minimum + Decimal("0.01"):
        raise AssertionError(f"not passed at {distance} against {minimum}")
    elif distance is None and size > 0:
        raise AssertionError("a long never liquidated was not passed")
