"""The public face of the core: evaluate(), the one judgement of an order, and what it reports."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.core.agent_budgets import ACCOUNT, own_judgement, to_own_budget
from pilot.core.codes import PROTECTION_CODES, RESIZE_CODES
from pilot.core.facts import Facts, Side
from pilot.core.policy import Policy
from pilot.core.rules import Situation, run_checks, without_cancelled
from pilot.core.sizing import (
    LOSS_CODES,
    close_instead,
    protect,
    reducing_alternative,
    stop_first,
    suggest,
    with_close_option,
    with_stop_option,
)
from pilot.core.valuation import Liquidation, liquidation
from pilot.core.violations import Breach, NextAction, Violation


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The verdict on one order: its violations, the one next action to offer, and the derived figures."""

    violations: list[Violation]
    next_safe_action: NextAction | None
    situation: Situation | None

    @property
    def passed(self) -> bool:
        return not self.violations

    @property
    def liquidation(self) -> Liquidation | None:
        """The estimated liquidation of the position left: price and distance from mark (None: none, or
        spot)."""
        s = self.situation
        if s is None or s.facts.equity is None or s.rules.category == "spot":
            return None
        rules = s.rules
        return liquidation(
            s.after, s.price, s.facts.equity, rules.maintenance_margin_rate, s.touch.mark, rules.tick_size
        )

    @property
    def liquidation_distance_pct(self) -> Decimal | None:
        """Distance from mark to the estimated liquidation of the position left (None: none, or spot)."""
        found = self.liquidation
        return found.distance_pct if found is not None else None


def evaluate(policy: Policy, facts: Facts) -> Evaluation:
    """Judge one order against the policy and, for a named agent with a budget in `policy.agents`, against
    that budget too (pilot.core.agent_budgets): both judgements run this same function, both must pass, and each
    violation says whose limit it is (`budget`)."""
    own = own_judgement(policy, facts)
    if own is None:
        return _evaluate(policy, facts)
    account = _evaluate(policy, facts)
    return _together(account, _evaluate(own.policy, own.facts), own.whose)


def _together(account: Evaluation, own: Evaluation, whose: str) -> Evaluation:
    """The account's judgement and the agent's as one: every violation of either, each tagged with its
    budget (one the account's judgement found too is the account's); the next action is the account's for a
    blocker of its own, else the agent's (its caps are the tighter, so its size fits both)."""
    found = {violation.rule for violation in account.violations}
    mine = {v.rule.value for v in own.violations if v.rule not in found}  # a human raises these in `agents`
    violations = [replace(v, budget=ACCOUNT) for v in account.violations] + [
        replace(v, budget=whose, next=to_own_budget(v.next, whose, mine))
        for v in own.violations
        if v.rule not in found
    ]
    if own.passed:
        return Evaluation(violations, account.next_safe_action, account.situation)
    blocked = any(v.rule not in RESIZE_CODES for v in account.violations)
    own_next = own.next_safe_action and to_own_budget(own.next_safe_action, whose, mine)
    next_action = account.next_safe_action if blocked else own_next or account.next_safe_action
    return Evaluation(violations, next_action, account.situation or own.situation)


def _evaluate(policy: Policy, facts: Facts) -> Evaluation:
    """Judge one order against one policy. Pure, total and deterministic; no violations means it passes.

    Every violation names its rule, the limit and the attempted value, one sentence with the numbers, and a
    next action. All size violations share one suggestion that satisfies them all at once; a blocker that no
    size can fix comes first as the next safe action. The checks run in the order pilot.core.rules registers
    them (its docstring numbers them).
    """
    situation, breaches = run_checks(policy, facts)
    if not breaches:  # the common case: what judged() makes of no breach (tests/core/test_fast_paths.py)
        return Evaluation([], None, situation)
    return judged(policy, facts, situation, breaches)


def judged(policy: Policy, facts: Facts, situation: Situation | None, breaches: list[Breach]) -> Evaluation:
    """The verdict on these breaches of the order: each with its next action, and the one to offer first."""
    resize = protection = None
    if situation is not None and _stopless(facts, breaches):
        # Refused by the loss limit for want of a stop: the answer carries one (on spot, the cut that loses
        # no more than the cap whole is the other way); every size breach then has that one answer.
        resize = protection = stop_first(policy, facts, situation)
    elif situation is not None and any(b.rule in RESIZE_CODES for b in breaches):
        resize = suggest(policy, facts, situation)
        if any(b.rule in LOSS_CODES for b in breaches):
            resize = with_stop_option(facts, situation, resize, policy)
    if protection is None and situation is not None and any(b.rule in PROTECTION_CODES for b in breaches):
        protection = protect(policy, facts, situation)
    violations = [
        b.with_next(b.next or (protection if b.rule in PROTECTION_CODES else resize) or _must(None))
        for b in breaches
    ]
    next_action = _next_safe_action(violations)
    if next_action is not None and next_action.tool is None:
        # Nothing of the order as asked fits; what of it only shrinks the position may (a blocker such as
        # tradingState reducing lets it through, and so do the caps).
        next_action = (
            reducing_alternative(policy, facts, situation)
            or close_instead(policy, facts, situation)
            or next_action
        )
    elif next_action is not None and facts.order.reduce_only:
        next_action = with_close_option(policy, facts, situation, next_action)
    raised = _raised(facts, next_action)
    if raised is not None:
        # Raised to the instrument's minimum, an order may meet a rule its smaller size did not (a position
        # in one market more, a loss at its stop): the answer is then what the raised order gets.
        follow = _evaluate(policy, raised)
        next_action = next_action if follow.passed else follow.next_safe_action
    return Evaluation(violations, next_action, situation)


def evaluate_close(policy: Policy, facts: Facts) -> Evaluation:
    """Judge close_position's reduce-only order as close_position sends it: after cancelling the resting
    orders on its side that would reopen the position (pilot.app.orders.close cancels them first, while
    they would). A close refused for something no cancel fixes (below the instrument's minimum, halted) is
    answered with what binds the close itself once they are gone, and its next action is the close that
    passes then; a close that only those orders hold back, and that no cancel took away, stays refused
    for them."""
    judged = evaluate(policy, facts)
    pending = facts.pending
    if judged.passed or pending is None or not facts.order.reduce_only:
        return judged
    cancellable = pending.cancellable(facts.order.side)
    if cancellable <= 0:
        return judged
    alone = evaluate(policy, without_cancelled(facts, cancellable))
    return judged if alone.passed else alone


def _stopless(facts: Facts, breaches: list[Breach]) -> bool:
    """Whether the loss limit refuses an order that carries no stop (and can carry one): the fix is a stop."""
    order = facts.order
    if order.stop_loss is not None or order.reduce_only:
        return False
    if order.category == "spot" and order.side is not Side.BUY:
        return False
    return any(b.rule in LOSS_CODES for b in breaches)


def _raised(facts: Facts, action: NextAction | None) -> Facts | None:
    """The facts for the suggested plan_order when it raises the order's size (None: no such suggestion)."""
    if action is None or action.tool != "plan_order" or action.args is None:
        return None
    args = action.args
    qty = Decimal(str(args["qty"]))
    if qty <= facts.order.qty:
        return None

    def price(name: str) -> Decimal | None:
        return Decimal(str(args[name])) if name in args else None

    order = replace(
        facts.order,
        qty=qty,
        reduce_only=bool(args.get("reduce_only", False)),
        limit_price=price("price"),
        stop_loss=price("stop_loss"),
        take_profit=price("take_profit"),
    )
    return replace(facts, order=order)


def _next_safe_action(violations: list[Violation]) -> NextAction | None:
    if not violations:
        return None
    blockers = [v for v in violations if v.rule not in RESIZE_CODES]
    return (blockers or violations)[0].next


def _must(action: NextAction | None) -> NextAction:
    # A breach without its own next action is a size breach, and those come with a situation to size.
    assert action is not None, "a size breach without a size suggestion"
    return action
