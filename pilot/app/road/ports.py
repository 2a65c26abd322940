"""The ports the use cases need: a reader any use case may hold, a writer only the exchange gate holds.

Adapters in pilot.exchange implement both (one object); pilot.app.runtime.runtime.assemble_runtime splits it so
that the Runtime exposes only the reader, and the writer lives inside the gate (pilot.app.road.gate).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Protocol, runtime_checkable

from pilot.core.facts import InstrumentRules, Position, Touch
from pilot.core.venues import VenueProfile
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderAck,
    OrderBook,
    OrderRequest,
    Page,
    PriceBand,
    Ticker,
)


class ExchangeReader(Protocol):
    """Reads of one account at one venue. Errors are pilot.exchange.errors types, nothing else."""

    @property
    def profile(self) -> VenueProfile:
        """How the venue applies stops (pilot.core.venues): what every judgement of the stops assumes."""
        ...

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules: ...
    def listed(self, category: str, symbol: str) -> bool | None:
        """Whether the market is listed, as get_instrument last read it and still keeps it; None: not known."""
        ...

    async def get_ticker(self, category: str, symbol: str) -> Ticker: ...
    async def get_touch(self, category: str, symbol: str) -> Touch: ...
    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook: ...
    async def get_position(self, category: str, symbol: str) -> Position: ...
    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]: ...
    async def get_balance(self) -> AccountBalance: ...
    async def get_open_orders(self, category: str, symbol: str | None = None) -> list[ExchangeOrder]: ...
    async def get_order_history(
        self, category: str, symbol: str | None = None, order_link_id: str | None = None
    ) -> list[ExchangeOrder]: ...
    async def find_order(
        self, category: str, symbol: str, order_link_id: str, order_id: str | None = None
    ) -> ExchangeOrder | None:
        """The order by its client id; None when the reads worked and none holds it (yet). With the
        exchange's `order_id` (a create's acknowledgement names it), read by that: one request where the
        venue answers an order by its id whatever its status."""
        ...

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]: ...
    async def get_api_key_info(self) -> ApiKeyInfo: ...
    async def get_price_band(self, category: str, symbol: str) -> PriceBand: ...
    async def get_order_history_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[ExchangeOrder]: ...
    async def get_executions_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[Execution]: ...
    async def get_closed_pnl_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int, since: datetime | None = None
    ) -> Page[ClosedPnl]: ...
    async def get_executions_since(self, category: str, since: datetime) -> list[Execution]: ...
    async def get_closed_pnl_since(self, category: str, since: datetime) -> list[ClosedPnl]: ...


class ExchangeWriter(Protocol):
    """Writes to the account, each sent exactly once: no automatic resend, ever. Only the gate holds one."""

    async def create_order(self, request: OrderRequest) -> OrderAck: ...
    async def cancel_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        waiting_kind: str = "",
    ) -> str: ...  # waiting_kind: a spot order waiting for its trigger (ExchangeOrder.stop_order_type)
    async def set_leverage(self, category: str, symbol: str, leverage: Decimal) -> None: ...
    async def amend_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        qty: Decimal | None = None,
        price: Decimal | None = None,
    ) -> str: ...
    async def cancel_all_orders(
        self, category: str, symbol: str | None = None, *, include_stops: bool = False
    ) -> list[
        str
    ]: ...  # include_stops: the stops (a position's, spot TP/SL orders) and conditional orders too
    async def set_trading_stop(
        self, category: str, symbol: str, *, stop_loss: Decimal | None, take_profit: Decimal | None
    ) -> bool: ...  # False: nothing changed, the stops already were the asked values


class Exchange(ExchangeReader, ExchangeWriter, Protocol):
    """What an adapter provides as a whole; only the composition root (boot) sees it."""

    async def close(self) -> None: ...


@runtime_checkable
class DisconnectProtection(Protocol):
    """The venue's own backstop (Bybit's Disconnect Cancel All): set at start by a live home, read back."""

    base_url: str

    async def set_dcp(self, product: str, window_seconds: int) -> None: ...
    async def dcp_windows(self) -> dict[str, int]: ...


@runtime_checkable
class CancelAllAfter(Protocol):
    """The venue's own dead-man's switch as a countdown (OKX's cancel-all-after): every order is cancelled
    when it runs out, unless set again first; set by a live home at start and renewed while it serves."""

    countdown_range: tuple[int, int]  # the seconds the venue accepts (0 turns it off)

    async def set_cancel_after(self, seconds: int) -> float: ...  # the seconds the venue says are left
