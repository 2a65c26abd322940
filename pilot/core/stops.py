"""Stops as the venue runs them (its profile: pilot.core.venues), and what a position loses at them.

A position's stop-loss lives on the position. A whole stop (the one set_trading_stop sets) closes all of the
position, whatever its size when it triggers, and a new one replaces the old. Partial stops each close their
own size and add up beside the whole one. A stop sent with an order becomes, once the order fills, what the
venue's profile says for the product (`VenueProfile.scope`): at Bybit on a perpetual the whole position's
stop, so a small order sent with a far stop becomes the far stop of the whole position; on spot a stop order
of its own for the quantity that filled (a partial stop of the coin held). So the loss a rule caps is the
loss of the position an action leaves, at the stops that will then apply to it:

* an order that fills adds to the position at its worst price; the stop it carries replaces the whole stop
  (or, where it covers only what filled, joins the partial ones);
* the orders pending on the same side may fill in part, in full or not at all, in any order; where their
  stops become the whole position's, whichever stop-carrying one fills last sets the whole stop, or none does
  (what is left of an order fills after its first part brought the stop): the worst of all those ways is
  judged (worst_case); where a stop covers only what filled, each pending order fills in full with its own
  stop for what it filled (every fill then only adds to the loss);
* moving, removing or cancelling a stop changes the stops; it may not widen the loss past the cap.

As the price runs against a long, the stops trigger from the highest down: partial legs above the whole stop
close their size first, the whole stop closes the rest, legs below it never trigger. The quantity no stop
closes is uncovered. On a perpetual its loss is unbounded (a short's has no ceiling, and a long's runs past
its margin): under a loss limit a position left so is refused, as requireStopLoss refuses it. On spot the
coin held can lose its whole value and no more (the floor, `Exposure.floor`, is zero): that loss is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_FLOOR, Context, Decimal, localcontext

from pilot.core.codes import Code
from pilot.core.facts import BUY, SELL, Effect, PendingOrders, Position, Side, StopLeg, Touch, TradingState
from pilot.core.holds import Hold, blocking, held_by, resume_trading
from pilot.core.policy import EffectiveLimits, Policy
from pilot.core.valuation import TAKER_FEE, ceil_to_step, collar_edge, floor_to_step, price_on_tick
from pilot.core.venues import WHOLE_POSITION, StopScope
from pilot.core.violations import NextAction, Violation, plain, plain_usd, usd

ZERO = Decimal(0)
# The attempted value of a loss refusal where some of the position would have no stop on a perpetual.
UNBOUNDED = "unbounded"
# The largest amount an agent can send (18 digits before the dot: pilot.app.orders.inputs): a short's stop is
# never offered beyond it, even where every stop fits.
LARGEST_STOP = Decimal("999999999999999999")
# The precision an average entry and the loss at the stops are worked out in. An average entry has no end
# (5779416/1927), so at the usual 28 digits the loss from it comes out a hair off the exact one, which is
# what its cost and the stops' proceeds give (3337256.354999… for 3337256.355, shown as .35, not .36).
# Worked out at 60 digits and rounded once to the caller's precision, the loss is the exact one.
WIDE = Context(prec=60)


@dataclass(frozen=True, slots=True)
class Exposure:
    """A position as its stops will close it: signed size, average entry, the whole stop, the partial legs,
    and the floor: the price the quantity no stop closes can lose down to. None on a perpetual (its loss is
    unbounded); zero on spot, where the coin held can lose its whole value and no more."""

    size: Decimal
    entry: Decimal
    stop_loss: Decimal | None = None
    partial: tuple[StopLeg, ...] = ()
    floor: Decimal | None = None

    @staticmethod
    def of(position: Position | None) -> Exposure:
        if position is None or position.size == 0:
            return FLAT
        return Exposure(position.size, position.entry_price, position.stop_loss, position.partial_stops)

    @staticmethod
    def held(position: Position | None, price: Decimal) -> Exposure:
        """The coin held on spot as a position: its stops are the spot stop orders that sell it (partial legs,
        each for its own quantity), what no stop sells can lose its whole value, and its entry is `price`
        (the price it can be sold at now) where the cost of the coin is not known (entry_price 0)."""
        if position is None or position.size <= 0:
            return SPOT_FLAT
        entry = position.entry_price if position.entry_price > 0 else price
        return Exposure(position.size, entry, None, position.partial_stops, ZERO)

    @property
    def long(self) -> bool:
        return self.size > 0

    @property
    def flat(self) -> Exposure:
        return FLAT if self.floor is None else SPOT_FLAT


FLAT = Exposure(ZERO, ZERO)
SPOT_FLAT = Exposure(ZERO, ZERO, floor=ZERO)


@dataclass(frozen=True, slots=True)
class Fill:
    """A fill the worst case assumes: signed quantity, price, the stop the order carries, and where that stop
    covers only what filled, how much of it (None: all of it; a spot buy's stop sells the coin that arrived,
    net of the fee paid in it, on the lot step: spot_fill)."""

    qty: Decimal
    price: Decimal
    stop_loss: Decimal | None = None
    covers: Decimal | None = None


def spot_fill(fill: Fill, step: Decimal) -> Fill:
    """A spot buy's fill as its stop covers it: the coin that arrives is what filled less the fee paid in that
    coin (the taker rate, the larger), and its stop order sells that on the lot step; the rest (dust) has no
    stop and can lose its whole value."""
    if fill.stop_loss is None or fill.qty <= 0:
        return fill
    net = fill.qty * (1 - TAKER_FEE)
    covered = (net / step).to_integral_value(rounding=ROUND_FLOOR) * step if step > 0 else net
    return replace(fill, covers=covered)


@dataclass(frozen=True, slots=True)
class LossAtStops:
    """What the stops let a position lose from its entry (taker fees both ways), and what they leave open."""

    loss: Decimal  # of the quantity the stops close, and where a floor bounds the rest, of that down to it
    uncovered: Decimal  # quantity no stop closes
    floored: bool = False  # the uncovered quantity's loss down to the floor is in `loss` (spot)

    @property
    def unbounded(self) -> bool:
        """Some of the position has no stop and nothing else bounds its loss (a perpetual without a stop)."""
        return self.uncovered > 0 and not self.floored


def unit_loss(long: bool, entry: Decimal, price: Decimal) -> Decimal:
    """What one unit bought (long) or sold at `entry` loses when closed at `price`, with the taker fee both ways."""
    move = entry - price if long else price - entry
    return move + TAKER_FEE * (entry + price)


def loss_at_stops(exposure: Exposure) -> LossAtStops:
    """The loss if the price runs through every stop of the position, in the order they trigger, and on down
    to the floor where there is one (spot: what no stop sells loses its whole value): worked out in WIDE
    precision and rounded once, so that an average entry with no end gives the exact loss."""
    if exposure.size == 0:
        return LossAtStops(ZERO, ZERO)
    whole, entry, wide = exposure.stop_loss, exposure.entry, WIDE
    if not exposure.partial and whole is not None:  # one whole stop (the common case, kept cheap)
        move = wide.subtract(entry, whole) if exposure.long else wide.subtract(whole, entry)
        unit = wide.add(move, wide.multiply(TAKER_FEE, wide.add(entry, whole)))
        return LossAtStops(+wide.multiply(abs(exposure.size), unit), ZERO)
    with localcontext(WIDE):
        found = _loss_at_stops(exposure)
    return LossAtStops(+found.loss, found.uncovered, found.floored)


def _loss_at_stops(exposure: Exposure) -> LossAtStops:
    long, whole = exposure.long, exposure.stop_loss
    remaining, loss = abs(exposure.size), ZERO
    for leg in sorted(exposure.partial, key=lambda leg: -leg.price if long else leg.price):
        if remaining <= 0 or (whole is not None and not triggers_first(long, leg.price, whole)):
            break
        closed = min(leg.qty, remaining)
        loss += closed * unit_loss(long, exposure.entry, leg.price)
        remaining -= closed
    if whole is not None and remaining > 0:
        loss += remaining * unit_loss(long, exposure.entry, whole)
        remaining = ZERO
    if exposure.floor is not None and long:
        return LossAtStops(
            loss + remaining * unit_loss(long, exposure.entry, exposure.floor), remaining, True
        )
    return LossAtStops(loss, remaining)


def worse(at_stops: LossAtStops) -> tuple[bool, Decimal, Decimal]:
    """What orders the ways a position may be left, worst last: unbounded above any figure, then the loss,
    then what is left under no stop."""
    return at_stops.unbounded, at_stops.loss, at_stops.uncovered


def triggers_first(long: bool, price: Decimal, other: Decimal) -> bool:
    """Whether a stop at `price` triggers no later than one at `other` as the price runs against the position."""
    return price >= other if long else price <= other


def widest(long: bool, stops: Sequence[Decimal]) -> Decimal:
    """The stop that lets the position run furthest: the lowest for a long, the highest for a short."""
    return min(stops) if long else max(stops)


def after_fills(exposure: Exposure, fills: Sequence[Fill], scope: StopScope) -> Exposure:
    """The position left when every fill happens. A fill that closes or flips the position takes its stops
    with it; a stop carried by a fill on the side the position is left applies as `scope` says: the widest
    of them replaces the whole stop, or each is a partial stop for the quantity its fill added."""
    whole_stops = scope is WHOLE_POSITION
    if exposure.size == 0 and len(fills) == 1 and whole_stops:  # opening from flat: the common case, cheap
        fill = fills[0]
        if fill.qty == 0:
            return exposure.flat
        return Exposure(fill.qty, fill.price, fill.stop_loss, floor=exposure.floor)
    size, entry, whole, partial = exposure.size, exposure.entry, exposure.stop_loss, exposure.partial
    carried: list[Decimal] = []
    for fill in fills:
        after = size + fill.qty
        if size == 0:  # opening: the fill's price is the entry
            entry = fill.price if after else ZERO
        elif (size > 0) == (fill.qty > 0):
            entry = average(abs(size), entry, abs(fill.qty), fill.price) if after else ZERO
        elif after == 0 or (after > 0) != (size > 0):
            entry = fill.price if after else ZERO
            whole, partial, carried = None, (), []
        size = after
        if fill.stop_loss is not None and size != 0 and (size > 0) == (fill.qty > 0):
            if whole_stops:
                carried.append(fill.stop_loss)
            else:
                covered = abs(fill.qty) if fill.covers is None else fill.covers
                if covered > 0:
                    partial = (*partial, StopLeg(fill.stop_loss, covered))
    if size == 0:
        return exposure.flat
    if carried:
        whole = widest(size > 0, carried)
    return Exposure(size, entry, whole, partial, exposure.floor)


def average(qty: Decimal, price: Decimal, more: Decimal, at: Decimal) -> Decimal:
    """The average price of `qty` at `price` and `more` at `at`, in WIDE precision (loss_at_stops)."""
    wide = WIDE  # its methods, not a context switch: this runs on every fill judged
    return wide.divide(wide.add(wide.multiply(qty, price), wide.multiply(more, at)), wide.add(qty, more))


def with_pending(position: Position | None, pending: PendingOrders | None, scope: StopScope) -> Exposure:
    """The position with the orders pending on its side filled as far as makes its loss at its own stops
    worst (worst_fill_of): what the position's stops must hold, and what changing them is judged on. A
    pending order's own stop is not counted on: what is left of it may fill after its first part set it."""
    base = Exposure.of(position)
    if base.size == 0:
        return base
    side = BUY if base.long else SELL
    bare = [replace(fill, stop_loss=None) for fill in pending_fills(pending, side, base.entry)]
    return worst_fill_of(base, base.stop_loss, bare, scope)[0]


def worst_case(
    base: Exposure, order: Fill, pending: Sequence[Fill], step: Decimal, scope: StopScope
) -> tuple[Exposure, LossAtStops]:
    """The position an order leaves at its worst, with its loss at the stops, over every way the orders
    pending on its side may fill (each in part, by whole lot steps of `step`, in full or not at all, and in
    any order).

    The order fills. Where an order's stop becomes the whole position's, the whole stop that then applies
    is the one of whichever stop-carrying order fills last: the order's own, or a pending one's (which then
    filled at least one lot step); without either, the position's stop now (and then no pending order
    carrying a stop filled). For each such stop the worst is found by worst_fill_of. Where a stop covers
    only what its order filled, every pending order fills in full, each with its own stop for what it
    filled: each unit then leaves at its own stop, or at the floor, so every fill only adds to the loss
    (a part fills less of the same), and a pending order without a stop leaves its quantity uncovered.
    """
    forced = after_fills(base, [order], scope)
    if forced.size == 0:
        return forced, LossAtStops(ZERO, ZERO)
    same = [fill for fill in pending if (fill.qty > 0) == forced.long]
    if not same:
        return forced, loss_at_stops(forced)
    if scope is not WHOLE_POSITION:
        everything = after_fills(forced, same, scope)
        return everything, loss_at_stops(everything)
    # The order filling last: its own stop (after_fills gave it to the position) with anything before it;
    # without one, the stop now. A pending order carrying a stop may fill without setting it too (a rest
    # filled after its first part: the stop came with the first fill), so any of them may fill here.
    bare = [replace(fill, stop_loss=None) for fill in same]
    cases = [worst_fill_of(forced, forced.stop_loss, bare, scope)]
    for fill in same:  # a pending order carrying a stop fills last (one lot step at least) and sets it
        if fill.stop_loss is None:
            continue
        least = min(step, abs(fill.qty)) if step > 0 else abs(fill.qty)
        sign = 1 if fill.qty > 0 else -1
        last = after_fills(forced, [Fill(least * sign, fill.price)], scope)
        rest = [other for other in same if other is not fill]
        if abs(fill.qty) > least:
            rest.append(Fill(fill.qty - least * sign, fill.price))
        cases.append(worst_fill_of(last, fill.stop_loss, rest, scope))
    return max(cases, key=lambda case: worse(case[1]))


def worst_fill_of(
    forced: Exposure, stop: Decimal | None, optional: Sequence[Fill], scope: StopScope
) -> tuple[Exposure, LossAtStops]:
    """With `stop` as the whole stop, the worst of `forced` plus any part of the `optional` fills.

    What the stops pay back depends only on how much there is to close, so for a given quantity the worst is
    made of the worst entries (the highest for a long): the worst case is a prefix of the optional fills
    sorted worst first, cut at a fill's end or where the quantity passes a partial leg's size (the loss is
    linear in between). Each of those cuts is judged."""
    start = forced if stop == forced.stop_loss else replace(forced, stop_loss=stop)
    if not optional:  # the common case: nothing pending on the side, one position to judge
        return start, loss_at_stops(start)
    long = start.long
    ordered = sorted(optional, key=lambda fill: -fill.price if long else fill.price)
    legs = sorted(start.partial, key=lambda leg: -leg.price if long else leg.price)
    edges: list[Decimal] = []
    total = ZERO
    for leg in legs:
        if stop is not None and not triggers_first(long, leg.price, stop):
            break
        total += leg.qty
        edges.append(total)
    best = (start, loss_at_stops(start))
    current = start
    for fill in ordered:
        size = abs(current.size)
        cuts = [edge - size for edge in edges if size < edge < size + abs(fill.qty)] + [abs(fill.qty)]
        for cut in cuts:
            probe = after_fills(current, [Fill(cut if long else -cut, fill.price)], scope)
            loss = loss_at_stops(probe)
            if worse(loss) > worse(best[1]):
                best = (probe, loss)
        current = after_fills(current, [Fill(fill.qty, fill.price)], scope)
    return best


def pending_fills(pending: PendingOrders | None, side: Side, price: Decimal) -> list[Fill]:
    """The orders pending on `side` as fills, the known ones at their own price and stop; the rest of the
    side's quantity at `price` without a stop."""
    if pending is None or (not pending.fills and not pending.on_side(side)):
        return []
    known = [f for f in pending.fills if f.side is side]
    fills = [Fill(f.qty * side.sign, f.price or price, f.stop_loss) for f in known]
    rest = pending.on_side(side) - sum((f.qty for f in known), ZERO)
    if rest > 0:
        fills.append(Fill(rest * side.sign, price))
    return fills


def loss_cap(limits: EffectiveLimits, equity: Decimal | None) -> tuple[Decimal, Code] | None:
    """The loss one position may take at its stops: the smaller of maxLossPerTradeUsd and the equity share of
    maxLossPerTradePct (the latter unknown without the equity); None when no limit is set."""
    usd, pct = limits.max_loss_per_trade_usd, limits.max_loss_per_trade_pct
    if pct is None or equity is None:  # (on every growing order's judgement: kept to a few operations)
        return None if usd is None else (usd, Code.MAX_LOSS_PER_TRADE_USD)
    share = max(equity, ZERO) * pct / 100
    if usd is not None and usd <= share:
        return usd, Code.MAX_LOSS_PER_TRADE_USD
    return share, Code.MAX_LOSS_PER_TRADE_PCT


@dataclass(frozen=True, slots=True)
class StopChange:
    """A change to a position's stops, judged: the rule it breaks, the cap, and the loss before and after."""

    rule: Code
    cap: Decimal | None
    before: LossAtStops
    after: LossAtStops


def widens(before: LossAtStops, after: LossAtStops) -> bool:
    """Whether the stops after let the position lose more: more left uncovered, or the same and more lost."""
    if after.uncovered != before.uncovered:
        return after.uncovered > before.uncovered
    return after.loss > before.loss


def judge_stop_change(
    limits: EffectiveLimits, equity: Decimal | None, before: Exposure, after: Exposure
) -> StopChange | None:
    """What is wrong with changing the stops from `before` to `after` (the same position), or None.

    A change that does not widen the loss always passes (a stop added or moved closer); one that widens it
    must keep a stop on every part under requireStopLoss, and keep the loss at the stops within the cap."""
    old, new = loss_at_stops(before), loss_at_stops(after)
    if before.size == 0 or not widens(old, new):
        return None
    if limits.require_stop_loss and new.uncovered > 0:  # on spot too: some of the coin held without a stop
        return StopChange(Code.REQUIRE_STOP_LOSS, None, old, new)
    found = loss_cap(limits, equity)
    if found is None:
        return None
    cap, rule = found
    if (new.unbounded and new.uncovered > old.uncovered) or new.loss > cap:
        return StopChange(rule, cap, old, new)
    return None


def stop_violation(
    change: StopChange, symbol: str, what: str, exposure: Exposure, fix: NextAction
) -> Violation:
    """The refusal of a stop change in numbers: `what` says the action ("cancelling the stop at 2700")."""
    size = f"{plain(abs(exposure.size))} {symbol}"
    if change.rule is Code.REQUIRE_STOP_LOSS:
        detail = f"{what} would leave {plain(change.after.uncovered)} of the {size} position without a stop; policy.json requires one"
        return Violation(change.rule, "a stop_loss on every position", "none", detail, fix)
    assert change.cap is not None
    cap = usd(change.cap)
    if change.after.unbounded:
        detail = f"{what} would leave {plain(change.after.uncovered)} of the {size} position without a stop: its loss is unbounded, above the {cap} a trade may lose"
        loss = UNBOUNDED
    else:
        loss = plain_usd(change.after.loss)
        detail = f"{what} would let the {size} position lose ${loss} at its stops from its entry {plain(+exposure.entry)}, above the {cap} a trade may lose"
    return Violation(change.rule, plain_usd(change.cap), loss, detail, fix)


def check_stop_change(
    policy: Policy,
    state: TradingState,
    symbol: str,
    change: tuple[Exposure, Exposure],
    equity: Decimal | None,
    what: str,
    fix: NextAction,
    holds: Sequence[Hold] = (),
) -> list[Violation]:
    """Violations of changing a position's stops from `change[0]` to `change[1]`: one that widens the loss
    is a risk-increasing action (refused unless trading is active, naming what of `holds` stops it) and
    must fit the stop rules; `fix` is the next action a loss-rule refusal offers."""
    before, after = change
    if before.size == 0 or not widens(loss_at_stops(before), loss_at_stops(after)):
        return []
    if not state.permits(Effect.GROW):
        held = blocking(holds, state, Effect.GROW)
        detail = (
            f"trading is {state.value}: {what} would widen the position's loss at its stops ({held_by(held)})"
        )
        keep = NextAction.stop(
            "keep the stops; closer stops, cancels of ordinary orders and reducing orders still work",
            human=resume_trading(held),
        )
        return [Violation(Code.TRADING_STATE, state.value, what, detail, keep, held)]
    judged = judge_stop_change(policy.limits_for(symbol), equity, before, after)
    return [] if judged is None else [stop_violation(judged, symbol, what, before, fix)]


def check_trading_stop(
    policy: Policy,
    state: TradingState,
    position: Position,
    equity: Decimal | None,
    new: Decimal | None,
    tick: Decimal,
    pending: PendingOrders | None = None,
    market: Decimal | None = None,
    mark: Decimal | None = None,
    scope: StopScope = StopScope.POSITION,
    holds: Sequence[Hold] = (),
) -> list[Violation]:
    """Violations of setting the position's whole stop to `new` (None: removed), as set_trading_stop does,
    judged on the position with the orders pending on its side (with_pending, their stops applied as `scope`
    says): the next action moves it no farther than the farthest stop that fits (the loss limit, and the
    price collar from `mark`), beyond `market` (the price now: Bybit refuses a long's stop at or above it; a
    stop between it and the entry is in profit), or keeps it where it is (where that is nearer than the
    farthest that fits: the stop already loses more than the cap)."""
    symbol = position.symbol
    before = with_pending(position, pending, scope)
    after = with_pending(replace(position, stop_loss=new), pending, scope)
    limits = policy.limits_for(symbol)
    cap = loss_cap(limits, equity)
    collar = _stop_collar(limits, position.size > 0, mark, tick)
    fits = None
    if cap is not None and before.size != 0:

        def loss(stop: Decimal) -> Decimal:
            return loss_at_stops(with_pending(replace(position, stop_loss=stop), pending, scope)).loss

        # Beyond the price now (Bybit refuses a stop at or past it); a stop between it and the entry is one
        # in profit, which may be the farthest that fits when no stop past the entry does.
        reference = market if market is not None else position.entry_price
        fits = farthest_stop(loss, cap[0], before.long, reference, tick)
    if collar is not None and before.size != 0 and (fits is not None or cap is None):  # nor the collar
        fits = collar if fits is None else (max(fits, collar) if position.size > 0 else min(fits, collar))
        if market is not None and (fits >= market if position.size > 0 else fits <= market):
            fits = None  # the collar's edge is not beyond the price: no stop farther than now fits it
    fix = _stop_fix(position, fits, state.permits(Effect.GROW))
    what = "removing the stop" if new is None else f"a stop at {plain(new)}"
    if new is not None and market is not None and (new >= market if position.size > 0 else new <= market):
        return [_wrong_side(position, new, market, tick, fix)]
    judged = check_stop_change(policy, state, symbol, (before, after), equity, what, fix, holds)
    beyond = collar is not None and new is not None and (new < collar if position.size > 0 else new > collar)
    if not beyond or any(v.rule is Code.TRADING_STATE for v in judged):
        return judged
    if before.size == 0 or not widens(loss_at_stops(before), loss_at_stops(after)):
        return judged  # a stop added or moved closer: never refused, wherever it is
    assert collar is not None and new is not None
    detail = f"{what} is farther from the mark {plain(mark or ZERO)} than the price collar allows: at most {plain(collar)}"
    return [Violation(Code.PRICE_COLLAR_STOP, plain(collar), plain(new), detail, fix), *judged]


def _stop_fix(position: Position, fits: Decimal | None, may_grow: bool) -> NextAction:
    """The next action of a refused stop change: move the stop no farther than `fits` (the farthest that
    fits), or keep it where it is. It is kept where trading may not grow (no stop moves away then), and where
    the stop already loses more than the cap, so that the farthest that fits is nearer than it: that would
    be a move the agent did not ask for, and one tick farther than the stop now is refused, as any widening
    past the cap is."""
    symbol, current = position.symbol, position.stop_loss
    if current is not None and (
        fits is None or not may_grow or triggers_first(position.size > 0, fits, current)
    ):
        fits = current
    if fits is not None and fits != current:
        args = {"symbol": symbol, "stop_loss": plain(fits)}
        return NextAction.call("set_trading_stop", args, f"move the stop no farther than {plain(fits)}")
    if current is not None:
        keep = {"symbol": symbol, "stop_loss": plain(current)}
        return NextAction.call("set_trading_stop", keep, "keep the stop where it is")
    return NextAction.stop("no farther stop fits the loss limit", human=RAISE_LOSS_CAP)


def _stop_collar(limits: EffectiveLimits, long: bool, mark: Decimal | None, tick: Decimal) -> Decimal | None:
    """The farthest whole stop from `mark` the price collar allows (a long's below it, a short's above)."""
    if mark is None:
        return None
    return collar_edge(mark, SELL if long else BUY, tick, limits.price_collar_pct, limits.price_collar_ticks)


def _wrong_side(
    position: Position, new: Decimal, market: Decimal, tick: Decimal, fix: NextAction
) -> Violation:
    """A stop at or past the price now: Bybit refuses it (10001), so it is not sent. The agent asked for a stop
    nearer than any the exchange takes, so the next action is the nearest of a stop 1 % beyond the price and
    the stop a loss refusal would give (the farthest that fits, or the one the position keeps): the
    farthest that fits would offer a stop the collar or the loss limit allows, many times farther than asked
    (a long at 3100 asking 3150 was offered 2790 under a 10 % collar)."""
    long = position.size > 0
    away = (
        floor_to_step(market * Decimal("0.99"), tick)
        if long
        else ceil_to_step(market * Decimal("1.01"), tick)
    )
    given = fix.args.get("stop_loss") if fix.tool == "set_trading_stop" and fix.args else None
    other = Decimal(str(given)) if given is not None else None
    if other is None or (other <= away if long else other >= away):
        args = {"symbol": position.symbol, "stop_loss": plain(away)}
        fix = NextAction.call("set_trading_stop", args, f"a stop 1 % beyond the price: {plain(away)}")
    way = "below" if long else "above"
    detail = f"a {'long' if long else 'short'}'s stop must be {way} the price now ({plain(market)}); {plain(new)} is not"
    return Violation(Code.STOP_LOSS, f"{way} {plain(market)}", plain(new), detail, fix)


RAISE_LOSS_CAP = "raise maxLossPerTradeUsd/Pct, or turn requireStopLoss off, in policy.json"


@dataclass(frozen=True, slots=True)
class TradingStop:
    """A set_trading_stop call: the position's whole stop and/or take-profit (0 removes one; None leaves it)."""

    symbol: str
    stop_loss: Decimal | None
    take_profit: Decimal | None

    def on_tick(self, tick: Decimal, *, long: bool) -> TradingStop:
        """The prices Bybit accepts, rounded as plan_order rounds an order's: on the tick on the closing
        side's safe side (a long's stop up, towards the price: it loses less; its target up, away)."""
        closing = SELL if long else BUY

        def rounded(price: Decimal | None) -> Decimal | None:
            return price if not price else price_on_tick(price, tick, closing)

        return replace(self, stop_loss=rounded(self.stop_loss), take_profit=rounded(self.take_profit))


def check_trading_stop_call(
    policy: Policy,
    state: TradingState,
    position: Position,
    equity: Decimal | None,
    call: TradingStop,
    tick: Decimal,
    pending: PendingOrders | None,
    touch: Touch,
    *,
    scope: StopScope,
    holds: Sequence[Hold] = (),
) -> list[Violation]:
    """Violations of a set_trading_stop call (its prices on the tick), judged as the venue will apply it: a stop
    or target needs a position; the stop by check_trading_stop; a target beyond the price in the position's
    favour (Bybit checks it against the last price, between the bid and the ask: 10001 otherwise)."""
    if position.size == 0:
        detail = f"there is no {call.symbol} position: Bybit sets a stop or a target only on a position"
        stop = NextAction.stop(
            "nothing to protect; give a new position its stop with plan_order's stop_loss",
            human="nothing: a stop needs a position",
        )
        return [Violation(Code.NO_POSITION, "a position", "none", detail, stop)]
    long = position.size > 0
    violations: list[Violation] = []
    if call.stop_loss is not None:
        market = min(touch.bid, touch.mark) if long else max(touch.ask, touch.mark)
        new = call.stop_loss if call.stop_loss > 0 else None
        violations += check_trading_stop(
            policy, state, position, equity, new, tick, pending, market, touch.mark, scope, holds
        )
    if call.take_profit:
        favour = max(touch.ask, touch.mark) if long else min(touch.bid, touch.mark)
        if call.take_profit <= favour if long else call.take_profit >= favour:
            violations.append(_target_wrong_side(call, long, favour, tick))
    return violations


def _target_wrong_side(call: TradingStop, long: bool, favour: Decimal, tick: Decimal) -> Violation:
    """A take-profit at or behind the price now: Bybit refuses it (10001). The next action keeps the stop
    asked for and puts the target 1 % beyond the price."""
    away = (
        ceil_to_step(favour * Decimal("1.01"), tick)
        if long
        else floor_to_step(favour * Decimal("0.99"), tick)
    )
    args: dict[str, str] = {"symbol": call.symbol, "take_profit": plain(away)}
    if call.stop_loss is not None:
        args["stop_loss"] = plain(call.stop_loss)
    fix = NextAction.call("set_trading_stop", args, f"a take-profit 1 % beyond the price: {plain(away)}")
    way = "above" if long else "below"
    assert call.take_profit is not None
    detail = f"a {'long' if long else 'short'}'s take-profit must be {way} the price now ({plain(favour)}); {plain(call.take_profit)} is not"
    return Violation(Code.TAKE_PROFIT, f"{way} {plain(favour)}", plain(call.take_profit), detail, fix)


def without_legs(position: Position, order_ids: frozenset[str], *, whole: bool) -> Position:
    """The position's stops after cancelling the partial legs with these ids (and the whole stop if `whole`)."""
    partial = tuple(leg for leg in position.partial_stops if leg.order_id not in order_ids)
    return replace(position, stop_loss=None if whole else position.stop_loss, partial_stops=partial)


def farthest_stop(
    loss: Callable[[Decimal], Decimal], cap: Decimal, long: bool, reference: Decimal, tick: Decimal
) -> Decimal | None:
    """The farthest stop on the tick strictly beyond `reference` (below it for a long) whose `loss` is at most
    `cap`, or None when not even the nearest one fits. `loss` must grow as the stop moves away. A short's
    stop goes no farther than LARGEST_STOP: where every stop fits (the position's other stops close it all
    first, or the order leaves a long), the largest an agent can send."""
    if tick <= 0:
        return None
    nearest = ceil_to_step(reference, tick) - tick if long else floor_to_step(reference, tick) + tick
    if nearest <= 0 or loss(nearest) > cap:
        return None
    steps = int(nearest / tick) - 1 if long else 1
    if not long:  # no floor above: widen until it breaks
        top = int((LARGEST_STOP - nearest) / tick)  # the steps to the largest stop an agent can send
        while loss(nearest + steps * tick) <= cap:
            if steps >= top:  # the stop no longer matters: any fits
                return nearest + max(top, 0) * tick
            steps = min(steps * 2, top)
    fits, breaks = 0, steps + (1 if long else 0)
    if long and loss(tick) <= cap:
        return tick
    while breaks - fits > 1:
        middle = (fits + breaks) // 2
        if loss(nearest - middle * tick if long else nearest + middle * tick) <= cap:
            fits = middle
        else:
            breaks = middle
    return nearest - fits * tick if long else nearest + fits * tick
