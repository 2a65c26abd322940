"""What a position loses if the price runs through its stops: restated for the oracle apart from pilot.core.

From Bybit's documentation as the paper exchange follows it (SCENARIOS.md, "Stops"; create-order.mdx and
open-order.mdx: tpslMode Full is "entire position for TP/SL"; trading-stop.mdx; enum.mdx):

* a position's whole stop (tpslMode Full) closes all of the position, whatever its size when it triggers;
  an order sent with a `stopLoss` makes it the position's whole stop once it fills, replacing the one before;
* a partial stop (tpslMode Partial) closes its own size; partial stops add up;
* a position that closes or flips loses its stops (CancelByTpSlTsClear);
* the entry is the weighted average of what opened the position (SCENARIOS.md, "Matching, in short"):
  it moves only when the position grows; a fill that shrinks it leaves the entry.

The loss is measured from the entry, with Bybit's standard taker fee both ways (the loss rule's fee,
whatever the venue charges). Stops trigger in the order the price reaches them: for a long, the highest
first; partial stops past the whole stop never trigger (the whole stop has closed everything by then). What
no stop closes is uncovered.

What Pilot's policy means by "the position an order leaves" (README, maxLossPerTradeUsd): every order
resting on the order's side fills too, at its own price and with its own stop, the order last at its sent
price; if any of them carries a stop, the widest one applies (whichever fills last sets it). An order
without a stop may also fill while the ones with stops never do, and then the position's stops as they are
apply to it: the worse of the two is the one judged (the worst case pilot.core's docstrings describe; only
the reading is shared, never the code).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

ZERO = Decimal(0)
STANDARD_TAKER_FEE = Decimal(
    "0.00055"
)  # Bybit's non-VIP linear taker fee: the loss rule's, whatever the venue's


@dataclass(frozen=True, slots=True)
class Protected:
    """A linear position and the stops that close it: signed size, entry, whole stop, partial (price, qty)."""

    size: Decimal
    entry: Decimal
    stop: Decimal | None = None
    legs: tuple[tuple[Decimal, Decimal], ...] = ()

    @property
    def long(self) -> bool:
        return self.size > 0


FLAT = Protected(ZERO, ZERO)


@dataclass(frozen=True, slots=True)
class Fill:
    """A fill the worst case assumes: signed quantity, price, and the stop the order carries (or None)."""

    qty: Decimal
    price: Decimal
    stop: Decimal | None = None


def after(position: Protected, fills: Sequence[Fill]) -> Protected:
    """The position once every fill has happened, in order, with the stops that then apply to it."""
    size, entry, stop, legs = position.size, position.entry, position.stop, position.legs
    carried: list[Decimal] = []  # stops of fills on the side the position is on
    for fill in fills:
        total = size + fill.qty
        if size == 0 or (size > 0) == (fill.qty > 0):
            entry = (abs(size) * entry + abs(fill.qty) * fill.price) / abs(total) if total else ZERO
        elif total == 0 or (total > 0) != (size > 0):  # closed or flipped: its stops go with it
            entry = fill.price if total else ZERO
            stop, legs, carried = None, (), []
        size = total
        if fill.stop is not None and size != 0 and (size > 0) == (fill.qty > 0):
            carried.append(fill.stop)
    if size == 0:
        return FLAT
    if carried:
        stop = min(carried) if size > 0 else max(carried)  # the widest: the one that lets it run furthest
    return Protected(size, entry, stop, legs)


def per_unit(long: bool, entry: Decimal, price: Decimal) -> Decimal:
    """What one unit bought (long) or sold at `entry` loses when closed at `price`, taker fee both ways."""
    move = entry - price if long else price - entry
    return move + STANDARD_TAKER_FEE * (entry + price)


def loss_at_stops(position: Protected) -> tuple[Decimal, Decimal]:
    """(the loss of what the stops close, the quantity no stop closes) if the price runs through them."""
    if position.size == 0:
        return ZERO, ZERO
    long, whole = position.long, position.stop
    left, loss = abs(position.size), ZERO
    for price, qty in sorted(position.legs, key=lambda leg: -leg[0] if long else leg[0]):
        past_whole = whole is not None and (price < whole if long else price > whole)
        if left <= 0 or past_whole:
            break
        closed = min(qty, left)
        loss += closed * per_unit(long, position.entry, price)
        left -= closed
    if whole is not None and left > 0:
        loss += left * per_unit(long, position.entry, whole)
        left = ZERO
    return loss, left


def worst_left(
    position: Protected, resting: Sequence[Fill], order: Fill
) -> tuple[Protected, Decimal, Decimal]:
    """The position an order leaves at its worst (the policy's reading above), and its loss and uncovered
    quantity at its stops. `resting` are the orders on the order's side, as the exchange lists them."""
    cases = [after(position, [*resting, order])]
    if order.stop is None and any(fill.stop is not None for fill in resting):
        cases.append(after(position, [*(fill for fill in resting if fill.stop is None), order]))
    worst, (loss, uncovered) = cases[0], loss_at_stops(cases[0])
    for case in cases[1:]:
        case_loss, case_uncovered = loss_at_stops(case)
        if case_loss > loss:
            worst, loss, uncovered = case, case_loss, case_uncovered
    return worst, loss, uncovered
