"""One order of the paper exchange, ordinary or conditional, and the names Bybit gives its kinds and states."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

ZERO = Decimal(0)

ACTIVE = ("New", "PartiallyFilled")  # on the book (or about to be): matched, margined, locked
UNTRIGGERED = "Untriggered"  # a conditional or TP/SL order waiting for its trigger (enum.mdx orderStatus)
OPEN = (*ACTIVE, UNTRIGGERED)  # what /v5/order/realtime lists by default (open-order.mdx: openOnly 0)
DEACTIVATED = "Deactivated"  # cancelled before it triggered (enum.mdx orderStatus)
SHORT_LIVED = ("Cancelled", "Rejected", DEACTIVATED)  # order-list.mdx: queryable for 24 hours only

# stopOrderType (enum.mdx). The first five belong to the position (TP/SL and trailing stop: reduce-only,
# closed by the system when the position closes); "Stop" is a conditional order of the user's.
TAKE_PROFIT, STOP_LOSS, TRAILING_STOP = "TakeProfit", "StopLoss", "TrailingStop"
PARTIAL_TAKE_PROFIT, PARTIAL_STOP_LOSS = "PartialTakeProfit", "PartialStopLoss"
CONDITIONAL = "Stop"
FULL_LEGS = (TAKE_PROFIT, STOP_LOSS, TRAILING_STOP)
PARTIAL_LEGS = (PARTIAL_TAKE_PROFIT, PARTIAL_STOP_LOSS)
POSITION_LEGS = FULL_LEGS + PARTIAL_LEGS

# createType of the order a stop becomes (enum.mdx createType)
CREATE_TYPES = {
    TAKE_PROFIT: "CreateByTakeProfit",
    STOP_LOSS: "CreateByStopLoss",
    TRAILING_STOP: "CreateByTrailingStop",
    PARTIAL_TAKE_PROFIT: "CreateByPartialTakeProfit",
    PARTIAL_STOP_LOSS: "CreateByPartialStopLoss",
    CONDITIONAL: "CreateByStopOrder",
}
RISE, FALL = 1, 2  # triggerDirection
TRIGGER_BY = ("LastPrice", "MarkPrice", "IndexPrice")


@dataclass(slots=True)
class SimOrder:
    order_id: str
    order_link_id: str
    category: str
    symbol: str
    side: str
    order_type: str
    price: Decimal
    qty: Decimal
    time_in_force: str
    reduce_only: bool
    created_ms: int
    updated_ms: int
    status: str = "New"
    cum_exec_qty: Decimal = ZERO
    cum_exec_value: Decimal = ZERO
    cum_exec_fee: Decimal = ZERO
    reject_reason: str = "EC_NoError"
    cancel_type: str = "UNKNOWN"
    fee_coin: str = ""
    last_price_on_created: Decimal = ZERO
    position_idx: int = 0
    smp_type: str = "None"  # self-match prevention as the create asked (this book never matches own orders)
    hidden_reads: int = 0  # list reads left before the order shows (the acknowledgement lag)
    # TP/SL attached to an ordinary or conditional order (create-order.mdx): they become the position's
    # TP/SL orders once the order fills (tpsl_mode Full), or partial ones for what filled (Partial).
    take_profit: Decimal = ZERO
    stop_loss: Decimal = ZERO
    tpsl_mode: str = ""
    tp_trigger_by: str = ""
    sl_trigger_by: str = ""
    tp_order_type: str = ""
    sl_order_type: str = ""
    tp_limit_price: Decimal = ZERO
    sl_limit_price: Decimal = ZERO
    # A conditional order (stop_order_type "Stop") or a TP/SL / trailing stop of the position (one of
    # POSITION_LEGS): Untriggered until the price given by trigger_by reaches trigger_price.
    stop_order_type: str = ""
    create_type: str = "CreateByUser"
    trigger_price: Decimal = ZERO
    trigger_direction: int = 0
    trigger_by: str = ""
    close_on_trigger: bool = False
    parent_order_link_id: str = ""  # the order whose fill made this TP/SL (open-order.mdx)
    pair: str = ""  # TP and SL set together are bound (trading-stop.mdx): cancelling one cancels both
    trailing_distance: Decimal = ZERO  # a trailing stop: its distance from the best price seen
    active_price: Decimal = ZERO  # ... which it follows only once the last price has reached this one
    extreme: Decimal = ZERO  # ... the best last price seen since it became active (ZERO: not active yet)

    @property
    def leaves_qty(self) -> Decimal:
        return self.qty - self.cum_exec_qty if self.status in OPEN else ZERO

    @property
    def is_buy(self) -> bool:
        return self.side == "Buy"

    @property
    def untriggered(self) -> bool:
        return self.status == UNTRIGGERED

    @property
    def position_leg(self) -> bool:
        """A TP/SL or trailing stop of the position, whatever its state now."""
        return self.stop_order_type in POSITION_LEGS
