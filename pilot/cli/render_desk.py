"""Pure `format_*` and `*_record` functions for the desk's commands (`pilot kill-switch`, `pilot confirm`): the
kill switch and the parked actions a human decides, as text and as JSON-ready data. Values in, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypedDict

from rich.table import Table
from rich.text import Text

from pilot.app.answers.receipts import CardHome
from pilot.app.human.desk import KillSwitchChange, KillSwitchState
from pilot.core.channels import CHANNELS, REACH_A_HUMAN, Via
from pilot.store import ConfirmationRecord, iso_utc


class KillSwitchRecord(TypedDict):
    """`pilot kill-switch on|off|status --format json` (beside the home)."""

    on: bool
    asked: Literal["on", "off"] | None
    changed: bool
    by: str | None
    reason: str | None
    since: str | None
    journal_seq: int | None


class ParkedRecord(TypedDict):
    """`pilot confirm list|show --format json`: one parked action, exactly as it would run."""

    confirmation_id: str
    status: str
    tool: str
    summary: str
    action: dict[str, Any]  # the server's record of the call, by tool
    expires_at: str
    seconds_left: int
    decided_by: str | None
    decided_at: str | None
    result: dict[str, Any] | None  # the tool's answer, as the server recorded it


def format_kill_switch(state: KillSwitchState, *, already: bool = False) -> str:
    """The switch as one line; `already`: the human asked for the state it was in, so nothing changed."""
    if state.seq is None:
        return (
            "kill switch: already off (never set); nothing changed"
            if already
            else "kill switch: off (never set)"
        )
    since = f" since {iso_utc(state.at)}" if state.at else ""
    reason = f": {state.reason}" if state.reason else ""
    effect = " (only reducing orders, cancels and lower leverage work)" if state.on else ""
    word = ("already " if already else "") + ("on" if state.on else "off")
    line = f"kill switch: {word}{effect}, set by {state.by}{since}{reason} (journal seq {state.seq})"
    return line + ("; nothing changed" if already else "")


def kill_switch_record(change: KillSwitchChange, *, asked: bool | None) -> KillSwitchRecord:
    """The switch as JSON-ready data: `changed` is false for status and for asking the state it was in."""
    state = change.state
    return {
        "on": state.on,
        "asked": None if asked is None else ("on" if asked else "off"),
        "changed": change.changed,
        "by": state.by,
        "reason": state.reason,
        "since": iso_utc(state.at) if state.at else None,
        "journal_seq": state.seq,
    }


def format_confirmations(records: Sequence[ConfirmationRecord]) -> Table | str:
    if not records:
        return "no confirmations waiting"
    table = Table(title=f"{len(records)} waiting for a human")
    for header in ("id", "tool", "expires (UTC)", "summary"):
        table.add_column(header, overflow="fold")
    for record in records:
        table.add_row(record.confirmation_id, record.tool, iso_utc(record.expires_at), Text(record.summary))
    return table


def format_channels(channels: Sequence[Via]) -> str:
    """Where a parked action can be decided now: the channels policy.json opens, and the CLI's switch if it
    is not among them."""
    if not channels:
        return f"no channel is open to decide them: {REACH_A_HUMAN}"
    line = "decide them in: " + ", ".join(CHANNELS[via][0] for via in channels)
    if "cli" not in channels:
        line += " (to decide here with `pilot confirm approve ID`, set confirm.cliChannel to true)"
    return line


def confirmation_record(record: ConfirmationRecord, now: datetime) -> ParkedRecord:
    """A parked action as JSON-ready data, exactly as it would run."""
    return {
        "confirmation_id": record.confirmation_id,
        "status": record.status,
        "tool": record.tool,
        "summary": record.summary,
        "action": record.action,
        "expires_at": iso_utc(record.expires_at),
        "seconds_left": max(int((record.expires_at - now).total_seconds()), 0),
        "decided_by": record.decided_by,
        "decided_at": iso_utc(record.decided_at) if record.decided_at else None,
        "result": record.result,
    }


def _asker(action: dict[str, Any]) -> str:
    agent = action.get("agent")
    return f"agent {agent}" if agent else "the agent"


def format_confirmation(record: ConfirmationRecord, now: datetime, home: CardHome | None = None) -> str:
    """The exact parked action a human is asked about, from the server's record: on a live home, LIVE first,
    and which agent asked when one was named."""
    action = record.action
    order = action.get("order") or {}
    left = int((record.expires_at - now).total_seconds())
    lines = [home.words] if home is not None and home.live else []
    lines += [
        f"confirmation {record.confirmation_id} ({record.status})",
        f"  tool:      {record.tool}",
        f"  summary:   {record.summary}",
        f"  order:     {json.dumps(order, sort_keys=True)}",
        f"  notional:  ${action.get('notional_usd', '?')}",
        f"  plan:      {action.get('plan_id') or '-'}",
        f"  asked by:  {_asker(action)}",
        f"  expires:   {iso_utc(record.expires_at)} ({max(left, 0)} s left)",
    ]
    if record.decided_by:
        lines.append(
            f"  decided:   by {record.decided_by} at {iso_utc(record.decided_at) if record.decided_at else '?'}"
        )
    if record.result:
        lines.append(f"  result:    {json.dumps(record.result, sort_keys=True)[:300]}")
    return "\n".join(lines)
