"""Where the hot path restates a definition to stay cheap, the two agree: the fast path and the plain one.

evaluate runs on every plan and every send, so a few checks answer the common case without building what
the plain definition builds (liquidation_clear's twin is held in test_properties.py). Each pair is held
here: the property fails the day one of them changes without the other.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from pilot.core.controls import MINUTE, SECOND, drawdown, drawdown_reached, has_room, throttle
from pilot.core.evaluate import evaluate, judged
from pilot.core.facts import DayPnl, DrawdownState, OrderType, PendingFill, PendingOrders, Position, Side
from pilot.core.policy import Policy
from pilot.core.rules import GROWING_NEEDS, collared_stop, judged_position, price_collar, run_checks, situate
from pilot.core.rules.acceptance import linear_cost
from pilot.core.rules.admission import has_growing_needs
from pilot.core.rules.loss import day_loss, day_loss_reached, opened_loss
from pilot.core.valuation import TAKER_FEE
from pilot.core.venues import BYBIT, OKX
from tests.oracle import trade_loss, worst_entry
from tests.strategies import decimals, facts, maybe, policies

LIMITS = maybe(decimals("0.01", "100000", 2))
SHARES = maybe(decimals("0.01", "100", 2))
# Equity, peaks and PnL around zero too: an empty account, a peak below zero, a day in profit.
AMOUNTS = decimals("-1000", "1000000", 2)


@given(usd=LIMITS, pct=SHARES, equity=AMOUNTS, peak=maybe(AMOUNTS), latched=st.booleans())
def test_the_drawdown_check_asks_what_drawdown_reached_answers(usd, pct, equity, peak, latched):
    policy = Policy(max_drawdown_usd=usd, max_drawdown_pct=pct)
    state = DrawdownState(peak, latched)
    found = drawdown(policy, equity, state)
    assert drawdown_reached(policy, equity, state) == (found is not None and found.reached)


@given(usd=LIMITS, pct=SHARES, equity=maybe(AMOUNTS), realised=AMOUNTS, unrealised=AMOUNTS)
def test_the_daily_loss_check_asks_what_day_loss_answers(usd, pct, equity, realised, unrealised):
    policy = Policy(daily_loss_limit_usd=usd, daily_loss_limit_pct=pct)
    pnl = DayPnl(-realised, -unrealised)
    loss = day_loss(policy, equity, pnl)
    assert day_loss_reached(policy, equity, pnl) == (loss is not None and loss.reached)


CAPS = st.none() | st.integers(1, 8)
AGES = st.lists(st.integers(0, 70_000).map(lambda ms: timedelta(milliseconds=ms)), max_size=12).map(sorted)


@given(second=CAPS, minute=CAPS, messages=AGES)
def test_the_throttle_lets_a_message_through_when_each_window_has_room(second, minute, messages):
    policy = Policy(max_order_messages_per_second=second, max_order_messages_per_minute=minute)
    room = has_room(messages, second, SECOND) and has_room(messages, minute, MINUTE)
    assert (throttle(policy, messages, datetime(2026, 11, 30, tzinfo=UTC)) is None) == room


NEEDS = st.sets(st.sampled_from(GROWING_NEEDS))


@given(facts(), NEEDS)
def test_the_facts_check_sees_a_fact_missing_as_the_list_of_needs_says(f, missing):
    f = replace(f, **dict.fromkeys(missing))
    assert has_growing_needs(f) == all(getattr(f, name) is not None for name in GROWING_NEEDS)


@given(policies(), facts())
def test_the_funds_shortcut_bounds_what_a_linear_order_costs(policy, f):
    # check_funds passes at once when the whole order at leverage 1, with its fee, fits the balance: that
    # is never less than linear_cost, so the shortcut passes nothing the cost would refuse.
    s = situate(policy, f)
    assume(s is not None and s.rules.category == "linear")
    whole = s.order.qty * s.sent_price
    assert linear_cost(s) <= whole + whole * TAKER_FEE


@given(policies(), facts(), SHARES, st.none() | st.integers(1, 5000), st.integers(-20_000, 20_000))
def test_a_stop_inside_the_collar_is_kept_as_the_collars_edge_would_keep_it(policy, f, pct, ticks, away):
    # collared_stop answers a stop inside the collar without working out the edge; on the tick, the edge
    # (rounded towards mark) keeps it where it is too.
    policy = policy.model_copy(update={"price_collar_pct": pct, "price_collar_ticks": ticks})
    f = replace(f, order=replace(f.order, order_type=OrderType.MARKET, limit_price=None, reduce_only=False))
    s = situate(policy, f)
    assume(s is not None and not s.reducing and (pct is not None or ticks is not None))
    tick = s.rules.tick_size
    stop = s.touch.mark - tick * away if s.order.side is Side.BUY else s.touch.mark + tick * away
    stop = (stop // tick) * tick
    assume(stop > 0)
    edge = price_collar(s, Side.SELL if s.order.side is Side.BUY else Side.BUY)
    plain = stop if edge is None else (max(stop, edge) if s.order.side is Side.BUY else min(stop, edge))
    assert collared_stop(s, stop) == plain


def test_an_empty_account_at_its_peak_has_reached_no_drawdown():
    # The drift the first property found: drawdown() called a zero drawdown from a zero peak "reached"
    # (a zero share of it), so the latch tripped on an empty account the check let trade.
    policy, state = Policy(max_drawdown_pct=Decimal(5)), DrawdownState(Decimal(0))
    found = drawdown(policy, Decimal(0), state)
    assert found is not None and not found.reached
    assert not drawdown_reached(policy, Decimal(0), state)


@given(policies(), facts())
def test_a_judgement_without_a_breach_is_what_the_verdict_on_no_breach_would_be(policy, f):
    # evaluate answers an order no check refuses at once; judged() is what it skips: the same verdict.
    situation, breaches = run_checks(policy, f)
    assert evaluate(policy, f) == judged(policy, f, situation, breaches)
    if not breaches:
        assert evaluate(policy, f).passed and evaluate(policy, f).next_safe_action is None


@given(
    policies(),
    facts(),
    st.integers(1, 3000),
    st.sampled_from(["none", "other side", "this side", "a fill"]),
    st.sampled_from([BYBIT, BYBIT, OKX]),
    st.booleans(),
)
def test_the_loss_of_an_order_opening_from_flat_is_the_worst_case_judged_in_full(
    policy, f, ticks, pending, venue, held
):
    # opened_loss answers a perpetual order opening from flat with nothing pending on its side, without the
    # worst case over pending fills: where it answers, the worst case (judged_position) finds the same loss,
    # and so does the oracle's trade at the worst entry; where pending fills or a position could change it,
    # it does not answer.
    assume(f.rules.category == "linear")
    side = f.order.side
    other = Side.SELL if side is Side.BUY else Side.BUY
    step = f.rules.qty_step
    waiting = {
        "none": PendingOrders(),
        "other side": PendingOrders(**{f"{other.value}_qty": step * 3}),
        "this side": PendingOrders(**{f"{side.value}_qty": step * 3}),
        "a fill": PendingOrders(
            **{f"{other.value}_qty": step}, fills=(PendingFill(other, step, f.touch.mark),)
        ),
    }[pending]
    position = f.position if held and f.position.size != 0 else Position.flat(f.order.symbol)
    stop = (
        f.touch.mark - f.rules.tick_size * ticks
        if side is Side.BUY
        else f.touch.mark + f.rules.tick_size * ticks
    )
    assume(stop > 0)
    order = replace(f.order, stop_loss=stop, reduce_only=False)
    f = replace(f, order=order, position=position, pending=waiting, venue=venue, band=None)
    s = situate(policy, f)
    assert s is not None
    opened = opened_loss(s)
    # Declined: a position held, orders pending on its side, stops covering their own fill only (OKX), and
    # (to stay cheap) any order known one by one.
    declined = position.size != 0 or pending in ("this side", "a fill") or venue is OKX
    assert (opened is None) == declined
    if opened is None:
        return
    at_stops = judged_position(s)[1]
    assert not at_stops.unbounded and at_stops.uncovered == 0
    assert opened == at_stops.loss
    entry = worst_entry(policy, f)
    if (side is Side.BUY) == (stop < entry):  # the stop on the side a loss lies
        assert opened == trade_loss(order.qty, entry, stop)
