"""The loss promises over sequences (issue 36), spot and linear on one coin: whatever an agent does (orders
with and without stops, flips, limit orders that rest, amends, stops moved, closes, reads) and however the
price moves, no closed trade loses more than maxLossPerTradeUsd, and the day loses past dailyLossLimitUsd
only what was already at risk when trading stopped growing, each plus the slippage the docs allow
(docs/policy.md, "What a stop bounds": a stop is a trigger, and its market order fills where the price is).

A hypothesis state machine drives Pilot's use cases (plan_order then place_order, the next safe action of a
refusal replayed as an agent would, plan_amend, set_trading_stop, close_position, get_policy) and the
server's upkeep after every call and every second of price (what `pilot serve` runs: the latch's sweep of
what rests among it), against the real paper exchange on loopback. The oracles read only the exchange's
own account and records, restated here apart from pilot.core:

* **Per trade.** On linear, each closed-PnL row (what one order closed); on spot, each buy with a stop and
  the sell its stop made (bound by the exchange: the stop's parent), set against what that buy cost; a buy
  without a stop can lose its whole cost. Each loses at most the cap, plus the slippage: the quantity times
  how far past its trigger the stop filled.
* **Per day.** The day's loss D is the account's equity at the start less its equity now (wallet, coin at
  the mid, the position's unrealised PnL); the risk R is what the account can still lose at its stops from
  the price now (a linear position down to its stop; spot coin down to the stop selling it, or to nothing).
  A price move, a stop or a reduction never raises D + R beyond the slippage and the fee of what traded;
  only growth does. So growth is held: the agent grows nothing once D is past the limit (Pilot's own count
  leaves out the fee of opening the position still open: that much is allowed), and nothing resting grows
  a position in a move that began with a latch holding (daily loss, drawdown, cooldown).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pilot.app.facts import reads
from pilot.app.orders import amend, close, place, plan, protection
from pilot.app.orders.inputs import PlanRequest
from pilot.app.runtime.latches import holding_latch
from pilot.app.runtime.runtime import Runtime
from pilot.app.service.upkeep import upkeep
from pilot.core.facts import OrderType, Side
from pilot.paper import start_paper_exchange
from tests.scenarios import TEST_POLICY, article_scenario

from .conftest import FakeClock, open_test_runtime

SYMBOL = "BTCUSDT"
START = Decimal("80000.0")
TICK = Decimal("0.1")
LINEAR_STEP, SPOT_STEP = Decimal("0.00001"), Decimal("0.000001")
TAKER = Decimal("0.00055")  # the scenario's taker fee, on both products
START_USDT = Decimal(5000)
CENT = Decimal("0.01")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES = {"thorough": 300, "dev": 5}.get(PROFILE, 15)  # the default: a few seconds
STEPS = {"thorough": 40}.get(PROFILE, 20)


ORDER = {  # an order an agent asks for: its side, size, price and stop
    "side": st.sampled_from(list(Side)),
    "lots": st.integers(1, 700),
    "kind": st.sampled_from(["market", "market", "near", "far"]),
    "stop_pct": st.none() | st.decimals("0.2", "1.5", places=1) | st.decimals("1.5", "5", places=1),
    "follow": st.booleans(),
}


def scenario() -> dict[str, Any]:
    world = article_scenario()
    world["prices"][SYMBOL] = {"bid": str(START), "ask": str(START + TICK), "mark": str(START)}
    world["balances"] = {"USDT": str(START_USDT)}
    world["rateLimits"] = False
    return world


def floor(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_DOWN) * step


class LossPromises(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.home = Path(tempfile.mkdtemp(prefix="pilot-loss-"))
        self.paper = start_paper_exchange(scenario())
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.stack = contextlib.AsyncExitStack()
        self.runtime: Runtime | None = None
        self.price = START
        self.cap = self.limit = Decimal(5)
        self.story: list[str] = []
        self.seen = 0  # the executions the day's check has accounted for

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    @initialize(
        cap=st.sampled_from([3, 5, 10]),
        limit=st.sampled_from([4, 8, 15]),
        require=st.booleans(),
        cooldown=st.booleans(),
        drawdown=st.sampled_from([None, 12]),
    )
    def open_server(self, cap: int, limit: int, require: bool, cooldown: bool, drawdown: int | None) -> None:
        self.cap, self.limit = Decimal(cap), Decimal(limit)
        policy: dict[str, Any] = {
            **TEST_POLICY,
            "allowedMarkets": [SYMBOL],
            "maxNotionalUsd": 600,
            "maxOrderNotionalUsd": 600,
            "maxLeverage": 10,
            "minLiquidationDistancePct": 5,
            "dailyOrderCap": 1000,
            "maxLossPerTradeUsd": cap,
            "dailyLossLimitUsd": limit,
            "requireStopLoss": require,
        }
        if cooldown:
            policy["cooldown"] = {"afterLosses": 2, "minutes": 30}
        if drawdown is not None:
            policy["maxDrawdownUsd"] = drawdown
        (self.home / "policy.json").write_text(json.dumps(policy))
        self.runtime = self.run(
            self.stack.enter_async_context(open_test_runtime(self.home, self.paper, self.clock))
        )
        self.story.append(f"cap {cap} limit {limit} require {require} cooldown {cooldown} dd {drawdown}")

    # ---- the oracle: the account, from the exchange's own records ------------------------------------

    def equity(self) -> Decimal:
        quote = self.paper.quote(SYMBOL)
        position = self.paper.position(SYMBOL)
        unrealised = position.size * (quote.mark - position.avg_price) if position.size else Decimal(0)
        return self.paper.balance("USDT") + self.paper.balance("BTC") * quote.mid + unrealised

    def day_loss(self) -> Decimal:
        return START_USDT - self.equity()

    def risk(self) -> Decimal:
        """What the account can still lose from the price now, at its stops (the exit's taker fee in)."""
        quote = self.paper.quote(SYMBOL)
        position = self.paper.position(SYMBOL)
        at_risk = Decimal(0)
        if position.size:
            stop = position.stop_loss
            assert stop, ("a linear position under the cap without a stop", position, self.story)
            side = 1 if position.size > 0 else -1
            at_risk += abs(position.size) * ((quote.mark - stop) * side + TAKER * stop)
        held = self.paper.balance("BTC")
        for leg in self._spot_stops(quote.mid):
            covered = min(leg.qty, held)
            at_risk += covered * (quote.mid - leg.trigger_price + TAKER * leg.trigger_price)
            held -= covered
        return at_risk + held * quote.mid  # coin no stop sells can fall to nothing

    def _spot_stops(self, mid: Decimal) -> list[Any]:
        legs = [o for o in self.paper.waiting_orders(SYMBOL) if o.category == "spot" and not o.is_buy]
        return sorted((o for o in legs if o.trigger_price < mid), key=lambda o: -o.trigger_price)

    def allowance(self, since: int) -> Decimal:
        """The slippage of the stops that filled since execution `since` (how far past its trigger each
        filled), and the taker fee of everything that traded: what D + R may rise by without growth."""
        allowed = CENT
        for fill in self.paper.executions()[since:]:
            order = fill.order
            if order.trigger_price:
                allowed += fill.qty * abs(order.trigger_price - fill.price)
            allowed += fill.qty * fill.price * TAKER * 2
        return allowed

    def opening_fee(self) -> Decimal:
        """What Pilot's count of the day leaves out that the equity has: the fee of opening the linear
        position still open (closed PnL counts it once the position closes)."""
        position = self.paper.position(SYMBOL)
        return abs(position.size) * position.avg_price * TAKER + CENT * 5

    def latched(self) -> bool:
        assert self.runtime is not None
        now = self.runtime.now()
        state = self.run(self.runtime.ledger.state(now))
        return holding_latch(self.runtime.policy().policy, state, now) is not None

    # ---- a step: an agent's call, then the server's upkeep a second later ------------------------------

    def step(self, said: str, call: Any) -> None:
        """Run one agent call, checked: growth (D + R rising past the allowance) only while the day's loss is
        within the limit as Pilot counts it."""
        before, since = self.day_loss(), len(self.paper.executions())
        exposure = before + self.risk()
        tolerance = self.opening_fee()
        said += f": {self.run(call)}"
        self.story.append(said)
        grew = self.day_loss() + self.risk() - exposure > self.allowance(since)
        assert not (grew and before >= self.limit + tolerance), (
            "grew past the day's limit",
            before,
            self.story,
        )
        self.upkeep()

    def upkeep(self) -> None:
        assert self.runtime is not None
        self.run(upkeep(self.runtime))
        self.clock.advance(1)

    # ---- what an agent does ------------------------------------------------------------------------

    @rule(**ORDER)
    def linear_order(self, side: Side, lots: int, kind: str, stop_pct: Decimal | None, follow: bool) -> None:
        self.order("linear", side, lots * LINEAR_STEP, kind, stop_pct, follow)

    @rule(**ORDER)
    def spot_order(self, side: Side, lots: int, kind: str, stop_pct: Decimal | None, follow: bool) -> None:
        qty = lots * SPOT_STEP * 10
        if side is Side.SELL:
            qty = min(qty, floor(self.paper.balance("BTC"), SPOT_STEP))
            if qty <= 0:
                return
        self.order("spot", side, qty, kind, stop_pct if side is Side.BUY else None, follow)

    def order(
        self, category: str, side: Side, qty: Decimal, kind: str, stop_pct: Decimal | None, follow: bool
    ) -> None:
        """An order at the market, or a limit 0.2 % or 1 % inside it (it rests), with a stop that far from
        its price or none; when refused, the next safe action followed or not."""
        price = None
        if kind != "market":
            inside = Decimal("0.002" if kind == "near" else "0.01")
            price = (self.price * (1 - side.sign * inside)).quantize(TICK)
        stop = None
        if stop_pct is not None:
            stop = ((price or self.price) * (1 - side.sign * stop_pct / 100)).quantize(TICK)
        order_type = OrderType.MARKET if price is None else OrderType.LIMIT
        request = PlanRequest(SYMBOL, side, order_type, qty, None, price, False, category, stop)
        self.step(f"{category} {side.value} {qty} {kind} stop {stop}", self._plan_and_place(request, follow))

    async def _plan_and_place(self, request: PlanRequest, follow: bool) -> str:
        assert self.runtime is not None
        planned = await plan.plan_order(self.runtime, request)
        said = planned.status
        action = planned.next_safe_action
        if planned.status == "refused" and follow and action is not None and action.tool == "plan_order":
            planned = await plan.plan_order(self.runtime, PlanRequest.parse(action.args or {}))
            said += f" -> next {action.args}: {planned.status}"
        if planned.status == "ok" and planned.plan_id is not None:
            said += f" placed {(await place.place_order(self.runtime, planned.plan_id)).status}"
        return said

    def resting(self) -> list[Any]:
        return [o for o in self.paper.open_orders(SYMBOL) if not o.stop_order_type]

    def holding(self) -> bool:
        return self.paper.position(SYMBOL).size != 0 or self.paper.balance("BTC") > 0

    @precondition(lambda self: bool(self.resting()))
    @rule(pick=st.integers(0, 10), factor=st.sampled_from(["0.5", "2", "5"]), move=st.integers(-15, 15))
    def amend_one(self, pick: int, factor: str, move: int) -> None:
        resting = self.resting()
        order = resting[pick % len(resting)]
        step = LINEAR_STEP if order.category == "linear" else SPOT_STEP
        qty = max((order.qty * Decimal(factor)).quantize(step), step)
        price = (order.price * (1 + Decimal(move) / 1000)).quantize(TICK)
        ask = amend.AmendAsk(SYMBOL, order.order_id, None, qty, price, order.category)
        self.step(
            f"amend {order.category} {order.side} {order.qty}@{order.price} to {qty}@{price}",
            self._amend(ask),
        )

    async def _amend(self, ask: amend.AmendAsk) -> str:
        assert self.runtime is not None
        planned = await amend.plan_amend(self.runtime, ask)
        if planned.status == "ok" and planned.plan_id is not None:
            return f"placed {(await place.place_order(self.runtime, planned.plan_id)).status}"
        return planned.status

    @precondition(lambda self: self.paper.position(SYMBOL).size != 0)
    @rule(pct=st.none() | st.decimals("-3", "3", places=1))
    def move_stop(self, pct: Decimal | None) -> None:
        position = self.paper.position(SYMBOL)
        current = position.stop_loss or position.avg_price
        new = Decimal(0) if pct is None else (current * (1 + pct / 100)).quantize(TICK)
        assert self.runtime is not None
        call = protection.set_trading_stop(self.runtime, SYMBOL, new, None)
        self.step(f"stop {position.stop_loss} -> {new}", self._status(call))

    @precondition(holding)
    @rule(category=st.sampled_from(["linear", "spot"]), half=st.booleans())
    def close_some(self, category: str, half: bool) -> None:
        if category == "linear":
            held = abs(self.paper.position(SYMBOL).size)
            qty = floor(held / 2, LINEAR_STEP) if half else None
        else:
            qty = floor(self.paper.balance("BTC") / 2, SPOT_STEP) if half else None
        if qty is not None and qty <= 0:
            return
        assert self.runtime is not None
        call = close.close_position(self.runtime, SYMBOL, qty, category)
        self.step(f"close {category} {qty or 'all'}", self._status(call))

    @rule()
    def read_policy(self) -> None:
        """get_policy: it reads the day's loss and the equity, and latches as a judgement would."""
        assert self.runtime is not None
        self.step("get_policy", self._status(reads.get_policy(self.runtime)))

    @staticmethod
    async def _status(call: Any) -> str:
        return str((await call).status)

    # ---- what the market does ---------------------------------------------------------------------

    @rule(moves=st.lists(st.integers(-10, 10), min_size=1, max_size=8))
    def price_walks(self, moves: list[int]) -> None:
        """Up to eight moves of up to 1 % each, a second apart, kept within 15 % of the start: resting orders
        fill, stops trigger. A move that began with a latch holding grows nothing."""
        for move in moves:
            held, since = self.latched(), len(self.paper.executions())
            exposure = self.day_loss() + self.risk()
            price = self.price * (1 + Decimal(move) / 1000)
            self.price = min(max(price, START * Decimal("0.85")), START * Decimal("1.15")).quantize(TICK)
            self.paper.set_prices(SYMBOL, bid=self.price, ask=self.price + TICK, mark=self.price)
            grew = self.day_loss() + self.risk() - exposure > self.allowance(since)
            assert not (grew and held), ("a resting order grew under a latch", self.price, self.story)
            self.upkeep()
        self.story.append(f"price {self.price}")

    # ---- per trade --------------------------------------------------------------------------------

    @invariant()
    def no_linear_trade_loses_more_than_the_cap(self) -> None:
        orders = {o.order_id: o for o in self.paper.orders(SYMBOL)}
        for row in self.paper.closed_pnl():
            order = orders[row.order_id]
            slipped = Decimal(0)
            if order.trigger_price:
                slipped = row.closed_size * abs(order.trigger_price - row.avg_exit_price)
            assert -row.closed_pnl <= self.cap + slipped + CENT, (row, slipped, self.story)

    @invariant()
    def no_spot_trade_loses_more_than_the_cap(self) -> None:
        """Each spot buy against what its own stop's sells fetched; a buy with no stop risks its cost."""
        fills = [f for f in self.paper.executions() if f.order.category == "spot"]
        for buy in {f.order.order_id: f.order for f in fills if f.order.is_buy}.values():
            mine = [f for f in fills if f.order is buy]
            cost = sum((f.qty * f.price for f in mine), Decimal(0))
            got = sum((f.qty - (f.fee if f.fee_coin == "BTC" else 0) for f in mine), Decimal(0))
            if not buy.stop_loss:
                assert cost <= self.cap + CENT, ("a spot buy without a stop past the cap", buy, self.story)
                continue
            for sell in [f for f in fills if f.order.pair == buy.order_id and f.order.trigger_price]:
                lost = sell.qty * (cost / got - sell.price) + sell.fee
                slipped = sell.qty * abs(sell.order.trigger_price - sell.price)
                assert lost <= self.cap + slipped + CENT, (buy, sell, lost, self.story)

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            if self.runtime is not None:
                self.run(self.runtime.gate.drain())
            self.run(self.stack.aclose())
        self.loop.close()
        self.paper.stop()
        shutil.rmtree(self.home, ignore_errors=True)


LossPromises.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None)
test_no_trade_loses_past_the_cap_nor_a_day_past_its_limit = LossPromises.TestCase


def test_a_stop_moved_away_past_the_days_limit_is_refused_before_any_read_latched() -> None:
    """Found by a CI run: the day's loss reached its limit in a price walk, and the next call widened the
    linear stop. Only a judgement of an order (or get_policy) latched the limit, so set_trading_stop saw
    trading active and moved the stop away; it now reads the day's loss itself."""
    machine = LossPromises()
    try:
        machine.open_server(cap=10, require=False, drawdown=None, cooldown=False, limit=4)
        machine.linear_order(follow=False, kind="market", lots=210, side=Side.BUY, stop_pct=Decimal("1.5"))
        machine.spot_order(follow=True, kind="market", lots=406, side=Side.BUY, stop_pct=None)
        machine.price_walks(moves=[-8, 0])
        stop = machine.paper.position(SYMBOL).stop_loss
        machine.move_stop(pct=Decimal("-0.1"))
        assert machine.paper.position(SYMBOL).stop_loss == stop
        assert machine.latched()
    finally:
        machine.teardown()
