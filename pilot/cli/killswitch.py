"""`pilot kill-switch on|off|status`: the human's switch. On, only orders that shrink positions work."""

from __future__ import annotations

from pathlib import Path

import click

from pilot.app.human import KillSwitchState, kill_switch_state, set_kill_switch
from pilot.app.runtime import Runtime
from pilot.cli import render
from pilot.cli.home import home_option, on_desk


@click.group("kill-switch")
def command() -> None:
    """Turn the kill switch on or off (journaled as the human), or show it. Needs no exchange."""


@command.command("on")
@click.option("--reason", default="", help="Why, for the journal (200 characters at most).")
@home_option
def switch_on(reason: str, home: Path) -> None:
    """Switch on: opening and adding are refused; reducing orders, cancels and lower leverage still work."""
    click.echo(render.format_kill_switch(on_desk(home, lambda runtime: _switch(runtime, True, reason))))


@command.command("off")
@click.option("--reason", default="", help="Why, for the journal (200 characters at most).")
@home_option
def switch_off(reason: str, home: Path) -> None:
    """Switch off: policy.json's tradingState applies again. Only a human can do this."""
    click.echo(render.format_kill_switch(on_desk(home, lambda runtime: _switch(runtime, False, reason))))


@command.command("status")
@home_option
def status(home: Path) -> None:
    """Show whether the switch is on, who set it, when and why."""
    state = on_desk(home, kill_switch_state)
    click.echo(render.format_kill_switch(state))


async def _switch(runtime: Runtime, on: bool, reason: str) -> KillSwitchState:
    await set_kill_switch(runtime, on, reason)
    return await kill_switch_state(runtime)
