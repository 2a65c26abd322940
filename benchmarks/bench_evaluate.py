"""Evaluations per second of the pure core on one core, for a typical policy.

Targets: >= 150,000/s for a typical passing order, >= 8,000/s for a refusal that searches the size that fits.
Counted per second of this process's CPU time (the figure to compare on a machine other processes share: a
second of wall time there holds less than a second of this core) and per second of wall time.
"""

from __future__ import annotations

import os
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
    print(f"typical passing order: {passing / 150_000:.2f}x the 150,000/s target")
    print(f"refusal with a size search: {refused / 8_000:.2f}x the 8,000/s target")


if __name__ == "__main__":
    main()
