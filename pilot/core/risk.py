"""Risk direction: does an order grow the worst-case exposure, or only shrink it?

Orders pending on the book (or sent with an unknown outcome) may fill at any time. The worst case of a
position P with pending buys B and pending sells S is the larger of |P + B| (every buy fills) and |P - S|
(every sell fills); any mix of fills lies between the two. An order is judged by the worst case it leaves.
"""

from __future__ import annotations

from decimal import Decimal

from pilot.core.facts import SELL, OrderIntent, PendingOrders

ZERO = Decimal(0)


def resulting_size(position_size: Decimal, order: OrderIntent) -> Decimal:
    """The signed position the order leaves if it fills completely (reduce-only never flips)."""
    after = position_size + order.signed_qty
    if order.reduce_only and (after == 0 or (after > 0) != (position_size > 0)):
        return Decimal(0)
    return after


def worst_case(position_size: Decimal, pending: PendingOrders) -> Decimal:
    """The largest position (in absolute base units) that the pending orders can leave."""
    return max(abs(position_size + pending.buy_qty), abs(position_size - pending.sell_qty))


def worst_case_size(position_size: Decimal, order: OrderIntent, pending_same_side: Decimal) -> Decimal:
    """The position left if the order and every pending order on its side fill (reduce-only never flips).

    A reduce-only order moves the position towards zero, and pending orders on its side then act from
    there: closing a long under resting sells leaves those sells free to open a short.
    """
    return resulting_size(position_size, order) + pending_same_side * order.side.sign


def is_risk_reducing(
    position_size: Decimal | None, order: OrderIntent, pending: PendingOrders | None
) -> bool:
    """True when the order can only shrink the worst-case exposure.

    Any other order qualifies when it is on the opposite side of the position and, together with the
    orders already pending on its side, no larger than it (it cannot flip the position). A reduce-only
    order never grows or flips the position itself, but it qualifies only when the worst case it leaves,
    with the orders pending on its side, is no larger than the worst case now; when the pending orders
    cannot be read it still qualifies, since it only ever moves the position towards zero and
    risk-reducing actions must keep working. An unknown position counts as growing: fail closed.
    """
    if position_size is None:
        return False
    if order.reduce_only:
        if pending is None:
            return True
        after = worst_case_size(position_size, order, pending.on_side(order.side))
        return abs(after) <= worst_case(position_size, pending)
    if pending is None:
        return False
    same_side = pending.on_side(order.side)
    if position_size == 0:
        return False
    opposite = (position_size > 0) == (order.side is SELL)  # by side: a zero quantity has no sign
    return opposite and order.qty + same_side <= abs(position_size)
