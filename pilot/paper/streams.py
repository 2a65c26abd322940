"""The paper exchange's Bybit V5 WebSocket side, on 127.0.0.1, driven by the same engine as its REST side.

Paths as Bybit serves them: ``/v5/public/linear``, ``/v5/public/spot``, ``/v5/private`` and the order entry
``/v5/trade`` (order_entry.py). Messages as
Bybit sends them (websocket/connect.mdx and the topic pages):

* ``{"op": "ping", "req_id": ...}``: public answers ``{"success": true, "ret_msg": "pong", "op": "ping"}``,
  private answers ``{"op": "pong", "args": ["<server ms>"]}``.
* ``{"op": "auth", "args": [api_key, expires_ms, signature]}`` on the private path, the signature being
  hex HMAC-SHA256 of ``"GET/realtime" + expires`` with the key's secret; an expired or wrong one is refused
  with ``success: false``. Private topics need it.
* ``{"op": "subscribe", "args": [...]}``: ``tickers.{symbol}``, ``orderbook.{depth}.{symbol}``,
  ``priceLimit.{symbol}``, ``publicTrade.{symbol}``, ``kline.{interval}.{symbol}`` (public: public_topics.py);
  ``order``, ``execution``, ``execution.fast``, ``position``, ``wallet`` and the categorised ones such as
  ``order.linear`` (private). Private topics push the rows whose REST view changed, in the stream's shape
  (pushes.py: a position's ``entryPrice``, the wallet on balance changes only, ...).

Changes are found by comparing the REST views with what was last published, after every write, every
price change and every `interval_ms` (tickers are pushed at that interval even when unchanged, as Bybit
pushes derivatives tickers every 100 ms). Faults (`StreamFaults`): ``drop()`` aborts every connection (a
reset, not a close), ``stall`` holds every push and pong while connections stay open (changes meanwhile
are pushed, coalesced, when it ends, and what was held is sent first, in order: nothing is lost, as on a
TCP stream that stops moving), `push_raw(path, text)` sends any text to a path's connections, ``delay_ms`` holds
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
from decimal import Decimal
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from pilot.paper import handlers, pushes, views
from pilot.paper.changes import OrderChanges
from pilot.paper.disconnect_protection import TOPIC_PRODUCTS
from pilot.paper.engine import Engine, SimOrder
from pilot.paper.handlers import CATEGORIES, DERIVATIVES
from pilot.paper.order_entry import TRADE_PATH, EntrySession, OrderEntry
from pilot.paper.public_topics import PublicTopics, parse_topic
from pilot.paper.scenario import ApiKeySpec

PUBLIC_PATHS = {"/v5/public/linear": "linear", "/v5/public/spot": "spot"}
PRIVATE_PATH = "/v5/private"
# all-in-one and categorised (websocket/private/*.mdx); the categorised ones carry that category's rows
CATEGORISED = (
    ("order", CATEGORIES),
    ("execution", CATEGORIES),
    ("execution.fast", CATEGORIES),
    ("position", DERIVATIVES),
)
PRIVATE_TOPICS = (
    "order",
    "execution",
    "execution.fast",
    "position",
    "wallet",
    *(f"{topic}.{category}" for topic, categories in CATEGORISED for category in categories),
)
SPOT_MAX_ARGS = 10
ZERO = Decimal(0)
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
    entry: EntrySession = field(default_factory=EntrySession)  # order entry (TRADE_PATH) only


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
        before_write: Callable[[], object] = lambda: None,
        after_write: Callable[[], None] = lambda: None,
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
        self.public = PublicTopics(engine, lock, clock_ms, self.server_clock_ms)
        self._before_write, self._after_write = before_write, after_write
        self.order_entry = OrderEntry(engine, keys, self._write, clock_ms, self.server_clock_ms)
        self._published: dict[str, Any] = {}  # private: the position rows and the wallet last pushed
        self._held_delta: dict[str, str] = {}
        self._held_private: list[tuple[str, list[dict[str, Any]]]] = []
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

    def _write(self, work: Callable[[], Any]) -> Any:
        """Carry out an order-entry write as a REST one is: the market caught up first, the work under the
        engine's lock, then what it changed saved (`after_write`, under the lock) and published."""
        self._before_write()
        try:
            with self.lock:
                result = work()
                self._after_write()
        finally:
            self._publish(False)
        return result

    def topics(self, path: str) -> set[str]:
        """The topics the connections on `path` are subscribed to now (a test waits for its subscriptions)."""
        return {topic for c in list(self._connections) if c.path == path for topic in c.topics}

    @property
    def open_connections(self) -> int:
        """Connections past their handshake and not ended yet."""
        return len(self._connections)

    def changed(self) -> None:
        """Something in the engine may have changed: publish it (safe from any thread, lock held or not)."""
        if self.loop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._publish, False)

    def push_raw(self, path: str, text: str) -> None:
        """Send `text` as it is to every connection on `path` (a message a client may not be able to read)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._push_raw, path, text)

    def _push_raw(self, path: str, text: str) -> None:
        for connection in self._connections:
            if connection.path == path:
                connection.queue.put_nowait(text)

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
        if path not in PUBLIC_PATHS and path not in (PRIVATE_PATH, TRADE_PATH):
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
        if connection.path == TRADE_PATH:
            self._send(connection, self.order_entry.answer(connection.entry, request))
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
        category = PUBLIC_PATHS.get(connection.path, "")
        problem = ""
        if private and connection.key is None:
            problem = "Request not authorized"
        elif category == "spot" and len(topics) > SPOT_MAX_ARGS:
            problem = "args size >10"  # wss-authentication.mdx: spot takes up to 10 args a request
        for topic in topics:
            if problem or op == "unsubscribe":
                break
            if topic in connection.topics:  # as answered in the wild (sieblyio/bybit-api#477)
                problem = f"error:already subscribed,topic:{topic}"
            elif private:
                known = topic in PRIVATE_TOPICS or topic in TOPIC_PRODUCTS  # TOPIC_PRODUCTS: DCP's
                problem = "" if known else f"error:handler not found,topic:{topic}"
            else:
                found = parse_topic(self.engine, category, topic)
                problem = found if isinstance(found, str) else ""
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
                for message in self.public.subscribed(category, topic):
                    self._send(connection, message)

    # ---- what is published ------------------------------------------------------------------------

    def _context(self) -> handlers.Context:
        return handlers.Context(self.engine, None, (), self.clock_ms())

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
        for message in self.public.updates(category, topic, heartbeat):
            if message.get("type") == "delta" and topic.startswith("orderbook"):
                self._send_delta(f"{category}:{topic}", listeners, json.dumps(message))
                continue
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
            orders, touched = self._order_pushes()
            executions = self._execution_pushes()
            positions = self._position_rows()
            wallet = handlers.wallet_balance(self._context(), {"accountType": "UNIFIED"})["list"]
        moved = pushes.wallet_moved(wallet)
        fast = [row for row in map(pushes.fast_execution, executions) if row is not None]
        updates = {
            "order": orders,
            "execution": executions,
            "execution.fast": fast,
            "position": _changed_positions(self._published.get("position"), positions, touched),
            "wallet": pushes.wallet(wallet) if moved != self._published.get("wallet") else [],
        }
        self._published |= {"position": positions, "wallet": moved}
        outgoing = [(topic, rows) for topic, rows in updates.items() if rows]
        held = self.faults.hold_topics
        released = [item for item in self._held_private if item[0] not in held]
        self._held_private = [item for item in self._held_private if item[0] in held]
        for topic, rows in released + outgoing:
            if topic in held:
                self._held_private.append((topic, rows))
                continue
            for connection in listeners:
                self._deliver(connection, topic, rows, now)

    def _deliver(self, connection: _Connection, topic: str, rows: list[dict[str, Any]], now: int) -> None:
        """Send rows on the all-in-one topic, and each category's rows on its categorised topic, to a
        connection subscribed to them."""
        wanted = [(topic, rows)] if topic in connection.topics else []
        for category in sorted({str(row.get("category")) for row in rows}):
            named = f"{topic}.{category}"
            if named in connection.topics:
                wanted.append((named, [row for row in rows if row.get("category") == category]))
        for name, chosen in wanted:
            message = {"id": f"paper-{next(self._ids)}", "topic": name, "creationTime": now, "data": chosen}
            self._send(connection, message)

    def _order_pushes(self) -> tuple[list[dict[str, Any]], set[str]]:
        """The orders that changed since the last push, as the `order` topic shows them, and the linear
        symbols they are on (the lock held)."""
        engine = self.engine
        looked = [engine.orders[i] for i in self._order_changes.look(engine).changed]
        changed = [o for o in looked if self._order_marks.get(o.order_id) != _mark(o)]
        for order in looked:
            self._order_marks[order.order_id] = _mark(order)
        pnl = _closed_pnl(engine, changed)
        rows = [
            pushes.order(
                views.order_view(o, engine.instruments[(o.category, o.symbol)]), o, pnl.get(o.order_id, ZERO)
            )
            for o in changed
        ]
        return rows, {o.symbol for o in changed if o.category == "linear"}

    def _execution_pushes(self) -> list[dict[str, Any]]:
        """The fills made since the last push, oldest first (the lock held)."""
        rows = []
        for fill in reversed(self.engine.executions):  # appended in time order: the new ones are last
            if fill.exec_id in self._sent_executions:
                break
            self._sent_executions.add(fill.exec_id)
            instrument = self.engine.instruments[(fill.order.category, fill.order.symbol)]
            rows.append(pushes.execution(views.execution_view(fill, instrument), fill))
        rows.reverse()
        return rows

    def _position_rows(self) -> dict[tuple[str, int], dict[str, Any]]:
        """Every linear position row (flat ones and hedge legs too), as the `position` topic shows it."""
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        context = self._context()
        for category, symbol in self.engine.instruments:
            if category != "linear":
                continue
            listed = handlers.positions(context, {"category": "linear", "symbol": symbol})["list"]
            rows |= {(symbol, int(row["positionIdx"])): pushes.position(row) for row in listed}
        return rows


def _mark(order: SimOrder) -> tuple[int, str, Decimal]:
    return order.updated_ms, order.status, order.cum_exec_qty


def _closed_pnl(engine: Engine, orders: list[SimOrder]) -> dict[str, Decimal]:
    """Each order's closed PnL so far (its rows of /v5/position/closed-pnl), looking back no further than
    the oldest of them was created."""
    wanted = {o.order_id for o in orders if o.category == "linear"}
    if not wanted:
        return {}
    oldest = min(o.created_ms for o in orders)
    found: dict[str, Decimal] = {}
    for row in reversed(engine.closed_pnl):
        if row.updated_ms < oldest:
            break
        if row.order_id in wanted:
            found[row.order_id] = found.get(row.order_id, ZERO) + row.closed_pnl
    return found


def _changed_positions(
    last: dict[tuple[str, int], dict[str, Any]] | None,
    now: dict[tuple[str, int], dict[str, Any]],
    touched: set[str],
) -> list[dict[str, Any]]:
    """The position rows to push: those that changed, and every row of a symbol an order was created,
    amended, cancelled or filled on (position.mdx: "Every time when you create/amend/cancel an order, the
    position topic will generate a new message (regardless if there's any actual change)"). The first
    look pushes the open positions only."""
    if last is None:
        return [row for key, row in now.items() if row.get("side") or key[0] in touched]
    return [row for key, row in now.items() if last.get(key) != row or key[0] in touched]
