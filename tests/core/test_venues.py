"""The venue's profile decides what a stop sent with an order becomes, per product: the whole position's stop
(Bybit's perpetuals), or a stop for the quantity that filled (Bybit's spot, where the coin held is the position
and what no stop sells can lose its whole value). The losses here are worked by hand from the fills and the
stops."""

from __future__ import annotations

from decimal import Decimal as D

from pilot.core.facts import Position, StopLeg
from pilot.core.stops import (
    SPOT_FLAT,
    Exposure,
    Fill,
    after_fills,
    loss_at_stops,
    unit_loss,
    worst_case,
)
from pilot.core.venues import BYBIT, StopScope

WHOLE, PARTIAL = StopScope.POSITION, StopScope.ORDER
HELD = Exposure(D(1), D(100), stop_loss=D(90))  # a long of 1 at 100, its whole stop at 90
FAR = Fill(D(1), D(100), stop_loss=D(50))  # a buy of 1 more at 100, sent with a stop at 50


def test_bybits_linear_order_stop_becomes_the_whole_positions_stop_and_its_spot_one_covers_what_filled():
    assert BYBIT.scope("linear") is StopScope.POSITION
    assert BYBIT.scope("spot") is StopScope.ORDER
    after = after_fills(HELD, [FAR], BYBIT.scope("linear"))
    assert (after.size, after.stop_loss, after.partial) == (D(2), D(50), ())
    assert loss_at_stops(after).loss == 2 * unit_loss(True, D(100), D(50))


def test_an_order_stop_that_covers_what_filled_joins_the_partial_stops():
    after = after_fills(HELD, [FAR], PARTIAL)
    assert (after.size, after.stop_loss, after.partial) == (D(2), D(90), (StopLeg(D(50), D(1)),))
    # the whole stop at 90 closes both before the price reaches the partial one at 50
    assert loss_at_stops(after).loss == 2 * unit_loss(True, D(100), D(90))


def test_from_flat_an_order_stop_that_covers_what_filled_leaves_no_whole_stop():
    after = after_fills(Exposure(D(0), D(0)), [FAR], PARTIAL)
    assert (after.size, after.stop_loss, after.partial) == (D(1), None, (StopLeg(D(50), D(1)),))
    assert loss_at_stops(after).uncovered == 0


def test_a_pending_orders_stop_sets_the_whole_stop_or_covers_its_own_fill():
    pending = [Fill(D(1), D(100), stop_loss=D(40))]  # a resting buy that may fill last, with a farther stop
    order = Fill(D(1), D(100), stop_loss=D(95))
    _, whole = worst_case(Exposure(D(0), D(0)), order, pending, D("0.1"), WHOLE)
    _, partial = worst_case(Exposure(D(0), D(0)), order, pending, D("0.1"), PARTIAL)
    # whole-position stops: the pending buy fills last, in full, and moves the whole stop of both to 40
    assert whole.loss == 2 * unit_loss(True, D(100), D(40)) and whole.uncovered == 0
    # stops that cover what filled: 1 closes at 95, the pending buy's 1 at its own 40
    assert partial.loss == unit_loss(True, D(100), D(95)) + unit_loss(True, D(100), D(40))
    assert partial.uncovered == 0


def test_on_spot_the_coin_no_stop_sells_loses_its_whole_value():
    """2 coins held at 100 (the price now: what they cost is not known), one of them sold by a stop at 90; a
    buy of 1 at 101 with its own stop at 95. The stops sell 1 at 95 and 1 at 90; the third coin can fall to 0."""
    held = Exposure.held(Position("XUSDT", D(2), D(0), D(1), partial_stops=(StopLeg(D(90), D(1)),)), D(100))
    assert (held.entry, held.floor) == (D(100), D(0))
    after = after_fills(held, [Fill(D(1), D(101), stop_loss=D(95))], PARTIAL)
    at_stops = loss_at_stops(after)
    cost = 2 * D(100) + D(101)
    fee = D("0.00055")
    expected = cost * (1 + fee) - (1 - fee) * (D(95) + D(90))
    assert abs(at_stops.loss - expected) < D("1e-20")  # the average entry is 301/3: rounded in its 28th digit
    assert (at_stops.uncovered, at_stops.unbounded) == (D(1), False)


def test_a_perpetual_position_with_some_of_it_under_no_stop_is_unbounded():
    at_stops = loss_at_stops(Exposure(D(-2), D(100), None, (StopLeg(D(110), D(1)),)))
    assert (at_stops.uncovered, at_stops.unbounded) == (D(1), True)
    assert loss_at_stops(after_fills(SPOT_FLAT, [Fill(D(1), D(100))], PARTIAL)).unbounded is False
