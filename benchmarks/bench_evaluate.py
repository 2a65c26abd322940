"""Evaluations per second of the pure core on one core, for a typical policy (target >= 50,000/s)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal as D

from pilot.core.evaluate import evaluate
from pilot.core.facts import (
    Facts,
    InstrumentRules,
    OrderIntent,
    OrderType,
    Position,
    Side,
    Touch,
    TradingState,
)
from pilot.core.policy import Policy

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


def rate(label: str, subject: Facts, seconds: float = 1.5, policy: Policy = POLICY) -> float:
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            evaluate(policy, subject)
        count += 500
    per_second = count / (time.perf_counter() - start)
    print(f"{label:<54} {per_second:>10,.0f} evaluations/s")
    return per_second


def main() -> None:
    passing = rate("passing market sell (typical)", facts("0.0003"))
    rate("passing limit sell", facts("0.0003", OrderType.LIMIT))
    rate("refused over the cap (with a size suggestion)", facts("0.0005"))
    rate(
        "passing with its stop, adding to a short (loss rule)", with_stop(facts("0.0002")), policy=LOSS_POLICY
    )
    print(f"target 50,000/s for a typical passing order: {passing / 50_000:.2f}x the target")


if __name__ == "__main__":
    main()
