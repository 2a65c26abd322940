"""OKX's market data behind the venue port: instrument rules in coins (kept in `listings`), ticker and mark
price, book, price band.

Maintenance margin: an instrument row has no maintenance margin rate; get_instrument reads the first tier
of /api/v5/public/position-tiers (cross margin, the instrument's family) and falls back to
DEFAULT_MAINTENANCE_MARGIN_RATE (0.01, above OKX's first tier for the majors, so liquidation estimates err
on the early side) when that answer carries none. Spot has no liquidation and gets 0.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

from pilot.core.facts import InstrumentRules, Touch
from pilot.exchange.errors import ExchangeError, ExchangeRejected
from pilot.exchange.listings import UNLISTED, Listings
from pilot.exchange.models import OrderBook, PriceBand, Ticker
from pilot.exchange.okx import payloads as wire_
from pilot.exchange.okx.client import Row, Transport, parsed
from pilot.exchange.okx.markets import LINEAR_SETTLE, SPOT_UNIT, Contract, Named, inst_id, inst_type

DEFAULT_MAINTENANCE_MARGIN_RATE = Decimal("0.01")
INSTRUMENT_TTL_SECONDS = 300.0
UNLISTED_CODE = 51001  # OKX's "Instrument ID does not exist"


class MarketReads:
    """The market reads of OkxExchange (pilot.exchange.okx.adapter)."""

    _http: Transport
    listings: Listings
    _contracts: dict[str, Contract]

    @staticmethod
    def _inst(category: str, symbol: str) -> str | None:
        """OKX's instrument id for a market Pilot names; None when the name is no OKX market's."""
        return inst_id(category, symbol)

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules:
        """The market's rules in coins (cached INSTRUMENT_TTL_SECONDS, as is the answer that there is none).

        Raises:
            ExchangeRejected: family "not_found" when OKX lists no such instrument, or it is no market
                Pilot trades there (an inverse perpetual, a pair in the wrong category).
        """
        action = f"read the {category} instrument {symbol}"
        cached = self.listings.get(category, symbol)
        if isinstance(cached, InstrumentRules):
            return cached
        inst = self._inst(category, symbol)
        if cached is UNLISTED or inst is None:
            raise self._unlisted(action)
        try:
            row = await self._instrument_row(category, inst, action)
        except ExchangeRejected as refused:
            if refused.unlisted:
                self.listings.keep(category, symbol, UNLISTED)
            raise
        if row is None:
            self.listings.keep(category, symbol, UNLISTED)
            raise self._unlisted(action)
        mmr = Decimal(0) if category == "spot" else await self._maintenance_margin_rate(row, action)
        rules = wire_.instrument_rules(Named(category, symbol), row, mmr)
        self._contracts[inst] = wire_.contract(row)
        self.listings.keep(category, symbol, rules)
        return rules

    async def _instrument_row(self, category: str, inst: str, action: str) -> Row | None:
        """The instrument's row, or None when OKX lists none that Pilot trades in `category`."""
        rows = await self._http.read(
            "/api/v5/public/instruments",
            {"instType": inst_type(category), "instId": inst},
            action,
            signed=False,
        )
        mine = [row for row in rows if row.get("instId") == inst and row.get("state", "live") == "live"]
        if not mine:
            return None
        row = mine[0]
        if category == "linear" and (
            row.get("ctType") != "linear" or row.get("settleCcy") not in LINEAR_SETTLE
        ):
            return None  # an inverse perpetual: margined in the coin, not one of Pilot's linear markets
        return row

    def listed(self, category: str, symbol: str) -> bool | None:
        """Whether the exchange lists the market, as last read and still cached; None when not known."""
        return self.listings.listed(category, symbol)

    @staticmethod
    def _unlisted(action: str) -> ExchangeRejected:
        return ExchangeRejected(
            f"{action}: the exchange lists no such instrument.", ret_code=UNLISTED_CODE, family="not_found"
        )

    async def _maintenance_margin_rate(self, row: Row, action: str) -> Decimal:
        params = {
            "instType": "SWAP",
            "tdMode": "cross",
            "instFamily": row.get("instFamily") or row.get("uly"),
        }
        try:
            tiers = await self._http.read("/api/v5/public/position-tiers", params, action, signed=False)
            return wire_.lowest_tier_mmr(tiers, str(row.get("instId"))) or DEFAULT_MAINTENANCE_MARGIN_RATE
        except (ExchangeError, ValueError):
            return DEFAULT_MAINTENANCE_MARGIN_RATE

    async def _contract(self, category: str, symbol: str) -> Contract:
        """How many coins one unit of the instrument's size is (read with its rules, then kept)."""
        if category == "spot":
            return SPOT_UNIT
        inst = self._inst(category, symbol)
        if inst is not None and inst in self._contracts:
            return self._contracts[inst]
        await self.get_instrument(category, symbol)
        return self._contracts[inst or ""]

    async def _market_row(
        self, path: str, params: dict[str, str], action: str, category: str, symbol: str
    ) -> Row:
        rows = await self._http.read(path, params, action, signed=False)
        if not rows:
            raise self._unlisted(action)
        self.listings.market_answered(category, symbol)
        return rows[0]

    async def get_ticker(self, category: str, symbol: str) -> Ticker:
        """Bid, ask and last (/api/v5/market/ticker) and, on a perpetual, the mark price (public/mark-price)."""
        action = f"read the {symbol} ticker"
        inst = self._inst(category, symbol)
        if inst is None:
            raise self._unlisted(action)
        ticker = self._market_row("/api/v5/market/ticker", {"instId": inst}, action, category, symbol)
        if category == "spot":
            row, mark = await ticker, None
        else:
            mark_row = self._market_row(
                "/api/v5/public/mark-price", {"instType": "SWAP", "instId": inst}, action, category, symbol
            )
            row, marked = await asyncio.gather(ticker, mark_row)
            mark = wire_.dec(marked.get("markPx"))
        return parsed(lambda: wire_.ticker(Named(category, symbol), row, mark), action)

    async def get_touch(self, category: str, symbol: str) -> Touch:
        """Bid, ask and mark; spot has no mark price, so its mark is the mid."""
        ticker = await self.get_ticker(category, symbol)
        mark = ticker.mark if ticker.mark is not None else (ticker.bid + ticker.ask) / 2
        return Touch(bid=ticker.bid, ask=ticker.ask, mark=mark, observed_at=ticker.observed_at)

    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook:
        """/api/v5/market/books: sizes in coins."""
        action = f"read the {symbol} order book"
        inst = self._inst(category, symbol)
        if inst is None:
            raise self._unlisted(action)
        unit, row = await asyncio.gather(
            self._contract(category, symbol),
            self._market_row(
                "/api/v5/market/books", {"instId": inst, "sz": str(depth)}, action, category, symbol
            ),
        )
        return parsed(lambda: wire_.orderbook(Named(category, symbol), row, unit), action)

    async def get_price_band(self, category: str, symbol: str) -> PriceBand:
        """/api/v5/public/price-limit: the highest buy and the lowest sell OKX accepts now (it rejects an
        order priced outside them, 51006, on spot and perpetuals alike)."""
        action = f"read the {symbol} price band"
        inst = self._inst(category, symbol)
        if inst is None:
            raise self._unlisted(action)
        row = await self._market_row("/api/v5/public/price-limit", {"instId": inst}, action, category, symbol)
        return parsed(lambda: wire_.price_band(Named(category, symbol), row), action)
