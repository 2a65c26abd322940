"""`pilot store move URL` and `pilot store grant ROLE`: a home's store on a PostgreSQL server shared by hosts."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from pilot.app.runtime.runtime import Home
from pilot.app.service.moving import move_home
from pilot.app.service.store_roles import grant_role
from pilot.cli.home import home_option, resolve_home, run
from pilot.cli.output import CliError, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode
from pilot.store import StoreLocation


@click.group("store")
@home_option
def command() -> None:
    """Where the home's journal, plans and keys are: its SQLite file (one machine) or a PostgreSQL server
    that several hosts share (docs/more-than-one-machine.md)."""


@command.command("move")
@click.argument("url")
@home_option
@format_option()
def move(url: str, output: str) -> None:
    """Copy the home's journal, plans and exchange keys from its SQLite files to the empty PostgreSQL
    database URL, verify the chain there, and use it from now on. Stop the home's servers first."""
    home = resolve_home()
    try:
        target = StoreLocation.parse(url)
    except ValueError as error:
        raise CliError(ErrorCode.INVALID_STORE, str(error)) from None
    outcome = run(lambda: move_home(home, target, now=datetime.now(UTC)))
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "store": outcome.target,
                "copied": outcome.copied,
                "verified": outcome.chain.count,
                "moved_seq": outcome.moved_seq,
            }
        )
        return
    rows = ", ".join(f"{count} {table}" for table, count in outcome.copied.items())
    click.echo(f"moved to {outcome.target}: {rows}")
    click.echo(
        f"the chain verifies there: {outcome.chain.count} entries, seals and links intact; the move is entry "
        f"{outcome.moved_seq}. The home uses it from now on ({Home(home).store_config_path.name}); "
        "journal/pilot.db stays as it was, a record."
    )


@command.command("grant")
@click.argument("role")
@home_option
@format_option()
def grant(role: str, output: str) -> None:
    """Give the database role ROLE what a host needs and no more: it may append to the journal but never
    change or delete an entry, move plans forward but never delete one. Run as the tables' owner."""
    home = resolve_home()
    where = run(lambda: grant_role(home, role))
    if wants_json():
        emit_json({"home": str(home), "store": where, "role": role})
    else:
        click.echo(f"{role} may now serve hosts on {where} (journal: SELECT, INSERT; plans: no DELETE)")
