"""The throttles' view of the messages of the last minute, read in place (pilot.app.runtime.activity), says
what sorting every message's age would: in journal order, out of order, across boots, without a stamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pilot.app.road.clock import Today
from pilot.app.runtime.activity import MESSAGE_WINDOW, Activity
from pilot.core.controls import sent_within
from pilot.store import Instant, JournalEntry

START = datetime(2026, 3, 1, 12, tzinfo=UTC)
BOOT = "this-boot"


def cancel(seq: int, at: datetime, stamp: Instant | None) -> JournalEntry:
    data = {"phase": "sent", "tool": "cancel_order"}
    return JournalEntry(seq, at, "action", "agent", None, data, "", "", None, stamp)


def oracle(stamps: list[tuple[int, Instant | None]], now: datetime, here: Instant) -> tuple[timedelta, ...]:
    """Every message's age, by the store's clock where it can tell, in the last minute, sorted: newest first."""
    ages = []
    for offset, stamp in stamps:
        if stamp is None:
            age = now - (START + timedelta(milliseconds=offset))
        elif stamp.boot != here.boot:
            age = timedelta(microseconds=here.micros)
        else:
            age = timedelta(microseconds=max(here.micros - stamp.micros, 0))
        ages.append(age)
    return tuple(sorted(age for age in ages if timedelta(0) <= age < MESSAGE_WINDOW))


steps = st.lists(
    st.tuples(
        st.integers(0, 2_000),  # milliseconds on from the previous message, by both clocks
        st.integers(-300, 300),  # how far its store stamp strays from that (another process's read)
        st.sampled_from(["here", "here", "here", "none", "other boot"]),
        st.integers(0, 90_000),  # milliseconds the view is asked after this message, then not again
    ),
    max_size=60,
)


@given(steps)
def test_the_messages_view_is_the_sorted_ages_of_the_last_minute(moves):
    activity, stamps, clock, asked = Activity(), [], 120_000, 0
    for seq, (gap, stray, kind, wait) in enumerate(moves, start=1):
        clock += gap
        stamp = None if kind == "none" else Instant(BOOT if kind == "here" else "old", (clock + stray) * 1000)
        activity.fold(cancel(seq, START + timedelta(milliseconds=clock), stamp))
        stamps.append((clock, stamp))
        asked = max(asked, clock + (wait if seq % 4 == 0 else 0))  # the moments asked only move on
        now, here = START + timedelta(milliseconds=asked), Instant(BOOT, asked * 1000)
        view = activity.view(now, here, Today(now, here, None)).messages
        expected = oracle(stamps, now, here)
        kept = tuple(age for age in view if age < MESSAGE_WINDOW)  # what the old view had not popped yet
        assert kept == expected
        assert [view[i] for i in range(len(view))] == list(view)
        assert sent_within(view, timedelta(seconds=1)) == sum(
            1 for age in expected if age < timedelta(seconds=1)
        )
