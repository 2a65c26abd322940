"""The venue's profile decides what a stop sent with an order becomes: the whole position's stop (Bybit), or a
partial stop for the quantity that filled. The losses here are worked by hand from the fills and the stops."""

from __future__ import annotations

from decimal import Decimal as D

from pilot.core.facts import StopLeg
from pilot.core.stops import Exposure, Fill, after_fills, loss_at_stops, unit_loss, worst_case
from pilot.core.venues import BYBIT, StopScope, VenueProfile

PARTIAL = VenueProfile(name="a venue whose order stops cover what filled", order_stop=StopScope.ORDER)
HELD = Exposure(D(1), D(100), stop_loss=D(90))  # a long of 1 at 100, its whole stop at 90
FAR = Fill(D(1), D(100), stop_loss=D(50))  # a buy of 1 more at 100, sent with a stop at 50


def test_bybits_order_stop_becomes_the_whole_positions_stop():
    assert BYBIT.order_stop is StopScope.POSITION
    after = after_fills(HELD, [FAR], BYBIT)
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


def test_a_pending_orders_stop_sets_the_whole_stop_only_where_stops_cover_the_position():
    pending = [Fill(D(1), D(100), stop_loss=D(40))]  # a resting buy that may fill last, with a farther stop
    order = Fill(D(1), D(100), stop_loss=D(95))
    _, whole = worst_case(Exposure(D(0), D(0)), order, pending, D("0.1"), BYBIT)
    _, partial = worst_case(Exposure(D(0), D(0)), order, pending, D("0.1"), PARTIAL)
    # Bybit: the pending buy fills last, in full, and moves the whole stop of both to 40
    assert whole.loss == 2 * unit_loss(True, D(100), D(40)) and whole.uncovered == 0
    # covering what filled: 1 closes at 95, the pending buy's 1 is judged without its stop (unbounded)
    assert partial.loss == unit_loss(True, D(100), D(95)) and partial.uncovered == D(1)
