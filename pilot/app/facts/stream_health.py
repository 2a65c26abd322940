"""What a human should know about the streams, read back from the journal: the private stream down (since
when, why) and the messages that could not be read lately. The hub writes it (pilot.app.facts.stream_hub);
`pilot doctor` and the console say it, so that streaming never goes off unseen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pilot.app.answers import entry_kinds
from pilot.store import Journal

RECENT = timedelta(days=1)  # unreadable messages are reported for this long


@dataclass(frozen=True, slots=True)
class StreamTrouble:
    down: str | None  # the private stream down: since when and why
    unreadable: tuple[str, ...]  # one line per channel and topic with messages that could not be read

    def lines(self) -> tuple[str, ...]:
        return ((self.down,) if self.down else ()) + self.unreadable


async def stream_trouble(journal: Journal, now: datetime) -> StreamTrouble | None:
    """The streams' trouble as the journal tells it, or None when there is none to tell."""
    state = await journal.latest(entry_kinds.STREAM_STATE)
    down = None
    if state is not None and state.data.get("state") == "down":
        reason = str(state.data.get("reason") or "out of sync")
        down = f"the private stream has been down since {state.at:%Y-%m-%d %H:%M} UTC: {reason}"
    counts: dict[tuple[str, str], tuple[int, datetime]] = {}
    for entry in await journal.entries(kind=entry_kinds.STREAM_UNREADABLE, since=now - RECENT):
        key = (str(entry.data.get("channel")), str(entry.data.get("topic")))
        count = int(entry.data.get("count") or 1)
        counts[key] = (counts.get(key, (0, entry.at))[0] + count, entry.at)
    unreadable = tuple(
        f"{count} {topic} message(s) on the {channel} stream could not be read in the last day "
        f"(last noted {at:%Y-%m-%d %H:%M} UTC); what they fed was read again"
        for (channel, topic), (count, at) in sorted(counts.items())
    )
    if down is None and not unreadable:
        return None
    return StreamTrouble(down, unreadable)
