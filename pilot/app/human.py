"""The human's desk: what `pilot init`, `journal`, `kill-switch` and `confirm` do, with the store open and no exchange.

These use cases never reach an exchange. They run on a Runtime whose exchange refuses every use, so the
same rules as the server's (the kill switch entry, the policy read fresh) apply without starting one.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from pilot.app import kinds, receipts
from pilot.app.clock import Clock, SystemClock
from pilot.app.killswitch import set_kill_switch_by_human
from pilot.app.ports import Exchange
from pilot.app.runtime import Home, Runtime, assemble_runtime
from pilot.store import ConfirmationRecord, JournalEntry, open_store

# The repository's policy.json, sized for Bybit's real minimum orders (0.001 BTC is about $80, 0.01 ETH $31,
# 0.1 SOL $10): $100 per market and per order, so each market's smallest order fits; BTCUSDT alone gets $150,
# room for one 0.001 BTC lot with headroom for the price to rise, never two; a human confirms any order above
# $50 (so every BTC order); no CLI channel. README.md, "The default policy", says why.
DEFAULT_POLICY = """\
{
  "allowedMarkets": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
  "maxNotionalUsd": 100,
  "maxOrderNotionalUsd": 100,
  "maxLeverage": 3,
  "minLiquidationDistancePct": 20,
  "dailyOrderCap": 20,
  "maxSlippagePct": 0.5,
  "planTtlSeconds": 60,
  "confirm": {
    "aboveNotionalUsd": 50,
    "actions": [],
    "cliChannel": false,
    "pendingTtlSeconds": 300
  },
  "tradingState": "active",
  "markets": {
    "BTCUSDT": {"maxNotionalUsd": 150, "maxOrderNotionalUsd": 150}
  }
}
"""


class NoJournal(Exception):
    """The home has no journal database yet; `pilot init` creates one."""

    def __init__(self, home: Path) -> None:
        super().__init__(f"no journal at {Home(home).database_path}; create the home with `pilot init`")


class _NoExchange:
    """Stands in for the exchange in the human's commands: none of them may reach one."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the human's commands do not use the exchange (asked for {name})")


@contextlib.asynccontextmanager
async def open_desk(home: Path, *, clock: Clock | None = None) -> AsyncIterator[Runtime]:
    """Open an existing home's store as a Runtime without an exchange.

    Raises:
        NoJournal: the home has no database; reading must not create one as a side effect.
    """
    path = Home(home).database_path
    if not path.exists():
        raise NoJournal(home)
    store = await open_store(path)
    try:
        # cast: _NoExchange stands in for every port method by raising (see its docstring)
        no_exchange = cast(Exchange, _NoExchange())
        yield assemble_runtime(home, store, no_exchange, clock or SystemClock(), environment="none")
    finally:
        await store.close()


@dataclass(frozen=True, slots=True)
class InitReport:
    """What `init_home` found and did."""

    home: Path
    policy_created: bool
    journal_created: bool


async def init_home(home: Path) -> InitReport:
    """Create policy.json (safe defaults) and the journal database; never overwrite an existing policy."""
    home.mkdir(parents=True, exist_ok=True)
    paths = Home(home)
    policy_created = journal_created = False
    if not paths.policy_path.exists():
        with paths.policy_path.open("x", encoding="utf-8") as file:  # "x": lose a race rather than overwrite
            file.write(DEFAULT_POLICY)
        policy_created = True
    if not paths.database_path.exists():
        journal_created = True
    store = await open_store(paths.database_path)
    await store.close()
    return InitReport(home=home, policy_created=policy_created, journal_created=journal_created)


@dataclass(frozen=True, slots=True)
class KillSwitchState:
    """The kill switch as the journal says: its latest entry, if any."""

    on: bool
    by: str | None = None
    reason: str | None = None
    at: datetime | None = None
    seq: int | None = None


async def kill_switch_state(runtime: Runtime) -> KillSwitchState:
    latest = await runtime.store.journal.latest(kinds.KILL_SWITCH)
    if latest is None:
        return KillSwitchState(on=False)
    data = latest.data
    return KillSwitchState(
        on=bool(data.get("on")), by=data.get("by"), reason=data.get("reason"), at=latest.at, seq=latest.seq
    )


async def set_kill_switch(runtime: Runtime, on: bool, reason: str = "") -> int:
    """Turn the kill switch on or off as the human; returns the journal seq."""
    return await set_kill_switch_by_human(runtime, on, reason)


class ChannelOff(Exception):
    """policy.json does not enable the CLI confirmation channel (or is invalid, which closes it)."""

    def __init__(self, policy_valid: bool = True) -> None:
        super().__init__(
            "the CLI confirmation channel is off: set confirm.cliChannel to true in policy.json to decide here"
            if policy_valid
            else "policy.json is invalid, which closes the CLI confirmation channel: fix it (`pilot policy check`)"
        )


def require_cli_channel(runtime: Runtime) -> None:
    """Raise ChannelOff unless policy.json (read now, and valid) enables confirm.cliChannel."""
    view = runtime.policy()
    if not view.policy.confirm.cli_channel:
        raise ChannelOff(view.valid)


async def pending_confirmations(runtime: Runtime) -> list[ConfirmationRecord]:
    """Parked actions a human may still decide, oldest first."""
    require_cli_channel(runtime)
    return await runtime.store.confirmations.list(status="pending", now=runtime.now())


async def find_confirmation(runtime: Runtime, confirmation_id: str) -> ConfirmationRecord | None:
    require_cli_channel(runtime)
    return await runtime.store.confirmations.get(confirmation_id, now=runtime.now())


@dataclass(frozen=True, slots=True)
class Decision:
    """The result of `decide`: the record as decided (None if it was not decidable) and the journal seq."""

    record: ConfirmationRecord | None
    seq: int | None = None


async def decide(runtime: Runtime, confirmation_id: str, *, approve: bool) -> Decision:
    """Approve or reject a pending confirmation as the human on the CLI, and journal the decision.

    The running server carries out an approved action itself, re-checked when it runs.
    """
    require_cli_channel(runtime)
    record = await runtime.store.confirmations.decide(
        confirmation_id, approve=approve, actor="human:cli", now=runtime.now()
    )
    if record is None:
        return Decision(record=None)
    entry = await runtime.store.journal.append(
        kinds.CONFIRMATION,
        {"event": "decided", "approved": approve, "confirmation_id": confirmation_id, "tool": record.tool},
        now=runtime.now(),
        actor="human",
        plan_id=record.action.get("plan_id") or None,
    )
    return Decision(record=record, seq=entry.seq)


async def receipt_cards(
    runtime: Runtime, *, card: str | None = None, last: int = 1
) -> list[receipts.ReceiptCard]:
    """The receipt card named by `card` (a plan id, or "seq-N" for a refused plan), else the last `last`.

    Cards come oldest first. An unknown `card` gives an empty list.
    """
    journal = runtime.store.journal
    if card is not None:
        plan = await _plan_entry(runtime, card)
        plans = [plan] if plan is not None else []
    else:
        plans = list(reversed(await journal.entries(kind=kinds.PLAN, limit=last, newest_first=True)))
    cards = []
    for plan in plans:
        entries = await journal.entries(plan_id=plan.plan_id) if plan.plan_id else [plan]
        cards.append(receipts.receipt_card(entries))
    return cards


async def _plan_entry(runtime: Runtime, card: str) -> JournalEntry | None:
    journal = runtime.store.journal
    seq_text = card.removeprefix("seq-")
    if seq_text.isdigit():
        entry = await journal.get(int(seq_text))
        return entry if entry is not None and entry.kind == kinds.PLAN else None
    found = await journal.entries(plan_id=card, kind=kinds.PLAN, limit=1)
    return found[0] if found else None
