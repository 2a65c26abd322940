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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

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

    messages: tuple[timedelta, ...]
    turnover: Turnover


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

    messages: deque[tuple[datetime, Instant | None]] = field(default_factory=deque)  # in journal order
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
            self.messages.append((entry.at, entry.clock))
            qty, price = _decimal(request.get("qty")), _decimal(request.get("price"))
            ioc = request.get("time_in_force") == "IOC"
            self._add(
                str(request.get("order_link_id")), _Sent(entry.at, entry.clock, qty * price, ioc, price)
            )
        elif kind == entry_kinds.ACTION and data.get("phase") == "sent" and data.get("tool") in MESSAGE_TOOLS:
            self.messages.append((entry.at, entry.clock))
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
        while self.messages and _age(*self.messages[0], now, here) >= MESSAGE_WINDOW:
            self.messages.popleft()
        while self.window and self.window[0].age(now, here) >= TURNOVER_WINDOW:
            gone = self.window.popleft()
            gone.counted = False
            self.rolling -= gone.notional
        ages = tuple(
            sorted(
                age
                for age in (_age(at, stamp, now, here) for at, stamp in self.messages)
                if age >= timedelta(0)
            )
        )
        frees = now + (TURNOVER_WINDOW - self.window[0].age(now, here)) if self.window else None
        day = sum((self.per_day.get(one, Decimal(0)) for one in today.days()), Decimal(0))
        return ActivityView(ages, Turnover(day, self.rolling, frees))


def _decimal(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else Decimal(0)
    except ArithmeticError:
        return Decimal(0)
