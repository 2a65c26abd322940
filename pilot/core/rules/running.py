"""Running the checks: every one in the registry's order for a judgement, the size checks for a size search,
and the question a close under resting orders asks before it cancels them."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.facts import Facts, OrderIntent, Side
from pilot.core.policy import Policy
from pilot.core.risk import is_risk_reducing
from pilot.core.rules.admission import check_facts, check_listed, not_allowed
from pilot.core.rules.registry import checks_for
from pilot.core.rules.situation import ZERO, Situation, situate
from pilot.core.violations import Breach


def size_breaches(policy: Policy, facts: Facts, order: OrderIntent) -> list[Breach]:
    """What the size checks report (SIZE_CHECKS, in the order of CHECKS) of `order` on these facts: the
    breaches a smaller or larger order may fix. The facts must let the order be priced (rules and touch)."""
    situation = situate(policy, facts, order)
    assert situation is not None, "sizing searches only an order it could price"
    breaches = []
    for check in checks_for(policy)[1]:
        breach = check(situation)
        if breach is not None:
            breaches.append(breach)
    return breaches


def run_checks(policy: Policy, facts: Facts) -> tuple[Situation | None, list[Breach]]:
    """Run every check in order. Size breaches carry no next action yet: sizing searches with these."""
    unlisted = check_listed(policy, facts)
    if unlisted is not None:
        return None, [unlisted]
    situation = situate(policy, facts)
    reducing = situation.reducing if situation else _reducing(facts)
    missing = check_facts(facts, reducing)
    if missing is not None and facts.order.symbol not in policy.allowed_markets:
        return situation, [not_allowed(policy, facts.order.symbol)]  # the policy alone decides
    breaches = [missing] if missing else []
    if situation is None:
        return None, breaches
    for check in checks_for(policy)[0]:
        breach = check(situation)
        if breach is not None:
            breaches.append(breach)
    return situation, breaches


def refused_only_for_pending(policy: Policy, facts: Facts, cancellable: Decimal) -> bool:
    """Whether the order is refused only because orders pending on its side count as filled, so that
    cancelling `cancellable` of them (the resting orders a cancel can take off the book) lets it pass.

    The question a close under resting orders asks before it cancels them: the checks answer it themselves,
    so no list of "the rules that bind growing orders" is kept anywhere but in the checks. A halted state, a
    grid breach, or a part of the pending quantity no cancel can reach (a send whose outcome is unknown)
    refuses the order either way; so does a missing fact, which no cancel brings back.
    """
    situation, breaches = run_checks(policy, facts)
    pending = facts.pending
    if not breaches or situation is None or pending is None or cancellable <= 0:
        return False
    if any(breach.rule is Code.FACTS for breach in breaches):
        return False
    return not run_checks(policy, without_cancelled(facts, cancellable))[1]


def without_cancelled(facts: Facts, cancellable: Decimal) -> Facts:
    """The facts once `cancellable` of the orders pending on the order's side are cancelled (a send whose
    outcome is unknown stays: no cancel reaches it)."""
    pending = facts.pending
    if pending is None:
        return facts
    side = facts.order.side
    left = max(pending.on_side(side) - cancellable, ZERO)
    fewer = replace(pending, buy_qty=left) if side is Side.BUY else replace(pending, sell_qty=left)
    if cancellable >= pending.cancellable(side):  # every resting order on the side goes, one by one
        kept = tuple(f for f in pending.fills if f.side is not side or f.unknown)
        fewer = replace(fewer, fills=kept)
    return replace(facts, pending=fewer)


def _reducing(facts: Facts) -> bool:
    """Whether the order only shrinks the worst-case exposure (pilot.core.risk.is_risk_reducing)."""
    return is_risk_reducing(facts.position.size if facts.position else None, facts.order, facts.pending)
