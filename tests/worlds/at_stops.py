"""What a position loses if the price runs through its stops: restated for the oracle apart from pilot.core.

From Bybit's documentation as the paper exchange follows it (SCENARIOS.md, "Stops"; create-order.mdx and
open-order.mdx: tpslMode Full is "entire position for TP/SL"; trading-stop.mdx; enum.mdx):

* a position's whole stop (tpslMode Full) closes all of the position, whatever its size when it triggers;
  an order sent with a `stopLoss` makes it the position's whole stop once it fills, replacing the one before;
* a partial stop (tpslMode Partial) closes its own size; partial stops add up;
* a position that closes or flips loses its stops (CancelByTpSlTsClear);
* the entry is the weighted average of what opened the position (SCENARIOS.md, "Matching, in short"):
  it moves only when the position grows; a fill that shrinks it leaves the entry.

OKX (pilot.core.venues.OKX; its attachAlgoOrds) makes a stop sent with an order a partial stop of the
quantity that filled, beside the position's others, never its whole stop: `order_stop="order"` below. Then a
resting order's stop can only close more, so it is not counted on, and the whole stop stays the position's.

The loss is measured from the entry, with Bybit's standard taker fee both ways (the loss rule's fee,
whatever the venue charges). Stops trigger in the order the price reaches them: for a long, the highest
first; partial stops past the whole stop never trigger (the whole stop has closed everything by then). What
no stop closes is uncovered.

What Pilot's policy means by "the position an order leaves" (docs/policy.md, maxLossPerTradeUsd): the order
fills at its sent price, and every order resting on the side of the position it leaves may fill too, in part
(by whole lot steps), in full or not at all, at its own price. The whole stop that then applies is the order's
own (with none, the position's stop as it is), or the stop of a resting order one lot step of which fills
after all the rest; a resting order's stop is never counted on otherwise, since the rest of an order may fill
after its first part set the stop. The loss judged is the worst of all those ways, and a way that leaves some
of the position under no stop is worse than any loss: its loss has no bound (docs/policy.md). Without partial stops the
loss at a whole stop is a sum over the units filled, so for each stop that may apply the worst takes each
resting order in full when it adds to the loss and not at all otherwise; with partial stops every cut is
tried.
"""

from __future__ import annotations

import itertools
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


def after(position: Protected, fills: Sequence[Fill], order_stop: str = "position") -> Protected:
    """The position once every fill has happened, in order, with the stops that then apply to it; a fill's
    stop becomes the whole stop (order_stop "position", Bybit) or a partial stop of its size ("order", OKX)."""
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
            if order_stop == "order":
                legs = (*legs, (fill.stop, abs(fill.qty)))
            else:
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
    position: Protected, resting: Sequence[Fill], order: Fill, step: Decimal, order_stop: str = "position"
) -> tuple[Protected, Decimal, Decimal]:
    """The position an order leaves at its worst (the policy's reading above), with its loss and uncovered
    quantity at its stops. `resting` are the orders resting on the order's side; `step` is the lot step;
    `order_stop` what a stop sent with an order becomes (the venue's: see the module's docstring)."""
    forced = after(position, [order], order_stop)
    if forced.size == 0:
        return forced, ZERO, ZERO
    same = [fill for fill in resting if (fill.qty > 0) == forced.long]
    if order_stop == "order":  # a resting order's stop only closes more: the worst takes it without
        return _worst_with(forced, forced.stop, [Fill(fill.qty, fill.price) for fill in same])
    # the order's stop applies, or the one now: any resting order may have filled, its stop not set by it
    # (what is left of an order may fill after its first part set the stop)
    cases = [_worst_with(forced, forced.stop, same)]
    for fill in same:  # a resting order carrying a stop fills last: a lot step of it at least
        if fill.stop is None:
            continue
        sign = 1 if fill.qty > 0 else -1
        least = min(step, abs(fill.qty))
        last = after(forced, [Fill(least * sign, fill.price)])
        others = [other for other in same if other is not fill]
        if abs(fill.qty) > least:
            others.append(Fill(fill.qty - least * sign, fill.price))
        cases.append(_worst_with(last, fill.stop, others))
    worst = cases[0]
    for case in cases[1:]:
        if _rank(case) > _rank(worst):
            worst = case
    return worst


def _rank(case: tuple[Protected, Decimal, Decimal]) -> tuple[bool, Decimal, Decimal]:
    """How bad a way of filling is: some of the position left under no stop (unbounded on a perpetual) is
    worse than any loss; then the loss, then what is left uncovered."""
    return case[2] > 0, case[1], case[2]


def _worst_with(
    start: Protected, stop: Decimal | None, optional: Sequence[Fill]
) -> tuple[Protected, Decimal, Decimal]:
    """The worst of `start` (with `stop` as its whole stop) and any of the optional fills."""
    start = Protected(start.size, start.entry, stop, start.legs)
    if start.legs:
        return _tried(start, optional)
    worst = start
    for fill in optional:  # without partial stops each fill adds its own share: take the ones that hurt
        more = after(worst, [Fill(fill.qty, fill.price)])
        if _rank((more, *loss_at_stops(more))) > _rank((worst, *loss_at_stops(worst))):
            worst = more
    return (worst, *loss_at_stops(worst))


def _tried(start: Protected, optional: Sequence[Fill]) -> tuple[Protected, Decimal, Decimal]:
    """With partial stops: every resting order none, all, or cut where the position reaches the sizes its
    partial stops add up to (between those the loss is linear), each way tried."""
    assert len(optional) <= 8, "the worlds never rest this many orders beside partial stops"
    edges, total = set(), ZERO
    for _, qty in sorted(start.legs, key=lambda leg: -leg[0] if start.long else leg[0]):
        total += qty
        edges.add(total)
    best = (start, *loss_at_stops(start))
    for picks in itertools.product((False, True), repeat=len(optional)):
        chosen = [fill for fill, pick in zip(optional, picks, strict=True) if pick]
        full = after(start, [Fill(fill.qty, fill.price) for fill in chosen])
        probes = [full]
        for edge in edges:
            if abs(start.size) < edge < abs(full.size):
                cut = edge - abs(start.size)
                probes.append(_cut(start, chosen, cut))
        for probe in probes:
            found = (probe, *loss_at_stops(probe))
            if _rank(found) > _rank(best):
                best = found
    return best


def _cut(start: Protected, fills: Sequence[Fill], amount: Decimal) -> Protected:
    """`start` with the first `amount` of these fills, the worst priced first."""
    position, left = start, amount
    for fill in sorted(fills, key=lambda fill: -fill.price if start.long else fill.price):
        take = min(abs(fill.qty), left)
        if take <= 0:
            break
        position = after(position, [Fill(take if start.long else -take, fill.price)])
        left -= take
    return position


def spot_loss(
    held: Decimal, bid: Decimal, legs: Sequence[tuple[Decimal, Decimal]], buys: Sequence[Fill], step: Decimal
) -> tuple[Decimal, Decimal]:
    """(loss, quantity no stop sells) of the coin held on spot with its stop orders `legs` (trigger, qty)
    and the buys `buys` (each with the stop it carries, which sells what it bought: the coin that arrived, the
    fee paid in it taken off, on the lot step `step`): docs/policy.md's spot reading. What the coin held cost is not known, so it counts at the bid; every buy at its own price. The
    stops sell from the highest trigger down, each its own quantity; what none sells falls to zero. The loss
    is what it all cost, taker fee in, less what the stops sell it for, fee out."""
    cost, total = held * bid, held
    sells = list(legs)
    for buy in buys:
        cost, total = cost + buy.qty * buy.price, total + buy.qty
        if buy.stop is not None:  # it sells the coin that arrived: the fee paid in it taken off, on the step
            net = buy.qty * (1 - STANDARD_TAKER_FEE)
            sells.append((buy.stop, (net / step).to_integral_value(rounding="ROUND_FLOOR") * step))
    sold, proceeds = ZERO, ZERO
    for price, qty in sorted(sells, key=lambda leg: -leg[0]):
        take = min(qty, total - sold)
        if take <= 0:
            break
        sold, proceeds = sold + take, proceeds + take * price
    loss = cost * (1 + STANDARD_TAKER_FEE) - proceeds * (1 - STANDARD_TAKER_FEE)
    return loss, total - sold
