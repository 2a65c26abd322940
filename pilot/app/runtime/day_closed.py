"""The day's closed PnL (linear) as this process has read it, read on from a mark instead of from the day's start.

The daily loss limit counts the derivatives' closed PnL since 00:00 UTC (pilot.core.day_pnl). Read whole on
every judgement, that read grows with the day's trading (one page per 100 rows). `DayClosed` holds the rows
read so far of one day and a running total of their PnL; each read starts OVERLAP before the newest row
held (a row the exchange lists a little after a later one is still found; a row already held is counted
once), so a judgement reads only the rows since. Its bound: the rows of one day, of today's start only (a
day gone by is dropped when the next day's first read comes; pilot.app.facts.day_reads).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from datetime import datetime
from decimal import Decimal

from pilot.core.day_pnl import OVERLAP, ZERO
from pilot.exchange.models import ClosedPnl


def row_key(row: ClosedPnl) -> Hashable:
    """What tells two closed-PnL rows apart: the closing order, when, and what it closed."""
    return (row.order_id, row.updated_at, row.closed_pnl, row.closed_size)


class DayClosed:
    """The closed-PnL rows of the day that starts at `start`, with their realised PnL summed as they come."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.rows: dict[Hashable, ClosedPnl] = {}
        self.realised = ZERO
        self._newest: datetime | None = None

    @property
    def since(self) -> datetime:
        """Where the next read starts: OVERLAP before the newest row held, never before the day."""
        return max(self.start, self._newest - OVERLAP) if self._newest is not None else self.start

    def add(self, batch: Iterable[ClosedPnl]) -> None:
        """Take a read's rows in: those of the day not held yet."""
        for row in batch:
            key = row_key(row)
            if row.updated_at < self.start or key in self.rows:
                continue
            self.rows[key] = row
            self.realised += row.closed_pnl
            if self._newest is None or row.updated_at > self._newest:
                self._newest = row.updated_at

    def realised_since(self, start: datetime) -> Decimal:
        """The realised PnL of the rows updated at or after `start` (the day's own start: the running total)."""
        if start <= self.start:
            return self.realised
        return sum((row.closed_pnl for row in self.rows.values() if row.updated_at >= start), ZERO)
