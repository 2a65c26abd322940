"""Spot TP/SL and conditional orders as Bybit takes them (create-order.mdx, open-order.mdx, cancel-order.mdx,
cancel-all.mdx, enum.mdx).

A spot create with `triggerPrice` waits, Untriggered, for the last price to reach it:

* `orderFilter` **tpslOrder**: a spot TP/SL order (stopOrderType tpslOrder). "The assets are occupied even
  before the order is triggered": a sell holds its base coin from the start (and a buy its quote coin), so
  the coin can be neither sold nor spent twice; it is refused (170131) when the coin is not there.
* `orderFilter` **StopOrder** (or none: "if triggerPrice is set, the order will be automatically converted
  into a conditional order"): a spot conditional order (stopOrderType Stop). Nothing is held until it
  triggers; if the coin is not there then, it is cancelled, as a linear conditional order is.

Spot has no triggerDirection ("valid for linear & inverse"): the trigger's side of the last price says which
way the price must move, and a trigger at the last price is refused. Any other orderFilter is 170201; a
tpslOrder without a triggerPrice is 170202 ("Please enter the TP/SL price").

A spot **Limit** order may carry `takeProfit` / `stopLoss` ("Spot Limit order supports take profit, stop
loss or limit take profit, limit stop loss when creating an order"), Market by default (`slOrderType` /
`tpOrderType`), Limit with `slLimitPrice` / `tpLimitPrice`; on a Market order they are refused (170130).
The docs do not say when the TP/SL orders appear; the paper exchange places them as the order fills: each
fill of a buy grows one tpslOrder sell per price set (the take-profit and the stop-loss, bound: when one
triggers the other is cancelled) to the coin the order's fills have brought, net of the fee paid in that
coin and on the lot step, so the orders never hold more coin than arrived. Their parentOrderLinkId is the order's orderLinkId.

Cancelling one by id needs its orderFilter (cancel-order.mdx: "If not passed, Order by default"): without
it the order is not found (170213). A cancel-all on spot takes the ordinary orders unless its orderFilter
names tpslOrder or StopOrder.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pilot.paper.market import floor_to
from pilot.paper.orders import CONDITIONAL, FALL, RISE, UNTRIGGERED, ZERO, SimOrder
from pilot.paper.scenario import InstrumentSpec
from pilot.paper.validation import (
    Leg,
    SimReject,
    Trigger,
    check_price,
    check_tpsl_side,
    given,
    last_price,
    parse_tpsl,
    to_decimal,
)

if TYPE_CHECKING:
    from pilot.paper.engine import Engine

TPSL_ORDER = "tpslOrder"  # stopOrderType of a spot TP/SL order (enum.mdx)
SPOT_KINDS = {TPSL_ORDER: TPSL_ORDER, "StopOrder": CONDITIONAL}  # orderFilter -> stopOrderType
MAX_SPOT_WAITING = 30  # create-order.mdx: 30 open TP/SL orders, 30 open conditional orders per symbol


def spot_filter(params: dict[str, Any]) -> str:
    """A spot create's orderFilter: Order (the default), tpslOrder or StopOrder; 170201 for anything else."""
    value = str(params.get("orderFilter") or "Order")
    if value not in ("Order", *SPOT_KINDS):
        raise SimReject(170201, "Invalid orderFilter parameter.")
    return value


def spot_trigger(params: dict[str, Any], instrument: InstrumentSpec, last: Decimal) -> Trigger | None:
    """The trigger of a spot create (None: an ordinary order). The direction is the trigger's side of the
    last price."""
    kind = spot_filter(params)
    if params.get("triggerPrice") in (None, "", "0", 0):
        if kind == TPSL_ORDER:
            raise SimReject(170202, "Please enter the TP/SL price.")
        if kind != "Order":
            raise SimReject(170130, "Data sent for parameter 'triggerPrice' is not valid.")
        return None
    price = to_decimal(params.get("triggerPrice"), "triggerPrice", 170130)
    check_price(instrument, price)
    if price == last:
        raise SimReject(170130, "Data sent for parameter 'triggerPrice' is not valid.")
    return Trigger(price, RISE if price > last else FALL, "LastPrice")


def spot_tpsl(params: dict[str, Any], instrument: InstrumentSpec, order_type: str) -> dict[str, Leg]:
    """takeProfit / stopLoss on a spot create: a Limit order only (170130 otherwise), each Market (the
    default) or Limit with its limit price. Checked against the order's price when attached."""
    names = ("takeProfit", "stopLoss")
    if not any(params.get(name) not in (None, "", "0", 0) for name in names):
        return {}
    if order_type != "Limit" or given(params, "triggerPrice"):
        raise SimReject(170130, "Data sent for parameter 'takeProfit/stopLoss' is not valid.")
    tpsl = parse_tpsl({**params, "tpslMode": "Partial"}, instrument)  # spot takes Limit TP/SL in any mode
    return {side: leg for side, leg in (("tp", tpsl.take_profit), ("sl", tpsl.stop_loss)) if leg}


def attach_spot_tpsl(order: SimOrder, legs: dict[str, Leg]) -> None:
    """Put the TP/SL of a spot create on the order (checked against its price: a buy's stop below it, its
    target above; 170130 otherwise, as spot answers a parameter it refuses)."""
    take, stop = legs.get("tp"), legs.get("sl")
    try:
        check_tpsl_side(order.is_buy, take.price if take else ZERO, stop.price if stop else ZERO, order.price)
    except SimReject as refused:
        raise SimReject(170130, refused.message) from None
    if take:
        order.take_profit, order.tp_trigger_by = take.price, "LastPrice"
        order.tp_order_type, order.tp_limit_price = take.order_type, take.limit_price
    if stop:
        order.stop_loss, order.sl_trigger_by = stop.price, "LastPrice"
        order.sl_order_type, order.sl_limit_price = stop.order_type, stop.limit_price


def kind_of(order: SimOrder) -> str:
    """The orderFilter that names a spot order: Order, tpslOrder or StopOrder."""
    if order.stop_order_type == TPSL_ORDER:
        return TPSL_ORDER
    return "StopOrder" if order.stop_order_type == CONDITIONAL else "Order"


class SpotStops:
    """The spot orders that wait for a trigger, on one engine (held in its StopBook's `waiting`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def place(self, instrument: InstrumentSpec, order: SimOrder, kind: str, trigger: Trigger) -> None:
        """Make `order` wait for its trigger: a tpslOrder holds its coin now (170131 without it)."""
        engine = self.engine
        stop_type = SPOT_KINDS.get(kind, CONDITIONAL)
        mine = [
            o
            for o in engine.stop_book.waiting.values()
            if o.category == "spot" and o.symbol == order.symbol and o.stop_order_type == stop_type
        ]
        if len(mine) >= MAX_SPOT_WAITING:
            raise SimReject(170810, "Cannot exceed maximum of 500 conditional, TP/SL and active orders.")
        if stop_type == TPSL_ORDER:
            price = order.price or trigger.price
            engine.check_spot_balance(instrument, order.is_buy, order.qty, price)
        order.status, order.stop_order_type = UNTRIGGERED, stop_type
        order.trigger_price, order.trigger_direction, order.trigger_by = (
            trigger.price,
            trigger.direction,
            trigger.by,
        )
        engine.stop_book.waiting[order.order_id] = order

    def held(self, coin: str) -> Decimal:
        """What the waiting tpslOrders hold of `coin`: a sell its base coin, a buy its quote coin."""
        engine, total = self.engine, ZERO
        for order in engine.stop_book.waiting.values():
            if order.category != "spot" or order.stop_order_type != TPSL_ORDER:
                continue
            instrument = engine.instruments[("spot", order.symbol)]
            if not order.is_buy and instrument.base_coin == coin:
                total += order.qty
            elif order.is_buy and instrument.quote_coin == coin:
                total += order.qty * (order.price or order.trigger_price)
        return total

    def attach(self, order: SimOrder, arrived: Decimal) -> None:
        """After a fill of a spot order carrying TP/SL: its tpslOrders sell what its fills have brought so far
        (`arrived`: a buy's net of its fee, on the lot step), one per price set, bound together."""
        if not (order.take_profit or order.stop_loss) or arrived <= 0 or not self.engine.tpsl_on_create:
            return
        mine = [o for o in self.engine.orders.values() if o.pair == order.order_id and o.category == "spot"]
        if mine:
            now = self.engine.clock_ms()
            for leg in mine:
                if leg.untriggered:  # (one that fired or was cancelled is done)
                    leg.qty, leg.updated_ms = arrived, now
            return
        legs = [("tp", order.take_profit, order.tp_order_type, order.tp_limit_price)]
        legs.append(("sl", order.stop_loss, order.sl_order_type, order.sl_limit_price))
        for _, price, order_type, limit in legs:
            if price:
                self._new_leg(order, price, order_type or "Market", limit, arrived)

    def _new_leg(
        self, parent: SimOrder, trigger: Decimal, order_type: str, limit: Decimal, qty: Decimal
    ) -> None:
        """A tpslOrder that closes what `parent` bought (or sold): the other side, waiting for `trigger`."""
        engine = self.engine
        instrument = engine.instruments[("spot", parent.symbol)]
        last = last_price(engine.market.quote(parent.symbol), instrument)
        now = engine.clock_ms()
        leg = SimOrder(
            engine.new_order_id(),
            "",
            "spot",
            parent.symbol,
            "Sell" if parent.is_buy else "Buy",
            "Limit" if order_type == "Limit" else "Market",
            limit if order_type == "Limit" else ZERO,
            qty,
            "GTC" if order_type == "Limit" else "IOC",
            False,
            now,
            now,
            status=UNTRIGGERED,
            last_price_on_created=last,
            stop_order_type=TPSL_ORDER,
            trigger_price=trigger,
            trigger_direction=RISE if trigger > last else FALL,
            trigger_by="LastPrice",
            parent_order_link_id=parent.order_link_id,
            pair=parent.order_id,
        )
        engine.add_order(leg)
        engine.stop_book.waiting[leg.order_id] = leg

    def fire(self, order: SimOrder) -> None:
        """The order becomes the order it describes and is matched; the order bound to it is cancelled. A
        conditional one that cannot be paid for now is cancelled (it held nothing); a tpslOrder held its coin."""
        engine = self.engine
        instrument = engine.instruments[("spot", order.symbol)]
        del engine.stop_book.waiting[order.order_id]
        order.status, order.updated_ms = "New", engine.clock_ms()
        for other in [o for o in engine.stop_book.waiting.values() if order.pair and o.pair == order.pair]:
            engine.stop_book.cancel(other, "CancelByUser", with_pair=False)
        limit = engine.limit_for(instrument, order)
        if order.stop_order_type == CONDITIONAL and not engine.can_afford(instrument, order, limit):
            engine.cancel_rest(order, "EC_NoError", cancel_type="UNKNOWN")
            return
        if not order.is_buy:  # what a sell may sell: never more than the coin there (its own held)
            free = engine.accounts.wallet.get(instrument.base_coin, ZERO) - engine.locked(
                instrument.base_coin
            )
            order.qty = min(order.qty, floor_to(max(free, ZERO), instrument.qty_step))
            if order.qty <= 0:
                engine.cancel_rest(order, "EC_NoError", cancel_type="UNKNOWN")
                return
        engine.match_new(instrument, order, limit)

    def amend(self, instrument: InstrumentSpec, order: SimOrder, params: dict[str, Any]) -> None:
        """amend-order.mdx on a waiting spot order: its triggerPrice (on the same side of the last price it
        was placed on, 170130 otherwise), qty and price; a tpslOrder must still hold its coin (170131)."""
        trigger, qty, price = order.trigger_price, order.qty, order.price
        if given(params, "triggerPrice"):
            trigger = to_decimal(params["triggerPrice"], "triggerPrice", 170130)
            check_price(instrument, trigger)
            last = last_price(self.engine.market.quote(order.symbol), instrument)
            if (trigger > last) != (order.trigger_direction == RISE) or trigger == last:
                raise SimReject(170130, "Data sent for parameter 'triggerPrice' is not valid.")
        if given(params, "qty"):
            qty = to_decimal(params["qty"], "qty", 170130)
        if given(params, "price") and order.order_type == "Limit":
            price = to_decimal(params["price"], "price", 170130)
            check_price(instrument, price)
        if (trigger, qty, price) == (order.trigger_price, order.qty, order.price):
            raise SimReject(170130, "Data sent for parameter 'orderId' is not valid.")
        if order.stop_order_type == TPSL_ORDER:
            held_now = order.qty if not order.is_buy else order.qty * (order.price or order.trigger_price)
            needed = qty if not order.is_buy else qty * (price or trigger)
            coin = instrument.quote_coin if order.is_buy else instrument.base_coin
            free = self.engine.accounts.wallet.get(coin, ZERO) - self.engine.locked(coin) + held_now
            if needed > free:
                raise SimReject(170131, "Insufficient balance.")
        order.trigger_price, order.qty, order.price = trigger, qty, price
        order.updated_ms = self.engine.clock_ms()


def spot_filter_matches(order: SimOrder, order_filter: str | None) -> bool:
    """Whether a spot order is one the orderFilter names (cancel-order.mdx: Order when none is sent)."""
    return kind_of(order) == (order_filter or "Order")
