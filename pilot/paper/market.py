"""Prices of the paper exchange: static quotes or moving paths (market time), funding times, the synthetic book.

Each symbol's quote is static, or follows a price path (path.py: a seeded random walk or a replayed tape).
A path with a step interval moves with the exchange's market time (clocks.py): the market schedules its
steps, and each linear instrument's funding settlements, as events; `next_event()` names the earliest one
and the timeline (timeline.py) plays them in time order. Every path also takes one step on `tick()`.
What the schedule has reached (`moved_to_ms`), each path's position and the next funding times are part
of `snapshot()`, so a restarted exchange continues the same path.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from pilot.paper.path import PricePath, WalkPath, path_for
from pilot.paper.scenario import DEFAULT_FUNDING_INTERVAL_MIN, InstrumentSpec, PriceSpec, Scenario

LEVEL_NOTIONAL = Decimal(50_000)  # default depth per level, in the quote coin
MOVE, FUNDING = "move", "funding"  # the kinds of scheduled event (a move comes first at the same time)
MINUTE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Quote:
    bid: Decimal
    ask: Decimal
    mark: Decimal

    @property
    def mid(self) -> Decimal:
        return (self.bid + self.ask) / 2


@dataclass(frozen=True, slots=True)
class Event:
    """Something the market's schedule has due at `at_ms`: a path's step or a funding settlement."""

    at_ms: int
    kind: str
    symbol: str


@dataclass(slots=True)
class _Schedule:
    """When a path's steps fall: `origin_ms` + ceil(n x step_ms) for the n-th step, `played` so far."""

    origin_ms: int
    step_ms: Decimal
    played: int = 0

    @property
    def next_ms(self) -> int:
        offset = (self.step_ms * (self.played + 1)).to_integral_value(rounding=ROUND_CEILING)
        return self.origin_ms + int(offset)


def floor_to(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_FLOOR) * step


class Market:
    """Quotes per symbol (shared by the linear and spot instrument of that symbol), their paths and schedule."""

    def __init__(self, scenario: Scenario) -> None:
        self._specs = dict(scenario.prices)
        self._tick: dict[str, Decimal] = {}
        for instrument in scenario.instruments:
            current = self._tick.get(instrument.symbol)
            self._tick[instrument.symbol] = (
                min(current, instrument.tick_size) if current else instrument.tick_size
            )
        self._funding = {
            i.symbol: i for i in scenario.instruments if i.category == "linear" and i.funding_rate != 0
        }
        self._intervals = {
            i.symbol: i.funding_interval_min * MINUTE_MS
            for i in scenario.instruments
            if i.category == "linear"
        }
        self._quotes: dict[str, Quote] = {}
        self._paths: dict[str, PricePath] = {}
        for symbol, spec in self._specs.items():
            path = path_for(spec.walk, spec.tape)
            if path is not None:
                self._paths[symbol] = path
                self._quotes[symbol] = self._path_quote(symbol, path)
            else:
                assert spec.bid is not None and spec.ask is not None
                self._quotes[symbol] = Quote(spec.bid, spec.ask, spec.mark or (spec.bid + spec.ask) / 2)
        self._schedules: dict[str, _Schedule] = {}
        self._next_funding: dict[str, int] = {}
        self.moved_to_ms: int | None = None  # the market time the schedule has been played to

    # ---- quotes -------------------------------------------------------------------------------

    def quote(self, symbol: str) -> Quote:
        return self._quotes[symbol]

    def quotes(self) -> dict[str, Quote]:
        return dict(self._quotes)

    def moving(self) -> dict[str, PricePath]:
        """The symbols whose price follows a path, and their paths."""
        return dict(self._paths)

    def set_prices(self, symbol: str, bid: Decimal | None, ask: Decimal | None, mark: Decimal | None) -> None:
        """Replace the quote of a symbol; a missing value keeps the old one (mark follows the mid if unset).
        A random walk goes on from the new mid; a tape's next point replaces the quote."""
        old = self._quotes[symbol]
        new_bid = old.bid if bid is None else bid
        new_ask = old.ask if ask is None else ask
        if new_ask <= new_bid:
            raise ValueError(f"ask {new_ask} must be above bid {new_bid}")
        self._quotes[symbol] = Quote(new_bid, new_ask, (new_bid + new_ask) / 2 if mark is None else mark)
        path = self._paths.get(symbol)
        if isinstance(path, WalkPath):
            path.rebase((new_bid + new_ask) / 2)

    def step_walks(self) -> list[str]:
        """Move every path (walks and tapes) one step now, off the schedule; return the symbols that moved."""
        for symbol in self._paths:
            self._step(symbol)
        return list(self._paths)

    def _step(self, symbol: str) -> None:
        path = self._paths[symbol]
        path.step()
        self._quotes[symbol] = self._path_quote(symbol, path)

    def _path_quote(self, symbol: str, path: PricePath) -> Quote:
        """A quote `spread_ticks` wide around the path's mid, on the tick; the mark is its mid."""
        tick = self._tick[symbol]
        half = tick * path.spread_ticks / 2
        bid = max(floor_to(path.mid - half, tick), tick)
        ask = bid + tick * path.spread_ticks
        return Quote(bid, ask, (bid + ask) / 2)

    # ---- the schedule ---------------------------------------------------------------------------

    def start(self, now_ms: int) -> None:
        """Begin the schedule at market time `now_ms`: paths step from here, funding at its next time."""
        self.moved_to_ms = now_ms
        for symbol, path in self._paths.items():
            if path.step_ms is not None:
                self._schedules[symbol] = _Schedule(now_ms, path.step_ms)
        self._next_funding = {symbol: self._funding_after(symbol, now_ms) for symbol in self._funding}

    def resume(self, now_ms: int) -> None:
        """Go on after a restart at market time `now_ms`. If the exchange was down past the time the schedule
        had reached, the market paused meanwhile: the paths go on from where they were (the same next
        steps, as far apart as before) and funding settles next at its first time after `now_ms`."""
        if self.moved_to_ms is None:
            self.start(now_ms)
            return
        gap = now_ms - self.moved_to_ms
        if gap <= 0:
            return
        for schedule in self._schedules.values():
            schedule.origin_ms += gap
        self._next_funding = {symbol: self._funding_after(symbol, now_ms) for symbol in self._funding}
        self.moved_to_ms = now_ms

    def next_event(self, until_ms: int) -> Event | None:
        """The earliest scheduled event at or before `until_ms` (moves before funding at one time), or None."""
        due = [Event(s.next_ms, MOVE, symbol) for symbol, s in self._schedules.items()]
        due += [Event(at, FUNDING, symbol) for symbol, at in self._next_funding.items()]
        due = [event for event in due if event.at_ms <= until_ms]
        if not due:
            return None
        return min(due, key=lambda e: (e.at_ms, e.kind != MOVE, e.symbol))

    def play(self, event: Event) -> None:
        """Mark `event` played: a move steps its path; a funding time is followed by the next one."""
        if event.kind == MOVE:
            self._schedules[event.symbol].played += 1
            self._step(event.symbol)
        else:
            self._next_funding[event.symbol] = event.at_ms + self.funding_interval_ms(event.symbol)
        self.moved_to_ms = max(self.moved_to_ms or event.at_ms, event.at_ms)

    def moved_to(self, now_ms: int) -> None:
        """Everything due up to `now_ms` has been played."""
        self.moved_to_ms = max(self.moved_to_ms or now_ms, now_ms)

    # ---- funding ----------------------------------------------------------------------------------

    def funding_rate(self, symbol: str) -> Decimal:
        instrument = self._funding.get(symbol)
        return instrument.funding_rate if instrument is not None else Decimal(0)

    def funding_interval_ms(self, symbol: str) -> int:
        return self._intervals.get(symbol, DEFAULT_FUNDING_INTERVAL_MIN * MINUTE_MS)

    def funding_view(self, symbol: str) -> tuple[Decimal, int, int]:
        """What a linear ticker shows: fundingRate, nextFundingTime (ms), fundingIntervalHour."""
        return (
            self.funding_rate(symbol),
            self.next_funding_ms(symbol),
            self.funding_interval_ms(symbol) // 3_600_000,
        )

    def next_funding_ms(self, symbol: str) -> int:
        """When `symbol` settles funding next: on the interval's grid from midnight UTC (00:00, 08:00, 16:00
        for Bybit's 480 minutes), whether or not a rate settles there."""
        if symbol in self._next_funding:
            return self._next_funding[symbol]
        return self._funding_after(symbol, self.moved_to_ms or 0)

    def _funding_after(self, symbol: str, now_ms: int) -> int:
        interval = self.funding_interval_ms(symbol)
        return (now_ms // interval + 1) * interval

    # ---- state ------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The market's moving state as plain JSON values (quotes are saved apart, with the account)."""
        return {
            "moved_to_ms": self.moved_to_ms,
            "paths": {symbol: path.state() for symbol, path in self._paths.items()},
            "schedules": {s: [x.origin_ms, x.played] for s, x in self._schedules.items()},
            "funding": dict(self._next_funding),
        }

    def restore(self, quotes: dict[str, Quote], saved: dict[str, Any]) -> None:
        """Take saved quotes and paths for the symbols this scenario prices and moves; ignore the others."""
        self._quotes.update({s: q for s, q in quotes.items() if s in self._quotes})
        for symbol, state in saved.get("paths", {}).items():
            if symbol in self._paths:
                self._paths[symbol].restore(state)
        for symbol, (origin, played) in saved.get("schedules", {}).items():
            if symbol in self._schedules:
                self._schedules[symbol].origin_ms, self._schedules[symbol].played = int(origin), int(played)
        for symbol, at in saved.get("funding", {}).items():
            if symbol in self._next_funding:
                self._next_funding[symbol] = int(at)
        if saved.get("moved_to_ms") is not None:
            self.moved_to_ms = int(saved["moved_to_ms"])
        reached = self.moved_to_ms or 0
        for schedule in self._schedules.values():  # a step interval changed in the scenario: from here on
            if schedule.next_ms <= reached:
                done = (schedule.step_ms * schedule.played).to_integral_value(rounding=ROUND_CEILING)
                schedule.origin_ms = reached - int(done)

    # ---- the book ---------------------------------------------------------------------------------

    def book(
        self, instrument: InstrumentSpec, levels: int | None = None
    ) -> tuple[list[tuple[Decimal, Decimal]], ...]:
        """The synthetic book: `levels` bids (best first) and asks (best first) around the quote."""
        spec: PriceSpec = self._specs[instrument.symbol]
        quote = self._quotes[instrument.symbol]
        count = min(levels or spec.depth_levels, spec.depth_levels)
        step = instrument.tick_size * spec.depth_step_ticks
        size = spec.depth_size or floor_to(LEVEL_NOTIONAL / quote.mid, instrument.qty_step)
        size = max(size, instrument.min_order_qty)
        bids = [(quote.bid - step * i, size) for i in range(count) if quote.bid - step * i > 0]
        asks = [(quote.ask + step * i, size) for i in range(count)]
        return bids, asks
