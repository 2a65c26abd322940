"""The stop invariant over sequences (issue 23): whatever an agent does and however the price moves, the loss
at each position's stops stays within maxLossPerTradeUsd, and under requireStopLoss every position has a
stop from its fill on.

A hypothesis state machine drives the real use cases (plan_order then place_order, and the next safe action
of a refusal replayed as an agent would; plan_amend; cancel_order on any open order, stop orders included;
cancel_all_orders with and without the stops; set_trading_stop nearer, farther or removed; close_position;
restarts) against the real paper exchange, whose price moves along random paths so resting orders fill and
stops and take-profits trigger. After every step it checks the exchange's own account, with the loss at the
stops restated here (`loss_at_stops`), apart from pilot.core.stops: the position runs from its entry through
its stops in the order they trigger, each closing what it covers, taker fees both ways (Bybit's standard
0.055 %: what Pilot judged at; a maker fill costs less, so the account's real loss is no larger).

One exception, by design: without requireStopLoss a position may be opened without a stop, and a stop added
to it later is never refused (it only limits a loss that was unbounded), even one beyond the cap; from then
on a stop may only move closer or within the cap. Such a position is exempt until it is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pybit.exceptions import InvalidRequestError

from pilot.app.orders import amend, cancel_and_leverage, close, place, plan, protection
from pilot.app.orders.inputs import PlanRequest
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import OrderType, Side
from pilot.paper import start_paper_exchange
from tests.exchange.conftest import raw_session
from tests.scenarios import TEST_POLICY, article_scenario

from .conftest import FakeClock, open_test_runtime

SYMBOL = "ETHUSDT"
START = Decimal("3100.00")
TICK = Decimal("0.01")
STEP = Decimal("0.001")
TAKER = Decimal("0.00055")
EXAMPLES = {"thorough": 200, "dev": 5}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 20)


def loss_at_stops(
    size: Decimal, entry: Decimal, whole: Decimal | None, legs: list
) -> tuple[Decimal, Decimal]:
    """(what the stops let the position lose, the quantity no stop closes), restated: the price runs from the
    entry against the position; the stops nearest it trigger first; the whole stop closes all that is left."""
    long = size > 0
    triggers = [(price, qty) for price, qty in legs] + ([(whole, None)] if whole is not None else [])
    triggers.sort(key=lambda t: (-t[0] if long else t[0], t[1] is not None))
    left, loss = abs(size), Decimal(0)
    for price, qty in triggers:
        if left == 0:
            break
        closing = left if qty is None else min(qty, left)
        loss += closing * ((entry - price if long else price - entry) + TAKER * (entry + price))
        left -= closing
    return loss, left


def scenario() -> dict[str, Any]:
    world = article_scenario()
    world["prices"][SYMBOL] = {"bid": str(START), "ask": str(START + TICK), "mark": str(START)}
    world["balances"] = {"USDT": "20000"}
    world["rateLimits"] = False
    return world


class StopInvariant(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.home = Path(tempfile.mkdtemp(prefix="pilot-stops-"))
        self.paper = start_paper_exchange(scenario())
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.stack = contextlib.AsyncExitStack()
        self.runtime: Runtime | None = None
        self.price = START
        self.cap = Decimal(5)
        self.require = False
        self.story: list[str] = []
        self.unprotected = False  # this position has been without any stop since it opened

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    @initialize(cap=st.sampled_from([2, 5, 20]), require=st.booleans())
    def open_server(self, cap: int, require: bool) -> None:
        self.cap, self.require = Decimal(cap), require
        policy = {
            **TEST_POLICY,
            "allowedMarkets": [SYMBOL],
            "maxNotionalUsd": 3000,
            "maxOrderNotionalUsd": 3000,
            "maxLeverage": 10,
            "minLiquidationDistancePct": 5,
            "dailyOrderCap": 1000,
            "maxLossPerTradeUsd": cap,
            "requireStopLoss": require,
        }
        (self.home / "policy.json").write_text(json.dumps(policy))
        self._open()
        self.story.append(f"cap {cap} requireStopLoss {require}")

    def _open(self) -> None:
        self.runtime = self.run(
            self.stack.enter_async_context(open_test_runtime(self.home, self.paper, self.clock))
        )

    # ---- what an agent does ------------------------------------------------------------------------

    @rule(
        side=st.sampled_from(list(Side)),
        steps=st.integers(1, 300),
        kind=st.sampled_from(["market", "near", "far"]),
        stop_ticks=st.none() | st.integers(20, 3_000) | st.integers(3_000, 40_000),
        follow=st.booleans(),
    )
    def order(self, side: Side, steps: int, kind: str, stop_ticks: int | None, follow: bool) -> None:
        price = None
        if kind != "market":
            distance = Decimal("0.001") if kind == "near" else Decimal("0.01")
            price = (self.price * (1 - side.sign * distance)).quantize(TICK)
        reference = price or self.price
        stop = None
        if stop_ticks is not None:
            stop = reference - side.sign * stop_ticks * TICK
            stop = stop if stop > 0 else None
        order_type = OrderType.MARKET if price is None else OrderType.LIMIT
        request = PlanRequest(SYMBOL, side, order_type, steps * STEP, None, price, False, "linear", stop)
        assert self.runtime is not None
        planned = self.run(plan.plan_order(self.runtime, request))
        said = f"{side.value} {steps * STEP} {kind} stop {stop}: {planned.status}"
        action = planned.next_safe_action
        if planned.status == "refused" and follow and action is not None and action.tool == "plan_order":
            planned = self.run(plan.plan_order(self.runtime, PlanRequest.parse(action.args or {})))
            said += f" -> next action {action.args}: {planned.status}"
        if planned.status == "ok" and planned.plan_id is not None:
            said += f" placed {self.run(place.place_order(self.runtime, planned.plan_id)).status}"
        self.story.append(said)

    @rule(pick=st.integers(0, 10), factor=st.sampled_from(["0.5", "2", "10"]), move=st.integers(-20, 20))
    def amend_one(self, pick: int, factor: str, move: int) -> None:
        resting = [o for o in self.paper.open_orders(SYMBOL) if not o.stop_order_type]
        if not resting:
            return
        order = resting[pick % len(resting)]
        qty = max((order.qty * Decimal(factor)).quantize(STEP), STEP)
        price = (order.price * (1 + Decimal(move) / 1000)).quantize(TICK)
        assert self.runtime is not None
        ask = amend.AmendAsk(SYMBOL, order.order_id, None, qty, price)
        planned = self.run(amend.plan_amend(self.runtime, ask))
        said = f"amend {order.qty}@{order.price} to {qty}@{price}: {planned.status}"
        if planned.status == "ok" and planned.plan_id is not None:
            said += f" placed {self.run(place.place_order(self.runtime, planned.plan_id)).status}"
        self.story.append(said)

    @rule(pick=st.integers(0, 10))
    def cancel_one(self, pick: int) -> None:
        resting = self.paper.open_orders(SYMBOL) + self.paper.waiting_orders(SYMBOL)
        if not resting:
            return
        order = resting[pick % len(resting)]
        assert self.runtime is not None
        done = self.run(cancel_and_leverage.cancel_order(self.runtime, SYMBOL, order.order_id, None))
        self.story.append(
            f"cancel {order.side} {order.qty} {order.stop_order_type or 'order'}: {done.status}"
        )

    @rule(include_stops=st.booleans())
    def cancel_all(self, include_stops: bool) -> None:
        assert self.runtime is not None
        done = self.run(
            protection.cancel_all_orders(self.runtime, SYMBOL, "linear", include_stops=include_stops)
        )
        self.story.append(f"cancel all (stops {include_stops}): {done.status}")

    @rule(ticks=st.none() | st.integers(-20_000, 20_000))
    def move_stop(self, ticks: int | None) -> None:
        position = self.paper.position(SYMBOL)
        if position.size == 0:
            return
        current = position.stop_loss or position.avg_price
        new = Decimal(0) if ticks is None else max(current + ticks * TICK, TICK)
        assert self.runtime is not None
        done = self.run(protection.set_trading_stop(self.runtime, SYMBOL, new, None))
        self.story.append(f"stop {position.stop_loss} -> {new}: {done.status}")

    @rule(part=st.sampled_from([None, "0.01"]))
    def close_some(self, part: str | None) -> None:
        assert self.runtime is not None
        closed = self.run(close.close_position(self.runtime, SYMBOL, Decimal(part) if part else None))
        self.story.append(f"close {part}: {closed.status}")

    @rule(ticks=st.integers(10, 20_000), part=st.sampled_from(["0.001", "0.01", "0.05"]))
    def human_adds_a_partial_stop(self, ticks: int, part: str) -> None:
        """A human sets a partial stop-loss in the exchange's app (trading-stop, tpslMode Partial): Pilot
        sees it as one of the position's legs. It only ever limits the loss."""
        position = self.paper.position(SYMBOL)
        if position.size == 0 or Decimal(part) > abs(position.size):
            return
        long = position.size > 0
        stop = self.price - ticks * TICK if long else self.price + ticks * TICK
        if stop <= 0:
            return
        session = raw_session(self.paper)
        try:
            session.set_trading_stop(
                category="linear", symbol=SYMBOL, tpslMode="Partial", positionIdx=0,
                stopLoss=str(stop), slSize=part,
            )  # fmt: skip
            said = "done"
        except InvalidRequestError as refused:  # e.g. the stop on the wrong side of the last price
            said = f"refused {refused.status_code}"
        finally:
            session.client.close()
        self.story.append(f"human partial stop {part} at {stop}: {said}")

    # ---- what the market and the machine do -------------------------------------------------------

    @rule(moves=st.lists(st.integers(-30, 30), min_size=1, max_size=8))
    def price_walks(self, moves: list[int]) -> None:
        """A path of up to eight steps of up to 3 % each, kept within 15 % of the start: resting orders it
        crosses fill, stops and take-profits it reaches trigger."""
        for move in moves:
            price = self.price * (1 + Decimal(move) / 1000)
            self.price = min(max(price, START * Decimal("0.85")), START * Decimal("1.15")).quantize(TICK)
            self.paper.set_prices(SYMBOL, bid=self.price, ask=self.price + TICK, mark=self.price)
        self.story.append(f"price {self.price}")

    @rule()
    def restart(self) -> None:
        assert self.runtime is not None
        self.run(self.runtime.gate.drain())
        self.run(self.stack.aclose())
        self.stack = contextlib.AsyncExitStack()
        self._open()
        self.story.append("restart")

    # ---- the invariant ------------------------------------------------------------------------------

    @invariant()
    def every_position_within_the_cap_at_its_stops(self) -> None:
        if self.runtime is None:
            return
        position = self.paper.position(SYMBOL)
        if position.size == 0:
            return
        legs = [
            (o.trigger_price, o.qty - o.cum_exec_qty)
            for o in self.paper.waiting_orders(SYMBOL)
            if o.stop_order_type == "PartialStopLoss"
        ]
        whole = position.stop_loss or None
        loss, uncovered = loss_at_stops(position.size, position.avg_price, whole, legs)
        if self.require:
            assert whole is not None or legs, ("a position without a stop", position, self.story)
        if uncovered == abs(position.size):
            self.unprotected = True
        elif not self.unprotected:
            assert loss <= self.cap, (loss, self.cap, position, legs, self.story)

    @invariant()
    def flat_forgets(self) -> None:
        """A position that was once without any stop (allowed without requireStopLoss) may be given one that
        loses more than the cap: adding a stop only ever limits the loss, and is never refused. The cap holds
        again from the next position on."""
        if self.paper.position(SYMBOL).size == 0:
            self.unprotected = False

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            if self.runtime is not None:
                self.run(self.runtime.gate.drain())
            self.run(self.stack.aclose())
        self.loop.close()
        self.paper.stop()
        shutil.rmtree(self.home, ignore_errors=True)


StopInvariant.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=25, deadline=None)
test_the_loss_at_every_positions_stops_stays_within_the_cap = StopInvariant.TestCase
