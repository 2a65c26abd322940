"""The `pilot` command: a thin click group; each command group lives in its own module here.

A command's module is imported when that command runs (or help lists it), not before: `pilot serve` does
not pay for the console, the journal's card printer or the demo, nor they for the MCP server.
"""

from __future__ import annotations

import importlib
import os
import sys

from pilot.cli import heap

if os.path.basename(sys.argv[0]) == "pilot":  # the console script, which has no entry of its own to do it
    heap.pause()  # as `python -m pilot` does first thing (pilot.cli.heap)

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
    "live",
    "losslimit",
    "drawdown",
    "confirm",
    "token",
    "agent_credentials",
    "console",
    "phone",
    "keys",
    "store",
    "sim",
    "demo",
    "evals",
)
_COMMAND_NAMES = {
    "killswitch": "kill-switch",
    "losslimit": "loss-limit",
    "evals": "eval",
    "agent_credentials": "agent",
}  # else the module name


class PilotGroup(click.Group):
    """The top group: foreseen failures become one CliError line (or JSON document), never a traceback.

    Its commands are its modules' `command`s, each imported when first asked for.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [self._name_of(module) for module in _COMMAND_MODULES]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = next((m for m in _COMMAND_MODULES if self._name_of(m) == cmd_name), None)
        if module is None:
            return None
        command: click.Command = importlib.import_module(f"pilot.cli.{module}").command
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        found = super().resolve_command(ctx, args)
        if found[0] != "serve":
            heap.resume()  # its module is imported; `pilot serve` settles the heap once it is built
        return found

    @staticmethod
    def _name_of(module: str) -> str:
        return _COMMAND_NAMES.get(module, module)

    def invoke(self, ctx: click.Context) -> object:
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
