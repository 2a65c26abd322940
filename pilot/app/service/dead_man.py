"""The dead-man's switch: when no agent call has reached the home for `afterSeconds`, or the last MCP session
of every process serving it ended (`onSessionEnd`), while orders Pilot's agent placed that can open a
position rest, Pilot cancels them, through the gate (each judged by the message throttles and journaled),
and with `reducing` turns the kill switch on; only a human turns it off.

It runs between calls (pilot.app.service.upkeep: every second in `pilot serve`, and once at start-up), so a
server that crashed with orders resting is answered by the next one to start: each process's heartbeat row
(pilot.store.agents) says when its agent last called and how many sessions it had open. It fires once per
silence (a `dead_man` entry with why and the numbers); orders the throttles held back are cancelled in the
next rounds. Silence is real time on the store's clock (pilot.store.monotonic), read alike by every process
of the home, so no wall clock step fires the switch early or holds it back. Whether a process that left
sessions open is gone is the store's judgement (its pid or boot on SQLite's one machine; on PostgreSQL its
database session, so a host that died or lost its connection counts as gone wherever it ran). Bybit's own
cancel-on-disconnect (DCP) exists for institutional accounts only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.human.kill_switch import activate_by_pilot, journal_agent_switch
from pilot.app.orders.messages import throttled
from pilot.app.road.gate import ORDER_LINK_PREFIX, TurnBusy
from pilot.app.runtime.ledger import age_of
from pilot.app.runtime.runtime import Runtime
from pilot.core.policy import DeadManSwitch
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder
from pilot.store import AgentRecord, Instant, age

BEAT_EVERY = timedelta(seconds=1)  # a process writes its heartbeat row at most this often
FORGET_ROWS = 16  # more rows of gone processes than this: drop the old ones (pilot.store.agents.FORGET_AFTER)


async def agent_called(runtime: Runtime, agent: str | None = None) -> None:
    """Note that an agent's call reached this process (at most once a second): the process's row only while
    policy.json sets a dead-man's switch; a named agent's in its own row always, for its own switch
    (`watch_agents`) and for whom `pilot agent list` and the console show connected (a read is journaled
    nowhere else)."""
    here, sessions = runtime.store.clock.read(), runtime.sessions
    since = age(here, sessions.last_beat)
    if runtime.policy().policy.dead_man_switch is not None and (since is None or since >= BEAT_EVERY):
        sessions.last_beat = here
        await runtime.store.agents.beat(runtime.gate.holder, now=runtime.now(), sessions=sessions.open)
    since = age(here, sessions.agent_beats.get(agent)) if agent is not None else None
    if agent is not None and (since is None or since >= BEAT_EVERY):
        sessions.agent_beats[agent] = here
        row = agent_row(runtime.gate.holder, agent)
        await runtime.store.agents.beat(row, now=runtime.now(), sessions=sessions.open_of(agent))


def agent_row(holder: str, agent: str) -> str:
    """The heartbeat row of `agent`'s calls to the process `holder` ("host:pid:token#agent")."""
    return f"{holder}#{agent}"


def process_of(row: str) -> str:
    """The process a heartbeat row belongs to (a named agent's row carries its name after "#")."""
    return row.partition("#")[0]


async def session_ended(runtime: Runtime, key: str) -> None:
    """The session `key` ended (stdin closed): count it, and fire at once if it was the home's last one."""
    if not runtime.sessions.end(key):
        return
    await _beat_sessions(runtime)  # its agent's row too: no longer connected by this session
    if runtime.policy().policy.dead_man_switch is not None:
        await watch(runtime)


async def stdio_ended(runtime: Runtime) -> None:
    """Stdin closed: every session this process served over stdio has ended."""
    for key in runtime.sessions.connected():
        if not runtime.sessions.expires(key):
            await session_ended(runtime, key)


async def watch(runtime: Runtime) -> None:
    """One look: fire when the switch's conditions hold and opening orders rest."""
    rule = runtime.policy().policy.dead_man_switch
    if rule is None:
        return
    here = runtime.store.clock.read()
    if runtime.sessions.expire(here):  # HTTP sessions idle past the server's timeout have ended
        await _beat_sessions(runtime)
    agents = await runtime.store.agents.all()
    gone = await _gone_elsewhere(runtime, agents)
    silence = _silence(runtime, agents, here)
    why = _why(runtime, rule, agents, gone, silence)
    if why is None:
        if len(gone) > FORGET_ROWS:
            await runtime.store.agents.forget()
        await watch_agents(runtime, rule, agents, here)
        return
    try:
        async with runtime.gate.turn():  # one process at a time fires, and sees what another already did
            await _fire(runtime, rule, why, silence, here)
    except TurnBusy:
        return  # another process is sending: look again next round
    for agent in gone:
        if agent.sessions:
            await runtime.store.agents.settled(agent.holder)


async def _beat_sessions(runtime: Runtime) -> None:
    """Write this process's open sessions to its heartbeat rows, its named agents' too (no call noted)."""
    sessions, now = runtime.sessions, runtime.now()
    await runtime.store.agents.beat(runtime.gate.holder, now=now, sessions=sessions.open, called=False)
    for agent in sessions.agents():
        row = agent_row(runtime.gate.holder, agent)
        await runtime.store.agents.beat(row, now=now, sessions=sessions.open_of(agent), called=False)


async def _gone_elsewhere(runtime: Runtime, agents: list[AgentRecord]) -> list[AgentRecord]:
    """The other processes the store judges gone. This process's own row reads gone when its session ended
    (its connection to a PostgreSQL store was made again): it beats in the new one, so that no other process
    takes it for gone."""
    mine = runtime.gate.holder
    if any(agent.gone for agent in agents if process_of(agent.holder) == mine):
        await _beat_sessions(runtime)
    return [agent for agent in agents if agent.gone and process_of(agent.holder) != mine]


@dataclass(frozen=True, slots=True)
class _Silence:
    """How long no agent call has reached the home (on the store's clock), and the wall time of the last one
    (None: none noted; the silence is then counted from this process's start)."""

    length: timedelta
    last_call_at: datetime | None


def _silence(runtime: Runtime, agents: list[AgentRecord], here: Instant) -> _Silence:
    """The time since the newest agent call any process noted, or since this process began serving when
    none did."""
    calls = [
        _Silence(since, agent.last_call_at)
        for agent in agents
        if (since := age(here, agent.last_call)) is not None
    ]
    if not calls:
        return _Silence(age(here, runtime.started) or timedelta(0), None)
    return min(calls, key=lambda call: call.length)


def _why(
    runtime: Runtime,
    rule: DeadManSwitch,
    agents: list[AgentRecord],
    gone: list[AgentRecord],
    silence: _Silence,
) -> str | None:
    """Why the switch fires now ("idle", "session_end"), or None."""
    if rule.after_seconds is not None and silence.length >= timedelta(seconds=rule.after_seconds):
        return "idle"
    if not rule.on_session_end:
        return None
    mine, left = runtime.gate.holder, {agent.holder for agent in gone}
    elsewhere = sum(
        a.sessions
        for a in agents
        if process_of(a.holder) != mine and a.holder not in left and "#" not in a.holder
    )
    ended = runtime.sessions.ended > 0 or any(a.sessions for a in gone)
    if ended and elsewhere == 0 and runtime.sessions.open == 0:
        return "session_end"
    return None


async def _fire(runtime: Runtime, rule: DeadManSwitch, why: str, silence: _Silence, here: Instant) -> None:
    """Cancel the opening orders Pilot's agent left resting; the first time in this silence, journal why and
    turn trading reducing if the rule says so."""
    orders = await opening_orders(runtime)
    if not orders:
        return
    now = runtime.now()
    fired = (await runtime.ledger.state(now)).dead_man
    if fired is None or age_of(fired, now, here) > silence.length:  # not yet since the agent's last call
        data: dict[str, Any] = {
            "fired": True,
            "why": why,
            "idle_seconds": int(silence.length.total_seconds()),
            "last_call_at": silence.last_call_at.isoformat() if silence.last_call_at else None,
            "after_seconds": rule.after_seconds,
            "on_session_end": rule.on_session_end,
            "reducing": rule.reducing,
            "orders": [described(order) for order in orders],
        }
        await runtime.store.journal.append(entry_kinds.DEAD_MAN, data, now=now, actor="pilot")
        if rule.reducing:
            what = "no agent call reached this home" if why == "idle" else "the last MCP session ended"
            await activate_by_pilot(runtime, f"dead-man's switch: {what} while orders rested")
    await cancel_each(runtime, orders, "dead_man")


async def cancel_each(runtime: Runtime, orders: list[ExchangeOrder], origin: str) -> None:
    """Cancel each order through the gate (journaled with `origin`: who asked, when not the agent), as the
    message throttles allow: when they are full, the rest wait for the next round."""
    view = runtime.policy()
    for order in orders:
        if await throttled(runtime, view) is not None:
            return
        await runtime.gate.cancel_order(
            order.category, order.symbol, order_id=order.order_id, order_link_id=None, origin=origin
        )


async def opening_orders(runtime: Runtime) -> list[ExchangeOrder]:
    """The orders Pilot placed that rest and can open or grow a position: linear ones not reduce-only, spot
    buys (a spot sell only sells coin held). An unreadable category is left for the next round."""
    found: list[ExchangeOrder] = []
    for category in ("linear", "spot"):
        try:
            listed = await runtime.exchange.get_open_orders(category)
        except ExchangeError:
            continue
        found += [
            order
            for order in listed
            if order.is_ordinary
            and order.order_link_id.startswith(ORDER_LINK_PREFIX)
            and not order.reduce_only
            and (category == "linear" or order.side == "Buy")
        ]
    return found


def described(order: ExchangeOrder) -> dict[str, str]:
    """An order as a journal entry that cancels it names it."""
    return {
        "category": order.category,
        "symbol": order.symbol,
        "side": order.side,
        "qty": plain(order.qty - order.cum_exec_qty),
        "price": plain(order.price),
        "order_id": order.order_id,
    }


# ---- one agent's silence --------------------------------------------------------------------------


async def watch_agents(runtime: Runtime, rule: DeadManSwitch, rows: list[AgentRecord], here: Instant) -> None:
    """Each named agent's own switch: when no call of that agent reached any process for `afterSeconds`, or
    its last session ended, the opening orders it placed are cancelled (not another agent's); with
    `reducing`, that agent's own kill switch turns on."""
    for agent in sorted({row.holder.partition("#")[2] for row in rows if "#" in row.holder}):
        mine = [row for row in rows if row.holder.partition("#")[2] == agent]
        why = _agent_why(runtime, rule, agent, mine, here)
        if why is None:
            continue
        try:
            async with runtime.gate.turn():
                await _fire_agent(runtime, rule, agent, why)
        except TurnBusy:
            return


def _agent_why(
    runtime: Runtime, rule: DeadManSwitch, agent: str, rows: list[AgentRecord], here: Instant
) -> str | None:
    """Why agent `agent`'s switch fires now ("idle", "session_end"), or None."""
    calls = [since for row in rows if (since := age(here, row.last_call)) is not None]
    if rule.after_seconds is not None and calls and min(calls) >= timedelta(seconds=rule.after_seconds):
        return "idle"
    if not rule.on_session_end:
        return None
    me = runtime.gate.holder
    ended = runtime.sessions.agent_ended.get(agent, 0) > 0 or any(r.sessions for r in rows if r.gone)
    elsewhere = sum(r.sessions for r in rows if process_of(r.holder) != me and not r.gone)
    if ended and elsewhere == 0 and runtime.sessions.open_of(agent) == 0:
        return "session_end"
    return None


async def _fire_agent(runtime: Runtime, rule: DeadManSwitch, agent: str, why: str) -> None:
    """Cancel the opening orders agent `agent` placed; journal why, and with `reducing` its own switch."""
    owned = (await runtime.ledger.state(runtime.now())).agent_orders.get(agent, frozenset())
    orders = [order for order in await opening_orders(runtime) if order.order_link_id in owned]
    if not orders:
        return
    data: dict[str, Any] = {
        "fired": True,
        "agent": agent,
        "why": why,
        "after_seconds": rule.after_seconds,
        "on_session_end": rule.on_session_end,
        "reducing": rule.reducing,
        "orders": [described(order) for order in orders],
    }
    now = runtime.now()
    await runtime.store.journal.append(entry_kinds.AGENT_DEAD_MAN, data, now=now, actor="pilot")
    if rule.reducing:
        # the send turn is held here (watch_agents): no send to wait for
        await journal_agent_switch(runtime, agent, on=True, by="pilot", reason=f"dead-man's switch: {why}")
    view = runtime.policy()
    for order in orders:
        if await throttled(runtime, view) is not None:
            return
        await runtime.gate.cancel_order(
            order.category, order.symbol, order_id=order.order_id, order_link_id=None, origin="dead_man"
        )
