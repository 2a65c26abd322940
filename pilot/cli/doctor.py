"""`pilot doctor`: check a home (policy, journal chain, key, exchange) and say the fix for each problem."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from pilot.app.boot import EXCHANGES
from pilot.app.doctor import examine
from pilot.cli import render
from pilot.cli.home import home_option, run


@click.command("doctor")
@home_option
@click.option("--exchange", type=click.Choice(EXCHANGES), default="paper", show_default=True)
@click.option("--format", "output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(home: Path, exchange: str, output: str) -> None:
    """Check a home (policy, journal chain, key, exchange): ✓/✗ per check with its fix; exit 1 on any ✗."""
    checks = run(lambda: examine(home, exchange, now=datetime.now(UTC)))
    if output == "json":
        click.echo(render.format_json([render.check_record(check) for check in checks]))
    else:
        click.echo(render.format_checks(checks))
    if not all(check.ok for check in checks):
        raise SystemExit(1)
