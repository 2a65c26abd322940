"""Conditional orders and the position's TP/SL as Bybit keeps them: orders that wait, Untriggered, for a price.

A take-profit, stop-loss or trailing stop is an order of the position (trading-stop.mdx: "Passing these
parameters will create conditional orders by the system internally"): reduce-only and close-on-trigger, on
the side that closes the position. In **Full** mode there is at most one of each kind and its quantity follows
the position's size (the system "adjust[s] the qty according to the size of the open position"); in
**Partial** mode each leg has its own size, they add up, and trading-stop only adds them. A position that
closes (or flips) takes its TP/SL with it (cancelType CancelByTpSlTsClear, enum.mdx). A TP and an SL set
together are bound: cancelling one by its id cancels both, until a one-sided trading-stop change unbinds them.

A conditional order (a create with triggerPrice: stopOrderType Stop) uses no margin until it triggers.

When the price its trigger_by names (LastPrice; MarkPrice; IndexPrice, which is the mark on paper) reaches
the trigger price, the order becomes the Market or Limit order it describes and fills through the book like
any other; it keeps its id, stopOrderType and createType (CreateByStopLoss, ...). Everything that moves
prices ends in `Engine.rematch`, which calls `StopBook.trigger` after filling resting orders.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING, Any

from pilot.paper.market import floor_to
from pilot.paper.orders import (
    CONDITIONAL,
    CREATE_TYPES,
    DEACTIVATED,
    FALL,
    FULL_LEGS,
    PARTIAL_LEGS,
    PARTIAL_STOP_LOSS,
    PARTIAL_TAKE_PROFIT,
    POSITION_LEGS,
    RISE,
    STOP_LOSS,
    TAKE_PROFIT,
    TRAILING_STOP,
    UNTRIGGERED,
    ZERO,
    SimOrder,
)
from pilot.paper.scenario import InstrumentSpec
from pilot.paper.validation import (
    Leg,
    SimReject,
    Tpsl,
    Trigger,
    apply_price_limit,
    check_price,
    check_qty,
    check_tpsl_side,
    check_trigger_direction,
    given,
    is_true,
    last_price,
    parse_tpsl,
    price_limits,
    to_decimal,
    trigger_by,
    wire_decimal,
)

if TYPE_CHECKING:
    from pilot.paper.engine import Engine

MAX_CONDITIONAL = 10  # create-order.mdx: at most 10 conditional orders per symbol (110009 beyond)
MAX_PARTIAL = 20  # error.mdx 110061: at most 20 TP/SLs under Partial tpSlMode
MAX_TRIGGER_PASSES = 10  # a fill can set TP/SL that the same prices trigger: look again, this many times
FULL_KIND = {"tp": TAKE_PROFIT, "sl": STOP_LOSS}
PARTIAL_KIND = {"tp": PARTIAL_TAKE_PROFIT, "sl": PARTIAL_STOP_LOSS}
TAKES = (TAKE_PROFIT, PARTIAL_TAKE_PROFIT)
# a leg's tpslMode as listed; a whole-position trailing stop was recorded with UNKNOWN
TPSL_MODE_OF = {TAKE_PROFIT: "Full", STOP_LOSS: "Full", TRAILING_STOP: "UNKNOWN"}
TPSL_MODE_OF |= {kind: "Partial" for kind in PARTIAL_LEGS}
# Bybit's cancel types for the other leg of a pair when one triggers (enum.mdx cancelType)
PARTNER_CANCEL = {True: "CancelByOCOSlCanceledByTpTriggered", False: "CancelByOCOTpCanceledBySlTriggered"}
CLEARED = "CancelByTpSlTsClear"  # enum.mdx: TP/SL order cancelled when the position is cleared
NOT_MODIFIED = (34040, "not modified")  # error.mdx 34040: already set, or nothing to set


class StopBook:
    """The Untriggered orders of one engine, and every rule about them. Not thread-safe: the engine's lock."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.waiting: dict[str, SimOrder] = {}  # Untriggered orders by id, oldest first
        self._pairs = itertools.count(1)

    # ---- reading --------------------------------------------------------------------------------

    def reference_price(self, instrument: InstrumentSpec, by: str) -> Decimal:
        """The price a trigger compares with: the last price, or the mark (MarkPrice, and IndexPrice: the
        paper exchange has one reference price, the mark)."""
        quote = self.engine.market.quote(instrument.symbol)
        return last_price(quote, instrument) if by == "LastPrice" else quote.mark

    def legs(self, symbol: str, kinds: Iterable[str] = POSITION_LEGS) -> list[SimOrder]:
        """The waiting TP/SL (and trailing stop) orders of a position, oldest first."""
        wanted = tuple(kinds)
        return [o for o in self.waiting.values() if o.symbol == symbol and o.stop_order_type in wanted]

    def full_leg(self, symbol: str, kind: str) -> SimOrder | None:
        return next(iter(self.legs(symbol, (kind,))), None)

    def _position(self, symbol: str) -> Decimal:
        return self.engine.accounts.positions[symbol].size

    # ---- the position's TP/SL ---------------------------------------------------------------------

    def _new_leg(
        self, symbol: str, kind: str, trigger: Decimal, by: str, qty: Decimal, **extra: Any
    ) -> SimOrder:
        """A TP/SL order of the position, on the side that closes it, waiting for `trigger`."""
        engine = self.engine
        instrument = engine.instruments[("linear", symbol)]
        long = self._position(symbol) > 0
        now = engine.clock_ms()
        limit = extra.pop("limit_price", ZERO)
        order = SimOrder(
            str(uuid.uuid4()),
            "",
            "linear",
            symbol,
            "Sell" if long else "Buy",
            "Limit" if limit else "Market",
            limit,
            qty,
            "GTC" if limit else "IOC",
            True,
            now,
            now,
            status=UNTRIGGERED,
            last_price_on_created=last_price(engine.market.quote(symbol), instrument),
            stop_order_type=kind,
            create_type=CREATE_TYPES[kind],
            trigger_price=trigger,
            trigger_direction=(RISE if long else FALL) if kind in TAKES else (FALL if long else RISE),
            trigger_by=by,
            close_on_trigger=True,
            tpsl_mode=TPSL_MODE_OF[kind],
            **extra,
        )
        engine.add_order(order)
        self.waiting[order.order_id] = order
        return order

    def new_pair(self) -> str:
        return f"pair-{next(self._pairs)}-{uuid.uuid4().hex[:8]}"

    def _set_full(self, symbol: str, kind: str, leg: Leg, pair: str) -> None:
        """Set, move or (price ZERO) cancel the position's one Full leg of `kind`."""
        existing = self.full_leg(symbol, kind)
        if not leg.price:
            if existing is not None:
                self._deactivate(existing, "CancelByUser")
            return
        if existing is None:
            self._new_leg(symbol, kind, leg.price, leg.trigger_by, abs(self._position(symbol)), pair=pair)
            return
        existing.trigger_price, existing.trigger_by = leg.price, leg.trigger_by
        existing.pair, existing.updated_ms = pair, self.engine.clock_ms()

    def _set_full_legs(self, symbol: str, legs: dict[str, Leg]) -> None:
        """Full TP and/or SL at once. Both set together are bound; setting one alone unbinds the other."""
        both = all(side in legs and legs[side].price for side in ("tp", "sl"))
        pair = self.new_pair() if both else ""
        if not both:
            for kind in (TAKE_PROFIT, STOP_LOSS):
                other = self.full_leg(symbol, kind)
                if other is not None:
                    other.pair = ""
        for side, leg in legs.items():
            self._set_full(symbol, FULL_KIND[side], leg, pair)
        self.sync_position(symbol)

    def _add_partial(
        self, symbol: str, legs: dict[str, Leg], qty: Decimal, pair: str, parent: str = ""
    ) -> None:
        for side, leg in legs.items():
            self._new_leg(
                symbol,
                PARTIAL_KIND[side],
                leg.price,
                leg.trigger_by,
                qty,
                limit_price=leg.limit_price,
                pair=pair,
                parent_order_link_id=parent,
            )

    def sync_position(self, symbol: str) -> None:
        """Show the Full legs on the position (position.mdx takeProfit / stopLoss / trailingStop): the
        position's fields are read from its orders, never set apart from them."""
        position = self.engine.accounts.positions.get(symbol)
        if position is None:
            return
        take, stop, trail = (self.full_leg(symbol, kind) for kind in FULL_LEGS)
        position.take_profit = take.trigger_price if take else ZERO
        position.stop_loss = stop.trigger_price if stop else ZERO
        position.trailing_stop = trail.trailing_distance if trail else ZERO

    def position_changed(self, symbol: str, before: Decimal) -> None:
        """After the position's size changed: a closed or flipped position loses every TP/SL; otherwise Full
        legs take the new size and Partial legs never add up to more than the position (the newest shrink
        first, a leg shrunk to nothing is cancelled)."""
        size = self._position(symbol)
        if size == 0 or (before != 0 and (size > 0) != (before > 0)):
            for leg in self.legs(symbol):
                self._deactivate(leg, CLEARED)
            self.sync_position(symbol)
            return
        now = self.engine.clock_ms()
        for leg in self.legs(symbol, FULL_LEGS):
            if leg.qty != abs(size):
                leg.qty, leg.updated_ms = abs(size), now
        for kind in PARTIAL_LEGS:
            excess = sum((leg.qty for leg in self.legs(symbol, (kind,))), ZERO) - abs(size)
            for leg in reversed(self.legs(symbol, (kind,))):
                if excess <= 0:
                    break
                if leg.qty <= excess:  # nothing of it is left: cancelled, showing the size it had
                    excess -= leg.qty
                    self._deactivate(leg, "CancelByReduceOnly")
                else:
                    leg.qty, leg.updated_ms, excess = leg.qty - excess, now, ZERO

    def attach(self, order: SimOrder, filled: Decimal) -> None:
        """The TP/SL sent with `order` (create-order.mdx), for a fill of `filled` that grew the position on
        the order's side: Full ones become the position's on the order's first fill (replacing the
        position's Full TP/SL), Partial ones a leg pair for what filled (tpSize/slSize = the filled qty)."""
        engine = self.engine
        if not (order.take_profit or order.stop_loss) or not engine.tpsl_on_create:
            return  # tpslOnCreate false: the scenario's lost stop, accepted with the create, never applied
        size = self._position(order.symbol)
        if size == 0 or (size > 0) != order.is_buy:
            return
        legs = _legs_of(order)
        if order.tpsl_mode == "Full":
            if order.cum_exec_qty == 0:  # the first fill
                self._set_full_legs(order.symbol, legs)
            return
        mine = [leg for leg in self.legs(order.symbol, PARTIAL_LEGS) if leg.pair == order.order_id]
        if mine:
            now = engine.clock_ms()
            for leg in mine:
                leg.qty, leg.updated_ms = leg.qty + filled, now
            return
        self._add_partial(order.symbol, legs, min(filled, abs(size)), order.order_id, order.order_link_id)

    def adopt_position_stops(self) -> None:
        """A position's TP/SL given as numbers (a scenario's positions[].stopLoss / takeProfit, or a state
        file from before TP/SL were orders) become its Full TP/SL orders."""
        for symbol, position in self.engine.accounts.positions.items():
            take, stop, trail = position.take_profit, position.stop_loss, position.trailing_stop
            if position.size != 0 and not self.legs(symbol, FULL_LEGS):
                legs = {
                    side: Leg(price, "LastPrice") for side, price in (("tp", take), ("sl", stop)) if price
                }
                if legs:
                    self._set_full_legs(symbol, legs)
                if trail:
                    self._set_trailing(symbol, trail, ZERO)
            self.sync_position(symbol)

    # ---- trading-stop -----------------------------------------------------------------------------

    def trading_stop(self, instrument: InstrumentSpec, params: dict[str, Any]) -> None:
        """/v5/position/trading-stop (trading-stop.mdx): tpslMode required; Full sets, moves or ("0")
        cancels the position's TP/SL and trailing stop (34040 when nothing would change); Partial adds legs
        of tpSize / slSize."""
        symbol = instrument.symbol
        size = self._position(symbol)
        if size == 0:
            raise SimReject(10001, "can not set tp/sl/ts for zero position")
        tpsl = parse_tpsl(params, instrument, mode_required=True)
        for side, leg in tpsl.legs:
            if leg.price:
                base = self.reference_price(instrument, leg.trigger_by)
                check_tpsl_side(size > 0, *_side_prices(leg, side, base))
        if tpsl.mode == "Partial":
            self._partial_stop(instrument, params, tpsl, size)
            return
        legs = {side: leg for side, leg in tpsl.legs if self._full_changes(symbol, FULL_KIND[side], leg)}
        trailing = self._trailing_change(instrument, params, size)
        if not legs and trailing is None:
            raise SimReject(*NOT_MODIFIED)
        if legs:
            self._set_full_legs(symbol, legs)
        if trailing is not None:
            self._set_trailing(symbol, *trailing)
        self.engine.accounts.positions[symbol].updated_ms = self.engine.clock_ms()

    def _full_changes(self, symbol: str, kind: str, leg: Leg) -> bool:
        existing = self.full_leg(symbol, kind)
        if existing is None:
            return bool(leg.price)
        return not (existing.trigger_price == leg.price and existing.trigger_by == leg.trigger_by)

    def _trailing_change(
        self, instrument: InstrumentSpec, params: dict[str, Any], size: Decimal
    ) -> tuple[Decimal, Decimal] | None:
        """(distance, activePrice) when trailingStop asks for a change; None when it is absent or the same."""
        if not given(params, "trailingStop"):
            return None
        try:
            distance = Decimal(str(params["trailingStop"]))
        except ArithmeticError:
            raise SimReject(10001, "params error: trailingStop invalid") from None
        if not distance.is_finite() or distance < 0:
            raise SimReject(10001, "params error: trailingStop cannot be less than 0")
        active = (
            to_decimal(params["activePrice"], "activePrice", 10001) if given(params, "activePrice") else ZERO
        )
        if distance:
            check_price(instrument, distance)
        if active:
            check_price(instrument, active)
        last = self.reference_price(instrument, "LastPrice")
        if distance and (last - distance if size > 0 else last + distance) <= 0:
            raise SimReject(10001, "params error: trailingStop is too wide")
        existing = self.full_leg(instrument.symbol, TRAILING_STOP)
        if existing is None:
            return (distance, active) if distance else None
        if (existing.trailing_distance, existing.active_price) == (distance, active):
            return None
        return distance, active

    def _set_trailing(self, symbol: str, distance: Decimal, active: Decimal) -> None:
        existing = self.full_leg(symbol, TRAILING_STOP)
        if existing is not None:
            self._deactivate(existing, "CancelByUser")
        if distance:
            leg = self._new_leg(symbol, TRAILING_STOP, ZERO, "LastPrice", abs(self._position(symbol)))
            leg.trailing_distance, leg.active_price = distance, active
            self._trail(leg)
        self.sync_position(symbol)

    def _partial_stop(
        self, instrument: InstrumentSpec, params: dict[str, Any], tpsl: Tpsl, size: Decimal
    ) -> None:
        """Partial legs from trading-stop: each side's size (tpSize / slSize, equal when both are sent), on
        the lot step, within what the position has left for that side (110058), at most 20 legs (110061)."""
        legs = {side: leg for side, leg in tpsl.legs if leg.price}
        if given(params, "trailingStop"):
            raise SimReject(10001, "params error: trailingStop is set in Full mode only")
        if not legs:
            raise SimReject(*NOT_MODIFIED)
        sizes = {side: params.get(f"{side}Size") for side in legs}
        if any(value in (None, "") for value in sizes.values()):
            raise SimReject(10001, "params error: tpSize / slSize is required in Partial mode")
        qty = {side: to_decimal(value, f"{side}Size", 10001) for side, value in sizes.items()}
        if len(set(qty.values())) > 1:
            raise SimReject(10001, "slSize and tpSize must be equal if both values are set")
        leg_qty = next(iter(qty.values()))
        if leg_qty % instrument.qty_step != 0:
            raise SimReject(
                10001, f"Qty invalid: size {leg_qty} is not a multiple of qtyStep {instrument.qty_step}"
            )
        for side in legs:
            taken = sum((leg.qty for leg in self.legs(instrument.symbol, (PARTIAL_KIND[side],))), ZERO)
            if taken + leg_qty > abs(size):
                raise SimReject(110058, "insufficient size of the remaining position for this TP/SL")
        if len(self.legs(instrument.symbol, PARTIAL_LEGS)) + len(legs) > MAX_PARTIAL:
            raise SimReject(
                110061, f"Not allowed to have more than {MAX_PARTIAL} TP/SLs under Partial tpSlMode"
            )
        self._add_partial(instrument.symbol, legs, leg_qty, self.new_pair() if len(legs) == 2 else "")

    # ---- conditional orders -----------------------------------------------------------------------

    def place_conditional(
        self, instrument: InstrumentSpec, trigger: Trigger, params: dict[str, Any], order: SimOrder
    ) -> None:
        """A create with triggerPrice (create-order.mdx): the trigger on the right side of the market for its
        direction (110092 / 110093), at most 10 per symbol (110009); no margin is taken until it triggers."""
        current = self.reference_price(instrument, trigger.by)
        check_trigger_direction(trigger.price, trigger.direction, current, trigger.by)
        mine = [
            o for o in self.waiting.values() if o.symbol == order.symbol and o.stop_order_type == CONDITIONAL
        ]
        if len(mine) >= MAX_CONDITIONAL:
            raise SimReject(110009, "The number of stop orders exceeds the maximum allowable limit")
        order.status = UNTRIGGERED
        order.stop_order_type, order.create_type = CONDITIONAL, CREATE_TYPES[CONDITIONAL]
        order.trigger_price, order.trigger_direction, order.trigger_by = (
            trigger.price,
            trigger.direction,
            trigger.by,
        )
        order.close_on_trigger = is_true(params.get("closeOnTrigger"))
        self.waiting[order.order_id] = order

    # ---- triggering -------------------------------------------------------------------------------

    def trigger(self, symbols: list[str]) -> None:
        """Fire every waiting order of `symbols` whose trigger price the reference price has reached, oldest
        first; look again while firing set new TP/SL (a fill's attached ones), at most MAX_TRIGGER_PASSES."""
        for _ in range(MAX_TRIGGER_PASSES):
            fired = False
            for order in [o for o in self.waiting.values() if o.symbol in symbols]:
                if not order.untriggered:
                    continue  # cancelled by an earlier one this pass (its pair, or the position closing)
                if order.stop_order_type == TRAILING_STOP:
                    self._trail(order)
                if self._reached(order):
                    self._fire(order)
                    fired = True
            if not fired:
                return

    def _reached(self, order: SimOrder) -> bool:
        if not order.trigger_price:
            return False  # a trailing stop not active yet
        instrument = self.engine.instruments[(order.category, order.symbol)]
        price = self.reference_price(instrument, order.trigger_by)
        return (
            price >= order.trigger_price if order.trigger_direction == RISE else price <= order.trigger_price
        )

    def _trail(self, order: SimOrder) -> None:
        """Move a trailing stop behind the best last price seen since it became active (trading-stop.mdx:
        by price distance; with activePrice, only once the last price has reached it)."""
        instrument = self.engine.instruments[("linear", order.symbol)]
        last = self.reference_price(instrument, "LastPrice")
        long = not order.is_buy  # a Sell closes a long
        if not order.extreme:
            if order.active_price and (last < order.active_price if long else last > order.active_price):
                return
            order.extreme = last
        order.extreme = max(order.extreme, last) if long else min(order.extreme, last)
        tick = instrument.tick_size
        stop = (
            floor_to(order.extreme - order.trailing_distance, tick)
            if long
            else ((order.extreme + order.trailing_distance) / tick).to_integral_value(rounding=ROUND_CEILING)
            * tick
        )
        if stop != order.trigger_price:
            order.trigger_price, order.updated_ms = stop, self.engine.clock_ms()

    def _fire(self, order: SimOrder) -> None:
        """The order becomes the order it describes (Triggered is instantaneous, enum.mdx) and is matched."""
        engine = self.engine
        if order.category == "spot":
            engine.spot_stops.fire(order)
            return
        instrument = engine.instruments[(order.category, order.symbol)]
        size = self._position(order.symbol)
        closing = order.reduce_only or order.close_on_trigger
        if closing and (size == 0 or (size > 0) == order.is_buy):
            self._deactivate(order, "CancelByReduceOnly")
            return
        del self.waiting[order.order_id]
        if order.stop_order_type in FULL_LEGS:
            order.qty = abs(size)
        elif closing:
            order.qty = min(order.qty, abs(size))
        order.status, order.updated_ms = "New", engine.clock_ms()
        self._cancel_partner(order)
        quote = engine.market.quote(order.symbol)
        if order.order_type == "Limit":
            order.price = apply_price_limit(instrument, quote, order.side, order.price)
            limit = order.price
        else:
            buy_limit, sell_limit = price_limits(instrument, quote)
            limit = buy_limit if order.is_buy else sell_limit
        if not closing and not engine.can_afford(instrument, order, limit):
            engine.cancel_rest(order, "EC_NoError", cancel_type="UNKNOWN")  # create-order.mdx: cancelled
            return
        engine.match_new(instrument, order, limit)

    def _cancel_partner(self, order: SimOrder) -> None:
        """A partial leg that triggers takes the other leg of its pair with it."""
        if not order.pair or order.stop_order_type not in PARTIAL_LEGS:
            return
        for other in self.legs(order.symbol, PARTIAL_LEGS):
            if other.pair == order.pair:
                self._deactivate(other, PARTNER_CANCEL[order.stop_order_type in TAKES])

    # ---- cancel and amend -------------------------------------------------------------------------

    def _deactivate(self, order: SimOrder, cancel_type: str) -> None:
        """Cancelled before it triggered: Deactivated (enum.mdx orderStatus)."""
        order.status, order.cancel_type = DEACTIVATED, cancel_type
        order.updated_ms = self.engine.clock_ms()
        self.waiting.pop(order.order_id, None)
        if order.position_leg:
            self.sync_position(order.symbol)

    def cancel(
        self, order: SimOrder, cancel_type: str = "CancelByUser", *, with_pair: bool = True
    ) -> list[SimOrder]:
        """Cancel a waiting order (and, cancelled by id, the other leg bound to it); the orders cancelled."""
        partners = [o for o in self.legs(order.symbol) if with_pair and order.pair and o.pair == order.pair]
        done = [order, *(o for o in partners if o is not order)]
        for each in done:
            self._deactivate(each, cancel_type)
        return done

    def amend(self, instrument: InstrumentSpec, order: SimOrder, params: dict[str, Any]) -> None:
        """Amend a waiting order (amend-order.mdx): its triggerPrice (and triggerBy), a conditional order's
        qty, price and attached TP/SL, a Partial leg's size and limit price. Everything is checked first;
        nothing changes when anything is refused."""
        trigger, by = self._amended_trigger(instrument, order, params)
        qty = self._amended_qty(instrument, order, params)
        price = order.price
        if given(params, "price") and order.order_type == "Limit":
            price = wire_decimal(params["price"], "price", 10001)
            check_price(instrument, price)
        changed = (trigger, by, qty, price) != (order.trigger_price, order.trigger_by, order.qty, order.price)
        if order.stop_order_type == CONDITIONAL:  # last: it applies what it checked
            changed |= self.amend_attached(instrument, order, params, price or trigger)
        if not changed:
            raise SimReject(10001, "params error: nothing to amend")
        order.trigger_price, order.trigger_by, order.qty, order.price = trigger, by, qty, price
        order.updated_ms = self.engine.clock_ms()
        if order.position_leg:
            self.sync_position(order.symbol)

    def _amended_trigger(
        self, instrument: InstrumentSpec, order: SimOrder, params: dict[str, Any]
    ) -> tuple[Decimal, str]:
        """The trigger price and type an amend asks for, checked as on create."""
        if not given(params, "triggerPrice") and not given(params, "triggerBy"):
            return order.trigger_price, order.trigger_by
        if order.stop_order_type == TRAILING_STOP:
            raise SimReject(10001, "params error: a trailing stop is changed with trading-stop")
        price = to_decimal(params.get("triggerPrice") or order.trigger_price, "triggerPrice", 10001)
        check_price(instrument, price)
        by = trigger_by(params, "triggerBy", order.trigger_by or "LastPrice")
        current = self.reference_price(instrument, by)
        if order.stop_order_type == CONDITIONAL:
            check_trigger_direction(price, order.trigger_direction, current, by)
        else:
            take = order.stop_order_type in TAKES
            check_tpsl_side(not order.is_buy, price if take else ZERO, ZERO if take else price, current)
        return price, by

    def _amended_qty(self, instrument: InstrumentSpec, order: SimOrder, params: dict[str, Any]) -> Decimal:
        """The qty an amend asks for: a conditional order's as on create; a Partial leg's on the lot step and
        within what the position leaves its side (110058); a Full leg's follows the position (10001)."""
        if not given(params, "qty"):
            return order.qty
        qty = wire_decimal(params["qty"], "qty", 10001)
        if order.stop_order_type in FULL_LEGS:
            raise SimReject(10001, "params error: a Full TP/SL follows the position's size")
        if order.stop_order_type == CONDITIONAL:
            check_qty(instrument, qty)
            return qty
        _check_leg_qty(instrument, qty)
        others = sum(
            (o.qty for o in self.legs(order.symbol, (order.stop_order_type,)) if o is not order), ZERO
        )
        if others + qty > abs(self._position(order.symbol)):
            raise SimReject(110058, "insufficient size of the remaining position for this TP/SL")
        return qty

    def amend_attached(
        self, instrument: InstrumentSpec, order: SimOrder, params: dict[str, Any], base: Decimal
    ) -> bool:
        """takeProfit / stopLoss of an order not yet filled ("0" cancels, amend-order.mdx), on the right side
        of `base`; 110059 on a partially filled order. Whether anything changed."""
        if not any(given(params, name) for name in ("takeProfit", "stopLoss", "tpTriggerBy", "slTriggerBy")):
            return False
        if order.status == "PartiallyFilled":
            raise SimReject(110059, "Not allowed to modify the TP/SL of a partially filled open order")
        merged = {
            "tpslMode": params.get("tpslMode") or order.tpsl_mode or "Full",
            "takeProfit": params.get("takeProfit", order.take_profit),
            "stopLoss": params.get("stopLoss", order.stop_loss),
            "tpTriggerBy": params.get("tpTriggerBy") or order.tp_trigger_by or "LastPrice",
            "slTriggerBy": params.get("slTriggerBy") or order.sl_trigger_by or "LastPrice",
            "tpOrderType": order.tp_order_type or "Market",
            "slOrderType": order.sl_order_type or "Market",
            "tpLimitPrice": params.get("tpLimitPrice", order.tp_limit_price),
            "slLimitPrice": params.get("slLimitPrice", order.sl_limit_price),
        }
        before = _attached(order)
        attach_tpsl(order, parse_tpsl(merged, instrument), base)
        return _attached(order) != before


def attach_tpsl(order: SimOrder, tpsl: Tpsl, base: Decimal) -> None:
    """Put TP/SL on an order that is not a position's TP/SL, checked against the price it will fill at
    (`base`): create-order.mdx's takeProfit / stopLoss and their trigger, order type and limit price."""
    take, stop = tpsl.take_profit, tpsl.stop_loss
    check_tpsl_side(order.is_buy, take.price if take else ZERO, stop.price if stop else ZERO, base)
    order.take_profit = take.price if take else ZERO
    order.stop_loss = stop.price if stop else ZERO
    order.tpsl_mode = tpsl.mode if order.take_profit or order.stop_loss else ""
    order.tp_trigger_by = take.trigger_by if take and take.price else ""
    order.sl_trigger_by = stop.trigger_by if stop and stop.price else ""
    order.tp_order_type = take.order_type if take and take.price else ""
    order.sl_order_type = stop.order_type if stop and stop.price else ""
    order.tp_limit_price = take.limit_price if take and take.price else ZERO
    order.sl_limit_price = stop.limit_price if stop and stop.price else ZERO


def _attached(order: SimOrder) -> tuple[Any, ...]:
    return (
        order.take_profit,
        order.stop_loss,
        order.tpsl_mode,
        order.tp_trigger_by,
        order.sl_trigger_by,
        order.tp_limit_price,
        order.sl_limit_price,
    )


def _legs_of(order: SimOrder) -> dict[str, Leg]:
    legs = {}
    if order.take_profit:
        legs["tp"] = Leg(
            order.take_profit,
            order.tp_trigger_by or "LastPrice",
            order.tp_order_type or "Market",
            order.tp_limit_price,
        )
    if order.stop_loss:
        legs["sl"] = Leg(
            order.stop_loss,
            order.sl_trigger_by or "LastPrice",
            order.sl_order_type or "Market",
            order.sl_limit_price,
        )
    return legs


def _side_prices(leg: Leg, side: str, base: Decimal) -> tuple[Decimal, Decimal, Decimal]:
    """(take_profit, stop_loss, base) for check_tpsl_side, for one leg."""
    return (leg.price, ZERO, base) if side == "tp" else (ZERO, leg.price, base)


def _check_leg_qty(instrument: InstrumentSpec, qty: Decimal) -> None:
    if qty % instrument.qty_step != 0:
        raise SimReject(10001, f"Qty invalid: size {qty} is not a multiple of qtyStep {instrument.qty_step}")
