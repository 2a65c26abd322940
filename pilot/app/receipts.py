"""Receipt cards: one per plan, derived from the journal alone (asked, facts, checks, confirmation, sent, answer).

Pure: entries in, plain dicts out. A refused plan gets a card too; a refusal is a receipt. The card is
sealed by the hash of the last journal entry that belongs to it, so anyone can check it against
`pilot journal verify`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pilot.app import kinds
from pilot.store import JournalEntry, iso_utc

FACT_FIELDS = (
    "policy_version",
    "trading_state",
    "market_data_at",
    "bid",
    "ask",
    "mark",
    "position_size",
    "equity_usd",
    "orders_today",
)


def card_id(plan_entry: JournalEntry) -> str:
    """The plan id, or for a refused plan (which never gets one) its journal seq."""
    return plan_entry.plan_id or f"seq-{plan_entry.seq}"


def receipt_card(entries: Iterable[JournalEntry]) -> dict[str, Any]:
    """Build one card from a plan entry and the entries journaled under its plan id, in seq order."""
    ordered = sorted(entries, key=lambda entry: entry.seq)
    plan = next(entry for entry in ordered if entry.kind == kinds.PLAN)
    card: dict[str, Any] = {
        "card": card_id(plan),
        "plan_id": plan.plan_id,
        "planned_at": iso_utc(plan.at),
        "asked": _asked(plan.data),
        "facts": _facts(plan.data),
        "checks": _checks(plan.data),
        "refusals": [],
        "confirmations": [],
        "sent": None,
        "exchange": None,
    }
    if plan.data.get("status") == "refused":
        card["refusals"].append(_refusal(plan, stage="plan"))
    for entry in ordered:
        _apply(card, entry)
    card["status"] = _status(card, plan.data)
    last = ordered[-1]
    card["seal"] = {"seq": last.seq, "hash": last.hash, "entries": [entry.seq for entry in ordered]}
    return card


def _apply(card: dict[str, Any], entry: JournalEntry) -> None:
    data = entry.data
    if entry.kind == kinds.PLACE_REFUSED:
        card["refusals"].append(_refusal(entry, stage="place"))
    elif entry.kind == kinds.CONFIRMATION and not _repeats_parking(entry, card["confirmations"]):
        card["confirmations"].append(_confirmation(entry, card["confirmations"]))
    elif entry.kind == kinds.ORDER_SENT:
        card["sent"] = _sent(entry)
    elif entry.kind == kinds.ORDER_OUTCOME:
        card["exchange"] = _answer(entry)
    elif entry.kind == kinds.PLAN and entry.plan_id and data.get("status") == "ok":
        card["expires_at"] = data.get("expires_at")


def _asked(data: dict[str, Any]) -> dict[str, Any] | None:
    """What the agent asked for: the recorded request if the entry has one, else the planned order."""
    source = data.get("request") or data.get("order")
    if not source:
        return None
    fields = ("symbol", "side", "qty", "notional_usd", "order_type", "price", "category", "reduce_only")
    return {name: source[name] for name in fields if source.get(name) is not None}


def _facts(data: dict[str, Any]) -> dict[str, Any] | None:
    snapshot = data.get("snapshot")
    return {name: snapshot.get(name) for name in FACT_FIELDS} if snapshot else None


def _checks(data: dict[str, Any]) -> dict[str, Any]:
    violations = [_violation(item) for item in data.get("violations") or []]
    return {
        "passed": data.get("status") == "ok",
        "violations": violations,
        "notional_usd": data.get("notional_usd"),
        "position_notional_usd": data.get("position_notional_usd"),
        "liquidation_distance_pct": data.get("liquidation_distance_pct"),
        "needs_confirmation": data.get("needs_confirmation"),
    }


def _violation(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item.get(name) for name in ("rule", "limit", "attempted", "detail")}


def _next(action: dict[str, Any] | None) -> dict[str, Any] | None:
    if not action:
        return None
    keep = ("tool", "args", "text", "human", "retry_after")
    return {name: action[name] for name in keep if action.get(name) is not None}


def _refusal(entry: JournalEntry, *, stage: str) -> dict[str, Any]:
    data = entry.data
    return {
        "at": iso_utc(entry.at),
        "seq": entry.seq,
        "stage": stage,
        "status": data.get("status"),
        "reason": data.get("reason"),
        "violations": [_violation(item) for item in data.get("violations") or []],
        "next_safe_action": _next(data.get("next_safe_action")),
        "confirmation_id": data.get("confirmation_id"),
    }


def _repeats_parking(entry: JournalEntry, earlier: list[dict[str, Any]]) -> bool:
    """place_order's own "parked" verdict right after the queue's "parked" event says nothing new."""
    return entry.data.get("verdict") == "parked" and any(c["verdict"] == "parked" for c in earlier)


def _confirmation(entry: JournalEntry, earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the human was asked and what came of it. A parked action is decided in the CLI."""
    data = entry.data
    event = data.get("event")
    if event == "decided":
        verdict = "approved" if data.get("approved") else "rejected"
    else:
        verdict = event or data.get("verdict")
    via_cli = event is not None or verdict == "parked" or any(c["channel"] == "cli" for c in earlier)
    if via_cli:
        channel = "cli"
    elif verdict in ("approved", "declined"):
        channel = "mcp form"
    else:
        channel = "none"
    return {
        "at": iso_utc(entry.at),
        "seq": entry.seq,
        "channel": channel,
        "verdict": verdict,
        "actor": entry.actor,
        "text": data.get("text"),
        "changes": data.get("changes") or [],
        "confirmation_id": data.get("confirmation_id"),
    }


def _sent(entry: JournalEntry) -> dict[str, Any]:
    request = entry.data.get("request") or {}
    return {
        "at": iso_utc(entry.at),
        "seq": entry.seq,
        "client_order_id": request.get("orderLinkId"),
        "symbol": request.get("symbol"),
        "side": request.get("side"),
        "qty": request.get("qty"),
        "worst_price": request.get("price"),
        "order_type": request.get("orderType"),
        "time_in_force": request.get("timeInForce"),
        "reduce_only": request.get("reduceOnly"),
        "origin": entry.data.get("origin"),
    }


def _answer(entry: JournalEntry) -> dict[str, Any]:
    data = entry.data
    untrusted = (data.get("exchange") or {}).get("untrusted_text")
    return {
        "at": iso_utc(entry.at),
        "seq": entry.seq,
        "status": data.get("status"),
        "order_id": data.get("order_id"),
        "reason": data.get("reason"),
        "fill": data.get("fill"),
        "ret_code": data.get("ret_code"),
        "reject_family": data.get("reject_family"),
        "found_by_reconnaissance": data.get("found_by_reconnaissance"),
        "untrusted_exchange_text": untrusted,
        "next_safe_action": _next(data.get("next_safe_action")),
    }


def _status(card: dict[str, Any], plan: dict[str, Any]) -> str:
    """The card's headline: the exchange's answer, else the last refusal, else where the plan stands."""
    if card["exchange"] is not None:
        return str(card["exchange"]["status"])
    if card["sent"] is not None:
        return "outcome_unknown"
    if card["refusals"]:
        return str(card["refusals"][-1]["status"] or "refused")
    return "planned" if plan.get("status") == "ok" else "refused"
