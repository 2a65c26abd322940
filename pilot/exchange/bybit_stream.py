"""Bybit V5 WebSocket streams through pybit's WebSocket client: the only other module that imports pybit.

It is apart from pilot.exchange.bybit (REST) because the two share nothing but the parsers of
pilot.exchange.bybit_wire; the architecture test allows pybit in both, and nowhere else.

Where it connects (STREAM_URLS): bybit-testnet's streams; bybit-demo's private stream with public market
data from wss://stream.bybit.com (demo.mdx: the demo host serves private streams only, its public data is
mainnet's); the paper exchange's ws://127.0.0.1:PORT. No other URL.

Pointing pybit at a URL of our choice. pybit 5.17's ``WebSocket`` builds its URL from a hard-coded
``wss://{SUBDOMAIN}.{DOMAIN}.{TLD}`` template inside ``_connect``; nothing public takes a URL. So
``_PybitSocket`` is a documented subclass that overrides three of its hooks (pybit is pinned to 5.17.x in
pyproject.toml, and tests/exchange/test_streams.py runs these hooks against the paper exchange):

* ``_connect(url)`` connects to our URL instead (pybit reconnects through the same method, so a reconnect
  goes to the same place);
* ``_on_message(text)`` hands every message to us, pongs included (pybit drops pongs, and its own delta
  handling breaks on an out-of-order book delta), so books and sequences are kept here;
* ``_on_open()`` tells us a connection (first or again) is open, so nothing on it is trusted until the
  facts are read again.

pybit reconnects after a reset connection (``_on_error``), authenticating and resubscribing to what it
subscribed. Every message is turned into a pilot.exchange.stream_events event and given to `sink`, on
pybit's thread; a message that cannot be read becomes ``Refused`` (the channel is not trusted). Private
channel heartbeats: `ping()` sends Bybit's ``{"op": "ping"}``, whose pong carries the exchange's time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from pybit.unified_trading import WebSocket

from pilot.exchange import bybit_wire as wire_
from pilot.exchange.bybit_urls import LOOPBACK_HOSTS
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

STREAM_URLS = {
    "bybit-demo": ("wss://stream.bybit.com", "wss://stream-demo.bybit.com"),
    "bybit-testnet": ("wss://stream-testnet.bybit.com", "wss://stream-testnet.bybit.com"),
}
PUBLIC_CHANNELS = ("linear", "spot")
PRIVATE_TOPICS = ("order", "execution", "position", "wallet")
BOOK_DEPTH = 50
Sink = Callable[[StreamEvent], None]


def stream_urls(environment: str, paper_ws_url: str | None = None) -> tuple[str, str]:
    """(public base, private base) for an environment. Raises ValueError for anything off the list."""
    if environment == "paper":
        parts = urlsplit(paper_ws_url or "")
        if parts.scheme != "ws" or parts.hostname not in LOOPBACK_HOSTS or parts.port is None or parts.path:
            raise ValueError(
                f"Refusing stream URL {paper_ws_url!r}: the paper exchange's is ws://127.0.0.1:PORT."
            )
        base = (paper_ws_url or "").rstrip("/")
        return base, base
    if environment not in STREAM_URLS:
        raise ValueError(f"No streams for environment {environment!r} (mainnet is not supported).")
    return STREAM_URLS[environment]


def _silence_pybit_websocket_logging() -> None:
    """pybit logs connection errors with the URL and its messages; nothing of it may reach our logs."""
    for name in ("pybit._websocket_stream", "websocket"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
        logger.setLevel(logging.CRITICAL + 1)


class _PybitSocket(WebSocket):
    """pybit's V5 WebSocket connected to `url`, every message handed to `deliver` (see the module doc)."""

    def __init__(
        self,
        url: str,
        channel_type: str,
        deliver: Callable[[str], None],
        opened: Callable[[], None],
        **kwargs: Any,
    ) -> None:
        self._pilot_url = url
        self._pilot_deliver = deliver
        self._pilot_opened = opened
        super().__init__(channel_type, **kwargs)

    def _connect(self, url: str) -> None:
        super()._connect(self._pilot_url)

    def _on_message(self, message: str) -> None:
        self._pilot_deliver(message)

    def _on_open(self) -> None:
        self._pilot_opened()


class _Book:
    def __init__(self) -> None:
        self.bids: dict[str, str] = {}
        self.asks: dict[str, str] = {}
        self.u: int | None = None

    def snapshot(self, data: dict[str, Any]) -> None:
        self.bids = {p: s for p, s in data.get("b") or []}
        self.asks = {p: s for p, s in data.get("a") or []}
        self.u = int(data["u"])

    def delta(self, data: dict[str, Any]) -> bool:
        """Apply a delta; False (and the book forgotten) when it does not follow the last one."""
        u = int(data["u"])
        if self.u is None or u != self.u + 1:
            self.u = None
            return False
        for side, levels in (("b", self.bids), ("a", self.asks)):
            for price, size in data.get(side) or []:
                if Decimal(size) == 0:
                    levels.pop(price, None)
                else:
                    levels[price] = size
        self.u = u
        return True

    def top(self) -> tuple[Decimal | None, Decimal | None]:
        bid = max((Decimal(p) for p in self.bids), default=None)
        ask = min((Decimal(p) for p in self.asks), default=None)
        return bid, ask


class BybitStreams:
    """The public (per category) and private streams of one account, as events given to `sink`.

    `markets` maps a category ("linear", "spot") to its symbols: each gets tickers, an order book of
    BOOK_DEPTH levels and its price band (priceLimit). Build, then `start()` (blocking: run it in a
    thread); `ping()` and `close()` are safe from any thread.
    """

    def __init__(
        self,
        environment: str,
        *,
        api_key: str,
        api_secret: str,
        markets: Mapping[str, Iterable[str]],
        sink: Sink,
        paper_ws_url: str | None = None,
    ) -> None:
        self.public_base, self.private_base = stream_urls(environment, paper_ws_url)
        self.environment = environment
        self._key = api_key
        self._secret = api_secret
        self.markets = {c: tuple(s) for c, s in markets.items() if c in PUBLIC_CHANNELS and s}
        self._sink = sink
        self._sockets: dict[str, _PybitSocket] = {}
        self._books: dict[tuple[str, str], _Book] = {}
        self._tickers: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # The subscribe requests per channel (Bybit takes at most 10 args in one; pybit sends one request per
        # private topic): a channel misses nothing once as many acknowledgements have come back.
        self.subscriptions: dict[str, list[tuple[str, ...]]] = {PRIVATE: [(t,) for t in PRIVATE_TOPICS]}
        for category, symbols in self.markets.items():
            topics = [f"tickers.{s}" for s in symbols] + [f"orderbook.{BOOK_DEPTH}.{s}" for s in symbols]
            topics += [f"priceLimit.{s}" for s in symbols]
            self.subscriptions[category] = [tuple(topics[i : i + 10]) for i in range(0, len(topics), 10)]
        self._acked: dict[str, int] = {}  # acknowledged since the connection opened

    def __repr__(self) -> str:
        return f"BybitStreams(environment={self.environment!r}, public={self.public_base!r})"

    def start(self) -> None:
        """Connect, authenticate and subscribe every channel (blocks until each connection is open)."""
        _silence_pybit_websocket_logging()
        for category, chunks in self.subscriptions.items():
            if category == PRIVATE:
                continue
            socket = self._open(category, f"{self.public_base}/v5/public/{category}")
            for chunk in chunks:
                socket.subscribe("{symbol}", lambda _: None, symbol=list(chunk))
        socket = self._open(PRIVATE, f"{self.private_base}/v5/private")
        for (topic,) in self.subscriptions[PRIVATE]:
            socket.subscribe(topic, lambda _: None)

    def _open(self, channel: str, url: str) -> _PybitSocket:
        private = channel == PRIVATE
        socket = _PybitSocket(
            url,
            "private" if private else channel,
            lambda text: self.receive(channel, text),
            lambda: self.opened(channel),
            testnet=False,
            api_key=self._key if private else None,
            api_secret=self._secret if private else None,
            ping_interval=20,
            ping_timeout=10,
            retries=3,
        )
        self._sockets[channel] = socket
        return socket

    def opened(self, channel: str) -> None:
        """A connection opened (pybit calls it; tests may too): forget its books, say so to the sink."""
        with self._lock:
            for key in [k for k in self._books if k[0] == channel]:
                del self._books[key]
            for key in [k for k in self._tickers if k[0] == channel]:
                del self._tickers[key]
            self._acked[channel] = 0
        self._sink(Connected(channel))

    def ping(self) -> int:
        """Send Bybit's ping on every channel and return its req_id (rising); the private pong comes back
        as an `Alive` event carrying it."""
        req_id = next(self._ids)
        for socket in list(self._sockets.values()):
            with contextlib.suppress(Exception):
                if socket.is_connected():
                    socket.ws.send(json.dumps({"op": "ping", "req_id": str(req_id)}))
        return req_id

    def close(self) -> None:
        for socket in list(self._sockets.values()):
            with contextlib.suppress(Exception):
                socket.exit()

    def connected(self, channel: str) -> bool:
        socket = self._sockets.get(channel)
        return bool(socket is not None and socket.is_connected())

    # ---- messages ---------------------------------------------------------------------------------

    def receive(self, channel: str, text: str) -> None:
        """One message as pybit hands it over (tests may call it with recorded or built messages)."""
        try:
            events = self._events(channel, json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, InvalidOperation):
            events = [Refused(channel, "a message could not be read")]
        for event in events:
            self._sink(event)

    def _events(self, channel: str, message: dict[str, Any]) -> list[StreamEvent]:
        op = message.get("op")
        if op in ("auth", "subscribe", "unsubscribe"):
            if message.get("success") is False:
                return [Refused(channel, f"{op} refused")]
            if op == "subscribe" and message.get("req_id"):  # a book's re-subscription has no req_id
                with self._lock:
                    self._acked[channel] = self._acked.get(channel, 0) + 1
                    done = self._acked[channel] == len(self.subscriptions.get(channel, ()))
                return [Subscribed(channel)] if done else []
            return []
        if op == "pong":  # the private channel's pong: args[0] is the exchange's time in ms
            return [Alive(channel, int(message["args"][0]), str(message.get("req_id") or ""))]
        if op == "ping":  # the public channel's pong carries no time
            return []
        topic = str(message.get("topic", ""))
        if channel == PRIVATE:
            return self._private(topic, message)
        return self._public(channel, topic, message)

    def _public(self, channel: str, topic: str, message: dict[str, Any]) -> list[StreamEvent]:
        ts = int(message["ts"])
        data = message["data"]
        kind, _, rest = topic.partition(".")
        if kind == "tickers":
            with self._lock:
                merged = self._tickers.setdefault((channel, rest), {})
                if message.get("type") == "snapshot":
                    merged.clear()
                merged.update(data)
                mark = merged.get("markPrice")
            return [TickerUpdate(channel, rest, wire_.dec(mark) if mark else None, ts), Alive(channel, ts)]
        if kind == "orderbook":
            symbol = rest.partition(".")[2]
            with self._lock:
                book = self._books.setdefault((channel, symbol), _Book())
                if message.get("type") == "snapshot":
                    book.snapshot(data)
                elif not book.delta(data):
                    self._resubscribe(channel, topic)
                    return [BookGap(channel, symbol, ts)]
                bid, ask = book.top()
            return [BookUpdate(channel, symbol, bid, ask, ts), Alive(channel, ts)]
        if kind == "priceLimit":
            return [
                BandUpdate(channel, rest, wire_.dec(data["buyLmt"]), wire_.dec(data["sellLmt"]), ts),
                Alive(channel, ts),
            ]
        return []

    def _resubscribe(self, channel: str, topic: str) -> None:
        """Ask again for a book that lost its sequence: the new subscription starts with a snapshot."""
        socket = self._sockets.get(channel)
        if socket is None:
            return
        with contextlib.suppress(Exception):
            socket.ws.send(json.dumps({"op": "unsubscribe", "args": [topic]}))
            socket.ws.send(json.dumps({"op": "subscribe", "args": [topic]}))

    def _private(self, topic: str, message: dict[str, Any]) -> list[StreamEvent]:
        ts = int(message["creationTime"])
        rows: list[dict[str, Any]] = list(message["data"])
        if topic == "order":
            return [OrderUpdate(tuple(wire_.exchange_order(r["category"], r) for r in rows), ts)]
        if topic == "execution":
            return [ExecutionUpdate(tuple(wire_.execution(r) for r in rows), ts)]
        if topic == "position":
            linear = [r for r in rows if r.get("category", "linear") == "linear"]
            hedged = tuple(sorted({str(r["symbol"]) for r in linear if wire_.position_idx(r) != 0}))
            positions = tuple(wire_.position(r["symbol"], r) for r in linear if r["symbol"] not in hedged)
            return [PositionUpdate(positions, hedged, ts)]
        if topic == "wallet":
            unified = [r for r in rows if r.get("accountType", "UNIFIED") == "UNIFIED"]
            if not unified:
                return []
            return [WalletUpdate(wire_.account_balance({"list": unified}), ts)]
        return []


__all__ = ["STREAM_URLS", "BybitStreams", "stream_urls"]
