"""Evaluations per second of the pure core on one core: a typical policy, and every rule on.

Targets: >= 150,000/s for a typical passing order and >= 8,000/s for a refusal that searches the size that
fits (issue 26); with every rule on, the pre-trade controls included, >= 50,000/s passing and >= 5,000/s for
a refusal with a size search (issue 27). Counted per second of this process's CPU time (the figure to
compare on a machine other processes share: a second of wall time there holds less than a second of this
core) and per second of wall time.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

from pilot.core.evaluate import evaluate
from pilot.core.facts import (
    CooldownState,
    DayPnl,
    DrawdownState,
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    Position,
    RestingOrders,
    Side,
    Touch,
    TradingState,
    Turnover,
)
from pilot.core.policy import ConfirmRule, Cooldown, Policy, TradingWindow

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
POLICY = Policy(allowed_markets=("BTCUSDT", "ETHUSDT", "SOLUSDT"), max_notional_usd=D(25))
BTC = InstrumentRules(
    "BTCUSDT", "linear", D("0.1"), D("0.00001"), D("0.00001"), D(100), D(1), D(100), D("0.005"), "BTC"
)
TOUCH = Touch(D("80220"), D("80220.1"), D("80220"), NOW)


def facts(qty: str, order_type: OrderType = OrderType.MARKET) -> Facts:
    order = OrderIntent(
        "BTCUSDT", Side.SELL, D(qty), order_type, D("80300") if order_type is OrderType.LIMIT else None
    )
    return Facts(order, BTC, TOUCH, Position.flat("BTCUSDT"), D(1000), 3, TradingState.ACTIVE, NOW)


# The loss rule judged on the position it leaves, at its stops (pilot.core.stops): a short with its stop.
LOSS_POLICY = POLICY.model_copy(update={"max_loss_per_trade_usd": D(5)})
SHORT = Position("BTCUSDT", D("-0.0001"), D("80300"), D(1), stop_loss=D("81000"))


def with_stop(subject: Facts) -> Facts:
    return replace(subject, order=replace(subject.order, stop_loss=D("80500")), position=SHORT)


# Every rule on at once: the caps, the loss rules, and the pre-trade controls of issue 27, none of them
# breaking for the passing order (its stop inside the collar and the loss limit, the throttles and resting
# orders under their caps, no drawdown, cooldown or expiry, turnover room left).
EVERY_RULE = POLICY.model_copy(
    update={
        "max_loss_per_trade_usd": D(50),
        "max_loss_per_trade_pct": D(10),
        "require_stop_loss": True,
        "daily_loss_limit_usd": D(100),
        "daily_loss_limit_pct": D(10),
        "max_open_positions": 3,
        "trading_hours": (TradingWindow(start="00:00", end="23:59"),),
        "confirm": ConfirmRule(aboveNotionalUsd=D(1000)),
        "price_collar_pct": D(5),
        "price_collar_ticks": 5000,
        "max_order_messages_per_second": 5,
        "max_order_messages_per_minute": 60,
        "max_resting_orders": 10,
        "max_resting_orders_per_market": 5,
        "max_drawdown_usd": D(100),
        "max_drawdown_pct": D(10),
        "cooldown": Cooldown(afterLosses=3, minutes=30),
        "max_turnover_usd_per_day": D(10_000),
        "max_turnover_usd_24h": D(10_000),
        "valid_until": NOW + timedelta(days=1),
        "max_session_minutes": 480,
    }
)


def every_rule(subject: Facts) -> Facts:
    """The facts every rule reads, each inside its limit: a stop on the order, messages of the last minute,
    resting orders, the day's PnL, the peak equity, a cooldown long over, the turnover, the session's age."""
    return replace(
        subject,
        order=replace(subject.order, stop_loss=D("80600")),
        messages=tuple(timedelta(seconds=s) for s in (2, 9, 30)),
        resting=RestingOrders(1, 3),
        day_pnl=DayPnl(D(-5), D(2)),
        open_markets=frozenset({"ETHUSDT"}),
        drawdown=DrawdownState(D(1010), until=NOW + timedelta(hours=12)),
        cooldown=CooldownState(1, None),
        turnover=Turnover(D(500), D(800), NOW + timedelta(hours=3)),
        session_age=timedelta(minutes=20),
    )


def rate(label: str, subject: Facts, seconds: float = 1.5, policy: Policy = POLICY) -> float:
    """Evaluations per CPU second (printed with the rate per wall second)."""
    count, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            evaluate(policy, subject)
        count += 100
    per_cpu_second = count / (time.process_time() - cpu)
    per_second = count / (time.perf_counter() - start)
    print(f"{label:<54} {per_cpu_second:>10,.0f}/CPU s {per_second:>10,.0f}/s")
    return per_cpu_second


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    passing = rate("passing market sell (typical)", facts("0.0003"))
    rate("passing limit sell", facts("0.0003", OrderType.LIMIT))
    refused = rate("refused over the cap (with a size suggestion)", facts("0.0005"))
    rate(
        "passing with its stop, adding to a short (loss rule)", with_stop(facts("0.0002")), policy=LOSS_POLICY
    )
    every = every_rule(facts("0.0003"))
    assert evaluate(EVERY_RULE, every).passed, evaluate(EVERY_RULE, every).violations
    assert not evaluate(EVERY_RULE, replace(every, order=replace(every.order, qty=D("0.0005")))).passed
    all_passing = rate("every rule on: passing market sell with its stop", every, policy=EVERY_RULE)
    cut = replace(every, order=replace(every.order, qty=D("0.0005")))
    all_refused = rate("every rule on: refused over the cap (size search)", cut, policy=EVERY_RULE)
    print(f"typical passing order: {passing / 150_000:.2f}x the 150,000/s target")
    print(f"refusal with a size search: {refused / 8_000:.2f}x the 8,000/s target")
    print(f"every rule on, passing: {all_passing / 50_000:.2f}x the 50,000/s target")
    print(f"every rule on, a refusal with a size search: {all_refused / 5_000:.2f}x the 5,000/s target")


if __name__ == "__main__":
    main()
