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

The hub that feeds it is pilot.app.facts.stream_hub; the reader that judges on it,
pilot.app.facts.streaming_reader.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum

from pilot.core.facts import Position, Touch
from pilot.core.freshness import FactSource, age_ms, as_of_ms, source_for
from pilot.exchange.models import OPEN_STATUSES, AccountBalance, ExchangeOrder, PriceBand
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
    Unreadable,
    WalletUpdate,
)

FINAL_STATUSES = frozenset({"Filled", "Cancelled", "Rejected", "PartiallyFilledCanceled", "Deactivated"})
MAX_OUTCOME_WAIT_MS = 250  # the longest a lookup waits for an order on the stream before reading REST
# Orders no longer open are kept only this many (the newest), and none older than FINAL_ORDER_MS behind the
# newest order seen (the exchange's updated times): enough for a send's read-back (MAX_OUTCOME_WAIT_MS)
# and for a late REST row of an order that has ended to be known as stale. Open orders are always kept.
MAX_FINAL_ORDERS = 1000
# Bybit pushes every linear ticker every 100 ms, changed or not: a public channel silent this long on the
# exchange's own clock was not sending (a stall), and what it sends next is coalesced, topic by topic.
STALL_MS = 3000
FINAL_ORDER_MS = 10 * 60_000
# Coins whose USD value the wallet push may be taken to hold between pushes (the settle coins).
STABLE_COINS = frozenset({"USDT", "USDC"})


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(stamp: int | None) -> datetime:
    return datetime.fromtimestamp((stamp or 0) / 1000, tz=UTC)


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
    unreadable: int = 0  # messages that could not be read on this connection
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
    # The equities the wallet pushed (and resyncs read) since the drawdown last took them: the highest and
    # the newest (pilot.app.facts.peaks).
    equity_seen: tuple[Decimal, Decimal] | None = None

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
        if isinstance(event, Unreadable):
            self._unreadable(channel, event)
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

    def _unreadable(self, channel: Channel, event: Unreadable) -> None:
        """A message was lost to an unreadable form: what it fed is read again, and the stream stays on.
        Private: the account is read over REST again (and confirmed with a ping), as after a reconnection;
        public: the market it named is forgotten until its next update (every market, when none is named)."""
        channel.unreadable += 1
        if event.channel == PRIVATE:
            if channel.sync in (Sync.IN_SYNC, Sync.CONFIRMING):
                channel.sync = Sync.WANTED
            elif channel.sync is Sync.READING:
                channel.dirty = True
            return
        symbol = event.topic.rpartition(".")[2] if event.topic != "other" else None
        for store in (self.books, self.marks, self.bands):
            for key in [k for k in store if k[0] == event.channel and symbol in (None, k[1])]:
                del store[key]

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
            self._saw_equity(event.balance.total_equity_usd)
            if self.wallet_behind is not None and self.wallet_behind <= event.exchange_ms:
                self.wallet_behind = None

    def _saw_equity(self, equity: Decimal) -> None:
        highest = self.equity_seen[0] if self.equity_seen is not None else equity
        self.equity_seen = (max(highest, equity), equity)

    def take_equity(self) -> tuple[Decimal, Decimal] | None:
        """The highest and the newest equity seen since the last take (None: none), and forget them."""
        seen, self.equity_seen = self.equity_seen, None
        return seen

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
        self._saw_equity(read.balance.total_equity_usd)
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
        return Touch(bid=bid, ask=ask, mark=mark, observed_at=from_ms(alive))

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
            observed_at=from_ms(alive),
        )

    def position(self, symbol: str, now_ms: int, max_age_ms: int) -> Position | None:
        if not self.usable(PRIVATE, now_ms, max_age_ms) or symbol in self.hedged:
            return None
        if symbol in self.position_behind:
            return None
        return self.positions.get(symbol)

    def account_balance(self, now_ms: int, max_age_ms: int) -> AccountBalance | None:
        """The pushed balance, while nothing in it moves with prices. Bybit pushes the wallet when its balances
        change, not when only the unrealised PnL does (websocket/private/wallet.mdx), so with a position
        open, or a coin whose value follows a market, its equity and available balance go stale between
        pushes: REST then."""
        if self.wallet_behind is not None or not self.usable(PRIVATE, now_ms, max_age_ms):
            return None
        if self.balance is None or any(p.size != 0 for p in self.positions.values()) or self.hedged:
            return None
        if any(c.coin not in STABLE_COINS and c.wallet_balance != 0 for c in self.balance.coins):
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
