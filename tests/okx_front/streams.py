"""The OKX front's WebSocket side: OKX's v5 streams in their wire format on 127.0.0.1, fed by the paper
exchange's own Bybit V5 streams, so that every push follows the orders, fills, positions and prices the front's
REST side carries out.

Its wire, as docs-v5 "WebSocket" and the channel pages show it (and ccxt.pro's okx.py reads it):

* paths ``/ws/v5/public``, ``/ws/v5/private``, ``/ws/v5/business``;
* the text frame ``ping`` answered ``pong`` (on a private path, only once the paper exchange answered a ping
  sent after everything it pushed before: a pong follows every push that came before it, as on one TCP
  stream);
* ``{"op": "login", "args": [{apiKey, passphrase, timestamp, sign}]}``: the timestamp in seconds within 30 s,
  sign = base64(HMAC-SHA256(secret, timestamp + "GET" + "/users/self/verify")); answered
  ``{"event": "login", "code": "0", ...}`` or ``{"event": "error", "code": "600xx", ...}``: 60005 (no such
  key), 60024 (wrong passphrase), 60004 (timestamp not in seconds), 60006 (stale), 60007 (wrong sign);
  `refuse_login` makes it refuse every login with that code;
* ``{"op": "subscribe", "args": [...]}``, each arg acknowledged ``{"event": "subscribe", "arg": ...}``; a private
  channel before login: 60011; an unknown channel or instrument: 60018;
* pushes ``{"arg": {...}, "data": [...]}``: ``books5`` (five levels a side, sizes in contracts), ``mark-price``,
  ``price-limit``; ``orders`` (ordinary orders), ``orders-algo`` (the TP/SL as the REST side lists them: a
  change of a market's stops pushes its algo orders, and one no longer listed as ``canceled``),
  ``positions``, ``account``.

Faults: `drop(path)` resets the connections on a path (all when None); `unavailable` refuses new
connections with HTTP 503 while set.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import itertools
import json
import threading
import time
from decimal import Decimal
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.http11 import Request, Response

from . import rows as okx
from .paper_wire import Market
from .trading import orders_algo_pending

if TYPE_CHECKING:
    from . import OkxFront

PUBLIC, PRIVATE, BUSINESS = "/ws/v5/public", "/ws/v5/private", "/ws/v5/business"
PRIVATE_CHANNELS = {PRIVATE: ("orders", "positions", "account"), BUSINESS: ("orders-algo",)}
PUBLIC_TOPICS = {"books5": "orderbook.50.{}", "mark-price": "tickers.{}", "price-limit": "priceLimit.{}"}
BYBIT_PRIVATE = {"orders": "order", "orders-algo": "order", "positions": "position", "account": "wallet"}
SKEW_SECONDS = 30
Row = dict[str, Any]


class OkxStreamFront:
    """OKX's WebSocket on 127.0.0.1 (an ephemeral port) over the front's paper exchange, until stopped."""

    def __init__(self, front: OkxFront) -> None:
        self.front = front
        self.refuse_login: str | None = None
        self.unavailable = False
        self.logins: list[str] = []  # the code each login was answered with
        self._sessions: set[_Session] = set()
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="okx-front-ws", daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._open())
        self._ready.set()
        self._loop.run_forever()

    async def _open(self) -> None:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._handshake)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def close() -> None:
            for session in list(self._sessions):
                session.abort()
            if self._server is not None:
                self._server.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._server.wait_closed(), 2)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def drop(self, path: str | None = None) -> None:
        """Reset the connections on `path` (every one when None), as a network fault would."""

        def abort() -> None:
            for session in list(self._sessions):
                if path is None or session.path == path:
                    session.abort()

        self._loop.call_soon_threadsafe(abort)

    def connections(self, path: str) -> int:
        return sum(1 for session in list(self._sessions) if session.path == path)

    async def _handshake(self, socket: ServerConnection, request: Request) -> Response | None:
        if self.unavailable:
            return socket.respond(HTTPStatus.SERVICE_UNAVAILABLE, "unavailable\n")
        return None

    async def _serve(self, socket: ServerConnection) -> None:
        path = socket.request.path if socket.request is not None else ""
        if path not in (PUBLIC, PRIVATE, BUSINESS):
            await socket.close(1008, "unknown path")
            return
        session = _Session(self, socket, path)
        self._sessions.add(session)
        try:
            async for raw in socket:
                await session.request(str(raw))
        except ConnectionClosed:
            pass
        except (OSError, WebSocketException):  # the paper exchange's side could not be reached: a reset
            session.abort()
        finally:
            self._sessions.discard(session)
            await session.close()

    def login_answer(self, args: list[Any]) -> str:
        """The code OKX answers a login with ("0": logged in)."""
        if self.refuse_login is not None:
            return self.refuse_login
        try:
            arg = args[0]
            key, passphrase, stamp, sign = arg["apiKey"], arg["passphrase"], arg["timestamp"], arg["sign"]
        except (IndexError, KeyError, TypeError):
            return "60009"
        if key != self.front.api_key:
            return "60005"
        if passphrase != self.front.passphrase:
            return "60024"
        if not str(stamp).isdigit():
            return "60004"
        if abs(time.time() - int(stamp)) > SKEW_SECONDS:
            return "60006"
        digest = hmac.new(
            self.front.api_secret.encode(), f"{stamp}GET/users/self/verify".encode(), hashlib.sha256
        )
        expected = base64.b64encode(digest.digest()).decode()
        return "0" if hmac.compare_digest(expected, str(sign)) else "60007"


class _Session:
    """One OKX connection and the paper exchange's Bybit connection(s) behind it."""

    def __init__(self, streams: OkxStreamFront, socket: ServerConnection, path: str) -> None:
        self.streams, self.socket, self.path = streams, socket, path
        self.front = streams.front
        self.conn_id = f"{id(self) & 0xFFFFFFFF:08x}"
        self.logged_in = False
        self.subscribed: list[Row] = []
        self.upstreams: dict[str, ClientConnection] = {}
        self.readers: list[asyncio.Task[None]] = []
        self.books: dict[str, dict[str, dict[str, str]]] = {}
        self.algos: dict[str, dict[str, Row]] = {}  # market -> algoId -> the row last pushed
        self._ids = itertools.count(1)

    async def send(self, message: Row | str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.socket.send(message if isinstance(message, str) else json.dumps(message))

    def abort(self) -> None:
        transport = self.socket.transport
        if transport is not None:
            transport.abort()

    async def close(self) -> None:
        for task in self.readers:
            task.cancel()
        for upstream in self.upstreams.values():
            with contextlib.suppress(Exception):
                await upstream.close()

    async def request(self, raw: str) -> None:
        if raw == "ping":
            await self.ping()
            return
        try:
            message = json.loads(raw)
            op, args = message.get("op"), list(message.get("args") or [])
        except (ValueError, AttributeError, TypeError):
            await self.error("60012")
            return
        if op == "login":
            await self.login(args)
        elif op == "subscribe":
            for arg in args:
                await self.subscribe(arg)
        else:
            await self.error("60012")

    async def error(self, code: str) -> None:
        await self.send(
            {"event": "error", "code": code, "msg": "refused by the OKX front", "connId": self.conn_id}
        )

    async def ping(self) -> None:
        """A private pong waits for the paper exchange's own: it follows every push sent before it."""
        upstream = self.upstreams.get("private")
        if upstream is None:
            await self.send("pong")
            return
        with contextlib.suppress(ConnectionClosed):
            await upstream.send(json.dumps({"op": "ping", "req_id": str(next(self._ids))}))

    async def login(self, args: list[Any]) -> None:
        code = self.streams.login_answer(args)
        self.streams.logins.append(code)
        if code != "0":
            await self.error(code)
            return
        if self.path != PUBLIC:
            await self._open_private()
        self.logged_in = True
        await self.send({"event": "login", "code": "0", "msg": "", "connId": self.conn_id})

    async def _open_private(self) -> None:
        paper = self.front.paper
        upstream = await connect(paper.ws_url + "/v5/private")
        expires = int(time.time() * 1000) + 600_000
        signature = hmac.new(paper.api_secret.encode(), f"GET/realtime{expires}".encode(), hashlib.sha256)
        await upstream.send(
            json.dumps({"op": "auth", "args": [paper.api_key, expires, signature.hexdigest()]})
        )
        json.loads(await upstream.recv())  # the auth answer: the paper key is the front's own
        self.upstreams["private"] = upstream
        self.readers.append(asyncio.create_task(self._read(upstream, "private")))

    async def subscribe(self, arg: Row) -> None:
        channel = str(arg.get("channel"))
        if self.path != PUBLIC:
            if channel not in PRIVATE_CHANNELS[self.path]:
                await self.error("60018")
                return
            if not self.logged_in:
                await self.error("60011")
                return
            await self.upstreams["private"].send(
                json.dumps({"op": "subscribe", "args": [BYBIT_PRIVATE[channel]]})
            )
        else:
            market = self.front.wire.market(str(arg.get("instId")))
            if channel not in PUBLIC_TOPICS or market is None:
                await self.error("60018")
                return
            if channel == "mark-price" and market.category != "linear":
                await self.error("60018")
                return
            upstream = await self._public(market.category)
            topic = PUBLIC_TOPICS[channel].format(market.symbol)
            await upstream.send(json.dumps({"op": "subscribe", "args": [topic]}))
        self.subscribed.append(arg)
        await self.send({"event": "subscribe", "arg": arg, "connId": self.conn_id})

    async def _public(self, category: str) -> ClientConnection:
        if category not in self.upstreams:
            upstream = await connect(f"{self.front.paper.ws_url}/v5/public/{category}")
            self.upstreams[category] = upstream
            self.readers.append(asyncio.create_task(self._read(upstream, category)))
        return self.upstreams[category]

    async def _read(self, upstream: ClientConnection, category: str) -> None:
        """Translate every message of the paper exchange's; when its connection ends, so does this one."""
        try:
            async for raw in upstream:
                await self._translate(json.loads(raw), category)
        except (ConnectionClosed, WebSocketException, OSError):
            pass
        finally:
            self.abort()

    async def _translate(self, message: Row, category: str) -> None:
        if message.get("op") == "pong":
            await self.send("pong")
            return
        topic = str(message.get("topic") or "")
        kind, _, rest = topic.partition(".")
        market = self.front.wire.by_symbol(category, rest.rpartition(".")[2])
        if category == "private":
            if topic in ("order", "position", "wallet"):
                await self._private(topic, message)
        elif market is not None and kind == "orderbook":
            await self._book(market, message)
        elif market is not None and kind == "tickers":
            await self._mark(market, message)
        elif market is not None and kind == "priceLimit":
            await self._band(market, message)

    def _wants(self, channel: str) -> Row | None:
        return next((arg for arg in self.subscribed if arg.get("channel") == channel), None)

    async def _push(self, arg: Row, data: list[Row]) -> None:
        if arg in self.subscribed:
            await self.send({"arg": arg, "data": data})

    # ---- public ---------------------------------------------------------------------------------

    async def _book(self, market: Market, message: Row) -> None:
        """Bybit's book (a snapshot, then deltas) kept here; its top five levels pushed as books5."""
        book = self.books.setdefault(market.inst_id, {"b": {}, "a": {}})
        data = message["data"]
        if message.get("type") == "snapshot":
            book["b"], book["a"] = {}, {}
        for side in ("b", "a"):
            for price, size in data.get(side) or []:
                if Decimal(size) == 0:
                    book[side].pop(price, None)
                else:
                    book[side][price] = size

        def levels(side: str, best_first: bool) -> list[list[str]]:
            prices = sorted(book[side], key=Decimal, reverse=best_first)[:5]
            return [[p, okx.n(market.contracts(Decimal(book[side][p]))), "0", "1"] for p in prices]

        row = {"asks": levels("a", False), "bids": levels("b", True), "instId": market.inst_id}
        row |= {"ts": str(message["ts"]), "seqId": int(data.get("u") or 0)}
        await self._push({"channel": "books5", "instId": market.inst_id}, [row])

    async def _mark(self, market: Market, message: Row) -> None:
        mark = message["data"].get("markPrice")
        if mark:
            row = {"instType": "SWAP", "instId": market.inst_id, "markPx": mark, "ts": str(message["ts"])}
            await self._push({"channel": "mark-price", "instId": market.inst_id}, [row])

    async def _band(self, market: Market, message: Row) -> None:
        data = message["data"]
        row = {"instId": market.inst_id, "buyLmt": data["buyLmt"], "sellLmt": data["sellLmt"]}
        row |= {"ts": str(message["ts"]), "enabled": True}
        await self._push({"channel": "price-limit", "instId": market.inst_id}, [row])

    # ---- private ---------------------------------------------------------------------------------

    async def _private(self, topic: str, message: Row) -> None:
        stamp = str(message.get("creationTime") or int(time.time() * 1000))
        rows: list[Row] = list(message.get("data") or [])
        if topic == "order":
            await self._orders(rows)
        elif topic == "position" and (arg := self._wants("positions")) is not None:
            data = []
            for row in rows:
                market = self.front.wire.by_symbol("linear", str(row.get("symbol")))
                if market is not None and str(row.get("category") or "linear") == "linear":
                    row = {**row, "avgPrice": row.get("avgPrice") or row.get("entryPrice") or "0"}
                    data += [
                        r | {"pTime": stamp} for r in okx.position(market, row, self.front.position_mode)
                    ]
            if data:
                await self._push(arg, data)
        elif topic == "wallet" and (arg := self._wants("account")) is not None:
            unified = [r for r in rows if r.get("accountType", "UNIFIED") == "UNIFIED"]
            if unified:
                await self._push(arg, [okx.balance({"list": unified}) | {"uTime": stamp}])

    async def _orders(self, rows: list[Row]) -> None:
        ordinary = self._wants("orders")
        if ordinary is not None:
            data = []
            for row in rows:
                market = self.front.wire.by_symbol(str(row.get("category")), str(row.get("symbol")))
                if market is not None and not row.get("stopOrderType"):
                    data.append(okx.order(market, row))
            if data:
                await self._push(ordinary, data)
        algo = self._wants("orders-algo")
        if algo is not None:
            stops = {(str(r.get("category")), str(r.get("symbol"))) for r in rows if r.get("stopOrderType")}
            for category, symbol in sorted(stops):
                market = self.front.wire.by_symbol(category, symbol)
                if market is not None:
                    await self._algos(algo, market)

    async def _algos(self, arg: Row, market: Market) -> None:
        """The market's algo orders as the REST side lists them now; those it no longer lists, canceled."""
        params = {"instType": market.inst_type, "instId": market.inst_id, "ordType": "conditional,oco"}
        answer = await asyncio.to_thread(orders_algo_pending, self.front, params)
        now = {str(row["algoId"]): row for row in answer["data"]}
        before = self.algos.get(market.inst_id, {})
        stamp = str(int(time.time() * 1000))
        data = [row for algo_id, row in now.items() if before.get(algo_id) != row]
        data += [
            row | {"state": "canceled", "uTime": stamp}
            for algo_id, row in before.items()
            if algo_id not in now
        ]
        self.algos[market.inst_id] = now
        if data:
            await self._push(arg, data)
