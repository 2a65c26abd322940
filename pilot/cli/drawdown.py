"""`pilot drawdown status|reset`: the drawdown latch. Past maxDrawdownUsd/Pct trading is reducing until the
window passes (00:00 UTC, or drawdownWindowHours after it was reached) or a human resets it here."""

from __future__ import annotations

from typing import Any

import click

from pilot.app.runtime.latches import DrawdownLatch, drawdown_latch, reset_drawdown
from pilot.app.runtime.runtime import Runtime
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CheckFailed, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode


@click.group("drawdown")
@home_option
def command() -> None:
    """The drawdown limit (maxDrawdownUsd/Pct): show whether it holds, or reset it. Needs no exchange."""


@command.command("status")
@home_option
@format_option()
def status(output: str) -> None:
    """Whether the drawdown limit holds now, with its numbers."""
    home = resolve_home()
    _print(str(home), on_desk(home, _state), reset_seq=None)


@command.command("reset")
@home_option
@format_option()
def reset(output: str) -> None:
    """Lift the latch: trading follows policy.json and the kill switch again, and the peak equity is counted
    afresh from the equity recorded when the limit was reached. Exit 1 when it does not hold."""
    home = resolve_home()

    async def use(runtime: Runtime) -> tuple[int | None, DrawdownLatch]:
        entry = await reset_drawdown(runtime.store.journal, runtime.policy().policy, runtime.now())
        return (entry.seq if entry else None), await _state(runtime)

    seq, state = on_desk(home, use)
    if seq is None:
        raise CheckFailed(
            ErrorCode.DRAWDOWN_NOT_REACHED,
            "the drawdown limit does not hold now: nothing to reset",
            "nothing to do; `pilot drawdown status` shows the state",
        )
    _print(str(home), state, reset_seq=seq)


async def _state(runtime: Runtime) -> DrawdownLatch:
    return await drawdown_latch(runtime.store.journal, runtime.policy().policy, runtime.now())


def _print(home: str, state: DrawdownLatch, *, reset_seq: int | None) -> None:
    record: dict[str, Any] = {
        "home": home,
        "reached": state.on,
        "until": state.until.isoformat() if state.until else None,
        "trading_state": "reducing" if state.on else "as policy.json and the kill switch say",
        "entry": state.entry,
        "seq": state.seq,
    }
    if reset_seq is not None:
        record["reset_seq"] = reset_seq
    if wants_json():
        emit_json(record)
        return
    if reset_seq is not None:
        click.echo(f"drawdown limit reset (journal #{reset_seq}): trading may grow again")
    elif state.on and state.entry is not None:
        entry = state.entry
        click.echo(
            f"drawdown limit reached: ${entry.get('drawdown_usd')} below the peak ${entry.get('peak_usd')} "
            f"against a limit of ${entry.get('limit_usd')} ({entry.get('rule')}); trading is reducing until "
            f"{state.until.isoformat() if state.until else 'a reset'} or `pilot drawdown reset`"
        )
    else:
        click.echo("drawdown limit not reached")
