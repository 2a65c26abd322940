"""The Policy page: the limits in force per market, the policy version, each problem of an invalid file with
its fix, and the room left under each cap.

The room is the agent's own `get_policy` answer (pilot.app.facts.reads.get_policy: the core's `room_now`, the
largest order plan_order would pass now): it needs an exchange, so it is shown only when the console was
given one to read (`pilot console --exchange ...`); without one the page says how to get it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pilot.app.facts.reads import get_policy
from pilot.app.runtime.runtime import Runtime
from pilot.console.overview import RoomLine, room_line
from pilot.core.policy import PolicyIssue


@dataclass(frozen=True, slots=True)
class MarketLimits:
    symbol: str
    max_notional_usd: str
    max_order_notional_usd: str
    max_leverage: str
    min_liquidation_distance_pct: str
    max_slippage_pct: str
    overridden: bool


@dataclass(frozen=True, slots=True)
class PolicyPage:
    version: str
    valid: bool
    issues: list[PolicyIssue]
    trading_state: str
    daily_order_cap: int
    plan_ttl_seconds: int
    confirm: dict[str, Any]
    markets: list[MarketLimits]
    live: dict[str, Any] | None  # get_policy's data (room left per market and side), when an exchange is read
    live_problem: str | None
    rooms: dict[str, RoomLine]  # the room left per market, from `live`


def _plain(value: Decimal | None) -> str:
    return format(value.normalize(), "f") if value is not None else "—"


async def policy_view(desk: Runtime, reader: Runtime | None = None) -> PolicyPage:
    view = desk.policy()
    policy = view.policy
    markets = []
    for symbol in policy.allowed_markets:
        limits = policy.limits_for(symbol)
        markets.append(
            MarketLimits(
                symbol=symbol,
                max_notional_usd=_plain(limits.max_notional_usd),
                max_order_notional_usd=_plain(limits.max_order_notional_usd),
                max_leverage=_plain(limits.max_leverage),
                min_liquidation_distance_pct=_plain(limits.min_liquidation_distance_pct),
                max_slippage_pct=_plain(limits.max_slippage_pct),
                overridden=symbol in policy.markets,
            )
        )
    live, problem = None, None
    if reader is not None:
        answer = await get_policy(reader)
        if answer.status == "ok" and isinstance(answer.data, dict):
            live = answer.data
        else:
            problem = answer.detail or "the exchange could not be read"
    return PolicyPage(
        version=view.version,
        valid=view.valid,
        issues=list(view.issues),
        trading_state=policy.trading_state.value,
        daily_order_cap=policy.daily_order_cap,
        plan_ttl_seconds=policy.plan_ttl_seconds,
        confirm={
            "above_notional_usd": _plain(policy.confirm.above_notional_usd),
            "actions": ", ".join(policy.confirm.actions) or "none",
            "cli_channel": policy.confirm.cli_channel,
            "console_channel": policy.confirm.console_channel,
            "pending_ttl_seconds": policy.confirm.pending_ttl_seconds,
            "console_url": policy.confirm.console_url,
            "telegram": ", ".join(map(str, policy.confirm.telegram.approvers))
            if policy.confirm.telegram
            else "",
            "ntfy": f"{policy.confirm.ntfy.server}/{policy.confirm.ntfy.topic}"
            if policy.confirm.ntfy
            else "",
        },
        markets=markets,
        live=live,
        live_problem=problem,
        rooms={
            symbol: room_line(symbol, market) for symbol, market in (live or {}).get("markets", {}).items()
        },
    )
