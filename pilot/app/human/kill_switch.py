"""The kill switch: the agent can turn it on; only a human, in the CLI, turns it off. Every change is journaled."""

from __future__ import annotations

from pilot.app.answers import entry_kinds
from pilot.app.answers.responses import ActionAnswer
from pilot.app.runtime.runtime import Runtime

REASON_LIMIT = 200


async def activate_kill_switch(runtime: Runtime, reason: str) -> ActionAnswer:
    """Turn the kill switch on (trading becomes reducing). Only a human can turn it off, in the CLI."""
    already = await runtime.kill_switch_on()
    entry = await runtime.store.journal.append(
        entry_kinds.KILL_SWITCH,
        {"on": True, "by": "agent", "reason": reason[:REASON_LIMIT]},
        now=runtime.now(),
        actor="agent",
    )
    return ActionAnswer(
        status="done",
        detail=("the kill switch was already on" if already else "the kill switch is on")
        + ": only orders that shrink positions, cancels and lower leverage work now; "
        "a human turns it off with `pilot kill-switch off`",
        data={"kill_switch": "on", "trading_state": "reducing"},
        journal_seq=[entry.seq],
    )


async def set_kill_switch_by_human(
    runtime: Runtime, on: bool, reason: str = "", via: str | None = None
) -> int:
    """The human's switch (the CLI, or `via` "console"): on or off. Returns the journal entry's seq."""
    data: dict[str, object] = {"on": on, "by": "human", "reason": reason[:REASON_LIMIT]}
    if via is not None:
        data["via"] = via
    entry = await runtime.store.journal.append(
        entry_kinds.KILL_SWITCH,
        data,
        now=runtime.now(),
        actor="human",
    )
    return entry.seq


async def activate_by_pilot(runtime: Runtime, reason: str) -> int:
    """Pilot's own switch (the dead-man's switch turns trading reducing): on, journaled as Pilot's with the
    reason. Only a human turns it off. Returns the journal entry's seq."""
    entry = await runtime.store.journal.append(
        entry_kinds.KILL_SWITCH,
        {"on": True, "by": "pilot", "reason": reason[:REASON_LIMIT]},
        now=runtime.now(),
        actor="pilot",
    )
    return entry.seq
