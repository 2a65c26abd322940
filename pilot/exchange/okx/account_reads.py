"""OKX's account and order reads behind the venue port: positions, balance, the key, orders, fills, PnL.

Sizes come back in coins (pilot.exchange.okx.markets). Rows of instruments that are no market of Pilot's
(inverse and dated contracts, options) are left out of every list.

**Position mode.** Pilot reads and sizes net positions only (OKX's net mode, Bybit's one-way). In long/short
mode every position is two legs and every order must name one (posSide), so reading the first leg as the
position would be wrong: get_position and get_positions raise UnsupportedPositionMode, naming the fix (switch
the account to net mode: Trade settings, Position mode, or /api/v5/account/set-position-mode). The mode is
the account's (/api/v5/account/config `posMode`), read with the positions and kept POSITION_MODE_TTL_SECONDS;
a long or short leg in the answer refuses too, whatever was kept.

**Orders.** Open orders are OKX's ordinary pending orders and its algo orders (the position's TP/SL, partial
ones, and trigger orders): pilot.exchange.okx.payloads says which port kind each becomes. An order is looked
up by its client order id with /api/v5/trade/order: OKX answers 51603 when it has none (None here: not
visible, which a caller holding an acknowledgement treats as pending).

**Closed PnL.** OKX realises PnL fill by fill (/api/v5/trade/fills `fillPnl`); the rows of one order are one
ClosedPnl, after the fees OKX charged for them. Fills are kept three days at that endpoint: enough for the
day's loss and a cooldown's newest trades.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

from pilot.core.facts import Position
from pilot.exchange.errors import ExchangeRejected, ExchangeUnavailable, UnsupportedPositionMode
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    Page,
)
from pilot.exchange.okx import payloads as wire_
from pilot.exchange.okx.client import Row, parsed
from pilot.exchange.okx.market_reads import MarketReads
from pilot.exchange.okx.markets import Contract, Named, inst_type, named, wire_client_id

MAX_PAGES = 20
PAGE_LIMIT = 100  # the largest page OKX's list endpoints serve
POSITION_MODE_TTL_SECONDS = 60.0
NET_MODE = "net_mode"
NOT_FOUND = 51603  # "Order does not exist"
T = TypeVar("T")


class AccountReads(MarketReads):
    """The account and order reads of OkxExchange (pilot.exchange.okx.adapter), over its market reads (for
    each instrument's contract)."""

    _mode: tuple[float, str] | None  # the account's position mode, and when it was read (monotonic)

    # ---- positions -----------------------------------------------------------------------------------

    async def get_position(self, category: str, symbol: str) -> Position:
        """The signed net position in coins, with its whole stop (flat when there is none; spot never has one).

        Raises:
            UnsupportedPositionMode: the account is in long/short mode.
        """
        if category == "spot":
            return Position.flat(symbol)
        found = await self.get_positions(category, symbol)
        mine = next((p for p in found if p.symbol == symbol), None)
        if mine is None:
            return Position.flat(symbol, await self._leverage(category, symbol))
        return Position(symbol, mine.size, mine.entry_price, mine.leverage, stop_loss=mine.stop_loss)

    async def _leverage(self, category: str, symbol: str) -> Decimal:
        """The leverage set on a market with no position: OKX lists no position row then, so it is read from
        /api/v5/account/leverage-info (cross margin), as a flat Bybit position's row says it."""
        action = f"read the {symbol} leverage"
        rows = await self._http.read(
            "/api/v5/account/leverage-info",
            {"instId": self._inst(category, symbol), "mgnMode": "cross"},
            action,
        )
        return parsed(lambda: wire_.dec(rows[0]["lever"]), action)

    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]:
        """Every open net position (or the one of `symbol`) in coins; linear perpetuals only.

        Raises:
            UnsupportedPositionMode: the account is in long/short mode (or the answer has a long/short leg).
        """
        if category == "spot":
            return []
        action = f"read the {symbol} position" if symbol else "read positions"
        inst = self._inst(category, symbol) if symbol else None
        if symbol and inst is None:
            return []
        mode, rows = await asyncio.gather(
            self._position_mode(action),
            self._http.read("/api/v5/account/positions", {"instType": "SWAP", "instId": inst}, action),
        )
        legs = [row for row in rows if str(row.get("posSide")) in ("long", "short")]
        if mode != NET_MODE or legs:
            raise await self._long_short(action, category, symbol, legs)
        positions = []
        for name, row in self._named(rows):
            unit = await self._contract(name.category, name.symbol)
            position = parsed(partial(wire_.exchange_position, name, row, unit), action)
            if position.size != 0:
                positions.append(position)
        return positions

    async def _position_mode(self, action: str) -> str:
        """The account's position mode, kept POSITION_MODE_TTL_SECONDS (monotonic time)."""
        if self._mode is not None and time.monotonic() - self._mode[0] < POSITION_MODE_TTL_SECONDS:
            return self._mode[1]
        rows = await self._http.read("/api/v5/account/config", {}, action)
        mode = parsed(lambda: str(rows[0]["posMode"]), action)
        self._mode = (time.monotonic(), mode)
        return mode

    async def _long_short(
        self, action: str, category: str, symbol: str | None, legs: list[Row]
    ) -> UnsupportedPositionMode:
        shown = symbol or next((n.symbol for n, _ in self._named(legs)), "every market")
        gross = Decimal(0)
        for name, row in self._named(legs):
            if name.symbol == shown:
                unit = await self._contract(name.category, name.symbol)
                gross += abs(parsed(partial(wire_.signed_position, row, unit), action))
        return UnsupportedPositionMode(
            f"{action}: the OKX account is in long/short position mode; Pilot reads net positions only and "
            "will not guess the net. A human must switch the account to net mode.",
            symbol=shown,
            category=category,
            gross_size=gross,
            human_fix="close every perpetual position and cancel the open orders on OKX, then switch the account "
            "to net mode (Settings, Position mode: One-way mode; OKX switches only with no position and no "
            "open order)",
            per_symbol=False,
        )

    def _named(self, rows: Iterable[Row]) -> list[tuple[Named, Row]]:
        """The rows of Pilot's markets, each with Pilot's name for it; the others left out."""
        found = []
        for row in rows:
            name = named(str(row.get("instType") or ""), str(row.get("instId") or ""))
            if name is not None:
                found.append((name, row))
        return found

    # ---- balance and key -------------------------------------------------------------------------------

    async def get_balance(self) -> AccountBalance:
        action = "read the account balance"
        rows = await self._http.read("/api/v5/account/balance", {}, action)
        return parsed(lambda: wire_.account_balance(rows[0]), action)

    async def get_api_key_info(self) -> ApiKeyInfo:
        action = "read the api key's permissions"
        rows = await self._http.read("/api/v5/account/config", {}, action)
        return parsed(lambda: wire_.api_key_info(rows[0]), action)

    # ---- orders --------------------------------------------------------------------------------------

    async def get_open_orders(self, category: str, symbol: str | None = None) -> list[ExchangeOrder]:
        """The ordinary orders resting, and the algo orders waiting for their trigger (TP/SL, trigger)."""
        action = "read open orders"
        where = self._where(category, symbol)
        if where is None:
            return []
        ordinary, tpsl, triggers = await asyncio.gather(
            self._pages(action, "/api/v5/trade/orders-pending", where, "ordId"),
            self._pages(
                action, "/api/v5/trade/orders-algo-pending", {**where, "ordType": "conditional,oco"}, "algoId"
            ),
            self._pages(
                action, "/api/v5/trade/orders-algo-pending", {**where, "ordType": "trigger"}, "algoId"
            ),
        )
        return [
            *await self._orders(action, ordinary, wire_.exchange_order),
            *await self._orders(action, [*tpsl, *triggers], wire_.algo_order),
        ]

    async def get_order_history(
        self, category: str, symbol: str | None = None, order_link_id: str | None = None
    ) -> list[ExchangeOrder]:
        if order_link_id is not None:
            found = await self.find_order(category, symbol or "", order_link_id) if symbol else None
            return [found] if found is not None else []
        where = self._where(category, symbol)
        if where is None:
            return []
        rows = await self._pages("read order history", "/api/v5/trade/orders-history", where, "ordId")
        return await self._orders("read order history", rows, wire_.exchange_order)

    async def find_order(
        self, category: str, symbol: str, order_link_id: str, order_id: str | None = None
    ) -> ExchangeOrder | None:
        """Look an order up by its client id (/api/v5/trade/order): None when OKX has none (51603), which
        right after an acknowledged create means not visible yet, never "failed". A failed read raises.
        One request whatever the order's state, so the exchange's `order_id` is not needed."""
        action = f"look up order {order_link_id}"
        inst = self._inst(category, symbol)
        try:
            client_id = wire_client_id(order_link_id)
        except ValueError:
            return None  # no id OKX could hold: no order of OKX's carries it
        if inst is None:
            return None
        try:
            rows = await self._http.read(
                "/api/v5/trade/order", {"instId": inst, "clOrdId": client_id}, action
            )
        except ExchangeRejected as refused:
            if refused.ret_code == NOT_FOUND:
                return None
            raise
        orders = await self._orders(action, rows, wire_.exchange_order)
        return next((order for order in orders if order.order_link_id == order_link_id), None)

    async def _orders(
        self, action: str, rows: list[Row], parse: Callable[[Named, Row, Contract], ExchangeOrder]
    ) -> list[ExchangeOrder]:
        orders = []
        for name, row in self._named(rows):
            unit = await self._contract(name.category, name.symbol)
            orders.append(parsed(partial(parse, name, row, unit), action))
        return orders

    def _where(self, category: str, symbol: str | None) -> dict[str, Any] | None:
        """A list read's instType (and instId); None when the symbol names no OKX market in `category`."""
        if symbol is None:
            return {"instType": inst_type(category)}
        inst = self._inst(category, symbol)
        return None if inst is None else {"instType": inst_type(category), "instId": inst}

    # ---- fills and PnL -----------------------------------------------------------------------------------

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]:
        action = f"read the fills of order {order_id}"
        where = self._where(category, symbol)
        if where is None or order_id.startswith(wire_.ALGO_PREFIX):
            return []
        rows = await self._pages(action, "/api/v5/trade/fills", {**where, "ordId": order_id}, "billId")
        return await self._executions(action, rows)

    async def _executions(self, action: str, rows: list[Row]) -> list[Execution]:
        found = []
        for name, row in self._named(rows):
            unit = await self._contract(name.category, name.symbol)
            found.append(parsed(partial(wire_.execution, name, row, unit), action))
        return found

    async def get_order_history_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[ExchangeOrder]:
        action = "read order history"
        where = self._where(category, symbol)
        if where is None:
            return Page((), None)
        rows, after = await self._page("/api/v5/trade/orders-history", where, "ordId", cursor, limit, action)
        return Page(tuple(await self._orders(action, rows, wire_.exchange_order)), after)

    async def get_executions_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[Execution]:
        action = "read fills"
        where = self._where(category, symbol)
        if where is None:
            return Page((), None)
        rows, after = await self._page("/api/v5/trade/fills", where, "billId", cursor, limit, action)
        return Page(tuple(await self._executions(action, rows)), after)

    async def get_closed_pnl_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int, since: datetime | None = None
    ) -> Page[ClosedPnl]:
        action = "read closed PnL"
        where = self._where(category, symbol)
        if where is None:
            return Page((), None)
        if since is not None:
            where = {**where, "begin": str(int(since.timestamp() * 1000))}
        rows, after = await self._page("/api/v5/trade/fills", where, "billId", cursor, limit, action)
        return Page(tuple(await self._closed(action, rows)), after)

    async def get_executions_since(self, category: str, since: datetime) -> list[Execution]:
        """Every fill of the account since `since` (OKX keeps three days of fills here), all pages."""
        action = "read the day's fills"
        where = self._where(category, None) or {}
        rows = await self._pages(
            action, "/api/v5/trade/fills", {**where, "begin": str(int(since.timestamp() * 1000))}, "billId"
        )
        return await self._executions(action, rows)

    async def get_closed_pnl_since(self, category: str, since: datetime) -> list[ClosedPnl]:
        """Every order's closed PnL realised since `since` (OKX keeps three days of fills here), all pages."""
        action = "read the day's closed PnL"
        where = self._where(category, None) or {}
        rows = await self._pages(
            action, "/api/v5/trade/fills", {**where, "begin": str(int(since.timestamp() * 1000))}, "billId"
        )
        return await self._closed(action, rows)

    async def _closed(self, action: str, rows: list[Row]) -> list[ClosedPnl]:
        """The closing fills grouped by order (newest order first, as OKX lists fills)."""
        by_order: dict[tuple[str, str], list[tuple[Named, Row]]] = {}
        for name, row in self._named(rows):
            if wire_.closes(row):
                by_order.setdefault((name.symbol, str(row.get("ordId"))), []).append((name, row))
        closed = []
        for group in by_order.values():
            name = group[0][0]
            unit = await self._contract(name.category, name.symbol)
            fills = [row for _, row in reversed(group)]  # oldest first
            closed.append(parsed(partial(wire_.closed_pnl, name, fills, unit), action))
        return closed

    # ---- pages ------------------------------------------------------------------------------------------

    async def _page(
        self, path: str, where: dict[str, Any], key: str, cursor: str | None, limit: int, action: str
    ) -> tuple[list[Row], str | None]:
        """One page (newest first) and the cursor for the next (`after`: the last row's id), None at the end."""
        size = max(1, min(limit, PAGE_LIMIT))
        rows = await self._http.read(path, {**where, "after": cursor, "limit": str(size)}, action)
        after = str(rows[-1].get(key) or "") if len(rows) == size else ""
        return rows, after or None

    async def _pages(self, action: str, path: str, where: dict[str, Any], key: str) -> list[Row]:
        """Every row of a list read, page by page (each row once, by `key`); a list longer than MAX_PAGES
        fails rather than come back silently cut."""
        seen: set[str] = set()
        found: list[Row] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            rows, cursor = await self._page(path, where, key, cursor, PAGE_LIMIT, action)
            fresh = [row for row in rows if str(row.get(key) or id(row)) not in seen]
            seen.update(str(row.get(key) or id(row)) for row in fresh)
            found += fresh
            if cursor is None or not fresh:
                return found
        raise ExchangeUnavailable(f"{action}: the list ran past {MAX_PAGES} pages; it was not read whole.")
