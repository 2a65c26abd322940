"""Two server processes on one home judge and send one at a time: caps and the daily cap hold across them.

Issue 11, part 3: two `pilot serve` processes on one home broke maxNotionalUsd in 20 of 20 races with 300 ms
of exchange latency, and dailyOrderCap by one order in 5 of 13 runs. Each round here starts a fresh home and
paper exchange, lets two worker processes plan an order each, releases both place_orders at once, and
checks the caps on what the exchange holds afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pilot.paper import start_paper_exchange
from tests.scenarios import article_scenario

from .conftest import write_policy

ROUNDS = int(os.environ.get("PILOT_RACE_ROUNDS", "6")) * int(os.environ.get("PILOT_SOAK_SCALE", "1"))
LATENCY_MS = float(os.environ.get("PILOT_RACE_LATENCY_MS", "100"))

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from decimal import Decimal
    from pathlib import Path
    from pilot.app.road.clock import SystemClock
    from pilot.app.orders.inputs import PlanRequest
    from pilot.app.orders.place import place_order
    from pilot.app.orders.plan import plan_order
    from pilot.app.runtime.runtime import Home, assemble_runtime
    from pilot.core.facts import OrderType, Side
    from pilot.store import open_store
    from tests.venue import connect_adapter

    async def one_round(home, url, key, secret, qty):
        adapter = connect_adapter(url, key, secret)
        store = await open_store(Home(Path(home)).database_path)
        runtime = assemble_runtime(Path(home), store, adapter, SystemClock())
        try:
            request = PlanRequest("BTCUSDT", Side.SELL, OrderType.MARKET, Decimal(qty), None, None, False, "linear")
            plan = await plan_order(runtime, request)
            print(json.dumps({"planned": plan.status}), flush=True)
            await asyncio.to_thread(sys.stdin.readline)  # "go": both place at once
            if plan.plan_id is None:
                answer = {"status": "refused at plan"}
            else:
                answer = (await place_order(runtime, plan.plan_id)).model_dump(mode="json")
            print(json.dumps({"placed": answer["status"]}), flush=True)
        finally:
            await store.close()
            await adapter.close()

    async def main():
        while line := await asyncio.to_thread(sys.stdin.readline):
            await one_round(*json.loads(line))

    asyncio.run(main())
    """
)


class Worker:
    """A separate Python process that serves one home like `pilot serve` would, round after round."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the worker died"
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def workers() -> Any:
    pair = (Worker(), Worker())
    yield pair
    for worker in pair:
        worker.close()


def race(workers: tuple[Worker, Worker], home: Path, qty: str, latency_ms: float) -> tuple[Any, list[str]]:
    """One round: both plan, then both place at once. Returns the exchange's position and the answers."""
    scenario = article_scenario()
    scenario["prices"]["BTCUSDT"] = {"bid": "80220", "ask": "80220.1", "mark": "80220"}
    scenario["latencyMs"] = {"*": latency_ms}
    scenario["rateLimits"] = False
    with start_paper_exchange(scenario) as paper:
        for worker in workers:
            worker.send(json.dumps([str(home), paper.url, paper.api_key, paper.api_secret, qty]))
        planned = [worker.read()["planned"] for worker in workers]
        assert planned == ["ok", "ok"], planned  # each fits alone
        for worker in workers:
            worker.send("go")
        placed = [worker.read()["placed"] for worker in workers]
        return paper.position("BTCUSDT"), placed


@pytest.mark.soak
def test_two_processes_never_break_the_position_cap_together(tmp_path: Path, workers: Any) -> None:
    breaches = []
    for round_number in range(ROUNDS):
        home = tmp_path / f"round-{round_number}"
        home.mkdir()
        write_policy(home)  # $25 per market; each worker's short is $16
        position, placed = race(workers, home, "0.0002", LATENCY_MS)
        if abs(position.size) * Decimal("80220") > 25:
            breaches.append((round_number, position.size, placed))
        assert sorted(placed) == ["filled", "refused"], placed
    assert breaches == []


@pytest.mark.soak
def test_two_processes_never_send_past_the_daily_order_cap(tmp_path: Path, workers: Any) -> None:
    for round_number in range(ROUNDS):
        home = tmp_path / f"round-{round_number}"
        home.mkdir()
        write_policy(home, dailyOrderCap=1, maxNotionalUsd=1000, maxOrderNotionalUsd=1000)
        position, placed = race(workers, home, "0.0001", LATENCY_MS)
        assert sorted(placed) == ["filled", "refused"], placed
        assert position.size == Decimal("-0.0001")
