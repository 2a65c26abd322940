"""The `pilot` command: a thin click group; each command group lives in its own module here."""

from __future__ import annotations

import importlib
from typing import Any

import click

from pilot.cli.home import home_option
from pilot.cli.output import FORMAT_KEY, GIVEN_HOME_KEY, CliError, translated

# Each module defines `command` (a click.Command or click.Group). Order is the help listing's order.
_COMMAND_MODULES = (
    "serve",
    "init",
    "doctor",
    "policy",
    "journal",
    "killswitch",
    "losslimit",
    "confirm",
    "token",
    "console",
    "phone",
    "keys",
    "store",
    "sim",
    "demo",
    "evals",
)


class PilotGroup(click.Group):
    """The top group: foreseen failures become one CliError line (or JSON document), never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as error:
            error.output = ctx.meta.get(FORMAT_KEY, "text")
            error.runnable_where(ctx.meta.get(GIVEN_HOME_KEY))
            raise
        except Exception as error:
            known = translated(error)
            if known is None:
                raise
            known.output = ctx.meta.get(FORMAT_KEY, "text")
            known.runnable_where(ctx.meta.get(GIVEN_HOME_KEY))
            raise known from None


@click.group(cls=PilotGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pilot")
@home_option
def main() -> None:
    """Pilot: plan-then-execute trading for AI agents, with refusals that say what would fit.

    Every command acts on a home (policy.json and journal/): --home DIR, else PILOT_HOME, else the current
    directory if it holds a policy.json. Exit codes: 0 done, 1 a check failed, 2 usage or environment.
    """


for _name in _COMMAND_MODULES:
    main.add_command(importlib.import_module(f"pilot.cli.{_name}").command)
