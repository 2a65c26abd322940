"""What the tools answer: pydantic models, so every MCP tool has an output schema. Amounts are strings."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pilot.core.violations import NextAction, Violation

RefusalStatus = Literal["refused", "declined", "pending_confirmation"]

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


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


class Answer(_Answer):
    """What a tool returns. Every answer names the account it is about, so no one mistakes paper for real."""

    environment: str | None = Field(
        default=None,
        description="The account this answer is about: paper, bybit-demo, bybit-testnet or okx-demo",
    )

    def naming(self, environment: str) -> Self:
        """This answer, saying which environment it came from (set once for every tool, by the server)."""
        return self.model_copy(update={"environment": environment})


class NextActionOut(_Answer):
    tool: str | None = Field(description="A tool to call exactly as given, or null when no call fits")
    args: dict[str, Any] | None = Field(description="Complete arguments for that tool")
    text: str
    human: str | None = Field(default=None, description="What only a human can change")
    retry_after: str | None = Field(default=None, description="ISO-8601 UTC time after which waiting helps")
    options: list[dict[str, Any]] | None = Field(default=None, description="Calls that free room, if wanted")
    nothing_fits: dict[str, str] | None = Field(
        default=None,
        description="When no size fits: the rule, the room it leaves and the minimum (base units)",
    )


class ViolationOut(_Answer):
    rule: str = Field(description="Stable code: a policy.json key, instrument.*, tradingState, facts, ...")
    limit: str
    attempted: str
    detail: str
    next: NextActionOut
    did_you_mean: str | None = Field(
        default=None,
        description="For a symbol not allowed or not listed: the nearest allowed one",
        exclude_if=lambda value: value is None,
    )


class Snapshot(_Answer):
    """What a decision was derived from, so an agent can tell 'send unchanged' from 'the world moved'."""

    policy_version: str
    trading_state: str
    venue: str | None = Field(default=None, description="The venue the facts were read from: Bybit, OKX")
    market_data_at: str | None
    bid: str | None
    ask: str | None
    mark: str | None
    position_size: str | None
    equity_usd: str | None
    orders_today: int | None
    pending_qty: dict[str, str] | None = Field(
        default=None, description="Open orders and unsettled sends per side, counted as filled for the caps"
    )
    elsewhere_qty: str | None = Field(
        default=None,
        description="The same coin held or positioned in the other category (spot or linear), counted in "
        "maxNotionalUsd, which caps each coin's gross exposure",
    )
    instrument: dict[str, str] | None
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
    rule: str | None = Field(description="The instrument rule that made the change (instrument.qtyStep, ...)")
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
    liquidation_distance_pct: str | None = None
    needs_confirmation: bool | None = None
    confirmation_text: str | None = None
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
    avg_price: str | None
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

    stop_loss: str | None
    take_profit: str | None
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
