"""What holds trading below active, each with who set it, when and why, and what lifts it.

Trading is the strictest of policy.json's tradingState, the kill switch, the daily loss limit's latch, the
drawdown latch, a journal found rolled back and authority that expired. A refusal for the trading state names
the holds that stop the action at hand (`blocking`) and says what lifts each, and only those: with
policy.json saying active and the kill switch on, it says to turn the switch off, not to edit the file. The
app gathers the holds (pilot.app.runtime.runtime.Runtime.trading_status); the checks only read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pilot.core.facts import Effect, TradingState

REASON_SHOWN = 200  # the characters of a reason an answer carries (the journal keeps as many)


class HoldSource(StrEnum):
    """What can hold trading below active."""

    POLICY = "policy"  # policy.json's tradingState
    INVALID_POLICY = (
        "invalidPolicy"  # policy.json cannot be read as a policy: the fail-closed one is reducing
    )
    KILL_SWITCH = "killSwitch"
    LOSS_LIMIT = "lossLimit"  # the daily loss limit's latch
    DRAWDOWN = "drawdown"  # the drawdown latch
    ROLLBACK = "journalRollback"  # the journal lost entries; Pilot turns the kill switch on for it
    AUTHORITY = "authority"  # validUntil or maxSessionMinutes passed
    LIVE_OFF = "liveOff"  # a live home whose human has not turned live trading on, or it was turned off
    AGENT_KILL_SWITCH = "agentKillSwitch"  # the acting agent's own kill switch (or its revoke)
    AGENT_ROLE = "agentRole"  # the acting agent's credential has role reduce (or read)
    DAY_LOSS_UNREAD = "dayLossUnread"  # a daily loss limit is set and the day's loss could not be read now
    AGENT_DAY_LOSS = "agentDayLoss"  # the day's loss reached the acting agent's own dailyLossLimitUsd


@dataclass(frozen=True, slots=True)
class Hold:
    """One thing holding trading at `state`: who set it (human, agent, pilot), when, why, and until when it
    lifts by itself (None: only a human lifts it)."""

    source: HoldSource
    state: TradingState
    by: str | None = None
    at: datetime | None = None
    reason: str | None = None
    until: datetime | None = None
    agent: str | None = None  # an agent's own hold: whose, so that what lifts it names it

    @property
    def what(self) -> str:
        """What holds trading, in a few words (who, when and why are in the answer's `held_by`)."""
        return _DESCRIBED[self.source].format(state=self.state.value)

    @property
    def lift(self) -> str:
        """What lifts it: what only a human can change, or waiting."""
        lift = _LIFTS[self.source].format(state=self.state.value, agent=self.agent or "NAME")
        if self.until is not None:
            lift = f"wait until {self.until.isoformat()}, or {lift}"
        return lift

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.value,
            "state": self.state.value,
            "by": self.by,
            "at": self.at.isoformat() if self.at else None,
            "reason": self.reason[:REASON_SHOWN] if self.reason else None,
            "until": self.until.isoformat() if self.until else None,
        }


_DESCRIBED = {
    HoldSource.POLICY: "policy.json sets tradingState {state}",
    HoldSource.INVALID_POLICY: "policy.json is invalid, so the fail-closed policy holds trading {state}",
    HoldSource.KILL_SWITCH: "the kill switch is on",
    HoldSource.LOSS_LIMIT: "the daily loss limit was reached",
    HoldSource.DRAWDOWN: "the drawdown limit was reached",
    HoldSource.ROLLBACK: "the journal was found rolled back",
    HoldSource.AUTHORITY: "the authority policy.json gives expired (validUntil or maxSessionMinutes)",
    HoldSource.LIVE_OFF: "live trading (real money) is off for this home",
    HoldSource.AGENT_KILL_SWITCH: "this agent's kill switch is on",
    HoldSource.AGENT_ROLE: "this agent's credential may only reduce",
    HoldSource.DAY_LOSS_UNREAD: "the day's loss could not be read, so the daily loss limit cannot be judged",
    HoldSource.AGENT_DAY_LOSS: "the day's loss reached this agent's own daily loss limit",
}
_LIFTS = {
    HoldSource.POLICY: "set tradingState to active in policy.json (it says {state})",
    HoldSource.INVALID_POLICY: "fix policy.json (`pilot policy check` names each problem)",
    HoldSource.KILL_SWITCH: "turn the kill switch off with `pilot kill-switch off`",
    HoldSource.LOSS_LIMIT: "reset the daily loss limit with `pilot loss-limit reset`",
    HoldSource.DRAWDOWN: "reset the drawdown latch with `pilot drawdown reset`",
    HoldSource.ROLLBACK: "look at what `pilot doctor` says of the journal, then `pilot kill-switch off`",
    HoldSource.AUTHORITY: "extend validUntil in policy.json, or start a new session (maxSessionMinutes)",
    HoldSource.LIVE_OFF: "a human turns it on with `pilot live on`, typing what it asks at a terminal",
    HoldSource.AGENT_KILL_SWITCH: "turn this agent's switch off with `pilot agent resume {agent}`",
    HoldSource.AGENT_ROLE: "give the agent role trade (`pilot agent add {agent} --role trade`, after revoking it)",
    HoldSource.DAY_LOSS_UNREAD: "nothing to change: call again once the exchange answers (get_policy shows the day's loss)",
    HoldSource.AGENT_DAY_LOSS: "raise agents.{agent}.dailyLossLimitUsd in policy.json",
}


@dataclass(frozen=True, slots=True)
class TradingStatus:
    """The trading state and every hold behind it (none: active)."""

    holds: tuple[Hold, ...] = ()

    @property
    def state(self) -> TradingState:
        return TradingState.strictest(TradingState.ACTIVE, *(hold.state for hold in self.holds))


def blocking(holds: Sequence[Hold], state: TradingState, effect: Effect) -> tuple[Hold, ...]:
    """The holds that stop an action of `effect`: those whose state does not permit it. Facts that name no
    hold (built by hand, as the core's tests do) stand for policy.json's tradingState at `state`."""
    found = tuple(hold for hold in holds if not hold.state.permits(effect))
    return found or (Hold(HoldSource.POLICY, state),)


def resume_trading(holds: Sequence[Hold]) -> str:
    """What a human does so that trading is active again: what lifts each hold, and nothing else."""
    return "; and ".join(dict.fromkeys(hold.lift for hold in holds))


def held_by(holds: Sequence[Hold]) -> str:
    """Why trading is held, in words: what each hold is."""
    return "; ".join(hold.what for hold in holds)
