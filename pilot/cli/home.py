"""What the human's commands share: the --home option and running a use case on the home's store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import click

from pilot.app.human import ChannelOff, NoJournal, open_desk
from pilot.app.runtime import Runtime
from pilot.store import StoreError

T = TypeVar("T")

home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="PILOT_HOME",
    default=".",
    show_default="PILOT_HOME or the current directory",
    help="Pilot's home: policy.json and journal/.",
)


def on_desk(home: Path, use: Callable[[Runtime], Awaitable[T]]) -> T:
    """Open the home's store (no exchange), run `use`, close. A missing or unusable journal, or a closed CLI channel, exits 2."""

    async def run() -> T:
        async with open_desk(home) as runtime:
            return await use(runtime)

    try:
        return anyio.run(run)
    except (NoJournal, ChannelOff, StoreError) as problem:
        click.echo(f"pilot: {problem}", err=True)
        raise SystemExit(2) from None


def run(call: Callable[..., Awaitable[T]], *args: Any) -> T:
    return anyio.run(call, *args)
