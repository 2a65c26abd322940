"""Random sequences of creates with TP/SL, trading-stop calls, cancels, amends, cancel-alls, conditional
orders and price moves keep the paper exchange's stops as Bybit keeps them. Checked after every step from
what the exchange answers over HTTP (position list and open orders), written apart from the engine:

* a flat position has no TP/SL or trailing stop (trading-stop.mdx: cancelled when the position closes);
* at most one Full stop-loss, one Full take-profit and one trailing stop; each on the closing side, for the
  whole position's size (trading-stop.mdx: "adjust the qty according to the size of the open position");
* each side's Partial legs add up to no more than the position (error.mdx 110058), at most 20 (110061);
* the position's stopLoss / takeProfit are its Full ones ("" without);
* no order waits, Untriggered, past its trigger price (every move triggers what it reaches);
* every refusal is one of Bybit's codes for what was asked.

Bounded: 20 examples of up to 30 steps by default (HYPOTHESIS_PROFILE=thorough: 300), a few seconds.
"""

from __future__ import annotations

import os
from decimal import Decimal

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from pybit.exceptions import InvalidRequestError

from pilot.paper import start_paper_exchange
from tests.exchange.conftest import raw_session
from tests.paper.stop_world import SYMBOL, World, default_scenario

EXAMPLES = {"thorough": 300, "dev": 5}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 20)
TICK = Decimal("0.1")
LEGS = ("TakeProfit", "StopLoss", "TrailingStop", "PartialTakeProfit", "PartialStopLoss")
REFUSALS = {10001, 34040, 110007, 110009, 110017, 110058, 110061, 110092, 110093, 110001, 110010}
offsets = st.integers(min_value=1, max_value=40).map(lambda n: Decimal(n * 50))


class StopBookMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.paper = start_paper_exchange(default_scenario(rateLimits=False))
        self.w = World(self.paper, raw_session(self.paper))
        self.last = Decimal("80220.0")

    def teardown(self) -> None:
        self.w.session.client.close()
        self.paper.stop()

    def call(self, action, **params) -> None:
        try:
            action(**params)
        except InvalidRequestError as refused:
            assert refused.status_code in REFUSALS, (refused.status_code, refused.message)

    @rule(
        buy=st.booleans(),
        lots=st.integers(min_value=1, max_value=6),
        mode=st.sampled_from([None, "Full", "Partial"]),
        stop=st.none() | offsets,
        goal=st.none() | offsets,
        limit=st.booleans(),
    )
    def create_with_stops(self, buy, lots, mode, stop, goal, limit) -> None:
        sign = 1 if buy else -1
        params: dict = {"side": "Buy" if buy else "Sell", "qty": str(Decimal(lots) / 1000)}
        if stop is not None:
            params["stopLoss"] = str(self.last - sign * stop)
        if goal is not None:
            params["takeProfit"] = str(self.last + sign * goal)
        if mode is not None:
            params["tpslMode"] = mode
        if limit:
            params["price"] = str(self.last + sign * 100)
        self.call(self.w.create, **params)

    @rule(stop=st.none() | offsets | st.just(Decimal(0)), goal=st.none() | offsets | st.just(Decimal(0)))
    def full_trading_stop(self, stop, goal) -> None:
        sign = 1 if self.paper.position(SYMBOL).size >= 0 else -1
        params: dict = {"tpslMode": "Full"}
        if stop is not None:
            params["stopLoss"] = str(self.last - sign * stop) if stop else "0"
        if goal is not None:
            params["takeProfit"] = str(self.last + sign * goal) if goal else "0"
        self.call(self.w.trading_stop, **params)

    @rule(stop=offsets, lots=st.integers(min_value=1, max_value=4), both=st.booleans())
    def partial_trading_stop(self, stop, lots, both) -> None:
        sign = 1 if self.paper.position(SYMBOL).size >= 0 else -1
        size = str(Decimal(lots) / 1000)
        params: dict = {"tpslMode": "Partial", "stopLoss": str(self.last - sign * stop), "slSize": size}
        if both:
            params |= {"takeProfit": str(self.last + sign * stop), "tpSize": size}
        self.call(self.w.trading_stop, **params)

    @rule(lots=st.integers(min_value=1, max_value=4))
    def reduce_position(self, lots) -> None:
        size = self.paper.position(SYMBOL).size
        if size:
            side = "Sell" if size > 0 else "Buy"
            self.call(self.w.create, side=side, qty=str(Decimal(lots) / 1000), reduceOnly=True)

    @rule(distance=offsets)
    def trailing_stop(self, distance) -> None:
        self.call(self.w.trading_stop, tpslMode="Full", trailingStop=str(distance))

    @rule(rise=st.booleans(), offset=offsets, reduce=st.booleans())
    def conditional(self, rise, offset, reduce) -> None:
        trigger = self.last + offset if rise else self.last - offset
        self.call(
            self.w.create,
            side="Buy" if rise else "Sell",
            qty="0.001",
            triggerPrice=str(trigger),
            triggerDirection=1 if rise else 2,
            reduceOnly=reduce,
        )

    @rule(pick=st.integers(min_value=0, max_value=50))
    def cancel_one(self, pick) -> None:
        rows = self.w.realtime()
        if rows:
            order_id = rows[pick % len(rows)]["orderId"]
            self.call(self.w.session.cancel_order, category="linear", symbol=SYMBOL, orderId=order_id)

    @rule(pick=st.integers(min_value=0, max_value=50), offset=offsets)
    def amend_trigger(self, pick, offset) -> None:
        rows = [row for row in self.w.realtime() if row["orderStatus"] == "Untriggered"]
        if rows:
            row = rows[pick % len(rows)]
            trigger = self.last + offset if row["triggerDirection"] == 1 else self.last - offset
            self.call(
                self.w.session.amend_order,
                category="linear",
                symbol=SYMBOL,
                orderId=row["orderId"],
                triggerPrice=str(trigger),
            )

    @rule(kind=st.sampled_from([None, "Order", "StopOrder", "Stop"]))
    def cancel_all(self, kind) -> None:
        params = (
            {}
            if kind is None
            else {"orderFilter": "StopOrder", "stopOrderType": "Stop"}
            if kind == "Stop"
            else {"orderFilter": kind}
        )
        self.call(self.w.session.cancel_all_orders, category="linear", symbol=SYMBOL, **params)

    @rule(ticks=st.integers(min_value=-120, max_value=120))
    def move(self, ticks) -> None:
        self.last = max(self.last + ticks * 10 * TICK, Decimal(70000))
        self.paper.set_prices(SYMBOL, bid=self.last, ask=self.last + TICK, mark=self.last)

    @invariant()
    def stops_are_as_bybit_keeps_them(self) -> None:
        position = self.w.position()
        size = Decimal(position["size"]) if position["side"] != "Sell" else -Decimal(position["size"])
        rows = self.w.realtime()
        legs = [row for row in rows if row["stopOrderType"] in LEGS and row["orderStatus"] == "Untriggered"]
        if size == 0:
            assert legs == [] and (position["stopLoss"], position["takeProfit"]) == ("", "")
            return
        closing = "Sell" if size > 0 else "Buy"
        for kind in ("StopLoss", "TakeProfit", "TrailingStop"):
            full = [row for row in legs if row["stopOrderType"] == kind]
            assert len(full) <= 1 and all(Decimal(row["qty"]) == abs(size) for row in full)
        for kind in ("PartialStopLoss", "PartialTakeProfit"):
            assert sum((Decimal(r["qty"]) for r in legs if r["stopOrderType"] == kind), Decimal(0)) <= abs(
                size
            )
        assert len([row for row in legs if row["stopOrderType"].startswith("Partial")]) <= 20
        assert all(row["side"] == closing and row["reduceOnly"] and row["closeOnTrigger"] for row in legs)
        for field, kind in (("stopLoss", "StopLoss"), ("takeProfit", "TakeProfit")):
            full = [Decimal(row["triggerPrice"]) for row in legs if row["stopOrderType"] == kind]
            assert (Decimal(position[field]) if position[field] else None) == (full[0] if full else None)

    @invariant()
    def nothing_waits_past_its_trigger(self) -> None:
        for row in self.w.realtime():
            if row["orderStatus"] != "Untriggered" or not row["triggerPrice"]:
                continue
            trigger = Decimal(row["triggerPrice"])
            assert self.last < trigger if row["triggerDirection"] == 1 else self.last > trigger, row


StopBookMachine.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=30, deadline=None)
test_stops_keep_their_invariants = StopBookMachine.TestCase
