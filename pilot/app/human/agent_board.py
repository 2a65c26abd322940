"""Each agent as the CLI's `pilot agent list` and the console's Agents page show it: whether it is connected,
its switch, its budget and what is left of it, its orders and refusals today, and the room left per market.

Everything here is read from the home's store and journal, never asked of a server: the credentials, the
heartbeat rows the serving processes write (pilot.store.agents) and the journal's entries by
`agent:NAME`. The figures are the judgement's own: the counts its budget spends are the ledger's
(JournalState.agent, what evaluate's facts carry), the limits are `for_agent`'s (the tighter of the
account's and the agent's), and the room per market is pilot.core.room.room_now on the facts plan_order
would gather, named for the agent (read only when a Runtime with an exchange is given).

An agent is connected while a process the store does not judge gone has one of its MCP sessions open, or
its last call was less than CONNECTED_WITHIN ago on the store's clock (the HTTP session idle timeout's
default: a client quiet that long has lost its session). Heartbeat rows are written only while policy.json
sets a dead-man's switch (pilot.app.service.dead_man); without one, the last call is its newest journal
entry today (a plan, a send, a refusal, an action; a read alone is not journaled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from pilot.app.answers import entry_kinds
from pilot.app.facts.gather import gather_market_facts
from pilot.app.human.agent_desk import AgentRow, NoSuchAgent, agents_overview
from pilot.app.human.desk import ReasonTooLong
from pilot.app.human.kill_switch import REASON_LIMIT, switch_agent
from pilot.app.runtime.ledger import JournalState, age_of
from pilot.app.runtime.runtime import Runtime
from pilot.core.agent_budgets import for_agent
from pilot.core.facts import Facts, Side
from pilot.core.policy import Policy
from pilot.core.policy.budgets import AgentBudget
from pilot.core.room import RoomNow, room_now
from pilot.core.rules import day_loss
from pilot.store import ACTING, AgentRecord, Holder, JournalEntry, age, agent_of

CONNECTED_WITHIN = timedelta(minutes=5)
RECENT = 20  # the newest orders and refusals shown per agent
ZERO = Decimal(0)

# What an agent did that counts as its order (a create sent) or its refusal (a plan refused, a place refused
# before sending, a cancel or leverage change refused, a tool refused at the edge for its credential).
ORDER_KINDS = (entry_kinds.ORDER_SENT,)
REFUSAL_KINDS = (
    entry_kinds.PLAN,
    entry_kinds.PLACE_REFUSED,
    entry_kinds.ACTION,
    entry_kinds.AGENT_REFUSED,
)


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """One limit of an agent's budget (policy.json `agents.NAME.KEY`; `market` for one under `markets`):
    the agent's own value, the one its judgement applies (the tighter of the account's and the agent's), and
    for a limit on what the day spends, how much is used and what is left (None: not a count of the day's:
    a cap on each order, or a figure only the exchange gives and it was not read)."""

    key: str
    market: str | None
    own: Decimal | int
    binding: Decimal | int
    used: Decimal | int | None = None
    left: Decimal | int | None = None


@dataclass(frozen=True, slots=True)
class MarketRoom:
    """The room left to the agent in one market per side, as plan_order would judge it for the agent now
    (None: a fact it needs could not be read)."""

    symbol: str
    buy: RoomNow | None
    sell: RoomNow | None


@dataclass(frozen=True, slots=True)
class AgentBoard:
    """One agent: `row` as agents_overview gives it, and what this board adds (module docstring)."""

    row: AgentRow
    switch: JournalEntry | None  # its switch entry while on: who turned it on, when and why
    revoked: bool
    connected: bool
    last_call_at: datetime | None
    orders_left: int  # orders it may still send today: its own cap's and the account's, the tighter
    refusals_today: int
    lines: tuple[BudgetLine, ...]
    rooms: tuple[MarketRoom, ...] | None  # None: no exchange read
    recent: tuple[JournalEntry, ...]  # its orders and refusals, newest first

    @property
    def name(self) -> str:
        return self.row.name


async def agent_board(runtime: Runtime, reader: Runtime | None = None) -> list[AgentBoard]:
    """Every agent with a credential or a budget (agents_overview), with what this module adds; the room
    per market and the day's loss only when `reader` (a Runtime with an exchange, never written to) is given."""
    journal = await runtime.ledger.state(runtime.now())
    rows = await agents_overview(runtime)
    rows += _revoked(journal, {row.name for row in rows})
    if not rows:
        return []
    policy = runtime.policy().policy
    beats = await runtime.store.agents.all()
    entries = await _today(runtime, journal)
    boards = []
    for row in rows:
        facts = await _market_facts(reader, row) if reader is not None else None
        boards.append(_board(runtime, row, policy, journal, beats, entries, facts))
    return boards


def _revoked(journal: JournalState, listed: set[str]) -> list[AgentRow]:
    """The agents whose credential was revoked (no longer among the credentials), still shown: stopped."""
    names = sorted(
        name
        for name, entry in journal.agent_switches.items()
        if entry.data.get("revoked") and entry.data.get("on") and name not in listed
    )
    return [AgentRow(name, None, None, True, 0, None, journal.agent(name).orders_today, {}) for name in names]


def _board(
    runtime: Runtime,
    row: AgentRow,
    policy: Policy,
    journal: JournalState,
    beats: list[AgentRecord],
    entries: list[JournalEntry],
    facts: dict[str, Facts] | None,
) -> AgentBoard:
    mine = [entry for entry in entries if _by(entry, row.name)]
    refusals = [entry for entry in mine if refused(entry)]
    orders = [entry for entry in mine if entry.kind in ORDER_KINDS]
    switch = journal.agent_switch(row.name)
    budget = policy.agents.get(row.name)
    return AgentBoard(
        row=row,
        switch=switch,
        revoked=bool(switch is not None and switch.data.get("revoked")),
        connected=_connected(runtime, row.name, beats, mine),
        last_call_at=_last_call(row, mine),
        orders_left=_orders_left(policy, budget, journal, row.name),
        refusals_today=len(refusals),
        lines=_lines(policy, budget, journal, row.name, facts),
        rooms=_rooms(policy, budget, facts) if facts is not None else None,
        recent=tuple(sorted(refusals + orders, key=lambda entry: -entry.seq)[:RECENT]),
    )


async def _today(runtime: Runtime, journal: JournalState) -> list[JournalEntry]:
    """The journal's orders and refusals today, as the ledger dates a day (pilot.app.road.clock.Today)."""
    since = journal.today.starts()[0] - timedelta(days=1)  # a wall clock stepped back still finds today's
    found = await runtime.store.journal.entries(kind=ORDER_KINDS + REFUSAL_KINDS, since=since)
    return [entry for entry in found if journal.today.holds(entry.at, entry.clock)]


def _by(entry: JournalEntry, name: str) -> bool:
    """Whether agent `name` acted in `entry` (a refusal at the edge names a revoked agent in its data)."""
    if agent_of(entry.actor) == name:
        return True
    return entry.kind == entry_kinds.AGENT_REFUSED and entry.data.get("agent") == name


def refused(entry: JournalEntry) -> bool:
    """Whether `entry` is Pilot's refusal (nothing sent): a refused plan, a place refused before sending (not
    one parked for a human, nor one a human declined), a refused cancel or leverage change, a tool refused
    for the caller's credential."""
    if entry.kind in (entry_kinds.PLAN, entry_kinds.PLACE_REFUSED):
        return entry.data.get("status") == "refused"
    if entry.kind == entry_kinds.ACTION:
        return entry.data.get("phase") == "refused"
    return entry.kind == entry_kinds.AGENT_REFUSED


def _connected(runtime: Runtime, name: str, beats: list[AgentRecord], mine: list[JournalEntry]) -> bool:
    """A session of the agent's open in a process not gone, or a call less than CONNECTED_WITHIN ago."""
    here = runtime.store.clock.read()
    rows = [beat for beat in beats if beat.holder.partition("#")[2] == name]
    if any(beat.sessions and not beat.gone for beat in rows):
        return True
    calls = [age(here, beat.last_call) for beat in rows] + [
        age_of(entry, runtime.now(), here) for entry in mine[-1:]
    ]
    return any(since is not None and since < CONNECTED_WITHIN for since in calls)


def _last_call(row: AgentRow, mine: list[JournalEntry]) -> datetime | None:
    """The newer of its heartbeat's last call and its newest entry today (wall time, for people)."""
    times = [t for t in (row.last_call_at, mine[-1].at if mine else None) if t is not None]
    return max(times, default=None)


def _orders_left(policy: Policy, budget: AgentBudget | None, journal: JournalState, name: str) -> int:
    """The orders it may still send today: the account's cap less the home's sends, and its own judgement's
    cap (for_agent) less its own; the tighter."""
    left = policy.daily_order_cap - journal.sent_today
    if budget is not None:
        left = min(left, for_agent(policy, budget).daily_order_cap - journal.agent(name).orders_today)
    return max(left, 0)


def _lines(
    policy: Policy,
    budget: AgentBudget | None,
    journal: JournalState,
    name: str,
    facts: dict[str, Facts] | None,
) -> tuple[BudgetLine, ...]:
    """Each limit policy.json declares for the agent, the one its judgement applies, and what is left."""
    if budget is None:
        return ()
    own, counts = for_agent(policy, budget), journal.agent(name)
    lines: list[BudgetLine] = []
    if budget.daily_order_cap is not None:
        used = counts.orders_today
        lines.append(
            BudgetLine(
                "dailyOrderCap",
                None,
                budget.daily_order_cap,
                own.daily_order_cap,
                used,
                _orders_left(policy, budget, journal, name),
            )
        )
    if budget.max_turnover_usd_per_day is not None:
        lines.append(_turnover(policy, budget.max_turnover_usd_per_day, journal, counts.turnover.day_usd))
    for field, key in _PER_ORDER:
        value = getattr(budget, field)
        if value is not None:
            lines.append(BudgetLine(key, None, value, getattr(own, field)))
    for symbol, market in sorted(budget.markets.items()):
        for field, key in _PER_ORDER[:2]:
            value = getattr(market, field)
            if value is not None:
                lines.append(BudgetLine(key, symbol, value, getattr(own.limits_for(symbol), field)))
    if budget.daily_loss_limit_usd is not None:
        lines.append(_day_loss(own, budget.daily_loss_limit_usd, facts))
    return tuple(lines)


# The caps on each order or position, not on what the day spends: (model field, policy.json key).
_PER_ORDER = (
    ("max_notional_usd", "maxNotionalUsd"),
    ("max_order_notional_usd", "maxOrderNotionalUsd"),
    ("max_loss_per_trade_usd", "maxLossPerTradeUsd"),
)


def _turnover(policy: Policy, mine: Decimal, journal: JournalState, used: Decimal) -> BudgetLine:
    """Its turnover today against its own cap, and against the account's on the home's (the tighter)."""
    left = mine - used
    account = policy.max_turnover_usd_per_day
    if account is not None:
        left = min(left, account - journal.activity.turnover.day_usd)
    binding = min(mine, account) if account is not None else mine
    return BudgetLine("maxTurnoverUsdPerDay", None, mine, binding, used, max(left, ZERO))


def _day_loss(own: Policy, mine: Decimal, facts: dict[str, Facts] | None) -> BudgetLine:
    """The account's loss today against the limit the agent's judgement applies (check_daily_loss's
    day_loss), when the exchange was read."""
    first = next(iter(facts.values()), None) if facts else None
    loss = (
        day_loss(own, first.equity, first.day_pnl)
        if first is not None and first.day_pnl is not None
        else None
    )
    binding = own.daily_loss_limit_usd or mine
    if loss is None:
        return BudgetLine("dailyLossLimitUsd", None, mine, binding)
    return BudgetLine(
        "dailyLossLimitUsd", None, mine, loss.limit, loss.loss, max(loss.limit - loss.loss, ZERO)
    )


async def _market_facts(reader: Runtime, row: AgentRow) -> dict[str, Facts]:
    """The facts plan_order would gather for the agent's market order of nothing in each allowed market,
    gathered as while its call is served (pilot.store.ACTING): its counts, its switch and its role's hold.
    An agent without a credential (named in policy.json only, or revoked) cannot call: none."""
    if row.role is None:
        return {}
    view = reader.policy()
    acting = ACTING.set(Holder(row.name, row.role))
    try:
        gathered = await gather_market_facts(reader, view, "linear", view.policy.allowed_markets)
    finally:
        ACTING.reset(acting)
    return {symbol: one.facts for symbol, one in gathered.items()}


def _rooms(policy: Policy, budget: AgentBudget | None, facts: dict[str, Facts]) -> tuple[MarketRoom, ...]:
    """The room per side in each market the agent may trade, judged as for the agent (room_now)."""
    markets: Sequence[str] = (
        for_agent(policy, budget).allowed_markets if budget is not None else policy.allowed_markets
    )
    rooms = []
    for symbol in markets:
        one = facts.get(symbol)
        if one is None:
            continue
        buy, sell = (room_now(policy, replace(one, order=replace(one.order, side=s))) for s in Side)
        rooms.append(MarketRoom(symbol, buy, sell))
    return tuple(rooms)


async def set_agent_switch(
    runtime: Runtime, name: str, on: bool, reason: str = "", *, via: str | None = None
) -> bool:
    """Turn agent `name`'s own switch on or off as the human (`via` "console" says where), as
    set_kill_switch does the account's: a reason over REASON_LIMIT is refused, never cut; already so (or
    revoked: on for good), nothing is journaled. Whether it changed.

    Raises:
        ReasonTooLong: the reason is too long.
        NoSuchAgent: no agent has that name.
    """
    if len(reason) > REASON_LIMIT:
        raise ReasonTooLong(len(reason))
    before = (await runtime.journal_state()).agent_switch(name)
    if before is not None and before.data.get("revoked"):
        return False
    if name not in {row.name for row in await agents_overview(runtime)}:
        raise NoSuchAgent(name)
    if (before is not None) == on:
        return False
    extra = {"via": via} if via is not None else {}
    await switch_agent(runtime, name, on=on, by="human", reason=reason, **extra)
    return True
