"""The one road to the exchange for orders: journal the attempt, send once, and classify what came back.

Three outcomes are never blurred: rejected by the exchange (a definite no), outcome unknown (sent, not
known: looked up by client order id, never resent), and accepted (then read back for the fill). Refusals
by Pilot itself never reach this module: nothing is sent for them.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

from pilot.app import kinds
from pilot.app.responses import ExchangeText, Fill, NextActionOut, OrderAnswer
from pilot.app.runtime import Runtime
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected, ExchangeUnavailable, OutcomeUnknown
from pilot.exchange.models import ExchangeOrder, OrderRequest

ORDER_LINK_PREFIX = "pilot-"


def order_link_id(plan_id: str) -> str:
    """The client order id for a plan: derived, so the order can always be found again (36 chars max)."""
    return ORDER_LINK_PREFIX + hashlib.sha256(plan_id.encode()).hexdigest()[:30]


def look_up(symbol: str, category: str, text: str) -> NextActionOut:
    """The next action after a send whose result is not fully known: read open orders, never resend."""
    return NextActionOut(tool="get_open_orders", args={"symbol": symbol, "category": category}, text=text)


def request_dict(request: OrderRequest) -> dict[str, Any]:
    return {
        "category": request.category,
        "symbol": request.symbol,
        "side": request.side,
        "orderType": request.order_type,
        "qty": plain(request.qty),
        "price": plain(request.price),
        "timeInForce": request.time_in_force,
        "orderLinkId": request.order_link_id,
        "reduceOnly": request.reduce_only,
    }


async def send_order(runtime: Runtime, request: OrderRequest, *, plan_id: str, origin: str) -> OrderAnswer:
    """Send `request` exactly once and say what became of it."""
    journal = runtime.store.journal
    sent = request_dict(request)
    attempt = await journal.append(
        kinds.ORDER_SENT, {"request": sent, "origin": origin}, now=runtime.now(), plan_id=plan_id
    )
    try:
        ack = await runtime.exchange.create_order(request)
    except ExchangeRejected as error:
        answer = _rejected(error, sent, error.ret_code, error.family)
    except ExchangeUnavailable as error:
        answer = _rejected(error, sent, None, "unavailable")
    except OutcomeUnknown as error:
        answer = await _reconnoitre(runtime, request, sent, error)
    else:
        answer = await _read_back(runtime, request, sent, ack.order_id)
    answer = answer.model_copy(update={"plan_id": plan_id, "order_link_id": request.order_link_id})
    if answer.status == "outcome_unknown":  # counted as pending exposure until a lookup finds it
        await journal.append(kinds.ORDER_UNRESOLVED, sent, now=runtime.now(), plan_id=plan_id, actor="pilot")
    outcome = await journal.append(
        kinds.ORDER_OUTCOME,
        answer.model_dump(mode="json", exclude_none=True),
        now=runtime.now(),
        plan_id=plan_id,
    )
    return answer.model_copy(update={"journal_seq": [attempt.seq, outcome.seq]})


def _rejected(error: ExchangeError, sent: dict[str, Any], code: int | None, family: str) -> OrderAnswer:
    retry = getattr(error, "retry_at", None)
    return OrderAnswer(
        status="rejected",
        sent=sent,
        ret_code=code,
        reject_family=family,
        exchange=ExchangeText(untrusted_text=error.untrusted_text) if error.untrusted_text else None,
        reason=error.message,
        next_safe_action=NextActionOut(
            tool=None,
            args=None,
            text="the exchange refused this order and nothing was executed; plan again if it still makes sense",
            retry_after=retry.isoformat() if retry else None,
        ),
    )


async def _reconnoitre(
    runtime: Runtime, request: OrderRequest, sent: dict[str, Any], error: OutcomeUnknown
) -> OrderAnswer:
    """The send may or may not have happened: look the order up by its client id. Never resend."""
    try:
        found = await runtime.exchange.find_order(request.category, request.symbol, request.order_link_id)
    except ExchangeError:
        found = None
        checked = "the lookup itself failed"
    else:
        checked = "open orders and order history were checked and it is not there (yet)"
    if found is not None:
        answer = _from_order(found, sent)
        return answer.model_copy(
            update={"found_by_reconnaissance": True, "reason": "accepted (found by lookup)"}
        )
    return OrderAnswer(
        status="outcome_unknown",
        sent=sent,
        found_by_reconnaissance=False,
        exchange=ExchangeText(untrusted_text=error.untrusted_text) if error.untrusted_text else None,
        reason=f"{error.message} {checked}.",
        next_safe_action=look_up(
            request.symbol,
            request.category,
            f"do not resend: look for client order id {request.order_link_id} with get_open_orders and "
            "get_positions; the order may still appear",
        ),
    )


async def _read_back(
    runtime: Runtime, request: OrderRequest, sent: dict[str, Any], order_id: str
) -> OrderAnswer:
    try:
        found = await runtime.exchange.find_order(request.category, request.symbol, request.order_link_id)
    except ExchangeError:
        found = None
    if found is None:
        return OrderAnswer(
            status="accepted",
            order_id=order_id,
            sent=sent,
            reason="accepted by the exchange; reading it back failed, so its fill is not known yet",
            next_safe_action=look_up(
                request.symbol,
                request.category,
                "check the order's state with get_open_orders; do not resend",
            ),
        )
    return _from_order(found, sent)


STATUS_OF = {
    "Filled": "filled",
    "PartiallyFilled": "partially_filled",
    "New": "open",
    "Untriggered": "open",
    "Created": "open",
    "Rejected": "rejected",
}


def _from_order(order: ExchangeOrder, sent: dict[str, Any]) -> OrderAnswer:
    filled = order.cum_exec_qty
    status = STATUS_OF.get(order.status)
    if status is None:  # Cancelled, PartiallyFilledCanceled, Deactivated: an IOC remainder, or cancelled
        status = "partially_filled" if filled > 0 else "cancelled"
    text = (
        order.reject_reason if order.reject_reason and order.reject_reason not in ("EC_NoError", "") else ""
    )
    return OrderAnswer(
        status=status,  # type: ignore[arg-type]
        order_id=order.order_id,
        sent=sent,
        fill=Fill(
            filled_qty=plain(filled),
            avg_price=plain(order.avg_price) if order.avg_price and filled > 0 else None,
            fee=plain(order.cum_exec_fee),
        ),
        exchange=ExchangeText(untrusted_text=text) if text else None,
        reason=_reason(status, filled, order.qty),
    )


def _reason(status: str, filled: Decimal, qty: Decimal) -> str:
    if status == "filled":
        return f"filled {plain(filled)} of {plain(qty)}"
    if status == "partially_filled":
        return f"filled {plain(filled)} of {plain(qty)}; the rest was not filled within the price limit"
    if status == "cancelled":
        return "nothing filled within the price limit; the order was cancelled (Limit IOC)"
    if status == "open":
        return "resting on the book"
    return "the exchange rejected the order after accepting it"
