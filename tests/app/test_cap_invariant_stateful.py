"""The cap invariant over sequences: no run of approved actions, fills, price moves, faults, restarts and a
second server leaves a position past a cap in its worst case.

A hypothesis state machine drives the real use cases (plan_order then place_order, close_position,
cancel_order) of two runtimes on one home (two servers: separate store connections, gates and leases) against
the real paper exchange, with faults on creates, resting orders that fill when the price moves, restarts,
time that passes, a wall clock that steps back or forward without time passing, the kill switch thrown by
either server's agent and turned off by the human, and the journal rolled back to an earlier copy of
itself. After every step it checks, from the exchange's own state and written apart from the core: with
every resting order on one side filled, the position stays within maxNotionalUsd. And no order that could
grow the position is sent while the kill switch is on, or after the journal was rolled back and before a
human turned the switch off (an order sent then only shrinks the position it meets).

Valuation: every approval valued the position at a price within the band the machine keeps prices in (the
start price +-3 %, limits within 2 % of the market), so the check values the worst case at the start price
and allows the band's width (TOLERANCE); the failures this guards against were twice the cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pilot.app.facts.pending import settle_sends
from pilot.app.human import desk, kill_switch
from pilot.app.orders import cancel_and_leverage, close, place, plan
from pilot.app.orders.inputs import PlanRequest
from pilot.app.runtime.runtime import Runtime
from pilot.app.service import upkeep as service
from pilot.core.facts import OrderType, Side
from pilot.paper import start_paper_exchange
from pilot.store.anchor import AnchorFile, anchor_path
from tests.scenarios import TEST_POLICY, article_scenario, policy_with

from .conftest import FakeClock, open_test_runtime

START = Decimal("80220")
CAP = Decimal(TEST_POLICY["maxNotionalUsd"])
STEP = Decimal("0.00001")
TOLERANCE = Decimal("1.06")  # (1 + 3 % price band) / (1 - 2 % limit distance), rounded up
CREATE = "/v5/order/create"
EXAMPLES = {"thorough": 300, "dev": 5}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 30)


ORDER = {
    "server": st.integers(0, 1),
    "side": st.sampled_from(list(Side)),
    "steps": st.integers(1, 40),
    "kind": st.sampled_from(["market", "near", "far"]),
    "reduce_only": st.booleans(),
}


def scenario() -> dict[str, Any]:
    world = article_scenario()
    world["prices"]["BTCUSDT"] = {"bid": str(START), "ask": str(START + Decimal("0.1")), "mark": str(START)}
    world["rateLimits"] = False
    return world


async def until_idle(paper: Any) -> None:
    """Wait (bounded) until the paper exchange holds no request: a latency fault holds one for 600 ms."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while paper.working and loop.time() < deadline:
        await asyncio.sleep(0.01)


class CapInvariant(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.home = Path(tempfile.mkdtemp(prefix="pilot-invariant-"))
        (self.home / "policy.json").write_text(json.dumps(policy_with(dailyOrderCap=1000)))
        self.paper = start_paper_exchange(scenario())
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.stack = contextlib.AsyncExitStack()
        self.runtimes: list[Runtime] = []
        self.price = START
        self.story: list[str] = []  # what happened, for the failure message (replays can differ in timing)
        self.stopped = False  # the kill switch is on, or the journal was rolled back: only shrinking orders
        self.copy: Path | None = None  # an earlier copy of the journal, to roll back to
        self.copied_up_to = 0

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    @initialize()
    def open_two_servers(self) -> None:
        for timeout in (0.3, 10):  # the first gives up on slow creates: unknown outcomes
            runtime = self.run(self.stack.enter_async_context(self._open(timeout)))
            self.runtimes.append(runtime)

    def _open(self, timeout: float) -> Any:
        return open_test_runtime(self.home, self.paper, self.clock, timeout_seconds=timeout)

    # ---- actions -----------------------------------------------------------------------------------

    @rule(**ORDER)
    def order(self, server: int, side: Side, steps: int, kind: str, reduce_only: bool) -> None:
        price = None
        if kind != "market":
            distance = Decimal("0.002") if kind == "near" else Decimal("0.015")
            towards = -1 if side is Side.BUY else 1  # resting on its own side of the market
            price = (self.price * (1 + towards * distance)).quantize(Decimal("0.1"))
        order_type = OrderType.MARKET if price is None else OrderType.LIMIT
        request = PlanRequest("BTCUSDT", side, order_type, steps * STEP, None, price, reduce_only, "linear")
        runtime = self.runtimes[server]
        planned = self.run(plan.plan_order(runtime, request))
        said = [
            f"{server}: {side.value} {steps * STEP} {kind} reduce_only={reduce_only} at {price}: {planned.status}"
        ]
        if planned.status == "ok" and planned.plan_id is not None:
            held = self.paper.position("BTCUSDT").size
            creates = self.paper.request_count(CREATE)
            placed = self.run(place.place_order(runtime, planned.plan_id))
            said.append(f"placed {placed.status}")
            if self.stopped and self.paper.request_count(CREATE) > creates:
                event("an order sent while growing was stopped")
                shrinks = (held > 0 and side is Side.SELL) or (held < 0 and side is Side.BUY)
                assert shrinks and steps * STEP <= abs(held), (held, side, steps, self.story + said)
        self.story.append(" ".join(said))

    @rule(**ORDER)
    def another_order(self, server: int, side: Side, steps: int, kind: str, reduce_only: bool) -> None:
        """Orders are what can break a cap: they come up twice as often as any other step."""
        self.order(server, side, steps, kind, reduce_only)

    @rule(server=st.integers(0, 1), part=st.sampled_from([None, "0.0001"]))
    def close(self, server: int, part: str | None) -> None:
        amount = Decimal(part) if part else None
        closed = self.run(close.close_position(self.runtimes[server], "BTCUSDT", amount))
        self.story.append(f"{server}: close {part}: {closed.status} cancelled {closed.cancelled_first}")

    @rule(server=st.integers(0, 1), pick=st.integers(0, 10))
    def cancel(self, server: int, pick: int) -> None:
        resting = self.paper.open_orders("BTCUSDT")
        if resting:
            order = resting[pick % len(resting)]
            done = self.run(
                cancel_and_leverage.cancel_order(self.runtimes[server], "BTCUSDT", order.order_id, None)
            )
            self.story.append(f"{server}: cancel {order.side} {order.qty}: {done.status}")

    @rule(move=st.integers(-15, 15))
    def move_price(self, move: int) -> None:
        """Up to 1.5 % a step, kept within 3 % of the start; resting orders the quote crosses fill."""
        price = self.price * (1 + Decimal(move) / 1000)
        self.price = min(max(price, START * Decimal("0.97")), START * Decimal("1.03")).quantize(
            Decimal("0.1")
        )
        self.paper.set_prices("BTCUSDT", bid=self.price, ask=self.price + Decimal("0.1"), mark=self.price)
        self.story.append(f"price {self.price}")

    @rule(kind=st.sampled_from(["drop", "latency", "http_5xx", "processing", "non_json"]))
    def fault_on_the_next_create(self, kind: str) -> None:
        self.paper.add_fault(CREATE, kind, delay_ms=600 if kind == "latency" else 0)
        self.story.append(f"fault {kind}")

    @rule(seconds=st.sampled_from([1, 30, 90, 400]))
    def time_passes(self, seconds: int) -> None:
        """Pilot's clock jumps; real time would have let the exchange answer what it holds, so it does first.

        (Otherwise a create held past a five-minute jump would land after Pilot, rightly by its own clock,
        gave it up as never executed: no real exchange accepts a request minutes after it was signed.)
        """
        self.run(until_idle(self.paper))
        self.clock.advance(seconds)
        self.story.append(f"+{seconds} s")

    @rule(seconds=st.sampled_from([-3600, -61, -5, 5, 61, 3600]))
    def wall_clock_steps(self, seconds: int) -> None:
        """An NTP correction or `date -s`: the wall clock moves, no time passes (plans, leases and sends
        keep their ages on the store's clock)."""
        self.clock.step(seconds)
        self.story.append(f"wall clock {seconds:+} s")

    @rule(server=st.integers(0, 1))
    def agent_throws_the_kill_switch(self, server: int) -> None:
        self.run(kill_switch.activate_kill_switch(self.runtimes[server], "stop"))
        self.stopped = True
        self.story.append(f"{server}: kill switch on")

    @precondition(lambda self: self.stopped)
    @rule()
    def human_turns_the_kill_switch_off(self) -> None:
        """`pilot kill-switch off`: its own store connection, which first journals any rollback it finds."""
        self.run(self._human_off())
        self.stopped = False
        self.story.append("human: kill switch off")

    async def _human_off(self) -> None:
        async with desk.open_desk(self.home, clock=self.clock) as human:
            await kill_switch.set_kill_switch_by_human(human, False, "looked")

    @rule()
    def copy_the_journal(self) -> None:
        self.copy = self.home.parent / f"{self.home.name}-copy.db"
        with sqlite3.connect(self.home / "journal" / "pilot.db") as live, sqlite3.connect(self.copy) as copy:
            live.backup(copy)
            self.copied_up_to = live.execute("SELECT COALESCE(MAX(seq), 0) FROM journal").fetchone()[0]
        self.story.append(f"journal copied up to {self.copied_up_to}")

    @precondition(lambda self: self.copy is not None)
    @rule()
    def roll_the_journal_back(self) -> None:
        """Someone restores the earlier copy over the live journal while both servers run. When it takes
        away an entry the journal was anchored at (a durable one: a send, the kill switch), growing stops."""
        assert self.copy is not None
        opened = self.runtimes[0].store.opened
        anchored = AnchorFile(anchor_path(opened.key_path, self.home), self.home).read()
        with sqlite3.connect(self.copy) as copy, sqlite3.connect(self.home / "journal" / "pilot.db") as live:
            copy.backup(live)
        lost = anchored is not None and anchored.seq > self.copied_up_to
        event(f"a rollback that lost anchored entries: {lost}")
        self.stopped = self.stopped or lost
        self.story.append(f"journal rolled back to {self.copied_up_to} (anchored at {anchored}): lost {lost}")

    @rule(server=st.integers(0, 1))
    def upkeep(self, server: int) -> None:
        self.run(service.upkeep(self.runtimes[server]))

    @precondition(lambda self: len(self.runtimes) == 2)
    @rule()
    def restart_the_first_server(self) -> None:
        """Close it (waiting for its sends) and start it again on the same home."""
        old = self.runtimes[0]
        self.run(old.gate.drain())
        self.run(self.stack.aclose())
        self.stack = contextlib.AsyncExitStack()
        self.runtimes = [self.run(self.stack.enter_async_context(self._open(t))) for t in (0.3, 10)]
        self.run(settle_sends(self.runtimes[0]))
        self.story.append("restart")

    # ---- the invariant ------------------------------------------------------------------------------

    @invariant()
    def no_worst_case_past_the_cap(self) -> None:
        if not self.runtimes:
            return
        position = self.paper.position("BTCUSDT").size
        buys = sells = Decimal(0)
        for order in self.paper.open_orders("BTCUSDT"):
            if not order.reduce_only:
                left = order.qty - order.cum_exec_qty
                buys, sells = (buys + left, sells) if order.side == "Buy" else (buys, sells + left)
        worst = max(abs(position + buys), abs(position - sells))
        assert worst * START <= CAP * TOLERANCE, (position, buys, sells, self.story)

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            for runtime in self.runtimes:
                self.run(runtime.gate.drain())
            self.run(self.stack.aclose())
        self.loop.close()
        self.paper.stop()
        shutil.rmtree(self.home, ignore_errors=True)
        if self.copy is not None:
            self.copy.unlink(missing_ok=True)


CapInvariant.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None)
TestCapInvariant = CapInvariant.TestCase
