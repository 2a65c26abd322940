"""Risk direction: does an order grow exposure or only shrink it?"""

from __future__ import annotations

from decimal import Decimal

from pilot.core.facts import OrderIntent

ZERO = Decimal(0)


def resulting_size(position_size: Decimal, order: OrderIntent) -> Decimal:
    """The signed position the order leaves if it fills completely (reduce-only never flips)."""
    after = position_size + order.signed_qty
    if order.reduce_only and (after == 0 or (after > 0) != (position_size > 0)):
        return Decimal(0)
    return after


def is_risk_reducing(
    position_size: Decimal | None, order: OrderIntent, pending_same_side: Decimal = ZERO
) -> bool:
    """True when the order can only shrink the position.

    A reduce-only order qualifies by definition (the exchange refuses to let it grow or flip a position).
    Any other order qualifies when it is on the opposite side of the position and, together with the orders
    already pending on its side, no larger than it. An unknown position is treated as growing: fail closed.
    """
    if order.reduce_only:
        return True
    if position_size is None or position_size == 0:
        return False
    opposite = (position_size > 0) != (order.signed_qty > 0)
    return opposite and order.qty + pending_same_side <= abs(position_size)


def worst_case_size(position_size: Decimal, order: OrderIntent, pending_same_side: Decimal) -> Decimal:
    """The position left if the order and every pending order on its side fill (reduce-only never flips)."""
    after = resulting_size(position_size, order)
    if order.reduce_only:
        return after
    return after + pending_same_side * order.side.sign
