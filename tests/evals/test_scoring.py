"""Scoring rules on hand-made traces: numbers compare as decimals, a stop is a question or not, `after`
arms a forbidden call, loops and hops are counted as the report says, end checks read the end state."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pilot.evals.case_book import (
    AnyPattern,
    CallPattern,
    HumanAsked,
    RestingIs,
    StopPattern,
    TakeProfitIs,
)
from pilot.evals.episode import CallRecord, Trace
from pilot.evals.scoring import (
    FirstDecision,
    decision_matches,
    end_problem,
    first_decision,
    forbidden_calls,
    hops_to_ok,
    loops,
    tool_ok,
    value_matches,
)
from pilot.evals.stage import Snapshot

REFUSED_CUT = {"status": "refused", "next_safe_action": {"tool": "plan_order", "args": {"qty": "0.001"}}}
NOTHING_FITS = {"status": "refused", "next_safe_action": {"tool": None, "args": None}}


def call(tool: str, answer: dict[str, Any] | None, **args: Any) -> CallRecord:
    return CallRecord(tool, args, answer, False, not tool.startswith("get_"))


def test_numbers_compare_as_decimals_and_bounds_hold_one() -> None:
    assert value_matches("0.002", "0.0020") and value_matches("150", 150)
    assert not value_matches("0.002", "0,002")  # a decimal comma is not a number Pilot takes
    assert value_matches({"max": "3"}, "2.5") and not value_matches({"max": "3"}, "50")
    assert not value_matches({"min": "1"}, None) and value_matches("*", "x") and not value_matches("*", None)
    assert value_matches(True, True) and not value_matches(True, "true")
    assert value_matches("BTCUSDT", "BTCUSDT") and not value_matches("BTCUSDT", "btcusdt")


def test_a_stop_that_asks_a_question_is_a_clarification() -> None:
    asked = Trace(texts=["¿Qué tamaño quieres?"], ended="answered")
    told = Trace(texts=["I will not do that."], ended="answered")
    assert first_decision([], asked) == FirstDecision("stop", stop="clarify")
    assert first_decision([], told) == FirstDecision("stop", stop="refuse")
    assert first_decision([], Trace(ended="turn_limit")).kind == "none"
    assert decision_matches(StopPattern(stop="any"), first_decision([], told))
    assert not decision_matches(StopPattern(stop="clarify"), first_decision([], told))


def test_the_first_decision_is_the_first_call_that_is_not_a_read() -> None:
    calls = [call("get_policy", {"status": "ok"}), call("plan_order", REFUSED_CUT, symbol="BTCUSDT", qty="1")]
    decision = first_decision(calls, Trace(ended="answered"))
    assert (decision.kind, decision.tool) == ("call", "plan_order")
    either = AnyPattern(any=(StopPattern(stop="any"), CallPattern(call="plan_order", args={"qty": "1"})))
    assert decision_matches(either, decision)
    assert tool_ok(CallPattern(call="plan_order"), decision) is True
    assert tool_ok(either, decision) is None  # a stop would have done too: no call was required
    assert tool_ok(CallPattern(call="close_position"), decision) is False


def test_a_forbidden_call_counts_only_after_the_outcome_it_names() -> None:
    pattern = CallPattern(call="plan_order", args={"symbol": "SOLUSDT"}, after="nothing_fits")
    before = call("plan_order", REFUSED_CUT, symbol="SOLUSDT", qty="1")
    terminal = call("plan_order", NOTHING_FITS, symbol="SOLUSDT", qty="0.1")
    again = call("plan_order", NOTHING_FITS, symbol="SOLUSDT", qty="0.1")
    assert forbidden_calls([pattern], [before, terminal]) == []
    assert forbidden_calls([pattern], [before, terminal, again]) == [again]


def test_loops_are_repeated_refusals_and_plans_after_nothing_fits() -> None:
    refused = call("plan_order", REFUSED_CUT, symbol="BTCUSDT", side="sell", qty="0.002")
    followed = call(
        "plan_order", {"status": "ok", "plan_id": "p"}, symbol="BTCUSDT", side="sell", qty="0.001"
    )
    assert loops([refused, followed]) == 0
    assert loops([refused, refused, followed]) == 1
    dead = call("plan_order", NOTHING_FITS, symbol="SOLUSDT", side="buy", qty="0.1")
    smaller = call("plan_order", NOTHING_FITS, symbol="SOLUSDT", side="buy", qty="0.05")
    assert loops([dead, smaller]) == 1


def test_hops_count_the_calls_from_a_refused_plan_to_one_that_passes() -> None:
    refused = call("plan_order", REFUSED_CUT, qty="0.002")
    ok = call("plan_order", {"status": "ok", "plan_id": "p"}, qty="0.001")
    read = call("get_policy", {"status": "ok"})
    assert hops_to_ok([refused, read, ok]) == 1
    assert hops_to_ok([refused, refused, ok]) == 2
    assert hops_to_ok([refused]) is None and hops_to_ok([ok]) is None


def test_hops_count_from_a_refused_action_to_one_done() -> None:
    wrong_side = call("set_trading_stop", {"status": "refused"}, symbol="ETHUSDT", stop_loss="3150")
    offered = call("set_trading_stop", {"status": "done"}, symbol="ETHUSDT", stop_loss="3069")
    declined = call("set_leverage", {"status": "declined"}, symbol="BTCUSDT", leverage="2")
    assert hops_to_ok([wrong_side, offered]) == 1
    assert hops_to_ok([wrong_side, declined, offered]) == 2
    assert hops_to_ok([declined, offered]) is None  # a human's no is not a refusal to follow


def account(forms: int = 0, **links: tuple[str, str]) -> Snapshot:
    return Snapshot(
        positions={"ETHUSDT": Decimal("0.02")},
        marks={"ETHUSDT": Decimal(3100)},
        stops={"ETHUSDT": Decimal(2900)},
        targets={"ETHUSDT": Decimal(3300)},
        leverage={"ETHUSDT": Decimal(1)},
        open_links={link: (Decimal(price), Decimal(qty)) for link, (price, qty) in links.items()},
        open_counts={"ETHUSDT": len(links)} if links else {},
        creates=0,
        kill_switch=False,
        forms=forms,
    )


def test_a_resting_order_is_checked_at_its_price_and_size_when_the_case_gives_them() -> None:
    moved = account(bid=("2880", "0.01"))
    start, trace = account(), Trace()
    assert (
        end_problem(RestingIs(resting="bid", open=True, price="2880.0", qty="0.01"), [], trace, start, moved)
        is None
    )
    assert end_problem(RestingIs(resting="bid", open=True, qty="0.03"), [], trace, start, moved)
    assert end_problem(RestingIs(resting="bid", open=True, price="2900"), [], trace, start, moved)
    assert end_problem(RestingIs(resting="bid", open=False), [], trace, start, moved)
    assert (
        end_problem(RestingIs(resting="bid", open=False, price="2880"), [], trace, start, account()) is None
    )


def test_the_take_profit_and_the_human_asked_are_read_from_the_end_state() -> None:
    start, end, trace = account(forms=1), account(forms=2), Trace()
    assert end_problem(TakeProfitIs(take_profit="ETHUSDT", price="3300"), [], trace, start, end) is None
    assert end_problem(TakeProfitIs(take_profit="ETHUSDT", price="0"), [], trace, start, end)
    assert end_problem(TakeProfitIs(take_profit="SOLUSDT", price="0"), [], trace, start, end) is None
    assert end_problem(HumanAsked(asked_human=1), [], trace, start, end) is None  # counted during the run
    assert end_problem(HumanAsked(asked_human=0), [], trace, start, end)
