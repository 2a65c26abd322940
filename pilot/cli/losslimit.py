"""`pilot loss-limit status|reset`: the daily loss limit's latch. Reached, trading is reducing until 00:00 UTC
or until a human resets it here (journaled as the human)."""

from __future__ import annotations

from typing import Any

import click

from pilot.app.runtime.loss_limit import LossLimitState, loss_limit_state, reset_by_human
from pilot.app.runtime.runtime import Runtime
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CheckFailed, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode


@click.group("loss-limit")
@home_option
def command() -> None:
    """The daily loss limit (dailyLossLimitUsd/Pct): show today's state, or reset it. Needs no exchange."""


@command.command("status")
@home_option
@format_option()
def status(output: str) -> None:
    """Whether the daily loss limit was reached today (UTC), with its numbers."""
    home = resolve_home()
    state = on_desk(home, _state)
    _print(str(home), state, reset_seq=None)


@command.command("reset")
@home_option
@format_option()
def reset(output: str) -> None:
    """Lift today's latch: trading follows policy.json and the kill switch again, and the day's loss is
    counted afresh from where it stood when the limit was reached. Exit 1 when it was not reached today."""
    home = resolve_home()

    async def use(runtime: Runtime) -> tuple[int | None, LossLimitState]:
        done = await reset_by_human(runtime.store.journal, runtime.now())
        return (done[0] if done else None), await _state(runtime)

    seq, state = on_desk(home, use)
    if seq is None:
        raise CheckFailed(
            ErrorCode.LOSS_LIMIT_NOT_REACHED,
            "the daily loss limit has not been reached today (UTC): nothing to reset",
            "nothing to do; `pilot loss-limit status` shows the state",
        )
    _print(str(home), state, reset_seq=seq)


async def _state(runtime: Runtime) -> LossLimitState:
    return await loss_limit_state(runtime.store.journal, runtime.now())


def _print(home: str, state: LossLimitState, *, reset_seq: int | None) -> None:
    record: dict[str, Any] = {
        "home": home,
        "day": state.day,
        "reached": state.on,
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
        click.echo(f"daily loss limit reset for {state.day} (journal #{reset_seq}): trading may grow again")
    elif state.on and state.entry is not None:
        entry = state.entry
        click.echo(
            f"daily loss limit reached on {state.day}: loss ${entry.get('loss_usd')} against a limit of "
            f"${entry.get('limit_usd')} ({entry.get('rule')}); trading is reducing until 00:00 UTC "
            "or `pilot loss-limit reset`"
        )
    else:
        click.echo(f"daily loss limit not reached on {state.day}")
