"""OKX's v5 WebSocket streams as Pilot's stream events (pilot.exchange.stream_events), over websocket-client.

What is subscribed (docs-v5 "WebSocket", the channel pages; ccxt.pro's okx.py for which path serves which):

* public, one connection per category (``/ws/v5/public``): ``books5`` (the top five levels, each push a
  whole snapshot: no sequence to keep), ``price-limit`` (the band OKX rejects orders outside of, 51006) and,
  on a perpetual, ``mark-price``. Spot's mark is the mid, as over REST.
* private, after OKX's login (op ``login``: apiKey, passphrase, timestamp in seconds, sign =
  base64(HMAC-SHA256(secret, timestamp + "GET" + "/users/self/verify"))): ``orders`` and ``positions`` and
  ``account`` on ``/ws/v5/private``; ``orders-algo`` (the TP/SL and trigger orders) on ``/ws/v5/business``,
  where OKX serves it. Both connections are Pilot's one private channel: it is connected again whenever
  either opens again (its facts are read over REST anew), subscribed once both acknowledged every
  subscription since, and a ping is confirmed only once both answered it.

Where it connects: OKX demo trading's wss://wspap.okx.com:8443 (okx-demo), OKX's real account's WebSocket host
of the REST host its key is on (okx, LIVE_STREAM_BASES: a live home's, with --streams), or a stand-in on loopback
(ws://127.0.0.1:PORT): named by the caller, or by the stand-in itself at GET /pilot/streams on its REST side
(`discover_stand_in`, as a `pilot sim` names its own). Nothing else.

Heartbeats: OKX answers the text frame ``ping`` with ``pong`` and closes a connection that heard nothing for
30 s. `ping()` (the hub calls it every 100 ms) sends it on every connection; a connection that heard nothing
for SILENT_SECONDS is ended and opened again. OKX's pong carries no time: the private channel's `Alive` is
stamped with this machine's clock at its arrival (the cache takes the older of that and its own clock).

The connections live by every venue's rules (pilot.exchange.stream_sockets): one thread per connection
opens it again whenever it ends (at once after a healthy one, else after a pause doubling up to
RECONNECT_MAX_SECONDS) until `close()`, which returns within CLOSE_SECONDS. A refused login is said as
`Refused` with OKX's code (`login_refused` keeps it), and the connection is ended and tried again later.

Sizes come in contracts: `contract(inst_id)` (the adapter's, read with the instruments' rules) turns them into
coins. A row of an instrument that is no market of Pilot's, or whose contract is not known yet, is left out
(the REST resynchronisation reads every open order and position, and learns their contracts).
OKX's free text (``msg``) is never read; a code is kept only when it is digits.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import logging
import socket as sockets
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import InvalidOperation
from typing import Any
from urllib.parse import urlsplit

import websocket

from pilot.core.facts import Position
from pilot.exchange.models import ExchangeOrder
from pilot.exchange.okx import payloads as wire_
from pilot.exchange.okx.client import Keys
from pilot.exchange.okx.markets import SPOT_UNIT, Contract, inst_id, inst_type, named
from pilot.exchange.okx.urls import DEMO, LIVE, LOOPBACK_HOSTS, is_loopback_base
from pilot.exchange.stream_events import (
    PRIVATE,
    Alive,
    BandUpdate,
    BookUpdate,
    Connected,
    OrderUpdate,
    PositionUpdate,
    Refused,
    StreamEvent,
    Subscribed,
    TickerUpdate,
    Unreadable,
    WalletUpdate,
)
from pilot.exchange.stream_sockets import (
    CONNECT_TIMEOUT_SECONDS,
    FIRST_OPEN_SECONDS,
    close_all,
    keep_connecting,
)

STREAM_BASES = {DEMO: "wss://wspap.okx.com:8443"}  # docs-v5 "Demo trading services"
# OKX's real account: the WebSocket host of each REST host a live key may name (urls.LIVE_HOSTS), as OKX's
# API docs list them per site ("Production Trading Services": ws.okx.com, wsus.okx.com for OKX US,
# wseea.okx.com for the EEA platform) and the open-source OKX clients connect (ccxt's myokx, okx-api's
# WS_BASE_URL_MAP, NautilusTrader's OKX urls). A key works on its own site's hosts only.
LIVE_STREAM_BASES = {
    "www.okx.com": "wss://ws.okx.com:8443",
    "us.okx.com": "wss://wsus.okx.com:8443",
    "eea.okx.com": "wss://wseea.okx.com:8443",
}
PUBLIC_PATH, PRIVATE_PATH, BUSINESS_PATH = "/ws/v5/public", "/ws/v5/private", "/ws/v5/business"
BUSINESS = "business"  # the private channel's second connection (orders-algo)
PUBLIC_CHANNELS = ("linear", "spot")
PRIVATE_ARGS = (
    {"channel": "orders", "instType": "ANY"},
    {"channel": "positions", "instType": "SWAP"},
    {"channel": "account"},
)
BUSINESS_ARGS = ({"channel": "orders-algo", "instType": "ANY"},)
VERIFY = "GET/users/self/verify"  # what a login signs after its timestamp
ATTACHED_WAIT_SECONDS = 1.0  # the longest a fill waits for the stop OKX places for it (see _orders)
DONE = frozenset({"Filled", "Cancelled"})  # an order whose attached TP/SL OKX now places for what filled
DISCOVERY_PATH = "/pilot/streams"  # Pilot's own path (not OKX's): where a stand-in's WebSocket side listens
DISCOVERY_SECONDS = 2.0
SILENT_SECONDS = 25.0  # OKX closes a connection silent for 30 s; one that heard nothing this long is renewed
Sink = Callable[[StreamEvent], None]
Clock = Callable[[], datetime]
ContractOf = Callable[[str], Contract | None]


def stream_base(environment: str, loopback_url: str | None = None, rest_host: str | None = None) -> str:
    """The WebSocket base (scheme, host, port) to connect to: a stand-in's on loopback, OKX demo's, or for
    OKX's real account the one of the REST host the key is on (`rest_host`). Raises ValueError for anything
    off the list."""
    if loopback_url is not None:
        parts = urlsplit(loopback_url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "ws" or parts.hostname not in LOOPBACK_HOSTS or port is None:
            raise ValueError(f"Refusing stream URL {loopback_url!r}: a stand-in is ws://127.0.0.1:PORT.")
        return loopback_url.rstrip("/")
    if environment == LIVE:
        if rest_host not in LIVE_STREAM_BASES:
            raise ValueError(
                f"No OKX streams for the host {rest_host!r}: one of {', '.join(LIVE_STREAM_BASES)}."
            )
        return LIVE_STREAM_BASES[rest_host]
    if environment not in STREAM_BASES:
        raise ValueError(f"No OKX streams for environment {environment!r}.")
    return STREAM_BASES[environment]


def _silence_websocket_logging() -> None:
    """websocket-client logs failures with the URL and what was sent (a login): none of it may reach a log."""
    logger = logging.getLogger("websocket")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)


def _abort(app: websocket.WebSocketApp) -> None:
    """End a connection now, wherever it is: shut its TCP socket down, which wakes whatever waits on it."""
    app.keep_running = False
    client = app.sock
    raw = client.sock if client is not None else None
    if raw is not None:
        with contextlib.suppress(OSError):
            raw.shutdown(sockets.SHUT_RDWR)


class _Socket:
    """One connection, opened again by its own thread whenever it ends, until `stop()`. `opened` is told of
    every open before anything is read on it, `deliver` gets every message, `lost` the end of every
    connection that opened (after its last message; not after stop())."""

    def __init__(
        self,
        url: str,
        name: str,
        deliver: Callable[[str | bytes], None],
        opened: Callable[[], None],
        lost: Callable[[], None],
    ) -> None:
        self.url, self.name = url, name
        self._deliver, self._opened, self._lost = deliver, opened, lost
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._first_open = threading.Event()
        self._app: websocket.WebSocketApp | None = None
        self._live: websocket.WebSocketApp | None = None
        self._thread = threading.Thread(target=self._run, name=f"pilot-okx-{name}", daemon=True)
        self.heard = 0.0  # monotonic time of the latest message (or the open)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        keep_connecting(self._attempt, self._closed)

    def _attempt(self) -> float | None:
        """One connection from its handshake to its end; when it opened (monotonic), or None."""
        opened: list[float] = []

        def on_open(app: websocket.WebSocketApp) -> None:
            with self._lock:
                if self._closed.is_set():
                    _abort(app)
                    return
                opened.append(time.monotonic())
                self.heard = opened[0]
                self._live = app
            self._opened()
            self._first_open.set()

        def on_message(_: websocket.WebSocketApp, text: str | bytes) -> None:
            self.heard = time.monotonic()
            self._deliver(text)

        app = websocket.WebSocketApp(self.url, on_open=on_open, on_message=on_message)
        with self._lock:
            if self._closed.is_set():
                return None
            self._app = app
        watchdog = threading.Timer(CONNECT_TIMEOUT_SECONDS, lambda: None if opened else _abort(app))
        watchdog.daemon = True
        watchdog.start()
        try:
            app.run_forever(skip_utf8_validation=True)  # bytes: json.loads checks UTF-8 as it reads
        finally:
            watchdog.cancel()
            with self._lock:
                if self._live is app:
                    self._live = None
            if app.sock is not None:
                app.sock.shutdown()  # type: ignore[no-untyped-call]  # websocket-client leaves it untyped
        if opened and not self._closed.is_set():
            self._lost()
        return opened[0] if opened else None

    def send(self, text: str) -> bool:
        """Send on the open connection; False when there is none (or it failed as it closed)."""
        live = self._live
        if live is None:
            return False
        try:
            live.send(text)
        except (websocket.WebSocketException, OSError):
            return False
        return True

    def end(self) -> None:
        """End the open connection (it is opened again after the usual pause)."""
        live = self._live
        if live is not None:
            _abort(live)

    def renew_if_silent(self) -> None:
        if self._live is not None and time.monotonic() - self.heard > SILENT_SECONDS:
            self.end()

    def wait_open(self, timeout_s: float) -> bool:
        return self._first_open.wait(timeout_s)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop connecting and end the connection now, without waiting for the thread (see join)."""
        with self._lock:
            self._closed.set()
            self._live = None
            app = self._app
        if app is not None:
            _abort(app)

    def join(self, deadline: float) -> None:
        while self._thread.is_alive() and time.monotonic() < deadline:
            with self._lock:
                app = self._app
            if app is not None:
                _abort(app)
            self._thread.join(min(0.05, max(deadline - time.monotonic(), 0)))


def discover_stand_in(rest_url: str, timeout_s: float = DISCOVERY_SECONDS, *, demo: bool = True) -> str:
    """The WebSocket base that the stand-in for OKX at `rest_url` (http://127.0.0.1:PORT) names at GET
    /pilot/streams, in OKX's envelope (code "0", data [{"url"}]), checked like every stream URL; asked with
    the demo header when it stands in for OKX demo (`demo`), as every request there is. Blocking.

    Raises:
        ValueError: it is not on loopback, did not answer so, or named a URL off loopback; its text is never
            repeated.
    """
    if not is_loopback_base(rest_url):
        raise ValueError("only a stand-in for OKX on loopback names its streams")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    headers = {"x-simulated-trading": "1"} if demo else {}  # okx-demo's header, on every request it sends
    asked = urllib.request.Request(rest_url.rstrip("/") + DISCOVERY_PATH, headers=headers)
    try:
        with opener.open(asked, timeout=timeout_s) as answer:
            body = json.loads(answer.read(64 * 1024))
    except (OSError, ValueError, http.client.HTTPException):  # urllib's errors are OSErrors
        raise ValueError(f"the stand-in at {rest_url} does not answer GET {DISCOVERY_PATH}") from None
    data = body.get("data") if isinstance(body, dict) and body.get("code") == "0" else None
    url = data[0].get("url") if isinstance(data, list) and data and isinstance(data[0], dict) else None
    if not isinstance(url, str):
        raise ValueError(f"the stand-in at {rest_url} names no stream URL at {DISCOVERY_PATH}")
    try:
        return stream_base(DEMO, url)
    except ValueError:
        raise ValueError(f"the stand-in at {rest_url} names a stream URL off loopback (refused)") from None


@dataclass
class _Link:
    """What one connection has done since it last opened."""

    open: bool = False
    logged_in: bool = False
    acked: int = 0
    pings: deque[int] = field(default_factory=deque)  # ping ids sent and not answered yet, oldest first
    ponged: int = 0  # the latest ping id answered
    refused: str | None = None  # why OKX refused its login, if it did


class OkxStreams:
    """The public (per category) and private streams of one OKX account, as events given to `sink`.

    Build, then `start()` (blocking: run it in a thread); `ping()` and `close()` are safe from any thread.
    """

    def __init__(
        self,
        environment: str,
        *,
        keys: Keys,
        markets: Mapping[str, Iterable[str]],
        sink: Sink,
        contract: ContractOf,
        clock: Clock,
        loopback_url: str | None = None,
        rest_host: str | None = None,
    ) -> None:
        self.base = stream_base(environment, loopback_url, rest_host)
        self.environment = environment
        self._keys, self._sink, self._contract, self._clock = keys, sink, contract, clock
        self.markets = {c: tuple(s) for c, s in markets.items() if c in PUBLIC_CHANNELS and s}
        self.subscriptions: dict[str, tuple[dict[str, str], ...]] = {
            PRIVATE: PRIVATE_ARGS,
            BUSINESS: BUSINESS_ARGS,
        }
        for category, symbols in self.markets.items():
            kinds = (
                ("books5", "price-limit", "mark-price") if category == "linear" else ("books5", "price-limit")
            )
            insts = [i for i in (inst_id(category, s) for s in symbols) if i is not None]
            self.subscriptions[category] = tuple({"channel": k, "instId": i} for i in insts for k in kinds)
        self._sockets: dict[str, _Socket] = {}
        self._links: dict[str, _Link] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._confirmed = 0  # the latest ping both private connections answered
        self.login_refused: str | None = None  # OKX's code for the latest login it refused
        self._held: list[tuple[str, float, OrderUpdate]] = []  # fills awaiting their attached stop (_orders)

    def __repr__(self) -> str:
        return f"OkxStreams(environment={self.environment!r}, base={self.base!r})"

    def start(self, wait_s: float = FIRST_OPEN_SECONDS) -> bool:
        """Open every connection; True when each opened within `wait_s` (blocking). Each keeps connecting in
        the background until `close()`: facts are judged on only once a channel is in sync."""
        _silence_websocket_logging()
        paths = {category: PUBLIC_PATH for category in self.markets}
        paths |= {PRIVATE: PRIVATE_PATH, BUSINESS: BUSINESS_PATH}
        for name, path in paths.items():
            self._sockets[name] = self._socket(name, self.base + path)
        for socket in self._sockets.values():
            socket.start()
        deadline = time.monotonic() + wait_s
        return all(s.wait_open(max(deadline - time.monotonic(), 0)) for s in self._sockets.values())

    def _socket(self, name: str, url: str) -> _Socket:
        def deliver(text: str | bytes) -> None:
            self.receive(name, text)

        def opened() -> None:
            self.opened(name)

        def lost() -> None:
            self.lost(name)

        return _Socket(url, name, deliver, opened, lost)

    @staticmethod
    def channel(name: str) -> str:
        """Pilot's channel of a connection: its category, or the private channel (both private ones)."""
        return PRIVATE if name == BUSINESS else name

    def opened(self, name: str) -> None:
        """A connection opened: say so, then log in (private) or subscribe (public)."""
        with self._lock:
            self._links[name] = _Link(open=True)
        self._sink(Connected(self.channel(name)))
        if self.channel(name) == PRIVATE:
            self._send(name, json.dumps({"op": "login", "args": [self._login()]}))
        else:
            self._subscribe(name)

    def _login(self) -> dict[str, str]:
        stamp = str(int(self._clock().timestamp()))
        sign = self._keys.sign(stamp + VERIFY)
        return {
            "apiKey": self._keys.api_key,
            "passphrase": self._keys.passphrase,
            "timestamp": stamp,
            "sign": sign,
        }

    def _subscribe(self, name: str) -> None:
        args = list(self.subscriptions.get(name, ()))
        if args:
            self._send(name, json.dumps({"op": "subscribe", "args": args}))

    def _send(self, name: str, text: str) -> bool:
        socket = self._sockets.get(name)
        return socket is not None and socket.send(text)

    def lost(self, name: str) -> None:
        """A connection ended: why (a login OKX refused ends it too, and that is what is said again)."""
        with self._lock:
            why = self._links.get(name, _Link()).refused or "the connection ended"
            self._links[name] = _Link()
        self._sink(Refused(self.channel(name), why))

    def ping(self) -> int:
        """Send OKX's ping on every connection; its id (rising). The private channel's `Alive` carries it once
        both private connections answered it."""
        req_id = next(self._ids)
        for name, socket in list(self._sockets.items()):
            socket.renew_if_silent()
            with self._lock:  # noted before it leaves: its pong may come back before send() returns
                link = self._links.setdefault(name, _Link())
                link.pings.append(req_id)
            if not socket.send("ping"):  # sent outside the lock: a slow socket holds up no other connection
                with self._lock, contextlib.suppress(ValueError):
                    link.pings.remove(req_id)
        return req_id

    def close(self) -> None:
        """Close every connection for good: returns within CLOSE_SECONDS, and nothing connects after it."""
        close_all(self._sockets.values())

    def running(self) -> list[str]:
        return [name for name, socket in self._sockets.items() if socket.alive()]

    # ---- messages ---------------------------------------------------------------------------------

    def receive(self, name: str, text: str | bytes) -> None:
        """One message from connection `name` (tests may call it with recorded or built messages); bytes
        are read as UTF-8 JSON (json.loads refuses invalid UTF-8)."""
        message: Any = None
        try:
            if text in ("pong", b"pong"):
                events = self._pong(name)
            else:
                message = json.loads(text)
                events = self._events(name, message)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, InvalidOperation):
            events = [self._unreadable(name, message)]
        for event in events:
            self._sink(event)

    def _pong(self, name: str) -> list[StreamEvent]:
        with self._lock:
            link = self._links.setdefault(name, _Link())
            if not link.pings:
                return []
            link.ponged = link.pings.popleft()
            if self.channel(name) != PRIVATE:
                return []
            pair = (self._links.get(PRIVATE), self._links.get(BUSINESS))
            if not all(other is not None and other.open for other in pair):
                return []
            confirmed = min(other.ponged for other in pair if other is not None)
            if confirmed <= self._confirmed:
                return []
            self._confirmed = confirmed
        return [*self._release(), Alive(PRIVATE, int(time.time() * 1000), str(confirmed))]

    def _events(self, name: str, message: dict[str, Any]) -> list[StreamEvent]:
        channel = self.channel(name)
        event = message.get("event")
        if event == "login":
            if _code(message) == "0":
                with self._lock:
                    self._links.setdefault(name, _Link()).logged_in = True
                self._subscribe(name)
                return []
            return self._login_refused(name, message)
        if event == "error":
            link = self._links.get(name)
            if channel == PRIVATE and (link is None or not link.logged_in):
                return self._login_refused(name, message)
            return [Refused(channel, f"a subscription was refused: OKX code {_code(message)}")]
        if event == "subscribe":
            return [Subscribed(channel)] if self._acknowledged(name) else []
        if event is not None:  # notice, channel-conn-count, unsubscribe: nothing a fact depends on
            return []
        arg, data = message["arg"], message["data"]
        if channel == PRIVATE:
            return self._private(str(arg["channel"]), data)
        return self._public(channel, arg, data)

    def _acknowledged(self, name: str) -> bool:
        """Count an acknowledgement; whether the channel now misses nothing (both private connections)."""
        with self._lock:
            link = self._links.setdefault(name, _Link())
            link.acked += 1
            names = (PRIVATE, BUSINESS) if self.channel(name) == PRIVATE else (name,)
            return all(
                (other := self._links.get(n)) is not None
                and other.open
                and other.acked == len(self.subscriptions[n])
                for n in names
            )

    def _login_refused(self, name: str, message: dict[str, Any]) -> list[StreamEvent]:
        """OKX refused the login (a wrong key, passphrase or signature, a stale timestamp): say so with its
        code and end the connection; it is tried again after the usual pause."""
        self.login_refused = _code(message)
        why = f"OKX refused the login: code {self.login_refused}"
        with self._lock:
            self._links.setdefault(name, _Link()).refused = why
        socket = self._sockets.get(name)
        if socket is not None:
            socket.end()
        return [Refused(PRIVATE, why)]

    def _unreadable(self, name: str, message: Any) -> Unreadable:
        """A message that could not be read, named by the topic it fed when it is one subscribed to
        (a public one as "books5.BTC-USDT": the cache forgets that market), else "other"."""
        channel = self.channel(name)
        arg = message.get("arg") if isinstance(message, dict) else None
        if not isinstance(arg, dict) or arg not in self.subscriptions.get(name, ()):
            return Unreadable(channel, "other")
        if channel == PRIVATE:
            return Unreadable(channel, str(arg["channel"]))
        market = named(inst_type(channel), str(arg.get("instId")))
        return Unreadable(channel, f"{arg['channel']}.{market.symbol}" if market else "other")

    def _public(self, channel: str, arg: dict[str, Any], data: list[dict[str, Any]]) -> list[StreamEvent]:
        market = named(inst_type(channel), str(arg["instId"]))
        if market is None or not data:
            return []
        row, kind, symbol = data[0], arg["channel"], market.symbol
        ts = int(row["ts"])
        if kind == "books5":
            bid = max((wire_.dec(level[0]) for level in row.get("bids") or []), default=None)
            ask = min((wire_.dec(level[0]) for level in row.get("asks") or []), default=None)
            return [BookUpdate(channel, symbol, bid, ask, ts), Alive(channel, ts)]
        if kind == "mark-price":
            return [TickerUpdate(channel, symbol, wire_.dec(row["markPx"]), ts), Alive(channel, ts)]
        if kind == "price-limit":
            if str(row.get("enabled", "true")).lower() == "false":
                return [Alive(channel, ts)]  # no band now: it is read over REST
            band = BandUpdate(channel, symbol, wire_.dec(row["buyLmt"]), wire_.dec(row["sellLmt"]), ts)
            return [band, Alive(channel, ts)]
        return []

    def _private(self, kind: str, data: list[dict[str, Any]]) -> list[StreamEvent]:
        stamp = max((int(r.get("uTime") or r.get("pTime") or r.get("cTime") or 0) for r in data), default=0)
        if kind == "orders":
            return self._orders(data, stamp)
        if kind == "orders-algo":
            orders = tuple(wire_.algo_order(m, row, unit) for m, row, unit in self._rows(data))
            pushed = [OrderUpdate(orders, stamp)] if orders else []
            return pushed + self._release({str(row.get("instId")) for row in data})
        if kind == "positions":
            return [self._positions(data)]
        if kind == "account" and data:
            return [WalletUpdate(wire_.account_balance(data[0]), stamp)]
        return []

    def _orders(self, data: list[dict[str, Any]], stamp: int) -> list[StreamEvent]:
        """The orders pushed; an order done with a fill and a TP/SL attached waits for the algo order OKX
        places for what filled (on the other connection) or ATTACHED_WAIT_SECONDS: until then its fill is
        not told, so nothing reads the market's open orders as having no stop while that push is on its way."""
        now: list[tuple[str, ExchangeOrder]] = []
        waiting: list[tuple[str, ExchangeOrder]] = []
        told: list[StreamEvent] = []
        for market, row, unit in self._rows(data):
            order = wire_.exchange_order(market, row, unit)
            awaits = row.get("attachAlgoOrds") and order.cum_exec_qty > 0 and order.status in DONE
            (waiting if awaits else now).append((str(row.get("instId")), order))
        if now:
            told.append(OrderUpdate(tuple(order for _, order in now), stamp))
        with self._lock:
            until = time.monotonic() + ATTACHED_WAIT_SECONDS
            self._held += [(inst, until, OrderUpdate((order,), stamp)) for inst, order in waiting]
        return told

    def _release(self, insts: set[str] | None = None) -> list[StreamEvent]:
        """The fills held for their attached stop: those of `insts`, or (None) those held long enough."""
        with self._lock:
            now = time.monotonic()
            due = [h for h in self._held if (h[0] in insts if insts is not None else h[1] <= now)]
            self._held = [h for h in self._held if h not in due]
        return [update for _, _, update in due]

    def _rows(self, data: list[dict[str, Any]]) -> list[tuple[Any, dict[str, Any], Contract]]:
        """The rows of Pilot's markets whose contract is known, each with its name and contract."""
        found = []
        for row in data:
            inst = str(row.get("instId") or "")
            market = named(str(row.get("instType") or ""), inst)
            unit = SPOT_UNIT if market is not None and market.category == "spot" else self._contract(inst)
            if market is not None and unit is not None:
                found.append((market, row, unit))
        return found

    def _positions(self, data: list[dict[str, Any]]) -> PositionUpdate:
        """Net positions of linear perpetuals; a market pushed with a long or short leg is `hedged`."""
        stamp = max((int(r.get("pTime") or r.get("uTime") or 0) for r in data), default=0)
        rows = [(m, r, u) for m, r, u in self._rows(data) if m.category == "linear"]
        hedged = {m.symbol for m, r, _ in rows if str(r.get("posSide")) in ("long", "short")}
        positions = []
        for market, row, unit in rows:
            if market.symbol not in hedged:
                found = wire_.exchange_position(market, row, unit)
                positions.append(
                    Position(
                        market.symbol,
                        found.size,
                        found.entry_price,
                        found.leverage,
                        stop_loss=found.stop_loss,
                    )
                )
        return PositionUpdate(tuple(positions), tuple(sorted(hedged)), stamp)


def _code(message: dict[str, Any]) -> str:
    """OKX's code in a message, when it is digits (never its text)."""
    code = str(message.get("code", ""))
    return code if code.isdigit() and len(code) <= 8 else "?"


__all__ = ["LIVE_STREAM_BASES", "STREAM_BASES", "OkxStreams", "stream_base"]
