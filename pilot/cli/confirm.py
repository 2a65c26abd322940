"""`pilot confirm list|show|approve|reject`: parked actions, and the CLI channel that decides them (approve and
reject only if policy.json enables it).

A confirmation is named by its id or any unique prefix of it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
from rich.console import Console

from pilot.app.answers.receipts import CardHome
from pilot.app.human.desk import (
    Decision,
    decide,
    find_confirmation,
    home_card,
    pending_confirmations,
    require_channel,
)
from pilot.app.runtime.runtime import Runtime
from pilot.cli import render_desk
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CheckFailed, CliError, emit_json, format_option, wants_json
from pilot.core.channels import Via
from pilot.core.errors import ErrorCode
from pilot.store import ConfirmationRecord


@click.group("confirm")
@home_option
def command() -> None:
    """Read and decide actions the server parked for a human. Listing and showing always work; approving and
    rejecting here need confirm.cliChannel true in policy.json."""


@command.command("list")
@home_option
@format_option()
def list_pending(output: str) -> None:
    """Show the actions waiting for a decision, and where they can be decided."""
    home = resolve_home()

    async def read(runtime: Runtime) -> tuple[list[ConfirmationRecord], datetime, tuple[Via, ...]]:
        channels = runtime.policy().policy.confirm.open_channels
        return await pending_confirmations(runtime), runtime.now(), channels

    records, now, channels = on_desk(home, read)
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "confirmations": [render_desk.confirmation_record(r, now) for r in records],
                "channels": list(channels),
            }
        )
    else:
        Console().print(render_desk.format_confirmations(records))
        click.echo(render_desk.format_channels(channels))


@command.command("show")
@click.argument("confirmation_id")
@home_option
@format_option()
def show(confirmation_id: str, output: str) -> None:
    """Show one parked action exactly as it would run."""
    home = resolve_home()
    record, now, kind = _read(home, confirmation_id)
    if wants_json():
        emit_json({"home": str(home), "confirmation": render_desk.confirmation_record(record, now)})
    else:
        click.echo(render_desk.format_confirmation(record, now, kind))


@command.command("approve")
@click.argument("confirmation_id")
@home_option
@format_option()
def approve(confirmation_id: str, output: str) -> None:
    """Print the exact action and ask; only an answer of y at the prompt approves (exit 1 otherwise)."""
    home = resolve_home()
    record, now, kind = _read(home, confirmation_id, deciding=True)
    click.echo(render_desk.format_confirmation(record, now, kind), err=wants_json())
    _require_pending(record)
    if not click.confirm("Approve?", default=False, err=wants_json()):
        raise CheckFailed(
            ErrorCode.NOT_APPROVED,
            f"not approved; {record.confirmation_id} stays pending",
            f"reject it with `pilot confirm reject {record.confirmation_id}`, or let it expire",
        )
    _decide(home, record, approve=True)


@command.command("reject")
@click.argument("confirmation_id")
@home_option
@format_option()
def reject(confirmation_id: str, output: str) -> None:
    """Reject a parked action: it will never run."""
    home = resolve_home()
    record, _, _ = _read(home, confirmation_id, deciding=True)
    _require_pending(record)
    _decide(home, record, approve=False)


def _read(
    home: Path, confirmation_id: str, *, deciding: bool = False
) -> tuple[ConfirmationRecord, datetime, CardHome]:
    """The parked action, the time now, and whether the home trades real money (its journal's first entry)."""

    async def read(runtime: Runtime) -> tuple[ConfirmationRecord, datetime, CardHome]:
        if deciding:  # refused before the action is shown or asked about
            require_channel(runtime, "cli")
        record = await find_confirmation(runtime, confirmation_id)
        return record, runtime.now(), await home_card(runtime.store.journal)

    return on_desk(home, read)


def _require_pending(record: ConfirmationRecord) -> None:
    if record.status != "pending":
        raise CliError(
            ErrorCode.NOT_PENDING,
            f"confirmation {record.confirmation_id} is {record.status}; it cannot be decided",
            "only a pending confirmation can be approved or rejected: see `pilot confirm list`",
        )


def _decide(home: Path, record: ConfirmationRecord, *, approve: bool) -> None:
    full_id = record.confirmation_id
    decision: Decision = on_desk(home, lambda runtime: decide(runtime, full_id, approve=approve))
    if decision.record is None:
        raise CliError(
            ErrorCode.NOT_PENDING,
            f"{full_id} expired or was decided meanwhile; nothing changed",
            "see where it stands with `pilot confirm show`",
        )
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "confirmation_id": full_id,
                "decision": "approved" if approve else "rejected",
                "journal_seq": decision.seq,
            }
        )
    elif approve:
        click.echo(
            f"Approved (journal seq {decision.seq}). The running server carries it out, re-checked then."
        )
    else:
        click.echo(f"Rejected (journal seq {decision.seq}). It will not run.")
