"""What a write came back as, in Pilot's words: a failure sorted into rejected or outcome unknown, and the
answers the gate gives for an order or an action from what the exchange said (pilot.app.road.gate)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pilot.app.answers.responses import ActionAnswer, ExchangeText, Fill, NextActionOut, OrderAnswer
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected, ExchangeUnavailable, OutcomeUnknown
from pilot.exchange.models import ExchangeOrder

# What a write returns when the exchange answered "not modified" (a trading stop's 34040): what was asked
# already holds.
ALREADY_SO = object()


@dataclass(frozen=True, slots=True)
class Failure:
    """A write that did not succeed, sorted: a definite no (rejected) or an unknown outcome."""

    status: Literal["rejected", "outcome_unknown"]
    detail: str
    family: str
    ret_code: int | None = None
    retry_after: datetime | None = None
    untrusted_text: str = ""

    @property
    def exchange_text(self) -> ExchangeText | None:
        return ExchangeText(untrusted_text=self.untrusted_text) if self.untrusted_text else None

    @property
    def retry_text(self) -> str | None:
        return self.retry_after.isoformat() if self.retry_after else None


def sort_failure(error: ExchangeError, what: str) -> Failure:
    """The one sorting of exchange errors for every write, in Pilot's own words.

    The adapter's message may name the order by an id the agent gave (possibly copied from exchange text),
    so the sentence is built from the error's type and code alone.
    """
    if isinstance(error, ExchangeRejected):
        detail = f"{what}: the exchange refused it (retCode {error.ret_code}, {error.family}); nothing was executed"
        return Failure("rejected", detail, error.family, error.ret_code, error.retry_at, error.untrusted_text)
    if isinstance(error, OutcomeUnknown):
        detail = f"{what}: sent, but the exchange's answer was lost or unclear, so the outcome is not known"
        return Failure("outcome_unknown", detail, "unknown", untrusted_text=error.untrusted_text)
    retry = error.retry_at if isinstance(error, ExchangeUnavailable) else None
    detail = f"{what}: the exchange could not be reached or did not take it; nothing was executed"
    return Failure("rejected", detail, "unavailable", retry_after=retry, untrusted_text=error.untrusted_text)


def done(tool: str, action: Mapping[str, Any], result: object) -> ActionAnswer:
    if result is ALREADY_SO:  # the exchange changed nothing because nothing needed changing
        data = {**action, "result": "unchanged"}
        return ActionAnswer(
            status="unchanged", detail=f"{tool}: already as asked; nothing changed", data=data
        )
    done = {**action, "result": result if isinstance(result, str | None) else str(result)}
    return ActionAnswer(status="done", detail=f"{tool} done", data=done)


def rejected_order(failure: Failure, sent: dict[str, Any]) -> OrderAnswer:
    return OrderAnswer(
        status="rejected",
        sent=sent,
        ret_code=failure.ret_code,
        reject_family=failure.family,
        exchange=failure.exchange_text,
        detail=failure.detail,
        next_safe_action=NextActionOut(
            tool=None,
            args=None,
            text="the exchange refused this order and nothing was executed; plan again if it still makes sense",
            retry_after=failure.retry_text,
        ),
    )


def failed_action(failure: Failure, action: Mapping[str, Any], check: str) -> ActionAnswer:
    if failure.status == "outcome_unknown":
        next_action = NextActionOut(
            tool=check,
            args={"symbol": action["symbol"], "category": action["category"]},
            text="do not resend; check the current state first",
        )
    else:
        next_action = NextActionOut(
            tool=None,
            args=None,
            text="nothing was done; try again later if it still makes sense",
            retry_after=failure.retry_text,
        )
    return ActionAnswer(
        status=failure.status,
        detail=failure.detail,
        ret_code=failure.ret_code,
        reject_family=failure.family if failure.status == "rejected" else None,
        exchange=failure.exchange_text,
        next_safe_action=next_action,
    )


STATUS_OF: dict[str, Literal["filled", "partially_filled", "open", "rejected"]] = {
    "Filled": "filled",
    "PartiallyFilled": "partially_filled",
    "New": "open",
    "Untriggered": "open",
    "Triggered": "open",  # enum.mdx: instantaneous, from Untriggered to New
    "Created": "open",
    "Rejected": "rejected",
}


def answer_status(
    order: ExchangeOrder,
) -> Literal["filled", "partially_filled", "open", "rejected", "cancelled"]:
    """What an order the exchange reports means for the agent (Bybit's orderStatus, in Pilot's words)."""
    # Cancelled, PartiallyFilledCanceled, Deactivated: an IOC remainder, or cancelled.
    remainder: Literal["partially_filled", "cancelled"] = (
        "partially_filled" if order.cum_exec_qty > 0 else "cancelled"
    )
    return STATUS_OF.get(order.status) or remainder


def from_order(order: ExchangeOrder, sent: dict[str, Any]) -> OrderAnswer:
    filled = order.cum_exec_qty
    status = answer_status(order)
    text = (
        order.reject_reason if order.reject_reason and order.reject_reason not in ("EC_NoError", "") else ""
    )
    return OrderAnswer(
        status=status,
        order_id=order.order_id,
        sent=sent,
        fill=Fill(
            filled_qty=plain(filled),
            avg_price=plain(order.avg_price) if order.avg_price and filled > 0 else None,
            fee=plain(order.cum_exec_fee),
            fee_coin=order.fee_coin or None,
            fees={coin: plain(fee) for coin, fee in order.fees} if len(order.fees) > 1 else None,
        ),
        exchange=ExchangeText(untrusted_text=text) if text else None,
        detail=_fill_words(status, filled, order.qty),
    )


def _fill_words(status: str, filled: Decimal, qty: Decimal) -> str:
    if status == "filled":
        return f"filled {plain(filled)} of {plain(qty)}"
    if status == "partially_filled":
        return f"filled {plain(filled)} of {plain(qty)}; the rest was not filled within the price limit"
    if status == "cancelled":
        return "nothing filled within the price limit; the order was cancelled (Limit IOC)"
    if status == "open":
        return "resting on the book"
    return "the exchange rejected the order after accepting it"
