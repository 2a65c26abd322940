"""set_leverage: lowering is risk-reducing; raising grows risk and must fit the policy and the instrument."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.facts import Effect, TradingState
from pilot.core.holds import Hold, blocking, held_by, resume_trading
from pilot.core.policy import Policy
from pilot.core.violations import NextAction, Violation, plain


def check_set_leverage(
    policy: Policy,
    state: TradingState,
    symbol: str,
    current: Decimal | None,
    requested: Decimal,
    instrument_max: Decimal | None,
    holds: Sequence[Hold] = (),
) -> list[Violation]:
    """Judge a leverage change. A missing current leverage counts as raising (fail closed). `holds`: what
    holds trading below active (pilot.core.holds), named in a refusal for the trading state."""
    lowering = current is not None and requested <= current
    effect = Effect.REDUCE if lowering else Effect.GROW
    if not state.permits(effect):
        held = blocking(holds, state, effect)
        why = f" ({held_by(held)})"
        if state is TradingState.HALTED:
            detail = "trading is halted: only cancels work" + why
            return [
                _violation(Code.TRADING_STATE, "halted", plain(requested), detail, resume_trading(held), held)
            ]
        now = plain(current) if current else "unknown"
        detail = f"trading is reducing: leverage may only go down (now {now})" + why
        return [
            _violation(Code.TRADING_STATE, "reducing", plain(requested), detail, resume_trading(held), held)
        ]
    if lowering:
        return []
    violations = []
    if symbol not in policy.allowed_markets:
        violations.append(
            _violation(
                Code.ALLOWED_MARKETS,
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
                rule=Code.MAX_LEVERAGE,
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


def _violation(
    rule: Code, limit: str, attempted: str, detail: str, human: str, holds: tuple[Hold, ...] = ()
) -> Violation:
    return Violation(
        rule=rule,
        limit=limit,
        attempted=attempted,
        detail=detail,
        next=NextAction.stop("leave leverage as it is (lowering is allowed unless halted)", human=human),
        held_by=holds,
    )
