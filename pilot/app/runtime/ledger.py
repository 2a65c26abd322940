"""What the journal says that every judgement needs, kept current by reading only what was appended since.

Each plan and each send needs, from the journal: the kill switch, the daily loss limit's latch, how many
orders were sent today, and which sends are still unsettled (pilot.app.facts.pending). Read afresh each time,
that was several queries and a walk over the whole day's sends and outcomes per judgement, growing with
every order. The ledger reads them once, then on each use reads only the rows appended since
(`Journal.read_on`: one query, every process's appends included) and folds them in. A journal that no
longer holds the place it read up to (replaced, cut short), or a clock set back before what was read, makes
it read everything afresh.

Times are the store's where a length of time decides: a send stays unsettled for WINDOW of the store's clock
(pilot.store.monotonic), whatever the wall clock did; "today" is decided by every clock involved
(pilot.app.road.clock.Today), so the day's count of sends survives a step either way.

Rows are checked as the journal's reads check them: only entries Pilot wrote are folded in.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.app.road.clock import Today
from pilot.app.runtime.activity import NO_ACTIVITY, Activity, ActivityView
from pilot.app.runtime.agent_holdings import Holdings, kept_within
from pilot.core.facts import AgentFacts
from pilot.store import Instant, Journal, JournalEntry, Mark, age, agent_of

WINDOW = timedelta(days=1)  # a send older than this is no longer pending (pilot.app.facts.pending)
KEPT = timedelta(days=2)  # sends kept for the day's count: a day by one clock ends within a day of another's
PRUNE_EVERY = timedelta(minutes=10)
# Outcomes after which the journal knows what became of a send (outcome_unknown and accepted are not).
SETTLING = frozenset({"filled", "partially_filled", "cancelled", "rejected", "open"})
LATEST = (
    entry_kinds.KILL_SWITCH,
    entry_kinds.LIVE,
    entry_kinds.LOSS_LIMIT,
    entry_kinds.DRAWDOWN,
    entry_kinds.COOLDOWN,
    entry_kinds.DEAD_MAN,
)
EQUITY_KEPT = timedelta(days=7)  # the longest drawdown window (drawdownWindowHours: 168)
FOLLOWED = frozenset(
    {
        *LATEST,
        entry_kinds.AGENT_SWITCH,
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
    stop_loss: Decimal | None = None  # the stop sent with it (on Bybit, the whole position's once it fills)
    stamp: Instant | None = None  # when it was sent on the store's clock (None: journaled before it had one)

    @staticmethod
    def of(entry: JournalEntry) -> Send:
        request = sent_request(entry.data["request"])
        return Send(
            order_link_id=request["order_link_id"],
            plan_id=entry.plan_id,
            category=request["category"],
            symbol=request["symbol"],
            side=request["side"],
            qty=Decimal(request["qty"]),
            reduce_only=bool(request.get("reduce_only")),
            sent_at=entry.at,
            price=Decimal(request["price"]) if request.get("price") else None,
            stop_loss=Decimal(request["stop_loss"]) if request.get("stop_loss") else None,
            stamp=entry.clock,
        )

    def age(self, now: datetime, here: Instant) -> timedelta:
        """How long ago it was sent, on the store's clock (from an earlier boot: at least this boot's
        uptime); by the wall clock only for a send journaled before the store kept a clock."""
        since = age(here, self.stamp)
        return since if since is not None else now - self.sent_at


@dataclass(frozen=True, slots=True)
class Sent:
    """When a send was made, by the wall clock and the store's: all a day's count keeps of it (bounded by
    the sends of KEPT: at most two days of dailyOrderCap)."""

    sent_at: datetime
    stamp: Instant | None

    def age(self, now: datetime, here: Instant) -> timedelta:
        since = age(here, self.stamp)
        return since if since is not None else now - self.sent_at


class SendsByDay:
    """The sends of the last KEPT, and how many fall in today by every clock involved (pilot.app.road.clock.
    Today), counted without a walk over the day's orders while the clocks agree.

    While every send was stamped in this boot with its wall clock and the store's one apart by the same
    offset as now (within ONE_CLOCK: no step since), and neither now nor the send is within EDGE of a
    midnight, both clocks of `Today.holds` name the same day: the send's own UTC date. Such sends are
    counted per date; the few near a midnight are judged one by one; after a step, every send is.
    """

    EDGE = timedelta(seconds=2)
    ONE_CLOCK = timedelta(seconds=1)

    def __init__(self) -> None:
        self.sends: list[Sent] = []  # in the order they were sent
        self._per_day: Counter[date] = Counter()  # the sends away from midnight, by their own UTC date
        self._edge: list[Sent] = []  # the sends within EDGE of a midnight
        # wall minus store clock, microseconds, of the stamped sends: the least and the most (running
        # figures: a judgement asks for them, and a day can hold tens of thousands of sends)
        self._offsets: tuple[int, int] | None = None
        self._boots: set[str | None] = set()

    def add(self, send: Send | Sent) -> None:
        send = Sent(send.sent_at, send.stamp)  # the moment only: a day's count needs no more of it
        self.sends.append(send)
        self._boots.add(send.stamp.boot if send.stamp is not None else None)
        if send.stamp is not None:
            offset = _offset(send.sent_at, send.stamp)
            low, high = self._offsets or (offset, offset)
            self._offsets = (min(low, offset), max(high, offset))
        if _near_midnight(send.sent_at, self.EDGE):
            self._edge.append(send)
        else:
            self._per_day[send.sent_at.astimezone(UTC).date()] += 1

    def keep(self, wanted: Callable[[Sent], bool]) -> None:
        kept, self.sends = [send for send in self.sends if wanted(send)], []
        self._per_day, self._edge, self._offsets, self._boots = Counter(), [], None, set()
        for send in kept:
            self.add(send)

    def count(self, today: Today) -> int:
        if self._one_clock(today) and not _near_midnight(today.now, self.EDGE):
            day = today.now.astimezone(UTC).date()
            return self._per_day[day] + sum(1 for send in self._edge if today.holds(send.sent_at, send.stamp))
        return sum(1 for send in self.sends if today.holds(send.sent_at, send.stamp))

    def _one_clock(self, today: Today) -> bool:
        if not self.sends:
            return True
        if self._boots != {today.here.boot}:
            return False
        now = _offset(today.now, today.here)
        spread = self.ONE_CLOCK.total_seconds() * 1_000_000
        if self._offsets is None:
            return False
        low, high = self._offsets
        return high - spread <= now <= low + spread


def _offset(at: datetime, stamp: Instant) -> int:
    return round(at.timestamp() * 1_000_000) - stamp.micros


def _near_midnight(moment: datetime, within: timedelta) -> bool:
    utc = moment.astimezone(UTC)
    since = utc - datetime.combine(utc.date(), time(0), tzinfo=UTC)
    return since < within or timedelta(days=1) - since < within


@dataclass(frozen=True, slots=True)
class JournalState:
    """The journal's say at one moment: the newest kill switch and loss limit entries, today's sends, and
    the sends of the last WINDOW whose fate it does not know yet (oldest first). `mark` is the seq it
    holds to (everything up to it is folded in); `today` which moments count as today."""

    kill_switch: JournalEntry | None
    loss_limit: JournalEntry | None
    sent_today: int
    unsettled: tuple[Send, ...]
    mark: int
    today: Today
    rolled_back: bool = False  # the journal lost entries it was anchored at (pilot.store.anchor)
    # the messages the throttles count and the turnover (pilot.app.runtime.activity)
    activity: ActivityView = NO_ACTIVITY
    drawdown: JournalEntry | None = None  # the newest drawdown latch entry (pilot.app.runtime.latches)
    cooldown: JournalEntry | None = None
    dead_man: JournalEntry | None = None
    equity_marks: tuple[JournalEntry, ...] = ()  # the equity entries of the last EQUITY_KEPT, oldest first
    live: JournalEntry | None = None  # the newest live entry (pilot.app.human.going_live)
    # Each named agent's newest switch entry (its kill switch, its revoke) and what its budget counts.
    agent_switches: Mapping[str, JournalEntry] = field(default_factory=dict)
    agents: Mapping[str, AgentFacts] = field(default_factory=dict)
    agent_orders: Mapping[str, frozenset[str]] = field(default_factory=dict)  # its sends' link ids, last KEPT

    @property
    def kill_switch_on(self) -> bool:
        return bool(self.kill_switch and self.kill_switch.data.get("on"))

    @property
    def live_on(self) -> bool:
        """Whether a human's opt-in to live trading stands: no kill switch entry, and no live off, since."""
        live, switch = self.live, self.kill_switch
        if live is None or not live.data.get("on"):
            return False
        return switch is None or switch.seq < live.seq

    def agent_switch(self, name: str) -> JournalEntry | None:
        """Agent `name`'s switch entry while it is on (None: off, or never turned on)."""
        entry = self.agent_switches.get(name)
        return entry if entry is not None and entry.data.get("on") else None

    def agent(self, name: str) -> AgentFacts:
        """What agent `name`'s budget counts (nothing yet: zeros)."""
        return self.agents.get(name) or AgentFacts(name)


@dataclass(slots=True)
class _AgentBook:
    """One named agent's sends: the day's count and its activity (turnover), folded as the home's are."""

    sends: SendsByDay = field(default_factory=lambda: SendsByDay())
    activity: Activity = field(default_factory=Activity)
    orders: dict[str, Sent] = field(default_factory=dict)  # its sends' link ids, with when (kept KEPT)
    held: Holdings = field(default_factory=Holdings)  # what its sends put in each market


class Ledger:
    """The journal's state for judgements, one per Runtime; safe to use from many tasks at once."""

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._mark: Mark | None = None  # None: nothing read yet
        self._floor = datetime.max.replace(tzinfo=UTC)  # sends and outcomes are known from here on
        self._pruned = self._floor
        self._latest: dict[str, JournalEntry] = {}
        self._unsettled: dict[str, Send] = {}  # by order link id, in the order they were sent
        self._sends = SendsByDay()  # the last KEPT's: the day's count
        self._head: tuple[datetime, Instant | None] | None = None  # the newest entry folded in
        self._activity = Activity()
        self._equity: list[JournalEntry] = []
        self._switches: dict[str, JournalEntry] = {}  # each agent's newest switch entry
        self._books: dict[str, _AgentBook] = {}  # each named agent's sends
        self._lock = asyncio.Lock()
        self._asked = 0
        self._served = 0

    async def state(self, now: datetime) -> JournalState:
        """The state as of `now`, with everything journaled before this call began folded in."""
        self._asked += 1
        ticket = self._asked
        async with self._lock:
            # Read on unless a read began since this call did; afresh if `now` is before what is known.
            if self._served < ticket or now - KEPT < self._floor:
                asked = self._asked
                await self._read(now)
                self._served = asked
            if (
                self._journal.rollback is not None
            ):  # until the finding is journaled and the journal anchored anew
                await self._journal.check_anchor()
            here = self._journal.clock.read()
            self._prune(now, here)
            today = Today(now, here, self._head)
            return JournalState(
                kill_switch=self._latest.get(entry_kinds.KILL_SWITCH),
                loss_limit=self._latest.get(entry_kinds.LOSS_LIMIT),
                sent_today=self._sends.count(today),
                unsettled=tuple(s for s in self._unsettled.values() if s.age(now, here) <= WINDOW),
                mark=self._mark.seq if self._mark is not None else 0,
                today=today,
                rolled_back=self._journal.rollback is not None,
                activity=self._activity.view(now, here, today),
                drawdown=self._latest.get(entry_kinds.DRAWDOWN),
                cooldown=self._latest.get(entry_kinds.COOLDOWN),
                dead_man=self._latest.get(entry_kinds.DEAD_MAN),
                equity_marks=tuple(self._equity),
                live=self._latest.get(entry_kinds.LIVE),
                agent_switches=dict(self._switches),
                agents=self._agent_facts(now, here, today),
                agent_orders={name: frozenset(book.orders) for name, book in self._books.items()},
            )

    def _agent_facts(self, now: datetime, here: Instant, today: Today) -> dict[str, AgentFacts]:
        return {
            name: AgentFacts(
                name, book.sends.count(today), book.activity.view(now, here, today).turnover, book.held.view()
            )
            for name, book in self._books.items()
        }

    async def _read(self, now: datetime) -> None:
        """Read on from the mark, after reading afresh when needed. A fresh read ends at its mark, and what
        was appended meanwhile (a newer kill switch entry, say, that `_load` had to leave out) is read on
        from there before the state is answered."""
        while True:
            if self._mark is None or now - KEPT < self._floor:
                await self._load(now)
            assert self._mark is not None, "_load sets the mark"
            read = await self._journal.read_on(self._mark, FOLLOWED)
            if read is not None:
                entries, self._mark = read
                for entry in entries:
                    self._fold(entry)
                return
            self._mark = None  # the journal no longer holds the mark: read afresh
            await self._journal.check_anchor()  # and see whether it was rolled back (journal.rollback)

    async def _load(self, now: datetime) -> None:
        """Read afresh: the newest kill switch and loss limit entries, the sends of the last KEPT (by the
        wall clock or the store's) and what settled them (an entry of a later seq)."""
        journal, since = self._journal, now - KEPT
        mark = await journal.mark()
        latest = await asyncio.gather(*(journal.latest(kind) for kind in LATEST))
        recent = journal.clock.read().plus(-KEPT)
        sends = await journal.entries(kind=entry_kinds.ORDER_SENT, since=since, or_since=recent)
        first = sends[0].seq if sends else mark.seq
        settles = await journal.entries(
            kind=(entry_kinds.ORDER_OUTCOME, entry_kinds.ORDER_RESOLVED), after=first
        )
        actions = await journal.entries(kind=entry_kinds.ACTION, since=since)  # amends and cancels
        marks = await journal.entries(kind=entry_kinds.EQUITY, since=now - EQUITY_KEPT)
        switches = await journal.entries(kind=entry_kinds.AGENT_SWITCH)
        self._latest.clear()
        self._switches.clear()
        self._books.clear()
        self._equity.clear()
        self._unsettled.clear()
        self._sends = SendsByDay()
        self._head = None
        self._activity.clear()
        # Rows appended after `mark` are left to the next read on, which starts there.
        entries = (
            e
            for e in (*latest, *sends, *settles, *actions, *marks, *switches)
            if e is not None and e.seq <= mark.seq
        )
        for entry in sorted(entries, key=_seq):
            self._fold(entry)
        self._mark, self._floor, self._pruned = mark, since, since

    def _fold(self, entry: JournalEntry) -> None:
        """Take one entry in, in seq order: a send is unsettled until a later entry settles it."""
        kind, data = entry.kind, entry.data
        self._head = (entry.at, entry.clock)
        self._activity.fold(entry)
        self._fold_agent(entry)
        if kind in LATEST:
            known = self._latest.get(kind)
            if known is None or known.seq < entry.seq:
                self._latest[kind] = entry
        elif kind == entry_kinds.EQUITY:
            self._equity.append(entry)
        elif kind == entry_kinds.ORDER_SENT:
            send = Send.of(entry)
            self._sends.add(send)
            self._unsettled[send.order_link_id] = send
        elif kind == entry_kinds.ORDER_RESOLVED or (
            kind != entry_kinds.ACTION and data.get("status") in SETTLING
        ):
            self._unsettled.pop(str(data.get("order_link_id")), None)

    def _fold_agent(self, entry: JournalEntry) -> None:
        """A named agent's switch, send or message goes to its own book too; an outcome to every book (only
        the one that sent the order knows it)."""
        kind, name = entry.kind, agent_of(entry.actor)
        if kind == entry_kinds.AGENT_SWITCH:
            agent = str(entry.data.get("agent"))
            known = self._switches.get(agent)
            if known is None or known.seq < entry.seq:
                self._switches[agent] = entry
        elif kind in (entry_kinds.ORDER_OUTCOME, entry_kinds.ORDER_RESOLVED):
            for book in self._books.values():
                book.activity.fold(entry)
                book.held.outcome(entry.data)
        elif name is not None and kind in (entry_kinds.ORDER_SENT, entry_kinds.ACTION):
            book = self._books.setdefault(name, _AgentBook())
            book.activity.fold(entry)
            if kind == entry_kinds.ORDER_SENT:
                send = Send.of(entry)
                book.sends.add(send)
                book.orders[send.order_link_id] = Sent(send.sent_at, send.stamp)
                book.held.send(entry)

    def _prune(self, now: datetime, here: Instant) -> None:
        """Forget sends older than KEPT (by the store's clock when it can tell), now and then (the window
        only moves on: a clock set back before what is known reads everything afresh)."""
        since = now - KEPT
        if since - self._pruned < PRUNE_EVERY:
            return
        self._unsettled = {k: s for k, s in self._unsettled.items() if s.age(now, here) <= KEPT}
        self._sends.keep(lambda send: send.age(now, here) <= KEPT)
        self._activity.prune(now, here, KEPT)
        for book in self._books.values():
            book.sends.keep(lambda send: send.age(now, here) <= KEPT)
            book.activity.prune(now, here, KEPT)
            book.orders = {link: sent for link, sent in book.orders.items() if sent.age(now, here) <= KEPT}
            book.held.keep(kept_within(KEPT, now, here))
        self._equity = [entry for entry in self._equity if age_of(entry, now, here) <= EQUITY_KEPT]
        self._pruned = self._floor = since


def age_of(entry: JournalEntry, now: datetime, here: Instant) -> timedelta:
    """How long ago an entry was written: on the store's clock, or by the wall clock for one without a stamp."""
    since = age(here, entry.clock)
    return since if since is not None else now - entry.at


def _seq(entry: JournalEntry) -> int:
    return entry.seq
