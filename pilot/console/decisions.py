"""What the Approvals and Kill switch pages show and do: the human's use cases in pilot.app, nothing more.

Deciding goes through `pilot.app.human.desk.decide` with `via="console"` (confirm.consoleChannel), so the
approved action is carried out by the running server through pilot.app.service.parked, re-evaluated then on fresh
facts exactly as after `pilot confirm approve`. The switch goes through `pilot.app.human.desk.set_kill_switch`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pilot.app.answers.plan_records import PlanPayload
from pilot.app.human.desk import ChannelOff, ConfirmationRecord, pending_confirmations, require_channel
from pilot.app.runtime.runtime import Runtime
from pilot.core.valuation import Liquidation


@dataclass(frozen=True, slots=True)
class Parked:
    """A parked action as the server recorded it (never the agent's words)."""

    confirmation_id: str
    tool: str
    summary: str
    created_at: str
    expires_at: str
    expires: datetime  # when it expires (the page counts down to it from the server's now)
    order: dict[str, Any]
    worst_price: str | None
    notional_usd: str | None
    # The position's estimated liquidation after the order (pilot.core.valuation.Liquidation: its price, its
    # distance from the mark, and whether it is within reach at all); None for none, or a payload without it.
    liquidation: Liquidation | None
    policy_version: str | None


@dataclass(frozen=True, slots=True)
class Decided:
    confirmation_id: str
    tool: str
    summary: str
    status: str
    decided_by: str | None
    result_status: str | None
    result_detail: str | None


@dataclass(frozen=True, slots=True)
class ApprovalsView:
    channel_off: ChannelOff | None
    pending: list[Parked]
    recent: list[Decided]
    now: datetime  # the server's now, which each parked action's countdown starts from (not in the digests)

    @property
    def pending_digest(self) -> str:
        """Changes whenever what the pending part shows changes (the page swaps it only then)."""
        return hashlib.sha256(repr(self.pending).encode()).hexdigest()[:32]

    @property
    def decided_digest(self) -> str:
        return hashlib.sha256(repr(self.recent).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class OneView:
    """One parked action as its own page shows it (where URL-mode elicitation, ntfy and Telegram link to)."""

    channel_off: ChannelOff | None
    parked: Parked | None
    decided: Decided | None
    now: datetime


async def one(runtime: Runtime, confirmation_id: str) -> OneView:
    """The parked action `confirmation_id`, waiting or decided; neither when there is none."""
    try:
        require_channel(runtime, "console")
        off = None
    except ChannelOff as closed:
        off = closed
    now = runtime.now()
    record = await runtime.store.confirmations.get(confirmation_id, now=now)
    if record is None:
        return OneView(off, None, None, now)
    if record.status == "pending":
        return OneView(off, await _parked(runtime, record), None, now)
    return OneView(off, None, _decided(record), now)


async def approvals(runtime: Runtime, *, recent: int = 10) -> ApprovalsView:
    now = runtime.now()
    try:
        require_channel(runtime, "console")
    except ChannelOff as off:
        return ApprovalsView(channel_off=off, pending=[], recent=[], now=now)
    records = await pending_confirmations(runtime)
    pending = [await _parked(runtime, record) for record in records]
    everything = await runtime.store.confirmations.list(now=now)
    decided = [record for record in everything if record.status != "pending"]
    decided.sort(key=lambda record: record.decided_at or record.created_at, reverse=True)
    return ApprovalsView(
        channel_off=None,
        pending=pending,
        recent=[_decided(record) for record in decided[:recent]],
        now=now,
    )


def _decided(record: ConfirmationRecord) -> Decided:
    return Decided(
        confirmation_id=record.confirmation_id,
        tool=record.tool,
        summary=record.summary,
        status=record.status,
        decided_by=record.decided_by,
        result_status=str(record.result.get("status")) if record.result else None,
        result_detail=str(record.result.get("detail") or "") if record.result else None,
    )


async def _parked(runtime: Runtime, record: ConfirmationRecord) -> Parked:
    action = record.action if isinstance(record.action, dict) else {}
    order = action.get("order") if isinstance(action.get("order"), dict) else {}
    payload = None
    if action.get("plan_id"):
        plan = await runtime.store.plans.get(action["plan_id"])
        payload = PlanPayload.read(plan.payload) if plan is not None else None
    if payload is not None:
        order = payload.order.model_dump(mode="json")
    return Parked(
        confirmation_id=record.confirmation_id,
        tool=record.tool,
        summary=record.summary,
        created_at=record.created_at.isoformat(timespec="seconds"),
        expires_at=record.expires_at.isoformat(timespec="seconds"),
        expires=record.expires_at,
        order=order or {},
        worst_price=payload.order.price if payload is not None else None,
        notional_usd=payload.notional_usd if payload is not None else action.get("notional_usd"),
        liquidation=payload.liquidation if payload is not None else None,
        policy_version=payload.policy_version if payload is not None else None,
    )
