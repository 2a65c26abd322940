"""Which home a command acts on, resolved the same way for every command, and running a use case on it.

A home is a folder holding `policy.json` (and, once `pilot init` or `pilot serve` ran there, `journal/`).
Every command resolves it in this order:

1. `--home DIR`, which every command and command group takes (`pilot --home H kill-switch status`,
   `pilot kill-switch --home H status` and `pilot kill-switch status --home H` are the same; the innermost
   wins);
2. the `PILOT_HOME` environment variable;
3. the current directory, but only if it holds a `policy.json`.

A folder without a `policy.json` is not a home: the command refuses (exit 2) with the fix, `pilot init` or
`--home`, and creates nothing. Only `pilot init` (and `pilot serve`, in a valid home) creates a journal.
The home acted on is printed, absolute, on stderr, so the wrong home is never silent.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple

import anyio
import click

from pilot.app.runtime.runtime import STORE_ENVIRONMENT_VARIABLE, Home, Runtime
from pilot.cli.output import GIVEN_HOME_KEY, CliError
from pilot.core.errors import ErrorCode
from pilot.store import StoreLocation

T = TypeVar("T")
Args = TypeVarTuple("Args")

HOME_KEY = "pilot.home"
ENVIRONMENT_VARIABLE = "PILOT_HOME"


def _remember_home(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:  # the group's option runs first, a subcommand's after it: the innermost wins
        ctx.meta[HOME_KEY] = value


STORE_KEY = "pilot.store"


def _remember_store(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """`--store URL` is PILOT_STORE for this command (the innermost wins), put back as it was at its end."""
    if value is None:
        return
    try:
        StoreLocation.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--store") from None
    root = ctx.find_root()
    if STORE_KEY not in root.meta:
        before = os.environ.get(STORE_ENVIRONMENT_VARIABLE)
        root.call_on_close(lambda: _restore(before))
    root.meta[STORE_KEY] = value
    os.environ[STORE_ENVIRONMENT_VARIABLE] = value


def _restore(before: str | None) -> None:
    if before is None:
        os.environ.pop(STORE_ENVIRONMENT_VARIABLE, None)
    else:
        os.environ[STORE_ENVIRONMENT_VARIABLE] = before


_home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    expose_value=False,
    callback=_remember_home,
    metavar="DIR",
    help="Pilot's home (policy.json, journal/). Default: PILOT_HOME, else the current directory if it "
    "holds a policy.json.",
)
_store_option = click.option(
    "--store",
    expose_value=False,
    callback=_remember_store,
    metavar="URL",
    help="The home's store on a PostgreSQL server shared by hosts (postgresql://USER@HOST/DB; the password in "
    "~/.pgpass). Default: PILOT_STORE, else the home's store.json, else its SQLite file.",
)


def home_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--home DIR` and `--store URL`: which home a command acts on, and where its store is."""
    return _home_option(_store_option(command))


def given_store() -> StoreLocation | None:
    """The store given with --store at any level of this command, if one was."""
    value = click.get_current_context().find_root().meta.get(STORE_KEY)
    return StoreLocation.parse(value) if value is not None else None


def resolve_home(*, creating: bool = False, announce: bool = True) -> Path:
    """The absolute home this command acts on (see the module docstring); CliError outside a home.

    With `creating` (pilot init), the folder need not be a home yet: it is the one to make into one.
    """
    context = click.get_current_context()
    given: Path | None = context.meta.get(HOME_KEY)
    source = "--home"
    if given is None and os.environ.get(ENVIRONMENT_VARIABLE):
        given, source = Path(os.environ[ENVIRONMENT_VARIABLE]), ENVIRONMENT_VARIABLE
    if given is None:
        given, source = Path.cwd(), "the current directory"
    home = Path(os.path.abspath(given.expanduser()))
    if not creating:
        _require_home(home, source)
    if source == "--home":
        context.meta[GIVEN_HOME_KEY] = str(home)
    if announce:
        click.echo(f"pilot: home {home}", err=True)
    return home


def _require_home(home: Path, source: str) -> None:
    paths = Home(home)
    if os.path.lexists(paths.policy_path):
        return
    if source == "the current directory":
        raise CliError(
            ErrorCode.NOT_A_HOME,
            f"no Pilot home given, and the current directory {home} is not one (it has no policy.json)",
            "give --home DIR (or set PILOT_HOME) for an existing home, or create one with "
            "`pilot init --home DIR`",
        )
    if paths.database_path.exists():
        raise CliError(
            ErrorCode.NOT_A_HOME,
            f"{home} (from {source}) has a journal but no policy.json",
            f"restore policy.json there, or write the default one with `pilot init --home {home}`",
        )
    raise CliError(
        ErrorCode.NOT_A_HOME,
        f"{home} (from {source}) is not a Pilot home: it has no policy.json",
        f"create it with `pilot init --home {home}`, or point --home at an existing home",
    )


def on_desk(home: Path, use: Callable[[Runtime], Awaitable[T]], *, react: bool = True) -> T:
    """Open the home's store (no exchange), run `use`, close. Foreseen failures exit 2 (see PilotGroup).
    `react` False: a journal found rolled back is reported by `use`, not acted on (pilot.app.human.desk)."""

    from pilot.app.human.desk import open_desk  # the human's commands only: `pilot serve` never opens a desk

    async def run() -> T:
        async with open_desk(home, react=react) as runtime:
            return await use(runtime)

    return anyio.run(run)


def run(call: Callable[[*Args], Awaitable[T]], *args: *Args) -> T:
    return anyio.run(call, *args)


def explicit_home() -> Path | None:
    """The home given with --home at any level, checked to be a home; None if none was given.

    For commands that work without a home too (`pilot sim` runs a paper exchange that keeps no account).
    """
    if click.get_current_context().meta.get(HOME_KEY) is None:
        return None
    return resolve_home()
