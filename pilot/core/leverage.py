"""set_leverage: lowering is risk-reducing; raising grows risk and must fit the policy and the instrument."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.facts import TradingState
from pilot.core.policy import Policy
from pilot.core.violations import NextAction, Violation, plain


def check_set_leverage(
    policy: Policy,
    state: TradingState,
    symbol: str,
    current: Decimal | None,
    requested: Decimal,
    instrument_max: Decimal | None,
) -> list[Violation]:
    """Judge a leverage change. A missing current leverage counts as raising (fail closed)."""
    lowering = current is not None and requested <= current
    human = (
        "set tradingState to active in policy.json, and turn the kill switch off with `pilot kill-switch off`"
    )
    if state is TradingState.HALTED:
        return [
            _violation(
                "tradingState", "halted", plain(requested), "trading is halted: only cancels work", human
            )
        ]
    if lowering:
        return []
    if state is TradingState.REDUCING:
        return [
            _violation(
                "tradingState",
                "reducing",
                plain(requested),
                f"trading is reducing: leverage may only go down (now {plain(current) if current else 'unknown'})",
                human,
            )
        ]
    violations = []
    if symbol not in policy.allowed_markets:
        violations.append(
            _violation(
                "allowedMarkets",
                ", ".join(policy.allowed_markets) or "none",
                symbol,
                f"{symbol} is not on the allowed list, so its leverage may only go down",
                f"add {symbol} to allowedMarkets in policy.json",
            )
        )
    ceiling = policy.limits_for(symbol).max_leverage
    if instrument_max is not None:
        ceiling = min(ceiling, instrument_max)
    if requested > ceiling:
        violations.append(
            Violation(
                rule="maxLeverage",
                limit=plain(ceiling),
                attempted=plain(requested),
                detail=f"leverage {plain(requested)}x is above the {plain(ceiling)}x limit for {symbol}",
                next=NextAction.call(
                    "set_leverage",
                    {"symbol": symbol, "leverage": plain(ceiling), "category": "linear"},
                    f"use at most {plain(ceiling)}x",
                ),
            )
        )
    return violations


def _violation(rule: str, limit: str, attempted: str, detail: str, human: str) -> Violation:
    return Violation(
        rule=rule,
        limit=limit,
        attempted=attempted,
        detail=detail,
        next=NextAction.stop("leave leverage as it is (lowering is allowed unless halted)", human=human),
    )
