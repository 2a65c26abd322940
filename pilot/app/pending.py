"""Pending exposure: open orders, and sends whose outcome is still unknown, may fill at any moment.

Caps count them as filled (on the new order's side), so an agent cannot walk past a cap with resting
orders, or by sending again while an earlier send is unresolved. An unknown send stays pending until a
lookup by its client order id finds it on the exchange; then it is journaled as resolved.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pilot.app import kinds
from pilot.app.runtime import Runtime
from pilot.core.facts import PendingOrders
from pilot.exchange.errors import ExchangeError

UNRESOLVED_WINDOW = timedelta(days=1)


async def pending_orders(runtime: Runtime, category: str, symbol: str, now: datetime) -> PendingOrders | None:
    """Quantity that may still fill on `symbol`, per side; None when the open orders cannot be read."""
    try:
        open_orders, unknown = await asyncio.gather(
            runtime.exchange.get_open_orders(category, symbol), _unresolved_sends(runtime, symbol, now)
        )
    except ExchangeError:
        return None
    pending = {"Buy": Decimal(0), "Sell": Decimal(0)}
    for order in open_orders:
        if not order.reduce_only:
            pending[order.side] = pending.get(order.side, Decimal(0)) + (order.qty - order.cum_exec_qty)
    listed = {order.order_link_id for order in open_orders}
    still_unknown = await _look_up(
        runtime, category, symbol, [s for s in unknown if s["orderLinkId"] not in listed]
    )
    for sent in still_unknown:
        if not sent.get("reduceOnly"):
            pending[sent["side"]] = pending.get(sent["side"], Decimal(0)) + Decimal(sent["qty"])
    return PendingOrders(buy_qty=pending["Buy"], sell_qty=pending["Sell"])


async def _unresolved_sends(runtime: Runtime, symbol: str, now: datetime) -> list[dict[str, Any]]:
    journal, since = runtime.store.journal, now - UNRESOLVED_WINDOW
    outcomes, resolved = await asyncio.gather(
        journal.entries(kind=kinds.ORDER_OUTCOME, since=since),
        journal.entries(kind=kinds.ORDER_RESOLVED, since=since),
    )
    done = {entry.data.get("order_link_id") for entry in resolved}
    return [
        entry.data["sent"]
        for entry in outcomes
        if entry.data.get("status") == "outcome_unknown"
        and entry.data.get("sent", {}).get("symbol") == symbol
        and entry.data["sent"]["orderLinkId"] not in done
    ]


async def _look_up(
    runtime: Runtime, category: str, symbol: str, sends: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Look each unknown send up once more; journal the ones found; return those still unknown."""
    if not sends:
        return []
    found = await asyncio.gather(
        *(runtime.exchange.find_order(category, symbol, sent["orderLinkId"]) for sent in sends),
        return_exceptions=True,
    )
    unknown = []
    for sent, order in zip(sends, found, strict=True):
        if order is None or isinstance(order, BaseException):
            unknown.append(sent)
            continue
        await runtime.store.journal.append(
            kinds.ORDER_RESOLVED,
            {
                "order_link_id": sent["orderLinkId"],
                "order_id": order.order_id,
                "status": order.status,
                "filled_qty": str(order.cum_exec_qty),
            },
            now=runtime.now(),
            actor="pilot",
        )
    return unknown
