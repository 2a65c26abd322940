"""Agents on one home, as a human manages them: a credential each with a role, a switch each, a revoke.

`add_agent` issues the credential (a token with a role, pilot.store.tokens: shown once, stored hashed) and
journals that it was given (never the credential). `switch_agent_by_human` turns one agent's own kill switch
on or off. `revoke_agent` stops the credential at once (its next call is refused), journals the revoke as
that agent's switch on for good (a send it had judged before is held back as the kill switch holds one:
pilot.app.runtime.runtime.REDUCING_KINDS), then cancels the opening orders it left resting (on a runtime with
an exchange: a human's desk has none) and the plans it has not used. Revoking an agent revoked before does
that clearing again, so a human whose first revoke reached no exchange can finish it. `agents_overview` is what the CLI and the console show of each agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.answers.sent_requests import sent_request
from pilot.app.human.desk import TOKEN_NAME, BadTokenName, HumanError, TokenExists
from pilot.app.human.kill_switch import switch_agent
from pilot.app.road.gate import ORDER_LINK_PREFIX
from pilot.app.runtime.runtime import Runtime
from pilot.core.agent_budgets import Role
from pilot.core.errors import ErrorCode
from pilot.exchange.errors import ExchangeError
from pilot.exchange.models import ExchangeOrder
from pilot.store import DuplicateRecord, Holder

PLANS_LIVE = timedelta(minutes=10)  # longer than the longest planTtlSeconds, whatever the clocks did


class BadAgentRole(HumanError):
    code = ErrorCode.BAD_AGENT_ROLE

    def __init__(self, role: str) -> None:
        super().__init__(f"{role[:40]!r} is not a role", "use --role read, reduce or trade")


class NoSuchAgent(HumanError):
    code = ErrorCode.NO_SUCH_AGENT

    def __init__(self, name: str) -> None:
        super().__init__(f"no agent named {name!r}", "list them with `pilot agent list`")


async def add_agent(runtime: Runtime, name: str, role: str) -> str:
    """A credential for agent `name` with `role`, shown this once; journaled (without the credential). A
    name revoked before gets its switch off again (journaled), so the new credential acts."""
    if not TOKEN_NAME.fullmatch(name) or len(name) > 40:
        raise BadTokenName(name)
    if role not in {r.value for r in Role}:
        raise BadAgentRole(role)
    try:
        token = await runtime.store.tokens.issue(name, now=runtime.now(), role=role)
    except DuplicateRecord:
        raise TokenExists(name) from None
    data = {"agent": name, "role": role}
    await runtime.store.journal.append(entry_kinds.AGENT_ADDED, data, now=runtime.now(), actor="human")
    before = (await runtime.journal_state()).agent_switch(name)
    if before is not None and before.data.get("revoked"):
        # A human giving the name a new credential means it to act (what an agentRevoked refusal tells it
        # to ask for): the old credential's revoke held its switch on, and would hold the new one too.
        await switch_agent(runtime, name, on=False, by="human", reason="a new credential")
    return token


async def switch_agent_by_human(runtime: Runtime, name: str, *, on: bool, reason: str = "") -> int:
    """Turn agent `name`'s own kill switch on or off (a human's); its journal entry's seq."""
    await _known(runtime, name)
    return await switch_agent(runtime, name, on=on, by="human", reason=reason)


@dataclass(frozen=True, slots=True)
class Revoked:
    """What a revoke did: the switch's entry, the orders cancelled (and those whose cancel failed), the
    plans ended unused."""

    seq: int
    cancelled: list[str]
    failed: list[str]
    plans: list[str]
    orders_looked_at: bool = True  # False: no exchange was reached, so its resting orders still rest


async def revoke_agent(runtime: Runtime, name: str, *, cancel_orders: bool = True) -> Revoked:
    """Stop agent `name` at once, then cancel what it left (its resting orders only with `cancel_orders`,
    on a runtime with an exchange): see the module docstring.

    Raises:
        NoSuchAgent: `name` has no credential and was never revoked.
    """
    if await runtime.store.tokens.revoke(name):
        seq = await switch_agent(
            runtime, name, on=True, by="human", reason="credential revoked", revoked=True
        )
    else:
        seq = await _revoked_at(runtime, name)
    cancelled, failed = await _cancel_openings(runtime, name) if cancel_orders else ([], [])
    plans = await _end_plans(runtime, name)
    return Revoked(seq, cancelled, failed, plans, orders_looked_at=cancel_orders)


async def _revoked_at(runtime: Runtime, name: str) -> int:
    """The seq of the journal entry that revoked agent `name`'s credential."""
    for entry in reversed(await runtime.store.journal.entries(kind=entry_kinds.AGENT_SWITCH)):
        if entry.data.get("agent") == name and entry.data.get("revoked"):
            return entry.seq
    raise NoSuchAgent(name)


async def _known(runtime: Runtime, name: str) -> None:
    names = {holder.name for holder, _ in await runtime.store.tokens.agents()}
    if name not in names and name not in runtime.policy().policy.agents:
        raise NoSuchAgent(name)


async def orders_of(runtime: Runtime, name: str) -> set[str]:
    """The client order ids of every order agent `name` sent (the journal's order.sent entries)."""
    sent = await runtime.store.journal.entries(kind=entry_kinds.ORDER_SENT)
    return {
        str(sent_request(entry.data["request"])["order_link_id"])
        for entry in sent
        if entry.actor == f"agent:{name}"
    }


async def _cancel_openings(runtime: Runtime, name: str) -> tuple[list[str], list[str]]:
    """Cancel, through the gate, the orders agent `name` placed that rest and can open or grow a position."""
    owned = await orders_of(runtime, name)
    cancelled: list[str] = []
    failed: list[str] = []
    for order in await _openings(runtime):
        if order.order_link_id not in owned:
            continue
        answer = await runtime.gate.cancel_order(
            order.category, order.symbol, order_id=order.order_id, order_link_id=None, origin="revoke"
        )
        (cancelled if answer.status == "done" else failed).append(order.order_id)
    return cancelled, failed


async def _openings(runtime: Runtime) -> list[ExchangeOrder]:
    found: list[ExchangeOrder] = []
    for category in ("linear", "spot"):
        try:
            listed = await runtime.exchange.get_open_orders(category)
        except ExchangeError:
            continue
        found += [
            o
            for o in listed
            if o.order_link_id.startswith(ORDER_LINK_PREFIX)
            and not o.reduce_only
            and (category == "linear" or o.side == "Buy")
        ]
    return found


async def _end_plans(runtime: Runtime, name: str) -> list[str]:
    """End, unused, the plans agent `name` made that are still open (a plan lives at most 300 s): each is
    claimed by the revoke and marked done, so no credential can place it."""
    ended = []
    now = runtime.now()
    made = await runtime.store.journal.entries(kind=entry_kinds.PLAN, since=now - PLANS_LIVE)
    for entry in made:
        if entry.actor != f"agent:{name}" or entry.plan_id is None:
            continue
        claim = await runtime.store.plans.claim(entry.plan_id, now=now, holder="revoke")
        if claim.status == "claimed":
            # refused: nothing was sent, so a place_order of it says so (not "sent as order None")
            outcome = {"status": "refused", "why": "agent revoked", "agent": name}
            await runtime.store.plans.record_outcome(entry.plan_id, outcome, now=now)
            ended.append(entry.plan_id)
    return ended


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent as the CLI and the console show it."""

    name: str
    role: str | None  # None: named in policy.json only, or revoked
    issued_at: datetime | None
    switch_on: bool
    sessions: int  # open in the processes serving the home (as their heartbeat rows say)
    last_call_at: datetime | None
    orders_today: int
    budget: dict[str, Any]


async def agents_overview(runtime: Runtime) -> list[AgentRow]:
    """Every agent with a credential or a budget: role, switch, sessions, last call, orders today, budget."""
    credentials = {holder.name: (holder, at) for holder, at in await runtime.store.tokens.agents()}
    policy = runtime.policy().policy
    journal = await runtime.ledger.state(runtime.now())
    beats = await runtime.store.agents.all()
    rows = []
    for name in sorted(set(credentials) | set(policy.agents)):
        holder, issued = credentials.get(name, (Holder(name), None))
        mine = [row for row in beats if row.holder.partition("#")[2] == name]
        calls = [row.last_call_at for row in mine if row.last_call_at is not None]
        budget = policy.agents.get(name)
        rows.append(
            AgentRow(
                name,
                holder.role,
                issued,
                journal.agent_switch(name) is not None,
                sum(row.sessions for row in mine if not row.gone),
                max(calls, default=None),
                journal.agent(name).orders_today,
                budget.model_dump(mode="json", by_alias=True, exclude_none=True) if budget else {},
            )
        )
    return rows
