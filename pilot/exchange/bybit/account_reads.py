"""Bybit's account and order reads behind the venue port: positions, balance, the key, orders, fills, PnL.

Acknowledged is not visible. Bybit's create answer is an acknowledgement of an asynchronous request
(create-order.mdx: "This request is asynchronous"), and order history "may delay" (order-list.mdx). So
`find_order` returning None right after a successful `create_order` does not mean the order failed: the
read worked and has not seen it yet. A caller holding an acknowledgement (or an OutcomeUnknown) must treat
an order that is not found as pending, and count it as exposure, until a read finds it. A read that
failed raises instead: None and an exception are never the same answer.

Hedge mode is refused: a symbol with positionIdx 1/2 rows raises UnsupportedPositionMode from
get_position/get_positions, naming the symbol and the human's fix (switch it to one-way mode), and what the
legs hold together (for a spot order on the coin, which has no position mode).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any

from pilot.core.facts import Position
from pilot.exchange.bybit import payloads as wire_
from pilot.exchange.bybit.transport import PAGE_LIMITS, SETTLE_COIN, Transport, each_once, list_scopes
from pilot.exchange.errors import UnsupportedPositionMode
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    Page,
)


class AccountReads:
    """The account and order reads of BybitExchange (pilot.exchange.bybit.adapter)."""

    _http: Transport

    async def get_position(self, category: str, symbol: str) -> Position:
        """The signed one-way position (flat when there is none; spot never has one).

        Raises:
            UnsupportedPositionMode: the symbol is held in hedge mode (rows with positionIdx 1 or 2).
        """
        if category == "spot":
            return Position.flat(symbol)
        action = f"read the {symbol} position"
        rows = await self._position_rows(action, category, symbol=symbol)
        mine = [row for row in rows if row.get("symbol") == symbol]
        return self._http.parse(
            {}, lambda _: wire_.position(symbol, mine[0] if mine else None), action, operation="read"
        )

    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]:
        """Every open position (or the one of `symbol`), one-way only; linear for every settle coin.

        Raises:
            UnsupportedPositionMode: a symbol is held in hedge mode.
        """
        action = "read positions"
        scopes = list_scopes(category, symbol)
        lists = await asyncio.gather(*(self._position_rows(action, category, **scope) for scope in scopes))
        # A list read by settle coin says the coin of its rows (the rows themselves do not).
        coins = [scope.get("settleCoin", "") if category == "linear" else "" for scope in scopes]
        positions = []
        for coin, row in each_once(wire_.position_key, zip(coins, lists, strict=True)):
            parsed = self._http.parse(
                row, partial(wire_.exchange_position, category), action, operation="read"
            )
            positions.append(replace(parsed, settle_coin=coin))
        return positions

    async def _position_rows(self, action: str, category: str, **where: Any) -> list[dict[str, Any]]:
        limit = PAGE_LIMITS["get_positions"]
        # One symbol has at most two rows (one per leg in hedge mode): its first page is the whole list, and
        # the cursor real Bybit still sends would cost every plan a second round trip for an empty page.
        whole_on_one_page = (lambda row: True) if "symbol" in where else None
        rows = await self._http.pages(
            action,
            "get_positions",
            wire_.position_key,
            until=whole_on_one_page,
            category=category,
            limit=limit,
            **where,
        )
        for row in rows:
            if self._http.parse(row, wire_.position_idx, action, operation="read") != 0:
                raise self._hedged(action, category, str(row.get("symbol", "")), rows)
        return rows

    def _hedged(
        self, action: str, category: str, symbol: str, rows: list[dict[str, Any]]
    ) -> UnsupportedPositionMode:
        legs = [row for row in rows if row.get("symbol") == symbol]
        gross = sum(
            (abs(self._http.parse(r, wire_.signed_size, action, operation="read")) for r in legs), Decimal(0)
        )
        return UnsupportedPositionMode(
            f"{action}: {symbol} is held in hedge mode (two position legs); Pilot reads one-way "
            f"positions only and will not guess the net. A human must switch the account to "
            f"one-way mode for {symbol}.",
            symbol=symbol,
            category=category,
            gross_size=gross,
        )

    async def get_balance(self) -> AccountBalance:
        return await self._http.read(
            "read the wallet balance",
            lambda a: wire_.account_balance(a["result"]),
            "get_wallet_balance",
            accountType="UNIFIED",
        )

    async def get_api_key_info(self) -> ApiKeyInfo:
        return await self._http.read(
            "read the api key's permissions",
            lambda a: wire_.api_key_info(a["result"]),
            "get_api_key_information",
        )

    async def dcp_windows(self) -> dict[str, int]:
        """Disconnect Cancel All as the exchange has it: the window in seconds by product, where it is ON."""
        return await self._http.read(
            "read the Disconnect Cancel All settings",
            lambda a: wire_.dcp_windows(a["result"]),
            "query_dcp_info",
        )

    # ---- orders ------------------------------------------------------------------------------------

    async def get_open_orders(self, category: str, symbol: str | None = None) -> list[ExchangeOrder]:
        return await self._orders("read open orders", "get_open_orders", category, symbol)

    async def get_order_history(
        self, category: str, symbol: str | None = None, order_link_id: str | None = None
    ) -> list[ExchangeOrder]:
        return await self._orders(
            "read order history", "get_order_history", category, symbol, orderLinkId=order_link_id
        )

    async def _orders(
        self,
        action: str,
        method: str,
        category: str,
        symbol: str | None,
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        **extra: Any,
    ) -> list[ExchangeOrder]:
        lists = await asyncio.gather(
            *(
                self._http.pages(
                    action,
                    method,
                    wire_.order_key,
                    until=until,
                    category=category,
                    limit=PAGE_LIMITS[method],
                    **where,
                    **extra,
                )
                for where in list_scopes(category, symbol)
            )
        )
        rows = [row for _, row in each_once(wire_.order_key, ((None, rows) for rows in lists))]
        return [
            self._http.parse(r, partial(wire_.exchange_order, category), action, operation="read")
            for r in rows
        ]

    async def find_order(
        self, category: str, symbol: str, order_link_id: str, order_id: str | None = None
    ) -> ExchangeOrder | None:
        """Look an order up by its client id in open orders and history; by the exchange's `order_id` when
        the caller holds it (a create's acknowledgement names it): see `_by_id`.

        None means the reads worked and none holds the order yet. Right after an acknowledged create
        that is expected (Bybit processes creates asynchronously): the caller must treat such an order as
        pending, counted as exposure, until a read finds it. A failed read raises instead.

        By client id both lists are read at once (one round trip). An order that closes between the two
        reads can be missed by both, so a miss is confirmed by reading them again in order: open orders,
        then history.
        """
        if order_id:
            return await self._by_id(category, symbol, order_id)
        methods = ("get_open_orders", "get_order_history")
        found = await asyncio.gather(
            *(self._find_in(method, category, symbol, order_link_id) for method in methods)
        )
        for order in found:
            if order is not None:
                return order
        for method in methods:
            order = await self._find_in(method, category, symbol, order_link_id)
            if order is not None:
                return order
        return None

    async def _by_id(self, category: str, symbol: str, order_id: str) -> ExchangeOrder | None:
        """The order read by its exchange id: one request. Open orders answer an order asked for by its id
        whatever its status (open-order.mdx: "openOnly param will be ignored when query by orderId"; the
        newest 500 closed orders are kept), so the open-order read settles a create's outcome; history is
        read only when it misses (Bybit clears those 500 when it restarts; order-list.mdx keeps them)."""
        for method in ("get_open_orders", "get_order_history"):
            found = await self._orders(
                f"read order {order_id} back",
                method,
                category,
                symbol,
                until=lambda row: row.get("orderId") == order_id,
                orderId=order_id,
            )
            order = next((o for o in found if o.order_id == order_id), None)
            if order is not None:
                return order
        return None

    async def _find_in(
        self, method: str, category: str, symbol: str, order_link_id: str
    ) -> ExchangeOrder | None:
        found = await self._orders(
            f"look up order {order_link_id}",
            method,
            category,
            symbol,
            until=lambda row: row.get("orderLinkId") == order_link_id,
            orderLinkId=order_link_id,
        )
        return next((o for o in found if o.order_link_id == order_link_id), None)

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]:
        action = f"read the fills of order {order_id}"
        rows = await self._http.pages(
            action,
            "get_executions",
            wire_.execution_key,
            category=category,
            symbol=symbol,
            orderId=order_id,
            limit=PAGE_LIMITS["get_executions"],
        )
        return [self._http.parse(r, wire_.execution, action, operation="read") for r in rows]

    # ---- paged reads for the agent's history tools (one page each; the caller follows the cursor) -------

    async def get_order_history_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[ExchangeOrder]:
        where = {"symbol": symbol} if symbol else ({"settleCoin": SETTLE_COIN} if category != "spot" else {})
        return await self._http.page(
            "read order history",
            "get_order_history",
            wire_.order_key,
            partial(wire_.exchange_order, category),
            cursor,
            category=category,
            limit=limit,
            **where,
        )

    async def get_executions_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[Execution]:
        return await self._http.page(
            "read fills",
            "get_executions",
            wire_.execution_key,
            wire_.execution,
            cursor,
            category=category,
            symbol=symbol,
            limit=limit,
        )

    async def get_closed_pnl_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int, since: datetime | None = None
    ) -> Page[ClosedPnl]:
        return await self._http.page(
            "read closed PnL",
            "get_closed_pnl",
            wire_.closed_pnl_key,
            wire_.closed_pnl,
            cursor,
            category=category,
            symbol=symbol,
            limit=limit,
            startTime=int(since.timestamp() * 1000) if since is not None else None,
        )

    async def get_executions_since(self, category: str, since: datetime) -> list[Execution]:
        """Every fill (and other execution) of the account since `since` (at most 7 days back), all pages."""
        action = "read the day's fills"
        rows = await self._http.pages(
            action,
            "get_executions",
            wire_.execution_key,
            category=category,
            startTime=int(since.timestamp() * 1000),
            limit=PAGE_LIMITS["get_executions"],
        )
        return [self._http.parse(r, wire_.execution, action, operation="read") for r in rows]

    async def get_closed_pnl_since(self, category: str, since: datetime) -> list[ClosedPnl]:
        """Every closed-PnL row updated since `since` (at most 7 days back), all pages."""
        action = "read the day's closed PnL"
        rows = await self._http.pages(
            action,
            "get_closed_pnl",
            wire_.closed_pnl_key,
            category=category,
            startTime=int(since.timestamp() * 1000),
            limit=PAGE_LIMITS["get_closed_pnl"],
        )
        return [self._http.parse(r, wire_.closed_pnl, action, operation="read") for r in rows]
