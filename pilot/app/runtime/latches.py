"""The drawdown latch and the cooldown after losses: what the journal keeps of them, and when Pilot writes it.

Drawdown. Every judgement reads the equity; while a drawdown rule is set, an equity above the peak Pilot has
seen in the window (the UTC day, or the last `drawdownWindowHours`) is journaled (`equity`), and in a rolling
window one more now and then (every twenty-fourth of it), so the window's peak is known to within that when
older ones leave it. Past the limit Pilot journals `drawdown` on with the numbers, and trading is reducing
until the window passes (00:00 UTC, or the window's length after the latch) or a human resets it
(`pilot drawdown reset`), which counts the peak afresh from the equity the latch recorded.

Cooldown. When the closed trades show enough losses (pilot.core.controls.cooldown_due), Pilot journals
`cooldown` on, naming the newest losing trade; the cooldown lasts `cooldown.minutes` from that entry. The
same trade never starts a second one: a new cooldown needs a newer loss.

Every length of time here (a rolling window, a mark's age, a cooldown's minutes) is measured on the store's
clock from the entry's stamp (pilot.store.monotonic), and the UTC day is every day `Today` says it is
(pilot.app.road.clock), so no wall clock step shortens a latch or a cooldown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.road.clock import Today
from pilot.app.runtime.ledger import JournalState, age_of
from pilot.app.runtime.loss_limit import latch_of
from pilot.core.controls import cooldown_due, drawdown, drawdown_window, losses_counted
from pilot.core.facts import ClosedTrade, CooldownState, DrawdownState
from pilot.core.policy import Policy
from pilot.core.violations import plain
from pilot.store import Journal, JournalEntry

MARKS_PER_WINDOW = 24  # in a rolling window, the equity is journaled at least this often


def next_midnight(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date() + timedelta(days=1), time(0), tzinfo=UTC)


def _within(policy: Policy, entry: JournalEntry, today: Today) -> bool:
    """Whether an entry falls in the drawdown window: today by every clock (pilot.app.road.clock.Today), or
    younger than the rolling window on the store's clock."""
    window = drawdown_window(policy)
    if window is None:
        return today.holds(entry.at, entry.clock)
    return age_of(entry, today.now, today.here) < window


def _until(policy: Policy, latch: JournalEntry, today: Today) -> datetime | None:
    """When a drawdown latch lapses by itself (None: it has): at 00:00 UTC after its day, or the window's
    length after it on the store's clock (told as a wall time from now)."""
    if not _within(policy, latch, today):
        return None
    window = drawdown_window(policy)
    if window is None:
        return next_midnight(today.now)
    return today.now + (window - age_of(latch, today.now, today.here))


def drawdown_state(policy: Policy, journal: JournalState, now: datetime) -> DrawdownState:
    """The window's peak (after the latest human reset, counted from the equity it reset to) and the latch."""
    today = journal.today
    latest = journal.drawdown
    floor, baseline = -1, None
    if latest is not None and not latest.data.get("on") and _within(policy, latest, today):
        floor, baseline = latest.seq, _decimal(latest.data.get("from_equity"))
    marks = [
        _decimal(e.data.get("equity_usd"))
        for e in journal.equity_marks
        if e.seq > floor and _within(policy, e, today)
    ]
    found = [value for value in [*marks, baseline] if value is not None]
    peak = max(found) if found else None
    window = drawdown_window(policy)
    until = _until(policy, latest, today) if latest is not None and latest.data.get("on") else None
    if latest is not None and until is not None:
        return DrawdownState(peak, True, until, _decimal(latest.data.get("drawdown_usd")))
    return DrawdownState(peak, False, next_midnight(now) if window is None else now + window)


async def note_equity(
    journal: Journal,
    policy: Policy,
    state: DrawdownState,
    equity: Decimal,
    marks: tuple[JournalEntry, ...],
    today: Today,
) -> None:
    """Journal the equity when it is a new peak of the window, or (a rolling window) the newest mark is
    older than a twenty-fourth of it on the store's clock."""
    window = drawdown_window(policy)
    newest = age_of(marks[-1], today.now, today.here) if marks else None
    stale = window is not None and (newest is None or newest >= window / MARKS_PER_WINDOW)
    if state.peak is not None and equity <= state.peak and not stale:
        return
    data = {
        "equity_usd": plain(equity),
        "window": "day" if window is None else f"{policy.drawdown_window_hours}h",
    }
    await journal.append(entry_kinds.EQUITY, data, now=today.now, actor="pilot", durable=False)


async def latch_drawdown(
    journal: Journal, policy: Policy, state: DrawdownState, equity: Decimal, now: datetime
) -> DrawdownState:
    """Journal `drawdown` on with the numbers when the limit is reached and the latch is off; the state after."""
    found = drawdown(policy, equity, state)
    if state.latched or found is None or not found.reached:
        return state
    window = drawdown_window(policy)
    await journal.append(
        entry_kinds.DRAWDOWN,
        {
            "on": True,
            "by": "pilot",
            "day": now.astimezone(UTC).date().isoformat(),
            "window": "day" if window is None else f"{policy.drawdown_window_hours}h",
            "rule": found.rule.value,
            "limit_usd": plain(found.limit),
            "drawdown_usd": plain(found.drawdown),
            "peak_usd": plain(found.peak),
            "equity_usd": plain(found.equity),
            "trading_state": "reducing",
        },
        now=now,
        actor="pilot",
    )
    until = next_midnight(now) if window is None else now + window
    return DrawdownState(state.peak, True, until, found.drawdown)


@dataclass(frozen=True, slots=True)
class DrawdownLatch:
    """What `pilot drawdown status` shows: whether the latch holds now, until when, and the entry that set it."""

    on: bool
    until: datetime | None
    entry: dict[str, object] | None
    seq: int | None


async def drawdown_latch(journal: Journal, policy: Policy, now: datetime) -> DrawdownLatch:
    """The latch as the newest drawdown entry says (a command that reads the journal without a ledger)."""
    latest = await journal.latest(entry_kinds.DRAWDOWN)
    if latest is None or not latest.data.get("on"):
        return DrawdownLatch(False, None, None, None)
    until = _until(policy, latest, Today(now, journal.clock.read()))
    if until is None:
        return DrawdownLatch(False, None, None, None)
    return DrawdownLatch(True, until, dict(latest.data), latest.seq)


async def reset_drawdown(journal: Journal, policy: Policy, now: datetime) -> JournalEntry | None:
    """Lift the drawdown latch (the human's CLI); the peak is counted afresh from the equity the latch
    recorded. None when no latch holds."""
    latest = await journal.latest(entry_kinds.DRAWDOWN)
    if latest is None or not (await drawdown_latch(journal, policy, now)).on:
        return None
    return await journal.append(
        entry_kinds.DRAWDOWN,
        {"on": False, "by": "human", "from_equity": str(latest.data.get("equity_usd") or "0")},
        now=now,
        actor="human",
    )


def cooldown_state(
    policy: Policy, journal: JournalState, trades: tuple[ClosedTrade, ...], now: datetime
) -> tuple[CooldownState, ClosedTrade | None]:
    """The cooldown as the trades and the journal say, and the losing trade that starts a new one (to be
    journaled) when the trades call for one that has not run yet."""
    rule = policy.cooldown
    assert rule is not None, "asked only while policy.json sets a cooldown"
    count, _ = losses_counted(rule, trades)
    due = cooldown_due(rule, trades)
    latest = journal.cooldown
    if due is not None and (latest is None or not _same_trade(latest.data.get("trade"), due)):
        return CooldownState(count, now + timedelta(minutes=rule.minutes)), due
    left = cooldown_left(policy, journal, now)
    if left is not None:
        return CooldownState(count, now + left if left > timedelta(0) else None), None
    return CooldownState(count), None


def cooldown_left(policy: Policy, journal: JournalState, now: datetime) -> timedelta | None:
    """How long the cooldown journaled last has still to run on the store's clock (zero or less: it ran
    out); None when none was journaled or policy.json sets no cooldown."""
    rule, latest = policy.cooldown, journal.cooldown
    if rule is None or latest is None or not latest.data.get("on"):
        return None
    return timedelta(minutes=rule.minutes) - age_of(latest, now, journal.today.here)


def holding_latch(policy: Policy, journal: JournalState, now: datetime) -> JournalEntry | None:
    """The newest entry of a latch that keeps trading reducing now: the daily loss limit's, the drawdown's
    or the cooldown's (None: none holds). Each holds as the judgements see it."""
    held = []
    if latch_of(journal.loss_limit, journal.today).on and journal.loss_limit is not None:
        held.append(journal.loss_limit)
    if journal.drawdown is not None and drawdown_state(policy, journal, now).latched:
        held.append(journal.drawdown)
    left = cooldown_left(policy, journal, now)
    if journal.cooldown is not None and left is not None and left > timedelta(0):
        held.append(journal.cooldown)
    return max(held, key=lambda entry: entry.seq, default=None)


async def start_cooldown(
    journal: Journal, policy: Policy, state: CooldownState, trade: ClosedTrade, now: datetime
) -> None:
    """Journal the cooldown that `trade` (the newest of enough losses) starts, with the numbers."""
    rule = policy.cooldown
    assert rule is not None
    await journal.append(
        entry_kinds.COOLDOWN,
        {
            "on": True,
            "by": "pilot",
            "trade": _trade_key(trade),
            "trade_pnl": plain(trade.pnl),
            "losses": state.losses,
            "after_losses": rule.after_losses,
            "within_minutes": rule.within_minutes,
            "minutes": rule.minutes,
        },
        now=now,
        actor="pilot",
    )


def _same_trade(recorded: object, trade: ClosedTrade) -> bool:
    """Whether a cooldown entry's trade is `trade`: by the order that closed it, whose time moves on while
    more of its fills come in (a resting spot sell, a closing order filled in parts); by the whole key for a
    trade without an order id."""
    if not isinstance(recorded, str):
        return False
    if trade.order_id:
        return recorded.split("@", 1)[0] == trade.order_id
    return recorded == _trade_key(trade)


def _trade_key(trade: ClosedTrade) -> str:
    return f"{trade.order_id}@{trade.at.isoformat()}"


def _decimal(value: object) -> Decimal | None:
    try:
        return Decimal(str(value)) if value not in (None, "") else None
    except ArithmeticError:
        return None
