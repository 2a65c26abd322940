"""`pilot live on|off|status`: a live home's opt-in to trading real money on Bybit.

`on` is a human at a terminal typing the phrase it shows: refused when standard input is not a terminal,
so no pipe, script or agent can turn it on, and no flag or environment variable stands in for the typing.
`off` is open to anyone, at once.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from pilot.app.human.going_live import (
    LiveState,
    live_state,
    phrase,
    ready_for_live,
    turn_live_off,
    turn_live_on,
)
from pilot.app.human.kill_switch import REASON_LIMIT
from pilot.app.runtime.runtime import Runtime
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import emit_json, format_option, wants_json


@click.group("live")
@home_option
def command() -> None:
    """A live home's trading on Bybit mainnet (real money): on (a human, at a terminal), off, status."""


@command.command("on")
@home_option
@format_option()
def live_on(output: str) -> None:
    """Turn live trading on for this home: type the phrase shown. Needs a terminal; journaled as yours."""
    home = resolve_home()
    at_terminal = sys.stdin.isatty()
    if not at_terminal:  # refused before anything is asked or read
        on_desk(home, lambda runtime: turn_live_on(runtime, "", at_terminal=False))
    asked = on_desk(home, _ready_phrase)
    click.echo(
        "This home will send real orders to Bybit mainnet with the key stored for it, within policy.json.",
        err=True,
    )
    typed = click.prompt(f"Type '{asked}' to turn live trading on", err=True, default="", show_default=False)
    state = on_desk(home, lambda runtime: turn_live_on(runtime, typed, at_terminal=sys.stdin.isatty()))
    _print(home, state)


async def _ready_phrase(runtime: Runtime) -> str:
    await ready_for_live(runtime)
    return phrase(runtime)


@command.command("off")
@click.option("--reason", default="", help=f"Why, for the journal: at most {REASON_LIMIT} characters.")
@home_option
@format_option()
def live_off(reason: str, output: str) -> None:
    """Turn live trading off now (anyone may); the kill switch goes on with it."""
    home = resolve_home()
    _print(home, on_desk(home, lambda runtime: turn_live_off(runtime, "human", reason)))


@command.command("status")
@home_option
@format_option()
def status(output: str) -> None:
    """Say whether this home is live or practice and, live, whether trading real money is on."""
    home = resolve_home()
    _print(home, on_desk(home, live_state))


def live_record(state: LiveState) -> dict[str, Any]:
    return {
        "kind": state.kind,
        "live_on": state.on,
        "by": state.by,
        "at": state.at.isoformat() if state.at else None,
        "reason": state.reason,
    }


def format_live(state: LiveState) -> str:
    if state.kind != "live":
        return "Practice home: it never trades real money (`pilot init --live` makes a live home)."
    if state.on:
        return f"LIVE: trading real money on Bybit is ON (turned on by the {state.by} at {state.at:%Y-%m-%d %H:%M:%S %Z})."
    since = f" (turned off by the {state.by} at {state.at:%Y-%m-%d %H:%M:%S %Z})" if state.at else ""
    return f"LIVE home: trading real money is OFF{since}. A human turns it on with `pilot live on`."


def _print(home: object, state: LiveState) -> None:
    if wants_json():
        emit_json({"home": str(home), **live_record(state)})
    else:
        click.echo(format_live(state))
