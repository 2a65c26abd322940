"""The cases issue 36 lists, one world each, through a real MCP client that cannot show forms: the two refusal
faults the random worlds found under the stop rules, a flip, and a spot buy with its stop.

Each figure the tests check comes from the world's numbers (the oracle, tests/worlds/oracle.py), not from
Pilot: a refusal's next action must replay to ok, and "nothing fits" must be true.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.worlds.harness import open_world
from tests.worlds.oracle import Order
from tests.worlds.world import Holding, Instrument, Quote, World

pytestmark = pytest.mark.anyio
# A cheap coin with a large minimum order, as the worlds drew them: tick 0.0001, step 0.5, minimum 25.
XRP = Instrument(
    "XRPUSDT", "linear", Decimal("0.0001"), Decimal("0.5"), Decimal(25), Decimal(100_000), Decimal(5)
)
DOGE = Instrument(
    "DOGEUSDT", "linear", Decimal("0.00001"), Decimal(1), Decimal(5310), Decimal(10**7), Decimal(5)
)
LINK = Instrument(
    "LINKUSDT", "linear", Decimal("0.00001"), Decimal(1), Decimal(1), Decimal(10**7), Decimal(0)
)
ETH_SPOT = Instrument(
    "ETHUSDT", "spot", Decimal("0.01"), Decimal("0.00001"), Decimal("0.00001"), Decimal(1500), Decimal(1)
)
ETH = Instrument(
    "ETHUSDT", "linear", Decimal("0.01"), Decimal("0.001"), Decimal("0.001"), Decimal(1000), Decimal(1)
)
POLICY: dict[str, Any] = {
    "maxNotionalUsd": Decimal(5000),
    "maxOrderNotionalUsd": Decimal(5000),
    "maxLeverage": Decimal(10),
    "minLiquidationDistancePct": Decimal(0),
    "dailyOrderCap": 100,
    "planTtlSeconds": 300,
}


def world(instrument: Instrument, quote: Quote, policy: dict[str, Any], *held: Holding) -> World:
    return World(
        (instrument,),
        {instrument.symbol: quote},
        {"allowedMarkets": [instrument.symbol], **POLICY, **policy},
        held,
        {"USDT": Decimal(100_000)},
    )


def clean(run: Any) -> None:
    assert not [f.line() for f in run.findings if f.failing]


async def test_an_order_below_the_minimum_without_a_stop_is_offered_the_minimum_with_a_stop(tmp_path: Path):
    """The worlds' "room 0.5 < minimum 25, raise maxLossPerTradeUsd": requireStopLoss and a $1 cap on a 0.5
    XRP buy; the minimum 25 with a stop fitted to 25 passes."""
    quote = Quote(Decimal("2.0000"), Decimal("2.0002"), Decimal("2.0001"))
    scene = world(XRP, quote, {"requireStopLoss": True, "maxLossPerTradeUsd": Decimal(1)})
    async with open_world(scene, tmp_path) as run:
        first = await run.plan({"symbol": "XRPUSDT", "side": "buy", "qty": "0.5"}, run.oracle())
        assert first is not None and first["status"] == "refused"
        nxt = first["next_safe_action"]
        assert nxt["tool"] == "plan_order" and nxt["args"]["qty"] == "25" and "stop_loss" in nxt["args"]
        oracle = run.oracle()
        assert not oracle.misses(Order.of(nxt["args"]), Decimal(25))  # the oracle passes it too
        replay = await run.plan(nxt["args"], oracle)
        assert replay is not None and replay["status"] == "ok"
        clean(run)


async def test_adding_to_a_short_with_its_own_stop_is_offered_the_minimum_with_a_stop(tmp_path: Path):
    """The worlds' "room 965 < minimum 5310": adding below the minimum to a short that has its own stop,
    under requireStopLoss and a cap, while a larger order with a stop near the price passes."""
    quote = Quote(Decimal("0.20000"), Decimal("0.20002"), Decimal("0.20001"))
    short = Holding("DOGEUSDT", "Sell", Decimal(20_000), Decimal("0.205"), Decimal(5), Decimal("0.21"))
    roomy = {"maxNotionalUsd": Decimal(10_000), "requireStopLoss": True, "maxLossPerTradeUsd": Decimal(150)}
    scene = world(DOGE, quote, roomy, short)
    async with open_world(scene, tmp_path) as run:
        oracle = run.oracle()
        witness = Order("DOGEUSDT", "linear", "sell", "market", stop_loss=Decimal("0.206"))
        assert not oracle.misses(witness, Decimal(6000))
        first = await run.plan({"symbol": "DOGEUSDT", "side": "sell", "qty": "965"}, oracle)
        assert first is not None and first["status"] == "refused"
        nxt = first["next_safe_action"]
        assert nxt["tool"] == "plan_order" and nxt["args"]["qty"] == "5310" and "stop_loss" in nxt["args"]
        replay = await run.plan(nxt["args"], run.oracle())
        assert replay is not None and replay["status"] == "ok"
        clean(run)


async def test_a_wider_stop_past_a_stop_already_over_the_cap_is_answered_by_keeping_it(tmp_path: Path):
    """The worlds' LINK 0.00425 -> 0.0049: the stop at 0.0045 already loses more than the $1 cap; a wider one
    is answered with the stop kept, and one tick farther than it is refused."""
    quote = Quote(Decimal("0.00500"), Decimal("0.00502"), Decimal("0.00501"))
    long = Holding("LINKUSDT", "Buy", Decimal(10_000), Decimal("0.005"), Decimal(5), Decimal("0.0045"))
    scene = world(LINK, quote, {"maxLossPerTradeUsd": Decimal(1)}, long)
    async with open_world(scene, tmp_path) as run:
        wider = await run.call("set_trading_stop", {"symbol": "LINKUSDT", "stop_loss": "0.00425"})
        assert wider is not None and wider["status"] == "refused"
        nxt = wider["next_safe_action"]
        assert (nxt["tool"], nxt["args"]["stop_loss"]) == ("set_trading_stop", "0.0045")
        farther = await run.call("set_trading_stop", {"symbol": "LINKUSDT", "stop_loss": "0.00449"})
        assert farther is not None and farther["status"] == "refused"
        closer = await run.call("set_trading_stop", {"symbol": "LINKUSDT", "stop_loss": "0.0046"})
        assert closer is not None and closer["status"] == "done"


async def test_a_flip_without_a_stop_is_refused_and_its_answer_bounds_the_new_side(tmp_path: Path):
    quote = Quote(Decimal("3100.00"), Decimal("3100.02"), Decimal("3100.01"))
    long = Holding("ETHUSDT", "Buy", Decimal("0.03"), Decimal(3100), Decimal(5), Decimal(3000))
    scene = world(ETH, quote, {"maxLossPerTradeUsd": Decimal(5)}, long)
    async with open_world(scene, tmp_path) as run:
        oracle = run.oracle()
        flip = Order("ETHUSDT", "linear", "sell", "market")
        assert [m.name for m in oracle.misses(flip, Decimal("0.06"))] == ["maxLossPerTrade"]
        first = await run.plan({"symbol": "ETHUSDT", "side": "sell", "qty": "0.06"}, oracle)
        assert first is not None and first["status"] == "refused"
        nxt = first["next_safe_action"]
        assert nxt["tool"] == "plan_order" and "stop_loss" in nxt["args"]
        assert not oracle.misses(Order.of(nxt["args"]), Decimal(nxt["args"]["qty"]))
        clean(run)


async def test_a_spot_buy_is_judged_with_the_coin_held_and_placed_with_its_stop(tmp_path: Path):
    quote = Quote(Decimal("3100.00"), Decimal("3100.02"), Decimal("3100.01"))
    scene = world(ETH_SPOT, quote, {"maxLossPerTradeUsd": Decimal(5)})
    async with open_world(scene, tmp_path) as run:
        oracle = run.oracle()
        first = await run.plan({"symbol": "ETHUSDT", "side": "buy", "qty": "0.1", "category": "spot"}, oracle)
        assert first is not None and first["status"] == "refused"
        nxt = first["next_safe_action"]
        assert nxt["tool"] == "plan_order" and "stop_loss" in nxt["args"]
        assert not oracle.misses(Order.of(nxt["args"]), Decimal("0.1"))
        planned = await run.plan(nxt["args"], oracle)
        assert planned is not None and planned["status"] == "ok"
        await run.place(planned, run.oracle())
        assert run.stats["spot buys checked at their stops"] == 1
        clean(run)
