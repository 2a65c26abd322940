"""Receipt cards: one per plan, derived from the journal alone (asked, facts, checks, confirmation, sent, answer).

Pure: entries in, a typed ReceiptCard out. A refused plan gets a card too; a refusal is a receipt. The card
is sealed by the hash of the last journal entry that belongs to it, so anyone can check it against
`pilot journal verify`. Journal rows are history written by every version of Pilot, so they are read
leniently here, in this one place; everything downstream reads the card's fields.

One event is one entry on the card, though the journal may hold it more than once: a parking is written by
the queue, by the approval step and as place_order's pending answer; a CLI approval by `pilot confirm
approve` and again when the server carries it out (`restates` says which rows repeat an earlier one). The
card's `path` is the way the order went, one step per event: planned, parked, approved, sent, filled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.core.valuation import Liquidation
from pilot.keys.environments import Environment
from pilot.store import JournalEntry, agent_of, iso_utc


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
    venue: str | None = (
        None  # the venue the facts were read from (Bybit, OKX); none in rows before it was kept
    )
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
    liquidation_price: str | None = None  # rows before it was kept: none
    needs_confirmation: bool | None = None

    @property
    def liquidation_words(self) -> str:
        """The liquidation of the position the plan left, for a person."""
        if self.liquidation_price is not None and self.liquidation_distance_pct is not None:
            return Liquidation(
                Decimal(self.liquidation_price), Decimal(self.liquidation_distance_pct)
            ).words()
        if self.liquidation_distance_pct is not None:
            return f"liquidation {self.liquidation_distance_pct}% from the mark"
        return "no liquidation price (flat, spot, or the equity covers the position)"


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
    # "mcp form", "queue" (parked for a human outside the client), the channel it was decided on ("cli",
    # "console", "telegram"), a push's channel ("telegram", "ntfy", "mcp url"), or "none"
    channel: str
    verdict: str | None
    actor: str
    text: str | None
    changes: list[str]
    confirmation_id: str | None
    open_channels: list[str] = []  # where a parked action could be decided when it was parked
    approver: str | None = None  # who decided, where the channel names one (a Telegram user id)


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
    fee_coin: str | None = None  # the coin of `fee` (a spot buy pays in the coin bought); older rows: none
    fees: dict[str, str] | None = None  # each coin's fee, when paid in several


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


class CardStep(_Card):
    """One step of the way an order went: planned, refused, parked, approved, declined, withdrawn, sent,
    an exchange status (filled, rejected, outcome_unknown, ...), or `found_*` for an unknown outcome looked
    up later."""

    step: str
    at: str
    seq: int
    actor: str


LIVE_HOME, PRACTICE_HOME = "live", "practice"  # what a home is from its journal's first entry


class CardHome(_Card):
    """Which money the card's home trades, from the journal's own first entry: a home is live (real money,
    Bybit mainnet) or practice from that entry on, never both."""

    kind: str  # LIVE_HOME or PRACTICE_HOME
    environment: str | None = (
        None  # a live home's: "bybit" (mainnet); a practice home's first entry says none
    )
    venue: str | None = None  # where the real money is: "Bybit"

    @property
    def live(self) -> bool:
        return self.kind == LIVE_HOME

    @property
    def words(self) -> str:
        """Which money, for a person: every card, CLI approval and console card says it this way."""
        if not self.live:
            return "practice: no real money"
        venue = f"{self.venue} mainnet" if self.venue else "mainnet"
        return f"LIVE: real money on {venue} (environment {self.environment})"


class ReceiptCard(_Card):
    card: str
    plan_id: str | None
    home: CardHome = Field(default_factory=lambda: CardHome(kind=PRACTICE_HOME))
    agent: str | None = None  # the named agent whose plan this is (actor `agent:NAME`); None: none named
    planned_at: str
    status: str
    path: list[CardStep]
    asked: CardOrder | None
    facts: CardFacts | None
    checks: CardChecks
    refusals: list[CardRefusal]
    confirmations: list[CardConfirmation]
    sent: CardSent | None
    exchange: CardAnswer | None
    expires_at: str | None = None
    seal: CardSeal


QUEUE = "queue"  # a parked action's channel until a human decides it on one


def home_of(first: JournalEntry | None) -> CardHome:
    """The home's kind from its journal's first entry: live when that is a `home` entry saying so."""
    if first is None or first.kind != entry_kinds.HOME or first.data.get("kind") != LIVE_HOME:
        return CardHome(kind=PRACTICE_HOME)
    environment = str(first.data.get("environment") or "")
    try:
        venue: str | None = Environment(environment).venue_name
    except ValueError:  # a row naming an environment this version does not know
        venue = None
    return CardHome(kind=LIVE_HOME, environment=environment or None, venue=venue)


def card_id(plan_entry: JournalEntry) -> str:
    """The plan id, or for a refused plan (which never gets one) its journal seq."""
    return plan_entry.plan_id or f"seq-{plan_entry.seq}"


def receipt_card(entries: Iterable[JournalEntry], home: CardHome | None = None) -> ReceiptCard:
    """Build one card from a plan entry and the entries journaled under its plan id, in seq order, on a home
    whose first journal entry made it `home` (`home_of`; practice when not given)."""
    ordered = sorted(entries, key=lambda entry: entry.seq)
    plan = next(entry for entry in ordered if entry.kind == entry_kinds.PLAN)
    refused_plan = plan.data.get("status") == "refused"
    card = _Trail(plan, refusals=[_refusal(plan, stage="plan")] if refused_plan else [])
    for entry in ordered:
        if entry is not plan:
            card.read(entry)
    last = ordered[-1]
    return ReceiptCard(
        card=card_id(plan),
        plan_id=plan.plan_id,
        home=home or CardHome(kind=PRACTICE_HOME),
        agent=agent_of(plan.actor),
        planned_at=iso_utc(plan.at),
        status=_status(card.path[-1].step),
        path=card.path,
        asked=_asked(plan.data),
        facts=_facts(plan.data),
        checks=_checks(plan.data),
        refusals=card.refusals,
        confirmations=card.confirmations,
        sent=card.sent,
        exchange=card.answer,
        expires_at=plan.data.get("expires_at") if not refused_plan else None,
        seal=CardSeal(seq=last.seq, hash=last.hash, entries=[entry.seq for entry in ordered]),
    )


# A card's headline is where its path ended; these steps read differently as a status.
_STATUS_OF_STEP = {"sent": "outcome_unknown", "parked": "pending_confirmation"}


def _status(step: str) -> str:
    return step.removeprefix("found_") if step.startswith("found_") else _STATUS_OF_STEP.get(step, step)


_NOT_A_STEP = ("unavailable", "not_asked", "pushed", "press_refused", "closed")  # not a step of the order


class _Trail:
    """Reads a plan's later entries once each: its refusals, confirmations, send, answer and path."""

    def __init__(self, plan: JournalEntry, refusals: list[CardRefusal]) -> None:
        self.refusals = refusals
        self.confirmations: list[CardConfirmation] = []
        self.sent: CardSent | None = None
        self.answer: CardAnswer | None = None
        self.path = [_step(plan, "refused" if refusals else "planned")]

    def read(self, entry: JournalEntry) -> None:
        kind, data = entry.kind, entry.data
        if kind == entry_kinds.PLACE_PENDING or (
            kind == entry_kinds.PLACE_REFUSED and data.get("status") == "pending_confirmation"
        ):  # before place.pending existed, a parking was journaled as place.refused
            self._step(entry, "parked")
        elif kind == entry_kinds.PLACE_REFUSED:
            refusal = _refusal(entry, stage="place")
            self.refusals.append(refusal)
            self._step(entry, refusal.status or "refused")
        elif kind == entry_kinds.CONFIRMATION:
            self._confirmation(entry)
        elif kind == entry_kinds.ORDER_SENT:
            self.sent = _sent(entry)
            self._step(entry, "sent")
        elif kind == entry_kinds.ORDER_OUTCOME:
            self.answer = _answer(entry)
            self._step(entry, str(self.answer.status or "outcome_unknown"))
        elif kind == entry_kinds.ORDER_RESOLVED and data.get("status"):
            self._step(entry, f"found_{data['status']}")

    def _confirmation(self, entry: JournalEntry) -> None:
        confirmation = _confirmation(entry, self.confirmations)
        if restates(confirmation, self.confirmations):
            return
        self.confirmations.append(confirmation)
        verdict = confirmation.verdict or "asked"
        if verdict not in _NOT_A_STEP:
            self._step(entry, "declined" if verdict == "rejected" else verdict)

    def _step(self, entry: JournalEntry, step: str) -> None:
        if self.path[-1].step != step:  # the same step twice in a row is one event written twice
            self.path.append(_step(entry, step))


def _step(entry: JournalEntry, step: str) -> CardStep:
    return CardStep(step=step, at=iso_utc(entry.at), seq=entry.seq, actor=entry.actor)


def restates(confirmation: CardConfirmation, earlier: list[CardConfirmation]) -> bool:
    """Whether this confirmation row repeats one already on the card: place_order's own "parked" verdict
    after the queue's "parked" event, or the server's "approved" when it carries out what a human approved
    with `pilot confirm approve`."""
    if confirmation.verdict == "parked":
        return any(c.verdict == "parked" for c in earlier)
    if confirmation.verdict == "approved" and confirmation.channel == QUEUE:
        return any(c.verdict == "approved" for c in earlier)
    return False


def event_key(entry: JournalEntry) -> str | None:
    """Rows of one plan that tell the same event share a key: its parking (written by the queue, the approval
    step and as place_order's pending answer), or its approval outside the client (the human's decision, and
    the server's when it carries it out). Listings show each event once (the CLI's journal, the console)."""
    if entry.plan_id is None:
        return None
    data = entry.data
    parked = (
        (entry.kind == entry_kinds.CONFIRMATION and "parked" in (data.get("event"), data.get("verdict")))
        or entry.kind == entry_kinds.PLACE_PENDING
        or (entry.kind == entry_kinds.PLACE_REFUSED and data.get("status") == "pending_confirmation")
    )
    if parked:
        return f"parked:{entry.plan_id}"
    decided = data.get("event") == "decided" and data.get("approved") is True
    server_run = data.get("verdict") == "approved" and entry.actor == "human" and "event" not in data
    if entry.kind == entry_kinds.CONFIRMATION and (decided or server_run):
        return f"approved:{entry.plan_id}"
    return None


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
        liquidation_price=data.get("liquidation_price"),
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


def _confirmation(entry: JournalEntry, earlier: list[CardConfirmation]) -> CardConfirmation:
    """Where the human was asked and what came of it. A parked action is decided in the CLI."""
    data = entry.data
    event = data.get("event")
    verdict = (
        ("approved" if data.get("approved") else "rejected")
        if event == "decided"
        else event or data.get("verdict")
    )
    if event == "decided":
        channel = str(data.get("via") or "cli")  # rows before other channels existed were the CLI's
    elif data.get("channel"):
        channel = str(data["channel"])  # a push to the human: telegram, ntfy, mcp url
    elif event is not None or verdict == "parked" or any(c.channel != "mcp form" for c in earlier):
        channel = QUEUE
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
        open_channels=[str(via) for via in data.get("channels") or []],
        approver=str(data["approver"]) if data.get("approver") is not None else None,
    )


def _sent(entry: JournalEntry) -> CardSent:
    request = sent_request(entry.data.get("request"))
    return CardSent(
        at=iso_utc(entry.at),
        seq=entry.seq,
        client_order_id=request.get("order_link_id"),
        symbol=request.get("symbol"),
        side=request.get("side"),
        qty=request.get("qty"),
        worst_price=request.get("price"),
        order_type=request.get("order_type"),
        time_in_force=request.get("time_in_force"),
        reduce_only=request.get("reduce_only"),
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
