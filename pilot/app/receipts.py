"""Receipt cards: one per plan, derived from the journal alone (asked, facts, checks, confirmation, sent, answer).

Pure: entries in, a typed ReceiptCard out. A refused plan gets a card too; a refusal is a receipt. The card
is sealed by the hash of the last journal entry that belongs to it, so anyone can check it against
`pilot journal verify`. Journal rows are history written by every version of Pilot, so they are read
leniently here, in this one place; everything downstream reads the card's fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pilot.app import kinds
from pilot.store import JournalEntry, iso_utc


class _Card(BaseModel):
    model_config = ConfigDict(frozen=True)


class CardOrder(_Card):
    """An order as asked for or planned."""

    symbol: str | None = None
    side: str | None = None
    qty: str | None = None
    notional_usd: str | None = None
    order_type: str | None = None
    price: str | None = None
    category: str | None = None
    reduce_only: bool | None = None


class CardFacts(_Card):
    policy_version: str | None = None
    trading_state: str | None = None
    market_data_at: str | None = None
    bid: str | None = None
    ask: str | None = None
    mark: str | None = None
    position_size: str | None = None
    equity_usd: str | None = None
    orders_today: int | None = None


class CardViolation(_Card):
    rule: str | None = None
    limit: str | None = None
    attempted: str | None = None
    detail: str | None = None


class CardNext(_Card):
    tool: str | None = None
    args: dict[str, Any] | None = None
    text: str | None = None
    human: str | None = None
    retry_after: str | None = None


class CardChecks(_Card):
    passed: bool
    violations: list[CardViolation] = Field(default_factory=list)
    notional_usd: str | None = None
    position_notional_usd: str | None = None
    liquidation_distance_pct: str | None = None
    needs_confirmation: bool | None = None


class CardRefusal(_Card):
    at: str
    seq: int
    stage: str  # "plan" or "place"
    status: str | None
    detail: str | None
    violations: list[CardViolation]
    next_safe_action: CardNext | None
    confirmation_id: str | None


class CardConfirmation(_Card):
    at: str
    seq: int
    channel: str  # "mcp form", "cli" or "none"
    verdict: str | None
    actor: str
    text: str | None
    changes: list[str]
    confirmation_id: str | None


class CardSent(_Card):
    at: str
    seq: int
    client_order_id: str | None
    symbol: str | None
    side: str | None
    qty: str | None
    worst_price: str | None
    order_type: str | None
    time_in_force: str | None
    reduce_only: bool | None
    origin: str | None


class CardFill(_Card):
    filled_qty: str | None = None
    avg_price: str | None = None
    fee: str | None = None


class CardAnswer(_Card):
    at: str
    seq: int
    status: str | None
    order_id: str | None
    detail: str | None
    fill: CardFill | None
    ret_code: int | None
    reject_family: str | None
    found_by_reconnaissance: bool | None
    untrusted_exchange_text: str | None
    next_safe_action: CardNext | None


class CardSeal(_Card):
    seq: int
    hash: str
    entries: list[int]


class ReceiptCard(_Card):
    card: str
    plan_id: str | None
    planned_at: str
    status: str
    asked: CardOrder | None
    facts: CardFacts | None
    checks: CardChecks
    refusals: list[CardRefusal]
    confirmations: list[CardConfirmation]
    sent: CardSent | None
    exchange: CardAnswer | None
    expires_at: str | None = None
    seal: CardSeal


def card_id(plan_entry: JournalEntry) -> str:
    """The plan id, or for a refused plan (which never gets one) its journal seq."""
    return plan_entry.plan_id or f"seq-{plan_entry.seq}"


def receipt_card(entries: Iterable[JournalEntry]) -> ReceiptCard:
    """Build one card from a plan entry and the entries journaled under its plan id, in seq order."""
    ordered = sorted(entries, key=lambda entry: entry.seq)
    plan = next(entry for entry in ordered if entry.kind == kinds.PLAN)
    refusals = [_refusal(plan, stage="plan")] if plan.data.get("status") == "refused" else []
    confirmations: list[CardConfirmation] = []
    sent, answer, expires_at = None, None, None
    for entry in ordered:
        if entry.kind == kinds.PLACE_REFUSED:
            refusals.append(_refusal(entry, stage="place"))
        elif entry.kind == kinds.CONFIRMATION and not _repeats_parking(entry, confirmations):
            confirmations.append(_confirmation(entry, confirmations))
        elif entry.kind == kinds.ORDER_SENT:
            sent = _sent(entry)
        elif entry.kind == kinds.ORDER_OUTCOME:
            answer = _answer(entry)
        elif entry.kind == kinds.PLAN and entry.plan_id and entry.data.get("status") == "ok":
            expires_at = entry.data.get("expires_at")
    last = ordered[-1]
    return ReceiptCard(
        card=card_id(plan),
        plan_id=plan.plan_id,
        planned_at=iso_utc(plan.at),
        status=_status(answer, sent, refusals, plan.data),
        asked=_asked(plan.data),
        facts=_facts(plan.data),
        checks=_checks(plan.data),
        refusals=refusals,
        confirmations=confirmations,
        sent=sent,
        exchange=answer,
        expires_at=expires_at,
        seal=CardSeal(seq=last.seq, hash=last.hash, entries=[entry.seq for entry in ordered]),
    )


def _detail(data: Mapping[str, Any]) -> str | None:
    """An answer's sentence: `detail`, or `reason` in rows written before the two were made one."""
    return data.get("detail") or data.get("reason")


def _asked(data: Mapping[str, Any]) -> CardOrder | None:
    """What the agent asked for: the recorded request if the entry has one, else the planned order."""
    source = data.get("request") or data.get("order")
    if not source:
        return None
    return CardOrder.model_validate({k: v for k, v in source.items() if k in CardOrder.model_fields})


def _facts(data: Mapping[str, Any]) -> CardFacts | None:
    snapshot = data.get("snapshot")
    if not snapshot:
        return None
    return CardFacts.model_validate({k: v for k, v in snapshot.items() if k in CardFacts.model_fields})


def _checks(data: Mapping[str, Any]) -> CardChecks:
    return CardChecks(
        passed=data.get("status") == "ok",
        violations=_violations(data),
        notional_usd=data.get("notional_usd"),
        position_notional_usd=data.get("position_notional_usd"),
        liquidation_distance_pct=data.get("liquidation_distance_pct"),
        needs_confirmation=data.get("needs_confirmation"),
    )


def _violations(data: Mapping[str, Any]) -> list[CardViolation]:
    fields = CardViolation.model_fields
    return [
        CardViolation.model_validate({k: v for k, v in item.items() if k in fields})
        for item in data.get("violations") or []
    ]


def _next(action: Mapping[str, Any] | None) -> CardNext | None:
    if not action:
        return None
    return CardNext.model_validate({k: v for k, v in action.items() if k in CardNext.model_fields})


def _refusal(entry: JournalEntry, *, stage: str) -> CardRefusal:
    data = entry.data
    return CardRefusal(
        at=iso_utc(entry.at),
        seq=entry.seq,
        stage=stage,
        status=data.get("status"),
        detail=_detail(data),
        violations=_violations(data),
        next_safe_action=_next(data.get("next_safe_action")),
        confirmation_id=data.get("confirmation_id"),
    )


def _repeats_parking(entry: JournalEntry, earlier: list[CardConfirmation]) -> bool:
    """place_order's own "parked" verdict right after the queue's "parked" event says nothing new."""
    return entry.data.get("verdict") == "parked" and any(c.verdict == "parked" for c in earlier)


def _confirmation(entry: JournalEntry, earlier: list[CardConfirmation]) -> CardConfirmation:
    """Where the human was asked and what came of it. A parked action is decided in the CLI."""
    data = entry.data
    event = data.get("event")
    verdict = (
        ("approved" if data.get("approved") else "rejected")
        if event == "decided"
        else event or data.get("verdict")
    )
    if event is not None or verdict == "parked" or any(c.channel == "cli" for c in earlier):
        channel = "cli"
    elif verdict in ("approved", "declined"):
        channel = "mcp form"
    else:
        channel = "none"
    return CardConfirmation(
        at=iso_utc(entry.at),
        seq=entry.seq,
        channel=channel,
        verdict=verdict,
        actor=entry.actor,
        text=data.get("text"),
        changes=data.get("changes") or [],
        confirmation_id=data.get("confirmation_id"),
    )


def _sent(entry: JournalEntry) -> CardSent:
    request = entry.data.get("request") or {}
    return CardSent(
        at=iso_utc(entry.at),
        seq=entry.seq,
        client_order_id=request.get("orderLinkId"),
        symbol=request.get("symbol"),
        side=request.get("side"),
        qty=request.get("qty"),
        worst_price=request.get("price"),
        order_type=request.get("orderType"),
        time_in_force=request.get("timeInForce"),
        reduce_only=request.get("reduceOnly"),
        origin=entry.data.get("origin"),
    )


def _answer(entry: JournalEntry) -> CardAnswer:
    data = entry.data
    fill = data.get("fill")
    return CardAnswer(
        at=iso_utc(entry.at),
        seq=entry.seq,
        status=data.get("status"),
        order_id=data.get("order_id"),
        detail=_detail(data),
        fill=CardFill.model_validate(fill) if fill else None,
        ret_code=data.get("ret_code"),
        reject_family=data.get("reject_family"),
        found_by_reconnaissance=data.get("found_by_reconnaissance"),
        untrusted_exchange_text=(data.get("exchange") or {}).get("untrusted_text"),
        next_safe_action=_next(data.get("next_safe_action")),
    )


def _status(
    answer: CardAnswer | None, sent: CardSent | None, refusals: list[CardRefusal], plan: Mapping[str, Any]
) -> str:
    """The card's headline: the exchange's answer, else the last refusal, else where the plan stands."""
    if answer is not None:
        return str(answer.status)
    if sent is not None:
        return "outcome_unknown"
    if refusals:
        return str(refusals[-1].status or "refused")
    return "planned" if plan.get("status") == "ok" else "refused"
