"""An agent's maxNotionalUsd counts its share of the market, not the account's whole exposure (issue 39).

The share is restated here apart from pilot.core: what the agent's own sends put in the market with the
order (the settled net, its open sends on the order's side as filled, those on the other side not), taken
only while it leans the same way as the account's worst case after the order, and never more than that.
evaluate() must refuse for the account's cap exactly when the account's exposure breaks it, for the agent's
cap (`agent:NAME`) exactly when the account's does not and the share breaks the tighter of the two caps; a
size it suggests for the agent's cap passes it.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal

from hypothesis import assume, given
from hypothesis import strategies as st

from pilot.core.codes import Code
from pilot.core.evaluate import evaluate
from pilot.core.facts import AgentFacts, Facts, Held, OrderType, PendingOrders, Position, Side
from pilot.core.policy import Policy
from pilot.core.policy.budgets import AgentBudget
from pilot.core.room import room_now
from tests.core.suggested import replay
from tests.core.test_properties import open_case
from tests.core.test_worked_examples import btc_short  # the article's BTCUSDT at 80220
from tests.oracle import position_after, worst, worst_price
from tests.strategies import decimals, facts, policies

AGENT = "scout"
HELD_STEPS = st.integers(-3000, 3000)
OPEN_STEPS = st.integers(0, 3000)


@st.composite
def agent_cases(draw: st.DrawFn) -> tuple[Policy, Facts, Held]:
    """An open case (the market allowed, trading active) whose order grows the account's worst case, an
    agent's cap and what its sends hold, in lot steps of the instrument."""
    policy, f = open_case(draw(policies()), draw(facts(reduce_only=False)))
    size, pending = f.position.size, f.pending
    assume(abs(position_after(f)) > worst(size, pending.buy_qty, pending.sell_qty))  # it grows
    step = f.rules.qty_step
    held = Held(step * draw(HELD_STEPS), step * draw(OPEN_STEPS), step * draw(OPEN_STEPS))
    cap = draw(decimals("1", "100000", 2))
    budget = AgentBudget.model_validate({"maxNotionalUsd": cap})
    policy = policy.model_copy(update={"agents": {AGENT: budget}})
    agent = AgentFacts(AGENT, held={(f.order.category, f.order.symbol): held})
    return policy, replace(f, agent=agent, elsewhere=f.elsewhere), held


def share(f: Facts, held: Held) -> Decimal:
    """The agent's share once the order fills, restated (module docstring)."""
    account = position_after(f)
    sign = 1 if f.order.side is Side.BUY else -1
    open_here = held.buying if f.order.side is Side.BUY else -held.selling
    mine = held.settled + open_here + sign * f.order.qty
    if mine == 0 or account == 0 or (mine > 0) != (account > 0):
        return Decimal(0)
    return min(abs(mine), abs(account))


def notional_refusals(policy: Policy, f: Facts) -> list[str | None]:
    return [v.budget for v in evaluate(policy, f).violations if v.rule is Code.MAX_NOTIONAL]


@given(agent_cases())
def test_the_agents_cap_binds_on_its_share_and_the_accounts_on_the_whole(case):
    policy, f, held = case
    price = worst_price(policy, f)
    account_cap = policy.limits_for(f.order.symbol).max_notional_usd
    agent_cap = min(account_cap, policy.agents[AGENT].max_notional_usd)
    whole = (abs(position_after(f)) + f.elsewhere) * price
    if whole > account_cap:
        expected = ["account"]
    elif share(f, held) * price > agent_cap:
        expected = [f"agent:{AGENT}"]
    else:
        expected = []
    assert notional_refusals(policy, f) == expected


@given(agent_cases())
def test_the_share_never_exceeds_the_accounts_exposure(case):
    """With the agent's cap no tighter than the account's, the agent's judgement never refuses for it:
    whatever its sends hold, its share is at most what the account holds."""
    policy, f, _ = case
    budget = AgentBudget.model_validate({"maxNotionalUsd": policy.max_notional_usd})
    policy = policy.model_copy(update={"agents": {AGENT: budget}})
    assert f"agent:{AGENT}" not in notional_refusals(policy, f)


@given(agent_cases(), st.integers(1, 999))
def test_a_size_suggested_for_the_agents_cap_passes_it(case, permille):
    """The agent's cap drawn below its share (the account's caps out of the way), so that its own judgement
    refuses: the size it suggests, replayed unchanged, passes maxNotionalUsd on both."""
    policy, f, held = case
    price = worst_price(policy, f)
    mine, whole = share(f, held) * price, (abs(position_after(f)) + f.elsewhere) * price
    assume(1 < mine <= 10**8 and whole <= 10**9)
    cap = (mine * permille / 1000).quantize(Decimal("0.01"), rounding=ROUND_FLOOR)
    assume(Decimal("0.01") <= cap < mine)
    budget = AgentBudget.model_validate({"maxNotionalUsd": cap})
    roomy = {"max_notional_usd": Decimal(10**9), "max_order_notional_usd": Decimal(10**9)}
    policy = policy.model_copy(update={**roomy, "agents": {AGENT: budget}})
    assert notional_refusals(policy, f) == [f"agent:{AGENT}"]
    action = evaluate(policy, f).next_safe_action
    assume(action is not None and action.tool == "plan_order")
    assert notional_refusals(policy, replay(f, action.args)) == []


def test_another_agents_position_leaves_this_agents_room():
    """Worked: the account is short $40 of another agent's, this agent holds nothing and may hold $25. A
    $16 short is its own $16: it passes; a $32 short is $32 of its own: refused for its budget; and the
    account's $100 cap counts all $72 of the larger one."""
    policy = Policy.model_validate(
        {
            "allowedMarkets": ["BTCUSDT"],
            "maxNotionalUsd": 100,
            "maxOrderNotionalUsd": 100,
            "agents": {AGENT: {"maxNotionalUsd": 25}},
        }
    )
    f = replace(
        btc_short("0.0002"), position=Position("BTCUSDT", Decimal("-0.0005"), Decimal(80220), Decimal(1))
    )
    f = replace(f, agent=AgentFacts(AGENT), pending=PendingOrders())
    assert notional_refusals(policy, f) == []
    bigger = replace(f, order=replace(f.order, qty=Decimal("0.0004")))
    assert notional_refusals(policy, bigger) == [f"agent:{AGENT}"]
    assert notional_refusals(policy.model_copy(update={"agents": {}}), f) == []


@given(agent_cases())
def test_the_room_an_agent_is_shown_fits_both_caps_and_a_step_more_breaks_the_one_it_names(case):
    """get_policy's room (pilot.core.room.room_now) for an agent: a market order of it passes
    maxNotionalUsd on the account's judgement and the agent's; when maxNotionalUsd limits it, one lot step
    more is refused for it (by whichever budget)."""
    policy, f, _ = case
    market = replace(f.order, order_type=OrderType.MARKET, limit_price=None, reduce_only=False)
    f = replace(f, order=market)
    judged = room_now(policy, f)
    assume(judged is not None and judged.room.qty > 0)
    assert notional_refusals(policy, replace(f, order=replace(market, qty=judged.room.qty))) == []
    if Code.MAX_NOTIONAL in judged.room.limited_by:
        more = replace(market, qty=judged.room.qty + f.rules.qty_step)
        assert notional_refusals(policy, replace(f, order=more)) != []
