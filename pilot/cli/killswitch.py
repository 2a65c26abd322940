"""`pilot kill-switch on|off|status`: the human's switch. On, only orders that shrink positions work."""

from __future__ import annotations

import click

from pilot.app.human.desk import KillSwitchChange, kill_switch_state, set_kill_switch
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.cli import render_desk
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import emit_json, format_option, wants_json

_reason = click.option(
    "--reason",
    default="",
    help=f"Why, for the journal: at most {REASON_LIMIT} characters (longer is refused, never cut).",
)


@click.group("kill-switch")
@home_option
def command() -> None:
    """Turn the kill switch on or off (journaled as the human), or show it. Needs no exchange.

    Switching it to the state it is already in changes nothing and keeps the time it was set.
    """


@command.command("on")
@_reason
@home_option
@format_option()
def switch_on(reason: str, output: str) -> None:
    """Switch on: opening and adding are refused; reducing orders, cancels and lower leverage still work."""
    _switch(True, reason)


@command.command("off")
@_reason
@home_option
@format_option()
def switch_off(reason: str, output: str) -> None:
    """Switch off: policy.json's tradingState applies again. Only a human can do this."""
    _switch(False, reason)


@command.command("status")
@home_option
@format_option()
def status(output: str) -> None:
    """Show whether the switch is on, who set it, since when and why."""
    home = resolve_home()
    state = on_desk(home, kill_switch_state)
    _print(home, KillSwitchChange(state, changed=False), asked=None)


def _switch(on: bool, reason: str) -> None:
    home = resolve_home()
    _print(home, on_desk(home, lambda runtime: set_kill_switch(runtime, on, reason)), asked=on)


def _print(home: object, change: KillSwitchChange, *, asked: bool | None) -> None:
    if wants_json():
        emit_json({"home": str(home), **render_desk.kill_switch_record(change, asked=asked)})
    else:
        click.echo(
            render_desk.format_kill_switch(change.state, already=asked is not None and not change.changed)
        )
