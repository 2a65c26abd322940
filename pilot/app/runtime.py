"""The running Pilot: its home folder, store, exchange and clock, and the policy read fresh on every use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pilot.app.clock import Clock
from pilot.app.policy_file import read_policy_file
from pilot.app.ports import Exchange
from pilot.core.facts import TradingState
from pilot.core.policy import LoadedPolicy, Policy, PolicyIssue
from pilot.store import Store

KILL_SWITCH = "killswitch"


@dataclass(frozen=True, slots=True)
class Home:
    """A Pilot home: policy.json (edited by a human) and journal/ (the database)."""

    path: Path

    @property
    def policy_path(self) -> Path:
        return self.path / "policy.json"

    @property
    def database_path(self) -> Path:
        return self.path / "journal" / "pilot.db"


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
    """What every use case needs. One per server process."""

    home: Home
    store: Store
    exchange: Exchange
    clock: Clock
    environment: str = "paper"
    # Held from the re-check on fresh facts until the send's outcome is known, so concurrent sends are judged
    # one after another: each sees the order.sent entries and the position the previous send left.
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)
    # For a stored exchange key: re-checks its permissions when the last check is over an hour old, raising
    # when it may now do more than the allowlist permits or cannot be checked (pilot.keys). None on paper.
    key_check: Callable[[datetime], Awaitable[object]] | None = field(default=None, repr=False)

    def now(self) -> datetime:
        return self.clock.now()

    def policy(self) -> PolicyView:
        """Read policy.json now; any change to it is seen on the next call. Never raises, never blocks."""
        return _read_policy(self.home.policy_path)

    async def key_problem(self) -> str | None:
        """None when the exchange key may trade; else why not, with the fix (never the key itself)."""
        if self.key_check is None:
            return None
        from pilot.keys.errors import KeysError

        try:
            await self.key_check(self.now())
        except KeysError as error:
            return str(error)
        return None

    async def kill_switch_on(self) -> bool:
        latest = await self.store.journal.latest(KILL_SWITCH)
        return bool(latest and latest.data.get("on"))

    async def trading_state(self, policy: Policy) -> TradingState:
        """The strictest of policy.json's tradingState and the kill switch (on means reducing)."""
        if await self.kill_switch_on():
            return TradingState.strictest(policy.trading_state, TradingState.REDUCING)
        return policy.trading_state


def _read_policy(path: Path) -> PolicyView:
    outcome = read_policy_file(path)
    if isinstance(outcome, LoadedPolicy):
        return PolicyView(outcome.policy, outcome.version)
    return PolicyView(Policy.fail_closed(), "invalid", outcome)
