"""Time as a dependency: the use cases ask a Clock, tests hand them one they control.

The Clock is the wall clock: what an entry, a receipt or a retry time says, and which UTC day it is. Every
length of time a limit depends on (a plan's life, a lease, a send's age) is measured on the store's own
clock instead (pilot.store.monotonic), which never steps; the day is decided by both (`Today`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol

from pilot.store import Instant, StoreClock


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def store_clock(clock: Clock) -> StoreClock | None:
    """The clock itself when it keeps the store's time too (a test's, which it moves), else None: the store
    then reads this machine's boot clock."""
    return clock if isinstance(clock, StoreClock) else None


def elapsed(here: Instant, then: Instant | None) -> timedelta | None:
    """Exactly how long ago `then` was on the store's clock: None when not known (an entry from before
    the store kept a clock, or from another boot)."""
    if then is None or then.boot != here.boot:
        return None
    return max(timedelta(microseconds=here.micros - then.micros), timedelta(0))


def midnight(moment: datetime) -> datetime:
    """00:00 UTC of the day `moment` falls in."""
    return datetime.combine(moment.astimezone(UTC).date(), time(0), tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Today:
    """Which moments fall in today (UTC), by every clock involved.

    A wall clock that steps makes "today" ambiguous: after a step back at 00:00:01 the wall says yesterday,
    though orders were sent a second ago today; after a step forward at 23:30, it says tomorrow, though the
    day's orders were sent minutes ago. So a moment stamped `at` by the wall clock of its time and `stamp` by
    the store's is today when either clock says so: its own wall clock carried on by the real time since
    (`at` plus that time is still `at`'s day: that clock has not left its day yet), or the wall clock now
    carried back by that time (it dates the moment today). Without steps the two agree; with one, a day's
    orders and its loss latch count for every day they fall in, so no step opens a second allowance. A
    moment whose real age is unknown (stamped before the store kept a clock, or in another boot) is today
    when its wall date is. `head` is the newest entry's (wall, store) stamp, whose own clock also names a
    day (`starts`).
    """

    now: datetime
    here: Instant
    head: tuple[datetime, Instant | None] | None = None

    def holds(self, at: datetime, stamp: Instant | None) -> bool:
        """Whether a moment stamped `at` (wall) and `stamp` (store clock) falls in today."""
        since = elapsed(self.here, stamp)
        if since is None:
            return at.astimezone(UTC).date() == self.now.astimezone(UTC).date()
        own = (at + since).astimezone(UTC).date() == at.astimezone(UTC).date()
        return own or since <= self.now - midnight(self.now)

    def days(self) -> tuple[date, ...]:
        """The UTC dates today is by each clock involved: the wall clock now's, and the newest entry's own
        clock carried on to now (the same date unless the wall clock stepped across midnight since)."""
        dates = {self.now.astimezone(UTC).date()}
        if self.head is not None:
            at, stamp = self.head
            since = elapsed(self.here, stamp)
            if since is not None:
                dates.add((at + since).astimezone(UTC).date())
        return tuple(sorted(dates))

    def starts(self) -> tuple[datetime, ...]:
        """00:00 UTC of each of `days`, earliest first: where the day's PnL is counted from, by each clock."""
        return tuple(datetime.combine(day, time(0), tzinfo=UTC) for day in self.days())
