"""A close under resting orders on its side: refused only because they count as filled, or for more.

`refused_only_for_pending` is what close_position asks before it cancels a resting order; the checks answer
it, so every rule that spares shrinking orders (the caps, the kill switch's reducing state, the daily loss
limits, maxOpenPositions, tradingHours) is counted, and nothing else is (halted, the grid, a missing fact,
a send whose outcome is unknown, which no cancel reaches).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from pilot.core.evaluate import evaluate, evaluate_close
from pilot.core.facts import (
    DayPnl,
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    PendingFill,
    PendingOrders,
    Position,
    Side,
    Touch,
    TradingState,
)
from pilot.core.policy import Policy, TradingWindow
from pilot.core.rules import refused_only_for_pending

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RESTING = D("0.0006")  # both sells rest on the book: a cancel reaches all of it
ZERO = D(0)
POLICY = Policy(allowed_markets=("BTCUSDT",), max_notional_usd=D(25), max_order_notional_usd=D(100))
BTC = InstrumentRules(
    "BTCUSDT", "linear", D("0.1"), D("0.00001"), D("0.00001"), D(100), D(1), D(100), D("0.005"), "BTC"
)


def close_under_two_resting_sells(qty: str = "0.0003", **changes: object) -> Facts:
    """Long 0.0003 BTC with two resting sells of 0.0003: the close would leave them free to open a short."""
    facts = Facts(
        order=OrderIntent("BTCUSDT", Side.SELL, D(qty), OrderType.MARKET, reduce_only=True),
        rules=BTC,
        touch=Touch(bid=D("80220"), ask=D("80220.1"), mark=D("80220"), observed_at=NOW),
        position=Position("BTCUSDT", D("0.0003"), D("80000"), D(1)),
        equity=D(1000),
        orders_today=0,
        pending=PendingOrders(sell_qty=D("0.0006")),
        trading_state=TradingState.ACTIVE,
        now=NOW,
    )
    return replace(facts, **changes)  # type: ignore[arg-type]  # a test's changes, of Facts' own fields


def test_a_close_refused_by_the_cap_only_for_its_resting_sells_is_held_back_by_them():
    facts = close_under_two_resting_sells()
    assert [v.rule.value for v in evaluate(POLICY, facts).violations] == ["maxNotionalUsd"]
    assert refused_only_for_pending(POLICY, facts, RESTING)


def test_under_the_kill_switch_and_past_the_daily_loss_limit_the_resting_sells_hold_it_back_too():
    loss = Policy(allowed_markets=("BTCUSDT",), max_notional_usd=D(100), daily_loss_limit_usd=D(1))
    latched = close_under_two_resting_sells(trading_state=TradingState.REDUCING, day_pnl=DayPnl(D(0), D(-3)))
    assert {v.rule.value for v in evaluate(loss, latched).violations} == {"tradingState", "dailyLossLimitUsd"}
    assert refused_only_for_pending(loss, latched, RESTING)
    hours = Policy(
        allowed_markets=("BTCUSDT",),
        max_notional_usd=D(100),
        trading_hours=(TradingWindow(start="00:00", end="01:00"),),
    )
    assert refused_only_for_pending(hours, close_under_two_resting_sells(), RESTING)


def test_halted_off_the_grid_or_with_nothing_pending_it_is_not_held_back_by_resting_orders():
    halted = close_under_two_resting_sells(trading_state=TradingState.HALTED)
    assert not refused_only_for_pending(POLICY, halted, RESTING)
    assert not refused_only_for_pending(POLICY, close_under_two_resting_sells("0.000305"), RESTING)
    assert not refused_only_for_pending(POLICY, close_under_two_resting_sells(pending=PendingOrders()), ZERO)
    assert not refused_only_for_pending(POLICY, close_under_two_resting_sells(pending=None), RESTING)


@pytest.mark.parametrize("missing", ["equity", "orders_today", "elsewhere", "funds"])
def test_a_missing_fact_is_never_a_reason_to_cancel(missing):
    """Counted as shrinking, the close would need fewer facts; a cancel brings none back, so nothing goes."""
    facts = close_under_two_resting_sells(**{missing: None})
    assert "facts" in {v.rule.value for v in evaluate(POLICY, facts).violations}
    assert not refused_only_for_pending(POLICY, facts, RESTING)


def test_only_what_a_cancel_can_reach_counts_a_send_whose_outcome_is_unknown_stays():
    """0.0003 resting and 0.0006 sent with an unknown outcome: cancelling the resting sell frees too little."""
    unknown = close_under_two_resting_sells(pending=PendingOrders(sell_qty=D("0.0009")))
    assert not refused_only_for_pending(POLICY, unknown, D("0.0003"))
    assert refused_only_for_pending(POLICY, unknown, D("0.0009"))


def test_close_position_below_the_minimum_is_answered_as_sent_after_its_cancels_with_the_minimum_close():
    """Found by the random worlds (seed 42): long 0.0003 with two resting sells, close_position of 0.0001 where
    the minimum order is 0.0003. No cancel lets 0.0001 through, so nothing is cancelled; the answer names the
    minimum alone (the caps bind only while the sells rest, and close_position cancels them first) and offers
    the minimum close, not "nothing fits"."""
    sells = (
        PendingFill(Side.SELL, D("0.0003"), order_id="a"),
        PendingFill(Side.SELL, D("0.0003"), order_id="b"),
    )
    facts = close_under_two_resting_sells(
        "0.0001",
        rules=replace(BTC, min_qty=D("0.0003")),
        pending=PendingOrders(sell_qty=RESTING, fills=sells),
    )
    assert {v.rule.value for v in evaluate(POLICY, facts).violations} == {
        "instrument.minOrderQty",
        "maxNotionalUsd",
    }
    judged = evaluate_close(POLICY, facts)
    assert [v.rule.value for v in judged.violations] == ["instrument.minOrderQty"]
    nxt = judged.next_safe_action
    assert nxt is not None and nxt.tool == "plan_order" and nxt.args is not None
    assert (D(str(nxt.args["qty"])), nxt.args.get("reduce_only")) == (D("0.0003"), True)


def test_a_close_only_its_resting_sells_hold_back_stays_refused_for_them_when_no_cancel_took_them():
    sells = (PendingFill(Side.SELL, D("0.0006"), order_id="a"),)
    facts = close_under_two_resting_sells(pending=PendingOrders(sell_qty=RESTING, fills=sells))
    assert [v.rule.value for v in evaluate_close(POLICY, facts).violations] == ["maxNotionalUsd"]


def test_a_reducing_order_no_plain_size_of_which_fits_is_offered_reduce_only():
    """Found by the random worlds: a buy on a 6.18 LINK short, where the $10 minimum order value is above the
    $2.70 per-order cap, answered "nothing fits" while the same buy made reduce-only (no minimum value, no
    cap) passes. The next action is that reduce-only buy, and it passes as given."""
    link = InstrumentRules(
        "LINKUSDT",
        "linear",
        D("0.000001"),
        D("0.01"),
        D("0.01"),
        D("956.96"),
        D(10),
        D(50),
        D("0.005"),
        "LINK",
    )
    policy = Policy(
        allowed_markets=("LINKUSDT",),
        max_notional_usd=D("2.4"),
        max_order_notional_usd=D("2.7"),
        max_leverage=D(2),
        min_liquidation_distance_pct=D(20),
        daily_order_cap=1,
    )
    facts = Facts(
        order=OrderIntent(  # $0.0104 of LINK asked: 0 lots, with a stop
            "LINKUSDT", Side.BUY, D(0), OrderType.LIMIT, limit_price=D("1.044991"), stop_loss=D("1.044484")
        ),
        rules=link,
        touch=Touch(bid=D("1.044968"), ask=D("1.04497"), mark=D("1.044969"), observed_at=NOW),
        position=Position("LINKUSDT", D("-6.18"), D("1.05"), D(14)),
        equity=D("90.21"),
        orders_today=1,  # the day's one order sent: only orders that shrink a position may go
        trading_state=TradingState.ACTIVE,
        now=NOW,
    )
    refused = evaluate(policy, facts)
    assert not refused.passed
    nxt = refused.next_safe_action
    assert nxt is not None and nxt.tool == "plan_order" and nxt.args is not None
    assert nxt.args["reduce_only"] is True and D(str(nxt.args["qty"])) >= link.min_qty
    given = replace(
        facts.order,
        qty=D(str(nxt.args["qty"])),
        reduce_only=True,
        limit_price=D(str(nxt.args["price"])),
        stop_loss=None,  # a reduce-only order carries none (plan_args leaves it out)
    )
    assert "stop_loss" not in nxt.args
    assert evaluate(policy, replace(facts, order=given)).passed
