"""What the app keeps about a plan, typed: the payload written at plan time and the outcome of its one use.

The store keeps them as JSON; these models are the only way the app reads them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pilot.app.answers.responses import OrderAnswer, PlannedOrderOut, Snapshot
from pilot.core.facts import OrderIntent, OrderType, Side
from pilot.core.valuation import Liquidation
from pilot.core.violations import plain, usd

PlanTool = Literal["place_order", "close_position"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class IntentRecord(_Record):
    """The order as evaluate() saw it (quantity floored, price on the tick), to evaluate it again."""

    symbol: str
    side: Side
    qty: str
    order_type: OrderType
    limit_price: str | None
    reduce_only: bool
    category: str
    stop_loss: str | None = None
    take_profit: str | None = None

    @staticmethod
    def of(order: OrderIntent) -> IntentRecord:
        return IntentRecord(
            symbol=order.symbol,
            side=order.side,
            qty=plain(order.qty),
            order_type=order.order_type,
            limit_price=plain(order.limit_price) if order.limit_price is not None else None,
            reduce_only=order.reduce_only,
            category=order.category,
            stop_loss=plain(order.stop_loss) if order.stop_loss is not None else None,
            take_profit=plain(order.take_profit) if order.take_profit is not None else None,
        )

    def to_intent(self) -> OrderIntent:
        return OrderIntent(
            symbol=self.symbol,
            side=self.side,
            qty=Decimal(self.qty),
            order_type=self.order_type,
            limit_price=Decimal(self.limit_price) if self.limit_price else None,
            reduce_only=self.reduce_only,
            category=self.category,
            stop_loss=Decimal(self.stop_loss) if self.stop_loss else None,
            take_profit=Decimal(self.take_profit) if self.take_profit else None,
        )

    def plan_args(self) -> dict[str, Any]:
        """plan_order arguments for this same order."""
        args: dict[str, Any] = {
            "symbol": self.symbol,
            "side": self.side.value,
            "qty": self.qty,
            "order_type": self.order_type.value,
            "reduce_only": self.reduce_only,
            "category": self.category,
        }
        if self.limit_price:
            args["price"] = self.limit_price
        if self.stop_loss:
            args["stop_loss"] = self.stop_loss
        if self.take_profit:
            args["take_profit"] = self.take_profit
        return args


class AmendRecord(_Record):
    """A plan that amends an open order: which, and its new total quantity and price (and the old ones)."""

    order_id: str
    qty: str
    price: str
    was_qty: str
    was_price: str


class PlanPayload(_Record):
    """Everything place_order needs to send exactly this order and to evaluate it again."""

    tool: PlanTool = "place_order"
    order: PlannedOrderOut
    intent: IntentRecord
    notional_usd: str
    position_notional_usd: str
    liquidation_distance_pct: str | None
    needs_confirmation: bool
    confirmation_text: str | None
    snapshot: Snapshot
    liquidation_price: str | None = None
    policy_version: str
    amend: AmendRecord | None = None  # set: place_order amends this open order instead of creating one
    # Whether the order could grow the worst-case exposure when planned (confirm.aboveNotionalUsd guards
    # only those); place_order judges it again on fresh facts.
    grows: bool = True

    @property
    def liquidation(self) -> Liquidation | None:
        """The liquidation estimated at plan time (None: none, or a payload that kept only its distance)."""
        if self.liquidation_price is None or self.liquidation_distance_pct is None:
            return None
        return Liquidation(Decimal(self.liquidation_price), Decimal(self.liquidation_distance_pct))

    @staticmethod
    def read(data: dict[str, Any]) -> PlanPayload | None:
        """The stored payload, or None if it cannot be read as one (written by an older Pilot)."""
        try:
            return PlanPayload.model_validate(data)
        except ValidationError:
            return None


def approval_text(order: PlannedOrderOut, notional: Decimal, liquidation: Liquidation | None) -> str:
    """The sentence a human approves: built from the server's record of the plan, never the agent's words."""
    how = (
        f"at market (Limit IOC, no worse than {order.price})"
        if order.order_type == "market"
        else f"limit {order.price} ({order.time_in_force})"
    )
    liquidation_words = f"; {liquidation.words()}" if liquidation is not None else ""
    reduce = " reduce-only" if order.reduce_only else ""
    return (
        f"{order.side.capitalize()}{reduce} {order.qty} {order.symbol} ({order.category}) {how}; "
        f"worst-fill notional {usd(notional)}{liquidation_words}"
    )


class PlanOutcome(_Record):
    """What the one use of a plan came to: the answer's status and, if sent, the order and its fill."""

    status: str
    order_id: str | None = None
    order_link_id: str | None = None
    filled_qty: str | None = None

    @staticmethod
    def of(answer: OrderAnswer) -> PlanOutcome:
        return PlanOutcome(
            status=answer.status,
            order_id=answer.order_id,
            order_link_id=answer.order_link_id,
            filled_qty=answer.fill.filled_qty if answer.fill else None,
        )

    @staticmethod
    def read(data: Mapping[str, Any] | None) -> PlanOutcome | None:
        if not data:
            return None
        fill = data.get("fill") or {}  # outcomes written before this model kept the whole fill
        try:
            return PlanOutcome.model_validate({"filled_qty": fill.get("filled_qty"), **data})
        except ValidationError:
            return PlanOutcome(status=str(data.get("status")))

    @property
    def sent_nothing(self) -> bool:
        return self.status in ("refused", "declined")

    @property
    def executed_nothing(self) -> bool:
        """Nothing reached the book: refused by Pilot, declined, rejected, or never executed after a send."""
        return self.sent_nothing or self.status in ("rejected", "never_executed")
