"""Agents on one account: what each may do (its role) and the policy its budget makes for it.

An agent is judged twice by the same `evaluate`: on the account's policy with the account's facts, and on
its own policy (`for_agent`: the account's, each cap narrowed to the tighter of the account's and the
agent's, its counts the agent's own) with the agent's counts and its share of the market (`share_after`:
maxNotionalUsd counts what its own sends put there, never more than the account holds); both must pass, so
the tighter binds. What the
agent's judgement adds is tagged with its budget (`agent:NAME`), what the account's finds with `account`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pilot.core.facts import Effect, Facts
from pilot.core.policy import MarketOverrides, Policy
from pilot.core.policy.budgets import AgentBudget
from pilot.core.violations import NextAction

ACCOUNT = "account"


class Role(StrEnum):
    """What an agent's credential lets it do: read only, reduce (close and cancel, never grow), or trade."""

    READ = "read"
    REDUCE = "reduce"
    TRADE = "trade"

    def permits(self, effect: Effect) -> bool:
        """Whether an agent of this role may take an action of `effect`."""
        if self is Role.TRADE:
            return True
        return self is Role.REDUCE and effect is not Effect.GROW


def budget_of(name: str) -> str:
    """How a refusal names an agent's budget."""
    return f"agent:{name}"


# The limits an agent's budget sets, as policy.json spells them (and a rule code names them).
BUDGET_KEYS = frozenset(f.alias for f in AgentBudget.model_fields.values() if f.alias != "markets")


def to_own_budget(action: NextAction, whose: str, rules: set[str]) -> NextAction:
    """`action` with its `human` line pointed at the agent's own budget for `rules`, limits only the
    agent's judgement broke: `raise dailyOrderCap` becomes `raise agents.NAME.dailyOrderCap` (and
    `markets.S.KEY` `agents.NAME.markets.S.KEY`), since raising the account's limit would not let it pass."""
    keys = sorted(rules & BUDGET_KEYS)
    if action.human is None or not keys:
        return action
    pattern = rf"\b((?:markets\.[^.\s]+\.)?(?:{'|'.join(keys)}))(?:/Pct)?\b"
    name = whose.removeprefix(budget_of(""))
    return replace(action, human=re.sub(pattern, rf"agents.{name}.\1", action.human))


@dataclass(frozen=True, slots=True)
class OwnJudgement:
    """What an agent's own judgement runs on: its policy (`for_agent`), the facts with its own counts, and
    how a refusal names its budget."""

    whose: str
    policy: Policy
    facts: Facts


def own_judgement(policy: Policy, facts: Facts) -> OwnJudgement | None:
    """The acting agent's own judgement beside the account's (None: no agent named, or it has no budget in
    policy.json): its policy (`for_agent`) and the facts with its own counts and what its sends hold in the
    order's market toward the order's side (`share_after` bounds it). evaluate runs it, and the room left
    (pilot.core.room) is measured under it too."""
    agent = facts.agent
    budget = policy.agents.get(agent.name) if agent is not None else None
    if agent is None or budget is None:
        return None
    order = facts.order
    held = agent.held_in(order.category, order.symbol).toward(order.side)
    own = replace(facts, orders_today=agent.orders_today, turnover=agent.turnover, agent_held=held)
    return OwnJudgement(budget_of(agent.name), for_agent(policy, budget), own)


def for_agent(policy: Policy, budget: AgentBudget) -> Policy:
    """The policy an agent's own judgement runs on: each cap the tighter of the account's and the agent's
    (per market too), the day's order count and turnover the agent's own caps (the account's are judged on
    the account's counts by the account's judgement)."""
    update: dict[str, Any] = {
        "daily_order_cap": _first(budget.daily_order_cap, policy.daily_order_cap),
        "max_turnover_usd_per_day": budget.max_turnover_usd_per_day,
        "max_turnover_usd_24h": None,
        "daily_loss_limit_usd": _tighter(policy.daily_loss_limit_usd, budget.daily_loss_limit_usd),
    }
    if budget.allowed_markets is not None:
        update["allowed_markets"] = tuple(m for m in policy.allowed_markets if m in budget.allowed_markets)
    for field in _CAPS:
        update[field] = _tighter(getattr(policy, field), getattr(budget, field))
    update["markets"] = _markets(policy, budget)
    return policy.model_copy(update=update)


_CAPS = ("max_notional_usd", "max_order_notional_usd", "max_loss_per_trade_usd")


def _markets(policy: Policy, budget: AgentBudget) -> dict[str, Any]:
    """Every market either names, its caps the tighter of the account's there and the agent's there."""
    markets = {}
    for symbol in sorted(set(policy.markets) | set(budget.markets)):
        account = policy.limits_for(symbol)
        own = budget.markets.get(symbol)
        override = policy.markets.get(symbol)
        values = override.model_dump() if override is not None else {}
        for field in _CAPS:
            mine = getattr(own, field, None) if own is not None else None
            agent = mine if mine is not None else getattr(budget, field)
            values[field] = _tighter(getattr(account, field), agent)
        markets[symbol] = MarketOverrides(**values)
    return markets


def share_after(held: Decimal, order: Decimal, account_after: Decimal) -> Decimal:
    """An agent's share of a market once its order fills, unsigned in base units: what its own sends put
    there with the order (`held` + `order`, signed), bounded by the account's worst case there
    (`account_after`, signed: its position with every order pending on the order's side and this order
    filled), so that it never exceeds what the account holds. Nothing when the two lean opposite ways: the
    account's exposure is then another agent's or the owner's, and the agent's own sends shrank it."""
    mine = held + order
    if mine == 0 or account_after == 0 or (mine > 0) != (account_after > 0):
        return Decimal(0)
    return min(abs(mine), abs(account_after))


def _tighter(account: Decimal | None, agent: Decimal | None) -> Decimal | None:
    if account is None:
        return agent
    if agent is None:
        return account
    return min(account, agent)


def _first(*values: int | None) -> int:
    return next(value for value in values if value is not None)
