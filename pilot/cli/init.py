"""`pilot init`: create a home with a safe policy.json and an empty journal; never overwrites a policy."""

from __future__ import annotations

from pathlib import Path

import click

from pilot.app.human import init_home
from pilot.cli import render
from pilot.cli.home import home_option, run


@click.command("init")
@home_option
def command(home: Path) -> None:
    """Create a home: policy.json with safe defaults and journal/pilot.db. Never overwrites a policy."""
    click.echo(render.format_init(run(init_home, home)))
