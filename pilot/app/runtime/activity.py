"""What this home sent lately, from its journal: the order messages the throttles count, and the notional the
turnover caps count.

Every process of a home journals each create (`order.sent`) and each amend and cancel (an `action` entry,
phase "sent") before the request leaves, so the journal is where Bybit's way of counting (every request,
per account, in a rolling window) can be restated across processes. The Ledger folds the entries in as it
reads them (pilot.app.runtime.ledger); `Activity.view` answers for one moment.

Turnover counts an order's notional when it is sent: an order that may rest counts in full (it may fill at
any time, as caps count resting orders as filled), an IOC order what it filled once its outcome says so, a
rejected one nothing, one whose outcome is unknown in full; an amend counts what it adds.

Windows are lengths of real time, measured on the store's clock (pilot.store.monotonic) from each entry's
stamp (by the wall clock only for an entry from before the store kept one); the UTC day is every day `Today`
says it is (pilot.app.road.clock), so a wall clock that steps across midnight opens no second day's turnover.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, overload

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.app.road.clock import Today
from pilot.core.facts import NO_TURNOVER, Turnover
from pilot.store import Instant, JournalEntry, age

MESSAGE_WINDOW = timedelta(minutes=1)  # the longest throttle window
TURNOVER_WINDOW = timedelta(days=1)
MESSAGE_TOOLS = frozenset({"cancel_order", "cancel_all_orders", "amend_order"})
NOTHING_FILLED = frozenset({"rejected", "never_executed"})
IOC_FINAL = frozenset({"filled", "partially_filled", "cancelled"})


@dataclass(frozen=True, slots=True)
class ActivityView:
    """The ages of the messages of the last minute (newest first), and the turnover."""

    messages: Sequence[timedelta]
    turnover: Turnover


class MessageAges(Sequence[timedelta]):
    """The ages of the messages of the last minute as of one moment, newest first, each worked out only when
    asked: a throttle reads one (the cap-th newest), so a judgement costs the same with 10 messages in the
    window or 60,000. A view of `_Messages.times[start:stop]`, which only grows at its end while this view
    lives (compacting makes a new list), so taking one copies nothing."""

    __slots__ = ("_here", "_now", "_start", "_stop", "_times")

    def __init__(
        self,
        times: list[tuple[datetime, Instant | None]],
        start: int,
        stop: int,
        now: datetime,
        here: Instant,
    ) -> None:
        self._times, self._start, self._stop, self._now, self._here = times, start, stop, now, here

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> timedelta: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[timedelta, ...]: ...
    def __getitem__(self, index: int | slice) -> timedelta | tuple[timedelta, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return _age(*self._times[self._stop - 1 - index], self._now, self._here)

    def __iter__(self) -> Iterator[timedelta]:
        for at, stamp in reversed(self._times[self._start : self._stop]):
            yield _age(at, stamp, self._now, self._here)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"MessageAges({tuple(self)!r})"


@dataclass(slots=True)
class _Messages:
    """The creates, amends and cancels of the last MESSAGE_WINDOW, oldest first: a list read from `start`
    on, so a view of it (MessageAges) is taken without a copy. Bound: the messages of one MESSAGE_WINDOW
    (at most maxOrderMessagesPerMinute's 60,000 while it is set, and whatever was sent in a minute else).

    While every message was stamped on the store's clock in one boot in an order its stamps agree with
    (the journal's seq order: the usual case), the newest is last and ages are read in place; otherwise
    (an entry from before the store kept a clock, another boot's, two processes' stamps crossing) the view
    is the sorted ages, as they always were."""

    times: list[tuple[datetime, Instant | None]] = field(default_factory=list)
    start: int = 0
    ordered: bool = True  # every stamp in one boot, not older than the one before it

    def clear(self) -> None:
        self.times, self.start, self.ordered = [], 0, True

    def append(self, at: datetime, stamp: Instant | None) -> None:
        if self.start < len(self.times):
            last = self.times[-1][1]
            if stamp is None or last is None or stamp.boot != last.boot or stamp.micros < last.micros:
                self.ordered = False
        elif stamp is None:
            self.ordered = False
        else:
            self.ordered = True  # an empty window starts afresh
        self.times.append((at, stamp))

    def expire(self, now: datetime, here: Instant) -> None:
        """Forget the messages that left the window (from the oldest: amortized constant work)."""
        times, start = self.times, self.start
        while start < len(times) and _age(*times[start], now, here) >= MESSAGE_WINDOW:
            start += 1
        if start > 1024 and start * 2 > len(times):
            self.times, start = times[start:], 0  # a new list: views of the old one keep theirs
        self.start = start

    def view(self, now: datetime, here: Instant) -> Sequence[timedelta]:
        if self.ordered:
            return MessageAges(self.times, self.start, len(self.times), now, here)
        ages = (_age(at, stamp, now, here) for at, stamp in self.times[self.start :])
        return tuple(sorted(age for age in ages if age >= timedelta(0)))


NO_ACTIVITY = ActivityView((), NO_TURNOVER)


@dataclass(slots=True)
class _Sent:
    at: datetime
    stamp: Instant | None
    notional: Decimal
    ioc: bool = False
    price: Decimal = Decimal(0)
    counted: bool = True  # still inside the rolling window's total

    def age(self, now: datetime, here: Instant) -> timedelta:
        return _age(self.at, self.stamp, now, here)


def _age(at: datetime, stamp: Instant | None, now: datetime, here: Instant) -> timedelta:
    """How long ago an entry was: on the store's clock, or by the wall clock for one without a stamp."""
    since = age(here, stamp)
    return since if since is not None else now - at


@dataclass(slots=True)
class Activity:
    """The recent messages and sends of a home, folded in journal order. Totals are kept as entries come in
    and leave the window, so a judgement does not walk the day's orders."""

    messages: _Messages = field(default_factory=_Messages)  # in journal order
    sends: dict[str, _Sent] = field(default_factory=dict)  # by order link id (an amend by its entry seq)
    window: deque[_Sent] = field(default_factory=deque)  # the last TURNOVER_WINDOW's, in journal order
    rolling: Decimal = Decimal(0)
    per_day: dict[date, Decimal] = field(default_factory=dict)

    def clear(self) -> None:
        self.messages.clear()
        self.sends.clear()
        self.window.clear()
        self.rolling = Decimal(0)
        self.per_day.clear()

    def fold(self, entry: JournalEntry) -> None:
        """Take one entry in: a create, amend or cancel is a message; a send or an amend adds turnover, an
        outcome corrects what an IOC order filled."""
        kind, data = entry.kind, entry.data
        if kind == entry_kinds.ORDER_SENT:
            request = sent_request(data.get("request"))
            self.messages.append(entry.at, entry.clock)
            qty, price = _decimal(request.get("qty")), _decimal(request.get("price"))
            ioc = request.get("time_in_force") == "IOC"
            self._add(
                str(request.get("order_link_id")), _Sent(entry.at, entry.clock, qty * price, ioc, price)
            )
        elif kind == entry_kinds.ACTION and data.get("phase") == "sent" and data.get("tool") in MESSAGE_TOOLS:
            self.messages.append(entry.at, entry.clock)
            if data.get("tool") == "amend_order":  # what is left of it, at its new price against its old
                filled = _decimal(data.get("filled"))
                now = (_decimal(data.get("qty")) - filled) * _decimal(data.get("price"))
                was = (_decimal(data.get("was_qty")) - filled) * _decimal(data.get("was_price"))
                self._add(f"amend:{entry.seq}", _Sent(entry.at, entry.clock, max(now - was, Decimal(0))))
        elif kind in (entry_kinds.ORDER_OUTCOME, entry_kinds.ORDER_RESOLVED):
            self._settled(data)

    def _add(self, key: str, send: _Sent) -> None:
        self.sends[key] = send
        self.window.append(send)
        self.rolling += send.notional
        day = send.at.astimezone(UTC).date()
        self.per_day[day] = self.per_day.get(day, Decimal(0)) + send.notional

    def _settled(self, data: Mapping[str, Any]) -> None:
        send = self.sends.get(str(data.get("order_link_id")))
        status = data.get("status")
        if send is None or not isinstance(status, str):
            return
        if status in NOTHING_FILLED:
            notional = Decimal(0)
        elif send.ioc and status in IOC_FINAL:
            fill = data.get("fill")
            filled = fill.get("filled_qty") if isinstance(fill, dict) else data.get("filled_qty")
            average = fill.get("avg_price") if isinstance(fill, dict) else None
            notional = _decimal(filled) * (_decimal(average) if average else send.price)
        else:
            return
        change, send.notional = notional - send.notional, notional
        day = send.at.astimezone(UTC).date()
        self.per_day[day] = self.per_day.get(day, Decimal(0)) + change
        if send.counted:
            self.rolling += change

    def prune(self, now: datetime, here: Instant, kept: timedelta) -> None:
        """Forget sends older than `kept`, and the days before them."""
        self.sends = {key: send for key, send in self.sends.items() if send.age(now, here) <= kept}
        oldest = (now - kept).astimezone(UTC).date()
        for day in [day for day in self.per_day if day < oldest]:
            del self.per_day[day]

    def view(self, now: datetime, here: Instant, today: Today) -> ActivityView:
        """The messages of the last minute and the turnover, as of `now` (which only moves on)."""
        self.messages.expire(now, here)
        while self.window and self.window[0].age(now, here) >= TURNOVER_WINDOW:
            gone = self.window.popleft()
            gone.counted = False
            self.rolling -= gone.notional
        frees = now + (TURNOVER_WINDOW - self.window[0].age(now, here)) if self.window else None
        day = sum((self.per_day.get(one, Decimal(0)) for one in today.days()), Decimal(0))
        return ActivityView(self.messages.view(now, here), Turnover(day, self.rolling, frees))


def _decimal(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else Decimal(0)
    except ArithmeticError:
        return Decimal(0)
