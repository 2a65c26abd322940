"""The oracle's size search agrees with trying every size, and its valuation with worked numbers.

`Oracle.largest` searches at most two runs of lot steps from their lowest valid size; that rests on every
rule being a lower or an upper bound on the size within each run. Here every size of small instruments is
tried one by one, on the accounts the world generator draws.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.worlds.conftest import ORACLE_EXAMPLES
from tests.worlds.oracle import Account, OpenOrder, Oracle, Order, Position, floor_steps, liquidation_distance
from tests.worlds.strategies import worlds
from tests.worlds.world import Instrument, Quote, World

SMALL = 300  # lot steps tried one by one


def starting_account(world: World, orders_today: int) -> Account:
    """The account as the scenario starts it (resting orders as if all were accepted)."""
    held = {h.symbol: h for h in world.positions}
    positions = {}
    for instrument in world.instruments:
        if instrument.category == "linear":
            h = held.get(instrument.symbol)
            positions[instrument.symbol] = (
                Position(h.signed, h.avg_price, h.leverage)
                if h
                else Position(Decimal(0), Decimal(0), min(Decimal(10), instrument.max_leverage))
            )
    orders = tuple(
        OpenOrder(r.category, r.symbol, r.side.lower(), r.qty, r.price, r.reduce_only) for r in world.resting
    )
    return Account(positions, {"USDT": Decimal(0), **world.balances}, orders, orders_today)


@settings(max_examples=ORACLE_EXAMPLES, deadline=None)
@given(world=worlds(), data=st.data())
def test_largest_is_the_largest_size_that_passes_when_every_size_is_tried(world, data):
    oracle = Oracle(world, starting_account(world, data.draw(st.integers(0, 3))))
    instrument = data.draw(st.sampled_from(world.instruments))
    side = data.draw(st.sampled_from(["buy", "sell"]))
    limit = data.draw(st.booleans())
    quote = world.quotes[instrument.symbol]
    price = (quote.bid if side == "buy" else quote.ask) + instrument.tick * data.draw(st.integers(-5, 5))
    order = Order(
        instrument.symbol,
        instrument.category,
        side,
        "limit" if limit else "market",
        max(price, instrument.tick) if limit else None,
        data.draw(st.booleans()),
    )
    step = instrument.step
    top = min(floor_steps(instrument.max_qty, step), SMALL)
    at_most = top * step
    tried = [k * step for k in range(1, top + 1) if oracle.passes(order, k * step)]
    assert oracle.largest(order, at_most=at_most) == (tried[-1] if tried else None)
    cap = data.draw(st.integers(1, top)) * step
    below = [q for q in tried if q <= cap]
    assert oracle.largest(order, at_most=cap) == (below[-1] if below else None)


BTC = Instrument(
    "BTCUSDT", "linear", Decimal("0.1"), Decimal("0.00001"), Decimal("0.00001"), Decimal(100), Decimal(1)
)


def test_the_articles_worked_example_values_a_short_at_the_bid_and_cuts_to_the_cap():
    """README: a 0.0005 BTC short at 80220 is $40.11; the cap of $25 leaves 0.00031 BTC."""
    world = World(
        (BTC,),
        {"BTCUSDT": Quote(Decimal(80220), Decimal("80220.1"), Decimal(80220))},
        {"allowedMarkets": ["BTCUSDT"], "maxNotionalUsd": Decimal(25), "maxOrderNotionalUsd": Decimal(25)},
        balances={"USDT": Decimal(1000)},
    )
    oracle = Oracle(world, starting_account(world, 0))
    short = Order("BTCUSDT", "linear", "sell", "market")
    assert oracle.worst(short) == Decimal(80220)
    assert [m.name for m in oracle.misses(short, Decimal("0.0005"))] == [
        "maxOrderNotionalUsd",
        "maxNotionalUsd",
    ]
    assert oracle.largest(short, at_most=Decimal("0.0005")) == Decimal("0.00031")


def test_liquidation_distance_follows_the_readme_formula():
    # 0.001 BTC long bought at 80000 with $10 of equity, mmr 0.5%: L = (80 - 10) / (0.001 x 0.995)
    distance = liquidation_distance(
        Decimal("0.001"), Decimal(80000), Decimal(10), Decimal("0.005"), Decimal(80000)
    )
    level = Decimal(70) / (Decimal("0.001") * Decimal("0.995"))
    assert distance == (Decimal(80000) - level) / Decimal(80000) * 100
    assert liquidation_distance(Decimal(0), Decimal(1), Decimal(1), Decimal(0), Decimal(1)) is None
