"""`pilot doctor`: check a home (policy, journal chain, key, exchange) and say the fix for each problem."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import click

from pilot.app.service.boot import EXCHANGES
from pilot.app.service.doctor import examine
from pilot.cli import render_setup
from pilot.cli.home import home_option, resolve_home, run
from pilot.cli.output import emit_json, format_option, runnable_where, wants_json


@click.command("doctor")
@home_option
@click.option("--exchange", type=click.Choice(EXCHANGES), default="paper", show_default=True)
@format_option()
def command(exchange: str, output: str) -> None:
    """Check a home (policy, journal chain, key, exchange): ✓/✗ per check with its fix; exit 1 on any ✗."""
    home = resolve_home()
    found = run(lambda: examine(home, exchange, now=datetime.now(UTC)))
    # every command a fix names runs as printed from anywhere: with this home's --home
    checks = [replace(c, fix=runnable_where(c.fix, str(home))) if c.fix else c for c in found]
    ok = all(check.ok for check in checks)
    if wants_json():
        emit_json(
            {
                "home": str(home),
                "exchange": exchange,
                "ok": ok,
                "checks": [render_setup.check_record(check) for check in checks],
            }
        )
    else:
        click.echo(render_setup.format_checks(checks))
    if not ok:
        raise SystemExit(1)
