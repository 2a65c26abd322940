"""Bybit's market data behind the venue port: instrument rules (kept in `listings`), ticker, book, price band.

Maintenance margin: instruments-info has no maintenance margin rate; get_instrument reads the lowest-risk
tier of /v5/market/risk-limit (`isLowestRisk`, else the smallest `riskLimitValue`) and falls back to
DEFAULT_MAINTENANCE_MARGIN_RATE (0.01, above Bybit's first tier for the majors, so liquidation estimates err
on the early side) only when that answer carries none. Spot instruments have no liquidation and get 0.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal, InvalidOperation
from typing import Any

from pilot.core.facts import InstrumentRules, Touch
from pilot.exchange.bybit import payloads as wire_
from pilot.exchange.bybit.transport import Transport
from pilot.exchange.errors import ExchangeRejected
from pilot.exchange.listings import UNLISTED, Listings
from pilot.exchange.models import OrderBook, PriceBand, Ticker

DEFAULT_MAINTENANCE_MARGIN_RATE = Decimal("0.01")
INSTRUMENT_TTL_SECONDS = 300.0


class MarketReads:
    """The market reads of BybitExchange (pilot.exchange.bybit.adapter)."""

    _http: Transport
    listings: Listings

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules:
        """The market's rules (cached INSTRUMENT_TTL_SECONDS, as is the answer that there is no such market).

        Raises:
            ExchangeRejected: family "not_found" (or "params", as the exchange answered it) when the exchange
                lists no such instrument.
        """
        action = f"read the {category} instrument {symbol}"
        cached = self.listings.get(category, symbol)
        if isinstance(cached, InstrumentRules):
            return cached
        if cached is UNLISTED:
            raise self._unlisted(action)
        info = self._http.call("get_instruments_info", action, category=category, symbol=symbol)
        try:
            if category == "spot":
                answer, mmr = await info, Decimal(0)
            else:  # both reads at once: one round trip on a cold cache
                answer, mmr = await asyncio.gather(info, self._maintenance_margin_rate(category, symbol))
        except ExchangeRejected as refused:
            if refused.unlisted:
                self.listings.keep(category, symbol, UNLISTED)
            raise
        rows = self._http.parse(
            answer,
            lambda a: [row for row in a["result"]["list"] if row["symbol"] == symbol],
            action,
            operation="read",
        )
        if not rows:
            self.listings.keep(category, symbol, UNLISTED)
            raise self._unlisted(action)
        rules = self._http.parse(
            rows[0], lambda row: wire_.instrument_rules(category, row, mmr), action, operation="read"
        )
        self.listings.keep(category, symbol, rules)
        return rules

    def listed(self, category: str, symbol: str) -> bool | None:
        """Whether the exchange lists the market, as last read and still cached; None when not known."""
        return self.listings.listed(category, symbol)

    @staticmethod
    def _unlisted(action: str) -> ExchangeRejected:
        return ExchangeRejected(
            f"{action}: the exchange lists no such instrument.", ret_code=10001, family="not_found"
        )

    async def _maintenance_margin_rate(self, category: str, symbol: str) -> Decimal:
        action = f"read the risk limit of {symbol}"
        tiers = await self._http.pages(
            action, "get_risk_limit", wire_.tier_key, category=category, symbol=symbol
        )
        try:
            tier = wire_.lowest_risk_tier(symbol, tiers)
            return wire_.dec(tier.get("maintenanceMargin")) if tier else DEFAULT_MAINTENANCE_MARGIN_RATE
        except (AttributeError, ValueError, InvalidOperation):
            return DEFAULT_MAINTENANCE_MARGIN_RATE

    async def get_ticker(self, category: str, symbol: str) -> Ticker:
        def parse(answer: dict[str, Any]) -> Ticker:
            return wire_.ticker(category, answer["result"]["list"][0], wire_.ms_to_datetime(answer["time"]))

        ticker = await self._http.read(
            f"read the {symbol} ticker", parse, "get_tickers", category=category, symbol=symbol
        )
        self.listings.market_answered(category, symbol)
        return ticker

    async def get_touch(self, category: str, symbol: str) -> Touch:
        """Bid, ask and mark; spot has no mark price, so its mark is the mid."""
        ticker = await self.get_ticker(category, symbol)
        mark = ticker.mark if ticker.mark is not None else (ticker.bid + ticker.ask) / 2
        return Touch(bid=ticker.bid, ask=ticker.ask, mark=mark, observed_at=ticker.observed_at)

    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook:
        def parse(answer: dict[str, Any]) -> OrderBook:
            return wire_.orderbook(category, answer["result"], wire_.ms_to_datetime(answer["time"]))

        book = await self._http.read(
            f"read the {symbol} order book",
            parse,
            "get_orderbook",
            category=category,
            symbol=symbol,
            limit=depth,
        )
        self.listings.market_answered(category, symbol)
        return book

    async def get_price_band(self, category: str, symbol: str) -> PriceBand:
        """The order price band right now (/v5/market/price-limit): the highest buy and the lowest sell.

        Per category (account/set-price-limit.mdx, default settings): spot rejects an order priced outside
        the band; linear and inverse move its price to the band's edge ("clamp"). Option has no band
        endpoint and is refused with ValueError.
        """
        if category not in ("spot", "linear", "inverse"):
            raise ValueError(f"Bybit publishes no price band for category {category!r}")

        def parse(answer: dict[str, Any]) -> PriceBand:
            return wire_.price_band(category, answer["result"], wire_.ms_to_datetime(answer["time"]))

        band = await self._http.read(
            f"read the {symbol} price band", parse, "get_price_limit", category=category, symbol=symbol
        )
        self.listings.market_answered(category, symbol)
        return band
