"""Facts kept fresh by the exchange's WebSocket streams, and the reader that judges on them or on REST.

`StreamFacts` is the cache: it applies pilot.exchange.stream_events events (single-threaded: the hub hops
them onto the event loop) and answers a fact only when pilot.core.freshness says the stream may be used:
its channel in sync and the fact younger than the policy's maxFactAgeMs. Otherwise it answers None and
the caller reads over REST.

When a channel is in sync:

* public ("linear", "spot"): every subscription acknowledged since the connection opened; a book also
  needs its snapshot and every delta since in sequence (a gap makes it unknown until the new snapshot
  the feed asks for). The snapshots Bybit sends on subscribing are the public resynchronisation.
* private: after every (re)connection and its subscriptions, the account is read again over REST
  (positions of the streamed markets, balance, open orders); then a ping is sent and the channel is in
  sync when its pong comes back with no order, position or wallet message having arrived since the REST
  read began (one that did may be older or newer than what REST said: the read is done again).

A fact's age is measured from its channel's latest sign of life (any message, a private pong), each taken
at the older of the exchange's stamp and our clock on arrival (pilot.core.freshness). That holds while the
exchange sends every topic as it changes; after a public channel's silence of more than STALL_MS on the
exchange's clock, the exchange sends where it stands topic by topic, so each market's book, mark and band is
forgotten until its own next update (a market the simulator runs faster than real time reads as silent
between its pushes, and is read over REST).
A connection that ends takes its channel out of sync at once (the client says so), until it opens again.

Orders: open ones are always kept, indexed per market; final ones only the newest MAX_FINAL_ORDERS and none
older than FINAL_ORDER_MS behind the newest order seen, enough for a send's read-back; by link id in one
lookup. So the cache stays bounded for the life of a server.

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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Protocol

from pilot.app.road.clock import Clock
from pilot.app.road.ports import ExchangeReader
from pilot.core.facts import InstrumentRules, Position, Touch
from pilot.core.freshness import FactSource, age_ms, as_of_ms, source_for
from pilot.core.venues import VenueProfile
from pilot.exchange.bybit.payloads import ms_to_datetime
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
from pilot.exchange.stream_events import (
    PRIVATE,
    Alive,
    BandUpdate,
    BookGap,
    BookUpdate,
    Connected,
    ExecutionUpdate,
    OrderUpdate,
    PositionUpdate,
    Refused,
    StreamEvent,
    Subscribed,
    TickerUpdate,
    WalletUpdate,
)

OPEN_STATUSES = frozenset({"New", "PartiallyFilled", "Untriggered", "Created"})
FINAL_STATUSES = frozenset({"Filled", "Cancelled", "Rejected", "PartiallyFilledCanceled", "Deactivated"})
CLOSE_SECONDS = 5.0
MAX_OUTCOME_WAIT_MS = 250  # the longest a lookup waits for an order on the stream before reading REST
# Orders no longer open are kept only this many (the newest), and none older than FINAL_ORDER_MS behind the
# newest order seen (the exchange's updated times): enough for a send's read-back (MAX_OUTCOME_WAIT_MS)
# and for a late REST row of an order that has ended to be known as stale. Open orders are always kept.
MAX_FINAL_ORDERS = 1000
# Bybit pushes every linear ticker every 100 ms, changed or not: a public channel silent this long on the
# exchange's own clock was not sending (a stall), and what it sends next is coalesced, topic by topic.
STALL_MS = 3000
FINAL_ORDER_MS = 10 * 60_000

# The sources of the facts read by the judgement running in this task (set by pilot.app.facts.gather.gather).
FACT_SOURCES: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "fact_sources", default=None
)


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class Sync(Enum):
    OFF = "off"  # not connected, or not every subscription acknowledged yet
    WANTED = "wanted"  # private: subscribed, waiting for the REST read
    READING = "reading"  # private: the REST read is under way
    CONFIRMING = "confirming"  # private: read; waiting for the pong of a ping sent after it
    IN_SYNC = "in_sync"


@dataclass
class Channel:
    sync: Sync = Sync.OFF
    alive_ms: int | None = None  # the as-of of the latest sign of life since it was in sync
    generation: int = 0
    dirty: bool = False  # a private message arrived since the REST read began
    confirm_ping: int | None = None
    refused: bool = False
    exchange_ms: int = 0  # the exchange's latest stamp on a public channel (a silence is measured on it)


@dataclass(frozen=True, slots=True)
class Resync:
    """What a private resynchronisation read over REST."""

    positions: dict[str, Position]
    balance: AccountBalance
    open_orders: tuple[ExchangeOrder, ...]


@dataclass
class StreamFacts:
    """The cache. Not thread-safe: apply events from one thread (the hub's event loop)."""

    markets: dict[str, tuple[str, ...]]
    channels: dict[str, Channel] = field(default_factory=dict)
    books: dict[tuple[str, str], tuple[Decimal | None, Decimal | None]] = field(default_factory=dict)
    marks: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    bands: dict[tuple[str, str], tuple[Decimal, Decimal]] = field(default_factory=dict)
    positions: dict[str, Position] = field(default_factory=dict)
    hedged: set[str] = field(default_factory=set)
    balance: AccountBalance | None = None
    orders: dict[str, ExchangeOrder] = field(default_factory=dict)  # open ones, and recent final ones
    open_by_market: dict[tuple[str, str], dict[str, ExchangeOrder]] = field(default_factory=dict)
    by_link: dict[tuple[str, str], str] = field(default_factory=dict)  # (category, link id) -> order id
    final: OrderedDict[str, int] = field(default_factory=OrderedDict)  # order id -> updated ms, oldest first
    newest_order_ms: int = 0
    max_final_orders: int = MAX_FINAL_ORDERS
    final_order_ms: int = FINAL_ORDER_MS
    # A fill seen on the order stream before the position or wallet push it causes: until that push comes
    # (stamped no earlier than the fill), the old position or balance is not served (the exchange's ms).
    position_behind: dict[str, int] = field(default_factory=dict)
    wallet_behind: int | None = None

    def channel(self, name: str) -> Channel:
        return self.channels.setdefault(name, Channel())

    # ---- events -----------------------------------------------------------------------------------

    def apply(self, event: StreamEvent, received_ms: int) -> None:
        channel = self.channel(event.channel)
        if isinstance(event, Connected):
            self.channels[event.channel] = Channel(generation=channel.generation + 1)
            if event.channel != PRIVATE:
                self._forget_markets(event.channel)
            return
        if isinstance(event, Refused):
            channel.refused = True
            channel.sync = Sync.OFF
            return
        if isinstance(event, Subscribed):
            if not channel.refused:
                channel.sync = Sync.WANTED if event.channel == PRIVATE else Sync.IN_SYNC
            return
        as_of = as_of_ms(event.exchange_ms, received_ms)
        if isinstance(event, Alive):
            self._alive(channel, event, as_of)
            return
        if event.channel != PRIVATE:
            self._after_silence(channel, event.channel, event.exchange_ms)
        if channel.sync is Sync.IN_SYNC:
            channel.alive_ms = max(channel.alive_ms or as_of, as_of)
        if isinstance(event, TickerUpdate):
            if event.mark is not None:
                self.marks[(event.channel, event.symbol)] = event.mark
        elif isinstance(event, BookUpdate):
            self.books[(event.channel, event.symbol)] = (event.bid, event.ask)
        elif isinstance(event, BookGap):
            self.books.pop((event.channel, event.symbol), None)
        elif isinstance(event, BandUpdate):
            self.bands[(event.channel, event.symbol)] = (event.buy_limit, event.sell_limit)
        else:
            self._private(channel, event)

    def _after_silence(self, channel: Channel, name: str, exchange_ms: int) -> None:
        """A public message stamped more than STALL_MS after the one before: the exchange sent nothing
        meanwhile and now sends where it stands, topic by topic, so this message vouches only for itself.
        Every market's book, mark and band is forgotten until its own update comes (REST meanwhile)."""
        if channel.exchange_ms and exchange_ms - channel.exchange_ms > STALL_MS:
            self._forget_markets(name)
        channel.exchange_ms = max(channel.exchange_ms, exchange_ms)

    def _forget_markets(self, name: str) -> None:
        for store in (self.books, self.marks, self.bands):
            for key in [k for k in store if k[0] == name]:
                del store[key]

    def _alive(self, channel: Channel, event: Alive, as_of: int) -> None:
        confirming = channel.sync is Sync.CONFIRMING and channel.confirm_ping is not None
        if confirming and event.req_id.isdigit() and int(event.req_id) >= (channel.confirm_ping or 0):
            if channel.dirty:  # something moved while REST was read: read it again
                channel.sync, channel.dirty = Sync.WANTED, False
                return
            channel.sync = Sync.IN_SYNC
        if channel.sync is Sync.IN_SYNC:
            channel.alive_ms = max(channel.alive_ms or as_of, as_of)

    def _private(
        self, channel: Channel, event: OrderUpdate | ExecutionUpdate | PositionUpdate | WalletUpdate
    ) -> None:
        if channel.sync in (Sync.READING, Sync.CONFIRMING):
            channel.dirty = True
        if isinstance(event, OrderUpdate):
            for order in event.orders:
                self._order(order)
            self._forget_old_final_orders()
        elif isinstance(event, ExecutionUpdate):
            pass  # the order stream carries what judgements need; an execution only marks the channel dirty
        elif isinstance(event, PositionUpdate):
            for position in event.positions:
                self.positions[position.symbol] = position
                self.hedged.discard(position.symbol)
                if self.position_behind.get(position.symbol, event.exchange_ms + 1) <= event.exchange_ms:
                    del self.position_behind[position.symbol]
            for symbol in event.hedged:
                self.positions.pop(symbol, None)
                self.hedged.add(symbol)
        elif isinstance(event, WalletUpdate):
            self.balance = event.balance
            if self.wallet_behind is not None and self.wallet_behind <= event.exchange_ms:
                self.wallet_behind = None

    def _order(self, order: ExchangeOrder) -> None:
        """Keep the newer of two rows of one order (a resync's REST row and a pushed one may cross)."""
        known = self.orders.get(order.order_id)
        if known is None or _rank(order) >= _rank(known):
            self._keep(order, known)
            if order.cum_exec_qty > (known.cum_exec_qty if known is not None else Decimal(0)):
                filled_ms = to_ms(order.updated_at)
                if order.category == "linear":
                    self.position_behind[order.symbol] = filled_ms
                self.wallet_behind = filled_ms

    def _keep(self, order: ExchangeOrder, known: ExchangeOrder | None) -> None:
        """Put a row in place of the order's last one, in every index."""
        if known is not None:
            self._unindex(known)
        self.orders[order.order_id] = order
        updated_ms = to_ms(order.updated_at)
        self.newest_order_ms = max(self.newest_order_ms, updated_ms)
        if order.status in OPEN_STATUSES:
            self.open_by_market.setdefault((order.category, order.symbol), {})[order.order_id] = order
        else:
            self.final[order.order_id] = updated_ms
        link = (order.category, order.order_link_id)
        other = self.orders.get(self.by_link.get(link, order.order_id))
        if order.order_link_id and (other is None or other is order or _rank(order) >= _rank(other)):
            self.by_link[link] = order.order_id  # two orders on one link id (Bybit refuses it): the newer

    def _unindex(self, order: ExchangeOrder) -> None:
        market = self.open_by_market.get((order.category, order.symbol))
        if market is not None and market.pop(order.order_id, None) is not None and not market:
            del self.open_by_market[(order.category, order.symbol)]
        self.final.pop(order.order_id, None)

    def _forget(self, order_id: str) -> None:
        order = self.orders.pop(order_id)
        self._unindex(order)
        link = (order.category, order.order_link_id)
        if self.by_link.get(link) == order_id:
            del self.by_link[link]

    def _forget_old_final_orders(self) -> None:
        """Final orders beyond the newest max_final_orders, or older than final_order_ms, are let go."""
        oldest_kept = self.newest_order_ms - self.final_order_ms
        while self.final:
            order_id, updated_ms = next(iter(self.final.items()))
            if len(self.final) <= self.max_final_orders and updated_ms >= oldest_kept:
                break
            self._forget(order_id)

    # ---- private resynchronisation ------------------------------------------------------------------

    def resync_wanted(self) -> bool:
        return self.channel(PRIVATE).sync is Sync.WANTED

    def begin_resync(self) -> int:
        """Start the REST read; returns the generation it is for."""
        channel = self.channel(PRIVATE)
        channel.sync, channel.dirty = Sync.READING, False
        return channel.generation

    def finish_resync(self, generation: int, read: Resync | None, ping_id: int) -> bool:
        """Apply a REST read (None: it failed); True when a ping with `ping_id` must now confirm it."""
        channel = self.channel(PRIVATE)
        if channel.generation != generation or channel.sync is not Sync.READING:
            return False
        if read is None:
            channel.sync = Sync.WANTED
            return False
        self.positions.update(read.positions)
        self.hedged -= set(read.positions)
        self.balance = read.balance
        self.position_behind.clear()  # REST's word is newer than any fill pushed before it was read
        self.wallet_behind = None
        listed = {o.order_id for o in read.open_orders}
        was_open = [i for market in self.open_by_market.values() for i in market if i not in listed]
        for order_id in was_open:
            self._forget(order_id)  # open before, not open now: REST's word for it (a push may follow)
        for order in read.open_orders:
            self._order(order)
        self._forget_old_final_orders()
        channel.sync, channel.confirm_ping = Sync.CONFIRMING, ping_id
        return True

    # ---- facts --------------------------------------------------------------------------------------

    def age(self, channel_name: str, now_ms: int) -> int | None:
        channel = self.channels.get(channel_name)
        if channel is None or channel.sync is not Sync.IN_SYNC:
            return None
        return age_ms(now_ms, channel.alive_ms)

    def usable(self, channel_name: str, now_ms: int, max_age_ms: int) -> bool:
        channel = self.channels.get(channel_name)
        in_sync = channel is not None and channel.sync is Sync.IN_SYNC
        return source_for(in_sync, self.age(channel_name, now_ms), max_age_ms) is FactSource.STREAM

    def touch(self, category: str, symbol: str, now_ms: int, max_age_ms: int) -> Touch | None:
        if not self.usable(category, now_ms, max_age_ms):
            return None
        bid, ask = self.books.get((category, symbol), (None, None))
        if bid is None or ask is None:
            return None
        mark = self.marks.get((category, symbol)) if category != "spot" else (bid + ask) / 2
        if mark is None:
            return None
        alive = self.channels[category].alive_ms
        return Touch(bid=bid, ask=ask, mark=mark, observed_at=ms_to_datetime(alive))

    def band(self, category: str, symbol: str, now_ms: int, max_age_ms: int) -> PriceBand | None:
        if not self.usable(category, now_ms, max_age_ms) or (category, symbol) not in self.bands:
            return None
        buy, sell = self.bands[(category, symbol)]
        alive = self.channels[category].alive_ms
        return PriceBand(
            symbol=symbol,
            category=category,
            buy_limit=buy,
            sell_limit=sell,
            outside="reject" if category == "spot" else "clamp",
            observed_at=ms_to_datetime(alive),
        )

    def position(self, symbol: str, now_ms: int, max_age_ms: int) -> Position | None:
        if not self.usable(PRIVATE, now_ms, max_age_ms) or symbol in self.hedged:
            return None
        if symbol in self.position_behind:
            return None
        return self.positions.get(symbol)

    def account_balance(self, now_ms: int, max_age_ms: int) -> AccountBalance | None:
        if self.wallet_behind is not None or not self.usable(PRIVATE, now_ms, max_age_ms):
            return None
        return self.balance

    def open_orders(
        self, category: str, symbol: str, now_ms: int, max_age_ms: int
    ) -> list[ExchangeOrder] | None:
        if not self.usable(PRIVATE, now_ms, max_age_ms):
            return None
        return list(self.open_by_market.get((category, symbol), {}).values())

    def order_by_link(self, category: str, order_link_id: str) -> ExchangeOrder | None:
        """The latest row of the order with this link id, while it is open or among the final ones kept."""
        order_id = self.by_link.get((category, order_link_id))
        return self.orders.get(order_id) if order_id is not None else None


def _rank(order: ExchangeOrder) -> tuple[datetime, Decimal, int]:
    return (order.updated_at, order.cum_exec_qty, 1 if order.status in FINAL_STATUSES else 0)


class StreamControl(Protocol):
    """What the hub needs from a stream client (pilot.exchange.bybit.stream.BybitStreams)."""

    def ping(self) -> int:
        """Send a ping on every channel; its id (the private pong carries it back)."""
        ...

    def close(self) -> None:
        """Close for good, within a bound (seconds), so it may run on a worker thread the loop waits for;
        nothing reconnects after it returns."""
        ...


class StreamHub:
    """Runs the cache on the event loop: events hop here from the client's threads; the private channel is
    read again over REST whenever it needs it; the channels are pinged every `ping_every_ms`.

    `resync_reader` is the REST reader; `max_age_ms` reads the policy's maxFactAgeMs.
    """

    def __init__(
        self,
        facts: StreamFacts,
        rest: ExchangeReader,
        clock: Clock,
        max_age_ms: Callable[[], int],
        *,
        ping_every_ms: int = 100,
    ) -> None:
        self.facts = facts
        self.rest = rest
        self.clock = clock
        self.max_age_ms = max_age_ms
        self.ping_every_ms = ping_every_ms
        self.client: StreamControl | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.resyncs = 0

    def now_ms(self) -> int:
        return to_ms(self.clock.now())

    def attach(self, client: StreamControl) -> None:
        """Start the resync and ping loops for `client` (call on the event loop)."""
        self.loop = asyncio.get_running_loop()
        self.client = client
        for work in (self._resync_loop(), self._ping_loop()):
            task = asyncio.create_task(work)
            self._tasks.add(task)

    def receive(self, event: StreamEvent) -> None:
        """The client's sink: safe from any thread."""
        received = self.now_ms()
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self.apply, event, received)

    def apply(self, event: StreamEvent, received_ms: int) -> None:
        self.facts.apply(event, received_ms)
        self._changed.set()

    async def changed(self, timeout_s: float) -> bool:
        """Wait until an event arrives (True) or `timeout_s` passes (False)."""
        self._changed.clear()
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result when a cancel and the
            # event arrive in the same turn, and the cancelled loop ran on until close() gave up on it
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Stop the loops and the client's connections (the client's close is bounded: see StreamControl)."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_SECONDS)
        self._tasks.clear()
        client, self.client = self.client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ping_every_ms / 1000)
            if self.client is not None:
                await asyncio.to_thread(self.client.ping)

    async def _resync_loop(self) -> None:
        while True:
            if not self.facts.resync_wanted():
                await self.changed(1.0)
                continue
            await self.resync()

    async def resync(self) -> None:
        """Read the account over REST for the private channel, then confirm it with a ping."""
        generation = self.facts.begin_resync()
        self.resyncs += 1
        read = await read_account(self.rest, self.facts.markets)
        if self.client is None:
            return
        ping_id = await asyncio.to_thread(self.client.ping)
        if not self.facts.finish_resync(generation, read, ping_id) and read is None:
            await asyncio.sleep(1.0)  # REST failed: try again in a second, the stream is untrusted meanwhile


async def read_account(rest: ExchangeReader, markets: dict[str, tuple[str, ...]]) -> Resync | None:
    """The private facts over REST, for a resynchronisation; None when a read failed."""
    try:
        balance, listed, positions = await asyncio.gather(
            rest.get_balance(),
            asyncio.gather(*(rest.get_open_orders(category) for category in markets)),
            asyncio.gather(*(rest.get_position("linear", symbol) for symbol in markets.get("linear", ()))),
        )
    except ExchangeError:
        return None
    orders = tuple(order for category in listed for order in category)
    return Resync(positions={p.symbol: p for p in positions}, balance=balance, open_orders=orders)


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

    async def find_order(self, category: str, symbol: str, order_link_id: str) -> ExchangeOrder | None:
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
        return await self.rest.find_order(category, symbol, order_link_id)

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
    from pilot.exchange.bybit.stream import BybitStreams

    markets = await stream_markets(rest, symbols)
    hub = StreamHub(StreamFacts(markets), rest, clock, max_age_ms)
    try:
        client = BybitStreams(
            environment,
            api_key=api_key,
            api_secret=api_secret,
            markets=markets,
            sink=hub.receive,
            paper_ws_url=paper_ws_url,
        )
    except ValueError:
        return None
    hub.attach(client)
    stack.push_async_callback(hub.close)
    # Waits a few seconds at most for the first connections; those not open yet keep trying in the
    # background (facts come from REST until their channel is in sync).
    await asyncio.to_thread(client.start)
    return StreamingReader(rest, hub)
