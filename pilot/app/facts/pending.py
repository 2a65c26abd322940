"""Pending exposure: open orders, and sends not yet settled, may fill at any moment.

A send is settled when Pilot knows what became of it: its outcome was journaled as filled, partially
filled, cancelled, rejected or open (an open order is then counted from the exchange's own list), or a
later lookup by its client order id found it (order.resolved). Until then it is pending, and caps count it
as filled: an answer of outcome_unknown, an order the exchange acknowledged but does not show yet, and an
order.sent with no outcome at all because the server stopped (or was killed) in the middle of the send.
Every read of pending exposure looks unsettled sends up again; so does `settle_sends`, run at start-up and
periodically by `pilot serve`, so a send never stays orphaned.

A send that no lookup finds GIVE_UP_AFTER it was sent is settled as never executed: Bybit refuses a request
that reaches it more than its recv_window (5 s) after it was signed, so minutes later an order that neither
open orders nor order history show was never accepted. "After" is real time, on the store's clock
(pilot.store.monotonic): a wall clock stepped forward, here or on another server, never gives up a send that may
still be held at the exchange.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import PlanOutcome
from pilot.app.road.outcomes import answer_status
from pilot.app.runtime.ledger import Send
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import PendingFill, PendingOrders, Position, Side, StopLeg
from pilot.exchange.errors import ExchangeError, ExchangeUnavailable
from pilot.exchange.models import OPEN_STATUSES, ExchangeOrder

GIVE_UP_AFTER = timedelta(minutes=5)
NEVER_EXECUTED = "never_executed"


@dataclass(frozen=True, slots=True)
class PendingRead:
    """What the open orders of one market say: the pending exposure, and the partial stop-loss legs resting
    on its position (orders of their own size; the whole stop comes with the position)."""

    pending: PendingOrders
    partial_stops: tuple[StopLeg, ...] = ()
    open_orders: tuple[ExchangeOrder, ...] = ()


async def pending_orders(
    runtime: Runtime, category: str, symbol: str, now: datetime, unsettled: list[Send]
) -> PendingOrders | None:
    """Quantity that may still fill on `symbol`, per side; None when the open orders cannot be read.

    `unsettled` is `unsettled_sends(runtime, now)`, read once by the caller for every market it looks at.
    """
    read = await read_pending(runtime, category, symbol, now, unsettled)
    return read.pending if read is not None else None


async def read_pending(
    runtime: Runtime, category: str, symbol: str, now: datetime, unsettled: list[Send]
) -> PendingRead | None:
    """pending_orders, with the partial stop legs the same read shows; None when it cannot be read."""
    try:
        open_orders = await runtime.exchange.get_open_orders(category, symbol)
    except ExchangeError:
        return None
    fills = [fill for order in open_orders if (fill := _may_fill(order)) is not None]
    mine = [send for send in unsettled if (send.category, send.symbol) == (category, symbol)]
    listed = {order.order_link_id: order for order in open_orders}
    for send in mine:
        if send.order_link_id in listed:
            await _settle(runtime, send, listed[send.order_link_id])
    unknown, found = await _look_up(runtime, [s for s in mine if s.order_link_id not in listed], now)
    for order in found:  # shown by the lookup but not by the list read before it: still resting, perhaps
        if order.status in OPEN_STATUSES and (fill := _may_fill(order)) is not None:
            fills.append(fill)
    fills += [
        PendingFill(_side(send.side), send.qty, send.price, send.stop_loss, send.order_link_id, unknown=True)
        for send in unknown
        if not send.reduce_only
    ]
    pending = PendingOrders(
        buy_qty=sum((f.qty for f in fills if f.side is Side.BUY), Decimal(0)),
        sell_qty=sum((f.qty for f in fills if f.side is Side.SELL), Decimal(0)),
        fills=tuple(fills),
    )
    return PendingRead(pending, partial_stop_legs(open_orders), tuple(open_orders))


def partial_stop_legs(open_orders: Sequence[ExchangeOrder]) -> tuple[StopLeg, ...]:
    """The partial stop-loss orders among the open ones, as legs of their position's stops: on linear the
    position's partial stop-losses; on spot every order waiting to sell coin held at its trigger (spot_stops
    keeps those below the price: the ones above it are take-profits). A leg that becomes a limit order when
    it triggers (slOrderType Limit) is no sure exit: its limit may never fill, so it is not counted."""
    return tuple(
        StopLeg(order.trigger_price, order.qty - order.cum_exec_qty, order.order_id)
        for order in open_orders
        if (order.is_partial_stop_loss or (order.is_spot_stop_sell and order.is_untriggered))
        and order.trigger_price is not None
        and order.qty > 0
        and order.order_type != "Limit"
    )


def spot_stops(legs: Sequence[StopLeg], price: Decimal) -> tuple[StopLeg, ...]:
    """The spot orders waiting to sell coin held that are stop-losses now: their trigger below `price` (the
    bid), so a fall reaches them."""
    return tuple(leg for leg in legs if leg.price < price)


def _may_fill(order: ExchangeOrder) -> PendingFill | None:
    """An open order as the fill the worst case assumes, or None when it can only shrink the position
    (reduce-only, which every TP/SL leg is). A conditional order may trigger and fill at any moment: at its
    limit price, or (a market one) at its trigger price."""
    if order.reduce_only:
        return None
    price = order.price if order.price > 0 else order.trigger_price
    leaves = order.qty - order.cum_exec_qty
    return PendingFill(_side(order.side), leaves, price, order.stop_loss, order.order_id)


def _side(side: str) -> Side:
    return Side.BUY if side.lower() == "buy" else Side.SELL


async def unsettled_sends(runtime: Runtime, now: datetime) -> list[Send]:
    """Every send of the last day (pilot.app.runtime.ledger.WINDOW) whose fate the journal does not know yet, oldest first."""
    return list((await runtime.ledger.state(now)).unsettled)


async def settle_sends(runtime: Runtime) -> int:
    """Look every unsettled send up and journal what is found (start-up and upkeep); return how many remain."""
    now = runtime.now()
    by_market: dict[tuple[str, str], list[Send]] = defaultdict(list)
    for send in await unsettled_sends(runtime, now):
        by_market[(send.category, send.symbol)].append(send)
    looked = await asyncio.gather(*(_look_up(runtime, sends, now) for sends in by_market.values()))
    return sum(len(unknown) for unknown, _ in looked)


async def _look_up(
    runtime: Runtime, sends: list[Send], now: datetime
) -> tuple[list[Send], list[ExchangeOrder]]:
    """Look each send up by its client order id; settle the ones found (or given up).

    Returns the sends still unknown, and the orders found.
    """
    if not sends:
        return [], []
    exchange = runtime.exchange
    found = await asyncio.gather(
        *(exchange.find_order(s.category, s.symbol, s.order_link_id) for s in sends), return_exceptions=True
    )
    unknown, orders, here = [], [], runtime.store.clock.read()
    for send, order in zip(sends, found, strict=True):
        if isinstance(order, ExchangeOrder):
            await _settle(runtime, send, order)
            orders.append(order)
        elif order is None and send.age(now, here) >= GIVE_UP_AFTER:
            await _settle(runtime, send, None)
        elif isinstance(order, BaseException) and not isinstance(order, ExchangeError):
            raise order
        else:
            unknown.append(send)
    return unknown, orders


async def _settle(runtime: Runtime, send: Send, order: ExchangeOrder | None) -> None:
    """Journal what became of `send`, and let its plan's status follow."""
    status = answer_status(order) if order is not None else NEVER_EXECUTED
    outcome = PlanOutcome(
        status=status,
        order_id=order.order_id if order is not None else None,
        order_link_id=send.order_link_id,
        filled_qty=str(order.cum_exec_qty) if order is not None else "0",
    )
    data = {
        **outcome.model_dump(mode="json", exclude_none=True),
        "exchange_status": order.status if order else None,
    }
    await runtime.store.journal.append(
        entry_kinds.ORDER_RESOLVED, data, now=runtime.now(), plan_id=send.plan_id, actor="pilot"
    )
    if send.plan_id is not None:
        plan = await runtime.store.plans.get(send.plan_id)
        if plan is not None and plan.status in ("claimed", "done"):
            await runtime.store.plans.record_outcome(
                send.plan_id, outcome.model_dump(mode="json", exclude_none=True), now=runtime.now()
            )


async def position_with_stops(runtime: Runtime, symbol: str) -> tuple[Position, PendingRead]:
    """The linear position with its whole stop and the partial stop legs resting on it, and what its open
    orders say (pending exposure included): what a change to its stops is judged on.

    Raises:
        ExchangeError: the position or the open orders could not be read (hedge mode included).
    """
    now = runtime.now()
    position, read = await asyncio.gather(
        runtime.exchange.get_position("linear", symbol),
        read_pending(runtime, "linear", symbol, now, await unsettled_sends(runtime, now)),
    )
    if read is None:
        raise ExchangeUnavailable(f"could not read the open {symbol} orders")
    return replace(position, partial_stops=read.partial_stops), read
