"""The running Pilot: its home folder, store, exchange and clock, and the policy read fresh on every use."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pilot.app.answers import entry_kinds
from pilot.app.road.clock import Clock
from pilot.app.road.gate import ExchangeGate, KeyCheck, SendCondition
from pilot.app.road.ports import Exchange, ExchangeReader
from pilot.app.runtime.day_closed import DayClosed
from pilot.app.runtime.latches import drawdown_state, next_midnight
from pilot.app.runtime.ledger import JournalState, Ledger
from pilot.app.runtime.loss_limit import latch_of
from pilot.app.runtime.policy_file import read_policy_file
from pilot.app.runtime.sessions import Sessions, session_age
from pilot.core.agent_budgets import Role
from pilot.core.controls import authority_breach
from pilot.core.day_pnl import DayFills
from pilot.core.facts import TradingState
from pilot.core.holds import Hold, HoldSource, TradingStatus
from pilot.core.policy import LoadedPolicy, Policy, PolicyIssue
from pilot.core.venues import VenueProfile
from pilot.exchange.adapters import LIVE_ENVIRONMENTS
from pilot.store import ACTING as ACTING
from pilot.store import Holder as Holder
from pilot.store import Instant, JournalEntry, Store, StoreError, StoreLocation, Unless

# The entries that turn trading reducing (`Runtime.trading_state`): a growing send is journaled only if none
# came after what its judgement read (`Runtime.judged_on`).
REDUCING_KINDS = frozenset(
    {
        entry_kinds.KILL_SWITCH,
        entry_kinds.LOSS_LIMIT,
        entry_kinds.DRAWDOWN,
        entry_kinds.COOLDOWN,
        entry_kinds.LIVE,
        entry_kinds.AGENT_SWITCH,
    }
)
LIVE_ENVIRONMENT = "bybit"  # Bybit's mainnet: real money, a live Bybit home's only environment


def is_live(environment: str) -> bool:
    """Whether `environment` trades real money (Bybit's mainnet, OKX's real account): a live home's only."""
    return environment in LIVE_ENVIRONMENTS


def environment_label(environment: str) -> str:
    """The environment as every answer and phone message names it: LIVE after a real-money one's."""
    return f"{environment} LIVE" if is_live(environment) else environment


# How many times a send is judged again when what it was judged on changes as it is about to leave.
JUDGEMENTS = 3


# Where a home's store is, when not its own SQLite file: `--store` (which sets this for the command), this
# variable, or the home's store.json (`pilot init --store`, `pilot store move`), in that order.
STORE_ENVIRONMENT_VARIABLE = "PILOT_STORE"
STORE_CONFIG = "store.json"


@dataclass(frozen=True, slots=True)
class Home:
    """A Pilot home: policy.json (edited by a human), journal/ (the database) and paper/ (the paper account)."""

    path: Path

    @property
    def policy_path(self) -> Path:
        return self.path / "policy.json"

    @property
    def database_path(self) -> Path:
        return self.path / "journal" / "pilot.db"

    @property
    def store_config_path(self) -> Path:
        return self.path / STORE_CONFIG

    def store(self) -> StoreLocation:
        """Where this home's store is: PILOT_STORE (or `--store`), else the URL in the home's store.json, else
        its own SQLite file (journal/pilot.db, the default).

        Raises:
            StoreError: PILOT_STORE or store.json names no PostgreSQL URL Pilot can use (the message says
                which, and the form).
        """
        given = os.environ.get(STORE_ENVIRONMENT_VARIABLE, "").strip()
        source = STORE_ENVIRONMENT_VARIABLE
        if not given and os.path.lexists(self.store_config_path):
            given, source = _configured_store(self.store_config_path), str(self.store_config_path)
        if not given:
            return StoreLocation(path=self.database_path)
        try:
            return StoreLocation.parse(given)
        except ValueError as error:
            raise StoreError(f"{source}: {error}") from None

    def has_store(self) -> bool:
        """Whether the home's store exists: its SQLite file, or (a server's database is there, its schema made
        at the first open) a PostgreSQL store it names."""
        return self.store().url is not None or self.database_path.exists()

    def record_store(self, location: StoreLocation) -> None:
        """Make `location` the home's store (store.json), written whole or not at all; never with a password."""
        if location.url is None or location.has_password:
            raise StoreError(
                "store.json keeps no password: give the URL without one and put the password in ~/.pgpass "
                "(or PGPASSWORD) on each host"
            )
        partial = self.store_config_path.with_suffix(".tmp")
        partial.write_text(json.dumps({"url": location.url}, indent=2) + "\n", encoding="utf-8")
        partial.replace(self.store_config_path)

    @property
    def paper_state_path(self) -> Path:
        """The embedded paper exchange's account (balances, positions, orders), kept across restarts."""
        return self.path / "paper" / "state.json"


def _configured_store(path: Path) -> str:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise StoreError(
            f"{path} cannot be read as JSON ({type(error).__name__}): fix or remove it"
        ) from None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str):
        raise StoreError(f'{path} names no store: it holds {{"url": "postgresql://..."}}')
    return url


@dataclass(frozen=True, slots=True)
class PolicyView:
    """The policy in force right now: the file's if valid, else the fail-closed one with the file's errors."""

    policy: Policy
    version: str
    issues: tuple[PolicyIssue, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.issues


@dataclass
class Runtime:
    """What every use case needs. One per server process.

    `exchange` only reads; every write goes through `gate`, which holds the only writer. Build one with
    `assemble_runtime`.
    """

    home: Home
    store: Store
    exchange: ExchangeReader
    gate: ExchangeGate
    clock: Clock
    environment: str = "paper"
    ledger: Ledger = field(init=False)  # the journal's state for judgements, read on incrementally
    sessions: Sessions = field(default_factory=Sessions)  # the MCP sessions this process serves
    # the day's spot fills this process has read, by the day's start (pilot.app.facts.day_reads)
    day_fills: dict[datetime, DayFills] = field(default_factory=dict)
    # the day's closed PnL (linear) this process has read, by the day's start (pilot.app.runtime.day_closed)
    day_closed: dict[datetime, DayClosed] = field(default_factory=dict)
    # the seq of the latch whose growing orders this process found all cancelled (pilot.app.service.latched)
    latch_swept: int = 0
    # Over stdio, the agent's credential the client's configuration carries (None: no agent named), and
    # the name it was last found to hold (to name the agent once it is revoked).
    credential: str | None = None
    credential_name: str | None = None

    # when this process began serving, on the store's clock (the dead-man's switch counts silence from it)
    started: Instant = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = Ledger(self.store.journal)
        self.started = self.store.clock.read()

    def now(self) -> datetime:
        return self.clock.now()

    @property
    def live(self) -> bool:
        """Whether this runtime trades real money (Bybit's mainnet, OKX's real account)."""
        return is_live(self.environment)

    @property
    def venue(self) -> VenueProfile:
        """How the venue applies stops (pilot.core.venues), as its reader declares it."""
        return self.exchange.profile

    async def journal_state(self) -> JournalState:
        return await self.ledger.state(self.now())

    def policy(self) -> PolicyView:
        """Read policy.json now; any change to it is seen on the next call. Never raises, never blocks."""
        return _read_policy(self.home.policy_path)

    async def kill_switch_on(self) -> bool:
        return (await self.journal_state()).kill_switch_on

    async def trading_state(
        self, policy: Policy, journal: JournalState | None = None, *, judged: bool = False
    ) -> TradingState:
        """The trading state: the strictest of what trading_status finds holding it."""
        return (await self.trading_status(policy, journal, judged=judged)).state

    async def trading_status(
        self, policy: Policy, journal: JournalState | None = None, *, judged: bool = False, valid: bool = True
    ) -> TradingStatus:
        """What holds trading below active, each with who set it, when and why: policy.json's tradingState
        (`valid` False: the fail-closed policy of a file that is not), the kill switch and the daily loss
        limit's latch (either on means reducing), a journal found rolled back (reducing: until its finding
        is journaled as the kill switch, pilot.app.human.kill_switch.stop_on_rollback), the drawdown latch
        and authority that expired (validUntil, maxSessionMinutes). `journal` is the journal's state when
        the caller has just read it. `judged`: the caller runs evaluate(), whose checks report the drawdown
        and the authority by their own codes (with when and how they lift), so they are left to those
        checks."""
        journal = journal if journal is not None else await self.journal_state()
        holds: list[Hold] = []
        if policy.trading_state is not TradingState.ACTIVE:
            source = HoldSource.POLICY if valid else HoldSource.INVALID_POLICY
            holds.append(Hold(source, policy.trading_state))
        if journal.kill_switch_on and journal.kill_switch is not None:
            holds.append(_kill_switch_hold(journal.kill_switch.data, journal.kill_switch.at))
        if journal.rolled_back:
            holds.append(Hold(HoldSource.ROLLBACK, TradingState.REDUCING, by="pilot"))
        if self.live and not journal.live_on:
            holds.append(_live_off_hold(journal.live))
        latch = latch_of(journal.loss_limit, journal.today)
        if latch.on and journal.loss_limit is not None:
            holds.append(loss_limit_hold(journal.loss_limit.at, self.now()))
        holds += _agent_holds(journal)
        if not judged:
            holds += self._control_holds(policy, journal)
        return TradingStatus(tuple(holds))

    def _control_holds(self, policy: Policy, journal: JournalState) -> list[Hold]:
        """The drawdown latch and expired authority, as holds."""
        now, found = self.now(), []
        drawdown = drawdown_state(policy, journal, now)
        if drawdown.latched:
            found.append(Hold(HoldSource.DRAWDOWN, TradingState.REDUCING, by="pilot", until=drawdown.until))
        if authority_breach(policy, now, session_age(journal.today.here)) is not None:
            found.append(Hold(HoldSource.AUTHORITY, TradingState.REDUCING))
        return found

    def judged_on(self, view: PolicyView, mark: int) -> SendCondition:
        """The condition a growing send was judged on: no kill switch or loss latch entry after `mark` (the
        journal's place its facts held to), and policy.json still the version judged. The gate journals
        the send only while it holds."""
        return SendCondition(Unless(mark, REDUCING_KINDS), lambda: self.policy().version == view.version)

    async def loss_limit_on(self, journal: JournalState | None = None) -> bool:
        """Whether the daily loss limit was reached today (UTC) and no human has reset it since."""
        journal = journal if journal is not None else await self.journal_state()
        return latch_of(journal.loss_limit, journal.today).on


def _kill_switch_hold(data: Mapping[str, Any], at: datetime) -> Hold:
    """The kill switch's entry as a hold: who turned it on (human, agent, pilot), when and why."""
    reason = str(data.get("reason") or "").strip()
    return Hold(
        HoldSource.KILL_SWITCH, TradingState.REDUCING, by=data.get("by"), at=at, reason=reason or None
    )


def _live_off_hold(entry: JournalEntry | None) -> Hold:
    """Live trading not turned on, or turned off since (a live off entry, or any kill switch entry)."""
    if entry is None or entry.data.get("on"):  # never on, or ended by a kill switch entry (which says so)
        return Hold(HoldSource.LIVE_OFF, TradingState.REDUCING)
    data = entry.data
    return Hold(
        HoldSource.LIVE_OFF, TradingState.REDUCING, by=data.get("by"), at=entry.at, reason=data.get("reason")
    )


def acting_agent() -> Holder | None:
    """The named agent whose call is being served (None: no agent named, or no call: upkeep, a human)."""
    holder = ACTING.get()
    return holder if holder is not None and holder.role is not None else None


def _agent_holds(journal: JournalState) -> list[Hold]:
    """What holds the acting agent alone: its own kill switch, and a credential that may only reduce."""
    agent = acting_agent()
    if agent is None:
        return []
    holds = []
    switch = journal.agent_switch(agent.name)
    if switch is not None:
        reason = str(switch.data.get("reason") or "").strip() or None
        by = switch.data.get("by")
        holds.append(
            Hold(
                HoldSource.AGENT_KILL_SWITCH,
                TradingState.REDUCING,
                by=by,
                at=switch.at,
                reason=reason,
                agent=agent.name,
            )
        )
    if agent.role != Role.TRADE:
        holds.append(Hold(HoldSource.AGENT_ROLE, TradingState.REDUCING, by="human", agent=agent.name))
    return holds


def loss_limit_hold(at: datetime, now: datetime) -> Hold:
    """The daily loss limit's latch as a hold: set by Pilot, lifting by itself at 00:00 UTC."""
    return Hold(HoldSource.LOSS_LIMIT, TradingState.REDUCING, by="pilot", at=at, until=next_midnight(now))


def assemble_runtime(
    home: Path,
    store: Store,
    exchange: Exchange,
    clock: Clock,
    *,
    environment: str = "paper",
    key_check: KeyCheck | None = None,
    reader: ExchangeReader | None = None,
) -> Runtime:
    """A Runtime over one adapter: the use cases get its reads, the gate alone gets its writes.

    `reader` replaces the adapter's reads (pilot.app.facts.streaming_reader.StreamingReader: facts from the streams
    when fresh); writes still go to the adapter, through the gate only.
    """
    reads = reader if reader is not None else exchange
    gate = ExchangeGate(exchange, reads, store.journal, store.leases, clock, key_check)
    return Runtime(Home(home), store, reads, gate, clock, environment)


def read_policy(path: Path) -> PolicyView:
    """policy.json at `path` as the policy in force (the fail-closed one when it is invalid)."""
    return _read_policy(path)


def _read_policy(path: Path) -> PolicyView:
    outcome = read_policy_file(path)
    if isinstance(outcome, LoadedPolicy):
        return PolicyView(outcome.policy, outcome.version)
    return PolicyView(Policy.fail_closed(), "invalid", outcome)
