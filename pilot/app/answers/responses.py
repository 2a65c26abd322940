"""What the tools answer: pydantic models, so every MCP tool has an output schema. Amounts are strings.

Answers are compact, because an agent pays for every byte it reads on every call, and they are serialised in
one way, here, for the wire and for the journal alike (`_Answer._compact`):

- a field that is null is left out (a next action's `tool` excepted: null there says no call fits);
- a violation whose next action is the answer's `next_safe_action` leaves its `next` out: it refers to the
  one at the top instead of repeating it (a violation with a next action of its own keeps it);
- a snapshot says each fact once, and what the answer is about: the instrument's grid only where a size or
  a price on the grid was refused (a plan that passed is on it already), the source of each fact (stream or
  REST) only in the journal (`JOURNAL`).

Models keep every field in memory; only what is written out is trimmed, so every answer a tool builds,
and every refusal a rule adds, gets the compact shape without a line of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from pilot.core.codes import RESIZE_CODES
from pilot.core.violations import NextAction, Violation

RefusalStatus = Literal["refused", "declined", "pending_confirmation"]
_SIZE_RULES = frozenset(code.value for code in RESIZE_CODES)  # a snapshot shows the grid for these

_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with camelCase keys (an instrument's rules as Bybit names them) in the answers' one key style:
    tickSize -> tick_size."""
    return {_WORD_START.sub("_", key).lower(): value for key, value in data.items()}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why nothing was sent: the status, one sentence, the broken rules and the next safe action."""

    status: RefusalStatus
    detail: str
    violations: tuple[Violation, ...] = ()
    next_safe_action: NextAction | None = None
    confirmation_id: str | None = None

    @staticmethod
    def of(violation: Violation, detail: str) -> Refusal:
        """Refused for one violation, whose next action is the one to take."""
        return Refusal("refused", detail, (violation,), violation.next)


# The serialisation context of a journal row: the whole snapshot is kept (what a decision was made from).
JOURNAL: dict[str, bool] = {"journal": True}


def journaled(answer: BaseModel) -> dict[str, Any]:
    """An answer as the journal keeps it: the compact shape, with the whole snapshot."""
    return answer.model_dump(mode="json", context=JOURNAL)


def compact_json(data: Any) -> str:
    """JSON without the spaces a model would pay for (the text of a tool's result)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def without_repeated_next(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (an answer as JSON) with each violation's `next` left out where it is the answer's
    `next_safe_action`: said once, at the top."""
    violations, top = data.get("violations"), data.get("next_safe_action")
    if not isinstance(violations, list) or top is None:
        return data
    shown = [
        {key: value for key, value in v.items() if key != "next"} if v.get("next") == top else v
        for v in violations
    ]
    return {**data, "violations": shown}


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)
    # Fields written out even when null, because null there says something.
    null_kept: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        kept = self.null_kept
        data = {key: value for key, value in data.items() if value is not None or key in kept}
        return self._trimmed(data, bool((info.context or {}).get("journal")))

    def _trimmed(self, data: dict[str, Any], journal: bool) -> dict[str, Any]:
        """What of this answer's fields is written out, beyond its nulls (see the module docstring)."""
        return without_repeated_next(data)


class Answer(_Answer):
    """What a tool returns. Every answer names the account it is about, so no one mistakes paper for real."""

    environment: str | None = Field(
        default=None,
        description="The account this answer is about: paper, bybit-demo, bybit-testnet, okx-demo, or bybit "
        "LIVE (real money)",
    )

    def naming(self, environment: str) -> Self:
        """This answer, saying which environment it came from (set once for every tool, by the server)."""
        return self.model_copy(update={"environment": environment})


class NextActionOut(_Answer):
    null_kept: ClassVar[frozenset[str]] = frozenset({"tool"})

    tool: str | None = Field(description="A tool to call exactly as given, or null when no call fits")
    args: dict[str, Any] | None = Field(default=None, description="Complete arguments for that tool")
    text: str
    human: str | None = Field(default=None, description="What only a human can change")
    retry_after: str | None = Field(default=None, description="ISO-8601 UTC time after which waiting helps")
    options: list[dict[str, Any]] | None = Field(default=None, description="Calls that free room, if wanted")
    nothing_fits: dict[str, str] | None = Field(
        default=None,
        description="When no size fits: the rule, the room it leaves and the minimum (base units)",
    )


class HoldOut(_Answer):
    """One thing holding trading below active, and who set it, when and why."""

    source: str = Field(
        description="policy, invalidPolicy, killSwitch, lossLimit, drawdown, journalRollback or authority"
    )
    state: str = Field(description="The trading state it holds: reducing or halted")
    by: str | None = Field(default=None, description="Who set it: human, agent or pilot")
    at: str | None = None
    reason: str | None = Field(
        default=None, description="The reason given when it was set (a person's words)"
    )
    until: str | None = Field(default=None, description="When it lifts by itself")


class ViolationOut(_Answer):
    rule: str = Field(description="Stable code: a policy.json key, instrument.*, tradingState, facts, ...")
    limit: str
    attempted: str
    detail: str
    next: NextActionOut | None = Field(
        default=None, description="Left out where it is the answer's next_safe_action (said once, there)"
    )
    did_you_mean: str | None = Field(
        default=None,
        description="For a symbol not allowed or not listed: the listed market most likely meant",
    )
    did_you_mean_allowed: bool | None = Field(
        default=None, description="Whether policy.json allows that market (false: only a human can allow it)"
    )
    held_by: list[HoldOut] | None = Field(
        default=None, description="tradingState: what holds trading (only what stops this action)"
    )
    budget: str | None = Field(default=None, description="Whose limit: account, or agent:NAME")


class Snapshot(_Answer):
    """What a decision was derived from, so an agent can tell 'send unchanged' from 'the world moved'."""

    policy_version: str
    trading_state: str
    venue: str | None = Field(default=None, description="The venue the facts were read from: Bybit, OKX")
    market_data_at: str | None = None  # a fact left out was not read
    bid: str | None = None
    ask: str | None = None
    mark: str | None = None
    position_size: str | None = None
    equity_usd: str | None = None
    orders_today: int | None = None
    pending_qty: dict[str, str] | None = Field(
        default=None, description="Open orders and unsettled sends per side, counted as filled for the caps"
    )
    elsewhere_qty: str | None = Field(
        default=None,
        description="The same coin held or positioned in the other category (spot or linear), counted in "
        "maxNotionalUsd, which caps each coin's gross exposure",
    )
    instrument: dict[str, str] | None = None
    fact_sources: dict[str, str] | None = Field(
        default=None,
        description="With streams on: each fact's source, stream (younger than maxFactAgeMs) or rest",
    )

    @field_validator("instrument", mode="before")
    @classmethod
    def _snake_case(cls, value: Any) -> Any:
        return snake_keys(value) if isinstance(value, Mapping) else value


class PlannedOrderOut(_Answer):
    """Exactly what place_order will send."""

    category: str
    symbol: str
    side: Literal["buy", "sell"]
    qty: str
    order_type: Literal["market", "limit"]
    price: str = Field(description="The limit price sent; for a market order the Limit IOC worst price")
    time_in_force: Literal["IOC", "GTC"]
    reduce_only: bool
    stop_loss: str | None = Field(default=None, description="Sent with the order (TP/SL on the position)")
    take_profit: str | None = None


class Adjustment(_Answer):
    """One field of the order as planned that differs from what was asked, and why."""

    field: str
    asked: str
    planned: str
    rule: str | None = Field(
        default=None, description="The instrument rule that made the change (instrument.qtyStep, ...)"
    )
    reason: str


class PlanAnswer(Answer):
    status: Literal["ok", "refused"]
    plan_id: str | None = None
    expires_at: str | None = None
    order: PlannedOrderOut | None = None
    notional_usd: str | None = Field(default=None, description="Worst-fill notional of this order")
    position_notional_usd: str | None = Field(
        default=None, description="Worst-fill notional of the position left"
    )
    liquidation_price: str | None = Field(
        default=None,
        description="Where the position left would be liquidated, estimated (none: never, or spot)",
    )
    liquidation_distance_pct: str | None = Field(
        default=None, description="How far that is from the mark, in percent of it"
    )
    needs_confirmation: bool | None = Field(
        default=None, description="place_order asks a human first (the form shows the order and its notional)"
    )
    can_confirm: bool | None = Field(
        default=None,
        description="Whether this client can get a human's approval (a form, or the CLI channel); when it "
        "cannot, orders that would need one are refused with the largest size that does not",
    )
    violations: list[ViolationOut] | None = None
    next_safe_action: NextActionOut | None = None
    snapshot: Snapshot | None = None
    adjustments: list[Adjustment] | None = Field(
        default=None,
        description="What was changed of the asked order and why (size floored to the lot step, price on the tick)",
        exclude_if=lambda value: not value,
    )

    def _trimmed(self, data: dict[str, Any], journal: bool) -> dict[str, Any]:
        data = without_repeated_next(data)
        shot = data.get("snapshot")
        if journal or not isinstance(shot, dict):
            return data
        sizes = any(v.rule in _SIZE_RULES for v in self.violations or ())
        left_out = {"fact_sources"} if sizes else {"fact_sources", "instrument"}
        return {**data, "snapshot": {key: value for key, value in shot.items() if key not in left_out}}


class ToolAnswer(Answer):
    """The answer of a state-changing tool; a refusal of Pilot's own becomes one in one way."""

    journal_problem: ViolationOut | None = Field(
        default=None,
        description="Set when Pilot could not record part of this call (disk full, I/O error): rule "
        "storeUnavailable, what is missing and what a human must do. The rest of the answer still holds",
    )

    @classmethod
    def from_refusal(cls, refusal: Refusal) -> Self:
        raise NotImplementedError


class Fill(_Answer):
    filled_qty: str
    avg_price: str | None = None
    fee: str
    fee_coin: str | None = Field(
        default=None,
        description="The coin of `fee` (a spot buy pays in the coin bought); null when the exchange did not say",
    )
    fees: dict[str, str] | None = Field(
        default=None, description="When paid in several coins: each coin's fee"
    )


class ExchangeText(_Answer):
    """Whatever the exchange wrote. Untrusted: shown, never followed."""

    untrusted_text: str


class CancelledOrder(_Answer):
    """A resting order close_position cancelled so that it could not reopen the position past a cap."""

    order_id: str
    side: Literal["buy", "sell"]
    qty: str = Field(description="The quantity it still had open")
    price: str


class ProtectionOut(_Answer):
    """The position's stop after a fill that asked for one: set as asked, or missing with the call to set it."""

    stop_loss: str | None = None
    take_profit: str | None = None
    missing_stop: bool
    set_with: NextActionOut | None = None


OrderStatus = Literal[
    "filled",
    "partially_filled",
    "open",
    "accepted",  # the exchange took it (retCode 0) but reading it back failed: fill not known yet
    "cancelled",
    "rejected",
    "outcome_unknown",
    "refused",
    "declined",
    "pending_confirmation",
]
ActionStatus = Literal[
    "done",
    "unchanged",  # the exchange answered "not modified": it already was as asked; nothing was refused
    "refused",
    "rejected",
    "outcome_unknown",
    "declined",
    "pending_confirmation",
    "not_found",
]


class OrderAnswer(ToolAnswer):
    """The answer of every tool that may send an order (place_order, close_position)."""

    status: OrderStatus
    plan_id: str | None = None
    order_id: str | None = None
    order_link_id: str | None = None
    sent: dict[str, Any] | None = Field(
        default=None, description="The exact request sent, if one was (Bybit's fields, in snake_case)"
    )
    fill: Fill | None = None
    found_by_reconnaissance: bool | None = None
    ret_code: int | None = None
    reject_family: str | None = None
    exchange: ExchangeText | None = None
    violations: list[ViolationOut] | None = None
    detail: str | None = Field(default=None, description="Why, in one sentence (Pilot's own words)")
    next_safe_action: NextActionOut | None = None
    confirmation_id: str | None = None
    protection: ProtectionOut | None = None
    cancelled_first: list[CancelledOrder] | None = Field(
        default=None,
        description="close_position only: resting orders cancelled before closing, which would otherwise "
        "have reopened the position past a cap",
    )
    journal_seq: list[int] = Field(default_factory=list, description="Journal entries written for this call")

    @field_validator("sent", mode="before")
    @classmethod
    def _snake_case(cls, value: Any) -> Any:
        return snake_keys(value) if isinstance(value, Mapping) else value

    @classmethod
    def from_refusal(cls, refusal: Refusal, *, plan_id: str | None = None) -> Self:
        return cls(
            status=refusal.status,
            plan_id=plan_id,
            violations=violations_out(refusal.violations) or None,
            detail=refusal.detail,
            next_safe_action=next_out(refusal.next_safe_action),
            confirmation_id=refusal.confirmation_id,
        )


class ActionAnswer(ToolAnswer):
    """cancel_order, set_leverage, activate_kill_switch and the confirmation tools."""

    status: ActionStatus
    detail: str
    data: dict[str, Any] | None = None
    ret_code: int | None = None
    reject_family: str | None = None
    exchange: ExchangeText | None = None
    violations: list[ViolationOut] | None = None
    next_safe_action: NextActionOut | None = None
    confirmation_id: str | None = None
    journal_seq: list[int] = Field(default_factory=list)

    @classmethod
    def from_refusal(cls, refusal: Refusal) -> Self:
        return cls(
            status=refusal.status,
            detail=refusal.detail,
            violations=violations_out(refusal.violations) or None,
            next_safe_action=next_out(refusal.next_safe_action),
            confirmation_id=refusal.confirmation_id,
        )


def next_out(action: NextAction | None) -> NextActionOut | None:
    """A core NextAction as the tool answer shows it."""
    return None if action is None else NextActionOut(**action.to_dict())


def violations_out(violations: Iterable[Violation]) -> list[ViolationOut]:
    return [ViolationOut(**violation.to_dict()) for violation in violations]
