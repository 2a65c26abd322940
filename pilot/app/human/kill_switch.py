"""The kill switch: the agent can turn it on; only a human, in the CLI, turns it off. Every change is journaled.

Turning it on takes effect at its journal entry, for every process of the home: a growing send whose
judgement did not see it is never journaled as sent after it (pilot.app.road.gate.SendCondition). A send
journaled just before it may still be on its way to the exchange; turning it on waits for such a send to
finish (`ExchangeGate.settle`, bounded) before answering, and says whether any could still be under way.

Pilot turns it on itself when the journal was rolled back (`stop_on_rollback`): a journal that lost entries
may have lost the switch, the day's orders or the loss latch with them.
"""

from __future__ import annotations

from pilot.app.answers import entry_kinds
from pilot.app.answers.responses import ActionAnswer
from pilot.app.runtime.runtime import Runtime

REASON_LIMIT = 200
IN_FLIGHT = (
    "; a send journaled before the switch may still be finishing: check get_open_orders and get_positions"
)


async def activate_kill_switch(runtime: Runtime, reason: str) -> ActionAnswer:
    """Turn the kill switch on (trading becomes reducing). Only a human can turn it off, in the CLI."""
    already = await runtime.kill_switch_on()
    entry = await runtime.store.journal.append(
        entry_kinds.KILL_SWITCH,
        {"on": True, "by": "agent", "reason": reason[:REASON_LIMIT]},
        now=runtime.now(),
        actor="agent",
    )
    settled = await runtime.gate.settle()
    return ActionAnswer(
        status="done",
        detail=("the kill switch was already on" if already else "the kill switch is on")
        + ": only orders that shrink positions, cancels and lower leverage work now; "
        "a human turns it off with `pilot kill-switch off`" + ("" if settled else IN_FLIGHT),
        data={"kill_switch": "on", "trading_state": "reducing", "sends_in_flight": not settled},
        journal_seq=[entry.seq],
    )


async def set_kill_switch_by_human(
    runtime: Runtime, on: bool, reason: str = "", via: str | None = None
) -> int:
    """The human's switch (the CLI, or `via` "console"): on or off. Returns the journal entry's seq. Turned
    on, it answers once no send journaled before it is still under way (or SETTLE_WAIT has passed)."""
    data: dict[str, object] = {"on": on, "by": "human", "reason": reason[:REASON_LIMIT]}
    if via is not None:
        data["via"] = via
    entry = await runtime.store.journal.append(
        entry_kinds.KILL_SWITCH,
        data,
        now=runtime.now(),
        actor="human",
    )
    if on:
        await runtime.gate.settle()
    return entry.seq


async def stop_on_rollback(runtime: Runtime) -> int | None:
    """If the journal no longer holds the entry it was anchored at (pilot.store.anchor: a tail cut, an older
    copy swapped in, rows deleted), turn the kill switch on as Pilot, with what was found, and anchor the
    journal at its new head. Growing orders are then refused until a human has looked and turns the switch
    off (`pilot kill-switch off`). Returns the entry's seq, or None when nothing was rolled back.
    """
    journal = runtime.store.journal
    found = await journal.check_anchor()
    if found is None:
        return None
    entry = await journal.append(
        entry_kinds.KILL_SWITCH,
        {
            "on": True,
            "by": "pilot",
            "reason": f"journal rolled back: {found}; look before turning this off"[:REASON_LIMIT],
            "rollback": found.as_json(),
        },
        now=runtime.now(),
        actor="pilot",
    )
    await journal.reanchor()
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


async def switch_agent(
    runtime: Runtime, agent: str, *, on: bool, by: str, reason: str = "", **extra: object
) -> int:
    """One agent's own kill switch (its growing orders refused; the others' untouched), on or off, journaled
    with who and why. Turned on, it waits for a send journaled before it, as the account's does. Pilot turns one
    on (the agent's dead-man's switch, its revoke); only a human turns one off."""
    seq = await journal_agent_switch(runtime, agent, on=on, by=by, reason=reason, **extra)
    if on:
        await runtime.gate.settle()
    return seq


async def journal_agent_switch(
    runtime: Runtime, agent: str, *, on: bool, by: str, reason: str = "", **extra: object
) -> int:
    """switch_agent's journal entry alone, for a caller that holds the send turn (the agent's dead-man's
    switch): no send can be under way then, and waiting for the turn it holds would only time out."""
    data: dict[str, object] = {"agent": agent, "on": on, "by": by, "reason": reason[:REASON_LIMIT], **extra}
    entry = await runtime.store.journal.append(
        entry_kinds.AGENT_SWITCH, data, now=runtime.now(), actor="human" if by == "human" else "pilot"
    )
    return entry.seq
