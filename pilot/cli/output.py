"""How every human command answers: `--format text|json`, one error type, and the exit codes.

Exit codes, the same for every command (docs/commands.md):

    0  done, or the check passed
    1  the command ran and the answer is no: a check failed (doctor, policy check, journal verify),
       nothing to anchor, or the human did not approve at the prompt
    2  usage or environment: a bad option or argument, not a Pilot home, an unknown id or name, a name
       already taken, a reason too long, a journal or key that cannot be used, a closed CLI channel

A problem is a `CliError`: a stable `code`, one line saying what is wrong, and the fix. With `--format json`
it is printed on stdout as `{"error": {"code", "message", "fix"}}`, so a script reading stdout always gets
one JSON document; otherwise it is one line (and its fix) on stderr. No user error prints a traceback:
the failures Pilot foresees (store, keys, policy, paper account) are turned into a CliError at the top
(`PilotGroup.invoke`), and the commands raise CliError for their own.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from pilot.core.errors import ErrorCode

FORMAT_KEY = "pilot.format"
GIVEN_HOME_KEY = "pilot.given_home"  # the absolute home, when the human named it with --home
_COMMAND_IN_FIX = re.compile(r"`(pilot [^`]*)`")

CHECK_FAILED, USAGE = 1, 2  # and 0: done


def runnable_where(fix: str, home: str) -> str:
    """`fix` with each `pilot ...` command it names given `--home HOME` where it has none, so it runs as
    printed from anywhere."""
    option = f"--home {shlex.quote(home)}"
    return _COMMAND_IN_FIX.sub(
        lambda found: found.group(0) if "--home" in found.group(1) else f"`{found.group(1)} {option}`", fix
    )


Command = TypeVar("Command", bound=Callable[..., object])  # a command's function, before click makes it one


class CliError(click.ClickException):
    """A user error (usage or environment, exit 2) with a stable code, what is wrong, and the fix."""

    exit_code = USAGE

    def __init__(self, code: ErrorCode, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.fix = fix
        self.output = "text"

    def runnable_where(self, home: str | None) -> None:
        """Give each `pilot ...` command in the fix the --home the human gave, so it runs as printed."""
        if home is not None and self.fix is not None:
            self.fix = runnable_where(self.fix, home)

    def record(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "fix": self.fix}}

    def show(self, file: IO[Any] | None = None) -> None:
        if self.output == "json":
            click.echo(json.dumps(self.record(), indent=2))
            return
        click.echo(f"pilot: {self.message}", err=True)
        if self.fix:
            click.echo(f"  fix: {self.fix}", err=True)


class CheckFailed(CliError):
    """The command ran and the answer is no (exit 1): nothing to anchor, not approved at the prompt."""

    exit_code = CHECK_FAILED


def _remember_format(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    ctx.meta[FORMAT_KEY] = "json" if value == "json" else "text"
    return value


def format_option(*extra: str, default: str = "text") -> Callable[[Command], Command]:
    """`--format text|json` (and any `extra` formats, such as markdown)."""
    choices = ["text", "json", *extra]
    return click.option(
        "--format",
        "output",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        callback=_remember_format,
        help="json: one document with stable keys, for scripts.",
    )


def wants_json() -> bool:
    context = click.get_current_context(silent=True)
    return context is not None and context.meta.get(FORMAT_KEY) == "json"


def emit_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def translated(error: Exception) -> CliError | None:
    """The CliError for a failure Pilot foresees (the failure map's code and words), or None for a bug."""
    from pilot.app.answers.failures import explain

    failure = explain(error)
    return None if failure is None else CliError(failure.code, failure.problem, failure.fix)
