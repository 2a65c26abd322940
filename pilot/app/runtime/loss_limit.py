"""The daily loss limit's latch: past dailyLossLimitUsd/Pct trading turns reducing by itself until 00:00 UTC.

Each change is a journal entry of kind `loss_limit`, with the day and the numbers. Pilot writes `on` when
the facts it gathers show the day's loss at or past the limit; a human writes `off` (`pilot loss-limit
reset`). After a reset the day's loss is counted from where it stood when the limit was reached, so the
human grants one more allowance of the limit for the rest of that day, not an unbounded one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.road.clock import Today
from pilot.core.facts import DayPnl, Facts
from pilot.core.policy import Policy
from pilot.core.rules import day_loss
from pilot.core.violations import plain
from pilot.store import Journal, JournalEntry


@dataclass(frozen=True, slots=True)
class DayLatch:
    """Today's state of the latch: whether it holds, and the PnL a human reset counts from (0: none)."""

    on: bool
    baseline: Decimal
    seq: int | None = None


NO_LATCH = DayLatch(False, Decimal(0))


def latch_of(latest: JournalEntry | None, today: Today) -> DayLatch:
    """The latch for today, given the newest loss limit entry: only an entry written today counts (it lapses
    at 00:00 UTC), by every clock involved (pilot.app.road.clock.Today): a wall clock stepped back or
    forward across midnight does not lift it early."""
    if latest is None or not _today(latest, today):
        return NO_LATCH
    on = bool(latest.data.get("on"))
    # While on, the loss is counted as it was when the limit was reached; after a reset, from that point.
    baseline = Decimal(str(latest.data.get("counted_from_pnl" if on else "reset_to_pnl") or 0))
    return DayLatch(on, baseline, latest.seq)


def counted(pnl: DayPnl, latch: DayLatch) -> DayPnl:
    """The day's PnL as the limit counts it: from the human's reset on, if there was one today."""
    return replace(pnl, realised=pnl.realised - latch.baseline) if latch.baseline else pnl


def _today(entry: JournalEntry, today: Today) -> bool:
    day = entry.data.get("day")
    return day in {one.isoformat() for one in today.days()} or (
        day == entry.at.date().isoformat() and today.holds(entry.at, entry.clock)
    )


def today_by_journal(journal: Journal, now: datetime) -> Today:
    """Today as a command that reads the journal without a ledger sees it (the human's loss-limit CLI)."""
    return Today(now, journal.clock.read())


async def latch_if_reached(journal: Journal, policy: Policy, facts: Facts, latch: DayLatch) -> int | None:
    """Journal `on` with the numbers when the day's loss has reached the limit and the latch is off."""
    return await latch_on_loss(journal, policy, (facts.now, facts.equity, facts.day_pnl), latch)


async def latch_on_loss(
    journal: Journal, policy: Policy, read: tuple[datetime, Decimal | None, DayPnl | None], latch: DayLatch
) -> int | None:
    """latch_if_reached on what was read: when, the equity and the day's PnL (counted from the latch's)."""
    now, equity, pnl = read
    if latch.on or pnl is None:
        return None
    loss = day_loss(policy, equity, pnl)
    if loss is None or not loss.reached:
        return None
    entry = await journal.append(
        entry_kinds.LOSS_LIMIT,
        {
            "on": True,
            "by": "pilot",
            "day": now.date().isoformat(),
            "rule": loss.rule.value,
            "limit_usd": plain(loss.limit),
            "loss_usd": plain(loss.loss),
            "realised_usd": plain(loss.pnl.realised),
            "unrealised_usd": plain(loss.pnl.unrealised),
            "spot_realised_usd": plain(loss.pnl.spot_realised),  # of the two above, what spot made
            "spot_unrealised_usd": plain(loss.pnl.spot_unrealised),
            "counted_from_pnl": plain(latch.baseline),  # the day's PnL is counted from here (a reset's)
            "reset_to_pnl": plain(latch.baseline + loss.pnl.total),  # what a human reset counts from
            "trading_state": "reducing",
        },
        now=now,
        actor="pilot",
    )
    return entry.seq


async def reset_by_human(journal: Journal, now: datetime) -> tuple[int, DayLatch] | None:
    """Lift today's latch (CLI only). None when it does not hold today. Returns the entry's seq."""
    latest = await journal.latest(entry_kinds.LOSS_LIMIT)
    latch = latch_of(latest, today_by_journal(journal, now))
    if not latch.on or latest is None:
        return None
    entry = await journal.append(
        entry_kinds.LOSS_LIMIT,
        {
            "on": False,
            "by": "human",
            "day": str(latest.data.get("day")),  # the day of the latch it lifts
            "reset_to_pnl": str(latest.data.get("reset_to_pnl") or "0"),
        },
        now=now,
        actor="human",
    )
    return entry.seq, latch


@dataclass(frozen=True, slots=True)
class LossLimitState:
    """What `pilot loss-limit status` shows: whether today's latch holds, and the entry that set it."""

    on: bool
    day: str
    entry: dict[str, object] | None
    seq: int | None


async def loss_limit_state(journal: Journal, now: datetime) -> LossLimitState:
    latest = await journal.latest(entry_kinds.LOSS_LIMIT)
    latch = latch_of(latest, today_by_journal(journal, now))
    today = latest is not None and latch.seq is not None
    return LossLimitState(
        latch.on, now.date().isoformat(), dict(latest.data) if latest and today else None, latch.seq
    )
