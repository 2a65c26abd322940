"""`pilot init`: create a home with the default policy.json (docs/policy.md) and an empty journal; never
overwrites."""

from __future__ import annotations

import click
from rich.console import Console

from pilot.app.human.desk import init_home
from pilot.app.service.boot import EXCHANGES
from pilot.cli import render_setup
from pilot.cli.home import given_store, home_option, resolve_home, run
from pilot.cli.output import emit_json, format_option, wants_json


@click.command("init")
@home_option
@click.option(
    "--exchange",
    type=click.Choice(EXCHANGES),
    default="paper",
    show_default=True,
    help="The venue this home trades on: its policy names markets as the venue spells them (OKX: BTC-USDT).",
)
@format_option()
def command(exchange: str, output: str) -> None:
    """Create a home (default: the current directory): policy.json with the default policy (its markets in
    the spelling of --exchange's venue) and journal/pilot.db. Never overwrites a policy. Prints the limits in force, the confirmation threshold too.
    With --store URL, the journal is on that PostgreSQL server, shared with other hosts, from now on
    (recorded in the home's store.json).
    """
    home = resolve_home(creating=True)
    report = run(init_home, home, given_store(), exchange)
    if wants_json():
        emit_json(render_setup.init_record(report))
    else:
        Console().print(render_setup.format_init(report))
