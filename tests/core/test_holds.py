"""What holds trading: a refusal names the holds that stop the action at hand, and its human line asks for
what lifts each of them and for nothing else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pilot.core.facts import Effect, TradingState
from pilot.core.holds import Hold, HoldSource, TradingStatus, blocking, resume_trading

HOLDS = st.builds(
    Hold,
    st.sampled_from(HoldSource),
    st.sampled_from([TradingState.REDUCING, TradingState.HALTED]),
)


@given(st.lists(HOLDS, max_size=5), st.sampled_from(Effect))
def test_the_blocking_holds_are_those_that_stop_the_action_and_the_human_line_lifts_only_them(holds, effect):
    status = TradingStatus(tuple(holds))
    if status.state.permits(effect):
        return  # nothing stops it: no refusal to word
    stopping = blocking(holds, status.state, effect)
    assert set(stopping) == {hold for hold in holds if not hold.state.permits(effect)}
    line = resume_trading(stopping)
    assert all(hold.lift in line for hold in stopping)
    others = {hold.lift for hold in holds} - {hold.lift for hold in stopping}
    assert not any(lift in line for lift in others)


def test_a_state_set_by_hand_without_holds_stands_for_policy_json():
    [hold] = blocking((), TradingState.REDUCING, Effect.GROW)
    assert (hold.source, hold.state) == (HoldSource.POLICY, TradingState.REDUCING)


def test_the_trading_state_is_the_strictest_hold_and_active_without_one():
    assert TradingStatus().state is TradingState.ACTIVE
    both = TradingStatus(
        (Hold(HoldSource.KILL_SWITCH, TradingState.REDUCING), Hold(HoldSource.POLICY, TradingState.HALTED))
    )
    assert both.state is TradingState.HALTED


def test_every_source_has_its_own_lift():
    lifts = [Hold(source, TradingState.REDUCING).lift for source in HoldSource]
    assert len(set(lifts)) == len(lifts)
    assert not any(a in b for a in lifts for b in lifts if a is not b)
