"""The limits a live home (real money) cannot run without, and the conservative policy `pilot init --live`
writes. Pure: the policy in, the names of what is missing out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pilot.core.policy.fields import init_policy, init_policy_text
from pilot.core.policy.model import Policy

# What a live home needs, each under the policy.json field a human sets (any one of a pair will do).
PER_TRADE_LOSS = "maxLossPerTradeUsd or maxLossPerTradePct"
DAILY_LOSS = "dailyLossLimitUsd or dailyLossLimitPct"
MARKET_CAPS = "allowedMarkets (each with maxNotionalUsd and maxOrderNotionalUsd)"
CONFIRMATION = "confirm.aboveNotionalUsd"
DEAD_MAN = "deadManSwitch.afterSeconds"
DCP_WINDOW = (3, 300)  # the seconds Bybit's Disconnect Cancel All accepts (order/dcp.mdx)

# `pilot init --live`: the practice defaults, tightened. Small caps (one BTC lot fits its override), a stop
# on every opening order, collars, a day's loss that ends the day, and the dead-man's switch within DCP's
# window, so the venue cancels what rests when Pilot's connection is gone for two minutes.
LIVE_INIT: dict[str, Any] = {
    "maxNotionalUsd": 100,
    "maxOrderNotionalUsd": 50,
    "maxLeverage": 2,
    "dailyOrderCap": 10,
    "maxLossPerTradeUsd": 5,
    "requireStopLoss": True,
    "dailyLossLimitUsd": 20,
    "priceCollarPct": 2,
    "maxDrawdownPct": 10,
    "drawdownWindowHours": 24,
    "deadManSwitch": {"afterSeconds": 120, "onSessionEnd": False, "reducing": True},
}


def missing_for_live(policy: Policy) -> tuple[str, ...]:
    """The limits a live home needs that `policy` does not set (empty: it may go live)."""
    dead_man = policy.dead_man_switch
    checks = (
        (PER_TRADE_LOSS, _per_trade_loss(policy)),
        (DAILY_LOSS, policy.daily_loss_limit_usd is not None or policy.daily_loss_limit_pct is not None),
        (MARKET_CAPS, bool(policy.allowed_markets)),
        (CONFIRMATION, policy.confirm.above_notional_usd is not None),
        (DEAD_MAN, dead_man is not None and dead_man.after_seconds is not None),
    )
    return tuple(name for name, present in checks if not present)


def _per_trade_loss(policy: Policy) -> bool:
    """A per-trade loss limit holds on every allowed market (top level or that market's own)."""
    return all(
        limits.max_loss_per_trade_usd is not None or limits.max_loss_per_trade_pct is not None
        for limits in (policy.limits_for(symbol) for symbol in policy.allowed_markets)
    ) and bool(policy.allowed_markets)


def dcp_window(policy: Policy) -> int | None:
    """The seconds Bybit waits after Pilot's connection drops before cancelling every order (DCP): the
    dead-man's switch's `afterSeconds` brought into DCP's range; None without one."""
    dead_man = policy.dead_man_switch
    if dead_man is None or dead_man.after_seconds is None:
        return None
    low, high = DCP_WINDOW
    return max(low, min(high, dead_man.after_seconds))


def live_policy_text(spelled: Callable[[str], str] | None = None) -> str:
    """The policy.json `pilot init --live` writes, its markets as the home's venue spells them."""
    policy = init_policy()
    policy.update(LIVE_INIT)
    policy["confirm"] = {**policy["confirm"], "cliChannel": True}  # a human can approve from the terminal
    return init_policy_text(policy, spelled)
