"""Recorded price tapes: Bybit klines read from a file, and the path a replay walks through each bar.

A tape file is JSON, either a Bybit `/v5/market/kline` (or mark-price-kline) answer as Bybit sends it
(``{"retCode": 0, "result": {"list": [[startTime, open, high, low, close, ...], ...]}}``, newest first), or
the packaged form: ``{"source": {...}, "intervalMs": 60000, "list": [...]}`` with the same rows and a
`source` naming where the numbers were recorded. Rows may come in any order; they are replayed oldest
first. The packaged tapes live in pilot/paper/tapes/ and are named by their file name.

A bar is replayed as four prices a quarter of its interval apart: its open, then the extreme the bar
reached first, the other extreme, and its close. Which extreme came first a kline does not say; a bar that
closed up is taken to have dipped first (open, low, high, close), one that closed down to have risen first
(open, high, low, close), the usual assumption of bar-replaying backtests.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

POINTS_PER_BAR = 4


class TapeError(ValueError):
    """A tape file that cannot be replayed; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Bar:
    start_ms: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal

    def points(self) -> tuple[Decimal, Decimal, Decimal, Decimal]:
        """The four prices a replay visits, in order (see the module docstring)."""
        if self.close >= self.open:
            return self.open, self.low, self.high, self.close
        return self.open, self.high, self.low, self.close


@dataclass(frozen=True, slots=True)
class Tape:
    name: str
    interval_ms: int
    bars: tuple[Bar, ...]

    def points(self) -> tuple[Decimal, ...]:
        return tuple(price for bar in self.bars for price in bar.points())


def packaged_tapes() -> list[str]:
    """The names of the tapes shipped with Pilot."""
    folder = resources.files("pilot.paper").joinpath("tapes")
    return sorted(item.name for item in folder.iterdir() if item.name.endswith(".json"))


def load_tape(name: str, base: Path | None = None) -> Tape:
    """Read a tape: a packaged tape's file name, or a path (relative to `base`, the scenario's folder).

    Raises:
        TapeError: no such tape, or it is not a kline list this module can replay.
    """
    if name in packaged_tapes():
        text = resources.files("pilot.paper").joinpath("tapes", name).read_text()
    else:
        path = Path(name) if base is None or Path(name).is_absolute() else base / name
        try:
            text = path.read_text()
        except OSError as error:
            known = ", ".join(packaged_tapes())
            raise TapeError(f"cannot read {path} ({error.strerror}); packaged tapes: {known}") from None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise TapeError(f"{name} is not JSON ({error})") from None
    return parse_tape(name, data)


def parse_tape(name: str, data: Any) -> Tape:
    if not isinstance(data, dict):
        raise TapeError(f"{name}: must be a JSON object")
    result = data.get("result")
    rows = result.get("list") if isinstance(result, dict) else data.get("list")
    if not isinstance(rows, list) or not rows:
        raise TapeError(f"{name}: no kline rows (result.list or list)")
    bars = tuple(sorted((_bar(name, i, row) for i, row in enumerate(rows)), key=lambda bar: bar.start_ms))
    starts = [bar.start_ms for bar in bars]
    if len(set(starts)) != len(starts):
        raise TapeError(f"{name}: two rows start at the same time")
    interval = data.get("intervalMs")
    if interval is None:
        if len(bars) < 2:
            raise TapeError(f"{name}: one row does not say its interval; add intervalMs")
        interval = min(b - a for a, b in itertools.pairwise(starts))
    if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
        raise TapeError(f"{name}: intervalMs must be a positive integer, got {interval!r}")
    return Tape(name, interval, bars)


def _bar(name: str, index: int, row: Any) -> Bar:
    if not isinstance(row, list) or len(row) < 5:
        raise TapeError(f"{name}: row {index} must be [startTime, open, high, low, close, ...]")
    try:
        start = int(row[0])
        open_, high, low, close = (Decimal(str(value)) for value in row[1:5])
    except (TypeError, ValueError, InvalidOperation):
        raise TapeError(f"{name}: row {index} holds a value that is not a number") from None
    if not (0 < low <= min(open_, close) and max(open_, close) <= high):
        raise TapeError(
            f"{name}: row {index} is not a bar (low {low}, open {open_}, close {close}, high {high})"
        )
    return Bar(start, open_, high, low, close)
