"""The running Pilot: its home folder, store, exchange and clock, and the policy read fresh on every use."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pilot.app.clock import Clock
from pilot.app.gate import ExchangeGate, KeyCheck
from pilot.app.ports import Exchange, ExchangeReader
from pilot.core.facts import TradingState
from pilot.core.policy import LoadedPolicy, Policy, PolicyInvalid, PolicyIssue, parse_policy
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
    _policy_cache: tuple[int, int, PolicyView] | None = field(default=None, repr=False)

    def now(self) -> datetime:
        return self.clock.now()

    def policy(self) -> PolicyView:
        """Read policy.json now (cached only while its mtime and size are unchanged). Never raises."""
        path = self.home.policy_path
        try:
            stat = path.stat()
        except OSError:
            issue = PolicyIssue("policy.json", f"not found at {path}", "create it with `pilot init`")
            return PolicyView(Policy.fail_closed(), "invalid", (issue,))
        cached = self._policy_cache
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        view = _read_policy(path)
        self._policy_cache = (stat.st_mtime_ns, stat.st_size, view)
        return view

    async def kill_switch_on(self) -> bool:
        latest = await self.store.journal.latest(KILL_SWITCH)
        return bool(latest and latest.data.get("on"))

    async def trading_state(self, policy: Policy) -> TradingState:
        """The strictest of policy.json's tradingState and the kill switch (on means reducing)."""
        if await self.kill_switch_on():
            return TradingState.strictest(policy.trading_state, TradingState.REDUCING)
        return policy.trading_state


def assemble_runtime(
    home: Path,
    store: Store,
    exchange: Exchange,
    clock: Clock,
    *,
    environment: str = "paper",
    key_check: KeyCheck | None = None,
) -> Runtime:
    """A Runtime over one adapter: the use cases get its reads, the gate alone gets its writes."""
    gate = ExchangeGate(exchange, exchange, store.journal, clock, key_check)
    return Runtime(Home(home), store, exchange, gate, clock, environment)


def _read_policy(path: Path) -> PolicyView:
    try:
        loaded: LoadedPolicy = parse_policy(path.read_text(encoding="utf-8"))
    except PolicyInvalid as invalid:
        return PolicyView(Policy.fail_closed(), "invalid", tuple(invalid.issues))
    except (OSError, UnicodeDecodeError) as error:
        issue = PolicyIssue("policy.json", f"cannot be read ({type(error).__name__})", "check the file")
        return PolicyView(Policy.fail_closed(), "invalid", (issue,))
    return PolicyView(loaded.policy, loaded.version)
