"""The paper exchange's two clocks: the server's (what signed requests are checked against) and the market's.

On Bybit they are one clock. A paper market that runs `speed` times faster than real time needs two:

* the **server clock** is the callers' frame: the wall clock plus the drift set with `set_clock_offset`. The
  checks that compare a caller's own clock with the exchange's run on it: the recv window of a signed
  request (10002), the rate-limit windows and their reset timestamps, a WebSocket auth request's expiry.
  A caller signs with its wall clock however fast the market runs, so these must not speed up.
* the **market clock** is the simulated world's time: it starts at the wall clock, runs at `speed` (0: only
  `advance()` moves it), carries the same drift, and never runs backwards. Everything the exchange stamps
  or schedules is on it: prices, funding, order, fill and position times, history windows, the answers'
  `time`, `/v5/market/time`, the streams' `ts`.

While the exchange plays an event that fell due between two looks (a price step, a funding settlement), the
market clock is pinned to that event's time, so what the event causes carries its time, not the look's.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from decimal import ROUND_FLOOR, Decimal

WallClock = Callable[[], int]  # milliseconds since the epoch


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ExchangeClock:
    """The server clock and the market clock of one paper exchange (the exchange serialises changes)."""

    def __init__(self, wall: WallClock = wall_clock_ms, speed: Decimal = Decimal(1)) -> None:
        if speed < 0:
            raise ValueError(f"speed must be 0 or more, got {speed}")
        self._wall = wall
        self._speed = speed
        self.offset_ms = 0
        self._anchor_wall = wall()
        self._anchor_market = self._anchor_wall
        self._last = self._anchor_market
        self._pins = threading.local()  # the event being played, seen only by the thread playing it

    @property
    def speed(self) -> Decimal:
        return self._speed

    def server_ms(self) -> int:
        """The exchange server's clock in the callers' frame: their wall clock plus the drift."""
        return self._wall() + self.offset_ms

    def market_ms(self) -> int:
        """The market's time: pinned to the event being played, else the running clock (never backwards)."""
        pinned: int | None = getattr(self._pins, "at", None)
        if pinned is not None:
            return pinned
        self._last = max(self._last, self._running())
        return self._last

    def _running(self) -> int:
        elapsed = Decimal(self._wall() - self._anchor_wall) * self._speed
        return self._anchor_market + int(elapsed.to_integral_value(rounding=ROUND_FLOOR)) + self.offset_ms

    def advance(self, ms: int) -> None:
        """Move the market clock `ms` ahead now; the server clock stays where the wall clock is."""
        if ms < 0:
            raise ValueError(f"the market clock does not go back ({ms} ms)")
        self._anchor_market += ms

    def set_speed(self, speed: Decimal) -> None:
        """Run the market at `speed` from now on (0: it moves only when advanced)."""
        if speed < 0:
            raise ValueError(f"speed must be 0 or more, got {speed}")
        now = self.market_ms()
        self._anchor_wall, self._anchor_market, self._speed = self._wall(), now - self.offset_ms, speed

    def resume_at(self, market_ms: int) -> int:
        """Continue a saved market: its time becomes `market_ms` unless the running clock is past it already
        (the market never runs behind the wall clock it started from). Returns the market time now."""
        now = self.market_ms()
        if market_ms > now:
            self._anchor_market += market_ms - now
        return self.market_ms()

    @contextlib.contextmanager
    def pinned(self, market_ms: int) -> Iterator[None]:
        """Stamp what happens inside with `market_ms` (the time of the event being played)."""
        previous = getattr(self._pins, "at", None)
        self._pins.at = market_ms
        try:
            yield
        finally:
            self._pins.at = previous
