"""What the journal says that every judgement needs, kept current by reading only what was appended since.

Each plan and each send needs, from the journal: the kill switch, the daily loss limit's latch, how many
orders were sent today, and which sends are still unsettled (pilot.app.facts.pending). Read afresh each time,
that was several queries and a walk over the whole day's sends and outcomes per judgement, growing with
every order. The ledger reads them once, then on each use reads only the rows appended since
(`Journal.read_on`: one query, every process's appends included) and folds them in. A journal that no
longer holds the place it read up to (replaced, cut short), or a clock set back before what was read, makes
it read everything afresh.

Rows are checked as the journal's reads check them: only entries Pilot wrote are folded in.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.runtime.activity import Activity, ActivityView
from pilot.store import Journal, JournalEntry, Mark

WINDOW = timedelta(days=1)  # a send older than this is no longer pending (pilot.app.facts.pending)
PRUNE_EVERY = timedelta(minutes=10)
# Outcomes after which the journal knows what became of a send (outcome_unknown and accepted are not).
SETTLING = frozenset({"filled", "partially_filled", "cancelled", "rejected", "open"})
LATEST = (
    entry_kinds.KILL_SWITCH,
    entry_kinds.LOSS_LIMIT,
    entry_kinds.DRAWDOWN,
    entry_kinds.COOLDOWN,
    entry_kinds.DEAD_MAN,
)
EQUITY_KEPT = timedelta(days=7)  # the longest drawdown window (drawdownWindowHours: 168)
FOLLOWED = frozenset(
    {
        *LATEST,
        entry_kinds.ORDER_SENT,
        entry_kinds.ORDER_OUTCOME,
        entry_kinds.ORDER_RESOLVED,
        entry_kinds.ACTION,
        entry_kinds.EQUITY,
    }
)


@dataclass(frozen=True, slots=True)
class Send:
    """An order.sent entry: what was sent, when, and for which plan."""

    order_link_id: str
    plan_id: str | None
    category: str
    symbol: str
    side: str  # "Buy" | "Sell"
    qty: Decimal
    reduce_only: bool
    sent_at: datetime
    price: Decimal | None = None  # the limit price sent (every create is a limit: market ones are IOC)
    stop_loss: Decimal | None = None  # the stop sent with it (tpslMode Full: the whole position's)

    @staticmethod
    def of(entry: JournalEntry) -> Send:
        request = entry.data["request"]
        return Send(
            order_link_id=request["orderLinkId"],
            plan_id=entry.plan_id,
            category=request["category"],
            symbol=request["symbol"],
            side=request["side"],
            qty=Decimal(request["qty"]),
            reduce_only=bool(request.get("reduceOnly")),
            sent_at=entry.at,
            price=Decimal(request["price"]) if request.get("price") else None,
            stop_loss=Decimal(request["stopLoss"]) if request.get("stopLoss") else None,
        )


@dataclass(frozen=True, slots=True)
class JournalState:
    """The journal's say at one moment: the newest kill switch and loss limit entries, today's sends, and
    the sends of the last WINDOW whose fate it does not know yet (oldest first)."""

    kill_switch: JournalEntry | None
    loss_limit: JournalEntry | None
    sent_today: int
    unsettled: tuple[Send, ...]
    activity: ActivityView  # the messages the throttles count and the turnover (pilot.app.runtime.activity)
    drawdown: JournalEntry | None = None  # the newest drawdown latch entry (pilot.app.runtime.latches)
    cooldown: JournalEntry | None = None
    dead_man: JournalEntry | None = None
    equity_marks: tuple[JournalEntry, ...] = ()  # the equity entries of the last EQUITY_KEPT, oldest first

    @property
    def kill_switch_on(self) -> bool:
        return bool(self.kill_switch and self.kill_switch.data.get("on"))


def utc_date(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


class Ledger:
    """The journal's state for judgements, one per Runtime; safe to use from many tasks at once."""

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._mark: Mark | None = None  # None: nothing read yet
        self._floor = datetime.max.replace(tzinfo=UTC)  # sends and outcomes are known from here on
        self._pruned = self._floor
        self._latest: dict[str, JournalEntry] = {}
        self._unsettled: dict[str, Send] = {}  # by order link id, in the order they were sent
        self._sent_per_day: Counter[date] = Counter()
        self._activity = Activity()
        self._equity: list[JournalEntry] = []
        self._lock = asyncio.Lock()
        self._asked = 0
        self._served = 0

    async def state(self, now: datetime) -> JournalState:
        """The state as of `now`, with everything journaled before this call began folded in."""
        self._asked += 1
        ticket = self._asked
        async with self._lock:
            # Read on unless a read began since this call did; afresh if `now` is before what is known.
            if self._served < ticket or now - WINDOW < self._floor:
                asked = self._asked
                await self._read(now)
                self._served = asked
            since = now - WINDOW
            self._prune(since)
            return JournalState(
                kill_switch=self._latest.get(entry_kinds.KILL_SWITCH),
                loss_limit=self._latest.get(entry_kinds.LOSS_LIMIT),
                sent_today=self._sent_per_day[utc_date(now)],
                unsettled=tuple(s for s in self._unsettled.values() if s.sent_at >= since),
                activity=self._activity.view(now),
                drawdown=self._latest.get(entry_kinds.DRAWDOWN),
                cooldown=self._latest.get(entry_kinds.COOLDOWN),
                dead_man=self._latest.get(entry_kinds.DEAD_MAN),
                equity_marks=tuple(self._equity),
            )

    async def _read(self, now: datetime) -> None:
        """Read on from the mark, after reading afresh when needed. A fresh read ends at its mark, and what
        was appended meanwhile (a newer kill switch entry, say, that `_load` had to leave out) is read on
        from there before the state is answered."""
        while True:
            if self._mark is None or now - WINDOW < self._floor:
                await self._load(now)
            assert self._mark is not None, "_load sets the mark"
            read = await self._journal.read_on(self._mark, FOLLOWED)
            if read is not None:
                entries, self._mark = read
                for entry in entries:
                    self._fold(entry)
                return
            self._mark = None  # the journal no longer holds the mark: read afresh

    async def _load(self, now: datetime) -> None:
        """Read afresh: the newest kill switch and loss limit entries, the last WINDOW's sends and what
        settled them (an entry of a later seq)."""
        journal, since = self._journal, now - WINDOW
        mark = await journal.mark()
        latest = await asyncio.gather(*(journal.latest(kind) for kind in LATEST))
        sends = await journal.entries(kind=entry_kinds.ORDER_SENT, since=since)
        first = sends[0].seq if sends else mark.seq
        settles = await journal.entries(
            kind=(entry_kinds.ORDER_OUTCOME, entry_kinds.ORDER_RESOLVED), after=first
        )
        actions = await journal.entries(kind=entry_kinds.ACTION, since=since)  # amends and cancels
        marks = await journal.entries(kind=entry_kinds.EQUITY, since=now - EQUITY_KEPT)
        self._latest.clear()
        self._equity.clear()
        self._unsettled.clear()
        self._sent_per_day.clear()
        self._activity.clear()
        # Rows appended after `mark` are left to the next read on, which starts there.
        entries = (
            e for e in (*latest, *sends, *settles, *actions, *marks) if e is not None and e.seq <= mark.seq
        )
        for entry in sorted(entries, key=_seq):
            self._fold(entry)
        self._mark, self._floor, self._pruned = mark, since, since

    def _fold(self, entry: JournalEntry) -> None:
        """Take one entry in, in seq order: a send is unsettled until a later entry settles it."""
        kind, data = entry.kind, entry.data
        self._activity.fold(entry)
        if kind in LATEST:
            known = self._latest.get(kind)
            if known is None or known.seq < entry.seq:
                self._latest[kind] = entry
        elif kind == entry_kinds.EQUITY:
            self._equity.append(entry)
        elif kind == entry_kinds.ORDER_SENT:
            send = Send.of(entry)
            self._sent_per_day[utc_date(entry.at)] += 1
            self._unsettled[send.order_link_id] = send
        elif kind == entry_kinds.ORDER_RESOLVED or (
            kind != entry_kinds.ACTION and data.get("status") in SETTLING
        ):
            self._unsettled.pop(str(data.get("order_link_id")), None)

    def _prune(self, since: datetime) -> None:
        """Forget sends older than the window, now and then (the window only moves on: a clock set back
        before what is known reads everything afresh)."""
        if since - self._pruned < PRUNE_EVERY:
            return
        self._unsettled = {k: s for k, s in self._unsettled.items() if s.sent_at >= since}
        for day in [d for d in self._sent_per_day if d < utc_date(since)]:
            del self._sent_per_day[day]
        self._activity.prune(since)
        self._equity = [entry for entry in self._equity if entry.at >= since - (EQUITY_KEPT - WINDOW)]
        self._pruned = self._floor = since


def _seq(entry: JournalEntry) -> int:
    return entry.seq
