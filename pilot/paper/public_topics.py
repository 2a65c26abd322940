"""The public topics of the paper exchange's WebSocket side: which names exist, what a subscription gets first,
and what each look pushes, in Bybit's shapes (websocket/public/*.mdx; the shapes themselves: pushes.py).

* ``tickers.{symbol}``: a snapshot on subscribing; then linear pushes deltas (the fields that changed, and at
  least the symbol every look, as Bybit pushes derivatives tickers every 100 ms), spot a snapshot each time
  ("Spot & Option tickers message are snapshot only"); every message carries a rising cross sequence `cs`.
* ``orderbook.{1|50|200|1000}.{symbol}``: a snapshot, then deltas whose `u` rises by one; level 1 sends
  snapshots only, again with the same `u` after 3 s without a change (orderbook.mdx).
* ``priceLimit.{symbol}``: `{topic, data, ts}`, data `{symbol, buyLmt, sellLmt}` only.
* ``publicTrade.{symbol}``: the exchange's new trades (its account's fills), oldest first; nothing on subscribing.
* ``kline.{interval}.{symbol}``: the current bar on subscribing and whenever it changes; a bar that ended is
  pushed once more with `confirm` true.

An unknown name is Bybit's "error:handler not found,topic:..." (a spot symbol it does not list: "Invalid
symbol :[...]"); per the answers recorded in the wild, one bad topic fails the whole request.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pilot.paper import handlers, market_data, pushes
from pilot.paper.engine import Engine
from pilot.paper.handlers import KLINE_MS
from pilot.paper.history import Bar
from pilot.paper.scenario import InstrumentSpec
from pilot.paper.validation import SimReject

BOOK_DEPTHS = (1, 50, 200, 1000)
LEVEL_ONE_REPEAT_MS = 3000  # orderbook.mdx: level 1 sends its snapshot again after 3 s without a change


@dataclass(frozen=True, slots=True)
class Topic:
    kind: str  # tickers, orderbook, priceLimit, publicTrade, kline
    spec: InstrumentSpec
    depth: int = 0
    interval: str = ""


def parse_topic(engine: Engine, category: str, name: str) -> Topic | str:
    """The topic a name stands for, or the ret_msg Bybit refuses it with."""
    parts = name.split(".")
    kind, symbol = parts[0], parts[-1]
    shapes = {"tickers": 2, "priceLimit": 2, "publicTrade": 2, "orderbook": 3, "kline": 3}
    if shapes.get(kind) != len(parts):
        return f"error:handler not found,topic:{name}"
    if kind == "orderbook" and parts[1] not in {str(d) for d in BOOK_DEPTHS}:
        return f"error:handler not found,topic:{name}"
    if kind == "kline" and parts[1] not in pushes.KLINE_INTERVALS:
        return f"error:handler not found,topic:{name}"
    spec = engine.instruments.get((category, symbol))
    if spec is None:
        return f"Invalid symbol :[{name}]" if category == "spot" else f"error:handler not found,topic:{name}"
    depth = int(parts[1]) if kind == "orderbook" else 0
    return Topic(kind, spec, depth, parts[1] if kind == "kline" else "")


class PublicTopics:
    """The public topics' state: what was last published per topic, book sequences, tick directions."""

    def __init__(
        self, engine: Engine, lock: threading.Lock, clock_ms: Callable[[], int], wall_ms: Callable[[], int]
    ) -> None:
        self.engine = engine
        self.lock = lock
        self.clock_ms = clock_ms  # the exchange's time: every message's ts
        self.wall_ms = wall_ms  # the server clock: level 1's repeat after 3 s
        self._cs = itertools.count(1)
        self._published: dict[str, Any] = {}
        self._book_u: dict[str, int] = {}
        self._book_sent: dict[str, int] = {}
        self._direction: dict[str, tuple[str, str]] = {}  # symbol key -> (last price, tickDirection)
        self._trade_seq: dict[str, int] = {}
        self._bar: dict[str, Bar] = {}

    def _context(self) -> handlers.Context:
        return handlers.Context(self.engine, None, (), self.clock_ms())

    def subscribed(self, category: str, name: str) -> list[dict[str, Any]]:
        """The messages a new subscription gets at once."""
        topic = parse_topic(self.engine, category, name)
        if isinstance(topic, str):
            return []
        key, now = f"{category}:{name}", self.clock_ms()
        with self.lock:
            if topic.kind == "publicTrade":  # nothing at once; the trades from here on
                self._trades(key, name, topic, now)
                return []
            if topic.kind == "kline":
                return self._klines(key, name, topic, now, True)
            view = self._view(category, topic)
        if topic.kind == "tickers":
            self._published[key] = view
            return [self._ticker_message(name, "snapshot", self._ticker(category, topic, view), now)]
        if topic.kind == "orderbook":
            self._published[key] = view
            u = self._book_u.setdefault(key, 1)
            self._book_sent[key] = self.wall_ms()
            return [self._book_message(name, "snapshot", view | {"u": u, "seq": u}, now)]
        return [{"topic": name, "data": view, "ts": now}]

    def updates(self, category: str, name: str, heartbeat: bool) -> list[dict[str, Any]]:
        """What the topic's subscribers get on this look (nothing when nothing is to be said)."""
        topic = parse_topic(self.engine, category, name)
        if isinstance(topic, str):
            return []
        key, now = f"{category}:{name}", self.clock_ms()
        with self.lock:
            if topic.kind == "publicTrade":
                return self._trades(key, name, topic, now)
            if topic.kind == "kline":
                return self._klines(key, name, topic, now, False)
            view = self._view(category, topic)
        last = self._published.get(key)
        if topic.kind == "orderbook":
            return self._book(key, name, topic, view, last, now)
        if topic.kind == "tickers":
            return self._tickers(key, name, category, topic, view, last, heartbeat, now)
        if last == view and not heartbeat:
            return []
        self._published[key] = view
        return [{"topic": name, "data": view, "ts": now}]

    # ---- views --------------------------------------------------------------------------------------

    def _view(self, category: str, topic: Topic) -> Any:
        """The REST-shaped view behind a ticker, book or price-band topic (the lock held)."""
        params = {"category": category, "symbol": topic.spec.symbol}
        context = self._context()
        try:
            if topic.kind == "tickers":
                return market_data.tickers(context, params)["list"][0]
            if topic.kind == "orderbook":
                book = handlers.orderbook(context, params | {"limit": str(topic.depth)})
                return {"s": book["s"], "b": book["b"], "a": book["a"]}
            view = handlers.price_limit(context, params)
        except SimReject:  # not reached for a topic parse_topic accepted
            return None
        return {"symbol": view["symbol"], "buyLmt": view["buyLmt"], "sellLmt": view["sellLmt"]}

    # ---- tickers --------------------------------------------------------------------------------------

    def _ticker(self, category: str, topic: Topic, view: dict[str, Any]) -> dict[str, Any]:
        key = f"{category}:{topic.spec.symbol}"
        before, previous = self._direction.get(key, (None, "ZeroPlusTick"))
        direction = pushes.tick_direction(before, view["lastPrice"], previous)
        self._direction[key] = (view["lastPrice"], direction)
        return pushes.ticker(view, category, direction)

    def _ticker_message(self, name: str, kind: str, data: dict[str, Any], now: int) -> dict[str, Any]:
        return {"topic": name, "type": kind, "data": data, "cs": next(self._cs), "ts": now}

    def _tickers(
        self,
        key: str,
        name: str,
        category: str,
        topic: Topic,
        view: Any,
        last: Any,
        heartbeat: bool,
        now: int,
    ) -> list[dict[str, Any]]:
        if last == view and not heartbeat:
            return []
        self._published[key] = view
        data = self._ticker(category, topic, view)
        if category == "spot":
            return [self._ticker_message(name, "snapshot", data, now)]
        before = self._published.get(f"{key}:pushed") or {}
        changed = {k: v for k, v in data.items() if before.get(k) != v}
        self._published[f"{key}:pushed"] = data
        return [self._ticker_message(name, "delta", {"symbol": data["symbol"]} | changed, now)]

    # ---- books ----------------------------------------------------------------------------------------

    def _book_message(self, name: str, kind: str, data: dict[str, Any], now: int) -> dict[str, Any]:
        return {"topic": name, "type": kind, "ts": now, "data": data, "cts": now}

    def _book(
        self, key: str, name: str, topic: Topic, view: Any, last: Any, now: int
    ) -> list[dict[str, Any]]:
        if last == view:
            if topic.depth == 1 and self.wall_ms() - self._book_sent.get(key, 0) >= LEVEL_ONE_REPEAT_MS:
                u = self._book_u.get(key, 1)  # the same `u`: nothing changed
                self._book_sent[key] = self.wall_ms()
                return [self._book_message(name, "snapshot", view | {"u": u, "seq": u}, now)]
            return []
        u = self._book_u.get(key, 1) + 1
        self._book_u[key] = u
        self._published[key] = view
        self._book_sent[key] = self.wall_ms()
        if topic.depth == 1:  # orderbook.mdx: level 1 has snapshot messages only
            return [self._book_message(name, "snapshot", view | {"u": u, "seq": u}, now)]
        data = {"s": view["s"], "b": levels_delta(last, view, "b"), "a": levels_delta(last, view, "a")}
        return [self._book_message(name, "delta", data | {"u": u, "seq": u}, now)]

    # ---- trades and klines (the lock held) ------------------------------------------------------------

    def _trades(self, key: str, name: str, topic: Topic, now: int) -> list[dict[str, Any]]:
        history = self.engine.history
        history.catch_up(self.engine.executions)
        prints = history.trades(topic.spec.category, topic.spec.symbol)
        seen = self._trade_seq.get(key)
        self._trade_seq[key] = prints[-1].seq if prints else 0
        new = [p for p in prints if p.seq > seen] if seen is not None else []
        if not new:
            return []
        rows = []
        before: Decimal | None = None
        for trade in new:
            direction = "PlusTick" if before is None or trade.price >= before else "MinusTick"
            rows.append(pushes.trade(topic.spec, trade, direction))
            before = trade.price
        return [{"topic": name, "type": "snapshot", "ts": now, "data": rows}]

    def _klines(self, key: str, name: str, topic: Topic, now: int, first: bool) -> list[dict[str, Any]]:
        width = KLINE_MS[topic.interval]
        spec = topic.spec
        start = now - now % width
        history = self.engine.history
        history.catch_up(self.engine.executions)
        last = self._bar.get(key)
        starts = [start] if last is None or last.start_ms == start else [last.start_ms, start]
        bars = history.bars(spec.category, spec.symbol, market_data.last_of(spec), width, starts)
        rows = [pushes.kline(spec, bar, topic.interval, width, bar.start_ms < start, now) for bar in bars]
        current = bars[-1] if bars else None
        if current is None or (not first and last == current and len(bars) == 1):
            return []
        self._bar[key] = current
        return [{"topic": name, "data": rows, "ts": now, "type": "snapshot"}]


def levels_delta(last: dict[str, Any] | None, view: dict[str, Any], side: str) -> list[list[str]]:
    """Levels that changed, and removed ones with size "0" (orderbook.mdx: a size of 0 deletes the level)."""
    before = {price: size for price, size in (last or {}).get(side, [])}
    after = {price: size for price, size in view[side]}
    changed = [[price, size] for price, size in after.items() if before.get(price) != size]
    return changed + [[price, "0"] for price in before if price not in after]
