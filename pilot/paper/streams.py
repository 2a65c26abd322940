"""The paper exchange's Bybit V5 WebSocket side, on 127.0.0.1, driven by the same engine as its REST side.

Paths as Bybit serves them: ``/v5/public/linear``, ``/v5/public/spot`` and ``/v5/private``. Messages as
Bybit sends them (websocket/connect.mdx and the topic pages):

* ``{"op": "ping", "req_id": ...}``: public answers ``{"success": true, "ret_msg": "pong", "op": "ping"}``,
  private answers ``{"op": "pong", "args": ["<server ms>"]}``.
* ``{"op": "auth", "args": [api_key, expires_ms, signature]}`` on the private path, the signature being
  hex HMAC-SHA256 of ``"GET/realtime" + expires`` with the key's secret; an expired or wrong one is refused
  with ``success: false``. Private topics need it.
* ``{"op": "subscribe", "args": [...]}``: ``tickers.{symbol}``, ``orderbook.{depth}.{symbol}``,
  ``priceLimit.{symbol}`` (public); ``order``, ``execution``, ``position``, ``wallet`` (private). Tickers and
  books start with a snapshot and go on with deltas; a book delta's ``u`` is the snapshot's plus one per
  delta. Private topics push rows whose REST view changed, in REST's shape.

Changes are found by comparing the REST views with what was last published, after every write, every
price change and every `interval_ms` (tickers are pushed at that interval even when unchanged, as Bybit
pushes derivatives tickers every 100 ms). Faults (`StreamFaults`): ``drop()`` aborts every connection (a
reset, not a close), ``stall`` holds every push and pong while connections stay open (changes meanwhile
are pushed, coalesced, when it ends, and what was held is sent first, in order: nothing is lost, as on a
TCP stream that stops moving), ``delay_ms`` holds
each message that long before sending it, ``swap_next_deltas`` sends the next book delta after the one
that follows it, ``hold_topics`` keeps a private topic's pushes back (in order) until it is taken off.
Connections themselves: ``unavailable`` answers every new one HTTP 503 (as Bybit's edge does during
maintenance; with ``drop()``, the stream is down until it is taken off), ``hold_handshakes`` keeps new ones
waiting in the opening handshake until taken off (the server's 10 s open timeout still applies).
`handshakes` and `refused` count attempts per path, answered or not.

`stop()` closes every connection (1001, going away) and gives clients a second to answer; what is still
open then is reset, so stopping never waits on a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from pilot.paper import handlers, views
from pilot.paper.changes import OrderChanges
from pilot.paper.disconnect_protection import TOPIC_PRODUCTS
from pilot.paper.engine import Engine
from pilot.paper.scenario import ApiKeySpec
from pilot.paper.validation import SimReject

PUBLIC_PATHS = {"/v5/public/linear": "linear", "/v5/public/spot": "spot"}
PRIVATE_PATH = "/v5/private"
PRIVATE_TOPICS = ("order", "execution", "position", "wallet")
BOOK_DEPTHS = (1, 50, 200)
STOP_GRACE_SECONDS = 1.0  # how long stop() lets clients answer the close before resetting them
# websockets logs every frame at DEBUG, auth requests (API key, signature) included, and every connection at
# INFO: only its warnings and errors are let through.
LOG = logging.getLogger(__name__)
LOG.setLevel(logging.WARNING)


@dataclass
class StreamFaults:
    """What the stream does wrong right now; change it from any thread."""

    stall: bool = False
    delay_ms: float = 0
    swap_next_deltas: int = 0  # how many upcoming pairs of book deltas go out in the wrong order
    hold_topics: frozenset[str] = frozenset()  # private topics whose pushes wait until taken off this set
    unavailable: bool = False  # new connections are answered HTTP 503 (drop() ends the open ones)
    hold_handshakes: bool = False  # new connections wait in the opening handshake until this is off


@dataclass(eq=False)
class _Connection:
    socket: ServerConnection
    path: str
    topics: set[str] = field(default_factory=set)
    key: ApiKeySpec | None = None
    queue: asyncio.Queue[str] = field(default_factory=asyncio.Queue)


class StreamServer:
    """Serves the WebSocket paths on its own port, on the paper exchange's event loop."""

    def __init__(
        self,
        engine: Engine,
        lock: threading.Lock,
        keys: dict[str, ApiKeySpec],
        clock_ms: Callable[[], int],
        interval_ms: float = 100,
        server_clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.engine = engine
        self.lock = lock
        self.keys = keys
        self.clock_ms = clock_ms  # the exchange's time, in every message's ts (pilot/paper/clocks.py)
        self.server_clock_ms = server_clock_ms or clock_ms  # the callers' frame: an auth request's expiry
        self.interval_ms = interval_ms
        self.faults = StreamFaults()
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: Server | None = None
        self._connections: set[_Connection] = set()
        self._published: dict[str, Any] = {}  # topic -> the last view sent (books: the levels; private: rows)
        self._book_u: dict[str, int] = {}
        self._held_delta: dict[str, str] = {}
        self._held_private: list[tuple[str, dict[str, Any]]] = []
        self._order_marks: dict[
            str, tuple[int, str, Any]
        ] = {}  # what each order looked like when last pushed
        self._sent_executions: set[str] = set()
        self._order_changes = OrderChanges()  # the first push after a start shows every order, as before
        self._ids = itertools.count(1)
        self._heartbeat: asyncio.Task[None] | None = None
        self.connections_opened = 0
        self.handshakes: Counter[str] = Counter()  # opening handshakes begun, per path
        self.refused: Counter[str] = Counter()  # of those, answered 503 (`unavailable`)
        self.held = 0  # handshakes waiting on `hold_handshakes` now
        self._stopping = False

    # ---- life ---------------------------------------------------------------------------------------

    async def start(self, port: int = 0) -> None:
        self.loop = asyncio.get_running_loop()
        self._server = await serve(
            self._serve,
            "127.0.0.1",
            port,
            ping_interval=None,
            compression=None,
            process_request=self._handshake,
            logger=LOG,
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        self._heartbeat = asyncio.create_task(self._beat())

    async def stop(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        self._stopping = True  # a held handshake is let go (and refused: the server is closing)
        if self._server is None:
            return
        self._server.close()  # stop listening; close each connection with 1001 (going away)
        closed = asyncio.ensure_future(self._server.wait_closed())
        await asyncio.wait([closed], timeout=STOP_GRACE_SECONDS)
        if not closed.done():  # a client that does not answer the close is reset instead
            self._drop_all()
            await asyncio.wait([closed], timeout=STOP_GRACE_SECONDS)
        if not closed.done():
            closed.cancel()

    async def _handshake(self, socket: ServerConnection, request: Request) -> Response | None:
        """Count the attempt and apply the connection faults (websockets' process_request hook)."""
        self.handshakes[request.path] += 1
        if self.faults.hold_handshakes:
            self.held += 1
            try:
                while self.faults.hold_handshakes and not self._stopping:
                    await asyncio.sleep(0.01)
            finally:
                self.held -= 1
        if self.faults.unavailable:
            self.refused[request.path] += 1
            return socket.respond(HTTPStatus.SERVICE_UNAVAILABLE, "stream unavailable\n")
        return None

    @property
    def open_connections(self) -> int:
        """Connections past their handshake and not ended yet."""
        return len(self._connections)

    def changed(self) -> None:
        """Something in the engine may have changed: publish it (safe from any thread, lock held or not)."""
        if self.loop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._publish, False)

    def drop(self) -> None:
        """Reset every connection (no close frame), as a network failure would."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._drop_all)

    def _drop_all(self) -> None:
        for connection in list(self._connections):
            transport = connection.socket.transport
            if transport is not None:
                transport.abort()

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.interval_ms / 1000)
            self._publish(True)

    # ---- one connection --------------------------------------------------------------------------

    async def _serve(self, socket: ServerConnection) -> None:
        path = socket.request.path if socket.request is not None else ""
        if path not in PUBLIC_PATHS and path != PRIVATE_PATH:
            await socket.close(1008, "unknown path")
            return
        connection = _Connection(socket, path)
        self._connections.add(connection)
        self.connections_opened += 1
        sender = asyncio.create_task(self._send_loop(connection))
        try:
            async for raw in socket:
                self._on_request(connection, raw)
        except ConnectionClosed:
            pass
        finally:
            self._connections.discard(connection)
            for topic in connection.topics & TOPIC_PRODUCTS.keys():
                self.engine.dcp.unwatch(topic, self.clock_ms())
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await sender

    async def _send_loop(self, connection: _Connection) -> None:
        while True:
            text = await connection.queue.get()
            while self.faults.stall:  # held, not lost: a stalled TCP stream delivers its backlog later
                await asyncio.sleep(0.05)
            if self.faults.delay_ms:
                await asyncio.sleep(self.faults.delay_ms / 1000)
            await connection.socket.send(text)

    def _send(self, connection: _Connection, message: dict[str, Any]) -> None:
        connection.queue.put_nowait(json.dumps(message))

    def _on_request(self, connection: _Connection, raw: str | bytes) -> None:
        try:
            request = json.loads(raw)
            op = request.get("op")
        except (ValueError, AttributeError):
            self._send(connection, {"success": False, "ret_msg": "invalid request", "op": ""})
            return
        req_id = request.get("req_id")
        private = connection.path == PRIVATE_PATH
        if op == "ping":
            if private:
                pong = {"req_id": req_id, "op": "pong", "args": [str(self.clock_ms())], "conn_id": "paper"}
            else:
                pong = {
                    "success": True,
                    "ret_msg": "pong",
                    "conn_id": "paper",
                    "req_id": req_id,
                    "op": "ping",
                }
            self._send(connection, pong)
        elif op == "auth" and private:
            self._auth(connection, request.get("args") or [], req_id)
        elif op in ("subscribe", "unsubscribe"):
            self._subscribe(connection, op, [str(a) for a in request.get("args") or []], req_id)
        else:
            self._send(
                connection, {"success": False, "ret_msg": f"unknown op {op}", "op": op, "req_id": req_id}
            )

    def _auth(self, connection: _Connection, args: list[Any], req_id: Any) -> None:
        problem = ""
        try:
            api_key, expires, signature = str(args[0]), int(args[1]), str(args[2])
        except (IndexError, ValueError, TypeError):
            api_key, expires, signature, problem = "", 0, "", "Params Error"
        spec = self.keys.get(api_key)
        if not problem and spec is None:
            problem = "API key is invalid."
        elif not problem and expires < self.server_clock_ms():
            problem = "Params Error"  # Bybit answers an expired auth request this way
        elif not problem and spec is not None:
            expected = hmac.new(spec.secret.encode(), f"GET/realtime{expires}".encode(), hashlib.sha256)
            if not hmac.compare_digest(expected.hexdigest(), signature):
                problem = "Signature Error"
        if not problem:
            connection.key = spec
        answer = {"success": not problem, "ret_msg": problem, "op": "auth", "conn_id": "paper"}
        if req_id is not None:
            answer["req_id"] = req_id
        self._send(connection, answer)

    def _subscribe(self, connection: _Connection, op: str, topics: list[str], req_id: Any) -> None:
        private = connection.path == PRIVATE_PATH
        problem = ""
        if private and connection.key is None:
            problem = "Request not authorized"
        for topic in topics:
            if problem:
                break
            known = (
                (topic in PRIVATE_TOPICS or topic in TOPIC_PRODUCTS)
                if private
                else self._public_view(PUBLIC_PATHS[connection.path], topic) is not None
            )
            if not known:
                problem = f"Invalid topic: {topic}"
        answer = {
            "success": not problem,
            "ret_msg": problem or "",
            "conn_id": "paper",
            "req_id": req_id,
            "op": op,
        }
        self._send(connection, answer)
        if problem:
            return
        for topic in topics:
            if op == "unsubscribe":
                if topic in TOPIC_PRODUCTS and topic in connection.topics:
                    self.engine.dcp.unwatch(topic, self.clock_ms())
                connection.topics.discard(topic)
                continue
            if topic in TOPIC_PRODUCTS and topic not in connection.topics:
                self.engine.dcp.watch(topic)  # DCP counts this connection (disconnect_protection.py)
            connection.topics.add(topic)
            if not private:
                self._send_snapshot(connection, topic)

    # ---- what is published ------------------------------------------------------------------------

    def _public_view(self, category: str, topic: str) -> Any:
        """The REST-shaped view behind a public topic now, or None when there is no such topic."""
        parts = topic.split(".")
        try:
            with self.lock:
                if parts[0] == "tickers" and len(parts) == 2:
                    return handlers.tickers(self._context(), {"category": category, "symbol": parts[1]})[
                        "list"
                    ][0]
                if parts[0] == "orderbook" and len(parts) == 3 and int(parts[1]) in BOOK_DEPTHS:
                    book = handlers.orderbook(
                        self._context(), {"category": category, "symbol": parts[2], "limit": parts[1]}
                    )
                    return {"s": book["s"], "b": book["b"], "a": book["a"]}
                if parts[0] == "priceLimit" and len(parts) == 2 and category != "option":
                    view = handlers.price_limit(self._context(), {"category": category, "symbol": parts[1]})
                    return {"symbol": view["symbol"], "buyLmt": view["buyLmt"], "sellLmt": view["sellLmt"]}
        except (SimReject, ValueError, IndexError, KeyError):
            return None
        return None

    def _context(self) -> handlers.Context:
        return handlers.Context(self.engine, None, (), self.clock_ms())

    def _send_snapshot(self, connection: _Connection, topic: str) -> None:
        category = PUBLIC_PATHS[connection.path]
        view = self._public_view(category, topic)
        if view is None:
            return
        key = f"{category}:{topic}"
        now = self.clock_ms()
        data = dict(view)
        if topic.startswith("orderbook"):
            u = self._book_u.setdefault(key, 1)
            data |= {"u": u, "seq": u}
            self._published[key] = view
        elif topic.startswith("tickers"):
            self._published[key] = view
        self._send(connection, {"topic": topic, "type": "snapshot", "ts": now, "data": data, "cts": now})

    def _publish(self, heartbeat: bool) -> None:
        if self.faults.stall:
            return
        public: dict[tuple[str, str], list[_Connection]] = {}
        private: list[_Connection] = []
        for connection in self._connections:
            if connection.path == PRIVATE_PATH:
                private.append(connection)
            else:
                for topic in connection.topics:
                    public.setdefault((PUBLIC_PATHS[connection.path], topic), []).append(connection)
        for (category, topic), listeners in public.items():
            self._publish_public(category, topic, listeners, heartbeat)
        if private:
            self._publish_private(private)

    def _publish_public(
        self, category: str, topic: str, listeners: list[_Connection], heartbeat: bool
    ) -> None:
        view = self._public_view(category, topic)
        if view is None:
            return
        key, now = f"{category}:{topic}", self.clock_ms()
        last = self._published.get(key)
        if topic.startswith("orderbook"):
            if last == view:
                return
            u = self._book_u.get(key, 1) + 1
            self._book_u[key] = u
            self._published[key] = view
            data = {"s": view["s"], "b": _levels_delta(last, view, "b"), "a": _levels_delta(last, view, "a")}
            message = {
                "topic": topic,
                "type": "delta",
                "ts": now,
                "data": data | {"u": u, "seq": u},
                "cts": now,
            }
            self._send_delta(key, listeners, json.dumps(message))
            return
        if topic.startswith("tickers"):
            changed = {k: v for k, v in view.items() if last is None or last.get(k) != v}
            if not changed and not heartbeat:
                return
            self._published[key] = view
            data = {"symbol": view["symbol"], **changed}
            message = {"topic": topic, "type": "delta", "ts": now, "cs": now, "data": data}
        else:  # priceLimit: a full message each time, as Bybit sends it
            if last == view and not heartbeat:
                return
            self._published[key] = view
            message = {"topic": topic, "ts": now, "data": view}
        for connection in listeners:
            self._send(connection, message)

    def _send_delta(self, key: str, listeners: list[_Connection], text: str) -> None:
        held = self._held_delta.pop(key, None)
        if held is None and self.faults.swap_next_deltas > 0:
            self.faults.swap_next_deltas -= 1
            self._held_delta[key] = text
            return
        for connection in listeners:
            connection.queue.put_nowait(text)
            if held is not None:
                connection.queue.put_nowait(held)

    def _publish_private(self, listeners: list[_Connection]) -> None:
        now = self.clock_ms()
        with self.lock:
            context = self._context()
            looked = [self.engine.orders[i] for i in self._order_changes.look(self.engine).changed]
            orders = [
                {"category": o.category}
                | views.order_view(o, self.engine.instruments[(o.category, o.symbol)])
                for o in looked
                if self._order_marks.get(o.order_id) != (o.updated_ms, o.status, o.cum_exec_qty)
            ]
            for o in looked:
                self._order_marks[o.order_id] = (o.updated_ms, o.status, o.cum_exec_qty)
            executions = []
            for e in reversed(self.engine.executions):  # appended in time order: the new ones are last
                if e.exec_id in self._sent_executions:
                    break
                self._sent_executions.add(e.exec_id)
                instrument = self.engine.instruments[(e.order.category, e.order.symbol)]
                executions.append({"category": e.order.category} | views.execution_view(e, instrument))
            executions.reverse()
            positions = {
                row["symbol"]: {"category": "linear"} | row
                for row in handlers.positions(context, {"category": "linear", "settleCoin": "USDT"})["list"]
            }
            wallet = handlers.wallet_balance(context, {"accountType": "UNIFIED"})["list"]
        updates = {
            "order": orders,
            "execution": executions,
            "position": _changed_positions(self._published.get("position"), positions),
            "wallet": wallet if wallet != self._published.get("wallet") else [],
        }
        self._published |= {"position": positions, "wallet": wallet}
        outgoing = [
            (topic, {"id": f"paper-{next(self._ids)}", "topic": topic, "creationTime": now, "data": rows})
            for topic, rows in updates.items()
            if rows
        ]
        held = self.faults.hold_topics
        released = [item for item in self._held_private if item[0] not in held]
        self._held_private = [item for item in self._held_private if item[0] in held]
        for topic, message in released + outgoing:
            if topic in held:
                self._held_private.append((topic, message))
                continue
            for connection in listeners:
                if topic in connection.topics:
                    self._send(connection, message)


def _levels_delta(last: dict[str, Any] | None, view: dict[str, Any], side: str) -> list[list[str]]:
    """Levels that changed, and removed ones with size "0" (orderbook.mdx: a size of 0 deletes the level)."""
    before = {price: size for price, size in (last or {}).get(side, [])}
    after = {price: size for price, size in view[side]}
    changed = [[price, size] for price, size in after.items() if before.get(price) != size]
    return changed + [[price, "0"] for price in before if price not in after]


def _changed_positions(last: dict[str, Any] | None, now: dict[str, Any]) -> list[dict[str, Any]]:
    """Changed positions, and a closed one as a row of size 0 (Bybit pushes the flat position)."""
    last = last or {}
    rows = [row for symbol, row in now.items() if last.get(symbol) != row]
    for symbol, row in last.items():
        if symbol not in now:
            rows.append(row | {"size": "0", "side": "", "positionValue": "0", "unrealisedPnl": "0"})
    return rows
