"""Exchange data as Pilot sees it: frozen, Decimal-valued, free of any client library's types."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar

from pilot.core.venues import StopScope
from pilot.core.violations import plain

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Ticker:
    symbol: str
    category: str
    bid: Decimal
    ask: Decimal
    last: Decimal
    mark: Decimal | None  # None on spot: Bybit has no mark price there
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class BookLevel:
    price: Decimal
    size: Decimal


@dataclass(frozen=True, slots=True)
class OrderBook:
    symbol: str
    category: str
    bids: tuple[BookLevel, ...]  # best first
    asks: tuple[BookLevel, ...]  # best first
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class Balance:
    coin: str
    wallet_balance: Decimal
    equity: Decimal
    usd_value: Decimal
    locked: Decimal = Decimal(0)  # held by open spot orders (Bybit's coin.locked)

    @property
    def free(self) -> Decimal:
        """What a new spot order may spend: the wallet balance not locked by open orders."""
        return max(self.wallet_balance - self.locked, Decimal(0))


@dataclass(frozen=True, slots=True)
class AccountBalance:
    total_equity_usd: Decimal
    coins: tuple[Balance, ...]
    # The unified account's available balance in USD (totalAvailableBalance): what new margin may come
    # from. None when the exchange's answer has none (Bybit leaves it empty for some account modes).
    available_usd: Decimal | None = None

    def free(self, coin: str) -> Decimal:
        return next((balance.free for balance in self.coins if balance.coin == coin), Decimal(0))


@dataclass(frozen=True, slots=True)
class OrderRequest:
    """An order Pilot sends through the venue port, in Pilot's words; each adapter turns it into its venue's
    request (Bybit's: pilot.exchange.bybit.payloads.order_params). Pilot sends limit orders only: a market
    intent is a Limit IOC at the worst acceptable price, so `qty` is always in the base coin.

    `as_record()` is the one form the journal keeps and answers show (`sent`).
    """

    category: str  # "linear" | "spot"
    symbol: str
    side: str  # "Buy" | "Sell"
    qty: Decimal
    price: Decimal
    time_in_force: str  # "IOC" | "GTC" | "PostOnly"
    order_link_id: str  # the client order id: the order is found again by it
    reduce_only: bool = False
    order_type: str = "Limit"
    # The stop-loss and take-profit sent with the order; None: none. `stop_scope` asks what they cover once
    # the order fills: the whole position, or the quantity that filled (pilot.core.venues).
    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None
    stop_scope: StopScope = StopScope.POSITION
    # Self-trade prevention, as policy.json's selfTradePrevention names it; None: not asked for.
    smp_type: str | None = None

    def as_record(self) -> dict[str, Any]:
        """The request in Pilot's own keys, amounts as plain strings: what the journal's order.sent entry
        holds and answers show as `sent`. A stop, a target and self-trade prevention only when set."""
        return {
            "category": self.category,
            "symbol": self.symbol,
            "side": self.side,
            "order_type": self.order_type,
            "qty": plain(self.qty),
            "price": plain(self.price),
            "time_in_force": self.time_in_force,
            "order_link_id": self.order_link_id,
            "reduce_only": self.reduce_only,
            **({"stop_loss": plain(self.stop_loss)} if self.stop_loss is not None else {}),
            **({"take_profit": plain(self.take_profit)} if self.take_profit is not None else {}),
            **({"smp_type": self.smp_type} if self.smp_type is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class OrderAck:
    """The exchange accepted the create request (retCode 0)."""

    order_id: str
    order_link_id: str


STOP_LEG_TYPES = frozenset({"TakeProfit", "StopLoss", "TrailingStop", "PartialTakeProfit", "PartialStopLoss"})
STOP_LOSS_TYPES = frozenset({"StopLoss", "PartialStopLoss"})  # the legs that limit the loss
# Spot orders that wait for a trigger and then sell or buy what they name: a TP/SL order (its coin held from
# the start) and a conditional order (enum.mdx stopOrderType; create-order.mdx orderFilter).
SPOT_TRIGGERED = frozenset({"tpslOrder", "Stop"})
# Bybit orderStatus of an order that is open (enum.mdx): on the book or about to be (Created), waiting for its
# trigger, or Triggered, "instantaneous state for conditional orders from Untriggered to New" (a push may
# carry it: the order is still open).
OPEN_STATUSES = frozenset({"New", "PartiallyFilled", "Untriggered", "Triggered", "Created"})


@dataclass(frozen=True, slots=True)
class ExchangeOrder:
    """An order as the exchange reports it (realtime or history). Text fields are untrusted."""

    order_id: str
    order_link_id: str  # untrusted text: another client may have set it
    symbol: str
    category: str
    side: str
    order_type: str
    price: Decimal
    qty: Decimal
    cum_exec_qty: Decimal
    avg_price: Decimal | None
    cum_exec_fee: Decimal
    status: str  # Bybit orderStatus: New, PartiallyFilled, Filled, Cancelled, Rejected, ...
    time_in_force: str
    reduce_only: bool
    reject_reason: str  # untrusted text
    created_at: datetime
    updated_at: datetime
    fee_coin: str = ""  # the coin of cum_exec_fee ("" when Bybit did not say: cumExecFee fallback)
    fees: tuple[tuple[str, Decimal], ...] = ()  # every coin of cumFeeDetail, sorted by coin
    position_idx: int = 0  # 0 one-way; 1/2 the Buy/Sell leg of a hedge-mode account
    # What kind of order it is (Bybit's stopOrderType, "" for an ordinary order): TakeProfit, StopLoss,
    # TrailingStop, PartialTakeProfit, PartialStopLoss belong to the position; Stop is a conditional order.
    stop_order_type: str = ""
    trigger_price: Decimal | None = None  # a conditional / TP/SL order's trigger (None: none)
    trigger_direction: int = 0  # 1 rises to the trigger, 2 falls to it, 0 none
    trigger_by: str = ""  # LastPrice, MarkPrice or IndexPrice ("" none)
    tpsl_mode: str = ""  # Full or Partial: a TP/SL order's mode, or the mode of TP/SL attached to an order
    take_profit: Decimal | None = None  # TP/SL attached to an ordinary or conditional order
    stop_loss: Decimal | None = None
    close_on_trigger: bool = False
    create_type: str = ""  # Bybit's createType: CreateByUser, CreateByStopLoss, ... ("" when not said)
    untrusted_symbol: str = ""  # the exchange's text for a quarantined symbol (pilot.exchange.symbols)

    @property
    def is_stop_leg(self) -> bool:
        """A take-profit, stop-loss or trailing stop of the position (any mode, any state): the exchange made
        it, it only closes, and it goes when the position closes. Not an order Pilot placed to rest."""
        return self.stop_order_type in STOP_LEG_TYPES

    @property
    def is_stop_loss(self) -> bool:
        """A stop-loss of the position, whole (StopLoss) or partial (PartialStopLoss): what limits its loss,
        so cancelling it widens the loss."""
        return self.stop_order_type in STOP_LOSS_TYPES

    @property
    def is_partial_stop_loss(self) -> bool:
        """A partial stop-loss of the position: it closes its own quantity, beside the whole stop."""
        return self.stop_order_type == "PartialStopLoss"

    @property
    def is_spot_stop_sell(self) -> bool:
        """A spot order waiting for its trigger that sells coin held (a spot TP/SL order, stopOrderType
        tpslOrder, or a spot conditional order, Stop): below the price it is a stop-loss of the coin, above it
        a take-profit."""
        return self.category == "spot" and self.side == "Sell" and self.stop_order_type in SPOT_TRIGGERED

    @property
    def is_conditional(self) -> bool:
        """A conditional order (stopOrderType Stop): it enters the book only when its trigger is reached."""
        return self.stop_order_type == "Stop"

    @property
    def is_untriggered(self) -> bool:
        """Waiting for its trigger price: no part of it is on the book yet."""
        return self.status == "Untriggered"

    @property
    def is_ordinary(self) -> bool:
        """An ordinary order (a limit or market order of the account's), neither a TP/SL nor conditional."""
        return not self.stop_order_type


# Executions that trade a quantity at a price (enum.mdx execType): the rest, Funding above all, move money
# or settle a position without a trade, and are never counted as fills.
FILL_EXEC_TYPES = frozenset(
    {"Trade", "AdlTrade", "BustTrade", "BlockTrade", "MovePosition", "Delivery", "FutureSpread"}
)


@dataclass(frozen=True, slots=True)
class Execution:
    """One /v5/execution/list row: a fill, or (exec_type Funding, Settle, ...) a payment that is not one.

    `exec_fee` is what the row cost in `fee_coin`: a fill's trading fee, or a funding payment (positive:
    paid, negative: received).
    """

    exec_id: str
    order_id: str
    order_link_id: str
    symbol: str
    side: str
    exec_price: Decimal
    exec_qty: Decimal
    exec_fee: Decimal
    exec_time: datetime
    fee_coin: str = ""  # Bybit's feeCurrency ("" when the answer has none)
    exec_type: str = "Trade"  # Bybit's execType (a row without one, as old recordings are, is a trade)
    untrusted_symbol: str = ""  # the exchange's text for a quarantined symbol (pilot.exchange.symbols)

    @property
    def is_fill(self) -> bool:
        return self.exec_type in FILL_EXEC_TYPES


@dataclass(frozen=True, slots=True)
class ExchangePosition:
    """A position as the exchange reports it; size signed like pilot.core.facts.Position."""

    symbol: str
    category: str
    size: Decimal
    entry_price: Decimal
    mark_price: Decimal
    leverage: Decimal
    unrealised_pnl: Decimal
    liq_price: Decimal | None
    position_value: Decimal
    stop_loss: Decimal | None = None  # the position's stop-loss (None: none set)
    take_profit: Decimal | None = None
    settle_coin: str = ""  # USDT or USDC for linear (the coin of its PnL); "" when read by symbol
    untrusted_symbol: str = ""  # the exchange's text for a quarantined symbol (pilot.exchange.symbols)


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """What /v5/user/query-api says about the key in use. Permission names are Bybit's."""

    read_only: bool
    permissions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    ips: tuple[str, ...] = ()
    expires_at: datetime | None = None
    is_master: bool | None = None  # True: the main account's key; False: a sub-account's; None: not said


@dataclass(frozen=True, slots=True)
class PriceBand:
    """The prices the exchange accepts for a limit order right now (/v5/market/price-limit).

    A buy above `buy_limit` or a sell below `sell_limit` is outside the band. What Bybit then does depends
    on the category (account/set-price-limit.mdx, default settings): spot rejects the order
    (170193/170194), derivatives move its price to the limit ("clamp"); `outside` says which.
    """

    symbol: str
    category: str
    buy_limit: Decimal  # the highest price a buy may carry (Bybit's buyLmt)
    sell_limit: Decimal  # the lowest price a sell may carry (Bybit's sellLmt)
    outside: str  # "reject" (spot) | "clamp" (linear, inverse): Bybit's default behaviour
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class ClosedPnl:
    """One /v5/position/closed-pnl row: what one order closed of a position, and the PnL after fees."""

    symbol: str
    order_id: str
    side: str
    qty: Decimal
    closed_size: Decimal
    avg_entry_price: Decimal
    avg_exit_price: Decimal
    closed_pnl: Decimal
    order_type: str
    exec_type: str  # untrusted text
    created_at: datetime
    updated_at: datetime
    untrusted_symbol: str = ""  # the exchange's text for a quarantined symbol (pilot.exchange.symbols)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list read, and the cursor for the next (None: this was the last)."""

    rows: tuple[T, ...]
    next_cursor: str | None
