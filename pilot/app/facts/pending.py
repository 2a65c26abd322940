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
open orders nor order history show was never accepted.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.answers.plan_records import PlanOutcome
from pilot.app.road.gate import answer_status
from pilot.app.runtime.ledger import Send
from pilot.app.runtime.runtime import Runtime
from pilot.core.facts import PendingOrders
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder

GIVE_UP_AFTER = timedelta(minutes=5)
NEVER_EXECUTED = "never_executed"
RESTING = frozenset({"New", "PartiallyFilled", "Untriggered", "Created"})  # Bybit orderStatus on the book


async def pending_orders(
    runtime: Runtime, category: str, symbol: str, now: datetime, unsettled: list[Send]
) -> PendingOrders | None:
    """Quantity that may still fill on `symbol`, per side; None when the open orders cannot be read.

    `unsettled` is `unsettled_sends(runtime, now)`, read once by the caller for every market it looks at.
    """
    try:
        open_orders = await runtime.exchange.get_open_orders(category, symbol)
    except ExchangeError:
        return None
    pending = {"Buy": Decimal(0), "Sell": Decimal(0)}
    for order in open_orders:
        if not order.reduce_only:
            pending[order.side] = pending.get(order.side, Decimal(0)) + (order.qty - order.cum_exec_qty)
    mine = [send for send in unsettled if (send.category, send.symbol) == (category, symbol)]
    listed = {order.order_link_id: order for order in open_orders}
    for send in mine:
        if send.order_link_id in listed:
            await _settle(runtime, send, listed[send.order_link_id])
    unknown, found = await _look_up(runtime, [s for s in mine if s.order_link_id not in listed], now)
    for order in found:  # shown by the lookup but not by the list read before it: still resting, perhaps
        if order.status in RESTING and not order.reduce_only:
            pending[order.side] = pending.get(order.side, Decimal(0)) + (order.qty - order.cum_exec_qty)
    for send in unknown:
        if not send.reduce_only:
            pending[send.side] = pending.get(send.side, Decimal(0)) + send.qty
    return PendingOrders(buy_qty=pending["Buy"], sell_qty=pending["Sell"])


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
    unknown, orders = [], []
    for send, order in zip(sends, found, strict=True):
        if isinstance(order, ExchangeOrder):
            await _settle(runtime, send, order)
            orders.append(order)
        elif order is None and now - send.sent_at >= GIVE_UP_AFTER:
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
