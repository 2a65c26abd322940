"""`pilot confirm list|show|approve|reject`: the CLI confirmation channel (only if policy.json enables it)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
from rich.console import Console

from pilot.app.human import decide, find_confirmation, pending_confirmations
from pilot.app.runtime import Runtime
from pilot.cli import render
from pilot.cli.home import home_option, on_desk
from pilot.store import ConfirmationRecord


@click.group("confirm")
def command() -> None:
    """Decide actions the server parked for a human. Works only with confirm.cliChannel true in policy.json."""


@command.command("list")
@home_option
def list_pending(home: Path) -> None:
    """Show the actions waiting for a decision."""
    Console().print(render.format_confirmations(on_desk(home, pending_confirmations)))


@command.command("show")
@click.argument("confirmation_id")
@home_option
def show(confirmation_id: str, home: Path) -> None:
    """Show one parked action exactly as it would run."""
    record, now = _read(home, confirmation_id)
    click.echo(render.format_confirmation(record, now))


@command.command("approve")
@click.argument("confirmation_id")
@home_option
def approve(confirmation_id: str, home: Path) -> None:
    """Print the exact action and ask; only an answer of y at the prompt approves."""
    record, now = _read(home, confirmation_id)
    click.echo(render.format_confirmation(record, now))
    _require_pending(record)
    if not click.confirm("Approve?", default=False):
        click.echo(
            f"Not approved; it stays pending. Reject it with `pilot confirm reject {confirmation_id}`."
        )
        return
    _decide(home, confirmation_id, approve=True)


@command.command("reject")
@click.argument("confirmation_id")
@home_option
def reject(confirmation_id: str, home: Path) -> None:
    """Reject a parked action: it will never run."""
    record, _ = _read(home, confirmation_id)
    _require_pending(record)
    _decide(home, confirmation_id, approve=False)


def _read(home: Path, confirmation_id: str) -> tuple[ConfirmationRecord, datetime]:
    async def read(runtime: Runtime) -> tuple[ConfirmationRecord | None, datetime]:
        return await find_confirmation(runtime, confirmation_id), runtime.now()

    record, now = on_desk(home, read)
    if record is None:
        click.echo(f"pilot: no confirmation {confirmation_id}", err=True)
        raise SystemExit(1)
    return record, now


def _require_pending(record: ConfirmationRecord) -> None:
    if record.status != "pending":
        click.echo(
            f"pilot: confirmation {record.confirmation_id} is {record.status}; it cannot be decided", err=True
        )
        raise SystemExit(1)


def _decide(home: Path, confirmation_id: str, *, approve: bool) -> None:
    decision = on_desk(home, lambda runtime: decide(runtime, confirmation_id, approve=approve))
    if decision.record is None:
        click.echo(f"pilot: {confirmation_id} expired or was decided meanwhile; nothing changed", err=True)
        raise SystemExit(1)
    if approve:
        click.echo(
            f"Approved (journal seq {decision.seq}). The running server carries it out, re-checked then."
        )
    else:
        click.echo(f"Rejected (journal seq {decision.seq}). It will not run.")
