"""The public face of the core: evaluate(), the next safe action, and the full assessment of an order."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from pilot.core.facts import Facts
from pilot.core.policy import Policy
from pilot.core.rules import Situation, judge
from pilot.core.sizing import RESIZE_RULES, suggest
from pilot.core.valuation import liquidation_distance_pct
from pilot.core.violations import NextAction, Violation


def evaluate(policy: Policy, facts: Facts) -> list[Violation]:
    """Judge one order against the policy. Pure, total and deterministic; an empty list means it passes.

    Every violation names its rule, the limit and the attempted value, one sentence with the numbers, and a
    next action. All size-related violations share one suggestion that satisfies them all at once.
    """
    return _judged(policy, facts)[1]


def _judged(policy: Policy, facts: Facts) -> tuple[Situation | None, list[Violation]]:
    situation, violations = judge(policy, facts)
    if situation is None or not any(v.rule in RESIZE_RULES for v in violations):
        return situation, violations
    suggestion = suggest(policy, facts, situation)
    return situation, [replace(v, next=suggestion) if v.rule in RESIZE_RULES else v for v in violations]


def next_safe_action(violations: list[Violation]) -> NextAction | None:
    """The one action to offer: a blocker that no size can fix comes first, else the shared size fix."""
    if not violations:
        return None
    blockers = [v for v in violations if v.rule not in RESIZE_RULES]
    return (blockers or violations)[0].next


@dataclass(frozen=True, slots=True)
class Assessment:
    """evaluate()'s verdict with the figures a plan reports."""

    violations: list[Violation]
    next_safe_action: NextAction | None
    situation: Situation | None

    @property
    def passed(self) -> bool:
        return not self.violations

    @property
    def liquidation_distance_pct(self) -> Decimal | None:
        s = self.situation
        if s is None or s.facts.equity is None or s.facts.rules is None or s.facts.touch is None:
            return None
        if s.facts.rules.category == "spot":
            return None
        return liquidation_distance_pct(
            s.after, s.price, s.facts.equity, s.facts.rules.maintenance_margin_rate, s.facts.touch.mark
        )


def assess(policy: Policy, facts: Facts) -> Assessment:
    """evaluate() plus the derived figures (worst-fill notional, send price, liquidation distance)."""
    situation, violations = _judged(policy, facts)
    return Assessment(
        violations=violations, next_safe_action=next_safe_action(violations), situation=situation
    )
