"""What the paper exchange's market did: its price moves and its own trades, for klines, recent trades and
the tickers' 24-hour figures.

The paper exchange is its own venue: the only trades on it are the fills of its account (the book is
synthesised around the quote and never trades by itself), and its prices are the quotes its market moved
through (static, a walk or a tape: market.py). So `/v5/market/kline` is built from the moves recorded here
(the last price is the mid floored to the tick, as everywhere on paper; the mark for mark-price klines),
with the volume of the fills in each bar; `/v5/market/recent-trade` and the `publicTrade` topic are those
fills. Before the first recorded move a symbol is taken to have stood at its first recorded price (a kline
older than the exchange's start, or its last restart, is flat). Bounded: MAX_POINTS moves and MAX_TRADES
trades per symbol, the oldest let go first.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from pilot.paper.market import Quote

MAX_POINTS = 50_000
MAX_TRADES = 20_000
ZERO = Decimal(0)
TRADE_KINDS = ("Trade", "BustTrade")  # fills that are trades (a funding row is not)


class _Order(Protocol):
    @property
    def category(self) -> str: ...
    @property
    def symbol(self) -> str: ...
    @property
    def side(self) -> str: ...


class Fill(Protocol):
    """What a trade is made of: the engine's SimExecution (engine.py keeps this module free of it)."""

    @property
    def exec_id(self) -> str: ...
    @property
    def order(self) -> _Order: ...
    @property
    def price(self) -> Decimal: ...
    @property
    def qty(self) -> Decimal: ...
    @property
    def time_ms(self) -> int: ...
    @property
    def seq(self) -> int: ...
    @property
    def exec_type(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Point:
    at_ms: int
    mid: Decimal
    mark: Decimal


@dataclass(frozen=True, slots=True)
class Print:
    """One trade of the paper exchange: a fill of its account, the taker's side as Bybit reports it."""

    at_ms: int
    exec_id: str
    side: str
    price: Decimal
    qty: Decimal
    seq: int


@dataclass(frozen=True, slots=True)
class Bar:
    start_ms: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: Decimal
    turnover: Decimal


class _Prices:
    def __init__(self) -> None:
        self.times: list[int] = []
        self.points: list[Point] = []

    def add(self, point: Point) -> None:
        if self.points and (self.points[-1].mid, self.points[-1].mark) == (point.mid, point.mark):
            return
        # A market standing still moves at one moment more than once: each move is kept, in order (a bar's
        # high and low see them all); at() takes the last of a moment.
        at_ms = max(point.at_ms, self.times[-1]) if self.times else point.at_ms
        point = Point(at_ms, point.mid, point.mark)
        self.times.append(point.at_ms)
        self.points.append(point)
        if len(self.points) > MAX_POINTS:
            del self.times[: MAX_POINTS // 10]
            del self.points[: MAX_POINTS // 10]

    def at(self, moment_ms: int) -> Point | None:
        """The point in force at `moment_ms`: the last at or before it, else the first one."""
        index = bisect.bisect_right(self.times, moment_ms) - 1
        if not self.points:
            return None
        return self.points[max(index, 0)]

    def within(self, start_ms: int, end_ms: int) -> list[Point]:
        """The points after `start_ms` and before `end_ms`."""
        low = bisect.bisect_right(self.times, start_ms)
        high = bisect.bisect_left(self.times, end_ms)
        return self.points[low:high]


class History:
    """The market's moves per symbol and the trades per (category, symbol). Not thread-safe: the engine's lock."""

    def __init__(self) -> None:
        self._prices: dict[str, _Prices] = {}
        self._prints: dict[tuple[str, str], list[Print]] = {}
        self._last_seq = 0
        self.day_bars: dict[tuple[str, str], tuple[tuple[int, int], Bar, Bar]] = {}  # market_data's memo

    @property
    def last_seq(self) -> int:
        """The number of the newest fill taken in."""
        return self._last_seq

    def moved(self, symbol: str, at_ms: int, quote: Quote) -> None:
        """Note a symbol's quote at a time (after every move, and when the exchange starts)."""
        self._prices.setdefault(symbol, _Prices()).add(Point(at_ms, quote.mid, quote.mark))

    def catch_up(self, executions: Sequence[Fill]) -> list[tuple[str, str, Print]]:
        """Take the fills numbered after the last one seen (the engine's executions, oldest first); return
        the new trades as (category, symbol, print), oldest first."""
        start = len(executions)
        while start > 0 and executions[start - 1].seq > self._last_seq:
            start -= 1
        found = []
        for fill in executions[start:]:
            self._last_seq = max(self._last_seq, fill.seq)
            if fill.exec_type not in TRADE_KINDS:
                continue
            order = fill.order
            trade = Print(fill.time_ms, fill.exec_id, order.side, fill.price, fill.qty, fill.seq)
            prints = self._prints.setdefault((order.category, order.symbol), [])
            prints.append(trade)
            if len(prints) > MAX_TRADES:
                del prints[: MAX_TRADES // 10]
            found.append((order.category, order.symbol, trade))
        return found

    def trades(self, category: str, symbol: str) -> list[Print]:
        """The trades kept, oldest first."""
        return list(self._prints.get((category, symbol), ()))

    def bars(
        self,
        category: str,
        symbol: str,
        price: Callable[[Point], Decimal],
        width_ms: int,
        starts: Iterable[int],
    ) -> list[Bar]:
        """One bar per start time: open where the price stood at its start, high, low and close over it, the
        volume and turnover of the trades in it; `price` picks the price of a point (last or mark)."""
        prices = self._prices.get(symbol)
        if prices is None:
            return []
        prints = self._prints.get((category, symbol), [])
        times = [p.at_ms for p in prints]
        bars = []
        for start in starts:
            first = prices.at(start)
            if first is None:
                continue
            values = [price(first)] + [price(p) for p in prices.within(start, start + width_ms)]
            inside = prints[bisect.bisect_left(times, start) : bisect.bisect_left(times, start + width_ms)]
            volume = sum((p.qty for p in inside), ZERO)
            turnover = sum((p.qty * p.price for p in inside), ZERO)
            bars.append(Bar(start, values[0], max(values), min(values), values[-1], volume, turnover))
        return bars
