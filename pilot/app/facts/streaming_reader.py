"""The reader that judges on the streams' facts (pilot.app.facts.stream_cache) or on REST, and how streams start.

`StreamingReader` is an ExchangeReader over a REST reader and the cache: each fact plan_order and
place_order read (touch, price band, linear position, balance, open orders of a symbol) comes from the
stream when it may and from REST otherwise, and the source of each is noted for the snapshot
(`fact_sources`). `find_order` (the gate's read-back after a create) waits for the order on the private
stream while the stream stays in sync and fresh, and reads REST otherwise: what it returns means the
same either way, so unknown outcomes are handled exactly as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from datetime import datetime

from pilot.app.facts.stream_cache import FINAL_STATUSES, MAX_OUTCOME_WAIT_MS, StreamFacts
from pilot.app.facts.stream_hub import StreamHub
from pilot.app.road.clock import Clock
from pilot.app.road.ports import ExchangeReader
from pilot.core.facts import InstrumentRules, Position, Touch
from pilot.core.freshness import FactSource
from pilot.core.venues import VenueProfile
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import (
    AccountBalance,
    ApiKeyInfo,
    ClosedPnl,
    ExchangeOrder,
    ExchangePosition,
    Execution,
    OrderBook,
    Page,
    PriceBand,
    Ticker,
)
from pilot.exchange.stream_events import PRIVATE

# The sources of the facts read by the judgement running in this task (set by pilot.app.facts.gather.gather).
FACT_SOURCES: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "fact_sources", default=None
)


def note_source(fact: str, source: FactSource) -> None:
    sources = FACT_SOURCES.get()
    if sources is not None:
        sources[fact] = source.value


class StreamingReader:
    """An ExchangeReader: the facts a judgement reads come from the streams when fresh, else from REST."""

    def __init__(self, rest: ExchangeReader, hub: StreamHub) -> None:
        self.rest = rest
        self.hub = hub

    @property
    def facts(self) -> StreamFacts:
        return self.hub.facts

    @property
    def profile(self) -> VenueProfile:
        return self.rest.profile

    def _now_bound(self) -> tuple[int, int]:
        return self.hub.now_ms(), self.hub.max_age_ms()

    async def get_touch(self, category: str, symbol: str) -> Touch:
        touch = self.facts.touch(category, symbol, *self._now_bound())
        if touch is not None:
            note_source("touch", FactSource.STREAM)
            return touch
        note_source("touch", FactSource.REST)
        return await self.rest.get_touch(category, symbol)

    async def get_price_band(self, category: str, symbol: str) -> PriceBand:
        band = self.facts.band(category, symbol, *self._now_bound())
        if band is not None:
            note_source("price_band", FactSource.STREAM)
            return band
        note_source("price_band", FactSource.REST)
        return await self.rest.get_price_band(category, symbol)

    async def get_position(self, category: str, symbol: str) -> Position:
        position = self.facts.position(symbol, *self._now_bound()) if category == "linear" else None
        if position is not None:
            note_source("position", FactSource.STREAM)
            return position
        note_source("position", FactSource.REST)
        return await self.rest.get_position(category, symbol)

    async def get_balance(self) -> AccountBalance:
        balance = self.facts.account_balance(*self._now_bound())
        if balance is not None:
            note_source("balance", FactSource.STREAM)
            return balance
        note_source("balance", FactSource.REST)
        return await self.rest.get_balance()

    async def get_open_orders(self, category: str, symbol: str | None = None) -> list[ExchangeOrder]:
        orders = self.facts.open_orders(category, symbol, *self._now_bound()) if symbol else None
        if orders is not None:
            note_source(f"open_orders_{category}", FactSource.STREAM)
            return orders
        note_source(f"open_orders_{category}", FactSource.REST)
        return await self.rest.get_open_orders(category, symbol)

    async def find_order(
        self, category: str, symbol: str, order_link_id: str, order_id: str | None = None
    ) -> ExchangeOrder | None:
        """The order from the private stream when it shows there while the stream stays in sync and fresh
        (at most MAX_OUTCOME_WAIT_MS), else REST's find_order. An IOC or FOK order is awaited until final."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MAX_OUTCOME_WAIT_MS / 1000
        while True:
            now, bound = self._now_bound()
            if not self.facts.usable(PRIVATE, now, bound):
                break
            found = self.facts.order_by_link(category, order_link_id)
            if found is not None and (
                found.status in FINAL_STATUSES or found.time_in_force not in ("IOC", "FOK")
            ):
                note_source("outcome", FactSource.STREAM)
                return found
            fresh_for = (bound - (self.facts.age(PRIVATE, now) or 0)) / 1000
            wait_s = min(fresh_for, deadline - loop.time())
            if wait_s <= 0:
                break
            await self.hub.changed(wait_s)
        note_source("outcome", FactSource.REST)
        return await self.rest.find_order(category, symbol, order_link_id, order_id)

    # ---- the rest is REST ---------------------------------------------------------------------------

    async def get_instrument(self, category: str, symbol: str) -> InstrumentRules:
        return await self.rest.get_instrument(category, symbol)

    def listed(self, category: str, symbol: str) -> bool | None:
        return self.rest.listed(category, symbol)

    async def get_ticker(self, category: str, symbol: str) -> Ticker:
        return await self.rest.get_ticker(category, symbol)

    async def get_orderbook(self, category: str, symbol: str, depth: int = 25) -> OrderBook:
        return await self.rest.get_orderbook(category, symbol, depth)

    async def get_positions(self, category: str, symbol: str | None = None) -> list[ExchangePosition]:
        return await self.rest.get_positions(category, symbol)

    async def get_order_history(
        self, category: str, symbol: str | None = None, order_link_id: str | None = None
    ) -> list[ExchangeOrder]:
        return await self.rest.get_order_history(category, symbol, order_link_id)

    async def get_executions(self, category: str, symbol: str, order_id: str) -> list[Execution]:
        return await self.rest.get_executions(category, symbol, order_id)

    async def get_api_key_info(self) -> ApiKeyInfo:
        return await self.rest.get_api_key_info()

    async def get_order_history_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[ExchangeOrder]:
        return await self.rest.get_order_history_page(category, symbol, cursor, limit)

    async def get_executions_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int
    ) -> Page[Execution]:
        return await self.rest.get_executions_page(category, symbol, cursor, limit)

    async def get_closed_pnl_page(
        self, category: str, symbol: str | None, cursor: str | None, limit: int, since: datetime | None = None
    ) -> Page[ClosedPnl]:
        return await self.rest.get_closed_pnl_page(category, symbol, cursor, limit, since)

    async def get_executions_since(self, category: str, since: datetime) -> list[Execution]:
        return await self.rest.get_executions_since(category, since)

    async def get_closed_pnl_since(self, category: str, since: datetime) -> list[ClosedPnl]:
        return await self.rest.get_closed_pnl_since(category, since)


async def stream_markets(rest: ExchangeReader, symbols: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The allowed symbols the exchange lists, per category ("linear", "spot"): what is streamed."""
    categories = ("linear", "spot")

    async def listed(category: str, symbol: str) -> bool:
        try:
            await rest.get_instrument(category, symbol)
        except ExchangeError:
            return False
        return True

    found = await asyncio.gather(*(listed(c, s) for c in categories for s in symbols))
    pairs = [(c, s) for c in categories for s in symbols]
    return {
        c: tuple(s for (cat, s), ok in zip(pairs, found, strict=True) if ok and cat == c) for c in categories
    }


async def start_streams(
    stack: contextlib.AsyncExitStack,
    rest: ExchangeReader,
    clock: Clock,
    max_age_ms: Callable[[], int],
    *,
    environment: str,
    api_key: str,
    api_secret: str,
    symbols: tuple[str, ...],
    paper_ws_url: str | None = None,
) -> StreamingReader | None:
    """Connect the streams of `symbols` and the account; the reader that uses them, or None (REST only)
    when the environment has no stream URL Pilot connects to. A connection that does not open, or ends,
    keeps being tried until `stack` closes the hub and its connections (REST for its facts meanwhile)."""
    from pilot.exchange.adapters import open_streams

    markets = await stream_markets(rest, symbols)
    hub = StreamHub(StreamFacts(markets), rest, clock, max_age_ms)
    try:  # off the loop: a stand-in on loopback is asked where its streams are (blocking)
        client = await asyncio.to_thread(
            open_streams,
            environment,
            api_key=api_key,
            api_secret=api_secret,
            markets=markets,
            sink=hub.receive,
            paper_ws_url=paper_ws_url,
            exchange=rest,
        )
    except ValueError:
        return None
    hub.attach(client)
    stack.push_async_callback(hub.close)
    # Waits a few seconds at most for the first connections; those not open yet keep trying in the
    # background (facts come from REST until their channel is in sync).
    await asyncio.to_thread(client.start)
    return StreamingReader(rest, hub)
