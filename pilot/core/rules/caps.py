"""The policy's caps on an order that can grow the exposure: orders a day, the order's and the position's
notional at the worst fill, leverage, and the liquidation's distance from mark."""

from __future__ import annotations

from decimal import Decimal

from pilot.core.codes import Code
from pilot.core.rules.situation import Situation, is_spot, next_midnight, size_breach
from pilot.core.valuation import liquidation_clear, liquidation_distance_pct
from pilot.core.violations import Breach, NextAction, pct, plain, to_cent, usd


def check_daily_order_cap(s: Situation) -> Breach | None:
    """Orders sent today (UTC) below dailyOrderCap."""
    cap, sent = s.policy.daily_order_cap, s.facts.orders_today or 0
    if s.reducing or sent < cap:
        return None
    midnight = next_midnight(s.facts.now)
    return Breach(
        rule=Code.DAILY_ORDER_CAP,
        limit=str(cap),
        attempted=str(sent + 1),
        detail=f"{sent} orders already sent today (UTC), the cap is {cap}",
        next=NextAction.wait(
            f"wait until the cap resets at {midnight.isoformat()} (00:00 UTC); reducing orders still work",
            midnight,
            human="raise dailyOrderCap in policy.json",
        ),
    )


def check_order_notional(s: Situation) -> Breach | None:
    """maxOrderNotionalUsd, at the worst fill."""
    cap = s.limits.max_order_notional_usd
    if s.reducing or s.order_notional <= cap:
        return None
    return size_breach(
        Code.MAX_ORDER_NOTIONAL,
        plain(cap),
        plain(s.order_notional),
        f"this order would be {usd(s.order_notional)} notional at its worst fill, above the {usd(cap)} cap per order",
    )


def check_position_notional(s: Situation) -> Breach | None:
    """maxNotionalUsd on the coin's exposure the order leaves, at the worst fill.

    The position with every order pending on its side (resting, or sent with an unknown outcome) filled
    too, plus the same coin in the other category (gross).
    """
    cap = s.limits.max_notional_usd
    if s.reducing or s.coin_notional <= cap:
        return None
    return size_breach(
        Code.MAX_NOTIONAL,
        plain(cap),
        plain(s.coin_notional),
        f"the position this order leaves would be {usd(s.coin_notional)} notional{_counting(s)}, "
        f"above the {usd(cap)} cap per market",
    )


def _counting(s: Situation) -> str:
    if s.facts.agent_held is not None:
        return " (this agent's share: what its own orders put in the market, at most the account's)"
    counted = []
    if s.pending != 0:
        counted.append(f"{plain(s.pending)} {s.base} of open orders on the same side as filled")
    if s.facts.elsewhere:
        other = "spot holding" if s.rules.category == "linear" else "perpetual position"
        counted.append(f"{plain(s.facts.elsewhere)} {s.base} of {other}")
    return f" (counting {' and '.join(counted)})" if counted else ""


def check_leverage(s: Situation) -> Breach | None:
    """maxLeverage: the position it leaves over account equity."""
    equity, limit = s.facts.equity, s.limits.max_leverage
    if s.reducing or is_spot(s) or equity is None:
        return None
    if equity > 0 and s.after_notional <= limit * equity:
        return None
    leverage = s.after_notional / equity if equity > 0 else None
    shown = f"{to_cent(leverage)}x" if leverage is not None else "unbounded"
    return size_breach(
        Code.MAX_LEVERAGE,
        plain(limit),
        plain(leverage.quantize(Decimal("0.0001"))) if leverage is not None else "infinite",
        f"the position this order leaves would be {shown} the account equity of {usd(equity)}, "
        f"above the {plain(limit)}x limit",
    )


def check_liquidation(s: Situation) -> Breach | None:
    """minLiquidationDistancePct: the estimated liquidation's distance from mark."""
    equity, minimum = s.facts.equity, s.limits.min_liquidation_distance_pct
    if s.reducing or is_spot(s) or equity is None or minimum == 0:
        return None
    mmr, mark = s.rules.maintenance_margin_rate, s.touch.mark
    if liquidation_clear(s.after, s.price, equity, mmr, mark, minimum):
        return None
    distance = liquidation_distance_pct(
        s.after, s.price, equity, s.rules.maintenance_margin_rate, s.touch.mark
    )
    if distance is None or distance >= minimum:
        return None
    return size_breach(
        Code.MIN_LIQUIDATION_DISTANCE,
        plain(minimum),
        plain(distance.quantize(Decimal("0.0001"))),
        f"liquidation would sit {pct(distance)} from mark, closer than the {plain(minimum)}% minimum",
    )
